"""What the explorers, labelers and reward models share: a step of an explored trajectory, a label."""

from __future__ import annotations

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


@dataclass
class Label:
    """A labeler's instruction for a prefix, with the final page it claims (what a check can verify)."""

    instruction: str
    url: str
    title: str
    answer: str = ""


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
