"""Several Ray nodes on this machine, all on 127.0.0.1: for tests, benchmarks and trying a fleet.

Ray's own ``ray.cluster_utils.Cluster`` runs several nodes in one machine;
two things keep it on loopback and quick to start on a small, busy host:

- Ray turns ``127.0.0.1`` into the machine's own address when a driver
  connects (``ray.init(address=...)``), unless clusters are off for this
  platform (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``); set here for this
  process and for every process it starts.
- Each node's raylet waits a fixed time for its metrics agent to write its
  port to a file, and gives up on a loaded machine; given the agents' ports
  up front, it does not wait.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import ray
from ray.cluster_utils import Cluster

LOOPBACK = "127.0.0.1"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


def node_args(
    num_cpus: float, resources: Mapping[str, float], object_store_memory: int, **more: Any
) -> dict[str, Any]:
    """``Cluster.add_node`` arguments of one loopback node."""
    return {
        "node_ip_address": LOOPBACK,
        "num_cpus": num_cpus,
        "resources": dict(resources),
        "object_store_memory": object_store_memory,
        "metrics_agent_port": _free_port(),
        "metrics_export_port": _free_port(),
        "runtime_env_agent_port": _free_port(),
        "dashboard_agent_listen_port": _free_port(),
        **more,
    }


def keep_to_loopback() -> None:
    """Makes Ray in this process (and the processes it starts) use 127.0.0.1 as this machine's address."""
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    from ray._private import ray_constants

    ray_constants.ENABLE_RAY_CLUSTER = False


@contextmanager
def loopback_cluster(
    nodes: int = 3,
    *,
    num_cpus: float = 2,
    resources: Mapping[str, float] | None = None,
    object_store_memory: int = 80 << 20,
) -> Iterator[Cluster]:
    """``nodes`` Ray nodes on 127.0.0.1, this process connected as the driver; all stopped after.

    Node ``i`` has the custom resources ``node<i>: 1`` (so work can be pinned to
    it) and ``resources`` (for example ``{"webserv": 1}``).
    """
    keep_to_loopback()
    extra = dict(resources or {})
    cluster = Cluster(
        initialize_head=True,
        head_node_args=node_args(
            num_cpus, {"node0": 1, **extra}, object_store_memory, include_dashboard=False
        ),
    )
    try:
        for i in range(1, nodes):
            cluster.add_node(**node_args(num_cpus, {f"node{i}": 1, **extra}, object_store_memory))
        ray.init(address=cluster.address, logging_level="warning")
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()


__all__ = ["LOOPBACK", "keep_to_loopback", "loopback_cluster", "node_args"]
