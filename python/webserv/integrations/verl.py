"""verl adapters: an agent loop and a tool, in the shapes verl calls.

verl runs every sample of a batch at once as coroutines (``AgentLoopBase.run``),
about ``train_batch_size x rollout.n`` episodes in flight; the members of a
GRPO group share the row's ``uid``. It does not reliably call a release hook.
``WebAgentLoop`` alternates generation with environment steps, uses ``uid``
as the group key (every member starts from the same state), puts the final
reward in its output, and closes its environment in ``finally``. It keeps
the environment's id per request, so a partial rollout that is resumed goes
on in the same environment.

``generate`` is the model's turn. Under verl, subclass and implement it with
the server manager and tokenizer verl passes to the constructor; tests pass a
``policy`` coroutine instead. Nothing here imports verl.

Failures of the environment are never scored. verl reads a missing
``reward_score`` as "compute it with the reward function", so a failed
rollout cannot be told apart by its number; ``WebAgentLoop.run`` therefore
raises the ``InfrastructureError`` (or ``EvaluationError`` when the grader
failed) by default, after closing the environment. With
``on_infrastructure_error="report"`` it returns the rollout instead, with
``reward_score`` None and ``failure`` saying what failed, for glue code that
drops such rollouts. ``WebTool`` raises from ``execute`` and ``calc_reward``
and records the failure in ``agent_data.extra_fields["webserv_failure"]``
when verl passes ``agent_data``.

What the ending step says beyond the reward reaches the trainer too (docs/tasks.md, "Side
effects" and "What a reward pays for"): the loop's ``metrics`` carry ``side_effects`` (how
many changes the task did not ask for), ``grader`` (an answer task's grading semantics, such
as ``typed.number``; "" otherwise), ``grader_hackable`` and ``attack_succeeded`` (an attack
in the page met its goal, docs/attacks.md), and its ``webserv`` field the lists themselves
(``side_effects``, ``grader``, ``attack``); ``WebTool.execute``'s extra carries the step's
``side_effects``, ``grader`` and ``attack``.

Mixed groups (``WebAgentLoop(mix=webserv.Mix(expert=0.5), group_size=n)``,
n being verl's ``rollout.n``): the k-th rollout of a ``uid`` takes the k-th
source of ``mix.sources(n)``, so every group has the shares asked for. A
dream member rolls out with the policy in the dream environment; an expert
member runs its demonstration's actions instead of generating (in a real
environment, or with ``expert_mode="recorded"`` returns the recorded
sequence and reward without one). The output's ``source`` (and
``metrics["source"]``) says which, ``demonstration`` which one was replayed;
the trajectory's actions are what was run. See docs/dream.md, "Mixing".

This is verl's one agent loop: ``webserv.ray.verl.WebServAgentLoop`` (the loop
verl's registry builds) is this loop on a Ray fleet with verl's output type.
Where its environments come from is a ``ClientSource``: a server's URL (and
token) or a Ray fleet's name; the clients are cached per source and event
loop (``client_of``). Given verl's ``server_manager`` and ``tokenizer`` (and
no ``policy`` or overridden ``generate``), the model's turns are generated
token by token: the output then carries ``prompt_ids``, ``response_ids``,
``response_mask`` (the pages between turns masked out, 0) and
``response_logprobs``; an expert member's actions are its turns.
"""

from __future__ import annotations

import asyncio
import os
import uuid
import weakref
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NoReturn

from .. import parse, rollout
from ..client import AsyncClient, AsyncEnv, Obs
from ..errors import InfrastructureError
from ..mixing import Demonstration, Demonstrations, Mix, Source, member_options
from ..options import EnvOptions, with_budget
from ..prompt import keywords_of, page_text, refuse_unknown, render

Policy = Callable[[Obs, list[dict[str, Any]]], Awaitable[str]]

#: Keywords verl's AgentLoopWorker passes to an agent loop that this loop has no use for.
_VERL_KEYWORDS = ("trainer_config", "processor", "dataset_cls", "dataset_config")


