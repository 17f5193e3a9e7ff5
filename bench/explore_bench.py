"""Explore suite: model-free exploration of the bundled shop by N explorers at once for a fixed time,
without and with the Go-Browse frontier, in one run: demonstrations per hour, distinct pages and URL
patterns covered, the share of emitted tasks whose oracle passes its check (target 100%), and how many
of them are state tasks (checks of the rows their demonstration changed).

    WEBSERV_BIN=bin/webserv python bench/explore_bench.py [--explorers 8] [--seconds 120] [--smoke]

Each arm is one ``webserv.explore`` call (``--explorers`` episodes at once, 40 steps, k=4) that starts
episodes until ``--seconds`` have passed; the frontier arm starts every episode after the first
``--explorers`` from a frontier state (a fork of a snapshot of a page found earlier). Every emitted
task is then replayed by ``webserv.explore.check_tasks``. The arms run one after the other on one
server (the order alternates with --order). Results: bench/results/explore.{json,md} (the command,
the load before and after).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import webserv
from webserv.explore import check_tasks
from webserv.launcher import LocalServer, find_binary

RESULTS = Path(__file__).resolve().parent / "results"


async def arm(url: str, explorers: int, seconds: float, max_steps: int, out: Path, frontier: bool) -> dict:
    t0 = time.monotonic()
    r = await webserv.explore(
        site="shopping",
        episodes=100_000,  # bounded by the time
        concurrency=explorers,
        seconds=seconds,
        max_steps=max_steps,
        k=4,
        out=out,
        server=url,
        frontier=frontier,
    )
    wall = time.monotonic() - t0
    results = await check_tasks(r.tasks, site="shopping", server=url)
    passed = sum(x["passed"] for x in results)
    s = r.stats
    return {
        "frontier": frontier,
        "episodes": s["episodes"],
        "status": s["status"],
        "frontier_entries": (s["frontier"] or {}).get("entries", 0),
        "started_from_frontier": s["started_from_frontier"],
        "steps": s["steps"],
        "kept": s["kept"],
        "frontier_dropped": s["frontier_dropped"],
        "tasks": s["tasks"],
        # Tasks checking what their demonstration changed in the shop's database (state_diff).
        "state_tasks": (s.get("state") or {}).get("verified", 0),
        "pruned_by_step": s["pruned_by_step"],
        "seconds": round(wall, 1),
        "demonstrations_per_hour": round(s["kept"] / wall * 3600, 1) if wall else 0.0,
        "steps_per_second": round(s["steps"] / wall, 2) if wall else 0.0,
        "distinct_pages": s["distinct_pages"],
        "distinct_patterns": s["distinct_patterns"],
        "coverage": s["coverage"][-1] if s["coverage"] else None,
        "tasks_passed": passed,
        "tasks_pass_share": round(passed / len(results), 3) if results else None,
        "failed": [x for x in results if not x["passed"]][:5],
    }


async def run(url: str, explorers: int, seconds: float, max_steps: int, out: Path, order: str) -> list[dict]:
    arms = [False, True] if order == "plain-first" else [True, False]
    res = []
    for fr in arms:
        res.append(await arm(url, explorers, seconds, max_steps, out / ("frontier" if fr else "plain"), fr))
    return sorted(res, key=lambda a: a["frontier"])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--explorers", type=int, default=8)
    p.add_argument("--seconds", type=float, default=120)
    p.add_argument("--max-steps", type=int, default=40)
    p.add_argument("--order", choices=["plain-first", "frontier-first"], default="plain-first")
    p.add_argument("--smoke", action="store_true", help="2 explorers, 8 steps, a few seconds; writes nothing")
    a = p.parse_args()
    if a.smoke:
        a.explorers, a.seconds, a.max_steps = 2, 5.0, 8
    binary = os.environ.get("WEBSERV_BIN") or find_binary()
    if not binary:
        print("no webserv binary: make build, or set WEBSERV_BIN", file=sys.stderr)
        return 2
    load_before = os.getloadavg()
    server = LocalServer(binary, ["--idle", "200ms"])
    try:
        with tempfile.TemporaryDirectory() as d:
            arms = asyncio.run(run(server.url, a.explorers, a.seconds, a.max_steps, Path(d), a.order))
    finally:
        server.stop()
    res = {
        "command": "python bench/explore_bench.py " + " ".join(sys.argv[1:]),
        "explorers": a.explorers,
        "seconds_per_arm": a.seconds,
        "order": a.order,
        "cores": os.cpu_count(),
        "load_before": [round(x, 1) for x in load_before],
        "load_after": [round(x, 1) for x in os.getloadavg()],
        "arms": arms,
    }
    print(json.dumps(res, indent=1))
    if a.smoke:
        return 0 if all(x["tasks_pass_share"] in (None, 1.0) for x in arms) else 1
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "explore.json").write_text(json.dumps(res, indent=1) + "\n")
    keys = [
        "episodes",
        "status",
        "frontier_entries",
        "started_from_frontier",
        "steps",
        "kept",
        "frontier_dropped",
        "tasks",
        "state_tasks",
        "seconds",
        "demonstrations_per_hour",
        "steps_per_second",
        "distinct_pages",
        "distinct_patterns",
        "tasks_passed",
        "tasks_pass_share",
    ]
    rows = "\n".join(f"| {k} | {arms[0][k]} | {arms[1][k]} |" for k in keys)
    (RESULTS / "explore.md").write_text(
        "# Explore: model-free, bundled shop, without and with the frontier\n\n"
        f"`{res['command']}` on {res['cores']} cores, load {res['load_before']} before and "
        f"{res['load_after']} after (the machine was shared: rates are indicative; the two arms ran one "
        f"after the other on one server, {a.order}).\n\n"
        f"| | no frontier | frontier |\n|---|---|---|\n{rows}\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
