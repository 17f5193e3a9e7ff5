"""WebEnv: the gymnasium (synchronous) face of an AsyncEnv."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym

from .handle import AsyncEnv
from .observation import action_space, observation_space
from .sync import Loop as _Loop

# Info keys that measure wall-clock time (or name the server-side instance).
_WALLCLOCK_INFO = ("action_ms", "settle_ms", "extract_ms", "elapsed_s", "env", "obs_stats")


def make_args(
    start_url: str | None,
    goal: str | None,
    task: str | None,
    max_steps: int | None,
    episode_timeout: float | None,
    idle_ms: int | None,
    screenshot: bool,
    axtree: bool,
    extra: dict[str, Any],
    observe: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """make's arguments from the gymnasium constructors' keywords."""
    args = dict(extra)
    args.update(
        start_url=start_url,
        goal=goal,
        task=task,
        max_steps=max_steps,
        idle_ms=idle_ms,
        observe={"screenshot": screenshot, "axtree": axtree, **(observe or {})},
    )
    if episode_timeout is not None:
        args["episode_timeout_ms"] = int(episode_timeout * 1000)
    return args


def without_wallclock(obs: dict[str, Any], info: dict[str, Any]) -> None:
    """Drops the wall-clock parts of an observation and its info, in place."""
    obs.pop("elapsed_time", None)
    for k in _WALLCLOCK_INFO:
        info.pop(k, None)


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

    Args:
        site: the site to run (``open`` for any URL).
        start_url, goal, task: where the episode starts and what to do.
        url, token: the server (default ``$WEBSERV_URL``, else a local one).
        max_steps: steps after which an episode is truncated.
        episode_timeout: seconds after which an episode is truncated.
        idle_ms: the grace after the last request or navigation event before an observation
            (server default 30).
        screenshot, axtree: optional observation parts.
        observe: further observe options of the protocol, passed through: ``geometry``
            (``extra_element_properties``), ``marks`` (``screenshot_som``, ``som_labels``),
            ``layout`` (``cols="N"`` cues in the HTML), ``format`` (``"png"``/``"jpeg"``),
            ``quality``, ``max_side``; the observation space lists the keys they add.
        wallclock: include wall-clock quantities: BrowserGym's ``elapsed_time`` in
            observations and the step timings (``action_ms``, ``settle_ms``,
            ``extract_ms``, ``elapsed_s``, ``obs_stats``) in info. They are the only parts that
            differ between two identical episodes; turn them off where episodes
            must compare exactly (gymnasium's check_env).
        render_mode: ``"ansi"`` renders the accessibility-tree text.
        make_args: any other argument of the protocol's ``make`` (``record``,
            ``allow``, ``step_timeout_ms``, ...).
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
        observe: Mapping[str, Any] | None = None,
        wallclock: bool = True,
        render_mode: str | None = None,
        **extra: Any,
    ):
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode {render_mode!r} is not supported; use one of {self.metadata['render_modes']}"
            )
        self.render_mode = render_mode
        self.observation_space = observation_space(screenshot, wallclock, observe)
        self._wallclock = wallclock
        self.action_space = action_space()
        args = make_args(
            start_url, goal, task, max_steps, episode_timeout, idle_ms, screenshot, axtree, extra, observe
        )
        self._env = AsyncEnv(_Loop.client(url, token), site, **args)
        self._last: dict[str, Any] = {}

    @classmethod
    def _adopt(cls, handle: AsyncEnv, like: WebEnv) -> WebEnv:
        """A WebEnv around an environment that is already made (a fork's child)."""
        env = cls.__new__(cls)
        env.render_mode = like.render_mode
        env.observation_space = like.observation_space
        env.action_space = like.action_space
        env._wallclock = like._wallclock
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
        if not self._wallclock:
            without_wallclock(obs, info)
        return obs, info

    def render(self) -> str | None:
        if self.render_mode == "ansi":
            return self._last.get("axtree_txt") or self._last.get("pruned_html", "")
        return None

    def close(self) -> None:
        if self._env.id is not None:
            _Loop.run(self._env.close())
        super().close()
