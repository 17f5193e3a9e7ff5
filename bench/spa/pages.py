"""Single-page-app cases for the settle suite, served on 127.0.0.1.

Every case is a page with a "Go" button. After the click, content
"DONE-<case>" appears once the app's work is over; an observation is
correct when it contains it. The cases are the ways real apps finish late:
a slow fetch, chained fetches with gaps, XHR, rendering on a timer after
the response (one shorter and one longer than WebServ's idle window), a
client-side route change, a slow full navigation, a new tab, an iframe, a
page that polls in the background, and a page holding an EventSource open.
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
}

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

    def log_message(self, *args: object) -> None:
        pass


def serve() -> tuple[str, ThreadingHTTPServer]:
    """Serves the cases on a free loopback port; returns the base URL and the server."""
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{srv.server_address[1]}", srv
