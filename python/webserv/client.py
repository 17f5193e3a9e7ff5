"""The asyncio client: one WebSocket per client, many requests in flight."""

from __future__ import annotations

import asyncio
import itertools
import random
import uuid
from typing import Any

import msgpack
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from .errors import WebServError
from .launcher import server_url
from .observation import to_gym

PROTOCOL_VERSION = 1
_MAX_FRAME = 256 << 20

Obs = dict[str, Any]
Info = dict[str, Any]


class AsyncClient:
    """A connection to a webserv server, shared by any number of environments.

    Requests for different environments run concurrently on the server;
    replies are matched to requests by id. If the connection drops, the next
    request reconnects: environments belong to the server and survive it.

    ``url`` defaults to ``$WEBSERV_URL``; when that is unset too, a local
    ``webserv serve`` is started and stopped at exit.
    """

    def __init__(self, url: str | None = None, *, token: str | None = None, timeout: float = 300.0):
        self._url = url
        self._token = token
        self._timeout = timeout
        self._ws: ClientConnection | None = None
        self._reader: asyncio.Task[None] | None = None
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._ids = itertools.count(1)
        self._lock = asyncio.Lock()
        self.hello: dict[str, Any] = {}

    @property
    def url(self) -> str:
        if self._url is None:
            self._url = server_url()
        return self._url

    async def __aenter__(self) -> AsyncClient:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def connect(self) -> None:
        """Connects (again) and says hello."""
        async with self._lock:
            if self._ws is not None:
                return
            url = self.url
            if url.startswith("http"):
                url = "ws" + url[4:]
            if not url.rstrip("/").endswith("/v1/ws"):
                url = url.rstrip("/") + "/v1/ws"
            try:
                self._ws = await connect(url, max_size=_MAX_FRAME, compression=None, open_timeout=30)
            except OSError as e:
                raise WebServError(
                    "unavailable", f"cannot connect to {url}: {e}; is `webserv serve` running?"
                ) from e
            self._reader = asyncio.create_task(self._read(self._ws))
        args: dict[str, Any] = {"version": PROTOCOL_VERSION}
        if self._token:
            args["token"] = self._token
        self.hello = await self.request("hello", **args)

    async def close(self) -> None:
        """Closes the connection. Environments stay on the server until closed or reclaimed."""
        ws, self._ws = self._ws, None
        if ws is not None:
            await ws.close()
        if self._reader is not None:
            await asyncio.gather(self._reader, return_exceptions=True)

    async def _read(self, ws: ClientConnection) -> None:
        try:
            async for frame in ws:
                if isinstance(frame, str):
                    continue
                reply = msgpack.unpackb(frame, raw=False)
                fut = self._pending.pop(reply.get("id", 0), None)
                if fut is not None and not fut.done():
                    fut.set_result(reply)
        except ConnectionClosed:
            pass
        finally:
            if self._ws is ws:
                self._ws = None
            for fut in self._pending.values():
                if not fut.done():
                    fut.set_exception(
                        WebServError(
                            "connection_lost",
                            "the connection to the server closed "
                            "before the reply came; the request may or may not have run",
                            retryable=True,
                        )
                    )
            self._pending.clear()

    async def request(self, op: str, env: str | None = None, **args: Any) -> dict[str, Any]:
        """Sends one request and returns its result, raising WebServError on an error reply."""
        result, _ = await self.request_timed(op, env, **args)
        return result

    async def request_timed(
        self, op: str, env: str | None = None, **args: Any
    ) -> tuple[dict[str, Any], float]:
        """request, also returning the milliseconds the server spent on it (the rest of the
        round trip is the protocol's and the network's)."""
        if self._ws is None and op != "hello":
            await self.connect()
        ws = self._ws
        if ws is None:
            raise WebServError("connection_lost", "not connected")
        rid = next(self._ids)
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[rid] = fut
        msg: dict[str, Any] = {"id": rid, "op": op, "args": args}
        if env is not None:
            msg["env"] = env
        await ws.send(msgpack.packb(msg, use_bin_type=True))
        try:
            reply = await asyncio.wait_for(fut, self._timeout)
        finally:
            self._pending.pop(rid, None)
        if not reply.get("ok"):
            e = reply.get("error") or {}
            raise WebServError(
                e.get("code", "unknown"),
                e.get("message", "no message"),
                bool(e.get("retryable")),
                float(e.get("retry_after") or 0),
            )
        return reply.get("result") or {}, float(reply.get("server_ms") or 0.0)

    async def request_retrying(
        self, op: str, env: str | None = None, *, attempts: int = 8, **args: Any
    ) -> dict[str, Any]:
        """request, honouring ``capacity`` replies' retry_after with jittered backoff."""
        for i in range(attempts):
            try:
                return await self.request(op, env, **args)
            except WebServError as e:
                if e.code != "capacity" or i == attempts - 1:
                    raise
                await asyncio.sleep(max(e.retry_after, 0.1) * (0.5 + random.random()) * min(2**i, 8))
        raise AssertionError("unreachable")

    async def sites(self) -> list[dict[str, Any]]:
        return (await self.request("sites"))["sites"]

    async def tasks(self, site: str | None = None) -> list[dict[str, Any]]:
        return (await self.request("tasks", site=site) if site else await self.request("tasks"))["tasks"]

    async def stats(self) -> dict[str, Any]:
        return await self.request("stats")

    def env(self, site: str = "open", **make_args: Any) -> AsyncEnv:
        """An environment on this connection; it is made on its first reset."""
        return AsyncEnv(self, site, **make_args)

    async def make_group(
        self,
        n: int,
        site: str = "open",
        *,
        group_key: str | None = None,
        options: dict[str, Any] | None = None,
        **make_args: Any,
    ) -> list[tuple[AsyncEnv, Obs, Info]]:
        """n environments that all start from the same state (a GRPO group).

        They reset together with one group key: the server prepares the start
        state once and gives every other member a fork of it (on sites with
        snapshots), so all n see identical first pages on isolated copies of
        the site. Returns each environment with its first observation and info.
        """
        key = group_key or uuid.uuid4().hex
        envs = [self.env(site, **make_args) for _ in range(n)]
        opts = {**(options or {}), "group_key": key}
        firsts = await asyncio.gather(*(e.reset(options=opts) for e in envs))
        return [(e, o, i) for e, (o, i) in zip(envs, firsts, strict=True)]


