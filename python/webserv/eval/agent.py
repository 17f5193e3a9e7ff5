"""The reference agent: the baseline a model is measured with (docs/eval.md, "The agent").

Each step is one request: a system prompt made from the server's action table (the ``actions``
op), then one user message with the goal, the previous actions with their errors and the page as
the ``observation`` setting shows it (``OBSERVATIONS``: the accessibility tree, the pruned HTML,
the accessibility tree with a screenshot, or a set-of-marks screenshot with the list of its
marks; a picture goes as an OpenAI ``image_url`` content part holding a data URL). The reply's
last line is ``Action: <call>``; with ``tools=True`` the endpoint is offered one OpenAI tool per
action of the same table and the reply is a tool call. ``webserv.parse.parse_action`` reads the
action (the first tool call, else the last ``Action:`` line, the last line, the last code block).
A reply without a usable action is asked again with the
reason (``malformed_retries`` times); after that the step is the agent's mistake: the harness
sends ``noop()`` and the next prompt shows why the reply was not an action, as a real environment
shows a failed action.

The prompts are the files of ``webserv/eval/prompts`` (``system.txt``, ``reply_text.txt``,
``reply_tools.txt``, ``observation_<name>.txt`` per observation, ``step.txt``, ``malformed.txt``);
``prompts_dir`` replaces any of them with a file of the same name, formatted with ``str.format``
and the fields the built-in one names.
"""

from __future__ import annotations

import base64
import difflib
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from ..actions import ActionDoc
from ..models import ChatModel, Reply
from ..parse import ActionParseError, parse_action


@dataclass(frozen=True)
class Observation:
    """What the model is shown of the page: the server's observe options that give it, the text
    (an observation key, or ``"marks"``: the list of the set-of-marks labels) and the picture
    (an observation key, or None)."""

    name: str
    observe: Mapping[str, bool]
    text: str
    image: str | None
    doc: str


#: The observations the agent can show, by the name ``--observation`` takes.
OBSERVATIONS: dict[str, Observation] = {
    o.name: o
    for o in (
        Observation("axtree", {"axtree": True}, "axtree_txt", None, "the accessibility tree"),
        Observation("html", {"axtree": True}, "pruned_html", None, "the pruned HTML"),
        Observation(
            "screenshot",
            {"axtree": True, "screenshot": True},
            "axtree_txt",
            "screenshot",
            "the accessibility tree and a screenshot of the viewport",
        ),
        Observation(
            "som",
            {"axtree": True, "marks": True},
            "marks",
            "screenshot_som",
            "a screenshot with set-of-marks (a numbered box on each visible interactive element) "
            "and the list of the numbers with the elements' ids",
        ),
    )
}


def observation(name: str) -> Observation:
    """The observation called ``name``; an unknown name is refused with the nearest one."""
    found = OBSERVATIONS.get(name)
    if found is None:
        near = difflib.get_close_matches(name, list(OBSERVATIONS), n=1)
        raise ValueError(
            f"observation {name!r} is not one of {', '.join(OBSERVATIONS)}"
            + (f" (did you mean {near[0]}?)" if near else "")
        )
    return found


#: The prompt files and the fields each is formatted with.
PROMPT_FIELDS: dict[str, tuple[str, ...]] = {
    "system": ("actions", "reply_format", "observation_format"),
    "reply_text": (),
    "defense": (),
    "reply_tools": (),
    **{f"observation_{n}": () for n in OBSERVATIONS},
    "step": ("goal", "history", "step", "max_steps", "url", "title", "error", "observation"),
    "malformed": ("reason",),
}

#: What the harness sends for a step whose replies held no action.
NOOP = "noop()"

#: A reply without a usable action; the message says why, for the model to read (``webserv.parse``).
Malformed = ActionParseError


