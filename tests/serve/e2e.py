#!/usr/bin/env python3
"""End-to-end test of `attn serve` (CTest serve/e2e): starts the server on a free loopback port,
calls every endpoint with good and bad requests, checks that /api/explain returns exactly what
`attn explain --format json` prints, then drives headless Chromium over the DevTools protocol:
loads the page, types a sentence and checks from the page's DOM that each word's shading is the
[CLS] attention the API returned (for two layer/head choices), the model view (a map per
layer x head, each entry's opacity the API's weight; a click chooses that layer and head) and the
head view (a line per query x key at the API's weight; a hovered word keeps its lines only, a
tapped one keeps them; screenshots of both in a temporary directory), the q.k view (q, each k,
q x k, scores and softmax equal to POST /api/explain "qk": true), that unknown words are marked
with the nearest vocabulary word, and that a sentence holding HTML stays text. The page that
teaches: the write-up's §7 observations on the first page (attn's measured numbers, the
example's own number equal to the API's), a polarity-changing counterfactual and occlusion
(both against POST /api/predict), integrated gradients' and saturation notes in words, results
marked stale on an unknown word, a 43-word sentence without horizontal overflow (1200 and 420
pixels wide), section 4 (the shuffle test against POST /api/predict with and without
positions=zero, the position table's canvas pixels against GET /api/positions), unknown words
with words of the class their slot takes, two sentences side by side against POST /api/explain
(each with a screenshot),
/figures.html following docs/figures/index.md, and a PyTorch LSTM with its own vocabulary beside the task's Transformer (own_vocab_model.py; needs torch). The
decoder page (its unknown words' chips too) and the q.k view of a --pos alibi Transformer (q.k,
the ALiBi bias and their sum, the API's), each model trained here for 2 epochs. Saves screenshots
(--screenshot and two beside it) and checks the bounded queue (503) and SIGTERM shutdown.
Chromium from Debian (`chromium`)."""
import argparse
import base64
import json
import math
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
        # an expression that throws (the page still loading: an element not there yet) is
        # "not yet"; one that never holds times out and fails
        guarded = "(() => { try { return !!(%s); } catch (e) { return false; } })()" % expr
        end = time.time() + timeout
        while time.time() < end:
            if self.js(guarded):
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


class Browser:
    """Headless Chromium with one page, driven over the DevTools protocol."""

    def __enter__(self):
        self.profile = tempfile.mkdtemp(prefix="attn-e2e-chromium-")
        self.chrome, port = start_chromium(self.profile)
        with OPENER.open("http://127.0.0.1:%d/json/list" % port, timeout=10) as r:
            page = next(t for t in json.load(r) if t["type"] == "page")
        self.cdp = Cdp(page["webSocketDebuggerUrl"])
        self.cdp.call("Page.enable")
        self.cdp.call("Runtime.enable")
        return self.cdp

    def __exit__(self, *exc):
        self.chrome.terminate()
        try:
            self.chrome.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.chrome.kill()
        shutil.rmtree(self.profile, ignore_errors=True)


def screenshot_to(cdp, path, height=1800):
    shot = cdp.call("Page.captureScreenshot", format="png",
                    clip={"x": 0, "y": 0, "width": 1200, "height": height, "scale": 1},
                    captureBeyondViewport=True)
    with open(path, "wb") as f:
        f.write(base64.b64decode(shot["data"]))
    check(os.path.getsize(path) > 10000, "page: screenshot saved to " + path)


def open_page(cdp, base):
    cdp.call("Page.navigate", url=base + "/")
    cdp.wait_for("document.body && document.body.dataset.ready === 'true'", "loads")


def select(cdp, sel_id, value):
    cdp.js("(() => { const m = document.getElementById(%s); m.value = %s; "
           "m.dispatchEvent(new Event('change')); })()" % (json.dumps(sel_id), json.dumps(value)))


def set_sentence(cdp, sentence):
    """Puts sentence into the box and explains it; waits for the answer and the occlusion."""
    before = cdp.js("document.body.dataset.explained || ''")
    cdp.js("(() => { const s = document.getElementById('sentence'); s.value = %s; "
           "document.getElementById('go').click(); })()" % json.dumps(sentence))
    return cdp.wait_for("document.body.dataset.explained !== undefined && "
                        "document.body.dataset.explained !== %s && document.body.dataset.occlusion"
                        " === document.body.dataset.explained" % json.dumps(before),
                        "explains: %s" % sentence[:50])


MODEL_VIEW = """Array.from(document.querySelectorAll('#model-view .mv-cell')).map(c => {
  const b = c.getBoundingClientRect();
  return [Number(c.dataset.layer), Number(c.dataset.head), Math.round(b.top), Math.round(b.left),
          Array.from(c.querySelectorAll('rect[data-q]')).map(r => [Number(r.dataset.q),
            Number(r.dataset.k), Number(r.getAttribute('fill-opacity'))])]; })"""

HEAD_LINES = """Array.from(document.querySelectorAll('#head-view line')).filter(
  l => getComputedStyle(l).visibility === 'visible').map(
  l => [Number(l.dataset.q), Number(l.dataset.k), Number(l.getAttribute('stroke-opacity'))])"""

ROUNDING = 0.0005 + 1e-9  # the page writes opacities with 3 decimals


def mouse(cdp, selector, kind="mouseMoved", click=False):
    """Moves the mouse (and clicks) at the centre of selector, scrolled into view first."""
    x, y = cdp.js("(() => { const e = document.querySelector(%s); e.scrollIntoView({block: "
                  "'center'}); const b = e.getBoundingClientRect(); return [b.left + b.width / 2, "
                  "b.top + b.height / 2]; })()" % json.dumps(selector))
    cdp.call("Input.dispatchMouseEvent", type=kind, x=x, y=y)
    if click:
        for t in ("mousePressed", "mouseReleased"):
            cdp.call("Input.dispatchMouseEvent", type=t, x=x, y=y, button="left", clickCount=1)


def element_shot(cdp, selectors, path, width=1200):
    """A screenshot of the page from the top of the first selector to the bottom of the last,
    scrolled into the window: capturing beyond it resizes the window for a moment, and the page
    reflows (no scroll bar) and sees the mouse over another word."""
    top, bottom = cdp.js("(() => { document.querySelector(%s).scrollIntoView({block: 'start'}); "
                         "const a = document.querySelector(%s).getBoundingClientRect(), "
                         "b = document.querySelector(%s).getBoundingClientRect(); return [a.top "
                         "+ scrollY, b.bottom + scrollY]; })()" %
                         (json.dumps(selectors[0]), json.dumps(selectors[0]),
                          json.dumps(selectors[-1])))
    shot = cdp.call("Page.captureScreenshot", format="png",
                    clip={"x": 0, "y": max(0, top - 8), "width": width,
                          "height": min(bottom - top + 16, 1790), "scale": 1})
    with open(path, "wb") as f:
        f.write(base64.b64decode(shot["data"]))
    check(os.path.getsize(path) > 2000, "page: screenshot saved to " + path)


def worst_diff(got, A):
    return max((abs(p - A[q][k]) for q, k, p in got), default=float("inf"))


def check_model_view(cdp, t, n_layers, n_heads, what):
    """The model view: a map per layer x head in a grid (rows layers, columns heads), every entry
    the API's weight; labelled as the rest of the page numbers layers and heads (from 1)."""
    A = t["attention"]
    S = len(t["tokens"])
    cells = cdp.js(MODEL_VIEW)
    check(len(cells) == n_layers * n_heads == len(A) * len(A[0]),
          "page: model view, %s: %d maps = %d layers x %d heads (/api/models)" %
          (what, len(cells), n_layers, n_heads))
    order = sorted(cells, key=lambda c: (c[0], c[1]))
    rows = all(order[i][2] == order[i - i % n_heads][2] and
               (i % n_heads == 0 or order[i][3] > order[i - 1][3]) and
               (i < n_heads or order[i][2] > order[i - n_heads][2]) for i in range(len(order)))
    check(rows, "page: model view, %s: rows are layers, columns heads" % what)
    worst = max((worst_diff(c[4], A[c[0]][c[1]]) for c in cells), default=float("inf"))
    check(all(len(c[4]) == S * S for c in cells) and worst <= ROUNDING,
          "page: model view, %s: every map has %d x %d entries, opacity = the API's weight (max "
          "|difference| %.5f)" % (what, S, S, worst))
    labels = cdp.js("[Array.from(document.querySelectorAll('#model-view .mv-layer')).map(e => "
                    "e.textContent), Array.from(document.querySelectorAll('#model-view .mv-head'))"
                    ".map(e => e.textContent)]")
    check(labels == [["layer 1 (first)", "layer 2 (last)"], ["head %d" % (h + 1)
                                                             for h in range(n_heads)]],
          "page: model view labels layers 1 (first), 2 (last) and heads from 1, as the layer "
          "choice does: %s" % labels)


def check_head_view(cdp, t, layer, head, query, what):
    """The head view: a line from each query to each key, opacity = the API's weight; hovering
    query `query` on the left leaves only its S lines and shades the keys by its weights."""
    P = t["attention"][layer][head]
    S = len(t["tokens"])
    cdp.call("Input.dispatchMouseEvent", type="mouseMoved", x=1, y=1)
    lines = cdp.js(HEAD_LINES)
    words = cdp.js("[Array.from(document.querySelectorAll('#head-view .hv-query title')).map(e => "
                   "e.textContent.split(' (')[0]), Array.from(document.querySelectorAll("
                   "'#head-view .hv-key title')).map(e => e.textContent.split(' (')[0])]")
    check(words == [t["tokens"], t["tokens"]],
          "page: head view, %s: the sentence's %d tokens in two columns" % (what, S))
    check(len(lines) == S * S and worst_diff(lines, P) <= ROUNDING,
          "page: head view, %s: %d lines, opacity = the API's weight (max |difference| %.5f)" %
          (what, len(lines), worst_diff(lines, P)))
    mouse(cdp, '#head-view .hv-query[data-q="%d"] rect' % query)
    lines = cdp.js(HEAD_LINES)
    keys = cdp.js("Array.from(document.querySelectorAll('#head-view .hv-key')).map(g => [%d, "
                  "Number(g.dataset.k), Number(g.firstChild.getAttribute('fill-opacity'))])"
                  % query)
    check(len(lines) == S and all(q == query for q, _, _ in lines) and
          sorted(k for _, k, _ in lines) == list(range(S)) and worst_diff(lines, P) <= ROUNDING
          and worst_diff(keys, P) <= ROUNDING,
          "page: head view, %s: hovering '%s' leaves its %d lines only, their opacity and the "
          "keys' shading = its row of the API's map (max |difference| %.5f)" %
          (what, t["tokens"][query], len(lines), max(worst_diff(lines, P), worst_diff(keys, P))))


