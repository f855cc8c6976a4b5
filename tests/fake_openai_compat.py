"""A loopback fake of an OpenAI-compatible API, as a memory server's own model (mem0,
cognee, graphiti call one): `POST /v1/chat/completions`, whole or streamed, and
`POST /v1/embeddings`, answered deterministically with `usage`.

- chat: one assistant message that echoes the last user message's first words
  (`ok: ...`). In JSON mode (`response_format` `json_object`) the answer is the JSON the
  prompt asks for, as a model would give it: mem0's extraction prompt (its `## New
  Messages` section, answered `{"memory": [{"id", "text"}]}`) gets one memory per line of
  the new messages (their `user: ` prefix off, at most `MEMORIES`); any other, `{}`. A
  `json_schema` response format (cognee's) gets an instance of the schema
  (`tests.fake_structured`). Usage from a word count: prompt tokens = words of every message + 3 per
  message, completion tokens = the answer's words. Streamed (`"stream": true`): server-sent
  events of `chat.completion.chunk`s (role, then the words, then `finish_reason`), a last
  chunk with empty `choices` and the `usage` when `stream_options.include_usage` asks for
  it (as the API does), then `data: [DONE]`.
- embeddings: one vector per input (a hashed bag of its alphanumeric words), of the model's own length (`text-embedding-3-small`
  1536, as the API gives; `dimensions` when the request names it; `DIMENSIONS` for a model
  the fake does not know), a hashed bag of its words,
  L2-normalised (the same text, the same vector; texts sharing words are near); usage:
  prompt tokens = words of the inputs.

A request without a bearer key gets the API's 401 `invalid_api_key`. `requests` logs
each request (route, model, the key's last 4 characters only) for the tests' asserts.
`tests/memory/test_model_gateway.py` checks this wire format with the official `openai`
client.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.fake_structured import structured_answer

__all__ = ["DIMENSIONS", "FakeOpenAICompat", "chat_usage", "dimensions_of", "embed", "fake_openai_compat"]

DIMENSIONS = 64
MODEL_DIMENSIONS = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072, "text-embedding-ada-002": 1536}
CREATED = 1_700_000_000
MEMORIES = 8
_NEW_MESSAGES = re.compile(r"^## New Messages\n(.*?)(?=^## |\Z)", re.S | re.M)


def dimensions_of(model: str | None) -> int:
    return MODEL_DIMENSIONS.get(model or "", DIMENSIONS)


def json_answer(messages: list[Any]) -> str:
    """JSON mode's answer: what the prompt's schema asks for (see the module's text)."""
    prompt = "\n".join(_content(m) for m in messages if isinstance(m, dict) and m.get("role") == "user")
    found = _NEW_MESSAGES.search(prompt)
    if found is None:
        return "{}"
    lines = [line.strip().removeprefix("user: ").strip() for line in found.group(1).splitlines()]
    texts = [line for line in lines if line][:MEMORIES]
    return json.dumps({"memory": [{"id": str(i), "text": text} for i, text in enumerate(texts)]})


def _words(text: str) -> list[str]:
    return text.lower().split()


def embed(text: str, dimensions: int = DIMENSIONS) -> list[float]:
    """A hashed bag of words, L2-normalised: deterministic, and near for texts that share words."""
    vector = [0.0] * dimensions
    for word in re.findall(r"[a-z0-9]+", text.lower()):  # `spans/interval.py` shares `interval` with a query
        digest = hashlib.sha256(word.encode()).digest()
        vector[int.from_bytes(digest[:4], "big") % dimensions] += 1.0 if digest[4] % 2 else -1.0
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [round(v / norm, 6) for v in vector]


def _content(message: Any) -> str:
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, list):  # content parts
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


def chat_usage(messages: list[Any], answer: str) -> dict[str, int]:
    prompt = sum(len(_words(_content(m))) + 3 for m in messages)
    completion = len(_words(answer))
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


@dataclass
class Seen:
    route: str
    model: str | None
    key_tail: str | None  # the bearer key's last 4 characters: that it arrived, not what it is
    stream: bool = False


