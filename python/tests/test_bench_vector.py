"""The vector-env benchmark (bench/vector_bench.py) runs end to end in its smoke mode."""

from __future__ import annotations

import json
from pathlib import Path

from benchrun import run_smoke


def test_vector_bench_smoke(binary: str, tmp_path: Path) -> None:
    out = tmp_path / "vector.json"
    run_smoke("vector_bench.py", binary, out, timeout=300)
    rep = json.loads(out.read_text())
    for variant in ("vector", "threads"):
        assert rep[variant]["actions"] == 2 * 3 and rep[variant]["actions_per_s"] > 0, rep
    assert rep["ratio_vector_over_threads"] > 0 and len(rep["load_average_before"]) == 3
