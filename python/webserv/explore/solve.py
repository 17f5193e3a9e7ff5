"""Independent solutions: a second route to a task's outcome, derived from its intent and the pages
alone (not from the demonstration), replayed before it is written into the task's ``solutions``
(``webserv tasks check`` holds each to reward 1 and calls a task without one unverified).

The model-free labeler's instructions say what to do in words a scripted reader can follow:

- ``Search the site for "T" and show the results.``: type T into the page's search box and submit;
- ``Go to the "N" page.``: click the link named N, else search for N and click the link named N
  on the results or on one of the first three results' pages (an item's link to its category); a
  link named by a word of N that opens the page named N ("Cart (2)" for "Shopping cart") comes
  before the search;
- ``What is the price of "X"?``: reach X's page as above, answer the one price it shows;
- ``<Action> on the "X" page [with col "v" and ...].``: reach X's page, choose each value named in a
  field of that name, press the button named like the action;
- ``Enter "v" in "f" and submit it on the "X" page [...]``: reach X's page, type v into the field
  named like f and submit it with Enter.

An instruction none of these reads (a model's words) gets no solution: its task is unverified. A
solution may coincide with the (shortened) oracle: it was found from the instruction, which is what
it proves can be followed.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .modelfree import SEARCH_BOX, page_name, shown_answer

SEARCH = re.compile(r'^Search the site for "(.+)" and show the results\.$')
GO = re.compile(r'^Go to the "(.+)" page\.$')
PRICE = re.compile(r'^What is the price of "(.+)"\?$')
DO = re.compile(r'^(.+?) on the "(.+)" page(?: with (.+))?\.$')
ENTER = re.compile(r'^Enter ("(?:[^"\\]|\\.)*") in "(.+)" and submit it$')
VALUE = re.compile(r'([\w ]+?) ("(?:[^"\\]|\\.)*")')
# How many of a search's results reach tries for a link to the page it looks for.
RESULTS_TRIED = 3
# An element of the accessibility tree: [id] role "name".
ELEMENT = re.compile(r'^\s*\[([^\]]+)\] (\w+) "((?:[^"\\]|\\.)*)"', re.MULTILINE)


def _q(s: str) -> str:
    return json.dumps(s)


def _unq(s: str) -> str:
    """A name as the instruction quotes it (JSON string content), unescaped."""
    try:
        return str(json.loads(f'"{s}"'))
    except ValueError:
        return s


def elements(obs: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The page's (id, role, name) from its accessibility tree."""
    return [(m.group(1), m.group(2), m.group(3)) for m in ELEMENT.finditer(obs.get("axtree_txt") or "")]


def named_element(obs: dict[str, Any], name: str, roles: tuple[str, ...] = ("link",)) -> str:
    """The id of the clickable element of one of roles named name (case aside), else ""."""
    clickable = set(obs.get("clickable") or [])
    for eid, role, n in elements(obs):
        if role in roles and n.strip().lower() == name.strip().lower() and eid in clickable:
            return eid
    return ""


def partly_named(obs: dict[str, Any], name: str) -> list[str]:
    """The clickable links whose name, without counts and marks, is one or more whole words of name."""
    clickable = set(obs.get("clickable") or [])
    words = f" {' '.join(re.findall(r'[a-z]+', name.lower()))} "
    out = []
    for eid, role, n in elements(obs):
        core = " ".join(re.findall(r"[a-z]+", n.lower()))
        if role == "link" and core and f" {core} " in words and eid in clickable:
            out.append(eid)
    return out


def search_box(obs: dict[str, Any]) -> str:
    for inp in obs.get("inputs") or []:
        if inp.get("editable", True) and (
            inp.get("type") == "search" or SEARCH_BOX.search(inp.get("id", ""))
        ):
            return str(inp["id"])
    return ""


