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
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ..client import AsyncClient, AsyncEnv, Obs

Policy = Callable[[Obs, list[dict[str, Any]]], Awaitable[str]]

_clients: dict[str | None, AsyncClient] = {}


def _client(url: str | None) -> AsyncClient:
    """One connection per server and event loop's process, shared by all loops."""
    c = _clients.get(url)
    if c is None:
        c = _clients[url] = AsyncClient(url)
    return c


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
        max_turns: int = 10,
        policy: Policy | None = None,
        **_: Any,
    ):
        self.config = config
        self.server_manager = server_manager
        self.tokenizer = tokenizer
        self.site = site
        self.max_turns = max_turns
        self.policy = policy
        self.client = _client(server_url)
        self.sessions: dict[str, str] = {}  # request id -> environment id (resumed rollouts)

    async def generate(self, obs: Obs, history: list[dict[str, Any]], sampling_params: dict[str, Any]) -> str:
        """The model's next action for this observation."""
        if self.policy is None:
            raise NotImplementedError(
                "subclass WebAgentLoop and generate with verl's server_manager, or pass policy="
            )
        return await self.policy(obs, history)

    async def run(self, sampling_params: dict[str, Any], **row: Any) -> dict[str, Any]:
        """One episode for one dataset row; returns the trajectory, reward and metrics."""
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
        env = AsyncEnv(self.client, self.site)
        history: list[dict[str, Any]] = []
        reward, turns, terminated, truncated, role = 0.0, 0, False, False, ""
        try:
            obs, info = await env.reset(options=options)
            role = str(info.get("group_role", ""))
            if env.id:
                self.sessions[request_id] = env.id
            while turns < self.max_turns:
                turns += 1
                action = await self.generate(obs, history, sampling_params)
                obs, r, terminated, truncated, info = await env.step(action)
                reward += r
                history.append({"action": action, "error": obs["last_action_error"], "url": obs["url"]})
                if terminated or truncated:
                    break
        finally:
            self.sessions.pop(request_id, None)
            await env.close()
        return {
            "reward_score": reward,
            "num_turns": turns,
            "trajectory": history,
            "metrics": {
                "terminated": terminated,
                "truncated": truncated,
                "group_role": role,
            },
        }


class WebTool:
    """Shaped like verl's ``BaseTool``: one environment per request id.

    ``create`` makes (or re-attaches) the request's environment, ``execute``
    runs one action string and returns the page text, ``calc_reward`` and
    ``release`` end it. An environment nobody releases is reclaimed by the
    server after its idle TTL.
    """

    def __init__(
        self,
        config: Any = None,
        tool_schema: Any = None,
        *,
        site: str = "open",
        server_url: str | None = None,
    ):
        self.config, self.tool_schema, self.site = config, tool_schema, site
        self.client = _client(server_url)
        self.envs: dict[str, AsyncEnv] = {}
        self.rewards: dict[str, float] = {}

    async def create(self, instance_id: str, **row: Any) -> str:
        env = self.envs.get(instance_id)
        if env is None:
            env = self.envs[instance_id] = AsyncEnv(self.client, self.site)
        options = {k: row[k] for k in ("start_url", "goal") if k in row}
        if "uid" in row:
            options["group_key"] = str(row["uid"])
        obs, _ = await env.reset(options=options)
        self.rewards[instance_id] = 0.0
        return instance_id

    async def execute(
        self, instance_id: str, parameters: dict[str, Any], **_: Any
    ) -> tuple[str, float, dict[str, Any]]:
        env = self.envs[instance_id]
        obs, reward, terminated, truncated, info = await env.step(str(parameters.get("action", "noop()")))
        self.rewards[instance_id] = self.rewards.get(instance_id, 0.0) + reward
        text = obs["axtree_txt"] or obs["pruned_html"]
        if obs["last_action_error"]:
            text = f"Error: {obs['last_action_error']}\n\n{text}"
        return (
            text,
            reward,
            {"terminated": terminated, "truncated": truncated, "settled": info.get("settled")},
        )

    async def calc_reward(self, instance_id: str, **_: Any) -> float:
        return self.rewards.get(instance_id, 0.0)

    async def release(self, instance_id: str, **_: Any) -> None:
        env = self.envs.pop(instance_id, None)
        self.rewards.pop(instance_id, None)
        if env is not None:
            await env.close()
