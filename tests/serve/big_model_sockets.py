#!/usr/bin/env python3
"""Socket-level tests of `attn serve` on a model over the shared-gradient limit (CTest
serve/big_model_sockets), with sockets.py's helpers. A Transformer of 19 M parameters (d 512,
8 heads, FFN 2048, 6 layers; 76 MB of float32, over SERVE_KEEP_GRADS' 64 MiB of gradients) is
made here by `attn train --epochs 0` as safetensors and served from a file named
transformer-seed1.json (the registry recognises the format by content), on two workers:
  predict            8 predicts allocate no gradient: the resident set grows by less than a tenth
                     of the parameter bytes
  explain            one explain alone, then 6 clients at a time: every answer 200 and
                     byte-identical (the workers take turns with the one gradient buffer), and
                     its explanation is `attn explain --format json`'s on the same file
  memory             the peak resident set (VmHWM) grows by less than 1.5x the parameter bytes
                     over the start: one gradient buffer for both workers, not one each
Only the Python standard library."""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sockets as sk  # noqa: E402

check, request, exchange, status, body_json = (sk.check, sk.request, sk.exchange, sk.status,
                                               sk.body_json)

SENTENCE = "the lecture was not very helpful"


def kib(srv, key):
    """VmRSS or VmHWM of the server process, in KiB."""
    with open("/proc/%d/status" % srv.p.pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise RuntimeError("no %s in /proc/%d/status" % (key, srv.p.pid))


def body_of(resp):
    return resp.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in resp else b""


def make_model(attn, tmp):
    st = os.path.join(tmp, "big.safetensors")
    subprocess.run([attn, "train", "--model", "transformer", "--embed-dim", "512", "--heads", "8",
                    "--ffn-dim", "2048", "--layers", "6", "--epochs", "0", "--out", st],
                   check=True, capture_output=True)
    os.mkdir(os.path.join(tmp, "w"))
    path = os.path.join(tmp, "w", "transformer-seed1.json")
    os.rename(st, path)
    return path


def test_explains(srv, attn, path, param_bytes):
    start = kib(srv, "VmRSS")
    for _ in range(8):
        r = exchange(srv, request("POST", "/api/predict?models=transformer", SENTENCE.encode()))
        check(status(r) == 200, "predict on the 19 M-parameter model -> 200")
    grown = kib(srv, "VmRSS") - start
    check(grown * 1024 < param_bytes / 10,
          "8 predicts: resident set +%d KiB, under a tenth of the %d parameter bytes (no "
          "gradient buffer)" % (grown, param_bytes))
    body = json.dumps({"sentence": SENTENCE, "ig_steps": 4, "models": ["transformer"]}).encode()
    alone = exchange(srv, request("POST", "/api/explain", body), timeout=120)
    check(status(alone) == 200, "one explain alone -> 200")
    answers = []

    def one():
        try:
            answers.append(exchange(srv, request("POST", "/api/explain", body), timeout=120))
        except OSError as e:
            answers.append(str(e).encode())

    ts = [threading.Thread(target=one) for _ in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    same = [status(a) == 200 and body_of(a) == body_of(alone) for a in answers]
    check(all(same) and len(same) == 6,
          "6 explains at a time on 2 workers sharing one gradient buffer: %d/6 answered 200 with "
          "the lone explain's bytes" % same.count(True))
    cli = subprocess.run([attn, "explain", "--weights", path, "--format", "json", "--ig-steps", "4",
                          SENTENCE], check=True, capture_output=True, text=True)
    served = body_json(alone)["explanations"][0]["explain"]
    check(served == json.loads(cli.stdout),
          "the served explanation is attn explain --format json's (logit, attention, saliency)")
    peak = kib(srv, "VmHWM") - start
    check(peak * 1024 < 1.5 * param_bytes,
          "peak resident set +%d KiB over the start, under 1.5x the parameter bytes (%d): one "
          "gradient buffer for both workers" % (peak, param_bytes))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--attn", required=True)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = make_model(a.attn, tmp)
        info = subprocess.run([a.attn, "info", "--weights", path], check=True,
                              capture_output=True, text=True).stdout
        n_params = int(next(line.split()[-1] for line in info.splitlines()
                            if line.startswith("total parameters")).replace(",", ""))
        check(n_params * 4 > 64 << 20, "the model holds %d parameters, %d bytes: over the 64 MiB "
              "limit of one gradient buffer per worker" % (n_params, n_params * 4))
        srv = sk.Server(a.attn, os.path.dirname(path), "--threads", "2")
        try:
            test_explains(srv, a.attn, path, n_params * 4)
        finally:
            check(srv.stop() == 0, "SIGTERM: the server exits 0")
    if sk.FAILS:
        sys.exit("%d check(s) failed" % len(sk.FAILS))
    print("all checks passed")


if __name__ == "__main__":
    main()
