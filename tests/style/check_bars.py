#!/usr/bin/env python3
"""check_bars.py SRCDIR -- run by the CTest style/bars: every C file under src/ (.c and .h) has
at most MAX_FILE lines and every function defined in one has at most MAX_FUNCTION lines, counted
from the line that opens its body to the line that closes it.

The sources are clang-formatted (.clang-format: BreakBeforeBraces Attach), so a function
definition is a declaration that starts at column 0 and whose last line ends with the body's
"{", and its body ends at the next "}" at column 0. A struct, union or enum definition or an
initialised table ("= {") is not a function; neither is anything inside a preprocessor line.
Reports file:line and the function's name for each one that is too long."""
import os
import re
import sys

MAX_FILE = 500
MAX_FUNCTION = 80

NAME = re.compile(r"([A-Za-z_]\w*)\s*\(")


def strip_comments(text):
    """The text with /* */ and // comments and string/char literals blanked out (newlines kept,
    so line numbers stay), so that braces or parentheses inside them count for nothing."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + " " * (j - i - 2) + c if j - i >= 2 else text[i:j])
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(path):
    """(first line of the body, number of body lines, name) for each function defined in path."""
    with open(path, encoding="utf-8") as f:
        lines = strip_comments(f.read()).split("\n")
    found = []
    decl_start = None  # index of the column-0 line that starts the current declaration
    i = 0
    while i < len(lines):
        line = lines[i].rstrip()
        if line.startswith("#"):  # a preprocessor line and its continuations
            while lines[i].rstrip().endswith("\\") and i + 1 < len(lines):
                i += 1
            decl_start = None
            i += 1
            continue
        if line and not line[0].isspace():
            decl_start = i
        if decl_start is not None and line.endswith("{"):
            decl = " ".join(lines[decl_start : i + 1])
            head = decl.split("(", 1)[0]
            is_function = (
                "(" in decl
                and "=" not in head
                and not re.match(r"\s*(typedef\b|(struct|union|enum)\s+\w*\s*\{)", decl)
            )
            if is_function:
                end = i + 1
                while end < len(lines) and not lines[end].startswith("}"):
                    end += 1
                m = NAME.search(decl)
                found.append((i + 1, end - i + 1, m.group(1) if m else "?"))
                i = end + 1
                decl_start = None
                continue
            decl_start = None
        if line.endswith(";") or line.endswith("}") or not line:
            decl_start = None if not line or line.startswith("}") or line.endswith(";") else decl_start
        i += 1
    return found


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    bad = 0
    files = []
    for d, _, names in os.walk(os.path.join(root, "src")):
        files += [os.path.join(d, n) for n in names if n.endswith((".c", ".h"))]
    for path in sorted(files):
        rel = os.path.relpath(path, root)
        with open(path, encoding="utf-8") as f:
            n = sum(1 for _ in f)
        if n > MAX_FILE:
            print(f"{rel}:{n}: file has {n} lines (at most {MAX_FILE})", file=sys.stderr)
            bad = 1
        for line, length, name in functions(path):
            if length > MAX_FUNCTION:
                print(
                    f"{rel}:{line}: function {name} has {length} lines (at most {MAX_FUNCTION})",
                    file=sys.stderr,
                )
                bad = 1
    return bad


if __name__ == "__main__":
    sys.exit(main())
