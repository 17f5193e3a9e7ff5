"""One rollout, with the failure rules written once for every trainer adapter.

``run(env, policy, max_turns)`` resets the environment, asks the policy for an action per
turn, steps, and returns an :class:`Outcome`. The rules every adapter (verl, TRL, the Ray
episode runner and pool) follows, here and nowhere else:

- a step whose reward is NaN means the grader failed: that is an :class:`EvaluationError`
  (infrastructure), never a reward (:func:`graded`);
- an ``InfrastructureError`` ends the rollout: ``Outcome.reward`` is None and
  ``Outcome.failure`` holds the error (or ``run`` raises it, with ``on_failure="raise"``);
- a step's reward is the change in the task's grade (the server's rule, docs/protocol.md
  "Rewards"), so the summed reward is the episode's final grade, also in ``Outcome.grade``;
- a ``ResourceLimit`` (the pages the policy opened went past a limit) ends the episode as the
  policy's doing: the reward so far stands, ``Outcome.truncated`` is set and ``Outcome.ended_by``
  says why;
- running out of ``max_turns`` before the episode ended is a truncation too
  (``end_reason="max_turns"``); ``Outcome.end_reason`` is always the table's name of the end
  (docs/protocol.md, "How an episode ends"), "" when the policy stopped without ending it;
- anything else (a wrong argument, a site this server is not configured for) is the
  caller's and is raised: a misconfigured run fails loudly instead of scoring None forever;
- the environment is closed whatever happens.

The adapters only format the outcome for their trainer.

``branch(env, n, policy, max_turns)`` is the tree-structured form (Tree-GRPO's groups): from
the state ``env`` is in now (mid-episode), ``n`` forks each play the rest of the episode, by the
same rules; the members of the group share the prefix, and each outcome says whether its fork
is exact (``Outcome.fork``). A group whose forks are not all exact is refused
(:class:`InexactFork`) unless the caller accepts them: an advantage computed over children that
are not the parent's state would credit the suffix with the fork's difference.
"""

from __future__ import annotations

import asyncio
import inspect
import math
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from .errors import EvaluationError, InfrastructureError, ResourceLimit
from .handle import AsyncEnv, Info, Obs

#: A policy: the observation and the turns so far -> the next action (or None to stop).
Policy = Callable[[Obs, list[dict[str, Any]]], "str | None | Awaitable[str | None]"]


def graded(reward: float, info: Mapping[str, Any]) -> float:
    """The step's reward; raises :class:`EvaluationError` when the grader failed (a NaN reward)."""
    if math.isnan(reward):
        raise EvaluationError(f"grading failed: {info.get('eval_error') or 'no reason given'}")
    return reward


class InexactFork(RuntimeError):
    """A fork that could not be made the parent's state (``info.fork.exact`` False)."""


def failure_record(e: InfrastructureError) -> dict[str, Any]:
    """What a trainer records of a failed rollout: ``{code, fault, message, retryable}``."""
    return {"code": e.code, "fault": e.fault, "message": e.message, "retryable": e.retryable}


@dataclass
class Outcome:
    """How one rollout ended."""

    #: The summed reward (the final grade); None when the environment or its grader failed.
    reward: float | None = 0.0
    #: The task's last grade (``info["grade"]``), None when no step was graded.
    grade: float | None = None
    #: How the episode ended: ``info["end_reason"]``, ``resource_limit`` or ``max_turns``.
    end_reason: str = ""
    turns: int = 0
    terminated: bool = False
    truncated: bool = False
    #: Per turn: ``{action, error, url}``.
    history: list[dict[str, Any]] = field(default_factory=list)
    failure: InfrastructureError | None = None
    #: The first observation's ``group_role`` (GRPO groups) and URL, and the last step's info.
    group_role: str = ""
    first_url: str = ""
    info: Info = field(default_factory=dict)
    env: str | None = None
    host: str | None = None
    #: What ended the episode when the policy's pages did (``resource_limit``), else "".
    ended_by: str = ""
    ended_because: str = ""
    #: A branch's (:func:`branch`): how its fork was made, ``info["fork"]`` of the child's first
    #: reply (``{"how", "exact", ...}``, docs/protocol.md "snapshot, restore, fork"); {} otherwise.
    fork: dict[str, Any] = field(default_factory=dict)
    #: Seconds spent in the environment (reset and steps) and in the policy.
    env_seconds: float = 0.0
    policy_seconds: float = 0.0

    @property
    def actions(self) -> list[str]:
        return [str(h["action"]) for h in self.history]

    def failure_record(self) -> dict[str, Any] | None:
        return None if self.failure is None else failure_record(self.failure)


async def run(
    env: AsyncEnv,
    policy: Policy,
    max_turns: int,
    *,
    options: Mapping[str, Any] | None = None,
    seed: int | None = None,
    on_failure: Literal["raise", "report"] = "report",
    on_reset: Callable[[AsyncEnv, Obs, Info], None] | None = None,
) -> Outcome:
    """Runs one rollout in ``env`` (reset, then up to ``max_turns`` steps) and closes it.

    ``on_reset`` is called after the reset (adapters note the environment's id there).
    """
    if on_failure not in ("raise", "report"):
        raise ValueError("on_failure is 'raise' or 'report'")
    out = Outcome()
    try:
        t = time.monotonic()
        obs, info = await env.reset(seed=seed, options=dict(options or {}))
        out.env_seconds += time.monotonic() - t
        out.env, out.host = env.id, env.host
        out.group_role, out.first_url, out.info = (
            str(info.get("group_role", "")),
            str(obs.get("url", "")),
            info,
        )
        if on_reset is not None:
            on_reset(env, obs, info)
        await _play(env, obs, policy, max_turns, out, [])
    except InfrastructureError as e:
        if on_failure == "raise":
            raise
        out.reward, out.failure = None, e
    finally:
        await env.close()
    return out


