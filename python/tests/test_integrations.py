"""The trainer adapters, driven the way the trainers drive them, with fake policies (TRL tools: test_trl)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

import webserv
from webserv.integrations.trl import web_environment
from webserv.integrations.verl import ClientSource, WebAgentLoop, WebTool, client_of, parse_action
from webserv.launcher import LocalServer


def test_verl_agent_loop_two_groups_of_eight(server: str, pages: str) -> None:
    async def policy(obs: dict[str, Any], history: list[dict[str, Any]]) -> str:
        return 'click("load")' if not history else "stop [done]"

    async def main() -> None:
        loop = WebAgentLoop(server_url=server, policy=policy, max_turns=4)
        before = (await loop.client.stats())["envs_live"]
        rows = [
            {"uid": f"group-{g}", "extra_info": {"start_url": f"{pages}/page?n={g}", "goal": "Load the list"}}
            for g in (0, 1)
            for _ in range(8)
        ]
        outs = await asyncio.gather(*(loop.run({"temperature": 1.0}, **row) for row in rows))
        assert len(outs) == 16
        for out in outs:
            assert out["num_turns"] == 2 and out["reward_score"] == 0.0 and out["metrics"]["terminated"]
            assert out["trajectory"][0]["action"] == 'click("load")' and out["trajectory"][0]["error"] == ""
        roles = [o["metrics"]["group_role"] for o in outs]
        assert roles.count("leader") == 2 and roles.count("member") == 14
        # every environment was closed in finally
        assert (await loop.client.stats())["envs_live"] == before
        assert loop.sessions == {}

    asyncio.run(main())


def test_adapters_refuse_an_unknown_keyword_with_the_nearest() -> None:
    """As make does: a misspelt setting fails where it is written, not later with another message."""
    with pytest.raises(TypeError, match=r"WebAgentLoop has no argument 'sitee' \(did you mean 'site'\?\)"):
        WebAgentLoop(sitee="shopping")
    # verl passes these to every agent loop: taken, not refused.
    loop = WebAgentLoop(trainer_config={"x": 1}, processor=None, dataset_cls=None, dataset_config=None)
    assert loop.config == {"x": 1}


def test_verl_tool_keyed_by_request(server: str, pages: str) -> None:
    async def main() -> None:
        tool = WebTool(server_url=server)
        for rid in ("req-a", "req-b"):
            await tool.create(rid, start_url=f"{pages}/page?n=7")
        text, reward, meta = await tool.execute("req-a", {"action": 'click("load")'})
        assert "loaded 7" in text and reward == 0.0 and meta["settled"]
        text, _, _ = await tool.execute("req-b", {"action": "click [nope]"})
        assert "Error: no element" in text
        assert await tool.calc_reward("req-a") == 0.0
        await tool.release("req-a")
        await tool.release("req-b")
        assert tool.envs == {}

    asyncio.run(main())


def test_make_group_starts_members_alike(server: str, pages: str) -> None:
    async def main() -> None:
        async with webserv.AsyncClient(server) as client:
            group = await client.make_group(4, start_url=f"{pages}/page?n=9")
            assert len(group) == 4
            htmls = {obs["html"] for _, obs, _ in group}
            assert len(htmls) == 1
            assert sorted(info["group_role"] for _, _, info in group) == [
                "leader",
                "member",
                "member",
                "member",
            ]
            await asyncio.gather(*(env.close() for env, _, _ in group))

    asyncio.run(main())


def test_trl_reports_a_failed_environment_as_unscorable(spare_server: LocalServer, pages: str) -> None:
    env = web_environment(site="open", server_url=spare_server.url)()
    env.reset(start_url=f"{pages}/page?n=4")
    assert "loaded 4" in env.click("load")
    assert env.failure is None and env.get_reward() == 0.0
    spare_server.stop()  # the host dies mid-episode
    text = env.click("load")
    assert "The environment failed (not because of your actions)" in text
    assert isinstance(env.failure, webserv.InfrastructureError)
    # TRL leaves a rollout whose every reward is None out of its group's baseline: never a 0.
    assert env.get_reward() is None
    assert env.click("next") == text


def test_verl_reports_a_failed_environment(binary: str, pages: str) -> None:
    async def run(on_error: str) -> dict[str, Any]:
        srv = LocalServer(binary, ["--idle", "200ms", "--no-bundled"])

        async def policy(obs: dict[str, Any], history: list[dict[str, Any]]) -> str:
            if history:
                srv.stop()  # the host dies while the model thinks
            return 'click("load")'

        loop = WebAgentLoop(server_url=srv.url, policy=policy, max_turns=4, on_infrastructure_error=on_error)
        try:
            return await loop.run({}, uid="g", extra_info={"start_url": f"{pages}/page?n=2"})
        finally:
            srv.stop()
            await loop.client.close()

    with pytest.raises(webserv.InfrastructureError):
        asyncio.run(run("raise"))
    out = asyncio.run(run("report"))
    assert out["reward_score"] is None and out["num_turns"] == 2
    assert out["failure"]["fault"] == "infrastructure" and out["metrics"]["failure"] == out["failure"]["code"]


def test_verl_tool_failure_and_fork(server: str, spare_server: LocalServer, pages: str) -> None:
    async def main() -> None:
        tool = WebTool(server_url=spare_server.url)
        await tool.create("req", start_url=f"{pages}/page?n=6")
        spare_server.stop()

        class AgentData:
            extra_fields: dict[str, Any] = {}

        data = AgentData()
        with pytest.raises(webserv.InfrastructureError):
            await tool.execute("req", {"action": 'click("load")'}, agent_data=data)
        assert data.extra_fields["webserv_failure"]["fault"] == "infrastructure"
        with pytest.raises(webserv.InfrastructureError):
            await tool.calc_reward("req")
        await tool.release("req")

        # On a hosted site an instance branches into new ones at its state.
        shop = WebTool(site="shopping", server_url=server)
        await shop.create("root")
        await shop.execute("root", {"action": 'click("cart")'})
        pages_ = await shop.fork("root", ["a", "b"])
        assert len(pages_) == 2 and all("Shopping cart" in p for p in pages_)
        text, _, _ = await shop.execute("a", {"action": 'click("webserv-shop")'})
        assert "Shopping cart" not in text
        for rid in ("root", "a", "b"):
            await shop.release(rid)

    asyncio.run(main())


class _ByteTokenizer:
    """A tokenizer of UTF-8 bytes with a plain chat template (what the loop calls of one)."""

    def apply_chat_template(
        self, messages: list[dict[str, Any]], add_generation_prompt: bool, tokenize: bool
    ) -> list[int]:
        text = "".join(f"<{m['role']}>{m['content']}\n" for m in messages)
        return list((text + ("<assistant>" if add_generation_prompt else "")).encode())

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        return list(text.encode())

    def decode(self, ids: list[int], skip_special_tokens: bool = True) -> str:
        return bytes(ids).decode(errors="replace")


class _Model:
    """verl's server manager in shape: a noop, then a stop, in prose."""

    def __init__(self) -> None:
        self.turns: dict[str, int] = {}

    async def generate(
        self, request_id: str, *, prompt_ids: list[int], sampling_params: dict[str, Any]
    ) -> Any:
        n = self.turns.get(request_id, 0)
        self.turns[request_id] = n + 1
        text = "I look first.\n```\nnoop()\n```" if n == 0 else 'Done.\n```\nstop("no idea")\n```'
        return SimpleNamespace(token_ids=list(text.encode()), log_probs=None)


