#!/usr/bin/python3
"""readme_table.py -- README.md's benchmark figures are copied from bench/results, never typed.

Two blocks of README.md sit between marker lines (below) and are made from committed results:
  - the performance table: bench/results/readme-table.md verbatim (bench/summarize.py writes it
    from one bench/all.sh run);
  - the base model's figures: the lines of bench/results/base.md (bench/base.py) a reader needs
    -- the run's date, machine, commit and load, the model, the load/write table and its
    PASS/MISS lines, the JSON path's two results, and the training and fixed-length generation
    lines of bench/seq2seq --size base -- in the order base.md has them.
--write copies both in (bench/all.sh does, after a run into bench/results); --check compares
(CTest style/readme_table), so that a new run cannot leave the README quoting an old one.

Usage: /usr/bin/python3 bench/readme_table.py --check|--write [README [RESULTS_DIR]]
  README       default README.md; RESULTS_DIR default bench/results (both from the source tree
               this script is in)
Exit status: 0 the same (--check) or written (--write), 1 they differ or a marker or file is
missing (named), 2 usage.
"""
import os
import re
import sys


def table_block(results):
    with open(os.path.join(results, "readme-table.md"), encoding="utf-8") as f:
        return f.read()


# the lines of the fenced bench/seq2seq output that README quotes: the ceiling, training (attn,
# PyTorch, the ratio, the target), the fixed-length generation at batch 1 and 8 and its ratios
SEQ2SEQ_LINE = re.compile(r"^(sgemm |training (attn|torch)|training attn / |training step (attn|validate)|"
                          r"MISS |PASS |"
                          r"generation attn +batch|generation torch(script)? cached.*batch|"
                          r"generation attn cached / torch(script)? cached)")


def base_block(results):
    """The base model's figures from base.md, as README shows them."""
    with open(os.path.join(results, "base.md"), encoding="utf-8") as f:
        lines = f.read().splitlines()
    run = [ln for ln in lines if re.match(r"- (date|machine|commit|load average at start):", ln)]
    out = ["From [bench/results/base.md](bench/results/base.md) (`bench/base.py`, copied in by"
           " `bench/readme_table.py`):", ""] + run + [""]
    section, fence = "", False
    for ln in lines:
        if ln.startswith("## "):
            section = ln
            continue
        if ln.startswith("```"):
            fence = not fence
            continue
        if not section:
            if ln.startswith(("model:", "|", "- PASS", "- MISS")):
                out.append(ln)
        elif "JSON" in section and not fence and ln.startswith("`attn "):
            out.append("- as JSON, " + ln)
        elif "Training" in section and fence and SEQ2SEQ_LINE.match(ln):
            out.append(ln)
    text, prev = [], None
    for ln in out:  # a blank line between kinds of line (bullets, table, ...), as markdown needs
        kind = ln[:1]
        if prev is not None and ln and prev and kind != prev[:1] and not (kind == prev[:1] == "-"):
            text.append("")
        text.append(ln)
        prev = ln
    body = "\n".join(text)
    # the seq2seq lines as a fenced block
    first = next((i for i, ln in enumerate(text) if SEQ2SEQ_LINE.match(ln)), None)
    if first is not None:
        body = "\n".join(text[:first]) + "\n\n```\n" + "\n".join(
            ln for ln in text[first:] if ln) + "\n```"
    return body.replace("\n\n\n", "\n\n") + "\n"


BLOCKS = [  # name, marker before, marker after, the block's text from the results folder
    ("performance table",
     "<!-- the performance table: bench/results/readme-table.md, copied in by "
     "bench/readme_table.py --write (do not edit by hand) -->",
     "<!-- end of bench/results/readme-table.md -->", table_block),
    ("base model figures",
     "<!-- the base model's figures: from bench/results/base.md, copied in by "
     "bench/readme_table.py --write (do not edit by hand) -->",
     "<!-- end of the figures from bench/results/base.md -->", base_block),
]


def split(text, path, begin, end):
    """README's text -> (before the block, the block, after it), or ValueError naming what."""
    if text.count(begin + "\n") != 1 or text.count(end + "\n") != 1:
        raise ValueError("%s: needs each marker line once:\n  %s\n  %s" % (path, begin, end))
    head, rest = text.split(begin + "\n")
    block, tail = rest.split(end + "\n")
    if not block.startswith("\n") or not block.endswith("\n\n"):
        raise ValueError("%s: a blank line after %s and before %s" % (path, begin, end))
    return head, block[1:-1], tail


def first_difference(readme, name, have, want):
    a, b = have.splitlines(), want.splitlines()
    i = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))
    return ("%s: its %s is not the results' (first difference at its line %d:\n"
            "  README:  %s\n  results: %s)" % (readme, name, i + 1, a[i] if i < len(a) else "(end)",
                                              b[i] if i < len(b) else "(end)"))


def main():
    args = sys.argv[1:]
    if not args or args[0] not in ("--check", "--write") or len(args) > 3:
        print("usage: readme_table.py --check|--write [README [RESULTS_DIR]]", file=sys.stderr)
        return 2
    src = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    readme = args[1] if len(args) > 1 else os.path.join(src, "README.md")
    results = args[2] if len(args) > 2 else os.path.join(src, "bench/results")
    try:
        with open(readme, encoding="utf-8") as f:
            text = f.read()
        bad = []
        for name, begin, end, make in BLOCKS:
            want = make(results)
            head, have, tail = split(text, readme, begin, end)
            if have != want:
                bad.append(first_difference(readme, name, have, want))
            text = head + begin + "\n\n" + want + "\n" + end + "\n" + tail
        if args[0] == "--check":
            for b in bad:
                print(b)
            if bad:
                print("Run /usr/bin/python3 bench/readme_table.py --write")
            return 1 if bad else 0
        tmp = os.path.join(os.path.dirname(os.path.abspath(readme)), ".README.md.tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, readme)
        return 0
    except (OSError, ValueError) as e:
        print("readme_table.py: %s" % e, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
