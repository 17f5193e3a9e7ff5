"""Runs the fenced blocks of README.md and docs/*.md as a reader would (test_docs.py says the rules).

A document is run top to bottom in a directory of its own (``Doc``): its shell lines and Python
blocks share that directory, the servers its lines start and the stand-in model endpoints its URLs
name, and everything is stopped when the document ends.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from standin_model import StandInModel

from webserv.launcher import stop_group

REPO = Path(__file__).resolve().parents[2]

FENCE_OPEN = re.compile(r"^```(\w*)\s*$")
MARKER = re.compile(r"<!--\s*docs-test:\s*(.*?)\s*-->", re.S)
# What a marker may say (test_docs.py's docstring explains each).
KINDS = ("not run", "output", "continues", "given", "file", "needs")
NEEDS_EPISODES = re.compile(r"^recorded episodes in (.+)$")
# How a command that serves says where: "listening on http://A:P" (serve, replay), "shop serving
# DIR on http://A:P" (shop serve).
LISTENING = re.compile(r"(?:listening|serving \S+) on (?:http://)?(\d+\.\d+\.\d+\.\d+:\d+)")
MODEL_URL = re.compile(r"http://127\.0\.0\.1:(\d+)/v1(?![/\w])")  # an OpenAI-compatible base URL
SERVER_PORT = 8765  # `webserv serve`'s default --listen port, which the docs' URLs name
# Shell lines that set up the machine: not run here; CI's `make test` builds and installs.
SETUP = re.compile(r"^(make|pip install)\b")
# Shell lines that serve until stopped: started in the background, checked to listen, stopped.
SERVES = re.compile(r"^(?:bin/)?webserv (?:serve\b|replay (?!.*--(?:rerun|verify)))")
TIMEOUT = 240.0  # one command or block; far above any doc's (a hang fails with what was printed)


@dataclass
class Block:
    path: Path
    line: int  # the fence's line, 1-based
    lang: str
    code: str
    marker: str | None  # the docs-test comment above the fence, its text after "docs-test:"

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"

    @property
    def kind(self) -> str | None:
        if self.marker is None:
            return None
        return next((k for k in KINDS if self.marker.startswith(k)), "unknown")

    @property
    def argument(self) -> str:
        """What follows the kind: a reason, a prelude, a path."""
        assert self.marker is not None and self.kind is not None
        return self.marker[len(self.kind) :].lstrip(":").strip()


def blocks(path: Path) -> list[Block]:
    """Every fenced block of a markdown file, with the docs-test marker right above it, if any."""
    lines = path.read_text().split("\n")
    out: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE_OPEN.match(lines[i])
        if not m:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and lines[j].rstrip() != "```":
            j += 1
        marker = None
        k = i - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        if k >= 0 and lines[k].rstrip().endswith("-->"):
            start = k
            while start > 0 and "<!--" not in lines[start]:
                start -= 1
            mm = MARKER.search("\n".join(lines[start : k + 1]))
            if mm:
                marker = " ".join(mm.group(1).split())
        out.append(Block(path, i + 1, m.group(1), "\n".join(lines[i + 1 : j]) + "\n", marker))
        i = j + 1
    return out


def shell_commands(code: str) -> list[str]:
    """A shell block's command lines: continuations joined; blank lines and comments dropped."""
    out: list[str] = []
    cur = ""
    for raw in code.splitlines():
        line = raw.rstrip()
        if line.endswith("\\"):
            cur += line[:-1] + " "
            continue
        cur += line
        if cur.strip() and not cur.strip().startswith("#"):
            out.append(cur.strip())
        cur = ""
    return out


def transcript(code: str) -> list[tuple[str, list[str]]]:
    """A `$ `-prefixed transcript: each command with the output lines shown under it."""
    out: list[tuple[str, list[str]]] = []
    for line in code.splitlines():
        if line.startswith("$ "):
            out.append((line[2:].strip(), []))
        elif out:
            out[-1][1].append(line)
    return out


PROMPT = re.compile(r"^\w+> (.+)$")  # `action> click("x")`: a prompt and what the reader typed


def typed(shown: list[str]) -> str:
    """What the reader typed at a transcript's prompts, as the command's stdin."""
    return "".join(m.group(1) + "\n" for ln in shown if (m := PROMPT.match(ln)))


