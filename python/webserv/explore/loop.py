"""The NNetNav loop over one server: N episodes at once, relabel every k steps, prune on a 0; optional
best-of-K re-attempts and a Go-Browse frontier (docs/explore.md)."""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import statistics
import time
from collections import Counter
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from ..client import AsyncClient
from ..errors import NotSupported, WebServError
from ..handle import AsyncEnv
from ..launcher import LocalServer, find_binary, missing_binary_message
from ..models import ChatModel, ModelError
from .check import _check_one, _queries, answer_type, state_holds, url_matches
from .definition import PLACEHOLDERS, placeholder, site_definition, start_path, write_definition
from .frontier import Frontier, FrontierEntry
from .instruction import merge_intents, name_constraints, names_nothing, reference_url
from .llm import ModelAttempter, ModelExplorer, ModelLabeler, ModelReward, load_prompts
from .modelfree import NoveltyExplorer, PageStateReward, TrajectoryLabeler, origin, page_key
from .options import ExploreOptions
from .shorten import shortest
from .solve import solve
from .state import MAX_CHECKS, candidates, signature
from .trajectory import (
    Demo,
    Episode,
    Explorer,
    Labeler,
    MalformedOutput,
    RewardModel,
    Step,
    answer_of,
    ends_episode,
    obs_text,
)
from .turnstile import Turnstile

DEFAULT_PERSONAS = [
    "a hiker preparing for a rainy weekend trip who wants a waterproof jacket",
    "a home cook looking for a good coffee grinder and kitchen tools",
    "a runner comparing trainers and reading reviews before buying",
    "a parent shopping for gifts on a budget who checks shipping and returns",
]


class ExploreFailed(RuntimeError):
    """No episode of the run could run (an unknown site, a server that cannot start it): the reason is
    the first episode's error. The run's stats.json is written all the same."""


@dataclass
class ExploreResult:
    """What a run produced: the files written and the run's statistics."""

    episodes: list[Episode]
    demonstrations: Path
    tasks: Path
    stats: dict[str, Any] = field(default_factory=dict)
    demos: list[Demo] = field(default_factory=list)
    # OUT/sites/NAME.json: the definition that serves the tasks (None where there is none).
    site_definition: Path | None = None


def load_personas(path: str | Path | None) -> list[str]:
    """Personas from a file (one a line, or a JSON list of strings), or the built-in list."""
    if path is None:
        return list(DEFAULT_PERSONAS)
    text = Path(path).read_text()
    if text.lstrip().startswith("["):
        items = json.loads(text)
        if not all(isinstance(p, str) for p in items):
            raise ValueError(f"personas file {path}: a JSON list must hold strings")
    else:
        items = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]
    if not items:
        raise ValueError(f"personas file {path}: no personas in it (one a line, or a JSON list of strings)")
    return items


