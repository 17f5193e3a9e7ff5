"""The action table: every action of the grammar with its typed arguments, as the server describes it.

The server holds the one table (Go ``envcore.Actions``, the wire op ``actions``, docs/protocol.md);
``actions.json`` beside this module is a copy of its rows, shipped with the package so that tools
built from it (the TRL environment's, ``webserv.integrations.trl``) have their names, signatures and
docstrings at import, before any server is asked: a trainer reads a tool schema when it is built,
in every process, and the schema must not depend on which server answers first.
``python/tests/test_trl.py`` keeps the copy equal to a real server's table; after changing the
table in Go, write it again with::

    python -m webserv.actions > python/webserv/actions.json

``ActionDoc.call`` writes an action from keyword values in the call form the server parses, with
the server's quoting rules (``envcore.ActionDoc.Call``): every argument by keyword, strings in
double quotes with ``\\"``, ``\\\\``, ``\\n``, ``\\r``, ``\\t`` and ``\\xNN`` for other control
characters, numbers without exponent, booleans ``True``/``False``, lists of strings in brackets.
"""

from __future__ import annotations

import decimal
import difflib
import functools
import json
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

#: The argument types of ``ActionArg.type`` (JSON's).
ARG_TYPES = ("string", "number", "integer", "boolean", "array")


@dataclass(frozen=True)
class ActionArg:
    """One argument of an action."""

    #: The argument's keyword in the call form (``bid``, ``value``, ``x``).
    name: str
    #: Its JSON type: ``string``, ``number`` (CSS pixels), ``integer``, ``boolean`` or ``array`` (of strings).
    type: str
    #: What it is, in one line.
    doc: str
    required: bool


@dataclass(frozen=True)
class ActionDoc:
    """One action of the grammar: its call name, what it does, its arguments and an example."""

    #: The call name the server's parser reads (``click``, ``fill``, ``mouse_click``).
    name: str
    #: The semantic action it makes (``type`` for ``fill``).
    type: str
    #: One or two sentences for a model.
    description: str
    #: The arguments, required ones first.
    args: tuple[ActionArg, ...]
    #: A call of this action the parser reads.
    example: str

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> ActionDoc:
        """An action from a row of the ``actions`` op's reply."""
        args = tuple(
            ActionArg(str(a["name"]), str(a["type"]), str(a.get("doc", "")), bool(a.get("required", False)))
            for a in row.get("args") or ()
        )
        for a in args:
            if a.type not in ARG_TYPES:
                raise ValueError(f"action {row['name']}: argument {a.name} has unknown type {a.type!r}")
        return cls(str(row["name"]), str(row["type"]), str(row["description"]), args, str(row["example"]))

    def row(self) -> dict[str, Any]:
        """The action as a row of the ``actions`` op's reply (the inverse of ``from_row``)."""
        return {
            "name": self.name,
            "type": self.type,
            "description": self.description,
            "args": [
                {"name": a.name, "type": a.type, "doc": a.doc, "required": a.required} for a in self.args
            ],
            "example": self.example,
        }

    def signature(self) -> str:
        """The call with its arguments' types: ``fill(bid: string, value: string, enter?: boolean)``."""
        args = ", ".join(f"{a.name}{'' if a.required else '?'}: {a.type}" for a in self.args)
        return f"{self.name}({args})"

    def call(self, values: Mapping[str, Any] | None = None, /, **keywords: Any) -> str:
        """The action with these argument values, in the call form the server parses.

        A value of None is an argument not given. Raises ``ValueError`` naming the argument when one
        is unknown, a required one is missing, or a value has the wrong type.
        """
        given = {**(values or {}), **keywords}
        names = [a.name for a in self.args]
        unknown = sorted(k for k in given if k not in names)
        if unknown:
            takes = "only " + ", ".join(names) if names else "no arguments"
            near = [m for k in unknown for m in difflib.get_close_matches(k, names, n=1)]
            hint = f"; did you mean {', '.join(near)}?" if near else ""
            raise ValueError(
                f"{self.name}: unknown argument {', '.join(unknown)}{hint} ({self.name} takes {takes})"
            )
        parts = []
        for a in self.args:
            v = given.get(a.name)
            if v is None:
                if a.required:
                    raise ValueError(f"{self.name} needs {a.name} ({a.type}, {a.doc})")
                continue
            parts.append(f"{a.name}={_literal(self.name, a, v)}")
        return f"{self.name}({', '.join(parts)})"


def quote(s: str) -> str:
    """A double-quoted string literal the server's action parser reads back exactly (``envcore`` quote)."""
    out = ['"']
    for ch in s:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _number(v: float | int) -> str:
    """A number as the parser reads it: integral values without a point, never an exponent."""
    if isinstance(v, int) or v == math.trunc(v):
        return str(int(v))
    return format(decimal.Decimal(repr(v)), "f")


def _literal(action: str, a: ActionArg, v: Any) -> str:
    article = {"array": "an array of strings", "integer": "an integer"}.get(a.type, f"a {a.type}")
    bad = ValueError(f"{action}: {a.name} must be {article}, got {type(v).__name__} {v!r}")
    if a.type == "string":
        if not isinstance(v, str):
            raise bad
        return quote(v)
    if a.type in ("number", "integer"):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise bad
        if a.type == "integer" and v != math.trunc(v):
            raise bad
        return _number(v)
    if a.type == "boolean":
        if not isinstance(v, bool):
            raise bad
        return "True" if v else "False"
    if a.type == "array":
        if isinstance(v, str) or not isinstance(v, Sequence):
            raise bad
        for i, x in enumerate(v):
            if not isinstance(x, str):
                raise ValueError(
                    f"{action}: {a.name} must be an array of strings, item {i} is {type(x).__name__}"
                )
        return "[" + ", ".join(quote(x) for x in v) + "]"
    raise bad


@functools.cache
def table() -> tuple[ActionDoc, ...]:
    """The shipped action table (``actions.json``, a copy of the server's ``actions`` op)."""
    rows = json.loads(resources.files(__package__ or "webserv").joinpath("actions.json").read_text("utf-8"))
    return tuple(ActionDoc.from_row(r) for r in rows["actions"])


def by_name() -> dict[str, ActionDoc]:
    """The shipped table by call name."""
    return {d.name: d for d in table()}


def main(argv: Sequence[str] = ()) -> None:
    """Prints a server's action table as ``actions.json`` holds it (server: argv[0], else the default one)."""
    from .sync import Loop

    url = argv[0] if argv else None
    reply = Loop.run(Loop.client(url, None).actions())
    json.dump({"actions": reply["actions"]}, sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1:])
