"""Peer suite: the same scripted shop episode through BrowserGym and through WebServ, side by side.

    make bench-peer            # or: WEBSERV_BIN=bin/webserv python bench/peer_bench.py [--smoke]

One bundled-shop process serves both (the seed-1 catalog). Each episode
goes home, opens a hover menu, picks a category, sorts, searches, opens a
product, chooses size and colour, adds to cart (a fetch), goes back. Per
step: latency of each system's step; observation size in tokens of
BrowserGym's axtree_txt and pruned_html and of WebServ's observation (its
HTML, and its accessibility-tree text view); and whether the element the
next step needs is present, as an interactive element, in each
observation. Tokens are counted with one real tokenizer available offline:
the BPE tokenizer shipped as tokenizer.json in the `anthropic` package
0.38.0 (read with Hugging Face `tokenizers`).

BrowserGym runs with its defaults on Debian's Chromium (no browser
download): its open-ended task's slow_mo of 1000 ms (Playwright waits 1 s
after each of its operations: BrowserGym's ~1 s per action), then a 0.5 s
pre-observation delay and domcontentloaded. --smoke (one episode each, to
check that the bench runs) sets slow_mo to 0; the report says which.
Results: bench/results/peer.{json,md,png}.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import benchlib  # noqa: E402

import webserv  # noqa: E402
from webserv.launcher import find_binary  # noqa: E402

# (kind, webserv id, CSS selector for BrowserGym's bid, argument)
SCRIPT: list[tuple[str, str, str, str]] = [
    ("goto", "", "", "/"),
    ("hover", "categories.clothing", "nav[aria-label=Categories] li.menu >> nth=0", ""),
    ("click", "categories.t-shirts", "nav[aria-label=Categories] a[href='/category/t-shirts']", ""),
    ("select", "filter.sort-by", "select[name=sort]", "Price: low to high"),
    ("click", "filter.apply", "form[aria-label=Filter] button", ""),
    ("fill", "search.search-products", "input[name=q]", "Sierra Organic Pocket Tee"),
    ("press", "search.search-products", "input[name=q]", "Enter"),
    ("click", "sierra-organic-pocket-tee", "main a[href^='/product/sierra-organic-pocket-tee']", ""),
    ("select", "add-to-cart.size", "select[name=size]", "M"),
    ("select", "add-to-cart.colour", "select[name=colour]", "Navy"),
    ("click", "add-to-cart.add-to-cart", "form[data-add-to-cart] button[type=submit]", ""),
    ("go_back", "", "", ""),
    ("noop", "", "", ""),
]
# After this step the page must show the fetch's result (the cart message).
CHECK_STEP, CHECK_TEXT = 10, "You added"


def tokenizer() -> Any:
    from importlib.resources import files

    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(files("anthropic") / "tokenizer.json"))


def action(kind: str, target: str, arg: str, base: str) -> str:
    q = repr
    if kind == "goto":
        return f"goto({q(base + arg)})"
    if kind in ("go_back", "noop"):
        return f"{kind}()"
    if kind in ("fill", "select", "press"):
        name = {"fill": "fill", "select": "select_option", "press": "press"}[kind]
        return f"{name}({q(target)}, {q(arg)})"
    return f"{kind}({q(target)})"


def start_shop(binary: str, work: Path) -> tuple[subprocess.Popen[bytes], str]:
    """Starts the bundled shop on a port the kernel picks; returns it and its base URL.

    The shop binds port 0 itself and prints where it listens, so no other
    process can take the port between choosing and binding it.
    """
    data = work / "shop-data"
    subprocess.run([binary, "shop", "generate", "--data", str(data)], check=True, capture_output=True)
    cmd = [binary, "shop", "serve", "--data", str(data), "--port", "0"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    line = proc.stdout.readline().decode()  # "shop serving DIR on http://127.0.0.1:PORT"
    if " on http://" not in line:
        proc.kill()
        raise RuntimeError(f"the shop did not start: {line!r}")
    # Nobody reads the shop's stdout further; it prints nothing more.
    return proc, line.rsplit(" on ", 1)[1].strip()


class LostStep(RuntimeError):
    """A BrowserGym episode whose page is not where the script expects it."""


def browsergym_episodes(
    base: str, tok: Any, slow_mo: int | None, tries: int = 3
) -> tuple[list[dict[str, Any]], int]:
    """One complete BrowserGym episode, and how many attempts were lost first.

    BrowserGym returns from a step without waiting for the page the step
    started, so on a loaded machine an action can land on the page before
    and the script's next element never appears. Such an attempt is
    discarded and counted (the report's ``browsergym_lost_episodes``).
    """
    for lost in range(tries):
        try:
            return browsergym_episode(base, tok, slow_mo), lost
        except LostStep as e:
            print(f"BrowserGym episode lost: {e}", file=sys.stderr)
            if lost == tries - 1:
                raise
    raise AssertionError("unreachable")


def browsergym_episode(base: str, tok: Any, slow_mo: int | None) -> list[dict[str, Any]]:
    """slow_mo None: the task's own (1000 ms)."""
    from browsergym.core.env import BrowserEnv
    from browsergym.core.task import OpenEndedTask
    from browsergym.utils.obs import flatten_axtree_to_str, flatten_dom_to_str, prune_html
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    env = BrowserEnv(
        task_entrypoint=OpenEndedTask,
        task_kwargs={"start_url": base + "/"},
        headless=True,
        pw_chromium_kwargs={"executable_path": benchlib.chromium_executable()},
        **({} if slow_mo is None else {"slow_mo": slow_mo}),
    )
    rows = []
    try:
        obs, _ = env.reset()
        for i, (kind, _, css, arg) in enumerate(SCRIPT):
            axtree = flatten_axtree_to_str(obs["axtree_object"])
            pruned = prune_html(flatten_dom_to_str(obs["dom_object"]))
            bid = ""
            if css:
                # BrowserGym's step does not wait for the next page; on a
                # loaded machine it can take longer than Playwright's 5 s,
                # and an action taken on the page before can be lost.
                page = env.unwrapped.page
                try:
                    bid = page.locator(css).first.get_attribute("bid", timeout=30_000) or ""
                except PlaywrightTimeout as e:
                    raise LostStep(f"step {i} ({kind}): no {css} on {page.url} after 30 s") from e
            present_ax = bool(bid) and f"[{bid}]" in axtree
            present_html = bool(bid) and f'bid="{bid}"' in pruned
            act = action(kind, bid, arg, base)
            t0 = time.perf_counter()
            obs, _, _, _, info = env.step(act)
            ms = (time.perf_counter() - t0) * 1000
            err = obs.get("last_action_error", "")
            after = flatten_axtree_to_str(obs["axtree_object"]) if i == CHECK_STEP else ""
            rows.append(
                {
                    "step": i,
                    "kind": kind,
                    "action": act,
                    "ms": ms,
                    "error": err,
                    # BrowserGym's own split of its step.
                    "action_ms": span(info, "action_exec"),
                    "wait_ms": span(info, "wait_for_page_loading"),
                    "observe_ms": span(info, "get_observation"),
                    "axtree_tokens_before": len(tok.encode(axtree).ids),
                    "pruned_html_tokens_before": len(tok.encode(pruned).ids),
                    "target_in_axtree": present_ax if css else None,
                    "target_in_pruned_html": present_html if css else None,
                    "content_ok": (CHECK_TEXT in after) if i == CHECK_STEP else None,
                }
            )
    finally:
        env.close()
    return rows


async def webserv_episode(client: webserv.AsyncClient, base: str, tok: Any) -> list[dict[str, Any]]:
    rows = []
    async with client.env(start_url=base + "/") as env:  # the accessibility tree is on by default
        obs, _ = await env.reset()
        for i, (kind, target, css, arg) in enumerate(SCRIPT):
            ids = set(obs["clickable"]) | set(obs["hoverable"])
            ids |= {f["id"] for f in obs["inputs"]} | {s["id"] for s in obs["selects"]}
            act = action(kind, target, arg, base)
            html, axtree = obs["html"], obs["axtree_txt"]
            t0 = time.perf_counter()
            obs, _, _, _, info = await env.step(act)
            ms = (time.perf_counter() - t0) * 1000
            rows.append(
                {
                    "step": i,
                    "kind": kind,
                    "action": act,
                    "ms": ms,
                    "error": obs["last_action_error"],
                    "action_ms": info["action_ms"],
                    "wait_ms": info["settle_ms"],
                    "observe_ms": info["extract_ms"],
                    "html_tokens_before": len(tok.encode(html).ids),
                    "axtree_tokens_before": len(tok.encode(axtree).ids),
                    "target_present": (target in ids) if css else None,
                    "content_ok": (CHECK_TEXT in obs["html"]) if i == CHECK_STEP else None,
                }
            )
    return rows


def span(info: dict[str, Any], name: str) -> float:
    return (info.get(f"{name}_stop", 0.0) - info.get(f"{name}_start", 0.0)) * 1000


def summarize(rows: list[dict[str, Any]], keys: list[str]) -> dict[str, Any]:
    ms = [r["ms"] for r in rows]
    out: dict[str, Any] = {"step_ms_p50": statistics.median(ms), "step_ms_mean": statistics.mean(ms)}
    for part in ("action_ms", "wait_ms", "observe_ms"):
        out[part + "_p50"] = statistics.median(r[part] for r in rows)
    for k in keys:
        out[k + "_median"] = statistics.median(r[k] for r in rows)
    out["errors"] = sum(1 for r in rows if r["error"])
    return out


async def main() -> None:
    benchlib.use_debian_chromium()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="one episode each")
    ap.add_argument("--episodes", type=int, default=5)
    ap.add_argument("--out", default="bench/results")
    args = ap.parse_args()
    episodes = 1 if args.smoke else args.episodes
    slow_mo = 0 if args.smoke else None
    binary = find_binary()
    if binary is None:
        sys.exit("no webserv binary: run make build or set WEBSERV_BIN")
    command = ("python bench/peer_bench.py " + " ".join(sys.argv[1:])).strip()
    rep = benchlib.header("peer", command, args.smoke)
    tok = tokenizer()
    from tqdm import tqdm

    bg_rows: list[dict[str, Any]] = []
    ws_rows: list[dict[str, Any]] = []
    bg_lost = 0
    with tempfile.TemporaryDirectory() as tmp:
        shop, base = start_shop(binary, Path(tmp))
        try:
            async with webserv.AsyncClient() as client:
                for _ in tqdm(range(episodes), desc="peer episodes", file=sys.stderr):
                    # Alternate so neither system always runs on a warmer machine.
                    rows, lost = await asyncio.to_thread(browsergym_episodes, base, tok, slow_mo)
                    bg_rows += rows
                    bg_lost += lost
                    ws_rows += await webserv_episode(client, base, tok)
        finally:
            shop.terminate()
            shop.wait()
    bg = summarize(bg_rows, ["axtree_tokens_before", "pruned_html_tokens_before"])
    ws = summarize(ws_rows, ["html_tokens_before", "axtree_tokens_before"])
    bg["targets_in_axtree"] = _share(bg_rows, "target_in_axtree")
    bg["targets_in_pruned_html"] = _share(bg_rows, "target_in_pruned_html")
    ws["targets_present"] = _share(ws_rows, "target_present")
    bg["fetch_result_observed"] = _share(bg_rows, "content_ok")
    ws["fetch_result_observed"] = _share(ws_rows, "content_ok")
    ht, ax, px = (
        "html_tokens_before_median",
        "axtree_tokens_before_median",
        "pruned_html_tokens_before_median",
    )
    ratios = {
        "step_latency_webserv_over_browsergym": ws["step_ms_p50"] / bg["step_ms_p50"],
        "tokens_webserv_html_over_bg_axtree": ws[ht] / bg[ax],
        "tokens_webserv_html_over_bg_pruned_html": ws[ht] / bg[px],
    }
    rep.update(
        tokenizer="anthropic 0.38.0 tokenizer.json (BPE, read with HF tokenizers)",
        episodes=episodes,
        browsergym_lost_episodes=bg_lost,
        browsergym_slow_mo_ms=1000 if slow_mo is None else slow_mo,
        browsergym=bg,
        webserv=ws,
        ratios=ratios,
        steps={"browsergym": bg_rows, "webserv": ws_rows},
    )
    r = list(ratios.values())
    rep["headline"] = (
        f"Median step: WebServ {ws['step_ms_p50']:.0f} ms vs BrowserGym {bg['step_ms_p50']:.0f} ms "
        f"({r[0]:.2f}x); "
        f"observation tokens: WebServ {ws[ht]:.0f} vs BrowserGym axtree {bg[ax]:.0f} ({r[1]:.2f}x) "
        f"and pruned HTML {bg[px]:.0f} ({r[2]:.2f}x); targets present: WebServ "
        f"{pc(ws['targets_present'])}, BrowserGym axtree {pc(bg['targets_in_axtree'])}."
    )
    md = [
        "| | WebServ | BrowserGym |",
        "|---|---|---|",
        f"| step latency p50 / mean (ms) | {ws['step_ms_p50']:.0f} / {ws['step_ms_mean']:.0f} "
        f"| {bg['step_ms_p50']:.0f} / {bg['step_ms_mean']:.0f} |",
        f"| of which action / wait / observation (p50 ms) | {split(ws)} | {split(bg)} |",
        f"| observation tokens (median) | HTML {ws[ht]:.0f}; axtree view {ws[ax]:.0f} "
        f"| axtree_txt {bg[ax]:.0f}; pruned_html {bg[px]:.0f} |",
        f"| next step's target present and interactive | {pc(ws['targets_present'])} "
        f"| axtree {pc(bg['targets_in_axtree'])}, pruned_html {pc(bg['targets_in_pruned_html'])} |",
        f"| add-to-cart (fetch) result in the next observation | {pc(ws['fetch_result_observed'])} "
        f"| {pc(bg['fetch_result_observed'])} |",
        f"| action errors | {ws['errors']} | {bg['errors']} |",
        "",
        f"{episodes} episodes of {len(SCRIPT)} steps each; tokens counted with {rep['tokenizer']}.",
    ]
    out = Path(args.out)
    benchlib.write(out, rep, "\n".join(md))
    plot(out, bg_rows, ws_rows)
    print(rep["headline"])


