"""WebArena-Verified's official evaluators, as a grader process beside ``webserv serve``.

The server (Go) starts ``python -m webserv.verified serve`` once and speaks JSON
Lines with it on stdin/stdout, one request and one reply per line:

- ``{"op": "hello"}`` -> ``{"version": "1.2.3", "full": PATH, "hard": PATH}``:
  the installed ``webarena-verified`` package's datasets (read where the package
  keeps them, never copied).
- ``{"op": "grade", "task_id": N, "task": {...}, "environments": {"shopping":
  ["http://shop.webserv.test"]}, "agent_response": "...", "har": {...}}`` ->
  ``{"score": 1.0, "status": "success", "error": "", "evaluators": [...]}``.
  A task of the package's dataset is graded by ``WebArenaVerified(config)
  .evaluate_task(task_id=..., agent_response=..., network_trace=...)``; a task
  given inline (the bundled shop's Verified-style tasks) by the same evaluator
  class on that task. The trace is the episode's HAR, sent inline (online
  grading) or as ``"har_path"``, a HAR file read with ``NetworkTrace.from_har``
  (offline re-grading).

Grading runs here, beside the server, so every client (Python, TRL, verl, a raw
WebSocket) gets the same reward in the final step, from the same trace and the
same package version. ``webserv regrade`` re-grades recorded episodes offline
through the same process.
"""

from __future__ import annotations

import json
import logging
import sys
from importlib import metadata, resources
from pathlib import Path
from typing import Any

VERSION = "1.2.3"


def dataset_paths() -> dict[str, str]:
    """The installed package's full and Hard datasets."""
    root = resources.files("webarena_verified") / "assets" / "dataset"
    return {"full": str(root / "webarena-verified.json"), "hard": str(root / "webarna-verfied-hard.json")}


class Grader:
    """Grades episodes with the package's evaluators; one config per set of site URLs."""

    def __init__(self) -> None:
        from webarena_verified.api import WebArenaVerified

        self._facades: dict[str, WebArenaVerified] = {}

    def _facade(self, environments: dict[str, list[str]]) -> Any:
        from webarena_verified.api import WebArenaVerified
        from webarena_verified.types.config import EnvironmentConfig, WebArenaVerifiedConfig
        from webarena_verified.types.task import WebArenaSite

        key = json.dumps(environments, sort_keys=True)
        wa = self._facades.get(key)
        if wa is None:
            envs = {WebArenaSite(s): EnvironmentConfig(urls=list(u)) for s, u in environments.items()}
            wa = WebArenaVerified(config=WebArenaVerifiedConfig(environments=envs))
            self._facades[key] = wa
        return wa

    def grade(self, req: dict[str, Any]) -> dict[str, Any]:
        from webarena_verified.api import WebArenaVerifiedEvaluator
        from webarena_verified.types.eval import TaskEvalContext
        from webarena_verified.types.task import WebArenaVerifiedTask
        from webarena_verified.types.tracing import NetworkTrace

        wa = self._facade(req.get("environments") or {})
        answer = req.get("agent_response")
        if req.get("har_path"):
            trace = NetworkTrace.from_har(Path(req["har_path"]))
        else:
            entries = (req.get("har") or {}).get("log", {}).get("entries", [])
            trace = NetworkTrace.from_content(entries) if entries else None
        if req.get("task") is None:
            result = wa.evaluate_task(task_id=int(req["task_id"]), agent_response=answer, network_trace=trace)
        else:
            task = WebArenaVerifiedTask.model_validate(req["task"])
            ev = WebArenaVerifiedEvaluator(config=wa.config, reader=wa._reader)
            ctx = TaskEvalContext(task=task, agent_response_raw=answer, network_trace=trace, config=wa.config)  # ty: ignore
            result = ev.evaluate_task(context=ctx)
        out = json.loads(result.model_dump_json())
        return {
            "score": float(result.score),
            "status": str(out.get("status", "")),
            "error": out.get("error_msg") or "",
            "evaluators": out.get("evaluators_results", []),
        }


def serve(stdin: Any = sys.stdin, stdout: Any = sys.stdout) -> None:
    """Answers JSON Lines requests until stdin closes."""
    logging.disable(logging.INFO)  # the package logs every evaluation at INFO
    grader: Grader | None = None
    for line in stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            if req.get("op") == "hello":
                reply: dict[str, Any] = {"version": metadata.version("webarena-verified"), **dataset_paths()}
            elif req.get("op") == "grade":
                grader = grader or Grader()
                reply = grader.grade(req)
            else:
                reply = {"error": f"unknown op {req.get('op')!r}: want hello or grade"}
        except Exception as e:  # one bad request never ends the process
            reply = {"error": f"{type(e).__name__}: {e}"}
        stdout.write(json.dumps(reply) + "\n")
        stdout.flush()


def main(argv: list[str]) -> int:
    if argv[:1] == ["serve"]:
        serve()
        return 0
    if argv[:1] == ["paths"]:
        print(json.dumps(dataset_paths()))
        return 0
    print("usage: python -m webserv.verified serve | paths", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
