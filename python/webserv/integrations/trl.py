"""A TRL ``environment_factory`` class, its tools made from the server's action table.

TRL's GRPO trainer takes a class with a no-argument constructor, calls
``reset(**row)`` with each dataset row, offers every other public method as a
tool the model may call (its name, signature and docstring are the tool's
schema), and asks ``get_reward()`` at the end. It pools instances and never
closes them, so each instance keeps one server-side environment that the
server reclaims after its idle TTL.

    from webserv.integrations.trl import web_environment
    Shop = web_environment(site="open")
    trainer = GRPOTrainer(..., environment_factory=Shop)

The tools are the actions of the grammar, one per row of the action table
(``webserv.actions``, the server's ``actions`` op): ``click(bid)``,
``fill(bid, value, enter)``, ``select_option(bid, options)``, ``goto(url)``,
``tab_focus(index)``, ``stop(answer)``, the coordinate actions
(``mouse_click(x, y, button)``, ...) and the rest, each with the table's
description and typed arguments; an optional argument defaults to None (not
given). A call is written in the call form the server parses, with its
quoting rules, so any text reaches the page exactly. ``web_environment(...,
tools=[...])`` offers only some of them.

Rows may carry ``start_url``, ``goal``, ``task_id`` and ``uid`` (the group
key: rows of one GRPO group start from the same state). Every tool returns
the new page as accessibility-tree text with the semantic ids to act on,
and the last action's error if it failed (a wrong argument, too, is said
in words, as the trainer feeds a tool's answer back to the model).

Failures of the environment are never scored. When the browser, the site,
the server or the grader fails (an ``InfrastructureError``, or a grading
that returned no reward), the tools say so and end the episode, ``failure``
holds the error, and ``get_reward()`` returns None: TRL counts a rollout for
which every reward function returned None as unscorable (left out of its
group's baseline, advantage 0), not as a reward of 0. Reward functions of your
own should return None for it too (``env.failure is not None``).

The episode's ending step's account stays on the instance for reward
functions: ``terminated``, ``truncated`` and ``end_reason``; ``side_effects``,
the changes to the site's state the task did not ask for (``info.side_effects``,
docs/tasks.md "Side effects": under the default ``side_effects: report`` the
reward stands and they are listed here); and ``grader``, how an answer task
graded the answer (``info.grader``: ``semantics``, ``hackable_by_listing``,
``note``; docs/tasks.md "What a reward pays for"); and ``attack``, the outcome of a
prompt injection the environment carries (``info.attack``, docs/attacks.md).

Branching groups (Tree-GRPO): a row with ``prefix`` (a list of actions) and a ``uid`` starts
its group's members from the state those actions lead to, instead of the start: the first
member plays the prefix once, and each of the ``group_size`` members (``web_environment(...,
group_size=n)``, TRL's ``num_generations``) gets an exact fork of that state (``env.fork`` says
how it was made). Their rewards are the suffix's (what the model's calls add to the grade), so
the group's advantage compares continuations of one state.

Snapshots and forks are not tools (every public method of this class is
one, offered to the model); they are on ``web_env``, the gymnasium
environment underneath.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable, Iterable
from typing import Any, Optional

from .. import rollout
from ..actions import ActionDoc, table
from ..env import WebEnv
from ..errors import InfrastructureError, ResourceLimit
from ..mixing import Mix, Source, member_options
from ..options import EnvOptions
from ..prompt import render

#: The Python type of each argument type of the table (what TRL turns back into the JSON schema).
_PY_TYPES: dict[str, Any] = {
    "string": str,
    "number": float,
    "integer": int,
    "boolean": bool,
    "array": list[str],
}

#: What every tool returns, in its docstring.
_RETURNS = (
    "The page after the action, as accessibility-tree text with the element ids to act on, "
    "preceded by the action's error when it failed."
)


class WebEnvironment:
    """One browser environment as TRL tools. Subclass with ``web_environment``."""

    site: str = "open"
    server_url: str | None = None
    server_token: str | None = None
    max_steps: int | None = 30
    #: Further arguments of the protocol's ``make`` (``evaluate_every_step``, ``record``, ...).
    make_args: dict[str, Any] = {}  # noqa: RUF012 (a class's setting, replaced by web_environment)
    #: The page text's token budget and the tokenizer.json it counts with (docs/envcore.md).
    max_obs_tokens: int | None = None
    obs_tokenizer: str | None = None
    #: Mixed groups (``web_environment(mix=...)``): each member's source, and per ``uid`` how many
    #: members began (shared by the class's instances, as TRL resets a group's members one by one).
    sources: tuple[Source, ...] = ("real",)
    mix: Mix | None = None
    #: Members per group (TRL's ``num_generations``): mixes and branching rows need it.
    group_size: int | None = None
    _slots: dict[str, int]
    #: Branching rows (a ``prefix``): per ``uid``, the environment at the branch point and how
    #: many members forked from it so far (closed when the group is complete).
    _branches: dict[str, tuple[WebEnv, int]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._slots, cls._branches = {}, {}

    def __init__(self) -> None:
        self._env: WebEnv | None = None
        self._envs: dict[Source, WebEnv] = {}
        #: This episode's source: ``"real"`` or ``"dream"`` (mixed groups; reward functions weight by it).
        self.source: Source = "real"
        self._reward = 0.0
        self._done = False
        self._failure: InfrastructureError | None = None
        self._ended: tuple[bool, bool, str] = (False, False, "")
        self._info: dict[str, Any] = {}
        self._child: WebEnv | None = None  # this member's fork (a branching row's), closed on reset

    @property
    def fork(self) -> dict[str, Any]:
        """How this member's episode was forked from its group's branch point (a row with a
        ``prefix``): the fork's ``info.fork``, ``{"how", "exact", ...}``; {} for other rows."""
        if self._child is None or self._env is not self._child:
            return {}
        return dict((self._child.last_info or {}).get("fork") or {})

    @property
    def failure(self) -> InfrastructureError | None:
        """The infrastructure failure that ended this episode, if one did (then get_reward() is None)."""
        return self._failure

    @property
    def terminated(self) -> bool:
        """Whether the task ended (the agent stopped): docs/protocol.md, "How an episode ends"."""
        return self._ended[0]

    @property
    def truncated(self) -> bool:
        """Whether something else ended the episode (a step limit, a resource limit)."""
        return self._ended[1]

    @property
    def end_reason(self) -> str:
        """How the episode ended (``agent``, ``max_steps``, ``resource_limit``, ...), "" while it runs."""
        return self._ended[2]

    @property
    def side_effects(self) -> list[dict[str, Any]]:
        """The changes the episode made that its task did not ask for (the ending step's
        ``info.side_effects``: ``{table, op, key, row, old}`` each), [] when none or while it runs."""
        return list(self._info.get("side_effects") or [])

    @property
    def grader(self) -> dict[str, Any] | None:
        """How the task graded the answer (the ending step's ``info.grader``: ``semantics``,
        ``hackable_by_listing``, ``note``), None for a task that grades no answer."""
        return self._info.get("grader")

    @property
    def attack(self) -> dict[str, Any] | None:
        """The outcome of the environment's attack (``make_args={"attack": ...}``; the ending step's
        ``info.attack``: ``channel``, ``goal``, ``succeeded``, ``step``; docs/attacks.md), None
        without one or while the episode runs."""
        return self._info.get("attack")

    @property
    def web_env(self) -> WebEnv | None:
        """The gymnasium environment underneath (``snapshot``, ``restore``, ``fork``); None before reset."""
        return self._env

    # -- the trainer's side ---------------------------------------------------

    def reset(self, **row: Any) -> str | None:
        """Starts the episode the dataset row describes and returns what the model reads first:
        the goal (the task's, for a row naming only ``task_id``) and the first page."""
        if self._child is not None:
            child, self._child = self._child, None
            child.close()
        if row.get("prefix"):
            return self._branch(row)
        self.source = self._next_source(row.get("uid"))
        if self.source not in self._envs:
            group = self._options()
            if self.source == "dream":
                assert self.mix is not None
                group = self.mix.dream_options(group)
            self._envs[self.source] = WebEnv(options=group)
        self._env = self._envs[self.source]
        self._reward, self._done, self._failure, self._ended = 0.0, False, None, (False, False, "")
        self._info = {}
        options: dict[str, Any] = {}
        for key in ("start_url", "goal"):
            if row.get(key):
                options[key] = str(row[key])
        if row.get("task_id") is not None:
            options["task"] = str(row["task_id"])
        if row.get("uid") is not None:
            options["group_key"] = str(row["uid"])
        options = member_options(self.source, options)
        seed = row.get("seed")
        try:
            obs, _ = self._env.reset(seed=int(seed) if seed is not None else None, options=options)
        except InfrastructureError as e:
            return self._fail(e)
        return self._render(obs)

    def get_reward(self) -> float | None:
        """The episode's reward so far (the task's, given on the terminating step), or None when
        the environment failed (``failure``): never a 0 that the policy did not earn."""
        if self._failure is not None:
            return None
        return self._reward

    # -- internals ----------------------------------------------------------------

    def _options(self) -> EnvOptions:
        return EnvOptions(
            self.site,
            url=self.server_url,
            token=self.server_token,
            max_steps=self.max_steps,
            make_args=self.make_args,
            max_tokens=self.max_obs_tokens,
            tokenizer=self.obs_tokenizer,
        )

    def _branch(self, row: dict[str, Any]) -> str | None:
        """A member of a branching group: a fork of the state the row's ``prefix`` (actions) leads
        to, made by the group's first member and shared by its ``group_size`` members."""
        cls = type(self)
        if row.get("uid") is None or cls.group_size is None or cls.mix is not None:
            raise ValueError(
                "a row with a prefix branches a group: it needs a uid, and web_environment(group_size=n) "
                "without a mix"
            )
        key = str(row["uid"])
        self.source = "real"
        self._reward, self._done, self._failure, self._ended = 0.0, False, None, (False, False, "")
        self._info = {}
        try:
            if key not in cls._branches:
                point = WebEnv(options=self._options())
                options: dict[str, Any] = {k: str(row[k]) for k in ("start_url", "goal") if row.get(k)}
                if row.get("task_id") is not None:
                    options["task"] = str(row["task_id"])
                seed = row.get("seed")
                point.reset(seed=int(seed) if seed is not None else None, options=options)
                for i, action in enumerate(row["prefix"]):
                    obs, _, term, trunc, _ = point.step(str(action))
                    if obs["last_action_error"] or term or trunc:
                        point.close()
                        why = obs["last_action_error"] or "ended the episode"
                        raise ValueError(f"prefix action {i + 1} ({action!r}): {why}")
                cls._branches[key] = (point, 0)
            point, begun = cls._branches[key]
            (child,) = point.fork(1)
            if begun + 1 >= cls.group_size:
                del cls._branches[key]
                point.close()
            else:
                cls._branches[key] = (point, begun + 1)
        except InfrastructureError as e:
            cls._branches.pop(key, None)
            return self._fail(e)
        fork = (child.last_info or {}).get("fork") or {}
        if not fork.get("exact"):
            child.close()
            raise rollout.InexactFork(f"the group's fork is not its branch point's state: {fork}")
        self._env = self._child = child
        return self._render(child.last_obs or {})

    @classmethod
    def _next_source(cls, uid: Any) -> Source:
        """The k-th member of a group (the k-th reset with its uid) takes the k-th source."""
        n = len(cls.sources)
        if n == 1:
            return cls.sources[0]
        key = str(uid)
        k = cls._slots.get(key, 0)
        if k + 1 >= n:
            cls._slots.pop(key, None)
        else:
            cls._slots[key] = k + 1
        return cls.sources[k % n]

    def _act(self, action: str) -> str:
        if self._env is None:
            return "Error: the environment has not been reset."
        if self._failure is not None:
            return self._failed_text(self._failure)
        if self._done:
            return "The episode is over."
        try:
            obs, reward, terminated, truncated, info = self._env.step(action)
            if terminated or truncated:  # said even when the grading then fails
                self._ended = (terminated, truncated, str(info.get("end_reason", "")))
                self._info = info
            reward = rollout.graded(reward, info)
        except InfrastructureError as e:
            return self._fail(e)
        except ResourceLimit as e:  # the pages this policy opened: its episode ends, its reward stands
            self._done, self._ended = True, (False, True, e.code)
            return f"Error: {e.message}\n\nThe episode has ended."
        self._reward += reward
        self._done = terminated or truncated
        text = self._render(obs)
        if terminated:
            text += "\n\nThe episode has ended."
        elif truncated:
            text += "\n\nThe episode ran out of steps."
        return text

    def _fail(self, error: InfrastructureError) -> str:
        self._failure, self._done = error, True
        return self._failed_text(error)

    @staticmethod
    def _failed_text(error: InfrastructureError) -> str:
        return f"The environment failed (not because of your actions): {error}. The episode cannot go on."

    @staticmethod
    def _render(obs: dict[str, Any]) -> str:
        return render(obs)  # the goal first, then the page: every path's one format


