"""WebServ's main demonstration (`make run`).

Starts `webserv serve` on the bundled shop, then runs several environments
at once over one WebSocket, each solving a bundled task with its oracle
policy, plus one episode of a random policy; prints every episode's reward,
steps and timings.
"""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

import webserv

# Two tasks of each kind: information (answer), navigation (URL), state
# (what the site stored), on the storefront and on the admin panel.
PICKS = ["shopping.0", "shopping.20", "shopping.40", "cms.5", "cms.10", "cms.35"]


async def oracle_episode(client: webserv.AsyncClient, task: dict[str, Any]) -> dict[str, Any]:
    start = time.perf_counter()
    async with client.env(task["site"], task=task["id"], idle_ms=300) as env:
        obs, info = await env.reset()
        first = time.perf_counter() - start
        reward, steps, step_ms = 0.0, 0, []
        for action in task["oracle"]:
            t0 = time.perf_counter()
            obs, reward, terminated, truncated, info = await env.step(action)
            step_ms.append((time.perf_counter() - t0) * 1000)
            steps += 1
            if terminated or truncated:
                break
    return {
        "task": task["id"],
        "goal": task["goal"],
        "reward": reward,
        "steps": steps,
        "reset_s": first,
        "step_ms": sorted(step_ms)[len(step_ms) // 2],
        "total_s": time.perf_counter() - start,
    }


async def random_episode(client: webserv.AsyncClient, seed: int, max_steps: int = 8) -> dict[str, Any]:
    rng = random.Random(seed)
    start = time.perf_counter()
    async with client.env("shopping", idle_ms=300) as env:
        obs, info = await env.reset(seed=seed)
        first = time.perf_counter() - start
        reward, steps, step_ms = 0.0, 0, []
        for i in range(max_steps + 1):
            ids = [c for c in obs["clickable"] if "sign-out" not in c]
            action = f'click("{rng.choice(ids)}")' if ids else "noop()"
            if i == max_steps:
                action = 'stop("I do not know")'
            t0 = time.perf_counter()
            obs, reward, terminated, truncated, info = await env.step(action)
            step_ms.append((time.perf_counter() - t0) * 1000)
            steps += 1
    return {
        "task": info.get("task_id"),
        "goal": obs["goal"],
        "reward": reward,
        "steps": steps,
        "reset_s": first,
        "step_ms": sorted(step_ms)[len(step_ms) // 2],
        "total_s": time.perf_counter() - start,
    }


async def main() -> None:
    async with webserv.AsyncClient() as client:
        tasks = {t["id"]: t for t in await client.tasks()}
        print(
            f"server has {len(tasks)} bundled tasks; solving {len(PICKS)} with their oracles, in parallel\n"
        )
        t0 = time.perf_counter()
        results = await asyncio.gather(
            *(oracle_episode(client, tasks[p]) for p in PICKS), random_episode(client, seed=7)
        )
        wall = time.perf_counter() - t0
        print(
            f"{'task':12} {'reward':>6} {'steps':>5} {'reset s':>8} {'step p50 ms':>11} {'total s':>8}  goal"
        )
        for r in results:
            print(
                f"{r['task']:12} {r['reward']:6.1f} {r['steps']:5d} {r['reset_s']:8.2f} "
                f"{r['step_ms']:11.0f} {r['total_s']:8.1f}  {r['goal'][:70]}"
            )
        print(
            f"\n{len(PICKS)} oracle episodes and 1 random-policy episode (last row) in {wall:.1f}s wall clock"
        )


if __name__ == "__main__":
    asyncio.run(main())
