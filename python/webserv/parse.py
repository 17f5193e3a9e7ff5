"""The action of a model's reply: one grammar for every caller (eval, explore, the verl adapter).

``parse_action(text, tool_calls)`` returns the action as the call string ``env.step`` takes
(``click("add-to-cart")``), or raises ``ActionParseError`` saying what was expected, in words a
model can be shown. It is pure: no server is asked, and the call's arguments are the server's
parser's to check (its error is the step's ``last_action_error``).

The grammar, in the order it is tried (the first that gives a candidate decides):

1. **Tool calls.** When the reply made any (OpenAI's ``message.tool_calls``: ``{"function":
   {"name": ..., "arguments": "<JSON object>"}}``, or the same without the ``function`` level),
   the first one is the action: its name must be a tool of the table and its arguments a JSON
   object (or a mapping) that fits the action's arguments; it is written in the call form
   (``ActionDoc.call``: ``fill(bid="search", value="mug")``). The text is not read then, and a
   tool call that does not fit is an error, not a reason to read the text.
2. **An ``Action:`` line.** The last line that starts with ``Action:`` (any case; Markdown bold
   and backticks around it ignored, inside a code block too): what follows the colon, or when
   nothing does, the next non-empty line (the first line of a code block right after it). It
   decides: a malformed ``Action:`` line is an error even if another line holds a call.
3. **The last line.** The reply's last non-empty line (code fences and backticks around it
   ignored, so a reply ending in a code block gives the block's last line), when it is a call.
4. **The last fenced code block** (a reply that explains itself after its code): its last
   non-empty line; a language tag on the opening fence is skipped, and an inline
   ```` ```click("a51")``` ```` is a block of one line.

A candidate is an action when it is one BrowserGym-style call: a name of the actions (the table's
call names, or ``names``), then parentheses that close at the candidate's end (arguments are Python
literals, strings in single or double quotes with backslash escapes, so ``fill('a51', "(x)")``
reads), optionally followed by ``;`` or ``.``. Text after the call (a second call, a comment) is
an error: one action per reply. An empty reply is an error; so is one whose candidate is not a
call (its message names the line and shows the form expected).

**Several actions a step** (``multiaction=True``, BrowserGym's multi-action mode): a candidate
line may hold several calls (separated by ``;`` or spaces), and the lines right after it that
are calls too join it (after an ``Action:`` line, and after the last line's or code block's
first call line: the run of call lines the reply ends with); a line starting ``#`` inside that
run is a comment and is left out. The result has one call a line, as the server reads a
multi-action step; how many a step may hold, and that only the last may end the episode, are the
server's to check (its error names the line).

What each caller does with an error is its own: eval asks the model again with the message and
after its retries sends ``noop()`` (the step is the agent's mistake), explore asks again and then
records the episode as ``malformed_output``, and the verl loop sends the candidate as written
(``ActionParseError.candidate``, ``noop()`` for an empty turn), so that the server's error for it
is what the model reads on the next page.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from .actions import ActionDoc, by_name

#: How a reply should end, in the errors' words.
EXAMPLE = 'end the reply with a line like Action: click("add-to-cart")'

_ACTION_LINE = re.compile(r"^[*_]*action[*_]*\s*:[*_]*\s*(.*)$", re.I)
_FENCE = re.compile(r"```(.*?)```", re.S)
_NAME = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(")
_TAG = re.compile(r"^[\w+-]*$")
_OPENING = re.compile(r"^```[\w+-]*$")


class ActionParseError(ValueError):
    """A reply without a usable action. The message (``reason``) says why and what was expected;
    ``candidate`` is the text that stood where the action should ("" when there was none)."""

    def __init__(self, reason: str, candidate: str = ""):
        super().__init__(reason)
        self.reason = reason
        self.candidate = candidate


def parse_action(
    text: str | None,
    tool_calls: Sequence[Mapping[str, Any]] | None = None,
    *,
    table: Mapping[str, ActionDoc] | None = None,
    names: Collection[str] | None = None,
    multiaction: bool = False,
) -> str:
    """The action of a reply: its first tool call, else its text by the module's grammar.

    ``table`` is the action table by call name (default the shipped one, ``webserv.actions``):
    the tools a tool call may name and how it is written. ``names`` are the call names a text
    action may use (default the table's). ``multiaction`` reads several calls of the text as
    one step (one call a line in the result, as BrowserGym's multi-action mode sends them).
    Raises ``ActionParseError``.
    """
    actions = by_name() if table is None else table
    if tool_calls:
        return _tool_call(tool_calls[0], actions)
    return _text_action(text or "", actions if names is None else names, multiaction)


def _tool_call(call: Mapping[str, Any], table: Mapping[str, ActionDoc]) -> str:
    if not isinstance(call, Mapping):
        raise TypeError(f"a tool call is a mapping like OpenAI's message.tool_calls items, not {call!r}")
    fn = call.get("function")
    if not isinstance(fn, Mapping):
        fn = call
    name = str(fn.get("name") or "")
    doc = table.get(name)
    if doc is None:
        raise ActionParseError(f"there is no tool {name!r}; the tools are {', '.join(table)}", name)
    raw = fn.get("arguments")
    raw = "{}" if raw is None or raw == "" else raw
    if isinstance(raw, str):
        try:
            args = json.loads(raw)
        except ValueError as e:
            raise ActionParseError(f"the arguments of {name} are not JSON ({raw[:120]!r}): {e}", name) from e
    else:
        args = raw
    if not isinstance(args, Mapping):
        raise ActionParseError(f"the arguments of {name} must be a JSON object, got {str(raw)[:120]!r}", name)
    try:
        return doc.call(args)
    except ValueError as e:
        raise ActionParseError(str(e), name) from e


def _clean(line: str) -> str:
    """A line without the whitespace and backticks around it; "" for a fence (with its tag)."""
    line = line.strip()
    if _OPENING.match(line):
        return ""
    return line.strip("`").strip()


def _text_action(text: str, names: Collection[str], multi: bool) -> str:
    lines = [c for c in (_clean(ln) for ln in text.splitlines()) if c]
    if not lines:
        raise ActionParseError(f"the reply was empty; {EXAMPLE}")
    for i in range(len(lines) - 1, -1, -1):
        m = _ACTION_LINE.match(lines[i])
        if m:
            rest = _clean(m.group(1))
            run = [rest, *lines[i + 1 :]] if rest else lines[i + 1 :]
            if not run:
                raise ActionParseError(f"the Action: line names no action; {EXAMPLE}")
            return _step(run, names, "the Action: line's", multi)
    try:
        return _step(_ending_run(lines, names, multi), names, "its last line", multi)
    except ActionParseError as e:
        fenced = _last_fenced(text)
        if fenced and fenced[-1] != lines[-1]:
            try:
                return _step(_ending_run(fenced, names, multi), names, "the last code block's", multi)
            except ActionParseError:
                pass
        raise e


def _ending_run(lines: list[str], names: Collection[str], multi: bool) -> list[str]:
    """The lines a reply's action is read from at its end: the last line, or with ``multi``
    the run of call (and ``#`` comment) lines it ends with (from its first call line)."""
    start = len(lines) - 1
    multi = multi and bool(_calls_of(lines[start], names))
    while multi and start > 0 and (lines[start - 1].startswith("#") or _calls_of(lines[start - 1], names)):
        start -= 1
    while start < len(lines) - 1 and lines[start].startswith("#"):
        start += 1
    return lines[start:]


def _step(run: list[str], names: Collection[str], where: str, multi: bool) -> str:
    """The step's action from ``run``, whose first line decides: one call (``_call``), or with
    ``multi`` that line's calls and those of the lines right after it that start with a call
    (a line that starts like a call but is not one is an error, never left out)."""
    if not multi:
        return _call(run[0], names, where)
    calls = _line_calls(run[0], names, where)
    for n, line in enumerate(run[1:], 2):
        if line.startswith("#"):
            continue
        if not _NAME.match(line):
            break
        calls += _line_calls(line, names, f"line {n} of the action,")
    return "\n".join(calls)


def _line_calls(line: str, names: Collection[str], where: str) -> list[str]:
    """The calls of a line of calls (``;`` or spaces between them, ``;`` or ``.`` after the
    last); raises saying what is wrong."""
    calls = [_first_call(line, names, where)]
    rest = line[len(calls[0]) :].lstrip(" \t;")
    while rest and rest != ".":
        if not _NAME.match(rest):
            raise ActionParseError(
                f"{rest[:60]!r} follows {calls[-1][:60]!r}; write one call a line, or several separated by ;",
                line,
            )
        calls.append(_first_call(rest, names, where))
        rest = rest[len(calls[-1]) :].lstrip(" \t;")
    return calls


def _calls_of(line: str, names: Collection[str]) -> list[str]:
    """The calls of a line that holds only calls of ``names``, else []."""
    try:
        return _line_calls(line, names, "")
    except ActionParseError:
        return []


def _last_fenced(text: str) -> list[str]:
    """The non-empty lines of the reply's last fenced code block ([] when it has none)."""
    blocks = _FENCE.findall(text)
    if not blocks:
        return []
    body = blocks[-1]
    first, nl, rest = body.partition("\n")
    if nl and _TAG.match(first.strip()):
        body = rest  # the opening fence's language tag
    return [c for c in (_clean(ln) for ln in body.splitlines()) if c]


def _call(cand: str, names: Collection[str], where: str) -> str:
    """``cand`` when it is one call of one of ``names``; raises saying what is wrong."""
    call = _first_call(cand, names, where)
    after = cand[len(call) :].strip()
    if after.rstrip(";.").strip():
        raise ActionParseError(
            f"one action per reply: {after[:60]!r} follows {call[:60]!r}; "
            "write the one call alone on its line",
            cand,
        )
    return call


def _first_call(cand: str, names: Collection[str], where: str) -> str:
    """The call of one of ``names`` that ``cand`` starts with; raises saying what is wrong."""
    m = _NAME.match(cand)
    if not m:
        raise ActionParseError(f"{where} {cand[:120]!r} is not an action; {EXAMPLE}", cand)
    name = m.group(1)
    if name not in names:
        raise ActionParseError(f"{name!r} is not an action; the actions are {', '.join(names)}", cand)
    end = _close(cand, m.end() - 1)
    if end < 0:
        raise ActionParseError(
            f"{cand[:120]!r} does not close its parenthesis (a string's quote may be missing); "
            f'write one call like {name}("...")',
            cand,
        )
    return cand[:end]


def _close(s: str, i: int) -> int:
    """The index just past the parenthesis that closes the one at ``i``, -1 when none does
    (brackets nest; quotes hold anything, with backslash escapes)."""
    depth, quote = 0, ""
    while i < len(s):
        c = s[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                return i + 1 if c == ")" else -1
        i += 1
    return -1


__all__ = ["EXAMPLE", "ActionParseError", "parse_action"]
