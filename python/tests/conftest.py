"""Fixtures: a page server on 127.0.0.1 and a real `webserv serve` (bin/webserv, built by `make test`)."""

from __future__ import annotations

import html
import os
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from webserv.launcher import LocalServer, find_binary

PAGE = """<!doctype html><title>Page {n}</title><h1>Shop {n}</h1>
<button onclick="load()">Load</button><p id="out">empty</p>
<input placeholder="Name"><a href="/page?n={next}">Next</a>
<script>
async function load() {{
  const r = await fetch('/api?ms=300&n={n}');
  document.getElementById('out').textContent = await r.text();
}}
</script>"""


class _Pages(BaseHTTPRequestHandler):
    # /api requests in flight now, and the most at once since the last reset_api_peak().
    lock = threading.Lock()
    api_in_flight = 0
    api_peak = 0

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        url = urlparse(self.path)
        q = {k: v[0] for k, v in parse_qs(url.query).items()}
        if url.path == "/api":
            with _Pages.lock:
                _Pages.api_in_flight += 1
                _Pages.api_peak = max(_Pages.api_peak, _Pages.api_in_flight)
            try:
                time.sleep(int(q.get("ms", "0")) / 1000)
            finally:
                with _Pages.lock:
                    _Pages.api_in_flight -= 1
            body = f"loaded {q.get('n', '?')}"
        elif url.path == "/grow":
            # A page whose button grows the DOM far past any sane size (a resource limit's case).
            body = (
                '<!doctype html><title>Grow</title><button onclick="for (let i = 0; i < 20000; i++)'
                " document.body.appendChild(document.createElement('div'))\">Grow</button>"
            )
        elif url.path == "/img":
            # A page whose image is elsewhere (?src=URL): what the network policy may refuse.
            body = f'<!doctype html><title>Image</title><img src="{html.escape(q.get("src", ""))}" alt="x">'
        else:
            n = int(q.get("n", "0"))
            body = PAGE.format(n=n, next=n + 1)
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="session")
def pages() -> Iterator[str]:
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Pages)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()


def reset_api_peak() -> None:
    with _Pages.lock:
        _Pages.api_peak = _Pages.api_in_flight


def api_in_flight() -> int:
    """How many /api requests the pages server is answering now."""
    with _Pages.lock:
        return _Pages.api_in_flight


def api_peak() -> int:
    """The most /api requests the page server had in flight at once since reset_api_peak()."""
    with _Pages.lock:
        return _Pages.api_peak


def sites_server(binary: str, sites: str | Path, instances: str | Path, *extra: str) -> LocalServer:
    """`webserv serve` of the site definitions in sites alone (no bundled shop, no Incus), its
    instances under instances; extra flags follow."""
    flags = ["--idle", "200ms", "--no-bundled", "--no-incus", "--sites", str(sites)]
    return LocalServer(binary, [*flags, "--instances", str(instances), *extra])


@pytest.fixture(scope="session")
def binary() -> str:
    b = find_binary()
    if b is None:
        pytest.fail("no webserv binary: run `make build` (make test does) or set WEBSERV_BIN")
    return b


@pytest.fixture(scope="session")
def server(binary: str) -> Iterator[str]:
    """One server for the session; tests reach it through WEBSERV_URL."""
    s = LocalServer(binary, ["--idle", "200ms"])
    os.environ["WEBSERV_URL"] = s.url
    yield s.url
    s.stop()


@pytest.fixture
def spare_server(binary: str) -> Iterator[LocalServer]:
    """A server of the test's own, which it may stop (an infrastructure failure)."""
    s = LocalServer(binary, ["--idle", "200ms", "--no-bundled"])
    yield s
    s.stop()


REPO = Path(__file__).resolve().parents[2]
