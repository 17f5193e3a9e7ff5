"""The MiniWoB benchmark (bench/miniwob_bench.py, WebServ against BrowserGym's browsergym-miniwob)
runs end to end in its smoke mode, saturation part included (N up to 2)."""

from __future__ import annotations

from pathlib import Path

from benchrun import run_suite


def test_miniwob_bench_smoke(binary: str, tmp_path: Path) -> None:
    rep = run_suite("miniwob_bench.py", binary, tmp_path, extra=("--saturate",))
    # Both systems seed the page alike (the goal comes from the seed alone) and grade alike where
    # both played without an action error: BrowserGym's click gives up after its own 500 ms
    # whatever its Playwright timeout, and a loaded host can run that out (the peer's timing,
    # not a disagreement; the report counts such pairs as not compared).
    pairs = rep["agreement"]
    assert pairs and all(p["same_goal"] for p in pairs), [(p["task"], p["seed"]) for p in pairs]
    assert all(p["compared"] == (not p["webserv"]["errors"] and not p["browsergym"]["errors"]) for p in pairs)
    assert all(p["same_reward"] for p in pairs if p["compared"]), [
        (p["task"], p["seed"], {s: (p[s]["reward"], p[s]["errors"]) for s in ("webserv", "browsergym")})
        for p in pairs
    ]
    # WebServ's side, ours, holds under any load: every episode solved without an error.
    assert all(p["webserv"]["reward"] == 1.0 and not p["webserv"]["errors"] for p in pairs)
    for name in ("webserv", "browsergym"):
        for run in rep["throughput"][name]:
            assert run["steps"] > 0 and run["steps_per_s"] > 0 and run["cpu_ms_per_step"] > 0, (name, run)
    # The saturation part: each system's runs at N = 1, 2 (or fewer, where it stopped rising),
    # its saturation point among them, and what stopped it.
    for name in ("webserv", "browsergym"):
        sat, runs = rep["saturation"][name], rep["throughput"][name]
        assert [r["n"] for r in runs] in ([1], [1, 2]) and sat["n"] in [r["n"] for r in runs], runs
        assert sat["episodes_per_cpu_s"] > 0 and sat["episodes_per_s"] > 0 and sat["mem_per_env_mb"] > 0, sat
        assert "N=" in sat["stopped"] or "--max-n 2" in sat["stopped"], sat["stopped"]
    assert "At saturation" in rep["headline"]
