"""Starts a local ``webserv serve`` when no server URL is configured."""

from __future__ import annotations

import atexit
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from . import miniwob
from .errors import ServerUnavailable

_LISTENING = re.compile(r"listening on http://(\S+)")
_lock = threading.Lock()
_server: LocalServer | None = None


def binary_candidates() -> list[tuple[str, str | None]]:
    """Where the server binary is looked for, in order: (where, path or None)."""
    env = os.environ.get("WEBSERV_BIN")
    if env:
        return [("$WEBSERV_BIN", env)]
    out: list[tuple[str, str | None]] = [("the PATH", shutil.which("webserv"))]
    roots: list[tuple[str, Path]] = []
    try:
        from ._build import SOURCE_DIR  # ty: ignore  # written when the wheel was built (setup.py)

        if SOURCE_DIR:
            roots.append(("the checkout the package was built from", Path(SOURCE_DIR)))
    except ImportError:  # not built: running from the source tree
        pass
    here = Path(__file__).resolve().parents[2]
    if (here / "go.mod").exists():
        roots.append(("the checkout the package runs from", here))
    roots.append(("the working directory", Path.cwd()))
    seen: set[Path] = set()
    for where, root in roots:
        if root not in seen:
            seen.add(root)
            out.append((where, str(root / "bin" / "webserv")))
    return out


def find_binary() -> str | None:
    """The webserv binary: $WEBSERV_BIN, else the PATH, else bin/webserv of the checkout this
    package was built from (or runs from), else bin/webserv of the working directory."""
    for _, path in binary_candidates():
        if path and os.path.isfile(path) and os.access(path, os.X_OK) and _native(path):
            return path
    return None


def _native(path: str) -> bool:
    """Whether path is a compiled program, not the package's own ``webserv`` console script
    (which runs the binary found here, and must not find itself)."""
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def run_binary() -> None:
    """The ``webserv`` console command ``pip install`` puts on the PATH: runs the server binary
    the package records (``webserv export``, ``webserv replay``, ``webserv serve`` as the docs
    write them), with the same arguments. ``webserv explore`` and ``webserv eval`` go through the
    binary too, which runs ``python -m webserv.explore`` (``webserv.eval``) with this interpreter
    ($WEBSERV_PYTHON)."""
    binary = find_binary()
    if binary is None:
        sys.stderr.write("webserv: " + missing_binary_message() + "\n")
        raise SystemExit(1)
    if sys.argv[1:2] in (["explore"], ["eval"]) and not os.environ.get("WEBSERV_PYTHON"):
        # `webserv explore` and `webserv eval` are this package's: the binary runs them with this
        # interpreter.
        os.environ["WEBSERV_PYTHON"] = sys.executable
    os.execv(binary, [binary, *sys.argv[1:]])


def missing_binary_message() -> str:
    """What to do when find_binary finds nothing: where it looked, and the three ways out."""
    if os.environ.get("WEBSERV_BIN"):
        head = f"WEBSERV_BIN is {os.environ['WEBSERV_BIN']}, which is not an executable file."
    else:
        looked = "; ".join(f"{where}: {path or 'nothing'}" for where, path in binary_candidates())
        head = f"WEBSERV_URL is unset and no webserv binary was found (looked at {looked})."
    return (
        f"{head} Either build it with `make build` in the repository (it is then bin/webserv), "
        "set WEBSERV_BIN=/path/to/webserv, or run `webserv serve` yourself and set "
        "WEBSERV_URL=ws://127.0.0.1:8765/v1/ws."
    )


def _die_with_parent() -> None:
    """In the child, before exec: SIGTERM when the thread that started it ends (Linux's PR_SET_PDEATHSIG)."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG


class LocalServer:
    """A ``webserv serve`` child process on a free port, stopped at exit.

    Args:
        binary: the ``webserv`` executable.
        args: more ``serve`` flags (``--token``, ``--max-envs``, ...).
        listen: the address to bind (port 0 picks a free one); a non-loopback
            address needs ``--token`` in ``args``.
        die_with_parent: stop the server when the thread that started it ends
            (Linux), so a server outlives no process that owns it, even one killed
            with SIGKILL. Start it from a thread that lives as long as the owner.
    """

    def __init__(
        self,
        binary: str,
        args: list[str] | None = None,
        timeout: float = 60.0,
        *,
        listen: str = "127.0.0.1:0",
        die_with_parent: bool = False,
    ):
        self.log = tempfile.NamedTemporaryFile(prefix="webserv-", suffix=".log", delete=False)
        cmd = [binary, "serve", "--listen", listen, *(args or [])]
        env = os.environ.copy()
        if not env.get(miniwob.ENV_VAR) and (pages := miniwob.html_dir()):
            env[miniwob.ENV_VAR] = pages  # the MiniWoB++ pages this interpreter has installed
        self.proc = subprocess.Popen(
            cmd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=self.log,
            stdin=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
            preexec_fn=_die_with_parent if die_with_parent else None,
        )
        found: list[str] = []

        def read() -> None:
            assert self.proc.stdout is not None
            for line in self.proc.stdout:
                m = _LISTENING.search(line)
                if m and not found:
                    found.append(m.group(1))
                    ready.set()
            ready.set()

        ready = threading.Event()
        threading.Thread(target=read, daemon=True).start()
        ready.wait(timeout)
        if not found:
            self.stop()
            raise ServerUnavailable(
                f"started {binary} serve but it did not report a listening address within {timeout:.0f}s; "
                f"its log is {self.log.name}:\n{self._tail()}"
            )
        self.url = f"ws://{found[0]}/v1/ws"
        atexit.register(self.stop)

    def _tail(self) -> str:
        try:
            return Path(self.log.name).read_text(errors="replace")[-2000:]
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        stop_group(self.proc, 10)


def stop_group(proc: subprocess.Popen, timeout: float) -> None:
    """Stop ``proc``, started as the leader of its own process group, and everything it started:
    SIGTERM to the group, then SIGKILL once ``timeout`` seconds have passed."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=timeout)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


def server_url() -> str:
    """The server to talk to: $WEBSERV_URL, or a local server started on first use."""
    url = os.environ.get("WEBSERV_URL")
    if url:
        return url
    global _server
    with _lock:
        if _server is None or _server.proc.poll() is not None:
            binary = find_binary()
            if binary is None:
                raise ServerUnavailable(missing_binary_message())
            _server = LocalServer(binary)
        return _server.url
