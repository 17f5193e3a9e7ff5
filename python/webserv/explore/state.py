"""State checks derived from what a demonstration changed in the site's state database.

On a hosted site whose state is a SQLite file (the bundled shop; a definition's ``state_db``), every
exploration environment is made with ``state_diff=True`` and the loop asks the server after each step
what changed since the episode began (the ``state_diff`` op, docs/protocol.md). A step's new changes
are the rows it inserted, updated or deleted. A kept prefix whose last ``k`` steps changed rows gets
candidate checks, one per changed row, each the smallest query that names it without what changes from
run to run (the rowid alias, timestamps, session and token columns, random-looking values):

- an inserted row: ``SELECT COUNT(*) FROM t WHERE c1 = ? AND c2 IS NULL ...`` over its stable columns;
- an updated row: ``SELECT col FROM t WHERE id = ?`` for a changed column, by the row's primary key;
- a deleted row: ``SELECT COUNT(*) FROM t WHERE id = ?``, which must become 0.

A candidate becomes a ``state`` check only once a replay of the demonstration from the task's start, in
a fresh environment, shows it holding at the end with a value it did not have at the start (so the task
is not already done), the value the replay read being its ``expect``.
"""

from __future__ import annotations

import json
import re
from typing import Any

# Columns whose values differ from run to run by design: times, sessions, tokens, secrets.
VOLATILE_NAME = re.compile(
    r"(^|_)(at|on|time|timestamp|date|created|updated|modified|added|seen|expires?|session|sid|token"
    r"|nonce|uuid|guid|hash|salt|password|secret|csrf)(_|$)",
    re.IGNORECASE,
)
# Values that look like a time or an opaque random string.
VOLATILE_VALUE = re.compile(r"^\d{4}-\d\d-\d\d[T ]\d\d:\d\d|^[0-9a-fA-F-]{16,}$|^[A-Za-z0-9_-]{24,}$")
# At most this many checks per task (the most specific first).
MAX_CHECKS = 3


def signature(change: dict[str, Any]) -> str:
    """One change's identity across successive diffs of an episode."""
    return json.dumps([change.get("table"), change.get("op"), change.get("row")], sort_keys=True, default=str)


def _volatile(column: str, value: Any) -> bool:
    if VOLATILE_NAME.search(column):
        return True
    return isinstance(value, str) and bool(VOLATILE_VALUE.search(value))


def _is_default(value: Any, default: Any) -> bool:
    """Whether value is a column's default, given as SQL text ('{}', 0, NULL)."""
    if default is None:
        return False
    d = str(default).strip()
    if d.startswith("'") and d.endswith("'") and len(d) >= 2:
        return str(value) == d[1:-1].replace("''", "'")
    if d.upper() == "NULL":
        return value is None
    return str(value) == d


def _rowid_alias(cols: list[dict[str, Any]]) -> str:
    """The INTEGER primary key column that is the table's rowid, or ""."""
    pk = [c for c in cols if c.get("pk")]
    if len(pk) == 1 and str(pk[0].get("type", "")).upper() == "INTEGER":
        return str(pk[0]["name"])
    return ""


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _where(pairs: list[tuple[str, Any]]) -> tuple[str, list[Any]]:
    parts, args = [], []
    for col, v in pairs:
        if v is None:
            parts.append(f"{_q(col)} IS NULL")
        else:
            parts.append(f"{_q(col)} = ?")
            args.append(v)
    return " AND ".join(parts), args


# The table a site's declared files are read into (hosting/state.go): one row per file.
FILES_COLUMNS = ["path", "size", "text", "json"]


def _fields(text: Any) -> dict[str, Any]:
    """A JSON object's top-level values a check can name: non-empty strings, numbers and booleans
    under names that do not change from run to run."""
    try:
        obj = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return {}
    if not isinstance(obj, dict):
        return {}
    return {
        k: v
        for k, v in obj.items()
        if re.fullmatch(r"\w+", k)
        and isinstance(v, (str, int, float, bool))
        and v != ""
        and not _volatile(k, v)
    }


