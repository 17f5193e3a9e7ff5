"""The dream benchmark (bench/dream_bench.py) runs end to end in its smoke mode: every dreamed
observation equals the real one, and the memory model is exact on its own training transitions."""

from __future__ import annotations

import json
from pathlib import Path

from benchrun import run_smoke


def test_dream_bench_smoke(binary: str, tmp_path: Path) -> None:
    run_smoke("dream_bench.py", binary, tmp_path)
    rep = json.loads((tmp_path / "dream.json").read_text())
    md = (tmp_path / "dream.md").read_text()
    assert rep["smoke"] is True and "Machine: " in md and "Command: " in md
    steps = rep["steps"]
    assert steps["dream_steps"] == steps["real_steps"] > 0
    assert steps["dreamed_exactly"] == f"{steps['dream_steps']}/{steps['dream_steps']}"
    train = rep["wm_eval"]["train_itself"]["report"]
    assert train["one_step"]["exact"] == 1.0 and train["one_step"]["n"] > 0
    held = rep["wm_eval"]["heldout"]["report"]
    assert held["one_step"]["n"] > 0 and len(held["depth"]) == 5
