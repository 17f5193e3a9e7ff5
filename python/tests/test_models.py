"""The OpenAI-compatible client against a stand-in for the user's model (a recorded script)."""

from __future__ import annotations

import asyncio

import pytest
from standin_model import StandInModel

from webserv.models import ChatModel, ModelError


def test_chat_returns_the_reply_and_counts_tokens() -> None:
    m = StandInModel([{"match": "hello", "reply": "hi there"}])
    try:
        model = ChatModel(m.url, "stand-in", backoff_s=0.01)
        reply = asyncio.run(model.chat([{"role": "user", "content": "hello"}]))
        assert reply.text == "hi there" and reply.attempts == 1
        assert reply.usage["completion_tokens"] == 2
        assert m.requests[0]["model"] == "stand-in"
        assert model.stats.calls == 1 and model.stats.completion_tokens == 2
    finally:
        m.stop()


def test_429_and_5xx_are_retried_then_answered() -> None:
    m = StandInModel([{"status": 429}, {"status": 503}, {"reply": "ok"}])
    try:
        model = ChatModel(m.url, "stand-in", retries=2, backoff_s=0.01)
        reply = asyncio.run(model.chat([{"role": "user", "content": "x"}]))
        assert reply.text == "ok" and reply.attempts == 3 and model.stats.retries == 2
    finally:
        m.stop()


def test_retries_are_bounded_and_the_error_says_what_failed() -> None:
    m = StandInModel([{"status": 503}] * 5)
    try:
        model = ChatModel(m.url, "stand-in", retries=1, backoff_s=0.01)
        with pytest.raises(ModelError, match=r"answered 503.*after 2 attempts") as e:
            asyncio.run(model.chat([{"role": "user", "content": "x"}]))
        assert e.value.retryable and len(m.requests) == 2 and model.stats.failures == 1
    finally:
        m.stop()


def test_a_400_is_not_retried_and_404_names_the_url_to_check() -> None:
    m = StandInModel([{"status": 404}, {"status": 400}])
    try:
        model = ChatModel(m.url, "stand-in", retries=3, backoff_s=0.01)
        with pytest.raises(ModelError, match="check the URL"):
            asyncio.run(model.chat([{"role": "user", "content": "x"}]))
        with pytest.raises(ModelError, match="answered 400"):
            asyncio.run(model.chat([{"role": "user", "content": "x"}]))
        assert len(m.requests) == 2
    finally:
        m.stop()


def test_an_endpoint_that_is_down_is_reported_as_unreachable() -> None:
    m = StandInModel([])
    url = m.url
    m.stop()
    model = ChatModel(url, "stand-in", retries=1, backoff_s=0.01, timeout_s=2)
    with pytest.raises(ModelError, match="unreachable.*model server running"):
        asyncio.run(model.chat([{"role": "user", "content": "x"}]))


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="API root"):
        ChatModel("127.0.0.1:8000", "m")
    with pytest.raises(ValueError, match="model name"):
        ChatModel("http://127.0.0.1:1/v1", "")
