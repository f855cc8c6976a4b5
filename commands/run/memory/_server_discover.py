"""Which of a memory server's tools swecl calls, when the user names none: `swecl run
--memory-server SPEC` with no tool flag and no preset asks the server for its tool list
before the run and proposes its recall and write tools from it (docs/design.md section 5,
"Tool discovery").

A recall tool: not marked `readOnlyHint: false`, named or described as search, recall,
query, retrieve or find, with a string query parameter; its template fills that with
`{query}`. A write tool: not marked read-only, named or described as add, create, store,
write, remember, save, insert or record (never delete, update, edit, forget ...), whose
arguments swecl can fill: a tool it has a template for (`create_entities`), or one whose
required parameters are all strings it can name (the text, a title, a folder), one of
them text. Each candidate gets a score (the verb in its name over its description, a
required query over an optional one, a `readOnlyHint: true`, a known template, not
`destructiveHint: true`); the best is taken, and when there is none, or two are equally
good, the run is refused in one line that says which flags to give.

The pure choice (`propose_tools`) needs no server; `discover_tools` starts the server once
in a temporary folder (its data dir is not the run's: nothing is written anywhere).
"""

from __future__ import annotations

import json
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from ledger import SweclError

from ._server_policy import DEFAULT_WRITE_ARGS, LESSON_TEMPLATE
from ._server_spec import parse_memory_server

__all__ = ["Proposal", "discover_tools", "propose_tools"]

RECALL_VERBS = frozenset({"search", "recall", "query", "retrieve", "find", "lookup"})
WRITE_VERBS = frozenset({"add", "create", "store", "write", "remember", "save", "insert", "record", "memorize"})
# A tool that changes or drops what is stored is no place for a task's lesson.
NOT_WRITE = frozenset({"delete", "remove", "forget", "update", "edit", "clear", "reset", "move", "rename", "prune"})
QUERY_NAMES = ("query", "q", "search", "text", "question", "keywords", "pattern", "prompt")
# What a write tool's required string parameters are given, by their name.
TEXT_NAMES = frozenset({"content", "text", "body", "note", "memory", "data", "message", "observation", "information",
                        "fact", "value", "lesson"})
TITLE_NAMES = frozenset({"title", "name", "id", "key", "identifier", "subject", "topic"})
FOLDER_NAMES = frozenset({"directory", "folder", "category", "collection", "namespace", "tag", "tags"})


@dataclass(frozen=True)
class Proposal:
    """The recall and write tools proposed, with their templates (JSON text)."""

    recall_tool: str
    recall_args: str
    write_tool: str
    write_args: str

    def line(self, spec: str) -> str:
        return (f"swecl: --memory-server {spec}: from its tool list, recall {self.recall_tool} {self.recall_args}, "
                f"write {self.write_tool} (--memory-recall-tool/--memory-write-tool choose others)")