@dataclass
class _Run:
    """What every episode of a run shares."""

    client: AsyncClient
    site: str
    start_url: str | None
    max_steps: int
    k: int
    explorer: Explorer
    labeler: Labeler
    reward: RewardModel
    seed: int
    make_args: dict[str, Any]
    frontier: Frontier
    use_frontier: bool
    first_wave: int
    holders: list[AsyncEnv] = field(default_factory=list)  # finished episodes' envs holding snapshots
    holding: set[int] = field(default_factory=set)  # ids of the envs holding snapshots, running or not
    # Environments are made with state_diff (the site's state database read after every step) until
    # the server says the site has none; state_note says why not.
    state: bool = False
    state_note: str = ""
    state_known: bool = False  # the first reset's answer is in (state stays as it is from then on)
    state_probe: asyncio.Lock = field(default_factory=asyncio.Lock)
    start_path: str = "/"  # a site definition's start_path
    # make's record for the exploration episodes (raw=True), None when not recorded.
    record: dict[str, Any] | None = None
    # The order the episodes' explorer calls go in, for an explorer that keeps state across episodes
    # (turnstile.py); None: each episode asks as soon as it is ready.
    order: Turnstile | None = None

    def reset_options(self, start_url: str | None = None) -> dict[str, Any]:
        options: dict[str, Any] = {"goal": "Explore the site."}
        start = start_url or self.start_url
        if not start and self.site not in PLACEHOLDERS and self.site != "open":
            # A site's own: at its start page, not at one of its tasks (whose setup a replay lacks).
            start = self.start_path
        if start:
            options["start_url"] = start
        if self.site in PLACEHOLDERS and not start_url:
            options["task_id"] = f"{self.site}.0"  # a fixed task for a fixed start (its goal is not pursued)
        return options

    def env(self, *, explore: bool = False) -> AsyncEnv:
        """An environment of the run; an exploration episode's is recorded when the run is raw (the
        attempts and replays are not)."""
        record = self.record if explore else None
        return self.client.env(
            self.site, **self.make_args, state_diff=True if self.state else None, record=record
        )

    async def reset(self, seed: int, options: dict[str, Any]) -> tuple[AsyncEnv, dict[str, Any]]:
        """A new environment at its first observation. The run's first reset asks for state_diff and
        the others wait for its answer: on a site without a state database the server refuses it
        (not_supported) once, and the run goes on without (state_note says why)."""
        if self.state_known:
            return await self._reset(seed, options)
        async with self.state_probe:
            if self.state_known:
                return await self._reset(seed, options)
            made_with = self.state
            try:
                out = await self._reset(seed, options)
            except NotSupported as e:
                if not made_with or "state_diff" not in str(e):
                    raise
                self.state, self.state_note = False, f"state tasks left out: {e}"
                out = await self._reset(seed, options)
            self.state_known = True
            return out

    async def _reset(self, seed: int, options: dict[str, Any]) -> tuple[AsyncEnv, dict[str, Any]]:
        env = self.env(explore=True)
        try:
            obs, _ = await env.reset(seed=seed, options=options)
        except BaseException:
            await env.close()
            raise
        return env, obs


async def _start(run: _Run, index: int, persona: str) -> tuple[AsyncEnv, dict[str, Any], Episode]:
    """The episode's environment and first observation: the site's start, or (with the frontier, past
    the first wave) a frontier state."""
    entry: FrontierEntry | None = None
    if run.use_frontier and index >= run.first_wave:
        entry = run.frontier.pick()
    if entry is not None and entry.holder is not None and entry.snapshot:
        try:
            env = (await entry.holder.fork(1, name=entry.snapshot))[0]
            obs = env.last_obs or {}
            origin = entry.path[0].url if entry.path else obs["url"]
            ep = Episode(index, persona, obs["url"], start_cause="frontier", origin_url=origin)
            ep.prefix = list(entry.path)
            return env, obs, ep
        except WebServError:
            entry = None  # the holder is gone: start at the site's start
    if entry is not None:  # the open site: the frontier is URLs
        env, obs = await run.reset(run.seed + index, run.reset_options(entry.url))
        return env, obs, Episode(index, persona, obs["url"], start_cause="frontier", origin_url=obs["url"])
    env, obs = await run.reset(run.seed + index, run.reset_options())
    return env, obs, Episode(index, persona, obs["url"], origin_url=obs["url"])


async def _keep_frontier(run: _Run, env: AsyncEnv, ep: Episode, url: str) -> bool:
    """Adds the state env is in to the frontier when its URL pattern is new; True when env now holds
    a snapshot (and must stay open until the run ends)."""
    if not run.use_frontier or not run.frontier.wants(url):
        return False
    if run.site != "open" and id(env) not in run.holding and len(run.holding) >= run.frontier.max_holders:
        return False  # each holder is an environment (and a site instance) open until the run ends
    entry = FrontierEntry(url, page_key(url), ep.path(len(ep.steps)), ep.index)
    if run.site == "open":
        run.frontier.add(entry)
        return False
    entry.holder = env
    run.frontier.add(entry)  # reserved now, usable once the snapshot is taken
    try:
        entry.snapshot = await env.snapshot(f"frontier-{len(run.frontier.entries)}")
    except WebServError:
        run.frontier.entries.remove(entry)
        return id(env) in run.holding
    run.holding.add(id(env))
    return True


