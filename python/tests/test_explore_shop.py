"""One model-free exploration of the bundled shop (a real server and Chromium), checked four ways: its
demonstrations and tasks, the state tasks of what it changed, the verifiers its instructions name, and the
oracles shortened by replay; and every task it wrote passes the server's check.

The four tests read one run (six episodes, seed 2, the module's fixture): each used to explore the shop
on its own, and the run holds every case they check (tasks of the three kinds, rows added to the cart,
demonstrations longer than their shortened oracles, independent solutions). The module is one work unit
of pytest-xdist's (conftest.py), so the run is made once."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from explore_checks import SFT_KEYS, assert_instructions_determine_verifiers, sft_rows, tasks_check

import webserv
from webserv.explore import check_tasks

EPISODES = 6


@dataclass
class Run:
    r: Any  # webserv.explore's result
    out: Path
    tasks: list[dict[str, Any]]
    checked: list[dict[str, Any]]  # check_tasks on the session's server: each task replayed
    check_output: str  # `webserv tasks check` (the real command) on the run's definition


@pytest.fixture(scope="module")
def run(server: str, binary: str, tmp_path_factory: pytest.TempPathFactory) -> Run:
    out = tmp_path_factory.mktemp("explore-shop")
    r = asyncio.run(
        webserv.explore(site="shopping", episodes=EPISODES, max_steps=12, k=4, out=out, server=server, seed=2)
    )
    tasks = json.loads(r.tasks.read_text())
    checked = asyncio.run(check_tasks(r.tasks, site="shopping", server=server))
    # Every task passes: oracle and independent solutions 1, wrong and null agents 0; those
    # without an independent solution are unverified.
    output = tasks_check(binary, out / "sites", len(tasks), unverified=r.stats["solutions"]["unverified"])
    return Run(r, out, tasks, checked, output)


def _all_pass(run: Run) -> None:
    assert [x["passed"] for x in run.checked] == [True] * len(run.tasks), run.checked
    n = len(run.tasks)
    assert f"{n} task(s), {n} passed, 0 failed" in run.check_output, run.check_output


def test_model_free_run_makes_demonstrations_and_tasks_whose_oracles_pass(run: Run) -> None:
    r = run.r
    assert r.stats["episodes"] == EPISODES and r.stats["mode"] == "model-free"
    assert r.stats["kept"] >= 1, r.stats
    assert sum(len(ep.steps) for ep in r.episodes) == r.stats["steps"] > 0
    rows = sft_rows(r.demonstrations)
    assert rows and all(set(row) == SFT_KEYS for row in rows)
    by_demo: dict[str, list[dict]] = {}
    for row in rows:
        by_demo.setdefault(row["episode_id"], []).append(row)
    assert len(by_demo) == r.stats["kept"]
    for demo in by_demo.values():
        assert demo[-1]["action"].startswith("stop(")  # the final stop, added post hoc
        assert [x["step"] for x in demo] == list(range(len(demo)))
        assert demo[-1]["previous_actions"] == [x["action"] for x in demo[:-1]]
    tasks = run.tasks
    assert 1 <= len(tasks) == r.stats["tasks"] <= r.stats["kept"]
    kinds = set()
    for t in tasks:
        assert t["sites"] == ["shopping"] and t["start_url"].startswith("__SHOPPING__/")
        kinds.add(t["eval"]["eval_types"][0])
        if t["eval"]["eval_types"] == ["url_match"]:
            assert t["eval"]["reference_url"].startswith("__SHOPPING__/") and t["oracle"][-1] == 'stop("")'
        elif t["eval"]["eval_types"] == ["state"]:  # what it changed in the shop's database
            assert t["category"] == "state" and all(c["db"] == "shop.db" for c in t["eval"]["state"])
        else:  # the one price the page showed, asked for and given in the final stop
            assert t["eval"]["eval_types"] == ["string_match"], t
            assert t["eval"]["answer_type"] == "currency", t
            price = t["eval"]["reference_answers"]["exact_match"]
            assert t["oracle"][-1] == f"stop({json.dumps(price)})" and "price" in t["intent"]
        assert t["intent"] and t["wrong"] == ['stop("")']
    # The run holds every kind of task the checks above are about.
    assert kinds == {"url_match", "state", "string_match"}, kinds
    # Every explored task's oracle reaches its reference page again, in a fresh episode; and the
    # server loads them: the run wrote a definition serving them, and `webserv tasks check`
    # replays every oracle (reward 1) and wrong sequence (reward 0).
    _all_pass(run)
    definition = json.loads(r.site_definition.read_text())
    assert r.site_definition == run.out / "sites" / "shopping-explored.json"
    assert definition["tasks"] == ["../tasks.json"] and definition["local"]["command"][1:3] == [
        "shop",
        "serve",
    ]


def test_state_tasks_check_what_a_demonstration_changed_in_the_shop(run: Run) -> None:
    """The explorer completes a form it started (a size for the cart): the row the add-to-cart
    inserted becomes a state task, checked over the row's stable columns (not its id, session or
    time), verified by a replay (it holds at the end, not at the start), and graded by the server:
    oracle 1, `stop("")` at the start 0."""
    r = run.r
    steps = [s for ep in r.episodes for s in ep.steps if any(c["table"] == "cart_items" for c in s.changes)]
    assert steps and all("add-to-cart" in s.action for s in steps), r.stats
    state = [t for t in run.tasks if t["category"] == "state"]
    assert state and r.stats["state"]["tasks"] == len(state) <= r.stats["state"]["verified"], r.stats["state"]
    for t in state:
        assert t["intent"].startswith("Add to cart on the ") and t["wrong"] == ['stop("")']
        (check,) = t["eval"]["state"]
        assert check["db"] == "shop.db" and check["expect"] == "1"
        assert check["sql"].startswith('SELECT COUNT(*) FROM "cart_items" WHERE "product_id" = ?')
        assert not any(w in check["sql"] for w in ('"id"', "session", "_at"))
        assert any("add-to-cart" in a for a in t["oracle"])
    _all_pass(run)


def test_explored_verifiers_check_what_the_instruction_names(run: Run) -> None:
    """url references keep only the query parameters the intent names, state checks' values are
    named in the intent, no intent names nothing (a search for “”), one verifier per intent; and
    every task still passes the server's check."""
    r = run.r
    assert run.tasks, r.stats
    assert_instructions_determine_verifiers(run.tasks)
    assert r.stats["intents"]["distinct"] == len(run.tasks)
    assert len({row["instruction"] for row in sft_rows(r.demonstrations)}) >= len(run.tasks)
    _all_pass(run)


