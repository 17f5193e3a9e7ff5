"""Branching rollouts (webserv.rollout.branch, docs/training.md "Branching from a mid-episode
state"): from the middle of a MiniWoB episode, n forks each play the rest; every child starts
at the parent's page, says its fork is exact, and earns what the parent would."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest
from miniwob_solvers import Obs, q, with_text
from test_integrations import _ByteTokenizer

import webserv
from webserv import rollout
from webserv.observation import page_view


def test_branch_plays_n_children_of_one_prefix(server: str) -> None:
    """click-button-sequence keeps its first click in JavaScript memory alone: children that
    did not carry it would earn 0 for the second click."""

    async def main() -> None:
        async with webserv.AsyncClient(server) as client:
            parent = client.env("miniwob", task="miniwob.click-button-sequence")
            try:
                seed = 0
                while True:  # a seed whose ONE button is not under TWO (the click lands)
                    obs, _ = await parent.reset(seed=seed)
                    one = f"click({q(with_text(obs, 'ONE', ('button',)).sid)})"
                    obs, reward, term, _, _ = await parent.step(one)
                    if not obs["last_action_error"] and not term:
                        break
                    seed += 1
                at_branch = page_view(await parent.observe())
                prefix = [{"action": one, "error": "", "url": obs["url"]}]
                firsts: list[Obs] = []
                seen: list[list[dict[str, Any]]] = []

                def policy(o: Obs, history: list[dict[str, Any]]) -> str | None:
                    if len(history) == len(prefix):
                        firsts.append(o)
                        seen.append(list(history))
                        return f"click({q(with_text(o, 'TWO', ('button',)).sid)})"
                    return None

                outs = await rollout.branch(parent, 3, policy, max_turns=2, history=prefix)
                assert len(outs) == 3
                for out, first in zip(outs, firsts, strict=True):
                    assert page_view(first) == at_branch
                    assert out.fork == {"how": "replay", "exact": True, "replayed": 1}, out.fork
                    assert (out.failure, out.reward, out.grade, out.terminated) == (None, 1.0, 1.0, True), out
                    assert out.turns == 1 and out.env is not None and out.env != parent.id
                assert seen == [prefix] * 3  # the policy saw the prefix's turns before its own
                # The parent stays at the branch point, its episode unchanged: it earns the same.
                assert page_view(await parent.observe()) == at_branch
                _, reward, term, _, _ = await parent.step(policy(await parent.observe(), prefix) or "")
                assert (reward, term) == (1.0, True)
                # The children are closed: only the parent is left.
                for out in outs:
                    with pytest.raises(webserv.UnknownEnv):
                        await client.request("observe", out.env)
            finally:
                await parent.close()

    asyncio.run(main())


async def _button_sequence_seed(client: webserv.AsyncClient) -> tuple[int, str]:
    """A seed of click-button-sequence whose ONE button takes the click, and that click."""
    env = client.env("miniwob", task="miniwob.click-button-sequence")
    try:
        for seed in range(20):
            obs, _ = await env.reset(seed=seed)
            one = f"click({q(with_text(obs, 'ONE', ('button',)).sid)})"
            obs, _, term, _, _ = await env.step(one)
            if not obs["last_action_error"] and not term:
                return seed, one
        raise AssertionError("no seed of 20 takes the click on ONE")
    finally:
        await env.close()


def _click_two(o: Obs, history: list[dict[str, Any]]) -> str:
    return f"click({q(with_text(o, 'TWO', ('button',)).sid)})"


def test_verl_branch_gives_a_group_of_one_prefix(server: str) -> None:
    """WebAgentLoop.branch: the row's episode through the prefix, then n continuations, each shaped
    like run's output with its fork's account."""
    from webserv.integrations.verl import WebAgentLoop

    async def main() -> None:
        async with webserv.AsyncClient(server) as client:
            seed, one = await _button_sequence_seed(client)

        async def policy(o: Obs, history: list[dict[str, Any]]) -> str:
            assert [h["action"] for h in history[:1]] == [one]
            return _click_two(o, history)

        loop = WebAgentLoop(site="miniwob", server_url=server, policy=policy, max_turns=3)
        outs = await loop.branch({}, 2, [one], task_id="miniwob.click-button-sequence", seed=seed)
        assert len(outs) == 2
        for out in outs:
            assert out["reward_score"] == 1.0 and out["num_turns"] == 1, out
            assert out["metrics"]["fork_exact"] is True and out["webserv"]["fork"]["how"] == "replay"
            assert [h["action"] for h in out["prefix"]] == [one]
        with pytest.raises(ValueError, match="leaves none"):
            await loop.branch({}, 2, [one] * 3, task_id="miniwob.click-button-sequence", seed=seed)

    asyncio.run(main())


def test_trl_members_of_a_prefix_row_start_at_its_end(server: str) -> None:
    """web_environment(group_size=2): the two members of a row with a prefix each get an exact
    fork of the state it leads to, and the second click pays each of them."""
    from webserv.integrations.trl import web_environment

    async def probe() -> tuple[int, str]:
        async with webserv.AsyncClient(server) as client:
            return await _button_sequence_seed(client)

    seed, one = asyncio.run(probe())
    cls = web_environment("miniwob", server_url=server, group_size=2, tools=["click"])
    members = [cls(), cls()]
    row = {"task_id": "miniwob.click-button-sequence", "seed": seed, "prefix": [one], "uid": "g1"}
    try:
        texts = [m.reset(**row) for m in members]
        assert texts[0] == texts[1]
        assert cls._branches == {}  # the group is complete: its branch point is closed
        for m in members:
            assert m.fork == {"how": "replay", "exact": True, "replayed": 1}, m.fork
            env = m.web_env
            assert env is not None and env.last_obs is not None
            two = with_text(env.last_obs, "TWO", ("button",)).sid
            m.click(two)  # type: ignore[attr-defined]
            assert (m.get_reward(), m.terminated) == (1.0, True)
        with pytest.raises(ValueError, match="needs a uid"):
            members[0].reset(task_id="miniwob.click-button-sequence", prefix=[one])
    finally:
        for m in members:
            if m.web_env is not None:
                m.web_env.close()


def test_verl_branch_in_token_mode_shares_the_prefix_masked_out(server: str) -> None:
    """WebAgentLoop.branch with verl's server manager and tokenizer: each continuation's tokens are
    the prompt, the prefix (its action and page, masked out), then its own turn (mask 1) and
    pages, generated under a request id of its own."""
    from webserv.integrations.verl import WebAgentLoop

    async def main() -> None:
        async with webserv.AsyncClient(server) as client:
            seed, one = await _button_sequence_seed(client)
            env = client.env("miniwob", task="miniwob.click-button-sequence")
            try:
                obs, _ = await env.reset(seed=seed)
                obs, *_ = await env.step(one)
                two = _click_two(obs, [])
            finally:
                await env.close()

        class Model:
            """Clicks TWO, saying so first; remembers each request id's prompt."""

            def __init__(self) -> None:
                self.prompts: dict[str, list[int]] = {}

            async def generate(
                self, request_id: str, *, prompt_ids: list[int], sampling_params: dict[str, Any]
            ) -> Any:
                self.prompts[request_id] = prompt_ids
                return SimpleNamespace(token_ids=list(f"Now TWO.\n```\n{two}\n```".encode()), log_probs=None)

        model = Model()
        loop = WebAgentLoop(
            site="miniwob", server_url=server, server_manager=model, tokenizer=_ByteTokenizer(), max_turns=3
        )
        system = {"role": "system", "content": "Click."}
        outs = await loop.branch(
            {}, 2, [one], task_id="miniwob.click-button-sequence", seed=seed, raw_prompt=[system]
        )
        assert len(model.prompts) == 2  # a request id per continuation
        for out in outs:
            assert out["reward_score"] == 1.0 and out["metrics"]["fork_exact"] is True, out
            assert [h["action"] for h in out["trajectory"]] == [two]
            ids, mask = out["response_ids"], out["response_mask"]
            assert len(ids) == len(mask) == len(out["response_logprobs"])
            assert bytes(out["prompt_ids"]).decode().startswith("<system>Click.")
            turns = bytes(t for t, m in zip(ids, mask, strict=True) if m).decode()
            masked = bytes(t for t, m in zip(ids, mask, strict=True) if not m).decode()
            assert turns == f"Now TWO.\n```\n{two}\n```"
            # The prefix's action, then the fork's first page, both before the model's turn.
            assert masked.startswith(one) and "<user>" in masked
            assert bytes(ids).decode().index("Now TWO.") > bytes(ids).decode().index("<user>")

    asyncio.run(main())
