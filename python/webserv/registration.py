"""gymnasium ids of WebServ's environments: static ones at import, the rest from the servers.

At import (no server is asked; this module imports nothing but gymnasium):

- ``webserv/<site>`` for the sites every ``webserv serve`` has: ``open`` (any
  URL), the bundled shop's ``shopping`` and ``cms``, ``gitlab``
  (WebArena's image; see docs/tasks.md), and ``dream``, the world-model
  environment (``gymnasium.make("webserv/dream", world_model={"memory": [...]},
  start={"episode": path, "step": 0}, max_dream_steps=5)``; docs/dream.md);
- ``webserv/<task>`` for each task of the bundled shop's task sets
  (``webserv/shopping.17``), listed from ``sites/shop/tasks/*.json`` when the
  wheel was built (the server binary embeds the same files);
- ``webserv/shopping-attacked`` and ``webserv/cms-attacked``: the shop's and the cms's tasks, each
  episode with an attack drawn from the attack library by the reset's seed
  (``webserv.attacks.AttackedEnv``; docs/attacks.md);
- ``webserv/miniwob`` (MiniWoB++'s tasks, sampled) and ``webserv/miniwob.<task>``
  for each task page of the installed ``miniwob`` package (``webserv/miniwob.click-test``;
  none when it is not installed: ``pip install 'webserv[miniwob]'``).

From a server, when any ``AsyncClient`` (so any environment) first connects
to it, or on ``webserv.register_from_server()``: ``webserv/<site>`` for each
site it offers (``serve --sites``) and ``webserv/<task>`` for each of its tasks
(``--webarena-tasks``, a site's task sets). Characters gymnasium ids cannot
hold become ``_`` (the task ``shopping+cms.3`` is ``webserv/shopping_cms.3``).

Every id but the attacked ones has ``vector_entry_point``: ``gymnasium.make_vec(id, num_envs=N)``
gives a ``webserv.vector.WebVectorEnv``. ``reset(seed=...)`` of a site id picks
a task deterministically; ``options={"task_id": ...}`` picks one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import gymnasium as gym

from . import miniwob
from .client import add_offer_listener
from .sync import Loop

#: Sites with a static id: those of a stock ``webserv serve``.
STATIC_SITES = ("open", "shopping", "cms", "gitlab", "dream", "miniwob")

ENTRY_POINT = "webserv.env:WebEnv"
VECTOR_ENTRY_POINT = "webserv.vector:WebVectorEnv"
#: The attacked task sets: their ids and sites.
ATTACKED = {"shopping-attacked": "shopping", "cms-attacked": "cms"}
_UNSAFE = re.compile(r"[^\w.:-]")


def gym_id(name: str) -> str:
    """The gymnasium id of a site or task name."""
    return "webserv/" + _UNSAFE.sub("_", name)


def bundled_tasks() -> Mapping[str, tuple[str, ...]]:
    """Task ids of the bundled shop by site, as listed when the wheel was built (empty if unknown)."""
    try:
        from ._build import BUNDLED_TASKS  # ty: ignore  # written when the wheel was built
    except ImportError:  # a source tree that was not built: the server will say
        return {}
    return BUNDLED_TASKS


def register_envs() -> None:
    """Registers the static ids (see the module's doc). Safe to call more than once."""
    for site in STATIC_SITES:
        _register(gym_id(site), {"site": site})
    for site, ids in bundled_tasks().items():
        for task in ids:
            _register(gym_id(task), {"site": site, "task": task})
    for name in miniwob.task_names():
        _register(gym_id("miniwob." + name), {"site": "miniwob", "task": "miniwob." + name})
    for name, site in ATTACKED.items():
        _register(gym_id(name), {"site": site}, entry_point="webserv.attacks:AttackedEnv", vector=None)


def register_offer(sites: Iterable[Mapping[str, Any]], tasks: Iterable[Mapping[str, Any]]) -> list[str]:
    """Registers the ids of a server's sites and tasks (the ``sites`` and ``tasks`` ops' items).

    Returns their ids, registered now or before (an id another site or task
    already holds keeps its first registration).
    """
    ids: list[str] = []
    for s in sites:
        name = str(s.get("name") or "")
        if name:
            _register(gym_id(name), {"site": name})
            ids.append(gym_id(name))
    for t in tasks:
        task, site = str(t.get("id") or ""), str(t.get("site") or "")
        if task and site:
            _register(gym_id(task), {"site": site, "task": task})
            ids.append(gym_id(task))
    return ids


def register_from_server(url: str | None = None, *, token: str | None = None) -> list[str]:
    """Registers the gymnasium ids of what a server offers (its sites and tasks) and returns them.

    ``url`` defaults to ``$WEBSERV_URL``, else a local ``webserv serve`` (the one
    ``gymnasium.make`` would use). Any client's first connection to a server
    does the same; call this to have the ids before making an environment::

        webserv.register_from_server()
        env = gymnasium.make("webserv/my-site.12")
    """
    client = Loop.client(url, token)
    return Loop.run(client.register_envs())


def _register(
    env_id: str,
    kwargs: dict[str, str],
    entry_point: str = ENTRY_POINT,
    vector: str | None = VECTOR_ENTRY_POINT,
) -> bool:
    if env_id in gym.registry:
        return False
    gym.register(
        id=env_id,
        entry_point=entry_point,
        vector_entry_point=vector,
        kwargs=kwargs,
        disable_env_checker=True,
    )
    return True


add_offer_listener(register_offer)
