"""Apply a transition's delta (``webserv export --format transitions``) to an observation.

A delta is the exact, element-level change from one observation to the next
(docs/trajectories.md, "The delta of a transition"); the server makes them with
Go's ``trajectory.Diff``. ``apply_delta(o_t, delta)`` gives o_{t+1}: the same
rules as Go's ``trajectory.Apply``, so a world model trained in Python can turn
its predicted delta into the next observation:

    from webserv.delta import apply_delta, export_view
    next_obs = apply_delta(export_view(obs, axtree=True), row["delta"])
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

# The parts of an observation a delta edits piece by piece, and those it edits by key.
_TEXT_PARTS = ("html", "axtree")
_LIST_KEYS: dict[str, Callable[[Any], str]] = {
    "clickable": lambda x: x,
    "hoverable": lambda x: x,
    "inputs": lambda x: x["id"],
    "selects": lambda x: x["id"],
    "tabs": lambda x: str(x["index"]),
}
_DELTA_KEYS = {"set", "unset", *_TEXT_PARTS, *_LIST_KEYS}
_EDIT_KEYS = {"op", "id", "at", "text"}

# Go's regexps, with its \s (ASCII whitespace) spelt out.
_HTML_ID = re.compile(r'<[A-Za-z][^>]*?[\t\n\f\r ]data-semantic-id="([^"]*)"')
_AX_ID = re.compile(r"\t*\[([^\]]*)\] ")


class DeltaError(ValueError):
    """The delta does not fit the observation (or is not a delta); the message says which edit."""


def export_view(obs: dict[str, Any], *, axtree: bool) -> dict[str, Any]:
    """The observation as a transitions row's delta sees it (Go's ``trajectory.ExportView``):
    the row's text view only and no screenshots."""
    o = {
        k: v
        for k, v in obs.items()
        if k not in ("screenshot", "screenshot_som", "som_labels", "screenshot_scale")
    }
    if axtree:
        o["html"] = ""
    else:
        o.pop("axtree", None)
    return o


def _split_html(s: str) -> list[tuple[str, str]]:
    """The HTML cut before every start tag, each piece with its data-semantic-id."""
    cuts = [0] + [
        i for i in range(1, len(s) - 1) if s[i] == "<" and s[i + 1].isascii() and s[i + 1].isalpha()
    ]
    pieces = [s[a:b] for a, b in zip(cuts, [*cuts[1:], len(s)], strict=True) if a < b]
    return [(p, m.group(1) if (m := _HTML_ID.match(p)) else "") for p in pieces]


def _split_lines(s: str) -> list[tuple[str, str]]:
    """The accessibility-tree text cut after every newline, each line with its [id]."""
    return [(p, m.group(1) if (m := _AX_ID.match(p)) else "") for p in re.findall(r"[^\n]*\n|[^\n]+\Z", s)]


def _apply_text(text: str, edits: list[dict[str, Any]], split: Callable[[str], list[tuple[str, str]]]) -> str:
    pieces = split(text)
    ids: dict[str, int] = {}
    for i, (_, pid) in enumerate(pieces):
        if pid:
            ids[pid] = -1 if pid in ids else i
    at: dict[int, dict[str, Any]] = {}
    before: dict[int, list[str]] = {}
    for k, e in enumerate(edits):
        if set(e) - _EDIT_KEYS:
            raise DeltaError(
                f"edit {k} has unknown keys {sorted(set(e) - _EDIT_KEYS)}: an edit has op, id, at, text"
            )
        op, pos = e.get("op"), e.get("at")
        if op == "insert":
            if not isinstance(pos, int) or not 0 <= pos <= len(pieces):
                raise DeltaError(f"edit {k} inserts at {pos}; the text has {len(pieces)} pieces")
            before.setdefault(pos, []).append(e.get("text", ""))
        elif op in ("change", "remove"):
            if e.get("id"):
                i = ids.get(e["id"], -1)
                if i < 0:
                    raise DeltaError(
                        f"edit {k} names id {e['id']!r}, which is not on exactly one piece of the text"
                    )
            elif isinstance(pos, int) and 0 <= pos < len(pieces):
                i = pos
            else:
                raise DeltaError(f"edit {k} ({op}) names no piece: give id or at (0 to {len(pieces) - 1})")
            if i in at:
                raise DeltaError(f"edit {k} edits piece {i} a second time")
            at[i] = e
        else:
            raise DeltaError(f"edit {k} has op {op!r}: use change, remove or insert")
    out: list[str] = []
    for i in range(len(pieces) + 1):
        out.extend(before.get(i, []))
        if i == len(pieces):
            break
        e = at.get(i)
        if e is None:
            out.append(pieces[i][0])
        elif e["op"] == "change":
            out.append(e.get("text", ""))
    return "".join(out)


def _apply_list(items: list[Any], ld: dict[str, Any], key: Callable[[Any], str]) -> list[Any]:
    gone = set(ld.get("remove") or [])
    changed = {key(c): c for c in ld.get("change") or []}
    out, found = [], 0
    for x in items:
        k = key(x)
        if k in gone:
            found += 1
            continue
        out.append(changed.pop(k, x))
    if found != len(gone):
        raise DeltaError(f"removes {len(gone) - found} ids the list does not have ({sorted(gone)})")
    if changed:
        raise DeltaError(f"changes id {next(iter(changed))!r}, which the list does not have")
    for ins in sorted(ld.get("insert") or [], key=lambda i: i["at"]):
        if not 0 <= ins["at"] <= len(out):
            raise DeltaError(f"inserts at {ins['at']} in a list of {len(out)}")
        out.insert(ins["at"], ins["item"])
    return out


def apply_delta(obs: dict[str, Any], delta: dict[str, Any]) -> dict[str, Any]:
    """The observation ``delta`` makes of ``obs`` (which is left as it was); raises DeltaError
    when the delta does not fit it."""
    if unknown := set(delta) - _DELTA_KEYS:
        raise DeltaError(f"delta has unknown keys {sorted(unknown)}: a delta has {sorted(_DELTA_KEYS)}")
    whole = delta.get("set") or {}
    o = dict(obs)
    for name in (*_TEXT_PARTS, *_LIST_KEYS):
        if delta.get(name) is None:
            continue
        if name in whole:
            raise DeltaError(f"delta both sets {name} whole and edits it: give one of the two")
        try:
            if name in _TEXT_PARTS:
                split = _split_html if name == "html" else _split_lines
                o[name] = _apply_text(o.get(name) or "", delta[name].get("edits") or [], split)
            else:
                o[name] = _apply_list(o.get(name) or [], delta[name], _LIST_KEYS[name])
        except DeltaError as e:
            raise DeltaError(f"delta {name}: {e}") from None
    o.update(whole)
    for name in delta.get("unset") or []:
        if name in whole:
            raise DeltaError(f"delta both sets and unsets {name}: give one of the two")
        o.pop(name, None)
    return o
