"""The site definition an exploration run writes beside its tasks.json, so that
``webserv serve --sites OUT/sites`` serves the explored tasks and ``webserv tasks check --sites OUT/sites``
replays them (docs/explore.md, docs/sites.md).

- The bundled storefront (``shopping``): a definition ``shopping-explored`` that runs the bundled shop
  from the same ``webserv`` binary on the same catalog (``--shop-data``'s default,
  ``~/.cache/webserv/shop-small-seed1``), its tasks the run's. The tasks keep ``__SHOPPING__`` and
  ``sites: ["shopping"]``, which a site's own tasks read as the site itself.
- A site of the user's own (``--sites``): their definition (``site_definition=``), copied with its
  relative paths made absolute and ``tasks:`` naming the run's file instead of the site's own.
- The open site and the admin panel (``cms``, whose episodes start signed in as the admin) get none.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..launcher import find_binary

# The placeholder of each bundled site's origin in task files (docs/tasks.md); other hosted sites use
# __SITE__, the open site none.
PLACEHOLDERS = {"shopping": "__SHOPPING__", "cms": "__SHOPPING_ADMIN__"}
SITE_PLACEHOLDER = "__SITE__"


def placeholder(site: str) -> str:
    """What stands for the site's origin in its tasks ("" on the open site: URLs stay as they are)."""
    if site == "open":
        return ""
    return PLACEHOLDERS.get(site, SITE_PLACEHOLDER)


def default_shop_data() -> Path:
    """The server's default ``--shop-data`` (sites/bundled.DefaultDataDir): $WEBSERV_CACHE, else the
    user's cache directory, then webserv/shop-small-seed1."""
    base = os.environ.get("WEBSERV_CACHE")
    if base:
        return Path(base) / "shop-small-seed1"
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "webserv" / "shop-small-seed1"


def _read(path: Path) -> dict[str, Any]:
    text = path.read_text()
    if path.suffix in (".yaml", ".yml"):
        try:
            import yaml  # optional: only YAML definitions need it
        except ImportError as e:
            raise ValueError(
                f"site definition {path}: reading YAML needs PyYAML (pip install 'webserv[yaml]'), "
                "or give the definition as JSON"
            ) from e
        data = yaml.safe_load(text)
    else:
        data = json.loads(text)
    if not isinstance(data, dict) or "name" not in data:
        raise ValueError(f"site definition {path}: want a mapping with a name (docs/sites.md)")
    return data


def _absolute(p: str, base: Path) -> str:
    """A definition's path made absolute: relative ones are relative to the definition's directory;
    a bare program name (no slash) is looked up on $PATH and stays as it is."""
    if "/" not in p or os.path.isabs(p):
        return p
    return str((base / p).resolve())


def start_path(source: str | Path | None) -> str:
    """Where a site definition's episodes start (its start_path; "/" without one)."""
    if source is None:
        return "/"
    return str(_read(Path(source)).get("start_path") or "/")


def site_definition(
    site: str,
    tasks_file: Path,
    *,
    source: str | Path | None = None,
    binary: str | None = None,
    shop_data: str | Path | None = None,
    taken: list[str] | None = None,
) -> tuple[dict[str, Any] | None, str]:
    """The definition that serves ``tasks_file`` (written to OUT/sites/NAME.json, so its ``tasks:``
    is ``../tasks.json``), or None and why there is none. Its name is SITE-explored, or with a number
    after it when a site of ``taken`` (the server's) has that name: the definition is served beside
    the server's own sites, whose names it must not take."""
    tasks_rel = os.path.relpath(tasks_file, tasks_file.parent / "sites")
    name = free_name(f"{site}-explored", taken or [])
    if site == "shopping":
        exe = binary or os.environ.get("WEBSERV_BIN") or find_binary() or "webserv"
        if "/" in exe:
            exe = str(Path(exe).resolve())
        data = Path(shop_data) if shop_data else default_shop_data()
        return {
            "name": name,
            "description": "the bundled shop's storefront with the tasks an exploration run found",
            "local": {
                "command": [exe, "shop", "serve", "--port", "{port}", "--data", "{data}"],
                "data_dir": str(data.resolve()),
            },
            "ready": {"path": "/healthz", "timeout_ms": 30000},
            "start_path": "/",
            "state_db": "shop.db",
            # What every visit writes whatever its task (the bundled shop's bookkeeping,
            # sites/bundled): not a side effect of any task.
            "bookkeeping": [{"table": "sessions"}, {"table": "tokens"}],
            "tasks": [tasks_rel],
        }, ""
    if site == "open":
        return None, "the open site is not hosted: its tasks run with make(site='open', start_url=...)"
    if site == "cms":
        return None, "the admin panel's episodes start signed in as the admin; a definition cannot carry that"
    if source is None:
        return None, (
            f"site {site}: give its definition (site_definition= or --site-definition FILE) "
            "to write one that serves the explored tasks"
        )
    path = Path(source).resolve()
    d = _read(path)
    if d["name"] != site:
        raise ValueError(f"site definition {path} is site {d['name']!r}, not the explored site {site!r}")
    base = path.parent
    local = d.get("local")
    if isinstance(local, dict):
        cmd = list(local.get("command") or [])
        if cmd:
            cmd[0] = _absolute(str(cmd[0]), base)
        local["command"] = cmd
        if local.get("data_dir") and not os.path.isabs(local["data_dir"]):
            local["data_dir"] = str((base / local["data_dir"]).resolve())
    d["tasks"] = [tasks_rel]
    # The run's tasks keep sites: [SITE] and __SITE__, which a definition's own tasks read as itself.
    d["name"] = name
    return d, ""


def free_name(want: str, taken: list[str]) -> str:
    """want, or want-2, want-3, ...: the first that no site of taken has."""
    name, n = want, 1
    while name in taken:
        n += 1
        name = f"{want}-{n}"
    return name


def write_definition(out_dir: Path, definition: dict[str, Any]) -> Path:
    sites = out_dir / "sites"
    sites.mkdir(parents=True, exist_ok=True)
    path = sites / f"{definition['name']}.json"
    path.write_text(json.dumps(definition, indent=1) + "\n")
    return path
