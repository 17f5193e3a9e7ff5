"""What every episode and phase of an exploration run shares: the client, the site, the explorer,
labeler and reward model, the frontier, and how the run's environments are made and reset
(state_diff asked for once, given up on a site without a state database)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from ..client import AsyncClient
from ..errors import NotSupported
from ..handle import AsyncEnv
from .definition import PLACEHOLDERS
from .frontier import Frontier
from .trajectory import Explorer, Labeler, RewardModel
from .turnstile import Turnstile


@dataclass
class _Run:
    """What every episode of a run shares."""

    client: AsyncClient
    site: str
    start_url: str | None
    max_steps: int
    k: int
    explorer: Explorer
    labeler: Labeler
    reward: RewardModel
    seed: int
    make_args: dict[str, Any]
    frontier: Frontier
    use_frontier: bool
    first_wave: int
    holders: list[AsyncEnv] = field(default_factory=list)  # finished episodes' envs holding snapshots
    holding: set[int] = field(default_factory=set)  # ids of the envs holding snapshots, running or not
    # Environments are made with state_diff (the site's state database read after every step) until
    # the server says the site has none; state_note says why not.
    state: bool = False
    state_note: str = ""
    state_known: bool = False  # the first reset's answer is in (state stays as it is from then on)
    state_probe: asyncio.Lock = field(default_factory=asyncio.Lock)
    start_path: str = "/"  # a site definition's start_path
    # make's record for the exploration episodes (raw=True), None when not recorded.
    record: dict[str, Any] | None = None
    # The order the episodes' explorer calls go in, for an explorer that keeps state across episodes
    # (turnstile.py); None: each episode asks as soon as it is ready.
    order: Turnstile | None = None

    def reset_options(self, start_url: str | None = None) -> dict[str, Any]:
        options: dict[str, Any] = {"goal": "Explore the site."}
        start = start_url or self.start_url
        if not start and self.site not in PLACEHOLDERS and self.site != "open":
            # A site's own: at its start page, not at one of its tasks (whose setup a replay lacks).
            start = self.start_path
        if start:
            options["start_url"] = start
        if self.site in PLACEHOLDERS and not start_url:
            options["task_id"] = f"{self.site}.0"  # a fixed task for a fixed start (its goal is not pursued)
        return options

    def env(self, *, explore: bool = False) -> AsyncEnv:
        """An environment of the run; an exploration episode's is recorded when the run is raw (the
        attempts and replays are not)."""
        record = self.record if explore else None
        return self.client.env(
            self.site, **self.make_args, state_diff=True if self.state else None, record=record
        )

    async def reset(self, seed: int, options: dict[str, Any]) -> tuple[AsyncEnv, dict[str, Any]]:
        """A new environment at its first observation. The run's first reset asks for state_diff and
        the others wait for its answer: on a site without a state database the server refuses it
        (not_supported) once, and the run goes on without (state_note says why)."""
        if self.state_known:
            return await self._reset(seed, options)
        async with self.state_probe:
            if self.state_known:
                return await self._reset(seed, options)
            made_with = self.state
            try:
                out = await self._reset(seed, options)
            except NotSupported as e:
                if not made_with or "state_diff" not in str(e):
                    raise
                self.state, self.state_note = False, f"state tasks left out: {e}"
                out = await self._reset(seed, options)
            self.state_known = True
            return out

    async def _reset(self, seed: int, options: dict[str, Any]) -> tuple[AsyncEnv, dict[str, Any]]:
        env = self.env(explore=True)
        try:
            obs, _ = await env.reset(seed=seed, options=options)
        except BaseException:
            await env.close()
            raise
        return env, obs
