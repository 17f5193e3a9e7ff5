"""Mixed groups: real rollouts, dreamed rollouts and replayed expert trajectories in one group (DynaWeb).

A ``Mix`` says what share of a group each source takes::

    mix = webserv.Mix(expert=0.5)                                   # half real, half expert (DynaWeb)
    mix = webserv.Mix(real=0.25, dream=0.25, expert=0.5, dream_env={"world_model": ..., "max_dream_steps": 5})

- **real**: an environment made with the group's own settings;
- **dream**: an environment made from another spec, ``dream_env`` (``site: "dream"`` by default,
  with the world model's arguments; docs/dream.md): just another environment to the group;
- **expert**: a recorded demonstration replayed in a real environment from its start: the
  policy's action is set aside and the demonstration's next action is run instead, so the member's
  observations and reward are the environment's own. ``demonstrations`` are the oracles of the
  site's tasks (``"oracles"``, the default: the ``tasks`` op lists them) or a file of ``sft`` rows
  (``webserv export --format sft``, ``webserv.explore``'s ``demonstrations.jsonl``).

A group of n gets ``Mix.sources(n)``: each source's share of n rounded by largest remainder (ties
to real, then dream, then expert), in that order, the same every time. Everything a member returns
is marked: ``info["source"]`` is ``"real"``, ``"dream"`` or ``"expert"``, so a trainer can weight
them; an expert member's step also has ``info["expert_action"]`` (the action run) and
``info["demonstration"]`` (which one).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .handle import AsyncEnv, Info, Obs
from .options import EnvOptions

Source = Literal["real", "dream", "expert"]

#: The sources, in the order a group lists them.
SOURCES: tuple[Source, ...] = ("real", "dream", "expert")

#: Columns an ``sft`` row must have to be replayed (docs/trajectories.md).
_SFT_COLUMNS = ("episode_id", "step", "instruction", "url", "action")


@dataclass(frozen=True)
class Demonstration:
    """A recorded action sequence and where it starts: a task (oracles) or a URL and goal (``sft`` rows)."""

    #: The actions, in order, in the grammar's string form.
    actions: tuple[str, ...]
    #: The task it solves (a task's oracle), run by reset's ``task`` option.
    task: str | None = None
    #: Where it starts and what it does, when it has no task (``sft`` rows: the first row's ``url``
    #: and the ``instruction``).
    start_url: str | None = None
    goal: str | None = None
    #: The reward it earned when recorded (``sft``'s ``episode_reward``; 1 for an oracle, which
    #: ``webserv tasks check`` holds to reward 1); None when unknown.
    reward: float | None = None
    #: Its name: the task id or the episode id.
    id: str = ""

    def reset_options(self, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Reset options that start this demonstration, from the group's: its own task (or start
        URL and goal); the group key is kept only when the demonstration is of the group's task,
        so it starts from the group's state, never from another task's."""
        opts = dict(options or {})
        group_task = opts.pop("task", None) or opts.pop("task_id", None)
        opts.pop("task_id", None)
        if self.task is not None:
            opts["task"] = self.task
            if group_task is None or str(group_task) != self.task:
                opts.pop("group_key", None)
        else:
            opts.pop("group_key", None)
            opts["start_url"] = self.start_url
            if self.goal:
                opts["goal"] = self.goal
        return opts


def oracle_demonstrations(tasks: Sequence[Mapping[str, Any]]) -> list[Demonstration]:
    """The oracles of tasks as the ``tasks`` op lists them (those without one are left out)."""
    return [
        Demonstration(
            tuple(str(a) for a in t["oracle"]),
            task=str(t["id"]),
            goal=t.get("goal"),
            reward=1.0,
            id=str(t["id"]),
        )
        for t in tasks
        if t.get("oracle")
    ]


def read_demonstrations(path: str | Path) -> list[Demonstration]:
    """The episodes of a file of ``sft`` rows (JSON Lines), each as a demonstration: its rows'
    actions by ``step``, starting at its first row's ``url`` with its ``instruction`` as the goal."""
    episodes: dict[str, list[dict[str, Any]]] = {}
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as e:
                raise ValueError(f"{path}:{n}: not a JSON line ({e})") from None
            missing = [c for c in _SFT_COLUMNS if c not in row]
            if missing:
                raise ValueError(
                    f"{path}:{n}: an sft row needs {', '.join(missing)} "
                    "(the rows `webserv export --format sft` writes)"
                )
            episodes.setdefault(str(row["episode_id"]), []).append(row)
    if not episodes:
        raise ValueError(f"{path} has no sft rows")
    out = []
    for episode_id, rows in episodes.items():
        rows.sort(key=lambda r: int(r["step"]))
        reward = rows[0].get("episode_reward")
        out.append(
            Demonstration(
                tuple(str(r["action"]) for r in rows),
                start_url=str(rows[0]["url"]),
                goal=str(rows[0]["instruction"]),
                reward=None if reward is None else float(reward),
                id=episode_id,
            )
        )
    return out


