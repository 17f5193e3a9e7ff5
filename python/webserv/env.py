"""WebEnv: the gymnasium (synchronous) face of an AsyncEnv."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from .handle import AsyncEnv
from .observation import action_space
from .options import EnvOptions
from .prompt import render
from .sync import Loop as _Loop


class WebEnv(gym.Env[dict[str, Any], str]):
    """A WebServ environment with gymnasium's API.

    ``gymnasium.make("webserv/open", start_url="http://127.0.0.1:8000/")``
    opens any page; the reward is 0 and the episode ends when the agent
    terminates (``stop [answer]``) or a limit truncates it. Actions are the
    strings the server parses (``click("id")``, ``fill("id", "text")``,
    ``type [id] [text] [1]``, ...) or action dicts.

    On hosted sites, ``snapshot``, ``restore`` and ``fork`` save and branch
    the environment (through ``gymnasium.make``'s wrappers:
    ``env.unwrapped.fork(4)``).

    Settings are ``EnvOptions``' fields (site, start_url, goal, task, url, token,
    max_steps, episode_timeout, idle_ms, screenshot, axtree, browsergym, observe,
    wallclock, render_mode, documented there), given as keywords or as ``options=EnvOptions(...)``
    (keywords override its fields); any other keyword is an argument of the
    protocol's ``make`` (``record``, ``allow``, ``step_timeout_ms``, ...), which the
    server refuses, naming the nearest, when it does not know it.
    """

    metadata = {"render_modes": list(EnvOptions.RENDER_MODES), "render_fps": 2}

    def __init__(
        self,
        site: str | None = None,
        start_url: str | None = None,
        goal: str | None = None,
        task: str | None = None,
        *,
        options: EnvOptions | None = None,
        **keywords: Any,
    ):
        positional = {"site": site, "start_url": start_url, "goal": goal, "task": task}
        self.options = EnvOptions.of(
            options, **{k: v for k, v in positional.items() if v is not None}, **keywords
        )
        self.render_mode = self.options.render_mode
        self.observation_space = self.options.observation_space()
        self.action_space = action_space()
        self._env = AsyncEnv(
            _Loop.client(self.options.url, self.options.token), self.options.site, **self.options.request()
        )
        self._last: dict[str, Any] = {}

    @classmethod
    def _adopt(cls, handle: AsyncEnv, like: WebEnv) -> WebEnv:
        """A WebEnv around an environment that is already made (a fork's child)."""
        env = cls.__new__(cls)
        env.options = like.options
        env.render_mode = like.render_mode
        env.observation_space = like.observation_space
        env.action_space = like.action_space
        env._env = handle
        env._last = handle.last_obs or {}
        return env

    @property
    def env_id(self) -> str | None:
        """The environment's id on the server (after the first reset)."""
        return self._env.id

    @property
    def handle(self) -> AsyncEnv:
        """The asyncio environment underneath (its methods run on the package's event loop thread)."""
        return self._env

    @property
    def last_obs(self) -> dict[str, Any] | None:
        """The latest observation (after reset, step, restore, or the fork that made this one)."""
        obs = self._env.last_obs
        return None if obs is None else self._view(dict(obs), dict(self._env.last_info or {}))[0]

    @property
    def last_info(self) -> dict[str, Any] | None:
        info = self._env.last_info
        return None if info is None else self._view(dict(self._env.last_obs or {}), dict(info))[1]

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        super().reset(seed=seed)
        obs, info = _Loop.run(self._env.reset(seed=seed, options=options))
        self._last = obs
        return self._view(obs, info)

    def step(self, action: str | dict[str, Any]) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = _Loop.run(self._env.step(action))
        self._last = obs
        obs, info = self._view(obs, info)
        return obs, reward, terminated, truncated, info

    def snapshot(self, name: str | None = None) -> str:
        """Saves the site's and the browser's state under ``name`` (default: a new name); returns it."""
        return _Loop.run(self._env.snapshot(name))

    def restore(self, name: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """Returns to a snapshot this environment took, as a new episode; returns reset's two values."""
        obs, info = _Loop.run(self._env.restore(name))
        self._last = obs
        return self._view(obs, info)

    def fork(self, n: int = 1, name: str | None = None) -> list[WebEnv]:
        """``n`` new environments at a snapshot of this one (taken now when ``name`` is None).

        They are made already (no reset needed), each with its first observation
        in ``last_obs`` (equal to this one's at the snapshot), on this
        environment's server; step them, and close them when done.
        """
        return [WebEnv._adopt(h, self) for h in _Loop.run(self._env.fork(n, name))]

    def _view(self, obs: dict[str, Any], info: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        return self.options.view(obs, info)

    def render(self) -> str | None:
        if self.render_mode == "ansi":
            return render(self._last)  # the goal first, then the page (webserv.prompt)
        return None

    def close(self) -> None:
        if self._env.id is not None:
            _Loop.run(self._env.close())
        super().close()
