"""``--tasks SPEC``: which tasks an evaluation runs.

A spec is a comma list of items, each one of

- a site's name (``shopping``, ``cms``, a ``--sites`` site like ``tracker``, a WebArena role served
  from an imported image): every task the server lists for it;
- a task id (``shopping.17``) or a range of ids (``shopping.0-19``, both ends included; ids the
  server does not have are skipped, and a range that matches none is an error);
- WebArena-Verified's tasks where the server has them: ``verified.shopping``, ``verified.shopping.21``,
  ``verified.shopping.0-19`` (made with ``task_set="webarena-verified"``);
- a site definition file (``examples/sites/tracker.yaml``): that site's tasks, served by a server the
  run starts with ``--sites`` the definition's directory;
- a task file (a JSON or YAML list of tasks, like ``webserv explore``'s ``tasks.json``): served by the
  definition beside it (``sites/*.json`` next to the file, as explore writes it), or, for tasks of the
  bundled storefront, by a definition the run writes into ``OUT/sites``.

Files need a server the run starts itself: with ``server=`` (or $WEBSERV_URL) the server must
already serve their site.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_RANGE = re.compile(r"^(?P<site>[A-Za-z0-9_.-]+)\.(?P<lo>\d+)-(?P<hi>\d+)$")


@dataclass
class Plan:
    """A parsed spec: the items, and the ``--sites`` directory a started server needs (if any)."""

    items: list[str] = field(default_factory=list)  # site names, ids and ranges after files are read
    sites_dir: Path | None = None
    files: list[str] = field(default_factory=list)  # the file items, for messages


def _read(path: Path) -> Any:
    text = path.read_text()
    if path.suffix in (".yaml", ".yml"):
        try:
            import yaml
        except ImportError as e:
            raise ValueError(
                f"--tasks {path}: reading YAML needs PyYAML (pip install 'webserv[yaml]')"
            ) from e
        return yaml.safe_load(text)
    return json.loads(text)


def _definition_for(task_file: Path) -> tuple[str, Path] | None:
    """The site definition beside a task file (``sites/`` next to it) whose tasks include it."""
    d = task_file.parent / "sites"
    if not d.is_dir():
        return None
    for f in sorted([*d.glob("*.json"), *d.glob("*.yaml"), *d.glob("*.yml")]):
        try:
            data = _read(f)
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict) or "name" not in data:
            continue
        for pattern in data.get("tasks") or []:
            if any(p.resolve() == task_file.resolve() for p in f.parent.glob(str(pattern))):
                return str(data["name"]), d
    return None


def plan(spec: str, out: Path) -> Plan:
    """Parses a spec; files are read now (a definition the run needs is written to ``out/sites``)."""
    p = Plan()
    items = [s.strip() for s in spec.split(",") if s.strip()]
    if not items:
        raise ValueError("--tasks is empty: give a site (shopping), ids (shopping.0-19), or a task file")
    for item in items:
        path = Path(item)
        if not (path.suffix in (".json", ".yaml", ".yml") or "/" in item):
            p.items.append(item)
            continue
        if not path.is_file():
            raise ValueError(f"--tasks {item}: no such file (a site's name has no slash or .json/.yaml)")
        p.files.append(item)
        data = _read(path)
        if isinstance(data, dict) and "name" in data:  # a site definition
            site, sites_dir = str(data["name"]), path.resolve().parent
        elif isinstance(data, list):
            found = _definition_for(path)
            if found is not None:
                site, sites_dir = found[0], found[1].resolve()
            else:
                site, sites_dir = _write_definition(path, data, out)
        else:
            raise ValueError(
                f"--tasks {item}: neither a site definition (a mapping with a name) nor a task file (a list)"
            )
        if p.sites_dir is not None and p.sites_dir != sites_dir:
            raise ValueError(
                f"--tasks: the files need two --sites directories ({p.sites_dir} and {sites_dir}); "
                "a run's server serves one: run them apart, or put the definitions in one directory"
            )
        p.sites_dir = sites_dir
        p.items.append(site)
    return p


def _write_definition(task_file: Path, tasks: list[Any], out: Path) -> tuple[str, Path]:
    from ..explore.definition import site_definition, write_definition

    sites = {s for t in tasks if isinstance(t, dict) for s in (t.get("sites") or [])}
    if sites != {"shopping"}:
        raise ValueError(
            f"--tasks {task_file}: a task file needs a site definition that serves it (sites/NAME.json "
            f"beside it, whose tasks: names it); the run writes one only for the bundled storefront "
            f'(tasks of sites ["shopping"]), and these are of {sorted(sites) or "no site"}'
        )
    definition, _ = site_definition("shopping", task_file.resolve())
    assert definition is not None
    definition["name"] = "shopping-eval"
    # The definition is written into OUT/sites, so its tasks: names the file by its absolute path.
    definition["tasks"] = [str(task_file.resolve())]
    path = write_definition(out, definition)
    return "shopping-eval", path.parent.resolve()


def select(p: Plan, listed: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The server's tasks the plan names, in the spec's order, each once. A name (``shopping``,
    ``verified.shopping``) is every task whose id is the name, a dot and a number."""
    by_id = {str(t["id"]): t for t in listed}
    names = sorted({str(t["id"]).rsplit(".", 1)[0] for t in listed})
    chosen: dict[str, dict[str, Any]] = {}
    for item in p.items:
        m = _RANGE.match(item)
        if item in by_id:
            picked = [by_id[item]]
        elif m:
            lo, hi = int(m["lo"]), int(m["hi"])
            if lo > hi:
                raise ValueError(f"--tasks {item}: the range is empty ({lo} > {hi})")
            picked = [by_id[f"{m['site']}.{n}"] for n in range(lo, hi + 1) if f"{m['site']}.{n}" in by_id]
            if not picked:
                raise ValueError(
                    f"--tasks {item}: the server has no task of {m['site']!r} in that range"
                    + _hint(m["site"], names)
                )
        else:
            picked = [t for t in listed if _set_of(str(t["id"])) == item]
            if not picked:
                raise ValueError(
                    f"--tasks {item}: not a site with tasks nor a task id of this server"
                    + _hint(item, names + list(by_id))
                )
        for t in picked:
            chosen.setdefault(str(t["id"]), t)
    return list(chosen.values())


def _set_of(task_id: str) -> str:
    """``shopping`` of ``shopping.17``, ``verified.shopping`` of ``verified.shopping.21``."""
    head, _, n = task_id.rpartition(".")
    return head if n.isdigit() else ""


def task_set(task_id: str) -> str | None:
    """The task set ``make`` needs for a task id: WebArena-Verified's ids are ``verified.SITE.N``."""
    return "webarena-verified" if task_id.startswith("verified.") else None


def _hint(item: str, names: list[str]) -> str:
    near = difflib.get_close_matches(item, names, n=1)
    if near:
        return f" (did you mean {near[0]}?)"
    sites = sorted({n.split(".")[0] for n in names})
    return f" (its sites with tasks: {', '.join(sites) or 'none'})"