def test_one_verl_loop_masks_tokens_and_mixes_on_a_server(server: str) -> None:
    """The one verl loop on a server's URL: given verl's server manager and tokenizer it generates
    token by token (the pages between turns masked out), in a mixed group too."""

    async def main() -> list[dict[str, Any]]:
        loop = WebAgentLoop(
            site="shopping",
            server_url=server,
            server_manager=_Model(),
            tokenizer=_ByteTokenizer(),
            max_turns=6,
            response_length=60000,
            mix=webserv.Mix(expert=0.5),
            group_size=2,
        )
        system = {"role": "system", "content": "Shop."}
        row = {"uid": "tokens", "task_id": "shopping.0", "raw_prompt": [system]}
        return list(await asyncio.gather(*(loop.run({}, **row) for _ in range(2))))

    outs = asyncio.run(main())
    assert [o["source"] for o in outs] == ["real", "expert"]
    for o in outs:
        assert len(o["response_ids"]) == len(o["response_mask"]) == len(o["response_logprobs"]) > 0
        assert bytes(o["prompt_ids"]).decode().startswith("<system>Shop.")
        turns = bytes(t for t, m in zip(o["response_ids"], o["response_mask"], strict=True) if m).decode()
        pages = bytes(t for t, m in zip(o["response_ids"], o["response_mask"], strict=True) if not m).decode()
        assert "<user>" in pages and "<user>" not in turns
        actions = [t["action"] for t in o["trajectory"]]
        assert all(a in turns for a in actions)  # the turns are what was run
    assert [t["action"] for t in outs[0]["trajectory"]] == ["noop()", 'stop("no idea")']
    assert "I look first." in bytes(outs[0]["response_ids"]).decode()


def test_a_verl_turn_is_read_by_the_one_grammar_and_an_unreadable_one_is_sent_as_written() -> None:
    assert parse_action('Let me search.\n```\nfill("q", "tee")\n```') == 'fill("q", "tee")'
    assert parse_action('thinking...\nclick("buy")') == 'click("buy")'
    assert parse_action('I will buy it.\nAction: click("buy")') == 'click("buy")'
    # No action: the line where it should be goes to the server, whose error the model reads next.
    assert parse_action("Action: stop [42]") == "stop [42]"
    assert parse_action("I am not sure.") == "I am not sure."
    assert parse_action(" \n") == "noop()"


def test_verl_clients_are_one_per_source_and_event_loop() -> None:
    a, b = ClientSource("http://127.0.0.1:1"), ClientSource("http://127.0.0.1:1", token="t")

    async def clients() -> tuple[Any, Any, Any]:
        return await client_of(a), await client_of(a), await client_of(b)

    first, again, other = asyncio.run(clients())
    assert first is again and first is not other  # one per source in a loop
    later, _, _ = asyncio.run(clients())
    assert later is not first  # another event loop has its own (a client is bound to its loop)


def test_the_ray_verl_loop_is_the_one_loop_and_mixes() -> None:
    pytest.importorskip("ray")
    from webserv.ray.verl import WebServAgentLoop

    config = {"actor_rollout_ref": {"rollout": {"n": 2, "response_length": 100}}}
    loop = WebServAgentLoop(config, None, None, None, fleet="f", mix=webserv.Mix(expert=0.5))
    assert isinstance(loop, WebAgentLoop) and loop.source == ClientSource(fleet="f")
    assert loop.group_size == 2 and loop.response_length == 100
    assert [loop._source("u") for _ in range(4)] == ["real", "expert", "real", "expert"]
