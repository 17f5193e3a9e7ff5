"""The text a language model reads of an observation: its goal first, then the page.

One format on every path: the TRL tools, both verl loops, the Ray pool, the gymnasium env's
``render()`` (``render_mode="ansi"``) and, written by the server in Go with the same words
(``server/prompt.go``), MCP's results and OpenEnv's ``observation["text"]``::

    Goal: Close the issue "Flaky upload test".

    Error: no element with id 'x' on the page ...     (only after a failed action)

    [1] RootWebArea 'Issues' ...

An episode without a goal (a bare ``start_url``) has no ``Goal:`` line.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any

#: What precedes the goal.
GOAL_PREFIX = "Goal: "


def goal_header(goal: str | None) -> str:
    """``"Goal: ...\\n\\n"``, or "" when there is no goal."""
    goal = (goal or "").strip()
    return f"{GOAL_PREFIX}{goal}\n\n" if goal else ""


def page_text(obs: Mapping[str, Any]) -> str:
    """The page as text (the accessibility tree, else the pruned HTML), after the last action's
    error when it failed."""
    text = str(obs.get("axtree_txt") or obs.get("pruned_html") or "")
    if obs.get("last_action_error"):
        text = f"Error: {obs['last_action_error']}\n\n{text}"
    return text


def render(obs: Mapping[str, Any]) -> str:
    """The observation as a model reads it: the goal, then :func:`page_text`."""
    return goal_header(str(obs.get("goal") or "")) + page_text(obs)


def refuse_unknown(owner: str, given: Mapping[str, Any], known: Iterable[str]) -> None:
    """Raises ``TypeError`` for a keyword ``owner`` does not take, naming the nearest it does
    (as ``make`` refuses an unknown option), so a misspelt setting fails where it is written."""
    names = sorted(known)
    unknown = sorted(k for k in given if k not in names)
    if not unknown:
        return
    parts = []
    for k in unknown:
        near = difflib.get_close_matches(k, names, n=1)
        parts.append(f"{k!r}" + (f" (did you mean {near[0]!r}?)" if near else ""))
    raise TypeError(f"{owner} has no argument {', '.join(parts)}; it takes {', '.join(names)}")


def keywords_of(fn: Callable[..., Any]) -> list[str]:
    """The named parameters of ``fn`` (not ``self``, ``*args`` or ``**kwargs``)."""
    return [
        p.name
        for p in inspect.signature(fn).parameters.values()
        if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
