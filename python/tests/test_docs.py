"""The docs' examples as written: Python blocks are valid Python, and every `webserv` command line
they show names a real command with flags that command has."""

from __future__ import annotations

import ast
import re
import subprocess
from functools import cache
from pathlib import Path

from conftest import REPO

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
COMMAND = re.compile(r"(?:^|[\s`$(])(?:bin/)?webserv ([a-z]+(?: [a-z]+)?)((?: +[^\s`|#;)]+)*)")


def _blocks(lang: str) -> list[tuple[Path, str]]:
    return [(p, m.group(2)) for p in DOCS for m in FENCE.finditer(p.read_text()) if m.group(1) == lang]


def test_python_examples_are_valid_python() -> None:
    blocks = _blocks("python")
    assert len(blocks) > 5
    for path, code in blocks:
        try:
            ast.parse(code)
        except SyntaxError as e:
            raise AssertionError(f"{path.name}: a python example does not parse: {e}\n{code}") from e


@cache
def _help(binary: str, command: str) -> tuple[int, str]:
    r = subprocess.run([binary, *command.split(), "--help"], capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout + r.stderr


def test_command_lines_name_real_commands_and_flags(binary: str) -> None:
    seen = 0
    for path in DOCS:
        for m in COMMAND.finditer(path.read_text()):
            command, rest = m.group(1), m.group(2)
            first = command.split()[0]
            if first in ("shop", "image", "tasks"):  # commands with subcommands: `webserv tasks check`
                if len(command.split()) < 2:
                    continue  # prose: "webserv tasks" as a noun
            elif first in ("serve", "export", "replay", "regrade", "try", "demo", "gc", "version", "mcp"):
                command = first
            else:
                continue  # prose: "webserv is", "webserv package"
            code, text = _help(binary, command)
            assert "unknown command" not in text, f"{path.name}: `webserv {command}` is not a command"
            for flag in re.findall(r"(?<![\w-])--?([a-z][a-z0-9-]+)", rest):
                if flag in ("help", "h"):
                    continue
                assert f"-{flag}" in text, (
                    f"{path.name}: `webserv {command}` has no flag --{flag} ({m.group(0)!r})"
                )
            seen += 1
    assert seen > 10
