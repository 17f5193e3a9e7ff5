"""Vector env benchmark: gymnasium.make_vec(N) against N gymnasium.make environments stepped from threads.

    WEBSERV_BIN=bin/webserv python bench/vector_bench.py [--n 8] [--steps 30] [--idle-ms 500] [--smoke]

One `webserv serve` (the bundled shop), both variants in the same run, one
after the other, each on N fresh environments of ``webserv/shopping``:

- vector: ``gymnasium.make_vec("webserv/shopping", num_envs=N)``, the native
  vector env (one connection, each step's N actions in flight together,
  autoreset on the next step);
- threads: N ``gymnasium.make("webserv/shopping")`` environments, one thread
  each, every thread stepping its own as fast as it can (they share the
  package's one connection too) and resetting it when its episode ends.

Every environment plays the same seeded random policy (clicks on the links
and buttons it sees) for ``--steps`` actions, with episodes of
``--max-steps``; so both variants do the same actions and resets. Reported:
actions per second over the whole loop (resets included in the time, not in
the count), the median latency of a step call, and the load average before
and after. Results in bench/results/vector.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

import gymnasium as gym

import webserv  # noqa: F401 (registers the ids)
from webserv.launcher import LocalServer, find_binary

ROOT = Path(__file__).resolve().parents[1]


def pick(clickable: list[str], rng: random.Random) -> str:
    ids = [i for i in clickable if "sign-out" not in i]
    return f'click("{rng.choice(ids)}")' if ids else "noop()"


def run_vector(url: str, n: int, steps: int, max_steps: int, mode: str | None = None) -> dict[str, Any]:
    envs = gym.make_vec("webserv/shopping", num_envs=n, vectorization_mode=mode, url=url, max_steps=max_steps)
    rngs = [random.Random(i) for i in range(n)]
    try:
        obs, _ = envs.reset(seed=0)
        acted = [0] * n
        pending_reset = [False] * n
        lat: list[float] = []
        t0 = time.perf_counter()
        while min(acted) < steps:
            # An environment that ended resets on this call (its action is ignored): no pick, so each
            # environment's policy draws the same choices as in the threads variant.
            actions = ["noop()" if pending_reset[i] else pick(obs["clickable"][i], rngs[i]) for i in range(n)]
            t = time.perf_counter()
            obs, _, terminated, truncated, _ = envs.step(actions)
            lat.append(time.perf_counter() - t)
            for i in range(n):
                if not pending_reset[i]:
                    acted[i] += 1
                pending_reset[i] = bool(terminated[i] or truncated[i])
        wall = time.perf_counter() - t0
    finally:
        envs.close()
    return {"actions": sum(acted), "wall_s": wall, "step_call_p50_ms": 1000 * statistics.median(lat)}


def run_threads(url: str, n: int, steps: int, max_steps: int) -> dict[str, Any]:
    envs = [gym.make("webserv/shopping", url=url, max_steps=max_steps) for _ in range(n)]
    start = threading.Barrier(n + 1)
    lat: list[float] = []
    errors: list[BaseException] = []

    def play(i: int) -> None:
        rng = random.Random(i)
        try:
            obs, _ = envs[i].reset(seed=i)
            start.wait()
            for _ in range(steps):
                t = time.perf_counter()
                obs, _, terminated, truncated, _ = envs[i].step(pick(obs["clickable"], rng))
                lat.append(time.perf_counter() - t)
                if terminated or truncated:
                    obs, _ = envs[i].reset()
        except BaseException as e:  # noqa: BLE001 (reported by the main thread)
            errors.append(e)
            start.abort()

    threads = [threading.Thread(target=play, args=(i,)) for i in range(n)]
    try:
        for t in threads:
            t.start()
        start.wait()
        t0 = time.perf_counter()
        for t in threads:
            t.join()
        wall = time.perf_counter() - t0
    finally:
        for e in envs:
            e.close()
    if errors:
        raise errors[0]
    return {"actions": n * steps, "wall_s": wall, "step_call_p50_ms": 1000 * statistics.median(lat)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=8, help="environments")
    ap.add_argument("--steps", type=int, default=30, help="actions per environment")
    ap.add_argument("--max-steps", type=int, default=10, help="episode length (then a reset)")
    ap.add_argument("--idle-ms", type=int, default=500, help="the server's idle window")
    ap.add_argument(
        "--sync",
        action="store_true",
        help="also gymnasium's SyncVectorEnv (vectorization_mode='sync': one environment after another), "
        "what make_vec gave before the vector entry point",
    )
    ap.add_argument("--smoke", action="store_true", help="a few steps, to check that it runs")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "vector.json"))
    args = ap.parse_args()
    if args.smoke:
        args.n, args.steps, args.max_steps = 2, 3, 2
    binary = find_binary()
    if binary is None:
        sys.exit("no webserv binary: run `make build` or set WEBSERV_BIN")
    load_before = os.getloadavg()
    srv = LocalServer(binary, ["--idle", f"{args.idle_ms}ms", "--max-creating", str(max(args.n, 4))])
    try:
        vector = run_vector(srv.url, args.n, args.steps, args.max_steps)
        threads = run_threads(srv.url, args.n, args.steps, args.max_steps)
        sync = run_vector(srv.url, args.n, args.steps, args.max_steps, mode="sync") if args.sync else None
    finally:
        srv.stop()
    for r in (vector, threads, sync):
        if r is not None:
            r["actions_per_s"] = r["actions"] / r["wall_s"]
    rep = {
        "vector": vector,
        "threads": threads,
        "sync_vector_env": sync,
        "ratio_vector_over_threads": vector["actions_per_s"] / threads["actions_per_s"],
        "n": args.n,
        "steps": args.steps,
        "max_steps": args.max_steps,
        "idle_ms": args.idle_ms,
        "smoke": args.smoke,
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        "cpus": os.cpu_count(),
        "command": "python bench/vector_bench.py " + " ".join(sys.argv[1:]),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(rep, indent=2) + "\n")
    print(
        f"N={args.n}, {args.steps} actions each, episodes of {args.max_steps}, idle {args.idle_ms} ms:\n"
        f"  make_vec (one connection, concurrent):  {vector['actions_per_s']:.2f} actions/s "
        f"(step call p50 {vector['step_call_p50_ms']:.0f} ms)\n"
        f"  {args.n} gymnasium.make envs, {args.n} threads: {threads['actions_per_s']:.2f} actions/s "
        f"(step call p50 {threads['step_call_p50_ms']:.0f} ms)\n"
        + (
            f"  gymnasium SyncVectorEnv (sequential):   {sync['actions_per_s']:.2f} actions/s "
            f"(step call p50 {sync['step_call_p50_ms']:.0f} ms)\n"
            if sync
            else ""
        )
        + f"  load average before {load_before[0]:.2f}, after {rep['load_average_after'][0]:.2f} "
        f"({rep['cpus']} cpus)"
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
