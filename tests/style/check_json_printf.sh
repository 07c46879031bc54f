#!/bin/sh
# check_json_printf.sh SRCDIR -- run by the CTest style/json_printf: JSON text outside src/io is
# written by attn_json_writer (include/attn_io.h), never by a format string. Fails on a call of
# the printf family, fputs/puts or the server's sb_add whose arguments (up to the statement's
# ';', across lines) hold a JSON key, a string literal with \"name\": in it. The files listed
# in LEFT still build their JSON by hand and are to be ported; the list only shrinks (it is
# empty now: every file is ported).
set -eu
cd "$1"
LEFT=""
PATTERN='\b(printf|fprintf|sprintf|snprintf|vfprintf|vsnprintf|sb_printf|fputs|puts|sb_add)\s*\([^;]*\\"[^"\\]*\\":'
bad=0
for f in $(find src -name '*.c' -o -name '*.h' | grep -v '^src/io/' | sort); do
    case " $(echo $LEFT) " in *" $f "*) continue ;; esac
    if grep -Pzoq "$PATTERN" "$f"; then
        echo "$f: JSON built by a format string (use attn_json_writer):" >&2
        grep -Pzo "$PATTERN" "$f" | tr '\0' '\n' | head -5 >&2
        bad=1
    fi
done
for f in $LEFT; do # a listed file that no longer needs the exception must leave the list
    if [ -f "$f" ] && ! grep -Pzoq "$PATTERN" "$f"; then
        echo "$f: writes no JSON by hand any more: remove it from LEFT in $0" >&2
        bad=1
    fi
done
exit $bad
