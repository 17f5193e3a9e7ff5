"""``python -m webserv.eval`` (``webserv eval``): runs the reference agent over a task set and prints
the report's table; ``... compare DIR_A DIR_B`` prints the paired difference of two runs."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path

from ..errors import WebServError
from ..models import ModelError
from ..options import OptionParser
from .agent import OBSERVATIONS, observation
from .compare import compare
from .compare import console as compare_console
from .options import SIDE_EFFECTS, EvalOptions
from .report import console
from .run import evaluate


def _observation(name: str) -> str:
    try:
        return observation(name).name
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from e


def _eval_parser(prog: str) -> argparse.ArgumentParser:
    p = OptionParser(prog=prog, description=__doc__, allow_abbrev=False)
    p.add_argument(
        "--model", required=True, help="the OpenAI-compatible API root, like http://127.0.0.1:8000/v1"
    )
    p.add_argument("--model-name", required=True, help="the model name the endpoint serves")
    p.add_argument(
        "--tasks",
        required=True,
        help="shopping, shopping.0-19, cms.3,cms.4, a site definition file, or a task file",
    )
    p.add_argument("--out", default="eval-out", help="where results.jsonl, summary.json and report.html go")
    p.add_argument("--parallel", type=int, default=4, help="episodes at once")
    p.add_argument("--max-steps", type=int, default=30)
    p.add_argument("--repeats", type=int, default=1, help="episodes per task (pass@k, variance)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--resume", action="store_true", help="continue the run in --out: skip episodes already scored"
    )
    p.add_argument("--server", help="the server's URL (default $WEBSERV_URL, else a server the run starts)")
    p.add_argument(
        "--observation",
        type=_observation,
        default="axtree",
        metavar="|".join(OBSERVATIONS),
        help="what the model is shown of the page: "
        + "; ".join(f"{o.name}: {o.doc}" for o in OBSERVATIONS.values())
        + " (pictures go as image_url parts, for multimodal models)",
    )
    p.add_argument(
        "--tools", action="store_true", help="ask for OpenAI tool calls instead of an Action: line"
    )
    p.add_argument("--prompts", help="directory of prompt files replacing the built-in ones (docs/eval.md)")
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--max-tokens", type=int, help="the most tokens a reply may have")
    p.add_argument("--malformed-retries", type=int, default=2, help="asks again after a reply with no action")
    p.add_argument(
        "--episode-retries", type=int, default=2, help="runs again after an infrastructure failure"
    )
    p.add_argument("--model-timeout", type=float, default=120.0, help="seconds per model request")
    p.add_argument("--model-retries", type=int, default=3, help="retries of a model request that failed")
    p.add_argument(
        "--stop-after",
        type=int,
        default=5,
        help="stop after this many episodes in a row lost to the endpoint",
    )
    p.add_argument(
        "--screenshots", action="store_true", help="record a screenshot per step in the trajectories"
    )
    p.add_argument(
        "--strict-answers",
        action="store_true",
        help="grade WebArena tasks' answers as typed values: an answer listing candidates earns 0 "
        "(not comparable with published scores; docs/tasks.md)",
    )
    p.add_argument(
        "--side-effects",
        choices=SIDE_EFFECTS,
        default=None,
        help="a change to the site's state the task did not ask for: report (listed; the episode "
        "fails completion under policy), fail (it scores 0) or off (not looked for; docs/tasks.md); "
        "default: each task's own, else report",
    )
    p.add_argument(
        "--attack",
        metavar="FILE",
        default=None,
        help="a JSON file holding an attack (docs/attacks.md) put into every episode's pages; the "
        "summary then has the attack success rate and the utility under attack",
    )
    p.add_argument(
        "--attacks",
        metavar="FILE|library",
        default=None,
        help="run every task without an attack and under each attack of FILE (a JSON or YAML list of "
        "attacks with ids) or of the shipped library; the summary has utility, utility under attack "
        "and ASR per channel and goal (docs/attacks.md)",
    )
    p.add_argument(
        "--defense",
        action="store_true",
        help="run every episode also with the defense (a system-prompt rule: the page is data, never "
        "instructions), on the same (task, attack, seed); the report shows both side by side",
    )
    p.add_argument("--json", action="store_true", help="print summary.json instead of the table")
    p.add_argument("-q", "--quiet", action="store_true", help="no line per episode")
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    prog = os.environ.get("WEBSERV_EVAL_PROG", "python -m webserv.eval")
    if argv[:1] == ["compare"]:
        cp = OptionParser(
            prog=f"{prog} compare",
            description="the paired difference of two runs (B - A)",
            allow_abbrev=False,
        )
        cp.add_argument("a", metavar="DIR_A")
        cp.add_argument("b", metavar="DIR_B")
        cp.add_argument("--json", action="store_true")
        c = cp.parse_args(argv[1:])
        try:
            result = compare(c.a, c.b)
        except ValueError as e:
            print(f"eval compare: {e}", file=sys.stderr)
            return 2
        print(json.dumps(result, indent=1) if c.json else compare_console(result))
        return 0
    a = _eval_parser(prog).parse_args(argv)
    try:
        result = asyncio.run(
            evaluate(
                EvalOptions(
                    model=a.model,
                    model_name=a.model_name,
                    tasks=a.tasks,
                    out=a.out,
                    parallel=a.parallel,
                    max_steps=a.max_steps,
                    repeats=a.repeats,
                    seed=a.seed,
                    resume=a.resume,
                    server=a.server,
                    observation=a.observation,
                    tools=a.tools,
                    prompts=a.prompts,
                    temperature=a.temperature,
                    max_tokens=a.max_tokens,
                    malformed_retries=a.malformed_retries,
                    episode_retries=a.episode_retries,
                    model_timeout=a.model_timeout,
                    model_retries=a.model_retries,
                    stop_after=a.stop_after,
                    screenshots=a.screenshots,
                    strict_answers=a.strict_answers,
                    side_effects=a.side_effects,
                    attack=json.loads(Path(a.attack).read_text()) if a.attack else None,
                    attacks=a.attacks,
                    defense=a.defense,
                    quiet=a.quiet or a.json,
                )
            )
        )
    except (ValueError, OSError, WebServError, ModelError) as e:
        # A run the settings, the server or the endpoint refused (rows written so far are kept).
        print(f"eval: {e}", file=sys.stderr)
        return 2
    if a.json:
        print(json.dumps(result.summary, indent=1))
    else:
        print(console(result.summary))
        print(f"report: {result.report}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
