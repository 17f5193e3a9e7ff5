"""The evaluation loop: every (task, repeat) an episode of the reference agent, ``parallel`` at once,
each appended to ``OUT/results.jsonl`` as it ends and recorded as a trajectory (docs/eval.md)."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import rollout
from ..actions import ActionDoc
from ..attacks import Attack
from ..attacks import load as load_attacks
from ..client import AsyncClient
from ..errors import InfrastructureError, NotSupported
from ..launcher import LocalServer, find_binary, missing_binary_message
from ..models import ChatModel, ModelError
from .agent import Agent, AgentConfig, load_prompts
from .agent import observation as observation_of
from .options import EvalOptions
from .report import cup_of, summarize, write_report
from .tasks import plan as plan_tasks
from .tasks import select, task_set

RESULTS = "results.jsonl"
RUN = "run.json"
#: What a resumed run must share with the run it continues.
_SAME_ON_RESUME = (
    "model_name", "seed", "max_steps", "observation", "tools", "side_effects", "attack", "attacks", "defense",
)  # fmt: skip
#: What a run.json written before a setting existed ran with.
_BEFORE_IT_EXISTED: dict[str, Any] = {"side_effects": None, "attack": None, "attacks": None, "defense": False}
#: Statuses of a results row.
SCORED, INFRA = "scored", "infra"
#: Model answers that say the run is misconfigured: the run stops instead of counting them.
_CONFIG_STATUS = (401, 403, 404)


@dataclass
class EvalResult:
    """What a run wrote: the rows of its episodes (the latest per episode) and the summary."""

    out: Path
    rows: list[dict[str, Any]]
    summary: dict[str, Any]
    report: Path

    @property
    def success_rate(self) -> float | None:
        return self.summary["overall"]["success_rate"]


def episode_seed(seed: int, task: str, repeat: int) -> int:
    """The seed of one episode: the same for the same run seed, task and repeat, in any process."""
    h = hashlib.sha256(f"{seed}:{task}:{repeat}".encode()).digest()
    return int.from_bytes(h[:4], "big")


def read_rows(out: Path) -> list[dict[str, Any]]:
    """The rows of ``out/results.jsonl`` (a last line cut short by a crash is left out)."""
    path = out / RESULTS
    rows: list[dict[str, Any]] = []
    if not path.exists():
        return rows
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue
    return rows


def row_key(r: dict[str, Any]) -> tuple[str, int, str, bool]:
    """What names an episode of a run: its task, repeat, attack (``attack_id``, "" for none, with
    ``attacks``) and whether the agent had the defense."""
    return (r["task"], int(r["repeat"]), str(r.get("attack_id") or ""), bool(r.get("defense")))


def latest(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The last row of each episode (``row_key``)."""
    by: dict[tuple[str, int, str, bool], dict[str, Any]] = {}
    for r in rows:
        by[row_key(r)] = r
    return list(by.values())


@dataclass(frozen=True)
class Arm:
    """What an episode of a task runs under: an attack of ``attacks`` (None: the run's own, if
    any) and the defense; ``tagged`` rows name both (runs with ``attacks`` or ``defense``)."""

    attack: Attack | None = None
    defense: bool = False
    tagged: bool = False

    def tag(self, row: dict[str, Any]) -> dict[str, Any]:
        if self.tagged:
            row.update(attack_id=self.attack.id if self.attack else "", defense=self.defense)
        return row


def arms(attacks: list[Attack] | None, defense: bool) -> list[Arm]:
    """Every task's episodes: without an attack and under each of ``attacks``, each without the
    defense and (``defense``) with it."""
    tagged = attacks is not None or defense
    under: list[Attack | None] = [None, *(attacks or [])] if attacks is not None else [None]
    return [Arm(a, d, tagged) for d in ((False, True) if defense else (False,)) for a in under]


@dataclass
class _Run:
    client: AsyncClient
    cfg: AgentConfig
    defended: AgentConfig
    out: Path
    make_args: dict[str, Any]
    seed: int
    episode_retries: int
    stop_after: int
    record_root: str  # the trajectories' path prefix, relative to the replayer's directory
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    failing: int = 0  # episodes in a row whose model endpoint failed
    stopped: str = ""  # why no more episodes start

    async def write(self, row: dict[str, Any]) -> None:
        async with self.lock:
            with (self.out / RESULTS).open("a") as f:
                f.write(json.dumps(row) + "\n")
                f.flush()
                os.fsync(f.fileno())


