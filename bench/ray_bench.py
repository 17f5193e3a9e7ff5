"""Fleet benchmark: episodes/s through webserv.ray's fleet against the same servers given as a URL list.

    WEBSERV_BIN=bin/webserv python bench/ray_bench.py [--nodes 3] [--concurrent 12] [--rounds 4] [--smoke]

A Ray cluster of ``--nodes`` nodes on 127.0.0.1 (webserv.ray.local), a fleet
with one ``webserv serve`` per node (the bundled shop, local backend), and one
rollout task per node, as verl's AgentLoopWorkers are spread, each running its
share of ``--concurrent`` episodes at once. An episode is a bundled shop task
solved by its oracle (reset, four steps, reward 1). The two variants use the
same servers in the same run, alternating round by round (ABAB, the order
swapped every round, so drift on a shared machine falls on both):

- fleet: ``webserv.ray.run_episodes(fleet, ...)``: a client from
  ``Fleet.get(name)``, node-local placement, groups claimed in the fleet;
- urls: ``AsyncClient(urls=fleet.urls(), token=...)``: the package's
  least-loaded placement over the same servers, no Ray in the client.

Reported: episodes/s per round (the driver's wall clock from launching the
round's tasks to their last episode), their medians, the ratio of medians
(fleet / urls) and the median episode time. Results in bench/results/ray.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import ray

import webserv
import webserv.ray as wr
from webserv.launcher import find_binary
from webserv.ray.local import loopback_cluster

ROOT = Path(__file__).resolve().parents[1]
TASKS = json.loads((ROOT / "sites" / "shop" / "tasks" / "shopping.json").read_text())
# Tasks whose oracle is four steps on the storefront (no sign-in), by goal.
ORACLE = {t["intent"]: list(t["oracle"]) for t in TASKS if not t.get("require_login")}
TASK_IDS = [f"shopping.{t['task_id']}" for t in TASKS if not t.get("require_login")]


def oracle(obs: dict[str, Any], done: list[str]) -> str:
    return ORACLE[obs["goal"]][len(done)]


async def _urls_episodes(urls: list[str], token: str, specs: list[wr.EpisodeSpec]) -> list[wr.Episode]:
    client = webserv.AsyncClient(urls=urls, token=token)
    try:
        return list(await asyncio.gather(*(wr.run_episode(client, s, oracle) for s in specs)))
    finally:
        await client.close()


@ray.remote(num_cpus=0)
def worker(variant: str, fleet: str, urls: list[str], token: str, specs: list[wr.EpisodeSpec]) -> list[Any]:
    if variant == "fleet":
        eps = asyncio.run(wr.run_episodes(fleet, specs, oracle))
    else:
        eps = asyncio.run(_urls_episodes(urls, token, specs))
    return [(e.reward, e.seconds, e.host, e.failure) for e in eps]


def one_round(variant: str, fleet: wr.Fleet, nodes: int, concurrent: int, offset: int) -> dict[str, Any]:
    specs: dict[int, list[wr.EpisodeSpec]] = {i: [] for i in range(nodes)}
    for k in range(concurrent):
        specs[k % nodes].append(wr.EpisodeSpec(task=TASK_IDS[(offset + k) % len(TASK_IDS)]))
    urls, token = fleet.urls(), fleet.token
    t0 = time.perf_counter()
    refs = [
        worker.options(resources={f"node{i}": 0.01}).remote(variant, fleet.name, urls, token, s)
        for i, s in specs.items()
    ]
    results = [r for rs in ray.get(refs) for r in rs]
    wall = time.perf_counter() - t0
    ok = [r for r in results if r[3] is None and r[0] == 1.0]
    return {
        "variant": variant,
        "episodes": len(results),
        "solved": len(ok),
        "failures": [r[3] for r in results if r[3] is not None],
        "wall_s": wall,
        "episodes_per_s": len(ok) / wall,
        "episode_s_p50": statistics.median(r[1] for r in results),
        "per_server": {u: sum(1 for r in results if r[2] == u) for u in urls},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, default=3, help="Ray nodes (one server each)")
    ap.add_argument("--concurrent", type=int, default=12, help="episodes at once per round")
    ap.add_argument("--rounds", type=int, default=4, help="rounds per variant")
    ap.add_argument("--smoke", action="store_true", help="2 nodes, one small round each way")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "ray.json"))
    args = ap.parse_args()
    if args.smoke:
        args.nodes = 2
        args.concurrent, args.rounds = args.nodes, 1
    binary = find_binary()
    if binary is None:
        sys.exit("no webserv binary: run `make build` or set WEBSERV_BIN")
    started = time.time()
    load_before = os.getloadavg()
    with loopback_cluster(args.nodes, resources={"webserv": 1}):
        fleet = wr.Fleet.start(
            "bench",
            node_resource="webserv",
            binary=binary,
            serve_args=["--idle", "500ms"],
            timeout=300,  # a loaded host (the suite beside it) schedules the servers' actors slowly
        )
        try:
            one_round("urls", fleet, args.nodes, args.nodes, 0)  # warm: site data, browser caches, workers
            rounds = []
            for r in range(args.rounds):
                order = ("fleet", "urls") if r % 2 == 0 else ("urls", "fleet")
                for variant in order:
                    rounds.append(one_round(variant, fleet, args.nodes, args.concurrent, r * args.concurrent))
                    print(json.dumps({k: v for k, v in rounds[-1].items() if k != "failures"}), flush=True)
        finally:
            fleet.shutdown()
    med = {
        v: statistics.median(x["episodes_per_s"] for x in rounds if x["variant"] == v)
        for v in ("fleet", "urls")
    }
    rep = {
        "suite": "ray",
        "smoke": args.smoke,
        "command": " ".join(["python", "bench/ray_bench.py", *sys.argv[1:]]),
        "started": started,
        "seconds": time.time() - started,
        "nodes": args.nodes,
        "concurrent": args.concurrent,
        "rounds": rounds,
        "fleet_episodes_per_s_p50": med["fleet"],
        "urls_episodes_per_s_p50": med["urls"],
        "ratio_fleet_over_urls": med["fleet"] / med["urls"],
        "load_before": load_before,
        "load_after": os.getloadavg(),
        "cores": os.cpu_count(),
        "ray": ray.__version__,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rep, indent=2) + "\n")
    print(
        f"fleet {med['fleet']:.2f} episodes/s, urls {med['urls']:.2f} episodes/s "
        f"(medians of {args.rounds} rounds); "
        f"ratio {rep['ratio_fleet_over_urls']:.3f}; load {load_before[0]:.1f} -> {rep['load_after'][0]:.1f}"
    )


if __name__ == "__main__":
    main()
