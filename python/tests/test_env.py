"""The gymnasium layer against a real server and browser."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import webserv
from webserv.observation import observation_space


def test_make_through_the_entry_point_in_a_fresh_interpreter(server: str, pages: str) -> None:
    code = (
        "import sys\n"
        "assert 'webserv' not in sys.modules\n"
        "import gymnasium as gym\n"
        f"env = gym.make('webserv/open', start_url='{pages}/page?n=1')\n"
        "obs, info = env.reset()\n"
        "print(obs['title'], obs['clickable'])\n"
        "env.close()\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=os.environ
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "Page 1 ['load', 'name', 'next']"


def test_full_episode(server: str, pages: str) -> None:
    env = gym.make("webserv/open", start_url=f"{pages}/page?n=2", goal="Load the list")
    try:
        obs, info = env.reset(seed=1)
        assert obs["goal"] == "Load the list"
        assert obs["chat_messages"] == [{"role": "user", "message": "Load the list"}]
        assert obs["url"].endswith("/page?n=2") and obs["open_pages_titles"] == ["Page 2"]
        assert "[load] button" in obs["axtree_txt"] and obs["elapsed_time"] == 0.0

        obs, reward, terminated, truncated, info = env.step('click("load")')
        assert "loaded 2" in obs["pruned_html"] and info["settled"] is True
        assert (reward, terminated, truncated) == (0.0, False, False)

        obs, *_ = env.step({"type": "type", "target": "name", "text": "Ada"})
        assert [i["value"] for i in obs["inputs"]] == ["Ada"]
        obs, *_ = env.step("click [missing]")
        assert "no element with id 'missing'" in obs["last_action_error"]

        obs, reward, terminated, truncated, info = env.step("stop [done]")
        assert terminated and not truncated and info["answer"] == "done"
        with pytest.raises(webserv.EpisodeOver):
            env.step("noop()")

        obs, info = env.reset()
        assert obs["title"] == "Page 2" and obs["last_action_error"] == ""
    finally:
        env.close()


def test_truncated_at_max_steps(server: str, pages: str) -> None:
    env = gym.make("webserv/open", start_url=f"{pages}/page?n=3", max_steps=2)
    try:
        env.reset()
        assert env.step("noop()")[3] is False
        _, _, terminated, truncated, _ = env.step("noop()")
        assert truncated and not terminated
    finally:
        env.close()


def test_one_options_type_for_the_env_and_the_vector_env(server: str, pages: str) -> None:
    observe = {"geometry": True}
    opts = webserv.EnvOptions(start_url=f"{pages}/page?n=6", max_steps=1, wallclock=False, observe=observe)
    observe["geometry"] = False  # the options keep their own copy
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.idle_ms = 5  # type: ignore[misc]
    # Keywords and an options value make the same settings, for both classes.
    by_keywords = gym.make(
        "webserv/open",
        start_url=f"{pages}/page?n=6",
        max_steps=1,
        wallclock=False,
        observe={"geometry": True},
    )
    env = gym.make("webserv/open", options=opts)
    vec = gym.make_vec(
        "webserv/open", num_envs=2, vectorization_mode="vector_entry_point", options=opts, max_steps=2
    )
    try:
        assert by_keywords.unwrapped.options == env.unwrapped.options == opts  # type: ignore[attr-defined]
        assert vec.options == dataclasses.replace(opts, max_steps=2)  # type: ignore[attr-defined]
        # ... and the environments run by them.
        obs, _ = env.reset()
        assert obs["url"].endswith("/page?n=6") and "elapsed_time" not in obs
        assert "name" in obs["extra_element_properties"]
        assert env.step("noop()")[3] is True  # max_steps=1
        batch, _ = vec.reset()
        assert all(u.endswith("/page?n=6") for u in batch["url"])
        assert not vec.step(["noop()", "noop()"])[3].any()
        assert vec.step(["noop()", "noop()"])[3].all()  # max_steps=2
    finally:
        for e in (by_keywords, env, vec):
            e.close()
    with pytest.raises(ValueError, match="render_mode 'human' is not supported"):
        webserv.EnvOptions(render_mode="human")


def test_browsergym_keys_have_the_right_types(server: str, pages: str) -> None:
    env = webserv.WebEnv(start_url=f"{pages}/page?n=4", screenshot=True)
    try:
        obs, _ = env.reset()
        types = {
            "goal": str,
            "goal_object": list,
            "chat_messages": list,
            "url": str,
            "open_pages_urls": list,
            "open_pages_titles": list,
            "active_page_index": int,
            "last_action": str,
            "last_action_error": str,
            "elapsed_time": float,
            "focused_element_bid": str,
            "screenshot": bytes,
            "axtree_txt": str,
            "pruned_html": str,
        }
        for key, t in types.items():
            assert isinstance(obs[key], t), (key, type(obs[key]))
        assert obs["screenshot"].startswith(b"\x89PNG")
        assert env.observation_space.contains(obs)
        obs, *_ = env.step('click("next")')
        assert (
            obs["elapsed_time"] > 0 and obs["last_action"] == 'click("next")' and obs["url"].endswith("n=5")
        )
    finally:
        env.close()


def test_check_env_passes(server: str, pages: str) -> None:
    # check_env steps two identically seeded episodes and compares their
    # observations and infos exactly; wall-clock times never repeat, so they
    # are left out here (they are on by default, see the BrowserGym keys test).
    env = gym.make("webserv/open", start_url=f"{pages}/page?n=6", render_mode="ansi", wallclock=False)
    try:
        check_env(env.unwrapped, skip_render_check=False)
        env.reset()
        assert "[load] button" in (env.render() or "")
    finally:
        env.close()


def test_spaces() -> None:
    space = observation_space()
    assert space["url"].contains("x") and not space["url"].contains(3)
    assert webserv.WebEnv.metadata["render_modes"] == ["ansi"]
    with pytest.raises(ValueError, match="render_mode"):
        webserv.WebEnv(start_url="http://127.0.0.1:1/", render_mode="human")


def test_vision_observe_options_pass_through(server: str, pages: str) -> None:
    observe = {"marks": True, "format": "jpeg", "quality": 70, "max_side": 640, "layout": True}
    env = webserv.WebEnv(start_url=f"{pages}/page?n=4", observe=observe, wallclock=False)
    try:
        obs, _ = env.reset()
        assert env.observation_space.contains(obs)
        assert set(obs) == set(env.observation_space.spaces)
        assert obs["screenshot"].startswith(b"\xff\xd8") and obs["screenshot_som"].startswith(b"\xff\xd8")
        assert obs["screenshot_scale"] == 0.5 and obs["viewport"]["width"] == 1280
        props = obs["extra_element_properties"]
        assert obs["som_labels"]["1"] == "load" and props["load"]["set_of_marks"] is True
        x, y, w, h = props["load"]["bbox"]
        obs, *_ = env.step(f"mouse_click({x + w / 2}, {y + h / 2})")
        assert obs["last_action_error"] == "" and "loaded" in obs["html"]
    finally:
        env.close()