def check_shape(shown: list[str], printed: str, where: str) -> None:
    """Every shown line's first word starts a printed line (a header, a row's key): the shape of
    the output, not its timings. `...` stands for lines left out."""
    firsts = [ln.split()[0] for ln in printed.splitlines() if ln.split()]
    for ln in shown:
        words = ln.split()
        if not words or words[0].startswith("..."):
            continue
        # `env-1c0e...` in a shown word stands for the rest of a name that differs run to run.
        word = re.compile(".*".join(re.escape(w) for w in words[0].split("...")) + "$")
        assert any(word.match(f) for f in firsts), (
            f"{where}: the doc shows a line starting {words[0]!r} ({ln.strip()!r}), but the run "
            f"printed no such line; it printed:\n{printed[-3000:]}\nFix the doc's output (or the code)."
        )


def python_program(parts: list[tuple[int, str]], where: str) -> str:
    """The source the runner executes: each part at its line of the doc (so tracebacks name the
    doc's lines); top-level await runs inside asyncio.run."""
    src: list[str] = []
    for line, code in parts:
        pad = line - 1 - len(src)
        src.extend([""] * max(pad, 0))
        src.extend(code.rstrip("\n").split("\n"))
    body = "\n".join(src) + "\n"
    return (
        "import ast, asyncio, inspect\n"
        f"src = {body!r}\n"
        f"code = compile(src, {where!r}, 'exec', flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)\n"
        "g = {'__name__': '__main__'}\n"
        "if code.co_flags & inspect.CO_COROUTINE:\n"
        "    asyncio.run(eval(code, g))\n"
        "else:\n"
        "    exec(code, g)\n"
    )


_recorded: list[Path] = []


def recorded_episodes(binary: str) -> Path:
    """A trajectories directory holding the bundled shop's task shopping.0 played by its oracle
    (recorded once per test session): what a doc's `runs/` or `trajectories/` holds after a run."""
    if _recorded:
        return _recorded[0]
    root = Path(tempfile.mkdtemp(prefix="docs-recorded-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"), WEBSERV_BIN=binary)
    env.pop("WEBSERV_URL", None)
    program = (
        "import asyncio, sys, webserv\n"
        "from webserv.launcher import LocalServer\n"
        "async def main(url):\n"
        "    async with webserv.AsyncClient(url) as c:\n"
        "        for task in (await c.request('tasks', site='shopping'))['tasks'][:2]:\n"
        "            e = c.env('shopping', task=task['id'], record={})\n"
        "            await e.reset()\n"
        "            for a in task['oracle']:\n"
        "                await e.step(a)\n"
        "            await e.close()\n"
        "s = LocalServer(sys.argv[1], ['--trajectories', sys.argv[2]])\n"
        "try:\n"
        "    asyncio.run(main(s.url))\n"
        "finally:\n"
        "    s.stop()\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", program, binary, str(root)],
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert r.returncode == 0, f"recording the shop's oracle episodes failed:\n{r.stderr[-4000:]}"
    assert list(root.glob("*/0001.jsonl.gz")), f"no episode recorded in {root}"
    _recorded.append(root)
    return root


def _port_free(port: int) -> bool:
    """Whether port is free on 127.0.0.1, waiting a while for a server stopped just now."""
    deadline = time.monotonic() + 20
    while not _bindable(port):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)
    return True


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the servers bind: TIME_WAIT is free
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


# The port a command that serves binds when it names none: `webserv serve`'s, `webserv replay`'s
# and `webserv shop serve`'s defaults.
DEFAULT_PORTS = ((re.compile(r"\bwebserv serve\b"), SERVER_PORT), (re.compile(r"\bwebserv replay\b"), 8766))
SHOP_DEFAULT_PORT = 8080
LISTEN_FLAG = re.compile(r"--listen[ =](?:[\w.]*:)?(\d+)\b")
PORT_FLAG = re.compile(r"--port[ =](\d+)\b")


def background_port(command: str) -> int | None:
    """The fixed port a command started in the background binds (None: a free one, or none)."""
    m = LISTEN_FLAG.search(command) or PORT_FLAG.search(command)
    if m:
        return int(m.group(1)) or None
    if re.search(r"\bwebserv shop serve\b", command):
        return SHOP_DEFAULT_PORT
    return next((port for rx, port in DEFAULT_PORTS if rx.search(command)), None)