def check_views(cdp, base, t, shots):
    """The model view against the API, a click on a map choosing that layer and head in the
    detailed view, and the head view with a hovered word; screenshots of both into shots."""
    models = json.loads(http(base, "/api/models")[2])["models"]
    tm = next(m for m in models if m["name"] == "transformer")
    check_model_view(cdp, t, tm["n_layers"], tm["n_heads"], "%d tokens" % len(t["tokens"]))
    mouse(cdp, '#model-view .mv-cell[data-layer="0"][data-head="1"]', click=True)
    chosen = cdp.js("[document.getElementById('layer').value, document.getElementById('head')."
                    "value, Array.from(document.querySelectorAll('#model-view .mv-cell.selected'))"
                    ".map(c => c.dataset.layer + '/' + c.dataset.head), document.getElementById("
                    "'head-view-title').textContent]")
    check(chosen == ["0", "1", ["0/1"], "Head view: layer 1 (first), head 2"],
          "page: a click on the model view's layer 1, head 2 chooses attention[0][1] in the "
          "detailed view: %s" % chosen)
    compare_shading(cdp, t, 0, 1, "after the click, layer 0, head 1")
    check(cdp.js("document.querySelectorAll('#heatmap tbody td')[1].title.endsWith(%s)" %
                 json.dumps("%.3f" % t["attention"][0][1][0][1])),
          "page: after the click the heat map is attention[0][1]")
    k = next(i for i, w in enumerate(t["tokens"]) if w == "not")
    check_head_view(cdp, t, 0, 1, k, "layer 0, head 1")
    element_shot(cdp, ["#model-view-title", "#head-view"], os.path.join(shots, "views-1200px.png"))
    cdp.call("Input.dispatchMouseEvent", type="mouseMoved", x=1, y=1)
    mouse(cdp, '#model-view .mv-cell[data-layer="1"][data-head="0"]', click=True)
    check_head_view(cdp, t, 1, 0, 0, "layer 1, head 0 (clicked)")


def check_qk_view(cdp, base, sentence, shots):
    """The q.k view (bertviz's neuron view) of layer 0, head 1 and the word 'not' as the query:
    q, every k, q x k, the scores and the softmax equal POST /api/explain "qk": true's numbers,
    and the softmax column is the head's attention row; the head size named."""
    got = json.loads(http(base, "/api/explain", json.dumps({"sentence": sentence, "qk": True,
                                                             "models": ["transformer"]}))[2])
    t = got["explanations"][0]["explain"]
    qi = t["tokens"].index("not")
    mouse(cdp, '#model-view .mv-cell[data-layer="0"][data-head="1"]', click=True)
    select(cdp, "qk-query", str(qi))
    view = cdp.js("(() => { const b = document.getElementById('qk-view'); const v = (c) => "
                  "Array.from(b.querySelectorAll(c)).map(e => Number(e.dataset.v)); return "
                  "[b.dataset.layer, b.dataset.head, b.dataset.query, v('.qk-qv'), v('.qk-kv'), "
                  "v('.qk-prod'), v('.qk-score'), v('.qk-p'), document.getElementById('qk-dk')"
                  ".textContent]; })()")
    q, K = t["q"][0][1][qi], t["k"][0][1]
    HS = t["head_size"]
    prods = [a * b for k in K for a, b in zip(q, k)]
    check(view[:3] == ["0", "1", str(qi)] and view[3] == q and view[4] == [v for k in K for v in k]
          and view[5] == prods and view[6] == t["scores"][0][1][qi] and
          view[7] == t["attention"][0][1][qi],
          "page: q.k view, layer 0 head 1, query 'not': q (%d), k (%d x %d), q x k, scores and "
          "softmax = the API's \"qk\": true numbers" % (HS, len(K), HS))
    check("score_bias" not in t and cdp.js("document.querySelectorAll('#qk-view .qk-dot, "
                                           "#qk-view .qk-bias').length") == 0,
          "page: q.k view of a model without a score term: no q.k and bias columns")
    check(("head size = %d" % HS) in view[8] and "\u221ad_k = 4" in view[8],
          "page: q.k view names the head size and sqrt(d_k): %s" % view[8])
    element_shot(cdp, ["#qk-view-title", "#qk-view"], os.path.join(shots, "qk-view-1200px.png"))


QK_NOW = """(() => { const b = document.getElementById('qk-view'); const v = (c) =>
  Array.from(b.querySelectorAll(c)).map(e => Number(e.dataset.v)); return {layer:
  document.getElementById('layer').value, head: document.getElementById('head').value,
  view: [b.dataset.layer, b.dataset.head, b.dataset.query], t: Number(b.dataset.t),
  sentence: document.getElementById('sentence').value, scores: v('.qk-score'), p: v('.qk-p'),
  pt: v('.qk-pt'), h: v('.qk-h'), ht: v('.qk-ht'), hash: location.hash,
  slider: document.getElementById('qk-t').value,
  label: document.getElementById('qk-t-value').textContent}; })()"""


def open_url(cdp, url, explained=True):
    """Opens url as a fresh load (about:blank first: a change of fragment alone would not
    reload the page)."""
    cdp.call("Page.navigate", url="about:blank")
    cdp.wait_for("location.href === 'about:blank'", "about:blank")
    cdp.call("Page.navigate", url=url)
    cdp.wait_for("document.body && document.body.dataset.ready === 'true'" +
                 (" && document.body.dataset.explained !== undefined" if explained else ""),
                 "loads " + url[-60:])


def softmax(xs, t):
    z = [x / t for x in xs]
    m = max(z)
    e = [math.exp(x - m) for x in z]
    return [x / sum(e) for x in e]


def entropy(p):
    return -sum(x * math.log(x) for x in p if x > 0)


def check_fragment(cdp, base, shots):
    """A URL per view: a fragment opens its sentence explained with its layer, head, query word and
    temperature (values equal POST /api/explain "qk": true's), the slider at t = 1 gives the API's
    attention row exactly, changes go back into the fragment, and garbage gives the default page."""
    sentence = "the lecture was not boring"
    got = json.loads(http(base, "/api/explain", json.dumps({"sentence": sentence, "qk": True,
                                                             "models": ["transformer"]}))[2])
    t = got["explanations"][0]["explain"]
    qi = t["tokens"].index("not")
    frag = "#s=the+lecture+was+not+boring&model=transformer-seed1&layer=1&head=2&q=%d&t=4" \
        "&view=qk" % (qi + 1)
    open_url(cdp, base + "/" + frag)
    now = cdp.js(QK_NOW)
    S = len(t["tokens"])
    want4 = softmax(t["scores"][0][1][qi], 4)
    check(now["sentence"] == sentence and now["layer"] == "0" and now["head"] == "1" and
          now["view"] == ["0", "1", str(qi)] and now["scores"] == t["scores"][0][1][qi] and
          now["p"] == t["attention"][0][1][qi] and now["t"] == 4 and now["slider"] == "2",
          "page: %s opens that sentence, layer 1, head 2, query 'not', t = 4, scores and softmax "
          "= the API's" % frag)
    worst = max(abs(a - b) for a, b in zip(now["pt"], want4)) if len(now["pt"]) == S else 1
    check(worst < 1e-12 and abs(now["ht"][0] - entropy(want4)) < 1e-12 and
          abs(now["h"][0] - entropy(t["attention"][0][1][qi])) < 1e-12 and
          now["ht"][0] > now["h"][0] and "t = 4" in now["label"],
          "page: t = 4: softmax(score / 4) beside the model's (max |difference| %.1e from Python's), "
          "entropy %.3f > the model's %.3f nats" % (worst, now["ht"][0] if now["ht"] else -1,
                                                     now["h"][0] if now["h"] else -1))
    check(now["hash"] == frag, "page: the fragment it wrote back is the one opened: " + now["hash"])
    screenshot_to(cdp, os.path.join(shots, "url-qk-t4.png"), height=1400)
    element_shot(cdp, ["#qk-view-title", "#qk-view"], os.path.join(shots, "url-qk-t4-view.png"))
    # the slider back to t = 1: the API's attention row itself; the fragment follows
    cdp.js("(() => { const s = document.getElementById('qk-t'); s.value = '0'; "
           "s.dispatchEvent(new Event('input')); })()")
    now = cdp.js(QK_NOW)
    check(now["t"] == 1 and now["pt"] == t["attention"][0][1][qi] and now["pt"] == now["p"] and
          "t=" not in now["hash"] and "(the model)" in now["label"],
          "page: the slider at t = 1 shows the API's attention row exactly; the fragment drops t")
    cdp.js("(() => { const s = document.getElementById('qk-t'); s.value = '-2'; "
           "s.dispatchEvent(new Event('input')); })()")
    now = cdp.js(QK_NOW)
    raw = softmax(t["scores"][0][1][qi], 0.25)
    HS = t["head_size"]
    check("t=0.25" in now["hash"] and max(abs(a - b) for a, b in zip(now["pt"], raw)) < 1e-12 and
          now["ht"][0] < now["h"][0] and ("1/\u221adk" in cdp.js(
              "document.getElementById('qk-t-hint').textContent") or HS != 16) and
          "raw q" in now["label"],
          "page: t = 1/4 = 1/sqrt(d_k) (raw q.k): sharper, entropy %.3f < %.3f; in the fragment"
          % (now["ht"][0], now["h"][0]))
    element_shot(cdp, ["#qk-view-title", "#qk-view"], os.path.join(shots, "url-qk-t025-view.png"))
    # layer, head and query chosen on the page go into the fragment
    select(cdp, "layer", "1")
    select(cdp, "head", "mean")
    check("layer=2" in cdp.js("location.hash") and "head=mean" in cdp.js("location.hash"),
          "page: a layer and head chosen go into the fragment: " + cdp.js("location.hash"))
    # values out of range or malformed: ignored, the defaults used
    open_url(cdp, base + "/#s=the+food+was+good&layer=9&head=x&q=0&t=1e9&view=nowhere")
    now = cdp.js(QK_NOW)
    L = len(t["attention"])
    check(now["sentence"] == "the food was good" and now["layer"] == str(L - 1) and
          now["head"] == "mean" and now["view"][2] == "0" and now["t"] == 1,
          "page: out-of-range layer, head, q and t ignored: the defaults (last layer, mean, "
          "query 1, t = 1)")
    # a garbage fragment: the default page, nothing explained, no error
    open_url(cdp, base + "/#%ZZ&&==&layer=abc&head=-1&q=99999999&t=NaN&model=nope"
             "&view=%3Cscript%3E&s=", explained=False)
    time.sleep(0.5)
    state = cdp.js("[document.getElementById('sentence').value, document.getElementById('error')"
                   ".textContent, document.getElementById('attention-section').hidden, "
                   "document.getElementById('look-section').hidden, "
                   "document.body.dataset.explained === undefined]")
    check(state == ["", "", True, False, True],
          "page: a garbage fragment loads the default page (empty box, no error): %s" % state)
    screenshot_to(cdp, os.path.join(shots, "url-garbage.png"), height=1400)


