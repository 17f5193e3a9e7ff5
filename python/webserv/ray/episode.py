"""One web episode on a fleet, for Ray tasks and actors that run rollouts (``rollout``)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import ray

from .. import rollout as rollouts
from ..client import AsyncClient
from ..handle import AsyncEnv, Obs
from ..options import check_attack
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
    #: Grade every step (``make``'s ``evaluate_every_step``): each reward is the grade's change.
    evaluate_every_step: bool = False
    #: What a change the task did not ask for does to the reward (``make``'s ``side_effects``:
    #: ``report``, ``fail`` or ``off``; None: the task's own, else ``report``).
    side_effects: str | None = None
    #: A prompt injection in the episode's pages and its graded goal (``make``'s ``attack``,
    #: docs/attacks.md); None: none.
    attack: Mapping[str, Any] | None = field(default=None, hash=False)


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
    #: How the episode ended (docs/protocol.md, "How an episode ends"); its last grade.
    end_reason: str = ""
    grade: float | None = None
    #: The last step's plain values of info (its lists and mappings are the fields below).
    info: dict[str, Any] = field(default_factory=dict)
    #: The changes the episode made that its task did not ask for (the ending step's
    #: ``info.side_effects``; docs/tasks.md "Side effects"), and how an answer task graded the
    #: answer (``info.grader``: ``semantics``, ``hackable_by_listing``, ``note``; None otherwise).
    side_effects: list[dict[str, Any]] = field(default_factory=list)
    grader: dict[str, Any] | None = None
    #: The attack's outcome (the ending step's ``info.attack``: ``channel``, ``goal``,
    #: ``succeeded``, ``step``; docs/attacks.md), None without an attack.
    attack: dict[str, Any] | None = None


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

    def act(obs: Obs, history: list[dict[str, Any]]) -> str | Awaitable[str]:
        return policy(obs, [h["action"] for h in history])

    started = time.monotonic()
    make: dict[str, Any] = {"evaluate_every_step": True} if spec.evaluate_every_step else {}
    if spec.side_effects is not None:
        make["side_effects"] = spec.side_effects
    if spec.attack is not None:
        make["attack"] = check_attack(spec.attack)
    out = await rollouts.run(AsyncEnv(client, spec.site, **make), act, spec.max_steps, options=options)
    return Episode(
        spec=spec,
        reward=out.reward,
        steps=out.turns,
        terminated=out.terminated,
        truncated=out.truncated,
        actions=tuple(out.actions),
        env=out.env,
        host=out.host,
        node_id=current_node(),
        group_role=out.group_role,
        first_url=out.first_url,
        seconds=time.monotonic() - started,
        failure=out.failure_record(),
        end_reason=out.end_reason,
        grade=out.grade,
        info={k: v for k, v in out.info.items() if isinstance(v, (str, int, float, bool))},
        side_effects=list(out.info.get("side_effects") or []),
        grader=out.info.get("grader"),
        attack=out.info.get("attack"),
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
