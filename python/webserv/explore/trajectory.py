"""What the explorers, labelers and reward models share: a step of an explored trajectory, a label."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass
class Step:
    """One step: the page it started on (its observation text), the action, where it led."""

    url: str
    title: str
    observation: str
    action: str
    next_url: str
    next_title: str
    error: str = ""
    # The rows of the site's state database this step inserted, updated or deleted (state_diff's
    # changes new since the step before; sites with a state database only).
    changes: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Label:
    """A labeler's instruction for a prefix, with the final page it claims (what a check can verify)."""

    instruction: str
    url: str
    title: str
    answer: str = ""
    # Candidate state checks of what the labeled steps changed (state.candidates), for a state task.
    state: list[dict[str, Any]] = field(default_factory=list)
    # The page a url_match task's reference is made of, when the labeler knows it better than the
    # final page (a search's results, only its term in the query); "" for url.
    reference: str = ""


@dataclass
class Episode:
    """One exploration episode as it ran."""

    index: int
    persona: str
    start_url: str
    steps: list[Step] = field(default_factory=list)
    status: str = "running"  # finished | pruned | truncated | endpoint_error | malformed_output | env_error
    pruned_at: int | None = None
    error: str = ""
    # Kept prefixes: (number of steps, label).
    kept: list[tuple[int, Label]] = field(default_factory=list)
    # Where the episode began: "reset" (the site's start) or "frontier" (a state found earlier, the
    # fork of its snapshot on a hosted site); prefix are the steps from the site's start to it, and
    # origin_url is the site's start, where the episode's tasks start.
    # Requests the network policy refused during the episode (info["refused"]: deny_submit,
    # max_requests, robots, hosts outside the policy), as {url, method, reason, navigation}.
    refused: list[dict[str, Any]] = field(default_factory=list)
    start_cause: str = "reset"
    prefix: list[Step] = field(default_factory=list)
    origin_url: str = ""
    # The state database's columns by table (state_diff's), its file, and how many steps were
    # labeled so far (the steps after that are the next label's).
    columns: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    state_db: str = ""
    labeled: int = 0
    # The server's id of the episode's environment: its recording (raw=True) is ENV/0001.jsonl.gz.
    env_id: str = ""

    def path(self, n: int) -> list[Step]:
        """The steps from the site's start to the end of the first n steps of this episode."""
        return self.prefix + self.steps[:n]


@dataclass
class Demo:
    """A kept demonstration: the label, the steps from the task's start, and how it was chosen."""

    episode: Episode
    n: int  # the episode's steps it covers (after its prefix)
    label: Label
    steps: list[Step]
    start_url: str
    best_of: dict[str, Any] | None = None
    # The state checks a replay from the task's start verified ({db, sql, args, expect}).
    checks: list[dict[str, Any]] = field(default_factory=list)
    # The explored demonstration's length, before best-of-K and the shortening (shorten.py).
    raw_length: int = 0
    # How many of its steps change the site's data: as explored, then as replayed once its steps
    # were replaced (_recheck_changes). A url or answer task wants none (the page or answer it
    # reaches may not exist at the task's start), a state task one (the change its instruction
    # names: an earlier one it depends on is not said).
    change_steps: int = 0


class Explorer(Protocol):
    async def act(self, obs: dict[str, Any], episode: Episode) -> str: ...


class Labeler(Protocol):
    async def label(self, episode: Episode, obs: dict[str, Any]) -> Label: ...


class RewardModel(Protocol):
    async def score(self, episode: Episode, label: Label, obs: dict[str, Any]) -> int: ...


class MalformedOutput(Exception):
    """A model's answer had no usable action, instruction or score (after the retries)."""


def obs_text(obs: dict[str, Any], limit: int = 6000) -> str:
    """The observation text the policies read: the accessibility tree, else the stripped HTML."""
    text = obs.get("axtree_txt") or obs.get("pruned_html") or obs.get("html") or ""
    return text[:limit]


# Actions that end an episode with an answer (the answer is their first argument).
ANSWER_RE = re.compile(r'^(stop|send_msg_to_user)\(\s*("(?:[^"\\]|\\.)*")')


def answer_of(action: str) -> str:
    """The answer a stop("...") or send_msg_to_user("...") gives ("" for any other action)."""
    m = ANSWER_RE.match(action.strip())
    if not m:
        return ""
    try:
        return str(json.loads(m.group(2)))
    except ValueError:
        return ""


def ends_episode(action: str) -> bool:
    return bool(re.match(r"^(stop|send_msg_to_user|report_infeasible)\(", action.strip()))
