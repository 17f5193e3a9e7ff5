"""WebVectorEnv: N environments on one connection, stepped concurrently, with gymnasium's vector API.

``gymnasium.make_vec("webserv/shopping", num_envs=8)`` gives one (every
``webserv/...`` id has it as its ``vector_entry_point``). The N environments
share the process's connection to the server and each ``step`` sends the N
actions at once, so a batch takes as long as its slowest step, not the sum.

Layout. Observations are text, so there are no fixed-shape arrays: a batch is a
dict with the keys of one observation, each mapping to a list of N values
(``obs["url"][i]`` is environment i's URL, ``obs["axtree_txt"][i]`` its page).
``observation_space`` is gymnasium's ``batch_space`` of the single space (a
``Dict`` of ``Tuple`` spaces, which hold lists). Actions are a sequence of N
action strings (or action dicts). Rewards are a float64 array (NaN where the
grader failed, see ``info["eval_error"]``), terminations and truncations bool
arrays, and infos gymnasium's dict of arrays with a ``_key`` mask per key.

Autoreset follows ``metadata["autoreset_mode"]`` (gymnasium 1.x), by default
``NEXT_STEP``: the step after environment i terminates or truncates resets it
(its action is ignored) and returns its first observation with reward 0 and
both flags False. ``SAME_STEP`` resets at once and puts the last observation
and info in ``info["final_obs"]`` and ``info["final_info"]``; ``DISABLED``
leaves it to ``reset(options={"reset_mask": mask})``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from .handle import AsyncEnv
from .mixing import Demonstrations, ExpertEnv, Mix, Source, member_options
from .observation import action_space
from .options import EnvOptions
from .prompt import render
from .sync import Loop as _Loop

Action = str | dict[str, Any]


class WebVectorEnv(VectorEnv):
    """``num_envs`` WebServ environments stepped concurrently over one connection.

    Takes ``WebEnv``'s settings (``EnvOptions``' fields as keywords or
    ``options=EnvOptions(...)``, and any ``make`` argument), each environment
    made with the same ones, plus:

    Args:
        num_envs: how many environments.
        autoreset_mode: gymnasium's ``AutoresetMode`` (or its value), default ``NEXT_STEP``.
        max_episode_steps: gymnasium's name for ``max_steps`` (``make_vec`` passes it
            when the id's spec has one); the server truncates.
        mix: a ``webserv.Mix``: the share of real, dreamed and expert members
            (``sources`` lists each member's; ``info["source"]`` marks everything
            a member returns; see ``webserv.mixing``). Default: all real.
    """

    metadata = {"render_modes": list(EnvOptions.RENDER_MODES), "autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(
        self,
        num_envs: int = 1,
        site: str | None = None,
        start_url: str | None = None,
        goal: str | None = None,
        task: str | None = None,
        *,
        options: EnvOptions | None = None,
        max_episode_steps: int | None = None,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        mix: Mix | None = None,
        **keywords: Any,
    ):
        if num_envs < 1:
            raise ValueError(f"num_envs must be at least 1, not {num_envs}")
        positional = {"site": site, "start_url": start_url, "goal": goal, "task": task}
        if max_episode_steps is not None and keywords.get("max_steps") is None:
            keywords["max_steps"] = max_episode_steps
        self.options = EnvOptions.of(
            options, **{k: v for k, v in positional.items() if v is not None}, **keywords
        )
        self.num_envs = num_envs
        self.render_mode = self.options.render_mode
        self.autoreset_mode = AutoresetMode(autoreset_mode)
        self.metadata = {**type(self).metadata, "autoreset_mode": self.autoreset_mode}
        self.single_observation_space = self.options.observation_space()
        self.single_action_space = action_space()
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self.client = _Loop.client(self.options.url, self.options.token)
        self.mix = mix
        self._demos: Demonstrations | None = None
        #: Each member's source: ``"real"``, ``"dream"`` or ``"expert"``.
        self.sources: list[Source] = mix.sources(num_envs) if mix is not None else ["real"] * num_envs
        self.envs: list[AsyncEnv | ExpertEnv] = [self._member(s) for s in self.sources]
        self._obs: list[dict[str, Any]] = [{} for _ in range(num_envs)]
        self._autoreset = np.zeros(num_envs, dtype=np.bool_)

    def _member(self, source: Source) -> AsyncEnv | ExpertEnv:
        """A member environment of this source (see ``webserv.mixing``)."""
        if source == "dream":
            assert self.mix is not None
            dream = self.mix.dream_options(self.options)
            return AsyncEnv(_Loop.client(dream.url, dream.token), dream.site, **dream.request())
        env = AsyncEnv(self.client, self.options.site, **self.options.request())
        if source == "real":
            return env
        assert self.mix is not None
        if self._demos is None:
            tasks = None
            if isinstance(self.mix.demonstrations, str) and self.mix.demonstrations == "oracles":
                tasks = _Loop.run(self.client.tasks(self.options.site))
            self._demos = Demonstrations(self.mix.load_demonstrations(tasks))
        return ExpertEnv(env, self._demos, self.options.task)

    @property
    def env_ids(self) -> list[str | None]:
        """The environments' ids on the server (after the first reset)."""
        return [e.id for e in self.envs]

    def reset(
        self,
        *,
        seed: int | Sequence[int | None] | None = None,
        options: dict[str, Any] | None = None,
    ) -> tuple[dict[str, list[Any]], dict[str, Any]]:
        """Resets every environment (or those of ``options["reset_mask"]``), concurrently.

        ``seed``: None, an int (environment i gets ``seed + i``) or one per environment.
        ``options`` go to every environment's reset (``task_id``, ``start_url``,
        ``group_key``: with one key all N start from one state, a GRPO group).
        """
        if isinstance(seed, int):
            super().reset(seed=seed)
            seeds: list[int | None] = [seed + i for i in range(self.num_envs)]
        elif seed is None:
            seeds = [None] * self.num_envs
        else:
            seeds = list(seed)
            if len(seeds) != self.num_envs:
                raise ValueError(f"{len(seeds)} seeds for {self.num_envs} environments")
        options = dict(options or {})
        mask = options.pop("reset_mask", None)
        if mask is None:
            mask = np.ones(self.num_envs, dtype=np.bool_)
        else:
            mask = np.asarray(mask)
            if mask.shape != (self.num_envs,) or mask.dtype != np.bool_ or not mask.any():
                raise ValueError(
                    f"options['reset_mask'] must be a bool array of shape ({self.num_envs},), not all False"
                )
        picked = [i for i in range(self.num_envs) if mask[i]]

        async def reset_all() -> list[Any]:
            return await asyncio.gather(
                *(
                    self.envs[i].reset(seed=seeds[i], options=member_options(self.sources[i], options))
                    for i in picked
                ),
                return_exceptions=True,
            )

        results = _Loop.run(reset_all())
        infos: dict[str, Any] = {}
        errors: list[BaseException] = []
        for i, res in zip(picked, results, strict=True):
            if isinstance(res, BaseException):
                errors.append(res)
                continue
            obs, info = self._view(*res)
            info["source"] = self.sources[i]
            self._obs[i] = obs
            self._autoreset[i] = False
            infos = self._add_info(infos, info, i)
        if errors:
            raise errors[0]
        return self._batch(), infos

    def step(
        self, actions: Sequence[Action]
    ) -> tuple[dict[str, list[Any]], np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Steps every environment with its action, concurrently (and autoresets, see the module's doc)."""
        if isinstance(actions, (str, dict)) or len(actions) != self.num_envs:
            raise ValueError(f"step takes a sequence of {self.num_envs} actions, one per environment")
        resetting = self._autoreset.copy() if self.autoreset_mode == AutoresetMode.NEXT_STEP else None
        if self.autoreset_mode == AutoresetMode.DISABLED and self._autoreset.any():
            done = [i for i in range(self.num_envs) if self._autoreset[i]]
            raise ValueError(
                f"environments {done} ended; with autoreset disabled, reset them first "
                "(reset(options={'reset_mask': mask}))"
            )

        async def one(i: int) -> tuple[Any, ...]:
            env = self.envs[i]
            if resetting is not None and resetting[i]:
                obs, info = await env.reset()
                return obs, 0.0, False, False, info
            stepped = await env.step(actions[i])
            if self.autoreset_mode == AutoresetMode.SAME_STEP and (stepped[2] or stepped[3]):
                final_obs, _, _, _, final_info = stepped
                obs, info = await env.reset()
                final_obs, final_info = self._view(final_obs, final_info)
                info = {**info, "final_obs": final_obs, "final_info": final_info}
                return obs, stepped[1], stepped[2], stepped[3], info
            return stepped

        async def step_all() -> list[Any]:
            return await asyncio.gather(*(one(i) for i in range(self.num_envs)), return_exceptions=True)

        results = _Loop.run(step_all())
        rewards = np.zeros(self.num_envs, dtype=np.float64)
        terminations = np.zeros(self.num_envs, dtype=np.bool_)
        truncations = np.zeros(self.num_envs, dtype=np.bool_)
        infos: dict[str, Any] = {}
        errors: list[BaseException] = []
        for i, res in enumerate(results):
            if isinstance(res, BaseException):
                errors.append(res)
                continue
            obs, reward, terminated, truncated, info = res
            final = {k: info.pop(k) for k in ("final_obs", "final_info") if k in info}
            obs, info = self._view(obs, info)
            info["source"] = self.sources[i]
            if "final_info" in final:
                final["final_info"]["source"] = self.sources[i]
            info.update(final)
            self._obs[i] = obs
            rewards[i], terminations[i], truncations[i] = reward, terminated, truncated
            self._autoreset[i] = (terminated or truncated) and self.autoreset_mode != AutoresetMode.SAME_STEP
            infos = self._add_info(infos, info, i)
        if errors:
            raise errors[0]
        return self._batch(), rewards, terminations, truncations, infos

    def render(self) -> tuple[str, ...] | None:
        if self.render_mode != "ansi":
            return None
        return tuple(render(o) for o in self._obs)  # the goal first, then the page

    def close_extras(self, **kwargs: Any) -> None:
        async def close_all() -> None:
            await asyncio.gather(*(e.close() for e in self.envs), return_exceptions=True)

        if any(e.id is not None for e in self.envs):
            _Loop.run(close_all())

    def _view(self, obs: dict[str, Any], info: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        return self.options.view(obs, info)

    def _batch(self) -> dict[str, list[Any]]:
        keys = self.single_observation_space.spaces.keys()  # ty: ignore  # always a spaces.Dict here
        return {k: [o.get(k) for o in self._obs] for k in keys}


__all__ = ["WebVectorEnv"]
