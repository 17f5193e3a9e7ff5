"""What the exploration tests check of a run's output: the SFT rows' keys, `webserv tasks check` on the
run's site definition, and that each task's instruction names what its verifier keeps (test_explore.py,
test_explore_shop.py)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

SFT_KEYS = {
    "episode_id",
    "step",
    "instruction",
    "url",
    "observation",
    "previous_actions",
    "action",
    "episode_reward",
}


def sft_rows(path: Path) -> list[dict]:
    """The rows of a run's demonstrations file (JSON lines)."""
    return [json.loads(line) for line in path.read_text().splitlines()]


def tasks_check(
    binary: str, sites: Path, n: int, unverified: int | None = None, *, strict: bool = False
) -> str:
    """`webserv tasks check` on the run's definition: every task passes (oracle and solutions 1,
    wrong and null agents 0); unverified, when given, is how many have no independent solution;
    strict passes --strict (a task without one fails)."""
    out = subprocess.run(
        [
            binary,
            "tasks",
            "check",
            "--sites",
            str(sites),
            "--no-incus",
            "--instances",
            str(sites.parent / "inst"),
            *(["--strict"] if strict else []),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"{n} task(s), {n} passed, 0 failed" in out.stdout, out.stdout
    if unverified is not None:
        rows = [line for line in out.stdout.splitlines() if line.endswith(("  ok", "  unverified"))]
        assert sum(r.endswith("unverified") for r in rows) == unverified, out.stdout
        assert all(r.split()[5] == "1" for r in rows if r.endswith("  ok")), out.stdout  # solution 1
    return out.stdout


def assert_instructions_determine_verifiers(tasks: list[dict[str, Any]]) -> None:
    """What item 3 of issue 46 asks of every emitted task file."""
    from urllib.parse import parse_qsl, urlparse

    from webserv.explore.instruction import check_values, named, names_nothing

    by_intent: dict[str, str] = {}
    for t in tasks:
        assert not names_nothing(t["intent"]), t["intent"]
        assert "\\u" not in t["intent"], t["intent"]  # names as people write them
        ev = json.dumps(t["eval"], sort_keys=True)
        assert by_intent.setdefault(t["intent"], ev) == ev, f"one intent, two verifiers: {t['intent']}"
        if "url_match" in t["eval"]["eval_types"]:
            for k, v in parse_qsl(urlparse(t["eval"]["reference_url"]).query, keep_blank_values=True):
                assert named(v, t["intent"]), f"{t['intent']!r} does not name {k}={v!r} its reference keeps"
        for c in t["eval"].get("state") or []:
            for col, v in check_values(c):
                assert not isinstance(v, str) or not v or named(v, t["intent"]), (t["intent"], col, v)
