"""WebServ on Ray: a fleet of servers that lives in the trainer's Ray cluster.

``pip install 'webserv[ray]'``. One ``webserv serve`` runs per node (or per
N CPUs) as a Ray actor that owns the process; a named, detached ``Fleet``
actor keeps them, starts dead ones again and says which environments each
death took. Every process of the cluster finds the fleet by name::

    import webserv.ray

    fleet = webserv.ray.Fleet.start("webserv", cpus_per_server=2)   # the driver, once

    fleet = webserv.ray.Fleet.get("webserv")      # any actor or task (verl's AgentLoopWorkers)
    async with fleet.client() as client:          # node-local first, then the least loaded
        group = await client.make_group(8, "shopping", options={"task": "shopping.3"})

The parts: ``Fleet`` (start, find, servers, losses), ``FleetPlacement``
(where new environments go), ``EnvironmentPool`` (acquire/release, for
trainers that lease environments), ``webserv.ray.verl`` (the ``"webserv"``
agent loop for verl) and ``rollout`` (a plain ``ray.remote`` rollout).
See docs/ray.md.
"""

from __future__ import annotations

try:
    import ray as _ray  # noqa: F401
except ImportError as e:  # pragma: no cover - depends on the install
    raise ImportError(
        "webserv.ray needs Ray: pip install 'webserv[ray]' (or pip install ray) on every node"
    ) from e

from .episode import Episode, EpisodeSpec, Policy, rollout, run_episode, run_episodes
from .fleet import NAMESPACE, Fleet, FleetActor, FleetConfig
from .placement import FleetPlacement, current_node
from .pool import EnvironmentPool, Lease, RemoteEnvironmentPool, StepResult, page_text
from .server import ServerInfo, ServerLoss, WebServServer

__all__ = [
    "NAMESPACE",
    "EnvironmentPool",
    "Episode",
    "EpisodeSpec",
    "Fleet",
    "FleetActor",
    "FleetConfig",
    "FleetPlacement",
    "Lease",
    "Policy",
    "RemoteEnvironmentPool",
    "ServerInfo",
    "ServerLoss",
    "StepResult",
    "WebServServer",
    "current_node",
    "page_text",
    "rollout",
    "run_episode",
    "run_episodes",
]