def test_oracles_are_shortened_to_what_the_task_needs(run: Run) -> None:
    """Each demonstration is shortened by replay before it is written; the median oracle is shorter
    than the explored demonstrations, the rows are the shortened sequence, and every task still
    passes the server's check (oracle and independent solutions 1, wrong and null agents 0)."""
    r, tasks = run.r, run.tasks
    lengths = r.stats["oracle_length"]
    assert tasks and lengths["tasks"] == len(tasks) and lengths["replays"] > 0, lengths
    assert lengths["after_median"] < lengths["before_median"], lengths
    for t in tasks:
        assert len(t["oracle"]) - 1 <= t["explored"]["explored_steps"]
        assert t["explored"]["steps"] == len(t["oracle"]) - 1
    by_demo: dict[str, list[dict]] = {}
    for row in sft_rows(r.demonstrations):
        by_demo.setdefault(row["episode_id"], []).append(row)
    oracles = sorted(t["oracle"] for t in tasks)
    assert all(o in [[x["action"] for x in d] for d in by_demo.values()] for o in oracles)
    # Independent solutions, found from the intent and the pages: most tasks have one, each earns 1
    # in the server's check (tasks_check asserted each solution's 1 and the unverified count), and
    # the others are unverified there.
    sols = r.stats["solutions"]
    assert sols["solved"] >= 1 and sols["solved"] + sols["unverified"] == len(tasks), sols
    assert sum(1 for t in tasks if t.get("solutions")) == sols["solved"]
    _all_pass(run)
