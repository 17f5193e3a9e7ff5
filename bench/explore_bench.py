"""Explore suite (first slice): model-free exploration of the bundled shop by N explorers at once, for a
fixed time: demonstrations per hour, distinct pages covered, and the share of emitted tasks whose oracle
passes its check (target 100%).

    WEBSERV_BIN=bin/webserv python bench/explore_bench.py [--explorers 8] [--seconds 300] [--smoke]

Rounds of ``webserv.explore`` (``--explorers`` episodes at once, 40 steps, k=4) run until ``--seconds``
have passed; every emitted task is then replayed by ``webserv.explore.check_tasks``. The Go-Browse
frontier (with and without, same run) is not built yet, so this reports the loop without it.
Results: bench/results/explore.{json,md} (the command, the load before and after).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import webserv
from webserv.explore import check_tasks
from webserv.launcher import LocalServer, find_binary

RESULTS = Path(__file__).resolve().parent / "results"


async def run(url: str, explorers: int, seconds: float, max_steps: int, out: Path) -> dict:
    t0, rounds, pages, kept, steps, passed, checked = time.monotonic(), [], set(), 0, 0, 0, 0
    pruned: dict[str, int] = {}
    while time.monotonic() - t0 < seconds:
        r = await webserv.explore(
            site="shopping",
            episodes=explorers,
            max_steps=max_steps,
            k=4,
            out=out / f"round{len(rounds)}",
            server=url,
            seed=len(rounds) * explorers,
        )
        rounds.append(r.stats)
        pages |= {s.next_url for ep in r.episodes for s in ep.steps}
        kept += r.stats["kept"]
        steps += r.stats["steps"]
        for t, n in r.stats["pruned_by_step"].items():
            pruned[str(t)] = pruned.get(str(t), 0) + n
        results = await check_tasks(r.tasks, site="shopping", server=url)
        checked += len(results)
        passed += sum(x["passed"] for x in results)
    explore_s = sum(s["seconds"] for s in rounds)
    return {
        "explorers": explorers,
        "rounds": len(rounds),
        "episodes": sum(s["episodes"] for s in rounds),
        "steps": steps,
        "kept": kept,
        "pruned_by_step": dict(sorted(pruned.items(), key=lambda kv: int(kv[0]))),
        "explore_seconds": round(explore_s, 1),
        "demonstrations_per_hour": round(kept / explore_s * 3600, 1) if explore_s else 0.0,
        "steps_per_second": round(steps / explore_s, 2) if explore_s else 0.0,
        "round_seconds_median": statistics.median(s["seconds"] for s in rounds),
        "distinct_pages": len(pages),
        "tasks_checked": checked,
        "tasks_passed": passed,
        "tasks_pass_share": round(passed / checked, 3) if checked else None,
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--explorers", type=int, default=8)
    p.add_argument("--seconds", type=float, default=300)
    p.add_argument("--max-steps", type=int, default=40)
    p.add_argument("--smoke", action="store_true", help="2 explorers, 8 steps, one round; writes nothing")
    a = p.parse_args()
    if a.smoke:
        a.explorers, a.seconds, a.max_steps = 2, 0.1, 8
    binary = os.environ.get("WEBSERV_BIN") or find_binary()
    if not binary:
        print("no webserv binary: make build, or set WEBSERV_BIN", file=sys.stderr)
        return 2
    load_before = os.getloadavg()
    server = LocalServer(binary, ["--idle", "200ms"])
    try:
        with tempfile.TemporaryDirectory() as d:
            res = asyncio.run(run(server.url, a.explorers, a.seconds, a.max_steps, Path(d)))
    finally:
        server.stop()
    res["load_before"] = [round(x, 1) for x in load_before]
    res["load_after"] = [round(x, 1) for x in os.getloadavg()]
    res["command"] = "python bench/explore_bench.py " + " ".join(sys.argv[1:])
    print(json.dumps(res, indent=1))
    if a.smoke:
        return 0 if res["tasks_checked"] == res["tasks_passed"] else 1
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "explore.json").write_text(json.dumps(res, indent=1) + "\n")
    rows = "\n".join(f"| {k} | {v} |" for k, v in res.items())
    (RESULTS / "explore.md").write_text(
        "# Explore (model-free, bundled shop, no frontier yet)\n\n"
        f"`{res['command']}` on {os.cpu_count()} cores, load {res['load_before']} before and "
        f"{res['load_after']} after (the machine was shared: rates are indicative).\n\n"
        f"| | |\n|---|---|\n{rows}\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
