"""The settle benchmark (bench/settle_bench.py) runs end to end in its smoke mode."""

from __future__ import annotations

from pathlib import Path

from benchrun import run_suite


def test_settle_bench_smoke(binary: str, tmp_path: Path) -> None:
    rep = run_suite("settle_bench.py", binary, tmp_path)
    for strategy in ("webserv", "browsergym-slowmo0", "networkidle"):
        s = rep["summary"][strategy]
        assert 0 <= s["correct"] <= 1 and s["mean_ms"] > 0, strategy
        assert set(rep["results"][strategy]) == set(rep["cases"])