def check_views_narrow(cdp, t, shots, query):
    """The 43-word sentence's views in a 420-pixel window: inside their card, words readable."""
    cdp.call("Emulation.setDeviceMetricsOverride", width=420, height=1800, deviceScaleFactor=1,
             mobile=False)
    try:
        time.sleep(0.5)
        fit = cdp.js("(() => { const s = document.getElementById('attention-section')"
                     ".getBoundingClientRect(); return [document.documentElement.scrollWidth, "
                     "document.documentElement.clientWidth].concat(Array.from(document."
                     "querySelectorAll('#model-view .mv-grid, #model-view .mv-cell, #head-view "
                     "svg')).map(e => { const b = e.getBoundingClientRect(); return b.left >= "
                     "s.left && b.right <= s.right; })); })()")
        size = cdp.js("(() => { const c = document.querySelector('#model-view .mv-cell')"
                      ".getBoundingClientRect(), f = Math.min(...Array.from(document."
                      "querySelectorAll('#head-view text')).map(e => Number(e.getAttribute("
                      "'font-size')))); return [c.width, f]; })()")
        check(fit[0] == fit[1] and len(fit) > 3 and all(fit[2:]) and size[0] >= 80 and
              size[1] >= 11, "page: 43 words, 420 pixels: both views inside their card, no "
              "horizontal overflow, maps %.0f px wide, head-view words at %d px" % tuple(size))
        # a tap keeps the word's lines (a phone has no hover)
        mouse(cdp, '#head-view .hv-query[data-q="%d"] rect' % query, click=True)
        cdp.call("Input.dispatchMouseEvent", type="mouseMoved", x=1, y=1)
        check(cdp.js("document.querySelector('#head-view svg').dataset.focus") == str(query) and
              len(cdp.js(HEAD_LINES)) == len(t["tokens"]),
              "page: a tap on '%s' keeps its lines once the pointer leaves" % t["tokens"][query])
        element_shot(cdp, ["#model-view-title", "#head-view"],
                     os.path.join(shots, "views-420px-43-words.png"), width=420)
        mouse(cdp, '#head-view .hv-query[data-q="%d"] rect' % query, click=True)
        cdp.call("Input.dispatchMouseEvent", type="mouseMoved", x=1, y=1)
        check(len(cdp.js(HEAD_LINES)) == len(t["tokens"]) ** 2,
              "page: a second tap shows every line again")
    finally:
        cdp.call("Emulation.clearDeviceMetricsOverride")


def check_page(base, api_expl, sentence, screenshot):
    shots = tempfile.mkdtemp(prefix="attn-e2e-views-")
    print("screenshots of the model and head views: " + shots)
    with Browser() as cdp:
        open_page(cdp, base)
        check_first_page(cdp, base)
        # type the sentence into the box as a user would
        before = cdp.js("document.body.dataset.explained")
        cdp.js("document.getElementById('sentence').value = ''")
        cdp.js("document.getElementById('sentence').focus()")
        cdp.call("Input.insertText", text=sentence)
        cdp.js("document.getElementById('sentence').dispatchEvent(new KeyboardEvent('keydown', "
               "{key: 'Enter'}))")
        cdp.wait_for("document.body.dataset.explained !== %s && "
                     "document.querySelectorAll('#attn-words .tok').length > 0" %
                     json.dumps(before), "explains")
        cards = cdp.js("Array.from(document.querySelectorAll('.card')).map(c => "
                       "[c.dataset.model, c.querySelector('.label').textContent])")
        want = [[x["model"], "positive" if x["explain"]["probability"] > 0.5 else "negative"]
                for x in api_expl]
        check(cards == want, "page: one card per model with the API's label: %s" % cards)
        t = next(x["explain"] for x in api_expl if x["model"] == "transformer")
        L = len(t["attention"])
        select(cdp, "layer", str(L - 1))  # the first page's example chose layer 1, head 1
        select(cdp, "head", "mean")
        compare_shading(cdp, t, L - 1, "mean", "layer %d, mean of the heads" % (L - 1))
        screenshot_to(cdp, screenshot)
        check(cdp.js("Array.from(document.getElementById('layer').options).map(o => o.text)")
              == ["1 (first)", "2 (last)"], "page: layers numbered 1 and 2 as in the write-up")
        check_views(cdp, base, t, shots)
        check_qk_view(cdp, base, sentence, shots)
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
        notes = cdp.js("Array.from(document.querySelectorAll('#saliency .note-ig')).map("
                       "n => n.textContent)")
        check(len(notes) == len(api_expl) and all("logit \u2212 baseline" in n and "=" not in n
                                                  for n in notes),
              "page: their sum and logit - baseline compared in words, no '=': %s" % notes[:1])
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
        check_occlusion(cdp, base, sentence)
        check_counterfactual(cdp, base, sentence)
        # results of an earlier sentence are marked once the box holds an unknown word
        cdp.js("(() => { const s = document.getElementById('sentence'); s.value = "
               "'the lecture was helpfull'; s.dispatchEvent(new Event('input')); })()")
        cdp.wait_for("document.body.dataset.stale === 'true' && "
                     "!document.getElementById('stale').hidden && document.getElementById("
                     "'results').classList.contains('stale')",
                     "an unknown word marks the earlier results as stale")
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
        check_long_sentence(cdp, base, screenshot.replace(".png", "-43-words.png"), shots)
        check_positions(cdp, base, shots)
        check_unknown_by_category(cdp, base, shots)
        check_compare(cdp, base, shots)
        check_figures_page(cdp, base)
        check_fragment(cdp, base, shots)


# ---- the page that teaches ----------------------------------------------------------------------

def predict_api(base, sentences, models):
    st, _, b = http(base, "/api/predict?models=" + ",".join(models), "\n".join(sentences))
    check(st == 200, "POST /api/predict (%d sentences)" % len(sentences))
    return {p["model"]: p for p in json.loads(b)["predictions"]}


def check_positions(cdp, base, shots):
    """Section 4: the shuffle test's table against POST /api/predict (with and without
    positions=zero), the zeroed Transformer's one probability for every order, the position
    table's canvas pixels against GET /api/positions, no horizontal overflow; a screenshot."""
    sentence = "the food was not very good"
    set_sentence(cdp, sentence)
    cdp.wait_for("document.getElementById('shuffle').dataset.ready === 'true' && "
                 "document.getElementById('positions').dataset.ready === 'true' && "
                 "document.querySelector('#shuffle td') && document.querySelector('#shuffle td')"
                 ".parentNode.closest('table').rows.length > 1 && "
                 "document.querySelector('#shuffle tbody tr .words-cell').textContent === %s"
                 % json.dumps(sentence), "the shuffle test and positions of the typed sentence")
    rows = cdp.js("Array.from(document.querySelectorAll('#shuffle tbody tr')).map(r => "
                  "[r.querySelector('.words-cell').textContent, Array.from(r.querySelectorAll("
                  "'td.num')).map(c => c.getAttribute('title'))])")
    heads = cdp.js("Array.from(document.querySelectorAll('#shuffle thead th')).slice(2).map("
                   "h => h.textContent)")
    lines = [r[0] for r in rows]
    check(len(rows) == 5 and lines[0] == sentence and lines[1] == " ".join(
        reversed(sentence.split())) and all(sorted(x.split()) == sorted(sentence.split())
                                            for x in lines),
          "page: the shuffle test has the typed order, reversed and 3 shuffles of its words")
    plain = predict_api(base, lines, ["rnn", "lstm", "transformer"])
    st, _, b = http(base, "/api/predict?models=transformer&positions=zero", "\n".join(lines))
    zero = json.loads(b)["predictions"][0]["probabilities"] if st == 200 else []
    want = [plain[m]["probabilities"] for m in ("rnn", "lstm", "transformer")] + [zero]
    got = [[float(r[1][c].split("= ")[1]) for r in rows] for c in range(len(heads))]
    check(heads == ["rnn", "lstm", "transformer", "transformer, positions zeroed"] and all(
        len(g) == len(w) and all(abs(x - y) < 1e-6 for x, y in zip(g, w))
        for g, w in zip(got, want)),
          "page: every model's p(positive) of every order as /api/predict gives it: %s" % heads)
    check(max(zero) - min(zero) < 1e-6 and max(want[1]) - min(want[1]) > 0.05
          and max(want[2]) - min(want[2]) > 0.05,
          "page: the Transformer without positions gives every order one p (%.6f); the LSTM "
          "and the trained Transformer do not" % zero[0])
    note = cdp.js("document.getElementById('shuffle-note').textContent")
    check("positions zeroed: the same p for every order" in note, "page: the note says so")
    st, _, b = http(base, "/api/positions?model=transformer")
    P = json.loads(b)["table"]
    mx = max(abs(x) for row in P for x in row)
    px = cdp.js("(() => { const c = document.querySelector('#positions canvas'); const d = "
                "c.getContext('2d').getImageData(0, 0, c.width, c.height).data; return [c.width,"
                " c.height, Array.from(d)]; })()")
    W, H, data = px
    worst = 0
    for r in range(H):
        for k in range(W):
            v = P[k][r] / mx
            rgb = (40, 160, 70) if v >= 0 else (215, 50, 50)
            for j in range(3):
                worst = max(worst, abs(data[4 * (r * W + k) + j] - (255 + abs(v) * (rgb[j] - 255))))
    check([W, H] == [len(P), len(P[0])] and worst <= 1.01,
          "page: the position table's %d x %d pixels are /api/positions' values (worst %.2f of "
          "255)" % (W, H, worst))
    sim = cdp.js("(() => { const c = document.querySelectorAll('#positions canvas')[1]; "
                 "const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; "
                 "return [c.width, d[0], d[1], d[2]]; })()")
    check(sim[0] == len(P) and sim[1:] == [40, 160, 70],
          "page: the similarity map is %d x %d, its diagonal 1 (full green)" % (sim[0], sim[0]))
    check(cdp.js("document.documentElement.scrollWidth <= window.innerWidth"),
          "page: section 4 without horizontal overflow")
    check(cdp.js("document.getElementById('positions-title').textContent").endswith("(learned)"),
          "page: the position table named as the model's scheme (learned)")
    element_shot(cdp, ["#positions-section", "#positions"], os.path.join(shots, "positions.png"))
    check_shuffle_narrow(cdp, lines, shots)


