"""The episodes phase: each exploration episode from the site's start (or, with the frontier, a state
found earlier), the explorer acting, the labeler relabelling every k steps and the reward model
pruning on a 0; the site's state changes recorded per step, new URL patterns added to the frontier."""

from __future__ import annotations

from typing import Any

from ..errors import WebServError
from ..handle import AsyncEnv
from ..models import ModelError
from .frontier import FrontierEntry
from .modelfree import page_key
from .run import _Run
from .state import candidates, signature
from .trajectory import Episode, MalformedOutput, Step, answer_of, obs_text


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
