#!/usr/bin/env python3
"""Longest C functions and files of the tree (the README's architecture section quotes them).

Usage: tools/code_size.py [--top N] [DIR ...]   (default: src)

A function is a top-level brace block whose opening line or the three lines before it hold a
parameter list; its length runs from that line to the closing brace. Prints the N longest
functions (lines, file:line, name) and the N longest files. Exit codes: 0 ok, 2 usage error.
"""
import argparse
import os
import re
import sys


def strip_literals(line):
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    line = re.sub(r"'(\\.|[^'\\])*'", "''", line)
    return re.sub(r"//.*", "", line)


def signature_name(lines, i):
    """The name of the function whose body opens on line i: the identifier before the first
    '(' of the nearest line above (or at) i that starts in column 0 and is no comment."""
    for j in range(i, max(-1, i - 6), -1):
        line = lines[j]
        if line[:1].isalpha() or line[:1] == "_":
            m = re.search(r"(\w+)\s*\(", line)
            if m:
                return m.group(1)
    return "?"


def functions(path, lines):
    depth, start, name = 0, None, None
    for i, raw in enumerate(lines):
        line = strip_literals(raw)
        if depth == 0 and "{" in line:
            context = " ".join(lines[max(0, i - 3) : i + 1])
            head = line.split("{")[0]
            is_type = re.search(r"\b(struct|enum|union)\b", head) or "=" in head
            if "(" in context and not is_type:
                start = i
                name = signature_name(lines, i)
            else:
                start = None
        depth += line.count("{") - line.count("}")
        if depth == 0 and start is not None and "}" in line:
            yield (i - start + 1, path, start + 1, name)
            start = None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog="exit codes: 0 ok, 2 usage error")
    ap.add_argument("--top", type=int, default=5, help="how many of each to print (default 5)")
    ap.add_argument("dirs", nargs="*", default=["src"], help="folders to read (default src)")
    args = ap.parse_args()
    funcs, files = [], []
    for root in args.dirs:
        if not os.path.isdir(root):
            ap.error(f"{root}: not a folder")
        for folder, _, names in os.walk(root):
            for n in sorted(names):
                if not n.endswith((".c", ".h")):
                    continue
                path = os.path.join(folder, n)
                with open(path, errors="replace") as f:
                    lines = f.read().split("\n")
                files.append((len(lines) - 1, path))
                funcs.extend(functions(path, lines))
    funcs.sort(key=lambda r: (-r[0], r[1]))
    files.sort(key=lambda r: (-r[0], r[1]))
    print("longest functions (lines):")
    for n, path, line, name in funcs[: args.top]:
        print(f"  {n:4d}  {path}:{line}  {name}")
    print("longest files (lines):")
    for n, path in files[: args.top]:
        print(f"  {n:4d}  {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
