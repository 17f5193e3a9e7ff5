"""Bundled tasks through gymnasium: registration, deterministic picks, rewards from the server's grader."""

from __future__ import annotations

import asyncio

import gymnasium as gym
import pytest

import webserv


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
    # A site that cannot start here is the server's configuration, not an outage: not retryable.
    env = gym.make("webserv/gitlab")
    with pytest.raises(webserv.NotConfigured, match="webserv image import") as e:
        env.reset()
    assert e.value.fault == "client" and not e.value.retryable
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


def _tasks_drawn(seed: int, first_options: dict | None = None) -> list[str]:
    env = gym.make("webserv/shopping", wallclock=False)
    try:
        if first_options is not None:
            env.reset(options=first_options)
        drawn = [env.reset(seed=seed)[1]["task_id"]]
        drawn += [env.reset()[1]["task_id"] for _ in range(3)]
        return drawn
    finally:
        env.close()


def test_a_reset_option_applies_to_that_episode_only_and_seeds_give_sequences(server: str) -> None:
    # reset(seed=s) then unseeded resets draw one sequence of tasks, the same every time...
    a = _tasks_drawn(7)
    assert len(set(a)) > 1, f"unseeded resets after a seed must go on drawing tasks, got {a}"
    # ... and a task given to an earlier reset is not pinned: the sequence is the same.
    assert _tasks_drawn(7, {"task_id": "shopping.5"}) == a
    # Another process draws the same sequence (seeding does not depend on this process's state).
    code = (
        "import sys, json, gymnasium as gym\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "from test_tasks import _tasks_drawn\n"
        "print(json.dumps(_tasks_drawn(7)))\n"
    )
    import json
    import subprocess
    import sys
    from pathlib import Path

    out = subprocess.run(
        [sys.executable, "-c", code, str(Path(__file__).parent)], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == a


def test_gymnasium_check_env_passes_on_multi_task_ids(server: str) -> None:
    from gymnasium.utils.env_checker import check_env

    for env_id in ("webserv/shopping", "webserv/cms", "webserv/shopping.3"):
        env = gym.make(env_id, wallclock=False)
        try:
            check_env(env.unwrapped, skip_render_check=True)
        finally:
            env.close()


def test_a_task_given_once_is_not_pinned_in_the_trl_and_vector_adapters(server: str) -> None:
    from webserv.integrations.trl import web_environment

    expected = _tasks_drawn(7)[:2]
    trl = web_environment("shopping", server_url=server)()
    try:
        trl.reset(task_id="shopping.5")
        trl.reset(seed=7)
        first = trl.web_env.last_info["task_id"]  # type: ignore[union-attr]
        trl.reset()
        assert [first, trl.web_env.last_info["task_id"]] == expected  # type: ignore[union-attr]
    finally:
        trl.web_env.close()  # type: ignore[union-attr]
    vec = gym.make_vec(
        "webserv/shopping", num_envs=2, vectorization_mode="vector_entry_point", wallclock=False
    )
    try:
        vec.reset(options={"task_id": "shopping.5"})
        _, infos = vec.reset(seed=7)  # member i is seeded 7 + i, as gymnasium's vector envs do
        assert infos["task_id"][0] == expected[0], infos["task_id"]
    finally:
        vec.close()
