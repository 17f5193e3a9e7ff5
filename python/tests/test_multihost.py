"""One client, two servers: placement by load, groups kept together, failover."""

from __future__ import annotations

import asyncio

import pytest

import webserv
from webserv.launcher import LocalServer
from webserv.placement import StatsProbe


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
                except webserv.HostLost as err:
                    assert b.url.split("/v1")[0].split("//")[1] in err.message
                    lost += 1
            assert lost in (3, 7)
            fresh = client.env(start_url=f"{pages}/page?n=30")
            obs, _ = await fresh.reset()
            assert obs["title"] == "Page 30"
            assert fresh.host == a.url
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
        with pytest.raises(webserv.ServerUnavailable) as e:
            await client.env(start_url="http://127.0.0.1:3/").reset()
        assert "127.0.0.1:1" in e.value.message

    asyncio.run(main())


class Pinned:
    """A placement of one's own (a Ray fleet would be one): every new environment goes to the last server."""

    def __init__(self, urls: list[str]):
        self._urls = urls
        self.requests: list[webserv.PlacementRequest] = []

    def urls(self) -> list[str]:
        return self._urls

    async def place(self, request: webserv.PlacementRequest, stats: StatsProbe) -> str:
        self.requests.append(request)
        st = await stats(self._urls[-1])
        assert st is not None and st["max_envs"] > 0
        return self._urls[-1]


def test_a_placement_of_ones_own(server: str, spare_server: LocalServer, pages: str) -> None:
    placement = Pinned([server, spare_server.url])
    assert isinstance(placement, webserv.Placement)

    async def main() -> None:
        client = webserv.AsyncClient(placement=placement)
        try:
            first, second = (
                client.env(start_url=f"{pages}/page?n=1"),
                client.env(start_url=f"{pages}/page?n=1"),
            )
            await first.reset(options={"group_key": "g"})
            await second.reset(options={"group_key": "g"})
            assert first.host == second.host == spare_server.url
            # The group's later members follow the first without asking the placement.
            assert [(r.site, r.group_key) for r in placement.requests] == [("open", "g")]
            assert client.url == server  # sites, tasks and stats ask the first
            await first.close()
            await second.close()
        finally:
            await client.close()

    asyncio.run(main())
