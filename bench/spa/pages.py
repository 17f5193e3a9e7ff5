"""Single-page-app cases for the settle suite, served on 127.0.0.1.

Every case is a page with a "Go" button. After the click, content
"DONE-<case>" appears once the app's work is over; an observation is
correct when it contains it. The cases are the ways real apps finish late:
a slow fetch, chained fetches with gaps, XHR, rendering on a timer after
the response (one shorter and one longer than WebServ's idle window), a
client-side route change, a slow full navigation, a new tab, an iframe, a
fetch a click handler starts 700 ms later, a chain of animation frames;
and the ways background work gets in the way: a page that polls in the
background (every 700 ms; every 300 ms with two pollers), a ticker
rewriting the DOM, an analytics beacon loop, a page holding an EventSource
open, and a 5 s timer the step must not wait for (its content replaces the
result). One case is a page load rather than a click: content that arrives
1.5 s after the load event must be in the first observation (RESET_CASES).

The classes of issue 33 (CLASSES) finish by paths a page-side tracker
does not see end to end: an image's onload, a script and a dynamic import()
added on click, a worker that fetches and posts back, a WebSocket reply, a
server-sent event answering a POST, a CSS transition's end, a Web
Animation's finished promise, a requestAnimationFrame loop that ends, a
lazy section an IntersectionObserver loads once scrolled to, a debounced
input, a frame of another origin (localhost) that fetches on a postMessage,
a form POST answered 303, and a click that does nothing.

serve(factor) makes every server delay `factor` times longer (a slower
site); content_ms(case, factor) is then when the content appears.
"""

from __future__ import annotations

import base64
import hashlib
import json
import queue
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

