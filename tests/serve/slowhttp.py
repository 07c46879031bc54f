#!/usr/bin/env python3
"""CTest serve/slowhttptest: Debian's `slowhttptest` against `attn serve` on loopback, for a
bounded time per attack: slow headers (Slowloris) and slow body (R-U-Dead-Yet), 300
connections each from 127.0.0.1, a byte every second. Meanwhile a normal client (from
127.0.0.2, another loopback address) asks /healthz every 0.2 s; every answer must come within
1 s, and the server must still be running afterwards. The server runs with its defaults
(--request-timeout 10, --max-per-ip 64, 256 connections)."""
import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time


def healthz(port):
    s = socket.socket()
    s.bind(("127.0.0.2", 0))
    s.settimeout(1.0)
    try:
        s.connect(("127.0.0.1", port))
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        data = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        return data.startswith(b"HTTP/1.1 200")
    except OSError:
        return False
    finally:
        s.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--attn", required=True)
    ap.add_argument("--weights", required=True)
    ap.add_argument("--seconds", type=int, default=8, help="length of each attack")
    a = ap.parse_args()
    if not shutil.which("slowhttptest"):
        sys.exit("FAIL  slowhttptest is not installed (Debian package slowhttptest; "
                 "bash scripts/install-deps.sh --test)")
    p = subprocess.Popen([a.attn, "serve", "--weights", a.weights, "--port", "0",
                          "--threads", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    m = re.search(r"http://127\.0\.0\.1:(\d+)/", p.stdout.readline())
    if not m:
        p.kill()
        sys.exit("attn serve did not print its URL: %s" % p.stderr.read())
    port = int(m.group(1))
    fails = 0
    for mode, extra in [("slow headers", ["-H", "-u", "http://127.0.0.1:%d/healthz" % port]),
                        ("slow body", ["-B", "-s", "8192", "-u",
                                       "http://127.0.0.1:%d/api/explain" % port])]:
        attack = subprocess.Popen(["slowhttptest", "-c", "300", "-r", "300", "-i", "1", "-x",
                                   "8", "-p", "2", "-l", str(a.seconds), *extra],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  env=dict(os.environ, TERM="dumb"))
        times, worst = [], 0.0
        time.sleep(1.0)  # let it open its connections
        while attack.poll() is None:
            t0 = time.monotonic()
            ok = healthz(port)
            dt = time.monotonic() - t0
            times.append(dt if ok else None)
            worst = max(worst, dt)
            time.sleep(0.2)
        out = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", attack.stdout.read())
        connected = re.findall(r"connected:\s+(\d+)", out)
        good = all(t is not None and t < 1.0 for t in times) and len(times) >= 5
        print("%s  %s: %d /healthz requests during the attack, all within 1 s: %s (slowest "
              "%.3f s; the attack held up to %s connections at once)" %
              ("ok   " if good else "FAIL ", mode, len(times), good, worst,
               max(map(int, connected)) if connected else "?"), flush=True)
        fails += not good
    alive = p.poll() is None and healthz(port)
    print("%s  the server still answers after both attacks" % ("ok   " if alive else "FAIL "))
    fails += not alive
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        fails += 1
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
