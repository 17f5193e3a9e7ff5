"""The NNetNav loop over one server: N episodes at once, relabel every k steps, prune on a 0."""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from ..client import AsyncClient
from ..errors import WebServError
from ..models import ChatModel, ModelError
from .llm import ModelExplorer, ModelLabeler, ModelReward, load_prompts
from .modelfree import NoveltyExplorer, PageStateReward, TrajectoryLabeler
from .trajectory import Episode, Explorer, Label, Labeler, MalformedOutput, RewardModel, Step, obs_text

# The placeholder of each hosted site's origin in task files (docs/tasks.md).
PLACEHOLDERS = {"shopping": "__SHOPPING__", "cms": "__SHOPPING_ADMIN__"}

DEFAULT_PERSONAS = [
    "a hiker preparing for a rainy weekend trip who wants a waterproof jacket",
    "a home cook looking for a good coffee grinder and kitchen tools",
    "a runner comparing trainers and reading reviews before buying",
    "a parent shopping for gifts on a budget who checks shipping and returns",
]


@dataclass
class ExploreResult:
    """What a run produced: the files written and the run's statistics."""

    episodes: list[Episode]
    demonstrations: Path
    tasks: Path
    stats: dict[str, Any] = field(default_factory=dict)


def load_personas(path: str | Path | None) -> list[str]:
    """Personas from a file (one a line, or a JSON list of strings), or the built-in list."""
    if path is None:
        return list(DEFAULT_PERSONAS)
    text = Path(path).read_text()
    if text.lstrip().startswith("["):
        items = json.loads(text)
        if not all(isinstance(p, str) for p in items):
            raise ValueError(f"personas file {path}: a JSON list must hold strings")
    else:
        items = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]
    if not items:
        raise ValueError(f"personas file {path}: no personas in it (one a line, or a JSON list of strings)")
    return items


async def _run_episode(
    client: AsyncClient,
    index: int,
    persona: str,
    *,
    site: str,
    start_url: str | None,
    max_steps: int,
    k: int,
    explorer: Explorer,
    labeler: Labeler,
    reward: RewardModel,
    seed: int,
) -> Episode:
    make: dict[str, Any] = {"max_steps": max_steps + 1, "observe": {"axtree": True}}
    env = client.env(site, **make)
    options: dict[str, Any] = {"goal": "Explore the site."}
    if start_url:
        options["start_url"] = start_url
    if site in PLACEHOLDERS:
        options["task_id"] = f"{site}.0"  # a fixed task for a fixed start (its goal is not pursued)
    try:
        obs, _ = await env.reset(seed=seed, options=options)
    except WebServError as e:
        ep = Episode(index, persona, start_url or "", status="env_error", error=str(e))
        await env.close()
        return ep
    ep = Episode(index, persona, obs["url"])
    try:
        for t in range(1, max_steps + 1):
            action = await explorer.act(obs, ep)
            nxt, _, terminated, truncated, _ = await env.step(action)
            ep.steps.append(
                Step(
                    obs["url"],
                    obs.get("title", ""),
                    obs_text(obs),
                    action,
                    nxt["url"],
                    nxt.get("title", ""),
                    nxt.get("last_action_error") or "",
                )
            )
            obs = nxt
            if t % k == 0:
                label = await labeler.label(ep, obs)
                if await reward.score(ep, label, obs) == 0:
                    ep.status, ep.pruned_at = "pruned", t
                    return ep
                ep.kept.append((t, label))
            if terminated or truncated:
                ep.status = "truncated" if truncated else "finished"
                return ep
        ep.status = "finished"
    except ModelError as e:
        ep.status, ep.error = "endpoint_error", str(e)
    except MalformedOutput as e:
        ep.status, ep.error = "malformed_output", str(e)
    except WebServError as e:
        ep.status, ep.error = "env_error", str(e)
    finally:
        await env.close()
    return ep


def _placeholder(site: str, url: str) -> str:
    ph = PLACEHOLDERS.get(site)
    if ph is None:
        return url
    u = urlparse(url)
    return ph + u.path + (f"?{u.query}" if u.query else "")


def _task(site: str, task_id: int, ep: Episode, n: int, label: Label) -> dict[str, Any]:
    actions = [s.action for s in ep.steps[:n]] + ['stop("")']
    return {
        "task_id": task_id,
        "sites": [site],
        "category": "navigation",
        "intent": label.instruction,
        "start_url": _placeholder(site, ep.start_url),
        "require_login": False,
        "eval": {
            "eval_types": ["url_match"],
            "reference_url": _placeholder(site, label.url),
            "url_note": "GOLD in PRED",
        },
        "oracle": actions,
        "explored": {"episode": ep.index, "persona": ep.persona, "steps": n},
    }


def _sft_rows(ep: Episode, n: int, label: Label, demo: int) -> list[dict[str, Any]]:
    rows, prev = [], []
    steps = ep.steps[:n]
    for i, s in enumerate(steps):
        rows.append(
            {
                "episode_id": f"explore-{demo}",
                "step": i,
                "instruction": label.instruction,
                "url": s.url,
                "observation": s.observation,
                "previous_actions": list(prev),
                "action": s.action,
                "episode_reward": 1.0,
            }
        )
        prev.append(s.action)
    # The final stop, added post hoc as NNetNav does, on the page the prefix reached.
    last = steps[-1]
    rows.append(
        {
            "episode_id": f"explore-{demo}",
            "step": len(steps),
            "instruction": label.instruction,
            "url": last.next_url,
            "observation": "",
            "previous_actions": prev,
            "action": 'stop("")',
            "episode_reward": 1.0,
        }
    )
    return rows


