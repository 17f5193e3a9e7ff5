"""The TRL environment's tools: one per action of the server's table, with the schema TRL reads,
reaching a real environment with the server's quoting rules."""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import typing
from importlib import resources
from typing import Any

import pytest

import webserv
from webserv.actions import ActionDoc, quote, table
from webserv.integrations.trl import TOOLS, WebEnvironment, web_environment


def _server_table(server: str) -> list[dict[str, Any]]:
    async def ask() -> list[dict[str, Any]]:
        async with webserv.AsyncClient(server) as client:
            return (await client.request("actions"))["actions"]

    return asyncio.run(ask())


def _tools_as_trl_sees_them(env: object) -> dict[str, Any]:
    """What GRPOTrainer offers: the public bound methods but reset and get_reward."""
    return {
        name: m
        for name, m in inspect.getmembers(env, predicate=inspect.ismethod)
        if not name.startswith("_") and name not in ("reset", "get_reward")
    }


def _google_args(doc: str) -> tuple[str, dict[str, str]]:
    """A Google-style docstring's description and Args lines, split as transformers' get_json_schema does."""
    description = re.split(r"\n\s*(?:Args:|Returns:)", doc, maxsplit=1)[0].strip()
    m = re.search(r"\n\s*Args:\n(.*?)(?:\n\s*\n|\n\s*Returns:|\Z)", doc, re.DOTALL)
    args = dict(re.findall(r"^\s*(\w+):\s*(.+)$", m.group(1), re.MULTILINE)) if m else {}
    return description, args


def test_the_shipped_action_table_is_the_servers(server: str) -> None:
    shipped = json.loads(resources.files("webserv").joinpath("actions.json").read_text("utf-8"))["actions"]
    assert shipped == _server_table(server), (
        "python/webserv/actions.json differs from the server's action table: "
        "run `python -m webserv.actions > python/webserv/actions.json` against a fresh bin/webserv"
    )
    assert [d.row() for d in table()] == shipped  # the rows read back as they are


def test_every_action_of_the_table_is_a_tool_with_its_schema(server: str) -> None:
    rows = _server_table(server)
    env = web_environment(site="open", server_url=server)()  # TRL constructs with no arguments
    tools = _tools_as_trl_sees_them(env)
    assert set(tools) == {r["name"] for r in rows} == set(TOOLS)
    py_types = {"string": str, "number": float, "integer": int, "boolean": bool, "array": list[str]}
    for row in rows:
        doc = ActionDoc.from_row(row)
        tool = tools[doc.name]
        assert tool.__name__ == doc.name
        params = inspect.signature(tool).parameters
        assert list(params) == [a.name for a in doc.args], doc.name
        hints = typing.get_type_hints(tool)
        assert hints.pop("return") is str
        for a in doc.args:
            if a.required:
                assert params[a.name].default is inspect.Parameter.empty, (doc.name, a.name)
                assert hints[a.name] == py_types[a.type], (doc.name, a.name)
            else:
                assert params[a.name].default is None, (doc.name, a.name)
                assert hints[a.name] == typing.Optional[py_types[a.type]], (doc.name, a.name)  # noqa: UP045
        description, args = _google_args(inspect.getdoc(tool) or "")
        assert description == doc.description
        assert args == {a.name: " ".join(a.doc.split()) for a in doc.args}, doc.name
    assert isinstance(env, WebEnvironment)


def _value(a: Any, pages: str) -> Any:
    """A value of argument ``a`` that makes sense on the test page."""
    by_name = {"bid": "name", "key": "Tab", "url": f"{pages}/page?n=5", "button": "right", "index": 0}
    by_name |= {"modifiers": ["Shift"], "from_bid": "name", "to_bid": "next"}
    if a.name in by_name:
        return by_name[a.name]
    return {"string": "hi", "number": 10, "integer": 0, "boolean": False, "array": ["x"]}[a.type]


def test_every_tool_call_reaches_the_environment_as_a_parsed_action(server: str, pages: str) -> None:
    env = web_environment(site="open", server_url=server, max_steps=100)()
    start = f"{pages}/page?n=3"
    env.reset(start_url=start)
    try:
        for doc in table():
            values = {a.name: _value(a, pages) for a in doc.args if a.required or doc.name != "tab_close"}
            if doc.name == "expand":  # a fold's id (the page folds nothing: missing, not a parse error)
                values["bid"] = "fold-00000000-2"
            text = getattr(env, doc.name)(**values)
            web = env.web_env
            assert web is not None and web.last_obs is not None and web.last_info is not None
            # The call the tool wrote parsed, as this action with these texts (the server shows its
            # own form of it: positional, defaults left out).
            ran = web.last_obs["last_action"]
            assert ran.startswith(doc.name + "("), (doc.name, ran)
            assert all(quote(v) in ran for v in values.values() if isinstance(v, str)), (doc.name, ran)
            assert web.last_info.get("action_error_code") != "bad_action", (doc.name, text)
            if "The episode has ended" in text:
                env.reset(start_url=start)
    finally:
        if env.web_env is not None:
            env.web_env.close()


def test_tool_calls_act_and_text_arrives_exactly(server: str, pages: str) -> None:
    env = web_environment(site="open", server_url=server)()
    first = env.reset(start_url=f"{pages}/page?n=3", goal="Load", uid="row-1")
    try:
        assert first is not None and "[load] button" in first
        assert "loaded 3" in env.click("load")
        typed = 'Ada "the first" \\ O\'Neil\té ✓'
        env.fill("name", typed)
        assert env.web_env is not None and env.web_env.last_obs is not None
        [field] = [f for f in env.web_env.last_obs["inputs"] if f["id"] == "name"]
        assert field["value"] == typed
        # A wrong argument is said in words, as TRL feeds the answer back to the model.
        assert env.fill("name").startswith("Error: fill needs value")
        assert "unknown argument bidd; did you mean bid?" in env.click(bidd="load")
        assert "no element with id 'nope'" in env.click("nope")
        # The answer goes through the parser and comes back in info exactly (quotes, escapes, controls).
        answer = 'line 1\nline "2"\r\\n is not a newline\x01\x7f ünï'
        assert "The episode has ended" in env.stop(answer)
        info = env.web_env.last_info
        assert info is not None and info["answer"] == answer
        assert env.get_reward() == 0.0
        assert env.click("load") == "The episode is over."
        # reset is deterministic from the row: the same row, the same first page
        assert env.reset(start_url=f"{pages}/page?n=3", goal="Load", uid="row-1") == first
    finally:
        if env.web_env is not None:
            env.web_env.close()


def test_a_class_may_offer_some_tools_only(server: str) -> None:
    env = web_environment(site="open", server_url=server, tools=["click", "fill", "stop"])()
    assert set(_tools_as_trl_sees_them(env)) == {"click", "fill", "stop"}
    with pytest.raises(ValueError, match="no tool 'clik'; did you mean click"):
        web_environment(tools=["clik"])
