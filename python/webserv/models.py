"""The one client for OpenAI-compatible chat endpoints (vLLM, SGLang, llama.cpp, Ollama, hosted APIs).

Every model call of the package goes through ``ChatModel``::

    model = ChatModel("http://127.0.0.1:8000/v1", "Qwen2.5-7B-Instruct")
    reply = await model.chat([{"role": "user", "content": "Say hi"}])
    reply.text, reply.usage   # the first choice's content; token counts

A call has a timeout (``timeout_s``) and is retried a bounded number of
times (``retries``) with backoff on connection failures, timeouts, 429 and
5xx answers (honouring ``Retry-After``); other answers (400, 401, 404) are
not retried. When every attempt failed, ``ModelError`` says which endpoint,
what it answered and what to do. An endpoint failure is the endpoint's,
never a judgement of the model: callers (the exploration loop) must not
read it as a score.

Standard library only (``urllib`` in a worker thread), so the package keeps
its three dependencies.
"""

from __future__ import annotations

import asyncio
import json
import os
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any

Message = dict[str, str]


class ModelError(Exception):
    """A chat endpoint could not give an answer (after the retries, when retryable)."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
    ):
        super().__init__(message)
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after


@dataclass
class Reply:
    """One chat completion: the first choice's text and the usage the endpoint reported."""

    text: str
    usage: dict[str, int] = field(default_factory=dict)
    attempts: int = 1
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        """The first choice's tool calls (OpenAI's ``message.tool_calls``), [] when it made none."""
        try:
            calls = self.raw["choices"][0]["message"].get("tool_calls")
        except (KeyError, IndexError, TypeError, AttributeError):
            return []
        return [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []


@dataclass
class ModelStats:
    """Counters over every call of one ``ChatModel``."""

    calls: int = 0
    failures: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


class ChatModel:
    """An OpenAI-compatible ``/chat/completions`` endpoint and a model name on it.

    ``base_url`` is the API root (``http://host:port/v1``); ``api_key`` defaults to
    ``$OPENAI_API_KEY`` (sent as a bearer token when set).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        retries: int = 3,
        backoff_s: float = 0.5,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ):
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"model URL {base_url!r}: want the API root, like http://127.0.0.1:8000/v1")
        if not model:
            raise ValueError(
                "model name is empty: pass the name the endpoint serves (GET <url>/models lists them)"
            )
        if timeout_s <= 0 or retries < 0:
            raise ValueError(f"timeout_s must be > 0 and retries >= 0 (got {timeout_s}, {retries})")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self.timeout_s = timeout_s
        self.retries = retries
        self.backoff_s = backoff_s
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.stats = ModelStats()

    def __repr__(self) -> str:
        return f"ChatModel({self.base_url!r}, {self.model!r})"

    async def chat(self, messages: list[Message], **params: Any) -> Reply:
        """One completion of ``messages``; ``params`` (temperature, stop, ...) go into the request."""
        body: dict[str, Any] = {"model": self.model, "messages": messages}
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        body.update(params)
        self.stats.calls += 1
        last: ModelError | None = None
        for attempt in range(self.retries + 1):
            if attempt:
                self.stats.retries += 1
            try:
                raw = await asyncio.to_thread(self._post, body)
            except ModelError as e:
                last = e
                if not e.retryable or attempt == self.retries:
                    break
                await asyncio.sleep(e.retry_after or self.backoff_s * 2**attempt)
                continue
            reply = self._reply(raw)
            reply.attempts = attempt + 1
            return reply
        self.stats.failures += 1
        assert last is not None
        tries = f" after {self.retries + 1} attempts" if last.retryable else ""
        raise ModelError(f"{last}{tries}", status=last.status, retryable=last.retryable) from last

    def _reply(self, raw: dict[str, Any]) -> Reply:
        try:
            message = raw["choices"][0]["message"]
            # A reply that is a tool call may leave the content out.
            text = message.get("content") if message.get("tool_calls") else message["content"]
        except (KeyError, IndexError, TypeError, AttributeError) as e:
            raise ModelError(
                f"{self.base_url}/chat/completions answered without choices[0].message.content "
                f"({json.dumps(raw)[:200]}): is it an OpenAI-compatible chat endpoint?"
            ) from e
        usage = {k: int(v) for k, v in (raw.get("usage") or {}).items() if isinstance(v, int)}
        self.stats.prompt_tokens += usage.get("prompt_tokens", 0)
        self.stats.completion_tokens += usage.get("completion_tokens", 0)
        return Reply(text=text or "", usage=usage, raw=raw)

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        url = f"{self.base_url}/chat/completions"
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                data = resp.read()
        except urllib.error.HTTPError as e:
            detail = e.read()[:300].decode(errors="replace")
            retryable = e.code == 429 or e.code >= 500
            hint = {
                401: "check the API key ($OPENAI_API_KEY or api_key=)",
                404: f"check the URL (the API root, http://host:port/v1) and model {self.model!r}",
                429: "the endpoint is rate limiting: lower the concurrency",
            }.get(e.code, "see the endpoint's log" if retryable else "check the request parameters")
            ra = e.headers.get("Retry-After") if e.headers else None
            after = min(float(ra), 30.0) if ra and ra.replace(".", "", 1).isdigit() else None
            raise ModelError(
                f"{url} answered {e.code}: {detail}; {hint}",
                status=e.code,
                retryable=retryable,
                retry_after=after,
            ) from e
        except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise ModelError(
                f"{url} unreachable ({reason}): is the model server running and the URL right?",
                retryable=True,
            ) from e
        try:
            out = json.loads(data)
        except ValueError as e:
            raise ModelError(
                f"{url} answered non-JSON ({data[:120]!r}): is it an OpenAI-compatible endpoint?"
            ) from e
        if not isinstance(out, dict):
            raise ModelError(f"{url} answered {type(out).__name__}, not a JSON object")
        return out
