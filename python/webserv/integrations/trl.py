"""A TRL ``environment_factory`` class.

TRL's GRPO trainer takes a class with a no-argument constructor, calls
``reset(**row)`` with each dataset row, exposes the public methods as tools
the model may call, and asks ``get_reward()`` at the end. It pools instances
and never closes them, so each instance keeps one server-side environment
that the server reclaims after its idle TTL.

    from webserv.integrations.trl import web_environment
    Shop = web_environment(site="open")
    trainer = GRPOTrainer(..., environment_factory=Shop)

Rows may carry ``start_url``, ``goal``, ``task_id`` and ``uid`` (the group
key: rows of one GRPO group start from the same state). Every tool returns
the new page as accessibility-tree text with the semantic ids to act on,
and the last action's error if it failed.

Failures of the environment are never scored. When the browser, the site,
the server or the grader fails (an ``InfrastructureError``, or a grading
that returned no reward), the tools say so and end the episode, ``failure``
holds the error, and ``get_reward()`` returns None: TRL counts a rollout for
which every reward function returned None as unscorable (left out of its
group's baseline, advantage 0), not as a reward of 0. Reward functions of your
own should return None for it too (``env.failure is not None``).

Snapshots and forks are not tools (every public method of this class is
one, offered to the model); they are on ``web_env``, the gymnasium
environment underneath.
"""

from __future__ import annotations

import json
from typing import Any

from .. import rollout
from ..env import WebEnv
from ..errors import InfrastructureError, ResourceLimit


def _quote(s: str) -> str:
    """A string literal the action parser reads back exactly."""
    return json.dumps(s, ensure_ascii=False)


