"""verl's agent loop ``"webserv"``: a multi-turn web episode on a fleet, as verl's ``AgentLoopOutput``.

verl runs every sample of a batch as an agent loop inside its
``AgentLoopWorker`` actors, the loop class chosen by name from its registry.
This module does not import verl when it is imported; the loop reaches verl
only to build its output. Two ways to register it:

- in verl's config, ``actor_rollout_ref.rollout.agent.agent_loop_config_path``
  pointing at ``AGENT_LOOP_CONFIG`` (this package's ``verl_agent_loop.yaml``:
  ``name: webserv``), which every worker loads; or
- ``webserv.ray.verl.register()`` in the worker's process (it calls
  ``verl.experimental.agent_loop.register("webserv")`` on the loop); importing
  this module after verl's agent loop module does it too.

Then dataset rows with ``agent_name: webserv`` run here. A row's
``extra_info`` gives the task (``task_id``, or ``start_url`` and ``goal``)
and its ``uid`` is the group key, so a GRPO group's ``rollout.n`` members
start from one snapshot on one server. Each turn, the model's text is
parsed for one action (the last fenced block, else the last line) and the
page that follows is appended as a user message, its tokens masked out
(``response_mask`` 0). The episode's reward is ``reward_score``.

A failure of the environment is never scored: the loop raises the
``InfrastructureError`` by default (verl fails the step), or with
``on_infrastructure_error: report`` returns ``reward_score`` None and the
failure in ``extra_fields["webserv_failure"]`` for glue that drops such samples.
"""

from __future__ import annotations

import asyncio
import re
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .. import rollout
from ..client import AsyncClient
from ..handle import AsyncEnv, Obs
from ..prompt import keywords_of, page_text, refuse_unknown, render
from .fleet import Fleet

AGENT_NAME = "webserv"

#: Keywords verl's AgentLoopWorker passes to an agent loop that this loop has no use for.
_VERL_KEYWORDS = ("dataset_cls", "dataset_config")

#: verl's ``agent_loop_config_path``: registers this loop as ``webserv`` in every AgentLoopWorker.
AGENT_LOOP_CONFIG = Path(__file__).with_name("verl_agent_loop.yaml")

_FENCED = re.compile(r"```(?:\w+)?\s*\n?(.*?)```", re.DOTALL)

# One client per fleet and event loop in a worker process, shared by all its loops.
_clients: dict[tuple[str, int], AsyncClient] = {}
_client_lock: dict[int, asyncio.Lock] = {}


async def fleet_client(fleet: str) -> AsyncClient:
    """The worker's client of a fleet (one per process and event loop)."""
    loop_id = id(asyncio.get_running_loop())
    lock = _client_lock.setdefault(loop_id, asyncio.Lock())
    async with lock:
        client = _clients.get((fleet, loop_id))
        if client is None:
            client = _clients[(fleet, loop_id)] = await Fleet.get(fleet).client_async()
        return client


def parse_action(text: str) -> str:
    """The action in a model's turn: its last fenced code block, else its last non-empty line."""
    blocks = _FENCED.findall(text)
    if blocks:
        text = blocks[-1]
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else "noop()"


def _cfg(config: Any, path: str, default: Any) -> Any:
    """``config.a.b.c`` for DictConfig, objects and dicts; ``default`` when any part is missing."""
    node = config
    for part in path.split("."):
        if node is None:
            return default
        node = node.get(part) if isinstance(node, dict) or hasattr(node, "get") else getattr(node, part, None)
    return default if node is None else node


@dataclass
class WebServLoopOutput:
    """AgentLoopOutput's fields, when verl is not installed (tests, other trainers)."""

    prompt_ids: list[int]
    response_ids: list[int]
    response_mask: list[int]
    response_logprobs: list[float] | None = None
    reward_score: float | None = None
    num_turns: int = 0
    metrics: dict[str, float] = field(default_factory=dict)
    extra_fields: dict[str, Any] = field(default_factory=dict)


def _output(**fields: Any) -> Any:
    """verl's ``AgentLoopOutput`` when verl is importable, else ``WebServLoopOutput`` with the same fields."""
    try:
        from verl.experimental.agent_loop.agent_loop import AgentLoopMetrics, AgentLoopOutput  # ty: ignore  # optional: verl
    except ImportError:
        return WebServLoopOutput(**fields)
    fields["metrics"] = AgentLoopMetrics(**fields["metrics"])
    return AgentLoopOutput(**fields)


