"""Mixed groups: real, dream (the transition-memory world model) and expert members (the bundled oracles, or
demonstrations `webserv export --format sft` wrote) in the shares asked for, each marked, in the vector
environment and the trainer adapters."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

import webserv
from webserv.integrations.trl import web_environment
from webserv.integrations.verl import WebAgentLoop
from webserv.launcher import LocalServer
from webserv.mixing import read_demonstrations


def test_shares_are_rounded_by_largest_remainder_and_checked() -> None:
    assert webserv.Mix(expert=0.5).sources(8) == ["real"] * 4 + ["expert"] * 4  # DynaWeb's half
    assert webserv.Mix(real=0.25, dream=0.25, expert=0.5, dream_env={}).counts(6) == {
        "real": 2,
        "dream": 1,
        "expert": 3,
    }
    assert webserv.Mix(expert=1 / 3).counts(4) == {"real": 3, "dream": 0, "expert": 1}
    assert webserv.Mix(expert=0.4).counts(5) == {"real": 3, "dream": 0, "expert": 2}
    with pytest.raises(ValueError, match="must sum to 1"):
        webserv.Mix(real=0.7, expert=0.5)
    with pytest.raises(ValueError, match="between 0 and 1"):
        webserv.Mix(expert=1.5)
    with pytest.raises(ValueError, match="dream members need dream_env"):
        webserv.Mix(dream=0.5)


def _oracle(server: str, task: str) -> list[str]:
    async def ask() -> list[dict[str, Any]]:
        async with webserv.AsyncClient(server) as client:
            return await client.tasks("shopping")

    [row] = [t for t in asyncio.run(ask()) if t["id"] == task]
    return list(row["oracle"])


def test_a_vector_group_of_real_and_expert_members_on_the_shop(server: str) -> None:
    oracle = _oracle(server, "shopping.0")
    envs = gym.make_vec(
        "webserv/shopping",
        num_envs=4,
        vectorization_mode="vector_entry_point",
        mix=webserv.Mix(expert=0.5),
        wallclock=False,
    )
    try:
        vec = envs.unwrapped
        assert vec.sources == ["real", "real", "expert", "expert"]  # type: ignore[attr-defined]
        # One GRPO group on one task: the experts replay that task's oracle from the group's state.
        obs, infos = envs.reset(options={"task_id": "shopping.0", "group_key": "mix-1"})
        assert list(infos["source"]) == ["real", "real", "expert", "expert"]
        assert list(infos["task_id"]) == ["shopping.0"] * 4
        assert (
            list(infos["demonstration"][2:]) == ["shopping.0"] * 2 and not infos["_demonstration"][:2].any()
        )
        first_urls = set(obs["url"])
        assert len(first_urls) == 1
        for i, want in enumerate(oracle, 1):
            # The policy says noop to all; the experts run the oracle's actions instead.
            obs, rewards, terminated, truncated, infos = envs.step(["noop()"] * 4)
            assert list(infos["source"]) == ["real", "real", "expert", "expert"]
            assert list(infos["expert_action"][2:]) == [want] * 2, i
            assert obs["last_action"][:2] == ["noop()"] * 2 and obs["last_action"][2:] == [want] * 2
            assert not truncated.any()
        # The oracle solves the task: the experts' reward is the grader's; the noops earned nothing.
        assert list(terminated) == [False, False, True, True]
        assert list(rewards) == [0.0, 0.0, 1.0, 1.0]
        assert set(obs["url"][:2]) == first_urls
    finally:
        envs.close()


def _recorded_sft(binary: str, pages: str, tmp_path: Path) -> Path:
    """An sft file as `webserv export` writes it, of one real episode on the test pages."""
    root = tmp_path / "trajectories"

    async def record(url: str) -> None:
        async with webserv.AsyncClient(url) as client:
            env = client.env(start_url=f"{pages}/page?n=3", goal="Load the list, then go on", record={})
            await env.reset()
            for action in ['click("load")', 'fill("name", "Ada")', 'click("next")', 'stop("done")']:
                await env.step(action)
            await env.close()

    srv = LocalServer(binary, ["--idle", "200ms", "--no-bundled", "--trajectories", str(root)])
    try:
        asyncio.run(record(srv.url))
    finally:
        srv.stop()
    out = tmp_path / "demos.jsonl"
    subprocess.run([binary, "export", "--format", "sft", "-o", str(out), str(root)], check=True, timeout=120)
    return out


def test_expert_members_replay_demonstrations_from_an_sft_file(
    server: str, binary: str, pages: str, tmp_path: Path
) -> None:
    path = _recorded_sft(binary, pages, tmp_path)
    [demo] = read_demonstrations(path)
    assert demo.actions == ('click("load")', 'fill("name", "Ada")', 'click("next")', 'stop("done")')
    assert demo.start_url is not None and demo.start_url.endswith("/page?n=3")
    assert demo.goal == "Load the list, then go on"

    envs = gym.make_vec(
        "webserv/open",
        num_envs=2,
        vectorization_mode="vector_entry_point",
        start_url=f"{pages}/page?n=1",
        mix=webserv.Mix(expert=0.5, demonstrations=path),
    )
    try:
        obs, infos = envs.reset()
        assert list(infos["source"]) == ["real", "expert"]
        assert obs["url"][0].endswith("/page?n=1") and obs["url"][1].endswith("/page?n=3")
        assert obs["goal"][1] == "Load the list, then go on" and infos["demonstration"][1] == demo.id
        obs, *_ = envs.step(["noop()", "noop()"])
        assert "loaded 3" in obs["pruned_html"][1] and "loaded" not in obs["pruned_html"][0]
        obs, *_ = envs.step(["noop()", "noop()"])
        assert [f["value"] for f in obs["inputs"][1]] == ["Ada"]
        obs, *_ = envs.step(["noop()", "noop()"])
        assert obs["url"][1].endswith("/page?n=4") and obs["url"][0].endswith("/page?n=1")
        obs, _, terminated, _, infos = envs.step(["noop()", "noop()"])
        assert list(terminated) == [False, True] and infos["answer"][1] == "done"
    finally:
        envs.close()


def test_a_dream_member_of_a_group_dreams_what_the_real_member_sees(
    binary: str, pages: str, tmp_path: Path
) -> None:
    root = tmp_path / "trajectories"
    goal, start = "Load the list, then go on", f"{pages}/page?n=3"
    actions = ['click("load")', 'fill("name", "Ada")', 'click("next")']
    keys = ("url", "title", "html", "axtree_txt", "clickable", "inputs", "last_action", "last_action_error")
    srv = LocalServer(binary, ["--idle", "200ms", "--no-bundled", "--trajectories", str(root)])
    try:
        # A real episode, recorded: the transition-memory world model dreams from it.
        rec = gym.make("webserv/open", url=srv.url, start_url=start, goal=goal, record={})
        rec.reset()
        for a in actions:
            rec.step(a)
        rec.close()
        (episode,) = [str(p.relative_to(root)) for p in root.rglob("*.jsonl.gz")]

        dream_env = {"world_model": {"memory": ["."]}, "start": {"episode": episode, "step": 0}}
        envs = gym.make_vec(
            "webserv/open",
            num_envs=2,
            vectorization_mode="vector_entry_point",
            url=srv.url,
            start_url=start,
            goal=goal,
            max_steps=10,
            wallclock=False,
            mix=webserv.Mix(dream=0.5, dream_env=dream_env),
        )
        try:
            # The group's key and start URL are the real member's; the dream starts from its own start.
            obs, infos = envs.reset(options={"group_key": "mixed-dream", "start_url": start})
            assert list(infos["source"]) == ["real", "dream"]
            assert infos["dreamed"][1] and not infos["_dreamed"][0]
            assert {k: obs[k][1] for k in keys} == {k: obs[k][0] for k in keys}
            for a in actions:
                obs, rewards, terminated, truncated, infos = envs.step([a, a])
                assert list(infos["source"]) == ["real", "dream"] and infos["dreamed"][1]
                assert not terminated.any() and not truncated.any(), infos
                assert {k: obs[k][1] for k in keys} == {k: obs[k][0] for k in keys}, a
        finally:
            envs.close()

        # TRL: the k-th reset of a row's uid takes the k-th source; the tools act on each alike.
        mix = webserv.Mix(dream=0.5, dream_env=dream_env)
        cls = web_environment("open", server_url=srv.url, mix=mix, group_size=2)
        row = {"uid": "row-1", "start_url": start, "goal": goal}
        members = [cls(), cls()]
        firsts = [m.reset(**row) for m in members]
        try:
            assert [m.source for m in members] == ["real", "dream"]
            assert firsts[0] == firsts[1] and firsts[0] is not None and "[load] button" in firsts[0]
            for act in (
                lambda m: m.click("load"),
                lambda m: m.fill("name", "Ada"),
                lambda m: m.click("next"),
            ):
                texts = [act(m) for m in members]
                assert texts[0] == texts[1] and "Error" not in texts[0], texts
            web = members[1].web_env
            assert web is not None and web.last_info is not None and web.last_info["dreamed"] is True
        finally:
            for m in members:
                if m.web_env is not None:
                    m.web_env.close()

        # verl: the same, as a loop's rollouts of one row.
        async def policy(obs: dict[str, Any], history: list[dict[str, Any]]) -> str | None:
            return actions[len(history)] if len(history) < len(actions) else None

        async def main() -> list[dict[str, Any]]:
            loop = WebAgentLoop(server_url=srv.url, policy=policy, max_turns=5, mix=mix, group_size=2)
            rows = [{"uid": "row-2", "extra_info": {"start_url": start, "goal": goal}}] * 2
            return list(await asyncio.gather(*(loop.run({}, **r) for r in rows)))

        outs = asyncio.run(main())
        assert [o["source"] for o in outs] == ["real", "dream"]
        assert (
            outs[0]["trajectory"] == outs[1]["trajectory"]
            and outs[0]["reward_score"] == outs[1]["reward_score"]
        )
    finally:
        srv.stop()


def test_a_bad_sft_file_is_refused_with_the_line(tmp_path: Path) -> None:
    path = tmp_path / "demos.jsonl"
    path.write_text(json.dumps({"episode_id": "e", "step": 0, "url": "http://x/", "action": "noop()"}) + "\n")
    with pytest.raises(ValueError, match=r"demos.jsonl:1: an sft row needs instruction"):
        read_demonstrations(path)


def test_verl_groups_mix_real_and_expert_rollouts(server: str) -> None:
    oracle = _oracle(server, "shopping.0")

    async def policy(obs: dict[str, Any], history: list[dict[str, Any]]) -> str:
        return "noop()" if not history else 'stop("no idea")'

    async def main(mode: str) -> list[dict[str, Any]]:
        loop = WebAgentLoop(
            site="shopping",
            server_url=server,
            policy=policy,
            max_turns=6,
            mix=webserv.Mix(expert=0.5, expert_mode=mode),  # type: ignore[arg-type]
            group_size=4,
        )
        before = (await loop.client.stats())["envs_live"]
        rows = [{"uid": f"group-{g}", "task_id": "shopping.0"} for g in (0, 1) for _ in range(4)]
        outs = await asyncio.gather(*(loop.run({}, **row) for row in rows))
        assert (await loop.client.stats())["envs_live"] == before
        return list(outs)

    for mode in ("replay", "recorded"):
        outs = asyncio.run(main(mode))
        # Each group of 4 has the shares asked for, and every rollout says its source.
        for g in (0, 1):
            group = outs[4 * g : 4 * g + 4]
            assert [o["source"] for o in group] == ["real", "real", "expert", "expert"], mode
            assert [o["metrics"]["source"] for o in group] == ["real", "real", "expert", "expert"]
        for o in outs:
            if o["source"] == "real":
                assert [t["action"] for t in o["trajectory"]] == ["noop()", 'stop("no idea")']
                assert o["reward_score"] == 0.0
            else:
                assert [t["action"] for t in o["trajectory"]] == oracle, mode
                assert o["reward_score"] == 1.0 and o["demonstration"] == "shopping.0"
                assert o["num_turns"] == len(oracle)


def test_trl_refuses_expert_members_and_says_why() -> None:
    with pytest.raises(ValueError, match="an expert member has none"):
        web_environment("shopping", mix=webserv.Mix(expert=0.5), group_size=4)
    with pytest.raises(ValueError, match="a mix needs group_size"):
        web_environment("shopping", mix=webserv.Mix(expert=0.5))


def test_group_advantages_leave_out_members_that_were_not_graded() -> None:
    nan = float("nan")
    g = webserv.group_advantages([1.0, 0.0, nan, None], ["real", "real", "dream", "dream"])
    assert g.graded == [True, True, False, False] and g.left_out == 2
    assert g.left_out_by_source == {"dream": 2}
    assert g.advantages[2:] == [0.0, 0.0] and g.advantages[0] == pytest.approx(1.0, abs=1e-4)
    assert g.advantages[0] == pytest.approx(-g.advantages[1])
    # A 0 for a dream that could not be graded would have pulled the baseline down; None keeps it.
    assert webserv.group_advantages([1.0, 1.0, nan]).advantages == [0.0, 0.0, 0.0]
    assert webserv.group_advantages([nan, None]).left_out == 2
    assert webserv.group_advantages([2.0, 0.0], normalize=False).advantages == [1.0, -1.0]
    with pytest.raises(ValueError, match="one source per member"):
        webserv.group_advantages([1.0], ["real", "dream"])


def test_a_dream_member_whose_task_needs_the_real_site_is_not_graded(binary: str, tmp_path: Path) -> None:
    """A group on a shop task graded by the shop's database (a state task): the real member that
    stops at once earns 0; the dreamed member doing the same is not graded (reward NaN, the reason in
    info), not scored 0, and the group's advantages leave it out."""
    root = tmp_path / "trajectories"
    srv = LocalServer(binary, ["--idle", "200ms", "--trajectories", str(root)])
    try:

        async def record() -> str:
            async with webserv.AsyncClient(srv.url) as c:
                env = c.env("shopping", task="shopping.35", record={})
                await env.reset()
                await env.step("scroll(0, 200)")
                await env.close()
            return str(next(root.rglob("*.jsonl.gz")).relative_to(root))

        asyncio.run(record())
        envs = gym.make_vec(
            "webserv/shopping",
            num_envs=2,
            vectorization_mode="vector_entry_point",
            url=srv.url,
            mix=webserv.Mix(dream=0.5, dream_env={"world_model": {"memory": ["."]}}),
        )
        try:
            envs.reset(options={"task_id": "shopping.35"})
            _, rewards, terminated, _, infos = envs.step(['stop("")', 'stop("")'])
        finally:
            envs.close()
        assert list(infos["source"]) == ["real", "dream"] and terminated.all()
        assert rewards[0] == 0.0 and rewards[1] != rewards[1]  # NaN: not graded
        assert infos["reward_source"][1] == "not_graded"
        assert (
            str(infos["reward_note"][1]).startswith("not graded: ") and "evaluator" in infos["reward_note"][1]
        )
        g = webserv.group_advantages(list(rewards), list(infos["source"]))
        assert g.left_out == 1 and g.left_out_by_source == {"dream": 1} and g.advantages == [0.0, 0.0]
    finally:
        srv.stop()