@dataclass
class FakeOpenAICompat:
    requests: list[Seen] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def answer_chat(self, body: dict[str, Any]) -> tuple[str, dict[str, int]]:
        messages = body.get("messages") if isinstance(body.get("messages"), list) else []
        last = next((_content(m) for m in reversed(messages) if isinstance(m, dict) and m.get("role") == "user"), "")
        response_format = body.get("response_format")
        json_mode = isinstance(response_format, dict) and response_format.get("type") == "json_object"
        structured = structured_answer(body)  # a json_schema response format: an instance of the schema
        answer = structured if structured is not None else json_answer(messages) if json_mode else \
            "ok: " + " ".join(last.split()[:8])
        return answer, chat_usage(messages, answer)

    def handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(_Handler):
            pass

        Handler.fake = fake
        return Handler


class _Handler(BaseHTTPRequestHandler):
    fake: FakeOpenAICompat
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def _send(self, status: int, doc: Any) -> None:
        data = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str, code: str | None = None) -> None:
        self._send(status, {"error": {"message": message, "type": "invalid_request_error", "param": None,
                                      "code": code}})

    def do_POST(self) -> None:  # noqa: N802
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = None
        route = self.path.split("?", 1)[0]
        key = (self.headers.get("Authorization") or "").removeprefix("Bearer ").strip()
        model = body.get("model") if isinstance(body, dict) else None
        with self.fake._lock:
            self.fake.requests.append(Seen(route, model, key[-4:] if key else None,
                                           bool(isinstance(body, dict) and body.get("stream"))))
        if not key:
            self._error(401, "Incorrect API key provided.", "invalid_api_key")
        elif not isinstance(body, dict):
            self._error(400, "We could not parse the JSON body of your request.")
        elif route == "/v1/chat/completions":
            self._chat(body)
        elif route == "/v1/embeddings":
            self._embeddings(body)
        else:
            self._error(404, f"Invalid URL (POST {route})")

    def _chat(self, body: dict[str, Any]) -> None:
        answer, usage = self.fake.answer_chat(body)
        model = str(body.get("model") or "gpt-fake")
        if not body.get("stream"):
            self._send(200, {
                "id": "chatcmpl-fake", "object": "chat.completion", "created": CREATED, "model": model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": answer, "refusal": None},
                             "logprobs": None, "finish_reason": "stop"}],
                "usage": usage, "system_fingerprint": "fp_fake"})
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        for chunk in _chunks(model, answer, usage, bool((body.get("stream_options") or {}).get("include_usage"))):
            self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
            self.wfile.flush()
        self.wfile.write(b"data: [DONE]\n\n")

    def _embeddings(self, body: dict[str, Any]) -> None:
        given = body.get("input")
        inputs = [given] if isinstance(given, str) else given if isinstance(given, list) else None
        if not inputs or not all(isinstance(t, str) for t in inputs):
            self._error(400, "'input' must be a string or a list of strings")
            return
        tokens = sum(len(_words(t)) for t in inputs)
        dims = body.get("dimensions") if isinstance(body.get("dimensions"), int) else dimensions_of(body.get("model"))
        self._send(200, {"object": "list", "model": str(body.get("model") or "embedding-fake"),
                         "data": [{"object": "embedding", "index": i, "embedding": embed(t, dims)}
                                  for i, t in enumerate(inputs)],
                         "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})


def _chunks(model: str, answer: str, usage: dict[str, int], include_usage: bool) -> Iterator[dict[str, Any]]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": CREATED,
                               "model": model, "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                                            "finish_reason": finish}]}
        if include_usage:
            out["usage"] = None
        return out

    yield chunk({"role": "assistant", "content": ""})
    for i, word in enumerate(answer.split()):
        yield chunk({"content": word if i == 0 else " " + word})
    yield chunk({}, "stop")
    if include_usage:
        yield {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": CREATED, "model": model,
               "choices": [], "usage": usage}


@contextmanager
def fake_openai_compat() -> Iterator[tuple[FakeOpenAICompat, str]]:
    """The fake on a free loopback port: (the fake, its base URL ending in `/v1`)."""
    fake = FakeOpenAICompat()
    server = ThreadingHTTPServer(("127.0.0.1", 0), fake.handler())
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake, f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
