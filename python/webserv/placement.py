"""Where new environments go: the ``Placement`` protocol and the default, a fixed list of servers.

The client asks its placement for a server whenever it makes an environment;
everything after that (steps, snapshots, forks, close) goes to the server that
holds the environment, and the members of a group (one ``group_key``) to the
server of the first member. So a placement only chooses, and any source of
hosts can be one: a fixed list (``StaticHosts``), a service registry, or a
Ray fleet whose actors each run ``webserv serve``::

    class RayFleet:
        def urls(self) -> list[str]:
            return ray.get(self.registry.urls.remote())

        async def place(self, request: PlacementRequest, stats: StatsProbe) -> str:
            return await self.registry.least_loaded.remote(request.site)

    client = webserv.AsyncClient(placement=RayFleet(...))

(``webserv.ray.FleetPlacement`` is the real one.) A placement may also have
``settled(url)``: the client calls it when a make the placement sent to
``url`` has ended, so the placement can count makes in flight (many
environments made at once would otherwise all see the same loads and go
to one server).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from .errors import ServerUnavailable
from .launcher import server_url


@dataclass(frozen=True)
class PlacementRequest:
    """What is being placed: one new environment (``make``)."""

    site: str
    #: The group the environment joins, if any (members after the first go where the first went).
    group_key: str | None = None
    #: make's arguments (task, start_url, ...), for placements that route by them.
    args: Mapping[str, Any] = field(default_factory=dict)


#: Asks one server for its ``stats`` (``envs_live``, ``max_envs``, ...); None when it does not answer.
StatsProbe = Callable[[str], Awaitable["dict[str, Any] | None"]]


@runtime_checkable
class Placement(Protocol):
    """A source of servers and the choice among them for each new environment."""

    def urls(self) -> Sequence[str]:
        """The servers known now, first the default one (for ``sites``, ``tasks``, ``stats``)."""
        ...

    async def place(self, request: PlacementRequest, stats: StatsProbe) -> str:
        """The URL of the server that makes this environment.

        Raises ``ServerUnavailable`` when no server can take it.
        """
        ...


class StaticHosts:
    """A fixed list of servers; each new environment goes to the least loaded one that answers.

    Load is ``envs_live / max_envs`` from each server's ``stats``, counting the
    makes this placement sent there that have not ended yet. With one
    server there is nothing to choose and nothing is asked. Without URLs the
    servers are ``$WEBSERV_URL`` (comma-separated), or a local ``webserv serve``
    started on first use.
    """

    def __init__(self, urls: Sequence[str] | None = None, *, probe_timeout: float = 5.0):
        self._urls = [u for u in urls or () if u]
        self.probe_timeout = probe_timeout
        self._making: Counter[str] = Counter()  # makes sent to each server and not ended yet
        self._choosing = asyncio.Lock()  # one choice at a time: each sees the makes before it

    def urls(self) -> Sequence[str]:
        if not self._urls:
            self._urls = [u.strip() for u in server_url().split(",") if u.strip()]
        return self._urls

    async def place(self, request: PlacementRequest, stats: StatsProbe) -> str:
        urls = list(self.urls())
        if len(urls) == 1:
            return urls[0]
        async with self._choosing:
            url = await self._least_loaded(urls, stats)
            self._making[url] += 1
            return url

    def settled(self, url: str) -> None:
        """A make this placement sent to ``url`` has ended."""
        self._making[url] -= 1
        if self._making[url] <= 0:
            del self._making[url]

    async def _least_loaded(self, urls: list[str], stats: StatsProbe) -> str:

        async def load(url: str) -> float:
            try:
                st = await asyncio.wait_for(stats(url), self.probe_timeout)
            except asyncio.TimeoutError:
                return float("inf")
            if st is None:
                return float("inf")
            return (float(st.get("envs_live", 0)) + self._making[url]) / max(
                float(st.get("max_envs", 1)), 1.0
            )

        loads = await asyncio.gather(*(load(u) for u in urls))
        best = min(range(len(urls)), key=lambda i: loads[i])
        if loads[best] == float("inf"):
            raise ServerUnavailable("no server answered: " + ", ".join(urls))
        return urls[best]


__all__ = ["Placement", "PlacementRequest", "StaticHosts", "StatsProbe"]
