"""The verify phase: the demonstrations replayed from their task's start in fresh environments.
Best-of-K re-attempts, the state checks a replay reads, the steps that change data counted again,
each task's independent solution, frontier demonstrations replayed from the site's start, and each
task as written graded as ``webserv tasks check`` grades it (its oracle and solutions must pass)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

from ..errors import WebServError
from ..handle import AsyncEnv
from ..models import ModelError
from .check import _check_one, _queries, state_holds, url_matches
from .definition import PLACEHOLDERS
from .episodes import _clean, _step
from .instruction import reference_url
from .run import _Run
from .solve import solve
from .state import MAX_CHECKS
from .trajectory import Demo, Episode, MalformedOutput, Step, answer_of, obs_text
from .write import _task


async def _attempt(
    run: _Run, demo: Demo, j: int, attempter: Any, rng: random.Random
) -> tuple[int, list[Step]]:
    """One fresh attempt at demo's instruction from its start: (score, steps)."""
    env = run.env()
    ep = Episode(-1, demo.episode.persona, demo.start_url, origin_url=demo.start_url)
    try:
        obs, _ = await env.reset(seed=run.seed + 1000 * (j + 1), options=_options_for(run, demo.start_url))
        if attempter is None:
            # Model-free: the demonstration with one stretch of it left out (a shorter way there?).
            acts = [s.action for s in demo.steps]
            if len(acts) > 1:
                a = rng.randrange(len(acts) - 1)
                b = rng.randrange(a + 1, len(acts))
                acts = acts[:a] + acts[b:]
            for action in acts:
                nxt, _, terminated, _, _ = await env.step(action)
                err = nxt.get("last_action_error") or ""
                ep.steps.append(_step(obs, action, nxt))
                obs = nxt
                if err:
                    return 0, ep.steps
                if terminated:
                    break
        else:
            for _ in range(len(demo.steps) + run.k):
                action = await attempter.act(obs, ep, demo.label.instruction)
                nxt, _, terminated, truncated, _ = await env.step(action)
                err = nxt.get("last_action_error") or ""
                ep.steps.append(_step(obs, action, nxt))
                obs = nxt
                if terminated or truncated:
                    break
        given = answer_of(ep.steps[-1].action) if ep.steps else ""
        if demo.label.answer and given not in ("", demo.label.answer):
            return 0, ep.steps  # it answered something else
        if demo.label.state and run.state:
            # It must change the site's data as the demonstration did (one of its candidates).
            values = (await env.state_diff(_queries(demo.label.state)))["queries"]
            if not any(not v.get("error") and v["now"] != v["base"] for v in values):
                return 0, ep.steps
        return await run.reward.score(ep, demo.label, obs), ep.steps
    except (ModelError, MalformedOutput, WebServError):
        return 0, ep.steps  # a failed attempt: the demonstration it competes with stays
    finally:
        await env.close()


async def _verify_state(run: _Run, demos: list[Demo], gate: asyncio.Semaphore) -> None:
    """Each demonstration that changed the site's state, replayed from its task's start in a fresh
    environment: the candidate checks that hold at the end with a value they did not have at the
    start become its state checks (their expect the value the replay read), the most specific first."""

    async def one(d: Demo) -> None:
        if not d.label.state or d.label.answer or d.episode.start_cause != "reset":
            return
        async with gate:
            try:
                async with _from_start(run, d) as (env, _):
                    for s in d.steps:
                        nxt, _, terminated, _, _ = await env.step(s.action)
                        if nxt.get("last_action_error") or terminated:
                            return  # the replay did not go as the demonstration did: no check
                    values = (await env.state_diff(_queries(d.label.state)))["queries"]
            except WebServError:
                return
        ok = [
            (c, v)
            for c, v in zip(d.label.state, values, strict=True)
            if not v.get("error") and v["now"] != v["base"]
        ]
        ok.sort(key=lambda cv: -int(cv[0].get("columns", 0)))
        checks = [
            {"db": d.episode.state_db, "sql": c["sql"], "args": c["args"], "expect": v["now"]}
            for c, v in ok[:MAX_CHECKS]
        ]
        d.checks = checks if state_holds(checks, [v for _, v in ok[:MAX_CHECKS]]) else []

    await asyncio.gather(*(one(d) for d in demos))


