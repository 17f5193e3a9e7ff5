"""Concurrent exploration episodes consult a shared explorer in one fixed order (explore/turnstile.py),
whatever their steps cost: the run a seed gives does not depend on the host's load. No browser: the
steps are coroutines that yield a random number of times (different in each run)."""

from __future__ import annotations

import asyncio
import random

import pytest

from webserv.explore.turnstile import Turnstile


async def _run(lengths: list[int], workers: int, rng: random.Random) -> list[tuple[int, int]]:
    """Episodes of the given lengths (turns each) on `workers` workers, as the explore loop runs them;
    each step between turns yields to the loop 0-20 times. Returns the turns in the order taken."""
    order = Turnstile()
    taken: list[tuple[int, int]] = []
    todo = iter(range(len(lengths)))

    async def episode(i: int) -> None:
        for _ in range(rng.randrange(5)):  # the reset
            await asyncio.sleep(0)
        for t in range(1, lengths[i] + 1):
            async with order.turn(i):
                taken.append((t, i))
                for _ in range(rng.randrange(3)):  # the explorer itself may wait (a model call)
                    await asyncio.sleep(0)
            for _ in range(rng.randrange(21)):  # the step
                await asyncio.sleep(0)

    async def worker() -> None:
        rnd = 1
        for i in todo:
            order.enter(i, rnd)
            try:
                await episode(i)
            finally:
                rnd = await order.leave(i)

    await asyncio.gather(*(worker() for _ in range(workers)))
    return taken


@pytest.mark.parametrize("workers", [6, 3, 1])
def test_turns_go_in_one_order_however_long_steps_take(workers: int) -> None:
    lengths = [5, 2, 7, 1, 4, 6]
    runs = [asyncio.run(_run(lengths, workers, random.Random(k))) for k in range(20)]
    assert all(r == runs[0] for r in runs), "the order of turns changed with the steps' timing"
    assert sorted(runs[0]) == sorted((t, i) for i, n in enumerate(lengths) for t in range(1, n + 1))
    if workers == len(lengths):  # all at once: step by step, by index within a step
        assert runs[0] == sorted(runs[0])


def test_turns_out_of_the_protocol_are_refused() -> None:
    async def main() -> None:
        order = Turnstile()
        order.enter(1)
        with pytest.raises(ValueError, match="episode 0 is not registered"):
            async with order.turn(0):
                pass
        with pytest.raises(ValueError, match="already registered"):
            order.enter(1)
        with pytest.raises(ValueError, match="enter episodes in index order"):
            order.enter(0)

    asyncio.run(main())
