"""Replays each explored task's oracle in a fresh episode and checks its evaluator, client-side.

This is the check an explored task must pass to be a usable RL task (the oracle earns reward 1):
``url_match`` "GOLD in PRED" as docs/tasks.md defines it (the reference's path is a substring of the
page's, and each reference query parameter has one of its values), ``string_match``'s typed
answer (``answer_matches``) on the oracle's answer, and ``state`` through the server's ``state_diff`` (each
check's value is its ``expect`` after the oracle and was not at the start). It runs on any server,
the open site included; on hosted sites ``webserv tasks check --sites OUT/sites`` is the server's
own check (docs/explore.md).
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

from ..client import AsyncClient
from ..errors import WebServError
from .definition import PLACEHOLDERS, placeholder
from .trajectory import answer_of

_NUMBER = r"[-+]?(\d{1,3}(,\d{3})+|\d+)(\.\d+)?"


def answer_type(answer: str) -> str:
    """The type an explored answer is graded as (docs/tasks.md "What a reward pays for"): a price
    (``$50.99``) is ``currency``, a bare number ``number``, anything else ``string``."""
    s = answer.strip()
    if re.fullmatch(r"[-+]?[$€£]" + _NUMBER, s):
        return "currency"
    if re.fullmatch(_NUMBER, s):
        return "number"
    return "string"


def answer_matches(ev: dict[str, Any], answer: str) -> bool:
    """Whether ``answer`` is the reference of an explored task's typed ``string_match``: the same
    text, case and surrounding space aside (the oracle gives the labelled answer itself; the
    server's grader compares typed values, docs/tasks.md)."""
    refs = ev["reference_answers"]
    want = refs["exact_match"] if "exact_match" in refs else ", ".join(refs.get("must_include", []))
    return answer.strip().lower() == str(want).strip().lower()


def url_matches(reference: str, page: str) -> bool:
    ref, got = urlparse(reference), urlparse(page)
    if ref.path.rstrip("/") not in got.path:
        return False
    have = parse_qs(got.query)
    return all(any(v in have.get(k, []) for v in vals) for k, vals in parse_qs(ref.query).items())


def _load(path: Path) -> list[dict[str, Any]]:
    tasks = json.loads(path.read_text())
    if not isinstance(tasks, list):
        raise ValueError(f"{path}: want a JSON list of tasks (a task file, docs/tasks.md)")
    return tasks


def _queries(checks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"sql": c["sql"], "args": list(c.get("args") or [])} for c in checks]


def state_holds(checks: list[dict[str, Any]], values: list[dict[str, Any]]) -> bool:
    """Every state check holds now and did not at the episode's start (the task was not done)."""
    return len(values) == len(checks) and all(
        not v.get("error") and v["now"].strip() == str(c["expect"]).strip() != v["base"].strip()
        for c, v in zip(checks, values, strict=True)
    )


async def _check_one(
    client: AsyncClient, task: dict[str, Any], site: str, make_args: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Replays task's oracle on a fresh environment of site (made with make_args too: an exploration
    run's politeness and submit policy) and grades it as its evaluator will."""
    ev = task["eval"]
    checks = ev.get("state") or [] if "state" in ev["eval_types"] else []
    env = client.env(
        site, **{**(make_args or {}), "observe": {"axtree": False}, "state_diff": bool(checks) or None}
    )
    options: dict[str, Any] = {"goal": task["intent"]}
    ph = placeholder(site)
    if site in PLACEHOLDERS:
        options["task_id"] = f"{site}.0"
    elif not ph:
        options["start_url"] = task["start_url"]
    try:
        obs, _ = await env.reset(options=options)
        origin = "{0.scheme}://{0.netloc}".format(urlparse(obs["url"]))
        start = task["start_url"].replace(ph, origin) if ph else task["start_url"]
        if obs["url"] != start:
            obs, *_ = await env.step(f"goto({json.dumps(start)})")
        error, answer = "", ""
        for action in task["oracle"]:
            if action.startswith(("stop(", "send_msg_to_user(")):
                answer = answer_of(action)
                break
            obs, *_ = await env.step(action)
            if obs.get("last_action_error"):
                error = f"{action}: {obs['last_action_error']}"
                break
        passed = not error
        if checks and passed:
            values = (await env.state_diff(_queries(checks)))["queries"]
            passed = state_holds(checks, values)
        if "url_match" in ev["eval_types"]:
            ref = ev["reference_url"].replace(ph, origin) if ph else ev["reference_url"]
            passed = passed and url_matches(ref, obs["url"])
        if "string_match" in ev["eval_types"]:
            passed = passed and answer_matches(ev, answer)
        return {"task_id": task["task_id"], "passed": passed, "final_url": obs["url"], "error": error}
    except WebServError as e:
        return {"task_id": task["task_id"], "passed": False, "final_url": "", "error": str(e)}
    finally:
        await env.close()


async def check_tasks(
    tasks_file: str | Path, *, site: str = "shopping", server: str | None = None, concurrency: int = 8
) -> list[dict[str, Any]]:
    """One result per task, in the file's order: ``{task_id, passed, final_url, error}``;
    ``concurrency`` tasks are replayed at once, each in an environment of its own."""
    tasks = _load(Path(tasks_file))
    gate = asyncio.Semaphore(max(1, concurrency))
    async with AsyncClient(server) as client:

        async def one(task: dict[str, Any]) -> dict[str, Any]:
            async with gate:
                return await _check_one(client, task, site)

        return list(await asyncio.gather(*(one(t) for t in tasks)))
