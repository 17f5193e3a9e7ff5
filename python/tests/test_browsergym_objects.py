"""BrowserGym's raw objects (``browsergym=True``) read by BrowserGym's own utilities."""

from __future__ import annotations

import re

import gymnasium as gym
import numpy as np
from browsergym.utils.obs import flatten_axtree_to_str, flatten_dom_to_str, prune_html

import webserv  # noqa: F401  (registers the webserv/ ids)

# An [id] marker at the start of a line of flatten_axtree_to_str's text.
MARKER = re.compile(r"^\t*\[([^\]\s]+)\] ", re.MULTILINE)


def test_browsergym_utilities_read_the_semantic_ids(server: str) -> None:
    env = gym.make("webserv/shopping", browsergym=True, wallclock=False)
    try:
        obs, _ = env.reset(seed=0)
        assert env.observation_space.contains(obs)
        props = obs["extra_element_properties"]
        text = flatten_axtree_to_str(obs["axtree_object"], extra_properties=props)
        marked = MARKER.findall(text)
        clickable = set(obs["clickable"])
        # Every [id] is a WebServ id, printed once; the clickable ones are all there.
        assert marked and len(marked) == len(set(marked)), text
        names = clickable | set(obs["hoverable"]) | set(props)
        names |= {o["id"] for s in obs["selects"] for o in s["options"]}
        assert set(marked) <= names, set(marked) - names
        assert clickable <= set(marked), clickable - set(marked)

        html = flatten_dom_to_str(obs["dom_object"], extra_properties=props)
        pruned = prune_html(html)
        for i in clickable:
            assert f'bid="{i}"' in html and f'bid="{i}"' in pruned, i
        assert "data-semantic-id" not in html

        shot = obs["screenshot"]
        vp = obs["viewport"]
        assert isinstance(shot, np.ndarray) and shot.dtype == np.uint8
        assert shot.shape == (vp["height"], vp["width"], 3)

        # A product link, by the id BrowserGym's text shows for it.
        # A product link, clicked by the id BrowserGym's text shows for it.
        product = re.compile(r"^\t*\[([^\]\s]+)\] link '[^']*', url='[^']*/product/", re.MULTILINE)
        link = product.search(text)
        assert link, text
        obs, *_ = env.step(f'click("{link.group(1)}")')
        assert obs["last_action_error"] == "" and "/product/" in obs["url"], obs["last_action_error"]
        text = flatten_axtree_to_str(obs["axtree_object"], extra_properties=obs["extra_element_properties"])
        assert set(obs["clickable"]) <= set(MARKER.findall(text))
    finally:
        env.close()


def test_a_page_with_no_ids_still_has_extra_element_properties(server: str) -> None:
    # MiniWoB's click-dialog after its dialog closed: no element has a semantic id, and BrowserGym's
    # readers (AgentLab's obs_preprocessor) index extra_element_properties all the same.
    env = gym.make("webserv/miniwob.click-dialog", browsergym=True, wallclock=False)
    try:
        obs, _ = env.reset(seed=0)
        assert "close" in obs["clickable"], obs["clickable"]
        obs, reward, terminated, *_ = env.step('click("close")')
        assert (reward, terminated) == (1.0, True)
        # Only BrowserGym's marks: every element has a derived id (docs/envcore.md), none an action's.
        props = obs["extra_element_properties"]
        assert props and all(k.startswith("_") for k in props) and obs["clickable"] == [], props
        assert env.observation_space.contains(obs)
        flatten_axtree_to_str(obs["axtree_object"], extra_properties=obs["extra_element_properties"])
    finally:
        env.close()