def check_shuffle_narrow(cdp, lines, shots):
    """The shuffle table in a 420-pixel window: inside its card with no scrolling, each order's
    words on a line of their own at least 200 px wide, every probability cell at least 60 px wide
    and its text inside it."""
    cdp.call("Emulation.setDeviceMetricsOverride", width=420, height=1800, deviceScaleFactor=1,
             mobile=False)
    try:
        time.sleep(0.5)
        got = cdp.js("""(() => {
          const card = document.getElementById('positions-section').getBoundingClientRect();
          const t = document.querySelector('#shuffle table'), b = t.getBoundingClientRect();
          const box = document.getElementById('shuffle');
          const words = Array.from(t.querySelectorAll('.words-cell')).map(w => [w.textContent,
            w.getBoundingClientRect().width, w.scrollWidth <= w.clientWidth]);
          const nums = Array.from(t.querySelectorAll('td.num')).map(c => [c.getBoundingClientRect().width,
            c.scrollWidth <= c.clientWidth]);
          return {inside: b.left >= card.left && b.right <= card.right, scroll: box.scrollWidth <= box.clientWidth,
            page: document.documentElement.scrollWidth <= window.innerWidth, words, nums}; })()""")
        check(got["inside"] and got["scroll"] and got["page"]
              and [w[0] for w in got["words"]] == lines
              and all(w[1] >= 200 and w[2] for w in got["words"])
              and got["nums"] and all(n[0] >= 60 and n[1] for n in got["nums"]),
              "page: 420 pixels: the shuffle table inside its card, no scrolling, words %d px wide "
              "and more, probabilities %d px and more"
              % (min((w[1] for w in got["words"]), default=0),
                 min((n[0] for n in got["nums"]), default=0)))
        element_shot(cdp, ["#shuffle-title", "#shuffle"], os.path.join(shots, "shuffle-420px.png"),
                     width=420)
    finally:
        cdp.call("Emulation.clearDeviceMetricsOverride")


def check_unknown_by_category(cdp, base, shots):
    """Unknown words: besides the nearest word by spelling, words of the class the task's
    grammar puts at the word's place, as the server's unknown_word answer gives them (src/data/
    suggest.c, the CLI's message too) -- an unknown noun after "the" gets the subject nouns, an
    unknown adjective after "was" adjectives of both polarities (their categories those of GET
    /api/vocab); a click takes one."""
    st, _, b = http(base, "/api/vocab")
    cat = {w["word"]: w["category"] for w in json.loads(b)["words"]}
    sentence = "the pizza was stunning"
    st, _, b = http(base, "/api/explain", json.dumps({"sentence": sentence}))
    api = {u["word"]: [(w, g["category"]) for g in u["place"]["groups"] for w in g["words"][:4]]
           for u in json.loads(b)["error"]["unknown_words"]} if st == 400 else {}
    cdp.js("(() => { const s = document.getElementById('sentence'); s.value = "
           "%s; s.dispatchEvent(new Event('input')); })()" % json.dumps(sentence))
    cdp.wait_for("document.querySelectorAll('#unknown .unknown-word').length === 2",
                 "two unknown words listed")
    got = cdp.js("Object.fromEntries(Array.from(document.querySelectorAll('#unknown "
                 ".unknown-word')).map(d => [d.dataset.word, Array.from(d.querySelectorAll("
                 "'.cat-suggest')).map(c => [c.textContent, c.dataset.category])]))")
    noun = [tuple(x) for x in got.get("pizza", [])]
    adj = [tuple(x) for x in got.get("stunning", [])]
    check(noun and noun == api.get("pizza") and all(cat.get(w) == c == "subject" for w, c in noun),
          "page: unknown 'pizza' after 'the': the server's subject nouns %s" % [w for w, _ in noun])
    check({c for _, c in adj} == {"positive", "negative"} and adj == api.get("stunning")
          and all(cat.get(w) == c for w, c in adj),
          "page: unknown 'stunning' after 'was': the server's adjectives of both polarities %s"
          % [w for w, _ in adj])
    text = cdp.js("document.getElementById('unknown').textContent")
    check("its place (after 'the', before 'was') takes a subject noun" in text
          and "by spelling the nearest is is" in text,
          "page: the place's rule and the spelling's nearest are named")
    element_shot(cdp, ["#input-section"], os.path.join(shots, "unknown-by-category.png"))
    first = adj[0][0] if adj else ""
    cdp.js("document.querySelector('#unknown .unknown-word[data-word=\"stunning\"] "
           ".cat-suggest').click()")
    check(cdp.js("document.getElementById('sentence').value") == "the pizza was " + first,
          "page: a click on %r takes it into the sentence" % first)


def check_compare(cdp, base, shots):
    """Two sentences side by side: each column's verdicts and [CLS] shading (layer 2, head 1)
    are POST /api/explain's for its sentence; the fragment keeps the second as c=."""
    a, b = "the lecture was not very helpful", "the lecture was very helpful"
    set_sentence(cdp, a)
    select(cdp, "layer", "1")
    select(cdp, "head", "0")
    before = cdp.js("document.getElementById('compare').dataset.ready || ''")
    cdp.js("(() => { document.getElementById('compare-sentence').value = %s; "
           "document.getElementById('compare-go').click(); })()" % json.dumps(b))
    cdp.wait_for("(document.getElementById('compare').dataset.ready || '') !== %s"
                 % json.dumps(before), "compares two sentences")
    cols = cdp.js("Array.from(document.querySelectorAll('#compare .compare-col')).map(c => ["
                  "c.querySelector('.compare-sentence').textContent, Array.from(c.querySelectorAll("
                  "'.compare-verdict')).map(v => v.textContent), Array.from(c.querySelectorAll("
                  "'.tok')).map(t => Number(t.dataset.weight))])")
    ok = len(cols) == 2
    for col, s in zip(cols, (a, b)):
        st, _, body = http(base, "/api/explain", json.dumps({"sentence": s}))
        ex = json.loads(body)["explanations"]
        t = next(x["explain"] for x in ex if x["model"] == "transformer")
        want_v = ["%s: %s, p(positive) %.1f %%" % (x["model"], "positive" if x["explain"]["probability"] > 0.5
                                      else "negative", 100 * x["explain"]["probability"])
                  for x in ex]
        cls = t["attention"][1][0][0]
        ok = ok and st == 200 and col[0] == s and col[1] == want_v and len(col[2]) == len(cls) \
            and all(abs(g - w) <= 5e-7 for g, w in zip(col[2], cls))
    check(ok, "page: two sentences side by side, verdicts and layer 2 head 1's [CLS] row as the "
          "API's: %s" % [c[1][-1:] for c in cols])
    check("c=the+lecture+was+very+helpful" in cdp.js("location.hash"),
          "page: the fragment holds the second sentence (c=)")
    check(cdp.js("document.documentElement.scrollWidth <= window.innerWidth"),
          "page: the comparison without horizontal overflow")
    element_shot(cdp, ["#compare-section"], os.path.join(shots, "compare.png"))


def check_first_page(cdp, base):
    """The write-up's §7 observations: four, each with attn's measured number and a one-click
    example whose own number is the API's."""
    obs = cdp.js("Array.from(document.querySelectorAll('#observations .obs')).map(o => ["
                 "o.dataset.obs, o.querySelector('.measured').textContent, "
                 "o.querySelector('button').textContent])")
    check(not cdp.js("document.getElementById('look-section').hidden") and len(obs) == 4 and
          all(m.startswith("attn") and re.search(r"\d", m) and "?" not in m for _, m, _ in obs),
          "page: the first page shows §7's four observations with attn's measured numbers: %s"
          % [m[:60] for _, m, _ in obs])
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs",
                           "figures", "s7-observations.md")) as f:
        md = f.read()
    row = next(line for line in md.splitlines() if line.startswith("| 1 | plain | 0 |"))
    some_head = row.split("|")[6].strip()
    check(some_head in obs[0][1], "page: observation 1 quotes s7-observations.md (%s)" % some_head)
    cdp.js("document.querySelector('.obs[data-obs=\"sharp\"] button').click()")
    cdp.wait_for("document.querySelector('.obs[data-obs=\"sharp\"] .here').textContent.length > 0",
                 "observation 1's example explained")
    here = cdp.js("document.querySelector('.obs[data-obs=\"sharp\"] .here').textContent")
    sentence = cdp.js("document.getElementById('sentence').value")
    st, _, b = http(base, "/api/explain", json.dumps({"sentence": sentence,
                                                       "models": ["transformer"]}))
    t = json.loads(b)["explanations"][0]["explain"]
    k = next(i for i, w in enumerate(t["tokens"]) if w in ("not", "never"))
    heads = [h[0][k] for h in t["attention"][0]]
    best = max(range(len(heads)), key=lambda h: heads[h])
    want = "head %d of layer 1 gives \u2018%s\u2019 %.0f %%" % (best + 1, t["tokens"][k],
                                                                100 * heads[best])
    check(st == 200 and want in here and
          cdp.js("document.getElementById('layer').value") == "0" and
          cdp.js("document.getElementById('head').value") == str(best),
          "page: its example shows the API's number and that head: %s" % here)


