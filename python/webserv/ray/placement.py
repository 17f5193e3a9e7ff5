"""``FleetPlacement``: new environments on the caller's node first, then on the least loaded server."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from typing import Any, Protocol

import ray

from ..errors import ServerUnavailable
from ..placement import PlacementRequest, StatsProbe
from .server import ServerInfo


class Servers(Protocol):
    """What placement needs of a fleet (``Fleet`` is one), declared here so that the fleet
    module depends on placement and not the other way round."""

    name: str
    actor: Any

    def servers(self) -> list[ServerInfo]: ...

    async def servers_async(self) -> list[ServerInfo]: ...

    def lost(self) -> Any: ...


def current_node() -> str | None:
    """The Ray node this process runs on (None outside Ray)."""
    if not ray.is_initialized():
        return None
    return ray.get_runtime_context().get_node_id()


class FleetPlacement:
    """A ``webserv.Placement`` over a fleet's live servers.

    For each new environment: a server on the caller's node that has room
    (``envs_live`` below ``max_envs``), else the least loaded server that
    answers; load counts the environments this client is making there now.
    A group's first member claims its server in the fleet, so the members
    that other clients (other ``AgentLoopWorker``\\ s) make go there too and
    fork the group's one snapshot. The server list comes from the fleet and
    is fetched again after ``refresh`` seconds, or at once when a server did
    not answer.
    """

    def __init__(
        self,
        fleet: Servers,
        *,
        prefer_local: bool = True,
        refresh: float = 2.0,
        probe_timeout: float = 5.0,
        node_id: str | None = None,
    ):
        self.fleet = fleet
        self.prefer_local = prefer_local
        self.refresh_after = refresh
        self.probe_timeout = probe_timeout
        self.node_id = node_id if node_id is not None else current_node()
        self._servers: list[ServerInfo] = []
        self._fetched = 0.0
        self._making: Counter[str] = Counter()
        # One choice at a time: each sees the makes the ones before it sent.
        self._choosing = asyncio.Lock()

    def __repr__(self) -> str:
        return f"FleetPlacement({self.fleet.name!r}, node={self.node_id!r})"

    def urls(self) -> list[str]:
        """The live servers, those on this node first (fetched from the fleet on first use)."""
        if not self._servers:
            self._use(self.fleet.servers())
        return [s.url for s in self._servers]

    async def refresh(self) -> list[ServerInfo]:
        """Fetches the live servers from the fleet now."""
        self._use(await self.fleet.servers_async())
        return list(self._servers)

    def _use(self, servers: list[ServerInfo]) -> None:
        self._servers = sorted(servers, key=lambda s: (s.node_id != self.node_id, s.slot))
        self._fetched = time.monotonic()

    async def place(self, request: PlacementRequest, stats: StatsProbe) -> str:
        async with self._choosing:
            url = await self._choose(request, stats)
            self._making[url] += 1
            return url

    async def _choose(self, request: PlacementRequest, stats: StatsProbe) -> str:
        if not self._servers or time.monotonic() - self._fetched > self.refresh_after:
            await self.refresh()
        servers = list(self._servers)
        local = [s for s in servers if s.node_id == self.node_id] if self.prefer_local else []
        url = await self._least_loaded(local, stats, room_only=True) if local else None
        if url is None:
            url = await self._least_loaded(servers, stats, room_only=False)
        if url is None:
            servers = await self.refresh()
            url = await self._least_loaded(servers, stats, room_only=False)
        if url is None:
            raise ServerUnavailable(
                f"no server of the fleet {self.fleet.name!r} answered ({len(servers)} known: "
                + ", ".join(s.url for s in servers)
                + "); the fleet starts dead servers again: retry shortly, or see fleet.lost()"
            )
        if request.group_key is not None:
            url = await self.fleet.actor.claim_group.remote(request.group_key, url)
        return url

    def settled(self, url: str) -> None:
        """The client's make on ``url`` has ended (the environment is in its stats, or failed)."""
        self._making[url] -= 1
        if self._making[url] <= 0:
            del self._making[url]

    async def _least_loaded(
        self, servers: list[ServerInfo], stats: StatsProbe, *, room_only: bool
    ) -> str | None:
        async def load(s: ServerInfo) -> float:
            try:
                st = await asyncio.wait_for(stats(s.url), self.probe_timeout)
            except asyncio.TimeoutError:
                st = None
            if st is None:
                self._fetched = 0.0  # a server did not answer: ask the fleet again next time
                return float("inf")
            cap = max(float(st.get("max_envs", 1)), 1.0)
            return (float(st.get("envs_live", 0)) + self._making[s.url]) / cap

        if not servers:
            return None
        loads = await asyncio.gather(*(load(s) for s in servers))
        best = min(range(len(servers)), key=lambda i: loads[i])
        if loads[best] == float("inf") or (room_only and loads[best] >= 1.0):
            return None
        return servers[best].url


__all__ = ["FleetPlacement", "current_node"]