@dataclass(frozen=True)
class Mix:
    """The share of each source in a group; ``real`` is the rest when not given (see the module's doc)."""

    #: Shares of the group, each in [0, 1], summing to 1.
    real: float | None = None
    dream: float = 0.0
    expert: float = 0.0
    #: The dream members' environment: ``EnvOptions``, or keywords (``world_model``, ``start``,
    #: ``max_dream_steps``, ``judge``; docs/dream.md) over what of the group's settings a dream
    #: takes (see ``dream_options``). Needed when ``dream`` > 0.
    dream_env: EnvOptions | Mapping[str, Any] | None = field(default=None, hash=False)
    #: What expert members replay: ``"oracles"`` (the site's tasks' oracles), a path of ``sft`` rows,
    #: or demonstrations.
    demonstrations: str | Path | Sequence[Demonstration] = field(default="oracles", hash=False)
    #: For the trainer adapters: ``"replay"`` runs an expert member's actions in a real environment
    #: (its observations and reward are the environment's); ``"recorded"`` returns the recorded
    #: sequence and reward without an environment (for trainers that only need the sequence).
    #: The vector environment always replays.
    expert_mode: Literal["replay", "recorded"] = "replay"

    def __post_init__(self) -> None:
        for name in ("dream", "expert"):
            v = getattr(self, name)
            if not 0.0 <= v <= 1.0:
                raise ValueError(f"Mix: {name} is a share of the group, between 0 and 1, not {v}")
        if self.real is None:
            object.__setattr__(self, "real", max(0.0, 1.0 - self.dream - self.expert))
        real = self.share("real")
        if not 0.0 <= real <= 1.0 or not math.isclose(real + self.dream + self.expert, 1.0, abs_tol=1e-9):
            raise ValueError(
                f"Mix: the shares must sum to 1 (real {real} + dream {self.dream} + expert {self.expert}); "
                "leave real out to give it the rest"
            )
        if self.dream > 0 and self.dream_env is None:
            raise ValueError(
                "Mix: dream members need dream_env, the dream environment's settings "
                '(dream_env={"world_model": ..., "start": ...}; docs/dream.md)'
            )
        if self.expert_mode not in ("replay", "recorded"):
            raise ValueError(f"Mix: expert_mode is 'replay' or 'recorded', not {self.expert_mode!r}")

    def share(self, source: Source) -> float:
        v = getattr(self, source)
        return float(v or 0.0)

    def counts(self, n: int) -> dict[Source, int]:
        """How many of a group of n each source gets: n x share, rounded by largest remainder."""
        if n < 1:
            raise ValueError(f"a group has at least one member, not {n}")
        exact = {s: n * self.share(s) for s in SOURCES}
        counts = {s: math.floor(exact[s] + 1e-9) for s in SOURCES}
        left = n - sum(counts.values())
        for s in sorted(SOURCES, key=lambda s: (-(exact[s] - counts[s]), SOURCES.index(s)))[:left]:
            counts[s] += 1
        return counts

    def sources(self, n: int) -> list[Source]:
        """The source of each member of a group of n: the reals first, then the dreams, then the experts."""
        counts = self.counts(n)
        return [s for s in SOURCES for _ in range(counts[s])]

    def dream_options(self, group: EnvOptions) -> EnvOptions:
        """The dream members' settings: ``dream_env`` over what of the group's a dream takes (the
        server, the task and goal, the observation's views), on the site ``dream``. A browser's or
        a site's settings (start URL, step limits, idle window, other ``make`` arguments) are not
        carried over: the server refuses them on a dream."""
        if isinstance(self.dream_env, EnvOptions):
            return self.dream_env
        base = EnvOptions(
            site="dream",
            goal=group.goal,
            task=group.task,
            url=group.url,
            token=group.token,
            screenshot=group.screenshot,
            axtree=group.axtree,
            observe=group.observe,
            wallclock=group.wallclock,
            render_mode=group.render_mode,
        )
        return EnvOptions.of(base, **dict(self.dream_env or {}))

    def load_demonstrations(self, tasks: Sequence[Mapping[str, Any]] | None = None) -> list[Demonstration]:
        """The demonstrations expert members replay; ``tasks`` are the site's (the ``tasks`` op's)
        when ``demonstrations`` is ``"oracles"``."""
        d = self.demonstrations
        if isinstance(d, str) and d == "oracles":
            demos = oracle_demonstrations(tasks or [])
            if not demos:
                raise ValueError(
                    "Mix: expert members replay the site's task oracles, and this site's tasks have none; "
                    "give demonstrations= a file of sft rows (webserv export --format sft)"
                )
            return demos
        if isinstance(d, (str, Path)):
            return read_demonstrations(d)
        demos = list(d)
        if not demos:
            raise ValueError("Mix: demonstrations is empty")
        return demos


def graded(reward: float | None) -> bool:
    """Whether a member's reward is a grade: not None and not NaN (a dream whose task's grader cannot
    run on a dreamed observation, ``info["reward_source"] == "not_graded"``, or a grading that
    failed)."""
    return reward is not None and not math.isnan(reward)


