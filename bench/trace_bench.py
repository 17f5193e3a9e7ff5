"""Network-trace cost: step latency with the episode's HAR recorded against without, same run.

    WEBSERV_BIN=bin/webserv python bench/trace_bench.py [--reps 12] [--idle-ms 200] [--smoke]

One ``webserv serve`` (the bundled shop, with its WebArena-Verified grader).
The same oracle actions (the final stop left out) of ten storefront tasks,
five navigation and five add-to-cart ones, are played in two environments
in turn, in a random order each repetition:

- off: the native task set (``shopping.N``): no network trace;
- on: the Verified-style task set (``verified.shopping.N``): every request
  of the episode is recorded in HAR (netroute.Recorder: headers, bodies up
  to 256 KiB each and 16 MiB an episode, timings).

Everything else is the same (site, actions, instance, browser), so the
difference is the recording. Reported: the median step call (client round
trip) per arm, their ratio, and the median of the per-step paired ratios.
Results in bench/results/trace.json and .md.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402

import webserv  # noqa: E402
from webserv.launcher import LocalServer, find_binary  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TASKS = [20, 21, 22, 23, 24, 35, 36, 37, 38, 39]


async def oracles(c: webserv.AsyncClient, tasks: list[int]) -> dict[int, list[str]]:
    by_id = {t["id"]: t.get("oracle") or [] for t in await c.tasks("shopping")}
    return {n: [a for a in by_id[f"shopping.{n}"] if not a.startswith("stop")] for n in tasks}


async def episode(env: Any, task: str, actions: list[str]) -> list[float]:
    await env.reset(options={"task_id": task})
    out = []
    for act in actions:
        t0 = time.perf_counter()
        await env.step(act)
        out.append((time.perf_counter() - t0) * 1000)
    return out


async def run(url: str, reps: int, seed: int, tasks: list[int]) -> dict[str, list[float]]:
    rng = random.Random(seed)
    samples: dict[str, list[float]] = {"off": [], "on": []}
    async with webserv.AsyncClient(url) as c:
        acts = await oracles(c, tasks)
        envs = {"off": c.env("shopping"), "on": c.env("shopping", task_set="webarena-verified")}
        try:
            for _ in range(reps):
                for n in tasks:
                    arms = ["off", "on"]
                    rng.shuffle(arms)
                    for arm in arms:
                        task = f"shopping.{n}" if arm == "off" else f"verified.shopping.{n}"
                        samples[arm] += await episode(envs[arm], task, acts[n])
        finally:
            for e in envs.values():
                await e.close()
    return samples


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=12)
    ap.add_argument("--idle-ms", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    args = ap.parse_args()
    tasks = TASKS
    if args.smoke:  # one repetition of a navigation and a state-changing task
        args.reps, tasks = 1, [TASKS[0], TASKS[5]]
    binary = find_binary()
    if binary is None:
        sys.exit("no webserv binary: run make build or set WEBSERV_BIN")
    command = "python bench/trace_bench.py " + " ".join(sys.argv[1:])
    rep = benchlib.header("trace", command.strip(), args.smoke)
    srv = LocalServer(binary, ["--idle", f"{args.idle_ms}ms"])
    try:
        samples = asyncio.run(run(srv.url, args.reps, args.seed, tasks))
    finally:
        srv.stop()
    off, on = statistics.median(samples["off"]), statistics.median(samples["on"])
    paired = statistics.median(b / a for a, b in zip(samples["off"], samples["on"], strict=True))
    rep.update(
        samples=samples,
        steps_per_arm=len(samples["off"]),
        off_p50_ms=off,
        on_p50_ms=on,
        ratio_p50=on / off,
        ratio_paired_p50=paired,
        headline=f"step p50 with the HAR recorded {on:.1f} ms vs {off:.1f} ms without: "
        f"**{on / off:.3f}x** (paired per-step ratio {paired:.3f}x), "
        f"{len(samples['off'])} steps per arm, idle window {args.idle_ms} ms.",
    )
    md = [
        "| arm | steps | p50 ms | p90 ms |",
        "|---|---|---|---|",
    ]
    for arm in ("off", "on"):
        xs = sorted(samples[arm])
        md.append(f"| {arm} | {len(xs)} | {statistics.median(xs):.1f} | {xs[int(0.9 * (len(xs) - 1))]:.1f} |")
    plot(samples, Path(args.out) / "trace.png")
    benchlib.write(Path(args.out), rep, "\n".join(md))
    print(rep["headline"])


def plot(samples: dict[str, list[float]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.boxplot([samples["off"], samples["on"]])
    ax.set_xticks([1, 2], ["no trace", "HAR recorded"])
    ax.set_ylabel("step round trip (ms)")
    ax.set_title("Network-trace recording's cost per step")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
