#!/usr/bin/env python3
"""Socket-level tests of the decoder endpoints of `attn serve` (CTest serve/decoder_sockets), in
the manner of sockets.py (its helpers): a weights directory made here (the committed
classifiers linked, a seq2seq-transformer trained for 1 epoch on 1,000 pairs by `attn reproduce --task
rewrite`), a server on a free loopback port.
  answers            POST /api/generate: 200 with the API's headers (JSON type, no-store), the
                     alignment [output][source] rows are distributions, the top-5 sorted; a
                     forced prefix is written first; GET /api/decoders lists the model
  half-close         8 clients at a time, twice: every answer 200 and byte-identical (the two
                     worker contexts hold equal copies)
  limits             a body over 64 KiB -> 413 before it is read; two Content-Length -> 400;
                     duplicate and unknown JSON keys -> 400; a slow body is cut off after
                     --request-timeout while /healthz is answered within 1 s
  SIGTERM            generate requests received before it are answered; the server exits 0
Only the Python standard library."""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sockets as sk  # noqa: E402

check, request, exchange, status, error_code, body_json = (sk.check, sk.request, sk.exchange,
                                                           sk.status, sk.error_code, sk.body_json)


def gen(text="the exam was not very clear", **kw):
    return json.dumps(dict(text=text, **kw)).encode()


def test_answers(srv):
    r = exchange(srv, request("POST", "/api/generate", gen(layer=1, head=0)))
    head = r.split(b"\r\n\r\n", 1)[0].lower()
    check(status(r) == 200 and b"content-type: application/json; charset=utf-8" in head
          and b"cache-control: no-store" in head,
          "POST /api/generate -> 200, JSON, Cache-Control: no-store")
    e = body_json(r)["explain"]
    rows = e["alignment"]
    check(len(rows) == len(e["steps"]) and all(len(row) == len(e["tokens"]) for row in rows)
          and all(abs(sum(row) - 1) < 1e-5 for row in rows),
          "alignment: %d output rows x %d source words, each a distribution"
          % (len(rows), len(e["tokens"])))
    tops = [[t["probability"] for t in s["top"]] for s in e["steps"]]
    check(all(len(t) == 5 and t == sorted(t, reverse=True) for t in tops),
          "top-5 of every step, most probable first")
    alt = e["steps"][0]["top"][1]["token"]
    r = exchange(srv, request("POST", "/api/generate", gen(prefix=[alt])))
    f = body_json(r)["explain"]
    check(status(r) == 200 and f["words"][:1] == [alt] and f["steps"][0]["forced"]
          and f["steps"][0]["probability"] == e["steps"][0]["top"][1]["probability"],
          "prefix [%r] (the first step's runner-up) written first, with its probability" % alt)
    d = body_json(exchange(srv, request("GET", "/api/decoders")))
    check([x["name"] for x in d["decoders"]] == ["seq2seq-transformer"],
          "GET /api/decoders lists seq2seq-transformer")


def test_half_close(srv):
    raw = request("POST", "/api/generate", gen())
    results = []

    def one():
        try:
            r = exchange(srv, raw)
            results.append((status(r), r.split(b"\r\n\r\n", 1)[-1]))
        except OSError as e:
            results.append((str(e), b""))

    for _ in range(2):
        ts = [threading.Thread(target=one) for _ in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    ok = sum(1 for s, _ in results if s == 200)
    check(ok == 16 and len({b for _, b in results}) == 1,
          "half-close: POST /api/generate, 8 clients at a time, twice: %d/16 answered 200, %d "
          "distinct bodies" % (ok, len({b for _, b in results})))


def test_limits(srv, timeout_s):
    big = b"POST /api/generate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 70000\r\n\r\n"
    r = exchange(srv, big)
    check(status(r) == 413, "Content-Length 70000 -> 413 without the body (got %s)" % status(r))
    body = gen()
    two = (b"POST /api/generate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n"
           b"Content-Length: 5\r\n\r\n" % len(body)) + body
    check(status(exchange(srv, two)) == 400, "two Content-Length -> 400")
    for name, raw, code in [("duplicate key", b'{"text": "good", "text": "bad"}', "malformed_json"),
                            ("unknown key", b'{"text": "good", "beams": 2}', "bad_request"),
                            ("unknown word", gen("the exam was nto clear"), "unknown_word")]:
        r = exchange(srv, request("POST", "/api/generate", raw))
        check(status(r) == 400 and error_code(r) == code,
              "%s -> 400 %s (got %s %s)" % (name, code, status(r), error_code(r)))
    h = sk.Healthz(srv)
    h.start()
    first = request("POST", "/api/generate", b"x" * 400)[:-400]
    n_cut, closed = sk.trickle(srv, first, b" ", 4, timeout_s + 4, timeout_s + 2)
    ok, n, worst = h.finish()
    check(n_cut == 4, "slow body on /api/generate: 4 clients cut off within %d s (%s)"
          % (timeout_s + 2, closed))
    check(ok and n >= 5, "/healthz answered within 1 s meanwhile (%d requests, slowest %.3f s)"
          % (n, worst))


def test_sigterm(attn, weights):
    srv = sk.Server(attn, weights, "--threads", "2", "--queue", "64")
    results = {}

    def one(i):
        try:
            results[i] = status(exchange(srv, request("POST", "/api/generate", gen())))
        except OSError:
            results[i] = None

    ts = [threading.Thread(target=one, args=(i,)) for i in range(12)]
    for t in ts:
        t.start()
    time.sleep(0.05)
    rc = srv.stop()
    for t in ts:
        t.join()
    answered = [v for v in results.values() if v is not None]
    check(rc == 0 and all(v in (200, 503) for v in answered) and 200 in answered,
          "SIGTERM under generate load: exit %s, answers %s" % (rc, sorted(answered)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--attn", required=True)
    ap.add_argument("--weights", required=True, help="the committed classifiers' directory")
    a = ap.parse_args()
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("rnn-seed1.json", "lstm-seed1.json", "transformer-seed1.json"):
            os.symlink(os.path.join(os.path.abspath(a.weights), name), os.path.join(tmp, name))
        subprocess.run([a.attn, "reproduce", "--task", "rewrite", "--seeds", "1", "--epochs", "1",
                        "--models", "seq2seq-transformer", "--train-size", "1000", "--out", tmp], check=True, capture_output=True)
        timeout_s = 2
        srv = sk.Server(a.attn, tmp, "--threads", "2", "--request-timeout", str(timeout_s))
        try:
            test_answers(srv)
            test_half_close(srv)
            test_limits(srv, timeout_s)
        finally:
            rc = srv.stop()
        check(rc == 0, "the server exits 0 on SIGTERM")
        test_sigterm(a.attn, tmp)
    print("%d checks failed; %.1f s" % (len(sk.FAILS), time.monotonic() - t0))
    sys.exit(1 if sk.FAILS else 0)


if __name__ == "__main__":
    main()
