"""Branching rollouts (webserv.rollout.branch, docs/training.md "Branching from a mid-episode
state"): from the middle of a MiniWoB episode, n forks each play the rest; every child starts
at the parent's page, says its fork is exact, and earns what the parent would."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from miniwob_solvers import Obs, q, with_text

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