def _file_candidate(change: dict[str, Any]) -> dict[str, Any] | None:
    """A changed file's check. A JSON file's by the fields it holds (a note titled "X" somewhere in
    its directory, not its file name or whole text); another file's by its path (it exists, or no
    longer does) and, for an update, a line it gained."""
    op, row, old = change["op"], change.get("row") or {}, change.get("old") or {}
    path = str(row.get("path", ""))
    fields = _fields(row.get("json"))
    base = {"table": "files", "op": op}
    if op != "delete" and fields:
        if op == "update":
            was = _fields(old.get("json", row.get("json")))
            changed = [k for k, v in fields.items() if was.get(k) != v]
            if not changed:
                return None
            return {
                **base,
                "sql": f'SELECT json_extract("json", \'$.{changed[0]}\') FROM "files" WHERE "path" = ?',
                "args": [path],
                "columns": 1,
            }
        where = " AND ".join(f"json_extract(\"json\", '$.{k}') = ?" for k in fields)
        folder = path.rsplit("/", 1)[0] + "/*" if "/" in path else "*"
        return {
            **base,
            "sql": f'SELECT COUNT(*) FROM "files" WHERE {where} AND "path" GLOB ?',
            "args": [*fields.values(), folder],
            "columns": len(fields),
        }
    if op == "update" and isinstance(row.get("text"), str) and isinstance(old.get("text"), str):
        gained = [ln.strip() for ln in row["text"].splitlines() if ln.strip() and ln not in old["text"]]
        if not gained:
            return None
        return {
            **base,
            "sql": 'SELECT COUNT(*) FROM "files" WHERE "path" = ? AND instr("text", ?) > 0',
            "args": [path, max(gained, key=len)],
            "columns": 1,
        }
    return {**base, "sql": 'SELECT COUNT(*) FROM "files" WHERE "path" = ?', "args": [path], "columns": 1}


def candidate(change: dict[str, Any], cols: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The candidate check of one changed row ({sql, args, table, op, columns}), or None when nothing
    stable names it."""
    table, op, row = change["table"], change["op"], change.get("row") or {}
    if table == "files" and [c.get("name") for c in cols] == FILES_COLUMNS:
        return _file_candidate(change)
    alias = _rowid_alias(cols)
    if op == "insert":
        stable = [c for c in cols if c["name"] != alias and not _volatile(c["name"], row.get(c["name"]))]
        pairs = [(c["name"], row.get(c["name"])) for c in stable]
        if all(
            row.get(c["name"]) is None or _is_default(row.get(c["name"]), c.get("default")) for c in stable
        ):
            return (
                None  # NULLs, defaults and volatile values only: a row like a session's, created in passing
            )
        where, args = _where(pairs)
        return {
            "sql": f"SELECT COUNT(*) FROM {_q(table)} WHERE {where}",
            "args": args,
            "table": table,
            "op": op,
            "columns": len(pairs),
        }
    key = [(c["name"], row.get(c["name"])) for c in cols if c.get("pk")] or []
    if not key or any(v is None or _volatile(k, v) and k != alias for k, v in key):
        return None  # no stable key to find the row by
    where, args = _where(key)
    if op == "delete":
        return {
            "sql": f"SELECT COUNT(*) FROM {_q(table)} WHERE {where}",
            "args": args,
            "table": table,
            "op": op,
            "columns": len(key),
        }
    changed = [k for k in (change.get("old") or {}) if not _volatile(k, row.get(k))]
    if not changed:
        return None
    col = changed[0]
    return {
        "sql": f"SELECT {_q(col)} FROM {_q(table)} WHERE {where}",
        "args": args,
        "table": table,
        "op": op,
        "columns": len(key),
    }


def candidates(
    changes: list[dict[str, Any]], columns: dict[str, list[dict[str, Any]]]
) -> list[dict[str, Any]]:
    """The candidate checks of changes, one per row that a stable query names, without duplicates."""
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for ch in changes:
        c = candidate(ch, columns.get(ch["table"], []))
        if c is None:
            continue
        key = json.dumps([c["sql"], c["args"]], default=str)
        if key not in seen:
            seen.add(key)
            out.append(c)
    return out


def humanize(action: str) -> str:
    """What a state-changing action did, in words: click("add-to-cart.add-to-cart") -> "Add to cart"."""
    m = re.match(r'(\w+)\(\s*"((?:[^"\\]|\\.)*)"(?:\s*,\s*"((?:[^"\\]|\\.)*)")?', action)
    if not m:
        return action
    kind, target, text = m.group(1), m.group(2), m.group(3)
    name = re.sub(r"[-_]+", " ", target.split(".")[-1]).strip() or target
    if kind in ("type", "fill") and text is not None:
        return f'Enter "{text}" in "{name}" and submit it'
    if kind == "select_option" and text is not None:
        return f'Choose "{text}" for "{name}"'
    return name[:1].upper() + name[1:]


def describe(change: dict[str, Any]) -> str:
    """A change in a few words, for the labeler's prompt: "cart_items insert"."""
    return f"{change.get('table')} {change.get('op')}"
