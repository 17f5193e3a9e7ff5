"""Token budget cost: an observation with a budget (counted and pruned) against without, same run.

    WEBSERV_BIN=bin/webserv python bench/budget_bench.py [--reps 8] [--budget 4096] [--view html] [--smoke]

One ``webserv serve`` (the bundled shop) and a page server of generated pages far over any
budget (a 5,000-row table, a 2 MB article, 3,000 links). The tokenizer is a large model's: the
65,000-token byte-level BPE the ``anthropic`` package ships (the bench extra installs it).

For N = 1 and N = 32 environments on each page, every environment observes its page in turn
without a budget (``axtree``) and with one (``max_tokens``, ``tokenizer``), in a random order
each repetition; the server's time for the observe op (its own clock, so the network is out) is
recorded. Reported per page and N: the median ms of each arm and their difference (the cost of
counting and pruning), and the sizes before and after: characters and tokens of the text view
(the tokens as Python's tokenizers package counts them). Results in bench/results/budget.json
and .md. ``--view html`` budgets the HTML view instead (``view: "html"``; without a budget,
the observation's html): bench/results/budget-html.*. The Go side alone: ``go test -run X
-bench Budget ./envcore/budget``.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import anthropic  # noqa: E402
import benchlib  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402

import webserv  # noqa: E402
from webserv.launcher import LocalServer, find_binary  # noqa: E402
from webserv.testing import PageServer  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TOKENIZER = Path(anthropic.__file__).parent / "tokenizer.json"
SHOP = ["/", "/search?q=tee", "/product/sierra-organic-pocket-tee-tsh-1000"]


def generated() -> dict[str, str]:
    rows = "".join(
        f'<tr><td>Item {i}</td><td><a href="/item?i={i}">Open {i}</a></td></tr>' for i in range(5000)
    )
    para = "Shoppers compare prices and read reviews before they buy. " * 17
    article = "".join((f"<h2>Part {i}</h2>" if i % 100 == 0 else "") + f"<p>{para}</p>" for i in range(2000))
    links = "".join(f'<li><a href="/l?i={i}">Link number {i}</a></li>' for i in range(3000))
    return {
        "/table": f"<!doctype html><title>Table</title><h1>Inventory</h1><table>{rows}</table>",
        "/article": f"<!doctype html><title>Article</title><h1>Article</h1>{article}",
        "/links": f"<!doctype html><title>Links</title><h1>Directory</h1><ul>{links}</ul>",
    }


def serve(pages: dict[str, str]) -> PageServer:
    return PageServer(lambda path, _: pages.get(path, "<!doctype html><title>Other</title>"))


async def one_page(
    c: webserv.AsyncClient, site: str, url: str, n: int, reps: int, budget: int, seed: int, view: str
) -> dict:
    args: dict[str, Any] = {"site": site, "observe": {"axtree": True}}
    args.update({"start_url": url} if site == "open" else {"task": "shopping.0"})
    envs = [r["env"] for r in await asyncio.gather(*(c.request("make", **args) for _ in range(n)))]
    if site != "open":
        await asyncio.gather(*(c.request("step", e, action=f'goto("{url}")') for e in envs))
    arms = {
        "off": {"axtree": view == "axtree"},
        "on": {"max_tokens": budget, "tokenizer": str(TOKENIZER), "view": view},
    }
    for observe in arms.values():  # warm up: the tokenizer is loaded once, on its first use
        await c.request("observe", envs[0], observe=observe)
    ms: dict[str, list[float]] = {"off": [], "on": []}
    texts: dict[str, str] = {}
    rng = random.Random(seed)
    for _ in range(reps):
        order = list(arms)
        rng.shuffle(order)
        for arm in order:
            done = await asyncio.gather(*(c.request_timed("observe", e, observe=arms[arm]) for e in envs))
            ms[arm] += [t for _, t in done]
            texts[arm] = done[0][0]["obs"][view]
    await asyncio.gather(*(c.request("close", e) for e in envs))
    tok = Tokenizer.from_file(str(TOKENIZER))
    size = {arm: (len(t), len(tok.encode(t, add_special_tokens=False).ids)) for arm, t in texts.items()}
    off, on = statistics.median(ms["off"]), statistics.median(ms["on"])
    return {
        "page": url if site == "open" else f"shop {url}",
        "n": n,
        "off_ms": off,
        "on_ms": on,
        "cost_ms": on - off,
        "chars_before": size["off"][0],
        "tokens_before": size["off"][1],
        "chars_after": size["on"][0],
        "tokens_after": size["on"][1],
        "samples": ms,
    }


async def run(
    url: str, pages_url: str, ns: list[int], reps: int, budget: int, seed: int, smoke: bool, view: str
) -> list[dict]:
    targets = [("shopping", p) for p in SHOP] + [
        ("open", pages_url + p) for p in ("/table", "/article", "/links")
    ]
    if smoke:
        targets = [targets[0], targets[3]]
    out = []
    async with webserv.AsyncClient(url) as c:
        for n in ns:
            for site, page in targets:
                out.append(await one_page(c, site, page, n, reps, budget, seed, view))
                print(out[-1]["page"], n, f"{out[-1]['off_ms']:.1f} -> {out[-1]['on_ms']:.1f} ms", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=8)
    ap.add_argument("--budget", type=int, default=4096)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--view", choices=("axtree", "html"), default="axtree")
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    args = ap.parse_args()
    ns = [1, 32]
    if args.smoke:
        args.reps, ns = 1, [1]
    binary = find_binary()
    if binary is None:
        sys.exit("no webserv binary: run make build or set WEBSERV_BIN")
    command = "python bench/budget_bench.py " + " ".join(sys.argv[1:])
    name = "budget" if args.view == "axtree" else "budget-html"
    rep = benchlib.header(name, command.strip(), args.smoke)
    pages = serve(generated())
    srv = LocalServer(binary, ["--idle", "200ms", "--max-envs", "40"])
    try:
        rows = asyncio.run(
            run(
                srv.url,
                pages.url,
                ns,
                args.reps,
                args.budget,
                args.seed,
                args.smoke,
                args.view,
            )
        )
    finally:
        srv.stop()
        pages.close()
    worst = max(rows, key=lambda r: r["cost_ms"])
    rep.update(
        rows=rows,
        budget=args.budget,
        view=args.view,
        tokenizer="anthropic 0.38.0 tokenizer.json",
        headline=f"counting and pruning to {args.budget} tokens costs at most {worst['cost_ms']:.1f} ms an "
        f"observation ({worst['page']}, N={worst['n']}); medians of the server's observe time.",
    )
    md = [
        "| page | N | no budget ms | budget ms | cost ms | chars before | tokens before | chars after "
        "| tokens after |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        md.append(
            f"| {r['page']} | {r['n']} | {r['off_ms']:.1f} | {r['on_ms']:.1f} | {r['cost_ms']:.1f} | "
            f"{r['chars_before']} | {r['tokens_before']} | {r['chars_after']} | {r['tokens_after']} |"
        )
    plot(rows, args.budget, Path(args.out) / f"{name}.png")
    benchlib.write(Path(args.out), rep, "\n".join(md))
    print(rep["headline"])


def plot(rows: list[dict[str, Any]], budget: int, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(7, 3.5))
    xs = range(len(rows))
    ax.bar([x - 0.2 for x in xs], [r["off_ms"] for r in rows], width=0.4, label="no budget")
    ax.bar([x + 0.2 for x in xs], [r["on_ms"] for r in rows], width=0.4, label=f"{budget} tokens")
    names = [f"{r['page'].rsplit('/', 1)[-1] or 'shop'} N={r['n']}" for r in rows]
    ax.set_xticks(list(xs), names, rotation=30)
    ax.set_ylabel("observe, server ms (median)")
    ax.set_title("Token budget's cost per observation")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