def command_ports(command: str) -> set[int]:
    """The fixed ports on 127.0.0.1 the test binds for one command line of a doc: the stand-in
    model's for the endpoints it names, and the port a serving command listens on."""
    ports = {int(p) for p in MODEL_URL.findall(command)}
    if SERVES.match(command) or command.endswith("&"):
        port = background_port(command.rstrip("&").strip())
        if port is not None:
            ports.add(port)
    return ports


def python_ports(code: str) -> set[int]:
    """The fixed ports the test binds for a Python block: the stand-in model's, and the doc's own
    `webserv serve` on 8765 when the block names that address."""
    ports = {int(p) for p in MODEL_URL.findall(code)}
    if f"127.0.0.1:{SERVER_PORT}" in code:
        ports.add(SERVER_PORT)
    return ports


def fixed_ports(path: Path) -> set[int]:
    """Every fixed port on 127.0.0.1 running the doc binds (what Doc.run_python and run_shell
    bind, block by block): two docs that share one cannot run at once."""
    ports: set[int] = set()
    for b in blocks(path):
        kind = b.kind
        if kind in ("not run", "file", "output", "unknown"):
            continue
        if b.lang == "python":
            ports |= python_ports(b.code + (b.argument if kind == "given" else ""))
        elif b.lang in ("sh", "bash", "shell", "console"):
            for c in runnable_commands(b.code):
                ports |= command_ports(c)
        elif b.lang in ("", "text"):
            for c, _ in transcript(b.code):
                if not SETUP.match(c):
                    ports |= command_ports(c)
    return ports


class PortClaim:
    """The doc's fixed ports, claimed across processes (a lock file each, /tmp/webserv-docs-port-N.lock)
    from the first block that binds one until the doc ends: docs run side by side on pytest-xdist's
    workers, and two that bind one port wait for each other. All of a doc's ports are claimed at once,
    in order, so two docs never each hold a port the other waits for."""

    def __init__(self, ports: set[int]):
        self.ports = ports
        self.fds: list[int] = []

    def claim(self, port: int, where: str) -> None:
        assert port in self.ports, (
            f"{where}: the test binds 127.0.0.1:{port}, which docsrun.fixed_ports did not find in the "
            "doc; teach fixed_ports that block's kind"
        )
        if self.fds:
            return
        for p in sorted(self.ports):
            fd = os.open(f"/tmp/webserv-docs-port-{p}.lock", os.O_CREAT | os.O_RDWR, 0o666)
            fcntl.flock(fd, fcntl.LOCK_EX)  # held by the doc running now, if any: until it ends
            self.fds.append(fd)

    def release(self) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds = []


