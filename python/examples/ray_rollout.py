"""Rollouts as plain Ray tasks on a WebServ fleet: one task per node, groups kept on one server.

    WEBSERV_BIN=bin/webserv python python/examples/ray_rollout.py            # a 3-node cluster on 127.0.0.1
    python python/examples/ray_rollout.py --address 10.0.0.1:6379            # a running cluster

Starts (or joins) the fleet ``webserv``: one ``webserv serve`` per node. Then
one ``webserv.ray.rollout`` task per node runs its episodes at once: a GRPO
group of four on one bundled shop task, its members on two nodes, and solo
episodes. The policy is the task's oracle (no model): put your model's call there.
"""

from __future__ import annotations

import argparse
import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

import webserv.ray as wr
from webserv.ray.local import loopback_cluster

ROOT = Path(__file__).resolve().parents[2]
ORACLE = {
    t["intent"]: t["oracle"]
    for t in json.loads((ROOT / "sites" / "shop" / "tasks" / "shopping.json").read_text())
}


def policy(obs: dict[str, Any], done: list[str]) -> str:
    """The task's own solution, one action per step."""
    return ORACLE[obs["goal"]][len(done)]


@contextlib.contextmanager
def cluster(address: str | None) -> Iterator[None]:
    if address:
        ray.init(address=address)
        yield
        ray.shutdown()
    else:
        with loopback_cluster(3):
            yield


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--address", help="a running Ray cluster (default: three nodes on 127.0.0.1)")
    args = ap.parse_args()
    with cluster(args.address):
        fleet = wr.Fleet.start("webserv")
        nodes = [n["NodeID"] for n in ray.nodes() if n["Alive"]]
        work: list[list[wr.EpisodeSpec]] = [[] for _ in nodes]
        for member in range(4):  # one group, its members made by two workers
            work[member % min(2, len(nodes))].append(wr.EpisodeSpec(task="shopping.3", group_key="g-1"))
        for k in range(6):
            work[k % len(nodes)].append(wr.EpisodeSpec(task=f"shopping.{4 + k}"))
        refs = [
            wr.rollout.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)).remote(
                fleet.name, specs, policy
            )
            for node, specs in zip(nodes, work, strict=True)
        ]
        for episodes in ray.get(refs):
            for e in episodes:
                print(
                    f"{e.spec.task:12} group={e.spec.group_key or '-':4} role={e.group_role or '-':6} "
                    f"node={(e.node_id or '')[:8]} server={e.host} reward={e.reward} steps={e.steps} "
                    f"{e.seconds:.1f}s"
                )
        print("servers:", [(s.node_id[:8], s.url, s.envs_live) for s in fleet.servers()])
        if not args.address:
            fleet.shutdown()


if __name__ == "__main__":
    main()
