"""Benchmarking a model: the reference agent over a task set, in parallel, with results that survive
faults and a report with confidence intervals (docs/eval.md).

    result = await webserv.evaluate(EvalOptions(model="http://127.0.0.1:8000/v1", model_name="qwen",
                                                tasks="shopping.0-19", parallel=8, out="run1"))
    result.summary["overall"]["success_rate"], result.report

or ``webserv eval --model URL --model-name NAME --tasks shopping.0-19 --out run1``.
"""

from ..parse import parse_action
from .agent import (
    NOOP,
    OBSERVATIONS,
    Agent,
    AgentConfig,
    Malformed,
    Observation,
    load_prompts,
    tool_schema,
)
from .compare import compare
from .options import SIDE_EFFECTS, EvalOptions
from .report import console, cup_of, summarize
from .run import EvalResult, episode_seed, evaluate, latest, read_rows

__all__ = [
    "NOOP",
    "OBSERVATIONS",
    "SIDE_EFFECTS",
    "Agent",
    "AgentConfig",
    "EvalOptions",
    "EvalResult",
    "Malformed",
    "Observation",
    "compare",
    "console",
    "cup_of",
    "episode_seed",
    "evaluate",
    "latest",
    "load_prompts",
    "parse_action",
    "read_rows",
    "summarize",
    "tool_schema",
]
