"""Fixtures: a page server on 127.0.0.1 and a real `webserv serve` (bin/webserv, built by `make test`)."""

from __future__ import annotations

import html
import importlib.util
import json
import os
import resource
import threading
import time
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

from webserv.launcher import LocalServer, find_binary
from webserv.testing import PageServer

PAGE = """<!doctype html><title>Page {n}</title><h1>Shop {n}</h1>
<button onclick="load()">Load</button><p id="out">empty</p>
<input placeholder="Name"><a href="/page?n={next}">Next</a>
<script>
async function load() {{
  const r = await fetch('/api?ms=300&n={n}');
  document.getElementById('out').textContent = await r.text();
}}
</script>"""


class _Pages:
    # /api requests in flight now, and the most at once since the last reset_api_peak().
    lock = threading.Lock()
    api_in_flight = 0
    api_peak = 0


def _page(path: str, q: dict[str, str]) -> str:
    if path == "/api":
        with _Pages.lock:
            _Pages.api_in_flight += 1
            _Pages.api_peak = max(_Pages.api_peak, _Pages.api_in_flight)
        try:
            time.sleep(int(q.get("ms", "0")) / 1000)
        finally:
            with _Pages.lock:
                _Pages.api_in_flight -= 1
        return f"loaded {q.get('n', '?')}"
    if path == "/grow":
        # A page whose button grows the DOM far past any sane size (a resource limit's case).
        return (
            '<!doctype html><title>Grow</title><button onclick="for (let i = 0; i < 20000; i++)'
            " document.body.appendChild(document.createElement('div'))\">Grow</button>"
        )
    if path == "/img":
        # A page whose image is elsewhere (?src=URL): what the network policy may refuse.
        return f'<!doctype html><title>Image</title><img src="{html.escape(q.get("src", ""))}" alt="x">'
    n = int(q.get("n", "0"))
    return PAGE.format(n=n, next=n + 1)


@pytest.fixture(scope="session")
def pages() -> Iterator[str]:
    with PageServer(_page) as srv:
        yield srv.url


def reset_api_peak() -> None:
    with _Pages.lock:
        _Pages.api_peak = _Pages.api_in_flight


def api_in_flight() -> int:
    """How many /api requests the pages server is answering now."""
    with _Pages.lock:
        return _Pages.api_in_flight


def api_peak() -> int:
    """The most /api requests the page server had in flight at once since reset_api_peak()."""
    with _Pages.lock:
        return _Pages.api_peak


def sites_server(binary: str, sites: str | Path, instances: str | Path, *extra: str) -> LocalServer:
    """`webserv serve` of the site definitions in sites alone (no bundled shop, no Incus), its
    instances under instances; extra flags follow."""
    flags = ["--idle", "200ms", "--no-bundled", "--no-incus", "--sites", str(sites)]
    return LocalServer(binary, [*flags, "--instances", str(instances), *extra])


@pytest.fixture(scope="session")
def binary() -> str:
    b = find_binary()
    if b is None:
        pytest.fail("no webserv binary: run `make build` (make test does) or set WEBSERV_BIN")
    return b


@pytest.fixture(scope="session")
def server(binary: str) -> Iterator[str]:
    """One server for the session; tests reach it through WEBSERV_URL."""
    s = LocalServer(binary, ["--idle", "200ms"])
    os.environ["WEBSERV_URL"] = s.url
    yield s.url
    s.stop()


@pytest.fixture
def spare_server(binary: str) -> Iterator[LocalServer]:
    """A server of the test's own, which it may stop (an infrastructure failure)."""
    s = LocalServer(binary, ["--idle", "200ms", "--no-bundled"])
    yield s
    s.stop()


REPO = Path(__file__).resolve().parents[2]
# scripts/testcost.py: the /proc reading that make test's cost table and the hook below share.
_spec = importlib.util.spec_from_file_location("testcost", REPO / "scripts" / "testcost.py")
assert _spec is not None and _spec.loader is not None
testcost = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(testcost)


