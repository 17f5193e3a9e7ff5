"""The same AgentLab agent on the same MiniWoB++ tasks and seeds, through BrowserGym and through
WebServ (docs/agentlab.md, "Side by side").

``side_by_side(agent_args, tasks, seeds, out_dir)`` runs each task and seed twice with AgentLab's
own loop (``ExpArgs``): once on BrowserGym's MiniWoB environment (``browsergym/miniwob.<task>``:
Playwright's Chromium opening the ``miniwob`` package's pages), once on WebServ's
(``webserv/miniwob.<task>`` with ``browsergym=True``). Each pair is read back from AgentLab's
own result files: the goal, the episode's reward, and the page text of the agent's first
prompt (what GenericAgent shows its model: its accessibility tree and its HTML sections, each
compared on its own), with each side's element ids renamed in the order they first appear
(BrowserGym numbers elements, WebServ names them) and the page's URL, which differs by where
the pages are served, left out.

WebServ's ``dom_object`` is marked as BrowserGym marks a page (a ``bid`` on every standard
element, derived ``_N`` ids where WebServ names none; ``value`` and ``checked`` written into
attributes), so the HTML sections agree too (``Pair.html_same``). What can still differ is the
accessibility tree of pages with ``<label>``s: BrowserGym's ids in every element's ARIA
description make Chromium keep nodes (``LabelText``) its tree of the untouched page leaves out.

Playwright runs the Chromium it downloads, unless ``chromium=`` names one installed (such as
``/usr/bin/chromium``): then a directory laid out as Playwright expects its download, holding a
link to that Chromium, is made under ``out_dir`` and named in ``PLAYWRIGHT_BROWSERS_PATH``
(BrowserGym launches a second browser for its chat window without any launch option, so
Playwright's own lookup must find it). Nothing is downloaded.
"""

from __future__ import annotations

import copy
import gzip
import json
import multiprocessing
import os
import pickle
import re
from collections.abc import Generator, Iterable
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import miniwob
from .agentlab import WebServEnvArgs, benchmark


@dataclass
class Side:
    """One episode of a pair, as AgentLab's result files record it."""

    goal: str
    reward: float
    #: The prompt's accessibility tree and HTML sections (``page_text``).
    axtree: str
    html: str
    exp_dir: Path
    err_msg: str | None


@dataclass
class Pair:
    """One task and seed through BrowserGym (``browsergym``) and through WebServ (``webserv``)."""

    task: str
    seed: int
    browsergym: Side
    webserv: Side

    @property
    def same(self) -> bool:
        """The same goal, reward and accessibility tree text (up to ids and the URL), neither
        episode failing."""
        b, w = self.browsergym, self.webserv
        return (
            b.err_msg is None
            and w.err_msg is None
            and (b.goal, b.reward, b.axtree) == (w.goal, w.reward, w.axtree)
        )

    @property
    def html_same(self) -> bool:
        """The prompts' HTML sections equal up to ids."""
        return self.browsergym.html == self.webserv.html


def side_by_side(
    agent_args: Any,
    tasks: Iterable[str],
    seeds: Iterable[int],
    out_dir: str | Path,
    *,
    max_steps: int = 5,
    chromium: str | None = None,
    url: str | None = None,
) -> list[Pair]:
    """Run ``agent_args`` (an AgentLab ``AgentArgs``, such as ``GenericAgentArgs``) on each MiniWoB
    task (``click-test`` or ``miniwob.click-test``) and seed through BrowserGym and through
    WebServ (the server at ``url``, default ``$WEBSERV_URL`` or a local one), writing AgentLab's
    result files under ``out_dir``; the pairs in task, then seed, order."""
    from agentlab.experiments.loop import EnvArgs

    html = miniwob.html_dir()
    if html is None:
        raise RuntimeError("side_by_side needs the miniwob package's pages: pip install 'webserv[miniwob]'")
    out = Path(out_dir)
    names = [t.removeprefix("miniwob.") for t in tasks]
    seeds = list(seeds)
    ws_bench = benchmark(
        [f"miniwob.{n}" for n in names], name="miniwob-webserv", max_steps=max_steps, url=url
    )
    bg_bench = benchmark([f"miniwob.{n}" for n in names], name="miniwob", max_steps=max_steps)
    runs: list[tuple[str, int, Any, Any]] = []  # task, seed, BrowserGym's experiment, WebServ's
    for name in names:
        for seed in seeds:
            bg_env = EnvArgs(task_name=f"miniwob.{name}", task_seed=seed, max_steps=max_steps)
            ws_env = WebServEnvArgs(task_name=f"miniwob.{name}", task_seed=seed, max_steps=max_steps, url=url)
            runs.append(
                (
                    name,
                    seed,
                    _experiment(agent_args, bg_bench, bg_env, out),
                    _experiment(agent_args, ws_bench, ws_env, out),
                )
            )
    with _playwright_env(html, chromium, out):
        _run_apart([bg for _, _, bg, _ in runs])
        for _, _, _, ws in runs:
            ws.run()
    return [Pair(name, seed, _side(Path(bg.exp_dir)), _side(Path(ws.exp_dir))) for name, seed, bg, ws in runs]


