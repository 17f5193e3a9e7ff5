"""Runs a benchmark script of bench/ in its smoke mode, for the test_bench_*.py files.

Each benchmark's smoke test is a module of its own, a work unit of pytest-xdist's
(``--dist loadscope``, conftest.py), so they run side by side.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import REPO


def run_smoke(script: str, binary: str, out: Path, timeout: float = 600, extra: tuple[str, ...] = ()) -> None:
    """Runs ``bench/<script> --smoke --out <out> [extra...]`` against ``binary``; fails with its
    stderr."""
    env = {**os.environ, "WEBSERV_BIN": binary}
    env.pop("WEBSERV_URL", None)
    run = subprocess.run(
        [sys.executable, str(REPO / "bench" / script), "--smoke", "--out", str(out), *extra],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    assert run.returncode == 0, run.stderr[-3000:]


def run_suite(script: str, binary: str, out: Path, extra: tuple[str, ...] = ()) -> dict:
    """A suite's smoke run: it writes <suite>.json, .md and .png under ``out``; returns the JSON."""
    run_smoke(script, binary, out, extra=extra)
    suite = script.split("_")[0]
    rep = json.loads((out / f"{suite}.json").read_text())
    md = (out / f"{suite}.md").read_text()
    assert "Machine: " in md and "Command: " in md and rep["machine"]["cores"] > 0
    assert (out / f"{suite}.png").read_bytes().startswith(b"\x89PNG")
    assert rep["smoke"] is True and rep["headline"]
    return rep
