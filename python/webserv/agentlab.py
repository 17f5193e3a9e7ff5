"""AgentLab on WebServ: WebServ's tasks as an AgentLab benchmark (docs/agentlab.md).

AgentLab (``pip install 'webserv[agentlab]'`` and ``agentlab`` itself without its
dependencies: see docs/agentlab.md) runs an agent over a benchmark's ``env_args_list``:
for each task it calls ``env_args.make_env(...)`` and then ``reset``/``step`` in its own
loop, writing its usual result files (``exp_args.pkl``, ``step_N.pkl.gz``,
``summary_info.json``...). ``benchmark(tasks)`` gives such a benchmark whose env args make
WebServ environments: ``gymnasium.make("webserv/<task>", browsergym=True)``, whose
observations carry BrowserGym's raw objects (``axtree_object``, ``dom_object``,
``extra_element_properties``, ``screenshot``) with WebServ's ids, so AgentLab's agents build
their prompts from them as they do on BrowserGym. The server executes BrowserGym's
high-level action strings itself, so the agent's ``action_mapping`` is not needed.

    from agentlab.agents.generic_agent import AGENT_4o_MINI
    from webserv.agentlab import Study, benchmark

    study = Study([AGENT_4o_MINI], benchmark(["miniwob.click-test", "shopping.3"]))
    study.run(n_jobs=1, parallel_backend="sequential")

``Study`` is AgentLab's own class. Its module imports BrowserGym's WebArena package for
AgentLab's WebArena server pools; that package downloads nltk data when imported, so this
module stands in for the one name Study's module takes from it when the package is not
installed (``_stand_in_for_webarena``): WebServ's benchmarks need no WebArena server pool, and
using one without the package is refused by name.
"""

from __future__ import annotations

import importlib.util
import sys
import time
import types
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, cast

import gymnasium as gym
from agentlab.experiments.loop import EnvArgs
from bgym import Benchmark, HighLevelActionSetArgs

from . import miniwob
from .registration import bundled_tasks, gym_id, register_from_server

#: BrowserGym's action subsets GenericAgent is given by default: element actions, navigation,
#: tabs, chat and "infeasible". The server executes all of HighLevelActionSet's actions.
DEFAULT_SUBSETS = ("chat", "infeas", "bid", "nav", "tab")

# EnvArgs fields that configure a Playwright browser WebServ does not have; a value other
# than AgentLab's default is refused (a setting is never silently ignored).
_PLAYWRIGHT_ONLY = (
    "record_video",
    "wait_for_user_message",
    "viewport",
    "slow_mo",
    "storage_state",
    "task_kwargs",
    "pre_observation_delay",
)


class _NoWebArenaInstance:
    """What AgentLab's WebArena server pools (``agentlab.experiments.multi_server``) get when
    BrowserGym's WebArena package is not installed: refused by name, never a silent stand-in."""

    def __init__(self, *_: Any, **__: Any) -> None:
        raise RuntimeError(
            "AgentLab's WebArena server pools need BrowserGym's WebArena package (pip install "
            "browsergym-webarena, which downloads nltk data on import); WebServ's benchmarks "
            "(webserv.agentlab.benchmark) need no server pool: leave Study's parallel_servers unset"
        )


_WEBARENA_INSTANCE = "browsergym.webarena.instance"


def _stand_in_for_webarena() -> None:
    """Let ``agentlab.experiments.study`` import without BrowserGym's WebArena package.

    Study's module imports ``WebArenaInstance`` from ``browsergym.webarena.instance`` (only its
    WebArena server pools use it). Importing that package registers WebArena's tasks and
    downloads nltk's ``punkt_tab`` from outside PyPI, so the agentlab extra leaves it out. When
    it is not installed, that one module name is given a class that refuses to be made
    (``_NoWebArenaInstance``); ``import browsergym.webarena`` itself still fails as before,
    and an installed package is used as it is."""
    if _WEBARENA_INSTANCE in sys.modules or importlib.util.find_spec("browsergym.webarena") is not None:
        return
    mod = types.ModuleType(_WEBARENA_INSTANCE, "webserv.agentlab's stand-in (no browsergym-webarena)")
    setattr(mod, "WebArenaInstance", _NoWebArenaInstance)  # noqa: B010 (a module made at run time)
    sys.modules[_WEBARENA_INSTANCE] = mod


_stand_in_for_webarena()
from agentlab.experiments.study import Study  # noqa: E402  (needs the stand-in above)


@dataclass
class WebServBenchmark(Benchmark):
    """BrowserGym's ``Benchmark`` of WebServ tasks (``benchmark()`` makes one). Its version, in
    the reproducibility record AgentLab's ``Study`` writes, is WebServ's: AgentLab would read
    BrowserGym's MiniWoB package's for a name starting ``miniwob``."""

    def get_version(self) -> str:
        try:
            return f"webserv {version('webserv')}"
        except PackageNotFoundError:  # running from the source tree
            return "webserv 0+unknown"


