"""Snapshots and forks from Python, on the bundled shop: a child starts where its parent was."""

from __future__ import annotations

import asyncio
from typing import Any

import gymnasium as gym
import pytest

import webserv
from webserv.observation import page_view

PRODUCT = "/product/sierra-organic-pocket-tee-tsh-1000"
ADD_TO_CART = [
    'select_option("add-to-cart.size", "S")',
    'select_option("add-to-cart.colour", "Pink")',
    'click("add-to-cart.add-to-cart")',
]


def quantity(obs: dict[str, Any]) -> str:
    return next(i["value"] for i in obs["inputs"] if i["id"] == "add-to-cart.quantity")


def cart_is_empty(obs: dict[str, Any]) -> bool:
    assert obs["url"].endswith("/cart"), obs["url"]
    return "Your cart is empty." in obs["axtree_txt"]


def test_fork_and_restore(server: str) -> None:
    async def main() -> None:
        async with webserv.AsyncClient(server) as client:
            parent = client.env("shopping")
            children: list[webserv.AsyncEnv] = []
            try:
                await parent.reset(options={"task_id": "shopping.0"})
                at_snapshot, *_ = await parent.step(f'goto("{PRODUCT}")')
                name = await parent.snapshot("product-page")
                assert name == "product-page"

                children = await parent.fork(2, name=name)
                assert len(children) == 2 and len({c.id for c in children} | {parent.id}) == 3
                for child in children:
                    # Made already, on the parent's server, at the parent's page.
                    assert child.last_info is not None and child.last_info["cause"] == "fork"
                    assert child.host == parent.host == server
                    assert child.last_obs is not None
                    assert page_view(child.last_obs) == page_view(at_snapshot)
                    assert child.last_obs["url"] == f"http://shopping.webserv.test{PRODUCT}"

                # Futures are independent: one child fills its cart; the other's and the parent's stay empty.
                first, second = children
                for action in ADD_TO_CART:
                    obs, *_ = await first.step(action)
                    assert obs["last_action_error"] == "", obs["last_action_error"]
                carts = await asyncio.gather(*(e.step('goto("/cart")') for e in (first, second, parent)))
                assert [cart_is_empty(obs) for obs, *_ in carts] == [False, True, True]

                # The parent goes back to its snapshot, as a new episode.
                obs, info = await parent.restore(name)
                assert info["cause"] == "restore" and info["step"] == 0
                assert page_view(obs) == page_view(at_snapshot)
                assert parent.last_obs == obs

                # Without a name, fork takes a snapshot of the present first; what was typed
                # into a field is browser state it carries.
                await parent.step('fill("add-to-cart.quantity", "3")')
                (third,) = await parent.fork()
                children.append(third)
                assert third.last_obs is not None and third.last_obs["url"] == obs["url"]
                assert quantity(third.last_obs) == "3"
            finally:
                await asyncio.gather(*(e.close() for e in [parent, *children]))

    asyncio.run(main())


def test_snapshot_errors_are_typed(server: str, pages: str) -> None:
    async def main() -> None:
        async with webserv.AsyncClient(server) as client:
            env = client.env(start_url=f"{pages}/page?n=1")
            with pytest.raises(webserv.NotReset):
                await env.snapshot()
            await env.reset()
            try:
                with pytest.raises(webserv.NotSupported) as e:
                    await env.fork(2)
                assert isinstance(e.value, webserv.ClientError) and "open site" in e.value.message
            finally:
                await env.close()
            shop = client.env("shopping")
            await shop.reset(options={"task_id": "shopping.0"})
            try:
                with pytest.raises(webserv.BadArgs, match="no snapshot"):
                    await shop.restore("never-taken")
            finally:
                await shop.close()

    asyncio.run(main())


def test_gymnasium_env_forks(server: str) -> None:
    env = gym.make("webserv/shopping.0")
    children: list[webserv.WebEnv] = []
    try:
        env.reset()
        obs, *_ = env.step(f'goto("{PRODUCT}")')
        web = env.unwrapped
        assert isinstance(web, webserv.WebEnv)
        children = web.fork(2)
        for child in children:
            assert child.last_obs is not None and page_view(child.last_obs) == page_view(obs)
            assert child.last_info is not None and child.last_info["cause"] == "fork"
        # A child steps at once (it is made), and is a gymnasium environment like its parent.
        obs, reward, terminated, truncated, info = children[0].step('stop("$50.99")')
        assert terminated and reward == 1.0 and info["task_id"] == "shopping.0"
        obs, reward, terminated, *_ = children[1].step('stop("$1.00")')
        assert terminated and reward == 0.0
        name = web.snapshot()
        obs, info = web.restore(name)
        assert info["cause"] == "restore" and obs["url"].endswith(PRODUCT)
    finally:
        for child in children:
            child.close()
        env.close()
