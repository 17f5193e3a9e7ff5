"""Exploration on the bundled shop (a real server and Chromium): the model-free mode, and the model mode
against a stand-in for the user's model (an endpoint answering from a recorded script; not a model)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from conftest import sites_server
from explore_checks import assert_instructions_determine_verifiers, sft_rows, tasks_check
from standin_model import StandInModel

import webserv
from webserv.explore import ExploreFailed, ExploreOptions, check_tasks, url_matches
from webserv.explore import __main__ as explore_cli
from webserv.launcher import LocalServer


def explore_shop_with_standin(
    script: list[dict[str, str]], out: Path, server: Any, **kwargs: Any
) -> tuple[Any, StandInModel]:
    """One exploration episode of the shop with the stand-in answering from script (it stands in for the
    user's model); returns the run's result and the stand-in, stopped. Its demonstrations are written
    as the model gave them (shorten=False), unless the test asks otherwise."""
    kwargs.setdefault("shorten", False)
    m = StandInModel(script)
    try:
        r = asyncio.run(
            webserv.explore(
                site="shopping",
                episodes=1,
                out=out,
                server=server,
                model=m.url,
                model_name="stand-in",
                **kwargs,
            )
        )
    finally:
        m.stop()
    return r, m


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
    r, m = explore_shop_with_standin(
        script,
        tmp_path,
        server,
        max_steps=8,
        k=4,
        personas=["a hiker who reads every return policy"],
    )
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
    rows = sft_rows(r.demonstrations)
    assert [x["action"] for x in rows] == [*ACTIONS_1, 'stop("")']
    assert {x["instruction"] for x in rows} == {"Look at the cart, then go home."}
    # It ends on the home page it started on: stopping at once would pass its url_match, so the
    # demonstration is kept but makes no task.
    assert json.loads(r.tasks.read_text()) == [] and r.stats["tasks"] == 0


def test_an_endpoint_that_dies_mid_run_loses_no_kept_demonstration(server: str, tmp_path: Path) -> None:
    script = [{"match": "Next action?", "reply": f"Action: {a}"} for a in ACTIONS_1]
    script += [
        {"match": "Instruction for this trajectory", "reply": "Instruction: Look at the cart, then go home."},
        {"match": "Score the trajectory", "reply": "Score: 1"},
        {"match": "Next action?", "die": True},
    ]
    r, m = explore_shop_with_standin(script, tmp_path, server, max_steps=8, k=4)
    ep = r.episodes[0]
    assert ep.status == "endpoint_error" and ep.pruned_at is None  # never a pruning decision
    assert "unreachable" in ep.error or "503" in ep.error
    assert r.stats["kept"] == 1 and r.stats["pruned_by_step"] == {}
    assert len({row["episode_id"] for row in sft_rows(r.demonstrations)}) == 1


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


def test_explore_options_are_one_value_the_command_line_fills(tmp_path: Path) -> None:
    # Keywords over options; a misspelt keyword is refused naming the nearest.
    o = ExploreOptions.of(ExploreOptions(site="cms", episodes=2), k=2, out=tmp_path)
    assert (o.site, o.episodes, o.k, o.out) == ("cms", 2, 2, tmp_path)
    with pytest.raises(TypeError, match="did you mean 'episodes'"):
        asyncio.run(webserv.explore(episods=2, out=tmp_path))
    with pytest.raises(ValueError, match=">= 1"):
        asyncio.run(webserv.explore(ExploreOptions(k=0, out=tmp_path)))
    # Every option is an option of the command line (the live-sites group makes politeness).
    dests = {a.dest for a in explore_cli.parser()._actions}
    assert {f.name for f in dataclasses.fields(ExploreOptions)} - dests == {"politeness"}
    out = subprocess.run(
        [sys.executable, "-m", "webserv.explore", "--epsiodes", "2"], capture_output=True, text=True
    )
    assert out.returncode == 2 and "unknown option --epsiodes (did you mean --episodes?)" in out.stderr


def test_malformed_model_output_is_retried_then_recorded_not_a_crash(server: str, tmp_path: Path) -> None:
    script = [{"match": "Next action?", "reply": f"Action: {a}"} for a in ACTIONS_1]
    script += [{"match": "Instruction for this trajectory", "reply": "The user browsed around."}] * 3
    r, m = explore_shop_with_standin(script, tmp_path, server, max_steps=8, k=4)
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


SEARCH_TEE = [
    'fill("search.search-products", "Sierra Organic Pocket Tee")',
    'click("search.search")',
    'click("sierra-organic-pocket-tee")',
]


def test_an_answer_the_explorer_gives_becomes_a_string_match_task(
    server: str, binary: str, tmp_path: Path
) -> None:
    """The model's explorer ends the episode with the price it found: the labeler names the question,
    the reward model accepts it, and the task asks for that answer (string_match), graded by the server."""
    script = [{"match": "Next action?", "reply": f"Action: {a}"} for a in SEARCH_TEE]
    script += [
        {"match": "Next action?", "reply": 'The tee costs $50.99.\nAction: stop("$50.99")'},
        {"match": "Instruction for this trajectory", "reply": "Instruction: What does the Sierra tee cost?"},
        {"match": "Score the trajectory", "reply": "Score: 1"},
    ]
    r, m = explore_shop_with_standin(script, tmp_path, server, max_steps=8, k=8)
    ep = r.episodes[0]
    assert ep.status == "finished" and [(n, lab.answer) for n, lab in ep.kept] == [(4, "$50.99")], ep
    (task,) = json.loads(r.tasks.read_text())
    assert task["category"] == "information" and task["intent"] == "What does the Sierra tee cost?"
    assert task["eval"] == {
        "eval_types": ["string_match"],
        "answer_type": "currency",
        "reference_answers": {"exact_match": "$50.99"},
    }
    assert task["oracle"] == [*SEARCH_TEE, 'stop("$50.99")']  # the explorer's own stop, not a second one
    rows = sft_rows(r.demonstrations)
    assert [x["action"] for x in rows] == task["oracle"]
    tasks_check(binary, tmp_path / "sites", 1)


def test_model_free_labels_the_one_price_a_page_shows() -> None:
    from webserv.explore import Episode, PageStateReward, TrajectoryLabeler

    ep = Episode(0, "a hiker", "http://s/")
    page = {
        "url": "http://s/product/tee",
        "title": "Pocket Tee · Shop",
        "axtree_txt": "heading 'Tee'\n$50.99",
    }
    lab = asyncio.run(TrajectoryLabeler().label(ep, page))
    assert (lab.instruction, lab.answer) == ('What is the price of "Pocket Tee"?', "$50.99")
    assert asyncio.run(PageStateReward(4).score(ep, lab, page)) == 1
    two = {**page, "axtree_txt": "$50.99 $12.00"}  # two prices: no question has one answer
    assert asyncio.run(TrajectoryLabeler().label(ep, two)).answer == ""
    assert asyncio.run(PageStateReward(4).score(ep, lab, {**page, "axtree_txt": "sold out"})) == 0


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sites"


def test_explored_tasks_of_a_users_site_definition_passtasks_check(binary: str, tmp_path: Path) -> None:
    """The example tracker (a site definition of the user's kind): explored model-free, its tasks served
    by the definition the run writes (the user's, with the run's tasks) and checked by the server."""
    srv = sites_server(binary, str(EXAMPLE), str(tmp_path))
    out = tmp_path / "run"
    try:
        r = asyncio.run(
            webserv.explore(
                site="tracker",
                episodes=2,
                max_steps=8,
                k=4,
                out=out,
                server=srv.url,
                site_definition_file=EXAMPLE / "tracker.yaml",
                concurrency=1,
            )
        )
    finally:
        srv.stop()
    tasks = json.loads(r.tasks.read_text())
    assert tasks and all(t["start_url"] == "__SITE__/" for t in tasks), r.stats
    # Closing or reopening an issue is in the tracker's database (its definition's state_db): a state
    # task checks the issue's status by its id.
    state = [t for t in tasks if t["category"] == "state"]
    assert state and r.stats["state"]["db"] == "tracker.db", r.stats["state"]
    for t in state:
        (check,) = t["eval"]["state"]
        assert check["db"] == "tracker.db" and check["sql"] == 'SELECT "status" FROM "issues" WHERE "id" = ?'
        assert check["expect"] in ("open", "closed") and t["intent"].split()[0] in ("Close", "Reopen")
    definition = json.loads((out / "sites" / "tracker-explored.json").read_text())
    assert definition["name"] == "tracker-explored"  # beside the server's own tracker
    assert definition["local"]["command"][0] == str(EXAMPLE / "tracker" / "app.py")
    assert definition["tasks"] == ["../tasks.json"]
    tasks_check(binary, out / "sites", len(tasks))


def test_best_of_k_keeps_a_shorter_attempt_that_scores(server: str, binary: str, tmp_path: Path) -> None:
    """Best-of-K with the model (a stand-in): the explorer wandered 4 steps to the Outdoor category;
    of two fresh attempts at the instruction, the first gets there in one click and scores 1, the
    second does not (0): the kept demonstration is the first attempt's."""
    script = [{"match": "Next action?", "reply": f"Action: {a}"} for a in ACTIONS_2]
    script += [
        {"match": "Instruction for this trajectory", "reply": "Instruction: Open the Outdoor category."},
        {"match": "Score the trajectory", "reply": "Score: 1"},
        {"match": "Next action toward the task?", "reply": 'Action: click("categories.outdoor-2")'},
        {"match": "Next action toward the task?", "reply": 'Action: stop("")'},
        {"match": "Score the trajectory", "reply": "Score: 1"},
        {"match": "Next action toward the task?", "reply": 'Action: click("cart")'},
        {"match": "Next action toward the task?", "reply": 'Action: stop("")'},
        {"match": "Score the trajectory", "reply": "Score: 0"},
    ]
    r, m = explore_shop_with_standin(
        script,
        tmp_path,
        server,
        max_steps=4,
        k=4,
        best_of=2,
        concurrency=1,  # the attempts one after the other, as the script is ordered
    )
    assert m.script == [], m.script
    attempts = [
        q["messages"][-1]["content"] for q in m.requests if "toward the task" in q["messages"][-1]["content"]
    ]
    assert len(attempts) == 4 and all("Task: Open the Outdoor category." in a for a in attempts)
    (demo,) = r.demos
    assert demo.best_of == {"k": 2, "scores": [1, 0], "lengths": [2, 2], "original_length": 4, "chosen": 1}
    (task,) = json.loads(r.tasks.read_text())
    assert task["oracle"] == ['click("categories.outdoor-2")', 'stop("")']
    assert task["explored"]["best_of"]["chosen"] == 1 and r.stats["best_of"] == {"k": 2, "replaced": 1}
    tasks_check(binary, tmp_path / "sites", 1)


def test_model_free_best_of_k_replays_the_demonstration_with_a_stretch_left_out(
    server: str, tmp_path: Path
) -> None:
    r = asyncio.run(
        webserv.explore(
            site="shopping", episodes=1, max_steps=8, k=4, out=tmp_path, server=server, best_of=2, seed=3
        )
    )
    assert r.demos, r.stats
    for d in r.demos:
        assert d.best_of is not None and d.best_of["k"] == 2 and len(d.best_of["scores"]) == 2
        if d.best_of["original_length"] > 1:  # each attempt left a stretch out
            assert all(n < d.best_of["original_length"] for n in d.best_of["lengths"]), d.best_of
        assert len(d.steps) <= d.best_of["original_length"]
    results = asyncio.run(check_tasks(r.tasks, site="shopping", server=server))
    assert [x["passed"] for x in results] == [True] * len(results), results


def test_frontier_episodes_start_from_pages_found_earlier(server: str, binary: str, tmp_path: Path) -> None:
    """Go-Browse on the shop: two episodes explore from the start and leave snapshots of the pages they
    reach; the two after them start on forks of those (not on the home page), and their tasks, replayed
    from the site's start through the path to the frontier page, still pass."""
    r = asyncio.run(
        webserv.explore(
            site="shopping",
            episodes=4,
            concurrency=2,
            max_steps=8,
            k=4,
            out=tmp_path,
            server=server,
            frontier=True,
        )
    )
    home = r.episodes[0].origin_url
    first, later = r.episodes[:2], r.episodes[2:]
    assert all(ep.start_cause == "reset" and ep.start_url == home for ep in first)
    assert all(ep.start_cause == "frontier" for ep in later), [(ep.start_cause, ep.error) for ep in later]
    for ep in later:
        assert ep.start_url != home and ep.prefix and ep.prefix[0].url == home
        assert ep.prefix[-1].next_url == ep.start_url  # the path ends on the page the episode began on
    frontier = r.stats["frontier"]
    assert frontier["entries"] >= 1 and frontier["starts"] == 2 and r.stats["started_from_frontier"] == 2
    cov = r.stats["coverage"]
    assert cov and [c["pages"] for c in cov] == sorted(c["pages"] for c in cov)
    assert (
        cov[-1]["pages"] == r.stats["distinct_pages"] and cov[-1]["patterns"] == r.stats["distinct_patterns"]
    )
    tasks = json.loads(r.tasks.read_text())
    assert any(t["explored"]["start"] == "frontier" for t in tasks) or not any(ep.kept for ep in later)
    results = asyncio.run(check_tasks(r.tasks, site="shopping", server=server))
    assert [x["passed"] for x in results] == [True] * len(tasks), results
    tasks_check(binary, tmp_path / "sites", len(tasks))


def test_webserv_explore_is_a_command_of_the_binary_and_of_the_console_script(
    server: str, binary: str, tmp_path: Path
) -> None:
    """`webserv explore` (the Go binary runs the package's loop with $WEBSERV_PYTHON's interpreter), and
    the same through the pip-installed console script's function, which points the binary at its own
    Python."""
    env = {**os.environ, "WEBSERV_PYTHON": sys.executable}
    out = subprocess.run([binary, "explore", "--help"], capture_output=True, text=True, env=env)
    assert out.returncode == 0 and "usage: webserv explore" in out.stdout and "--frontier" in out.stdout
    out = subprocess.run([binary, "explore", "--site", "open"], capture_output=True, text=True, env=env)
    assert out.returncode == 2 and "--site open needs --start-url" in out.stderr
    run = tmp_path / "run"
    args = ["explore", "--site", "shopping", "--episodes", "1", "--max-steps", "4", "--server", server]
    out = subprocess.run([binary, *args, "--out", str(run)], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["episodes"] == 1 and (run / "tasks.json").exists()
    # The console script `pip install .` puts beside this interpreter, without WEBSERV_PYTHON: it runs
    # the binary, pointing it at its own interpreter.
    script = Path(sys.executable).parent / "webserv"
    assert script.is_file(), "pip install . installs the webserv console command"
    env = {k: v for k, v in os.environ.items() if k != "WEBSERV_PYTHON"} | {"WEBSERV_BIN": binary}
    env["PATH"] = str(tmp_path)  # no python3 to fall back on: the interpreter must come from the script
    out = subprocess.run([str(script), "explore", "--help"], capture_output=True, text=True, env=env)
    assert out.returncode == 0 and "usage: webserv explore" in out.stdout, out.stderr


class _Forms(BaseHTTPRequestHandler):
    """A stand-in for a live site, on 127.0.0.1: a page with a POST form (an order) and a link; it
    records every request's method and User-Agent."""

    seen: list[tuple[str, str, str]] = []

    def _page(self) -> None:
        body = (
            b"<!doctype html><title>Live</title><h1>Live shop</h1>"
            b'<form method="post" action="/order"><input name="qty" placeholder="Quantity">'
            b"<button>Order now</button></form>"
            b'<a href="/about">About us</a><a href="/faq">FAQ</a>'
        )
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        _Forms.seen.append(("GET", self.path, self.headers.get("User-Agent", "")))
        self._page()

    def do_POST(self) -> None:  # noqa: N802
        _Forms.seen.append(("POST", self.path, self.headers.get("User-Agent", "")))
        self._page()

    def log_message(self, *args: object) -> None:
        pass


def test_live_sites_deny_submit_and_politeness_apply_to_every_explorer(server: str, tmp_path: Path) -> None:
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Forms)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    _Forms.seen = []
    start = f"http://127.0.0.1:{srv.server_address[1]}/"
    try:
        r = asyncio.run(
            webserv.explore(
                site="open",
                start_url=start,
                episodes=2,
                max_steps=8,
                k=4,
                out=tmp_path,
                server=server,
                deny_submit=True,
                politeness={"user_agent": "webserv-explore-test", "concurrency_per_host": 2},
            )
        )
    finally:
        srv.shutdown()
    actions = [s.action for ep in r.episodes for s in ep.steps]
    assert any('"order-now"' in a or "enter=True" in a for a in actions), actions  # it tried to order
    assert [x for x in _Forms.seen if x[0] != "GET"] == []  # and the live site got no order
    assert {ua for _, _, ua in _Forms.seen} == {"webserv-explore-test"}  # every explorer's requests
    reasons = r.stats["refused"]
    assert any(k.startswith("deny_submit: a POST to 127.0.0.1:") for k in reasons), reasons
    refused_steps = [s for ep in r.episodes for s in ep.steps if "refused" in s.error]
    assert refused_steps, "a refused submission is the step's last_action_error"
    tasks = json.loads(r.tasks.read_text())
    assert all(not any("order-now" in a for a in t["oracle"]) for t in tasks)  # refused steps are no oracle
    with pytest.raises(ValueError, match="deny_submit=True"):
        asyncio.run(webserv.explore(site="open", start_url=start, submit_allow=["x"], out=tmp_path))


def test_state_candidates_leave_out_what_changes_from_run_to_run() -> None:
    from webserv.explore.state import candidate, humanize

    cols = [
        {"name": "id", "type": "INTEGER", "pk": 1, "default": None},
        {"name": "session_id", "type": "TEXT", "pk": 0, "default": None},
        {"name": "product_id", "type": "INTEGER", "pk": 0, "default": None},
        {"name": "note", "type": "TEXT", "pk": 0, "default": None},
        {"name": "qty", "type": "INTEGER", "pk": 0, "default": "1"},
        {"name": "created_at", "type": "TEXT", "pk": 0, "default": None},
    ]
    row = {
        "id": 9,
        "session_id": "s1",
        "product_id": 5,
        "note": None,
        "qty": 1,
        "created_at": "2026-11-24 20:00:00",
    }
    c = candidate({"table": "cart_items", "op": "insert", "row": row}, cols)
    assert c is not None
    assert (
        c["sql"]
        == 'SELECT COUNT(*) FROM "cart_items" WHERE "product_id" = ? AND "note" IS NULL AND "qty" = ?'
    )
    assert c["args"] == [5, 1]
    # A row of nothing but defaults, NULLs and volatile values (a session made in passing) names nothing.
    empty = {**row, "product_id": None}
    assert candidate({"table": "cart_items", "op": "insert", "row": empty}, cols) is None
    # An update is read by the row's key; a delete is counted by it.
    upd = {"table": "cart_items", "op": "update", "row": {**row, "qty": 3}, "old": {"qty": 1}}
    assert candidate(upd, cols) == {
        "sql": 'SELECT "qty" FROM "cart_items" WHERE "id" = ?',
        "args": [9],
        "table": "cart_items",
        "op": "update",
        "columns": 1,
    }
    gone = candidate({"table": "cart_items", "op": "delete", "row": row}, cols)
    assert gone is not None and gone["sql"] == 'SELECT COUNT(*) FROM "cart_items" WHERE "id" = ?'
    # A row whose key is a random token cannot be found again.
    sess = [
        {"name": "id", "type": "TEXT", "pk": 1, "default": None},
        {"name": "cart", "type": "TEXT", "pk": 0},
    ]
    tok = {
        "table": "sessions",
        "op": "update",
        "row": {"id": "9f2c4e1a7b3d5f60", "cart": "x"},
        "old": {"cart": ""},
    }
    assert candidate(tok, sess) is None
    assert humanize('click("add-to-cart.add-to-cart")') == "Add to cart"
    assert humanize('select_option("add-to-cart.size", "M")') == 'Choose "M" for "size"'


def _episodes(root: Path) -> dict[str, list[dict[str, Any]]]:
    """The recorded episodes under root by environment id: each file's lines, read as gzipped JSON Lines
    (the format of package trajectory, docs/trajectories.md)."""
    import gzip

    out: dict[str, list[dict[str, Any]]] = {}
    for f in sorted(root.rglob("*.jsonl.gz")):
        with gzip.open(f, "rt") as fh:
            out[f.parent.name] = [json.loads(line) for line in fh]
    return out


def test_raw_trajectories_record_every_explored_episode_with_screenshots_when_asked(
    binary: str, tmp_path: Path
) -> None:
    """raw=True records every exploration episode, kept or pruned (not best-of's attempts or the replays),
    as the server's trajectories: read back by the binary's own reader (`webserv export`, through
    trajectory.Read) and as gzipped JSON Lines; screenshots in every observation when asked, none when not."""
    srv = LocalServer(binary, ["--idle", "200ms", "--trajectories", str(tmp_path / "traj")])
    try:
        runs = {}
        for shots in (True, False):
            out = tmp_path / f"run-{shots}"
            runs[shots] = asyncio.run(
                webserv.explore(
                    site="shopping",
                    episodes=2,
                    max_steps=4,
                    k=4,
                    out=out,
                    server=srv.url,
                    raw=True,
                    screenshots=shots,
                    best_of=1,
                )
            )
    finally:
        srv.stop()
    for shots, r in runs.items():
        raw = r.stats["raw"]
        assert raw["screenshots"] is shots and raw["where"].startswith(f"explore-run-{shots}")
        eps = _episodes(tmp_path / "traj" / f"explore-run-{shots}")
        # One trajectory per explored episode, whatever became of it, and nothing else.
        assert sorted(eps) == sorted(e["env"] for e in raw["episodes"]), (sorted(eps), raw)
        for ep in r.episodes:
            lines = eps[ep.env_id]
            head, reset, steps = lines[0], lines[1], lines[2:]
            assert head["kind"] == "episode" and head["site"] == "shopping" and reset["kind"] == "reset"
            assert [x["action"] for x in steps] == [s.action for s in ep.steps]
            obs = [reset["obs"]] + [x["obs"] for x in steps]
            assert all(bool(o.get("screenshot")) is shots for o in obs), shots
        out = subprocess.run(
            [binary, "export", "--format", "sft", str(tmp_path / "traj" / f"explore-run-{shots}")],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert out.returncode == 0, out.stderr
        rows = [json.loads(line) for line in out.stdout.splitlines()]
        assert len(rows) == sum(len(ep.steps) for ep in r.episodes)
    with pytest.raises(ValueError, match="raw=True"):
        asyncio.run(webserv.explore(screenshots=True, out=tmp_path))
    # Without a server, the run starts its own, recording into OUT/trajectories (the command line's
    # --raw; no screenshots).
    env = {k: v for k, v in os.environ.items() if k != "WEBSERV_URL"}
    env |= {"WEBSERV_PYTHON": sys.executable, "WEBSERV_BIN": binary}
    run = tmp_path / "cli"
    args = [
        "explore",
        "--site",
        "shopping",
        "--episodes",
        "1",
        "--max-steps",
        "2",
        "--raw",
        "--out",
        str(run),
    ]
    out = subprocess.run([binary, *args], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    stats = json.loads(out.stdout)
    eps = _episodes(run / "trajectories")
    assert stats["raw"]["where"] == str((run / "trajectories").resolve())
    assert list(eps) == [stats["raw"]["episodes"][0]["env"]] and len(eps[list(eps)[0]]) == 2 + 2


CART_TEE = [
    'fill("search.search-products", "Sierra Organic Pocket Tee")',
    'click("search.search")',
    'click("sierra-organic-pocket-tee")',
    'select_option("add-to-cart.size", "S")',
    'select_option("add-to-cart.colour", "Pink")',
    'click("add-to-cart.add-to-cart")',
    'click("cart")',
    "go_back()",
]


def test_the_model_labels_a_state_change_it_is_shown_and_the_task_checks_it(
    server: str, binary: str, tmp_path: Path
) -> None:
    """The model's explorer (a stand-in) puts a tee in the cart: the labeler's prompt shows which step
    changed the shop's data, its instruction becomes a state task checking the cart row (size S, Pink),
    and the server grades the task: oracle 1, stopping at the start 0."""
    script = [{"match": "Next action?", "reply": f"Action: {a}"} for a in CART_TEE]
    script += [
        {
            "match": "Instruction for this trajectory",
            "reply": "Instruction: Put the Sierra tee, S, Pink, in the cart.",
        },
        {"match": "Score the trajectory", "reply": "Score: 1"},
    ]
    r, m = explore_shop_with_standin(script, tmp_path, server, max_steps=8, k=8)
    assert m.script == [] and r.episodes[0].status == "finished", r.episodes[0].error
    label_prompt = next(
        q["messages"][-1]["content"] for q in m.requests if "Instruction for" in q["messages"][-1]["content"]
    )
    assert 'click("add-to-cart.add-to-cart") (changed the site\'s data: cart_items insert' in label_prompt
    (task,) = json.loads(r.tasks.read_text())
    assert task["category"] == "state" and task["intent"] == "Put the Sierra tee, S, Pink, in the cart."
    (check,) = task["eval"]["state"]
    assert check["sql"].startswith('SELECT COUNT(*) FROM "cart_items" WHERE "product_id" = ?')
    assert "S" in check["args"] and "Pink" in check["args"] and check["expect"] == "1"
    assert task["oracle"] == [*CART_TEE, 'stop("")']
    tasks_check(binary, tmp_path / "sites", 1)


def test_a_run_in_which_no_episode_could_run_fails_with_the_reason(
    server: str, binary: str, tmp_path: Path
) -> None:
    """`webserv explore --site nosuch` exits non-zero, saying why (the server's refusal), and the Python
    call raises; stats.json keeps every episode's error."""
    with pytest.raises(ExploreFailed, match='unknown site "nosuch"'):
        asyncio.run(
            webserv.explore(site="nosuch", episodes=2, max_steps=2, out=tmp_path / "a", server=server)
        )
    assert len(json.loads((tmp_path / "a" / "stats.json").read_text())["errors"]) == 2
    env = {**os.environ, "WEBSERV_PYTHON": sys.executable}
    args = ["explore", "--site", "nosuch", "--episodes", "1", "--max-steps", "2", "--server", server]
    out = subprocess.run(
        [binary, *args, "--out", str(tmp_path / "b")], capture_output=True, text=True, env=env
    )
    assert out.returncode == 1 and "no episode of the run could run" in out.stderr, out.stderr
    assert 'unknown site "nosuch"' in out.stderr


def _tracker_definition(dir: Path, name: str, *, state_db: bool) -> Path:
    """The example tracker as a definition named name, with or without its state_db (a site whose
    state the server cannot diff), and no tasks of its own."""
    dir.mkdir(parents=True, exist_ok=True)
    d = {
        "name": name,
        "description": "the example tracker",
        "local": {
            "command": [str(EXAMPLE / "tracker" / "app.py"), "serve", "--port", "{port}"],
            "data_dir": str(EXAMPLE / "tracker" / "data"),
        },
        "ready": {"path": "/healthz", "timeout_ms": 20000},
        "start_path": "/",
    }
    if state_db:
        d["state_db"] = "tracker.db"
    path = dir / f"{name}.json"
    path.write_text(json.dumps(d))
    return path


def test_a_site_without_a_state_database_is_explored_without_state_tasks(binary: str, tmp_path: Path) -> None:
    """On a site whose definition has no state_db, no episode fails on state_diff (three start at once:
    the first reset's refusal answers for all), stats.json says state tasks were left out and why, and
    the definition the run writes takes a name the server does not have (notes-explored is taken)."""
    sites = tmp_path / "sites"
    source = _tracker_definition(sites, "notes", state_db=False)
    _tracker_definition(sites, "notes-explored", state_db=False)
    srv = sites_server(binary, str(sites), str(tmp_path / "i"))
    try:
        r = asyncio.run(
            webserv.explore(
                site="notes",
                episodes=3,
                max_steps=4,
                k=2,
                out=tmp_path / "run",
                server=srv.url,
                site_definition_file=source,
                concurrency=3,
            )
        )
    finally:
        srv.stop()
    assert r.stats["status"].get("env_error", 0) == 0 and not r.stats["errors"], r.stats["errors"]
    assert all(len(ep.steps) == 4 or ep.status == "pruned" for ep in r.episodes)
    note = r.stats["state"]["note"]
    assert note.startswith("state tasks left out") and "state_diff is not supported on site notes" in note
    assert r.stats["state"]["db"] is None and r.stats["state"]["changed"] == 0
    assert r.site_definition == tmp_path / "run" / "sites" / "notes-explored-2.json"
    assert json.loads(r.site_definition.read_text())["name"] == "notes-explored-2"


def test_what_the_instruction_names_is_what_the_verifier_keeps() -> None:
    from webserv.explore.instruction import merge_intents, name_constraints, names_nothing, reference_url
    from webserv.explore.modelfree import TrajectoryLabeler
    from webserv.explore.trajectory import Episode, Step

    # The issue's cases: a search graded with the filters the explorer left on the URL, a category's
    # second page, a page titled after an empty search.
    search = 'Search the site for "hiker" and show the results.'
    assert (
        reference_url("http://s/search?sort=price_desc&min=rainy&q=hiker&size=9", search)
        == "http://s/search?q=hiker"
    )
    assert (
        reference_url("http://s/category/shoes?page=2", 'Go to the "Shoes" page.')
        == "http://s/category/shoes"
    )
    assert (
        names_nothing('Go to the "Search results for “”" page.') and names_nothing("Search for ''.") is False
    )
    assert names_nothing('Search the site for "" and show the results.')
    assert not names_nothing('Go to the "Boots" page.')
    check = {
        "sql": 'SELECT COUNT(*) FROM "c" WHERE "pid" = ? AND "size" = ? AND "colour" = ? AND "note" IS NULL',
        "args": [7, "L", "Black"],
    }
    assert name_constraints('Add to cart on the "Tee" page.', [check]) == (
        'Add to cart on the "Tee" page with size "L" and colour "Black".'
    )

    # Typing into a filter (a minimum price) is no search; typing into the search box is, and its
    # reference is the results page the search made (its term only), whatever was added after.
    def ep(action: str, nxt: str) -> Episode:
        e = Episode(0, "p", "http://s/")
        e.steps = [Step("http://s/", "Home", "", action, nxt, "Results")]
        return e

    lab = TrajectoryLabeler()
    filt = asyncio.run(
        lab.label(
            ep('type("filter.min-price", "hiker", enter=True)', "http://s/search?min=hiker"),
            {"url": "http://s/search?min=hiker", "title": "Results"},
        )
    )
    assert not filt.instruction.startswith("Search")
    box = ep('type("search.search-products", "hiker", enter=True)', "http://s/search?q=hiker")
    box.steps.append(
        Step(
            "http://s/search?q=hiker",
            "R",
            "",
            'select_option("sort", "Price")',
            "http://s/search?q=hiker&sort=price",
            "R",
        )
    )
    lab2 = asyncio.run(lab.label(box, {"url": "http://s/search?q=hiker&sort=price", "title": "R"}))
    assert lab2.instruction == search and lab2.reference == "http://s/search?q=hiker"

    # One task per intent: the verifier most share (the shortest oracle of those); another verifier of
    # the same intent is left out.
    def t(intent: str, ref: str, n: int) -> dict[str, Any]:
        return {"intent": intent, "eval": {"reference_url": ref}, "oracle": ["a"] * n}

    fate = merge_intents([t("A", "/x", 5), t("A", "/y", 1), t("A", "/x", 3), t("B", "/z", 2)])
    assert fate == ["merged", "conflicting", "keep", "keep"]


def test_shortening_drops_what_changed_nothing_then_what_a_replay_does_without() -> None:
    from webserv.explore.shorten import drop_noops, shortest
    from webserv.explore.trajectory import Step

    def st(url: str, obs: str, action: str, nxt: str, changes: list | None = None) -> Step:
        return Step(url, "", obs, action, nxt, "", changes=changes or [])

    home, cat, prod = "[cat] link\n[p1] link", "[cat] link\n[p2] link", "[cat] link\n[buy] button"
    raw = [
        st("/", home, 'click("p1")', "/p1"),  # a detour: back to the start after it
        st("/p1", "[back]", "go_back()", "/"),
        st("/", home, 'click("cat")', "/c"),
        st("/c", cat, 'hover("p2")', "/c"),  # no change: the same page after it
        st("/c", cat, 'click("p2")', "/p2"),
        st("/p2", prod, 'click("buy")', "/p2", [{"table": "cart", "op": "insert"}]),
        st("/p2", prod, 'click("cat")', "/c"),  # after the last change
    ]
    assert [s.action for s in drop_noops(raw[:-1])] == ['click("cat")', 'click("p2")', 'click("buy")']
    # The task: "buy p2" (which needs the category page first); the replay stands in for the server's.
    replayed: list[list[str]] = []

    async def passes(actions: list[str]) -> list[Step] | None:
        replayed.append(actions)
        ok = actions[-1] == 'click("buy")' and 'click("p2")' in actions and 'click("cat")' in actions
        return [st("/", home, a, "/") for a in actions] if ok else None

    best, spent = asyncio.run(shortest(raw, passes, budget=20))
    assert [s.action for s in best] == ['click("cat")', 'click("p2")', 'click("buy")']
    assert spent == len(replayed) <= 20
    best, spent = asyncio.run(shortest(raw, passes, budget=0))  # no replay: nothing is left out
    assert best == raw and spent == 0


def test_the_scripted_reader_follows_the_labelers_instructions() -> None:
    """solve.py reads the model-free labeler's templates, and nothing else."""
    from webserv.explore.solve import solve

    class Pages:
        """A two-page stand-in for an environment: a home page with a search box and a link."""

        def __init__(self) -> None:
            self.taken: list[str] = []

        async def step(self, action: str) -> tuple[dict, float, bool, bool, dict]:
            self.taken.append(action)
            if action.startswith("type("):
                return RESULTS, 0.0, False, False, {}
            return PRODUCT, 0.0, False, False, {}

    HOME = {
        "url": "http://s/",
        "axtree_txt": '[search.q] searchbox "Search"\n[cat.shoes] link "Shoes" url="/c/shoes"',
        "clickable": ["cat.shoes"],
        "inputs": [{"id": "search.q", "type": "search", "editable": True}],
    }
    RESULTS = {
        "url": "http://s/search?q=Trail+Boot",
        "axtree_txt": '[trail-boot] link "Trail Boot"',
        "clickable": ["trail-boot"],
    }
    PRODUCT = {
        "url": "http://s/p/trail-boot",
        "axtree_txt": 'StaticText "$12.50"\n[buy] button "Add to cart"\n[opt.size] combobox "Size"',
        "clickable": ["buy"],
        "selects": [{"id": "opt.size", "options": [{"text": "M"}, {"text": "L"}]}],
    }
    acts, end = asyncio.run(solve('Go to the "Shoes" page.', Pages(), HOME))
    assert acts == ['click("cat.shoes")', 'stop("")']
    acts, end = asyncio.run(solve('What is the price of "Trail Boot"?', Pages(), HOME))
    assert acts == ['type("search.q", "Trail Boot", enter=True)', 'click("trail-boot")', 'stop("$12.50")']
    acts, _ = asyncio.run(solve('Add to cart on the "Trail Boot" page with size "L".', Pages(), HOME))
    assert acts[-3:] == ['select_option("opt.size", "L")', 'click("buy")', 'stop("")']
    assert asyncio.run(solve("Find me something nice for a rainy day.", Pages(), HOME)) is None
    assert asyncio.run(solve('Add to cart on the "Trail Boot" page with size "XXL".', Pages(), HOME)) is None


STORAGE = Path(__file__).resolve().parents[2] / "examples" / "storage-sites"


@pytest.mark.parametrize("site", ["notes-files", "notes-pg", "notes-mysql"])
def test_a_site_whose_state_is_files_or_a_database_is_explored_into_tasks_that_pass_strict_check(
    site: str, binary: str, tmp_path: Path
) -> None:
    """The notes site keeps each note as a JSON file (notes-files: state: files), a PostgreSQL row
    (notes-pg: state: postgres) or a MariaDB row (notes-mysql: state: mysql): exploration reads what
    an episode changed there (no episode fails on storage), a saved note becomes a state task checked
    by what the instruction names, and every task passes `tasks check --strict` (oracle and
    independent solution 1, wrong and null agents 0)."""
    srv = sites_server(binary, str(STORAGE), str(tmp_path / "i"))
    try:
        r = asyncio.run(
            webserv.explore(
                site=site,
                episodes=3,  # the third saves a note (the explorer is seeded)
                max_steps=6,
                k=2,
                out=tmp_path / "run",
                server=srv.url,
                site_definition_file=STORAGE / f"{site}.yaml",
                concurrency=1,
            )
        )
    finally:
        srv.stop()
    assert r.stats["status"].get("env_error", 0) == 0 and not r.stats["errors"], r.stats["errors"]
    assert r.stats["state"]["db"] == "@state" and not r.stats["state"]["note"], r.stats["state"]
    tasks = json.loads(r.tasks.read_text())
    state = [t for t in tasks if t["category"] == "state"]
    assert state, [t["intent"] for t in tasks]
    for t in state:
        (check,) = t["eval"]["state"]
        table = "files" if site == "notes-files" else "notes"
        assert check["db"] == "@state" and f'FROM "{table}"' in check["sql"], check
        assert check["args"][0] in t["intent"] and check["expect"] == "1", (t["intent"], check)
    assert_instructions_determine_verifiers(tasks)
    tasks_check(binary, tmp_path / "run" / "sites", len(tasks), unverified=0, strict=True)


def test_a_changed_files_check_names_what_it_holds() -> None:
    """A file of a site's declared files (table files): a JSON note is checked by its fields in its
    folder (not its name, its whole text, or a field that changes from run to run), a changed field by
    its new value, another file by its path; check_values reads a JSON field as a column."""
    from webserv.explore.instruction import check_values
    from webserv.explore.state import FILES_COLUMNS, candidate

    cols = [{"name": n, "pk": int(n == "path")} for n in FILES_COLUMNS]
    text = '{"title": "hiker", "body": "", "created_at": "2026-11-27T04:00:00", "stars": 3}'
    row = {"path": "notes/hiker.json", "size": len(text), "text": text, "json": text}
    c = candidate({"table": "files", "op": "insert", "row": row}, cols)
    assert c is not None
    assert c["sql"] == (
        'SELECT COUNT(*) FROM "files" WHERE json_extract("json", \'$.title\') = ? '
        'AND json_extract("json", \'$.stars\') = ? AND "path" GLOB ?'
    )
    assert c["args"] == ["hiker", 3, "notes/*"]
    assert check_values(c) == [("title", "hiker"), ("stars", 3)]
    new = text.replace('"hiker"', '"walker"')
    upd = candidate(
        {"table": "files", "op": "update", "row": {**row, "text": new, "json": new}, "old": {"json": text}},
        cols,
    )
    assert upd is not None and upd["sql"].startswith("SELECT json_extract(\"json\", '$.title')")
    assert upd["args"] == ["notes/hiker.json"]
    plain = {"path": "pages/Home.txt", "size": 5, "text": "hello", "json": None}
    c = candidate({"table": "files", "op": "insert", "row": plain}, cols)
    assert c is not None and c["sql"] == 'SELECT COUNT(*) FROM "files" WHERE "path" = ?'
    assert c["args"] == ["pages/Home.txt"]


def test_a_form_started_is_filled_before_its_button_is_pressed() -> None:
    """The model-free explorer, on a form whose first field it just set: the fields it has not set
    come before what submits the form (its button, or typing Enter in one of its boxes), so a size,
    then the quantity, then add to cart; and what submits it once every field is set."""
    from webserv.explore.modelfree import NoveltyExplorer
    from webserv.explore.trajectory import Episode, Step

    url = "http://127.0.0.1:1/product/boots"
    obs: dict[str, Any] = {
        "url": url,
        "clickable": ["cart.add", "nav.home"],
        "inputs": [{"id": "cart.note", "type": "text", "editable": True}],
        "selects": [
            {"id": "cart.size", "options": [{"text": "S", "selected": True}, {"text": "M"}]},
            {"id": "cart.qty", "options": [{"text": "1", "selected": True}, {"text": "2"}]},
        ],
    }
    episode = Episode(index=0, persona="a hiker", start_url=url)
    episode.steps.append(Step(url, "Boots", "", 'select_option("cart.size", "M")', url, "Boots"))
    chosen = [asyncio.run(NoveltyExplorer(seed).act(obs, episode)) for seed in range(5)]
    assert all(a.startswith('select_option("cart.qty"') for a in chosen), chosen
    episode.steps.append(Step(url, "Boots", "", 'select_option("cart.qty", "2")', url, "Boots"))
    chosen = [asyncio.run(NoveltyExplorer(seed).act(obs, episode)) for seed in range(5)]
    assert all(a == 'click("cart.add")' or a.startswith('type("cart.note"') for a in chosen), chosen


def test_the_scripted_reader_reaches_a_page_linked_only_from_the_items_a_search_finds() -> None:
    """`Go to the "Boots" page.` where no page it starts on links to Boots: the reader searches for
    "Boots" and opens the first results, one after the other, until one links to Boots (a boot's
    breadcrumb), then follows that link."""
    from webserv.explore.solve import solve

    home = {
        "url": "http://s/",
        "axtree_txt": '[search.q] searchbox "Search"\n[cat.shoes] link "Shoes"',
        "clickable": ["cat.shoes"],
        "inputs": [{"id": "search.q", "type": "search", "editable": True}],
    }
    results = {
        "url": "http://s/search?q=Boots",
        "axtree_txt": '[cat.shoes] link "Shoes"\n[sock] link "Wool Sock"\n[boot] link "Snow Boot"',
        "clickable": ["cat.shoes", "sock", "boot"],
    }
    pages = {
        'click("sock")': {
            "url": "http://s/p/sock",
            "axtree_txt": '[bc.socks] link "Socks"',
            "clickable": ["bc.socks"],
        },
        'click("boot")': {
            "url": "http://s/p/boot",
            "axtree_txt": '[bc.boots] link "Boots"',
            "clickable": ["bc.boots"],
        },
        'click("bc.boots")': {"url": "http://s/c/boots", "title": "Boots - Shop", "axtree_txt": ""},
    }

    class Pages:
        def __init__(self) -> None:
            self.at = [home]

        async def step(self, action: str) -> tuple[dict, float, bool, bool, dict]:
            if action.startswith("type("):
                self.at.append(results)
            elif action == "go_back()":
                self.at.pop()
            else:
                self.at.append(pages[action])
            return self.at[-1], 0.0, False, False, {}

    acts, end = asyncio.run(solve('Go to the "Boots" page.', Pages(), home))
    assert acts == [
        'type("search.q", "Boots", enter=True)',
        'click("sock")',
        "go_back()",
        'click("boot")',
        'click("bc.boots")',
        'stop("")',
    ]
    assert end["url"] == "http://s/c/boots"


def test_shortening_leaves_out_a_detour_that_ends_the_demonstration() -> None:
    """A demonstration that reached the page, opened another and came back: the detour and its
    go_back() go together (neither can go alone)."""
    from webserv.explore.shorten import shortest
    from webserv.explore.trajectory import Step

    raw = [
        Step("/", "", "[cat] link", 'click("cat")', "/c", ""),
        Step("/c", "", "[p] link", 'click("p")', "/p", ""),
        Step("/p", "", "[x] link", "go_back()", "/c", ""),
        Step("/c", "", "", 'stop("")', "/c", ""),
    ]

    async def passes(actions: list[str]) -> list[Step] | None:
        at = ["/"]
        for a in actions:
            if a == "go_back()":
                at.pop()
            elif a.startswith("click("):
                at.append("/" + a[7:-2])
        return [Step("/", "", "", a, at[-1], "") for a in actions] if at[-1] == "/cat" else None

    best, _ = asyncio.run(shortest(raw, passes, budget=20))
    assert [s.action for s in best] == ['click("cat")', 'stop("")']


def test_no_price_question_of_a_page_the_episode_filled() -> None:
    """The model-free labeler asks the price a page shows only when the episode changed no data on
    the way: a cart it added to shows, from the task's start, another price or none."""
    from webserv.explore.modelfree import TrajectoryLabeler
    from webserv.explore.trajectory import Episode, Step

    obs = {"url": "http://s/cart", "title": "Shopping cart - Shop", "axtree_txt": 'StaticText "$58.99"'}
    ep = Episode(index=0, persona="p", start_url="http://s/")
    ep.steps.append(Step("http://s/", "Shop", "", 'click("cart")', "http://s/cart", "Shopping cart"))
    assert asyncio.run(TrajectoryLabeler().label(ep, obs)).answer == "$58.99"
    ep.steps.insert(
        0, Step("http://s/p", "Boot", "", 'click("buy")', "http://s/p", "Boot", changes=[{"table": "cart"}])
    )
    ep.labeled = 1
    label = asyncio.run(TrajectoryLabeler().label(ep, obs))
    assert label.answer == "" and label.instruction == 'Go to the "Shopping cart" page.', label


def test_a_search_whose_results_were_filtered_since_is_labeled_as_the_search() -> None:
    """Typing into a filter of a search's results (a price box) does not hide the search: the label
    is the search, its reference the results page with the term alone."""
    from webserv.explore.modelfree import TrajectoryLabeler
    from webserv.explore.trajectory import Episode, Step

    home, results = "http://s/", "http://s/search?q=waterproof"
    filtered = "http://s/search?q=waterproof&min=waterproof"
    ep = Episode(index=0, persona="p", start_url=home)
    ep.steps.append(
        Step(home, "Shop", "", 'type("search.search-products", "waterproof", enter=True)', results, "")
    )
    ep.steps.append(Step(results, "", "", 'type("filter.min-price", "waterproof", enter=True)', filtered, ""))
    label = asyncio.run(
        TrajectoryLabeler().label(ep, {"url": filtered, "title": "Search results for “waterproof”"})
    )
    assert label.instruction == 'Search the site for "waterproof" and show the results.', label
    assert label.reference == results


def test_the_scripted_reader_follows_a_link_named_by_a_word_of_the_page() -> None:
    """`Go to the "Shopping cart" page.` where the link says "Cart (2)": the reader follows a link
    named by a word of the page's name and keeps it when the page it opens has that name."""
    from webserv.explore.solve import solve

    home = {
        "url": "http://s/",
        "axtree_txt": '[search.q] searchbox "Search"\n[help] link "Shopping help"\n[cart] link "Cart (2)"',
        "clickable": ["help", "cart"],
        "inputs": [{"id": "search.q", "type": "search", "editable": True}],
    }
    cart = {"url": "http://s/cart", "title": "Shopping cart - Shop", "axtree_txt": ""}
    nothing = {"url": "http://s/search?q=Shopping+cart", "axtree_txt": "", "clickable": []}

    class Pages:
        async def step(self, action: str) -> tuple[dict, float, bool, bool, dict]:
            return (nothing if action.startswith("type(") else cart), 0.0, False, False, {}

    acts, end = asyncio.run(solve('Go to the "Shopping cart" page.', Pages(), home))
    assert acts == ['click("cart")', 'stop("")'], acts
    assert end is cart


def test_no_task_of_a_page_the_demonstration_made_or_of_a_change_it_made_twice() -> None:
    """A url task whose demonstration saved data on the way (the page it reached may not exist at the
    task's start) and a state task whose checks want the change twice (the instruction says it once)
    keep their rows but get no task."""
    from webserv.explore.trajectory import Demo, Episode, Label, Step
    from webserv.explore.write import _task

    ep = Episode(index=0, persona="p", start_url="http://s/")
    saved = Step(
        "http://s/", "", "", 'type("new-note.title", "tools", enter=True)', "http://s/note/tools", ""
    )
    saved.changes = [{"table": "files", "op": "insert"}]
    go = Demo(ep, 1, Label('Go to the "tools" page.', "http://s/note/tools", "tools"), [saved], "http://s/")
    assert _task("notes", 0, go) is None
    twice = Demo(
        ep, 1, Label('Save note with title "tools".', "http://s/", "", state=[{}]), [saved], "http://s/"
    )
    twice.checks = [{"db": "@state", "sql": "SELECT COUNT(*) FROM files", "args": [], "expect": "2"}]
    assert _task("notes", 0, twice) is None
    twice.checks[0]["expect"] = "1"
    assert _task("notes", 0, twice)["category"] == "state"


def test_a_task_is_left_out_while_its_replayed_steps_change_more_than_it_says(
    binary: str, tmp_path: Path
) -> None:
    """Best-of-K and the shortening replace a demonstration's steps by a replay's, which records no
    changes. A demonstration whose explored steps changed data more than its task may is replayed as
    it now stands, on the real notes-files site, and the steps that change data are counted: a url
    task whose steps still save a note (the page reached is the note they made) is left out, one
    whose saving detour was left out keeps its task; a state task whose steps save twice (the checked
    note's slug "zz-2" needs the first "zz") is left out, one that saves once is not."""
    from webserv.explore.run import _Run
    from webserv.explore.trajectory import Demo, Episode, Label, Step
    from webserv.explore.verify import _recheck_changes
    from webserv.explore.write import _task

    start = "http://notes-files.webserv.test/"
    ep = Episode(index=0, persona="p", start_url=start)
    save, again = 'type("new-note.title", "zz", enter=True)', 'click("new-note.save-note")'

    def demo(intent: str, actions: list[str], reached: str, state: bool = False) -> Demo:
        steps = [Step(start, "", "", a, reached, "") for a in actions]
        d = Demo(ep, 1, Label(intent, reached, "", state=[{}] if state else []), steps, start)
        d.change_steps = 3  # as explored: more steps on the way saved notes
        return d

    made = demo('Go to the "zz" page.', [save], start + "note/zz")
    kept = demo('Go to the "Welcome" page.', ['click("welcome")'], start + "note/welcome")
    twice = demo('Save note with slug "zz-2".', [save, "go_back()", again], start, state=True)
    once = demo('Save note with title "zz".', [save], start, state=True)
    srv = sites_server(binary, str(STORAGE), str(tmp_path / "i"))

    async def main() -> None:
        async with webserv.AsyncClient(srv.url) as client:
            run = _Run(
                client=client,
                site="notes-files",
                start_url=None,
                max_steps=1,
                k=1,
                explorer=None,  # type: ignore[arg-type]
                labeler=None,  # type: ignore[arg-type]
                reward=None,  # type: ignore[arg-type]
                seed=0,
                make_args={},
                frontier=None,  # type: ignore[arg-type]
                use_frontier=False,
                first_wave=0,
                state=True,
            )
            await _recheck_changes(run, [made, kept, twice, once], asyncio.Semaphore(2))

    try:
        asyncio.run(main())
    finally:
        srv.stop()
    assert (made.change_steps, kept.change_steps, twice.change_steps, once.change_steps) == (1, 0, 2, 1)
    assert _task("notes-files", 0, made) is None and _task("notes-files", 2, twice) is None
    task = _task("notes-files", 1, kept)
    assert task is not None and task["eval"]["reference_url"].endswith("/note/welcome"), task


# Links most real sites have in their footer: to other origins (the network policy blocks them; nothing
# leaves 127.0.0.1) and to other schemes.
FOOTER = (
    '<footer><a href="https://creativecommons.org/licenses/by/4.0/">CC BY 4.0</a> '
    '<a href="https://example.org/">Example</a> <a href="//example.net/wiki">Mirror</a> '
    '<a href="mailto:editors@example.org">Write to us</a></footer>'
)
WIKI = {"index": "Home", "roses": "Roses", "tulips": "Tulips", "about": "About"}


def _wiki_definition(dir: Path) -> Path:
    """A small static wiki (four pages, each linking the others, each with FOOTER) as a site
    definition served by Python's http.server from each instance's copy of its pages."""
    pages = dir / "wiki-pages"
    pages.mkdir(parents=True)
    nav = " ".join(f'<a href="/{"" if p == "index" else p + ".html"}">{t}</a>' for p, t in WIKI.items())
    for p, t in WIKI.items():
        (pages / f"{p}.html").write_text(
            f"<!doctype html><html><head><title>{t} · Garden Wiki</title></head><body><nav>{nav}</nav>"
            f"<main><h1>{t}</h1><p>What the wiki knows about {t.lower()}.</p></main>{FOOTER}</body></html>"
        )
    d = {
        "name": "wiki",
        "description": "a static wiki whose footer links to other origins",
        "local": {
            "command": [
                sys.executable,
                "-m",
                "http.server",
                "{port}",
                "--bind",
                "127.0.0.1",
                "--directory",
                "{data}",
            ],
            "data_dir": str(pages),
        },
        "ready": {"path": "/", "timeout_ms": 20000},
        "start_path": "/",
    }
    path = dir / "sites" / "wiki.json"
    path.parent.mkdir()
    path.write_text(json.dumps(d))
    return path


def test_a_site_whose_footer_links_away_is_explored_into_tasks_on_it_alone(
    binary: str, tmp_path: Path
) -> None:
    """Model-free exploration of a wiki whose every page links to other origins in its footer: the
    explorer follows none of them (a blocked navigation explores nothing), no task is of a page
    outside the site, and `tasks check --strict` passes on what the run wrote (with strict, only
    tasks with an independent solution are written)."""
    definition = _wiki_definition(tmp_path)
    srv = sites_server(binary, str(definition.parent), str(tmp_path / "i"))
    try:
        r = asyncio.run(
            webserv.explore(
                site="wiki",
                episodes=2,
                max_steps=8,
                k=2,
                out=tmp_path / "run",
                server=srv.url,
                site_definition_file=definition,
                concurrency=1,
                strict=True,
            )
        )
    finally:
        srv.stop()
    from webserv.explore.modelfree import origin

    assert r.stats["status"].get("env_error", 0) == 0 and not r.stats["errors"], r.stats["errors"]
    for ep in r.episodes:
        home = origin(ep.start_url)
        assert home == "http://wiki.webserv.test", ep.start_url  # the site's stable origin
        away = [(s.action, s.next_url) for s in ep.steps if origin(s.next_url) != home]
        assert not away, f"episode {ep.index} followed links off the site: {away}"
    tasks = json.loads(r.tasks.read_text())
    assert tasks, r.stats
    for t in tasks:
        assert t["start_url"].startswith("__SITE__/"), t
        assert t["eval"].get("reference_url", "__SITE__/").startswith("__SITE__/"), t
        assert not any(h in t["intent"] for h in ("creativecommons", "example.")), t["intent"]
    assert r.stats["left_out"].get("off_site", 0) == 0, r.stats["left_out_tasks"]
    tasks_check(binary, tmp_path / "run" / "sites", len(tasks), unverified=0, strict=True)


def test_no_task_of_a_demonstration_that_left_the_site() -> None:
    """A footer link followed (the network policy blocks it: the page is the failed URL, titled by its
    host) gives no task: explore leaves the demonstration out saying why, and a task of it would not
    be rebased onto the site (no page of the site has that path)."""
    from webserv.explore.modelfree import off_site_links
    from webserv.explore.trajectory import Demo, Episode, Label, Step
    from webserv.explore.write import _relative, _task, off_site

    home, cc = "http://127.0.0.1:5000", "https://creativecommons.org/licenses/by/4.0/"
    ep = Episode(0, "p", f"{home}/", origin_url=f"{home}/")
    ep.steps = [
        Step(f"{home}/", "Home", "", 'click("roses")', f"{home}/roses.html", "Roses"),
        Step(f"{home}/roses.html", "Roses", "", 'click("cc")', cc, "creativecommons.org", "blocked"),
    ]
    label = Label('Go to the "creativecommons.org" page.', cc, "creativecommons.org")
    d = Demo(ep, 2, label, [ep.steps[0]], f"{home}/")
    assert off_site(d) == f'step click("cc") went to {cc}, outside {home}'
    assert _task("wiki", 0, d) is None
    assert _relative("wiki", cc, home) is None
    assert _relative("wiki", f"{home}/roses.html?x=1", home) == "__SITE__/roses.html?x=1"
    on = Demo(
        ep, 1, Label('Go to the "Roses" page.', f"{home}/roses.html", "Roses"), ep.steps[:1], f"{home}/"
    )
    assert off_site(on) == "" and _task("wiki", 0, on) is not None
    # The explorer's view of the page: the footer's links lead away, the wiki's own do not.
    axtree = "\n".join(
        [
            'RootWebArea "Roses"',
            '\t[home] link "Home" url="/"',
            '\t[tulips] link "Tulips" url="tulips.html"',
            f'\t[cc] link "CC BY 4.0" url="{cc}"',
            '\t[mirror] link "Mirror" url="//example.net/wiki"',
            '\t[mail] link "Write to us" url="mailto:editors@example.org"',
            '\t[same] link "Roses again" url="http://127.0.0.1:5000/roses.html"',
            '\t[js] link "Print" url="javascript:print()"',
        ]
    )
    obs = {"url": f"{home}/roses.html", "axtree_txt": axtree}
    assert off_site_links(obs, home) == {"cc", "mirror", "mail"}
