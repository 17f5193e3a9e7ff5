"""webserv.ray on a real Ray cluster of three nodes on 127.0.0.1, with a real `webserv serve` on each.

One cluster and one fleet serve the whole module (Ray's nodes take a while to start).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
import ray  # the ray extra: pip install '.[ray]' (make venv installs it)
from conftest import REPO

import webserv
import webserv.ray as wr
from webserv.ray.local import loopback_cluster
from webserv.ray.verl import AGENT_LOOP_CONFIG, WebServAgentLoop, parse_action

# Ray workers cannot import this test module: send its functions and classes by value.
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])

NODES = 3
FLEET = f"test-{os.getpid()}"
ORACLE = {
    f"shopping.{t['task_id']}": list(t["oracle"])
    for t in json.loads((REPO / "sites" / "shop" / "tasks" / "shopping.json").read_text())
}


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    with loopback_cluster(NODES, resources={"webserv": 1}) as c:
        yield c


@pytest.fixture(scope="module")
def fleet(cluster: Any, binary: str) -> Iterator[wr.Fleet]:
    f = wr.Fleet.start(
        FLEET, node_resource="webserv", binary=binary, serve_args=["--idle", "200ms"], poll=0.5
    )
    yield f
    f.shutdown()


def node_ids() -> list[str]:
    """The cluster's nodes, node0 (the head) first."""
    by_resource = {}
    for n in ray.nodes():
        for i in range(NODES):
            if n["Alive"] and f"node{i}" in n["Resources"]:
                by_resource[i] = n["NodeID"]
    return [by_resource[i] for i in range(NODES)]


def server_of(fleet: wr.Fleet, node_id: str) -> wr.ServerInfo:
    return next(s for s in fleet.servers() if s.node_id == node_id)


def test_one_server_per_node_on_loopback_with_a_token(fleet: wr.Fleet) -> None:
    servers = fleet.servers()
    assert sorted(s.node_id for s in servers) == sorted(node_ids())
    assert all(s.url.startswith("ws://127.0.0.1:") and s.alive for s in servers), servers
    assert len({s.url for s in servers}) == NODES

    async def without_token() -> None:
        client = webserv.AsyncClient(servers[0].url)
        try:
            with pytest.raises(webserv.ClientError) as e:
                await client.stats()
            assert e.value.code == "unauthorized"
        finally:
            await client.close()

    asyncio.run(without_token())


def test_sixteen_episodes_spread_over_the_nodes_with_groups_kept_together(fleet: wr.Fleet) -> None:
    nodes = node_ids()
    # Two GRPO groups of four, their members run on different nodes (so by different clients),
    # and eight episodes alone: 16 at once, as three rollout workers (one per node) would run them.
    work: dict[int, list[wr.EpisodeSpec]] = {i: [] for i in range(NODES)}
    for member in range(4):
        work[1 + member % 2].append(wr.EpisodeSpec(task="shopping.0", group_key="group-a"))
        work[(0, 2)[member % 2]].append(wr.EpisodeSpec(task="shopping.1", group_key="group-b"))
    for k in range(8):
        work[k % NODES].append(wr.EpisodeSpec(task=f"shopping.{2 + k}"))
    assert sum(len(w) for w in work.values()) == 16

    refs = {
        i: wr.rollout.options(resources={f"node{i}": 0.01}).remote(fleet.name, specs, policy_by_task)
        for i, specs in work.items()
    }
    done = {i: ray.get(ref, timeout=600) for i, ref in refs.items()}
    episodes = [e for eps in done.values() for e in eps]

    assert [e.failure for e in episodes] == [None] * 16
    assert [e.reward for e in episodes] == [1.0] * 16, [(e.spec.task, e.actions, e.info) for e in episodes]
    for i, eps in done.items():
        assert {e.node_id for e in eps} == {nodes[i]}
    url_of = {s.node_id: s.url for s in fleet.servers()}
    # Alone, an episode runs on its own node's server.
    for i, eps in done.items():
        assert {e.host for e in eps if e.spec.group_key is None} == {url_of[nodes[i]]}
    # A group runs on one server, whichever client made its members: one leader, the rest forks of it.
    for key in ("group-a", "group-b"):
        group = [e for e in episodes if e.spec.group_key == key]
        assert len({e.host for e in group}) == 1, [(e.node_id, e.host) for e in group]
        assert len({e.node_id for e in group}) == 2
        assert sorted(e.group_role for e in group) == ["leader", "member", "member", "member"]
        assert len({e.first_url for e in group}) == 1
    assert {e.host for e in episodes} == set(url_of.values())


def policy_by_task(obs: dict[str, Any], done: list[str]) -> str:
    """The oracle of the task whose goal this is."""
    goal = obs["goal"]
    task = next(t for t, g in GOALS.items() if g == goal)
    return ORACLE[task][len(done)]


GOALS = {
    f"shopping.{t['task_id']}": t["intent"]
    for t in json.loads((REPO / "sites" / "shop" / "tasks" / "shopping.json").read_text())
}


