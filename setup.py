"""Build hook: ships webserv-gymnasium.pth at the top of the wheel (see python/webserv/_gym_hook.py).

Everything else is in pyproject.toml.
"""

import os

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildWithPth(build_py):
    def run(self) -> None:
        super().run()
        self.copy_file(
            os.path.join("python", "webserv-gymnasium.pth"),
            os.path.join(self.build_lib, "webserv-gymnasium.pth"),
        )


setup(cmdclass={"build_py": BuildWithPth})
