"""``EnvOptions``: the settings of one environment, shared by ``WebEnv`` and ``WebVectorEnv``.

Both classes take the same keywords (``gymnasium.make("webserv/shopping", idle_ms=200)``,
``gymnasium.make_vec("webserv/shopping", num_envs=8, idle_ms=200)``) or an ``options=EnvOptions(...)``;
``EnvOptions.of`` is the one place keywords become options, and each option is documented once,
here. A keyword that is not an option is an argument of the protocol's ``make`` and goes to the
server as it is; the server refuses one it does not know, naming the nearest valid one ("make has
no argument idle; did you mean idle_ms?"), when the environment is made (its first reset).
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NoReturn

from gymnasium import spaces

from .observation import observation_space, screenshot_array

# Info keys that measure wall-clock time (or name the server-side instance).
_WALLCLOCK_INFO = ("action_ms", "settle_ms", "extract_ms", "elapsed_s", "env", "obs_stats")


@dataclass(frozen=True)
class EnvOptions:
    """What one WebServ environment runs and how it is observed.

    Every field is also a keyword of ``WebEnv``, ``WebVectorEnv`` and so of ``gymnasium.make`` and
    ``gymnasium.make_vec`` for the ``webserv/...`` ids.
    """

    #: The site to run: ``open`` (any URL), ``shopping``, ``cms``, a ``--sites`` site, ...
    site: str = "open"
    #: Where episodes start (the site's own start page when None).
    start_url: str | None = None
    #: The goal shown in observations (the task's when a task is given).
    goal: str | None = None
    #: The task to run (``shopping.17``); None lets ``reset(seed=...)`` draw one.
    task: str | None = None
    #: The server (default ``$WEBSERV_URL``, else a local ``webserv serve`` the package starts).
    url: str | None = None
    #: The server's token (default ``$WEBSERV_TOKEN``).
    token: str | None = None
    #: Steps after which an episode is truncated.
    max_steps: int | None = None
    #: Seconds after which an episode is truncated.
    episode_timeout: float | None = None
    #: The grace after the last request or navigation event before an observation (server default 30).
    idle_ms: int | None = None
    #: Add a screenshot to every observation.
    screenshot: bool = False
    #: Add the accessibility-tree text (``axtree_txt``) to every observation.
    axtree: bool = True
    #: Observe as BrowserGym does, for agents that build prompts with BrowserGym's utilities
    #: (``flatten_axtree_to_str``, ``flatten_dom_to_str``, ``prune_html``): ``axtree_object``,
    #: ``dom_object`` (Chromium's accessibility tree and DOM snapshot, WebServ's semantic ids as
    #: BrowserGym's ``browsergym_id`` and ``bid``), ``extra_element_properties``, and ``screenshot``
    #: as an H×W×3 uint8 array (decoding it needs Pillow). Large: off by default.
    browsergym: bool = False
    #: Further observe options of the protocol, passed through: ``geometry``
    #: (``extra_element_properties``), ``marks`` (``screenshot_som``, ``som_labels``), ``layout``
    #: (``cols="N"`` cues in the HTML), ``format`` (``"png"``/``"jpeg"``), ``quality``, ``max_side``,
    #: ``browsergym`` (as the field); the observation space lists the keys they add.
    observe: Mapping[str, Any] = field(default_factory=dict, hash=False)
    #: A token budget for the text view: ``axtree_txt`` is pruned (in the order docs/envcore.md
    #: gives) to at most this many tokens as ``tokenizer`` counts them, and observations carry
    #: ``obs_tokens`` and ``obs_truncated``; ``pruned_html`` is then empty. With
    #: ``observe={"view": "html"}`` the budget prunes ``pruned_html`` instead (written one element
    #: a line) and ``axtree_txt`` is empty.
    max_tokens: int | None = None
    #: The tokenizer.json the budget counts with: a path the server can read, or a name in the
    #: server's ``--tokenizers`` directory (the trainer's own tokenizer, as it brings its model).
    tokenizer: str | None = None
    #: Include wall-clock quantities: BrowserGym's ``elapsed_time`` in observations and the step
    #: timings (``action_ms``, ``settle_ms``, ``extract_ms``, ``elapsed_s``, ``obs_stats``) in info.
    #: They are the only parts that differ between two identical episodes; turn them off where
    #: episodes must compare exactly (gymnasium's check_env).
    wallclock: bool = True
    #: A prompt injection in every page the environment is served, and its graded goal
    #: (docs/attacks.md): ``{"channel": "comment" | "banner" | "hidden" | "title" | "aria_label"
    #: | "data", "text": ...
    #: or "template": ... (a string or a list the seed picks from, with ``{intent}``, ``{site}``,
    #: ``{task}``, ``{start_url}``, ``{target}``), "goal": {"kind": "url" | "form" | "answer" | "state",
    #: "target": ...}, "reward": "utility_under_attack" (optional)}``. The step that ends an episode
    #: reports ``info["attack"]``: ``{channel, goal, succeeded, step}``. Checked here for its keys,
    #: by the server for everything else.
    attack: Mapping[str, Any] | None = field(default=None, hash=False)
    #: ``"ansi"`` renders the accessibility-tree text; None renders nothing.
    render_mode: str | None = None
    #: Any other argument of the protocol's ``make`` (``record``, ``allow``, ``step_timeout_ms``,
    #: ...), sent as it is; the server refuses unknown ones, naming the nearest.
    make_args: Mapping[str, Any] = field(default_factory=dict, hash=False)

    #: The render modes an environment supports.
    RENDER_MODES = ("ansi",)

    def __post_init__(self) -> None:
        # Frozen all the way down: the mappings are copied, so the caller's dicts can change freely.
        object.__setattr__(self, "observe", MappingProxyType(dict(self.observe or {})))
        object.__setattr__(self, "make_args", MappingProxyType(dict(self.make_args or {})))
        if self.attack is not None:
            object.__setattr__(self, "attack", MappingProxyType(check_attack(self.attack)))
        if self.render_mode is not None and self.render_mode not in self.RENDER_MODES:
            raise ValueError(
                f"render_mode {self.render_mode!r} is not supported; use one of {list(self.RENDER_MODES)}"
            )

    @classmethod
    def of(cls, options: EnvOptions | None = None, /, **keywords: Any) -> EnvOptions:
        """Options from keywords, over ``options`` (or the defaults): a keyword that names a field sets
        it, any other is an argument of the protocol's ``make`` (added to ``make_args``)."""
        base = options if options is not None else cls()
        names = {f.name for f in dataclasses.fields(cls)}
        fields = {k: v for k, v in keywords.items() if k in names}
        extra = {k: v for k, v in keywords.items() if k not in names}
        if extra or "make_args" in fields:
            fields["make_args"] = {**base.make_args, **dict(fields.get("make_args") or {}), **extra}
        return dataclasses.replace(base, **fields) if fields else base

    def request(self) -> dict[str, Any]:
        """The protocol's ``make`` arguments for these options (without ``site``)."""
        args: dict[str, Any] = dict(self.make_args)
        args.update(
            start_url=self.start_url,
            goal=self.goal,
            task=self.task,
            max_steps=self.max_steps,
            idle_ms=self.idle_ms,
            observe={
                "screenshot": self.screenshot or self.as_browsergym,
                "axtree": self.axtree and self.observe.get("view") != "html",
                **({"browsergym": True} if self.as_browsergym else {}),
                **self.budget(),
                **self.observe,
            },
        )
        if self.episode_timeout is not None:
            args["episode_timeout_ms"] = int(self.episode_timeout * 1000)
        if self.attack is not None:
            args["attack"] = {k: dict(v) if isinstance(v, Mapping) else v for k, v in self.attack.items()}
        return args

    @property
    def as_browsergym(self) -> bool:
        """Whether observations are BrowserGym's (``browsergym``, or ``observe={"browsergym": True}``)."""
        return self.browsergym or bool(self.observe.get("browsergym"))

    def budget(self) -> dict[str, Any]:
        """The observe options of the token budget (none without ``max_tokens``)."""
        if self.max_tokens is None:
            return {}
        return {"max_tokens": self.max_tokens, "tokenizer": self.tokenizer}

    def observation_space(self) -> spaces.Dict:
        """One observation's gymnasium space for these options."""
        observe = {**self.budget(), **({"browsergym": True} if self.as_browsergym else {}), **self.observe}
        return observation_space(self.screenshot, self.wallclock, observe)

    def view(self, obs: dict[str, Any], info: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """An observation and its info as these options show them: without the wall-clock parts
        unless ``wallclock``, with the screenshot an array with ``browsergym`` (in place; returns them)."""
        if self.as_browsergym and isinstance(obs.get("screenshot"), bytes):
            obs["screenshot"] = screenshot_array(obs["screenshot"])
        if self.as_browsergym or self.observe.get("geometry") or self.observe.get("marks"):
            # The wire leaves out an empty map: a page with no element that has an id (a MiniWoB
            # page after its dialog closed) has none, and BrowserGym's readers index the key.
            obs.setdefault("extra_element_properties", {})
        if not self.wallclock:
            obs.pop("elapsed_time", None)
            for k in _WALLCLOCK_INFO:
                info.pop(k, None)
        return obs, info


ATTACK_KEYS = ("channel", "text", "template", "model", "goal", "reward")
ATTACK_GOAL_KEYS = ("kind", "target")
ATTACK_MODEL_KEYS = ("url", "name", "prompt")


def check_attack(attack: Mapping[str, Any]) -> dict[str, Any]:
    """``attack`` as a dict, its keys checked (an unknown one is refused naming the nearest); the
    server checks the values when the environment is made."""
    if not isinstance(attack, Mapping):
        kind = type(attack).__name__
        raise TypeError(f"attack must be a mapping like {{'channel': 'banner', ...}}, got {kind}")
    out = dict(attack)
    for key in out:
        if key not in ATTACK_KEYS:
            raise ValueError(_unknown("attack", key, ATTACK_KEYS))
    out["goal"] = _keyed(
        "attack.goal",
        out.get("goal"),
        ATTACK_GOAL_KEYS,
        "{'kind': 'url', 'target': 'http://attacker.test/x'}",
    )
    if out.get("model") is not None:
        example = "{'url': 'http://127.0.0.1:8000/v1', 'name': 'attacker'}"
        out["model"] = _keyed("attack.model", out["model"], ATTACK_MODEL_KEYS, example)
    return out


def _keyed(name: str, value: object, keys: tuple[str, ...], example: str) -> dict[str, Any]:
    """``value`` as a dict whose keys are all among ``keys`` (an unknown one refused naming the nearest)."""
    if not isinstance(value, Mapping):
        raise ValueError(f"{name} must be a mapping like {example}")
    for key in value:
        if key not in keys:
            raise ValueError(_unknown(name, key, keys))
    return dict(value)


def _unknown(where: str, key: str, valid: tuple[str, ...]) -> str:
    near = difflib.get_close_matches(key, valid, n=1)
    hint = f"; did you mean {near[0]}?" if near else ""
    return f"{where} has no key {key!r}{hint} (its keys are {', '.join(valid)})"


class OptionParser(argparse.ArgumentParser):
    """An ``argparse`` parser that refuses an unknown command-line option naming the nearest one it
    has (``unknown option --epsiodes (did you mean --episodes?)``), as ``make`` refuses an unknown
    argument: the parser of every ``python -m webserv.*`` command (eval, explore)."""

    def error(self, message: str) -> NoReturn:
        if message.startswith("unrecognized arguments:"):
            known = [s for a in self._actions for s in a.option_strings]
            given = message.split(":", 1)[1].split()
            hints = []
            for w in [w for w in given if w.startswith("-")] or given:
                near = difflib.get_close_matches(w.split("=")[0], known, n=1)
                hints.append(w + (f" (did you mean {near[0]}?)" if near else ""))
            message = "unknown option " + ", ".join(hints)
        super().error(message)


def with_budget(
    make_args: Mapping[str, Any] | None, max_tokens: int | None, tokenizer: str | None
) -> dict[str, Any]:
    """``make_args`` with a token budget in their ``observe`` (the adapters' ``max_obs_tokens``
    and ``obs_tokenizer``): the page text is then at most ``max_tokens`` tokens as the
    tokenizer.json ``tokenizer`` (a path the server reads, or a name in its ``--tokenizers``
    directory) counts them."""
    args = dict(make_args or {})
    if max_tokens is None:
        return args
    if not tokenizer:
        raise ValueError(
            "max_obs_tokens needs obs_tokenizer: the model's tokenizer.json, as a path or a name"
        )
    args["observe"] = {**dict(args.get("observe") or {}), "max_tokens": max_tokens, "tokenizer": tokenizer}
    return args


__all__ = ["EnvOptions", "OptionParser", "check_attack", "with_budget"]
