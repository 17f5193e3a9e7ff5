"""Observation views: BrowserGym-compatible keys over WebServ's observation, and their gymnasium space."""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces


def to_gym(raw: dict[str, Any], *, elapsed: float) -> dict[str, Any]:
    """Adds BrowserGym's keys to a WebServ observation from the server.

    The ids in ``axtree_txt`` and ``pruned_html`` are the semantic ids every
    action takes (``click("add-to-cart")``), like BrowserGym's bids.
    """
    goal = raw.get("goal") or ""
    tabs = raw.get("tabs") or []
    chat = [{"role": "user", "message": goal}] if goal else []
    chat += [
        {"role": m.get("role", "assistant"), "message": m.get("text", "")} for m in raw.get("chat") or []
    ]
    obs: dict[str, Any] = {
        # BrowserGym's keys
        "goal": goal,
        "goal_object": [{"type": "text", "text": goal}] if goal else [],
        "chat_messages": chat,
        "url": raw.get("url", ""),
        "open_pages_urls": [t.get("url", "") for t in tabs],
        "open_pages_titles": [t.get("title", "") for t in tabs],
        "active_page_index": int(raw.get("active_tab", 0)),
        "last_action": raw.get("last_action", ""),
        "last_action_error": raw.get("last_action_error", ""),
        "elapsed_time": float(elapsed),
        "focused_element_bid": raw.get("focused", ""),
        "axtree_txt": raw.get("axtree", ""),
        "pruned_html": raw.get("html", ""),
        # WebServ's own components
        "title": raw.get("title", ""),
        "html": raw.get("html", ""),
        "clickable": list(raw.get("clickable") or []),
        "hoverable": list(raw.get("hoverable") or []),
        "inputs": list(raw.get("inputs") or []),
        "selects": list(raw.get("selects") or []),
        "tabs": list(tabs),
        "dialogs": list(raw.get("dialogs") or []),
        "blocked_tabs": int(raw.get("blocked_tabs", 0)),  # tabs the page opened past the tab limit
        "viewport": dict(raw.get("viewport") or {}),
    }
    if raw.get("screenshot"):
        obs["screenshot"] = bytes(raw["screenshot"])  # PNG or JPEG bytes, without marks
        obs["screenshot_scale"] = float(raw.get("screenshot_scale", 1.0))
    if raw.get("screenshot_som"):
        obs["screenshot_som"] = bytes(raw["screenshot_som"])  # the same picture with set-of-marks
        obs["som_labels"] = dict(raw.get("som_labels") or {})  # label -> semantic id
    if "obs_tokens" in raw:
        # The text view's tokens under a budget (observe max_tokens), and whether it was pruned.
        obs["obs_tokens"] = int(raw["obs_tokens"])
        obs["obs_truncated"] = bool(raw.get("obs_truncated", False))
    if "extra_element_properties" in raw:
        # BrowserGym's shape: {id: {visibility, bbox, clickable, set_of_marks}} (+ in_viewport, covered)
        obs["extra_element_properties"] = dict(raw["extra_element_properties"] or {})
    for key in ("axtree_object", "dom_object"):
        # observe browsergym: Chromium's objects, the semantic ids as browsergym_id and bid
        if key in raw:
            obs[key] = dict(raw[key] or {})
    return obs


def screenshot_array(picture: bytes) -> np.ndarray:
    """A screenshot (PNG or JPEG bytes) as BrowserGym gives it: an H×W×3 uint8 array."""
    try:
        from PIL import Image
    except ImportError as e:  # pragma: no cover - Pillow comes with BrowserGym
        raise ImportError(
            "browsergym=True turns screenshots into arrays with Pillow: pip install pillow"
        ) from e
    with Image.open(io.BytesIO(picture)) as img:
        return np.asarray(img.convert("RGB"), dtype=np.uint8)


#: Observation keys about the episode rather than the page: they start afresh in a new
#: episode (reset, restore, fork) while the page stays as it was.
EPISODE_KEYS = ("last_action", "last_action_error", "elapsed_time")


def page_view(obs: dict[str, Any]) -> dict[str, Any]:
    """The observation without its episode keys: what two environments at one state share
    (a fork's first observation and its parent's at the snapshot)."""
    return {k: v for k, v in obs.items() if k not in EPISODE_KEYS}


class Unicode(spaces.Space[str]):
    """Any string (gymnasium's Text space allows a fixed character set only)."""

    def __init__(self, sample_value: str = "", seed: int | None = None):
        super().__init__(dtype=str, seed=seed)
        self._sample = sample_value

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        return self._sample

    def contains(self, x: Any) -> bool:
        return isinstance(x, str)

    def __repr__(self) -> str:
        return "Unicode()"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Unicode)


class Anything(spaces.Space[Any]):
    """A value of the given Python types (lists of records, bytes)."""

    def __init__(self, *types: type, seed: int | None = None):
        super().__init__(seed=seed)
        self.types = types

    def sample(self, mask: Any = None, probability: Any = None) -> Any:
        return self.types[0]()

    def contains(self, x: Any) -> bool:
        return isinstance(x, self.types)

    def __repr__(self) -> str:
        return f"Anything({', '.join(t.__name__ for t in self.types)})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Anything) and other.types == self.types


def observation_space(
    screenshot: bool = False, elapsed_time: bool = True, observe: Mapping[str, Any] | None = None
) -> spaces.Dict:
    """The space of the observations to_gym returns, for the observe options asked for.

    ``observe`` holds the protocol's further options (``geometry``, ``marks``, ``layout``,
    ``format``, ``quality``, ``max_side``, ``max_tokens``, ``browsergym``); ``screenshot`` may be
    given either way. With ``browsergym`` the screenshot is an array (``EnvOptions.view``).
    """
    opts = dict(observe or {})
    browsergym = bool(opts.get("browsergym"))
    screenshot = screenshot or browsergym or bool(opts.get("screenshot"))
    marks = bool(opts.get("marks"))
    text, lst, rec = Unicode(), Anything(list), Anything(dict)
    d: dict[str, spaces.Space[Any]] = {
        "goal": text,
        "goal_object": lst,
        "chat_messages": lst,
        "url": text,
        "open_pages_urls": lst,
        "open_pages_titles": lst,
        "active_page_index": spaces.Discrete(1 << 16),
        "last_action": text,
        "last_action_error": text,
        "elapsed_time": Anything(float),
        "focused_element_bid": text,
        "axtree_txt": text,
        "pruned_html": text,
        "title": text,
        "html": text,
        "clickable": lst,
        "hoverable": lst,
        "inputs": lst,
        "selects": lst,
        "tabs": lst,
        "dialogs": lst,
        "blocked_tabs": spaces.Discrete(1 << 16),
        "viewport": rec,
    }
    if screenshot or marks:
        d["screenshot"] = Anything(np.ndarray) if browsergym else Anything(bytes)
        d["screenshot_scale"] = Anything(float)
    if marks:
        d["screenshot_som"] = Anything(bytes)
        d["som_labels"] = rec
    if marks or browsergym or opts.get("geometry"):
        d["extra_element_properties"] = rec
    if browsergym:
        d["axtree_object"] = rec
        d["dom_object"] = rec
    if opts.get("max_tokens"):
        d["obs_tokens"] = spaces.Discrete(1 << 24)
        d["obs_truncated"] = Anything(bool)
    if not elapsed_time:
        del d["elapsed_time"]
    return spaces.Dict(d)


def action_space() -> Unicode:
    """Actions are strings in the forms the server parses (or dicts, accepted by step too)."""
    return Unicode(sample_value="noop()")