async def _run_episode(run: _Run, index: int, persona: str) -> Episode:
    try:
        env, obs, ep = await _start(run, index, persona)
    except WebServError as e:
        return Episode(index, persona, run.start_url or "", status="env_error", error=str(e))
    ep.env_id = env.id or ""
    run.frontier.reached(obs["url"])
    holds = False
    # What the steps changed in the site's state (episodes from the site's start: their tasks start
    # there too); the signatures of the changes seen so far.
    diffing = run.state and ep.start_cause == "reset"
    seen: set[str] = set()
    try:
        for t in range(1, run.max_steps + 1):
            if run.order is None:
                action = await run.explorer.act(obs, ep)
            else:
                async with run.order.turn(index):
                    action = await run.explorer.act(obs, ep)
            nxt, _, terminated, truncated, info = await env.step(action)
            err = nxt.get("last_action_error") or ""
            ep.steps.append(_step(obs, action, nxt))
            ep.refused.extend({**r, "step": t} for r in info.get("refused") or [])
            obs = nxt
            run.frontier.reached(obs["url"])
            if diffing:
                diffing = await _diff_step(env, ep, seen)
            answer = answer_of(action) if terminated and not err else ""
            if t % run.k == 0 or answer:
                label = await run.labeler.label(ep, obs)
                window = [c for s in ep.steps[ep.labeled :] for c in s.changes]
                ep.labeled = len(ep.steps)
                if answer:
                    label.answer = answer
                elif window and not label.state:  # (the model-free labeler's are its step's)
                    label.state = candidates(window, ep.columns)
                if await run.reward.score(ep, label, obs) == 0:
                    ep.status, ep.pruned_at = "pruned", t
                    return ep
                ep.kept.append((t, label))
            if terminated or truncated:
                ep.status = "truncated" if truncated else "finished"
                return ep
            if not err and await _keep_frontier(run, env, ep, obs["url"]):
                holds = True
        ep.status = "finished"
    except ModelError as e:
        ep.status, ep.error = "endpoint_error", str(e)
    except MalformedOutput as e:
        ep.status, ep.error = "malformed_output", str(e)
    except WebServError as e:
        ep.status, ep.error = "env_error", str(e)
    finally:
        if holds:
            run.holders.append(env)
        else:
            await env.close()
    return ep


async def _diff_step(env: AsyncEnv, ep: Episode, seen: set[str]) -> bool:
    """Records on the episode's last step the rows it changed in the site's state database (those
    the diff since the start has that it had not before). False when the diff failed: the episode
    goes on without it."""
    try:
        res = await env.state_diff(max_rows=1000)
    except WebServError as e:
        ep.error = ep.error or f"state_diff: {e}"
        return False
    diff = res["diff"]
    new = []
    for c in diff.get("changes") or []:
        sig = signature(c)
        if sig not in seen:
            seen.add(sig)
            new.append(c)
    ep.steps[-1].changes = new
    ep.columns.update(diff.get("columns") or {})
    ep.state_db = diff.get("db") or ep.state_db
    return True


def _step(obs: dict[str, Any], action: str, nxt: dict[str, Any]) -> Step:
    return Step(
        obs["url"],
        obs.get("title", ""),
        obs_text(obs),
        action,
        nxt["url"],
        nxt.get("title", ""),
        nxt.get("last_action_error") or "",
    )


def _clean(steps: list[Step]) -> list[Step]:
    """The steps a replay runs: an action that failed in the page changed nothing and is dropped
    (a task's oracle must not fail, docs/tasks.md)."""
    return [s for s in steps if not s.error]


# ---- best-of-K ----


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
            r = await _check_one(run.client, t | {"oracle": oracle}, run.site)
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


# ---- outputs ----


def _relative(site: str, url: str, home: str) -> str | None:
    """url as a task writes it: on a hosted site its origin becomes the site's placeholder. None for
    a URL outside ``home`` (the site's origin): rebased onto the site it would name a page the site
    does not have."""
    if origin(url) != home:
        return None
    ph = placeholder(site)
    if not ph:
        return url
    u = urlparse(url)
    return ph + u.path + (f"?{u.query}" if u.query else "")