def check_occlusion(cdp, base, sentence):
    """Occlusion: each word's value is the logit minus the logit without the word (API)."""
    select(cdp, "sal-method", "occlusion")
    sentence = cdp.js("document.getElementById('sentence').value")
    cdp.wait_for("document.querySelectorAll('#saliency .sal-row[data-method=\"occlusion\"]')"
                 ".length === document.querySelectorAll('#cards .card').length",
                 "occlusion shown")
    shown = cdp.js("Object.fromEntries(Array.from(document.querySelectorAll('#saliency "
                   ".sal-row')).map(r => [r.dataset.model, Array.from(r.querySelectorAll("
                   "'.v')).map(v => Number(v.textContent))]))")
    words = sentence.split()
    full = predict_api(base, [sentence], list(shown))
    cut = predict_api(base, [" ".join(words[:i] + words[i + 1:]) for i in range(len(words))],
                      list(shown))
    worst = max(abs(v - (full[m]["logits"][0] - cut[m]["logits"][i]))
                for m, vals in shown.items() for i, v in enumerate(vals))
    check(all(len(v) == len(words) for v in shown.values()) and worst <= 0.0051,
          "page: occlusion = logit - logit without the word, as the API gives them (max "
          "|difference| %.4f, %d models)" % (worst, len(shown)))
    check(cdp.js("document.getElementById('sal-hint').textContent.includes('removed')"),
          "page: occlusion explained in words")


def check_counterfactual(cdp, base, sentence):
    """Deleting the negation: every model's row shows the API's probability; taking it flips
    the answers the API says flip, and the cards say so."""
    cdp.js("document.getElementById('sal-method').value = 'occlusion'")
    set_sentence(cdp, sentence)
    cdp.js("Array.from(document.querySelectorAll('#swap-words .tok')).find(b => b.textContent "
           "=== 'not').click()")
    cdp.wait_for("document.getElementById('swap-choices').dataset.ready === String("
                 "Array.from(document.querySelectorAll('#swap-words .tok')).findIndex("
                 "b => b.textContent === 'not'))", "counterfactuals of 'not' computed")
    rows = cdp.js("Array.from(document.querySelectorAll('#swap-choices tbody tr')).map(r => "
                  "Array.from(r.children).map(c => c.textContent))")
    models = cdp.js("Array.from(document.querySelectorAll('#cards .card')).map(c => "
                    "c.dataset.model)")
    row = next((r for r in rows if r[0] == "delete \u2018not\u2019"), None)
    words = sentence.split()
    without = " ".join(w for w in words if w != "not")
    api_now = predict_api(base, [sentence], models)
    api_cf = predict_api(base, [without], models)
    flips = [m for m in models if (api_now[m]["probabilities"][0] > 0.5) !=
             (api_cf[m]["probabilities"][0] > 0.5)]
    ok = row is not None and len(row) == len(models) + 1
    for i, m in enumerate(models if ok else []):
        p = api_cf[m]["probabilities"][0]
        ok = ok and row[i + 1].startswith("%.3f" % p) and (("\u21c4" in row[i + 1]) == (m in flips))
    check(ok and len(flips) >= 2, "page: 'delete not' row = the API's probabilities, the answer "
          "changes marked for %s: %s" % (flips, row))
    # an adjective offers every adjective of both polarities and the insertion of a negation
    cdp.js("Array.from(document.querySelectorAll('#swap-words .tok')).find(b => b.textContent "
           "=== 'great').click()")
    labels = cdp.js("Array.from(document.querySelectorAll('#swap-choices tbody tr td:first-child'))"
                    ".map(c => c.textContent)")
    vocab = json.loads(http(base, "/api/vocab")[2])["words"]
    adjectives = {w["word"] for w in vocab if w["category"] in ("positive", "negative")}
    check(adjectives - {"great"} <= set(labels) and "insert \u2018not\u2019 before it" in labels
          and "delete \u2018great\u2019" in labels,
          "page: 'great' offers all %d other adjectives of both polarities, inserting a negation "
          "and deleting it" % (len(adjectives) - 1))
    # take the polarity-changing counterfactual: the cards move as the API says
    cdp.js("Array.from(document.querySelectorAll('#swap-words .tok')).find(b => b.textContent "
           "=== 'not').click()")
    cdp.wait_for("Array.from(document.querySelectorAll('#swap-choices .chip')).some(c => "
                 "c.textContent === 'delete \u2018not\u2019')", "delete row back")
    before = cdp.js("document.body.dataset.explained")
    cdp.js("Array.from(document.querySelectorAll('#swap-choices .chip')).find(c => "
           "c.textContent === 'delete \u2018not\u2019').click()")
    cdp.wait_for("document.getElementById('sentence').value === %s && "
                 "document.body.dataset.explained !== %s && "
                 "document.querySelectorAll('#cards .moved').length === %d" %
                 (json.dumps(without), json.dumps(before), len(models)),
                 "the counterfactual taken")
    cards = cdp.js("Array.from(document.querySelectorAll('#cards .card')).map(c => [c.dataset."
                   "model, c.querySelector('.label').textContent, c.querySelector('.moved')."
                   "classList.contains('flipped')])")
    check(cards == [[m, "positive" if api_cf[m]["probabilities"][0] > 0.5 else "negative",
                     m in flips] for m in models],
          "page: after deleting 'not' the cards show the API's answers, the flipped ones marked: "
          "%s" % cards)


def check_long_sentence(cdp, base, screenshot, shots):
    """A 43-word sentence: nothing wider than the page; the LSTM's jump stays visible."""
    words = ("honestly in my opinion during the winter semester last year the lecture was not "
             "very helpful according to my friends although the coffee was great at least for me "
             "as far as i know if you ask me on mondays for most part").split()
    check(len(words) == 43, "43 words")
    select(cdp, "sal-method", "occlusion")
    set_sentence(cdp, " ".join(words))
    sizes = cdp.js("[document.documentElement.scrollWidth, document.documentElement.clientWidth]"
                   ".concat(Array.from(document.querySelectorAll('section')).filter(s => "
                   "!s.hidden).map(s => s.scrollWidth - s.clientWidth))")
    check(sizes[0] == sizes[1] and all(d <= 0 for d in sizes[2:]),
          "page: 43 words, no horizontal overflow (scrollWidth %d, clientWidth %d; sections over "
          "by %s)" % (sizes[0], sizes[1], max(sizes[2:])))
    fit = cdp.js("Array.from(document.querySelectorAll('#curves svg, #heatmap table')).map(e => "
                 "e.getBoundingClientRect().right <= e.closest('section').getBoundingClientRect()"
                 ".right)")
    check(len(fit) >= 3 and all(fit), "page: each curve and the heat map inside its card")
    check(cdp.js("document.querySelectorAll('#heatmap tbody tr').length") == 44 and
          cdp.js("document.querySelectorAll('#curves svg')[1].querySelectorAll('circle').length")
          == 43, "page: 44 heat-map rows, 43 points per curve")
    screenshot_to(cdp, screenshot, 3600)
    st, _, b = http(base, "/api/explain", json.dumps({"sentence": " ".join(words),
                                                       "models": ["transformer"]}))
    t = json.loads(b)["explanations"][0]["explain"]
    models = json.loads(http(base, "/api/models")[2])["models"]
    tm = next(m for m in models if m["name"] == "transformer")
    check_model_view(cdp, t, tm["n_layers"], tm["n_heads"], "43 words")
    select(cdp, "layer", "1")
    select(cdp, "head", "0")
    neg = t["tokens"].index("not")
    check_head_view(cdp, t, 1, 0, neg, "43 words, layer 1, head 0")
    check_views_narrow(cdp, t, shots, neg)
    # and in a phone-wide window (the curves are redrawn at the new width)
    cdp.call("Emulation.setDeviceMetricsOverride", width=420, height=1800, deviceScaleFactor=1,
             mobile=False)
    time.sleep(0.5)
    narrow = cdp.js("[document.documentElement.scrollWidth, document.documentElement.clientWidth,"
                    " document.querySelector('#curves svg').getBoundingClientRect().right <= "
                    "document.getElementById('prefix-section').getBoundingClientRect().right]")
    cdp.call("Emulation.clearDeviceMetricsOverride")
    check(narrow[0] == narrow[1] and narrow[2],
          "page: 43 words in a 420-pixel window, no horizontal overflow (%d, %d)" % tuple(narrow[:2]))
    # the saturated Transformer is said so, with its gradient x input beside its occlusion
    sat = cdp.js("Object.fromEntries(Array.from(document.querySelectorAll('#saliency .sal-row'))"
                 ".map(r => [r.dataset.model, (r.querySelector('.note-saturated') || {}).textContent"
                 " || '']))")
    st, _, b = http(base, "/api/explain", json.dumps({"sentence": " ".join(words)}))
    probs = {x["model"]: x["explain"]["probability"] for x in json.loads(b)["explanations"]}
    check(all(bool(sat[m]) == (p > 0.99 or p < 0.01) for m, p in probs.items()) and
          "largest |occlusion|" in sat["transformer"],
          "page: the saturated models (p beyond 0.99) are said so: %s" % sat["transformer"][:90])
    # integrated gradients far from logit - baseline (the trained LSTM on 43 words): in words
    select(cdp, "sal-method", "64")
    cdp.wait_for("document.querySelectorAll('#saliency .sal-row[data-method=\"ig\"]').length"
                 " === %d" % len(probs), "integrated gradients of 43 words")
    note = cdp.js("document.querySelector('#saliency .sal-row[data-model=\"lstm\"] .note-ig')"
                  ".textContent")
    st, _, b = http(base, "/api/explain", json.dumps({"sentence": " ".join(words),
                                                       "models": ["lstm"], "ig_steps": 64}))
    e = json.loads(b)["explanations"][0]["explain"]
    total, want = sum(e["saliency"]["integrated_gradients"]), e["logit"] - e["ig_baseline_logit"]
    check(abs(total - want) > 0.05 * abs(want) and "differ by" in note and "=" not in note and
          ("%.3f" % total) in note and ("%.3f" % want) in note,
          "page: the LSTM's integrated gradients (sum %.3f) against logit - baseline (%.3f) said "
          "in words: %s" % (total, want, note))
    select(cdp, "sal-method", "occlusion")