def parse_action(text: str) -> str:
    """The action of a model's turn, by ``webserv.parse``'s grammar. A turn without one is sent as
    written (the line where the action should be, ``ActionParseError.candidate``), so that the
    server's error for it is what the model reads on the next page; an empty turn is ``noop()``."""
    try:
        return parse.parse_action(text)
    except parse.ActionParseError as e:
        return e.candidate or "noop()"


@dataclass(frozen=True)
class ClientSource:
    """Where a loop's environments come from: a server (``url``, default ``$WEBSERV_URL`` or a
    local ``webserv serve``, and its ``token``) or a Ray fleet by name (``fleet``: its servers,
    node-local first; ``webserv.ray``)."""

    url: str | None = None
    token: str | None = None
    fleet: str | None = None


# One client per source and event loop, shared by every loop and tool of a process; a client is
# bound to the event loop it was made in, so a new loop (another asyncio.run) gets its own.
_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[ClientSource, AsyncClient]] = (
    weakref.WeakKeyDictionary()
)
_client_locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
    weakref.WeakKeyDictionary()
)
_no_loop: dict[ClientSource, AsyncClient] = {}  # clients made outside a running loop


def _cached(source: ClientSource) -> dict[ClientSource, AsyncClient]:
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return _no_loop
    return _clients.setdefault(loop, {})


def url_client(source: ClientSource) -> AsyncClient:
    """The client of a server source in this event loop (made on first use)."""
    if source.fleet is not None:
        raise ValueError(
            f"the client of fleet {source.fleet!r} is made asynchronously: await client_of(source)"
        )
    cache = _cached(source)
    c = cache.get(source)
    if c is None:
        c = cache[source] = AsyncClient(source.url, token=source.token)
    return c


async def client_of(source: ClientSource) -> AsyncClient:
    """The client of a source in this event loop (made on first use): one per source and loop."""
    if source.fleet is None:
        return url_client(source)
    loop = asyncio.get_running_loop()
    lock = _client_locks.setdefault(loop, asyncio.Lock())
    async with lock:
        cache = _cached(source)
        c = cache.get(source)
        if c is None:
            from ..ray.fleet import Fleet  # Ray only for a fleet source

            c = cache[source] = await Fleet.get(source.fleet).client_async()
        return c


