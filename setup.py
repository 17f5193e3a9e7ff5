"""Build hook; everything else is in pyproject.toml.

Besides the package, the wheel gets:

- webserv-gymnasium.pth at its top (see python/_webserv_gym_hook.py);
- webserv/attacks.json, the attack library: attack/library.json, the one copy,
  which the server embeds too (its attacked task sets draw from it);
- webserv/_build.py, written here: the checkout the wheel was built from (where
  the package looks for bin/webserv, as the README says) and the ids of the
  bundled shop's tasks (sites/shop/tasks/*.json, the files the server binary
  embeds), so ``gymnasium.make("webserv/shopping.17")`` works before any
  server is asked.
"""

import json
import os
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


def bundled_tasks() -> dict[str, tuple[str, ...]]:
    """Task ids by site, as the server names them: <site>.<task_id> (sites/catalog/taskset.go)."""
    out: dict[str, tuple[str, ...]] = {}
    for path in sorted((ROOT / "sites" / "shop" / "tasks").glob("*.json")):
        try:
            tasks = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        out[path.stem] = tuple(f"{path.stem}.{t['task_id']}" for t in tasks if "task_id" in t)
    return out


def source_dir() -> str | None:
    """The repository checkout being built, or None when building from an sdist (no Go sources)."""
    return str(ROOT) if (ROOT / "go.mod").exists() else None


class BuildWithExtras(build_py):
    def run(self) -> None:
        super().run()
        self.copy_file(
            os.path.join("python", "webserv-gymnasium.pth"),
            os.path.join(self.build_lib, "webserv-gymnasium.pth"),
        )
        self.copy_file(
            os.path.join("attack", "library.json"),
            os.path.join(self.build_lib, "webserv", "attacks.json"),
        )
        build = Path(self.build_lib) / "webserv" / "_build.py"
        build.write_text(
            '"""Written by setup.py when the wheel was built."""\n\n'
            f"#: The checkout this package was built from (its bin/webserv is the server's default binary).\n"
            f"SOURCE_DIR = {source_dir()!r}\n\n"
            f"#: Task ids of the bundled shop by site (sites/shop/tasks/*.json at build time).\n"
            f"BUNDLED_TASKS = {bundled_tasks()!r}\n"
        )
        if source_dir() and not (ROOT / "bin" / "webserv").exists():
            print(
                f"note: {ROOT / 'bin' / 'webserv'} is not built yet; `make build` builds it "
                "(the package looks for it there at run time)",
                file=sys.stderr,
            )


setup(cmdclass={"build_py": BuildWithExtras})
