"""The model mode: explorer, labeler and reward model as calls to OpenAI-compatible endpoints.

The prompts are the constants below (``PROMPTS``); ``prompts_dir`` replaces any of them with a file of
the same name (``explorer.txt``, ``labeler.txt``, ``reward.txt``, ``attempt.txt``), formatted with
``str.format`` and the fields each names. A reply without a usable action, instruction or score is asked again
(``malformed_retries``), then the episode ends recorded as ``malformed_output``; an endpoint failure
(``ModelError``) ends it as ``endpoint_error``. Neither is ever read as a pruning decision.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..actions import by_name
from ..models import ChatModel
from ..parse import ActionParseError, parse_action
from .state import describe
from .trajectory import Episode, Label, MalformedOutput, obs_text

ACTIONS = """click("id")  type("id", "text", enter=True)  fill("id", "text")  select_option("id", "option")
hover("id")  press("id", "Enter")  scroll(0, 400)  go_back()  go_forward()  goto("url")
stop("answer")  (ends the episode; the answer, if the page shows one the user wanted)"""

PROMPTS = {
    "explorer": """You are exploring a website as this user: {persona}
Act as they would, visiting the parts of the site they would use. Actions (ids are the [ids] of the page):
{actions}

Current page: {url} ({title})
{observation}

Previous actions:
{history}

Next action? Answer with one action on the last line, like: Action: click("cart")""",
    "labeler": """A user ({persona}) did the following on a website.
{steps}
They ended on: {url} ({title})
{observation}

Instruction for this trajectory: write the one task instruction this trajectory accomplishes,
as the user would ask it. Answer on the last line: Instruction: <the instruction>""",
    "attempt": """You are using a website for this user: {persona}
Task: {instruction}
Actions (ids are the [ids] of the page):
{actions}

Current page: {url} ({title})
{observation}

Previous actions:
{history}

Next action toward the task? When it is done, stop("answer") (the answer, if the task asks for one).
Answer with one action on the last line, like: Action: click("cart")""",
    "reward": """Score the trajectory: does it accomplish the instruction?
Instruction: {instruction}
{steps}
Final page: {url} ({title})
{observation}

Score 1 only if the trajectory accomplishes the instruction and the instruction alone determines the
outcome: someone given only the instruction would end on this page or make this change (it names the
search terms, options and values the result depends on).
Answer on the last line: Score: 1 (accomplished) or Score: 0 (not accomplished)""",
}

#: The call names an explorer's action may use: the table's, and ``type`` (the server's other
#: name of ``fill``), which ``ACTIONS`` shows.
NAMES = (*by_name(), "type")


def load_prompts(prompts_dir: str | Path | None) -> dict[str, str]:
    out = dict(PROMPTS)
    if prompts_dir is not None:
        d = Path(prompts_dir)
        if not d.is_dir():
            raise ValueError(
                f"prompts_dir {d}: not a directory (want explorer.txt, labeler.txt, reward.txt in it)"
            )
        for name in PROMPTS:
            f = d / f"{name}.txt"
            if f.exists():
                out[name] = f.read_text()
    return out


def _steps(episode: Episode) -> str:
    """The steps as the labeler and reward model read them, with what each changed in the site's
    database (sites with a state database), like "(changed the site's data: cart_items insert)"."""

    def changed(s: Any) -> str:
        if not s.changes:
            return ""
        return " (changed the site's data: " + ", ".join(sorted({describe(c) for c in s.changes})) + ")"

    return (
        "\n".join(
            f"{i + 1}. on {s.url} ({s.title}): {s.action}{changed(s)}" for i, s in enumerate(episode.steps)
        )
        or "none"
    )


def next_action(text: str) -> str:
    """The action of the explorer's reply (``webserv.parse``'s grammar); raises ``MalformedOutput``
    when it has none."""
    try:
        return parse_action(text, names=NAMES)
    except ActionParseError as e:
        raise MalformedOutput(f"no action in the explorer's reply ({e}): {text[-200:]!r}") from e


def parse_instruction(text: str) -> str:
    m = re.findall(r"Instruction:\s*(.+)", text)
    if not m or not m[-1].strip():
        raise MalformedOutput(f"no 'Instruction:' line in the labeler's reply {text[-200:]!r}")
    return m[-1].strip()


def parse_score(text: str) -> int:
    m = re.findall(r"Score:\s*([01])\b", text)
    if not m:
        raise MalformedOutput(f"no 'Score: 0|1' line in the reward model's reply {text[-200:]!r}")
    return int(m[-1])


async def _ask(model: ChatModel, prompt: str, parse: Any, retries: int) -> Any:
    messages = [{"role": "user", "content": prompt}]
    err: MalformedOutput | None = None
    for _ in range(retries + 1):
        reply = await model.chat(messages)
        try:
            return parse(reply.text)
        except MalformedOutput as e:
            err = e
    assert err is not None
    raise err


async def _next_action(
    model: ChatModel, prompt: str, retries: int, obs: dict[str, Any], episode: Episode, **extra: str
) -> str:
    """The model's next action for episode at obs: prompt filled with the persona, the action grammar,
    the page and the actions so far (and extra fields, like best-of-K's instruction)."""
    p = prompt.format(
        persona=episode.persona,
        actions=ACTIONS,
        url=obs["url"],
        title=obs.get("title", ""),
        observation=obs_text(obs),
        history="\n".join(s.action for s in episode.steps) or "none",
        **extra,
    )
    return await _ask(model, p, next_action, retries)


class ModelExplorer:
    def __init__(self, model: ChatModel, prompts: dict[str, str], malformed_retries: int = 2):
        self.model, self.prompt, self.retries = model, prompts["explorer"], malformed_retries

    async def act(self, obs: dict[str, Any], episode: Episode) -> str:
        return await _next_action(self.model, self.prompt, self.retries, obs, episode)


class ModelAttempter:
    """Best-of-K's attempts in the model mode: the explorer's model asked to accomplish the instruction."""

    def __init__(self, model: ChatModel, prompts: dict[str, str], malformed_retries: int = 2):
        self.model, self.prompt, self.retries = model, prompts["attempt"], malformed_retries

    async def act(self, obs: dict[str, Any], episode: Episode, instruction: str) -> str:
        return await _next_action(
            self.model, self.prompt, self.retries, obs, episode, instruction=instruction
        )


class ModelLabeler:
    def __init__(self, model: ChatModel, prompts: dict[str, str], malformed_retries: int = 2):
        self.model, self.prompt, self.retries = model, prompts["labeler"], malformed_retries

    async def label(self, episode: Episode, obs: dict[str, Any]) -> Label:
        p = self.prompt.format(
            persona=episode.persona,
            steps=_steps(episode),
            url=obs["url"],
            title=obs.get("title", ""),
            observation=obs_text(obs, 3000),
        )
        text = await _ask(self.model, p, parse_instruction, self.retries)
        return Label(text, obs["url"], obs.get("title", ""))


class ModelReward:
    def __init__(self, model: ChatModel, prompts: dict[str, str], malformed_retries: int = 2):
        self.model, self.prompt, self.retries = model, prompts["reward"], malformed_retries

    async def score(self, episode: Episode, label: Label, obs: dict[str, Any]) -> int:
        p = self.prompt.format(
            instruction=label.instruction,
            steps=_steps(episode),
            url=obs["url"],
            title=obs.get("title", ""),
            observation=obs_text(obs, 3000),
        )
        return await _ask(self.model, p, parse_score, self.retries)
