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
- A node whose raylet does not register with the GCS within Ray's fixed
  30 s fails to start (seen on a 2-core host running a test suite beside
  it); its processes are stopped and the node is started again, up to
  ``START_TRIES`` times.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Generator, Mapping
from contextlib import contextmanager
from functools import partial
from typing import Any

import ray
from ray.cluster_utils import Cluster

LOOPBACK = "127.0.0.1"
START_TRIES = 3
_STARTUP_TIMEOUT = "timed out during startup"  # Ray's message for a node that did not register in time


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
) -> Generator[Cluster]:
    """``nodes`` Ray nodes on 127.0.0.1, this process connected as the driver; all stopped after.

    Node ``i`` has the custom resources ``node<i>: 1`` (so work can be pinned to
    it) and ``resources`` (for example ``{"webserv": 1}``).
    """
    keep_to_loopback()
    extra = dict(resources or {})
    cluster = Cluster()
    try:
        for i in range(nodes):
            more = {"include_dashboard": False} if i == 0 else {}
            # A partial: each attempt calls node_args again, for fresh ports.
            _add_node(
                cluster, partial(node_args, num_cpus, {f"node{i}": 1, **extra}, object_store_memory, **more)
            )
        ray.init(address=cluster.address, logging_level="warning")  # ty: ignore  # ray takes level names
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()


def _add_node(cluster: Cluster, args: Callable[[], dict[str, Any]]) -> None:
    """``cluster.add_node(**args())``, started again (with fresh ports) when Ray gives up waiting for it."""
    for attempt in range(START_TRIES):
        try:
            cluster.add_node(**args())
            return
        except Exception as e:  # noqa: BLE001 (Ray raises a bare Exception here)
            if _STARTUP_TIMEOUT not in str(e) or attempt == START_TRIES - 1:
                raise
            _stop_failed_node(e)


def _stop_failed_node(e: BaseException) -> None:
    """Stops the processes of the node whose start raised e.

    Ray does not hand the half-started node back; it is the ``self`` of the
    ``Node.__init__`` frame in the traceback. Left running, its processes
    would hold their ports and load the host until this process exits.
    """
    tb = e.__traceback__
    while tb is not None:
        node = tb.tb_frame.f_locals.get("self")
        if isinstance(node, ray._private.node.Node):  # ty: ignore  # imported by ray.init
            node.kill_all_processes(check_alive=False, allow_graceful=False, wait=True)
            return
        tb = tb.tb_next


__all__ = ["LOOPBACK", "keep_to_loopback", "loopback_cluster", "node_args"]
