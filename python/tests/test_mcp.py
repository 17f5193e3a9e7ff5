"""WebServ over MCP with the official MCP Python SDK: /v1/mcp (Streamable HTTP) and `webserv mcp` (stdio)."""

from __future__ import annotations

import ast
import asyncio
import json
import time
from typing import Any

import httpx
from conftest import REPO
from mcp import Client
from mcp.client.stdio import StdioServerParameters

import webserv
from webserv.launcher import LocalServer


def shop_task(n: int) -> dict[str, Any]:
    tasks = json.loads((REPO / "sites/shop/tasks/shopping.json").read_text())
    tasks = tasks["tasks"] if isinstance(tasks, dict) else tasks
    return next(t for t in tasks if t.get("task_id", t.get("id")) == n)


# The tool and arguments of each call form the shop's oracles use.
TOOL_ARGS = {"fill": ["bid", "value"], "click": ["bid"], "stop": ["answer"]}


def tool_call(action: str) -> tuple[str, dict[str, Any]]:
    """An oracle action in the call form, as an MCP tool call."""
    call = ast.parse(action, mode="eval").body
    assert isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
    names = TOOL_ARGS[call.func.id]
    return call.func.id, {k: ast.literal_eval(v) for k, v in zip(names, call.args, strict=True)}


async def play(client: Client, actions: list[str]) -> dict[str, Any]:
    """Runs actions as tool calls; returns the last result's structured content."""
    last: dict[str, Any] = {}
    for i, action in enumerate(actions, 1):
        name, args = tool_call(action)
        res = await client.call_tool(name, args)
        assert not res.is_error, res.content
        last = res.structured_content or {}
        assert last["step"] == i and last["task_id"] == "shopping.0"
    return last


def mcp_url(ws_url: str) -> str:
    """The /v1/mcp URL of the server whose protocol URL is ws_url."""
    return ws_url.replace("ws://", "http://", 1).removesuffix("/v1/ws") + "/v1/mcp"


async def open_envs(url: str) -> list[str]:
    async with webserv.AsyncClient(url) as c:
        return (await c.stats())["envs"]


def test_mcp_http_solves_a_task_and_frees_its_environment(server: str) -> None:
    task = shop_task(0)

    async def main() -> None:
        async with Client(mcp_url(server)) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert {"reset", "observe", "task", "fork", "click", "fill", "mouse_click"} <= tools.keys()
            assert tools["click"].input_schema["properties"]["bid"]["type"] == "string"
            assert tools["mouse_click"].input_schema["properties"]["x"]["type"] == "number"

            res = await client.call_tool("reset", {"task": "shopping.0"})
            assert not res.is_error and task["intent"] in res.content[0].text
            last = await play(client, task["oracle"])
            assert last["reward"] == 1 and last["terminated"] is True, last

            # A wrong sequence after a reset gets 0.
            await client.call_tool("reset", {})
            last = await play(client, task["wrong"])
            assert last["reward"] == 0 and last["terminated"] is True, last

            # An invalid action is an error result the model reads, and the session goes on.
            await client.call_tool("reset", {})
            res = await client.call_tool("click", {"bid": "no-such-element"})
            assert res.is_error and "no-such-element" in res.content[0].text
            res = await client.call_tool("click", {"bid": 7})
            assert res.is_error and "bid must be string" in res.content[0].text
            res = await client.call_tool("observe", {})
            assert not res.is_error and res.structured_content["task_id"] == "shopping.0"
            env = res.structured_content["env"]
            assert env in await open_envs(server)
        # Closing the session frees its environment.
        deadline = time.monotonic() + 120  # the server notices the session's end; no timing asserted
        while True:  # poll the server's list: no event reaches the test from outside
            if env not in await open_envs(server) or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.05)
        assert env not in await open_envs(server)

    asyncio.run(main())


def test_mcp_fork_gives_an_independent_session(server: str) -> None:
    task = shop_task(0)

    async def main() -> None:
        async with Client(mcp_url(server)) as first, Client(mcp_url(server)) as second:
            await first.call_tool("reset", {"task": "shopping.0"})
            name, args = tool_call(task["oracle"][0])
            await first.call_tool(name, args)
            res = await first.call_tool("fork", {"n": 1})
            (env,) = res.structured_content["envs"]
            res = await second.call_tool("attach", {"env": env})
            assert res.structured_content["env"] == env
            # The fork solves the task; the original is still at its step 1.
            last: dict[str, Any] = {}
            for action in task["oracle"][1:]:
                name, args = tool_call(action)
                last = (await second.call_tool(name, args)).structured_content
            assert last["reward"] == 1
            here = (await first.call_tool("observe", {})).structured_content
            assert here["env"] != env and here["step"] == 1 and "reward" not in here

    asyncio.run(main())


def test_mcp_needs_the_token(binary: str) -> None:
    s = LocalServer(binary, ["--no-bundled", "--token", "sesame", "--no-ui"])
    try:
        r = httpx.post(mcp_url(s.url), json={}, headers={"Accept": "application/json, text/event-stream"})
        assert r.status_code == 401 and "token" in r.text

        async def main() -> None:
            async with Client(mcp_url(s.url) + "?token=sesame") as client:
                assert "reset" in {t.name for t in (await client.list_tools()).tools}

        asyncio.run(main())
    finally:
        s.stop()


def test_mcp_over_stdio(binary: str, tmp_path: Any) -> None:
    task = shop_task(0)
    params = StdioServerParameters(
        command=binary,
        args=[
            "mcp",
            "--no-incus",
            "--verified-python",
            "",
            "--instances",
            str(tmp_path / "instances"),
            "--shop-data",
            str(tmp_path / "shop-data"),
            "--task",
            "shopping.0",
            "--idle",
            "200ms",
        ],
    )

    async def main() -> None:
        async with Client(params) as client:
            res = await client.call_tool("reset", {})
            assert res.structured_content["task_id"] == "shopping.0"
            last = await play(client, task["oracle"])
            assert last["reward"] == 1

    asyncio.run(main())


def test_mcp_html_view(server: str, pages: str) -> None:
    async def main() -> None:
        async with Client(mcp_url(server)) as client:
            res = await client.call_tool("reset", {"start_url": f"{pages}/page?n=4", "view": "html"})
            assert "<h1" in res.content[0].text and "Shop 4" in res.content[0].text

    asyncio.run(main())
