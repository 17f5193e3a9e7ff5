"""MiniWoB++ as WebServ environments: every task of the installed ``miniwob`` package, its
seeds, goals and rewards (docs/tasks.md, "MiniWoB++")."""

from __future__ import annotations

import asyncio
import os
import random
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from miniwob_solvers import SOLVERS, elements, play, q, quoted, with_text

import webserv
from webserv import miniwob

# Seeds each scripted solution is played on: 5 in `make test` (a few minutes on a loaded
# 2-core machine); WEBSERV_MINIWOB_SEEDS=10 plays the 10 (all pass).
SEEDS = range(int(os.environ.get("WEBSERV_MINIWOB_SEEDS", "5")))
# Environments played at once (each its own browser context on the one server).
PARALLEL = 4


def test_every_task_of_the_package_has_an_id_and_the_server_lists_it(server: str) -> None:
    names = miniwob.task_names()
    assert len(names) >= 125, f"the miniwob package's pages were not found ({miniwob.html_dir()})"
    for name in names:
        assert f"webserv/miniwob.{name}" in gym.registry
    assert "webserv/miniwob" in gym.registry
    listed = {i for i in webserv.register_from_server(server) if i.startswith("webserv/miniwob.")}
    assert listed == {f"webserv/miniwob.{n}" for n in names}


def _map(f: Callable[[Any], Any], items: list[Any]) -> list[Any]:
    with ThreadPoolExecutor(PARALLEL) as pool:
        return list(pool.map(f, items))


def _solve(task: str) -> list[tuple[int, float, bool, dict, list[str], str]]:
    env = gym.make(f"webserv/miniwob.{task}", observe={"geometry": True})  # boxes, for drags and scrolls
    out = []
    try:
        for seed in SEEDS:
            obs, info = env.reset(seed=seed)
            assert info["task_id"] == f"miniwob.{task}" and info["task_set"] == "miniwob"
            try:
                reward, term, trunc, info, actions = play(SOLVERS[task], obs, env.step)
            except Exception as e:  # noqa: BLE001 (reported with the task and seed below)
                out.append((seed, 0.0, False, {"miniwob": {"error": repr(e)}}, [], obs["goal"]))
                continue
            out.append((seed, reward, term and not trunc, info, actions, obs["goal"]))
    finally:
        env.close()
    return out


def test_scripted_solutions_reach_the_maximum_reward(server: str) -> None:
    # click, type, select, drag, date pickers, scrolling, spinners and multi-step forms, each
    # on several seeds: BrowserGym's reward 1, MiniWoB's raw reward 1, the episode over.
    assert len(SOLVERS) >= 20
    results = dict(zip(SOLVERS, _map(_solve, list(SOLVERS)), strict=True))
    failed = [
        (task, seed, goal, reward, info.get("miniwob"), actions)
        for task, runs in results.items()
        for seed, reward, done, info, actions, goal in runs
        if not (reward == 1.0 and done and info["miniwob"].get("raw_reward") == 1.0)
    ]
    assert not failed, failed


def _random_episodes(tasks: list[str]) -> list[tuple[str, list[tuple[float, bool, bool, dict]]]]:
    """A random policy's episode on each task, on one environment of the sampling id."""
    env = gym.make("webserv/miniwob")
    out = []
    try:
        for task in tasks:
            rng = random.Random(task)
            obs, info = env.reset(seed=rng.randrange(2**32), options={"task_id": f"miniwob.{task}"})
            assert obs["goal"] and info["task_id"] == f"miniwob.{task}", (task, obs["goal"])
            steps = []
            for _ in range(3):
                ids = [e for e in elements(obs) if e.sid]
                if ids and rng.random() < 0.8:
                    el = rng.choice(ids)
                    action = (
                        f"fill({q(el.sid)}, {q('abc')})"
                        if el.tag in ("input", "textarea")
                        else f"click({q(el.sid)})"
                    )
                else:
                    action = f"mouse_click({rng.randrange(160)}, {rng.randrange(50, 210)})"
                obs, reward, term, trunc, info = env.step(action)
                steps.append((reward, term, trunc, info))
                if term or trunc:
                    break
            out.append((task, steps))
    finally:
        env.close()
    return out


