#!/bin/sh
# check_family_types.sh SRCDIR -- run by the CTest style/family_types: the rooms above src/models
# (train, explain, io, lab, serve, cli) work through what both model families share; a file
# there that names a family's own type -- the classifier's attn_model, attn_model_config,
# attn_arch, attn_batch, or any attn_seq2seq* / attn_s2s_* type of include/attn_seq2seq*.h,
# read from the headers -- must be listed in tests/style/family_types.tsv as a family-specific
# part, with the family it may name and why. Fails on an unlisted file, on a listed file naming
# a family its entry does not give, on an entry without a reason, and on a stale entry (the file
# is gone or names that family no more): the list only says what is true.
set -eu
cd "$1"
LIST=tests/style/family_types.tsv
S2S=$(grep -ohE '^(\}|typedef (struct|enum) [a-z0-9_]+) (attn_seq2seq|attn_s2s_)[a-z0-9_]*;' \
    include/attn_seq2seq*.h | sed 's/.* //; s/;$//' | sort -u | tr '\n' '|' | sed 's/|$//')
[ -n "$S2S" ] || { echo "$0: no seq2seq type found in include/attn_seq2seq*.h" >&2; exit 2; }
CLS='attn_model|attn_model_config|attn_arch|attn_batch'
bad=0
names() { # names FILE REGEX: whether FILE names one of the types, as a whole word (a header's
    # name in an #include is not a type's)
    grep -v '^#include' "$1" | grep -qwE "($2)"
}
for f in $(find src/train src/explain src/io src/lab src/serve src/cli -name '*.[ch]' | sort); do
    fam=""
    names "$f" "$CLS" && fam="classifier"
    names "$f" "$S2S" && fam="${fam:+$fam,}seq2seq"
    [ -n "$fam" ] || continue
    entry=$(awk -F'\t' -v f="$f" '$1 == f' "$LIST")
    if [ -z "$entry" ]; then
        echo "$f names a $fam type ($(grep -v '^#include' "$f" | grep -owE "($CLS|$S2S)" | sort -u | tr '\n' ' '))" \
            "but is not a family-specific part: work through the shared interface, or list it" \
            "in $LIST with why" >&2
        bad=1
        continue
    fi
    allowed=$(echo "$entry" | cut -f2)
    for x in $(echo "$fam" | tr ',' ' '); do
        case ",$allowed," in *",$x,"*) ;; *)
            echo "$f names a $x type; $LIST allows it $allowed only" >&2
            bad=1
            ;;
        esac
    done
done
while IFS="$(printf '\t')" read -r f allowed why; do
    case "$f" in '#'* | '') continue ;; esac
    [ -n "$why" ] || { echo "$LIST: $f has no reason" >&2; bad=1; }
    if [ ! -f "$f" ]; then
        echo "$LIST: $f does not exist any more: remove its entry" >&2
        bad=1
        continue
    fi
    for x in $(echo "$allowed" | tr ',' ' '); do
        case "$x" in classifier) re=$CLS ;; seq2seq) re=$S2S ;; *)
            echo "$LIST: $f: unknown family $x" >&2
            bad=1
            continue
            ;;
        esac
        names "$f" "$re" || { echo "$LIST: $f names no $x type any more: drop $x" >&2; bad=1; }
    done
done <"$LIST"
exit $bad
