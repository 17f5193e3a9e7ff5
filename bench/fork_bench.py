"""Fork benchmark: branching n environments from a mid-episode state, three ways, same run.

    WEBSERV_BIN=bin/webserv python bench/fork_bench.py [--rounds 10] [--n 8] [--smoke]

Starts a local `webserv serve` (the bundled shop and MiniWoB++). For each case (the shop with a
product page open and a size chosen; MiniWoB's click-button-sequence after ONE and enter-text
half typed), each round puts a parent at the mid-episode state and times, in alternating order:

- fork: `fork(n)` of the parent (a snapshot, n environments made, each rebuilt or replayed and
  verified; info.fork must say exact);
- resets: n new environments reset at once to the episode's start (what a trainer pays without
  branching, and without the prefix);
- replay by hand: n new environments reset at once and stepped through the prefix, as a client
  would branch without fork.

Environments are closed after each timing, untimed. Figures are client-side wall times; the
headline is the fork's p50 against the n resets' p50 (goal: below 1). Results go to
bench/results/fork.{json,md}.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402

import webserv  # noqa: E402
from webserv.launcher import LocalServer, find_binary  # noqa: E402

REPO = Path(__file__).resolve().parents[1]

# case: (make's site and task, reset seed, the prefix of actions)
CASES: dict[str, tuple[str, str, int | None, list[str]]] = {
    "shop": (
        "shopping",
        "shopping.0",
        None,
        ['goto("/product/sierra-organic-pocket-tee-tsh-1000")', 'select_option("add-to-cart.size", "S")'],
    ),
    "miniwob click-button-sequence": ("miniwob", "miniwob.click-button-sequence", 1, ['click("one")']),
    "miniwob enter-text": (
        "miniwob",
        "miniwob.enter-text",
        1,
        ['click("input-text")', 'keyboard_type("ab")'],
    ),
}


async def _start(client: webserv.AsyncClient, site: str, task: str, seed: int | None) -> webserv.AsyncEnv:
    env = client.env(site, task=task)
    await env.reset(seed=seed)
    return env


async def _timed(f: Any) -> tuple[float, list[webserv.AsyncEnv]]:
    t = time.perf_counter()
    envs = await f
    return time.perf_counter() - t, envs


async def one_round(client: webserv.AsyncClient, case: str, n: int) -> dict[str, float]:
    site, task, seed, prefix = CASES[case]
    parent = await _start(client, site, task, seed)
    out: dict[str, float] = {}
    try:
        for a in prefix:
            obs, *_ = await parent.step(a)
            assert not obs["last_action_error"], (case, a, obs["last_action_error"])

        async def forks() -> list[webserv.AsyncEnv]:
            children = await parent.fork(n)
            for c in children:
                assert c.last_info is not None and c.last_info["fork"]["exact"], c.last_info
            return children

        async def resets() -> list[webserv.AsyncEnv]:
            return list(await asyncio.gather(*(_start(client, site, task, seed) for _ in range(n))))

        async def by_hand() -> list[webserv.AsyncEnv]:
            async def one() -> webserv.AsyncEnv:
                env = await _start(client, site, task, seed)
                for a in prefix:
                    await env.step(a)
                return env

            return list(await asyncio.gather(*(one() for _ in range(n))))

        ways = [("fork", forks), ("resets", resets), ("by_hand", by_hand)]
        if int(time.time()) % 2:
            ways.reverse()  # alternate which goes first
        for name, way in ways:
            out[name], envs = await _timed(way())
            await asyncio.gather(*(e.close() for e in envs))
    finally:
        await parent.close()
    return out


async def run(server: str, rounds: int, n: int) -> dict[str, Any]:
    res: dict[str, Any] = {"n": n, "rounds": rounds, "cases": {}}
    async with webserv.AsyncClient(server) as client:
        for case in CASES:
            samples = [await one_round(client, case, n) for _ in range(rounds)]
            r: dict[str, Any] = {"samples": samples}
            for way in ("fork", "resets", "by_hand"):
                r[f"{way}_p50_s"] = statistics.median(s[way] for s in samples)
            r["fork_over_resets"] = r["fork_p50_s"] / r["resets_p50_s"]
            r["fork_over_by_hand"] = r["fork_p50_s"] / r["by_hand_p50_s"]
            res["cases"][case] = r
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--out", default=str(REPO / "bench" / "results"))
    args = ap.parse_args()
    if args.smoke:
        args.rounds, args.n = 1, 2
    binary = find_binary()
    if binary is None:
        sys.exit("no webserv binary: run `make build` or set WEBSERV_BIN")
    command = "python bench/fork_bench.py " + " ".join(sys.argv[1:])
    rep = benchlib.header("fork", command.strip(), args.smoke)
    srv = LocalServer(binary, ["--idle", "200ms", "--no-ui", "--max-envs", str(4 * args.n + 4)])
    try:
        res = asyncio.run(run(srv.url, args.rounds, args.n))
    finally:
        srv.stop()
    rep.update(res)
    rep["load_1m_at_end"] = os.getloadavg()[0]
    cases = res["cases"]
    rep["headline"] = "; ".join(
        f"{case}: fork of {args.n} {r['fork_p50_s']:.2f} s vs {args.n} resets {r['resets_p50_s']:.2f} s "
        f"(**{r['fork_over_resets']:.2f}x**)"
        for case, r in cases.items()
    )
    md = [
        f"Branching {args.n} environments from a mid-episode state, {args.rounds} rounds, alternating order, "
        f"one server (load {rep['load_1m_at_end']:.1f} at the end).",
        "",
        f"| case | fork({args.n}) p50 s | {args.n} resets p50 s | replay by hand p50 s "
        "| fork / resets | fork / by hand |",
        "|---|---|---|---|---|---|",
    ]
    for case, r in cases.items():
        md.append(
            f"| {case} | {r['fork_p50_s']:.2f} | {r['resets_p50_s']:.2f} | {r['by_hand_p50_s']:.2f} "
            f"| {r['fork_over_resets']:.2f} | {r['fork_over_by_hand']:.2f} |"
        )
    benchlib.write(Path(args.out), rep, "\n".join(md), picture=False)
    print(rep["headline"])


if __name__ == "__main__":
    main()
