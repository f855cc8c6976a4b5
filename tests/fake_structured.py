"""Structured-output answers for the loopback fake of the OpenAI-compatible API.

Some memory servers (cognee through litellm and instructor) ask their model for JSON that
fits a schema: `response_format: {"type": "json_schema", "json_schema": {"name", "schema",
"strict"}}`. A model answers with an instance of that schema; `structured_answer` builds
one, deterministically, from the schema alone (no knowledge of the caller's class names),
and returns None for a request that is not structured.

How an instance is built (`instance(schema, text)`):
- `$ref` (to `#/$defs/...` or `#/definitions/...`) is resolved; `allOf` is merged;
  `anyOf`/`oneOf` give `null` when a branch is `null` (the field is optional: minimal is
  none), else the first branch; `const`, then `enum`'s first value, win over the type.
- object: every required property (strict schemas require all); the rest are left out.
- array: one element (one node, one edge: a graph with something in it), or `minItems`;
  none when its description reads optional ("up to 3 ...", "at most", "if any", ...,
  whose items often carry rules a schema cannot state) or `maxItems` is 0.
- string, by the property's name: `*id` -> a slug of the subject (every id the same, so an
  edge's two ends name the one node there is); `name`/`title`/`label` -> the subject;
  `type`/`kind`/`category` -> `Concept`; `*relationship*`/`relation`/`predicate` ->
  `mentions`; anything else (description, summary, text, ...) -> the text. The text is
  the last user message (at most `TEXT_CHARS` characters), the subject its first line (at
  most `SUBJECT_WORDS` words), so what a memory stores carries the words it was given and
  a later search for them finds it. `format: date-time`/`date` get a fixed timestamp/date.
- integer/number: `minimum` (or `exclusiveMinimum` + 1), else 0 / 0.0; boolean: false.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["SUBJECT_WORDS", "TEXT_CHARS", "instance", "structured_answer"]

TEXT_CHARS = 2000
SUBJECT_WORDS = 12
TIMESTAMP = "2024-01-01T00:00:00Z"
Json = Any
_OPTIONAL = re.compile(r"\b(up to|at most|if any|optional|or empty|empty list)\b", re.I)


def _last_user_text(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages") or []):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):  # content parts
                return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
            return str(content or "")
    return ""


class _Builder:
    def __init__(self, root: dict[str, Any], text: str) -> None:
        self.root = root
        self.text = text.strip()[:TEXT_CHARS] or "memory"
        first = next((line for line in self.text.splitlines() if line.strip()), self.text)
        self.subject = " ".join(first.split()[:SUBJECT_WORDS])
        self.slug = re.sub(r"[^a-z0-9]+", "_", self.subject.lower()).strip("_")[:64] or "node"

    def resolve(self, schema: Json, depth: int = 0) -> dict[str, Any]:
        while isinstance(schema, dict) and "$ref" in schema and depth < 32:
            target: Json = self.root
            for step in str(schema["$ref"]).removeprefix("#/").split("/"):
                target = target.get(step, {}) if isinstance(target, dict) else {}
            rest = {k: v for k, v in schema.items() if k != "$ref"}
            schema, depth = {**target, **rest}, depth + 1
        if not isinstance(schema, dict):
            return {}
        if "allOf" in schema:
            merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
            for each in schema["allOf"]:
                part = self.resolve(each, depth + 1)
                merged["properties"] = {**merged.get("properties", {}), **part.get("properties", {})}
                merged["required"] = [*merged.get("required", []), *part.get("required", [])]
                merged.setdefault("type", part.get("type"))
            schema = merged
        for key in ("anyOf", "oneOf"):
            if key in schema:
                branches = [self.resolve(b, depth + 1) for b in schema[key]]
                nullable = any(b.get("type") == "null" for b in branches)
                chosen = {"type": "null"} if nullable else branches[0] if branches else {}
                schema = {**{k: v for k, v in schema.items() if k != key}, **chosen}
        resolved: dict[str, Any] = schema
        return resolved

    def build(self, schema: Json, name: str = "") -> Json:
        schema = self.resolve(schema)
        if "const" in schema:
            return schema["const"]
        if schema.get("enum"):
            return schema["enum"][0]
        kind = schema.get("type")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "null")
        if kind is None:
            kind = "object" if "properties" in schema else "array" if "items" in schema else "string"
        if kind == "object":
            props = schema.get("properties") or {}
            return {key: self.build(props.get(key, {}), key) for key in schema.get("required") or []}
        if kind == "array":
            optional = _OPTIONAL.search(str(schema.get("description") or "")) or schema.get("maxItems") == 0
            count = max(0 if optional else 1, int(schema.get("minItems") or 0))
            return [self.build(schema.get("items") or {}, name) for _ in range(count)]
        if kind == "integer":
            return int(schema.get("minimum", schema.get("exclusiveMinimum", -1) + 1))
        if kind == "number":
            return float(schema.get("minimum", schema.get("exclusiveMinimum", -1) + 1))
        if kind == "boolean":
            return False
        if kind == "null":
            return None
        return self.string(schema, name.lower())

    def string(self, schema: dict[str, Any], name: str) -> str:
        if schema.get("format") == "date-time":
            return TIMESTAMP
        if schema.get("format") == "date":
            return TIMESTAMP[:10]
        if name == "id" or name.endswith(("_id", "_ids")):
            return self.slug
        if name in ("name", "title", "label") or name.endswith("_name") and "relationship" not in name:
            return self.subject
        if name in ("type", "kind", "category") or name.endswith("_type"):
            return "Concept"
        if "relationship" in name or name in ("relation", "predicate"):
            return "mentions"
        return self.text


def instance(schema: dict[str, Any], text: str) -> Json:
    """A deterministic instance of `schema` whose strings come from `text` (see the module's text)."""
    return _Builder(schema, text).build(schema)


def structured_answer(body: dict[str, Any]) -> str | None:
    """The assistant content for a `response_format` `json_schema` request, or None."""
    response_format = body.get("response_format")
    if not isinstance(response_format, dict) or response_format.get("type") != "json_schema":
        return None
    spec = response_format.get("json_schema") or {}
    schema = spec.get("schema") if isinstance(spec, dict) else None
    if not isinstance(schema, dict):
        return None
    return json.dumps(instance(schema, _last_user_text(body)))