class _Tokens:
    """One episode's tokens under verl: the prompt, then the model's turns (mask 1) and the pages
    between them (mask 0), with the turns' log-probabilities."""

    def __init__(self, loop: WebAgentLoop, messages: list[dict[str, Any]], sampling_params: dict[str, Any]):
        self.loop, self.messages, self.sampling_params = loop, messages, sampling_params
        self.request_id = uuid.uuid4().hex
        self.prompt_ids: list[int] = []
        self.response_ids: list[int] = []
        self.mask: list[int] = []
        self.logprobs: list[float] = []

    def _template(self, messages: list[dict[str, Any]]) -> list[int]:
        ids = self.loop.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
        return list(ids["input_ids"] if isinstance(ids, dict) else ids)

    def page(self, obs: Obs, first: bool) -> None:
        if first:  # the first page is the prompt's end
            self.messages.append({"role": "user", "content": render(obs)})
            self.prompt_ids = self._template(self.messages)
        else:  # each later page follows the model's turn, masked out
            page = self._template([{"role": "user", "content": page_text(obs)}])
            self.add(page, 0)

    def add(self, tokens: list[int], mask: int, logprobs: list[float] | None = None) -> None:
        self.response_ids.extend(tokens)
        self.mask.extend([mask] * len(tokens))
        self.logprobs.extend(logprobs or [0.0] * len(tokens))

    def full(self) -> bool:
        return len(self.response_ids) >= self.loop.response_length

    async def generate(self, obs: Obs, history: list[dict[str, Any]]) -> str | None:
        """The model's turn, generated by verl's server manager."""
        self.page(obs, not history)
        if self.full():
            return None
        out = await self.loop.server_manager.generate(
            request_id=self.request_id,
            prompt_ids=self.prompt_ids + self.response_ids,
            sampling_params=self.sampling_params,
        )
        tokens = list(getattr(out, "token_ids", out))
        self.add(tokens, 1, list(getattr(out, "log_probs", None) or []) or None)
        return parse_action(self.loop.tokenizer.decode(tokens, skip_special_tokens=True))

    def fork(self) -> _Tokens:
        """A copy of this episode's tokens so far, generating under its own request id: one
        continuation of a branch."""
        kid = _Tokens(self.loop, [dict(m) for m in self.messages], self.sampling_params)
        kid.prompt_ids, kid.response_ids = list(self.prompt_ids), list(self.response_ids)
        kid.mask, kid.logprobs = list(self.mask), list(self.logprobs)
        return kid

    def expert(self, actions: Sequence[str]) -> Callable[[Obs, list[dict[str, Any]]], str | None]:
        """An expert member's turns: its demonstration's actions, as the model's tokens."""

        def policy(obs: Obs, history: list[dict[str, Any]]) -> str | None:
            self.page(obs, not history)
            if len(history) >= len(actions) or self.full():
                return None
            action = actions[len(history)]
            self.add(list(self.loop.tokenizer.encode(action)), 1)
            return action

        return policy

    def fields(self) -> dict[str, Any]:
        n = self.loop.response_length
        return {
            "prompt_ids": self.prompt_ids,
            "response_ids": self.response_ids[:n],
            "response_mask": self.mask[:n],
            "response_logprobs": self.logprobs[:n],
        }


def _tokenizer_file(tokenizer: Any) -> str | None:
    """The tokenizer.json of verl's tokenizer (a transformers tokenizer loaded from a local
    directory), for the observation budget; None when it has none on disk."""
    path = getattr(tokenizer, "name_or_path", None)
    if isinstance(path, str) and path and os.path.isfile(os.path.join(path, "tokenizer.json")):
        return os.path.abspath(os.path.join(path, "tokenizer.json"))
    return None