# -- how pytest-xdist shares the tests out (`--dist loadscope`, scripts/test.sh) -----------------
#
# A work unit is a module (its module-scoped fixtures, like test_ray.py's Ray cluster, are set up
# once) unless the module is in SPLIT: its tests are independent and heavy, and each is a unit
# of its own, so that no worker ends the suite alone on a long module. Units go out heaviest
# first (the estimates below; the rest take seconds), so the last ones to end are short; hence
# --no-loadscope-reorder, which keeps this order (xdist would put the units with most tests first).
# (Not --dist loadgroup with marks: pytest 9.2's nodeid no longer shows the group xdist 3.8
# appends to it, and every test would be a unit of its own.)
SPLIT = {"test_docs", "test_explore", "test_miniwob", "test_tasks", "test_errors", "test_mixing"}
# Modules that share a unit, so they run one after another on one worker: each starts a Ray
# cluster of its own (raylets, GCS, workers), and two at once on a loaded 2-core host took more
# than the fleet's 120 s to schedule their servers (CI, 2026-11-27: test_bench_ray beside test_ray).
TOGETHER = {"test_bench_ray": "ray", "test_ray": "ray", "test_ray_local": "ray"}
# Seconds a unit took in a fresh `make test` on a 2-core host (bin/test-costs, summed by unit,
# 2026-11-28): an order, not a bound. A test missing here counts as 2 s; a module as the sum of
# its tests.
COST = {
    "test_agentlab": 300,  # BrowserGym beside WebServ in one process per call (was 476 with one per episode)
    "test_contract": 226,
    "test_budget": 224,
    "test_explore_shop": 144,
    "test_eval": 121,
    "test_bench_miniwob": 93,
    "test_explore::test_frontier_episodes_start_from_pages_found_earlier": 90,
    "test_docs::test_doc_examples_run_as_written[explore.md]": 81,
    "ray": 77,
    "test_bench_peer": 75,
    "test_docs::test_doc_examples_run_as_written[README.md]": 64,
    "test_explore::test_explored_tasks_of_a_users_site_definition_passtasks_check": 63,
    "test_miniwob::test_a_random_policy_plays_every_task_without_errors": 60,
    "test_miniwob::test_scripted_solutions_reach_the_maximum_reward": 55,
    "test_bench_settle": 53,
    "test_docs::test_doc_examples_run_as_written[tasks.md]": 52,
    "test_learn": 50,
    "test_miniwob::test_goals_agree_with_miniwobs_own_seeding": 47,
    "test_docs::test_doc_examples_run_as_written[eval.md]": 45,
    "test_docs::test_doc_examples_run_as_written[dream.md]": 45,
    "test_explore::test_a_site_whose_state_is_files_or_a_database_is_explored_into_tasks_that_pass_strict_check[notes-pg]": 43,  # noqa: E501
    "test_docs::test_doc_examples_run_as_written[trajectories.md]": 41,
    "test_explore::test_raw_trajectories_record_every_explored_episode_with_screenshots_when_asked": 40,
    "test_explore::test_a_site_whose_state_is_files_or_a_database_is_explored_into_tasks_that_pass_strict_check[notes-mysql]": 40,  # noqa: E501
    "test_integrations": 36,
    "test_explore::test_a_site_whose_state_is_files_or_a_database_is_explored_into_tasks_that_pass_strict_check[notes-files]": 34,  # noqa: E501
    "test_tasks::test_gymnasium_check_env_passes_on_multi_task_ids": 33,
    "test_explore::test_a_site_whose_footer_links_away_is_explored_into_tasks_on_it_alone": 32,
    "test_fork_exact": 32,
    "test_docs::test_doc_examples_run_as_written[ui.md]": 30,
    "test_delta": 30,
    "test_bench_rl": 26,
    "test_docs::test_doc_examples_run_as_written[attacks.md]": 25,
    "test_site_tasks": 25,
    "test_multihost": 24,
    "test_bench_budget": 23,
    "test_layers": 23,
    "test_bench_mcp": 22,
    "test_explore::test_model_free_best_of_k_replays_the_demonstration_with_a_stretch_left_out": 22,
    "test_explore::test_a_site_without_a_state_database_is_explored_without_state_tasks": 21,
    "test_explore::test_the_model_labels_a_state_change_it_is_shown_and_the_task_checks_it": 21,
    "test_attacks": 20,
    "test_bench_trace": 20,
    "test_vector": 20,
    "test_bench_vector": 20,
    "test_bench_dream": 19,
    "test_explore::test_best_of_k_keeps_a_shorter_attempt_that_scores": 19,
    "test_docs::test_doc_examples_run_as_written[learning.md]": 18,
    "test_bench_eval": 18,
    "test_errors::test_infrastructure_failures": 17,
    "test_mcp": 17,
    "test_docs::test_doc_examples_run_as_written[mcp.md]": 16,
    "test_rollout": 15,
}