class WebEnvironment:
    """One browser environment as TRL tools. Subclass with ``web_environment``."""

    site: str = "open"
    server_url: str | None = None
    server_token: str | None = None
    max_steps: int | None = 30

    def __init__(self) -> None:
        self._env: WebEnv | None = None
        self._reward = 0.0
        self._done = False
        self._failure: InfrastructureError | None = None

    @property
    def failure(self) -> InfrastructureError | None:
        """The infrastructure failure that ended this episode, if one did (then get_reward() is None)."""
        return self._failure

    @property
    def web_env(self) -> WebEnv | None:
        """The gymnasium environment underneath (``snapshot``, ``restore``, ``fork``); None before reset."""
        return self._env

    # -- the trainer's side ---------------------------------------------------

    def reset(self, **row: Any) -> str | None:
        """Starts the episode the dataset row describes and returns the first page."""
        if self._env is None:
            self._env = WebEnv(
                self.site, url=self.server_url, token=self.server_token, max_steps=self.max_steps
            )
        self._reward, self._done, self._failure = 0.0, False, None
        options: dict[str, Any] = {}
        for key in ("start_url", "goal"):
            if row.get(key):
                options[key] = str(row[key])
        if row.get("task_id") is not None:
            options["task"] = str(row["task_id"])
        if row.get("uid") is not None:
            options["group_key"] = str(row["uid"])
        seed = row.get("seed")
        try:
            obs, _ = self._env.reset(seed=int(seed) if seed is not None else None, options=options)
        except InfrastructureError as e:
            return self._fail(e)
        return self._render(obs)

    def get_reward(self) -> float | None:
        """The episode's reward so far (the task's, given on the terminating step), or None when
        the environment failed (``failure``): never a 0 that the policy did not earn."""
        if self._failure is not None:
            return None
        return self._reward

    # -- tools ------------------------------------------------------------------

    def click(self, element_id: str) -> str:
        """Click an element of the page.

        Args:
            element_id: The semantic id of the element, as shown in brackets on the page, like add-to-cart.
        """
        return self._act(f"click({_quote(element_id)})")

    def type_text(self, element_id: str, text: str, press_enter: bool = False) -> str:
        """Replace the text of a field.

        Args:
            element_id: The semantic id of the text field.
            text: The text to type.
            press_enter: Whether to press Enter after typing (submits most search boxes).
        """
        enter = ", enter=True" if press_enter else ""
        return self._act(f"fill({_quote(element_id)}, {_quote(text)}{enter})")

    def select(self, element_id: str, option: str) -> str:
        """Choose an option of a dropdown.

        Args:
            element_id: The semantic id of the select element.
            option: The option's visible text, value, or id.
        """
        return self._act(f"select_option({_quote(element_id)}, {_quote(option)})")

    def hover(self, element_id: str) -> str:
        """Move the mouse over an element (opens hover menus and tooltips).

        Args:
            element_id: The semantic id of the element.
        """
        return self._act(f"hover({_quote(element_id)})")

    def press(self, key: str, element_id: str = "") -> str:
        """Press a key or combination, like Enter, Escape, ArrowDown or Control+a.

        Args:
            key: The key to press.
            element_id: The element to focus first; empty for the focused one.
        """
        if element_id:
            return self._act(f"press({_quote(element_id)}, {_quote(key)})")
        return self._act(f"keyboard_press({_quote(key)})")

    def goto(self, url: str) -> str:
        """Open a URL in the current tab.

        Args:
            url: An http(s) URL, or a path on the current site like /cart.
        """
        return self._act(f"goto({_quote(url)})")

    def go_back(self) -> str:
        """Go back to the previous page of the current tab."""
        return self._act("go_back()")

    def new_tab(self, url: str = "") -> str:
        """Open a new tab and switch to it.

        Args:
            url: The URL to open in it; empty for a blank tab.
        """
        return self._act(f"new_tab({_quote(url)})" if url else "new_tab()")

    def switch_tab(self, index: int) -> str:
        """Switch to another tab.

        Args:
            index: The tab's number, 0 for the first.
        """
        return self._act(f"tab_focus({int(index)})")

    def stop(self, answer: str = "") -> str:
        """End the task, with the answer if the task asks a question.

        Args:
            answer: The final answer; empty when the task asks none.
        """
        return self._act(f"stop({_quote(answer)})")

    # -- internals ----------------------------------------------------------------

    def _act(self, action: str) -> str:
        if self._env is None:
            return "Error: the environment has not been reset."
        if self._failure is not None:
            return self._failed_text(self._failure)
        if self._done:
            return "The episode is over."
        try:
            obs, reward, terminated, truncated, info = self._env.step(action)
            reward = rollout.graded(reward, info)
        except InfrastructureError as e:
            return self._fail(e)
        except ResourceLimit as e:  # the pages this policy opened: its episode ends, its reward stands
            self._done = True
            return f"Error: {e.message}\n\nThe episode has ended."
        self._reward += reward
        self._done = terminated or truncated
        text = self._render(obs)
        if terminated:
            text += "\n\nThe episode has ended."
        elif truncated:
            text += "\n\nThe episode ran out of steps."
        return text

    def _fail(self, error: InfrastructureError) -> str:
        self._failure, self._done = error, True
        return self._failed_text(error)

    @staticmethod
    def _failed_text(error: InfrastructureError) -> str:
        return f"The environment failed (not because of your actions): {error}. The episode cannot go on."

    @staticmethod
    def _render(obs: dict[str, Any]) -> str:
        out = obs.get("axtree_txt") or obs.get("pruned_html", "")
        if obs.get("last_action_error"):
            out = f"Error: {obs['last_action_error']}\n\n{out}"
        return out


def web_environment(
    site: str = "open",
    *,
    server_url: str | None = None,
    server_token: str | None = None,
    max_steps: int | None = 30,
) -> type[WebEnvironment]:
    """A WebEnvironment class bound to a site and server, for ``environment_factory``.

    ``server_token`` is the server's token (default ``$WEBSERV_TOKEN``).
    """
    return type(
        f"WebEnvironment_{site}",
        (WebEnvironment,),
        {"site": site, "server_url": server_url, "server_token": server_token, "max_steps": max_steps},
    )