def check_figures_page(cdp, base):
    """/figures.html follows docs/figures/index.md: its sections in order, captions, the tables,
    then the claims' charts."""
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs",
                           "figures", "index.md")) as f:
        heads = [line[3:].strip() for line in f if line.startswith("## ")]
    cdp.call("Page.navigate", url=base + "/figures.html")
    cdp.wait_for("document.body && document.body.dataset.ready === 'true'", "figures page renders")
    got = cdp.js("Array.from(document.querySelectorAll('#figures h2')).map(h => h.textContent)")
    check(got[:len(heads)] == heads, "figures page: index.md's sections in its order: %s" % got)
    imgs = cdp.js("Array.from(document.querySelectorAll('#figures img')).map(i => [i.src, "
                  "i.naturalWidth > 0])")
    check(len(imgs) >= 10 and all(ok for _, ok in imgs),
          "figures page: %d charts, every one loaded" % len(imgs))
    check(cdp.js("document.querySelectorAll('#figures table').length") >= 3 and
          cdp.js("Array.from(document.querySelectorAll('#figures img')).some(i => "
                 "i.src.includes('/claims/'))"),
          "figures page: the tables and the claims' charts")
    check(cdp.js("document.documentElement.scrollWidth === document.documentElement.clientWidth"),
          "figures page: no horizontal overflow")


def check_own_vocab_page(attn, weights, screenshot):
    """A model with its own vocabulary beside the task's: the page offers its words, explains
    with it, and offers test sets only for the task's model."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import own_vocab_model
    d = tempfile.mkdtemp(prefix="attn-e2e-vocab-")
    p = None
    try:
        own_vocab_model.make(d)
        shutil.copy(os.path.join(weights, "transformer-seed1.json"), d)
        p, base = start_server(attn, d)
        with Browser() as cdp:
            open_page(cdp, base)
            check(not cdp.js("document.getElementById('vocab-choice').hidden") and
                  cdp.js("document.getElementById('vocab-group').options.length") == 2,
                  "own vocabulary: the page offers a choice of two vocabularies")
            check(cdp.js("Array.from(document.getElementById('set-model').options).map(o => "
                         "o.value)") == ["transformer"],
                  "own vocabulary: test sets offered for the task's model only")
            group = cdp.js("Array.from(document.getElementById('vocab-group').options).find(o => "
                           "o.text.startsWith('lstm')).value")
            select(cdp, "vocab-group", group)
            cdp.wait_for("document.getElementById('sentence-label').textContent.includes('own')",
                         "own vocabulary chosen")
            chips = cdp.js("Array.from(document.querySelectorAll('#examples .chip')).map(c => "
                           "c.textContent)")
            check("film" in chips and "lecture" not in chips and
                  cdp.js("document.getElementById('look-section').hidden"),
                  "own vocabulary: its words offered (%d), not the task's; §7 panel hidden" %
                  len(chips))
            sentence = "the film was not very good"
            set_sentence(cdp, sentence)
            cards = cdp.js("Array.from(document.querySelectorAll('.card')).map(c => "
                           "[c.dataset.model, c.querySelector('div:nth-child(3)').textContent])")
            pr = subprocess.run([attn, "predict", "--weights", os.path.join(d, "lstm-seed1.json"),
                                 "--format", "tsv", sentence], capture_output=True, text=True)
            prob = float(pr.stdout.split("\t")[1])
            check(cards == [["lstm", "p(positive) = %.4f" % prob]],
                  "own vocabulary: the page explains with the file's words, as attn predict: %s"
                  % cards)
            cdp.js("(() => { const s = document.getElementById('sentence'); s.value = "
                   "'the lecture was good'; s.dispatchEvent(new Event('input')); })()")
            cdp.wait_for("document.getElementById('unknown').textContent.includes('lecture') && "
                         "document.body.dataset.stale === 'true'",
                         "own vocabulary: the task's word 'lecture' is unknown here")
            screenshot_to(cdp, screenshot, 1400)
    finally:
        if p:
            check(stop_server(p) == 0, "SIGTERM: the own-vocabulary server exits 0")
        shutil.rmtree(d, ignore_errors=True)


DEC_SHADES = """Array.from(document.querySelectorAll('#dec-src .tok')).map(
  s => [s.firstChild.textContent, getComputedStyle(s).backgroundColor])"""


def compare_decoder_shading(cdp, expl, step, what):
    row = expl["alignment"][step]
    top = max(row)
    shades = cdp.js(DEC_SHADES)
    ok = len(shades) == len(row)
    worst = 0.0
    for k, (word, css) in enumerate(shades if ok else []):
        rgb, alpha = parse_alpha(css)
        ok = ok and word == expl["tokens"][k] and rgb == (255, 140, 0)
        worst = max(worst, abs(alpha - row[k] / top))
    check(ok and worst <= 0.01, "decoder page: %s: each source word's shading = the API's "
          "cross-attention / max (%d words, max |difference| %.4f)" % (what, len(row), worst))


def decoder_weights(attn, weights, tmp):
    """A directory with the committed classifiers, a seq2seq-transformer trained for 2 epochs
    and a compose model trained for 2 epochs (`attn reproduce --task rewrite|compose`): the
    decoder page's models."""
    for name in ("rnn-seed1.json", "lstm-seed1.json", "transformer-seed1.json"):
        os.symlink(os.path.join(os.path.abspath(weights), name), os.path.join(tmp, name))
    for task in ("rewrite", "compose"):
        subprocess.run([attn, "reproduce", "--task", task, "--seeds", "1", "--epochs", "2",
                        "--out", tmp], check=True, capture_output=True)
    return os.path.exists(os.path.join(tmp, "compose-seq2seq-transformer-seed1.json"))


def check_decoder_page(attn, weights, screenshot):
    """The decoder view: the verdict word by word as the API writes it, the cross-attention's
    model view (every layer x head) against the API's cross_attention, the source words shaded
    by the API's cross-attention for the selected output word (the mean, then layer 2 head 1,
    then another output word), the heat map's size, a top-5 alternative continuing the
    generation (the API with that prefix), the compose panel's samples as the API's."""
    tmp = tempfile.mkdtemp(prefix="attn-e2e-decoder-")
    try:
        have_compose = decoder_weights(attn, weights, tmp)
        p, base = start_server(attn, tmp, "--threads", "2")
        try:
            with Browser() as cdp:
                check_decoder_view(cdp, base, have_compose, screenshot)
                check_decoder_unknown(cdp, base, screenshot.replace(".png", "-unknown.png"))
        finally:
            check(stop_server(p) == 0, "decoder page: the server exits 0")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def check_decoder_unknown(cdp, base, screenshot):
    """Unknown words on the decoder page: the server's unknown_word answer to POST /api/generate
    as the explorer shows it (common.js) -- each word's nearest by spelling and the words of its
    place's class as chips, the API's; a click on a chip takes it into the text and writes
    again: one unknown word left, then none and the verdict written."""
    text = "the pizza was stunning"
    st, _, b = http(base, "/api/generate", json.dumps({"model": "seq2seq-transformer",
                                                       "text": text}))
    err = json.loads(b)["error"] if st == 400 else {}
    api = {u["word"]: [u["nearest"]] + [w for g in u["place"]["groups"] for w in g["words"][:4]]
           for u in err.get("unknown_words", [])}
    cdp.call("Page.navigate", url=base + "/decoder.html")
    cdp.wait_for("document.body && document.body.dataset.ready === 'true'", "decoder page loads")
    before = cdp.js("document.body.dataset.generated || ''")
    cdp.js("(() => { document.getElementById('dec-text').value = %s; "
           "document.getElementById('dec-go').click(); })()" % json.dumps(text))
    cdp.wait_for("document.querySelectorAll('#dec-unknown .unknown-word').length === 2",
                 "decoder page: two unknown words listed")
    got = cdp.js("Object.fromEntries(Array.from(document.querySelectorAll('#dec-unknown "
                 ".unknown-word')).map(d => [d.dataset.word, Array.from(d.querySelectorAll("
                 "'.chip')).map(c => c.textContent)]))")
    check(err.get("code") == "unknown_word" and set(api) == {"pizza", "stunning"} and got == api
          and cdp.js("document.getElementById('dec-error').textContent") == "",
          "decoder page: unknown 'pizza' and 'stunning' as the API's chips (nearest, then its "
          "place's class): %s" % got)
    was = cdp.js("document.getElementById('dec-output').hidden === false")
    stale = cdp.js("[document.getElementById('dec-output').classList.contains('stale'), "
                   "!document.getElementById('dec-stale').hidden, "
                   "document.getElementById('dec-stale').textContent]")
    check(not was or (stale[0] and stale[1] and "still that of" in stale[2]),
          "decoder page: the earlier output dimmed with a note whose it is: %s" % stale)
    element_shot(cdp, ["#dec-input", "#dec-words"], screenshot)
    adj = api.get("stunning", ["", ""])[1]
    cdp.js("document.querySelector('#dec-unknown .unknown-word[data-word=\"stunning\"] "
           ".cat-suggest').click()")
    cdp.wait_for("document.getElementById('dec-text').value === %s && document.querySelectorAll("
                 "'#dec-unknown .unknown-word').length === 1" % json.dumps("the pizza was " + adj),
                 "decoder page: a chip takes %r; one unknown word left" % adj)
    noun = api.get("pizza", ["", ""])[1]
    cdp.js("document.querySelector('#dec-unknown .unknown-word[data-word=\"pizza\"] "
           ".cat-suggest').click()")
    generated(cdp, before, "decoder page: the text of known words written")
    fixed = "the %s was %s" % (noun, adj)
    want = json.loads(http(base, "/api/generate", json.dumps({"model": "seq2seq-transformer",
                                                              "text": fixed}))[2])
    words = cdp.js("Array.from(document.querySelectorAll('#dec-words .tok')).map(b => "
                   "b.dataset.word || b.textContent)")
    check(cdp.js("document.getElementById('dec-text').value") == fixed
          and cdp.js("document.querySelectorAll('#dec-unknown *').length") == 0
          and len(words) == len(want["explain"]["steps"])
          and not cdp.js("document.getElementById('dec-output').classList.contains('stale')")
          and cdp.js("document.getElementById('dec-stale').hidden"),
          "decoder page: two clicks make %r, written (%d words) with no unknown words left"
          % (fixed, len(words)))


