"""The MCP benchmark (bench/mcp_bench.py) runs end to end in its smoke mode."""

from __future__ import annotations

from pathlib import Path

from benchrun import run_suite


def test_mcp_bench_smoke(binary: str, tmp_path: Path) -> None:
    rep = run_suite("mcp_bench.py", binary, tmp_path)
    s = rep["oracle_step"]
    assert s["ws_n"] == s["mcp_n"] == len(rep["actions"]) and s["ws_p50_ms"] > 0 and s["mcp_p50_ms"] > 0
