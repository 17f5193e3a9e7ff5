"""Eval suite: what ``webserv eval``'s harness costs, and how a run scales with --parallel.

    WEBSERV_BIN=bin/webserv python bench/eval_bench.py [--episodes 100] [--parallel 1,8,32]
        [--observation axtree|html|screenshot|som] [--smoke]

The model is a stand-in for the user's model on 127.0.0.1 (python/tests/standin_model.py) that
answers each bundled task's oracle step by step, so every episode succeeds and the model's own time
is a local HTTP round trip. For each --parallel value, one ``webserv.evaluate`` run of --episodes
episodes (the bundled tasks with a goal of their own, repeated to make up the number) on one server
(``--max-envs`` above the largest --parallel, recording as eval does). From the rows, per episode:

- the environment's time per step (``env_s / steps``: reset and steps, as the client waits for them),
- the model's (``model_s / steps``: the stand-in's round trips),
- the harness's own time per step: ``(wall_s - env_s - model_s) / steps`` (prompts, parsing, the
  rollout's bookkeeping, the results row written and fsynced, and closing the environment, which
  ``rollout.run`` does not time), in the same run as the environment's step;

and the run's wall time and episodes per minute. Results: bench/results/eval.{json,md,png}; with
``--observation`` other than ``axtree`` (the agent's default), eval-<observation>.{json,md,png}, so
the picture observations' cost (a screenshot per step, base64 in every request) is measured apart.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python" / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import header, write  # noqa: E402
from standin_model import StandInModel  # noqa: E402

import webserv  # noqa: E402
from webserv.eval import OBSERVATIONS, EvalOptions  # noqa: E402
from webserv.launcher import LocalServer, find_binary  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def oracle_script(tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The stand-in's script: each task's oracle, one step per request, told apart by the goal and
    the actions so far as the default step prompt shows them."""
    script = []
    for t in tasks:
        for i, action in enumerate(t["oracle"]):
            done = "\n".join(f"{j + 1}. {a}" for j, a in enumerate(t["oracle"][:i])) or "none"
            script.append(
                {
                    "match": f"Goal: {t['goal']}\n\nPrevious actions:\n{done}\n\nCurrent page",
                    "reply": f"Action: {action}",
                    "keep": True,
                }
            )
    return script


async def bundled(url: str) -> list[dict[str, Any]]:
    """The bundled tasks (``shopping.N``, ``cms.N``: not their WebArena-Verified or attacked sets'
    copies) whose goal no other of them has (a stand-in tells tasks apart by their goal)."""
    async with webserv.AsyncClient(url, register=False) as c:
        listed = [
            t
            for t in await c.tasks()
            if t.get("oracle")
            and t["site"] in ("shopping", "cms")
            and str(t["id"]).rsplit(".", 1)[0] == t["site"]
        ]
    goals: dict[str, int] = {}
    for t in listed:
        goals[t["goal"]] = goals.get(t["goal"], 0) + 1
    return [t for t in listed if goals[t["goal"]] == 1]


def per_step(rows: list[dict[str, Any]], key: str) -> float:
    return statistics.median(r[key] / r["steps"] for r in rows if r.get("steps"))


async def arm(
    url: str,
    model: StandInModel,
    tasks: list[dict[str, Any]],
    episodes: int,
    parallel: int,
    out: Path,
    observation: str,
) -> dict:
    chosen = tasks[: min(len(tasks), episodes)]
    repeats = math.ceil(episodes / len(chosen))
    t0 = time.monotonic()
    res = await webserv.evaluate(
        EvalOptions(
            model=model.url,
            model_name="standin",
            tasks=",".join(str(t["id"]) for t in chosen),
            out=out,
            parallel=parallel,
            max_steps=max(len(t["oracle"]) for t in chosen) + 2,
            repeats=repeats,
            server=url,
            observation=observation,
        )
    )
    wall = time.monotonic() - t0
    scored = [r for r in res.rows if r["status"] == "scored"]
    for r in scored:
        r["harness_s"] = max(0.0, r["wall_s"] - r["env_s"] - r["model_s"])
    return {
        "observation": observation,
        "parallel": parallel,
        "episodes": len(res.rows),
        "success_rate": res.summary["overall"]["success_rate"],
        "infra_failures": res.summary["infra"]["count"],
        "steps": sum(r["steps"] for r in scored),
        "wall_s": round(wall, 2),
        "episodes_per_minute": round(len(res.rows) / wall * 60, 1),
        "env_ms_per_step": round(1000 * per_step(scored, "env_s"), 1),
        "model_ms_per_step": round(1000 * per_step(scored, "model_s"), 1),
        "harness_ms_per_step": round(1000 * per_step(scored, "harness_s"), 2),
    }


