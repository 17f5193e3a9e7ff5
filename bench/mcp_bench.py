"""MCP benchmark: per-step time of the MCP path against the WebSocket path, same run, same actions.

    make bench-mcp
    WEBSERV_BIN=bin/webserv python bench/mcp_bench.py [--rounds 20] [--idle-ms 500] [--smoke]

Starts a local `webserv serve` with the bundled shop. Each round replays the
oracle of task shopping.0 (fill, click, click, stop) once through the
WebSocket protocol (the webserv client, observing the accessibility tree) and
once through /v1/mcp (the official MCP Python SDK's client, tools fill, click,
stop), in alternating order, each in its own environment; resets are not
timed. It also times a bare observation (no action, no settle) both ways: the
front ends' own cost with these clients. Figures are client-side medians
(p50) and 90th percentiles; results go to bench/results/mcp.{json,md,png}.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402
from mcp import Client  # noqa: E402

import webserv  # noqa: E402
from webserv.launcher import LocalServer, find_binary  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
TOOL_ARGS = {"fill": ["bid", "value"], "click": ["bid"], "stop": ["answer"]}


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * (len(xs) - 1)))]


def oracle() -> list[str]:
    tasks = json.loads((REPO / "sites/shop/tasks/shopping.json").read_text())
    tasks = tasks["tasks"] if isinstance(tasks, dict) else tasks
    return next(t for t in tasks if t.get("task_id", t.get("id")) == 0)["oracle"]


def tool_call(action: str) -> tuple[str, dict[str, Any]]:
    call = ast.parse(action, mode="eval").body
    assert isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
    names = TOOL_ARGS[call.func.id]
    return call.func.id, {k: ast.literal_eval(v) for k, v in zip(names, call.args, strict=True)}


async def run(server: str, rounds: int) -> dict[str, Any]:
    actions = oracle()
    mcp_url = server.replace("ws://", "http://", 1).removesuffix("/v1/ws") + "/v1/mcp"
    steps: dict[str, list[float]] = {"ws": [], "mcp": []}
    observe: dict[str, list[float]] = {"ws": [], "mcp": []}
    async with webserv.AsyncClient(server) as client, Client(mcp_url) as mcp:
        env = client.env("shopping", observe={"axtree": True})

        async def ws_round() -> None:
            await env.reset(options={"task_id": "shopping.0"})
            for a in actions:
                t0 = time.perf_counter()
                _, reward, *_ = await env.step(a)
                steps["ws"].append((time.perf_counter() - t0) * 1000)
            assert reward == 1, reward
            for _ in range(5):
                t0 = time.perf_counter()
                await client.request_timed("observe", env.id, observe={"axtree": True})
                observe["ws"].append((time.perf_counter() - t0) * 1000)

        async def mcp_round() -> None:
            await mcp.call_tool("reset", {"task": "shopping.0"})
            res = None
            for a in actions:
                name, args = tool_call(a)
                t0 = time.perf_counter()
                res = await mcp.call_tool(name, args)
                steps["mcp"].append((time.perf_counter() - t0) * 1000)
            assert res is not None and res.structured_content["reward"] == 1, res
            for _ in range(5):
                t0 = time.perf_counter()
                await mcp.call_tool("observe", {})
                observe["mcp"].append((time.perf_counter() - t0) * 1000)

        await ws_round()  # warm both paths (the shop's first queries, the SDK's first call)
        await mcp_round()
        steps, observe = {"ws": [], "mcp": []}, {"ws": [], "mcp": []}
        for i in range(rounds):
            first, second = (ws_round, mcp_round) if i % 2 == 0 else (mcp_round, ws_round)
            await first()
            await second()
        await env.close()

    def summary(xs: dict[str, list[float]]) -> dict[str, float]:
        out: dict[str, float] = {}
        for k, v in xs.items():
            out[f"{k}_p50_ms"] = statistics.median(v)
            out[f"{k}_p90_ms"] = pct(v, 0.9)
            out[f"{k}_n"] = len(v)
        out["mcp_over_ws_p50"] = out["mcp_p50_ms"] / out["ws_p50_ms"]
        return out

    return {
        "oracle_step": summary(steps),
        "observe": summary(observe),
        "samples": {"oracle_step": steps, "observe": observe},
        "actions": actions,
        "rounds": rounds,
    }


def plot(res: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.5))
    for ax, key, title in zip(
        axes, ("oracle_step", "observe"), ("oracle step", "observe (no action)"), strict=True
    ):
        ax.boxplot([res["samples"][key]["ws"], res["samples"][key]["mcp"]])
        ax.set_xticks([1, 2], ["WebSocket", "MCP"])
        ax.set_ylabel("client round trip (ms)")
        ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--idle-ms", type=int, help="the idle window (default 500; --smoke: 100)")
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--out", default=str(REPO / "bench" / "results"))
    args = ap.parse_args()
    if args.smoke:
        args.rounds = 1
    if args.idle_ms is None:
        args.idle_ms = 100 if args.smoke else 500
    binary = find_binary()
    if binary is None:
        sys.exit("no webserv binary: run `make build` or set WEBSERV_BIN")
    command = "python bench/mcp_bench.py " + " ".join(sys.argv[1:])
    rep = benchlib.header("mcp", command.strip(), args.smoke)
    srv = LocalServer(binary, ["--idle", f"{args.idle_ms}ms", "--no-ui"])
    try:
        res = asyncio.run(run(srv.url, args.rounds))
    finally:
        srv.stop()
    rep.update(res)
    rep["load_1m_at_end"] = os.getloadavg()[0]
    s, o = res["oracle_step"], res["observe"]
    rep["headline"] = (
        f"oracle step p50 over MCP {s['mcp_p50_ms']:.1f} ms vs {s['ws_p50_ms']:.1f} ms over the WebSocket: "
        f"**{s['mcp_over_ws_p50']:.3f}x** ({s['mcp_n']} steps each, idle window {args.idle_ms} ms, "
        f"load {rep['load_1m_at_end']:.1f}); a bare observe {o['mcp_p50_ms']:.1f} vs {o['ws_p50_ms']:.1f} ms."
    )
    md = [
        f"shopping.0's oracle ({len(res['actions'])} actions) replayed {args.rounds} times each way, "
        "alternating, one server.",
        "",
        "| | WebSocket p50 ms | MCP p50 ms | MCP / WebSocket (p50) | WebSocket p90 ms | MCP p90 ms |",
        "|---|---|---|---|---|---|",
    ]
    for key, name in (("oracle_step", "oracle step"), ("observe", "observe (no action)")):
        r = res[key]
        md.append(
            f"| {name} | {r['ws_p50_ms']:.1f} | {r['mcp_p50_ms']:.1f} | {r['mcp_over_ws_p50']:.3f} "
            f"| {r['ws_p90_ms']:.1f} | {r['mcp_p90_ms']:.1f} |"
        )
    plot(rep, Path(args.out) / "mcp.png")
    benchlib.write(Path(args.out), rep, "\n".join(md))
    print(rep["headline"])


if __name__ == "__main__":
    main()
