"""A policy learns MiniWoB++ from WebServ's reward: REINFORCE on two CPU cores, in NumPy.

    pip install 'webserv[miniwob]' matplotlib     # matplotlib only draws the PNG
    python examples/learn_miniwob.py --minutes 15 --out learn-out

What it learns. The policy sees what any agent sees: the goal text and the
page's accessibility tree (``obs["axtree_txt"]``). Each step it lists the
actions the page offers (click any element with an id; fill any textbox with a
phrase of the goal), describes each by a few generic features (the element's
role, whether its text is a quoted phrase of the goal or a word of it, whether
it is ticked, whether the goal still asks for something on the page) and picks
one with a softmax over a linear score. The weights start at zero (the random
policy over the page's actions) and only the reward moves them: REINFORCE with
a running per-task baseline. Nothing in it knows which task it is playing.

Tasks and seeds. Six MiniWoB task families at once (``--tasks``), each a
``gymnasium.make_vec("webserv/miniwob.<task>", num_envs=N)``. Training episodes
take seeds from 1000 up; held-out evaluation plays seeds 0 to ``--eval-seeds``-1,
which training never sees, greedily (the most likely action).

Output. A line per evaluation (success rate on training episodes since the last
evaluation and on held-out seeds, against environment steps and wall time),
``curve.json`` with the same data and ``curve.png`` when matplotlib is there.
``--shuffle-rewards`` trains on rewards shuffled across each batch, the check
that the curve comes from the reward and not from the features (it stays near
the random policy's rate).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import webserv  # noqa: F401  (registers the webserv/... gymnasium ids)

TASKS = ("click-button", "click-link", "click-tab", "focus-text", "enter-text", "click-checkboxes")

# One line of the accessibility tree: indentation, [id], role, "name", the rest.
_LINE = re.compile(
    r'^(?P<indent>\t*)(?:\[(?P<id>[^\]]+)\] )?(?P<role>\S+)(?: "(?P<name>(?:[^"\\]|\\.)*)")?(?P<rest>.*)$'
)
_VALUE = re.compile(r'value="((?:[^"\\]|\\.)*)"')
_QUOTED = re.compile(r'"([^"]+)"')
_ROLES = ("button", "link", "tab", "checkbox", "textbox", "other")
_LINKISH = {"link", "clickable"}


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w#]+", " ", text.lower()).split())


@dataclass
class Element:
    id: str
    role: str
    text: str
    value: str | None = None
    checked: bool | None = None


def elements(axtree: str) -> list[Element]:
    """The page's elements with an id, each with its own text or, when it has none, its subtree's."""
    lines = [m for m in (_LINE.match(raw) for raw in axtree.splitlines()) if m]
    out: list[Element] = []
    for i, m in enumerate(lines):
        if not m["id"]:
            continue
        text = m["name"] or ""
        if not text:  # a tab or a wrapper: the text of what it holds
            depth, parts = len(m["indent"]), []
            for sub in lines[i + 1 :]:
                if len(sub["indent"]) <= depth:
                    break
                if sub["name"]:
                    parts.append(sub["name"])
            text = " ".join(parts)
        value = _VALUE.search(m["rest"])
        rest = m["rest"].split()
        checked = True if "checked" in rest else False if "unchecked" in rest else None
        out.append(Element(m["id"], m["role"], text, value[1] if value else None, checked))
    return out


def _role(e: Element) -> str:
    if e.role in _LINKISH:
        return "link"
    if e.role in ("tab", "presentation"):
        return "tab"
    return e.role if e.role in _ROLES else "other"


def _phrase_in(phrase: str, goal: str) -> bool:
    p = _norm(phrase)
    return bool(p) and re.search(rf"(?<![\w#]){re.escape(p)}(?![\w#])", goal) is not None


# The features of an action: names, so a learned weight can be read back.
FEATURES = (
    *(f"click a {r} the goal does not name" for r in _ROLES),
    "click: text is a quoted phrase of the goal",
    "click: text is a word of the goal, a box not ticked",
    "click: text is a word of the goal, a box ticked",
    "click: text is a word of the goal, goal still pending",
    "click: text is a word of the goal, nothing pending",
    "fill: a textbox",
    "fill: phrase is quoted in the goal",
    "fill: the textbox already holds it",
)
_F = {name: i for i, name in enumerate(FEATURES)}


def candidates(goal: str, axtree: str) -> tuple[list[str], np.ndarray]:
    """The page's actions (BrowserGym action strings) and one feature row each."""
    g = _norm(goal)
    quoted = [_norm(q) for q in _QUOTED.findall(goal)]
    els = elements(axtree)
    boxes = [e for e in els if e.role == "textbox"]
    # Pending: the goal names a box still unticked, or quotes a phrase no textbox holds yet.
    pending = any(e.checked is False and _phrase_in(e.text, g) for e in els) or bool(
        boxes and quoted and not any(_norm(b.value or "") in quoted for b in boxes)
    )
    actions: list[str] = []
    rows: list[np.ndarray] = []
    for e in els:
        f = np.zeros(len(FEATURES))
        t = _norm(e.text)
        if not _phrase_in(e.text, g):
            f[_F[f"click a {_role(e)} the goal does not name"]] = 1
        elif t in quoted:
            f[_F["click: text is a quoted phrase of the goal"]] = 1
        else:
            if e.checked is not None:
                f[
                    _F[f"click: text is a word of the goal, a box {'ticked' if e.checked else 'not ticked'}"]
                ] = 1
            elif pending:
                f[_F["click: text is a word of the goal, goal still pending"]] = 1
            else:
                f[_F["click: text is a word of the goal, nothing pending"]] = 1
        actions.append(f"click({json.dumps(e.id)})")
        rows.append(f)
    for b in boxes:
        for phrase in _QUOTED.findall(goal) or goal.split():
            f = np.zeros(len(FEATURES))
            f[_F["fill: a textbox"]] = 1
            f[_F["fill: phrase is quoted in the goal"]] = float(_norm(phrase) in quoted)
            f[_F["fill: the textbox already holds it"]] = float((b.value or "") == phrase)
            actions.append(f"fill({json.dumps(b.id)}, {json.dumps(phrase)})")
            rows.append(f)
    if not actions:
        return ["noop()"], np.zeros((1, len(FEATURES)))
    return actions, np.stack(rows)


