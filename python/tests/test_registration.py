"""gymnasium ids: static ones without any server, the rest from what a server offers."""

from __future__ import annotations

import asyncio
import os
import secrets
import subprocess
import sys
from pathlib import Path

import gymnasium as gym

import webserv
from webserv.launcher import LocalServer
from webserv.registration import gym_id


def test_static_ids_need_no_server() -> None:
    """Importing gymnasium registers the stock server's sites and the bundled tasks, and asks no server."""
    code = (
        "import gymnasium as gym, sys\n"
        "ids = ['webserv/open', 'webserv/shopping', 'webserv/cms', 'webserv/gitlab', 'webserv/dream',\n"
        "       'webserv/shopping.17', 'webserv/cms.39']\n"
        "print(all(i in gym.registry for i in ids))\n"
        "print(gym.spec('webserv/shopping.17').kwargs, gym.spec('webserv/open').vector_entry_point)\n"
        "import webserv.launcher as l\n"
        "print(l._server)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "WEBSERV_URL"}
    env["WEBSERV_BIN"] = "/nonexistent/webserv"  # nothing could be started
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "True",
        "{'site': 'shopping', 'task': 'shopping.17'} webserv.vector:WebVectorEnv",
        "None",
    ]


def test_gym_ids_of_names_gymnasium_cannot_hold() -> None:
    assert gym_id("shopping.3") == "webserv/shopping.3"
    assert gym_id("shopping+cms.3") == "webserv/shopping_cms.3"


def test_a_new_site_is_registered_when_a_client_connects(binary: str, tmp_path: Path) -> None:
    """A site the server is given (--sites) gets its gymnasium id from the server, without editing Python."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "index.html").write_text("<!doctype html><title>Notes</title><h1>Notes</h1>")
    # A name of its own: other tests of this worker's process register sites called notes.
    name = f"notes-{secrets.token_hex(3)}"
    (tmp_path / f"{name}.yaml").write_text(
        f"name: {name}\n"
        "description: a static page\n"
        f'local: {{command: ["{sys.executable}", -m, http.server, "{{port}}", --bind, 127.0.0.1,'
        ' --directory, "{data}"], data_dir: data}\n'
    )
    srv = LocalServer(binary, ["--idle", "200ms", "--no-bundled", "--sites", str(tmp_path)])
    try:
        assert f"webserv/{name}" not in gym.registry

        async def connect() -> None:
            async with webserv.AsyncClient(srv.url):
                pass

        asyncio.run(connect())
        assert gym.spec(f"webserv/{name}").kwargs == {"site": name}

        ids = webserv.register_from_server(srv.url)
        assert {"webserv/open", f"webserv/{name}"} <= set(ids)
        assert not any(i.startswith("webserv/shopping") for i in ids)  # --no-bundled: what it offers

        env = gym.make(f"webserv/{name}", url=srv.url)
        try:
            obs, info = env.reset()
            assert obs["title"] == "Notes" and obs["url"].startswith(f"http://{name}.webserv.test")
        finally:
            env.close()
    finally:
        srv.stop()
        gym.registry.pop(f"webserv/{name}", None)


def test_tasks_are_registered_from_the_server(server: str) -> None:
    """The server's task list, not the package, says which task ids exist."""
    gym.registry.pop("webserv/cms.7", None)
    ids = webserv.register_from_server(server)
    assert "webserv/cms.7" in ids and "webserv/shopping.59" in ids and "webserv/shopping" in ids
    assert gym.spec("webserv/cms.7").kwargs == {"site": "cms", "task": "cms.7"}
    assert len([i for i in ids if i.startswith("webserv/shopping.")]) == 60
    # The server's attacked task sets (docs/attacks.md) register as any task set's tasks do.
    assert gym.spec("webserv/attacked.cms.7").kwargs == {"site": "cms", "task": "attacked.cms.7"}
