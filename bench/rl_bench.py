"""RL trainer benchmark: group reset, mid-episode fork, TRL tool latency.

    make bench-rl        # or: WEBSERV_BIN=bin/webserv python bench/rl_bench.py [--incus]

Serves internal/testsite (one-file state) as a hosted site, on the local
backend by default or on Incus with --incus, and measures:

- group reset of N=8: time until all 8 members have their first
  observation (make_group: the first prepares the start state, the others
  are answered with its page and fork it right after), and until all 8
  are ready to step (each has answered an observe, which waits for its
  fork);
- fork of N=8 in the middle of an episode (the fork op: site instance and
  browser state), until all 8 have their observation, from a tab with 3
  history entries and from one with 10;
  both with the server's warm browser contexts refilled first (--pause, as
  a trainer's generation time allows) and back to back (pool drained);
- per-call latency of the TRL environment_factory tools (serial calls, as
  TRL makes them), and what they cost beyond the idle window.

Medians over repetitions; results in bench/results/rl.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import loopback

import webserv
from webserv.integrations.trl import web_environment
from webserv.launcher import LocalServer, find_binary

ROOT = Path(__file__).resolve().parents[1]


def site_dir(incus: bool) -> str:
    """A site definition for internal/testsite (local) or its image (incus)."""
    d = tempfile.mkdtemp(prefix="webserv-rl-bench-")
    if incus:
        Path(d, "testsite.yaml").write_text(
            "name: testsite\nincus: {image: webserv-bench}\nport: 8080\nready: {path: /ready}\n"
        )
        return d
    binary = os.path.join(d, "testsite")
    subprocess.run(
        ["go", "build", "-o", binary, "."],
        cwd=ROOT / "internal" / "testsite",
        check=True,
        env={**os.environ, "CGO_ENABLED": "0"},
    )
    os.makedirs(os.path.join(d, "data"))
    Path(d, "data", "state").write_text("base")
    Path(d, "testsite.yaml").write_text(
        f"name: testsite\nlocal: {{command: [{binary}], data_dir: data}}\nready: {{path: /ready}}\n"
    )
    return d


async def group_reset(client: webserv.AsyncClient, n: int) -> tuple[float, float]:
    """Seconds until all n have their first observation, and until all n are ready to step."""
    t0 = time.perf_counter()
    group = await client.make_group(n, site="testsite", options={"start_url": "/set?v=prepared"})
    took = time.perf_counter() - t0
    ready = await asyncio.gather(*(client.request("observe", e.id) for e, _, _ in group))
    ready_s = time.perf_counter() - t0
    assert len({obs["html"] for _, obs, _ in group} | {r["obs"]["html"] for r in ready}) == 1
    await asyncio.gather(*(e.close() for e, _, _ in group))
    return took, ready_s


async def fork(client: webserv.AsyncClient, n: int, history: int = 3) -> float:
    """Fork n environments from one whose tab has a history of `history` entries."""
    env = client.env("testsite")
    await env.reset()
    await env.step('goto("/set?v=mid-episode")')
    for i in range(history - 2):
        await env.step(f'goto("/?page={i}")')
    t0 = time.perf_counter()
    res = await client.request("fork", env.id, n=n)
    took = time.perf_counter() - t0
    assert len(res["envs"]) == n
    await asyncio.gather(*(client.request("close", f["env"]) for f in res["envs"]))
    await env.close()
    return took


def trl_latency(server: str, page: str, calls: int, idle_ms: int) -> dict[str, float]:
    cls = web_environment(site="open", server_url=server)
    env = cls()
    env.reset(start_url=page)
    lat = []
    for i in range(calls):
        t0 = time.perf_counter()
        env.fill("name", f"call {i}")
        lat.append((time.perf_counter() - t0) * 1000)
    env.stop("done")
    return {
        "trl_call_p50_ms": statistics.median(lat),
        "trl_call_beyond_idle_p50_ms": statistics.median(lat) - idle_ms,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--incus", action="store_true", help="host the site on Incus (needs the webserv-bench image)"
    )
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--idle-ms", type=int, help="the idle window (default 500; --smoke: 100)")
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--warm-contexts", type=int, default=8, help="browser contexts the server keeps ready")
    ap.add_argument(
        "--incus-warm", type=int, default=0, help="started containers the server keeps ready (with --incus)"
    )
    ap.add_argument(
        "--pause",
        type=float,
        default=3.0,
        help="seconds between measured operations, in which the server refills its warm contexts "
        "(as a trainer's generation time would); the back-to-back figures are reported too",
    )
    ap.add_argument("--out", help="results file (default bench/results/rl.json, rl-incus.json with --incus)")
    args = ap.parse_args()
    if args.out is None:
        args.out = str(ROOT / "bench" / "results" / ("rl-incus.json" if args.incus else "rl.json"))
    if args.smoke:
        args.reps, args.pause = 1, 0.5
    if args.idle_ms is None:
        args.idle_ms = 100 if args.smoke else 500
    binary = find_binary()
    if binary is None:
        sys.exit("no webserv binary: run `make build` or set WEBSERV_BIN")
    page = loopback.serve()
    srv = LocalServer(
        binary,
        [
            "--idle",
            f"{args.idle_ms}ms",
            "--sites",
            site_dir(args.incus),
            "--max-creating",
            "16",
            "--max-envs",
            "64",
            "--warm-contexts",
            str(args.warm_contexts),
            *(["--incus-warm", str(args.incus_warm)] if args.incus else []),
        ],
    )
    try:

        async def run() -> dict[str, list[float]]:
            async with webserv.AsyncClient(srv.url) as client:
                out: dict[str, list[float]] = {
                    "group_reset_8_s": [],
                    "group_reset_8_ready_s": [],
                    "fork_8_s": [],
                    "group_reset_8_back_to_back_s": [],
                    "group_reset_8_back_to_back_ready_s": [],
                    "fork_8_back_to_back_s": [],
                    "fork_8_history_10_s": [],
                }

                def add(key: str, took: tuple[float, float]) -> None:
                    out[key + "_s"].append(took[0])
                    out[key + "_ready_s"].append(took[1])

                for _ in range(args.reps):
                    add("group_reset_8_back_to_back", await group_reset(client, 8))
                    out["fork_8_back_to_back_s"].append(await fork(client, 8))
                    await asyncio.sleep(args.pause)
                    add("group_reset_8", await group_reset(client, 8))
                    await asyncio.sleep(args.pause)
                    out["fork_8_s"].append(await fork(client, 8))
                    await asyncio.sleep(args.pause)
                    out["fork_8_history_10_s"].append(await fork(client, 8, history=10))
                    await asyncio.sleep(args.pause)
                return out

        samples = asyncio.run(run())
        res: dict[str, object] = {k + "_p50": statistics.median(v) for k, v in samples.items()}
        res.update(trl_latency(srv.url, page, 5 if args.smoke else 30, args.idle_ms))
    finally:
        srv.stop()
    res["samples"] = samples
    res["machine"] = {
        "cpus": os.cpu_count(),
        "backend": "incus" if args.incus else "local",
        "idle_window_ms": args.idle_ms,
        "warm_contexts": args.warm_contexts,
        "command": "python bench/rl_bench.py " + " ".join(sys.argv[1:]),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(res, indent=2) + "\n")
    print(
        f"group reset N=8: {res['group_reset_8_s_p50']:.2f} s, ready to step "
        f"{res['group_reset_8_ready_s_p50']:.2f} s (back to back "
        f"{res['group_reset_8_back_to_back_s_p50']:.2f} s, "
        f"{res['group_reset_8_back_to_back_ready_s_p50']:.2f} s)   "
        f"fork N=8: {res['fork_8_s_p50']:.2f} s "
        f"(back to back {res['fork_8_back_to_back_s_p50']:.2f} s; "
        f"10-entry history {res['fork_8_history_10_s_p50']:.2f} s)   "
        f"TRL tool call: {res['trl_call_p50_ms']:.0f} ms "
        f"({res['trl_call_beyond_idle_p50_ms']:.0f} ms beyond the idle window)"
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
