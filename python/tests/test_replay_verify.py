"""Deterministic episodes (docs/ui.md "Re-run"): MiniWoB episodes recorded with a seed replay
in a fresh environment of `webserv replay --verify`, every step's page hash as recorded."""

from __future__ import annotations

import asyncio
import gzip
import json
import subprocess
from pathlib import Path

from miniwob_solvers import SOLVERS
from test_fork_exact import click_button_sequence

import webserv
from webserv.launcher import LocalServer

EPISODES = [("click-button-sequence", click_button_sequence, 2), ("enter-text", SOLVERS["enter-text"], 1)]


def test_recorded_miniwob_episodes_replay_exactly(binary: str, tmp_path: Path) -> None:
    traj = tmp_path / "trajectories"
    srv = LocalServer(binary, ["--idle", "200ms", "--no-bundled", "--no-incus", "--trajectories", str(traj)])

    async def main() -> None:
        async with webserv.AsyncClient(srv.url) as client:
            for task, solver, seed in EPISODES:
                env = client.env("miniwob", task=f"miniwob.{task}", record={})
                obs, _ = await env.reset(seed=seed)
                gen, reward, term = solver(obs), 0.0, False
                action = next(gen)
                while True:
                    obs, reward, term, trunc, _ = await env.step(action)
                    if term or trunc:
                        break
                    action = gen.send(obs)
                assert (reward, term) == (1.0, True)
                await env.close()

    try:
        asyncio.run(main())
    finally:
        srv.stop()
    files = sorted(traj.rglob("*.jsonl.gz"))
    assert len(files) == len(EPISODES), files
    for f in files:
        head, *lines = (json.loads(x) for x in gzip.open(f))
        assert head["seed"] in {seed for *_, seed in EPISODES}
        assert all(len(line["obs_hash"]) == 32 for line in lines)
    out = subprocess.run(
        [binary, "replay", "--verify", "--no-bundled", "--no-incus", "--idle", "200ms", *map(str, files)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr[-2000:]
    assert out.stdout.count("every observation as recorded") == len(EPISODES), out.stdout