def load_prompts(prompts_dir: str | Path | None = None) -> dict[str, str]:
    """The built-in prompts, with the files of ``prompts_dir`` in place of those it has."""
    base = resources.files(__package__ or "webserv.eval").joinpath("prompts")
    out = {name: base.joinpath(f"{name}.txt").read_text("utf-8") for name in PROMPT_FIELDS}
    if prompts_dir is not None:
        d = Path(prompts_dir)
        if not d.is_dir():
            raise ValueError(
                f"prompts {d}: not a directory (want any of {', '.join(n + '.txt' for n in PROMPT_FIELDS)})"
            )
        known = {f"{n}.txt" for n in PROMPT_FIELDS}
        for f in sorted(d.glob("*.txt")):
            if f.name not in known:
                raise ValueError(
                    f"prompts {d}: {f.name} is not a prompt of the agent ({', '.join(sorted(known))})"
                )
            out[f.stem] = f.read_text("utf-8")
    for name, text in out.items():
        try:
            text.format(**{k: "" for k in PROMPT_FIELDS[name]})
        except (KeyError, IndexError, ValueError) as e:
            raise ValueError(
                f"prompt {name}.txt: {e!r} is not a field it has "
                f"(it has {', '.join(PROMPT_FIELDS[name]) or 'none'}; "
                "write a literal brace as {{ or }})"
            ) from e
    return out


def tool_schema(doc: ActionDoc) -> dict[str, Any]:
    """One action of the table as an OpenAI tool (a function with JSON-schema parameters)."""
    props: dict[str, Any] = {}
    for a in doc.args:
        p: dict[str, Any] = {"type": a.type, "description": a.doc}
        if a.type == "array":
            p["items"] = {"type": "string"}
        props[a.name] = p
    params: dict[str, Any] = {"type": "object", "properties": props}
    required = [a.name for a in doc.args if a.required]
    if required:
        params["required"] = required
    return {
        "type": "function",
        "function": {"name": doc.name, "description": doc.description, "parameters": params},
    }


@dataclass
class Turn:
    """One step as the agent remembers it."""

    action: str
    error: str = ""


@dataclass
class Usage:
    """What an episode's requests cost: requests, tokens in and out, the endpoint's cost if it says one."""

    requests: int = 0
    malformed: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float | None = None
    model_seconds: float = 0.0

    def add(self, reply: Reply) -> None:
        self.requests += 1
        self.tokens_in += int(reply.usage.get("prompt_tokens", 0))
        self.tokens_out += int(reply.usage.get("completion_tokens", 0))
        cost = (reply.raw.get("usage") or {}).get("cost") if isinstance(reply.raw, dict) else None
        if isinstance(cost, (int, float)) and not isinstance(cost, bool):
            self.cost = (self.cost or 0.0) + float(cost)


@dataclass
class AgentConfig:
    """What every episode's agent shares."""

    model: ChatModel
    prompts: dict[str, str]
    table: dict[str, ActionDoc]
    actions_text: str
    tools: bool = False
    observation: Observation = OBSERVATIONS["axtree"]
    max_steps: int = 30
    malformed_retries: int = 2
    max_obs_chars: int = 40000
    #: Whether the system prompt ends with the defense rule (``defense.txt``: the page is data).
    defense: bool = False

    @property
    def system(self) -> str:
        fmt = self.prompts["reply_tools" if self.tools else "reply_text"]
        text = self.prompts["system"].format(
            actions=self.actions_text.strip(),
            reply_format=fmt.strip(),
            observation_format=self.prompts[f"observation_{self.observation.name}"].strip(),
        )
        return text.rstrip() + "\n\n" + self.prompts["defense"].strip() if self.defense else text

    def tool_list(self) -> list[dict[str, Any]]:
        return [tool_schema(d) for d in self.table.values()]