def split(x: dict[str, Any]) -> str:
    return f"{x['action_ms_p50']:.0f} / {x['wait_ms_p50']:.0f} / {x['observe_ms_p50']:.0f}"


def pc(x: float) -> str:
    return f"{x * 100:.0f}%"


def _share(rows: list[dict[str, Any]], key: str) -> float:
    xs = [r[key] for r in rows if r[key] is not None]
    return sum(xs) / len(xs) if xs else 0.0


def plot(out: Path, bg: list[dict[str, Any]], ws: list[dict[str, Any]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kinds = [f"{i}:{k[0]}" for i, k in enumerate(SCRIPT)]
    n = len(SCRIPT)

    def per_step(rows: list[dict[str, Any]], key: str) -> list[float]:
        return [statistics.median(r[key] for r in rows if r["step"] == i) for i in range(n)]

    fig, (a, b) = plt.subplots(1, 2, figsize=(14, 4.5))
    a.plot(range(n), per_step(ws, "ms"), "o-", label="WebServ")
    a.plot(range(n), per_step(bg, "ms"), "s-", label="BrowserGym")
    a.set_title("step latency (ms, median)")
    b.plot(range(n), per_step(ws, "html_tokens_before"), "o-", label="WebServ HTML")
    b.plot(range(n), per_step(ws, "axtree_tokens_before"), "^-", label="WebServ axtree view")
    b.plot(range(n), per_step(bg, "axtree_tokens_before"), "s-", label="BrowserGym axtree_txt")
    b.plot(range(n), per_step(bg, "pruned_html_tokens_before"), "d-", label="BrowserGym pruned_html")
    b.set_title("observation tokens (median)")
    b.set_yscale("log")
    for ax in (a, b):
        ax.set_xticks(range(n), kinds, rotation=45, ha="right")
        ax.legend()
    fig.tight_layout()
    fig.savefig(out / "peer.png", dpi=110)


if __name__ == "__main__":
    os.environ.setdefault("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
    asyncio.run(main())
