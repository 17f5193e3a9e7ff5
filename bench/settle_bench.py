"""Settle suite: does each step's observation hold the page's final content, and how long does the step take?

    make bench-settle          # or: WEBSERV_BIN=bin/webserv python bench/settle_bench.py [--smoke]

Ten single-page-app cases (bench/spa/pages.py) where the final content is
known. For each, the same click runs under three strategies:

- webserv: a WebServ step (returns once the page's network has been quiet
  for the idle window, 500 ms);
- browsergym: BrowserGym's post-step wait (sleep 0.5 s, then wait for
  domcontentloaded on the page), through Playwright;
- networkidle: Playwright's wait_for_load_state("networkidle") (capped at 10 s).

Reported per strategy and case: the fraction of steps whose observation
contains the final content, and the mean step latency.
Results: bench/results/settle.{json,md,png}.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import benchlib  # noqa: E402
from spa import pages  # noqa: E402

import webserv  # noqa: E402

STRATEGIES = ("webserv", "browsergym", "networkidle")


async def page_text(context: Any) -> str:
    """The active (newest) page's text with every frame's, as an observation would hold it."""
    page = context.pages[-1]
    parts = []
    for frame in page.frames:
        try:
            parts.append(await frame.evaluate("document.body ? document.body.innerText : ''"))
        except Exception:  # noqa: BLE001 (a frame that went away holds nothing)
            pass
    return "\n".join(parts)


async def playwright_step(browser: Any, url: str, case: str, strategy: str) -> tuple[bool, float]:
    context = await browser.new_context()
    try:
        page = await context.new_page()
        await page.goto(url, wait_until="load")
        t0 = time.perf_counter()
        await page.click("#go")
        if strategy == "browsergym":
            await asyncio.sleep(0.5)
            active = context.pages[-1]
            await active.wait_for_load_state("domcontentloaded")
            for frame in active.frames:
                try:
                    await frame.wait_for_load_state("domcontentloaded", timeout=10000)
                except Exception:  # noqa: BLE001
                    pass
        else:
            await asyncio.sleep(0.05)  # let a popup register
            try:
                await context.pages[-1].wait_for_load_state("networkidle", timeout=10000)
            except Exception:  # noqa: BLE001 (never idle: observe anyway, as a user would)
                pass
        text = await page_text(context)
        return f"DONE-{case}" in text, (time.perf_counter() - t0) * 1000
    finally:
        await context.close()


async def webserv_step(client: webserv.AsyncClient, url: str, case: str) -> tuple[bool, float]:
    async with client.env(start_url=url, idle_ms=500) as env:
        await env.reset()
        t0 = time.perf_counter()
        obs, _, _, _, _ = await env.step('click("go")')
        return f"DONE-{case}" in obs["html"], (time.perf_counter() - t0) * 1000


async def main() -> None:
    benchlib.use_debian_chromium()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="one repetition of three cases")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", default="bench/results")
    args = ap.parse_args()
    cases = list(pages.CASES)
    reps = args.reps
    if args.smoke:
        cases, reps = ["delayed_fetch", "new_tab", "eventsource"], 1
    command = "python bench/settle_bench.py " + " ".join(sys.argv[1:])
    rep = benchlib.header("settle", command.strip(), args.smoke)
    base, srv = pages.serve()
    from playwright.async_api import async_playwright
    from tqdm import tqdm

    results: dict[str, dict[str, dict[str, Any]]] = {s: {} for s in STRATEGIES}
    bar = tqdm(total=len(cases) * reps * len(STRATEGIES), desc="settle", file=sys.stderr)
    async with async_playwright() as pw, webserv.AsyncClient() as client:
        browser = await benchlib.launch_playwright(pw)
        for case in cases:
            url = f"{base}/{case}"
            for strategy in STRATEGIES:
                ok, lat = [], []
                for _ in range(reps):
                    if strategy == "webserv":
                        good, ms = await webserv_step(client, url, case)
                    else:
                        good, ms = await playwright_step(browser, url, case, strategy)
                    ok.append(good)
                    lat.append(ms)
                    bar.update()
                results[strategy][case] = {
                    "correct": sum(ok) / len(ok),
                    "mean_ms": statistics.mean(lat),
                    "n": len(ok),
                }
        await browser.close()
    bar.close()
    srv.shutdown()
    summary = {}
    for s in STRATEGIES:
        rows = results[s].values()
        summary[s] = {
            "correct": statistics.mean(r["correct"] for r in rows),
            "mean_ms": statistics.mean(r["mean_ms"] for r in rows),
        }
    rep.update(results=results, summary=summary, cases=cases, reps=reps)

    def cell(r: dict[str, Any], bold: str = "") -> str:
        return f"{bold}{r['correct'] * 100:.0f}%{bold} | {bold}{r['mean_ms']:.0f}{bold}"

    rep["headline"] = "Observations holding the final content: " + ", ".join(
        f"{s} {summary[s]['correct'] * 100:.0f}% (mean step {summary[s]['mean_ms']:.0f} ms)"
        for s in STRATEGIES
    )
    md = ["| case | " + " | ".join(f"{s} correct | {s} ms" for s in STRATEGIES) + " |"]
    md.append("|---|" + "---|---|" * len(STRATEGIES))
    for case in cases:
        md.append(f"| {case} | " + " | ".join(cell(results[s][case]) for s in STRATEGIES) + " |")
    md.append("| **all** | " + " | ".join(cell(summary[s], "**") for s in STRATEGIES) + " |")
    md.append(
        f"\n{reps} repetitions per case and strategy; latency from the click until the observation is ready."
    )
    out = Path(args.out)
    benchlib.write(out, rep, "\n".join(md))
    plot(out, cases, results)
    print(rep["headline"])


def plot(out: Path, cases: list[str], results: dict[str, dict[str, dict[str, Any]]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(14, 4.5))
    w = 0.27
    for i, s in enumerate(STRATEGIES):
        xs = [k + (i - 1) * w for k in range(len(cases))]
        a.bar(xs, [results[s][c]["correct"] * 100 for c in cases], w, label=s)
        b.bar(xs, [results[s][c]["mean_ms"] for c in cases], w, label=s)
    for ax, title in ((a, "observation correct (%)"), (b, "mean step latency (ms)")):
        ax.set_xticks(range(len(cases)), cases, rotation=35, ha="right")
        ax.set_title(title)
        ax.legend()
    fig.tight_layout()
    fig.savefig(out / "settle.png", dpi=110)


if __name__ == "__main__":
    asyncio.run(main())
