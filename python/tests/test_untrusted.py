"""What a careless caller or a misconfigured run gets: refused settings, tokens from the environment,
plain-data info, and a server that stops cleanly when told to."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time

import gymnasium as gym
import pytest
from conftest import api_in_flight

import webserv
from webserv.launcher import LocalServer


def test_a_misspelled_setting_is_refused_with_the_nearest_name(server: str, pages: str) -> None:
    env = gym.make("webserv/open", start_url=f"{pages}/page?n=1", idle=200)
    try:
        with pytest.raises(webserv.BadArgs) as e:
            env.reset()
        assert "make has no argument idle" in e.value.message and "did you mean idle_ms?" in e.value.message
        assert e.value.fault == "client" and not e.value.retryable
    finally:
        env.close()
    # Spelled right, the same setting runs.
    env = gym.make("webserv/open", start_url=f"{pages}/page?n=1", idle_ms=200)
    try:
        obs, _ = env.reset()
        assert obs["url"].endswith("/page?n=1")
    finally:
        env.close()


def test_a_misspelled_setting_is_refused_by_the_vector_env_too(server: str, pages: str) -> None:
    envs = gym.make_vec(
        "webserv/open",
        num_envs=2,
        vectorization_mode="vector_entry_point",
        start_url=f"{pages}/page?n=1",
        idle=200,
    )
    try:
        with pytest.raises(webserv.BadArgs) as e:
            envs.reset()
        assert "make has no argument idle" in e.value.message and "did you mean idle_ms?" in e.value.message
    finally:
        envs.close()


def test_the_token_comes_from_the_environment(
    binary: str, pages: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    srv = LocalServer(binary, ["--idle", "100ms", "--no-bundled", "--token", "s3cret-token"])
    try:
        monkeypatch.delenv("WEBSERV_TOKEN", raising=False)

        async def attempt() -> dict:
            async with webserv.AsyncClient(srv.url) as client:
                return await client.stats()

        with pytest.raises(webserv.errors.Unauthorized):
            asyncio.run(attempt())
        monkeypatch.setenv("WEBSERV_TOKEN", "s3cret-token")
        assert asyncio.run(attempt())["envs_live"] == 0
    finally:
        srv.stop()


def test_info_is_plain_data_even_with_refusals(server: str, pages: str) -> None:
    # The open site refuses loopback hosts other than the start URL's: the image and the goto are.
    port = pages.rsplit(":", 1)[1]
    env = gym.make("webserv/open", start_url=f"{pages}/img?src=http://127.0.0.2:{port}/x.png")
    try:
        _, info = env.reset()
        assert info["refused"] and isinstance(info["refused"][0]["time"], str), info
        json.dumps(info)  # no MessagePack extension types: info goes to logs and JSON as it is
        obs, _, _, _, info = env.step(f'goto("http://127.0.0.2:{port}/page?n=2")')
        assert info["action_error_code"] == "refused", info
        assert "refused" in obs["last_action_error"]
        json.dumps(info)
    finally:
        env.close()


def test_sigterm_answers_work_in_flight_and_exits(binary: str, pages: str) -> None:
    srv = LocalServer(binary, ["--idle", "100ms", "--no-bundled", "--settle-timeout", "60s"])

    async def main() -> None:
        async with webserv.AsyncClient(srv.url, retry=webserv.RetryPolicy(attempts=1)) as client:
            env = client.env(start_url=f"{pages}/page?n=1")
            await env.reset()
            # A page whose fetch takes a minute: the step waits on it until the signal.
            await env.step(f'goto("{pages}/page?n=1")')
            step = asyncio.create_task(env.step("noop()"))
            slow = asyncio.create_task(client.request("step", env.id, action=f'goto("{pages}/api?ms=60000")'))
            await step
            # The slow page's request is in flight: the step is waiting on it.
            deadline = time.monotonic() + 60
            while api_in_flight() == 0:
                assert time.monotonic() < deadline, "the slow page was never requested"
                await asyncio.sleep(0.02)
            began = time.monotonic()
            os.killpg(srv.proc.pid, signal.SIGTERM)
            with pytest.raises(webserv.errors.ShuttingDown):
                await slow
            assert time.monotonic() - began < 30
        srv.proc.wait(timeout=40)
        assert srv.proc.returncode == 0, srv.proc.returncode

    try:
        asyncio.run(main())
    finally:
        srv.stop()