def _softmax(scores: np.ndarray) -> np.ndarray:
    z = np.exp(scores - scores.max())
    return z / z.sum()


@dataclass
class Episode:
    """One environment's episode in progress: each step's feature rows and the index taken."""

    steps: list[tuple[np.ndarray, int]] = field(default_factory=list)


class Learner:
    """A linear softmax policy over the page's actions, trained with REINFORCE."""

    def __init__(self, lr: float, rng: np.random.Generator, gamma: float = 0.8) -> None:
        self.theta = np.zeros(len(FEATURES))
        self.lr = lr
        self.gamma = gamma
        self.rng = rng
        self.baseline: dict[str, float] = {}

    def act(self, goal: str, axtree: str, greedy: bool) -> tuple[str, np.ndarray, int]:
        actions, rows = candidates(goal, axtree)
        p = _softmax(rows @ self.theta)
        k = int(np.argmax(p)) if greedy else int(self.rng.choice(len(p), p=p))
        return actions[k], rows, k

    def update(self, batch: list[tuple[str, Episode, float]]) -> None:
        """One REINFORCE step. An episode's return is its reward discounted by its length
        (``gamma`` per step, as MiniWoB's own raw reward decays with time), so a detour
        earns less than the direct way; each task's running mean return is its baseline."""
        grad = np.zeros_like(self.theta)
        returns = [(task, r * self.gamma ** (len(ep.steps) - 1)) for task, ep, r in batch]
        for (task, ep, _), (_, ret) in zip(batch, returns, strict=True):
            b = self.baseline.get(task, 0.0)
            for rows, k in ep.steps:
                p = _softmax(rows @ self.theta)
                grad += (ret - b) * (rows[k] - p @ rows)
        for task, ret in returns:
            self.baseline[task] = 0.8 * self.baseline.get(task, ret) + 0.2 * ret
        self.theta += self.lr * grad / max(1, len(batch))


def _reward(value: float, info: dict[str, Any], i: int) -> float:
    if math.isnan(value):  # the grader failed: never learn a 0 that is not one
        errors = info.get("eval_error")
        raise RuntimeError(
            f"an episode could not be graded: {errors[i] if errors is not None else 'no reason given'}"
        )
    return 1.0 if value > 0 else 0.0


