"""A static page on 127.0.0.1 for the benchmarks to load."""

from __future__ import annotations

from webserv.testing import PageServer

PAGE = b"<!doctype html><title>Bench</title><h1>Bench</h1><button>Noop</button><input placeholder='Name'>"


def serve(body: bytes = PAGE) -> str:
    """Serves body at every path on a free loopback port (a daemon thread) and returns the URL."""
    return PageServer(lambda _path, _query: body).url + "/"
