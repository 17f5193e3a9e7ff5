"""The RL benchmark (bench/rl_bench.py) runs end to end in its smoke mode and writes its report."""

from __future__ import annotations

import json
from pathlib import Path

from benchrun import run_smoke


def test_rl_bench_smoke(binary: str, tmp_path: Path) -> None:
    out = tmp_path / "rl.json"
    run_smoke("rl_bench.py", binary, out, timeout=300)
    rep = json.loads(out.read_text())
    for key in ("group_reset_8_s_p50", "fork_8_s_p50", "fork_8_history_10_s_p50", "trl_call_p50_ms"):
        assert rep[key] > 0, key