def _docstring(doc: ActionDoc) -> str:
    """The tool's docstring in the Google style TRL (transformers' ``get_json_schema``) reads:
    the description, one line per argument under ``Args:``, and ``Returns:``."""
    lines = [doc.description, ""]
    if doc.args:
        lines.append("Args:")
        lines += [f"    {a.name}: {' '.join(a.doc.split())}" for a in doc.args]
        lines.append("")
    lines += ["Returns:", f"    {_RETURNS}"]
    return "\n".join(lines)


def _tool(doc: ActionDoc) -> Callable[..., str]:
    """The method that offers one action of the table as a tool: its name, a typed signature
    (optional arguments default to None), and a docstring with every argument. Arguments after
    an optional one (press's key, after its optional bid) are keyword-only, as Python requires."""
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    positional: list[str] = []
    for a in doc.args:
        typ = _PY_TYPES[a.type]
        if a.required:
            params.append(inspect.Parameter(a.name, kind, annotation=typ))
            if kind is inspect.Parameter.POSITIONAL_OR_KEYWORD:
                positional.append(a.name)
        else:
            # transformers' schema reads typing.Optional (a Union), not X | None, on Python 3.10-3.13.
            typ = Optional[typ]  # noqa: UP045  # ty: ignore[invalid-type-form]
            params.append(inspect.Parameter(a.name, kind, default=None, annotation=typ))
            if kind is inspect.Parameter.POSITIONAL_OR_KEYWORD:
                positional.append(a.name)
            kind = inspect.Parameter.KEYWORD_ONLY
        annotations[a.name] = typ
    annotations["return"] = str

    def tool(self: WebEnvironment, *args: Any, **kwargs: Any) -> str:
        if len(args) > len(positional):
            takes = ", ".join(positional)
            n = len(positional)
            return f"Error: {doc.name} takes at most {n} positional arguments ({takes}), not {len(args)}."
        values = dict(zip(positional, args, strict=False))
        twice = sorted(set(values) & set(kwargs))
        if twice:
            return f"Error: {doc.name}: {', '.join(twice)} given twice."
        try:
            action = doc.call({**values, **kwargs})
        except ValueError as e:
            return f"Error: {e}."
        return self._act(action)

    tool.__name__ = doc.name
    tool.__qualname__ = f"WebEnvironment.{doc.name}"
    tool.__doc__ = _docstring(doc)
    tool.__annotations__ = annotations
    tool.__signature__ = inspect.Signature(params, return_annotation=str)  # ty: ignore[missing-attribute]
    return tool


