"""The rollout runner: the failure rules every trainer adapter follows, on a real server."""

from __future__ import annotations

import asyncio
import math

import pytest

import webserv
from webserv import rollout
from webserv.launcher import LocalServer


def test_a_failed_grading_is_never_a_reward() -> None:
    assert rollout.graded(1.0, {}) == 1.0
    with pytest.raises(webserv.EvaluationError) as e:
        rollout.graded(math.nan, {"eval_error": "the judge at http://127.0.0.1:9/v1 did not answer"})
    assert isinstance(e.value, webserv.InfrastructureError) and "judge" in e.value.message


def test_run_plays_an_episode_and_closes_it(server: str, pages: str) -> None:
    async def main() -> None:
        async with webserv.AsyncClient(server) as client:
            seen: list[str] = []

            def policy(obs: dict, history: list[dict]) -> str:
                seen.append(obs["url"])
                return 'click("load")' if not history else "stop [done]"

            out = await rollout.run(client.env(start_url=f"{pages}/page?n=3"), policy, 5)
            assert out.failure is None and out.reward == 0.0 and out.terminated and out.turns == 2
            assert out.actions == ['click("load")', "stop [done]"] and out.first_url.endswith("/page?n=3")
            assert out.failure_record() is None
            stats = await client.stats()
            assert out.env not in stats["envs"]  # closed afterwards

    asyncio.run(main())


def test_an_environment_that_dies_gives_no_reward_and_a_failure_record(binary: str, pages: str) -> None:
    srv = LocalServer(binary, ["--idle", "100ms", "--no-bundled"])

    async def main() -> None:
        client = webserv.AsyncClient(srv.url, retry=webserv.RetryPolicy(attempts=1))
        try:

            def policy(obs: dict, history: list[dict]) -> str:
                if history:
                    srv.stop()  # the host goes away mid-episode
                return "noop()"

            out = await rollout.run(client.env(start_url=f"{pages}/page?n=1"), policy, 5)
            assert out.reward is None and isinstance(out.failure, webserv.InfrastructureError)
            rec = out.failure_record()
            assert rec is not None and rec["fault"] == "infrastructure" and rec["code"] == out.failure.code
            # Asked to raise, it raises the same class.
            srv2 = LocalServer(binary, ["--idle", "100ms", "--no-bundled"])
            try:
                c2 = webserv.AsyncClient(srv2.url, retry=webserv.RetryPolicy(attempts=1))

                def kill(obs: dict, history: list[dict]) -> str:
                    srv2.stop()
                    return "noop()"

                with pytest.raises(webserv.InfrastructureError):
                    await rollout.run(c2.env(start_url=f"{pages}/page?n=2"), kill, 3, on_failure="raise")
                await c2.close()
            finally:
                srv2.stop()
        finally:
            await client.close()

    try:
        asyncio.run(main())
    finally:
        srv.stop()


def test_a_misconfigured_run_fails_loudly(server: str) -> None:
    async def main() -> None:
        async with webserv.AsyncClient(server) as client:
            with pytest.raises(webserv.ClientError):
                await rollout.run(client.env(site="nowhere"), lambda o, h: "noop()", 3)

    asyncio.run(main())


def test_a_resource_limit_ends_the_episode_as_the_policys(binary: str, pages: str) -> None:
    srv = LocalServer(binary, ["--idle", "100ms", "--no-bundled", "--max-dom-nodes", "5000"])

    async def main() -> None:
        async with webserv.AsyncClient(srv.url, retry=webserv.RetryPolicy(attempts=1)) as client:
            out = await rollout.run(client.env(start_url=f"{pages}/grow"), lambda o, h: 'click("grow")', 3)
            assert out.failure is None and out.reward == 0.0, out
            assert out.truncated and out.ended_by == "resource_limit" and "limit" in out.ended_because
            assert not out.terminated and out.end_reason == "resource_limit"  # not the task's end
            assert out.turns == 1

    try:
        asyncio.run(main())
    finally:
        srv.stop()
