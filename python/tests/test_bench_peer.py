"""The peer benchmark (bench/peer_bench.py, WebServ against BrowserGym) runs end to end in its smoke mode."""

from __future__ import annotations

from pathlib import Path

from benchrun import run_suite


def test_peer_bench_smoke(binary: str, tmp_path: Path) -> None:
    rep = run_suite("peer_bench.py", binary, tmp_path)
    for system, keys in (
        ("webserv", ("step_ms_p50", "html_tokens_before_median", "axtree_tokens_before_median")),
        ("browsergym", ("step_ms_p50", "axtree_tokens_before_median", "pruned_html_tokens_before_median")),
    ):
        for k in keys:
            assert rep[system][k] > 0, (system, k)
    assert len(rep["steps"]["webserv"]) == len(rep["steps"]["browsergym"]) > 10
    assert all(r > 0 for r in rep["ratios"].values())
    assert 0 <= rep["browsergym_lost_episodes"] < 3
