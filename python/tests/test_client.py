"""The asyncio client and the automatic local server."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import pytest

import webserv


def test_twenty_concurrent_environments(server: str, pages: str) -> None:
    async def main() -> None:
        async with webserv.AsyncClient(server) as client:
            assert client.hello["protocol"] == 1
            envs = [client.env(start_url=f"{pages}/page?n={i}") for i in range(20)]
            firsts = await asyncio.gather(*(e.reset() for e in envs))
            assert [o["title"] for o, _ in firsts] == [f"Page {i}" for i in range(20)]
            steps = await asyncio.gather(*(e.step('click("load")') for e in envs))
            for i, (obs, *_rest, info) in enumerate(steps):
                assert f"loaded {i}" in obs["html"], (obs["html"], info)
            stats = await client.stats()
            assert stats["envs_live"] >= 20
            await asyncio.gather(*(e.close() for e in envs))

    asyncio.run(main())


def test_errors_are_exceptions_of_their_code(server: str, pages: str) -> None:
    async def main() -> None:
        async with webserv.AsyncClient(server) as client:
            with pytest.raises(webserv.UnknownEnv) as e:
                await client.request("step", "env-nope", action="noop()")
            assert e.value.code == "unknown_env" and "make a new one" in e.value.message
            with pytest.raises(webserv.BadArgs):
                await client.env(start_url="ftp://x").reset()
            with pytest.raises(webserv.UnknownEnv):
                await client.request("snapshot", "env-nope")
            # The connection is still good after errors.
            assert (await client.sites())[0]["name"] == "open"

    asyncio.run(main())


def test_the_package_starts_a_server_itself(binary: str, pages: str) -> None:
    code = (
        "import webserv, webserv.launcher as l\n"
        f"env = webserv.WebEnv(start_url='{pages}/page?n=8')\n"
        "obs, _ = env.reset()\n"
        "print(obs['title'], l._server.url.startswith('ws://127.0.0.1:'))\n"
        "env.close()\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "WEBSERV_URL"}
    env["WEBSERV_BIN"] = binary
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "Page 8 True"


def test_missing_server_says_what_to_do() -> None:
    env = {k: v for k, v in os.environ.items() if k != "WEBSERV_URL"}
    env["WEBSERV_BIN"] = "/nonexistent/webserv"
    code = "import webserv\nwebserv.WebEnv(start_url='http://127.0.0.1:1/').reset()"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode != 0
    assert "make build" in out.stderr and "WEBSERV_URL" in out.stderr


def test_the_action_grammar_comes_from_the_server(server: str) -> None:
    import asyncio

    import webserv

    async def main() -> dict:
        async with webserv.AsyncClient(server) as c:
            return await c.actions()

    got = asyncio.run(main())
    names = [a["name"] for a in got["actions"]]
    assert {"click", "fill", "select_option", "stop", "mouse_click", "scroll"} <= set(names), names
    fill = next(a for a in got["actions"] if a["name"] == "fill")
    assert [x["name"] for x in fill["args"]][:2] == ["bid", "value"] and fill["example"].startswith("fill(")
    signature = "fill(bid: string, value: string, enable_autocomplete_menu?: boolean, enter?: boolean)"
    assert signature in got["describe"]