async def run(url: str, episodes: int, parallels: list[int], out: Path, observation: str) -> list[dict]:
    tasks = await bundled(url)
    model = StandInModel(oracle_script(tasks))
    try:
        return [await arm(url, model, tasks, episodes, p, out / f"p{p}", observation) for p in parallels]
    finally:
        model.stop()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--episodes", type=int, default=100)
    p.add_argument("--parallel", default="1,8,32", help="comma list of --parallel values")
    p.add_argument(
        "--observation",
        default="axtree",
        choices=list(OBSERVATIONS),
        help="what the agent shows the model (webserv eval --observation)",
    )
    p.add_argument(
        "--smoke", action="store_true", help="4 episodes at --parallel 1 and 2 (marked a smoke run)"
    )
    p.add_argument("--out", default=str(RESULTS), help="where eval.json, eval.md and eval.png go")
    a = p.parse_args()
    suite = "eval" if a.observation == "axtree" else f"eval-{a.observation}"
    parallels = [int(x) for x in a.parallel.split(",")]
    if a.smoke:
        a.episodes, parallels = 4, [1, 2]
    binary = os.environ.get("WEBSERV_BIN") or find_binary()
    if not binary:
        print("no webserv binary: make build, or set WEBSERV_BIN", file=sys.stderr)
        return 2
    rep = header(suite, "python bench/eval_bench.py " + " ".join(sys.argv[1:]), a.smoke)
    rep["load_before"] = [round(x, 1) for x in os.getloadavg()]
    with tempfile.TemporaryDirectory() as d:
        traj = Path(d) / "trajectories"
        traj.mkdir()
        server = LocalServer(binary, ["--trajectories", str(traj), "--max-envs", str(max(parallels) + 8)])
        try:
            arms = asyncio.run(run(server.url, a.episodes, parallels, Path(d), a.observation))
        finally:
            server.stop()
    rep["load_after"] = [round(x, 1) for x in os.getloadavg()]
    rep["arms"] = arms
    cols = list(arms[0])
    table = "| " + " | ".join(cols) + " |\n|" + "---|" * len(cols) + "\n"
    table += "\n".join("| " + " | ".join(str(x[c]) for c in cols) + " |" for x in arms)
    print(table)
    ok = all(x["success_rate"] == 1.0 and x["infra_failures"] == 0 for x in arms)
    rep["headline"] = (
        f"Observation {a.observation}. Harness overhead per step {arms[0]['harness_ms_per_step']} ms "
        "against the environment's "
        f"{arms[0]['env_ms_per_step']} ms (--parallel {arms[0]['parallel']}, same run); "
        + ", ".join(f"{x['episodes']} episodes at --parallel {x['parallel']}: {x['wall_s']} s" for x in arms)
        + f". Load {rep['load_before']} before, {rep['load_after']} after."
    )
    plot(arms, Path(a.out) / f"{suite}.png")
    write(Path(a.out), rep, table + "\n")
    return 0 if ok else 1


def plot(arms: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.5))
    labels = [str(x["parallel"]) for x in arms]
    left.bar(labels, [x["wall_s"] for x in arms], color="#4a7fc1")
    left.set_xlabel("--parallel")
    left.set_ylabel(f"seconds for {arms[0]['episodes']} episodes")
    bottom = [0.0] * len(arms)
    for key, colour in (
        ("env_ms_per_step", "#7a9a3a"),
        ("model_ms_per_step", "#c1a04a"),
        ("harness_ms_per_step", "#c14a4a"),
    ):
        vals = [x[key] for x in arms]
        right.bar(labels, vals, bottom=bottom, color=colour, label=key.removesuffix("_ms_per_step"))
        bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
    right.set_xlabel("--parallel")
    right.set_ylabel("ms per step (median)")
    right.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
