"""Dream suite: dreamed steps per second against real steps per second on the bundled shop, same run,
and wm-eval of the transition-memory model on held-out oracles.

    WEBSERV_BIN=bin/webserv python bench/dream_bench.py [--tasks 20] [--smoke]

One server, one client, one environment at a time. The oracles of the first ``--tasks`` storefront
tasks of the bundled shop are played in real environments, recorded (even tasks under
``train/``, odd ones under ``heldout/``), each step timed; then each recorded episode is dreamed
again from its first observation with the memory model built from all of them, each step timed,
and every dreamed observation compared with the recorded one. The ratio is of the medians of the
per-step times (client round trip), same run. Then ``webserv export --format transitions`` of both
halves and ``webserv wm-eval --model memory:train --transitions heldout.jsonl`` (and on the training
half itself, which the memory must score exactly). Results: bench/results/dream.{json,md}, with the
load before and after (the machine is shared).
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import webserv
from webserv.launcher import LocalServer, find_binary

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
KEYS = ("url", "title", "html", "axtree", "clickable", "inputs", "last_action", "last_action_error")


async def run(url: str, root: Path, n_tasks: int) -> dict:
    async with webserv.AsyncClient(url) as client:
        tasks = [t for t in (await client.request("tasks", site="shopping"))["tasks"] if t.get("oracle")][
            :n_tasks
        ]
        real_ms: list[float] = []
        recorded: dict[str, list[dict]] = {}
        for i, t in enumerate(tasks):
            env = client.env("shopping", task=t["id"], record={"dir": "train" if i % 2 == 0 else "heldout"})
            obs, _ = await env.reset()
            seen = [obs]
            for a in t["oracle"]:
                t0 = time.perf_counter()
                obs, *_ = await env.step(a)
                real_ms.append((time.perf_counter() - t0) * 1000)
                seen.append(obs)
            await env.close()
            recorded[t["id"]] = seen
        episodes = recorded_episodes(root)
        dream_ms: list[float] = []
        exact = total = 0
        for t in tasks:
            env = client.env(
                "dream",
                world_model={"memory": ["."]},
                start={"episode": episodes[t["id"]], "step": 0},
                max_dream_steps=len(t["oracle"]) + 1,
            )
            await env.reset()
            for a, want in zip(t["oracle"], recorded[t["id"]][1:], strict=True):
                t0 = time.perf_counter()
                obs, _, _, _, info = await env.step(a)
                dream_ms.append((time.perf_counter() - t0) * 1000)
                assert info["dreamed"] is True
                total += 1
                exact += all(obs.get(k) == want.get(k) for k in KEYS)
            await env.close()
    real, dreamed = statistics.median(real_ms), statistics.median(dream_ms)
    return {
        "tasks": len(tasks),
        "real_steps": len(real_ms),
        "dream_steps": len(dream_ms),
        "real_step_ms_median": round(real, 2),
        "dream_step_ms_median": round(dreamed, 3),
        "real_steps_per_s": round(1000 / real, 2),
        "dream_steps_per_s": round(1000 / dreamed, 1),
        "ratio": round(real / dreamed, 1),
        "dreamed_exactly": f"{exact}/{total}",
    }


def recorded_episodes(root: Path) -> dict[str, str]:
    """Task id -> its recorded episode, relative to the trajectory directory."""
    out = {}
    for f in sorted(root.rglob("*.jsonl.gz")):
        with gzip.open(f, "rt") as lines:
            out[json.loads(lines.readline())["task_id"]] = str(f.relative_to(root))
    return out


def wm_eval(binary: str, root: Path, work: Path) -> dict:
    out = {}
    for half in ("train", "heldout"):
        subprocess.run(
            [
                binary,
                "export",
                "--format",
                "transitions",
                "-o",
                str(work / f"{half}.jsonl"),
                str(root / half),
            ],
            check=True,
            capture_output=True,
        )
    for name, target in (("heldout", "heldout.jsonl"), ("train_itself", "train.jsonl")):
        report = work / f"wm-{name}.json"
        run = subprocess.run(
            [
                binary,
                "wm-eval",
                "--model",
                f"memory:{root / 'train'}",
                "--transitions",
                str(work / target),
                "--json",
                str(report),
            ],
            check=True,
            capture_output=True,
            text=True,
        )
        out[name] = {"table": run.stdout, "report": json.loads(report.read_text())}
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tasks", type=int, default=20)
    p.add_argument("--smoke", action="store_true", help="4 tasks: checks the output, not figures to quote")
    p.add_argument("--out", type=Path, default=RESULTS)
    a = p.parse_args()
    n = 4 if a.smoke else a.tasks
    binary = find_binary()
    if binary is None:
        print("no webserv binary: make build, or set WEBSERV_BIN", file=sys.stderr)
        return 2
    command = "python bench/dream_bench.py" + (" --smoke" if a.smoke else f" --tasks {n}")
    rep = benchlib.header("dream", command, a.smoke)
    rep["load_before"] = [round(x, 2) for x in os.getloadavg()]
    with tempfile.TemporaryDirectory() as tmp:
        root, work = Path(tmp) / "trajectories", Path(tmp)
        server = LocalServer(binary, ["--idle", "200ms", "--trajectories", str(root)])
        try:
            rep["steps"] = asyncio.run(run(server.url, root, n))
        finally:
            server.stop()
        rep["wm_eval"] = wm_eval(binary, root, work)
    rep["load_after"] = [round(x, 2) for x in os.getloadavg()]
    s = rep["steps"]
    rep["headline"] = (
        f"Dreamed steps with the memory model: {s['dream_steps_per_s']}/s against "
        f"{s['real_steps_per_s']}/s real on the bundled shop, same run: {s['ratio']}x (target 20x); "
        f"{s['dreamed_exactly']} dreamed observations equal to the real ones."
    )
    rep["seconds"] = time.time() - rep["started"]
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "dream.json").write_text(json.dumps(rep, indent=2) + "\n")
    m = rep["machine"]
    md = [
        "# dream\n",
        rep["headline"] + "\n",
        f"Machine: {m['cores']} cores, {m['memory_gib']} GiB, kernel {m['kernel']}; {m['chromium']}; "
        f"Python {m['python']}. Shared with other work: load {rep['load_before']} before, "
        f"{rep['load_after']} after (1, 5, 15 min).",
        f"Command: `{command}` ({time.strftime('%Y-%m-%d', time.gmtime(rep['started']))}, "
        f"{rep['seconds']:.0f} s).\n",
    ]
    if a.smoke:
        md.append("**Smoke run: a few samples to check the output, not figures to quote.**\n")
    md += [
        "| | steps | median step (ms, client round trip) | steps/s |",
        "|---|---|---|---|",
        f"| real (browser, bundled shop) | {s['real_steps']} | {s['real_step_ms_median']} "
        f"| {s['real_steps_per_s']} |",
        f"| dreamed (memory model) | {s['dream_steps']} | {s['dream_step_ms_median']} "
        f"| {s['dream_steps_per_s']} |",
        "",
        "## wm-eval of the memory model (built from the even tasks' oracles)\n",
        "On the odd tasks' oracles (held out). The table holds only what it saw: a held-out task's "
        "actions are unseen, the state is then taken as unchanged, and that is exact only where the real "
        "step changed nothing in the view (a stop). This is the floor a learned world model must beat.\n",
        "```",
        rep["wm_eval"]["heldout"]["table"].rstrip(),
        "```\n",
        "On its own training transitions (the memory must be exact):\n",
        "```",
        rep["wm_eval"]["train_itself"]["table"].rstrip(),
        "```",
    ]
    (a.out / "dream.md").write_text("\n".join(md) + "\n")
    print(rep["headline"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
