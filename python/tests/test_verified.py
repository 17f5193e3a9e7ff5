"""WebArena-Verified through gymnasium: the bundled shop's Verified set, graded by the official evaluators."""

from __future__ import annotations

import asyncio
import json

import gymnasium as gym

import webserv
from webserv.verified import dataset_paths

NAVIGATE = json.dumps({"task_type": "NAVIGATE", "status": "SUCCESS", "retrieved_data": None})


def test_datasets_are_read_from_the_installed_package() -> None:
    paths = dataset_paths()
    for key in ("full", "hard"):
        assert "site-packages" in paths[key] and paths[key].endswith(".json")
        assert len(json.load(open(paths[key]))) == {"full": 812, "hard": 258}[key]


def test_verified_task_ids_register_from_the_server(server: str) -> None:
    ids = webserv.register_from_server()
    assert "webserv/verified.shopping.20" in ids and "webserv/verified.cms.15" in ids
    assert "webserv/verified.shopping.20" in gym.registry


def test_verified_task_set_is_graded_from_the_trace(server: str) -> None:
    async def oracle() -> list[str]:
        async with webserv.AsyncClient() as c:
            return next(t["oracle"] for t in await c.tasks("shopping") if t["id"] == "shopping.20")

    actions = asyncio.run(oracle())[:-1]
    answer = "stop(" + json.dumps(NAVIGATE) + ")"
    env = gym.make("webserv/shopping", task_set="webarena-verified")
    try:
        _, info = env.reset(options={"task_id": "verified.shopping.20"})
        assert info["task_set"] == "webarena-verified" and info["task_id"] == "verified.shopping.20"
        for act in actions:
            env.step(act)
        _, reward, terminated, _, info = env.step(answer)
        assert terminated and reward == 1.0, info
        assert info["scores"]["verified.NetworkEventEvaluator"] == 1.0
        # The same navigation answered as a retrieval is wrong under Verified.
        env.reset(options={"task_id": "verified.shopping.20"})
        for act in actions:
            env.step(act)
        _, reward, _, _, info = env.step("stop(" + json.dumps(NAVIGATE.replace("NAVIGATE", "RETRIEVE")) + ")")
        assert reward == 0.0 and info["scores"]["verified.AgentResponseEvaluator"] == 0.0
    finally:
        env.close()