@dataclass(frozen=True)
class GroupAdvantages:
    """A group's advantages over its graded members (``group_advantages``)."""

    #: One per member, in order: (reward - mean) / (std + eps) over the graded members; 0.0 for a
    #: member left out (it moves no gradient).
    advantages: list[float]
    #: Which members were graded (and so in the mean and std).
    graded: list[bool]
    #: How many were left out, and of which source (when sources were given).
    left_out: int
    left_out_by_source: dict[str, int]


def group_advantages(
    rewards: Sequence[float | None],
    sources: Sequence[Source] | None = None,
    *,
    normalize: bool = True,
    eps: float = 1e-6,
) -> GroupAdvantages:
    """GRPO's group-relative advantages of one group, leaving out the members that were not graded.

    A dreamed member whose task's grader cannot run on a dreamed observation gets reward NaN (None
    through the protocol), as does a member whose grading failed: its reward is unknown, not 0, so it
    is left out of the group's mean and standard deviation and its advantage is 0; the count says how
    many (by source, given ``sources``: the group's ``sources(n)``). ``normalize=False`` gives reward
    minus the mean (Dr. GRPO's). A group with no graded member has every advantage 0.
    """
    if sources is not None and len(sources) != len(rewards):
        raise ValueError(f"{len(rewards)} rewards and {len(sources)} sources: give one source per member")
    ok = [graded(r) for r in rewards]
    vals = [float(r) for r, g in zip(rewards, ok, strict=True) if g and r is not None]
    by_source: dict[str, int] = {}
    if sources is not None:
        for src, g in zip(sources, ok, strict=True):
            if not g:
                by_source[src] = by_source.get(src, 0) + 1
    if not vals:
        return GroupAdvantages([0.0] * len(rewards), ok, len(rewards), by_source)
    mean = sum(vals) / len(vals)
    std = math.sqrt(sum((v - mean) ** 2 for v in vals) / len(vals))
    scale = (std + eps) if normalize else 1.0
    adv = [
        (float(r) - mean) / scale if g and r is not None else 0.0 for r, g in zip(rewards, ok, strict=True)
    ]
    return GroupAdvantages(adv, ok, ok.count(False), by_source)


def member_options(source: Source, options: Mapping[str, Any] | None) -> dict[str, Any]:
    """A real or dream member's reset options from the group's. A dream starts from a real
    observation of its own (its ``start``, or the task's first one), not from the group's site:
    its reset keeps the task and goal and leaves the group key and the start URL out."""
    opts = dict(options or {})
    if source == "dream":
        opts.pop("group_key", None)
        opts.pop("start_url", None)
    return opts


class Demonstrations:
    """Which demonstration an expert member replays next: the one of the episode's task when there
    is one, else the next in order (round robin)."""

    def __init__(self, demos: Sequence[Demonstration]):
        self.demos = list(demos)
        self.by_task = {d.task: d for d in self.demos if d.task is not None}
        self._next = 0

    def pick(self, task: str | None) -> Demonstration:
        if task is not None and task in self.by_task:
            return self.by_task[task]
        demo = self.demos[self._next % len(self.demos)]
        self._next += 1
        return demo


class ExpertEnv:
    """An expert member: a real environment whose episodes replay demonstrations.

    ``reset`` starts the next demonstration (that of the episode's task when there is one);
    ``step`` sets the policy's action aside and runs the demonstration's next action. Past its
    last action the episode is truncated (``info["expert_exhausted"]``) without a step.
    """

    source: Source = "expert"

    def __init__(self, env: AsyncEnv, demos: Demonstrations, task: str | None = None):
        self.env = env
        self.demos = demos
        self.task = task
        self.demo: Demonstration | None = None
        self._todo: list[str] = []

    @property
    def id(self) -> str | None:
        return self.env.id

    @property
    def last_obs(self) -> Obs | None:
        return self.env.last_obs

    @property
    def last_info(self) -> Info | None:
        return self.env.last_info

    async def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Obs, Info]:
        opts = dict(options or {})
        task = opts.get("task") or opts.get("task_id") or self.task
        self.demo = self.demos.pick(None if task is None else str(task))
        obs, info = await self.env.reset(seed=seed, options=self.demo.reset_options(opts))
        self._todo = list(self.demo.actions)
        return obs, {**info, "demonstration": self.demo.id}

    async def step(self, action: str | dict[str, Any]) -> tuple[Obs, float, bool, bool, Info]:
        demo = self.demo.id if self.demo else ""
        if not self._todo:
            info = {**(self.env.last_info or {}), "expert_exhausted": True, "demonstration": demo}
            return dict(self.env.last_obs or {}), 0.0, False, True, info
        todo = self._todo.pop(0)
        obs, reward, terminated, truncated, info = await self.env.step(todo)
        return obs, reward, terminated, truncated, {**info, "expert_action": todo, "demonstration": demo}

    async def close(self) -> None:
        await self.env.close()


__all__ = [
    "Demonstration",
    "Demonstrations",
    "ExpertEnv",
    "Mix",
    "SOURCES",
    "member_options",
    "oracle_demonstrations",
    "read_demonstrations",
]