class Tasks:
    """One vector environment per task, stepped in turn; episodes reset with chosen seeds."""

    def __init__(self, tasks: tuple[str, ...], num_envs: int, max_steps: int) -> None:
        self.tasks = tasks
        self.vecs = {
            t: gym.make_vec(
                f"webserv/miniwob.{t}",
                num_envs=num_envs,
                max_episode_steps=max_steps,
                autoreset_mode=gym.vector.AutoresetMode.DISABLED,
            )
            for t in tasks
        }
        self.num_envs = num_envs
        self.steps = 0

    def play(
        self, learner: Learner, seeds: dict[str, list[int]], greedy: bool
    ) -> list[tuple[str, Episode, float]]:
        """Plays every seed of every task once; returns each episode with its reward."""
        done: list[tuple[str, Episode, float]] = []
        for task, todo in seeds.items():
            vec, todo = self.vecs[task], list(todo)
            n = min(self.num_envs, len(todo))
            live: list[Episode | None] = [None] * self.num_envs
            first = todo[:n] + [todo[0]] * (self.num_envs - n)  # spare members replay a seed, unused
            obs, _ = vec.reset(seed=first)
            live[:n] = [Episode() for _ in range(n)]
            todo = todo[n:]
            while any(ep is not None for ep in live):
                acts, picks = [], []
                for i in range(self.num_envs):
                    a, rows, k = learner.act(obs["goal"][i], obs["axtree_txt"][i], greedy)
                    acts.append(a if live[i] is not None else "noop()")
                    picks.append((rows, k))
                obs, rew, term, trunc, info = vec.step(acts)
                self.steps += sum(ep is not None for ep in live)
                ended = np.zeros(self.num_envs, dtype=bool)
                for i, ep in enumerate(live):
                    if term[i] or trunc[i]:
                        ended[i] = True
                    if ep is None:
                        continue
                    ep.steps.append(picks[i])
                    if term[i] or trunc[i]:
                        done.append((task, ep, _reward(float(rew[i]), info, i)))
                        live[i] = None
                if ended.any():
                    again = [i for i in range(self.num_envs) if ended[i]]
                    seeds_now: list[int | None] = [None] * self.num_envs
                    for i in again:
                        if todo and live[i] is None:
                            seeds_now[i] = todo.pop(0)
                            live[i] = Episode()
                        else:
                            seeds_now[i] = seeds[task][0]
                    obs, _ = vec.reset(seed=seeds_now, options={"reset_mask": ended})
        return done

    def close(self) -> None:
        for v in self.vecs.values():
            v.close()


def _rate(episodes: list[tuple[str, Episode, float]]) -> float:
    return sum(r for _, _, r in episodes) / max(1, len(episodes))


def learn(
    tasks: tuple[str, ...] = TASKS,
    minutes: float = 15.0,
    max_env_steps: int | None = None,
    max_updates: int | None = None,
    num_envs: int = 2,
    batch_per_task: int = 4,
    eval_seeds: int = 10,
    eval_every: int = 4,
    eval_greedy: bool = True,
    lr: float = 4.0,
    max_steps: int = 8,
    shuffle_rewards: bool = False,
    seed: int = 0,
    out: Path | None = None,
    log: Any = None,
) -> dict[str, Any]:
    """Trains from zero weights and returns the curve: one point per evaluation."""
    log = log or (lambda line: print(line, flush=True))
    rng = np.random.default_rng(seed)
    learner = Learner(lr, rng)
    env = Tasks(tasks, num_envs, max_steps)
    held_out = {t: list(range(eval_seeds)) for t in tasks}
    next_seed = 1000
    start = time.monotonic()
    curve: list[dict[str, Any]] = []
    since: list[tuple[str, Episode, float]] = []

    def evaluate(update: int) -> None:
        # Zero weights make every action equally likely: the first point samples (the random policy).
        ev = env.play(learner, held_out, greedy=eval_greedy and update > 0)
        point = {
            "update": update,
            "env_steps": env.steps,
            "wall_s": round(time.monotonic() - start, 1),
            "train_success": round(_rate(since), 3) if since else None,
            "heldout_success": round(_rate(ev), 3),
            "heldout_by_task": {t: round(_rate([e for e in ev if e[0] == t]), 3) for t in tasks},
        }
        curve.append(point)
        since.clear()
        log(
            f"update {update:4d}  steps {point['env_steps']:6d}  wall {point['wall_s']:7.1f}s  "
            f"train {point['train_success'] if point['train_success'] is not None else '-'}  "
            f"held-out {point['heldout_success']:.3f}"
        )

    try:
        evaluate(0)
        random_rate = curve[0]["heldout_success"]
        update = 0
        while (
            time.monotonic() - start < minutes * 60
            and (max_env_steps is None or env.steps < max_env_steps)
            and (max_updates is None or update < max_updates)
        ):
            seeds = {t: list(range(next_seed, next_seed + batch_per_task)) for t in tasks}
            next_seed += batch_per_task
            batch = env.play(learner, seeds, greedy=False)
            since.extend(batch)
            if shuffle_rewards:
                rewards = [r for _, _, r in batch]
                rng.shuffle(rewards)
                batch = [(t, ep, r) for (t, ep, _), r in zip(batch, rewards, strict=True)]
            learner.update(batch)
            update += 1
            if update % eval_every == 0:
                evaluate(update)
        if not curve or curve[-1]["update"] != update:
            evaluate(update)
    finally:
        env.close()
    result = {
        "tasks": list(tasks),
        "random_heldout_success": round(random_rate, 3),
        "final_heldout_success": curve[-1]["heldout_success"],
        "shuffled_rewards": shuffle_rewards,
        "weights": {name: round(float(w), 3) for name, w in zip(FEATURES, learner.theta, strict=True)},
        "curve": curve,
    }
    if out is not None:
        _write(out, result, log)
    return result


