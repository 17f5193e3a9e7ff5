"""The order in which concurrent episodes consult an explorer that keeps state across them.

The model-free explorer counts what every episode of a run has tried, so that episodes spread over the
site. When episodes run at once, the order in which they ask it for their next action would otherwise be
the order their steps happened to finish in: a run with the same seed would explore differently on a
busy host than on a quiet one. A ``Turnstile`` lets the calls through in one fixed order, round by round
and by episode index within a round, while the steps themselves still run at once: a run's episodes
then depend only on its seed and on the pages.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager


class Turnstile:
    """Lets registered episodes through one at a time, in (round, episode index) order.

    An episode is registered (``enter``) before it starts, at a round, and each ``turn`` it takes is in
    the next round; ``turn`` waits until every other registered episode has taken its turns of earlier
    rounds (and of the same round, with a lower index). ``leave`` is a turn too: it removes the
    episode and returns the round it left in; an episode started in its place (with an index above
    every one registered, as the loop hands them out) enters at that round, with no wait between the
    two, so the order never depends on when a step or a reset finished.
    """

    def __init__(self) -> None:
        self._next: dict[int, int] = {}  # episode index -> the round of its next turn
        self._waiting: dict[tuple[int, int], asyncio.Future[None]] = {}

    def enter(self, index: int, round: int = 1) -> None:
        if index in self._next:
            raise ValueError(f"episode {index} is already registered")
        if any(i > index for i in self._next):
            raise ValueError(f"episode {index} enters after a higher index: enter episodes in index order")
        self._next[index] = round
        self._wake()

    async def leave(self, index: int) -> int:
        """Removes the episode once its next turn comes (an episode's end is a turn too, so the one
        started in its place gets a place in the order that timing does not decide); returns that
        turn's round."""
        if index not in self._next:
            raise ValueError(f"episode {index} is not registered")
        key = (self._next[index], index)
        await self._first_is(key)
        del self._next[index]
        self._wake()
        return key[0]

    def _first(self) -> tuple[int, int] | None:
        return min(((r, i) for i, r in self._next.items()), default=None)

    async def _first_is(self, key: tuple[int, int]) -> None:
        # Woken when key was first; an episode entered since may be before it: check again.
        while self._first() != key:
            fut = self._waiting[key] = asyncio.get_running_loop().create_future()
            try:
                await fut
            finally:
                del self._waiting[key]

    def _wake(self) -> None:
        first = self._first()
        fut = self._waiting.get(first) if first else None
        if fut is not None and not fut.done():
            fut.set_result(None)

    @asynccontextmanager
    async def turn(self, index: int) -> AsyncGenerator[None]:
        """Held while episode ``index`` takes its turn; the next turn waits for it."""
        if index not in self._next:
            raise ValueError(f"episode {index} is not registered")
        key = (self._next[index], index)
        await self._first_is(key)
        try:
            yield
        finally:
            self._next[index] = key[0] + 1
            self._wake()
