"""WebServ: web-agent environments for RL and benchmarks.

The server (``webserv serve``, written in Go) drives Chromium; this package
is its client:

    import gymnasium as gym
    env = gym.make("webserv/open", start_url="http://127.0.0.1:8000/")
    obs, info = env.reset()
    obs, reward, terminated, truncated, info = env.step('click("add-to-cart")')

    envs = gym.make_vec("webserv/shopping", num_envs=8)   # one connection, concurrent steps

or, asynchronously, many environments over one connection:

    async with webserv.AsyncClient() as client:
        env = client.env("shopping")
        obs, info = await env.reset()
        children = await env.fork(4)        # tree search: branches of this state

The server is ``$WEBSERV_URL``; when unset, a local ``webserv serve`` is
started on first use (binary from ``$WEBSERV_BIN``, the PATH, or the
repository's ``bin/webserv``) and stopped at exit. Errors are the classes of
``webserv.errors``: ``InfrastructureError`` (the environment failed, never
the policy's score), ``ClientError``, ``AgentError``.
"""

from importlib.metadata import PackageNotFoundError, version

from .client import AsyncClient
from .connection import Connection
from .env import WebEnv
from .errors import (
    AgentError,
    BackendError,
    BadArgs,
    BrowserCrashed,
    CapacityError,
    ClientError,
    ConnectionLost,
    EpisodeOver,
    EvaluationError,
    HostLost,
    InfrastructureError,
    NotConfigured,
    NotReset,
    NotSupported,
    RequestTimeout,
    ResourceLimit,
    ServerUnavailable,
    SiteDown,
    UnknownEnv,
    WebServError,
)

# `await webserv.evaluate(...)` (docs/eval.md).
from .eval import evaluate

# After the submodule's import, the name is the function: `await webserv.explore(...)` (docs/explore.md).
from .explore import explore
from .handle import AsyncEnv
from .mixing import Demonstration, GroupAdvantages, Mix, group_advantages
from .options import EnvOptions
from .placement import Placement, PlacementRequest, StaticHosts
from .registration import register_envs, register_from_server
from .retry import RetryPolicy
from .vector import WebVectorEnv

try:
    __version__ = version("webserv")
except PackageNotFoundError:  # running from the source tree
    __version__ = "0+unknown"

register_envs()

__all__ = [
    "AgentError",
    "AsyncClient",
    "AsyncEnv",
    "BackendError",
    "BadArgs",
    "BrowserCrashed",
    "CapacityError",
    "ClientError",
    "Connection",
    "Demonstration",
    "EnvOptions",
    "ConnectionLost",
    "EpisodeOver",
    "ResourceLimit",
    "EvaluationError",
    "HostLost",
    "InfrastructureError",
    "Mix",
    "GroupAdvantages",
    "group_advantages",
    "NotReset",
    "NotConfigured",
    "NotSupported",
    "Placement",
    "PlacementRequest",
    "RequestTimeout",
    "RetryPolicy",
    "ServerUnavailable",
    "SiteDown",
    "StaticHosts",
    "UnknownEnv",
    "WebEnv",
    "WebServError",
    "WebVectorEnv",
    "__version__",
    "evaluate",
    "explore",
    "register_envs",
    "register_from_server",
]