@dataclass
class WebServEnvArgs(EnvArgs):
    """AgentLab's ``EnvArgs`` for one WebServ task: ``task_name`` is the task's id as WebServ
    names it (``miniwob.click-test``, ``shopping.3``, a site's own ``my-site.12``), without
    gymnasium's ``webserv/`` prefix. ``url`` is the server (default ``$WEBSERV_URL``, else a
    local ``webserv serve``); ``options`` are more ``webserv.EnvOptions`` keywords
    (``max_tokens``, ``observe``...). ``max_steps`` truncates the episode, as on BrowserGym.
    """

    url: str | None = None
    options: dict[str, Any] | None = None

    def make_env(
        self,
        action_mapping: Any = None,
        exp_dir: str | Path | None = None,
        exp_task_kwargs: Mapping[str, Any] | None = None,
        use_raw_page_output: bool = True,
    ) -> AgentLabEnv:
        """The environment AgentLab's loop drives (its arguments are EnvArgs.make_env's)."""
        defaults = {f.name: f.default for f in fields(EnvArgs)}
        set_here = [k for k in _PLAYWRIGHT_ONLY if getattr(self, k) != defaults[k]]
        if exp_task_kwargs:
            set_here.append("exp_task_kwargs")
        if set_here:
            raise ValueError(
                f"WebServEnvArgs({self.task_name!r}): {', '.join(set_here)} configure BrowserGym's "
                "Playwright browser, which WebServ does not use; leave them unset (WebServ's own "
                "settings go in options=, as webserv.EnvOptions keywords)"
            )
        options = dict(self.options or {})
        for key in ("browsergym", "url", "max_steps"):
            if key in options:
                raise ValueError(
                    f"WebServEnvArgs({self.task_name!r}): options[{key!r}] is set by WebServEnvArgs "
                    f"itself; give {'url= or max_steps=' if key != 'browsergym' else 'nothing'} instead"
                )
        env_id = gym_id(self.task_name.removeprefix("webserv/"))
        if env_id not in gym.registry:
            register_from_server(self.url)  # a site's own tasks: the server lists them
        env = gym.make(env_id, browsergym=True, url=self.url, max_steps=self.max_steps, **options)
        return AgentLabEnv(env)


class AgentLabEnv(gym.Wrapper):
    """A WebServ environment as AgentLab's loop drives a BrowserGym one: ``step``'s info also
    carries the action's start and end times (``action_exec_start``, ``action_exec_stop``,
    ``action_exec_timeout``) that AgentLab records for each step."""

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        start = time.time()
        obs, reward, terminated, truncated, info = self.env.step(action)
        stop = time.time()
        info = {**info, "action_exec_start": start, "action_exec_stop": stop, "action_exec_timeout": 0.0}
        return obs, reward, terminated, truncated, info


def task_names(site: str, url: str | None = None) -> list[str]:
    """Task ids of a site: ``miniwob`` (the installed miniwob package's pages), the bundled
    ``shopping`` and ``cms``, or any site a server offers (asked of the server at ``url``)."""
    if site == "miniwob":
        return ["miniwob." + n for n in miniwob.task_names()]
    if site in bundled_tasks():
        return list(bundled_tasks()[site])
    ids = [i.removeprefix("webserv/") for i in register_from_server(url)]
    found = [i for i in ids if i.startswith(site + ".")]
    if not found:
        sites = sorted({i.split(".", 1)[0] for i in ids if "." in i})
        raise ValueError(f"no tasks of site {site!r}: the server has tasks of {', '.join(sites)}")
    return found


def benchmark(
    tasks: Iterable[str],
    *,
    name: str = "webserv",
    seeds: Iterable[int] = (0,),
    max_steps: int = 15,
    url: str | None = None,
    options: Mapping[str, Any] | None = None,
    subsets: Iterable[str] = DEFAULT_SUBSETS,
    multiaction: bool = False,
    multi_tab: bool = False,
) -> WebServBenchmark:
    """An AgentLab benchmark (BrowserGym's ``Benchmark``) of WebServ tasks: one episode per
    task and seed, at most ``max_steps`` steps each. ``name`` is what AgentLab's result
    files call it (a name starting ``miniwob`` makes GenericAgent show the page's HTML, as it
    does on BrowserGym's MiniWoB); ``subsets`` and ``multiaction`` are the agent's
    ``HighLevelActionSet``; ``url`` and ``options`` go to every ``WebServEnvArgs``."""
    tasks = [t.removeprefix("webserv/") for t in tasks]
    if not tasks:
        raise ValueError("benchmark(): no tasks given (webserv.agentlab.task_names(site) lists a site's)")
    env_args: list[Any] = [  # Benchmark's annotation names BrowserGym's EnvArgs; AgentLab takes its own
        WebServEnvArgs(task_name=t, task_seed=s, max_steps=max_steps, url=url, options=dict(options or {}))
        for t in tasks
        for s in seeds
    ]
    return WebServBenchmark(
        name=name,
        high_level_action_set_args=HighLevelActionSetArgs(
            subsets=cast(Any, tuple(subsets)), multiaction=multiaction
        ),
        is_multi_tab=multi_tab,
        supports_parallel_seeds=True,
        backends=[],
        env_args_list=env_args,
    )


__all__ = [
    "DEFAULT_SUBSETS",
    "AgentLabEnv",
    "Study",
    "WebServBenchmark",
    "WebServEnvArgs",
    "benchmark",
    "task_names",
]
