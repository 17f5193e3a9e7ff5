"""Bundled tasks through gymnasium: registration, deterministic picks, rewards from the server's grader."""

from __future__ import annotations

import asyncio

import gymnasium as gym
import pytest

import webserv
from webserv.errors import WebServError


def test_task_ids_are_registered() -> None:
    ids = ("webserv/shopping", "webserv/cms", "webserv/gitlab", "webserv/shopping.17", "webserv/cms.39")
    for env_id in ids:
        assert env_id in gym.registry, env_id


def test_oracle_gets_reward_one_and_seed_picks_deterministically(server: str) -> None:
    env = gym.make("webserv/shopping.0")
    try:
        obs, info = env.reset()
        assert info["task_id"] == "shopping.0" and info["variant"] == "bundled"
        assert info["task_set"] == "bundled-shopping"
        assert obs["goal"].startswith("What is the price of")
    finally:
        env.close()

    async def oracle() -> list[str]:
        async with webserv.AsyncClient() as c:
            return next(t["oracle"] for t in await c.tasks("shopping") if t["id"] == "shopping.0")

    actions = asyncio.run(oracle())
    env = gym.make("webserv/shopping")
    try:
        _, a = env.reset(seed=11)
        _, b = env.reset(seed=11)
        assert a["task_id"] == b["task_id"], "the same seed must pick the same task"
        obs, info = env.reset(options={"task_id": "shopping.0"})
        assert info["task_id"] == "shopping.0"
        reward = 0.0
        for act in actions:
            obs, reward, terminated, truncated, info = env.step(act)
        assert terminated and reward == 1.0, info
        # A wrong answer on a fresh episode scores 0.
        env.reset(options={"task_id": "shopping.0"})
        for act in actions[:-1]:
            env.step(act)
        _, reward, terminated, _, _ = env.step('stop("$1.00")')
        assert terminated and reward == 0.0
    finally:
        env.close()


def test_unknown_task_and_missing_gitlab_say_what_to_do(server: str) -> None:
    env = gym.make("webserv/shopping", task="shopping.999")
    with pytest.raises(webserv.BadArgs, match="no task 999"):
        env.reset()
    env.close()
    env = gym.make("webserv/gitlab")
    with pytest.raises(WebServError, match="webserv image import"):
        env.reset()
    env.close()


def test_group_members_see_identical_observations(server: str) -> None:
    """Four gymnasium environments of one site reset with one group key see
    the same observation, url and tabs included: every instance of the shop
    is at the shop's origin, whatever port serves it."""
    envs = [gym.make("webserv/shopping") for _ in range(4)]
    try:
        firsts = [e.reset(options={"group_key": "grpo-7", "task_id": "shopping.3"})[0] for e in envs]
        for obs in firsts:
            obs.pop("elapsed_time")
        assert firsts[0]["url"].startswith("http://shopping.webserv.test/"), firsts[0]["url"]
        assert all(o == firsts[0] for o in firsts[1:])
    finally:
        for e in envs:
            e.close()
