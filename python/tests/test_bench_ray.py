"""The Ray fleet benchmark (bench/ray_bench.py) runs end to end in its smoke mode."""

from __future__ import annotations

import json
from pathlib import Path

from benchrun import run_smoke


def test_ray_bench_smoke(binary: str, tmp_path: Path) -> None:
    out = tmp_path / "ray.json"
    run_smoke("ray_bench.py", binary, out)
    rep = json.loads(out.read_text())
    assert {r["variant"] for r in rep["rounds"]} == {"fleet", "urls"}
    assert all(r["solved"] == r["episodes"] for r in rep["rounds"]), rep["rounds"]
    assert rep["ratio_fleet_over_urls"] > 0
