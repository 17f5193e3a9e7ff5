"""Exploration on the bundled shop (a real server and Chromium): the model-free mode, and the model mode
against a stand-in for the user's model (an endpoint answering from a recorded script; not a model)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
from standin_model import StandInModel

import webserv
from webserv.explore import check_tasks, url_matches

SFT_KEYS = {
    "episode_id",
    "step",
    "instruction",
    "url",
    "observation",
    "previous_actions",
    "action",
    "episode_reward",
}


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_model_free_run_makes_demonstrations_and_tasks_whose_oracles_pass(
    server: str, tmp_path: Path
) -> None:
    r = asyncio.run(
        webserv.explore(site="shopping", episodes=2, max_steps=8, k=4, out=tmp_path, server=server)
    )
    assert r.stats["episodes"] == 2 and r.stats["mode"] == "model-free"
    assert r.stats["kept"] >= 1, r.stats
    assert sum(len(ep.steps) for ep in r.episodes) == r.stats["steps"] > 0
    rows = _rows(r.demonstrations)
    assert rows and all(set(row) == SFT_KEYS for row in rows)
    by_demo: dict[str, list[dict]] = {}
    for row in rows:
        by_demo.setdefault(row["episode_id"], []).append(row)
    assert len(by_demo) == r.stats["kept"]
    for demo in by_demo.values():
        assert demo[-1]["action"] == 'stop("")'  # the final stop, added post hoc
        assert [x["step"] for x in demo] == list(range(len(demo)))
        assert demo[-1]["previous_actions"] == [x["action"] for x in demo[:-1]]
    tasks = json.loads(r.tasks.read_text())
    assert len(tasks) == r.stats["kept"]
    for t in tasks:
        assert t["sites"] == ["shopping"] and t["start_url"].startswith("__SHOPPING__/")
        assert t["eval"]["eval_types"] == ["url_match"] and t["eval"]["reference_url"].startswith(
            "__SHOPPING__/"
        )
        assert t["oracle"][-1] == 'stop("")' and t["intent"]
    # Every explored task's oracle reaches its reference page again, in a fresh episode.
    results = asyncio.run(check_tasks(r.tasks, site="shopping", server=server))
    assert [x["passed"] for x in results] == [True] * len(tasks), results


def test_url_match_is_gold_in_pred() -> None:
    assert url_matches("http://s/category/boots", "http://s/category/boots?sort=")
    assert url_matches("http://s/search?q=hiker", "http://s/search?q=hiker&page=2")
    assert not url_matches("http://s/search?q=hiker", "http://s/search?q=boots")
    assert not url_matches("http://s/cart", "http://s/category/boots")


ACTIONS_1 = ['click("categories.clothing-2")', "go_back()", 'click("cart")', "go_back()"]
ACTIONS_2 = ['click("categories.shoes-2")', "go_back()", 'click("about-us")', 'click("categories.outdoor-2")']


def test_model_mode_labels_and_prunes_as_the_script_says(server: str, tmp_path: Path) -> None:
    script = [{"match": "Next action?", "reply": "I would like to look around first."}]  # malformed: retried
    script += [{"match": "Next action?", "reply": f"Thinking.\nAction: {a}"} for a in ACTIONS_1]
    script += [
        {"match": "Instruction for this trajectory", "reply": "Instruction: Look at the cart, then go home."},
        {"match": "Score the trajectory", "reply": "Score: 1"},
    ]
    script += [{"match": "Next action?", "reply": f"Action: {a}"} for a in ACTIONS_2]
    script += [
        {"match": "Instruction for this trajectory", "reply": "Instruction: Open the Outdoor category."},
        {"match": "Score the trajectory", "reply": "It did not really. Score: 0"},
    ]
    m = StandInModel(script)
    try:
        r = asyncio.run(
            webserv.explore(
                site="shopping",
                episodes=1,
                max_steps=8,
                k=4,
                out=tmp_path,
                server=server,
                model=m.url,
                model_name="stand-in",
                personas=["a hiker who reads every return policy"],
            )
        )
    finally:
        m.stop()
    ep = r.episodes[0]
    assert ep.status == "pruned" and ep.pruned_at == 8, (ep.status, ep.error)
    assert [s.action for s in ep.steps] == ACTIONS_1 + ACTIONS_2
    assert [(n, lab.instruction) for n, lab in ep.kept] == [(4, "Look at the cart, then go home.")]
    assert r.stats["pruned_by_step"] == {8: 1} and r.stats["kept"] == 1
    assert m.script == [] and len(m.requests) == 13  # 9 actions (one asked twice), 2 labels, 2 scores
    first = m.requests[0]["messages"][-1]["content"]
    assert "a hiker who reads every return policy" in first  # the persona
    assert "select_option(" in first and "go_back()" in first  # the action grammar
    assert "[categories.clothing-2]" in first  # the observation, with the ids actions name
    assert r.stats["endpoint"][0]["calls"] == 13
    tasks = json.loads(r.tasks.read_text())
    assert [t["intent"] for t in tasks] == ["Look at the cart, then go home."]
    assert tasks[0]["oracle"] == [*ACTIONS_1, 'stop("")']


def test_an_endpoint_that_dies_mid_run_loses_no_kept_demonstration(server: str, tmp_path: Path) -> None:
    script = [{"match": "Next action?", "reply": f"Action: {a}"} for a in ACTIONS_1]
    script += [
        {"match": "Instruction for this trajectory", "reply": "Instruction: Look at the cart, then go home."},
        {"match": "Score the trajectory", "reply": "Score: 1"},
        {"match": "Next action?", "die": True},
    ]
    m = StandInModel(script)
    try:
        r = asyncio.run(
            webserv.explore(
                site="shopping",
                episodes=1,
                max_steps=8,
                k=4,
                out=tmp_path,
                server=server,
                model=m.url,
                model_name="stand-in",
            )
        )
    finally:
        m.stop()
    ep = r.episodes[0]
    assert ep.status == "endpoint_error" and ep.pruned_at is None  # never a pruning decision
    assert "unreachable" in ep.error or "503" in ep.error
    assert r.stats["kept"] == 1 and r.stats["pruned_by_step"] == {}
    assert len({row["episode_id"] for row in _rows(r.demonstrations)}) == 1


def test_bad_settings_are_refused_before_anything_runs(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="model_name"):
        asyncio.run(webserv.explore(model="http://127.0.0.1:1/v1", out=tmp_path))
    with pytest.raises(ValueError, match="need model="):
        asyncio.run(webserv.explore(model_name="x", out=tmp_path))
    with pytest.raises(ValueError, match=">= 1"):
        asyncio.run(webserv.explore(k=0, out=tmp_path))
    empty = tmp_path / "personas.txt"
    empty.write_text("# none\n")
    with pytest.raises(ValueError, match="no personas"):
        asyncio.run(webserv.explore(personas=empty, out=tmp_path))


def test_malformed_model_output_is_retried_then_recorded_not_a_crash(server: str, tmp_path: Path) -> None:
    script = [{"match": "Next action?", "reply": f"Action: {a}"} for a in ACTIONS_1]
    script += [{"match": "Instruction for this trajectory", "reply": "The user browsed around."}] * 3
    m = StandInModel(script)
    try:
        r = asyncio.run(
            webserv.explore(
                site="shopping",
                episodes=1,
                max_steps=8,
                k=4,
                out=tmp_path,
                server=server,
                model=m.url,
                model_name="stand-in",
            )
        )
    finally:
        m.stop()
    ep = r.episodes[0]
    assert ep.status == "malformed_output" and "Instruction:" in ep.error and ep.pruned_at is None
    assert len(m.requests) == 4 + 3 and m.script == []  # asked three times, then recorded
    assert r.stats["errors"] == [{"episode": 0, "status": "malformed_output", "error": ep.error}]


def test_command_line_refuses_what_it_cannot_run(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "webserv.explore"]
    out = subprocess.run([*cmd, "--site", "open", "--out", str(tmp_path)], capture_output=True, text=True)
    assert out.returncode == 2 and "--site open needs --start-url" in out.stderr
    out = subprocess.run([*cmd, "--model-name", "x", "--out", str(tmp_path)], capture_output=True, text=True)
    assert out.returncode == 2 and "need model=" in out.stderr
    out = subprocess.run([*cmd, "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "--max-steps" in out.stdout and "--prompts" in out.stdout


def test_model_free_on_the_open_site(server: str, pages: str, tmp_path: Path) -> None:
    r = asyncio.run(
        webserv.explore(
            site="open",
            start_url=f"{pages}/page?n=0",
            episodes=1,
            max_steps=8,
            k=4,
            out=tmp_path,
            server=server,
        )
    )
    assert r.stats["kept"] >= 1, r.stats
    tasks = json.loads(r.tasks.read_text())
    assert all(t["start_url"] == f"{pages}/page?n=0" and t["sites"] == ["open"] for t in tasks)
    results = asyncio.run(check_tasks(r.tasks, site="open", server=server))
    assert [x["passed"] for x in results] == [True] * len(tasks), results
