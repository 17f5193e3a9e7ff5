"""The eval benchmark (bench/eval_bench.py) runs end to end in its smoke mode."""

from __future__ import annotations

from pathlib import Path

from benchrun import run_suite


def test_eval_bench_smoke(binary: str, tmp_path: Path) -> None:
    rep = run_suite("eval_bench.py", binary, tmp_path)
    assert [a["parallel"] for a in rep["arms"]] == [1, 2]
    for a in rep["arms"]:
        assert a["success_rate"] == 1.0 and a["infra_failures"] == 0 and a["env_ms_per_step"] > 0
