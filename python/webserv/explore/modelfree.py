"""The model-free mode: a novelty-seeking explorer, a labeler that describes what the prefix reached,
and a reward model that checks the page the prefix ended on is what the instruction claims.

It needs no endpoint and is a baseline: the explorer prefers actions it has not tried (per page and over
the whole run), the elements it has never touched and links to pages not seen yet; instructions come from
templates over the prefix's last change (the search submitted, the page reached); the reward model gives
0 to a prefix whose last ``k`` steps changed nothing (the same page as ``k`` steps before, or a page
already kept in this episode), and to a claim the final state does not match.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from typing import Any
from urllib.parse import parse_qs, parse_qsl, urlencode, urljoin, urlparse

from .state import candidates, humanize
from .trajectory import Episode, Label, obs_text

# Elements the explorer leaves alone: signing out or in changes who is browsing, not the site's pages.
SKIP = re.compile(r"sign-?out|log-?out|sign-?in|log-?in|delete|remove|cancel", re.IGNORECASE)


def origin(url: str) -> str:
    """The URL's origin (``http://127.0.0.1:8080``), "" for one without a host (``about:blank``)."""
    u = urlparse(url)
    return f"{u.scheme}://{u.netloc}".lower() if u.netloc else ""


# A link of the accessibility tree with its target: [id] link "name" url="href".
LINK = re.compile(r'^\s*\[([^\]]+)\] link\b.*? url=("(?:[^"\\]|\\.)*")', re.MULTILINE)


def off_site_links(obs: dict[str, Any], home: str) -> set[str]:
    """The ids of the page's links that lead away from the origin ``home``: to another origin (a
    footer's licence or social links, which the network policy blocks and no task can start or end
    on), or to another scheme (``mailto:``, ``tel:``)."""
    out = set()
    for m in LINK.finditer(obs.get("axtree_txt") or ""):
        try:
            href = str(json.loads(m.group(2))).strip()
        except ValueError:
            continue
        target = urljoin(obs.get("url") or home, href)
        scheme = urlparse(target).scheme.lower()
        if scheme == "javascript":
            continue  # a script on this page
        if scheme not in ("http", "https") or origin(target) != home:
            out.add(m.group(1))
    return out


def page_key(url: str) -> str:
    """A page's identity for novelty: its path and the names of its query parameters."""
    u = urlparse(url)
    return u.path + ("?" + "&".join(sorted(parse_qs(u.query))) if u.query else "")


def _q(s: str) -> str:
    return json.dumps(s)


def _say(s: str) -> str:
    """A name quoted in an instruction, as people write it (not escaped: “Café”, not \\u201cCaf\\u00e9)."""
    return json.dumps(s, ensure_ascii=False)


class NoveltyExplorer:
    """Picks, of the grammar's actions on the page's elements, the least tried (ties: a seeded RNG).

    The counts are shared by every episode of a run (one instance), so episodes spread over the site;
    ``shares_state`` has the run consult it in a fixed order (turnstile.py), so that a seed gives the
    same episodes however long each step takes.
    """

    shares_state = True

    def __init__(self, seed: int = 0):
        self.rng = random.Random(seed)
        self.tried: Counter[tuple[str, str]] = Counter()  # (page, action)
        self.touched: Counter[str] = Counter()  # element ids over every page
        self.seen: Counter[str] = Counter()  # pages reached

    def candidates(self, obs: dict[str, Any], persona: str, home: str = "") -> list[str]:
        """The actions it may take on the page; with ``home`` (the site's origin), no click on a link
        that leaves it (a blocked navigation explores nothing and its page is no task)."""
        away = off_site_links(obs, home) if home else set()
        acts = [f"click({_q(c)})" for c in obs.get("clickable", []) if not SKIP.search(c) and c not in away]
        words = [w for w in re.findall(r"[A-Za-z]{5,}", persona)] or ["jacket"]
        for inp in obs.get("inputs", []):
            if (
                inp.get("editable")
                and inp.get("type") in ("search", "text", None)
                and not SKIP.search(inp["id"])
            ):
                acts.append(f"type({_q(inp['id'])}, {_q(self.rng.choice(words).lower())}, enter=True)")
        for sel in obs.get("selects", []):
            opts = [o.get("text") or o.get("value") for o in sel.get("options", []) if not o.get("selected")]
            if opts:
                acts.append(f"select_option({_q(sel['id'])}, {_q(self.rng.choice(opts))})")
        acts.append("go_back()")
        return acts

    async def act(self, obs: dict[str, Any], episode: Episode) -> str:
        page = page_key(obs["url"])
        self.seen[page] += 1
        # A form this episode began filling on this page, or whose button it pressed without leaving
        # the page (a field missing): its fields not set yet, then its buttons, come first, so a form
        # started is completed and submitted (add to cart once a size is chosen).
        last = episode.steps[-1] if episode.steps else None
        fields = {f.get("id", "") for f in obs.get("selects", []) + obs.get("inputs", [])}
        form = ""
        if last is not None and last.next_url == obs["url"] and not last.error:
            m = re.match(r'(?:select_option|type|fill|click)\("([^".]+)\.', last.action)
            if m and any(f.startswith(m.group(1) + ".") for f in fields):
                form = m.group(1)
        done = {
            m.group(1)
            for st in episode.steps
            if st.url == obs["url"] and (m := re.match(r'(?:select_option|type|fill)\("([^"]*)"', st.action))
        }

        def cost(a: str) -> tuple[float, float]:
            m = re.match(r'(\w+)\("([^"]*)"', a)
            element = m.group(2) if m else a
            back = 1.5 if a == "go_back()" else 0.0
            c = self.tried[(page, a)] + self.touched[element] * 0.5 + back
            if form and element.startswith(form + "."):
                if element not in fields or "enter=True" in a:
                    c -= 1.0  # the form's button, or typing that submits it: once its fields are set
                elif m and m.group(1) != "click" and element not in done:
                    c -= 2.0  # a field of it not set yet: first
            return (c, self.rng.random())

        home = origin(episode.origin_url or episode.start_url)
        action = min(self.candidates(obs, episode.persona, home), key=cost)
        self.tried[(page, action)] += 1
        m = re.match(r'\w+\("([^"]*)"', action)
        if m:
            self.touched[m.group(1)] += 1
        return action


