"""Best-first tree search over forks on the bundled shop, with a scripted value function (no model).

    python python/examples/tree_search.py [--task shopping.0] [--branching 3] [--expansions 8]

The tasks it reads are the shop's questions about a product ("What is the
price of the Sierra Organic Pocket Tee?", "How many reviews does ... have?",
"What is the SKU of ...?", shopping.0 to shopping.14). Each node of the tree
is a live environment. Expanding a node forks it once per candidate action
(``children = await env.fork(k)``): every child starts at the node's exact
state (site and browser) on its own copy of the site, takes one action, and
is scored by the value function; the best unexpanded node goes next. A node
on the product's page proposes the answer (``stop("...")``), which the
server grades. The server is $WEBSERV_URL, or a local `webserv serve` started
for the run.
"""

from __future__ import annotations

import argparse
import asyncio
import heapq
import itertools
import json
import re
from dataclasses import dataclass, field

import webserv

QUESTION = re.compile(
    r"^(?:What is the (?P<attr>price|SKU) of the (?P<p1>.+)\?"
    r"|How many (?P<rev>reviews) does the (?P<p2>.+) have\?)$"
)


@dataclass(order=True)
class Node:
    priority: float  # -value: heapq pops the smallest
    order: int
    env: webserv.AsyncEnv = field(compare=False)
    path: list[str] = field(compare=False)


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def value(obs: dict, product: str) -> float:
    """How promising a page is: 2 on the product's own page, 1 with a link to it, else how much of
    its name the page title shares (0 to 0.5)."""
    title = obs["title"].lower()
    if title.startswith(product.lower()):
        return 2.0
    if slug(product) in obs["clickable"]:
        return 1.0
    words = product.lower().split()
    return 0.5 * sum(w in title for w in words) / len(words)


def answer(obs: dict, attr: str) -> str | None:
    """The asked-for value, read off the product page's accessibility tree."""
    text = obs["axtree_txt"]
    pattern = {"price": r'StaticText "(\$[\d,]+\.\d\d)"', "SKU": r'StaticText "SKU: ([\w-]+)"'}.get(
        attr, r"\((\d+) reviews?\)"
    )
    m = re.search(pattern, text)
    return m.group(1) if m else None


def propose(obs: dict, product: str, attr: str, branching: int) -> list[str]:
    """Candidate actions: the answer on the product page; else searches, and the links nearest the product."""
    if obs["title"].lower().startswith(product.lower()):
        found = answer(obs, attr)
        return [f"stop({json.dumps(found)})"] if found else []
    actions = []
    search = next((i["id"] for i in obs["inputs"] if i["id"].startswith("search")), None)
    if search:
        actions.append(f"fill({json.dumps(search)}, {json.dumps(product)}, enter=True)")
        broad = " ".join(product.split()[:1])  # a broader query: the brand alone
        actions.append(f"fill({json.dumps(search)}, {json.dumps(broad)}, enter=True)")
    words = set(slug(product).split("-"))
    scored = sorted(
        ((len(words & set(cid.split(".")[-1].split("-"))), cid) for cid in obs["clickable"]), reverse=True
    )
    actions += [f"click({json.dumps(cid)})" for score, cid in scored[:branching] if score > 0]
    return actions[:branching]


async def search(client: webserv.AsyncClient, task: str, branching: int, expansions: int) -> float:
    root = client.env("shopping", idle_ms=300)
    obs, info = await root.reset(options={"task_id": task})
    m = QUESTION.match(obs["goal"])
    if not m:
        await root.close()
        raise SystemExit(f"{task}: {obs['goal']!r} is not a question this example reads (use shopping.0-14)")
    attr = m.group("attr") or "reviews"
    product = m.group("p1") or m.group("p2")
    print(f"{task}: {obs['goal']}\n")
    order = itertools.count()
    frontier = [Node(-value(obs, product), next(order), root, [])]
    seen = {obs["url"]}
    best = 0.0
    try:
        for step in range(expansions):
            if not frontier:
                break
            node = heapq.heappop(frontier)
            obs = node.env.last_obs or {}
            actions = propose(obs, product, attr, branching)
            print(f"expand {step}: value {-node.priority:.2f}  {obs['url']}")
            if not actions:
                await node.env.close()
                continue
            children = await node.env.fork(len(actions))  # k copies of this exact state
            await node.env.close()  # the children carry it on
            results = await asyncio.gather(*(c.step(a) for c, a in zip(children, actions, strict=True)))
            for child, action, (cobs, reward, terminated, truncated, _) in zip(
                children, actions, results, strict=True
            ):
                v = value(cobs, product)
                print(f"    {action:70.70} -> {v:.2f}  {cobs['title'][:50]}")
                if terminated or truncated or cobs["url"] in seen:
                    await child.close()
                    if terminated:
                        print(f"    answered: reward {reward}")
                        best = max(best, reward)
                    continue
                seen.add(cobs["url"])
                heapq.heappush(frontier, Node(-v, next(order), child, [*node.path, action]))
            if best == 1.0:
                break
    finally:
        await asyncio.gather(*(n.env.close() for n in frontier))
    return best


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--task", default="shopping.0")
    ap.add_argument("--branching", type=int, default=3)
    ap.add_argument("--expansions", type=int, default=8)
    args = ap.parse_args()
    async with webserv.AsyncClient() as client:
        reward = await search(client, args.task, args.branching, args.expansions)
    print(f"\nbest reward: {reward}")


if __name__ == "__main__":
    asyncio.run(main())
