"""``Fleet``: WebServ servers across a Ray cluster, found by name.

A fleet is a named, detached Ray actor (``FleetActor``) that keeps one
``WebServServer`` actor per node (or per N CPUs of a node) and so one
``webserv serve`` there. It watches the cluster: nodes that join get
servers, servers that die are started again by their actors, and every
death is recorded with the environments it took (``Fleet.lost``). Any
process of the cluster finds the fleet by name (``Fleet.get``), and
``fleet.client()`` gives an ``AsyncClient`` over its live servers.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from ..client import AsyncClient
from ..errors import ServerUnavailable
from .placement import FleetPlacement
from .server import ServerInfo, ServerLoss, WebServServer

#: The Ray namespace fleets live in, so that drivers of other jobs find them by name.
NAMESPACE = "webserv"

#: Group keys remembered per fleet (oldest forgotten first).
_MAX_GROUPS = 100_000


@dataclass(frozen=True)
class FleetConfig:
    """How a fleet places and runs its servers (see ``Fleet.start``)."""

    servers_per_node: int = 1
    per_cpus: float | None = None
    cpus_per_server: float = 1.0
    node_resource: str | None = None
    serve_args: tuple[str, ...] = ()
    binary: str | None = None
    host: str | None = None
    poll: float = 1.0
    token: str = field(default_factory=lambda: secrets.token_urlsafe(24))

    def slots(self, node: dict[str, Any]) -> int:
        """How many servers this node gets (0 when it lacks ``node_resource``)."""
        resources = node.get("Resources") or {}
        if self.node_resource and resources.get(self.node_resource, 0) <= 0:
            return 0
        if self.per_cpus:
            return max(1, int(float(resources.get("CPU", 0)) // self.per_cpus))
        return self.servers_per_node


class FleetActor:
    """The fleet's state, in one detached actor (use through ``Fleet``)."""

    def __init__(self, name: str, config: FleetConfig):
        self.name = name
        self.config = config
        self._servers: dict[str, Any] = {}  # slot -> WebServServer actor handle
        self._info: dict[str, ServerInfo] = {}  # slot -> as last seen
        self._losses: list[ServerLoss] = []
        self._seen_restarts: dict[str, int] = {}
        self._groups: OrderedDict[str, str] = OrderedDict()
        self._monitor: asyncio.Task[None] | None = None

    # -- what clients ask -------------------------------------------------------------------------

    async def ready(self, timeout: float) -> list[ServerInfo]:
        """Waits until every slot's server answers; raises saying which did not."""
        self._ensure_monitor()
        deadline = time.monotonic() + timeout
        while True:
            await self._reconcile()
            await self._look()
            pending = [s for s in self._servers if not self._info.get(s, _NONE).alive]
            if self._servers and not pending:
                return self.servers()
            if time.monotonic() > deadline:
                what = ", ".join(pending) or "no node qualifies"
                raise TimeoutError(
                    f"fleet {self.name!r}: servers not up after {timeout:.0f}s ({what}). "
                    f"Each server needs {self.config.cpus_per_server} free CPU on its node"
                    + (
                        f" and the node resource {self.config.node_resource!r}"
                        if self.config.node_resource
                        else ""
                    )
                    + "; lower cpus_per_server, free CPUs, or read the actor's log (ray logs)."
                )
            await asyncio.sleep(0.2)

    def servers(self) -> list[ServerInfo]:
        """The live servers."""
        self._ensure_monitor()
        return [i for i in self._info.values() if i.alive and i.url]

    def token(self) -> str:
        return self.config.token

    def lost(self, since: float = 0.0) -> list[ServerLoss]:
        """Servers that died (at or after ``since``, a Unix time), with the environments they held."""
        return [x for x in self._losses if x.at >= since]

    def claim_group(self, key: str, url: str) -> str:
        """The server of a group: the first claim's ``url`` while that server lives, else this one."""
        held = self._groups.get(key)
        if held is not None and any(i.url == held and i.alive for i in self._info.values()):
            self._groups.move_to_end(key)
            return held
        self._groups[key] = url
        if len(self._groups) > _MAX_GROUPS:
            self._groups.popitem(last=False)
        return url

    async def shutdown(self) -> None:
        """Stops every server (the caller then kills this actor)."""
        if self._monitor is not None:
            self._monitor.cancel()
        await asyncio.gather(*(a.stop.remote() for a in self._servers.values()), return_exceptions=True)
        for a in self._servers.values():
            ray.kill(a)
        self._servers.clear()
        self._info.clear()

    # -- watching the cluster ---------------------------------------------------------------------

    def _ensure_monitor(self) -> None:
        if self._monitor is None or self._monitor.done():
            self._monitor = asyncio.get_running_loop().create_task(self._watch())

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(self.config.poll)
            try:
                await self._reconcile()
                await self._look()
            except Exception:  # one bad look must not end the watch
                continue

    async def _reconcile(self) -> None:
        """One server actor per slot of every live node that qualifies; slots of dead nodes dropped."""
        nodes = await asyncio.to_thread(ray.nodes)
        live: set[str] = set()
        for node in nodes:
            if not node.get("Alive"):
                continue
            for i in range(self.config.slots(node)):
                slot = f"{node['NodeID']}/{i}"
                live.add(slot)
                if slot not in self._servers:
                    self._servers[slot] = self._start(slot, node["NodeID"])
        for slot in [s for s in self._servers if s not in live]:
            self._record_gone(slot, "its node left the cluster")
            ray.kill(self._servers.pop(slot))
            self._info.pop(slot, None)

    def _start(self, slot: str, node_id: str) -> Any:
        c = self.config
        actor = ray.remote(WebServServer).options(
            num_cpus=c.cpus_per_server,
            scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=node_id, soft=False),
            max_restarts=-1,
            name=f"{self.name}/server/{slot}",
            namespace=NAMESPACE,
        )
        return actor.remote(
            slot, c.token, host=c.host, serve_args=list(c.serve_args), binary=c.binary, poll=c.poll
        )

    async def _look(self) -> None:
        """Asks every server actor how its server is; records deaths it did not see itself."""

        async def one(slot: str, actor: Any) -> None:
            try:
                info: ServerInfo = await asyncio.wait_for(_awaitable(actor.info.remote()), 10)
            except Exception:
                self._record_gone(slot, "its actor stopped answering (the actor or its node died)")
                return
            before = self._info.get(slot)
            if before is not None and before.alive and before.incarnation != info.incarnation:
                self._record_gone(slot, "its actor was started again by Ray")
            if info.restarts != self._seen_restarts.get(slot, 0):
                self._seen_restarts[slot] = info.restarts
                reported = await _awaitable(actor.lost.remote())
                known = {(x.slot, x.url) for x in self._losses}
                for loss in reported:
                    if (loss.slot, loss.url) not in known:
                        self._losses.append(loss)
            self._info[slot] = info

        await asyncio.gather(*(one(s, a) for s, a in list(self._servers.items())))

    def _record_gone(self, slot: str, reason: str) -> None:
        info = self._info.get(slot)
        if info is None or not info.alive:
            return
        self._losses.append(
            ServerLoss(
                slot=slot, node_id=info.node_id, url=info.url, at=time.time(), reason=reason, envs=info.envs
            )
        )
        self._info[slot] = replace(info, alive=False)