def _install_tools() -> None:
    for doc in table():
        if doc.name in vars(WebEnvironment):
            raise RuntimeError(f"the action {doc.name} would hide WebEnvironment.{doc.name}")
        setattr(WebEnvironment, doc.name, _tool(doc))


_install_tools()

#: The tools' names, in the table's order.
TOOLS: tuple[str, ...] = tuple(d.name for d in table())


def web_environment(
    site: str = "open",
    *,
    server_url: str | None = None,
    server_token: str | None = None,
    max_steps: int | None = 30,
    tools: Iterable[str] | None = None,
    mix: Mix | None = None,
    group_size: int | None = None,
    make_args: dict[str, Any] | None = None,
    max_obs_tokens: int | None = None,
    obs_tokenizer: str | None = None,
) -> type[WebEnvironment]:
    """A WebEnvironment class bound to a site and server, for ``environment_factory``.

    ``server_token`` is the server's token (default ``$WEBSERV_TOKEN``). ``tools`` names the
    actions offered as tools (``["click", "fill", "goto", "stop"]``; default every action of
    the table); an unknown name is refused with the nearest.

    ``mix`` (with ``group_size``, TRL's ``num_generations``) makes groups of real and dreamed
    members: the k-th reset of a row's ``uid`` takes the k-th source of ``mix.sources(group_size)``,
    and ``env.source`` says which. Expert members are refused: TRL trains on the model's own
    tool calls, and an expert member has none (train on the demonstrations with SFT, or mix
    them in with the verl adapter or the vector environment; docs/dream.md, "Mixing").

    ``make_args`` are further arguments of the protocol's ``make``, such as
    ``{"evaluate_every_step": True}`` (then each tool call's reward is the change in the task's
    grade, so ``get_reward()``, their sum, is the final grade; docs/protocol.md, "Rewards").

    ``max_obs_tokens`` with ``obs_tokenizer`` (the model's tokenizer.json: a path the server
    reads, or a name in its ``--tokenizers`` directory) bounds every page text the model reads to
    that many tokens, pruned as docs/envcore.md ("Token budget") says, so that no page overflows
    the model's context.
    """
    attrs: dict[str, Any] = {
        "site": site,
        "server_url": server_url,
        "server_token": server_token,
        "max_steps": max_steps,
        "make_args": dict(make_args or {}),
        "max_obs_tokens": max_obs_tokens,
        "obs_tokenizer": obs_tokenizer,
    }
    if max_obs_tokens is not None and not obs_tokenizer:
        raise ValueError(
            "max_obs_tokens needs obs_tokenizer: the model's tokenizer.json, as a path or a name"
        )
    if mix is not None:
        if group_size is None or group_size < 1:
            raise ValueError(
                "a mix needs group_size, the number of members of a group (TRL's num_generations)"
            )
        if mix.expert > 0:
            raise ValueError(
                "TRL's environment_factory trains on the model's own tool calls, and an expert member "
                "has none: train on the demonstrations with SFT, or mix experts in with "
                "webserv.integrations.verl or the vector environment (docs/dream.md, Mixing)"
            )
        attrs.update(mix=mix, sources=tuple(mix.sources(group_size)))
    if group_size is not None:
        attrs["group_size"] = group_size
    if tools is not None:
        keep = list(tools)
        for name in keep:
            if name not in TOOLS:
                near = difflib.get_close_matches(name, TOOLS, n=1)
                hint = f"; did you mean {near[0]}?" if near else f"; the tools are {', '.join(TOOLS)}"
                raise ValueError(f"no tool {name!r}{hint}")
        # An attribute that is not a method is no tool: TRL offers the methods only.
        attrs.update({name: None for name in TOOLS if name not in keep})
    return type(f"WebEnvironment_{site}", (WebEnvironment,), attrs)
