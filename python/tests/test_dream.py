"""The dream environment through gymnasium, against a real server: a recorded real episode is
dreamed again by the transition-memory model, exactly, and an action it never saw truncates the dream."""

from __future__ import annotations

from pathlib import Path

import gymnasium
import pytest

import webserv  # noqa: F401  (registers the ids)
from webserv.errors import WebServError
from webserv.launcher import LocalServer

ACTIONS = ['click("load")', 'fill("name", "Ada")', 'click("next")', 'click("nope")']
KEYS = ("url", "title", "html", "axtree_txt", "clickable", "last_action", "last_action_error")


def test_dream_replays_a_recorded_episode(binary: str, pages: str, tmp_path: Path) -> None:
    root = tmp_path / "trajectories"
    srv = LocalServer(binary, ["--idle", "200ms", "--no-bundled", "--trajectories", str(root)])
    try:
        real = gymnasium.make(
            "webserv/open",
            url=srv.url,
            start_url=f"{pages}/page?n=3",
            goal="Load the list, then go on",
            record={},
        )
        seen = [real.reset()[0]]
        seen += [real.step(a)[0] for a in ACTIONS]
        real.close()
        (episode,) = [str(p.relative_to(root)) for p in root.rglob("*.jsonl.gz")]

        env = gymnasium.make(
            "webserv/dream",
            url=srv.url,
            world_model={"memory": ["."]},
            start={"episode": episode, "step": 0},
            max_dream_steps=len(ACTIONS) + 2,
        )
        obs, info = env.reset()
        assert info["dreamed"] is True and info["cause"] == "make"
        assert {k: obs[k] for k in KEYS} == {k: seen[0][k] for k in KEYS}
        for action, want in zip(ACTIONS, seen[1:], strict=True):
            obs, reward, terminated, truncated, info = env.step(action)
            assert info["dreamed"] is True and not terminated and not truncated, info
            assert {k: obs[k] for k in KEYS} == {k: want[k] for k in KEYS}, action
        assert "nope" in obs["last_action_error"]  # the recorded failure, dreamed again

        obs, reward, terminated, truncated, info = env.step('click("never-recorded")')
        # The model ran out, not the task: truncated, saying why.
        assert truncated and not terminated and reward == 0.0, info
        assert info["dream_end"] == "unseen" and info["end_reason"] == "unseen"
        env.close()

        # A setting that does not fit a dream is refused, with what it takes.
        bad = gymnasium.make("webserv/dream", url=srv.url, world_model={"memory": ["."]}, idle_ms=100)
        with pytest.raises(WebServError, match="idle_ms does not apply to a dream"):
            bad.reset()
        bad.close()
    finally:
        srv.stop()
