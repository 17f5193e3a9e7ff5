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


class _Conn:
    """One WebSocket to one server: many requests in flight, replies matched by id."""

    def __init__(self, url: str, token: str | None, timeout: float):
        self.url = url
        self._token = token
        self._timeout = timeout
        self._ws: ClientConnection | None = None
        self._reader: asyncio.Task[None] | None = None
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._ids = itertools.count(1)
        self._lock = asyncio.Lock()
        self.hello: dict[str, Any] = {}

    async def connect(self) -> None:
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
        self.hello, _ = await self.request_timed("hello", **args)

    async def close(self) -> None:
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
                            f"the connection to {self.url} closed before the reply came; "
                            "the request may or may not have run",
                            retryable=True,
                        )
                    )
            self._pending.clear()

    async def request_timed(
        self, op: str, env: str | None = None, **args: Any
    ) -> tuple[dict[str, Any], float]:
        if self._ws is None and op != "hello":
            await self.connect()
        ws = self._ws
        if ws is None:
            raise WebServError("connection_lost", f"not connected to {self.url}")
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


class AsyncClient:
    """A client of one or more webserv servers, shared by any number of environments.

    Each server gets one WebSocket; requests for different environments run
    concurrently; replies are matched to requests by id. If a connection
    drops, the next request reconnects: environments belong to the server
    and survive it.

    With several servers (``urls=[...]``, or ``$WEBSERV_URL`` holding a
    comma-separated list) each new environment goes to the least-loaded live
    server (by its ``stats``), the members of a group stay on one server (so
    they share its group snapshot), and every later request of an
    environment goes to its server. An environment whose server is gone
    raises ``WebServError("host_lost", ...)``; new ones go elsewhere.

    ``url`` defaults to ``$WEBSERV_URL``; when that is unset too, a local
    ``webserv serve`` is started and stopped at exit.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        urls: list[str] | None = None,
        token: str | None = None,
        timeout: float = 300.0,
    ):
        self._urls = list(urls) if urls else ([url] if url else None)
        self._token = token
        self._timeout = timeout
        self._conns: list[_Conn] = []
        self._env_conn: dict[str, _Conn] = {}
        self._group_conn: dict[str, _Conn] = {}

    @property
    def url(self) -> str:
        return self._hosts()[0].url

    @property
    def hello(self) -> dict[str, Any]:
        return self._hosts()[0].hello

    def _hosts(self) -> list[_Conn]:
        if not self._conns:
            urls = self._urls or [u.strip() for u in server_url().split(",") if u.strip()]
            self._conns = [_Conn(u, self._token, self._timeout) for u in urls]
        return self._conns

    async def __aenter__(self) -> AsyncClient:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def connect(self) -> None:
        """Connects to the first server that answers (the others on first use)."""
        errors: list[str] = []
        for c in self._hosts():
            try:
                await c.connect()
                return
            except WebServError as e:
                errors.append(e.message)
        raise WebServError("unavailable", "no server answered: " + "; ".join(errors))

    async def close(self) -> None:
        """Closes the connections. Environments stay on their servers until closed or reclaimed."""
        await asyncio.gather(*(c.close() for c in self._conns))

    async def _place(self, args: dict[str, Any]) -> _Conn:
        """The server for a new environment: its group's, or the least loaded."""
        hosts = self._hosts()
        key = (args.get("options") or {}).get("group_key")
        if key is not None and key in self._group_conn:
            return self._group_conn[key]
        if len(hosts) == 1:
            chosen = hosts[0]
        else:

            async def load(c: _Conn) -> float:
                try:
                    st, _ = await asyncio.wait_for(c.request_timed("stats"), 5)
                    return float(st.get("envs_live", 0)) / max(float(st.get("max_envs", 1)), 1.0)
                except (WebServError, OSError, asyncio.TimeoutError):
                    return float("inf")

            loads = await asyncio.gather(*(load(c) for c in hosts))
            best = min(range(len(hosts)), key=lambda i: loads[i])
            if loads[best] == float("inf"):
                raise WebServError("unavailable", "no server answered: " + ", ".join(c.url for c in hosts))
            chosen = hosts[best]
        if key is not None:
            self._group_conn.setdefault(key, chosen)
            chosen = self._group_conn[key]
        return chosen

    async def request(self, op: str, env: str | None = None, **args: Any) -> dict[str, Any]:
        """Sends one request and returns its result, raising WebServError on an error reply."""
        result, _ = await self.request_timed(op, env, **args)
        return result

    async def request_timed(
        self, op: str, env: str | None = None, **args: Any
    ) -> tuple[dict[str, Any], float]:
        """request, also returning the milliseconds the server spent on it (the rest of the
        round trip is the protocol's and the network's)."""
        if op == "make":
            conn = await self._place(args)
        elif env is not None and env in self._env_conn:
            conn = self._env_conn[env]
        else:
            conn = self._hosts()[0]
        try:
            result, ms = await conn.request_timed(op, env, **args)
        except WebServError as e:
            if env is not None and e.code in ("unavailable", "connection_lost") and len(self._hosts()) > 1:
                raise WebServError(
                    "host_lost",
                    f"the server {conn.url} holding environment {env} is gone ({e.message}); "
                    "make a new environment",
                ) from e
            raise
        if op == "make":
            self._env_conn[result["env"]] = conn
        elif op == "fork":
            for f in result.get("envs", []):
                self._env_conn[f["env"]] = conn
        elif op == "close" and env is not None:
            self._env_conn.pop(env, None)
        return result, ms

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
        """The first server's stats (see host_stats for all)."""
        return await self.request("stats")

    async def host_stats(self) -> dict[str, dict[str, Any]]:
        """Every server's stats, by URL (an unreachable one maps to its error)."""

        async def one(c: _Conn) -> dict[str, Any]:
            try:
                return (await c.request_timed("stats"))[0]
            except WebServError as e:
                return {"error": e.message}

        hosts = self._hosts()
        return dict(zip((c.url for c in hosts), await asyncio.gather(*(one(c) for c in hosts)), strict=True))

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
        options = dict(options or {})
        if "task_id" in options:  # BrowserGym's spelling
            options["task"] = str(options.pop("task_id"))
        args: dict[str, Any] = {"options": options}
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
        # A grading that failed (judge down, site unreachable) has no reward:
        # NaN, never a silent 0, with the reason in info["eval_error"].
        reward = float("nan") if res["reward"] is None else float(res["reward"])
        return obs, reward, bool(res["terminated"]), bool(res["truncated"]), info

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
