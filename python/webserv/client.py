"""The asyncio client: connections to one or more servers, shared by any number of environments.

The parts: ``connection.Connection`` (one WebSocket), ``placement.Placement``
(which server makes a new environment), ``retry.RetryPolicy`` (what is sent
again), and ``handle.AsyncEnv`` (one environment). ``AsyncClient`` ties them
together and routes every request to the server that holds its environment.
"""

from __future__ import annotations

import asyncio
import uuid
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from .connection import Connection
from .errors import ClientError, ConnectionLost, HostLost, ServerUnavailable, WebServError
from .handle import AsyncEnv, Info, Obs
from .placement import Placement, PlacementRequest, StaticHosts
from .retry import RetryPolicy, idempotent_ops

#: What a server offers, (its sites, its tasks) -> the ids registered for them. Package
#: ``registration`` adds gymnasium's here when it is imported (``import webserv`` does), so
#: every client's first connection to a server registers its ids without this module knowing
#: gymnasium.
OfferListener = Callable[[list[dict[str, Any]], list[dict[str, Any]]], list[str]]
_offer_listeners: list[OfferListener] = []


def add_offer_listener(listen: OfferListener) -> None:
    """Calls ``listen(sites, tasks)`` on every client's first connection to each server."""
    if listen not in _offer_listeners:
        _offer_listeners.append(listen)


