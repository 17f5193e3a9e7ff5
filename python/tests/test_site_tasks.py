"""A site definition's own tasks (tasks: in its YAML) as gymnasium environments."""

from __future__ import annotations

import math
import os
import select
import signal
from pathlib import Path

import gymnasium as gym
import pytest
from conftest import sites_server

import webserv

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sites"


def test_a_sites_own_tasks_are_gymnasium_ids(binary: str, tmp_path: Path) -> None:
    """`serve --sites DIR` with the example tracker: webserv/tracker.N runs task N, graded in the server."""
    srv = sites_server(binary, str(EXAMPLE), str(tmp_path))
    try:
        ids = webserv.register_from_server(srv.url)
        assert {"webserv/tracker", *(f"webserv/tracker.{n}" for n in range(1, 7))} <= set(ids)
        assert gym.spec("webserv/tracker.4").kwargs == {"site": "tracker", "task": "tracker.4"}

        env = gym.make("webserv/tracker.2", url=srv.url)
        try:
            obs, info = env.reset()
            assert info["task_id"] == "tracker.2" and obs["goal"] == "How many open issues are labelled bug?"
            env.step('click("bug")')
            _, reward, terminated, _, info = env.step('stop("3")')
            assert terminated and reward == 1.0, info
        finally:
            env.close()

        # A verifier run in the instance (check): named sub-scores with weights.
        env = gym.make("webserv/tracker.4", url=srv.url)
        try:
            env.reset()
            env.step('click("crash-when-title-is-empty")')
            env.step('click("close-issue")')
            _, reward, terminated, _, info = env.step('stop("")')
            assert terminated and math.isclose(reward, 2 / 3), info
            assert info["scores"]["check.closed"] == 1 and info["scores"]["check.comment"] == 0
            # Its verifier names nothing the server can read of what it may change: its side
            # effects are unknown, and the info says so rather than pass for a clean episode.
            assert info["side_effects_note"].startswith("side effects not looked for: "), info
            assert "side_effects" not in info, info
        finally:
            env.close()

        # The site's id samples its tasks, by gymnasium's seeding contract.
        env = gym.make("webserv/tracker", url=srv.url, wallclock=False)
        try:
            _, info = env.reset(seed=3)
            assert info["task_id"].startswith("tracker.")
            from gymnasium.utils.env_checker import check_env

            check_env(env.unwrapped, skip_render_check=True)
        finally:
            env.close()
    finally:
        srv.stop()
        for n in ["webserv/tracker", *(f"webserv/tracker.{n}" for n in range(1, 7))]:
            gym.registry.pop(n, None)


def _site_pids(root: Path) -> set[int]:
    """The processes whose working directory is under root (the local backend's instances)."""
    pids = set()
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if Path(os.readlink(d / "cwd")).is_relative_to(root):
                    pids.add(int(d.name))
            except OSError:
                continue
    return pids


def _kill_and_wait(pid: int) -> None:
    """SIGKILL pid and return once it has exited (its pidfd turns readable)."""
    fd = os.pidfd_open(pid)
    try:
        signal.pidfd_send_signal(fd, signal.SIGKILL)
        select.select([fd], [], [])
    finally:
        os.close(fd)


def test_a_dead_site_instance_raises_site_down(binary: str, tmp_path: Path) -> None:
    """The tracker's process killed mid-episode: steps raise SiteDown (the infrastructure's), the
    stop is not graded, a reset brings a fresh instance whose episode is graded again."""
    srv = sites_server(binary, str(EXAMPLE), str(tmp_path))
    try:
        webserv.register_from_server(srv.url)
        env = gym.make("webserv/tracker.1", url=srv.url)
        try:
            env.reset()
            (pid,) = _site_pids(tmp_path)
            _kill_and_wait(pid)
            with pytest.raises(webserv.SiteDown) as down:
                env.step('click("search-is-slow")')
            assert isinstance(down.value, webserv.InfrastructureError) and down.value.retryable
            assert "tracker" in down.value.message and "reset" in down.value.message
            with pytest.raises(webserv.SiteDown):
                env.step('stop("")')
            env.reset()
            env.step('click("search-is-slow")')
            _, reward, terminated, _, info = env.step('stop("")')
            assert terminated and reward == 1.0, info
        finally:
            env.close()
    finally:
        srv.stop()
        for n in list(gym.registry):
            if n.startswith("webserv/tracker"):
                gym.registry.pop(n, None)