class WebAgentLoop:
    """Shaped like verl's ``AgentLoopBase``: ``await loop.run(sampling_params, **row)``."""

    def __init__(
        self,
        config: Any = None,
        server_manager: Any = None,
        tokenizer: Any = None,
        *,
        site: str = "open",
        server_url: str | None = None,
        server_token: str | None = None,
        fleet: str | None = None,
        max_turns: int = 10,
        response_length: int = 4096,
        policy: Policy | None = None,
        on_infrastructure_error: Literal["raise", "report"] = "raise",
        mix: Mix | None = None,
        group_size: int | None = None,
        make_args: dict[str, Any] | None = None,
        max_obs_tokens: int | None = None,
        obs_tokenizer: str | None = None,
        **verl_keywords: Any,
    ):
        # verl passes these to every agent loop; anything else is a misspelt setting.
        refuse_unknown(
            "WebAgentLoop",
            {k: v for k, v in verl_keywords.items() if k not in _VERL_KEYWORDS},
            [*keywords_of(WebAgentLoop.__init__), *_VERL_KEYWORDS],
        )
        if on_infrastructure_error not in ("raise", "report"):
            raise ValueError("on_infrastructure_error is 'raise' or 'report'")
        if mix is not None and (group_size is None or group_size < 1):
            raise ValueError("a mix needs group_size, the number of rollouts per row (verl's rollout.n)")
        self.mix, self.group_size = mix, group_size or 1
        self._sources: list[Source] = mix.sources(self.group_size) if mix is not None else ["real"]
        self._slots: dict[str, int] = {}  # uid -> rollouts of it begun so far (mixed groups)
        self._demos: Demonstrations | None = None
        if fleet is not None and (server_url or server_token):
            raise ValueError("give a server (server_url, server_token) or a Ray fleet (fleet), not both")
        self.server_url, self.server_token = server_url, server_token
        self.source = ClientSource(server_url, server_token, fleet)
        self.response_length = response_length  # verl's rollout.response_length (token mode)
        # Further make arguments (evaluate_every_step, ...), with the page text's token budget.
        self.make_args = with_budget(make_args, max_obs_tokens, obs_tokenizer or _tokenizer_file(tokenizer))
        self.on_infrastructure_error = on_infrastructure_error
        self.config = config if config is not None else verl_keywords.get("trainer_config")
        self.server_manager = server_manager
        self.tokenizer = tokenizer
        self.site = site
        self.max_turns = max_turns
        self.policy = policy
        self.sessions: dict[str, str] = {}  # request id -> environment id (resumed rollouts)

    @property
    def client(self) -> AsyncClient:
        """The client of the loop's server in this event loop (``await client_of(loop.source)`` for
        a fleet's)."""
        return url_client(self.source)

    @property
    def tokens(self) -> bool:
        """Whether the model's turns are generated token by token with verl's server manager (given
        it and the tokenizer, and neither ``policy`` nor an overridden ``generate``)."""
        return (
            self.policy is None
            and type(self).generate is WebAgentLoop.generate
            and self.server_manager is not None
            and self.tokenizer is not None
        )

    @staticmethod
    def render(obs: Obs) -> str:
        """What the model reads of an observation: the goal first, then the page
        (``webserv.prompt.render``, every adapter's one format). ``generate`` builds its
        prompt from it."""
        return render(obs)

    async def generate(self, obs: Obs, history: list[dict[str, Any]], sampling_params: dict[str, Any]) -> str:
        """The model's next action for this observation (its text: ``self.render(obs)``)."""
        if self.policy is None:
            raise NotImplementedError(
                "subclass WebAgentLoop and generate with verl's server_manager, or pass policy="
            )
        return await self.policy(obs, history)

    async def run(self, sampling_params: dict[str, Any], **row: Any) -> dict[str, Any]:
        """One episode for one dataset row; returns the trajectory, reward and metrics.

        Raises ``InfrastructureError`` when the environment failed (see the module's
        doc for ``on_infrastructure_error="report"``).
        """
        extra = row.get("extra_info") or {}
        options: dict[str, Any] = {}
        for key in ("start_url", "goal", "task_id"):
            value = row.get(key, extra.get(key))
            if value is not None:
                options["task" if key == "task_id" else key] = value
        uid = row.get("uid")
        if uid is not None:
            options["group_key"] = str(uid)
        request_id = str(row.get("request_id") or uid or id(row))

        def note(env: AsyncEnv, _obs: Obs, _info: dict[str, Any]) -> None:
            if env.id:
                self.sessions[request_id] = env.id

        async def generate(obs: Obs, history: list[dict[str, Any]]) -> str | None:
            return await self.generate(obs, history, sampling_params)

        tokens = (
            _Tokens(self, [dict(m) for m in row.get("raw_prompt") or []], sampling_params)
            if self.tokens
            else None
        )
        source = self._source(uid)
        env = AsyncEnv(await client_of(self.source), self.site, **self.make_args)
        policy: rollout.Policy = tokens.generate if tokens is not None else generate
        max_turns = self.max_turns
        demo: Demonstration | None = None
        if source == "dream":
            assert self.mix is not None
            dream = self.mix.dream_options(
                EnvOptions(site=self.site, url=self.server_url, token=self.server_token)
            )
            # The dream's server: its own URL when the mix names one, else the loop's source.
            where = (
                self.source
                if dream.url is None and self.source.fleet
                else ClientSource(dream.url, dream.token)
            )
            env = AsyncEnv(await client_of(where), dream.site, **dream.request())
            options = member_options("dream", options)
        elif source == "expert":
            assert self.mix is not None
            demo = (await self._demonstrations()).pick(options.get("task"))
            if self.mix.expert_mode == "recorded":
                return _recorded(demo)
            actions = demo.actions

            def replay(_obs: Obs, history: list[dict[str, Any]]) -> str | None:
                return actions[len(history)] if len(history) < len(actions) else None

            policy = tokens.expert(actions) if tokens is not None else replay
            options, max_turns = demo.reset_options(options), len(actions)
        try:
            outcome = await rollout.run(
                env,
                policy,
                max_turns,
                options=options,
                on_failure=self.on_infrastructure_error,
                on_reset=note,
            )
        finally:
            self.sessions.pop(request_id, None)
        out = self._output(outcome, source, tokens)
        if demo is not None:
            out["demonstration"] = demo.id
        return out

    @staticmethod
    def _output(outcome: rollout.Outcome, source: Source, tokens: _Tokens | None = None) -> dict[str, Any]:
        """A rollout's outcome in the shape ``run`` returns."""
        out: dict[str, Any] = {
            "reward_score": outcome.reward,
            "num_turns": outcome.turns,
            "trajectory": outcome.history,
            "metrics": {
                "terminated": outcome.terminated,
                "truncated": outcome.truncated,
                "end_reason": outcome.end_reason,
                "grade": outcome.grade,
                "group_role": outcome.group_role,
                "source": source,
                # The ending step's side effects (how many) and answer grading (docs/tasks.md).
                "side_effects": len(outcome.info.get("side_effects") or []),
                "grader": (outcome.info.get("grader") or {}).get("semantics", ""),
                "grader_hackable": bool((outcome.info.get("grader") or {}).get("hackable_by_listing")),
                # Whether the agent did what an attack in the page asked (docs/attacks.md).
                "attack_succeeded": bool((outcome.info.get("attack") or {}).get("succeeded")),
            },
            "source": source,
        }
        out["webserv"] = {
            "host": outcome.host,
            "policy_seconds": outcome.policy_seconds,
            "env_seconds": outcome.env_seconds,
            "side_effects": list(outcome.info.get("side_effects") or []),
            "grader": outcome.info.get("grader"),
            "attack": outcome.info.get("attack"),
        }
        if tokens is not None:
            out.update(tokens.fields())
        if outcome.fork:
            out["webserv"]["fork"] = outcome.fork
            out["metrics"]["fork_exact"] = bool(outcome.fork.get("exact"))
        if outcome.failure is not None:
            out["failure"] = outcome.failure_record()
            out["metrics"]["failure"] = outcome.failure.code
        return out

    async def branch(
        self, sampling_params: dict[str, Any], n: int, prefix: Sequence[str], **row: Any
    ) -> list[dict[str, Any]]:
        """A tree-structured group (Tree-GRPO): the row's episode played through ``prefix`` (actions,
        as the policy would send them), then ``n`` continuations by the model from that one state,
        each an exact fork (``rollout.branch``). Returns ``n`` outputs shaped like ``run``'s, their
        ``trajectory`` and ``num_turns`` the continuation's, ``prefix`` the prefix's turns,
        ``metrics["fork_exact"]`` and ``webserv["fork"]`` how the fork was made; the continuations
        have ``max_turns`` minus the prefix's turns. An advantage over the group compares the
        continuations of one state: the prefix's credit cancels out.

        A prefix step that ends the episode, fails to parse or errors raises ``ValueError`` (the
        prefix is the caller's); a fork that is not exact raises ``rollout.InexactFork``. In token
        mode (verl's server manager) each continuation's tokens are the row's prompt, then the
        prefix (its actions and pages, all masked out: the prefix is not the continuation's to be
        trained on), then the continuation's turns (mask 1) and pages (mask 0), each continuation
        generating under its own request id.
        """
        if self.mix is not None:
            raise ValueError("branch makes real continuations; a mix's groups come from run")
        if len(prefix) >= self.max_turns:
            raise ValueError(f"a prefix of {len(prefix)} turns leaves none of max_turns={self.max_turns}")
        extra = row.get("extra_info") or {}
        options: dict[str, Any] = {}
        for key in ("start_url", "goal", "task_id"):
            value = row.get(key, extra.get(key))
            if value is not None:
                options["task" if key == "task_id" else key] = value

        async def generate(obs: Obs, history: list[dict[str, Any]]) -> str | None:
            return await self.generate(obs, history, sampling_params)

        base = (
            _Tokens(self, [dict(m) for m in row.get("raw_prompt") or []], sampling_params)
            if self.tokens
            else None
        )
        kids: list[_Tokens] = []
        env = AsyncEnv(await client_of(self.source), self.site, **self.make_args)
        try:
            obs, _ = await env.reset(seed=row.get("seed", extra.get("seed")), options=options)
            history: list[dict[str, Any]] = []
            for action in prefix:
                if base is not None:
                    # The page before the action (the first is the prompt's end; the page after
                    # the last is each continuation's first), then the action, masked out.
                    base.page(obs, not history)
                    base.add(list(self.tokenizer.encode(action)), 0)
                obs, _, term, trunc, _ = await env.step(action)
                if obs["last_action_error"] or term or trunc:
                    raise ValueError(
                        f"prefix action {len(history) + 1} ({action!r}) "
                        + (
                            f"failed: {obs['last_action_error']}"
                            if obs["last_action_error"]
                            else "ended the episode"
                        )
                    )
                history.append({"action": action, "error": "", "url": obs["url"]})
            policies: rollout.Policy | list[rollout.Policy] = generate
            if base is not None:
                kids = [base.fork() for _ in range(n)]
                policies = [k.generate for k in kids]
            outcomes = await rollout.branch(
                env,
                n,
                policies,
                self.max_turns - len(prefix),
                history=history,
                on_failure=self.on_infrastructure_error,
            )
        finally:
            await env.close()
        outs = []
        for i, outcome in enumerate(outcomes):
            out = self._output(outcome, "real", kids[i] if kids else None)
            out["prefix"] = history
            outs.append(out)
        return outs

    def _source(self, uid: Any) -> Source:
        """The source of this rollout of its row: the k-th rollout of a uid takes the k-th of the mix's."""
        if self.mix is None:
            return "real"
        key = str(uid)
        k = self._slots.get(key, 0)
        if k + 1 >= self.group_size:
            self._slots.pop(key, None)  # the group is complete: a next one starts over
        else:
            self._slots[key] = k + 1
        return self._sources[k % self.group_size]

    async def _demonstrations(self) -> Demonstrations:
        if self._demos is None:
            assert self.mix is not None
            d = self.mix.demonstrations
            tasks = (
                await (await client_of(self.source)).tasks(self.site)
                if isinstance(d, str) and d == "oracles"
                else None
            )
            self._demos = Demonstrations(self.mix.load_demonstrations(tasks))
        return self._demos


