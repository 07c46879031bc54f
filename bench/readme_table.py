#!/usr/bin/python3
"""readme_table.py -- README.md's performance table is bench/results/readme-table.md, verbatim.

The table sits in README.md between the two marker lines below; bench/summarize.py writes the
file from one bench/all.sh run, and this script copies it in (--write) or checks that the two
are the same (--check, CTest style/readme_table), so that no figure of the table is typed.

Usage: /usr/bin/python3 bench/readme_table.py --check|--write [README [TABLE]]
  README  default README.md; TABLE default bench/results/readme-table.md (both from the source
          tree this script is in)
Exit status: 0 the same (--check) or written (--write), 1 they differ or a marker or file is
missing (named), 2 usage.
"""
import os
import sys

BEGIN = "<!-- the performance table: bench/results/readme-table.md, copied in by " \
        "bench/readme_table.py --write (do not edit by hand) -->"
END = "<!-- end of bench/results/readme-table.md -->"


def split(text, path):
    """README's text -> (before the table, the table, after it), or ValueError naming what."""
    if text.count(BEGIN + "\n") != 1 or text.count(END + "\n") != 1:
        raise ValueError("%s: needs each marker line once:\n  %s\n  %s" % (path, BEGIN, END))
    head, rest = text.split(BEGIN + "\n")
    table, tail = rest.split(END + "\n")
    if not table.startswith("\n") or not table.endswith("\n\n"):
        raise ValueError("%s: a blank line after %s and before %s" % (path, BEGIN, END))
    return head, table[1:-1], tail


def main():
    args = sys.argv[1:]
    if not args or args[0] not in ("--check", "--write") or len(args) > 3:
        print("usage: readme_table.py --check|--write [README [TABLE]]", file=sys.stderr)
        return 2
    src = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    readme = args[1] if len(args) > 1 else os.path.join(src, "README.md")
    table = args[2] if len(args) > 2 else os.path.join(src, "bench/results/readme-table.md")
    try:
        with open(readme, encoding="utf-8") as f:
            text = f.read()
        with open(table, encoding="utf-8") as f:
            want = f.read()
        head, have, tail = split(text, readme)
        if args[0] == "--check":
            if have == want:
                return 0
            a, b = have.splitlines(), want.splitlines()
            i = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))
            print("%s: its performance table is not %s (first difference at table line %d:\n"
                  "  README: %s\n  file:   %s)\nRun /usr/bin/python3 bench/readme_table.py --write"
                  % (readme, table, i + 1, a[i] if i < len(a) else "(end)",
                     b[i] if i < len(b) else "(end)"))
            return 1
        tmp = os.path.join(os.path.dirname(os.path.abspath(readme)), ".README.md.tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(head + BEGIN + "\n\n" + want + "\n" + END + "\n" + tail)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, readme)
        return 0
    except (OSError, ValueError) as e:
        print("readme_table.py: %s" % e, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
