"""``EvalOptions``: the settings of one evaluation run (``webserv.evaluate``, docs/eval.md).

``evaluate(options)`` or ``evaluate(**keywords)`` (or both: keywords over the options);
``EvalOptions.of`` is the one place keywords become options, refusing one that is not an option
with the nearest name, and each option is documented once, here. ``python -m webserv.eval``
builds one from its command line.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..options import check_attack
from ..prompt import refuse_unknown

#: ``side_effects``'s values (make's).
SIDE_EFFECTS = ("report", "fail", "off")


def _nearest(value: object, names: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(str(value), names, n=1)
    return f" (did you mean {close[0]}?)" if close else ""


@dataclass(frozen=True)
class EvalOptions:
    """Which model runs which tasks, how, and where the results go."""

    #: The model's OpenAI-compatible API root, like ``http://127.0.0.1:8000/v1``.
    model: str
    #: The model name the endpoint serves.
    model_name: str
    #: The tasks: ``shopping``, ``shopping.0-19``, ``cms.3,cms.4``, a site definition or task file.
    tasks: str
    #: Where results.jsonl, summary.json and report.html go.
    out: str | Path = "eval-out"
    #: Episodes at once.
    parallel: int = 4
    #: Steps per episode.
    max_steps: int = 30
    #: Episodes per task (pass@k, variance).
    repeats: int = 1
    #: The run's seed: each episode's is a hash of it, the task and the repeat.
    seed: int = 0
    #: Continue the run in ``out``: episodes already scored are kept, the others run.
    resume: bool = False
    #: The server's URL (default ``$WEBSERV_URL``, else a server the run starts).
    server: str | None = None
    #: What the model is shown of the page: ``axtree``, ``html``, ``screenshot`` or ``som``
    #: (``webserv.eval.agent.OBSERVATIONS``).
    observation: str = "axtree"
    #: Offer one OpenAI tool per action and read the reply's tool call, instead of an Action: line.
    tools: bool = False
    #: A directory of prompt files replacing the built-in ones.
    prompts: str | Path | None = None
    #: The requests' temperature (None: the endpoint's default).
    temperature: float | None = 0.0
    #: The most tokens a reply may have.
    max_tokens: int | None = None
    #: How many times a reply without an action is asked again before the step is a ``noop()``.
    malformed_retries: int = 2
    #: How many times an episode lost to the infrastructure runs again.
    episode_retries: int = 2
    #: Seconds per model request.
    model_timeout: float = 120.0
    #: Retries of a model request that failed (connection, timeout, 429, 5xx).
    model_retries: int = 3
    #: The first retry's wait in seconds (doubling after).
    model_backoff: float = 1.0
    #: After this many episodes in a row lost to the endpoint, no more start.
    stop_after: int = 5
    #: Record a screenshot per step in the trajectories.
    screenshots: bool = False
    #: Grade the answers of WebArena's task files as typed values (``make``'s ``strict_answers``):
    #: an answer listing candidates earns 0; scores are then not comparable with published ones.
    strict_answers: bool = False
    #: What a change to the site's state that the task did not ask for does (``make``'s
    #: ``side_effects``, docs/tasks.md "Side effects"): ``report`` (the reward stands; the changes
    #: are listed and the episode fails completion under policy), ``fail`` (such an episode scores
    #: 0) or ``off`` (none are looked for: completion under policy is unknown). None: each task's
    #: own (``report`` unless the task file sets it).
    side_effects: str | None = None
    #: A prompt injection in every episode's pages and its graded goal (``make``'s ``attack``,
    #: docs/attacks.md). Each row then says whether the agent did what the attacker asked, and the
    #: summary's ``attack`` has the attack success rate and the utility under attack (success
    #: without the attack's goal met), with intervals, per channel and goal. Utility without the
    #: attack is the same run without it (``webserv eval compare`` pairs the two).
    attack: Mapping[str, Any] | None = field(default=None, hash=False)
    #: Attacks to pair with every task (docs/attacks.md "Attacked task sets"): ``"library"`` (the
    #: attacks shipped with the package), a JSON or YAML file of attacks with ids, or a list of
    #: them. Every task runs once without an attack and once under each, with the same seed, and
    #: the summary's ``attack`` has the utility (no attack), the utility under attack and the
    #: attack success rate, per channel and per goal. Not with ``attack``.
    attacks: str | Sequence[Mapping[str, Any]] | None = field(default=None, hash=False)
    #: The reference agent's defense: a system-prompt rule that the page's words are data, never
    #: instructions (``agent.DEFENSE``). Every episode then runs twice, without the rule and with
    #: it, on the same (task, attack, seed), and the report shows both side by side.
    defense: bool = False
    #: The endpoint's API key (default ``$OPENAI_API_KEY``, as ``ChatModel``).
    api_key: str | None = None
    #: No line per episode.
    quiet: bool = True

    @classmethod
    def of(cls, options: EvalOptions | None = None, /, **keywords: Any) -> EvalOptions:
        """Options from keywords, over ``options``; a keyword that is not an option is refused
        (``TypeError``) naming the nearest, and so is a run without ``model``, ``model_name`` and
        ``tasks``; a ``side_effects`` that is not one of ``SIDE_EFFECTS`` is refused
        (``ValueError``)."""
        fields = dataclasses.fields(cls)
        refuse_unknown("evaluate", keywords, [f.name for f in fields])
        if options is not None:
            return dataclasses.replace(options, **keywords) if keywords else options
        required = [f.name for f in fields if f.default is dataclasses.MISSING]
        missing = [n for n in required if n not in keywords]
        if missing:
            raise TypeError(f"evaluate needs {', '.join(missing)} (it needs {', '.join(required)})")
        return cls(**keywords)

    def __post_init__(self) -> None:
        if self.attack is not None:
            object.__setattr__(self, "attack", check_attack(self.attack))
        if self.attack is not None and self.attacks is not None:
            raise ValueError(
                "give attack (one attack in every episode) or attacks (every task under each), not both"
            )
        # A value outside a closed set is refused where it is written (here, or in ``of``).
        if self.side_effects is not None and self.side_effects not in SIDE_EFFECTS:
            raise ValueError(
                f"side_effects {self.side_effects!r} is not one of {', '.join(SIDE_EFFECTS)}"
                + _nearest(self.side_effects, SIDE_EFFECTS)
            )

    def check(self) -> None:
        """Raises ``ValueError`` for settings out of range."""
        if (
            self.parallel < 1
            or self.max_steps < 1
            or self.repeats < 1
            or self.episode_retries < 0
            or self.malformed_retries < 0
        ):
            raise ValueError(
                "parallel, max_steps and repeats must be >= 1, episode_retries and malformed_retries >= 0 "
                f"(got {self.parallel}, {self.max_steps}, {self.repeats}, {self.episode_retries}, "
                f"{self.malformed_retries})"
            )


__all__ = ["SIDE_EFFECTS", "EvalOptions"]
