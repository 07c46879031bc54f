#!/usr/bin/env python3
"""doc_numbers.py SOURCE_DIR -- every number tests/style/doc_numbers.tsv lists must appear, as
written and as a whole number (not inside a longer one), both in its doc and in the committed
output file it was copied from. Exit 1 naming each missing one."""
import re
import sys


def has_number(text, number):
    return re.search(r"(?<![\d.])" + re.escape(number) + r"(?![\d])", text) is not None


def main():
    src = sys.argv[1]
    table = src + "/tests/style/doc_numbers.tsv"
    bad, rows = [], 0
    cache = {}
    for line_no, line in enumerate(open(table, encoding="utf-8"), 1):
        if not line.strip() or line.startswith("#"):
            continue
        doc, number, source = line.rstrip("\n").split("\t")
        rows += 1
        for path in (doc, source):
            if path not in cache:
                cache[path] = open(src + "/" + path, encoding="utf-8").read()
            if not has_number(cache[path], number):
                bad.append("%s:%d: %r is not in %s (quoted in %s from %s)"
                           % (table, line_no, number, path, doc, source))
    for b in bad:
        print(b)
    print("%d quoted numbers, %d missing" % (rows, len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