def side_effects_of(info: dict[str, Any], mode: str | None) -> dict[str, Any]:
    """The row's side effects from the last step's info: the changes the server listed
    (``info.side_effects``, [] for a clean episode), how many, and its note. Unknown (None) when none
    were looked for: ``side_effects="off"``, or the server says it did not look (its note begins
    "side effects not looked for": the site declares no state, the task names none of it, the task's
    own mode is off, or the state could not be read)."""
    note = str(info.get("side_effects_note") or "")
    listed = info.get("side_effects")
    if mode == "off" or (not listed and note.startswith("side effects not looked for")):
        return {"side_effects": None, "side_effects_count": None, "side_effects_note": note}
    changes = list(listed or [])
    total = re.match(r"(\d+) change\(s\)", note)  # the note counts past the 50 listed
    count = max(len(changes), int(total.group(1)) if total else 0)
    return {"side_effects": changes, "side_effects_count": count, "side_effects_note": note}


def grader_of(info: dict[str, Any]) -> dict[str, Any] | None:
    """How the task graded the answer (``info.grader``: semantics, hackable_by_listing, note), or
    None when the last step graded no answer."""
    g = info.get("grader")
    if not isinstance(g, dict) or not g.get("semantics"):
        return None
    return {
        "semantics": str(g["semantics"]),
        "hackable_by_listing": bool(g.get("hackable_by_listing")),
        "note": str(g.get("note") or ""),
    }


def attack_of(info: dict[str, Any]) -> dict[str, Any] | None:
    """The attack's outcome (``info.attack``: channel, goal, succeeded, step, and the id of a task's
    own attack), None without one."""
    a = info.get("attack")
    if not isinstance(a, dict):
        return None
    goal = a.get("goal") or {}
    return {
        **({"id": str(a["id"])} if a.get("id") else {}),
        "channel": str(a.get("channel", "")),
        "goal": str(goal.get("kind", "")),
        "target": str(goal.get("target", "")),
        "succeeded": bool(a.get("succeeded")),
        "step": a.get("step"),
    }


def _row(task: dict[str, Any], repeat: int, seed: int) -> dict[str, Any]:
    return {
        "task": str(task["id"]),
        "site": str(task.get("site", "")),
        "category": str(task.get("category") or ""),
        "repeat": repeat,
        "seed": seed,
    }


async def _episode(run: _Run, task: dict[str, Any], repeat: int, arm: Arm) -> dict[str, Any]:
    """One episode, retried on infrastructure failures; its results row. Its seed is the task's
    and repeat's: every arm of a task meets the same (task, attack, seed)."""
    seed = episode_seed(run.seed, str(task["id"]), repeat)
    row = arm.tag(_row(task, repeat, seed))
    options: dict[str, Any] = {"task": str(task["id"])}
    if arm.attack is not None:
        options["attack"] = dict(arm.attack.spec)
    errors: list[str] = []
    t0 = time.monotonic()
    for attempt in range(1, run.episode_retries + 2):
        if run.stopped:
            break
        agent = Agent(run.defended if arm.defense else run.cfg, seed=seed)
        env = run.client.env(str(task["site"]), task_set=task_set(str(task["id"])), **run.make_args)
        ts = time.monotonic()
        try:
            out = await rollout.run(env, agent, run.cfg.max_steps, options=options, seed=seed)
        except ModelError as e:
            if e.status in _CONFIG_STATUS:
                raise
            errors.append(f"model endpoint: {e}")
            continue
        if out.failure is not None:
            errors.append(f"environment: {out.failure}")
            continue
        run.failing = 0
        assert out.reward is not None
        u = agent.usage
        success = out.reward >= 1 - 1e-9
        harm = side_effects_of(out.info, run.make_args.get("side_effects"))
        row.update(
            status=SCORED,
            reward=out.reward,
            success=success,
            **harm,
            cup=cup_of(success, harm["side_effects_count"]),
            grader=grader_of(out.info),
            attack=attack_of(out.info),
            steps=out.turns,
            end_reason=out.end_reason,
            answer=str(out.info.get("answer") or ""),
            wall_s=round(time.monotonic() - ts, 3),
            env_s=round(out.env_seconds, 3),
            model_s=round(u.model_seconds, 3),
            tokens_in=u.tokens_in,
            tokens_out=u.tokens_out,
            requests=u.requests,
            malformed=u.malformed,
            cost=u.cost,
            attempts=attempt,
            errors=errors,
            trajectory=f"{run.record_root}{out.env}/0001.jsonl.gz" if run.record_root and out.env else "",
            actions=out.actions,
        )
        return row
    if errors and errors[-1].startswith("model endpoint"):
        run.failing += 1
        if run.failing >= run.stop_after and not run.stopped:
            run.stopped = f"the model endpoint failed {run.failing} episodes in a row (last: {errors[-1]})"
    reason = errors[-1] if errors else f"not run: {run.stopped}"
    row.update(
        status=INFRA,
        reward=None,
        success=None,
        reason=reason,
        errors=errors,
        attempts=len(errors),
        wall_s=round(time.monotonic() - t0, 3),
    )
    return row


