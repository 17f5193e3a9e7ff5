"""Exploration that makes demonstrations and tasks: NNetNav's loop (explore, relabel every k steps,
prune on a 0) over one server, model-free or through an OpenAI-compatible endpoint (docs/explore.md).

    result = await webserv.explore(site="shopping", episodes=8, max_steps=40, k=4, out="run1")
    result.stats["kept"], result.demonstrations, result.tasks

with its settings as keywords or an ``ExploreOptions`` (each documented there),

or ``python -m webserv.explore --site shopping --episodes 8 --out run1``.
"""

from .check import check_tasks, url_matches
from .definition import site_definition
from .frontier import Frontier, FrontierEntry
from .llm import PROMPTS
from .loop import DEFAULT_PERSONAS, ExploreFailed, ExploreResult, explore, load_personas
from .modelfree import NoveltyExplorer, PageStateReward, TrajectoryLabeler
from .options import ExploreOptions
from .trajectory import Demo, Episode, Label, MalformedOutput, Step

__all__ = [
    "DEFAULT_PERSONAS",
    "PROMPTS",
    "Demo",
    "Episode",
    "ExploreFailed",
    "ExploreOptions",
    "ExploreResult",
    "Frontier",
    "FrontierEntry",
    "Label",
    "MalformedOutput",
    "NoveltyExplorer",
    "PageStateReward",
    "Step",
    "TrajectoryLabeler",
    "check_tasks",
    "explore",
    "load_personas",
    "site_definition",
    "url_matches",
]
