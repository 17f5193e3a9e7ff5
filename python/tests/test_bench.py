"""The RL benchmark's smoke mode: it must run end to end and write its report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import REPO


def test_rl_bench_smoke(binary: str, tmp_path: Path) -> None:
    out = tmp_path / "rl.json"
    env = {**os.environ, "WEBSERV_BIN": binary}
    env.pop("WEBSERV_URL", None)
    run = subprocess.run(
        [sys.executable, str(REPO / "bench" / "rl_bench.py"), "--smoke", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    rep = json.loads(out.read_text())
    for key in ("group_reset_8_s_p50", "fork_8_s_p50", "trl_call_p50_ms"):
        assert rep[key] > 0, key