def generated(cdp, before, what):
    return cdp.wait_for("document.body.dataset.generated !== undefined && "
                        "document.body.dataset.generated !== %s" % json.dumps(before), what)


def check_decoder_view(cdp, base, have_compose, screenshot):
    text = "honestly the exam was not very clear although the coffee was great"
    cdp.call("Page.navigate", url=base + "/decoder.html")
    cdp.wait_for("document.body && document.body.dataset.ready === 'true'", "decoder page loads")
    generated(cdp, "", "decoder page writes the default review's verdict")
    api = lambda **kw: json.loads(http(base, "/api/generate", json.dumps(
        dict(model="seq2seq-transformer", text=text, **kw)))[2])["explain"]
    mean = api(layer=-1, head=-1)
    words = cdp.js("Array.from(document.querySelectorAll('#dec-words .tok')).map("
                   "b => b.firstChild.textContent)")
    check(words == [s["token"] for s in mean["steps"]],
          "decoder page: the output words are the API's steps %s" % words)
    compare_decoder_shading(cdp, mean, 0, "the mean of every layer and head, word 1")
    n_rows = cdp.js("document.querySelectorAll('#dec-heatmap tbody tr').length")
    n_cols = cdp.js("document.querySelectorAll('#dec-heatmap thead th').length") - 1
    check((n_rows, n_cols) == (len(mean["steps"]), len(mean["tokens"])),
          "decoder page: heat map of %d output x %d source words" % (n_rows, n_cols))
    full = api(layer=-1, head=-1, maps=True)["cross_attention"]
    cells = cdp.js("Array.from(document.querySelectorAll('#dec-model-view .mv-cell')).map(c => "
                   "[Number(c.dataset.layer), Number(c.dataset.head), Array.from(c.querySelectorAll("
                   "'rect[data-q]')).map(r => [Number(r.dataset.q), Number(r.dataset.k), "
                   "Number(r.getAttribute('fill-opacity'))])])")
    worst = max((abs(o - full[l][h][q][k]) for l, h, rs in cells for q, k, o in rs), default=1)
    check(len(cells) == len(full) * len(full[0]) and all(
        len(rs) == len(full[l][h]) * len(full[l][h][0]) for l, h, rs in cells)
          and worst <= 0.0005 + 1e-9,
          "decoder page: cross-attention model view, %d maps, each entry the API's "
          "cross_attention (worst %.4f)" % (len(cells), worst))
    lines = cdp.js("Array.from(document.querySelectorAll('#dec-head-view line')).map(l => "
                   "[Number(l.dataset.q), Number(l.dataset.k), Number(l.getAttribute('stroke-opacity'))])")
    al = mean["alignment"]
    check(len(lines) == len(al) * len(al[0]) and all(
        abs(o - al[q][k]) <= 0.0005 + 1e-9 for q, k, o in lines),
          "decoder page: cross-attention head view, a line per output x source word at the "
          "API's alignment (%d lines)" % len(lines))
    element_shot(cdp, ["#dec-hv-title", "#dec-head-view"],
                 screenshot.replace(".png", "-cross-head-view.png"))
    element_shot(cdp, ["#dec-mv-title", "#dec-model-view"],
                 screenshot.replace(".png", "-cross-model-view.png"))
    before = cdp.js("document.body.dataset.generated")
    select(cdp, "dec-layer", "1")
    generated(cdp, before, "layer 2 chosen")
    before = cdp.js("document.body.dataset.generated")
    select(cdp, "dec-head", "0")
    generated(cdp, before, "head 1 chosen")
    one = api(layer=1, head=0)
    compare_decoder_shading(cdp, one, 0, "layer 2, head 1, word 1")
    last = len(one["steps"]) - 2
    cdp.js("document.querySelector('#dec-words .tok[data-step=\"%d\"]').click()" % last)
    compare_decoder_shading(cdp, one, last, "layer 2, head 1, word %d" % (last + 1))
    alt = one["steps"][0]["top"][1]["token"]
    before = cdp.js("document.body.dataset.generated")
    cdp.js("document.querySelectorAll('#dec-top .dec-step')[0].querySelectorAll('button')[1]"
           ".click()")
    generated(cdp, before, "a top-5 alternative of word 1 clicked")
    forced = api(layer=1, head=0, prefix=[alt])
    words = cdp.js("Array.from(document.querySelectorAll('#dec-words .tok')).map("
                   "b => b.firstChild.textContent)")
    check(words[0] == alt and words == [s["token"] for s in forced["steps"]],
          "decoder page: the alternative %r is written first and the rest is the API's "
          "continuation: %s" % (alt, words))
    compare_decoder_shading(cdp, forced, 0, "after the alternative, word 1")
    cdp.wait_for("Array.from(document.querySelectorAll('#dec-words .tok')).every("
                 "b => getComputedStyle(b).opacity === '1')", "decoder page: every output word "
                 "has appeared (written word by word)")
    check(cdp.js("document.documentElement.scrollWidth === document.documentElement.clientWidth"),
          "decoder page: no horizontal overflow")
    check(cdp.js("document.getElementById('dec-note').hidden"),
          "decoder page: no off-task note for a sentence of the grammar")
    before = cdp.js("document.body.dataset.generated")
    cdp.js("(() => { document.getElementById('dec-text').value = 'the food was not good'; "
           "document.getElementById('dec-go').click(); })()")
    generated(cdp, before, "the write-up's 'the food was not good' written")
    note = cdp.js("(() => { const p = document.getElementById('dec-note'); "
                  "return p.hidden ? null : p.textContent; })()")
    want = json.loads(http(base, "/api/generate", json.dumps(
        dict(model="seq2seq-transformer", text="the food was not good")))[2])
    reason = want["note"].removeprefix("not a sentence of the grammar: ")
    check(want["on_task"] is False and note is not None and reason in note,
          "decoder page: off-task note shown with the API's reason: %r" % note)
    if have_compose:
        cdp.js("(() => { document.getElementById('cmp-polarity').value = 'negative'; "
               "document.getElementById('cmp-subject').value = 'exam'; "
               "document.getElementById('cmp-n').value = '3'; "
               "document.getElementById('cmp-go').click(); })()")
        cdp.wait_for("document.body.dataset.composed === '1'", "compose: samples shown")
        got = cdp.js("Array.from(document.querySelectorAll('#cmp-samples li .text')).map("
                     "d => d.textContent)")
        want = json.loads(http(base, "/api/compose", json.dumps(
            {"polarity": "negative", "subject": "exam", "temperature": 0.8, "top_p": 0.9, "n": 3,
             "seed": 1}))[2])["samples"]
        check(got == [s["text"] or "(empty)" for s in want],
              "compose: the page's 3 samples are the API's (%s)" % got)
        judged = cdp.js("Array.from(document.querySelectorAll('#cmp-samples .judges')).map("
                        "d => d.textContent)")
        check(len(judged) == 3 and all("transformer" in j and "grammatical" in j for j in judged),
              "compose: each sample judged by the classifiers and the grammar")
    else:
        check(False, "compose: attn reproduce --task compose wrote no compose model")
    screenshot_to(cdp, screenshot, height=1500)
    check_decoder_fragment(cdp, base, text, have_compose, screenshot)


def decoder_state(cdp):
    return cdp.js("""(() => ({
      words: Array.from(document.querySelectorAll('#dec-words .tok')).map(b => b.firstChild.textContent),
      step: Array.from(document.querySelectorAll('#dec-words .tok')).findIndex(b => b.classList.contains('selected')),
      model: document.getElementById('dec-model').value, text: document.getElementById('dec-text').value,
      layer: document.getElementById('dec-layer').value, head: document.getElementById('dec-head').value,
      samples: Array.from(document.querySelectorAll('#cmp-samples li .text')).map(d => d.textContent),
      hash: location.hash}))()""")


