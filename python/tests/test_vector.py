"""The native vector env: gymnasium.make_vec over one connection, concurrent steps, gymnasium autoreset."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from conftest import api_peak, reset_api_peak
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import iterate
from gymnasium.wrappers.vector import DictInfoToList, RecordEpisodeStatistics

import webserv


def check_batch(envs: VectorEnv, obs: dict, n: int) -> None:
    """What gymnasium's vector envs promise of a batch: the batched space holds it, and each
    environment's slice is in the single space."""
    assert set(obs) == set(envs.single_observation_space.spaces)
    assert all(isinstance(v, list) and len(v) == n for v in obs.values())
    assert envs.observation_space.contains(obs)
    singles = list(iterate(envs.observation_space, obs))
    assert len(singles) == n
    assert all(envs.single_observation_space.contains(dict(s)) for s in singles)


def test_make_vec_on_the_shop_steps_and_autoresets(server: str) -> None:
    envs = gym.make_vec("webserv/shopping", num_envs=8, max_steps=2)
    try:
        assert isinstance(envs.unwrapped, webserv.WebVectorEnv) and envs.num_envs == 8
        assert envs.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP
        assert envs.spec is not None and envs.spec.id == "webserv/shopping"

        obs, infos = envs.reset(seed=0)
        check_batch(envs, obs, 8)
        tasks = list(infos["task_id"])
        assert infos["_task_id"].all() and len(set(tasks)) > 1, tasks  # seeds 0..7 pick tasks
        assert list(infos["cause"]) == ["make"] * 8
        assert all(url.startswith("http://shopping.webserv.test/") for url in obs["url"])
        assert len({envs.unwrapped.client.host_of(i) for i in envs.unwrapped.env_ids}) == 1  # one server

        # The same seeds pick the same tasks again.
        _, again = envs.reset(seed=0)
        assert list(again["task_id"]) == tasks and list(again["cause"]) == ["reset"] * 8

        actions = ['click("cart")'] * 8
        assert envs.action_space.contains(actions)
        obs, rewards, terminated, truncated, infos = envs.step(actions)
        check_batch(envs, obs, 8)
        assert rewards.dtype == np.float64 and rewards.shape == (8,) and not rewards.any()
        assert terminated.dtype == np.bool_ and not terminated.any() and not truncated.any()
        assert all(url.endswith("/cart") for url in obs["url"]) and list(infos["step"]) == [1] * 8

        # max_steps=2: the second step truncates every environment...
        obs, rewards, terminated, truncated, infos = envs.step(['click("webserv-shop")'] * 8)
        assert truncated.all() and not terminated.any()

        # ... and the next resets them (NEXT_STEP): the actions are ignored (a stop would
        # terminate), the observations are first pages, rewards 0, flags down.
        obs, rewards, terminated, truncated, infos = envs.step(['stop("no")'] * 8)
        assert not terminated.any() and not truncated.any() and not rewards.any()
        assert list(infos["cause"]) == ["reset"] * 8 and list(infos["step"]) == [0] * 8
        assert obs["last_action"] == [""] * 8
        obs, _, terminated, _, _ = envs.step(['stop("no")'] * 8)
        assert terminated.all()
    finally:
        envs.close()
    assert envs.unwrapped.env_ids == [None] * 8


def test_steps_run_concurrently(server: str, pages: str) -> None:
    """Each step's N actions are in flight together: every click fetches /api (which
    answers after 300 ms), and the page server sees several of those requests at once."""
    envs = webserv.WebVectorEnv(4, start_url=f"{pages}/page?n=5")
    try:
        envs.reset()
        reset_api_peak()
        obs, *_ = envs.step(['click("load")'] * 4)
        assert all("loaded 5" in html for html in obs["html"])
        assert api_peak() >= 2
    finally:
        envs.close()


def test_same_step_and_disabled_autoreset_and_vector_wrappers(server: str, pages: str) -> None:
    envs = gym.make_vec(
        "webserv/open", num_envs=2, start_url=f"{pages}/page?n=1", autoreset_mode="SameStep", max_steps=1
    )
    try:
        assert envs.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP
        envs.reset()
        obs, rewards, terminated, truncated, infos = envs.step(['click("next")', "noop()"])
        # Truncated and reset at once: the batch holds first pages, the last ones are in final_obs.
        assert truncated.all() and obs["url"] == [f"{pages}/page?n=1"] * 2
        assert infos["final_obs"][0]["url"] == f"{pages}/page?n=2" and infos["_final_obs"].all()
        assert list(infos["final_info"]["step"]) == [1, 1] and list(infos["cause"]) == ["reset"] * 2
    finally:
        envs.close()

    envs = webserv.WebVectorEnv(2, start_url=f"{pages}/page?n=1", autoreset_mode=AutoresetMode.DISABLED)
    try:
        envs.reset()
        _, _, terminated, _, _ = envs.step(["stop [a]", "noop()"])
        assert list(terminated) == [True, False]
        with pytest.raises(ValueError, match="reset them first"):
            envs.step(["noop()", "noop()"])
        obs, infos = envs.reset(options={"reset_mask": np.array([True, False])})
        assert list(infos["_cause"]) == [True, False] and infos["cause"][0] == "reset"
        _, _, terminated, _, _ = envs.step(["noop()", "noop()"])
        assert not terminated.any()
    finally:
        envs.close()

    # gymnasium's vector wrappers run on it: episode statistics (NEXT_STEP) and per-env infos.
    envs = RecordEpisodeStatistics(
        gym.make_vec("webserv/open", num_envs=2, start_url=f"{pages}/page?n=3", max_steps=2)
    )
    try:
        envs.reset(seed=1)
        envs.step(["noop()", "noop()"])
        _, _, _, truncated, infos = envs.step(["noop()", "noop()"])
        assert truncated.all() and list(infos["episode"]["l"]) == [2, 2] and infos["_episode"].all()
    finally:
        envs.close()
    envs = DictInfoToList(gym.make_vec("webserv/open", num_envs=2, start_url=f"{pages}/page?n=4"))
    try:
        _, infos = envs.reset()
        assert isinstance(infos, list) and [i["cause"] for i in infos] == ["make", "make"]
    finally:
        envs.close()


def test_bad_batches_say_what_is_wrong() -> None:
    envs = webserv.WebVectorEnv(2, start_url="http://127.0.0.1:1/")
    with pytest.raises(ValueError, match="sequence of 2 actions"):
        envs.step("noop()")
    with pytest.raises(ValueError, match="3 seeds for 2 environments"):
        envs.reset(seed=[1, 2, 3])
    with pytest.raises(ValueError, match="num_envs"):
        webserv.WebVectorEnv(0)
