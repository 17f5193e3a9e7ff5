"""The trainer adapters, driven the way the trainers drive them, with fake policies (TRL tools: test_trl)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import webserv
from webserv.integrations.trl import web_environment
from webserv.integrations.verl import WebAgentLoop, WebTool
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