def _options_for(run: _Run, start_url: str) -> dict[str, Any]:
    if run.site in PLACEHOLDERS:
        return run.reset_options()
    return run.reset_options(start_url)


async def _best_of(run: _Run, demos: list[Demo], k: int, attempter: Any, gate: asyncio.Semaphore) -> None:
    """For each demonstration, k fresh attempts from its start; the best scored (then the shortest,
    then the original) is kept."""

    async def one(i: int, d: Demo, j: int) -> tuple[int, list[Step]]:
        async with gate:
            return await _attempt(run, d, j, attempter, random.Random(f"{run.seed}/{i}/{j}"))

    for i, d in enumerate(demos):
        results = await asyncio.gather(*(one(i, d, j) for j in range(k)))
        cands = [(1, d.steps)] + [(s, _clean(st)) for s, st in results]
        best = max(range(len(cands)), key=lambda i: (cands[i][0], -len(cands[i][1]), -i))
        d.best_of = {
            "k": k,
            "scores": [s for s, _ in results],
            "lengths": [len(st) for _, st in results],
            "original_length": len(d.steps),
            "chosen": best,  # 0: the explored demonstration; j: attempt j
        }
        if best > 0 and cands[best][1]:
            d.steps = cands[best][1]


async def _replay(run: _Run, d: Demo, actions: list[str]) -> list[Step] | None:
    """actions replayed from d's task's start in a fresh environment: the replay's steps when they
    all ran and still do d's task (_does_task), else None."""
    try:
        async with _from_start(run, d) as (env, obs):
            steps: list[Step] = []
            for a in actions:
                nxt, _, terminated, _, _ = await env.step(a)
                if nxt.get("last_action_error"):
                    return None
                steps.append(_step(obs, a, nxt))
                obs = nxt
                if terminated and len(steps) < len(actions):
                    return None
            return steps if await _does_task(d, env, obs) else None
    except WebServError:
        return None


@asynccontextmanager
async def _from_start(run: _Run, d: Demo) -> AsyncGenerator[tuple[AsyncEnv, dict[str, Any]]]:
    """A fresh environment of the run at d's task's start, with its first observation; closed after."""
    env = run.env()
    try:
        obs, _ = await env.reset(seed=run.seed, options=_options_for(run, d.start_url))
        yield env, obs
    finally:
        await env.close()


async def _does_task(d: Demo, env: AsyncEnv, obs: dict[str, Any]) -> bool:
    """Whether a replay that ended at obs did d's task as its evaluator will grade it: the state checks
    hold (and did not at the start), the reference page is reached, or (an answer, which its grader
    reads from the stop alone) the page it was read from is reached and shows it."""
    label = d.label
    if label.answer:
        page = reference_url(label.url, label.instruction)
        return url_matches(page, obs["url"]) and label.answer in obs_text(obs, 1 << 20)
    if label.state:
        if not d.checks:
            return False
        return state_holds(d.checks, (await env.state_diff(_queries(d.checks)))["queries"])
    return url_matches(reference_url(label.reference or label.url, label.instruction), obs["url"])


def _changes_allowed(d: Demo) -> int:
    """The steps changing data a task of d may have: none for a page or an answer, one for a state
    change (the one its instruction names)."""
    return 1 if d.label.state else 0


async def _recheck_changes(run: _Run, demos: list[Demo], gate: asyncio.Semaphore) -> None:
    """How many steps change the site's data, for each demonstration whose explored steps changed it
    more than its task may and whose steps were replaced since: best-of-K and the shortening put a
    replay's steps in, which record no changes (a detour that saved something may have been left
    out, or not)."""

    async def one(d: Demo) -> None:
        if d.change_steps <= _changes_allowed(d) or any(s.changes for s in d.steps):
            return
        async with gate:
            d.change_steps = await _change_steps(run, d, [s.action for s in d.steps])

    await asyncio.gather(*(one(d) for d in demos))


