"""Exceptions, in the style of ``gymnasium.error``: one class per failure, grouped by whose fault it is.

Every error reply of the server carries a code and a fault (docs/protocol.md,
"Errors"); the client raises the class of that code, so callers test
``isinstance`` instead of comparing ``e.code`` strings::

    WebServError
    ├── ClientError            the request is wrong: fix the caller        (fault "client")
    │   ├── BadFrame, FrameTooLarge, Unauthorized, UnknownOp
    │   ├── BadArgs, UnknownEnv, NotSupported
    │   ├── NotConfigured      a site, image or grader this server is not set up for
    │   └── NotReset           step or observe before the first reset (raised by the client)
    ├── AgentError             the episode's state refuses it: reset        (fault "agent")
    │   ├── EpisodeOver
    │   └── ResourceLimit      the pages the policy opened went past a limit (memory, tabs, page size)
    └── InfrastructureError    the browser, a site, a server or the network failed;
        │                      not the policy's doing: retry or report, never score it
        ├── CapacityError, RequestTimeout, BackendError, ShuttingDown, InternalError
        ├── BrowserCrashed     the browser process the pages were in died: reset (retryable)
        ├── SiteDown           the environment's site instance died: not graded, reset
        ├── ServerUnavailable  no server could be reached or started      (client side)
        ├── ConnectionLost     the connection closed before the reply came (client side)
        ├── HostLost           the server holding an environment is gone  (client side)
        └── EvaluationError    the grader failed, so the reward is unknown (adapters)

A trainer drops (or retries) a rollout that raised an ``InfrastructureError``;
anything else is the caller's or the policy's doing.
"""

from __future__ import annotations

from typing import Any, ClassVar

#: Whose failure an error is (the server's ``fault`` field).
CLIENT = "client"
AGENT = "agent"
INFRASTRUCTURE = "infrastructure"


class WebServError(Exception):
    """Base class of every webserv error: a code, a message, whose fault it is, and whether retrying can help.

    Attributes:
        code: the server's error code (``bad_args``, ``capacity``, ...) or the client's own
            (``unavailable``, ``connection_lost``, ``host_lost``, ``not_reset``, ``eval_error``).
        message: what went wrong and what to do, in words.
        fault: ``"client"``, ``"agent"`` or ``"infrastructure"`` (see the class hierarchy).
        retryable: whether the same request may succeed later.
        retry_after: seconds to wait first (``capacity``).
    """

    code: str = "unknown"
    fault: str = "unknown"
    default_retryable: ClassVar[bool] = False

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        retryable: bool | None = None,
        retry_after: float = 0.0,
        fault: str | None = None,
    ):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        if fault is not None:
            self.fault = fault
        self.retryable = self.default_retryable if retryable is None else retryable
        self.retry_after = retry_after

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"

    def __reduce__(self) -> tuple[Any, ...]:  # picklable (Ray, multiprocessing)
        return (_rebuild, (type(self), self.message, self.code, self.retryable, self.retry_after, self.fault))


def _rebuild(
    cls: type[WebServError], message: str, code: str, retryable: bool, retry_after: float, fault: str
) -> WebServError:
    return cls(message, code=code, retryable=retryable, retry_after=retry_after, fault=fault)


# -- the request is wrong ---------------------------------------------------------------------------


class ClientError(WebServError):
    """The request is wrong (arguments, op, environment id, token): fix the caller."""

    fault = CLIENT


class BadFrame(ClientError):
    code = "bad_frame"


class FrameTooLarge(ClientError):
    code = "frame_too_large"


class Unauthorized(ClientError):
    code = "unauthorized"


class UnknownOp(ClientError):
    code = "unknown_op"


class BadArgs(ClientError):
    """An argument is wrong: an unknown site or task, a malformed URL, a missing snapshot name."""

    code = "bad_args"


class UnknownEnv(ClientError):
    """The environment was closed, reclaimed after its idle TTL, or never made."""

    code = "unknown_env"


class NotSupported(ClientError):
    """The environment's backend cannot do this (snapshots of the ``open`` site)."""

    code = "not_supported"


class NotConfigured(ClientError):
    """A site, image, task set or grader this server is not set up for; retrying cannot help.

    A misconfigured run: the trainer adapters raise it instead of scoring or skipping rollouts.
    """

    code = "not_configured"


class NotReset(ClientError):
    """``step``, ``observe``, ``snapshot`` or ``fork`` before the first ``reset``."""

    code = "not_reset"


# -- the episode refuses it ------------------------------------------------------------------------------


class AgentError(WebServError):
    """The episode's own state refuses the request (the policy's doing): reset and go on."""

    fault = AGENT


class EpisodeOver(AgentError):
    """The episode terminated or was truncated; steps are refused until a reset."""

    code = "episode_over"


