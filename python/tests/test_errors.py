"""Typed errors: every server code has a class of its fault, and infrastructure failures are told apart."""

from __future__ import annotations

import asyncio
import os
import pickle
import re
import select
import signal
import subprocess
import sys
import time

import pytest
from conftest import REPO

import webserv
from webserv.errors import (
    AgentError,
    ClientError,
    InfrastructureError,
    error_class,
    from_reply,
)
from webserv.launcher import LocalServer
from webserv.retry import IDEMPOTENT_OPS, idempotent_ops

FAULT_CLASSES = {"client": ClientError, "agent": AgentError, "infrastructure": InfrastructureError}


def documented_faults() -> dict[str, str]:
    """code -> fault, from docs/protocol.md's table (the contract with the server)."""
    table: dict[str, str] = {}
    for line in (REPO / "docs" / "protocol.md").read_text().splitlines():
        m = re.match(r"\| `(\w+)` \| `(client|agent|infrastructure)` \|", line)
        if m:
            table[m.group(1)] = m.group(2)
    return table


def test_every_documented_code_has_a_class_of_its_fault() -> None:
    table = documented_faults()
    assert {
        "bad_args",
        "episode_over",
        "capacity",
        "backend",
        "not_configured",
        "resource_limit",
    } <= table.keys(), table
    for code, fault in table.items():
        cls = error_class(code, fault)
        assert cls.code == code, (code, cls)
        assert issubclass(cls, FAULT_CLASSES[fault]) and cls.fault == fault, (code, cls)
    # The client's own failures are the infrastructure's, and a step before reset the caller's.
    for cls in (webserv.ServerUnavailable, webserv.ConnectionLost, webserv.HostLost, webserv.EvaluationError):
        assert issubclass(cls, InfrastructureError)
    assert issubclass(webserv.NotReset, ClientError)
    # A code this client does not know yet gets its fault's class; the server's fault decides.
    e = from_reply({"code": "quota", "fault": "infrastructure", "message": "over quota", "retryable": True})
    assert type(e) is InfrastructureError and e.code == "quota" and e.retryable
    assert str(e) == "quota: over quota"
    assert isinstance(from_reply({"code": "unknown_env", "fault": "infrastructure"}), InfrastructureError)
    # Errors cross process boundaries (Ray, multiprocessing) intact.
    e = pickle.loads(pickle.dumps(webserv.CapacityError("full", retry_after=2.5)))
    assert type(e) is webserv.CapacityError and e.retry_after == 2.5 and e.retryable and e.message == "full"


def test_a_crashed_browser_is_the_infrastructures_and_a_reset_goes_on() -> None:
    e = from_reply(
        {
            "code": "browser_crashed",
            "fault": "infrastructure",
            "message": "the browser process (pid 7) ... died; reset the environment to go on",
            "retryable": True,
        }
    )
    assert type(e) is webserv.BrowserCrashed and isinstance(e, InfrastructureError) and e.retryable
    # The step is not sent again (it cannot succeed before a reset); the trainer resets.
    assert not webserv.RetryPolicy().should_retry("step", e)


def test_the_callers_and_the_policys_errors(server: str, pages: str) -> None:
    async def main() -> None:
        async with webserv.AsyncClient(server) as client:
            with pytest.raises(webserv.UnknownEnv) as e:
                await client.request("step", "env-nope", action="noop()")
            assert isinstance(e.value, ClientError) and not isinstance(e.value, InfrastructureError)
            with pytest.raises(webserv.BadArgs):
                await client.env(start_url="ftp://x").reset()
            env = client.env(start_url=f"{pages}/page?n=1")
            with pytest.raises(webserv.NotReset):
                await env.step("noop()")
            await env.reset()
            await env.step("stop [done]")
            with pytest.raises(webserv.EpisodeOver) as over:
                await env.step("noop()")
            assert isinstance(over.value, AgentError) and over.value.fault == "agent"
            await env.close()

    asyncio.run(main())


