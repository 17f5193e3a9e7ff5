"""Protocol benchmark: round-trip overhead and steps/second with 1, 10 and 50 environments.

    make bench-protocol        # or: WEBSERV_BIN=bin/webserv python bench/protocol_bench.py

Starts a local `webserv serve` and a page server on 127.0.0.1. Overhead is
the client's round-trip time minus the time the server reports it spent
(`server_ms`): encoding, the WebSocket, the client's event loop. Figures are
medians (p50) and 90th percentiles; results go to bench/results/protocol.json.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import loopback

import webserv
from webserv.launcher import LocalServer, find_binary


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * (len(xs) - 1)))]


async def overhead(client: webserv.AsyncClient, env: webserv.AsyncEnv, n: int) -> dict[str, float]:
    """Round trips of `stats` (no browser work) and of a noop step."""
    out: dict[str, float] = {}
    for name, call in (
        ("stats", lambda: client.request_timed("stats")),
        ("observe", lambda: client.request_timed("observe", env.id, observe={"axtree": False})),
        ("noop_step", lambda: client.request_timed("step", env.id, action="noop()")),
    ):
        over, total = [], []
        for _ in range(n):
            t0 = time.perf_counter()
            _, server_ms = await call()
            rtt = (time.perf_counter() - t0) * 1000
            total.append(rtt)
            over.append(rtt - server_ms)
        out[f"{name}_rtt_p50_ms"] = statistics.median(total)
        out[f"{name}_overhead_p50_ms"] = statistics.median(over)
        out[f"{name}_overhead_p90_ms"] = pct(over, 0.9)
    return out


async def throughput(client: webserv.AsyncClient, url: str, n_envs: int, steps: int) -> dict[str, float]:
    envs = [client.env(start_url=url) for _ in range(n_envs)]
    await asyncio.gather(*(e.reset() for e in envs))
    lat: list[float] = []

    async def run(e: webserv.AsyncEnv) -> None:
        for _ in range(steps):
            t0 = time.perf_counter()
            await e.step("noop()")
            lat.append((time.perf_counter() - t0) * 1000)

    t0 = time.perf_counter()
    await asyncio.gather(*(run(e) for e in envs))
    wall = time.perf_counter() - t0
    await asyncio.gather(*(e.close() for e in envs))
    return {
        "envs": n_envs,
        "steps": n_envs * steps,
        "steps_per_s": n_envs * steps / wall,
        "step_p50_ms": statistics.median(lat),
        "step_p90_ms": pct(lat, 0.9),
    }


async def main(url: str, server: str, idle_ms: int) -> dict[str, object]:
    async with webserv.AsyncClient(server) as client:
        env = client.env(start_url=url, idle_ms=idle_ms)
        await env.reset()
        over = await overhead(client, env, 200 if idle_ms <= 50 else 40)
        await env.close()
        rows = [await throughput(client, url, n, 10) for n in (1, 10, 50)]
    return {"overhead": over, "throughput": rows}


if __name__ == "__main__":
    binary = find_binary()
    if binary is None:
        sys.exit("no webserv binary: run `make build` or set WEBSERV_BIN")
    page_url = loopback.serve()
    idle = int(os.environ.get("BENCH_IDLE_MS", "500"))
    srv = LocalServer(binary, ["--idle", f"{idle}ms", "--max-envs", "64", "--max-creating", "64"])
    try:
        res = asyncio.run(main(page_url, srv.url, idle))
    finally:
        srv.stop()
    res["machine"] = {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "chromium": subprocess.run(
            ["/usr/bin/chromium", "--version"], capture_output=True, text=True
        ).stdout.strip(),
        "idle_window_ms": idle,
        "command": "make bench-protocol",
    }
    out = Path(__file__).parent / "results" / "protocol.json"
    out.write_text(json.dumps(res, indent=2) + "\n")
    o = res["overhead"]
    print(
        f"protocol overhead p50 (RTT - server time): stats {o['stats_overhead_p50_ms']:.2f} ms, "
        f"observe {o['observe_overhead_p50_ms']:.2f} ms, noop step {o['noop_step_overhead_p50_ms']:.2f} ms"
    )
    print(f"{'envs':>5} {'steps/s':>9} {'p50 ms':>8} {'p90 ms':>8}   (idle window {idle} ms)")
    for r in res["throughput"]:
        print(f"{r['envs']:>5} {r['steps_per_s']:>9.1f} {r['step_p50_ms']:>8.1f} {r['step_p90_ms']:>8.1f}")
    print(f"wrote {out}")