def _write(out_dir: Path, site: str, eps: list[Episode]) -> tuple[Path, Path, int]:
    """Writes the kept prefixes as sft rows and as a task file; returns their paths and how many."""
    out_dir.mkdir(parents=True, exist_ok=True)
    tasks, demo = [], 0
    demos_path, tasks_path = out_dir / "demonstrations.jsonl", out_dir / "tasks.json"
    with demos_path.open("w") as f:
        for ep in eps:
            for n, label in ep.kept:
                for row in _sft_rows(ep, n, label, demo):
                    f.write(json.dumps(row) + "\n")
                tasks.append(_task(site, demo, ep, n, label))
                demo += 1
    tasks_path.write_text(json.dumps(tasks, indent=1) + "\n")
    return demos_path, tasks_path, demo


async def explore(
    *,
    site: str = "shopping",
    episodes: int = 4,
    max_steps: int = 40,
    k: int = 4,
    start_url: str | None = None,
    personas: str | Path | list[str] | None = None,
    out: str | Path = "explore-out",
    model: str | None = None,
    model_name: str | None = None,
    labeler_model: str | None = None,
    reward_model: str | None = None,
    prompts_dir: str | Path | None = None,
    server: str | None = None,
    seed: int = 0,
    concurrency: int | None = None,
) -> ExploreResult:
    """Runs ``episodes`` exploration episodes (``concurrency`` at once, default all) on ``site`` and writes
    ``out/demonstrations.jsonl`` (sft rows), ``out/tasks.json`` (a task file) and ``out/stats.json``.

    Without ``model`` the model-free mode runs; with it (an OpenAI-compatible API root, and
    ``model_name``), the explorer, labeler and reward model are calls to it (``labeler_model`` and
    ``reward_model`` override the URL for those two).
    """
    if episodes < 1 or max_steps < 1 or k < 1:
        raise ValueError(f"episodes, max_steps and k must be >= 1 (got {episodes}, {max_steps}, {k})")
    if model is None and (model_name or labeler_model or reward_model or prompts_dir):
        raise ValueError(
            "model_name, labeler_model, reward_model and prompts_dir need model= (the explorer's URL)"
        )
    persona_list = personas if isinstance(personas, list) else load_personas(personas)
    models: list[ChatModel] = []
    explorer: Explorer
    labeler: Labeler
    rewarder: RewardModel
    if model is None:
        explorer, labeler, rewarder = NoveltyExplorer(seed), TrajectoryLabeler(), PageStateReward(k)
    else:
        if not model_name:
            raise ValueError("model= needs model_name= (the name the endpoint serves)")
        prompts = load_prompts(prompts_dir)
        em = ChatModel(model, model_name)
        lm = ChatModel(labeler_model, model_name) if labeler_model else em
        rm = ChatModel(reward_model, model_name) if reward_model else em
        models = list({id(m): m for m in (em, lm, rm)}.values())
        explorer, labeler, rewarder = (
            ModelExplorer(em, prompts),
            ModelLabeler(lm, prompts),
            ModelReward(rm, prompts),
        )
    rng = random.Random(seed)
    assigned = [persona_list[i % len(persona_list)] for i in range(episodes)]
    rng.shuffle(assigned)
    gate = asyncio.Semaphore(concurrency or episodes)
    t0 = time.monotonic()
    async with AsyncClient(server) as client:

        async def one(i: int) -> Episode:
            async with gate:
                return await _run_episode(
                    client,
                    i,
                    assigned[i],
                    site=site,
                    start_url=start_url,
                    max_steps=max_steps,
                    k=k,
                    explorer=explorer,
                    labeler=labeler,
                    reward=rewarder,
                    seed=seed + i,
                )

        eps = list(await asyncio.gather(*(one(i) for i in range(episodes))))
    elapsed = time.monotonic() - t0
    demos_path, tasks_path, demo = _write(Path(out), site, eps)
    pages = {s.next_url for ep in eps for s in ep.steps}
    stats = {
        "site": site,
        "mode": "model" if model else "model-free",
        "episodes": len(eps),
        "status": dict(Counter(ep.status for ep in eps)),
        "kept": demo,
        "pruned_by_step": dict(sorted(Counter(ep.pruned_at for ep in eps if ep.pruned_at).items())),
        "steps": sum(len(ep.steps) for ep in eps),
        "distinct_pages": len(pages),
        "seconds": round(elapsed, 2),
        "demonstrations_per_hour": round(demo / elapsed * 3600, 1) if elapsed > 0 else 0.0,
        "endpoint": [m.stats.as_dict() | {"url": m.base_url} for m in models],
        "errors": [{"episode": ep.index, "status": ep.status, "error": ep.error} for ep in eps if ep.error],
    }
    (Path(out) / "stats.json").write_text(json.dumps(stats, indent=1) + "\n")
    return ExploreResult(eps, demos_path, tasks_path, stats)