def _record_dir(out: Path) -> str:
    name = re.sub(r"[^A-Za-z0-9_-]+", "-", out.resolve().name).strip("-")
    return "eval-" + (name or "run")


def _http_of(ws_url: str) -> str:
    return re.sub(r"^ws", "http", ws_url).removesuffix("/v1/ws")


async def evaluate(options: EvalOptions | None = None, /, **keywords: Any) -> EvalResult:
    """Runs the reference agent on ``model`` (an OpenAI-compatible API root and the name it serves)
    over the tasks of ``tasks`` (a spec: ``shopping``, ``shopping.0-19``, ``cms.3,cms.4``, a site
    definition or task file; docs/eval.md), each ``repeats`` times, ``parallel`` episodes at once,
    showing the model the page as ``observation`` says (``axtree``, ``html``, ``screenshot`` or
    ``som``: ``webserv.eval.agent.OBSERVATIONS``), and writes ``out/results.jsonl`` (a row per
    episode as it ends), ``out/summary.json`` and ``out/report.html``.

    An infrastructure failure (the endpoint down or timing out after ``model_retries``, an
    ``InfrastructureError`` of the environment, a grading that failed) is never scored: the
    episode runs again, ``episode_retries`` times, and then is counted apart with its reason;
    after ``stop_after`` episodes in a row lost to the endpoint, no more start (they are counted
    apart as not run). ``resume=True`` continues a run in ``out``: episodes already scored are
    kept, the others run.

    The settings are ``EvalOptions``'s fields (each documented there): one ``EvalOptions``,
    keywords, or both (keywords over the options); a keyword that is not an option is refused
    (``TypeError``) naming the nearest.
    """
    o = EvalOptions.of(options, **keywords)
    o.check()
    shown = observation_of(o.observation)
    out_dir = Path(o.out)
    await asyncio.to_thread(out_dir.mkdir, parents=True, exist_ok=True)
    config = {
        "model": o.model,
        "model_name": o.model_name,
        "tasks": o.tasks,
        "max_steps": o.max_steps,
        "repeats": o.repeats,
        "seed": o.seed,
        "observation": o.observation,
        "tools": o.tools,
        "temperature": o.temperature,
        "prompts": str(o.prompts) if o.prompts else None,
        "strict_answers": o.strict_answers,
        "side_effects": o.side_effects,
        "attack": dict(o.attack) if o.attack is not None else None,
        "attacks": None,
        "defense": o.defense,
    }
    attacks = load_attacks(o.attacks) if o.attacks is not None else None
    if attacks is not None:
        config["attacks"] = {a.id: dict(a.spec) for a in attacks}
    previous = read_rows(out_dir)
    if previous and not o.resume:
        raise ValueError(
            f"{out_dir / RESULTS} already has {len(previous)} episode(s): resume=True (--resume) "
            "continues that run, or give another out directory"
        )
    if o.resume and (out_dir / RUN).exists():
        before = json.loads((out_dir / RUN).read_text())
        for k, v in _BEFORE_IT_EXISTED.items():
            before.setdefault(k, v)
        diff = [k for k in _SAME_ON_RESUME if before.get(k) != config[k]]
        if diff:
            raise ValueError(
                f"--resume: {out_dir} was run with other "
                + ", ".join(f"{k} ({before.get(k)!r}, now {config[k]!r})" for k in diff)
                + ": its episodes would not compare; give another out directory"
            )
    prompt_texts = load_prompts(o.prompts)
    chat = ChatModel(
        o.model,
        o.model_name,
        api_key=o.api_key,
        timeout_s=o.model_timeout,
        retries=o.model_retries,
        backoff_s=o.model_backoff,
        temperature=o.temperature,
        max_tokens=o.max_tokens,
    )
    p = plan_tasks(o.tasks, out_dir)
    own: LocalServer | None = None
    record: dict[str, Any] = {"screenshots": o.screenshots}
    url = o.server or os.environ.get("WEBSERV_URL")
    if url is None:
        binary = find_binary()
        if binary is None:
            raise ValueError(missing_binary_message())
        traj = (out_dir / "trajectories").resolve()
        traj.mkdir(parents=True, exist_ok=True)
        args = ["--trajectories", str(traj), "--max-envs", str(max(32, o.parallel))]
        if p.sites_dir is not None:
            args += ["--sites", str(p.sites_dir)]
        own = await asyncio.to_thread(LocalServer, binary, args)
        url = own.url
        record_root, replay = "trajectories/", {"command": f"webserv replay {out_dir}", "base": ""}
    else:
        record["dir"] = _record_dir(out_dir)
        record_root = record["dir"] + "/"
        replay = {
            "command": "the server's replayer (its --trajectories directory)",
            "base": _http_of(url) + "/ui/replay.html",
        }
    t0 = time.monotonic()
    try:
        async with AsyncClient(url, register=False) as client:
            listed = await client.tasks()
            try:
                chosen = select(p, listed)
            except ValueError as e:
                if p.files and own is None:
                    raise ValueError(
                        f"{e}; the server at {url} does not serve {', '.join(p.files)}: start it with "
                        f"--sites {p.sites_dir}, or leave out --server to let the run start one"
                    ) from e
                raise
            reply = await client.request("actions")
            table = {r["name"]: ActionDoc.from_row(r) for r in reply["actions"]}
            cfg = AgentConfig(
                chat,
                prompt_texts,
                table,
                str(reply.get("describe") or "\n".join(d.signature() for d in table.values())),
                tools=o.tools,
                observation=shown,
                max_steps=o.max_steps,
                malformed_retries=o.malformed_retries,
            )
            make_args: dict[str, Any] = {
                "max_steps": o.max_steps,
                "observe": dict(shown.observe),
                "record": record,
            }
            if o.side_effects is not None:
                make_args["side_effects"] = o.side_effects
            if o.strict_answers:
                make_args["strict_answers"] = True
            if o.attack is not None:
                make_args["attack"] = dict(o.attack)
            run = _Run(
                client,
                cfg,
                dataclasses.replace(cfg, defense=True),
                out_dir,
                make_args,
                o.seed,
                o.episode_retries,
                max(1, o.stop_after),
                record_root,
            )
            if own is None:
                await _probe_record(run, chosen)
            elif not chosen:
                raise ValueError("no tasks to run")
            config["server"] = url
            config["replay"] = replay
            config["tasks_resolved"] = [str(t["id"]) for t in chosen]
            (out_dir / RUN).write_text(json.dumps(config, indent=1) + "\n")
            done = {row_key(r) for r in latest(previous) if r.get("status") == SCORED}
            todo = [
                (t, k, arm)
                for k in range(o.repeats)
                for t in chosen
                for arm in arms(attacks, o.defense)
                if row_key(arm.tag({"task": str(t["id"]), "repeat": k})) not in done
            ]
            queue = iter(todo)

            async def worker() -> None:
                for t, k, arm in queue:
                    row = await _episode(run, t, k, arm)
                    await run.write(row)
                    if not o.quiet:
                        _progress(row)

            workers = [asyncio.ensure_future(worker()) for _ in range(min(o.parallel, max(1, len(todo))))]
            try:
                await asyncio.gather(*workers)
            finally:
                for w in workers:
                    w.cancel()
                await asyncio.gather(*workers, return_exceptions=True)
    finally:
        if own is not None:
            await asyncio.to_thread(own.stop)
    rows = latest(read_rows(out_dir))
    keys = {
        row_key(arm.tag({"task": str(t["id"]), "repeat": k}))
        for k in range(o.repeats)
        for t in chosen
        for arm in arms(attacks, o.defense)
    }
    rows = [r for r in rows if row_key(r) in keys]
    summary = summarize(rows, config, seconds=time.monotonic() - t0, stopped=run.stopped)
    report = write_report(out_dir, rows, summary)
    return EvalResult(out_dir, rows, summary, report)