def _recorded(demo: Demonstration) -> dict[str, Any]:
    """An expert rollout as recorded, without an environment (``expert_mode="recorded"``)."""
    return {
        "reward_score": demo.reward,
        "num_turns": len(demo.actions),
        "trajectory": [{"action": a, "error": "", "url": ""} for a in demo.actions],
        "metrics": {"terminated": True, "truncated": False, "group_role": "", "source": "expert"},
        "source": "expert",
        "demonstration": demo.id,
    }


class WebTool:
    """Shaped like verl's ``BaseTool``: one environment per request id.

    ``create`` makes (or re-attaches) the request's environment, ``execute``
    runs one action string and returns the page text, ``calc_reward`` and
    ``release`` end it. ``execute``'s extra holds the step's ``terminated``, ``truncated``,
    ``end_reason``, ``settled``, ``side_effects``, ``grader`` and ``attack``. An environment nobody
    releases is reclaimed by the server after its idle TTL. ``fork`` branches an instance into new ones
    (on hosted sites), for loops that search over rollouts.
    """

    def __init__(
        self,
        config: Any = None,
        tool_schema: Any = None,
        *,
        site: str = "open",
        server_url: str | None = None,
        server_token: str | None = None,
        make_args: dict[str, Any] | None = None,
        max_obs_tokens: int | None = None,
        obs_tokenizer: str | None = None,
    ):
        self.config, self.tool_schema, self.site = config, tool_schema, site
        # Further make arguments (evaluate_every_step, ...), with the page text's token budget.
        self.make_args = with_budget(make_args, max_obs_tokens, obs_tokenizer)
        self.source = ClientSource(server_url, server_token)
        self.envs: dict[str, AsyncEnv] = {}
        self.rewards: dict[str, float] = {}
        self.failures: dict[str, InfrastructureError] = {}

    @property
    def client(self) -> AsyncClient:
        """The client of the tool's server in this event loop."""
        return url_client(self.source)

    async def create(self, instance_id: str, **row: Any) -> str:
        env = self.envs.get(instance_id)
        if env is None:
            env = self.envs[instance_id] = AsyncEnv(await client_of(self.source), self.site, **self.make_args)
        options = {k: row[k] for k in ("start_url", "goal") if k in row}
        if row.get("task_id") is not None:
            options["task"] = str(row["task_id"])
        if "uid" in row:
            options["group_key"] = str(row["uid"])
        self.failures.pop(instance_id, None)
        try:
            await env.reset(options=options)
        except InfrastructureError as e:
            self._fail(instance_id, e, None)
        self.rewards[instance_id] = 0.0
        return instance_id

    async def execute(
        self, instance_id: str, parameters: dict[str, Any], **kwargs: Any
    ) -> tuple[str, float, dict[str, Any]]:
        agent_data = kwargs.get("agent_data")
        if instance_id in self.failures:
            self._fail(instance_id, self.failures[instance_id], agent_data)
        env = self.envs[instance_id]
        try:
            obs, reward, terminated, truncated, info = await env.step(str(parameters.get("action", "noop()")))
            reward = rollout.graded(reward, info)
        except InfrastructureError as e:
            self._fail(instance_id, e, agent_data)
        self.rewards[instance_id] = self.rewards.get(instance_id, 0.0) + reward
        return (
            render(obs),  # the goal first, then the page
            reward,
            {
                "terminated": terminated,
                "truncated": truncated,
                "end_reason": info.get("end_reason", ""),
                "settled": info.get("settled"),
                "side_effects": list(info.get("side_effects") or []),
                "grader": info.get("grader"),
                "attack": info.get("attack"),
            },
        )

    async def calc_reward(self, instance_id: str, **_: Any) -> float:
        """The instance's reward; raises its InfrastructureError if the environment failed."""
        if instance_id in self.failures:
            raise self.failures[instance_id]
        return self.rewards.get(instance_id, 0.0)

    async def fork(self, instance_id: str, new_ids: list[str]) -> list[str]:
        """Branches the instance's environment (a snapshot now) into one new instance per id,
        each at the same state on its own copy of the site; returns their first pages."""
        env = self.envs[instance_id]
        children = await env.fork(len(new_ids))
        texts = []
        for new_id, child in zip(new_ids, children, strict=True):
            self.envs[new_id] = child
            self.rewards[new_id] = self.rewards.get(instance_id, 0.0)
            obs = child.last_obs or {}
            texts.append(render(obs))
        return texts

    async def release(self, instance_id: str, **_: Any) -> None:
        env = self.envs.pop(instance_id, None)
        self.rewards.pop(instance_id, None)
        self.failures.pop(instance_id, None)
        if env is not None:
            await env.close()

    def _fail(self, instance_id: str, error: InfrastructureError, agent_data: Any) -> NoReturn:
        self.failures[instance_id] = error
        extra = getattr(agent_data, "extra_fields", None)
        if isinstance(extra, dict):
            extra["webserv_failure"] = {"code": error.code, "fault": error.fault, "message": error.message}
        raise error


__all__ = ["ClientSource", "WebAgentLoop", "WebTool", "client_of", "parse_action", "url_client"]