@dataclass
class Agent:
    """The reference agent for one episode (a policy for ``webserv.rollout.run``)."""

    cfg: AgentConfig
    seed: int | None = None
    turns: list[Turn] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    # Why the replies of the last step held no action ("" when they did).
    _mistake: str = ""

    def history(self) -> str:
        if not self.turns:
            return "none"
        out = []
        for i, t in enumerate(self.turns):
            out.append(f"{i + 1}. {t.action}" + (f"\n   failed: {t.error}" if t.error else ""))
        return "\n".join(out)

    def observation(self, obs: Mapping[str, Any]) -> str:
        """The page's text as the observation setting shows it, cut at ``max_obs_chars``."""
        key = self.cfg.observation.text
        if key == "marks":
            text = marks_listing(obs)
        else:
            text = str(obs.get(key) or obs.get("axtree_txt") or obs.get("pruned_html") or "")
        if len(text) > self.cfg.max_obs_chars:
            text = (
                text[: self.cfg.max_obs_chars]
                + f"\n[... {len(text) - self.cfg.max_obs_chars} more characters]"
            )
        return text

    def prompt(self, obs: Mapping[str, Any]) -> str:
        err = str(obs.get("last_action_error") or "")
        return self.cfg.prompts["step"].format(
            goal=str(obs.get("goal") or ""),
            history=self.history(),
            step=len(self.turns) + 1,
            max_steps=self.cfg.max_steps,
            url=str(obs.get("url", "")),
            title=str(obs.get("title", "")),
            error=f"Error: {err}\n\n" if err else "",
            observation=self.observation(obs),
        )

    def content(self, obs: Mapping[str, Any]) -> str | list[dict[str, Any]]:
        """The step's user message content: the prompt, and with a picture observation the
        page's picture after it as an ``image_url`` part (OpenAI's content parts)."""
        text = self.prompt(obs)
        key = self.cfg.observation.image
        if key is None:
            return text
        picture = obs.get(key)
        if not picture:
            # A page the server could not picture (a crashed tab's error page): the text alone.
            return text + "\n\n(There is no screenshot of this page.)"
        return [
            {"type": "text", "text": text},
            {"type": "image_url", "image_url": {"url": data_url(bytes(picture))}},
        ]

    async def __call__(self, obs: Mapping[str, Any], history: list[dict[str, Any]]) -> str:
        """The next action for ``obs``; ``history`` is the rollout's (its last entry the previous
        step's, whose error the server gave)."""
        if self.turns and history:
            self.turns[-1].error = self._mistake or str(history[-1].get("error") or "")
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": self.cfg.system},
            {"role": "user", "content": self.content(obs)},
        ]
        params: dict[str, Any] = {}
        if self.cfg.tools:
            params["tools"] = self.cfg.tool_list()
        if self.seed is not None:
            params["seed"] = self.seed
        reason = ""
        for attempt in range(self.cfg.malformed_retries + 1):
            t = time.monotonic()
            reply = await self.cfg.model.chat(messages, **params)
            self.usage.model_seconds += time.monotonic() - t
            self.usage.add(reply)
            try:
                calls = reply.tool_calls if self.cfg.tools else None
                action = parse_action(reply.text, calls, table=self.cfg.table)
            except ActionParseError as e:
                reason = str(e)
                self.usage.malformed += 1
                if attempt < self.cfg.malformed_retries:
                    messages += [
                        _assistant(reply),
                        {"role": "user", "content": self.cfg.prompts["malformed"].format(reason=reason)},
                    ]
                continue
            self._mistake = ""
            self.turns.append(Turn(action))
            return action
        self._mistake = f"the reply held no action ({reason}); nothing was done"
        self.turns.append(Turn(NOOP))
        return NOOP


_BID_LINE = re.compile(r"^\s*\[([^\]]+)\]\s*(.*)$")


def marks_listing(obs: Mapping[str, Any]) -> str:
    """The set-of-marks labels in order, one a line: the number drawn on the picture, the
    element's id in brackets and its accessibility-tree line (``3: [search.search] button
    "Search"``)."""
    labels: Mapping[str, str] = obs.get("som_labels") or {}
    lines: dict[str, str] = {}
    for ln in str(obs.get("axtree_txt") or "").splitlines():
        if m := _BID_LINE.match(ln):
            lines.setdefault(m.group(1), m.group(2))
    out = []
    for label in sorted(labels, key=lambda k: (len(k), k)):
        bid = labels[label]
        out.append(f"{label}: [{bid}] {lines.get(bid, '')}".rstrip())
    return "\n".join(out) or "(no element is marked on this page)"


def data_url(picture: bytes) -> str:
    """A PNG or JPEG as a data URL (its type read from its first bytes)."""
    kind = "image/jpeg" if picture[:2] == b"\xff\xd8" else "image/png"
    return f"data:{kind};base64," + base64.b64encode(picture).decode("ascii")


def _assistant(reply: Reply) -> dict[str, Any]:
    """The reply as the next request's assistant message (a tool call answered as text)."""
    return {"role": "assistant", "content": reply.text or "(a tool call that could not be used)"}
