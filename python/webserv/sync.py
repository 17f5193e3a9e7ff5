"""The synchronous bridge: one asyncio loop on a daemon thread, shared by every gymnasium
environment of the process, and one client per server on it."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from .client import AsyncClient

T = TypeVar("T")


class Loop:
    """One asyncio loop on a daemon thread, shared by every WebEnv of the process."""

    _lock = threading.Lock()
    _loop: asyncio.AbstractEventLoop | None = None
    _clients: dict[tuple[str | None, str | None], AsyncClient] = {}

    @classmethod
    def get(cls) -> asyncio.AbstractEventLoop:
        with cls._lock:
            if cls._loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="webserv-loop", daemon=True).start()
                cls._loop = loop
            return cls._loop

    @classmethod
    def run(cls, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        return asyncio.run_coroutine_threadsafe(coro, cls.get()).result(timeout)

    @classmethod
    def client(cls, url: str | None, token: str | None) -> AsyncClient:
        """Environments of one process share one connection per server."""
        key = (url, token)
        with cls._lock:
            c = cls._clients.get(key)
            if c is None:
                c = cls._clients[key] = AsyncClient(url, token=token)
            return c
