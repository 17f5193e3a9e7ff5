"""``EnvironmentPool``: acquire an environment reset to a task, step it, release it (a Ray actor).

The shape Ray-based trainers already use for environments (open-instruct's
``EnvironmentPool``: a shared actor that hands out environments and takes
them back, ``acquire`` waiting while all are out): here the environments
are WebServ environments on a fleet, so one pool actor serves any number of
rollout workers without an actor per environment. Released environments
are reset for the next lease instead of made again; one whose server died
is dropped, and the next lease gets a new environment on a live server.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field
from typing import Any

import ray

from .. import rollout
from ..client import AsyncClient
from ..errors import HostLost, InfrastructureError, UnknownEnv
from ..handle import AsyncEnv, Obs
from ..prompt import page_text, render
from .fleet import Fleet


@dataclass(frozen=True)
class Lease:
    """An acquired environment, reset to its task: pass ``lease.id`` to ``step`` and ``release``."""

    id: str
    env: str
    host: str
    goal: str
    url: str
    #: The first page as a model reads it, the goal first (``webserv.prompt.render``).
    observation: str
    info: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class StepResult:
    """One step: the page as text, the step's reward, and whether the episode is over."""

    result: str
    reward: float
    done: bool
    url: str
    info: dict[str, Any] = field(default_factory=dict)


class EnvironmentPool:
    """Environments of one site on a fleet, leased one rollout at a time (use as a Ray actor).

    Args:
        pool_size: environments out at once at most; ``acquire`` waits for a release beyond it.
        site: their site (``shopping``, ``cms``, a site of ``--sites``, ``open``).
        fleet: the fleet's name.
        acquire_timeout: seconds ``acquire`` waits before raising ``TimeoutError``.
        make_args: ``make``'s arguments for every environment (``max_steps``, ``observe``, ...).
    """

    def __init__(
        self,
        pool_size: int,
        site: str = "shopping",
        *,
        fleet: str = "webserv",
        acquire_timeout: float = 300.0,
        make_args: dict[str, Any] | None = None,
    ):
        self.pool_size = pool_size
        self.site = site
        self.fleet_name = fleet
        self.acquire_timeout = acquire_timeout
        self.make_args = dict(make_args or {})
        self._client: AsyncClient | None = None
        self._slots: asyncio.Semaphore | None = None
        self._idle: list[AsyncEnv] = []
        self._leased: dict[str, AsyncEnv] = {}
        self.replaced = 0  # environments dropped because their server was gone

    async def _ready(self) -> AsyncClient:
        if self._client is None:
            self._slots = asyncio.Semaphore(self.pool_size)
            self._client = await Fleet.get(self.fleet_name).client_async(prefer_local=False)
        return self._client

    async def acquire(self, task_id: str | None = None, **options: Any) -> Lease:
        """An environment reset to ``task_id`` (or to ``options``: ``start_url``, ``goal``,
        ``group_key``); waits while ``pool_size`` are out."""
        client = await self._ready()
        assert self._slots is not None
        try:
            await asyncio.wait_for(self._slots.acquire(), self.acquire_timeout)
        except asyncio.TimeoutError as e:
            raise TimeoutError(
                f"no environment free within {self.acquire_timeout:.0f}s: all {self.pool_size} are leased; "
                "release leases when their rollout ends (also when it fails), or make the pool larger"
            ) from e
        opts = dict(options)
        if task_id is not None:
            opts["task"] = task_id
        try:
            env, obs, info = await self._reset(client, opts)
        except BaseException:
            self._slots.release()
            raise
        lease = Lease(
            id=uuid.uuid4().hex,
            env=env.id or "",
            host=env.host or "",
            goal=str(obs.get("goal", "")),
            url=str(obs.get("url", "")),
            observation=render(obs),
            info={k: v for k, v in info.items() if isinstance(v, (str, int, float, bool))},
        )
        self._leased[lease.id] = env
        return lease

    async def _reset(self, client: AsyncClient, opts: dict[str, Any]) -> tuple[AsyncEnv, Obs, dict[str, Any]]:
        # A group's members must be made where the group is: only a fresh environment is placed by group.
        while self._idle and "group_key" not in opts:
            env = self._idle.pop()
            try:
                obs, info = await env.reset(options=opts)
                return env, obs, info
            except (HostLost, UnknownEnv):
                self.replaced += 1  # its server died (or reclaimed it): a new one replaces it
                env.id = None
        if "group_key" in opts and self._idle and len(self._idle) + len(self._leased) >= self.pool_size:
            await self._idle.pop().close()
        env = AsyncEnv(client, self.site, **self.make_args)
        obs, info = await env.reset(options=opts)
        return env, obs, info

    async def step(self, lease_id: str, action: str) -> StepResult:
        """Runs one action in the leased environment. Raises ``InfrastructureError`` (``HostLost``
        when its server died, ``EvaluationError`` when the grader failed): the rollout failed,
        not the policy; release the lease."""
        env = self._lease(lease_id)
        obs, reward, terminated, truncated, info = await env.step(action)
        reward = rollout.graded(reward, info)  # a failed grading is the infrastructure's, never a score
        return StepResult(
            result=page_text(obs),
            reward=reward,
            done=terminated or truncated,
            url=str(obs.get("url", "")),
            info={k: v for k, v in info.items() if isinstance(v, (str, int, float, bool))},
        )

    async def release(self, lease_id: str) -> None:
        """Gives the environment back (it is reset for the next lease; a dead one is dropped)."""
        env = self._leased.pop(lease_id, None)
        if env is None:
            return
        assert self._slots is not None
        self._slots.release()
        if env.id is not None:
            self._idle.append(env)

    def size(self) -> int:
        return self.pool_size

    def available_count(self) -> int:
        """Leases that ``acquire`` would give now without waiting."""
        return self.pool_size - len(self._leased)

    async def close(self) -> None:
        """Closes every environment of the pool."""
        envs = self._idle + list(self._leased.values())
        self._idle, self._leased = [], {}
        await asyncio.gather(*(e.close() for e in envs), return_exceptions=True)
        if self._client is not None:
            await self._client.close()

    def _lease(self, lease_id: str) -> AsyncEnv:
        env = self._leased.get(lease_id)
        if env is None:
            raise KeyError(f"no lease {lease_id!r} in this pool: it was released, or never acquired here")
        return env


#: The pool as a Ray actor class: ``pool = RemoteEnvironmentPool.remote(16, "shopping", fleet="webserv")``.
RemoteEnvironmentPool = ray.remote(num_cpus=0)(EnvironmentPool)

__all__ = [
    "EnvironmentPool",
    "InfrastructureError",
    "Lease",
    "RemoteEnvironmentPool",
    "StepResult",
    "page_text",
]
