"""Registers webserv's gymnasium ids when gymnasium is imported.

gymnasium before 1.0 loaded the ``gymnasium.envs`` entry point group, which
pyproject.toml declares; 1.0 removed that. So that
``gymnasium.make("webserv/open")`` works without importing webserv first,
the wheel installs webserv-gymnasium.pth, which imports this top-level
module at interpreter start. It imports nothing heavy (not even webserv): it only wraps the loader of
``gymnasium`` so that, once gymnasium has finished importing,
webserv.registration runs (it registers ids with string entry points).
"""

from __future__ import annotations

import sys


class _Finder:
    """A meta path finder (find_spec is all the protocol needs)."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> object:
        if name != "gymnasium":
            return None
        sys.meta_path.remove(self)
        from importlib.machinery import PathFinder

        spec = PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        exec_module = loader.exec_module

        def exec_and_register(module: object) -> None:
            exec_module(module)
            if "webserv" in sys.modules:  # webserv is importing gymnasium: its __init__ registers
                return
            try:
                from webserv.registration import register_envs

                register_envs()
            except Exception as e:  # never break gymnasium's import
                import warnings

                warnings.warn(f"webserv could not register its gymnasium environments: {e}", stacklevel=2)

        loader.exec_module = exec_and_register  # type: ignore[method-assign]
        return spec


def install() -> None:
    if "gymnasium" in sys.modules:
        from webserv.registration import register_envs

        register_envs()
    elif not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())


install()