async def _change_steps(run: _Run, d: Demo, actions: list[str]) -> int:
    """How many of actions, replayed from d's start in a fresh environment, change the site's data
    (the state diff since the start grows). All of them when it cannot tell: the task is then left
    out."""
    try:
        async with _from_start(run, d) as (env, _):
            n, total = 0, 0
            for a in actions:
                await env.step(a)
                diff = (await env.state_diff(max_rows=1))["diff"]
                now = int(diff.get("total") or len(diff.get("changes") or []))
                n += now > total
                total = now
            return n
    except WebServError:
        return len(actions)


async def _solve(
    run: _Run, demos: list[Demo], tasks_of: list[dict[str, Any] | None], gate: asyncio.Semaphore
) -> None:
    """Each task's independent solution (solve.py: found from its intent and the pages, not from
    its demonstration), in its solutions when a replay from its start does the task with it."""

    async def one(d: Demo, t: dict[str, Any]) -> None:
        async with gate:
            try:
                async with _from_start(run, d) as (env, obs):
                    found = await solve(t["intent"], env, obs)
                    if found is None:
                        return
                    actions, end = found
                    if d.label.answer and answer_of(actions[-1]) != d.label.answer:
                        return
                    if await _does_task(d, env, end):
                        t["solutions"] = [actions]
            except WebServError:
                return

    await asyncio.gather(*(one(d, t) for d, t in zip(demos, tasks_of, strict=True) if t is not None))


async def _verify_frontier(run: _Run, demos: list[Demo], gate: asyncio.Semaphore) -> list[Demo]:
    """The demonstrations found from frontier states, replayed from the site's start (the path to the
    frontier state, then their own steps) as their task says; one whose replay does not pass (a path
    that did not lead to the same state again) is dropped. Returns the ones kept."""

    async def passes(d: Demo) -> bool:
        task = _task(run.site, 0, d)
        if d.episode.start_cause != "frontier" or task is None:
            return True
        async with gate:
            return bool((await _check_one(run.client, task, run.site))["passed"])

    ok = await asyncio.gather(*(passes(d) for d in demos))
    return [d for d, good in zip(demos, ok, strict=True) if good]


async def _verify_tasks(
    run: _Run,
    demos: list[Demo],
    tasks_of: list[dict[str, Any] | None],
    gate: asyncio.Semaphore,
    strict: bool,
) -> tuple[list[Demo], list[dict[str, Any] | None], list[dict[str, str]]]:
    """Each task as it will be written, replayed from its start in a fresh environment (check.py,
    as ``webserv tasks check`` grades it): its oracle and each independent solution must pass. A
    task whose oracle fails is left out with its demonstration (it does not do what it says from
    the start); a failing solution is removed (the task stays, unverified); with ``strict``, a task
    without a solution is left out (its demonstration stays, rows only). Returns the
    demonstrations, their tasks and what was left out, each with why."""

    async def passes(t: dict[str, Any], oracle: list[str]) -> tuple[bool, str]:
        async with gate:
            # With the run's make arguments: a replay on a live site is as polite and as
            # unable to submit as the exploration was.
            r = await _check_one(run.client, t | {"oracle": oracle}, run.site, run.make_args)
        return bool(r["passed"]), r["error"] or f"it ended on {r['final_url']}"

    async def one(t: dict[str, Any] | None) -> str:
        if t is None:
            return ""
        ok, why = await passes(t, t["oracle"])
        if not ok:
            return f"oracle_failed: {why}"
        sols = t.get("solutions") or []
        graded = await asyncio.gather(*(passes(t, s) for s in sols))
        good = [s for s, (ok, _) in zip(sols, graded, strict=True) if ok]
        if good:
            t["solutions"] = good
        else:
            t.pop("solutions", None)
            if strict:
                return "unverified: no independent solution passes (strict)"
        return ""

    fates = await asyncio.gather(*(one(t) for t in tasks_of))
    out_demos: list[Demo] = []
    out_tasks: list[dict[str, Any] | None] = []
    left: list[dict[str, str]] = []
    for d, t, why in zip(demos, tasks_of, fates, strict=True):
        if t is not None and why:
            left.append({"reason": why.split(":")[0], "intent": t["intent"], "why": why})
            if why.startswith("oracle_failed"):
                continue
            t = None
        out_demos.append(d)
        out_tasks.append(t)
    return out_demos, out_tasks, left
