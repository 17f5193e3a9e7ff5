"""The docs' examples as written: every fenced block of README.md and docs/*.md is run, or says
why not; and every `webserv` command line they show names a real command with flags it has.

How a block is run (docsrun.py does it). A document runs top to bottom in a temporary directory
that looks like the repository's root (`bin/webserv`, `sites/`, `examples/` are there) with the
`webserv` console command `pip install .` installs and the venv's `python` on the PATH; what its
blocks write (`runs/`, `transitions.jsonl`) stays there for its later blocks.

- ```python: run as written in a fresh interpreter (PYTHONPATH is this checkout's package,
  WEBSERV_BIN the server binary). Top-level `await` / `async with` (an async fragment) runs
  inside asyncio.run. WEBSERV_URL is the server the doc started in a shell line, else one shared
  `webserv serve` (what the package would start itself when WEBSERV_URL is unset).
- ```sh: each command line runs as written; exit status 0 is asserted. Lines that set up the
  machine (`make ...`, `pip install ...`) are not run: CI's `make test` builds and installs. Lines
  that serve until stopped (`webserv serve`, `webserv replay DIR`, a line ending in `&`) start in
  the background, must print their listening address, and are stopped when the document ends.
- An untagged or ```text block of `$ `-prefixed commands is a transcript: each command runs as
  above and the lines shown under it must match what it printed by their first word (a header, a
  row's key; not timings). `...` stands for lines left out, and within a word for a part that
  differs run to run (`env-1c0e...`); a shown `PROMPT> TEXT` line
  (`action> click("x")`) is TEXT typed at the command's prompt, given to it on stdin.
- A ```json block of `→ ` requests and `← ` replies is a wire transcript (docs/protocol.md): each
  request is sent, as MessagePack on one connection (JSON text to /openenv/ws for OpenEnv's
  frames), to the doc's server; each reply shown must have every field the doc shows (`...` is
  what it leaves out), and the same `ok`, error `code` and `fault`. The env ids the doc shows
  stand for the ones the server gave.
- A URL a block names is served where it points: `http://127.0.0.1:PORT/v1` by the stand-in model
  (standin_model.py), `127.0.0.1:8765` by a `webserv serve` there (the default --listen).
- Docs run side by side (each is a work unit of pytest-xdist's, conftest.py). The fixed ports a doc
  binds (docsrun.fixed_ports: those URLs, and the ports of the servers its lines start) are claimed
  from its first block that binds one until it ends, a lock file each: two docs that bind one port
  run one after the other.

Any other block (json, yaml, go, html, plain text) cannot run and must carry a marker, an HTML
comment on the line(s) right above its fence:

    <!-- docs-test: not run: WHY -->      not run, and why (needs a Ray cluster, WebArena's images)
    <!-- docs-test: output -->            what the block above printed: its lines' first words
                                          must start lines the block above printed when run here
    <!-- docs-test: continues -->         a Python fragment run after the Python block above it,
                                          in one program (the names it defined are there)
    <!-- docs-test: given: CODE -->       a Python fragment that uses names it does not define:
                                          CODE (one line, the test's values) runs first
    <!-- docs-test: file: PATH -->        the block is (an excerpt of) the repository file PATH:
                                          its lines are PATH's lines, in order
    <!-- docs-test: needs: recorded episodes in DIR[, DIR] -->
                                          the block reads recorded episodes (`webserv export
                                          runs/`): the test records the bundled shop's first two
                                          oracle episodes and copies them into each DIR; the
                                          block then runs as written

A block without a marker that cannot run fails, naming its file, line and what to do.
"""

from __future__ import annotations

import ast
import re
import subprocess
from functools import cache
from pathlib import Path

import pytest
from conftest import REPO
from docsrun import Block, Doc, blocks, check_shape, is_wire, runnable_commands, transcript, typed

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
COMMAND = re.compile(r"(?:^|[\s`$(])(?:bin/)?webserv ([a-z]+(?: [a-z]+)?)((?: +[^\s`|#;)&]+)*)")
SHELL = ("sh", "bash", "shell", "console")


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


def _is_transcript(b: Block) -> bool:
    return b.lang in ("", "text") and any(ln.startswith("$ ") for ln in b.code.splitlines())


def _check_file_excerpt(b: Block) -> None:
    path = REPO / b.argument
    assert path.is_file(), f"{b.where}: the marker names {b.argument}, which is not a file of the repository"
    lines = [ln.rstrip() for ln in path.read_text().splitlines()]
    shown = [ln.rstrip() for ln in b.code.splitlines()]
    if shown and shown[0].startswith("# " + b.argument):  # the block's caption naming the file
        shown = shown[1:]
    at = 0
    for ln in shown:
        if not ln:
            continue
        try:
            at = lines.index(ln, at) + 1
        except ValueError:
            raise AssertionError(
                f"{b.where}: the block shows {ln!r}, which {b.argument} does not have (after the "
                "lines before it); copy the file's lines into the doc again"
            ) from None


def _run(doc: Doc, b: Block) -> None:
    kind = b.kind
    if kind == "unknown":
        raise AssertionError(
            f"{b.where}: unknown docs-test marker {b.marker!r}; test_docs.py lists the vocabulary"
        )
    if kind == "not run":
        assert b.argument, f"{b.where}: `docs-test: not run` needs a reason: `not run: WHY`"
        return
    if kind == "file":
        _check_file_excerpt(b)
        return
    if kind == "output":
        assert doc.last_output is not None, (
            f"{b.where}: an output block, but the block above it did not run here; "
            "mark it `not run: WHY` instead"
        )
        check_shape(b.code.splitlines(), doc.last_output, b.where)
        return
    if kind == "needs":
        doc.prepare(b)
        kind = None
    doc.last_output = None
    if b.lang == "python":
        if kind == "given":
            doc.run_python(b, prelude=b.argument)
        else:
            doc.run_python(b, continued=kind == "continues")
        return
    assert kind is None, f"{b.where}: `{b.marker}` applies to Python blocks only"
    if b.lang in SHELL:
        commands = runnable_commands(b.code)
        assert commands, (
            f"{b.where}: every line of this shell block sets up the machine (make, pip install), "
            "which the test does not run: mark it `<!-- docs-test: not run: WHY -->`"
        )
        doc.last_output = "".join(doc.run_shell(c, b.where) or "" for c in commands)
        return
    if b.lang == "json" and is_wire(b.code):
        doc.replay_wire(b)
        return
    if _is_transcript(b):
        for command, shown in transcript(b.code):
            out = doc.run_shell(command, b.where, stdin=typed(shown))
            if out is not None:
                check_shape(shown, out, b.where)
        return
    raise AssertionError(
        f"{b.where}: a {b.lang or 'plain'} block the test cannot run. Run it (a ```sh or ```python "
        "block, a `$ ` transcript), or put the reason right above its fence: "
        "`<!-- docs-test: not run: WHY -->`, `<!-- docs-test: output -->` or "
        "`<!-- docs-test: file: PATH -->` (test_docs.py lists the vocabulary)"
    )


@pytest.mark.parametrize("path", DOCS, ids=[p.name for p in DOCS])
def test_doc_examples_run_as_written(path: Path, binary: str, server: str, tmp_path: Path) -> None:
    doc = Doc(path, binary, server, tmp_path)
    try:
        for b in blocks(path):
            _run(doc, b)
    finally:
        doc.close()