def off_site(d: Demo) -> str:
    """Why d leaves the site's origin (its task's start's), or "": a step that started or ended on
    another origin (a link followed away, which the network policy blocks) or a label of a page
    there. A task of it would ask for a page no agent can reach from the site."""
    home = origin(d.start_url)
    for s in d.episode.path(d.n):
        for url in (s.url, s.next_url):
            if url and origin(url) != home:
                return f"step {s.action} went to {url}, outside {home}"
    for url in (d.label.url, d.label.reference):
        if url and origin(url) != home:
            return f"its page {url} is outside {home}"
    return ""


def _json_str(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


def _oracle(demo: Demo) -> list[str]:
    acts = [s.action for s in demo.steps]
    if acts and ends_episode(acts[-1]):
        return acts
    return acts + [f"stop({_json_str(demo.label.answer)})"]


def _task(site: str, task_id: int, demo: Demo) -> dict[str, Any] | None:
    """The task of a demonstration, or None when no evaluator tells it from doing nothing."""
    label, ep = demo.label, demo.episode
    changes = max(demo.change_steps, sum(1 for s in demo.steps if s.changes))
    if label.state and changes > 1:
        # It changed data before the change its instruction names (saved the note once before the
        # save that is checked): from the task's start that change alone is not what it checks.
        return None
    if not label.state and changes:
        # A page or answer reached after the demonstration changed data (a note it saved): from the
        # task's start that page may not exist. Its rows are kept; it gets no task.
        return None
    if label.state and any(str(c.get("expect", "")).isdigit() and int(c["expect"]) > 1 for c in demo.checks):
        # The demonstration did it more than once (two notes of that title): the instruction says once.
        return None
    if label.answer:
        category = "information"
        ev: dict[str, Any] = {
            "eval_types": ["string_match"],
            "answer_type": answer_type(label.answer),
            "reference_answers": {"exact_match": label.answer},
        }
    elif label.state:
        if not demo.checks:
            return None  # what it changed could not be checked: its instruction is about that
        category = "state"
        ev = {"eval_types": ["state"], "state": [dict(c) for c in demo.checks]}
    else:
        # The page's path and the query parameters the instruction names, no more.
        reference = reference_url(label.reference or label.url, label.instruction)
        if url_matches(reference, demo.start_url):
            return None  # the start page already matches: stopping at once would pass
        relative = _relative(site, reference, origin(demo.start_url))
        if relative is None:
            return None  # a page outside the site
        category = "navigation"
        ev = {
            "eval_types": ["url_match"],
            "reference_url": relative,
            "url_note": "GOLD in PRED",
        }
    explored: dict[str, Any] = {
        "episode": ep.index,
        "persona": ep.persona,
        "steps": len(demo.steps),
        "explored_steps": demo.raw_length or len(demo.steps),  # before the shortening
        "start": ep.start_cause,
    }
    if demo.best_of:
        explored["best_of"] = demo.best_of
    start = _relative(site, demo.start_url, origin(demo.start_url))
    if start is None:
        return None  # no origin to start from (about:blank)
    return {
        "task_id": task_id,
        "sites": [site],
        "category": category,
        "intent": label.instruction,
        "start_url": start,
        "require_login": False,
        "eval": ev,
        "oracle": _oracle(demo),
        # A plausible mistake, which must earn 0: stopping at the start with no answer.
        "wrong": ['stop("")'],
        "explored": explored,
    }


def _sft_rows(demo: Demo, idx: int) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    prev: list[str] = []
    for i, s in enumerate(demo.steps):
        rows.append(
            {
                "episode_id": f"explore-{idx}",
                "step": i,
                "instruction": demo.label.instruction,
                "url": s.url,
                "observation": s.observation,
                "previous_actions": list(prev),
                "action": s.action,
                "episode_reward": 1.0,
            }
        )
        prev.append(s.action)
    if demo.steps and ends_episode(demo.steps[-1].action):
        return rows
    # The final stop (with the answer, if any), added post hoc as NNetNav does.
    rows.append(
        {
            "episode_id": f"explore-{idx}",
            "step": len(demo.steps),
            "instruction": demo.label.instruction,
            "url": demo.steps[-1].next_url if demo.steps else demo.start_url,
            "observation": "",
            "previous_actions": prev,
            "action": f"stop({_json_str(demo.label.answer)})",
            "episode_reward": 1.0,
        }
    )
    return rows


def _settle_instructions(
    site: str, demos: list[Demo]
) -> tuple[list[Demo], list[dict[str, Any] | None], dict[str, int]]:
    """The demonstrations and their tasks as written (instruction.py): an instruction that names
    nothing is left out; a state task's intent names the values its checks require; one task per
    intent (the others with its verifier merged into it, those with another verifier left out with
    their demonstrations). Returns the demonstrations, each one's task (None: rows only) and counts."""
    kept: list[Demo] = []
    empty = 0
    for d in demos:
        if names_nothing(d.label.instruction):
            empty += 1
            continue
        if d.checks:
            d.label.instruction = name_constraints(d.label.instruction, d.checks)
        kept.append(d)
    tasks = [_task(site, 0, d) for d in kept]
    fate = iter(merge_intents([t for t in tasks if t is not None]))
    out_demos: list[Demo] = []
    out_tasks: list[dict[str, Any] | None] = []
    merged = conflicting = 0
    for d, t in zip(kept, tasks, strict=True):
        what = next(fate) if t is not None else "rows"
        if what == "conflicting":
            conflicting += 1
            continue
        merged += what == "merged"
        out_demos.append(d)
        out_tasks.append(t if what in ("keep", "rows") and t is not None else None)
    counts = {"names_nothing": empty, "merged": merged, "conflicting": conflicting}
    return out_demos, out_tasks, counts


def _write(out_dir: Path, demos: list[Demo], tasks_of: list[dict[str, Any] | None]) -> tuple[Path, Path, int]:
    """Writes the demonstrations as sft rows and their tasks as a task file; returns the paths and
    how many tasks."""
    out_dir.mkdir(parents=True, exist_ok=True)
    tasks: list[dict[str, Any]] = []
    demos_path, tasks_path = out_dir / "demonstrations.jsonl", out_dir / "tasks.json"
    with demos_path.open("w") as f:
        for idx, (d, t) in enumerate(zip(demos, tasks_of, strict=True)):
            for row in _sft_rows(d, idx):
                f.write(json.dumps(row) + "\n")
            if t is not None:
                tasks.append(t | {"task_id": len(tasks)})
    tasks_path.write_text(json.dumps(tasks, indent=1) + "\n")
    return demos_path, tasks_path, len(tasks)


def _lengths(demos: list[Demo], tasks_of: list[dict[str, Any] | None]) -> dict[str, Any]:
    """The median and mean lengths of the emitted tasks' demonstrations, before and after."""
    pairs = [(d.raw_length or len(d.steps), len(d.steps)) for d, t in zip(demos, tasks_of, strict=True) if t]
    if not pairs:
        return {"tasks": 0, "before_median": None, "after_median": None, "shortened": 0}
    before, after = [b for b, _ in pairs], [a for _, a in pairs]
    return {
        "tasks": len(pairs),
        "before_median": statistics.median(before),
        "after_median": statistics.median(after),
        "before_mean": round(statistics.fmean(before), 2),
        "after_mean": round(statistics.fmean(after), 2),
        "shortened": sum(a < b for b, a in pairs),
    }


def _trajectory_dir(out_dir: Path) -> Path:
    """OUT/trajectories, made, absolute: where the run's own server records (raw=True)."""
    traj = (out_dir / "trajectories").resolve()
    traj.mkdir(parents=True, exist_ok=True)
    return traj


def _record_dir(out_dir: Path) -> str:
    """The run's directory under a given server's --trajectories (a plain name, as make's record.dir
    must be): explore-NAME, NAME the output directory's."""
    name = re.sub(r"[^A-Za-z0-9_-]+", "-", out_dir.resolve().name).strip("-")
    return "explore-" + (name or "run")


async def explore(options: ExploreOptions | None = None, /, **keywords: Any) -> ExploreResult:
    """Runs ``episodes`` exploration episodes (``concurrency`` at once) on ``site`` and writes
    ``out/demonstrations.jsonl`` (sft rows), ``out/tasks.json`` (a task file), ``out/sites/NAME.json``
    (a definition serving those tasks, where the site can have one) and ``out/stats.json``.

    Without ``model`` the model-free mode runs; with it (an OpenAI-compatible API root, and
    ``model_name``), the explorer, labeler and reward model are calls to it (``labeler_model`` and
    ``reward_model`` override the URL for those two). ``best_of=K`` makes K fresh attempts at each kept
    instruction and keeps the best. ``frontier=True`` starts every episode past the first
    ``concurrency`` from a state found earlier (Go-Browse); ``seconds`` stops starting episodes after
    that long. ``politeness`` (make's: rate_per_host, concurrency_per_host, max_requests, user_agent,
    robots) applies to every explorer; ``deny_submit`` refuses non-GET requests to live hosts outside
    ``submit_allow``. ``raw=True`` records every exploration episode, kept or pruned, as a trajectory
    (``screenshots=True`` with a screenshot per step): in ``out/trajectories`` when the run starts its
    own server (no ``server`` and no $WEBSERV_URL), else under the server's ``--trajectories``
    directory in ``explore-NAME`` (``stats["raw"]`` says where and which environment ran each episode).
    ``shorten`` (default True) shortens each demonstration to the fewest actions that still do its
    task before it is written (shorten.py).

    The settings are an ``ExploreOptions`` (each documented there), keywords (``site="cms"``,
    ``episodes=8``, ...) or both, keywords over the options; an unknown keyword is refused naming
    the nearest.
    """
    o = ExploreOptions.of(options, **keywords)
    o.check()
    site, episodes, max_steps, k, start_url = o.site, o.episodes, o.max_steps, o.k, o.start_url
    personas, out, seed, concurrency, seconds = o.personas, o.out, o.seed, o.concurrency, o.seconds
    model, model_name, labeler_model, reward_model = o.model, o.model_name, o.labeler_model, o.reward_model
    prompts_dir, server, best_of, frontier = o.prompts_dir, o.server, o.best_of, o.frontier
    politeness, deny_submit, submit_allow = o.politeness, o.deny_submit, o.submit_allow
    site_definition_file, shop_data = o.site_definition_file, o.shop_data
    raw, screenshots, shorten = o.raw, o.screenshots, o.shorten
    persona_list = personas if isinstance(personas, list) else load_personas(personas)
    models: list[ChatModel] = []
    explorer: Explorer
    labeler: Labeler
    rewarder: RewardModel
    attempter: Any = None
    if model is None:
        explorer, labeler, rewarder = NoveltyExplorer(seed), TrajectoryLabeler(), PageStateReward(k)
    else:
        if not model_name:
            raise ValueError("model= needs model_name= (the name the endpoint serves)")
        prompts = load_prompts(prompts_dir)
        em = ChatModel(model, model_name)
        lm = ChatModel(labeler_model, model_name) if labeler_model else em
        rm = ChatModel(reward_model, model_name) if reward_model else em
        models = list({id(m): m for m in (em, lm, rm)}.values())
        explorer, labeler, rewarder = (
            ModelExplorer(em, prompts),
            ModelLabeler(lm, prompts),
            ModelReward(rm, prompts),
        )
        attempter = ModelAttempter(em, prompts)
    make_args: dict[str, Any] = {"max_steps": max_steps + 1, "observe": {"axtree": True}}
    if politeness or deny_submit:
        pol = dict(politeness or {})
        if deny_submit:
            pol["deny_submit"] = True
            if submit_allow:
                pol["submit_allow"] = list(submit_allow)
        make_args["politeness"] = pol
    rng = random.Random(seed)
    assigned = [persona_list[i % len(persona_list)] for i in range(episodes)]
    rng.shuffle(assigned)
    at_once = concurrency or (max(1, episodes // 2) if frontier else episodes)
    gate = asyncio.Semaphore(at_once)
    t0 = time.monotonic()
    fr = Frontier()
    out_dir = Path(out)
    own: LocalServer | None = None
    record: dict[str, Any] | None = None
    raw_where = ""
    if raw:
        record = {"screenshots": screenshots}
        if server is None and not os.environ.get("WEBSERV_URL"):
            # The run's own server, recording into OUT/trajectories.
            binary = find_binary()
            if binary is None:
                raise ValueError(missing_binary_message())
            traj = _trajectory_dir(out_dir)
            own = await asyncio.to_thread(LocalServer, binary, ["--trajectories", str(traj)])
            server, raw_where = own.url, str(traj)
        else:
            record["dir"] = _record_dir(out_dir)
            raw_where = f"{record['dir']} under the server's --trajectories directory"
    try:
        async with AsyncClient(server) as client:
            deadline = time.monotonic() + seconds if seconds else None
            run = _Run(
                client,
                site,
                start_url,
                max_steps,
                k,
                explorer,
                labeler,
                rewarder,
                seed,
                make_args,
                fr,
                frontier,
                at_once,
            )
            run.state = site != "open"
            run.record = record
            if getattr(explorer, "shares_state", False):
                run.order = Turnstile()
            run.start_path = start_path(site_definition_file)
            # The sites the server has: the definition the run writes takes a name none of them has.
            taken = [str(x.get("name")) for x in (await client.request("sites")).get("sites") or []]

            done: dict[int, Episode] = {}
            todo = iter(range(episodes))

            async def worker() -> None:
                # at_once workers take the episodes in order, until none is left or the time is up.
                # The explorer's turns (run.order): an episode enters at the round its
                # predecessor on this worker left at, with no wait between the two.
                rnd = 1
                for i in todo:
                    if deadline is not None and time.monotonic() >= deadline:
                        return
                    if run.order is not None:
                        run.order.enter(i, rnd)
                    try:
                        done[i] = await _run_episode(run, i, assigned[i])
                    finally:
                        if run.order is not None:
                            rnd = await run.order.leave(i)

            try:
                await asyncio.gather(*(worker() for _ in range(at_once)))
                eps = [done[i] for i in sorted(done)]
                explored_s = time.monotonic() - t0
                demos = [
                    Demo(ep, n, label, _clean(ep.path(n)), ep.origin_url or ep.start_url)
                    for ep in eps
                    for n, label in ep.kept
                ]
                for d in demos:
                    d.raw_length = len(d.steps)
                    d.change_steps = sum(1 for s in d.steps if s.changes)
                if best_of:
                    await _best_of(run, demos, best_of, attempter, gate)
                if run.state:
                    await _verify_state(run, demos, gate)
                replays = await _shorten(run, demos, gate) if shorten else 0
                if run.state:
                    await _recheck_changes(run, demos, gate)
                found = len(demos)
                if frontier:
                    demos = await _verify_frontier(run, demos, gate)
                dropped = found - len(demos)
                # No demonstration that leaves the site: its task would be of a page the site has
                # not (a footer's licence link, blocked by the network policy).
                away = [(d, off_site(d)) for d in demos]
                left_out = [
                    {"reason": "off_site", "intent": d.label.instruction, "why": why}
                    for d, why in away
                    if why
                ]
                demos = [d for d, why in away if not why]
                demos, tasks_of, intents = _settle_instructions(site, demos)
                await _solve(run, demos, tasks_of, gate)
                demos, tasks_of, failed = await _verify_tasks(run, demos, tasks_of, gate, o.strict)
                left_out += failed
            finally:
                await asyncio.gather(*(h.close() for h in run.holders), return_exceptions=True)
    finally:
        if own is not None:
            own.stop()
    elapsed = time.monotonic() - t0
    demos_path, tasks_path, n_tasks = _write(out_dir, demos, tasks_of)
    definition, why = site_definition(
        site, tasks_path, source=site_definition_file, shop_data=shop_data, taken=taken
    )
    def_path = write_definition(out_dir, definition) if definition else None
    stats = {
        "site": site,
        "mode": "model" if model else "model-free",
        "episodes": len(eps),
        "status": dict(Counter(ep.status for ep in eps)),
        "kept": len(demos),
        "tasks": n_tasks,
        # Tasks with an independent solution (solve.py); the others are unverified.
        "solutions": {
            "solved": sum(1 for t in tasks_of if t and t.get("solutions")),
            "unverified": sum(1 for t in tasks_of if t and not t.get("solutions")),
        },
        # Oracle lengths (actions before the final stop): as explored and as written (shorten.py).
        "oracle_length": _lengths(demos, tasks_of) | {"replays": replays},
        # Instructions that named nothing (left out), tasks merged into another of the same intent
        # and verifier, and left out for another verifier of the same intent (instruction.py).
        "intents": intents | {"distinct": len({t["intent"] for t in tasks_of if t is not None})},
        "pruned_by_step": dict(sorted(Counter(ep.pruned_at for ep in eps if ep.pruned_at).items())),
        "steps": sum(len(ep.steps) for ep in eps),
        "distinct_pages": len(fr.pages),
        "distinct_patterns": len(fr.visits),
        "coverage": fr.coverage,
        "frontier": fr.summary() if frontier else None,
        "started_from_frontier": sum(ep.start_cause == "frontier" for ep in eps),
        # Frontier demonstrations whose replay from the site's start did not pass: not in the outputs.
        "frontier_dropped": dropped,
        # Tasks not written, by reason (off_site: its demonstration left the site's origin;
        # oracle_failed: its oracle, replayed from its start, does not pass; unverified: strict and no
        # independent solution passes), and each one's intent and why.
        "left_out": dict(Counter(x["reason"] for x in left_out)),
        "left_out_tasks": left_out,
        "best_of": {
            "k": best_of,
            "replaced": sum(1 for d in demos if d.best_of and d.best_of["chosen"] > 0),
        }
        if best_of
        else None,
        "seconds": round(elapsed, 2),
        "explore_seconds": round(explored_s, 2),
        "demonstrations_per_hour": round(len(demos) / elapsed * 3600, 1) if elapsed > 0 else 0.0,
        "endpoint": [m.stats.as_dict() | {"url": m.base_url} for m in models],
        "site_definition": str(def_path) if def_path else None,
        "site_definition_note": why,
        "errors": [{"episode": ep.index, "status": ep.status, "error": ep.error} for ep in eps if ep.error],
        # What the network policy refused (deny_submit, politeness, hosts outside it), by reason.
        "refused": dict(Counter(r.get("reason", "") for ep in eps for r in ep.refused)),
        # State tasks: demonstrations that changed the site's state database, those whose checks a
        # replay verified, the state tasks written of them (after the merging of intents: a verified
        # demonstration merged into another task's is rows only), and why there are none on a site
        # without one.
        "state": {
            "db": next((ep.state_db for ep in eps if ep.state_db), None),
            "changed": sum(1 for d in demos if d.label.state),
            "verified": sum(1 for d in demos if d.checks),
            "tasks": sum(1 for t in tasks_of if t and t["category"] == "state"),
            "note": run.state_note,
        },
        # raw=True: where the trajectories are, and which environment ran each episode (its file is
        # ENV/0001.jsonl.gz there).
        "raw": {
            "where": raw_where,
            "screenshots": bool(record and record.get("screenshots")),
            "episodes": [
                {"episode": ep.index, "env": ep.env_id, "status": ep.status, "pruned_at": ep.pruned_at}
                for ep in eps
            ],
        }
        if record is not None
        else None,
    }
    (out_dir / "stats.json").write_text(json.dumps(stats, indent=1) + "\n")
    if eps and not any(ep.steps for ep in eps) and all(ep.status == "env_error" for ep in eps):
        raise ExploreFailed(
            f"no episode of the run could run on site {site!r} ({len(eps)} failed before their first "
            f"step): {eps[0].error} ({out_dir / 'stats.json'} has every episode's error)"
        )
    return ExploreResult(eps, demos_path, tasks_path, stats, demos, def_path)