# The final text is built from two string pieces so the page's own script
# source never contains it. Each case: the script run by the Go button (and on load, for the
# background cases). `done(case)` renders the final content.
CASES: dict[str, dict[str, str]] = {
    "delayed_fetch": {"go": "const r = await fetch('/api?ms=800'); await r.json(); done();"},
    "chained_fetches": {
        "go": "await (await fetch('/api?ms=300')).json(); await sleep(250);"
        " await (await fetch('/api?ms=300')).json(); await sleep(250);"
        " await (await fetch('/api?ms=300')).json(); done();"
    },
    "xhr": {
        "go": "const x = new XMLHttpRequest(); x.open('GET', '/api?ms=700');"
        " x.onload = () => done(); x.send();"
    },
    "render_timer": {"go": "await (await fetch('/api?ms=300')).json(); setTimeout(done, 350);"},
    # A timer longer than the idle window, with no network: quiescence
    # cannot see it (the limit of any network-based settle rule).
    "slow_render_timer": {"go": "await (await fetch('/api?ms=300')).json(); setTimeout(done, 900);"},
    "route_change": {
        "go": "history.pushState({}, '', '/route/next'); document.body.innerHTML = '<p>loading route</p>';"
        " await (await fetch('/api?ms=600')).json(); done();"
    },
    "navigation": {"go": "location.href = '/slowpage?ms=900&case=navigation';"},
    "new_tab": {"go": "window.open('/tabpage?case=new_tab', '_blank');"},
    "iframe": {
        "go": "const f = document.createElement('iframe'); f.src = '/framepage?case=iframe';"
        " document.body.appendChild(f);"
    },
    "background_polling": {
        "load": "setInterval(() => fetch('/api?ms=50'), 700);",
        "go": "await (await fetch('/api?ms=600')).json(); done();",
    },
    "eventsource": {
        "load": "window.es = new EventSource('/sse');",
        "go": "await (await fetch('/api?ms=600')).json(); done();",
    },
    # Two pollers that never leave a 500 ms gap without a request in flight.
    "polling_300ms": {
        "load": "setInterval(() => fetch('/api?ms=250'), 300);"
        " (function badge() { fetch('/api?ms=200').then((r) => r.json())"
        ".then(() => setTimeout(badge, 300)); })();",
        "go": "await (await fetch('/api?ms=600')).json(); done();",
    },
    "ticker": {
        "load": "let n = 0; setInterval(() => {"
        " document.getElementById('out').innerHTML = '<b>tick ' + (++n) + '</b>'; }, 50);",
        "go": "await (await fetch('/api?ms=400')).json(); done();",
    },
    "beacon_loop": {
        "load": "(function beacon() { navigator.sendBeacon('/api?ms=10', 'e');"
        " fetch('/api?ms=120', { method: 'POST', keepalive: true, body: 'e' });"
        " setTimeout(beacon, 150); })();",
        "go": "await (await fetch('/api?ms=400')).json(); done();",
    },
    "fetch_later": {
        "go": "setTimeout(async () => { await (await fetch('/api?ms=300')).json(); done(); }, 700);"
    },
    "raf_chain": {
        "go": "(function step(n) { if (!n) return done(); requestAnimationFrame(() => step(n - 1)); })(60);"
    },
    "long_timer": {
        "go": "done(); setTimeout(() => { document.getElementById('result').textContent = 'STALE'; }, 5000);"
    },
    "reset_late": {
        "load": "addEventListener('load', () => setTimeout(async () => {"
        " await (await fetch('/api?ms=100')).json(); done(); }, 1500));",
        "go": "",
    },
    # The classes of issue 33.
    "image_onload": {"go": "const i = new Image(); i.onload = done; i.src = '/img?ms=300';"},
    "script_on_click": {
        "go": "const s = document.createElement('script'); s.src = '/js?ms=300'; document.head.appendChild(s);"
    },
    "dynamic_import": {"go": "(await import('/mjs?ms=300')).go();"},
    "worker_reply": {
        "load": "window.w = new Worker('/worker.js'); w.onmessage = () => done();",
        "go": "w.postMessage('/api?ms=300');",
    },
    "websocket_reply": {
        "load": "window.ws = new WebSocket('ws://' + location.host + '/ws?ms=300');"
        " ws.onmessage = (e) => { if (e.data === 'reply') done(); };",
        "go": "ws.send('hello');",
    },
    "sse_reply": {
        "load": "window.ch = String(Math.random()).slice(2); window.es = new EventSource('/events?ch=' + ch);"
        " es.onmessage = (e) => { if (e.data === 'reply') done(); };",
        "go": "fetch('/notify?ms=300&ch=' + ch, { method: 'POST' });",
    },
    "css_transition": {
        "load": "const st = document.createElement('style');"
        " st.textContent = '#out { width: 10px; transition: width 400ms linear; } #out.open { width: 200px; }';"
        " document.head.appendChild(st);",
        "go": "await (await fetch('/api?ms=300')).json(); const o = document.getElementById('out');"
        " o.addEventListener('transitionend', done, { once: true }); o.classList.add('open');",
    },
    "web_animation": {
        "go": "document.getElementById('out').animate([{ opacity: 1 }, { opacity: 0.3 }],"
        " { duration: 700 }).finished.then(done);"
    },
    "raf_loop": {
        "go": "const t0 = performance.now(); requestAnimationFrame(function step(t) {"
        " document.getElementById('out').textContent = Math.round(t - t0);"
        " if (t - t0 < 800) requestAnimationFrame(step); else done(); });"
    },
    "lazy_scroll": {
        "load": "const sp = document.createElement('div'); sp.style.height = '3000px'; document.body.appendChild(sp);"
        " const lz = document.createElement('div'); lz.id = 'lazy'; lz.textContent = 'lazy'; document.body.appendChild(lz);"
        " new IntersectionObserver(async (es, ob) => { if (!es[0].isIntersecting) return; ob.disconnect();"
        " await (await fetch('/api?ms=300')).json(); done(); }).observe(lz);",
        "go": "document.getElementById('lazy').scrollIntoView();",
    },
    "debounced_input": {
        "load": "const q = document.createElement('input'); q.id = 'q'; document.body.appendChild(q); let t = 0;"
        " q.addEventListener('input', () => { clearTimeout(t); t = setTimeout(async () => {"
        " await (await fetch('/api?ms=300')).json(); done(); }, 300); });",
        "go": "const q = document.getElementById('q'); q.value = 'mug'; q.dispatchEvent(new Event('input'));",
    },
    "cross_origin_frame": {
        "load": "const f = document.createElement('iframe'); f.id = 'xf';"
        " f.src = 'http://localhost:' + location.port + '/xframe'; document.body.appendChild(f);"
        " addEventListener('message', (e) => { if (e.data === 'reply') done(); });",
        "go": "document.getElementById('xf').contentWindow.postMessage('/api?ms=300', '*');",
    },
    "form_post_303": {
        "load": "const fm = document.createElement('form'); fm.method = 'post'; fm.action = '/post303?ms=300';"
        " fm.id = 'fm'; document.body.appendChild(fm);",
        "go": "document.getElementById('fm').submit();",
    },
    "nothing": {"load": "done();", "go": ""},
}

