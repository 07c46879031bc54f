#!/usr/bin/env python3
"""End-to-end test of `attn serve` (CTest serve/e2e): starts the server on a free loopback port,
calls every endpoint with good and bad requests, checks that /api/explain returns exactly what
`attn explain --format json` prints, then drives headless Chromium over the DevTools protocol:
loads the page, types a sentence and checks from the page's DOM that each word's shading is the
[CLS] attention the API returned (for two layer/head choices), that unknown words are marked
with the nearest vocabulary word, and that a sentence holding HTML stays text. Saves a
screenshot (--screenshot) and checks the bounded queue (503) and SIGTERM shutdown.
Only the Python standard library; Chromium from Debian (`chromium`)."""
import argparse
import base64
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback, never a proxy
FAILS = []


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        FAILS.append(what)


def http(base, path, body=None, method=None, headers=None):
    data = body.encode() if isinstance(body, str) else body
    req = urllib.request.Request(base + path, data=data, method=method, headers=headers or {})
    try:
        with OPENER.open(req, timeout=30) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def start_server(attn, weights, *extra):
    p = subprocess.Popen([attn, "serve", "--weights", weights, "--port", "0", *extra],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    m = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
    if not m:
        p.kill()
        sys.exit("attn serve did not print its URL: %r %s" % (line, p.stderr.read()))
    return p, "http://127.0.0.1:%s" % m.group(1)


def stop_server(p):
    p.send_signal(signal.SIGTERM)
    try:
        return p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        return None


# ---- the API ------------------------------------------------------------------------------------

def check_api(attn, weights, base):
    st, h, b = http(base, "/healthz")
    check(st == 200 and json.loads(b) == {"status": "ok"}, "GET /healthz")
    check(h.get("X-Content-Type-Options") == "nosniff", "header X-Content-Type-Options: nosniff")
    csp = h.get("Content-Security-Policy", "")
    check("script-src 'self'" in csp and "unsafe-inline" not in csp, "CSP without inline script")
    st, _, b = http(base, "/api/models")
    models = json.loads(b)["models"]
    names = [m["name"] for m in models]
    check(st == 200 and {"rnn", "lstm", "transformer"} <= set(names),
          "GET /api/models lists rnn, lstm, transformer: %s" % names)
    st, _, b = http(base, "/api/vocab")
    words = json.loads(b)["words"]
    check(st == 200 and len(words) == 89 and words[0]["word"] == "the", "GET /api/vocab: 89 words")
    sentences = ["the lecture was not very helpful",
                 "honestly the exam was great although the coffee was awful"]
    for s in sentences:
        st, _, b = http(base, "/api/explain", json.dumps({"sentence": s}))
        got = json.loads(b)
        check(st == 200 and [x["model"] for x in got["explanations"]] == names,
              "POST /api/explain, all models: %s" % s)
        for x in got["explanations"]:
            cli = subprocess.run([attn, "explain", "--weights",
                                  "%s/%s-seed1.json" % (weights, x["model"]), "--format", "json",
                                  "--ig-steps", "0", s], capture_output=True, text=True,
                                 check=True).stdout
            check(x["explain"] == json.loads(cli) and x["seed"] == 1,
                  "  %s: the same object as attn explain --format json --ig-steps 0" % x["model"])
    # the raw bytes too: the server embeds the shared writer's text unchanged; with
    # "ig_steps" the integrated gradients of `attn explain --ig-steps N`
    for steps in (0, 64):
        st, _, b = http(base, "/api/explain", json.dumps({"sentence": sentences[0],
                                                           "models": ["lstm"],
                                                           "ig_steps": steps}))
        cli = subprocess.run([attn, "explain", "--weights", weights + "/lstm-seed1.json",
                              "--format", "json", "--ig-steps", str(steps), sentences[0]],
                             capture_output=True, check=True).stdout.strip()
        check(st == 200 and cli in b and (b"integrated_gradients" in b) == (steps > 0),
              "POST /api/explain models=[lstm], ig_steps %d: byte-identical object" % steps)
    st, _, b = http(base, "/api/sets/plain?model=lstm&seed=2")
    r = json.loads(b)
    check(st == 200 and r["n"] == 1000 and r["seed"] == 2 and
          r["misclassified_total"] == 1000 - r["correct"], "GET /api/sets/plain?model=lstm&seed=2")
    ev = subprocess.run([attn, "eval", "--weights", weights + "/lstm-seed2.json", "--set", "plain",
                         "--seed", "2"], capture_output=True, text=True, check=True).stdout
    check("(%d/1000)" % r["correct"] in ev, "  accuracy as attn eval prints it: " + ev.strip())
    st, _, b = http(base, "/api/sets/fill8?model=rnn&seed=1")
    r = json.loads(b)
    check(st == 200 and len(r["misclassified"]) == min(200, r["misclassified_total"]) and
          all(set(m) == {"sentence", "label", "probability"} for m in r["misclassified"]),
          "GET /api/sets/fill8?model=rnn: misclassified sentences listed")
    bad = [
        ("POST", "/api/explain", '{"sentence": "the lecture was helpfull"}', 400, "unknown_word"),
        ("POST", "/api/explain", '{"sentence": "good", }', 400, "malformed_json"),
        ("POST", "/api/explain", '{"sentence": "good"} x', 400, "malformed_json"),
        ("POST", "/api/explain", '{"sentence": 007}', 400, "malformed_json"),
        ("POST", "/api/explain", '{"sentence": "good", "extra": 1}', 400, "bad_request"),
        ("POST", "/api/explain", '{"sentence": "good", "ig_steps": -4}', 400, "bad_request"),
        ("POST", "/api/explain", '{"sentence": "good", "models": ["bert"]}', 404,
         "unknown_model"),
        ("POST", "/api/explain", json.dumps({"sentence": "good " * 81}), 400, "too_long"),
        ("POST", "/api/explain", json.dumps({"sentence": "x" * 70000}), 413, "too_long"),
        ("POST", "/api/explain", '{"sentence": "   !? "}', 400, "empty_sentence"),
        ("GET", "/api/explain", None, 405, "method_not_allowed"),
        ("GET", "/api/sets/nope?model=rnn", None, 404, "unknown_set"),
        ("GET", "/api/sets/plain?model=bert", None, 404, "unknown_model"),
        ("GET", "/api/sets/plain?model=rnn&seed=7", None, 404, "unknown_seed"),
        ("GET", "/../../etc/passwd", None, 404, "not_found"),
        ("GET", "/index.html/../CMakeLists.txt", None, 404, "not_found"),
    ]
    for method, path, body, want, code in bad:
        st, h, b = http(base, path, body, method=method)
        try:
            e = json.loads(b)["error"]
        except (ValueError, KeyError):
            e = {}
        check(st == want and e.get("code") == code and e.get("status") == want and e.get("message"),
              "%s %s %s -> %d %s" % (method, path, (body or "")[:40], want, code))
    st, _, b = http(base, "/api/explain", '{"sentence": "the lecture was helpfull"}')
    e = json.loads(b)["error"]
    check(e.get("position") == 4 and e.get("word") == "helpfull" and e.get("nearest") == "helpful",
          "unknown word: position 4, nearest 'helpful'")
    st, _, _ = http(base, "/healthz", headers={"Host": "attacker.example"})
    check(st == 421, "Host: attacker.example -> 421 (no DNS rebinding)")
    st, h, b = http(base, "/")
    check(st == 200 and h.get("Content-Type", "").startswith("text/html") and b"app.js" in b,
          "GET / serves the embedded page")


# ---- the DevTools protocol over a WebSocket (RFC 6455), standard library only -------------------

class Cdp:
    def __init__(self, ws_url):
        m = re.match(r"ws://([^/:]+):(\d+)(/.*)", ws_url)
        self.sock = socket.create_connection((m.group(1), int(m.group(2))), timeout=30)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(("GET %s HTTP/1.1\r\nHost: %s:%s\r\nUpgrade: websocket\r\n"
                           "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
                           "Sec-WebSocket-Version: 13\r\n\r\n" %
                           (m.group(3), m.group(1), m.group(2), key)).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += self.sock.recv(1)
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise RuntimeError("WebSocket handshake refused: %r" % head)
        self.next_id = 0

    def _recv_exact(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise RuntimeError("DevTools connection closed")
            buf += chunk
        return buf

    def _recv_message(self):
        data = b""
        while True:
            b0, b1 = self._recv_exact(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._recv_exact(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._recv_exact(8))[0]
            data += self._recv_exact(n)
            if b0 & 0x80:
                return data

    def call(self, method, **params):
        self.next_id += 1
        payload = json.dumps({"id": self.next_id, "method": method, "params": params}).encode()
        mask = os.urandom(4)
        n = len(payload)
        head = bytes([0x81]) + (bytes([0x80 | n]) if n < 126 else
                                bytes([0x80 | 126]) + struct.pack(">H", n) if n < 65536 else
                                bytes([0x80 | 127]) + struct.pack(">Q", n))
        self.sock.sendall(head + mask + bytes(c ^ mask[i % 4] for i, c in enumerate(payload)))
        while True:
            msg = json.loads(self._recv_message())
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise RuntimeError("%s: %s" % (method, msg["error"]))
                return msg["result"]

    def js(self, expr):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError("page script failed: %s" % r["exceptionDetails"])
        return r["result"].get("value")

    def wait_for(self, expr, what, timeout=20):
        end = time.time() + timeout
        while time.time() < end:
            if self.js(expr):
                check(True, "page: " + what)
                return True
            time.sleep(0.05)
        check(False, "page: " + what + " (timed out)")
        return False


def start_chromium(profile):
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        sys.exit("chromium not found: apt-get install chromium")
    p = subprocess.Popen([exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-proxy-server",
                          "--remote-debugging-port=0", "--user-data-dir=" + profile,
                          "--window-size=1200,1800", "--no-first-run", "--disable-extensions",
                          "--disable-background-networking", "about:blank"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    for line in p.stderr:
        m = re.search(r"DevTools listening on ws://[^:]+:(\d+)/", line)
        if m:
            threading.Thread(target=lambda: [None for _ in p.stderr], daemon=True).start()
            return p, int(m.group(1))
    sys.exit("chromium did not start its DevTools endpoint")


def parse_alpha(css):
    m = re.match(r"rgba?\(([\d.]+), ([\d.]+), ([\d.]+)(?:, ([\d.]+))?\)", css)
    if not m:
        return None, None
    rgb = tuple(round(float(m.group(i))) for i in (1, 2, 3))
    return rgb, float(m.group(4)) if m.group(4) is not None else 1.0


SHADES = """Array.from(document.querySelectorAll('#attn-words .tok')).map(
  s => [s.querySelector('.w').textContent, getComputedStyle(s).backgroundColor])"""


def compare_shading(cdp, expl, layer, head, what):
    A = expl["attention"][layer]
    S = len(A[0])
    if head == "mean":
        cls = [sum(h[0][k] for h in A) / len(A) for k in range(S)]
    else:
        cls = A[head][0]
    top = max(cls)
    shades = cdp.js(SHADES)
    ok = len(shades) == S
    worst = 0.0
    for k, (word, css) in enumerate(shades if ok else []):
        rgb, alpha = parse_alpha(css)
        ok = ok and word == expl["tokens"][k] and rgb == (255, 140, 0)
        worst = max(worst, abs(alpha - cls[k] / top))
    check(ok and worst <= 0.01, "page: %s: each word's shading = [CLS] attention / max "
          "(%d words, max |difference| %.4f)" % (what, S, worst))


def check_page(base, api_expl, sentence, screenshot):
    profile = tempfile.mkdtemp(prefix="attn-e2e-chromium-")
    chrome, port = start_chromium(profile)
    try:
        with OPENER.open("http://127.0.0.1:%d/json/list" % port, timeout=10) as r:
            page = next(t for t in json.load(r) if t["type"] == "page")
        cdp = Cdp(page["webSocketDebuggerUrl"])
        cdp.call("Page.enable")
        cdp.call("Runtime.enable")
        cdp.call("Page.navigate", url=base + "/")
        cdp.wait_for("document.body && document.body.dataset.ready === 'true'", "loads")
        # type the sentence into the box as a user would
        cdp.js("document.getElementById('sentence').focus()")
        cdp.call("Input.insertText", text=sentence)
        cdp.js("document.getElementById('sentence').dispatchEvent(new KeyboardEvent('keydown', "
               "{key: 'Enter'}))")
        cdp.wait_for("document.body.dataset.explained !== undefined && "
                     "document.querySelectorAll('#attn-words .tok').length > 0", "explains")
        cards = cdp.js("Array.from(document.querySelectorAll('.card')).map(c => "
                       "[c.dataset.model, c.querySelector('.label').textContent])")
        want = [[x["model"], "positive" if x["explain"]["probability"] > 0.5 else "negative"]
                for x in api_expl]
        check(cards == want, "page: one card per model with the API's label: %s" % cards)
        t = next(x["explain"] for x in api_expl if x["model"] == "transformer")
        L = len(t["attention"])
        compare_shading(cdp, t, L - 1, "mean", "layer %d, mean of the heads" % (L - 1))
        shot = cdp.call("Page.captureScreenshot", format="png",
                        clip={"x": 0, "y": 0, "width": 1200, "height": 1800, "scale": 1},
                        captureBeyondViewport=True)
        with open(screenshot, "wb") as f:
            f.write(base64.b64decode(shot["data"]))
        check(os.path.getsize(screenshot) > 10000, "page: screenshot saved to " + screenshot)
        cdp.js("(() => { const l = document.getElementById('layer'), h = "
               "document.getElementById('head'); l.value = '0'; h.value = '1'; "
               "h.dispatchEvent(new Event('change')); })()")
        compare_shading(cdp, t, 0, 1, "layer 0, head 1")
        S = len(t["tokens"])
        check(cdp.js("document.querySelectorAll('#heatmap tbody tr').length") == S,
              "page: the query x key heat map has %d rows" % S)
        n_rec = sum(1 for x in api_expl if "prefix_probability" in x["explain"])
        n_curves = cdp.js("document.querySelectorAll('#curves svg polyline').length")
        check(n_curves == n_rec, "page: a probability curve per recurrent model (%d)" % n_curves)
        check(cdp.js("document.querySelectorAll('#saliency .sal-row').length") == len(api_expl),
              "page: a saliency row per model")
        # integrated gradients on request: the page asks again with ig_steps 64 and shows the
        # API's values (2 decimals) and their sum beside logit - baseline
        cdp.js("(() => { const m = document.getElementById('sal-method'); m.value = '64'; "
               "m.dispatchEvent(new Event('change')); })()")
        cdp.wait_for("document.querySelectorAll('#saliency .sal-row[data-method=\"ig\"]').length"
                     " === %d" % len(api_expl), "integrated gradients shown")
        st, _, b = http(base, "/api/explain", json.dumps({"sentence": sentence, "ig_steps": 64}))
        ig = {x["model"]: x["explain"]["saliency"]["integrated_gradients"]
              for x in json.loads(b)["explanations"]}
        shown = cdp.js("Object.fromEntries(Array.from(document.querySelectorAll('#saliency "
                       ".sal-row')).map(r => [r.dataset.model, Array.from(r.querySelectorAll("
                       "'.v')).map(v => Number(v.textContent))]))")
        check(st == 200 and all(
            len(shown[m]) == len(v) and all(abs(a - b) <= 0.0051 for a, b in zip(shown[m], v))
            for m, v in ig.items()), "page: integrated gradients as the API gives them")
        check(cdp.js("document.querySelector('#saliency .sal-row .title').textContent"
                     ".includes('logit \u2212 baseline')"), "page: their sum beside logit - baseline")
        cdp.js("(() => { const m = document.getElementById('sal-method'); m.value = '0'; "
               "m.dispatchEvent(new Event('change')); })()")
        cdp.wait_for("document.querySelectorAll('#saliency .sal-row[data-method=\"gxi\"]').length"
                     " === %d" % len(api_expl), "back to gradient x input")
        # a counterfactual: swap the adjective, every model answers again
        cdp.js("(() => { const b = Array.from(document.querySelectorAll('#swap-words .tok'))"
               ".find(x => x.textContent === 'helpful'); b.click(); })()")
        cdp.js("Array.from(document.querySelectorAll('#swap-choices .chip')).find("
               "x => x.textContent === 'interesting').click()")
        cdp.wait_for("document.getElementById('sentence').value.includes('interesting') && "
                     "Array.from(document.querySelectorAll('#swap-words .tok')).some("
                     "b => b.textContent === 'interesting')", "counterfactual swap re-explains")
        # unknown words are marked with a suggestion; HTML stays text
        cdp.js("(() => { const s = document.getElementById('sentence'); s.value = "
               "'the lecture was helpfull <img src=x id=injected>'; "
               "s.dispatchEvent(new Event('input')); })()")
        cdp.wait_for("document.getElementById('unknown').textContent.includes('helpful')",
                     "unknown word marked with the nearest word")
        cdp.js("document.getElementById('go').click()")
        cdp.wait_for("document.getElementById('error').textContent.includes('unknown word')",
                     "the API's error shown")
        check(cdp.js("document.getElementById('injected') === null && "
                     "document.querySelectorAll('img').length === 0"),
              "page: a sentence holding HTML is rendered as text")
        cdp.call("Page.navigate", url=base + "/figures.html")
        cdp.wait_for("document.getElementById('figures') && "
                     "document.getElementById('figures').children.length > 0",
                     "figures page renders (figures or the note)")
        check(True, "page: figures page")
    finally:
        chrome.terminate()
        try:
            chrome.wait(timeout=10)
        except subprocess.TimeoutExpired:
            chrome.kill()
        shutil.rmtree(profile, ignore_errors=True)


def check_queue(attn, weights):
    """One worker, a queue of one: of 12 concurrent long explains some must get 503 at once."""
    p, base = start_server(attn, weights, "--threads", "1", "--queue", "1")
    body = json.dumps({"sentence": " ".join(["the lecture was not very helpful"] * 13)[:400]})
    codes = []
    lock = threading.Lock()

    def one():
        st, _, _ = http(base, "/api/explain", body)
        with lock:
            codes.append(st)

    threads = [threading.Thread(target=one) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check(set(codes) <= {200, 503} and 503 in codes and 200 in codes,
          "bounded queue: 12 concurrent requests on 1 worker, queue 1 -> %d x 200, %d x 503" %
          (codes.count(200), codes.count(503)))
    check(stop_server(p) == 0, "SIGTERM: the server with a queue exits 0")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--attn", required=True)
    ap.add_argument("--weights", required=True)
    ap.add_argument("--screenshot", default="serve-e2e.png")
    a = ap.parse_args()
    t0 = time.time()
    p, base = start_server(a.attn, a.weights, "--threads", "2")
    try:
        check_api(a.attn, a.weights, base)
        sentence = "honestly the lecture was not very helpful although the coffee was great"
        st, _, b = http(base, "/api/explain", json.dumps({"sentence": sentence}))
        check_page(base, json.loads(b)["explanations"], sentence, a.screenshot)
    finally:
        rc = stop_server(p)
    check(rc == 0, "SIGTERM: attn serve shuts down and exits 0")
    check_queue(a.attn, a.weights)
    print("%d failures, %.1f s" % (len(FAILS), time.time() - t0))
    sys.exit(1 if FAILS else 0)


if __name__ == "__main__":
    main()