def test_a_dead_server_loses_its_environments_new_ones_go_elsewhere_and_it_comes_back(
    fleet: wr.Fleet, pages: str
) -> None:
    victim = server_of(fleet, node_ids()[1])

    async def main() -> None:
        # A client on the victim's node: its environments go to the victim.
        client = webserv.AsyncClient(
            placement=wr.FleetPlacement(fleet, node_id=victim.node_id), token=fleet.token
        )
        try:
            envs = [client.env("open", start_url=f"{pages}/page?n={i}") for i in range(2)]
            await asyncio.gather(*(e.reset() for e in envs))
            assert [e.host for e in envs] == [victim.url] * 2
            ids = {e.id for e in envs}
            await wait_for(
                lambda: ids <= set(server_of(fleet, victim.node_id).envs), "the fleet sees the envs"
            )

            os.killpg(victim.pid, signal.SIGKILL)  # the server and its browser die at once

            for e in envs:
                with pytest.raises(webserv.HostLost) as lost:
                    await e.step('click("load")')
                assert lost.value.code == "host_lost" and victim.url in lost.value.message
            fresh = client.env("open", start_url=f"{pages}/page?n=7")
            obs, _ = await fresh.reset()
            assert obs["title"] == "Page 7" and fresh.host not in (None, victim.url)
            await fresh.close()

            def back() -> bool:
                s = next((s for s in fleet.servers() if s.slot == victim.slot), None)
                return s is not None and s.restarts >= 1 and s.url != victim.url

            await wait_for(back, "the server comes back")
            again = server_of(fleet, victim.node_id)
            losses = [x for x in fleet.lost() if x.url == victim.url]
            assert len(losses) == 1 and ids <= set(losses[0].envs), fleet.lost()
            assert losses[0].node_id == victim.node_id and "exited" in losses[0].reason

            # The node's clients use the new server again.
            later = webserv.AsyncClient(
                placement=wr.FleetPlacement(fleet, node_id=victim.node_id), token=fleet.token
            )
            try:
                env = later.env("open", start_url=f"{pages}/page?n=8")
                obs, _ = await env.reset()
                assert env.host == again.url and obs["title"] == "Page 8"
                await env.close()
            finally:
                await later.close()
        finally:
            await client.close()

    asyncio.run(main())


