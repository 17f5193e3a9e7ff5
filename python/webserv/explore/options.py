"""``ExploreOptions``: the settings of one exploration run (``webserv.explore``).

``explore(options)`` or ``explore(**keywords)`` (or both: keywords over the options);
``ExploreOptions.of`` is the one place keywords become options, refusing one that is not an
option with the nearest name, and each option is documented once, here. ``python -m
webserv.explore`` builds one from its command line.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..prompt import refuse_unknown


@dataclass(frozen=True)
class ExploreOptions:
    """What an exploration run explores, with which models, and what it writes."""

    #: A site of the server: ``shopping``, ``cms``, a ``--sites`` name, or ``open`` (live pages).
    site: str = "shopping"
    #: Exploration episodes to run.
    episodes: int = 4
    #: Steps per episode.
    max_steps: int = 40
    #: Label and score the episode's prefix every ``k`` steps.
    k: int = 4
    #: Where episodes start (required on the open site).
    start_url: str | None = None
    #: Personas: a file (one a line, or a JSON list of strings) or a list; None for the built-in.
    personas: str | Path | list[str] | None = None
    #: The directory of demonstrations.jsonl, tasks.json, sites/NAME.json and stats.json.
    out: str | Path = "explore-out"
    #: The explorer's OpenAI-compatible API root (``http://host:port/v1``); None runs model-free.
    model: str | None = None
    #: The model name the endpoint serves (needed with ``model``).
    model_name: str | None = None
    #: The labeler's API root (default ``model``).
    labeler_model: str | None = None
    #: The reward model's API root (default ``model``).
    reward_model: str | None = None
    #: A directory with explorer.txt, labeler.txt and reward.txt replacing the built-in prompts.
    prompts_dir: str | Path | None = None
    #: The server's URL (default ``$WEBSERV_URL``, else a local ``webserv serve`` the run starts).
    server: str | None = None
    #: Seeds the personas' order and the model-free explorer.
    seed: int = 0
    #: Episodes at once (default all; half with ``frontier``).
    concurrency: int | None = None
    #: ``K`` fresh attempts at each kept instruction, keeping the best (0: none).
    best_of: int = 0
    #: Start every episode past the first ``concurrency`` from a state found earlier (Go-Browse).
    frontier: bool = False
    #: Stop starting episodes after this many seconds.
    seconds: float | None = None
    #: make's politeness for every explorer: rate_per_host, concurrency_per_host, max_requests,
    #: user_agent, robots.
    politeness: dict[str, Any] | None = field(default=None, hash=False)
    #: Refuse non-GET requests to live hosts outside ``submit_allow``.
    deny_submit: bool = False
    #: The hosts ``deny_submit`` lets submissions through to.
    submit_allow: list[str] | None = field(default=None, hash=False)
    #: The definition file of a ``--sites`` site, to serve the found tasks on it.
    site_definition_file: str | Path | None = None
    #: The bundled shop's catalog the server uses (default as ``webserv serve``'s).
    shop_data: str | Path | None = None
    #: Record every explored episode, kept or pruned, as a trajectory (``out/trajectories`` when the
    #: run starts its own server, else ``explore-NAME`` under the server's ``--trajectories``).
    raw: bool = False
    #: With ``raw``: a screenshot per step.
    screenshots: bool = False
    #: Shorten each demonstration to the fewest actions that still do its task (shorten.py).
    shorten: bool = True
    #: Write only tasks with an independent solution that passes (what ``webserv tasks check
    #: --strict`` asks); the others keep their demonstrations and are counted in stats' left_out.
    strict: bool = False

    @classmethod
    def of(cls, options: ExploreOptions | None = None, /, **keywords: Any) -> ExploreOptions:
        """Options from keywords, over ``options`` (or the defaults); a keyword that is not an
        option is refused (``TypeError``) naming the nearest."""
        names = [f.name for f in dataclasses.fields(cls)]
        refuse_unknown("explore", keywords, names)
        base = options if options is not None else cls()
        return dataclasses.replace(base, **keywords) if keywords else base

    def check(self) -> None:
        """Raises ``ValueError`` for settings that contradict each other or are out of range."""
        if self.episodes < 1 or self.max_steps < 1 or self.k < 1 or self.best_of < 0:
            raise ValueError(
                "episodes, max_steps and k must be >= 1 and best_of >= 0 "
                f"(got {self.episodes}, {self.max_steps}, {self.k}, {self.best_of})"
            )
        if self.model is None and (
            self.model_name or self.labeler_model or self.reward_model or self.prompts_dir
        ):
            raise ValueError(
                "model_name, labeler_model, reward_model and prompts_dir need model= (the explorer's URL)"
            )
        if self.site == "open" and not self.start_url:
            raise ValueError("site='open' needs start_url= (the live site's page where episodes start)")
        if self.screenshots and not self.raw:
            raise ValueError(
                "screenshots=True records screenshots in the raw trajectories: give raw=True too"
            )
        if self.submit_allow and not self.deny_submit:
            raise ValueError(
                "submit_allow lists the hosts deny_submit lets submissions through to: give deny_submit=True"
            )


__all__ = ["ExploreOptions"]