def test_infrastructure_failures(binary: str, pages: str) -> None:
    srv = LocalServer(binary, ["--idle", "200ms", "--no-bundled", "--max-envs", "1"])

    async def main() -> None:
        refused = asyncio.Event()

        class Patient(webserv.RetryPolicy):
            """The default policy, noting when the server has refused for capacity."""

            def should_retry(self, op: str, error: webserv.WebServError, *args: object) -> bool:
                if isinstance(error, webserv.CapacityError):
                    refused.set()
                return super().should_retry(op, error, *args)

        once = webserv.AsyncClient(srv.url, retry=webserv.RetryPolicy(attempts=1))
        patient = webserv.AsyncClient(srv.url, retry=Patient())
        hasty = webserv.AsyncClient(srv.url, timeout=0.2)
        try:
            first = once.env(start_url=f"{pages}/page?n=1")
            await first.reset()

            # Full: capacity, retryable after a while; sent once, it is raised.
            with pytest.raises(webserv.CapacityError) as full:
                await once.env(start_url=f"{pages}/page?n=2").reset()
            assert isinstance(full.value, InfrastructureError) and full.value.retryable
            assert full.value.retry_after > 0
            # The default policy waits and tries again: it gets the place the first one frees.
            second = patient.env(start_url=f"{pages}/page?n=2")
            waiting = asyncio.create_task(second.reset())
            await asyncio.wait_for(refused.wait(), 120)  # refused once, it waits to try again
            await first.close()
            obs, _ = await waiting
            assert obs["title"] == "Page 2"

            # No reply within the client's timeout (the click's fetch alone takes 300 ms).
            slow = webserv.AsyncEnv(hasty, "open")
            slow.id = second.id
            with pytest.raises(webserv.RequestTimeout) as late:
                await slow.step('click("load")')
            assert isinstance(late.value, InfrastructureError)

            # The server goes away: its environment is lost, and says so.
            srv.stop()
            with pytest.raises(webserv.HostLost) as lost:
                await second.step("noop()")
            assert isinstance(lost.value, InfrastructureError) and second.id in lost.value.message
            await second.close()  # closing what is gone is fine
        finally:
            for c in (once, patient, hasty):
                await c.close()

    try:
        asyncio.run(main())
    finally:
        srv.stop()


def test_a_killed_trainer_leaves_no_environment_behind(server: str, pages: str) -> None:
    """A trainer process killed mid-episode (no goodbye): the server frees its environments at once."""
    code = (
        "import asyncio, webserv\n"
        "async def main():\n"
        f"    client = webserv.AsyncClient({server!r})\n"
        f"    envs = [client.env(start_url='{pages}/page?n=1') for _ in range(2)]\n"
        "    for e in envs:\n"
        "        await e.reset()\n"
        "    await envs[0].step('click(\"load\")')\n"
        "    print(' '.join(e.id for e in envs), flush=True)\n"
        "    await asyncio.sleep(600)\n"
        "asyncio.run(main())\n"
    )
    trainer = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert trainer.stdout is not None
        ids = trainer.stdout.readline().split()
        assert len(ids) == 2, ids

        async def live() -> set[str]:
            async with webserv.AsyncClient(server, register=False) as client:
                return set((await client.stats())["envs"])

        assert set(ids) <= asyncio.run(live())
        trainer.kill()
        trainer.wait(30)
        deadline = (
            time.monotonic() + 120
        )  # the server notices the closed connection; poll, no timing asserted
        while set(ids) & asyncio.run(live()) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not set(ids) & asyncio.run(live())
    finally:
        trainer.kill()
        trainer.wait(30)


def test_a_killed_browser_process_through_the_client(binary: str, pages: str) -> None:
    """A server on two browser processes (the default): one is killed with SIGKILL; the client
    raises BrowserCrashed for the environments on it, a reset brings each back, and the
    environments on the other step on."""
    srv = LocalServer(binary, ["--idle", "200ms", "--no-bundled", "--browsers", "2", "--warm-contexts", "0"])

    async def main() -> None:
        async with webserv.AsyncClient(srv.url) as client:
            envs = [client.env(start_url=f"{pages}/page?n={i}") for i in range(4)]
            for env in envs:
                await env.reset()
            stats = await client.stats()
            procs = stats["browsers"]["processes"]
            assert stats["browser_alive"] and len(procs) == 2 and [p["envs"] for p in procs] == [2, 2], stats
            victim = procs[0]["pid"]
            exited = os.pidfd_open(victim)  # readable once the process has ended
            os.kill(victim, signal.SIGKILL)
            select.select([exited], [], [])
            os.close(exited)
            lost = []
            for env in envs:
                try:
                    await env.step("noop()")
                except webserv.BrowserCrashed as e:
                    assert e.retryable and e.fault == "infrastructure" and str(victim) in e.message
                    lost.append(env)
            assert len(lost) == 2
            for env in lost:
                await env.reset()
                await env.step("noop()")
            assert (await client.stats())["browsers"]["crashes"] == 1

    try:
        asyncio.run(main())
    finally:
        srv.stop()


def test_the_retry_policy_reads_the_idempotent_ops_from_hello(server: str) -> None:
    async def main() -> None:
        async with webserv.AsyncClient(server) as client:
            ops = idempotent_ops(client.hello)
            # The server's op table, not the client's own list: actions changes nothing too.
            assert {"hello", "sites", "tasks", "stats", "observe", "actions"} <= ops
            assert not ops & {"make", "reset", "step", "close", "snapshot", "restore", "fork"}
            lost = webserv.ConnectionLost("the connection closed")
            policy = webserv.RetryPolicy()
            assert policy.should_retry("actions", lost, ops)
            assert not policy.should_retry("step", lost, ops)
            # A server whose hello lists none: the client's own list.
            assert idempotent_ops({}) == IDEMPOTENT_OPS
            assert not policy.should_retry("actions", lost)

    asyncio.run(main())
