"""One client, two servers: placement by load, groups kept together, failover."""

from __future__ import annotations

import asyncio

import pytest

import webserv
from webserv.launcher import LocalServer


def test_two_servers(binary: str, pages: str) -> None:
    a = LocalServer(binary, ["--idle", "200ms"])
    b = LocalServer(binary, ["--idle", "200ms"])

    async def main() -> None:
        client = webserv.AsyncClient(urls=[a.url, b.url])
        try:
            envs = [client.env(start_url=f"{pages}/page?n={i}") for i in range(6)]
            for e in envs:  # one at a time, so each placement sees the last
                await e.reset()
            stats = await client.host_stats()
            assert [s["envs_live"] for s in stats.values()] == [3, 3], stats

            group = await client.make_group(4, start_url=f"{pages}/page?n=20")
            stats = await client.host_stats()
            assert sorted(s["envs_live"] for s in stats.values()) == [3, 7], stats

            # Every request of an environment goes to its server.
            for i, e in enumerate(envs):
                obs, *_ = await e.step('click("load")')
                assert f"loaded {i}" in obs["html"]

            # Server b goes away: its environments say so, new ones go to a.
            b.stop()
            lost = 0
            for e in envs + [g[0] for g in group]:
                try:
                    await e.step("noop()")
                except webserv.WebServError as err:
                    assert err.code == "host_lost" and b.url.split("/v1")[0].split("//")[1] in err.message
                    lost += 1
            assert lost in (3, 7)
            fresh = client.env(start_url=f"{pages}/page?n=30")
            obs, _ = await fresh.reset()
            assert obs["title"] == "Page 30"
            assert client._env_conn[fresh.id].url == a.url
        finally:
            await client.close()

    try:
        asyncio.run(main())
    finally:
        a.stop()
        b.stop()


def test_no_server_answers() -> None:
    async def main() -> None:
        client = webserv.AsyncClient(urls=["ws://127.0.0.1:1/v1/ws", "ws://127.0.0.1:2/v1/ws"])
        with pytest.raises(webserv.WebServError) as e:
            await client.env(start_url="http://127.0.0.1:3/").reset()
        assert e.value.code == "unavailable" and "127.0.0.1:1" in e.value.message

    asyncio.run(main())
