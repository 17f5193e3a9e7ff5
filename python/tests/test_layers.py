"""The package is in layers: no module imports one that imports it back, however lazily."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import webserv

PKG = Path(webserv.__file__).parent


def _modules() -> dict[str, Path]:
    out = {}
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Every webserv module ``name`` imports: at the top, in functions, under TYPE_CHECKING."""
    is_pkg = path.name == "__init__.py"
    base = name.split(".") if is_pkg else name.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                root = base[: len(base) - node.level + 1]
                mod = ".".join(root + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in modules else mod for a in node.names]
        for t in targets:
            # `import webserv.x.y` names modules; an import of a module the tree lacks (the wheel's
            # generated `_build`) is no edge.
            if t in modules and t != name:
                found.add(t)
    return found


def test_no_import_cycles() -> None:
    modules = _modules()
    graph = {m: _imports(m, p, modules) for m, p in modules.items()}
    # A package's __init__ re-exports its modules; a module never imports its own package back.
    for m, deps in graph.items():
        if m.endswith(".__main__"):
            continue  # the command line's entry: nothing imports it
        for d in deps:
            assert not m.startswith(d + "."), f"{m} imports its own package {d}: import the module it needs"
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for d in sorted(graph[m]):
            if d.startswith(m + "."):
                continue  # a package importing its own modules
            if state.get(d) == 1:
                cycle = stack[stack.index(d) :] + [d]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if d not in state:
                visit(d)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)


# Imports each module named on stdin (one a line) in a child forked from an interpreter that has
# imported nothing but the package itself, and prints one JSON line per module.
_FORK_IMPORTS = """
import importlib, json, os, sys, traceback
import webserv
for name in sys.stdin.read().split():
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            importlib.import_module(name)
            err = ""
        except BaseException:
            err = traceback.format_exc()
        os.write(w, err.encode())
        os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        err = f.read().decode()
    os.waitpid(pid, 0)
    print(json.dumps({"name": name, "error": err}), flush=True)
"""


def test_every_module_imports_alone() -> None:
    """Each module imported first, in an interpreter of its own. Importing ``webserv.x`` runs the
    package's ``__init__`` to its end before ``x`` (and a subpackage's before its modules), so a
    child forked from an interpreter that has imported ``webserv`` alone, then importing ``x``,
    runs exactly what a fresh ``python -c "import webserv.x"`` runs, without paying for the
    package's own imports (gymnasium, numpy) 50 times over."""
    optional = {"webserv.ray", "webserv.verified"}  # need ray / webarena-verified, installed with extras
    names = [n for n in sorted(_modules()) if n not in ("webserv", "webserv.__main__")]
    alone = subprocess.run(
        [sys.executable, "-c", "import webserv"], capture_output=True, text=True, timeout=300
    )
    assert alone.returncode == 0, alone.stderr[-1500:]
    r = subprocess.run(
        [sys.executable, "-c", _FORK_IMPORTS],
        input="\n".join(names),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    results = {x["name"]: x["error"] for x in map(json.loads, r.stdout.splitlines())}
    assert sorted(results) == names, r.stderr[-3000:]
    for name, err in results.items():
        if err and any(name == o or name.startswith(o + ".") for o in optional):
            assert "No module named" in err, (name, err[-1500:])
            continue
        assert not err, (name, err[-1500:])
