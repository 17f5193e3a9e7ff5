"""The write phase: each demonstration's task (its evaluator, oracle and relative URLs) and sft rows,
the instructions settled (one task per intent, instruction.py), the demonstrations that leave the
site found, and the files written: demonstrations.jsonl, tasks.json, and the raw trajectories'
directories."""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from .check import answer_type, url_matches
from .definition import placeholder
from .instruction import merge_intents, name_constraints, names_nothing, reference_url
from .modelfree import origin
from .trajectory import Demo, ends_episode


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