class Background:
    """A command that serves until stopped, started in its own process group."""

    def __init__(self, command: str, cwd: Path, env: dict[str, str], where: str):
        self.command, self.where = command, where
        self.log = tempfile.NamedTemporaryFile(prefix="docs-bg-", suffix=".log", delete=False, dir=cwd)
        self.proc = subprocess.Popen(
            ["bash", "-c", command],
            cwd=cwd,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.addr = ""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and self.proc.poll() is None:
            m = LISTENING.search(self.output())
            if m:
                self.addr = m.group(1)
                return
            time.sleep(0.1)
        self.stop()
        raise AssertionError(
            f"{where}: `{command}` did not come up (no 'listening on' within 60 s, exit "
            f"{self.proc.returncode}); it printed:\n{self.output()[-3000:]}"
        )

    def output(self) -> str:
        return Path(self.log.name).read_text(errors="replace")

    def stop(self) -> None:
        stop_group(self.proc, 15)


def console_script(dirname: Path) -> None:
    """The `webserv` command `pip install .` puts on the PATH, written from pyproject.toml's
    [project.scripts] as pip writes it, running this checkout's package."""
    text = (REPO / "pyproject.toml").read_text()
    section = text.split("[project.scripts]", 1)[1].split("\n[", 1)[0]  # tomllib is 3.11's
    scripts = dict(re.findall(r'^(\S+)\s*=\s*"([\w.]+:\w+)"', section, re.M))
    assert scripts, "pyproject.toml has no [project.scripts] entry"
    dirname.mkdir(parents=True, exist_ok=True)
    for name, target in scripts.items():
        module, func = target.split(":")
        p = dirname / name
        p.write_text(f"#!{sys.executable}\nimport sys\nfrom {module} import {func}\nsys.exit({func}())\n")
        p.chmod(0o755)


@dataclass
class Doc:
    """One document's run: its directory, environment, servers and the output of its last block."""

    path: Path
    binary: str
    shared_url: str  # a `webserv serve` for Python blocks when the doc started none
    root: Path
    env: dict[str, str] = field(default_factory=dict)
    server_url: str = ""  # the doc's own `webserv serve`, once a line started one
    background: list[Background] = field(default_factory=list)
    models: dict[int, StandInModel] = field(default_factory=dict)
    last_output: str | None = None
    last_python: list[tuple[int, str]] = field(default_factory=list)
    wire: Wire | None = None
    claim: PortClaim = field(init=False)

    def __post_init__(self) -> None:
        self.claim = PortClaim(fixed_ports(self.path))
        # The doc's commands run in a directory that looks like the repository's root (bin/webserv,
        # sites/, examples/ as in a checkout) but is the test's own: what they write stays here.
        for entry in REPO.iterdir():
            if entry.name not in ("bin", ".git") and not entry.name.startswith("."):
                (self.root / entry.name).symlink_to(entry)
        (self.root / "bin").mkdir()
        (self.root / "bin" / "webserv").symlink_to(self.binary)
        scripts = self.root / ".docs-test" / "scripts"
        console_script(scripts)
        env = {k: v for k, v in os.environ.items() if k not in ("WEBSERV_URL", "PYTHONPATH")}
        env["PATH"] = os.pathsep.join([str(scripts), str(Path(sys.executable).parent), env.get("PATH", "")])
        env["PYTHONPATH"] = str(REPO / "python")
        env["WEBSERV_BIN"] = self.binary
        env.setdefault("OPENAI_API_KEY", "docs-test")
        # The Python the server's Verified grader and `webserv regrade` run: the repository's .venv
        # beside bin/webserv in a checkout, this test's interpreter here.
        env.setdefault("WEBSERV_PYTHON", sys.executable)
        self.env = env

    # -- what the doc's URLs point at ----------------------------------------------------------

    def _models_for(self, text: str, where: str) -> None:
        for port in {int(p) for p in MODEL_URL.findall(text)}:
            if port in self.models:
                continue
            self.claim.claim(port, where)
            assert _port_free(port), (
                f"{where}: the doc names a model endpoint on 127.0.0.1:{port}, which the test "
                "serves with the stand-in model, but something else listens there"
            )
            # One answer for every request, in the shape the describer and the judge ask for.
            reply = json.dumps(
                {"reasoning": "the stand-in's reply", "description": "the page changes", "success": True}
            )
            self.models[port] = StandInModel([{"reply": reply, "keep": True}], port=port)

    def _server_for(self, text: str, where: str) -> None:
        if f"127.0.0.1:{SERVER_PORT}" in text and not self.server_url:
            self.start(f"bin/webserv serve --listen 127.0.0.1:{SERVER_PORT}", where)

    def start(self, command: str, where: str) -> Background:
        port = background_port(command)
        if port is not None:
            self.claim.claim(port, where)
        serves = re.search(r"webserv serve\b", command)
        if serves and (f"127.0.0.1:{SERVER_PORT}" in command or "--listen" not in command):
            assert _port_free(SERVER_PORT), (
                f"{where}: `{command}` listens on 127.0.0.1:{SERVER_PORT} as the doc says, but something "
                "else listens there; stop it and run the test again"
            )
        bg = Background(command, self.root, self.env, where)
        self.background.append(bg)
        if serves:
            self.server_url = f"ws://{bg.addr}/v1/ws"
        return bg

    def prepare(self, block: Block) -> None:
        """A `needs:` marker: what the block's commands read, made here before it runs."""
        m = NEEDS_EPISODES.match(block.argument)
        assert m, (
            f"{block.where}: `docs-test: needs: {block.argument}`: the test knows how to make "
            "`recorded episodes in DIR[, DIR...]` only"
        )
        source = recorded_episodes(self.binary)
        for d in m.group(1).split(","):
            shutil.copytree(source, self.root / d.strip(), dirs_exist_ok=True)

    # -- running blocks ------------------------------------------------------------------------

    def run_python(self, block: Block, prelude: str = "", continued: bool = False) -> None:
        parts = list(self.last_python) if continued else []
        if prelude:
            parts.append((block.line, prelude))
        parts.append((block.line + 1, block.code))
        self._models_for(block.code + prelude, block.where)
        self._server_for(block.code + prelude, block.where)
        env = dict(self.env, WEBSERV_URL=self.server_url or self.shared_url)
        t0 = time.monotonic()
        r = subprocess.run(
            [sys.executable, "-c", python_program(parts, str(block.path.relative_to(REPO)))],
            cwd=self.root,
            env=env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
        assert r.returncode == 0, (
            f"{block.where}: the Python example failed (exit {r.returncode}).\nstdout:\n{r.stdout[-3000:]}\n"
            f"stderr:\n{r.stderr[-5000:]}\nFix the example (or the code), or mark it "
            "`<!-- docs-test: not run: WHY -->` if it cannot run here."
        )
        print(f"--- {block.where}: ran in {time.monotonic() - t0:.1f} s; it printed:\n{r.stdout[-2000:]}")
        self.last_output = r.stdout
        self.last_python = parts

    def run_shell(self, command: str, where: str, stdin: str = "") -> str | None:
        """One command line: `make`/`pip install` skipped, servers started in the background
        (None), anything else run to its end with status 0 asserted: what it printed."""
        if SETUP.match(command):
            return None
        self._models_for(command, where)
        if SERVES.match(command) or command.endswith("&"):
            self.start(command.rstrip("&").strip(), where)
            return None
        env = dict(self.env)
        if self.server_url:
            env["WEBSERV_URL"] = self.server_url
        t0 = time.monotonic()
        r = subprocess.run(
            ["bash", "-o", "pipefail", "-c", command],
            cwd=self.root,
            env=env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
        out = r.stdout + r.stderr
        assert r.returncode == 0, (
            f"{where}: `{command}` exited {r.returncode}; it printed:\n{out[-4000:]}\n"
            "Fix the command in the doc (or the code)."
        )
        print(f"--- {where}: `{command}` ran in {time.monotonic() - t0:.1f} s; it printed:\n{out[-2000:]}")
        return out

    def replay_wire(self, block: Block) -> None:
        """A wire transcript: its requests sent to the doc's server, its replies' shapes checked;
        one connection for the whole doc, as a client keeps one."""
        if self.wire is None:
            self.wire = Wire(self.server_url or self.shared_url)
        self.wire.replay(block.code, block.where)

    def close(self) -> None:
        try:
            if self.wire is not None:
                self.wire.close()
            for bg in reversed(self.background):
                bg.stop()
            for m in self.models.values():
                m.stop()
        finally:
            self.claim.release()


def runnable_commands(code: str) -> list[str]:
    return [c for c in shell_commands(code) if not SETUP.match(c)]


# -- wire transcripts (docs/protocol.md) -----------------------------------------------------------

ENV_ID = re.compile(r"^env-[0-9a-f]+(?:\.\.\.)?$")
FIELD = re.compile(r"^[a-z_][a-z0-9_]*$")  # a key that names a field (not an element id, a mark)
# Values the shape check compares too: whether it succeeded, and whose failure.
COMPARED = ("ok", "type", "error.code", "error.fault", "error.retryable")


def wire_frames(code: str) -> list[tuple[str, str]]:
    """A transcript's frames: ("→" or "←", its text); an indented line continues a frame."""
    out: list[tuple[str, str]] = []
    for line in code.splitlines():
        if line[:2] in ("→ ", "← "):
            out.append((line[0], line[2:]))
        elif line.startswith(" ") and out:
            out[-1] = (out[-1][0], out[-1][1] + "\n" + line)
    return out


def is_wire(code: str) -> bool:
    frames = wire_frames(code)
    return bool(frames) and frames[0][0] == "→"


def elided_json(text: str) -> object:
    """A frame as the doc writes it: JSON with `...` for what it leaves out (`{...}`, `[...]`,
    `..., ` and `, ...`) and `<bin N bytes>` for bytes; anything after the JSON is a comment."""
    t = re.sub(r"<bin[^>]*>", '"<bin>"', text)
    t = t.replace("{...}", "{}").replace("[...]", "[]")
    t = re.sub(r"(?<=[{\[,])(\s*)\.\.\.,\s*", r"\1", t)
    t = re.sub(r",\s*\.\.\.(?=\s*[}\]])", "", t)
    obj, _ = json.JSONDecoder().raw_decode(t.strip())
    return obj


def check_reply(doc: object, real: object, where: str, path: str = "") -> None:
    """The shape of a reply: every field the doc shows is in the real reply (recursively; a
    list's first element stands for all), and ok, an error's code and fault agree."""
    if isinstance(doc, dict):
        assert isinstance(real, dict), (
            f"{where}: the doc shows a map at {path or 'the reply'}, the server sent {real!r:.300}"
        )
        for k, v in doc.items():
            if not FIELD.match(k):
                continue  # data keys (element ids, mark numbers) differ run to run
            assert k in real, (
                f"{where}: the doc shows {path + k!r} in the reply, which the server's has not "
                f"(it has {sorted(real)}); fix the doc"
            )
            if path + k in COMPARED:
                assert real[k] == v, f"{where}: the doc shows {path + k} = {v!r}, the server sent {real[k]!r}"
            check_reply(v, real[k], where, f"{path}{k}.")
    elif isinstance(doc, list) and doc and isinstance(real, list) and real:
        check_reply(doc[0], real[0], where, f"{path}0.")


class Wire:
    """One connection to a `webserv serve`, replaying a doc's frames; the env ids the doc shows
    are mapped to the ones the server gave (a doc's `env-3f9a...` is its `env-3f9a1c0d...`)."""

    def __init__(self, url: str):
        self.url = url
        self.ws: Any = None
        self.openenv: Any = None
        self.ids: dict[str, str] = {}
        self.stack = contextlib.ExitStack()

    def close(self) -> None:
        self.stack.close()

    def _conn(self, openenv: bool) -> Any:
        from websockets.sync.client import connect

        if openenv:  # OpenEnv's protocol: JSON text frames at /openenv/ws
            if self.openenv is None:
                url = self.url.replace("/v1/ws", "/openenv/ws")
                self.openenv = self.stack.enter_context(connect(url, max_size=None, open_timeout=30))
            return self.openenv
        if self.ws is None:
            self.ws = self.stack.enter_context(connect(self.url, max_size=None, open_timeout=30))
        return self.ws

    def _real(self, doc_id: str) -> str:
        key = doc_id.removesuffix("...")
        for d, r in self.ids.items():
            if d.startswith(key):
                return r
        return doc_id

    def _map_request(self, x: object) -> object:
        if isinstance(x, str) and ENV_ID.match(x):
            return self._real(x)
        if isinstance(x, dict):
            return {k: self._map_request(v) for k, v in x.items()}
        if isinstance(x, list):
            return [self._map_request(v) for v in x]
        return x

    def _learn(self, doc: object, real: object) -> None:
        if isinstance(doc, str) and ENV_ID.match(doc) and isinstance(real, str):
            self.ids.setdefault(doc.removesuffix("..."), real)
        elif isinstance(doc, dict) and isinstance(real, dict):
            for k, v in doc.items():
                if k in real:
                    self._learn(v, real[k])
        elif isinstance(doc, list) and doc and isinstance(real, list) and real:
            self._learn(doc[0], real[0])

    def replay(self, code: str, where: str) -> None:
        import msgpack

        frames = wire_frames(code)
        for i, (arrow, text) in enumerate(frames):
            if arrow != "→":
                continue
            shown = frames[i + 1][1] if i + 1 < len(frames) and frames[i + 1][0] == "←" else None
            openenv = False
            if text.startswith("<binary frame 0x"):
                data: bytes | str = bytes([int(text[len("<binary frame 0x") :].split(">")[0], 16)])
                want = 0
            else:
                req = self._map_request(elided_json(text))
                assert isinstance(req, dict), f"{where}: a request frame that is not a map: {text}"
                openenv = "op" not in req and "type" in req
                data = json.dumps(req) if openenv else msgpack.packb(req)
                want = req.get("id")
            ws = self._conn(openenv)
            ws.send(data)
            if openenv and shown is None:
                continue  # OpenEnv's close has no reply
            while True:
                try:
                    msg = ws.recv(timeout=TIMEOUT)
                except TimeoutError:
                    raise AssertionError(
                        f"{where}: no reply to {text.strip()[:200]} in {TIMEOUT:.0f} s"
                    ) from None
                reply = msgpack.unpackb(msg) if isinstance(msg, bytes) else json.loads(msg)
                if openenv or reply.get("id") == want:
                    break
            if shown is not None:
                doc = elided_json(shown)
                check_reply(doc, reply, f"{where} (the reply to {text.strip()[:80]})")
                self._learn(doc, reply)