def test_a_random_policy_plays_every_task_without_errors(server: str) -> None:
    names = miniwob.task_names()
    chunks = [names[i::PARALLEL] for i in range(PARALLEL)]
    for task, steps in [e for chunk in _map(_random_episodes, chunks) for e in chunk]:
        for reward, term, trunc, info in steps:
            assert "eval_error" not in info, (task, info["eval_error"])
            assert reward in (0.0, 1.0), (task, reward)
            m = info["miniwob"]
            assert -1 <= m["raw_reward"] <= 1 and m["done"] == (term or trunc), (task, m)
            assert reward == float(m["raw_reward"] > 0), (task, m)


def test_the_seed_gives_browsergyms_page_seed_and_the_page_ending_ends_the_episode(server: str) -> None:
    env = gym.make("webserv/miniwob.click-test")
    try:
        for seed in (0, 7, 2**32 - 1):
            env.reset(seed=seed)
            _, reward, term, trunc, info = env.step("noop()")
            assert (reward, term, trunc) == (0.0, False, False)
            # BrowserGym seeds the page with np.random.RandomState(seed).randint(0, 1000000).
            assert info["miniwob"]["page_seed"] == np.random.RandomState(seed).randint(0, 1000000)
        with pytest.raises(webserv.BadArgs, match="4294967295"):
            env.reset(seed=2**32)
        # Leaving the task's page ends the episode with reward 0, as in BrowserGym.
        env.reset(seed=1)
        _, reward, term, trunc, info = env.step(
            'goto("http://miniwob.webserv.test/miniwob/click-button.html")'
        )
        assert (reward, term, trunc) == (0.0, True, False) and "no longer the task's" in info["miniwob"][
            "error"
        ]
    finally:
        env.close()


def test_the_sampling_id_draws_tasks_by_seed(server: str) -> None:
    env = gym.make("webserv/miniwob")
    try:
        drawn = [env.reset(seed=s)[1]["task_id"] for s in (3, 4, 3)]
        assert drawn[0] == drawn[2] != drawn[1] and all(t.startswith("miniwob.") for t in drawn)
    finally:
        env.close()


# The utterance as MiniWoB's own page computes it, seeded as BrowserGym seeds it
# (browsergym/miniwob/base.py: Math.seedrandom(RandomState(seed).randint(0, 1000000)),
# core.EPISODE_MAX_TIME, core.startEpisodeReal(), core.getUtterance()), in a page opened from
# the package's files by Playwright, apart from WebServ.
_EXPECTED = """([pageSeed]) => {
  Math.seedrandom(pageSeed);
  core.EPISODE_MAX_TIME = 1000000;
  core.startEpisodeReal();
  const u = core.getUtterance();
  return (u && typeof u === 'object') ? u.utterance : u;
}"""


def _expected_goals(pairs: list[tuple[str, int]]) -> list[str]:
    from playwright.sync_api import sync_playwright

    html = Path(miniwob.html_dir() or "")
    out = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        try:
            for task, seed in pairs:
                page = browser.new_page()
                page.goto((html / "miniwob" / f"{task}.html").as_uri())
                page.wait_for_function("document.readyState === 'complete'")
                page_seed = int(np.random.RandomState(seed).randint(0, 1000000))
                out.append(" ".join(str(page.evaluate(_EXPECTED, [page_seed])).split()))
                page.close()
        finally:
            browser.close()
    return out


def test_goals_agree_with_miniwobs_own_seeding(server: str) -> None:
    rng = random.Random(42)
    names = [n for n in miniwob.task_names() if not n.startswith("flight")]
    pairs = [(task, rng.randrange(2**32)) for task in rng.sample(names, 8)] + [
        ("click-button", 0),
        ("enter-text", 0),
    ]

    def goal(pair: tuple[str, int]) -> str:
        env = gym.make(f"webserv/miniwob.{pair[0]}")
        try:
            return env.reset(seed=pair[1])[0]["goal"]
        finally:
            env.close()

    got = _map(goal, pairs)
    want = _expected_goals(pairs)
    assert got == want, [(p, g, w) for p, g, w in zip(pairs, got, want, strict=True) if g != w]
    # What BrowserGym's own run of these two gave (bench/miniwob_bench.py compares it live).
    assert got[-2:] == ['Click on the "no" button.', 'Enter "Myron" into the text field and press Submit.']
    assert all(re.search(r"\w", g) for g in got)