class AsyncEnv:
    """One environment. Made lazily by the first ``reset``; ``close`` frees it.

    Observations are dicts with BrowserGym's keys (``goal``, ``url``,
    ``axtree_txt``, ``pruned_html``, ``last_action_error``, ...) and
    WebServ's own (``html``, ``clickable``, ``hoverable``, ``inputs``,
    ``selects``, ``tabs``).
    """

    def __init__(self, client: AsyncClient, site: str = "open", **make_args: Any):
        self.client = client
        self.site = site
        self.make_args = {k: v for k, v in make_args.items() if v is not None}
        self.id: str | None = None
        self._axtree = bool(self.make_args.get("observe", {}).get("axtree", True))

    async def __aenter__(self) -> AsyncEnv:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Obs, Info]:
        """Starts an episode: a fresh browser context at the start URL (or options["start_url"])."""
        args: dict[str, Any] = {"options": options or {}}
        if seed is not None:
            args["seed"] = seed
        if self.id is None:
            observe = {"axtree": self._axtree, **self.make_args.get("observe", {})}
            make = {**self.make_args, "observe": observe, "site": self.site, **args}
            for k in ("start_url", "goal", "task"):
                if options and k in options:
                    make[k] = options[k]
            res = await self.client.request_retrying("make", **make)
            self.id = res["env"]
        else:
            res = await self.client.request("reset", self.id, **args)
        info = dict(res.get("info", {}))
        info["env"] = self.id
        return to_gym(res["obs"], elapsed=0.0), info

    async def step(self, action: str | dict[str, Any]) -> tuple[Obs, float, bool, bool, Info]:
        """Acts, waits for the page to settle, and returns gymnasium's five values."""
        res = await self.client.request("step", self._require(), action=action)
        info = dict(res.get("info", {}))
        obs = to_gym(res["obs"], elapsed=float(info.get("elapsed_s", 0.0)))
        return obs, float(res["reward"]), bool(res["terminated"]), bool(res["truncated"]), info

    async def observe(self, *, screenshot: bool = False, axtree: bool = True) -> Obs:
        """The current observation, without acting."""
        res = await self.client.request(
            "observe", self._require(), observe={"screenshot": screenshot, "axtree": axtree}
        )
        return to_gym(res["obs"], elapsed=0.0)

    async def close(self) -> None:
        """Closes the environment on the server. Safe to call twice."""
        env_id, self.id = self.id, None
        if env_id is not None:
            try:
                await self.client.request("close", env_id)
            except WebServError as e:
                if e.code not in ("unknown_env", "connection_lost"):
                    raise

    def _require(self) -> str:
        if self.id is None:
            raise WebServError("not_reset", "call reset() before step() or observe()")
        return self.id
