"""Tree search over exact forks on MiniWoB++, against the same policy without branching.

    pip install 'webserv[miniwob]'
    python examples/search_miniwob.py --tasks click-button,click-checkboxes --seeds 3 --budget 20

The policy is learn_miniwob.py's: the page's actions (``candidates(goal, axtree)``) scored by a
linear softmax over their features, with fixed weights (zero by default: the uniform random
policy over the page's actions; ``--hand`` sets a few by hand). Each task and seed gets the same
budget of environment steps (``env.step`` calls) two ways:

- **plain**: episodes from the start, the policy sampling each action, until one earns the
  reward or the budget is spent (a failed episode starts over: a reset with the same seed);
- **search**: best-first over forks. A node is a live environment, and each of the actions the
  policy proposes there (the ``--branching`` most likely) is an edge; the most likely path's next
  edge goes first: the node is forked (``fork(1)``), the child takes the action (one step of the
  budget), and a child that ended the episode without the reward, or shows a page already in the
  tree, is dropped. Forks of MiniWoB pages are exact
  (``info.fork.exact``: the server replays the episode), so a child is its parent's state plus one
  action: no step is spent on replaying a prefix and no failing action is tried twice.

It prints, per task, how many seeds each solved within the budget and the steps they spent. The
server is $WEBSERV_URL, or a local `webserv serve` started for the run.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import heapq
import itertools
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import webserv
from webserv.observation import page_view

sys.path.insert(0, str(Path(__file__).resolve().parent))
from learn_miniwob import FEATURES, candidates  # noqa: E402

# Hand-set weights (--hand): prefer what the goal names, and a box it names that is not ticked.
HAND = {
    "click: text is a quoted phrase of the goal": 2.0,
    "click: text is a word of the goal, a box not ticked": 2.0,
    "click: text is a word of the goal, goal still pending": 1.0,
    "fill: phrase is quoted in the goal": 2.0,
}


def weights(hand: bool) -> np.ndarray:
    w = np.zeros(len(FEATURES))
    if hand:
        for name, v in HAND.items():
            w[FEATURES.index(name)] = v
    return w


def policy(obs: dict[str, Any], w: np.ndarray) -> tuple[list[str], np.ndarray]:
    """The page's actions and the policy's probability of each."""
    actions, feats = candidates(obs["goal"], obs["axtree_txt"])
    s = feats @ w
    p = np.exp(s - s.max())
    return actions, p / p.sum()


def state_key(obs: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(page_view(obs), sort_keys=True, default=str).encode()).hexdigest()


@dataclass
class Result:
    solved: bool = False
    steps: int = 0
    actions: list[str] = field(default_factory=list)


async def plain(
    client: webserv.AsyncClient, task: str, seed: int, w: np.ndarray, budget: int, rng: np.random.Generator
) -> Result:
    """The policy alone: episodes from the start (same seed) until one is solved or the budget is spent."""
    env = client.env("miniwob", task=f"miniwob.{task}")
    out = Result()
    try:
        while out.steps < budget:
            obs, _ = await env.reset(seed=seed)
            done, path = False, []
            while not done and out.steps < budget:
                actions, p = policy(obs, w)
                action = actions[int(rng.choice(len(actions), p=p))]
                obs, reward, term, trunc, _ = await env.step(action)
                out.steps += 1
                path.append(action)
                done = term or trunc
                if reward > 0:
                    out.solved, out.actions = True, path
                    return out
    finally:
        await env.close()
    return out


@dataclass
class Node:
    env: webserv.AsyncEnv
    path: list[str]
    logp: float  # the path's log-probability under the policy
    untried: int  # edges of this node still in the frontier: closed at 0


async def search(
    client: webserv.AsyncClient, task: str, seed: int, w: np.ndarray, budget: int, branching: int
) -> Result:
    """Best-first over forks with the same policy, within the same budget of steps.

    The frontier holds edges (a node and one of its actions), the most likely path first. Taking
    one costs a step: a fork of the node (``fork(1)``, exact), then the action in the child."""
    root = client.env("miniwob", task=f"miniwob.{task}")
    obs, _ = await root.reset(seed=seed)
    out = Result()
    order = itertools.count()
    frontier: list[tuple[float, int, Node, str]] = []
    nodes: list[Node] = []
    seen = {state_key(obs)}

    def add(node: Node, obs: dict[str, Any]) -> None:
        actions, p = policy(obs, w)
        ranked = sorted(range(len(actions)), key=lambda i: -p[i])[:branching]
        node.untried = len(ranked)
        nodes.append(node)
        for i in ranked:
            heapq.heappush(frontier, (-(node.logp + math.log(p[i])), next(order), node, actions[i]))

    add(Node(root, [], 0.0, 0), obs)
    try:
        while frontier and out.steps < budget:
            neg_logp, _, node, action = heapq.heappop(frontier)
            (child,) = await node.env.fork(1)
            node.untried -= 1
            if node.untried == 0:
                await node.env.close()  # every action of it is taken: the forks carry it on
            fork = (child.last_info or {}).get("fork", {})
            if not fork.get("exact"):
                await child.close()
                raise RuntimeError(f"{task} seed {seed}: a fork is not its parent's state: {fork}")
            cobs, reward, term, trunc, _ = await child.step(action)
            out.steps += 1
            path = [*node.path, action]
            if reward > 0:
                out.solved, out.actions = True, path
            key = state_key(cobs)
            if out.solved or term or trunc or key in seen:
                await child.close()  # solved, failed, or a page already in the tree
                if out.solved:
                    break
                continue
            seen.add(key)
            add(Node(child, path, -neg_logp, 0), cobs)
    finally:
        await asyncio.gather(*(n.env.close() for n in nodes))
    return out


async def measure(
    client: webserv.AsyncClient, tasks: list[str], seeds: int, budget: int, branching: int, hand: bool
) -> dict[str, dict[str, list[Result]]]:
    w = weights(hand)
    table: dict[str, dict[str, list[Result]]] = {}
    for task in tasks:
        row: dict[str, list[Result]] = {"plain": [], "search": []}
        for seed in range(seeds):
            rng = np.random.default_rng(seed)
            row["plain"].append(await plain(client, task, seed, w, budget, rng))
            row["search"].append(await search(client, task, seed, w, budget, branching))
        table[task] = row
    return table


def show(table: dict[str, dict[str, list[Result]]], budget: int) -> None:
    print(
        f"{'task':24} {'plain solved':>13} {'steps':>6} {'search solved':>14} {'steps':>6}  (budget {budget})"
    )
    totals = {"plain": 0, "search": 0}
    n = 0
    for task, row in table.items():
        cells = []
        for how in ("plain", "search"):
            rs = row[how]
            solved = sum(r.solved for r in rs)
            totals[how] += solved
            cells.append(f"{solved}/{len(rs)}")
            cells.append(str(sum(r.steps for r in rs)))
        n += len(row["plain"])
        print(f"{task:24} {cells[0]:>13} {cells[1]:>6} {cells[2]:>14} {cells[3]:>6}")
    print(f"{'all':24} {totals['plain']:>11}/{n} {'':>6} {totals['search']:>12}/{n}")


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tasks", default="click-button,click-checkboxes,enter-text")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--budget", type=int, default=20, help="environment steps per task and seed")
    ap.add_argument("--branching", type=int, default=8, help="actions tried per node at most")
    ap.add_argument("--hand", action="store_true", help="hand-set weights instead of the uniform policy")
    args = ap.parse_args()
    async with webserv.AsyncClient() as client:
        table = await measure(
            client, args.tasks.split(","), args.seeds, args.budget, args.branching, args.hand
        )
    show(table, args.budget)


if __name__ == "__main__":
    asyncio.run(main())