class AsyncClient:
    """A client of one or more webserv servers, shared by any number of environments.

    Each server gets one WebSocket; requests for different environments run
    concurrently on it; replies are matched to requests by id.

    With several servers (``urls=[...]``, ``$WEBSERV_URL`` holding a
    comma-separated list, or any ``placement``) each new environment goes
    where the placement says (by default the least-loaded live server), the
    members of a group stay on the first member's server (they share its group
    snapshot), forks stay on their parent's, and every later request of an
    environment goes to its server. An environment whose server is gone raises
    ``HostLost``; new ones go elsewhere.

    Args:
        url: one server (default ``$WEBSERV_URL``; when that is unset too, a local
            ``webserv serve`` is started on first use and stopped at exit).
        urls: several servers (``StaticHosts``).
        placement: any other source of servers (a ``Placement``).
        token: the servers' token, when they have one.
        timeout: seconds to wait for any one reply.
        retry: what is sent again (default: ``capacity`` replies with jittered
            backoff, and lost connections for ops that change nothing).
        keep_envs: keep this client's environments for the server's TTL if its
            connection vanishes (default: the server frees them at once).
        register: register the gymnasium ids of what each server offers (its
            sites and tasks, ``webserv/<site>`` and ``webserv/<task>``) when
            first connected to it.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        urls: Sequence[str] | None = None,
        placement: Placement | None = None,
        token: str | None = None,
        timeout: float = 300.0,
        retry: RetryPolicy | None = None,
        keep_envs: bool = False,
        register: bool = True,
    ):
        if placement is not None and (url or urls):
            raise ValueError("give url, urls or placement, not several")
        self.placement: Placement = placement or StaticHosts(list(urls) if urls else ([url] if url else None))
        self.retry = retry or RetryPolicy()
        self._token = token
        self._timeout = timeout
        self._keep_envs = keep_envs
        self._register = register
        self._conns: dict[str, Connection] = {}
        self._env_host: dict[str, str] = {}
        self._group_host: dict[str, str] = {}
        self._group_placing: dict[str, asyncio.Future[None]] = {}
        self._registered: set[str] = set()  # servers whose offer this client registered

    # -- servers ------------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The default server (the placement's first)."""
        urls = self.placement.urls()
        if not urls:
            raise ServerUnavailable(f"the placement {self.placement!r} has no servers")
        return urls[0]

    @property
    def hello(self) -> dict[str, Any]:
        """The default server's hello (its protocol, sites and limits), once connected."""
        return self.connection(self.url).hello

    def connection(self, url: str) -> Connection:
        """The connection to a server (made on first use)."""
        conn = self._conns.get(url)
        if conn is None:
            conn = self._conns[url] = Connection(
                url, token=self._token, timeout=self._timeout, keep_envs=self._keep_envs
            )
        return conn

    def host_of(self, env: str) -> str | None:
        """The URL of the server that holds an environment of this client."""
        return self._env_host.get(env)

    async def __aenter__(self) -> AsyncClient:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def connect(self) -> None:
        """Connects to the first server that answers (the others on first use)."""
        errors: list[str] = []
        for url in self.placement.urls():
            try:
                await self._connected(self.connection(url))
                return
            except ClientError:
                raise  # a server answered and refused the caller (a wrong token): the caller's to fix
            except WebServError as e:
                errors.append(e.message)
        raise ServerUnavailable("no server answered: " + "; ".join(errors))

    async def close(self) -> None:
        """Closes the connections. Environments stay on their servers until closed or reclaimed."""
        await asyncio.gather(*(c.close() for c in self._conns.values()))

    async def _connected(self, conn: Connection) -> Connection:
        if not conn.connected:
            await conn.connect()
        if self._register and conn.url not in self._registered:
            self._registered.add(conn.url)
            await self._register_offer(conn)
        return conn

    async def _register_offer(self, conn: Connection) -> list[str]:
        try:
            tasks = (await conn.request("tasks")).result.get("tasks") or []
        except WebServError as e:
            warnings.warn(
                f"webserv: {conn.url} did not list its tasks ({e}); only its sites are registered",
                stacklevel=2,
            )
            tasks = []
        ids: list[str] = []
        for listen in _offer_listeners:
            ids += listen(conn.hello.get("sites") or [], tasks)
        return ids

    async def register_envs(self) -> list[str]:
        """Registers the gymnasium ids of the default server's sites and tasks, and returns them."""
        conn = self.connection(self.url)
        if not conn.connected:
            await conn.connect()
        self._registered.add(conn.url)
        return await self._register_offer(conn)

    # -- requests -----------------------------------------------------------------------------------

    async def request(self, op: str, env: str | None = None, **args: Any) -> dict[str, Any]:
        """Sends one request and returns its result, raising the error class of an error reply."""
        result, _ = await self.request_timed(op, env, **args)
        return result

    async def request_timed(
        self, op: str, env: str | None = None, **args: Any
    ) -> tuple[dict[str, Any], float]:
        """request, also returning the milliseconds the server spent on it (the rest of the
        round trip is the protocol's and the network's)."""
        url, placed = await self._route(op, env, args)
        conn = self.connection(url)

        async def send() -> tuple[dict[str, Any], float]:
            reply = await (await self._connected(conn)).request(op, env, args)
            return reply.result, reply.server_ms

        try:
            result, ms = await self.retry.run(op, send, lambda: idempotent_ops(conn.hello))
        except (ConnectionLost, ServerUnavailable) as e:
            if env is not None:
                raise HostLost(
                    f"the server {url} holding environment {env} is gone or unreachable ({e.message}); "
                    "the environment is lost with it: make a new one"
                ) from e
            raise
        finally:
            settled = getattr(self.placement, "settled", None) if placed else None
            if settled is not None:
                settled(url)
        if op == "make":
            self._env_host[result["env"]] = url
        elif op == "fork":
            for f in result.get("envs", []):
                self._env_host[f["env"]] = url
        elif op == "close" and env is not None:
            self._env_host.pop(env, None)
        return result, ms

    async def request_retrying(self, op: str, env: str | None = None, **args: Any) -> dict[str, Any]:
        """request (kept for compatibility: every request follows the client's RetryPolicy)."""
        args.pop("attempts", None)
        return await self.request(op, env, **args)

    async def _route(self, op: str, env: str | None, args: dict[str, Any]) -> tuple[str, bool]:
        """The server of a request, and whether the placement chose it (then its optional
        ``settled(url)`` hook hears when the make ended)."""
        if op == "make":
            key = (args.get("options") or {}).get("group_key")
            request = PlacementRequest(site=str(args.get("site", "open")), group_key=key, args=dict(args))
            if key is None:
                return await self.placement.place(request, self._probe), True
            # A group is placed once: members made meanwhile wait for the first one's server.
            while key not in self._group_host:
                placing = self._group_placing.get(key)
                if placing is None:
                    break
                await asyncio.shield(placing)
            if key in self._group_host:
                return self._group_host[key], False
            placing = self._group_placing[key] = asyncio.get_running_loop().create_future()
            try:
                url = await self.placement.place(request, self._probe)
                self._group_host[key] = url
                return url, True
            finally:
                del self._group_placing[key]
                placing.set_result(None)
        if env is not None and env in self._env_host:
            return self._env_host[env], False
        return self.url, False

    async def _probe(self, url: str) -> dict[str, Any] | None:
        try:
            return (await (await self._connected(self.connection(url))).request("stats")).result
        except WebServError:
            return None

    # -- what the servers offer -------------------------------------------------------------------------

    async def sites(self) -> list[dict[str, Any]]:
        """The default server's sites: ``{name, description, backend}``."""
        return (await self.request("sites"))["sites"]

    async def tasks(self, site: str | None = None) -> list[dict[str, Any]]:
        """The default server's tasks (of one site, or all): ``{id, site, goal, start_url, ...}``."""
        return (await self.request("tasks", site=site) if site else await self.request("tasks"))["tasks"]

    async def actions(self) -> dict[str, Any]:
        """The action grammar, from the server's one action table: ``actions`` (each with its call
        name, typed arguments, description and example) and ``describe``, the whole as prompt text
        in the manner of BrowserGym's action-space description."""
        return await self.request("actions")

    async def stats(self) -> dict[str, Any]:
        """The default server's stats (see host_stats for all)."""
        return await self.request("stats")

    async def host_stats(self) -> dict[str, dict[str, Any]]:
        """Every server's stats, by URL (an unreachable one maps to its error)."""

        async def one(url: str) -> dict[str, Any]:
            try:
                return (await (await self._connected(self.connection(url))).request("stats")).result
            except WebServError as e:
                return {"error": e.message}

        urls = list(self.placement.urls())
        return dict(zip(urls, await asyncio.gather(*(one(u) for u in urls)), strict=True))

    # -- environments -------------------------------------------------------------------------------------

    def env(self, site: str = "open", **make_args: Any) -> AsyncEnv:
        """An environment of this client; it is made on its first reset."""
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


__all__ = ["AsyncClient", "AsyncEnv", "Info", "Obs"]
