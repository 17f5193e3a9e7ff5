"""gymnasium ids of WebServ's environments.

``webserv/<site>`` for each site, and ``webserv/<site>.<n>`` for each task of
the bundled shop's task sets (``webserv/shopping.17``). ``reset(seed=...)``
picks a task deterministically; ``options={"task_id": ...}`` picks one.
"""

from __future__ import annotations

import gymnasium as gym

#: Sites with a gymnasium id "webserv/<site>": the open web, the bundled
#: shop's storefront and admin (WebArena's shopping and shopping_admin
#: roles), and GitLab (needs WebArena's image; see docs/tasks.md).
SITES = ("open", "shopping", "cms", "gitlab")

#: Tasks per bundled task set (sites/shop/tasks/*.json in the repository).
TASKS = {"shopping": 60, "cms": 40}


def register_envs() -> None:
    """Registers the site and task ids. Safe to call more than once."""
    for site in SITES:
        _register(f"webserv/{site}", {"site": site})
    for site, n in TASKS.items():
        for i in range(n):
            _register(f"webserv/{site}.{i}", {"site": site, "task": f"{site}.{i}"})


def _register(env_id: str, kwargs: dict[str, str]) -> None:
    if env_id not in gym.registry:
        gym.register(id=env_id, entry_point="webserv.env:WebEnv", kwargs=kwargs, disable_env_checker=True)
