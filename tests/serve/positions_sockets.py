#!/usr/bin/env python3
"""Socket-level tests of section 4's endpoints of `attn serve` (CTest serve/positions_sockets),
with sockets.py's helpers, on the committed weights:
  GET /api/positions      the Transformer's table equals the weights file's pos_embedding
                          (read here with json, not through attn); model=lstm -> 404
                          no_position_table; model=nope -> 404 unknown_model
  positions=zero          POST /api/predict: the Transformer with its position vectors zeroed
                          gives the same probability to a sentence and to its shuffles (to 1e-6),
                          while the trained one does not; the RNNs' answers are those without
                          the option; positions=other -> 400
  sinusoidal              a Transformer trained here with --pos sinusoidal (2 epochs): GET
                          /api/positions is "scheme": "sinusoidal", "trained": false, and the
                          table is sin/cos(p / 10000^(2i/D)) computed here in double and rounded
                          to float32, bit for bit; positions=zero (the table left out) gives the
                          shuffles one probability; --pos rope -> 404 no_position_table
Only the Python standard library."""
import argparse
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sockets as sk  # noqa: E402

check, request, exchange, status, error_code, body_json = (sk.check, sk.request, sk.exchange,
                                                           sk.status, sk.error_code, sk.body_json)


def predict(srv, lines, query):
    r = exchange(srv, request("POST", "/api/predict?" + query, "\n".join(lines).encode()))
    return status(r), (body_json(r) if status(r) == 200 else error_code(r))


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def sinusoid(P, D):
    """Vaswani et al.'s table as the model builds it: the angle in double, rounded once."""
    return [[f32(math.cos(a) if j % 2 else math.sin(a))
             for j in range(D) for a in [p / math.pow(10000.0, (j - j % 2) / D)]]
            for p in range(P)]


def check_other_schemes(attn, weights):
    tmp = tempfile.mkdtemp(prefix="attn-positions-")
    try:
        for pos in ("sinusoidal", "rope"):
            d = os.path.join(tmp, pos)
            subprocess.run([attn, "train", "--model", "transformer", "--pos", pos, "--epochs", "2",
                            "--train-size", "2000", "--holdout", "200", "--out",
                            os.path.join(d, "transformer-seed1.json")], check=True,
                           capture_output=True)
            os.symlink(os.path.abspath(os.path.join(weights, "lstm-seed1.json")),
                       os.path.join(d, "lstm-seed1.json"))
            srv = sk.Server(attn, d, "--threads", "1")
            try:
                r = exchange(srv, request("GET", "/api/positions?model=transformer"))
                if pos == "rope":
                    check(status(r) == 404 and error_code(r) == "no_position_table",
                          "--pos rope: 404 no_position_table (no vector added to the embeddings)")
                    continue
                got = body_json(r) if status(r) == 200 else {}
                P, D = got.get("positions", 0), got.get("dim", 0)
                want = sinusoid(P, D)
                table = got.get("table", [])
                check(status(r) == 200 and got.get("scheme") == "sinusoidal"
                      and got.get("trained") is False and [P, D] == [81, 32]
                      and [[f32(x) for x in row] for row in table] == want,
                      "--pos sinusoidal: GET /api/positions is the %d x %d sinusoid table, each "
                      "number the float32 of Python's double, bit for bit" % (P, D))
                s = "the food was not very good".split()
                lines = [" ".join(s), " ".join(reversed(s)), " ".join(s[1::2] + s[0::2])]
                st, zero = predict(srv, lines, "models=transformer&positions=zero")
                st1, plain = predict(srv, lines, "models=transformer")
                tz = zero["predictions"][0]["probabilities"] if st == 200 else [0, 1]
                check(st == 200 and st1 == 200 and max(tz) - min(tz) < 1e-6
                      and zero["predictions"][0].get("positions") == "zero"
                      and plain["predictions"][0]["probabilities"] != tz,
                      "--pos sinusoidal: without the table one probability for every order %s"
                      % ["%.6f" % x for x in tz])
            finally:
                check(srv.stop() == 0, "--pos %s: the server exits 0" % pos)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--attn", required=True)
    ap.add_argument("--weights", required=True)
    a = ap.parse_args()
    with open(os.path.join(a.weights, "transformer-seed1.json")) as f:
        want = json.load(f)["tensors"]["pos_embedding"]
    srv = sk.Server(a.attn, a.weights, "--threads", "1")
    try:
        r = exchange(srv, request("GET", "/api/positions?model=transformer"))
        got = body_json(r) if status(r) == 200 else {}
        flat = [x for row in got.get("table", []) for x in row]
        check(status(r) == 200 and got.get("scheme") == "learned"
              and [got.get("positions"), got.get("dim")] == want["shape"]
              and len(flat) == len(want["data"])
              and all(abs(x - y) <= 1e-7 * max(1, abs(y)) for x, y in zip(flat, want["data"])),
              "GET /api/positions: %s table equal to the file's pos_embedding %s"
              % ([got.get("positions"), got.get("dim")], want["shape"]))
        r = exchange(srv, request("GET", "/api/positions?model=lstm"))
        check(status(r) == 404 and error_code(r) == "no_position_table",
              "model=lstm -> 404 no_position_table")
        r = exchange(srv, request("GET", "/api/positions?model=nope"))
        check(status(r) == 404 and error_code(r) == "unknown_model", "model=nope -> 404")

        s = "the food was not very good".split()
        lines = [" ".join(s), " ".join(reversed(s)), " ".join(s[1::2] + s[0::2]),
                 " ".join(s[3:] + s[:3])]
        st0, plain = predict(srv, lines, "models=rnn,lstm,transformer")
        st1, zero = predict(srv, lines, "models=rnn,lstm,transformer&positions=zero")
        check(st0 == 200 and st1 == 200, "POST /api/predict with and without positions=zero -> 200")
        p = {d["model"]: d["probabilities"] for d in plain["predictions"]}
        z = {d["model"]: d["probabilities"] for d in zero["predictions"]}
        tz = z["transformer"]
        check(max(tz) - min(tz) < 1e-6 and [d.get("positions") for d in zero["predictions"]]
              == [None, None, "zero"],
              "the Transformer without positions: one probability for the sentence and its 3 "
              "shuffles %s" % ["%.6f" % x for x in tz])
        tp = p["transformer"]
        check(max(tp) - min(tp) > 0.1,
              "the trained Transformer tells them apart %s" % ["%.4f" % x for x in tp])
        check(z["rnn"] == p["rnn"] and z["lstm"] == p["lstm"]
              and max(p["lstm"]) - min(p["lstm"]) > 1e-3,
              "the RNNs answer as without positions=zero, and tell the orders apart")
        check(predict(srv, lines[:1], "positions=none") == (400, "bad_request"),
              "positions=none -> 400 bad_request")
    finally:
        rc = srv.stop()
    check(rc == 0, "the server exits 0 on SIGTERM")
    check_other_schemes(a.attn, a.weights)
    print("%d checks failed" % len(sk.FAILS))
    sys.exit(1 if sk.FAILS else 0)


if __name__ == "__main__":
    main()