def _write(out: Path, result: dict[str, Any], log: Any) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "curve.json").write_text(json.dumps(result, indent=2) + "\n")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log(f"wrote {out / 'curve.json'} (pip install matplotlib for curve.png)")
        return
    pts = result["curve"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, x, label in ((axes[0], "env_steps", "environment steps"), (axes[1], "wall_s", "wall time (s)")):
        xs = [p[x] for p in pts]
        ax.plot(xs, [p["heldout_success"] for p in pts], marker="o", label="held-out seeds")
        train = [(p[x], p["train_success"]) for p in pts if p["train_success"] is not None]
        if train:
            ax.plot(*zip(*train, strict=True), marker=".", label="training episodes")
        ax.axhline(result["random_heldout_success"], linestyle="--", color="grey", label="random policy")
        ax.set_xlabel(label)
        ax.set_ylim(0, 1.02)
    axes[0].set_ylabel("success rate")
    axes[0].legend(loc="lower right")
    fig.suptitle(f"REINFORCE on MiniWoB++ ({', '.join(result['tasks'])})", fontsize=9)
    fig.tight_layout()
    fig.savefig(out / "curve.png", dpi=100)
    log(f"wrote {out / 'curve.json'} and {out / 'curve.png'}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tasks", nargs="+", default=list(TASKS), help="MiniWoB task names")
    p.add_argument("--minutes", type=float, default=15.0, help="wall-time budget")
    p.add_argument("--max-env-steps", type=int, default=None, help="stop after this many environment steps")
    p.add_argument("--max-updates", type=int, default=None, help="stop after this many policy updates")
    p.add_argument("--num-envs", type=int, default=2, help="environments per task")
    p.add_argument("--batch-per-task", type=int, default=4, help="training episodes per task per update")
    p.add_argument("--eval-seeds", type=int, default=10, help="held-out seeds per task (0..K-1)")
    p.add_argument("--eval-every", type=int, default=4, help="updates between evaluations")
    p.add_argument(
        "--eval-sample",
        action="store_true",
        help="evaluate by sampling the policy (default: its most likely action)",
    )
    p.add_argument("--lr", type=float, default=4.0, help="the learning rate (plain gradient ascent)")
    p.add_argument("--seed", type=int, default=0, help="the policy's sampling seed")
    p.add_argument(
        "--shuffle-rewards", action="store_true", help="train on shuffled rewards (a broken reward)"
    )
    p.add_argument("--out", type=Path, default=Path("learn-out"))
    a = p.parse_args()
    r = learn(
        tuple(a.tasks),
        minutes=a.minutes,
        max_env_steps=a.max_env_steps,
        max_updates=a.max_updates,
        num_envs=a.num_envs,
        batch_per_task=a.batch_per_task,
        eval_seeds=a.eval_seeds,
        eval_every=a.eval_every,
        eval_greedy=not a.eval_sample,
        lr=a.lr,
        shuffle_rewards=a.shuffle_rewards,
        seed=a.seed,
        out=a.out,
    )
    print(f"random policy {r['random_heldout_success']:.3f} -> held-out {r['final_heldout_success']:.3f}")


if __name__ == "__main__":
    main()