def check_decoder_fragment(cdp, base, text, have_compose, screenshot):
    """The decoder page's URL per view: the state of the page after a layer, a head, a top-5
    alternative (the forced prefix), an output word and a compose is in the fragment; opening
    that URL afresh reproduces the view (the same output words as POST /api/generate with that
    prefix, the same selected word shaded by the API's cross-attention, the same menus and the
    API's compose samples) and writes back the same fragment; garbage gives the default view."""
    api = lambda **kw: json.loads(http(base, "/api/generate", json.dumps(
        dict(model="seq2seq-transformer", text=text, **kw)))[2])["explain"]
    one = api(layer=1, head=0)
    alt = next(a["token"] for a in one["steps"][0]["top"][1:] if not a["token"].startswith("["))
    cdp.js("(() => { document.getElementById('dec-text').value = %s; "
           "document.getElementById('dec-go').click(); })()" % json.dumps(text))
    cdp.wait_for("document.querySelectorAll('#dec-words .tok').length > 1 && "
                 "location.hash.includes('s=honestly')", "decoder page: the review written again")
    forced = api(layer=1, head=0, prefix=[alt])
    step = min(2, len(forced["steps"]) - 1)
    from urllib.parse import urlencode
    frag = urlencode([("model", "seq2seq-transformer"), ("s", text), ("layer", "2"),
                      ("head", "1"), ("prefix", alt), ("step", str(step + 1))]
                     + ([("polarity", "negative"), ("subject", "exam"), ("temperature", "0.8"),
                         ("top_p", "0.9"), ("samples", "2"), ("seed", "3")] if have_compose
                        else []))
    for url in (base + "/decoder.html#" + frag, base + "/decoder.html#view=top&" + frag):
        cdp.call("Page.navigate", url="about:blank")
        cdp.wait_for("location.href === 'about:blank'", "about:blank")
        cdp.call("Page.navigate", url=url)
        cdp.wait_for("document.body && document.body.dataset.ready === 'true' && "
                     "document.body.dataset.generated !== undefined", "decoder URL loads")
        got = decoder_state(cdp)
        check(got["words"] == [s["token"] for s in forced["steps"]] and got["words"][0] == alt
              and got["step"] == step and (got["layer"], got["head"]) == ("1", "0")
              and got["model"] == "seq2seq-transformer" and got["text"] == text,
              "decoder URL: the API's words with the prefix %r, word %d selected, layer 2 head 1: "
              "%s" % (alt, step + 1, got["words"]))
        compare_decoder_shading(cdp, forced, step, "decoder URL, word %d" % (step + 1))
        if have_compose:
            want = json.loads(http(base, "/api/compose", json.dumps(
                {"polarity": "negative", "subject": "exam", "temperature": 0.8, "top_p": 0.9,
                 "n": 2, "seed": 3}))[2])["samples"]
            check(got["samples"] == [s["text"] or "(empty)" for s in want],
                  "decoder URL: the compose samples are the API's for seed 3 (%d)" % len(want))
        view = "view=top&" in url
        check(got["hash"] == "#" + frag + ("&view=top" if view else ""),
              "decoder URL: the page writes back the same fragment%s" % (" (view last)" if view
                                                                         else ""))
        if view:
            check(cdp.js("(() => { const t = document.getElementById('dec-top-title')"
                         ".getBoundingClientRect().top; return scrollY > 0 && (Math.abs(t - 8) < 2 "
                         "|| innerHeight + scrollY >= document.documentElement.scrollHeight - 1)"
                         "; })()"), "decoder URL: view=top scrolls to the top 5 (or the end)")
        else:
            screenshot_to(cdp, screenshot.replace(".png", "-url.png"), height=1700)
    cdp.call("Page.navigate", url="about:blank")
    cdp.wait_for("location.href === 'about:blank'", "about:blank")
    cdp.call("Page.navigate", url=base + "/decoder.html#model=nope&layer=99&head=x&step=0&"
             "prefix=&polarity=maybe&view=%3Cimg%3E&s=")
    cdp.wait_for("document.body && document.body.dataset.ready === 'true' && "
                 "document.body.dataset.generated !== undefined", "decoder garbage URL loads")
    got = decoder_state(cdp)
    default = api(layer=-1, head=-1)
    check(got["model"] == "seq2seq-transformer" and (got["layer"], got["head"]) == ("-1", "-1")
          and got["step"] == 0 and got["samples"] == []
          and got["words"] == [s["token"] for s in default["steps"]],
          "decoder URL: a garbage fragment gives the default view (%s)" % got["hash"][:80])


def serve_with_transformer(attn, weights, tmp, pos):
    """attn serve (2 threads) on tmp holding a Transformer with --pos pos trained there (2 epochs
    of 2,000 sentences) beside the committed RNN and LSTM: (process, base URL)."""
    subprocess.run([attn, "train", "--model", "transformer", "--pos", pos, "--epochs", "2",
                    "--train-size", "2000", "--holdout", "200", "--out",
                    os.path.join(tmp, "transformer-seed1.json")], check=True, capture_output=True)
    for name in ("rnn-seed1.json", "lstm-seed1.json"):
        os.symlink(os.path.join(os.path.abspath(weights), name), os.path.join(tmp, name))
    return start_server(attn, tmp, "--threads", "2")


def check_sinusoidal_page(attn, weights, screenshot):
    """Section 4 for a Transformer with the fixed sinusoidal table (trained here, 2 epochs): the
    page names the scheme, draws GET /api/positions' table (its pixels), and the shuffle test's
    last column is the Transformer without the table, one probability for every order."""
    tmp = tempfile.mkdtemp(prefix="attn-e2e-sinusoidal-")
    try:
        p, base = serve_with_transformer(attn, weights, tmp, "sinusoidal")
        try:
            with Browser() as cdp:
                cdp.call("Page.navigate", url=base + "/#s=the+food+was+not+very+good")
                cdp.wait_for("document.body && document.getElementById('shuffle').dataset.ready "
                             "=== 'true' && document.getElementById('positions').dataset.ready "
                             "=== 'true'", "sinusoidal: section 4 drawn")
                st, _, b = http(base, "/api/positions?model=transformer")
                P = json.loads(b)["table"] if st == 200 else [[0]]
                mx = max(abs(x) for row in P for x in row)
                px = cdp.js("(() => { const c = document.querySelector('#positions canvas'); "
                            "const d = c.getContext('2d').getImageData(0, 0, c.width, c.height)"
                            ".data; return [c.width, c.height, Array.from(d)]; })()")
                W, H, data = px
                worst = max(abs(data[4 * (r * W + k) + j] - (255 + abs(P[k][r] / mx) * (
                    ((40, 160, 70) if P[k][r] >= 0 else (215, 50, 50))[j] - 255)))
                    for r in range(H) for k in range(W) for j in range(3))
                title = cdp.js("document.getElementById('positions-title').textContent")
                check(st == 200 and [W, H] == [len(P), len(P[0])] and worst <= 1.01
                      and title.endswith("(the fixed sinusoidal table)"),
                      "sinusoidal: the page names the scheme and draws /api/positions' %d x %d "
                      "table (worst %.2f of 255)" % (W, H, worst))
                heads = cdp.js("Array.from(document.querySelectorAll('#shuffle thead th'))"
                               ".map(h => h.textContent)")
                note = cdp.js("document.getElementById('shuffle-note').textContent")
                check(heads[-1] == "transformer, no positions"
                      and "transformer, no positions: the same p for every order" in note,
                      "sinusoidal: the shuffle test's last column has no positions, one p: %r"
                      % note[-80:])
                element_shot(cdp, ["#positions-section", "#positions"], screenshot)
        finally:
            check(stop_server(p) == 0, "sinusoidal: the server exits 0")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def f32(x):
    """x rounded to the nearest float32 (the JSON's %.9g back to the float it was written from;
    a float add of two such, as the forward's)."""
    return struct.unpack("f", struct.pack("f", x))[0]


def check_alibi_qk_page(attn, weights, screenshot):
    """The q.k view of a --pos alibi Transformer (trained here, 2 epochs): its score is q.k plus
    the ALiBi term, so the view shows "dot_products" (the products' sum) and "score_bias" beside
    the products, each the API's number, and the score column is their sum as the API gives it."""
    tmp = tempfile.mkdtemp(prefix="attn-e2e-alibi-")
    try:
        p, base = serve_with_transformer(attn, weights, tmp, "alibi")
        try:
            sentence = "the food was not very good"
            got = json.loads(http(base, "/api/explain", json.dumps(
                {"sentence": sentence, "qk": True, "models": ["transformer"]}))[2])
            t = got["explanations"][0]["explain"]
            with Browser() as cdp:
                open_url(cdp, base + "/#s=" + sentence.replace(" ", "+"))
                qi = t["tokens"].index("not")
                mouse(cdp, '#model-view .mv-cell[data-layer="1"][data-head="0"]', click=True)
                select(cdp, "qk-query", str(qi))
                view = cdp.js("(() => { const b = document.getElementById('qk-view'); const v = "
                              "(c) => Array.from(b.querySelectorAll(c)).map(e => Number("
                              "e.dataset.v)); return [b.dataset.layer, b.dataset.head, "
                              "b.dataset.query, v('.qk-prod'), v('.qk-dot'), v('.qk-bias'), "
                              "v('.qk-score'), Array.from(b.querySelectorAll('thead th')).map("
                              "h => h.textContent)]; })()")
                q, K = t["q"][1][0][qi], t["k"][1][0]
                dot, bias = t["dot_products"][1][0][qi], t["score_bias"][1][0][qi]
                sc = t["scores"][1][0][qi]
                check(view[:3] == ["1", "0", str(qi)]
                      and view[3] == [a * b for k in K for a, b in zip(q, k)]
                      and view[4] == dot and view[5] == bias and view[6] == sc
                      and all(f32(f32(d) + f32(b)) == f32(s) for d, b, s in zip(dot, bias, sc))
                      and any(b != 0 for b in bias),
                      "alibi: q.k view, layer 2 head 1, query 'not': q x k, q.k, the ALiBi bias "
                      "and score = q.k + bias, each the API's number (bias %s)"
                      % [round(b, 3) for b in bias])
                check("+ ALiBi bias" in view[7] and "score = q\u00b7k + bias" in view[7],
                      "alibi: the q.k view's header names the bias and the sum: %s" % view[7])
                element_shot(cdp, ["#qk-view-title", "#qk-view"], screenshot)
        finally:
            check(stop_server(p) == 0, "alibi: the server exits 0")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


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
    check_own_vocab_page(a.attn, a.weights, a.screenshot.replace(".png", "-own-vocab.png"))
    check_decoder_page(a.attn, a.weights, a.screenshot.replace(".png", "-decoder.png"))
    check_sinusoidal_page(a.attn, a.weights, a.screenshot.replace(".png", "-sinusoidal.png"))
    check_alibi_qk_page(a.attn, a.weights, a.screenshot.replace(".png", "-alibi-qk.png"))
    check_queue(a.attn, a.weights)
    print("%d failures, %.1f s" % (len(FAILS), time.time() - t0))
    sys.exit(1 if FAILS else 0)


if __name__ == "__main__":
    main()
