"""The token budget benchmark (bench/budget_bench.py) runs end to end in its smoke mode."""

from __future__ import annotations

from pathlib import Path

from benchrun import run_suite


def test_budget_bench_smoke(binary: str, tmp_path: Path) -> None:
    rep = run_suite("budget_bench.py", binary, tmp_path)
    for row in rep["rows"]:
        assert row["off_ms"] > 0 and row["on_ms"] > 0
        assert row["tokens_after"] <= rep["budget"] and row["tokens_after"] <= row["tokens_before"]
    assert any(r["tokens_before"] > rep["budget"] for r in rep["rows"])  # a page over the budget was pruned
