"""A loopback fake of the Gemini API (generativelanguage v1beta), for driving the real
`gemini` CLI offline.

The model API is the one boundary the tests cannot reach, so this stands in for it and
speaks the wire format the CLI's SDK (@google/genai, bundled in @google/gemini-cli 0.61.0)
really parses: `POST /v1beta/models/MODEL:streamGenerateContent?alt=sse` answers with SSE,
one `data: GenerateContentResponse` per chunk, each chunk ended by a blank line (`\\r\\n`
line ends, as Google's servers send them); `POST .../MODEL:generateContent` answers one
JSON GenerateContentResponse, and `POST .../MODEL:countTokens` a `totalTokens`. A response
is `candidates[0].content` (role `model`, `parts` of `text` or `functionCall` with `name`
and `args`), the candidate's `finishReason` (`STOP`) on the last chunk, `usageMetadata`
(`promptTokenCount`, `candidatesTokenCount`, `totalTokenCount`, and
`cachedContentTokenCount` / `thoughtsTokenCount` when non-zero), `modelVersion` and
`responseId`. The key arrives in the `x-goog-api-key` header; a missing or wrong one gets
the API's own 400 `API_KEY_INVALID` error.

Replies come from a script, picked by how many model turns the request's `contents`
already hold (the server and the script are `fake_api`'s). The CLI offers MCP tools to the
model as `mcp_SERVER_TOOL` (`mcp_memory_recall`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from .fake_api import ApiHandler, FakeAPI, Logged, Step

Part = dict[str, Any]

# A model the CLI knows (its own default flash model), so it configures the request as
# it does on the real service.
MODEL = "gemini-2.5-flash"
# Where the gemini adapter's builtin-stage note says the memory file is.
MEMORY_PATH = re.compile(r"memory file across the tasks you do in this repository: (\S+/GEMINI\.md)")


def text(value: str) -> Part:
    return {"text": value}


def function_call(name: str, args: dict[str, Any]) -> Part:
    return {"functionCall": {"name": name, "args": args}}


def model_turns(body: Any) -> int:
    if not isinstance(body, dict):
        return 0
    return sum(1 for c in body.get("contents", []) if isinstance(c, dict) and c.get("role") == "model")


def function_responses(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The `functionResponse` parts the request sends back (the tools' results), in order."""
    return [p["functionResponse"] for c in body.get("contents", []) if isinstance(c, dict)
            for p in c.get("parts", []) if isinstance(p, dict) and isinstance(p.get("functionResponse"), dict)]


def declared_tools(body: dict[str, Any]) -> list[str]:
    """The function names the request offers the model."""
    return [d.get("name") for t in body.get("tools", []) if isinstance(t, dict)
            for d in t.get("functionDeclarations", []) if isinstance(d, dict)]


def write_gemini_md(body: dict[str, Any], line: str) -> list[Part]:
    """A model's first move in the builtin stage: write the memory file the task prompt
    names, `line` after what the file already held (the CLI loaded it as context)."""
    found = MEMORY_PATH.search(json.dumps(body))
    assert found, "the builtin stage's prompt names the memory file"
    path = found.group(1)
    held = re.search(r"--- Context from: [^\n]*GEMINI\.md ---\n(.*?)\n--- End of Context from", _system_text(body), re.S)
    before = held.group(1).strip() + "\n" if held else ""
    return [function_call("write_file", {"file_path": path, "content": before + line})]


def _system_text(body: dict[str, Any]) -> str:
    system = body.get("systemInstruction")
    parts = system.get("parts", []) if isinstance(system, dict) else []
    return "\n".join(p.get("text", "") for p in parts if isinstance(p, dict))


@dataclass
class FakeGemini(FakeAPI):
    """`script[n]` answers a request whose contents hold n model turns (last one repeats)."""

    prompt_tokens: int = 100
    cached_tokens: int = 10
    output_tokens: int = 20
    thoughts_tokens: int = 0
    expected_key: str | None = None  # None: any non-empty key is accepted

    credential_header = "x-goog-api-key"

    def is_model_call(self, method: str, route: str) -> bool:
        return method == "POST" and route.startswith("/v1beta/models/") and (
            route.endswith(":streamGenerateContent") or route.endswith(":generateContent"))

    def turns_so_far(self, body: Any) -> int:
        return model_turns(body)

    def default_step(self) -> Step:
        return [text("ok")]

    def error(self, handler: ApiHandler, status: int, message: str) -> None:
        names = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 404: "NOT_FOUND"}
        handler.send_json(status, {"error": {"code": status, "message": message, "status": names.get(status, "INTERNAL")}})

    def authorised(self, handler: ApiHandler) -> bool:
        key = handler.headers.get("x-goog-api-key") or ""
        return super().authorised(handler) and bool(key) and self.expected_key in (None, key)

    def unauthorized(self, handler: ApiHandler) -> None:
        # What generativelanguage.googleapis.com answers a bad key: a 400, not a 401.
        handler.send_json(400, {"error": {
            "code": 400, "message": "API key not valid. Please pass a valid API key.", "status": "INVALID_ARGUMENT",
            "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID",
                         "domain": "googleapis.com", "metadata": {"service": "generativelanguage.googleapis.com"}}],
        }})

    def other(self, handler: ApiHandler, logged: Logged) -> None:
        if logged.method == "POST" and logged.route.endswith(":countTokens"):
            handler.send_json(200, {"totalTokens": self.prompt_tokens})
        else:
            super().other(handler, logged)

    def _usage(self) -> dict[str, Any]:
        usage: dict[str, Any] = {
            "promptTokenCount": self.prompt_tokens,
            "candidatesTokenCount": self.output_tokens,
            "totalTokenCount": self.prompt_tokens + self.output_tokens + self.thoughts_tokens,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": self.prompt_tokens}],
        }
        if self.cached_tokens:
            usage["cachedContentTokenCount"] = self.cached_tokens
        if self.thoughts_tokens:
            usage["thoughtsTokenCount"] = self.thoughts_tokens
        return usage

    def answer(self, handler: ApiHandler, logged: Logged) -> None:
        body, turn = logged.body, logged.turn
        parts = list(self.step_for(body))
        model = logged.route.split("/models/", 1)[1].rsplit(":", 1)[0]
        envelope = {"modelVersion": model, "responseId": f"fake-response-{turn}"}

        def chunk(chunk_parts: list[Part], last: bool) -> dict[str, Any]:
            candidate: dict[str, Any] = {"content": {"parts": chunk_parts, "role": "model"}, "index": 0}
            out: dict[str, Any] = {"candidates": [candidate]}
            if last:
                candidate["finishReason"] = "STOP"
            out["usageMetadata"] = self._usage() if last else {
                "promptTokenCount": self.prompt_tokens, "totalTokenCount": self.prompt_tokens}
            return {**out, **envelope}

        if logged.route.endswith(":generateContent"):
            handler.send_json(200, chunk(parts, True))
            return
        handler.start_events()
        # Text streams in pieces, a function call arrives whole (as the API sends them).
        pieces: list[list[Part]] = []
        for part in parts:
            if "text" in part and len(part["text"]) > 1:
                half = len(part["text"]) // 2
                pieces += [[text(part["text"][:half])], [text(part["text"][half:])]]
            else:
                pieces.append([part])
        for n, piece in enumerate(pieces):
            handler.wfile.write(f"data: {json.dumps(chunk(piece, n == len(pieces) - 1))}\r\n\r\n".encode())
            handler.wfile.flush()