# The classes of issue 33 (the other cases came before).
CLASSES = (
    "image_onload",
    "script_on_click",
    "dynamic_import",
    "worker_reply",
    "websocket_reply",
    "sse_reply",
    "css_transition",
    "web_animation",
    "raf_loop",
    "lazy_scroll",
    "debounced_input",
    "cross_origin_frame",
    "form_post_303",
    "nothing",
)

# When the final content appears, by the page's design: ms after the click
# (after navigation start for RESET_CASES). A step cannot be correct sooner.
CONTENT_MS: dict[str, int] = {
    "delayed_fetch": 800,
    "chained_fetches": 1400,
    "xhr": 700,
    "render_timer": 650,
    "slow_render_timer": 1200,
    "route_change": 600,
    "navigation": 1400,
    "new_tab": 500,
    "iframe": 500,
    "background_polling": 600,
    "eventsource": 600,
    "polling_300ms": 600,
    "ticker": 400,
    "beacon_loop": 400,
    "fetch_later": 1000,
    "raf_chain": 1000,
    "long_timer": 0,
    "reset_late": 1600,
    "image_onload": 300,
    "script_on_click": 300,
    "dynamic_import": 300,
    "worker_reply": 300,
    "websocket_reply": 300,
    "sse_reply": 300,
    "css_transition": 700,
    "web_animation": 700,
    "raf_loop": 800,
    "lazy_scroll": 300,
    "debounced_input": 600,
    "cross_origin_frame": 300,
    "form_post_303": 300,
    "nothing": 0,
}

# Of CONTENT_MS, the part the server's delays make up (it scales with
# serve's factor); the rest is the page's own timers and animations.
SERVER_MS: dict[str, int] = {
    "delayed_fetch": 800,
    "chained_fetches": 900,
    "xhr": 700,
    "render_timer": 300,
    "slow_render_timer": 300,
    "route_change": 600,
    "navigation": 1400,
    "new_tab": 500,
    "iframe": 500,
    "background_polling": 600,
    "eventsource": 600,
    "polling_300ms": 600,
    "ticker": 400,
    "beacon_loop": 400,
    "fetch_later": 300,
    "raf_chain": 0,
    "long_timer": 0,
    "reset_late": 100,
    "image_onload": 300,
    "script_on_click": 300,
    "dynamic_import": 300,
    "worker_reply": 300,
    "websocket_reply": 300,
    "sse_reply": 300,
    "css_transition": 300,
    "web_animation": 0,
    "raf_loop": 0,
    "lazy_scroll": 300,
    "debounced_input": 300,
    "cross_origin_frame": 300,
    "form_post_303": 300,
    "nothing": 0,
}


def content_ms(case: str, factor: float = 1) -> float:
    """When case's content appears (ms after the click) with the server's delays times factor."""
    return CONTENT_MS[case] + (factor - 1) * SERVER_MS[case]


# Pages whose background traffic used to hold WebServ's step: a step there
# must take at most the content time plus the idle window plus 150 ms.
POLLING = ("background_polling", "polling_300ms", "ticker", "beacon_loop", "eventsource")

# Cases where the measured step is the page load itself (a reset).
RESET_CASES = ("reset_late",)

PAGE = """<!doctype html><html><head><title>{case}</title></head><body>
<h1>{case}</h1><button id="go">Go</button><div id="out">waiting</div>
<script>
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
function done() {{
  const d = document.createElement('p'); d.id = 'result'; d.textContent = 'DONE' + '-{case}';
  document.body.appendChild(d);
}}
{load}
document.getElementById('go').addEventListener('click', async () => {{ {go} }});
</script></body></html>"""

# A page (new tab, iframe, slow navigation target) that fetches, then renders.
LATE = """<!doctype html><title>late</title><p>loading</p><script>
fetch('/api?ms=500').then((r) => r.json()).then(() => {{
  const d = document.createElement('p'); d.textContent = 'DONE' + '-{case}';
  document.body.appendChild(d);
}});
</script>"""


WORKER = "onmessage = async (e) => { await (await fetch(e.data)).json(); postMessage('reply'); };"

# The frame of another origin (served on localhost): fetches what its parent
# posts, then answers.
XFRAME = """<!doctype html><title>other origin</title><p>other origin</p><script>
addEventListener('message', async (e) => {
  await (await fetch(e.data)).json(); parent.postMessage('reply', '*');
});
</script>"""

DONE_PAGE = """<!doctype html><title>done</title><p>DONE-{case}</p>"""