def _experiment(agent_args: Any, bench: Any, env_args: Any, out: Path) -> Any:
    """An AgentLab experiment of a copy of ``agent_args`` set to ``bench``, prepared under ``out``."""
    from agentlab.experiments.loop import ExpArgs

    agent = copy.deepcopy(agent_args)
    agent.set_benchmark(bench, demo_mode=False)
    exp = ExpArgs(agent_args=agent, env_args=env_args)
    exp.prepare(out / bench.name)
    return exp


def _run_all(exps: list[Any]) -> None:
    for exp in exps:
        exp.run()


def _run_apart(exps: list[Any]) -> None:
    """Runs AgentLab experiments one after another in a process of their own (one process, so
    that AgentLab's imports and Playwright start once). BrowserGym drives Playwright's sync API,
    which starts an event loop in the thread that calls it and keeps Playwright running for the
    process's life: in the caller's process, every later ``asyncio.run`` would fail."""
    if not exps:
        return
    ctx = multiprocessing.get_context("spawn")
    p = ctx.Process(target=_run_all, args=(exps,), name="browsergym episodes")
    p.start()
    p.join()
    if p.exitcode != 0:
        names = ", ".join(f"{e.env_args.task_name} (seed {e.env_args.task_seed})" for e in exps)
        raise RuntimeError(
            f"BrowserGym's episodes of {names} exited with {p.exitcode}; their logs are under "
            f"{Path(exps[0].exp_dir).parent}"
        )


def _side(exp_dir: Path) -> Side:
    summary = json.loads((exp_dir / "summary_info.json").read_text())
    with gzip.open(exp_dir / "step_0.pkl.gz", "rb") as f:
        step = pickle.load(f)
    prompt = _prompt_text(step.agent_info.get("chat_messages") if step.agent_info else None)
    return Side(
        goal=str(step.obs.get("goal", "")) if step.obs else "",
        reward=float(summary.get("cum_reward") or 0.0),
        axtree=page_text(prompt, "AXTree"),
        html=page_text(prompt, "HTML"),
        exp_dir=exp_dir,
        err_msg=summary.get("err_msg"),
    )


def _prompt_text(messages: Any) -> str:
    """The text of the prompt's messages (AgentLab's ``Discussion``, or a list of messages)."""
    if messages is None:
        return ""
    parts: list[str] = []
    for m in messages:
        content = m["content"] if isinstance(m, dict) or hasattr(m, "__getitem__") else str(m)
        if isinstance(content, str):
            parts.append(content)
        else:
            parts += [c.get("text", "") for c in content if isinstance(c, dict)]
    return "\n".join(parts)


_AX_ID = re.compile(r"\[([^\]\s]+)\]")
_BID = re.compile(r"\bbid=\"([^\"]*)\"")
_URL = re.compile(r"url='[^']*'")


def page_text(prompt: str, section: str) -> str:
    """A section of a GenericAgent prompt's observation (``"AXTree"`` or ``"HTML"``: from its
    ``## <section>`` heading to the next heading), ids renamed in order of first appearance
    (``[e1]``, ``bid="e1"``) and ``url='...'`` left out; "" when the prompt has no such section."""
    m = re.search(rf"\n## {section}:?[^\n]*\n(.*?)(?=\n#|\Z)", prompt, re.S)
    if m is None:
        return ""
    names: dict[str, str] = {}

    def rename(m: re.Match[str]) -> str:
        new = names.setdefault(m.group(1), f"e{len(names) + 1}")
        return m.group(0).replace(m.group(1), new, 1)

    return _URL.sub("url=...", _BID.sub(rename, _AX_ID.sub(rename, m.group(1).strip())))


@contextmanager
def _playwright_env(html: str, chromium: str | None, out: Path) -> Generator[None]:
    """BrowserGym's MiniWoB pages and, with ``chromium``, Playwright's browser directory, in the
    environment while the episodes run (restored after)."""
    saved = {k: os.environ.get(k) for k in ("MINIWOB_URL", "PLAYWRIGHT_BROWSERS_PATH")}
    os.environ["MINIWOB_URL"] = Path(html, "miniwob").as_uri() + "/"
    if chromium is not None:
        os.environ["PLAYWRIGHT_BROWSERS_PATH"] = str(_browsers_dir(chromium, out / "playwright-browsers"))
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _browsers_dir(chromium: str, into: Path) -> Path:
    """A directory laid out as Playwright's browser download (``chromium-<revision>/chrome-linux/
    chrome``, the revision the installed Playwright expects), the browser a link to ``chromium``."""
    import playwright

    target = Path(chromium)
    if not target.is_file():
        raise FileNotFoundError(f"side_by_side: chromium={chromium!r} is not a file (give a Chromium's path)")
    listing = Path(playwright.__file__).parent / "driver" / "package" / "browsers.json"
    revision = next(
        b["revision"] for b in json.loads(listing.read_text())["browsers"] if b["name"] == "chromium"
    )
    exe = into / f"chromium-{revision}" / "chrome-linux" / "chrome"
    exe.parent.mkdir(parents=True, exist_ok=True)
    if not exe.is_symlink():
        exe.symlink_to(target)
    return into


__all__ = ["Pair", "Side", "page_text", "side_by_side"]