def _scope(module: str, name: str) -> str:
    """The work unit of test ``name`` of ``module``: its module, its group, or itself."""
    if module in SPLIT:
        return f"{module}::{name}"
    return TOGETHER.get(module, module)


def _unit(item: pytest.Item) -> str:
    return _scope(item.path.stem, item.name)


def _cost(key: str) -> float:
    return COST.get(key, 2.0)


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """--dist loadscope with this file's units (a module, or a test of a SPLIT module)."""
    if config.getoption("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class Units(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            stem = Path(module).stem
            if stem in SPLIT:
                return nodeid
            return TOGETHER.get(stem, module)

    return Units(config, log)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # scripts/exclusive-tests' py modules (scripts/test.sh): they make load of their own (Ray's
    # clusters), so they run after the other Python tests, by one pytest (-m exclusive).
    exclusive = set(os.environ.get("WEBSERV_EXCLUSIVE_MODULES", "").split())
    for item in items:
        if item.path.name in exclusive:
            item.add_marker(pytest.mark.exclusive)
    units: dict[str, list[pytest.Item]] = {}
    for item in items:
        units.setdefault(_unit(item), []).append(item)
    cost = {
        u: _cost(u) if u in COST else sum(_cost(f"{i.path.stem}::{i.name}") for i in its)
        for u, its in units.items()
    }
    order = sorted(units, key=lambda u: -cost[u])  # stable: equal costs keep collection order
    items[:] = [i for u in order for i in units[u]]


# -- what each test costs (make test's cost table: scripts/test.sh, scripts/testcost.py) ---------
#
# With $WEBSERV_TEST_COSTS set, each test's wall and CPU seconds (its setup, call and teardown) go
# to <dir>/py-<worker>.jsonl. CPU is the worker's process tree: the worker, what it reaped, and
# its live descendants (the servers and browsers its fixtures started). A worker runs one test at
# a time, so the difference is the test's own.


def _tree() -> dict[int, float]:
    """CPU seconds (its own and what it reaped) of each live descendant of this process."""
    out = testcost.tree(testcost.proc_table(), os.getpid())
    out.pop(os.getpid(), None)
    return out


def _own() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + reaped.ru_utime + reaped.ru_stime


def _spent(before: dict[int, float], own: float) -> float:
    """CPU seconds the process tree used since ``before`` and ``own`` were read. A process that
    left the tree alive (a daemon reparented to init, as Ray's are) takes its CPU with it: it
    counts from the start as if it had not been there."""
    after = _tree()
    gone = 0.0
    for pid, cpu in before.items():
        if pid not in after and os.path.exists(f"/proc/{pid}"):
            gone += cpu
    spent = sum(after.values()) - (sum(before.values()) - gone) + _own() - own
    return max(spent, 0.0)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(
    item: pytest.Item, nextitem: pytest.Item | None
) -> Generator[None, object, object]:
    folder = os.environ.get("WEBSERV_TEST_COSTS")
    if not folder:
        return (yield)
    t0, tree, own = time.monotonic(), _tree(), _own()
    try:
        return (yield)
    finally:
        rec = {"suite": "python", "test": item.nodeid.removeprefix("python/tests/")}
        rec |= {"wall": round(time.monotonic() - t0, 2), "cpu": round(_spent(tree, own), 2)}
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        with open(Path(folder) / f"py-{worker}.jsonl", "a") as f:
            f.write(json.dumps(rec) + "\n")
