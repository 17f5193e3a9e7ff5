"""Minimal oracles: a demonstration shortened to the fewest actions that still do its task from the
start state, before its task and rows are written.

1. Actions that changed nothing are dropped without a replay: those after the last step that changed
   data (when one did), a step that stayed on its page with the same observation after it and changed
   no data, and a loop (the episode came back to a page with the same observation, no data changed on
   the way: a ``go_back()`` detour).
2. Shortcuts: a stretch ``i..j-1`` is left out when the element step ``j`` acts on is already on the
   page step ``i`` starts on (the categories menu on every page, a product on the start page), the
   longest stretches first; ``i = 0`` is a suffix that does the task from the start alone (at most
   half the replays).
3. Greedy deletion: each action in turn, from the last back, is left out, kept out when the rest
   still does the task; an action followed by ``go_back()`` is first left out with it (a detour
   neither of whose steps can go alone).

Every candidate is replayed from the task's start in a fresh environment (``passes``); the steps kept
are the replay's (their observations the ones the shorter sequence sees), so the demonstration rows
teach what the shortened oracle does. At most ``budget`` replays per demonstration; a final action that
ends the episode (``stop("answer")``) is never left out.

The shorten phase of a run (``_shorten``) applies it to each demonstration that has a task, replaying
candidates through verify.py's ``_replay``.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable

from .run import _Run
from .trajectory import Demo, Step, ends_episode
from .verify import _replay

# A replay of actions from the task's start: its steps when it still does the task, else None.
Passes = Callable[[list[str]], Awaitable[list[Step] | None]]


def drop_noops(steps: list[Step]) -> list[Step]:
    """steps without those that changed nothing: no-op steps and loops back to a state seen before
    (the same URL and observation, no data changed in between). Needs no replay to find; the result
    is replayed like any candidate."""
    out: list[Step] = []
    for i, s in enumerate(steps):
        after = steps[i + 1].observation if i + 1 < len(steps) else None
        if s.next_url == s.url and after is not None and after == s.observation and not s.changes:
            continue  # the page did not change and nothing was written
        # A loop: this step starts where an earlier kept one did; what came between changed nothing.
        for j, earlier in enumerate(out):
            if earlier.url == s.url and earlier.observation == s.observation:
                if not any(x.changes for x in out[j:]):
                    del out[j:]
                break
        out.append(s)
    return out


async def shortest(steps: list[Step], passes: Passes, budget: int) -> tuple[list[Step], int]:
    """The shortest sequence found (the replay's steps; ``steps`` when nothing shorter passes) and
    the replays spent."""
    best = steps
    spent = 0

    async def attempt(actions: list[str]) -> list[Step] | None:
        nonlocal spent
        if spent >= budget:
            return None
        spent += 1
        return await passes(actions)

    def acts(ss: list[Step]) -> list[str]:
        return [s.action for s in ss]

    # What came after the last step that changed data does not matter to a task about that change.
    changed = [i for i, s in enumerate(steps) if s.changes]
    tail = steps[changed[-1] + 1 :] if changed else []
    if tail and not ends_episode(tail[-1].action):
        steps = steps[: changed[-1] + 1]
    pruned = drop_noops(steps)
    if len(pruned) < len(best):
        got = await attempt(acts(pruned))
        if got is not None:
            best = got
    # The final stop, if the demonstration has one, stays last.
    stop = acts(best)[-1:] if best and ends_episode(best[-1].action) else []
    body = acts(best)[: len(best) - len(stop)]
    tried: set[tuple[str, ...]] = set()
    # Shortcuts take at most half the replays; the greedy pass has the rest.
    while spent < budget // 2:
        cands = [
            (i, j)
            for i, j in shortcuts(best[: len(body)])
            if tuple(body[:i] + body[j:]) not in tried and j - i < len(body)
        ]
        if not cands:
            break
        i, j = max(cands, key=lambda c: (c[1] - c[0], -c[0]))
        cand = body[:i] + body[j:]
        tried.add(tuple(cand))
        got = await attempt(cand + stop)
        if got is not None:
            best, body = got, cand

    # From the last action back: what trails the outcome goes first, and an action that enables a
    # later one is tried again once that one is gone.
    async def keep(cand: list[str]) -> bool:
        """Replays cand unless tried before; keeps it when it still scores."""
        nonlocal best, body
        got = await attempt(cand + stop) if tuple(cand) not in tried else None
        tried.add(tuple(cand))
        if got is None:
            return False
        best, body = got, cand
        return True

    i = len(body) - 1
    while i >= 0 and len(body) > 1 and spent < budget:
        # A detour and its return together (neither alone leaves the episode where it was).
        pair = i + 1 < len(body) and body[i + 1] == "go_back()" and len(body) > 2
        if not (pair and await keep(body[:i] + body[i + 2 :])):
            await keep(body[:i] + body[i + 1 :])
        i -= 1
    return best, spent


# The element an action names first (click("id"), type("id", ...)); go_back(), goto(url) name none.
TARGET = re.compile(r'^(?!goto|stop|send_msg_to_user)\w+\(\s*"((?:[^"\\]|\\.)*)"')


def shortcuts(steps: list[Step]) -> list[tuple[int, int]]:
    """The stretches (i, j) that step j could skip: the element it acts on is already on the page
    step i starts on (the observation shows ``[id]``)."""
    out = []
    for j in range(1, len(steps)):
        m = TARGET.match(steps[j].action)
        if not m:
            continue
        mark = f"[{m.group(1)}]"
        out.extend((i, j) for i in range(j) if mark in steps[i].observation)
    return out


async def _shorten(run: _Run, demos: list[Demo], gate: asyncio.Semaphore) -> int:
    """Each demonstration that has a task, shortened to the fewest actions that still do it from its
    start (shorten.py); returns the replays spent."""

    async def one(d: Demo) -> int:
        if len(d.steps) < 2 or (d.label.state and not d.checks):
            return 0  # nothing to leave out, or no task to keep doing
        async with gate:
            steps, spent = await shortest(d.steps, lambda acts: _replay(run, d, acts), 2 * len(d.steps) + 4)
        if len(steps) < len(d.steps):
            d.steps = steps
        return spent

    return sum(await asyncio.gather(*(one(d) for d in demos)))
