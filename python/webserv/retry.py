"""Which failed requests are sent again, and after how long."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from typing import TypeVar

from .errors import CapacityError, ConnectionLost, WebServError

T = TypeVar("T")

#: Ops that change nothing on the server, so running one twice is harmless: the
#: fallback for a server whose hello does not list them (its ``idempotent``, read from
#: the server's op table, is used when it does).
IDEMPOTENT_OPS = frozenset({"hello", "sites", "tasks", "stats", "observe"})


def idempotent_ops(hello: dict[str, object]) -> frozenset[str]:
    """The ops a server's hello says may be sent again (``IDEMPOTENT_OPS`` without one)."""
    listed = hello.get("idempotent")
    if isinstance(listed, list) and all(isinstance(op, str) for op in listed):
        return frozenset(listed)
    return IDEMPOTENT_OPS


@dataclass(frozen=True)
class RetryPolicy:
    """Retries what is safe to retry, with jittered exponential backoff.

    - ``capacity`` (any op): the server refused before doing anything; wait its
      ``retry_after`` (at least ``min_wait``), growing up to ``max_factor`` times.
    - a lost connection, for ops that change nothing (those the server's hello lists
      as ``idempotent``; ``IDEMPOTENT_OPS`` before a hello): the next attempt reconnects.

    Nothing else is retried: a step, reset or fork that failed may have run,
    and running it again would act twice.
    """

    attempts: int = 8
    min_wait: float = 0.1
    max_factor: float = 8.0

    def should_retry(
        self, op: str, error: WebServError, idempotent: Collection[str] = IDEMPOTENT_OPS
    ) -> bool:
        if isinstance(error, CapacityError):
            return True
        return isinstance(error, ConnectionLost) and op in idempotent

    def delay(self, error: WebServError, attempt: int) -> float:
        """Seconds before attempt number ``attempt + 1`` (0-based ``attempt``)."""
        return (
            max(error.retry_after, self.min_wait)
            * (0.5 + random.random())
            * min(2.0**attempt, self.max_factor)
        )

    async def run(
        self,
        op: str,
        send: Callable[[], Awaitable[T]],
        idempotent: Callable[[], Collection[str]] | None = None,
    ) -> T:
        """Sends until a reply or an error not to retry; ``idempotent`` gives the server's
        idempotent ops (read after each attempt: the first one says hello)."""
        for attempt in range(self.attempts):
            try:
                return await send()
            except WebServError as e:
                ops = idempotent() if idempotent is not None else IDEMPOTENT_OPS
                if attempt == self.attempts - 1 or not self.should_retry(op, e, ops):
                    raise
                await asyncio.sleep(self.delay(e, attempt))
        raise AssertionError("unreachable")


#: Sends every request once.
NO_RETRY = RetryPolicy(attempts=1)

__all__ = ["IDEMPOTENT_OPS", "NO_RETRY", "RetryPolicy", "idempotent_ops"]