_NONE = ServerInfo(slot="", node_id="", url="", pid=0, alive=False, restarts=0)


async def _awaitable(ref: Any) -> Any:
    return await ref


class Fleet:
    """A handle on a fleet: picklable, cheap, and the same in every process that asks for it by name.

    Start one from the driver (or join the one running under that name)::

        fleet = webserv.ray.Fleet.start("webserv", cpus_per_server=2)

    and in any actor or task of the cluster (verl's ``AgentLoopWorker``\\ s)::

        fleet = webserv.ray.Fleet.get("webserv")
        async with fleet.client() as client:
            env = client.env("shopping")
    """

    def __init__(self, actor: Any, name: str, namespace: str = NAMESPACE):
        self.actor = actor
        self.name = name
        self.namespace = namespace
        self._token: str | None = None

    def __repr__(self) -> str:
        return f"Fleet({self.name!r})"

    @classmethod
    def start(
        cls,
        name: str = "webserv",
        *,
        servers_per_node: int = 1,
        per_cpus: float | None = None,
        cpus_per_server: float = 1.0,
        node_resource: str | None = None,
        serve_args: Sequence[str] = (),
        binary: str | None = None,
        host: str | None = None,
        token: str | None = None,
        poll: float = 1.0,
        timeout: float = 120.0,
    ) -> Fleet:
        """Starts the fleet ``name`` (or joins it, unchanged, when it runs already) and waits for its servers.

        Args:
            name: the fleet's name in the cluster (``Fleet.get(name)`` finds it).
            servers_per_node: servers on each node (one ``webserv serve`` each).
            per_cpus: instead, one server per this many CPUs of each node.
            cpus_per_server: Ray CPUs each server reserves, so trainers and servers
                do not oversubscribe a node (a server runs Chromium: about one core
                per 8-16 busy environments).
            node_resource: only nodes with this custom resource get servers
                (``ray start --resources='{"webserv": 1}'``), to keep them off GPU nodes.
            serve_args: more ``webserv serve`` flags (``--max-envs 16``, ``--sites DIR``).
            binary: the server binary on every node (default: found as the package finds it).
            host: the address servers bind (default: each node's address as Ray knows it).
            token: the servers' token (default: a fresh random one).
            poll: seconds between looks at each server.
            timeout: seconds to wait for every server to answer.
        """
        config = FleetConfig(
            servers_per_node=servers_per_node,
            per_cpus=per_cpus,
            cpus_per_server=cpus_per_server,
            node_resource=node_resource,
            serve_args=tuple(serve_args),
            binary=binary,
            host=host,
            poll=poll,
            **({"token": token} if token else {}),
        )
        actor = (
            ray.remote(FleetActor)
            .options(
                name=name,
                namespace=NAMESPACE,
                lifetime="detached",
                get_if_exists=True,
                num_cpus=0,
                max_restarts=-1,
            )
            .remote(name, config)
        )
        fleet = cls(actor, name)
        ray.get(actor.ready.remote(timeout))  # ty: ignore  # a Ray actor handle's method
        return fleet

    @classmethod
    def get(cls, name: str = "webserv") -> Fleet:
        """The running fleet ``name``, from any driver, actor or task of the cluster."""
        try:
            actor = ray.get_actor(name, namespace=NAMESPACE)
        except ValueError as e:
            raise ServerUnavailable(
                f"no WebServ fleet named {name!r} in this Ray cluster (namespace {NAMESPACE!r}); "
                "start one with webserv.ray.Fleet.start(name)"
            ) from e
        return cls(actor, name)

    @property
    def token(self) -> str:
        """The servers' token (clients of ``client()`` send it)."""
        if self._token is None:
            self._token = ray.get(self.actor.token.remote())
        return self._token

    def servers(self) -> list[ServerInfo]:
        """The live servers, as the fleet last saw them."""
        return ray.get(self.actor.servers.remote())

    async def servers_async(self) -> list[ServerInfo]:
        return await self.actor.servers.remote()

    def urls(self) -> list[str]:
        """The live servers' URLs."""
        return [s.url for s in self.servers()]

    def lost(self, since: float = 0.0) -> list[ServerLoss]:
        """Servers that died (at or after ``since``), each with the environments it took along."""
        return ray.get(self.actor.lost.remote(since))

    def wait(self, timeout: float = 120.0) -> list[ServerInfo]:
        """Waits until every server answers (after a node joined, or a server was started again)."""
        return ray.get(self.actor.ready.remote(timeout))

    def client(self, *, prefer_local: bool = True, **client_args: Any) -> AsyncClient:
        """An ``AsyncClient`` over the fleet's live servers (``FleetPlacement``).

        New environments go to a server on the caller's node while it has room
        (``prefer_local``), else to the least loaded; a group's members go where
        its first member went, in every client of the fleet. Other arguments are
        ``AsyncClient``'s (``timeout``, ``retry``, ``keep_envs``, ...).
        """
        return AsyncClient(
            placement=FleetPlacement(self, prefer_local=prefer_local), token=self.token, **client_args
        )

    async def client_async(self, *, prefer_local: bool = True, **client_args: Any) -> AsyncClient:
        """``client()`` without blocking the event loop (inside async actors: verl's workers)."""
        if self._token is None:
            self._token = await self.actor.token.remote()
        placement = FleetPlacement(self, prefer_local=prefer_local)
        await placement.refresh()
        return AsyncClient(placement=placement, token=self._token, **client_args)

    def shutdown(self) -> None:
        """Stops every server and the fleet's actor."""
        try:
            ray.get(self.actor.shutdown.remote())
        finally:
            ray.kill(self.actor)


__all__ = ["NAMESPACE", "Fleet", "FleetActor", "FleetConfig"]