def test_restore_and_fork_replay_the_episode_from_its_seed(server: str) -> None:
    # The instance lives in the page's JavaScript, which no captured state carries: a restore or a
    # fork starts the same instance again (the same seed) and replays the episode's actions, so
    # the half-typed field is there (info.fork, docs/protocol.md), and each can solve it.
    async def main() -> None:
        async with webserv.AsyncClient(server) as client:
            parent = client.env("miniwob", task="miniwob.enter-text")
            children: list[webserv.AsyncEnv] = []
            try:
                obs, _ = await parent.reset(seed=11)
                await parent.step(f"fill({q('input-text')}, {q('half-typed')})")
                name = await parent.snapshot()
                children = await parent.fork(2, name=name)
                for child in children:
                    assert child.last_obs is not None and child.last_obs["goal"] == obs["goal"]
                    assert child.last_info is not None and child.last_info["fork"]["how"] == "replay"
                    assert [i["value"] for i in child.last_obs["inputs"]] == ["half-typed"]
                    reward, done, _, info, _ = await _play_async(child, child.last_obs)
                    assert (reward, done, info["miniwob"]["raw_reward"]) == (1.0, True, 1.0)
                again, info = await parent.restore(name)
                assert again["goal"] == obs["goal"] and info["cause"] == "restore"
            finally:
                for e in (*children, parent):
                    await e.close()

    asyncio.run(main())


async def _play_async(env: webserv.AsyncEnv, obs: dict) -> tuple[float, bool, bool, dict, list[str]]:
    gen = SOLVERS["enter-text"](obs)
    action, reward, term, trunc, info = next(gen), 0.0, False, False, {}
    actions = []
    while True:
        actions.append(action)
        obs, reward, term, trunc, info = await env.step(action)
        if term or trunc:
            return reward, term, trunc, info, actions
        action = gen.send(obs)


def test_a_vector_env_plays_one_task_on_consecutive_seeds(server: str) -> None:
    envs = gym.make_vec("webserv/miniwob.click-button", num_envs=3)
    try:
        obs, _ = envs.reset(seed=0)  # member i gets seed i, as gymnasium's vector envs do
        single = gym.make("webserv/miniwob.click-button")
        try:
            assert list(obs["goal"]) == [single.reset(seed=i)[0]["goal"] for i in range(3)]
        finally:
            single.close()
        words = [quoted(g)[0] for g in obs["goal"]]
        actions = [
            f"click({q(with_text({'html': h}, w, ('button',)).sid)})"
            for h, w in zip(obs["html"], words, strict=True)
        ]
        _, rewards, terminated, _, infos = envs.step(actions)
        assert list(rewards) == [1.0] * 3 and terminated.all()
    finally:
        envs.close()


def test_a_reset_of_the_same_task_restarts_its_page_in_place(server: str) -> None:
    # A task whose next episode started in the loaded page is exactly a fresh load
    # (sites/miniwob/inplace.go, compared by TestRestartInPlaceIsAFreshLoad) starts it there,
    # and info["restart"] says which way each reset went (docs/tasks.md, "Reset in place").
    env = gym.make("webserv/miniwob.click-button")
    try:
        _, info = env.reset(seed=0)
        assert info["restart"] == "reload"  # the first episode loads its page
        env.step("noop()")
        for seed in (1, 2):
            obs, info = env.reset(seed=seed)
            assert info["restart"] == "in_place"
            fresh = gym.make("webserv/miniwob.click-button")
            try:
                want, want_info = fresh.reset(seed=seed)
                assert want_info["restart"] == "reload"
                for key in ("goal", "axtree_txt", "pruned_html", "focused_element_bid"):
                    assert obs[key] == want[key], key
                word = quoted(obs["goal"])[0]
                action = f"click({q(with_text(obs, word, ('button',)).sid)})"
                got, want_step = env.step(action), fresh.step(action)
                assert got[1:3] == want_step[1:3] == (1.0, True)
                assert got[4]["miniwob"] == want_step[4]["miniwob"] | {"reward": got[4]["miniwob"]["reward"]}
                assert got[4]["miniwob"]["page_seed"] == np.random.RandomState(seed).randint(0, 1000000)
            finally:
                fresh.close()
        # A page the agent left is loaded again.
        assert env.reset(seed=3)[1]["restart"] == "in_place"
        env.step('goto("http://miniwob.webserv.test/miniwob/click-test.html")')
        assert env.reset(seed=4)[1]["restart"] == "reload"
    finally:
        env.close()
