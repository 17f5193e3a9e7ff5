"""gymnasium ids of WebServ's environments."""

from __future__ import annotations

import gymnasium as gym

#: Sites with a gymnasium id "webserv/<site>".
SITES = ("open",)


def register_envs() -> None:
    """Registers webserv/<site> for each site. Safe to call more than once."""
    for site in SITES:
        env_id = f"webserv/{site}"
        if env_id not in gym.registry:
            gym.register(
                id=env_id, entry_point="webserv.env:WebEnv", kwargs={"site": site}, disable_env_checker=True
            )
