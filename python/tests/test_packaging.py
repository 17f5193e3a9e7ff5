"""The installed package: where it finds the server binary, and what it says of versions."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import REPO

import webserv


def clean_env(**extra: str) -> dict[str, str]:
    """The environment of a user who set nothing up: no server URL, no binary, a PATH without webserv."""
    env = {k: v for k, v in os.environ.items() if k not in ("WEBSERV_URL", "WEBSERV_BIN")}
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if p and p != str(REPO / "bin")
    )
    env.update(extra)
    return env


def test_the_wheel_finds_the_binary_of_its_checkout(tmp_path: Path) -> None:
    """`pip install .` then `make build`: the installed package finds bin/webserv from any directory."""
    code = "from webserv.launcher import find_binary; print(find_binary())"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env=clean_env(),
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(REPO / "bin" / "webserv")


def test_version_prints_the_package_and_the_server(binary: str, server: str, tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "webserv", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "WEBSERV_BIN": binary, "WEBSERV_URL": server},
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == f"webserv {webserv.__version__} (Python package; protocol 1)"
    assert webserv.__version__ not in ("", "0+unknown")
    # One release: the binary and the server say the package's version.
    assert lines[1].startswith(f"server binary: {binary} (webserv {webserv.__version__} (commit ")
    assert lines[2] == f"server at $WEBSERV_URL {server}: webserv {webserv.__version__}; protocol 1"


def test_version_without_a_binary_says_what_to_do(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "webserv", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        env=clean_env(WEBSERV_BIN=str(tmp_path / "missing")),
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert "server binary: none found" in out.stdout
    assert "make build" in out.stdout and "WEBSERV_URL" in out.stdout and "WEBSERV_BIN" in out.stdout


def test_the_webserv_command_runs_the_recorded_binary(binary: str) -> None:
    """`pip install .` puts a `webserv` command on the PATH that runs the server binary the
    package records, so `webserv export`/`webserv replay` work as the docs write them."""
    import shutil

    script = Path(sys.executable).parent / "webserv"
    assert script.is_file(), "pip install . installs the webserv console command"
    direct = subprocess.run([binary, "version"], capture_output=True, text=True, timeout=60)
    env = {**os.environ, "WEBSERV_BIN": binary}
    via = subprocess.run([str(script), "version"], capture_output=True, text=True, timeout=60, env=env)
    assert via.returncode == 0 and via.stdout == direct.stdout, via.stderr
    # With the command itself first on the PATH, it still finds the binary, not itself.
    env = {k: v for k, v in os.environ.items() if k != "WEBSERV_BIN"}
    env["PATH"] = f"{script.parent}{os.pathsep}{Path(binary).parent}{os.pathsep}{env.get('PATH', '')}"
    via = subprocess.run(
        [str(script), "replay", "--help"], capture_output=True, text=True, timeout=60, env=env
    )
    assert via.returncode == 0 and "-rerun" in via.stderr, via.stderr
    assert shutil.which("webserv", path=env["PATH"]) == str(script)