def _words(text: str) -> set[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
    return {w.lower() for w in re.split(r"[^A-Za-z0-9]+", spaced) if w}


def _stringish(prop: Any) -> bool:
    if not isinstance(prop, dict):
        return False
    kind = prop.get("type")
    if kind == "string" or (isinstance(kind, list) and "string" in kind):
        return True
    return any(_stringish(p) for p in (prop.get("anyOf") or prop.get("oneOf") or []))


def _schema(tool: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    schema = tool.get("inputSchema") or {}
    props = schema.get("properties") or {}
    return (props if isinstance(props, dict) else {}), [r for r in schema.get("required") or [] if isinstance(r, str)]


def _verb_score(tool: dict[str, Any], verbs: frozenset[str]) -> int:
    """2: a verb in the name; 1: only in the description; 0: neither."""
    if _words(tool.get("name", "")) & verbs:
        return 2
    return 1 if _words(tool.get("description") or "") & verbs else 0


def _recall(tool: dict[str, Any]) -> tuple[int, str] | None:
    """The tool's score as a recall tool and its template, or None if it is none."""
    if (tool.get("annotations") or {}).get("readOnlyHint") is False:
        return None
    verb = _verb_score(tool, RECALL_VERBS)
    props, required = _schema(tool)
    query = next((n for n in QUERY_NAMES if n in props and _stringish(props[n])), None)
    if query is None and [r for r in required if _stringish(props.get(r))] and len(required) == 1:
        query = required[0]  # its one required string is what it searches for
    if not verb or query is None or any(r != query for r in required):
        return None
    score = verb + (2 if query in required else 1) + ((tool.get("annotations") or {}).get("readOnlyHint") is True)
    return score, json.dumps({query: "{query}"})


def _write_template(tool: dict[str, Any]) -> str | None:
    known = DEFAULT_WRITE_ARGS.get(tool.get("name", ""))
    if known is not None:
        return known
    props, required = _schema(tool)
    args: dict[str, str] = {}
    for name in required:
        if not _stringish(props.get(name)):
            return None
        low = name.lower()
        args[name] = (LESSON_TEMPLATE if low in TEXT_NAMES else "{instance_id}" if low in TITLE_NAMES
                      else "swecl" if low in FOLDER_NAMES else "")
        if not args[name]:
            return None  # a required string swecl cannot name
    if LESSON_TEMPLATE not in args.values():
        text = next((n for n in props if n.lower() in TEXT_NAMES and _stringish(props[n])), None)
        if text is None:
            return None
        args[text] = LESSON_TEMPLATE
    return json.dumps(args)


def _write(tool: dict[str, Any]) -> tuple[int, str] | None:
    annotations = tool.get("annotations") or {}
    if annotations.get("readOnlyHint") is True or _words(tool.get("name", "")) & NOT_WRITE:
        return None
    verb = _verb_score(tool, WRITE_VERBS)
    template = _write_template(tool) if verb else None
    if template is None:
        return None
    known = tool.get("name") in DEFAULT_WRITE_ARGS
    return verb + 2 * known + (annotations.get("destructiveHint") is not True), template


def _best(tools: list[dict[str, Any]], score: Any, role: str, flag: str, spec: str) -> tuple[str, str]:
    ranked = sorted(((s, t["name"], args) for t in tools if (found := score(t)) for s, args in [found]),
                    key=lambda c: -c[0])
    if not ranked:
        names = ", ".join(t.get("name", "?") for t in tools) or "none"
        raise SweclError(f"--memory-server {spec}: no tool of it looks like a {role} tool (it offers: {names}): "
                         f"name one with {flag} NAME")
    if len(ranked) > 1 and ranked[0][0] == ranked[1][0]:
        raise SweclError(f"--memory-server {spec}: {ranked[0][1]} and {ranked[1][1]} are equally good {role} tools: "
                         f"name one with {flag} NAME")
    return ranked[0][1], ranked[0][2]


def propose_tools(tools: list[dict[str, Any]], spec: str) -> Proposal:
    """The recall and write tools of a server's tool list (as `tools/list` gives them:
    name, description, inputSchema, annotations), or the one-line refusal."""
    recall_tool, recall_args = _best(tools, _recall, "recall", "--memory-recall-tool", spec)
    write_tool, write_args = _best(tools, _write, "write", "--memory-write-tool", spec)
    return Proposal(recall_tool, recall_args, write_tool, write_args)


_TOOL_FLAGS = ("recall_tool", "recall_args", "write_tool", "write_args")


def discover_tools(opts: Any) -> tuple[Any, str | None]:
    """`opts` (RunOptions) with the tools proposed from the server's own list when it has
    a --memory-server and neither a preset nor any tool flag, and the line saying so;
    `opts` as is otherwise. The server starts once, confined as the run's would be, in a
    temporary folder, and is stopped."""
    memory = opts.memory
    if memory.server is None or memory.preset or memory.tools_from == "agent" or \
            any(getattr(memory, f) for f in _TOOL_FLAGS):
        return opts, None  # the user's choice: a preset's tools, their flags, or the agent alone
    from graders.host import sandbox_for

    from ._server_host import ServerHost  # lazy: asyncio, the MCP SDK

    spec = parse_memory_server(memory.server, memory.env)
    with tempfile.TemporaryDirectory(prefix="swecl-discover-") as tmp:
        host = ServerHost(spec, Path(tmp) / "data", None, sequence_id="discovery",
                          call_timeout_s=memory.call_timeout_s, sandbox=sandbox_for(opts.sandbox.mode),
                          network=bool(opts.sandbox.allow_hosts))
        with host:
            tools = list(host.info.tools) if host.info else []
    proposal = propose_tools(tools, spec.redacted())
    replace = msgspec.structs.replace
    memory = replace(memory, recall_tool=proposal.recall_tool, recall_args=proposal.recall_args,
                     write_tool=proposal.write_tool, write_args=proposal.write_args, tools_from="discovered")
    return replace(opts, memory=memory), proposal.line(spec.redacted())
