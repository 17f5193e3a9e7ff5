"""A stand-in for the user's model: an OpenAI-compatible chat endpoint on 127.0.0.1 that answers
from a recorded script. It is not a model; every reply says it stands in for one.

The script is a list of entries, each consumed by the first request it matches:
``{"match": "substring of the last user message" (optional), "reply": "text"}`` or
``{"match": ..., "tool_calls": [{"name": "click", "arguments": {"bid": "x"}}]}`` (a reply that is
OpenAI tool calls, its content null) or ``{"status": 503}`` (an error answer, to exercise retries) or
``{"die": true}``
(the server stops: an endpoint that dies mid-run); an entry with ``"keep": true`` answers every
request it matches and is never used up; an entry with ``"answer": f`` replies ``f(text)``, ``text``
being the last user message's text (a script that reads its prompt: what the page shows), and one
with ``"answer_body": f`` replies ``f(body)``, the whole request (its system prompt too). A
message whose content is a list of parts (text and ``image_url``, as multimodal requests are) is
matched on its text parts. ``requests`` records
every request body. ``port``: where to listen on 127.0.0.1 (0, the default, picks a free port).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

NOTE = "[stand-in for the user's model: a recorded script, not a model] "


class StandInModel:
    def __init__(self, script: list[dict[str, Any]], port: int = 0):
        self.script = list(script)
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
                with standin.lock:
                    standin.requests.append(body)
                    entry = standin._take(body)
                if entry is None:
                    self._send(
                        500, {"error": {"message": NOTE + "the recorded script has no reply left for this"}}
                    )
                elif entry.get("die"):
                    self._send(503, {"error": {"message": NOTE + "dying"}})
                    threading.Thread(target=standin.stop, daemon=True).start()
                elif "status" in entry:
                    self._send(entry["status"], {"error": {"message": NOTE + "recorded error"}})
                else:
                    text = entry.get("reply", "")
                    if "answer" in entry:
                        text = entry["answer"](text_of(last_user(body)))
                    if "answer_body" in entry:
                        text = entry["answer_body"](body)
                    message: dict[str, Any] = {"role": "assistant", "content": text}
                    if "tool_calls" in entry:
                        message = {
                            "role": "assistant",
                            "content": None,
                            "tool_calls": [
                                {
                                    "id": f"call-{i}",
                                    "type": "function",
                                    "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])},
                                }
                                for i, c in enumerate(entry["tool_calls"])
                            ],
                        }
                    self._send(
                        200,
                        {
                            "id": "standin",
                            "object": "chat.completion",
                            "model": body.get("model"),
                            "system_fingerprint": NOTE.strip(),
                            "choices": [
                                {
                                    "index": 0,
                                    "message": message,
                                    "finish_reason": "tool_calls" if "tool_calls" in entry else "stop",
                                }
                            ],
                            "usage": {
                                "prompt_tokens": len(json.dumps(body["messages"])) // 4,
                                "completion_tokens": len(text) // 4,
                            },
                        },
                    )

            def _send(self, status: int, obj: dict[str, Any]) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def _take(self, body: dict[str, Any]) -> dict[str, Any] | None:
        last = text_of(last_user(body))
        for i, e in enumerate(self.script):
            if e.get("match", "") in last:
                return e if e.get("keep") else self.script.pop(i)
        return None

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def last_user(body: dict[str, Any]) -> str | list[dict[str, Any]]:
    """The content of a request's last user message ("" if none)."""
    return next((m["content"] for m in reversed(body["messages"]) if m["role"] == "user"), "")


def text_of(content: str | list[dict[str, Any]] | None) -> str:
    """A message's text: its content, or the text parts of a content list (OpenAI's multimodal
    form, ``[{"type": "text", ...}, {"type": "image_url", ...}]``) joined by newlines."""
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if p.get("type") == "text")
    return content or ""


def images_of(content: str | list[dict[str, Any]] | None) -> list[str]:
    """The image URLs of a message's content list (data URLs, as the agent sends them)."""
    if not isinstance(content, list):
        return []
    return [str(p["image_url"]["url"]) for p in content if p.get("type") == "image_url"]
