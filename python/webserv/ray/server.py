"""``WebServServer``: a Ray actor that owns one ``webserv serve`` process on its node.

The actor starts the server bound to its node's address with the fleet's
token, watches it, and starts it again (on a new port) when it dies. It
polls the server's ``stats`` once a ``poll`` interval, so when the process
dies it knows which environments went with it and records a ``ServerLoss``.
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import msgpack
from websockets.sync.client import ClientConnection, connect

from ..launcher import LocalServer, find_binary, missing_binary_message


@dataclass(frozen=True)
class ServerInfo:
    """One server of a fleet, as last seen."""

    #: The fleet's name for the server's place: ``<node id>/<index on the node>``.
    slot: str
    node_id: str
    #: ``ws://HOST:PORT/v1/ws``; changes when the server is started again.
    url: str
    pid: int
    alive: bool
    #: How many times this slot's server was started again after dying.
    restarts: int
    envs_live: int = 0
    max_envs: int = 0
    #: The environments the server held at the last poll.
    envs: tuple[str, ...] = ()
    #: Unique per start of the actor (a new one after Ray restarts the actor).
    incarnation: str = ""

    @property
    def load(self) -> float:
        """``envs_live / max_envs`` (1.0 when the server is full or not known yet)."""
        return self.envs_live / self.max_envs if self.max_envs else 1.0


@dataclass(frozen=True)
class ServerLoss:
    """A server that died, with the environments it held (they are gone: their calls raise ``HostLost``)."""

    slot: str
    node_id: str
    url: str
    at: float
    reason: str
    envs: tuple[str, ...] = field(default_factory=tuple)


class WebServServer:
    """Owns one ``webserv serve`` on this node (use as ``ray.remote(WebServServer)``; ``Fleet`` does).

    Args:
        slot: the fleet's name for this server's place.
        token: the token clients send in hello.
        host: the address to bind (default: this node's address as Ray knows it).
        serve_args: more ``webserv serve`` flags (``--max-envs``, ``--sites``, ...).
        binary: the server binary (default: found on the node as the package finds it:
            ``$WEBSERV_BIN``, the PATH, the checkout the package was built from).
        poll: seconds between looks at the process and its ``stats``.
    """

    def __init__(
        self,
        slot: str,
        token: str,
        *,
        host: str | None = None,
        serve_args: list[str] | None = None,
        binary: str | None = None,
        poll: float = 1.0,
    ):
        import ray

        self.slot = slot
        self.node_id = ray.get_runtime_context().get_node_id()
        self.host = host or ray.util.get_node_ip_address()
        self.token = token
        self.serve_args = list(serve_args or [])
        self.binary = binary or find_binary()
        if self.binary is None:
            raise RuntimeError(f"node {self.node_id}: {missing_binary_message()}")
        self.poll = poll
        self.incarnation = uuid.uuid4().hex
        self.restarts = 0
        self.losses: list[ServerLoss] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._server: LocalServer | None = None
        self._stats: dict[str, Any] = {}
        self._ws: ClientConnection | None = None
        self._started = threading.Event()
        self._error: BaseException | None = None
        # One thread starts (and starts again) the process and watches it: the server is
        # tied to that thread's life (die_with_parent), which is the actor's.
        self._thread = threading.Thread(target=self._watch, name=f"webserv-{slot}", daemon=True)
        self._thread.start()
        self._started.wait()
        if self._error is not None:
            raise RuntimeError(f"node {self.node_id}: webserv serve did not start: {self._error}")

    def info(self) -> ServerInfo:
        """The server as last seen (its URL, process, load and environments)."""
        with self._lock:
            srv, st = self._server, self._stats
            alive = srv is not None and srv.proc.poll() is None
            return ServerInfo(
                slot=self.slot,
                node_id=self.node_id,
                url=srv.url if srv else "",
                pid=srv.proc.pid if srv else 0,
                alive=alive,
                restarts=self.restarts,
                envs_live=int(st.get("envs_live", 0)),
                max_envs=int(st.get("max_envs", 0)),
                envs=tuple(st.get("envs") or ()),
                incarnation=self.incarnation,
            )

    def lost(self) -> list[ServerLoss]:
        """Every death of this slot's server so far."""
        with self._lock:
            return list(self.losses)

    def stop(self) -> None:
        """Stops the server and does not start it again."""
        self._stop.set()
        self._thread.join(timeout=30)

    def _start(self) -> LocalServer:
        args = ["--token", self.token, *self.serve_args]
        return LocalServer(self.binary or "", args, listen=f"{self.host}:0", die_with_parent=True)

    def _watch(self) -> None:
        try:
            self._server = self._start()
            self._poll_stats()
        except BaseException as e:  # reported by __init__
            self._error = e
        finally:
            self._started.set()
        if self._error is not None:
            return
        backoff = 1.0
        while not self._stop.wait(self.poll):
            srv = self._server
            assert srv is not None
            code = srv.proc.poll()
            if code is None:
                self._poll_stats()
                backoff = 1.0
                continue
            with self._lock:
                self.losses.append(
                    ServerLoss(
                        slot=self.slot,
                        node_id=self.node_id,
                        url=srv.url,
                        at=time.time(),
                        reason=f"webserv serve exited with status {code}",
                        envs=tuple(self._stats.get("envs") or ()),
                    )
                )
                self._stats = {}
            self._close_ws()
            while not self._stop.is_set():
                try:
                    started = self._start()
                except Exception:
                    self._stop.wait(backoff)
                    backoff = min(backoff * 2, 30.0)
                    continue
                with self._lock:
                    self._server = started
                    self.restarts += 1
                break
        self._close_ws()
        if self._server is not None:
            self._server.stop()

    def _poll_stats(self) -> None:
        srv = self._server
        if srv is None:
            return
        try:
            if self._ws is None:
                self._ws = connect(srv.url, open_timeout=10, compression=None)
                self._call("hello", {"version": 1, "token": self.token})
            st = self._call("stats", {})
        except Exception:
            self._close_ws()
            return
        with self._lock:
            self._stats = st

    def _call(self, op: str, args: dict[str, Any]) -> dict[str, Any]:
        assert self._ws is not None
        self._ws.send(msgpack.packb({"id": 1, "op": op, "args": args}, use_bin_type=True))
        reply = msgpack.unpackb(self._ws.recv(timeout=10), raw=False)
        if not reply.get("ok"):
            raise RuntimeError(f"{op}: {reply.get('error')}")
        return reply.get("result") or {}

    def _close_ws(self) -> None:
        ws, self._ws = self._ws, None
        if ws is not None:
            try:
                ws.close()
            except Exception:
                pass


__all__ = ["ServerInfo", "ServerLoss", "WebServServer"]
