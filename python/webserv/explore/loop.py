"""The NNetNav loop over one server: N episodes at once, relabel every k steps, prune on a 0; optional
best-of-K re-attempts and a Go-Browse frontier (docs/explore.md).

``explore`` runs the phases in order, over the run state in run.py: the episodes (episodes.py), the
demonstrations' replays (verify.py: best-of-K, state checks, solutions, tasks graded), their shortening
(shorten.py), and the outputs (write.py)."""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..client import AsyncClient
from ..launcher import LocalServer, find_binary, missing_binary_message
from ..models import ChatModel
from .definition import site_definition, start_path, write_definition
from .episodes import _clean, _run_episode
from .frontier import Frontier
from .llm import ModelAttempter, ModelExplorer, ModelLabeler, ModelReward, load_prompts
from .modelfree import NoveltyExplorer, PageStateReward, TrajectoryLabeler
from .options import ExploreOptions
from .run import _Run
from .shorten import _shorten
from .trajectory import Demo, Episode, Explorer, Labeler, RewardModel
from .turnstile import Turnstile
from .verify import _best_of, _recheck_changes, _solve, _verify_frontier, _verify_state, _verify_tasks
from .write import _lengths, _record_dir, _settle_instructions, _trajectory_dir, _write, off_site

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