class Solver:
    """Plays an intent on a live environment: ``step(action)`` returns the next observation (raising
    on an action error), ``obs`` is the current one; ``actions`` what it took."""

    def __init__(self, env: Any, obs: dict[str, Any]):
        self.env, self.obs, self.actions = env, obs, []

    async def do(self, action: str) -> None:
        nxt, _, terminated, _, _ = await self.env.step(action)
        if nxt.get("last_action_error"):
            raise LookupError(f"{action}: {nxt['last_action_error']}")
        self.actions.append(action)
        self.obs = nxt
        if terminated and not action.startswith("stop("):
            raise LookupError(f"{action} ended the episode")

    async def search(self, term: str) -> None:
        box = search_box(self.obs)
        if not box:
            raise LookupError("no search box")
        await self.do(f"type({_q(box)}, {_q(term)}, enter=True)")

    async def reach(self, name: str) -> None:
        """The page named name: this one, else its link here, else through the site's search: its
        link on the results, else on one of the first results (a category's name finds its items,
        whose pages link back to it)."""
        if page_name(self.obs.get("title", ""), self.obs.get("url", "")).lower() == name.strip().lower():
            return
        link = named_element(self.obs, name)
        for eid in [] if link else partly_named(self.obs, name)[:RESULTS_TRIED]:
            # A link named by a word of the page's name ("Cart (2)" to "Shopping cart"): kept when
            # the page it opens has the name.
            await self.do(f"click({_q(eid)})")
            if page_name(self.obs.get("title", ""), self.obs.get("url", "")).lower() == name.strip().lower():
                return
            await self.do("go_back()")
        if not link:
            before = {eid for eid, role, _ in elements(self.obs) if role == "link"}
            await self.search(name)
            link = named_element(self.obs, name)
            results = [eid for eid, role, _ in elements(self.obs) if role == "link" and eid not in before]
            for result in [] if link else results[:RESULTS_TRIED]:
                await self.do(f"click({_q(result)})")
                link = named_element(self.obs, name)
                if link:
                    break
                await self.do("go_back()")
        if not link:
            for eid in partly_named(self.obs, name)[:RESULTS_TRIED]:
                # A link named by a word of the page's name ("Cart (2)" to "Shopping cart"): kept when
                # the page it opens has the name.
                await self.do(f"click({_q(eid)})")
                if (
                    page_name(self.obs.get("title", ""), self.obs.get("url", "")).lower()
                    == name.strip().lower()
                ):
                    return
                await self.do("go_back()")
            raise LookupError(f"no link named {name!r}")
        await self.do(f"click({_q(link)})")


async def solve(intent: str, env: Any, obs: dict[str, Any]) -> tuple[list[str], dict[str, Any]] | None:
    """The actions that do intent from obs, as the scripted reader finds them on env's pages, ending
    in the stop (not run: env stays open for the caller's check) and the observation before it; None
    when it cannot read the intent or its route fails. The caller checks the end state against the
    task's evaluator."""
    s = Solver(env, obs)
    stop = 'stop("")'
    try:
        if m := SEARCH.match(intent):
            await s.search(_unq(m.group(1)))
        elif m := GO.match(intent):
            await s.reach(_unq(m.group(1)))
        elif m := PRICE.match(intent):
            await s.reach(_unq(m.group(1)))
            price = shown_answer(s.obs)
            if not price:
                return None
            stop = f"stop({_q(price)})"
        elif m := DO.match(intent):
            what, page, values = m.group(1), _unq(m.group(2)), m.group(3) or ""
            await s.reach(page)
            for col, raw in VALUE.findall(values):
                await _choose(s, col.strip().removeprefix("and ").strip(), json.loads(raw))
            if e := ENTER.match(what):
                await _choose(s, _unq(e.group(2)), json.loads(e.group(1)), submit=True)
                return s.actions + [stop], s.obs
            button = named_element(s.obs, what, ("button", "link"))
            if not button:
                return None
            await s.do(f"click({_q(button)})")
        else:
            return None
    except (LookupError, ValueError):
        return None
    return s.actions + [stop], s.obs


async def _choose(s: Solver, col: str, value: str, *, submit: bool = False) -> None:
    """Sets the field named like col (a select's option, else a text field) to value; submit types
    it into the text field and presses Enter."""
    key = re.sub(r"[^a-z0-9]", "", col.lower())
    for sel in [] if submit else s.obs.get("selects") or []:
        if key and key in re.sub(r"[^a-z0-9]", "", str(sel.get("id", "")).lower()):
            texts = [o.get("text") or o.get("value") for o in sel.get("options") or []]
            if value not in texts:
                raise LookupError(f"{sel['id']} has no option {value!r}")
            await s.do(f"select_option({_q(sel['id'])}, {_q(value)})")
            return
    for inp in s.obs.get("inputs") or []:
        if key and key in re.sub(r"[^a-z0-9]", "", str(inp.get("id", "")).lower()):
            if submit:
                await s.do(f"type({_q(inp['id'])}, {_q(value)}, enter=True)")
            else:
                await s.do(f"fill({_q(inp['id'])}, {_q(value)})")
            return
    raise LookupError(f"no field for {col!r}")