class ResourceLimit(AgentError):
    """The pages the policy opened went past an environment limit (memory, tabs, page size).

    The episode is over and the environment recycled; ``reset`` goes on. The message names
    the limit and how far past it the environment went.
    """

    code = "resource_limit"


# -- the environment failed ------------------------------------------------------------------------------


class InfrastructureError(WebServError):
    """The browser, a site, a server, the host or the network failed, or is full.

    Not the policy's doing: retry it or report it, never score it as a reward.
    """

    fault = INFRASTRUCTURE


class CapacityError(InfrastructureError):
    """The server has as many environments (or creations) as it allows; wait ``retry_after`` seconds."""

    code = "capacity"
    default_retryable = True


class RequestTimeout(InfrastructureError):
    """The request ran past its deadline (the server's, or the client's ``timeout``)."""

    code = "timeout"
    default_retryable = True


class BackendError(InfrastructureError):
    """The browser or a site failed (to start, reset, sign in, snapshot or fork)."""

    code = "backend"


class BrowserCrashed(InfrastructureError):
    """The browser process the environment's pages were in died (killed, out of memory, crashed).

    The episode's pages went with it, so the episode is not the policy's to score. The
    server starts a replacement process: ``reset`` the environment and go on (retryable
    after a reset; the same step cannot succeed before one).
    """

    code = "browser_crashed"
    default_retryable = True


class SiteDown(InfrastructureError):
    """The environment's site instance died (or its route failed) mid-episode.

    The episode is over and is never graded: drop the rollout, then ``reset``, which brings a
    fresh instance. The message names the instance and what its health check saw.
    """

    code = "site_down"
    default_retryable = True


class ShuttingDown(InfrastructureError):
    code = "shutting_down"


class InternalError(InfrastructureError):
    """A bug in the server: please report it."""

    code = "internal_error"


class ServerUnavailable(InfrastructureError):
    """No server could be reached or started."""

    code = "unavailable"


class ConnectionLost(InfrastructureError):
    """The connection closed before the reply came; the request may or may not have run."""

    code = "connection_lost"
    default_retryable = True


class HostLost(InfrastructureError):
    """The server holding an environment is gone or unreachable, and the environment with it."""

    code = "host_lost"


class EvaluationError(InfrastructureError):
    """The task's grader failed (a judge down, a site unreachable): the episode's reward is unknown.

    ``step`` does not raise it (it returns a NaN reward and ``info["eval_error"]``); the
    trainer adapters do, where a number would be taken for the policy's score.
    """

    code = "eval_error"


_BY_CODE: dict[str, type[WebServError]] = {
    c.code: c
    for c in (
        BadFrame,
        FrameTooLarge,
        Unauthorized,
        UnknownOp,
        BadArgs,
        UnknownEnv,
        NotSupported,
        NotConfigured,
        NotReset,
        EpisodeOver,
        ResourceLimit,
        CapacityError,
        RequestTimeout,
        BackendError,
        BrowserCrashed,
        SiteDown,
        ShuttingDown,
        InternalError,
        ServerUnavailable,
        ConnectionLost,
        HostLost,
        EvaluationError,
    )
}
_BY_FAULT: dict[str, type[WebServError]] = {
    CLIENT: ClientError,
    AGENT: AgentError,
    INFRASTRUCTURE: InfrastructureError,
}


def error_class(code: str, fault: str | None = None) -> type[WebServError]:
    """The exception class of an error code and fault.

    The server's ``fault`` decides: a code this client does not know, or one the
    server files under another fault than this client does, gets the class of
    its fault (``ClientError``, ``AgentError``, ``InfrastructureError``).
    """
    cls = _BY_CODE.get(code)
    if cls is not None and (not fault or cls.fault == fault):
        return cls
    return _BY_FAULT.get(fault or "", WebServError)


def from_reply(error: dict[str, Any]) -> WebServError:
    """The exception for a reply's ``error`` map."""
    code = str(error.get("code") or "unknown")
    fault = error.get("fault")
    fault = fault if isinstance(fault, str) and fault else None
    return error_class(code, fault)(
        str(error.get("message") or "no message"),
        code=code,
        retryable=bool(error.get("retryable")),
        retry_after=float(error.get("retry_after") or 0.0),
        fault=fault,
    )


__all__ = [
    "AGENT",
    "CLIENT",
    "INFRASTRUCTURE",
    "AgentError",
    "BackendError",
    "BadArgs",
    "BadFrame",
    "BrowserCrashed",
    "CapacityError",
    "ClientError",
    "ConnectionLost",
    "EpisodeOver",
    "EvaluationError",
    "FrameTooLarge",
    "HostLost",
    "InfrastructureError",
    "InternalError",
    "NotReset",
    "NotSupported",
    "RequestTimeout",
    "ServerUnavailable",
    "ShuttingDown",
    "Unauthorized",
    "UnknownEnv",
    "UnknownOp",
    "WebServError",
    "error_class",
    "from_reply",
]
