"""MiniWoB++ in WebServ: where the installed ``miniwob`` package keeps its task pages.

The server serves the pages of the Farama ``miniwob`` package (``pip install
miniwob==1.1.0``, or the ``webserv[miniwob]`` extra) as the site ``miniwob``,
one task per page: ``gymnasium.make("webserv/miniwob.click-test")``, or
``webserv/miniwob`` to sample among them (docs/tasks.md, "MiniWoB++"). This
module finds the pages without importing the package (importing it loads
Selenium), so gymnasium's start-up stays fast.
"""

from __future__ import annotations

import importlib.util
import os

#: The environment variable a server started by this package reads the html directory from.
ENV_VAR = "WEBSERV_MINIWOB"


def html_dir() -> str | None:
    """The installed ``miniwob`` package's ``html`` directory, or None when it is not installed."""
    try:
        spec = importlib.util.find_spec("miniwob")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    d = os.path.join(next(iter(spec.submodule_search_locations)), "html")
    return d if os.path.isfile(os.path.join(d, "core", "core.js")) else None


def task_names(directory: str | None = None) -> list[str]:
    """The task names (``click-test``) of the pages in ``directory`` (default: the installed package's)."""
    d = directory or html_dir()
    if d is None:
        return []
    pages = os.path.join(d, "miniwob")
    try:
        return sorted(f[: -len(".html")] for f in os.listdir(pages) if f.endswith(".html"))
    except OSError:
        return []
