"""Go-Browse's frontier: states reached by exploration, kept so later episodes start from them.

On a hosted site each entry is a snapshot (the site instance and the browser state, the protocol's
``snapshot``) held by the environment that reached it, and a later episode starts on a ``fork`` of it;
the steps that led there from the site's start are kept too, so a task found from a frontier state
is replayed from the site's start (its oracle is that path and the episode's own steps). On the
open site there is no server state to capture: an entry is the URL, and an episode starting there
loads it.

Which entry: the one whose URL pattern (path and query parameter names) the run has visited least,
then the one started from least, then the oldest, so episodes spread over the site (coverage).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from .modelfree import page_key
from .trajectory import Step


@dataclass
class FrontierEntry:
    url: str
    pattern: str
    path: list[Step]  # the steps from the site's start to this state
    found_by: int  # the episode that reached it
    holder: Any = None  # the AsyncEnv holding the snapshot (hosted sites); None on the open site
    snapshot: str | None = None
    starts: int = 0


@dataclass
class Frontier:
    """The run's frontier and its coverage: distinct pages and URL patterns reached, over time."""

    max_entries: int = 64
    # Environments that may hold snapshots (each stays open, with its site instance, until the run
    # ends): past it, only those already holding add entries. Keep it under the server's --max-envs
    # minus the explorers running at once.
    max_holders: int = 8
    entries: list[FrontierEntry] = field(default_factory=list)
    visits: Counter[str] = field(default_factory=Counter)  # URL pattern -> steps that reached it
    pages: set[str] = field(default_factory=set)
    coverage: list[dict[str, Any]] = field(default_factory=list)
    t0: float = field(default_factory=time.monotonic)
    steps: int = 0

    def reached(self, url: str) -> bool:
        """Counts a step that reached url; True when its URL pattern is new to the run."""
        pattern = page_key(url)
        new_pattern = pattern not in self.visits
        new_page = url not in self.pages
        self.visits[pattern] += 1
        self.pages.add(url)
        self.steps += 1
        if new_page or new_pattern:
            self.coverage.append(
                {
                    "seconds": round(time.monotonic() - self.t0, 2),
                    "steps": self.steps,
                    "pages": len(self.pages),
                    "patterns": len(self.visits),
                }
            )
        return new_pattern

    def wants(self, url: str) -> bool:
        """Whether a state at url would be a new entry (its pattern has none yet, and there is room)."""
        p = page_key(url)
        return len(self.entries) < self.max_entries and all(e.pattern != p for e in self.entries)

    def add(self, entry: FrontierEntry) -> None:
        self.entries.append(entry)

    def pick(self) -> FrontierEntry | None:
        # An entry whose snapshot is still being taken is not offered yet.
        ready = [i for i, e in enumerate(self.entries) if e.holder is None or e.snapshot]
        if not ready:
            return None
        i = min(ready, key=lambda i: (self.visits[self.entries[i].pattern], self.entries[i].starts, i))
        e = self.entries[i]
        e.starts += 1
        return e

    def summary(self) -> dict[str, Any]:
        return {
            "entries": len(self.entries),
            "starts": sum(e.starts for e in self.entries),
            "patterns": [{"url": e.url, "pattern": e.pattern, "starts": e.starts} for e in self.entries],
        }
