"""Errors raised by the webserv client."""

from __future__ import annotations


class WebServError(Exception):
    """An error reply from the server: what failed, and whether retrying can help."""

    def __init__(self, code: str, message: str, retryable: bool = False, retry_after: float = 0.0):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.retryable = retryable
        self.retry_after = retry_after


class ServerUnavailable(WebServError):
    """No server could be reached or started."""

    def __init__(self, message: str):
        super().__init__("unavailable", message, retryable=False)