async def _play(
    env: AsyncEnv, obs: Obs, policy: Policy, max_turns: int, out: Outcome, before: list[dict[str, Any]]
) -> None:
    """The turns of one episode from ``obs`` on, into ``out``; the policy sees ``before`` (the turns
    of a prefix played elsewhere) and then this episode's own."""
    reward = 0.0
    while out.turns < max_turns:
        t = time.monotonic()
        action = policy(obs, [*before, *out.history] if before else out.history)
        if inspect.isawaitable(action):
            action = await action
        out.policy_seconds += time.monotonic() - t
        if action is None:
            break
        out.turns += 1
        t = time.monotonic()
        try:
            obs, r, out.terminated, out.truncated, out.info = await env.step(str(action))
        except ResourceLimit as e:
            out.env_seconds += time.monotonic() - t
            out.history.append({"action": str(action), "error": e.message, "url": ""})
            out.truncated, out.ended_by, out.ended_because = True, e.code, e.message
            out.end_reason = e.code
            break
        out.env_seconds += time.monotonic() - t
        out.history.append({"action": str(action), "error": obs["last_action_error"], "url": obs["url"]})
        if out.terminated or out.truncated:
            out.end_reason = str(out.info.get("end_reason", ""))
        reward += graded(r, out.info)
        if out.info.get("grade") is not None:
            out.grade = float(out.info["grade"])
        if out.terminated or out.truncated:
            break
    else:
        if max_turns > 0:  # the turns ran out, not the task: a truncation
            out.truncated, out.end_reason = True, "max_turns"
    out.reward = reward


async def branch(
    env: AsyncEnv,
    n: int,
    policy: Policy | Sequence[Policy],
    max_turns: int,
    *,
    history: list[dict[str, Any]] | None = None,
    inexact: Literal["raise", "keep"] = "raise",
    on_failure: Literal["raise", "report"] = "report",
) -> list[Outcome]:
    """``n`` continuations of ``env``'s episode from its present state, a group sharing one prefix.

    Forks ``env`` ``n`` times (``env.fork(n)``: each child on its own copy of the site, exact by
    replay where the page keeps its state in JavaScript) and plays each child with ``policy`` for
    up to ``max_turns`` turns at once, by :func:`run`'s rules; closes the children, never ``env``
    (the caller's, still at the branch point: branch again, or go on). ``policy`` is one policy
    for every child, or a sequence of ``n``, one per child (a policy that keeps its episode's
    state, like verl's token mode, needs one each). The policy sees
    ``history`` (the prefix's turns, as :func:`run` recorded them) and then the child's own; each
    outcome's ``history``, ``turns`` and ``reward`` are the suffix's (the reward is what the suffix
    added to the grade; ``grade`` is the final one) and ``fork`` is the child's ``info["fork"]``.

    With ``inexact="raise"`` (the default) a child whose fork is not exact raises
    :class:`InexactFork` before any is played (all are closed); ``"keep"`` plays them and leaves
    the flag in ``Outcome.fork``. A failure of the fork itself follows ``on_failure``: every
    outcome has it and no reward.
    """
    if n < 1:
        raise ValueError(f"branch needs n >= 1 children, got {n}")
    policies: list[Policy] = list(policy) if isinstance(policy, Sequence) else [policy] * n
    if len(policies) != n:
        raise ValueError(f"branch got {len(policies)} policies for {n} children: give one, or one per child")
    if inexact not in ("raise", "keep") or on_failure not in ("raise", "report"):
        raise ValueError("inexact is 'raise' or 'keep'; on_failure is 'raise' or 'report'")
    before = list(history or [])
    try:
        t = time.monotonic()
        children = await env.fork(n)
        forked_in = (time.monotonic() - t) / n
    except InfrastructureError as e:
        if on_failure == "raise":
            raise
        return [Outcome(reward=None, failure=e) for _ in range(n)]
    try:
        forks = [dict((c.last_info or {}).get("fork") or {}) for c in children]
        bad = [i for i, f in enumerate(forks) if not f.get("exact")]
        if bad and inexact == "raise":
            raise InexactFork(
                f"{len(bad)} of {n} forks are not the parent's state ({forks[bad[0]]}); "
                "pass inexact='keep' to play them flagged"
            )

        async def one(child: AsyncEnv, fork: dict[str, Any], policy: Policy) -> Outcome:
            out = Outcome(fork=fork, env_seconds=forked_in)
            info = child.last_info or {}
            obs = child.last_obs or {}
            out.env, out.host, out.info = child.id, child.host, info
            out.first_url = str(obs.get("url", ""))
            try:
                await _play(child, obs, policy, max_turns, out, before)
            except InfrastructureError as e:
                if on_failure == "raise":
                    raise
                out.reward, out.failure = None, e
            return out

        return list(
            await asyncio.gather(*(one(c, f, p) for c, f, p in zip(children, forks, policies, strict=True)))
        )
    finally:
        await asyncio.gather(*(c.close() for c in children))
