"""The RL benchmark's smoke mode: it must run end to end and write its report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import REPO


def test_rl_bench_smoke(binary: str, tmp_path: Path) -> None:
    out = tmp_path / "rl.json"
    env = {**os.environ, "WEBSERV_BIN": binary}
    env.pop("WEBSERV_URL", None)
    run = subprocess.run(
        [sys.executable, str(REPO / "bench" / "rl_bench.py"), "--smoke", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    rep = json.loads(out.read_text())
    for key in ("group_reset_8_s_p50", "fork_8_s_p50", "fork_8_history_10_s_p50", "trl_call_p50_ms"):
        assert rep[key] > 0, key


def _run_suite(script: str, binary: str, out: Path) -> dict:
    env = {**os.environ, "WEBSERV_BIN": binary}
    env.pop("WEBSERV_URL", None)
    run = subprocess.run(
        [sys.executable, str(REPO / "bench" / script), "--smoke", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    suite = script.split("_")[0]
    rep = json.loads((out / f"{suite}.json").read_text())
    md = (out / f"{suite}.md").read_text()
    assert "Machine: " in md and "Command: " in md and rep["machine"]["cores"] > 0
    assert (out / f"{suite}.png").read_bytes().startswith(b"\x89PNG")
    assert rep["smoke"] is True and rep["headline"]
    return rep


def test_settle_bench_smoke(binary: str, tmp_path: Path) -> None:
    rep = _run_suite("settle_bench.py", binary, tmp_path)
    for strategy in ("webserv", "browsergym", "networkidle"):
        s = rep["summary"][strategy]
        assert 0 <= s["correct"] <= 1 and s["mean_ms"] > 0, strategy
        assert set(rep["results"][strategy]) == set(rep["cases"])


def test_peer_bench_smoke(binary: str, tmp_path: Path) -> None:
    rep = _run_suite("peer_bench.py", binary, tmp_path)
    for system, keys in (
        ("webserv", ("step_ms_p50", "html_tokens_before_median", "axtree_tokens_before_median")),
        ("browsergym", ("step_ms_p50", "axtree_tokens_before_median", "pruned_html_tokens_before_median")),
    ):
        for k in keys:
            assert rep[system][k] > 0, (system, k)
    assert len(rep["steps"]["webserv"]) == len(rep["steps"]["browsergym"]) > 10
    assert all(r > 0 for r in rep["ratios"].values())


def test_vector_bench_smoke(binary: str, tmp_path: Path) -> None:
    out = tmp_path / "vector.json"
    env = {**os.environ, "WEBSERV_BIN": binary}
    env.pop("WEBSERV_URL", None)
    run = subprocess.run(
        [sys.executable, str(REPO / "bench" / "vector_bench.py"), "--smoke", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    rep = json.loads(out.read_text())
    for variant in ("vector", "threads"):
        assert rep[variant]["actions"] == 2 * 3 and rep[variant]["actions_per_s"] > 0, rep
    assert rep["ratio_vector_over_threads"] > 0 and len(rep["load_average_before"]) == 3


def test_trace_bench_smoke(binary: str, tmp_path: Path) -> None:
    rep = _run_suite("trace_bench.py", binary, tmp_path)
    assert rep["steps_per_arm"] > 0 and rep["off_p50_ms"] > 0 and rep["on_p50_ms"] > 0


def test_ray_bench_smoke(binary: str, tmp_path: Path) -> None:
    out = tmp_path / "ray.json"
    env = {**os.environ, "WEBSERV_BIN": binary}
    env.pop("WEBSERV_URL", None)
    run = subprocess.run(
        [sys.executable, str(REPO / "bench" / "ray_bench.py"), "--smoke", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    rep = json.loads(out.read_text())
    assert {r["variant"] for r in rep["rounds"]} == {"fleet", "urls"}
    assert all(r["solved"] == r["episodes"] for r in rep["rounds"]), rep["rounds"]
    assert rep["ratio_fleet_over_urls"] > 0