# A price as pages show it: the answer an information task can ask for.
PRICE = re.compile(r"[$€£]\s?\d[\d,]*(?:\.\d\d)?")


def shown_answer(obs: dict[str, Any]) -> str:
    """The one price the page shows (its only distinct one), else "": what "What is the price of X?"
    can be asked about and checked by a string match."""
    prices = set(PRICE.findall(obs_text(obs)))
    return prices.pop() if len(prices) == 1 else ""


def page_name(title: str, url: str) -> str:
    """The page's own name: its title before the site's ("Boots · WebServ Shop", "Search is slow -
    Tracker"), else its path."""
    return re.split(r" [·|—–-] ", title)[0].strip() or urlparse(url).path


# A search box's element id (a filter's fields, like a minimum price, are not one).
SEARCH_BOX = re.compile(r"search|query|(^|[.\-_])q($|[.\-_])", re.IGNORECASE)


def searched(episode: Episode, url: str) -> tuple[str, str]:
    """The term the episode's last typing into a search box submitted and the results page as the
    search made it (the path and only the query parameter holding the term), when the page url still
    shows it; else ("", "")."""
    typed = [
        (s, m)
        for s in episode.steps
        if (m := re.match(r'type\("((?:[^"\\]|\\.)*)",\s*"((?:[^"\\]|\\.)*)"', s.action))
        and SEARCH_BOX.search(m.group(1))
    ]
    if not typed:
        return "", ""
    # The last search; typing into a filter of its results since (a price box) leaves it the search.
    last, m = typed[-1]
    term = json.loads(f'"{m.group(2)}"').strip()

    def holding(u: str) -> list[tuple[str, str]]:
        return [(k, v) for k, v in parse_qsl(urlparse(u).query) if term and v.strip().lower() == term.lower()]

    made = holding(last.next_url)
    if not made or not all(p in holding(url) for p in made[:1]):
        return "", ""
    results = urlparse(last.next_url)._replace(query=urlencode(made[:1]), fragment="").geturl()
    return term, results


class TrajectoryLabeler:
    """An instruction from the prefix itself: what its last state-changing step did (on sites with a
    state database), else the search it submitted, else the answer the page shows (its one price),
    else the page it reached."""

    async def label(self, episode: Episode, obs: dict[str, Any]) -> Label:
        url, title = obs["url"], obs.get("title", "")
        changed = [
            s
            for s in episode.steps[episode.labeled :]
            if s.changes and candidates(s.changes, episode.columns)
        ]
        if changed:
            # The instruction says what the last state-changing step did: its changes alone are checked.
            s = changed[-1]
            where = page_name(s.title, s.url)
            label = Label(f"{humanize(s.action)} on the {_say(where)} page.", url, title)
            label.state = candidates(s.changes, episode.columns)
            return label
        name = page_name(title, url)
        term, results = searched(episode, url)
        if term:
            return Label(
                f"Search the site for {_say(term)} and show the results.", url, title, reference=results
            )
        # A price question only of a page the episode's own changes did not fill (a cart it added to:
        # from the task's start the page shows another price, or none).
        price = "" if any(s.changes for s in episode.steps) else shown_answer(obs)
        if price and name:
            return Label(f"What is the price of {_say(name)}?", url, title, answer=price)
        return Label(f"Go to the {_say(name)} page.", url, title)


class PageStateReward:
    """1 when the final page is the one the label claims and the last ``k`` steps changed something."""

    def __init__(self, k: int):
        self.k = k

    async def score(self, episode: Episode, label: Label, obs: dict[str, Any]) -> int:
        if page_key(obs["url"]) != page_key(label.url) or obs["url"] != label.url:
            return 0
        if label.state:
            return 1  # the steps changed the site's data: something happened, whatever the page
        t = len(episode.steps)
        before = episode.steps[t - self.k].url if t >= self.k else episode.start_url
        if obs["url"] == before or obs["url"] == episode.start_url:
            return 0
        if any(lab.url == obs["url"] for _, lab in episode.kept):
            return 0
        if label.answer and label.answer not in obs_text(obs):
            return 0  # the answer it claims is not on the page
        return 1
