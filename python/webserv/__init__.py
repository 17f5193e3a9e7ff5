"""WebServ: web-agent environments for RL and benchmarks.

The server (``webserv serve``, written in Go) drives Chromium; this package
is its client:

    import gymnasium as gym
    env = gym.make("webserv/open", start_url="http://127.0.0.1:8000/")
    obs, info = env.reset()
    obs, reward, terminated, truncated, info = env.step('click("add-to-cart")')

or, asynchronously, many environments over one connection:

    async with webserv.AsyncClient() as client:
        env = client.env(start_url="http://127.0.0.1:8000/")
        obs, info = await env.reset()

The server is ``$WEBSERV_URL``; when unset, a local ``webserv serve`` is
started on first use (binary from ``$WEBSERV_BIN``, the PATH, or the
repository's ``bin/webserv``) and stopped at exit.
"""

from .client import AsyncClient, AsyncEnv
from .env import WebEnv
from .errors import ServerUnavailable, WebServError
from .registration import register_envs

register_envs()

__all__ = ["AsyncClient", "AsyncEnv", "WebEnv", "WebServError", "ServerUnavailable", "register_envs"]
