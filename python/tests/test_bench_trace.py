"""The network-trace benchmark (bench/trace_bench.py) runs end to end in its smoke mode."""

from __future__ import annotations

from pathlib import Path

from benchrun import run_suite


def test_trace_bench_smoke(binary: str, tmp_path: Path) -> None:
    rep = run_suite("trace_bench.py", binary, tmp_path)
    assert rep["steps_per_arm"] > 0 and rep["off_p50_ms"] > 0 and rep["on_p50_ms"] > 0