# The slow-down factor of every delay (serve's factor).
_factor = 1.0
# EventSource streams by ?ch, for /notify.
_streams: dict[str, queue.Queue[str]] = {}
_streams_mu = threading.Lock()


def _stream(ch: str) -> queue.Queue[str]:
    with _streams_mu:
        return _streams.setdefault(ch, queue.Queue())


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _sleep(self, q: dict[str, str]) -> None:
        time.sleep(int(q.get("ms", "0")) * _factor / 1000)

    def _websocket(self, q: dict[str, str]) -> None:
        """A WebSocket that answers 'reply' to every message, after the delay."""
        key = self.headers.get("Sec-WebSocket-Key", "")
        accept = base64.b64encode(
            hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()
        )
        self.send_response(101)
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept.decode())
        self.end_headers()
        self.close_connection = True
        try:
            while True:
                head = self.rfile.read(2)
                if len(head) < 2 or head[0] & 0x0F == 8:  # closed, or a close frame
                    return
                n = head[1] & 0x7F
                if n == 126:
                    n = struct.unpack(">H", self.rfile.read(2))[0]
                elif n == 127:
                    n = struct.unpack(">Q", self.rfile.read(8))[0]
                self.rfile.read(4 + n)  # the mask and the (masked) payload
                self._sleep(q)
                self.wfile.write(b"\x81\x05reply")
                self.wfile.flush()
        except OSError:
            pass

    def _send(self, body: bytes, ctype: str = "text/html; charset=utf-8") -> None:
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        try:
            self.wfile.write(body)
        except OSError:
            pass  # the page went away (a closed context): nothing to answer

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        u = urlparse(self.path)
        q = {k: v[0] for k, v in parse_qs(u.query).items()}
        if u.path == "/api":
            self._sleep(q)
            self._send(json.dumps({"ok": True}).encode(), "application/json")
        elif u.path == "/img":
            self._sleep(q)
            self._send(PIXEL, "image/gif")
        elif u.path == "/js":
            self._sleep(q)
            self._send(b"done();", "text/javascript")
        elif u.path == "/mjs":
            self._sleep(q)
            self._send(b"export function go() { window.done(); }", "text/javascript")
        elif u.path == "/worker.js":
            self._send(WORKER.encode(), "text/javascript")
        elif u.path == "/xframe":
            self._send(XFRAME.encode())
        elif u.path == "/ws":
            self._websocket(q)
        elif u.path == "/events":
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.close_connection = True
            stream = _stream(q.get("ch", ""))
            try:
                self.wfile.write(b": open\n\n")
                self.wfile.flush()
                while True:
                    try:
                        msg = stream.get(timeout=30)
                    except queue.Empty:
                        return
                    self.wfile.write(f"data: {msg}\n\n".encode())
                    self.wfile.flush()
            except OSError:
                pass
        elif u.path == "/notify":
            stream = _stream(q.get("ch", ""))
            delay = int(q.get("ms", "0")) * _factor / 1000
            threading.Timer(delay, stream.put, ("reply",)).start()
            self._send(b"", "text/plain")
        elif u.path == "/post303":
            self._sleep(q)
            self.send_response(303)
            self.send_header("Location", "/donepage?case=form_post_303")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif u.path == "/donepage":
            self._send(DONE_PAGE.format(case=q.get("case", "?")).encode())
        elif u.path == "/sse":
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            try:
                for i in range(600):
                    self.wfile.write(f"data: tick {i}\n\n".encode())
                    self.wfile.flush()
                    time.sleep(1)
            except OSError:
                pass
            self.close_connection = True
        elif u.path == "/slowpage":
            self._sleep(q)
            self._send(LATE.format(case=q.get("case", "?")).encode())
        elif u.path in ("/tabpage", "/framepage"):
            self._send(LATE.format(case=q.get("case", "?")).encode())
        else:
            case = u.path.strip("/").split("/")[-1]
            c = CASES.get(case, CASES["delayed_fetch"])
            self._send(PAGE.format(case=case, go=c["go"], load=c.get("load", "")).encode())

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
        self.do_GET()

    def log_message(self, *args: object) -> None:
        pass


PIXEL = base64.b64decode("R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAICRAEAOw==")


def serve(factor: float = 1) -> tuple[str, ThreadingHTTPServer]:
    """Serves the cases on a free loopback port (every address of it: the
    cross-origin frame is on localhost), each server delay `factor` times
    longer; returns the base URL and the server."""
    global _factor
    _factor = factor
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{srv.server_address[1]}", srv
