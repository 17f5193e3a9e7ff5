"""webserv.ray.local: a loopback node whose start Ray gives up on is stopped and started again."""

from __future__ import annotations

import os
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import ray
import ray._private.node
import ray._private.services

from webserv.ray.local import loopback_cluster


def test_a_node_ray_gave_up_on_is_stopped_and_started_again(monkeypatch: pytest.MonkeyPatch) -> None:
    # Ray waits a fixed 30 s for a raylet to register with the GCS. Make the
    # first wait run out at once: the node's first lookup fails and Ray's
    # clock jumps past 30 s; later lookups are real.
    skew = {"s": 0.0}
    clock = SimpleNamespace(**{k: getattr(time, k) for k in dir(time) if not k.startswith("_")})
    clock.monotonic = lambda: time.monotonic() + skew["s"]
    monkeypatch.setattr(ray._private.node, "time", clock)
    real_get_node = ray._private.services.get_node
    lookups: list[str] = []

    def get_node(gcs_address: str, node_id: Any) -> Any:
        lookups.append(gcs_address)
        if len(lookups) == 1:
            skew["s"] += 31
            raise RuntimeError("not registered yet")
        return real_get_node(gcs_address, node_id)

    monkeypatch.setattr(ray._private.services, "get_node", get_node)

    with loopback_cluster(1):
        assert len(lookups) >= 2 and lookups[0] != lookups[-1], lookups  # a second GCS, a second lookup
        assert [n["Alive"] for n in ray.nodes()] == [True]
        # The first attempt's processes were stopped: one GCS and one raylet run.
        names = children()
        assert names.count("gcs_server") == 1 and names.count("raylet") == 1, names


def children() -> list[str]:
    """The names of this process's live children (from /proc)."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue  # gone meanwhile
        name, rest = text[text.index("(") + 1 : text.rindex(")")], text[text.rindex(")") + 2 :].split()
        if rest[0] != "Z" and int(rest[1]) == os.getpid():
            out.append(name)
    return out