async def wait_for(cond: Any, what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {timeout:.0f}s")
        await asyncio.sleep(0.25)


DRIVER = """
import asyncio, json, sys
import ray
import webserv
import webserv.ray as wr
from webserv.ray.local import keep_to_loopback

keep_to_loopback()
ray.init(address=sys.argv[1], logging_level="warning")
try:
    wr.Fleet.get("no-such-fleet")
except webserv.ServerUnavailable as e:
    missing = e.message
fleet = wr.Fleet.get(sys.argv[2])

async def main():
    client = await fleet.client_async()
    try:
        env = client.env("open", start_url=sys.argv[3])
        obs, _ = await env.reset()
        obs, *_ = await env.step('click("load")')
        await env.close()
        return obs["html"], env.host
    finally:
        await client.close()

html, host = asyncio.run(main())
print(json.dumps({"urls": fleet.urls(), "html": html, "missing": missing}))
"""


def test_another_driver_finds_the_fleet_by_name(cluster: Any, fleet: wr.Fleet, pages: str) -> None:
    out = subprocess.run(
        [sys.executable, "-c", DRIVER, cluster.address, fleet.name, f"{pages}/page?n=5"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert sorted(got["urls"]) == sorted(fleet.urls())
    assert "loaded 5" in got["html"]
    assert "no WebServ fleet named 'no-such-fleet'" in got["missing"]


def test_environment_pool_acquire_release(fleet: wr.Fleet, pages: str) -> None:
    pool = wr.RemoteEnvironmentPool.remote(2, "open", fleet=fleet.name, acquire_timeout=2)
    try:
        lease = ray.get(pool.acquire.remote(start_url=f"{pages}/page?n=3", goal="Load it"))
        assert lease.goal == "Load it" and "Shop 3" in lease.observation
        step = ray.get(pool.step.remote(lease.id, 'click("load")'))
        assert "loaded 3" in step.result and not step.done
        ray.get(pool.release.remote(lease.id))
        with pytest.raises(KeyError):
            ray.get(pool.step.remote(lease.id, "noop()"))

        # A released environment is reset for the next lease, not made again.
        again = ray.get(pool.acquire.remote(start_url=f"{pages}/page?n=4"))
        assert again.env == lease.env and "Shop 4" in again.observation
        other = ray.get(pool.acquire.remote(start_url=f"{pages}/page?n=5"))
        assert other.env != again.env and ray.get(pool.available_count.remote()) == 0
        with pytest.raises(TimeoutError, match="all 2 are leased"):
            ray.get(pool.acquire.remote(start_url=f"{pages}/page?n=6"))
        ray.get([pool.release.remote(again.id), pool.release.remote(other.id)])
        assert ray.get(pool.available_count.remote()) == 2
    finally:
        ray.get(pool.close.remote())
        ray.kill(pool)


class ByteTokenizer:
    """A tokenizer of UTF-8 bytes with a plain chat template (the loop needs only these two methods)."""

    def apply_chat_template(
        self, messages: list[dict[str, Any]], add_generation_prompt: bool, tokenize: bool
    ):
        text = "".join(f"<{m['role']}>{m['content']}\n" for m in messages)
        return list((text + ("<assistant>" if add_generation_prompt else "")).encode())

    def decode(self, ids: list[int], skip_special_tokens: bool = True) -> str:
        return bytes(ids).decode(errors="replace")


class ScriptedModel:
    """verl's server manager in shape: each turn answers the task's next oracle action, in prose."""

    def __init__(self, task: str):
        self.actions = ORACLE[task]
        self.turns: dict[str, int] = {}

    async def generate(self, request_id: str, *, prompt_ids: list[int], sampling_params: dict[str, Any]):
        n = self.turns.get(request_id, 0)
        self.turns[request_id] = n + 1
        text = f"I will do this next.\n```\n{self.actions[n]}\n```"
        return SimpleNamespace(token_ids=list(text.encode()), log_probs=None)


def test_verl_agent_loop_runs_a_group_on_the_fleet(fleet: wr.Fleet) -> None:
    config = SimpleNamespace(
        config={"actor_rollout_ref": {"rollout": {"response_length": 60000, "multi_turn": {}}}}
    )
    model = ScriptedModel("shopping.3")
    row = {
        "raw_prompt": [{"role": "system", "content": "You shop. Answer with one action."}],
        "extra_info": {"task_id": "shopping.3"},
        "uid": "verl-group",
    }

    async def main() -> list[Any]:
        loops = [
            WebServAgentLoop(config, model, ByteTokenizer(), None, fleet=fleet.name, site="shopping")
            for _ in range(2)
        ]
        return list(await asyncio.gather(*(loop.run({"temperature": 1.0}, **row) for loop in loops)))

    outs = asyncio.run(main())
    for out in outs:
        assert out.reward_score == 1.0
        assert len(out.response_ids) == len(out.response_mask) == len(out.response_logprobs)
        assert out.num_turns == 2 * len(ORACLE["shopping.3"]) + 1
        # The model's tokens count, the pages between its turns do not.
        said = bytes(t for t, m in zip(out.response_ids, out.response_mask, strict=True) if m).decode()
        assert said.count("I will do this next.") == len(ORACLE["shopping.3"])
        assert 0 in out.response_mask
        assert bytes(out.prompt_ids).decode().startswith("<system>You shop.")
        # The row names only the task: the first user message is its goal, then the page.
        assert f"<user>Goal: {GOALS['shopping.3']}\n\n" in bytes(out.prompt_ids).decode()
        assert out.extra_fields["webserv"]["end_reason"] == "agent"
    assert sorted(o.extra_fields["webserv"]["group_role"] for o in outs) == ["leader", "member"]
    assert len({o.extra_fields["webserv"]["host"] for o in outs}) == 1


def test_verl_config_names_the_loop_and_actions_parse() -> None:
    text = AGENT_LOOP_CONFIG.read_text()
    assert "name: webserv" in text and "_target_: webserv.ray.verl.WebServAgentLoop" in text
    assert parse_action('Let me search.\n```\nfill("q", "tee")\n```') == 'fill("q", "tee")'
    assert parse_action('thinking...\nclick("buy")') == 'click("buy")'
    # verl's own keywords are taken; a misspelt setting is refused with the nearest name.
    WebServAgentLoop(None, None, None, None, dataset_cls=None, dataset_config=None)
    with pytest.raises(TypeError, match="no argument 'flet' \\(did you mean 'fleet'\\?\\)"):
        WebServAgentLoop(None, None, None, None, flet="webserv")
    # Importing the loop does not import verl (it is not installed here, and must not be needed).
    out = subprocess.run(
        [sys.executable, "-c", "import sys, webserv.ray.verl; print('verl' in sys.modules)"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.stdout.strip() == "False", out.stderr


def test_servers_per_node_follow_its_cpus_and_resources() -> None:
    gpu_node = {"Resources": {"CPU": 16.0, "GPU": 8.0}}
    env_node = {"Resources": {"CPU": 16.0, "webserv": 1.0}}
    assert wr.FleetConfig().slots(gpu_node) == 1
    assert wr.FleetConfig(servers_per_node=2).slots(gpu_node) == 2
    assert wr.FleetConfig(per_cpus=4).slots(env_node) == 4
    assert wr.FleetConfig(per_cpus=32).slots(env_node) == 1
    assert wr.FleetConfig(node_resource="webserv").slots(gpu_node) == 0
    assert wr.FleetConfig(node_resource="webserv", per_cpus=8).slots(env_node) == 2


def test_a_fleet_no_node_can_hold_says_why(cluster: Any, binary: str) -> None:
    name = f"{FLEET}-nowhere"
    try:
        with pytest.raises(TimeoutError, match="node resource 'no-such-resource'"):
            wr.Fleet.start(name, node_resource="no-such-resource", binary=binary, timeout=2)
    finally:
        ray.kill(ray.get_actor(name, namespace=wr.NAMESPACE))
