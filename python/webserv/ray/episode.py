"""One web episode on a fleet, for Ray tasks and actors that run rollouts (``rollout``)."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import ray

from ..client import AsyncClient
from ..errors import InfrastructureError
from ..handle import AsyncEnv, Obs
from .fleet import Fleet
from .placement import current_node

#: A policy: the observation and the actions so far -> the next action (plain or async).
Policy = Callable[[Obs, list[str]], "str | Awaitable[str]"]


@dataclass(frozen=True)
class EpisodeSpec:
    """What to run: a task (or start URL) on a site, in a group or alone, with a step budget."""

    site: str = "shopping"
    task: str | None = None
    start_url: str | None = None
    goal: str | None = None
    group_key: str | None = None
    max_steps: int = 10


@dataclass(frozen=True)
class Episode:
    """What happened: the reward (None when the environment failed: never a score), where, and why."""

    spec: EpisodeSpec
    reward: float | None
    steps: int
    terminated: bool
    truncated: bool
    actions: tuple[str, ...]
    env: str | None
    host: str | None
    node_id: str | None
    group_role: str = ""
    first_url: str = ""
    seconds: float = 0.0
    #: ``{code, fault, message}`` of the InfrastructureError that ended the episode.
    failure: dict[str, Any] | None = None
    info: dict[str, Any] = field(default_factory=dict)


async def run_episode(client: AsyncClient, spec: EpisodeSpec, policy: Policy) -> Episode:
    """Runs one episode and closes its environment; an InfrastructureError is reported, not raised."""
    options: dict[str, Any] = {}
    for key, value in (
        ("task", spec.task),
        ("start_url", spec.start_url),
        ("goal", spec.goal),
        ("group_key", spec.group_key),
    ):
        if value is not None:
            options[key] = value
    env = AsyncEnv(client, spec.site)
    actions: list[str] = []
    reward, terminated, truncated, role, first_url, host = 0.0, False, False, "", "", None
    failure: dict[str, Any] | None = None
    info: dict[str, Any] = {}
    started = time.monotonic()
    try:
        obs, info = await env.reset(options=options)
        host, role, first_url = env.host, str(info.get("group_role", "")), str(obs.get("url", ""))
        while len(actions) < spec.max_steps and not (terminated or truncated):
            action = policy(obs, list(actions))
            if inspect.isawaitable(action):
                action = await action
            actions.append(str(action))
            obs, r, terminated, truncated, info = await env.step(str(action))
            reward += r
    except InfrastructureError as e:
        failure = {"code": e.code, "fault": e.fault, "message": e.message}
    finally:
        env_id = env.id
        await env.close()
    return Episode(
        spec=spec,
        reward=None if failure else reward,
        steps=len(actions),
        terminated=terminated,
        truncated=truncated,
        actions=tuple(actions),
        env=env_id,
        host=host,
        node_id=current_node(),
        group_role=role,
        first_url=first_url,
        seconds=time.monotonic() - started,
        failure=failure,
        info={k: v for k, v in info.items() if isinstance(v, (str, int, float, bool))},
    )


async def run_episodes(fleet: Fleet | str, specs: Sequence[EpisodeSpec], policy: Policy) -> list[Episode]:
    """Runs the episodes at once over one client of the fleet (as one verl AgentLoopWorker would)."""
    fleet = Fleet.get(fleet) if isinstance(fleet, str) else fleet
    client = await fleet.client_async()
    try:
        return list(await asyncio.gather(*(run_episode(client, s, policy) for s in specs)))
    finally:
        await client.close()


def _rollout(fleet: str, specs: Sequence[EpisodeSpec], policy: Policy) -> list[Episode]:
    return asyncio.run(run_episodes(fleet, specs, policy))


#: A plain Ray task: ``ray.get(rollout.remote("webserv", specs, policy))`` runs the episodes at
#: once on the node Ray picks (``rollout.options(...)`` to choose), each placed by the fleet.
rollout = ray.remote(num_cpus=0)(_rollout)

__all__ = ["Episode", "EpisodeSpec", "Policy", "rollout", "run_episode", "run_episodes"]
