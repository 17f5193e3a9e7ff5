"""A page server on 127.0.0.1 for tests, benchmarks and examples: pages an environment can open.

``PageServer(route)`` answers every GET with the HTML ``route(path, query)`` returns, from a daemon
thread on a free loopback port, until it is closed (or its ``with`` block ends)::

    with PageServer(lambda path, query: f"<title>{path}</title>") as pages:
        env.reset(start_url=pages.url + "/hello")

The route runs in the server's thread for each request (requests are served concurrently), so it
may block, as a slow API would. Nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from urllib.parse import parse_qs, urlparse

#: A route: the request's path and its query (each name's first value) to the page's HTML.
Route = Callable[[str, dict[str, str]], str | bytes]


class PageServer:
    """Serves ``route``'s pages on a free 127.0.0.1 port; ``url`` is its root, without a slash."""

    def __init__(self, route: Route) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                url = urlparse(self.path)
                query = {k: v[0] for k, v in parse_qs(url.query).items()}
                body = route(url.path, query)
                data = body.encode() if isinstance(body, str) else body
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._srv.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._srv.server_address[1]}"
        threading.Thread(target=self._srv.serve_forever, daemon=True).start()

    def close(self) -> None:
        """Stops serving and frees the port."""
        self._srv.shutdown()
        self._srv.server_close()

    def __enter__(self) -> PageServer:
        return self

    def __exit__(
        self, typ: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
