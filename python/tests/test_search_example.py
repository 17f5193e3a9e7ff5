"""Tree search over forks pays: examples/search_miniwob.py, one task and seed.

The example is a user's script (public API only), so the test loads it from the checkout. With
the same policy (learn_miniwob.py's features, zero weights: the uniform random policy over the
page's actions) and the same budget of 10 environment steps, the policy alone fails
click-button-sequence's seed 0 (its episodes end on a wrong click and start over) and the
best-first search over exact forks solves it; the path it found, replayed in a fresh episode,
earns the reward. Everything is seeded (the page by the episode's seed, the policy's sampling by
its generator), so the outcome is the same on every run. Cost: about 15 steps and 10 forks.
"""

from __future__ import annotations

import asyncio
from types import ModuleType

import examplerun
import numpy as np

import webserv


def _example() -> ModuleType:
    return examplerun.load("search_miniwob")


def test_search_over_forks_solves_what_the_same_policy_alone_does_not(server: str) -> None:
    search = _example()
    task, seed, budget = "click-button-sequence", 0, 10

    async def main() -> None:
        async with webserv.AsyncClient(server) as client:
            w = search.weights(False)
            alone = await search.plain(client, task, seed, w, budget, np.random.default_rng(seed))
            assert (alone.solved, alone.steps) == (False, budget)
            found = await search.search(client, task, seed, w, budget, 8)
            assert found.solved and found.steps <= budget, found
            assert found.actions == ['click("one")', 'click("two")'], found.actions
            # The path is a real solution: replayed from the start, it earns the reward.
            env = client.env("miniwob", task=f"miniwob.{task}")
            try:
                await env.reset(seed=seed)
                rewards = [(await env.step(a))[1] for a in found.actions]
                assert rewards[-1] == 1.0, rewards
            finally:
                await env.close()

    asyncio.run(main())
