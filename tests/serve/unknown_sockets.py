#!/usr/bin/env python3
"""Socket-level tests of the unknown-word answer of `attn serve` (CTest serve/unknown_sockets),
with sockets.py's helpers, on the committed weights. An unknown word gets the nearest word by
spelling and the words of the class the grammar puts at its place (src/data/suggest.c):
  POST /api/explain   "the pizza was stunning": 400 unknown_word, position 2, "nearest" "is",
                      "place" a subject noun whose words are exactly GET /api/vocab's subject
                      words, nearest to "pizza" by spelling first (Levenshtein computed here);
                      "unknown_words" both words, "stunning" an adjective with every positive
                      and every negative word; the message is `attn explain`'s own (one
                      implementation for the CLI and the server)
  POST /api/predict   the line of the unknown word ("line") and its place
  POST /api/generate  the decoder's source sentence the same way (when a rewrite model is
                      loaded)
  bounds              a word alone: "place" null; 20 unknown words: "unknown_count" 20 and
                      16 listed
Only the Python standard library."""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sockets as sk  # noqa: E402

check, request, exchange, status, error_code, body_json = (sk.check, sk.request, sk.exchange,
                                                           sk.status, sk.error_code, sk.body_json)


def levenshtein(a, b):
    row = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        nxt = [i]
        for j in range(1, len(b) + 1):
            nxt.append(min(row[j] + 1, nxt[j - 1] + 1, row[j - 1] + (a[i - 1] != b[j - 1])))
        row = nxt
    return row[-1]


def error_of(srv, method, path, body):
    r = exchange(srv, request(method, path, body.encode()))
    e = body_json(r).get("error", {}) if status(r) == 400 else {}
    return status(r), e


def nearest_first(word, words):
    d = [levenshtein(word, w) for w in words]
    return d == sorted(d)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--attn", required=True)
    ap.add_argument("--weights", required=True)
    a = ap.parse_args()
    srv = sk.Server(a.attn, a.weights, "--threads", "1")
    try:
        vocab = body_json(exchange(srv, request("GET", "/api/vocab")))["words"]
        by_cat = {}
        for w in vocab:
            by_cat.setdefault(w["category"], []).append(w["word"])

        sentence = "the pizza was stunning"
        st, e = error_of(srv, "POST", "/api/explain", json.dumps({"sentence": sentence}))
        place = e.get("place") or {}
        groups = place.get("groups", [])
        check(st == 400 and e.get("code") == "unknown_word" and e.get("position") == 2
              and e.get("word") == "pizza" and e.get("nearest") == "is",
              "explain: 400 unknown_word 'pizza' at 2, nearest by spelling 'is'")
        check(place.get("class") == "subject noun"
              and place.get("rule") == "after 'the', before 'was'"
              and [g["category"] for g in groups] == ["subject"]
              and sorted(groups[0]["words"]) == sorted(by_cat["subject"])
              and nearest_first("pizza", groups[0]["words"]),
              "explain: its place takes a subject noun: every subject word of /api/vocab, "
              "nearest first %s" % (groups[0]["words"] if groups else None))
        un = e.get("unknown_words", [])
        adj = (un[1].get("place") or {}) if len(un) == 2 else {}
        check(e.get("unknown_count") == 2 and [u.get("word") for u in un] == ["pizza", "stunning"]
              and [u.get("position") for u in un] == [2, 4] and un[0].get("place") == place,
              "explain: unknown_words lists both, the first as the answer's own")
        check(adj.get("class") == "adjective"
              and [(g["category"], sorted(g["words"])) for g in adj.get("groups", [])]
              == [("positive", sorted(by_cat["positive"])), ("negative", sorted(by_cat["negative"]))]
              and all(nearest_first("stunning", g["words"]) for g in adj["groups"]),
              "explain: 'stunning' after 'was' takes an adjective, every positive and negative one")
        cli = subprocess.run([a.attn, "explain", "--weights",
                              os.path.join(a.weights, "lstm-seed1.json"), sentence],
                             capture_output=True, text=True)
        check(cli.returncode == 1 and ("sentence 1: " + e.get("message", "?")) in cli.stderr,
              "explain: the message is attn explain's own: %r" % e.get("message"))

        st, e = error_of(srv, "POST", "/api/predict?models=lstm",
                         "the lecture was good\nthe lecture was good because the food was bad")
        check(st == 400 and e.get("line") == 2 and e.get("word") == "because"
              and (e.get("place") or {}).get("class") == "conjunction",
              "predict: line 2's 'because' takes a conjunction")

        decoders = [d for d in body_json(exchange(srv, request("GET", "/api/decoders")))
                    .get("decoders", []) if d.get("task") == "rewrite"]
        if decoders:
            st, e = error_of(srv, "POST", "/api/generate",
                             json.dumps({"model": decoders[0]["name"],
                                         "text": "the lecture seems clear"}))
            check(st == 400 and e.get("word") == "seems"
                  and (e.get("place") or {}).get("class") == "verb"
                  and sorted(e["place"]["groups"][0]["words"]) == sorted(by_cat["verb"]),
                  "generate (%s): 'seems' after a noun takes a verb" % decoders[0]["name"])
        else:
            print("note: no rewrite model in %s: /api/generate not checked" % a.weights)

        st, e = error_of(srv, "POST", "/api/explain", json.dumps({"sentence": "pizza"}))
        check(st == 400 and e.get("place") is None and e.get("nearest") == "is"
              and e.get("unknown_words", [{}])[0].get("place", 0) is None,
              "explain: a word alone has no place: spelling only")
        many = " ".join("zq%c" % chr(ord("a") + i) for i in range(20))
        st, e = error_of(srv, "POST", "/api/explain", json.dumps({"sentence": many}))
        check(st == 400 and e.get("unknown_count") == 20 and len(e.get("unknown_words", [])) == 16,
              "explain: 20 unknown words counted, 16 listed")
    finally:
        rc = srv.stop()
    check(rc == 0, "the server exits 0 on SIGTERM")
    print("%d checks failed" % len(sk.FAILS))
    sys.exit(1 if sk.FAILS else 0)


if __name__ == "__main__":
    main()
