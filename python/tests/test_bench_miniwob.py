"""The MiniWoB benchmark (bench/miniwob_bench.py, WebServ against BrowserGym's browsergym-miniwob)
runs end to end in its smoke mode."""

from __future__ import annotations

from pathlib import Path

from benchrun import run_suite


def test_miniwob_bench_smoke(binary: str, tmp_path: Path) -> None:
    rep = run_suite("miniwob_bench.py", binary, tmp_path)
    # Both systems seed the page alike and grade alike.
    pairs = rep["agreement"]
    assert pairs and all(p["same_goal"] and p["same_reward"] for p in pairs), [
        (
            p["task"],
            p["seed"],
            p["same_goal"],
            {s: (p[s]["reward"], p[s]["errors"]) for s in ("webserv", "browsergym")},
        )
        for p in pairs
    ]
    assert all(p["webserv"]["reward"] == 1.0 for p in pairs)
    for name in ("webserv", "browsergym"):
        for run in rep["throughput"][name]:
            assert run["steps"] > 0 and run["steps_per_s"] > 0 and run["cpu_ms_per_step"] > 0, (name, run)
