"""One WebSocket to one server: many requests in flight, replies matched by id (docs/protocol.md)."""

from __future__ import annotations

import asyncio
import itertools
import os
from dataclasses import dataclass
from typing import Any

import msgpack
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI

from .errors import ConnectionLost, RequestTimeout, ServerUnavailable, from_reply

PROTOCOL_VERSION = 1
_MAX_FRAME = 256 << 20


@dataclass(frozen=True)
class Reply:
    """A successful reply: the op's result and the milliseconds the server spent on it."""

    result: dict[str, Any]
    server_ms: float


def ws_url(url: str) -> str:
    """The protocol endpoint of a server given as ``ws://HOST:PORT[/v1/ws]`` or ``http://HOST:PORT``."""
    if url.startswith("http"):
        url = "ws" + url[4:]
    if not url.rstrip("/").endswith("/v1/ws"):
        url = url.rstrip("/") + "/v1/ws"
    return url


class Connection:
    """One WebSocket to one server.

    Connects on first use (and again after the connection drops), says
    ``hello``, and matches replies to requests by id. Error replies raise the
    exception of their code (``webserv.errors``); a connection that closes
    while requests wait raises ``ConnectionLost`` in each of them.

    Args:
        url: the server (``ws://127.0.0.1:8765/v1/ws``; ``http://`` and a missing path are accepted).
        token: the server's token, when it has one (default ``$WEBSERV_TOKEN``).
        timeout: seconds to wait for any one reply (``RequestTimeout`` after).
        keep_envs: hello's ``keep_envs``: keep this connection's environments for the
            server's TTL when the connection vanishes (default: the server closes them at once).
    """

    def __init__(
        self, url: str, *, token: str | None = None, timeout: float = 300.0, keep_envs: bool = False
    ):
        self.url = url
        # A server started with --token (or $WEBSERV_TOKEN) needs it; so does every client of it.
        self.token = token if token is not None else os.environ.get("WEBSERV_TOKEN") or None
        self.timeout = timeout
        self.keep_envs = keep_envs
        self.hello: dict[str, Any] = {}
        self._ws: ClientConnection | None = None
        # Per WebSocket: its reader task and the requests waiting for a reply on it.
        self._readers: dict[ClientConnection, asyncio.Task[None]] = {}
        self._pending: dict[ClientConnection, dict[int, asyncio.Future[dict[str, Any]]]] = {}
        self._ids = itertools.count(1)
        self._lock = asyncio.Lock()

    @property
    def connected(self) -> bool:
        return self._ws is not None

    async def connect(self) -> dict[str, Any]:
        """Opens the WebSocket and says hello (once; again after a drop). Returns hello's result."""
        async with self._lock:
            if self._ws is not None:
                return self.hello
            url = ws_url(self.url)
            try:
                ws = await connect(url, max_size=_MAX_FRAME, compression=None, open_timeout=30)
            except (OSError, InvalidHandshake, InvalidURI, asyncio.TimeoutError) as e:
                raise ServerUnavailable(
                    f"cannot connect to {url}: {e}; is `webserv serve` running there?"
                ) from e
            self._ws = ws
            self._pending[ws] = {}
            self._readers[ws] = asyncio.create_task(self._read(ws))
            args: dict[str, Any] = {"version": PROTOCOL_VERSION}
            if self.token:
                args["token"] = self.token
            if self.keep_envs:
                args["keep_envs"] = True
            try:
                self.hello = (await self._send(ws, "hello", None, args)).result
            except BaseException:
                await self._drop(ws)
                raise
            return self.hello

    async def request(self, op: str, env: str | None = None, args: dict[str, Any] | None = None) -> Reply:
        """Sends one request and waits for its reply, connecting first if needed."""
        ws = self._ws
        if ws is None:
            await self.connect()
            ws = self._ws
            if ws is None:
                raise ConnectionLost(f"the connection to {self.url} closed right after it opened")
        return await self._send(ws, op, env, args or {})

    async def close(self) -> None:
        """Closes the WebSocket (a clean close: the server keeps the environments for its TTL)."""
        ws = self._ws
        if ws is not None:
            await self._drop(ws)

    async def _drop(self, ws: ClientConnection) -> None:
        if self._ws is ws:
            self._ws = None
        await ws.close()
        reader = self._readers.get(ws)
        if reader is not None:
            await asyncio.gather(reader, return_exceptions=True)

    async def _send(self, ws: ClientConnection, op: str, env: str | None, args: dict[str, Any]) -> Reply:
        pending = self._pending.get(ws)
        if pending is None:
            raise ConnectionLost(f"the connection to {self.url} closed before {op} was sent")
        rid = next(self._ids)
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        pending[rid] = fut
        msg: dict[str, Any] = {"id": rid, "op": op, "args": args}
        if env is not None:
            msg["env"] = env
        try:
            try:
                await ws.send(msgpack.packb(msg, use_bin_type=True))
            except ConnectionClosed as e:
                raise ConnectionLost(f"the connection to {self.url} closed before {op} was sent: {e}") from e
            try:
                reply = await asyncio.wait_for(fut, self.timeout)
            except asyncio.TimeoutError as e:
                raise RequestTimeout(
                    f"no reply to {op} from {self.url} within {self.timeout:.0f}s "
                    "(the client's timeout); the request may still be running"
                ) from e
        finally:
            pending.pop(rid, None)
        if not reply.get("ok"):
            raise from_reply(reply.get("error") or {})
        return Reply(reply.get("result") or {}, float(reply.get("server_ms") or 0.0))

    async def _read(self, ws: ClientConnection) -> None:
        pending = self._pending[ws]
        try:
            async for frame in ws:
                if isinstance(frame, str):
                    continue
                reply = msgpack.unpackb(frame, raw=False)
                fut = pending.pop(reply.get("id", 0), None)
                if fut is not None and not fut.done():
                    fut.set_result(reply)
        except ConnectionClosed:
            pass
        finally:
            if self._ws is ws:
                self._ws = None
            self._pending.pop(ws, None)
            self._readers.pop(ws, None)
            for fut in pending.values():
                if not fut.done():
                    fut.set_exception(
                        ConnectionLost(
                            f"the connection to {self.url} closed before the reply came; "
                            "the request may or may not have run"
                        )
                    )
            pending.clear()
