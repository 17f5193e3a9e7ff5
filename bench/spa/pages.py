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
"""

from __future__ import annotations

import json
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
}

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
}

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


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

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
            time.sleep(int(q.get("ms", "0")) / 1000)
            self._send(json.dumps({"ok": True}).encode(), "application/json")
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
            time.sleep(int(q.get("ms", "0")) / 1000)
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


def serve() -> tuple[str, ThreadingHTTPServer]:
    """Serves the cases on a free loopback port; returns the base URL and the server."""
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{srv.server_address[1]}", srv
