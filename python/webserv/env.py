"""WebEnv: the gymnasium (synchronous) face of an AsyncEnv."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

import gymnasium as gym

from .client import AsyncClient, AsyncEnv
from .observation import action_space, observation_space

T = TypeVar("T")

# Info keys that measure wall-clock time (or name the server-side instance).
_WALLCLOCK_INFO = ("action_ms", "settle_ms", "extract_ms", "elapsed_s", "env", "obs_stats")


class _Loop:
    """One asyncio loop on a daemon thread, shared by every WebEnv of the process."""

    _lock = threading.Lock()
    _loop: asyncio.AbstractEventLoop | None = None
    _clients: dict[tuple[str | None, str | None], AsyncClient] = {}

    @classmethod
    def get(cls) -> asyncio.AbstractEventLoop:
        with cls._lock:
            if cls._loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="webserv-loop", daemon=True).start()
                cls._loop = loop
            return cls._loop

    @classmethod
    def run(cls, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        return asyncio.run_coroutine_threadsafe(coro, cls.get()).result(timeout)

    @classmethod
    def client(cls, url: str | None, token: str | None) -> AsyncClient:
        """Environments of one process share one connection per server."""
        key = (url, token)
        with cls._lock:
            c = cls._clients.get(key)
            if c is None:
                c = cls._clients[key] = AsyncClient(url, token=token)
            return c


class WebEnv(gym.Env[dict[str, Any], str]):
    """A WebServ environment with gymnasium's API.

    ``gymnasium.make("webserv/open", start_url="http://127.0.0.1:8000/")``
    opens any page; the reward is 0 and the episode ends when the agent
    terminates (``stop [answer]``) or a limit truncates it. Actions are the
    strings the server parses (``click("id")``, ``fill("id", "text")``,
    ``type [id] [text] [1]``, ...) or action dicts.

    Args:
        site: the site to run (``open`` for any URL).
        start_url, goal, task: where the episode starts and what to do.
        url, token: the server (default ``$WEBSERV_URL``, else a local one).
        max_steps: steps after which an episode is truncated.
        episode_timeout: seconds after which an episode is truncated.
        idle_ms: network idle window before an observation (server default 500).
        screenshot, axtree: optional observation parts.
        wallclock: include wall-clock quantities: BrowserGym's ``elapsed_time`` in
            observations and the step timings (``action_ms``, ``settle_ms``,
            ``extract_ms``, ``elapsed_s``) in info. They are the only parts that
            differ between two identical episodes; turn them off where episodes
            must compare exactly (gymnasium's check_env).
        render_mode: ``"ansi"`` renders the accessibility-tree text.
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 2}

    def __init__(
        self,
        site: str = "open",
        start_url: str | None = None,
        goal: str | None = None,
        task: str | None = None,
        *,
        url: str | None = None,
        token: str | None = None,
        max_steps: int | None = None,
        episode_timeout: float | None = None,
        idle_ms: int | None = None,
        screenshot: bool = False,
        axtree: bool = True,
        wallclock: bool = True,
        render_mode: str | None = None,
        **make_args: Any,
    ):
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode {render_mode!r} is not supported; use one of {self.metadata['render_modes']}"
            )
        self.render_mode = render_mode
        self.observation_space = observation_space(screenshot, wallclock)
        self._wallclock = wallclock
        self.action_space = action_space()
        args = dict(make_args)
        args.update(
            start_url=start_url,
            goal=goal,
            task=task,
            max_steps=max_steps,
            idle_ms=idle_ms,
            observe={"screenshot": screenshot, "axtree": axtree},
        )
        if episode_timeout is not None:
            args["episode_timeout_ms"] = int(episode_timeout * 1000)
        self._env = AsyncEnv(_Loop.client(url, token), site, **args)
        self._last: dict[str, Any] = {}

    @property
    def env_id(self) -> str | None:
        """The environment's id on the server (after the first reset)."""
        return self._env.id

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        super().reset(seed=seed)
        obs, info = _Loop.run(self._env.reset(seed=seed, options=options))
        self._last = obs
        return self._view(obs), self._info(info)

    def step(self, action: str | dict[str, Any]) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = _Loop.run(self._env.step(action))
        self._last = obs
        return self._view(obs), reward, terminated, truncated, self._info(info)

    def _view(self, obs: dict[str, Any]) -> dict[str, Any]:
        if not self._wallclock:
            obs.pop("elapsed_time", None)
        return obs

    def _info(self, info: dict[str, Any]) -> dict[str, Any]:
        if not self._wallclock:
            for k in _WALLCLOCK_INFO:
                info.pop(k, None)
        return info

    def render(self) -> str | None:
        if self.render_mode == "ansi":
            return self._last.get("axtree_txt") or self._last.get("pruned_html", "")
        return None

    def close(self) -> None:
        if self._env.id is not None:
            _Loop.run(self._env.close())
        super().close()
