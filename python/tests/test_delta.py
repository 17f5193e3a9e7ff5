"""Transition deltas applied in Python: every transition of episodes a real server recorded, as
`webserv export --format transitions` writes them, in both views."""

from __future__ import annotations

import asyncio
import gzip
import json
import subprocess
from pathlib import Path

import pytest

import webserv
from webserv.delta import DeltaError, apply_delta, export_view
from webserv.launcher import LocalServer


def _episodes(root: Path) -> dict[tuple[str, int], tuple[dict, dict]]:
    """(episode id, step) -> (o_t, o_t+1), from the recorded files."""
    pairs = {}
    for f in sorted(root.rglob("*.jsonl.gz")):
        lines = [json.loads(line) for line in gzip.open(f, "rt")]
        head, reset, steps = lines[0], lines[1], lines[2:]
        prev = reset["obs"]
        for i, s in enumerate(steps, 1):
            pairs[(f"{head['env']}/{head['episode']}", i)] = (prev, s["obs"])
            prev = s["obs"]
    return pairs


def test_exported_deltas_apply_to_the_recorded_observations(binary: str, pages: str, tmp_path: Path) -> None:
    root = tmp_path / "trajectories"

    async def record(url: str) -> None:
        async with webserv.AsyncClient(url) as client:
            env = client.env(start_url=f"{pages}/page?n=3", goal="Load the list, then go on", record={})
            await env.reset()
            for action in [
                'click("load")',
                'fill("name", "Ada")',
                'click("next")',
                'click("nope")',
                "go_back()",
            ]:
                await env.step(action)
            await env.close()

    srv = LocalServer(binary, ["--idle", "200ms", "--no-bundled", "--trajectories", str(root)])
    try:
        asyncio.run(record(srv.url))
    finally:
        srv.stop()
    pairs = _episodes(root)
    assert len(pairs) == 5
    for axtree, rows in zip((False, True), _check_export(binary, root, pairs), strict=True):
        # The load changes the paragraph in place (an edit of the page, not a new one), a link
        # goes to another page (a new url), and a missing element is the action's error.
        view = "axtree" if axtree else "html"
        assert any(e["op"] == "change" for e in rows[0]["delta"][view]["edits"]), rows[0]["delta"]
        assert rows[2]["delta"]["set"]["url"].endswith("/page?n=4"), rows[2]["delta"]
        assert "nope" in rows[3]["delta"]["set"]["last_action_error"], rows[3]["delta"]


def _check_export(
    binary: str, root: Path, pairs: dict[tuple[str, int], tuple[dict, dict]]
) -> list[list[dict]]:
    """Every exported row's delta, applied in Python to its recorded observation, gives the next;
    the rows of the HTML view and of the accessibility-tree view."""
    views = []
    for axtree in (False, True):
        out = subprocess.run(
            [binary, "export", "--format", "transitions", *(["--axtree"] if axtree else []), str(root)],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        rows = [json.loads(line) for line in out.stdout.splitlines()]
        assert len(rows) == len(pairs)
        for row in rows:
            before, after = pairs[(row["episode_id"], row["step"])]
            got = apply_delta(export_view(before, axtree=axtree), row["delta"])
            assert got == export_view(after, axtree=axtree), (
                axtree,
                row["episode_id"],
                row["step"],
                row["action"],
            )
        views.append(rows)
    return views


def test_bundled_oracle_deltas_apply_in_python(binary: str, tmp_path: Path) -> None:
    """The same on the bundled shop: the oracles of the first tasks of the storefront and the admin."""
    root = tmp_path / "trajectories"

    async def record(url: str) -> int:
        async with webserv.AsyncClient(url) as client:
            played = 0
            for site in ("shopping", "cms"):
                for task in [t for t in await client.tasks(site) if t.get("oracle")][:3]:
                    env = client.env(site, task=task["id"], record={})
                    await env.reset()
                    for action in task["oracle"]:
                        await env.step(action)
                    await env.close()
                    played += 1
            return played

    srv = LocalServer(binary, ["--idle", "200ms", "--trajectories", str(root)])
    try:
        played = asyncio.run(record(srv.url))
    finally:
        srv.stop()
    pairs = _episodes(root)
    assert played == 6 and len(pairs) >= 2 * played
    _check_export(binary, root, pairs)


def test_a_delta_that_does_not_fit_is_refused() -> None:
    obs = {"url": "u", "html": '<a data-semantic-id="x">1</a><b>2</b>', "clickable": ["x"]}
    assert apply_delta(obs, {"html": {"edits": [{"op": "remove", "id": "x"}]}})["html"] == "<b>2</b>"
    for delta, says in [
        ({"htlm": {}}, "unknown keys ['htlm']"),
        ({"html": {"edits": [{"op": "remove", "id": "y"}]}}, "id 'y'"),
        ({"html": {"edits": [{"op": "insert", "at": 5, "text": "<i>"}]}}, "inserts at 5"),
        ({"html": {"edits": [{"op": "swap", "at": 0}]}}, "op 'swap'"),
        ({"clickable": {"remove": ["z"]}}, "does not have"),
        ({"set": {"html": ""}, "html": {"edits": []}}, "both sets html"),
    ]:
        with pytest.raises(DeltaError) as e:
            apply_delta(obs, delta)
        assert says in str(e.value), (delta, str(e.value))
    assert obs["html"] == '<a data-semantic-id="x">1</a><b>2</b>'  # left as it was
