"""The instruction determines the verifier: an explored task checks what its intent states, no more.

- A ``url_match`` reference keeps the page's path and only the query parameters whose values the
  intent names (``Search the site for "hiker"`` keeps ``q=hiker``, not the sort order or the page
  number the explorer happened to leave on the URL).
- A ``state`` check's string values the intent does not name are written into it
  (``... with size "L" and colour "Black"``), so the instruction says every constraint the check keeps.
- An intent that names nothing (an empty quotation, as in ``Search results for “”``) is no task.
- Tasks with the same intent are merged into one: the verifier most of them share (then the first),
  with the shortest oracle; the demonstrations of the others, which that verifier does not score, are
  left out of the outputs too.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlparse

# The quoted spans of an instruction, each kind on its own (they nest: "Search results for “”").
QUOTED = [re.compile(r'"([^"]*)"'), re.compile(r"“([^”]*)”"), re.compile(r"‘([^’]*)’")]
# A check's column = ? pairs, in its SQL's order (state.candidate writes them so).
# (A JSON file's field, json_extract("json", '$.title') = ?, is named by the field: title.)
SQL_COLUMN = re.compile(r'(?:"((?:[^"]|"")+)"|json_extract\("json", \'\$\.(\w+)\'\))\s*(=\s*\?|IS NULL)')


def named(value: str, intent: str) -> bool:
    """Whether intent names value: it appears in it as a whole word (case aside)."""
    v = value.strip()
    if not v:
        return False
    return re.search(r"(?<!\w)" + re.escape(v) + r"(?!\w)", intent, re.IGNORECASE) is not None


def names_nothing(intent: str) -> bool:
    """An intent with an empty quotation (a search for "", a page titled “”), or none at all."""
    if not intent.strip():
        return True
    return any(not re.search(r"\w", inner) for q in QUOTED for inner in q.findall(intent))


def reference_url(url: str, intent: str) -> str:
    """url with only the query parameters whose values intent names (the path is the page)."""
    u = urlparse(url)
    keep = [(k, v) for k, v in parse_qsl(u.query, keep_blank_values=True) if named(v, intent)]
    return u._replace(query=urlencode(keep), fragment="").geturl()


def check_values(check: dict[str, Any]) -> list[tuple[str, Any]]:
    """A state check's (column, value) pairs, from its SQL's `"col" = ?` in order with its args."""
    args = iter(check.get("args") or [])
    out = []
    for m in SQL_COLUMN.finditer(check.get("sql", "")):
        col = (m.group(1) or m.group(2)).replace('""', '"')
        out.append((col, next(args, None) if m.group(3).startswith("=") else None))
    return out


def name_constraints(intent: str, checks: list[dict[str, Any]]) -> str:
    """intent with the string values its state checks require that it does not name yet, like
    ``Add to cart on the "X" page with size "L" and colour "Black".`` (numbers such as row ids are
    the page's, which the intent names already)."""
    extra: list[str] = []
    for c in checks:
        for col, v in check_values(c):
            if isinstance(v, str) and v.strip() and not named(v, intent):
                phrase = f"{col.replace('_', ' ')} {json.dumps(v, ensure_ascii=False)}"
                if phrase not in extra:
                    extra.append(phrase)
    if not extra:
        return intent
    body = intent.rstrip().rstrip(".")
    tail = extra[0] if len(extra) == 1 else ", ".join(extra[:-1]) + " and " + extra[-1]
    return f"{body} with {tail}."


def evaluator_key(task: dict[str, Any]) -> str:
    return json.dumps(task["eval"], sort_keys=True)


def merge_intents(tasks: list[dict[str, Any]]) -> list[str]:
    """What becomes of each of tasks (in order), one task per intent: "keep" for the one kept (the
    verifier most of that intent's tasks share, ties to the first seen; of those, the shortest
    oracle), "merged" for the others with that verifier (their demonstrations stay), "conflicting" for
    those with another verifier (which the kept one would not score: left out with their
    demonstrations)."""
    by_intent: dict[str, list[int]] = {}
    for i, t in enumerate(tasks):
        by_intent.setdefault(t["intent"], []).append(i)
    out = ["conflicting"] * len(tasks)
    for idx in by_intent.values():
        keys = {i: evaluator_key(tasks[i]) for i in idx}
        count = Counter(keys.values())
        first = {k: min(i for i in idx if keys[i] == k) for k in count}
        best = max(count, key=lambda k: (count[k], -first[k]))
        same = [i for i in idx if keys[i] == best]
        kept = min(same, key=lambda i: (len(tasks[i]["oracle"]), i))
        for i in same:
            out[i] = "keep" if i == kept else "merged"
    return out