class WebServAgentLoop:
    """verl's ``AgentLoopBase`` in shape: built by verl per sample, ``await run(sampling_params, **row)``.

    Args (verl passes the first four; the rest come from the agent loop config):
        trainer_config: verl's wrapper of the trainer config (``.config``), or the config itself.
        server_manager: verl's ``AsyncLLMServerManager`` (``generate(request_id, prompt_ids=,
            sampling_params=)`` giving ``token_ids`` and optionally ``log_probs``).
        tokenizer: the model's tokenizer (``apply_chat_template``, ``decode``).
        processor: unused (text only).
        fleet: the fleet's name.
        site: the environments' site.
        max_turns: model turns per episode (default ``multi_turn.max_assistant_turns``, else 10).
        on_infrastructure_error: ``"raise"`` (default) or ``"report"``.
    """

    def __init__(
        self,
        trainer_config: Any = None,
        server_manager: Any = None,
        tokenizer: Any = None,
        processor: Any = None,
        *,
        fleet: str = "webserv",
        site: str = "shopping",
        max_turns: int | None = None,
        on_infrastructure_error: Literal["raise", "report"] = "raise",
        **verl_keywords: Any,
    ):
        # verl's AgentLoopWorker passes these to every loop; anything else is a misspelt setting.
        refuse_unknown(
            "WebServAgentLoop",
            {k: v for k, v in verl_keywords.items() if k not in _VERL_KEYWORDS},
            [*keywords_of(WebServAgentLoop.__init__), *_VERL_KEYWORDS],
        )
        if on_infrastructure_error not in ("raise", "report"):
            raise ValueError("on_infrastructure_error is 'raise' or 'report'")
        self.config = getattr(trainer_config, "config", trainer_config)
        self.server_manager = server_manager
        self.tokenizer = tokenizer
        self.processor = processor
        self.fleet = fleet
        self.site = site
        rollout = "actor_rollout_ref.rollout"
        self.max_turns = max_turns or int(
            _cfg(self.config, f"{rollout}.multi_turn.max_assistant_turns", 0) or 10
        )
        self.response_length = int(_cfg(self.config, f"{rollout}.response_length", 4096))
        self.on_infrastructure_error = on_infrastructure_error

    def _template(self, messages: list[dict[str, Any]], *, generation: bool = True) -> list[int]:
        ids = self.tokenizer.apply_chat_template(messages, add_generation_prompt=generation, tokenize=True)
        return list(ids["input_ids"] if isinstance(ids, dict) else ids)

    async def run(self, sampling_params: dict[str, Any], **row: Any) -> Any:
        """One episode for one dataset row."""
        extra = row.get("extra_info") or {}
        options: dict[str, Any] = {}
        for key in ("task_id", "start_url", "goal"):
            value = row.get(key, extra.get(key))
            if value is not None:
                options["task" if key == "task_id" else key] = str(value)
        if row.get("uid") is not None:
            options["group_key"] = str(row["uid"])
        messages = [dict(m) for m in row.get("raw_prompt") or []]
        request_id = uuid.uuid4().hex
        prompt_ids: list[int] = []
        response_ids: list[int] = []
        mask: list[int] = []
        logprobs: list[float] = []

        async def policy(obs: Obs, history: list[dict[str, Any]]) -> str | None:
            nonlocal prompt_ids
            if not history:  # the first page is the prompt's end
                messages.append({"role": "user", "content": render(obs)})
                prompt_ids = self._template(messages)
            else:  # each later page follows the model's turn, masked out
                page = self._template([{"role": "user", "content": page_text(obs)}])
                response_ids.extend(page)
                mask.extend([0] * len(page))
                logprobs.extend([0.0] * len(page))
            if len(response_ids) >= self.response_length:
                return None
            out = await self.server_manager.generate(
                request_id=request_id, prompt_ids=prompt_ids + response_ids, sampling_params=sampling_params
            )
            tokens = list(getattr(out, "token_ids", out))
            response_ids.extend(tokens)
            mask.extend([1] * len(tokens))
            logprobs.extend(list(getattr(out, "log_probs", None) or [0.0] * len(tokens)))
            return parse_action(self.tokenizer.decode(tokens, skip_special_tokens=True))

        outcome = await rollout.run(
            AsyncEnv(await fleet_client(self.fleet), self.site),
            policy,
            self.max_turns,
            options=options,
            on_failure=self.on_infrastructure_error,
        )
        turns, failure = outcome.turns, outcome.failure
        n = self.response_length
        extra_fields: dict[str, Any] = {
            "webserv": {
                "group_role": outcome.group_role,
                "host": outcome.host,
                "terminated": outcome.terminated,
                "truncated": outcome.truncated,
                "end_reason": outcome.end_reason,
                "grade": outcome.grade,
            }
        }
        if failure is not None:
            extra_fields["webserv_failure"] = outcome.failure_record()
        return _output(
            prompt_ids=prompt_ids,
            response_ids=response_ids[:n],
            response_mask=mask[:n],
            response_logprobs=logprobs[:n],
            reward_score=outcome.reward,
            num_turns=2 * turns + 1,
            metrics={"generate_sequences": outcome.policy_seconds, "tool_calls": outcome.env_seconds},
            extra_fields=extra_fields,
        )


def register(name: str = AGENT_NAME) -> str:
    """Registers the loop in verl's agent-loop registry under ``name`` (imports verl now)."""
    try:
        from verl.experimental.agent_loop.agent_loop import register as verl_register  # ty: ignore  # optional: verl
    except ImportError as e:
        raise ImportError(
            "verl is not installed here; in verl's config use "
            f"actor_rollout_ref.rollout.agent.agent_loop_config_path={AGENT_LOOP_CONFIG}"
        ) from e
    verl_register(name)(WebServAgentLoop)
    return name


if "verl.experimental.agent_loop.agent_loop" in sys.modules:  # verl is loaded already: join its registry
    register()

__all__ = [
    "AGENT_LOOP_CONFIG",
    "AGENT_NAME",
    "WebServAgentLoop",
    "WebServLoopOutput",
    "parse_action",
    "register",
]