async def _probe_record(run: _Run, chosen: list[dict[str, Any]]) -> None:
    """Turns recording off (with a note in the summary) when the given server records nothing."""
    if not chosen:
        raise ValueError("no tasks to run")
    env = run.client.env(str(chosen[0]["site"]), task_set=task_set(str(chosen[0]["id"])), **run.make_args)
    try:
        await env.reset(options={"task": str(chosen[0]["id"])})
    except NotSupported as e:
        if "trajectories" not in str(e):
            raise
        run.make_args.pop("record", None)
        run.record_root = ""
    except InfrastructureError:
        pass  # the episodes will meet it, retry it and count it
    finally:
        await env.close()


def _progress(row: dict[str, Any]) -> None:
    arm = (
        (f" [{row.get('attack_id') or 'no attack'}" + (", defense]" if row.get("defense") else "]"))
        if "attack_id" in row
        else ""
    )
    if row["status"] == SCORED:
        print(
            f"{row['task']} #{row['repeat']}{arm}: reward {row['reward']:g} in {row['steps']} steps "
            f"({row['end_reason']}, {row['wall_s']:.1f}s)"
            + (f"; {row['side_effects_count']} side effect(s)" if row.get("side_effects_count") else ""),
            flush=True,
        )
    else:
        print(f"{row['task']} #{row['repeat']}{arm}: not scored: {row['reason']}", flush=True)
