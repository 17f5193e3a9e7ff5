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
parsed for one action (``webserv.parse``'s grammar: an ``Action:`` line,
the last line, the last fenced block) and the page that follows is
appended as a user message, its tokens masked out (``response_mask`` 0).
The episode's reward is ``reward_score``.

A failure of the environment is never scored: the loop raises the
``InfrastructureError`` by default (verl fails the step), or with
``on_infrastructure_error: report`` returns ``reward_score`` None and the
failure in ``extra_fields["webserv_failure"]`` for glue that drops such samples.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..integrations.verl import WebAgentLoop, client_of, parse_action
from ..mixing import Mix
from ..prompt import keywords_of, refuse_unknown

AGENT_NAME = "webserv"

#: Keywords verl's AgentLoopWorker passes to an agent loop that this loop has no use for.
_VERL_KEYWORDS = ("dataset_cls", "dataset_config")

#: verl's ``agent_loop_config_path``: registers this loop as ``webserv`` in every AgentLoopWorker.
AGENT_LOOP_CONFIG = Path(__file__).with_name("verl_agent_loop.yaml")


async def fleet_client(fleet: str) -> Any:
    """The worker's client of a fleet (one per process and event loop: ``client_of``)."""
    from ..integrations.verl import ClientSource

    return await client_of(ClientSource(fleet=fleet))


def _cfg(config: Any, path: str, default: Any) -> Any:
    """``config.a.b.c`` for DictConfig, objects and dicts; ``default`` when any part is missing."""
    node = config
    for part in path.split("."):
        if node is None:
            return default
        node = node.get(part) if isinstance(node, dict) or hasattr(node, "get") else getattr(node, part, None)
    return default if node is None else node


def _group_size(config: Any) -> int | None:
    """verl's ``rollout.n``: a mix's group size when the loop's config does not give one."""
    return int(_cfg(config, "actor_rollout_ref.rollout.n", 0)) or None


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


class WebServAgentLoop(WebAgentLoop):
    """verl's ``AgentLoopBase`` in shape: built by verl per sample, ``await run(sampling_params, **row)``.

    It is ``webserv.integrations.verl.WebAgentLoop`` (the one loop: token masks, mixing) on a Ray
    fleet, reading its settings from verl's config and answering verl's ``AgentLoopOutput``.

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
        mix, group_size: mixed groups (real, dream and expert members), as ``WebAgentLoop``'s.
        make_args: further make arguments.
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
        mix: Mix | None = None,
        group_size: int | None = None,
        make_args: dict[str, Any] | None = None,
        **verl_keywords: Any,
    ):
        # verl's AgentLoopWorker passes these to every loop; anything else is a misspelt setting.
        refuse_unknown(
            "WebServAgentLoop",
            {k: v for k, v in verl_keywords.items() if k not in _VERL_KEYWORDS},
            [*keywords_of(WebServAgentLoop.__init__), *_VERL_KEYWORDS],
        )
        config = getattr(trainer_config, "config", trainer_config)
        rollout = "actor_rollout_ref.rollout"
        super().__init__(
            config,
            server_manager,
            tokenizer,
            site=site,
            fleet=fleet,
            max_turns=max_turns or int(_cfg(config, f"{rollout}.multi_turn.max_assistant_turns", 0) or 10),
            response_length=int(_cfg(config, f"{rollout}.response_length", 4096)),
            on_infrastructure_error=on_infrastructure_error,
            mix=mix,
            group_size=group_size if group_size is not None or mix is None else _group_size(config),
            make_args=make_args,
        )
        self.processor = processor
        self.fleet = fleet

    async def run(self, sampling_params: dict[str, Any], **row: Any) -> Any:
        """One episode for one dataset row, as verl's ``AgentLoopOutput``."""
        out = await super().run(sampling_params, **row)
        m, w = out["metrics"], out.get("webserv", {})
        extra_fields: dict[str, Any] = {
            "webserv": {
                "group_role": m.get("group_role", ""),
                "host": w.get("host"),
                "terminated": m.get("terminated"),
                "truncated": m.get("truncated"),
                "end_reason": m.get("end_reason"),
                "grade": m.get("grade"),
                "source": out.get("source", "real"),
            }
        }
        if "demonstration" in out:
            extra_fields["webserv"]["demonstration"] = out["demonstration"]
        if "failure" in out:
            extra_fields["webserv_failure"] = out["failure"]
        return _output(
            prompt_ids=out.get("prompt_ids", []),
            response_ids=out.get("response_ids", []),
            response_mask=out.get("response_mask", []),
            response_logprobs=out.get("response_logprobs", []),
            reward_score=out["reward_score"],
            num_turns=2 * out["num_turns"] + 1,
            metrics={
                "generate_sequences": w.get("policy_seconds", 0.0),
                "tool_calls": w.get("env_seconds", 0.0),
            },
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
