#!/usr/bin/python3
"""Socket-level test of `attn serve` with a weights file that has its own vocabulary (CTest
serve/own_vocab). A user's PyTorch LSTM with 37 tokens of its own (own_vocab_model.py, exported
with tools/export_classifier.py) is served beside the committed Transformer on the task's
vocabulary, then alone. Over HTTP: the LSTM reads sentences with its file's words (an answer
byte-identical to `attn explain` and `attn predict` on the same file and sentence), refuses
the task's words exactly as `attn predict` does, /api/vocab?model= gives each model's words,
and the task's test sets are offered only to the model on the task's vocabulary.
(The regression: the server fed the built-in vocabulary's ids into the file's embedding.)"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import own_vocab_model  # noqa: E402
from e2e import FAILS, check, http, start_server, stop_server  # noqa: E402


def cli(attn, *args):
    return subprocess.run([attn, *args], capture_output=True, text=True)


def check_mixed(attn, d, weights):
    p, base = start_server(attn, d)
    try:
        lstm = os.path.join(d, "lstm-seed1.json")
        st, _, b = http(base, "/api/explain", json.dumps({"sentence": "the lecture was great",
                                                           "models": ["lstm"]}))
        e = json.loads(b).get("error", {})
        pr = cli(attn, "predict", "--weights", lstm, "the lecture was great")
        check(st == 400 and e.get("code") == "unknown_word" and e.get("word") == "lecture" and
              e.get("model") == "lstm", "the task's word 'lecture' -> 400 unknown_word (lstm): %s"
              % e.get("message"))
        check(pr.returncode == 1 and "unknown word 'lecture'" in pr.stderr,
              "  as attn predict refuses it: %s" % pr.stderr.strip())
        for s in ["the film was great", "the plot was not very good although the music felt "
                  "wonderful", "The acting was really, really dull!"]:
            st, _, b = http(base, "/api/explain", json.dumps({"sentence": s, "models": ["lstm"]}))
            ex = cli(attn, "explain", "--weights", lstm, "--format", "json", "--ig-steps", "0", s)
            pj = cli(attn, "predict", "--weights", lstm, "--format", "json", s)
            want = re.search(r'"probability": [^,]+, "logit": [^}]+', pj.stdout)
            got = re.search(r'"logit": ([^,]+), "probability": ([^,]+),', b.decode())
            check(st == 200 and ex.returncode == 0 and ex.stdout.strip().encode() in b,
                  "POST %r (lstm): byte-identical to attn explain on the file" % s)
            check(bool(want and got) and want.group(0) == '"probability": %s, "logit": %s' %
                  (got.group(2), got.group(1)),
                  "  logit and probability byte-identical to attn predict: %s"
                  % (want.group(0) if want else pj.stderr.strip()))
        st, _, b = http(base, "/api/vocab?model=lstm")
        v = json.loads(b)
        vj = json.loads(cli(attn, "vocab", "--json", "--weights", lstm).stdout)
        listed = vj.get("words", vj.get("tokens"))
        file_words = [[t["id"], t["word"]] for t in listed if t["category"] == "word"]
        check(st == 200 and v["source"] == "file" and v["vocab_size"] == 37 and
              [[w["id"], w["word"]] for w in v["words"]] == file_words and len(file_words) == 36,
              "GET /api/vocab?model=lstm: the file's 36 words with their ids, as attn vocab "
              "--weights lists them")
        st, _, b = http(base, "/api/vocab?model=transformer")
        v = json.loads(b)
        check(st == 200 and v["source"] == "task" and len(v["words"]) == 89,
              "GET /api/vocab?model=transformer: the task's 89 words")
        st, _, b = http(base, "/api/models")
        ms = {m["name"]: m for m in json.loads(b)["models"]}
        check(ms["lstm"]["vocab"] == "file" and not ms["lstm"]["test_sets"] and
              ms["transformer"]["vocab"] == "task" and ms["transformer"]["test_sets"],
              "GET /api/models: each model's vocabulary and whether the test sets apply")
        st, _, b = http(base, "/api/sets/plain?model=lstm")
        check(st == 404 and json.loads(b)["error"]["code"] == "no_test_sets",
              "GET /api/sets/plain?model=lstm -> 404 no_test_sets (was 503)")
        st, _, b = http(base, "/api/sets/plain?model=transformer")
        ev = cli(attn, "eval", "--weights", os.path.join(weights, "transformer-seed1.json"),
                 "--set", "plain", "--seed", "1").stdout
        check(st == 200 and "(%d/1000)" % json.loads(b)["correct"] in ev,
              "GET /api/sets/plain?model=transformer: as attn eval: " + ev.strip())
        st, _, b = http(base, "/api/explain", json.dumps({"sentence": "the lecture was great"}))
        check(st == 200 and [x["model"] for x in json.loads(b)["explanations"]] == ["transformer"],
              "POST without models: the models on the task's vocabulary")
    finally:
        check(stop_server(p) == 0, "SIGTERM: exits 0")


def check_alone(attn, d):
    p, base = start_server(attn, d)
    try:
        st, _, b = http(base, "/api/vocab")
        check(st == 200 and json.loads(b)["vocab_size"] == 37,
              "only the file's model: GET /api/vocab gives its vocabulary")
        st, _, b = http(base, "/api/explain", json.dumps({"sentence": "the movie was boring"}))
        check(st == 200 and [x["model"] for x in json.loads(b)["explanations"]] == ["lstm"],
              "only the file's model: POST without models explains it")
        st, _, b = http(base, "/api/explain", json.dumps({"sentence": "the lecture was great"}))
        check(st == 400 and json.loads(b)["error"]["code"] == "unknown_word",
              "only the file's model: the task's words are unknown")
    finally:
        check(stop_server(p) == 0, "SIGTERM: exits 0")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--attn", required=True)
    ap.add_argument("--weights", required=True)
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix="attn-serve-vocab-")
    try:
        own_vocab_model.make(d)
        check_alone(a.attn, d)
        shutil.copy(os.path.join(a.weights, "transformer-seed1.json"), d)
        check_mixed(a.attn, d, a.weights)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    print("%d failures" % len(FAILS))
    sys.exit(1 if FAILS else 0)


if __name__ == "__main__":
    main()
