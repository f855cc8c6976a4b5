"""What the harness does with a user's MCP memory server (`swecl run --memory-server SPEC`):
the `--memory-*` options checked, the recall, write and dream calls' argument templates,
what a task taught as the write tool's arguments, and what a recall answer quotes back.

Templates are JSON: placeholders (`{query}`, `{instance_id}` ...) are filled inside its
strings only, so a value with quotes or newlines stays valid JSON.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import agents
from ledger import SweclError
from projections import json_strings

from ._server_spec import ServerSpec, parse_memory_server

# The task loop imports this module: it reaches only the server's spec (the standard
# library), never the client (`_server_host`: asyncio, the MCP SDK, ~20 ms of CPU at
# every start), which only a run with --memory-server loads.
if TYPE_CHECKING:
    from agents import RecalledItem

__all__ = ["ITEM_PREFIX", "NOT_INHERITED", "MemoryPolicy", "check_memory_options", "check_server_options", "fill",
           "lesson_text", "policy_of", "recalled_items", "recorded_memory_options", "write_arguments"]

RECALL_FIELDS = ("query", "repo", "instance_id")
WRITE_FIELDS = ("instance_id", "repo", "order", "outcome", "files", "summary", "patch", "lesson")
DEFAULT_RECALL_ARGS = '{"query": "{query}"}'
# Write tools whose arguments swecl knows: the reference knowledge-graph server's
# create_entities gets one entity per task, named for it.
DEFAULT_WRITE_ARGS = {
    "create_entities": json.dumps({"entities": [{
        "name": "{instance_id}", "entityType": "swecl-task",
        "observations": ["repo {repo}", "outcome {outcome}", "files {files}", "{summary}", "{lesson}"],
    }]}),
}
# The text a write tool's text parameter gets (basic-memory's note, a discovered tool's).
LESSON_TEMPLATE = "{summary}\n\n{lesson}"
# What `{lesson}` starts with: a task's lesson as one line of JSON, which recall reads back
# (a fix the demo agent can reuse) wherever the server's answer quotes it.
LESSON_MARK = "swecl-lesson "
# A recalled lesson's item id: `provider:` and the task that wrote it (what `swecl
# counterfactual --without` names to rebuild the server without that task's writes).
ITEM_PREFIX = "provider:"
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_MEMORY_OPTIONS = ("memory_recall_tool", "memory_recall_args", "memory_write_tool", "memory_write_args", "memory_env",
                   "memory_dream_tool", "memory_dream_args", "memory_model_endpoint", "memory_allow_hosts")
DREAM_FIELDS = ("sequence_id",)
# What a fork never takes from its source's recorded options: the server is given again
# (its URL may have lost credentials), and its mapped values were never recorded.
NOT_INHERITED = frozenset({"memory_env", "memory_env_names", "memory_server"})


@dataclass(frozen=True)
class MemoryPolicy:
    """What the harness does with the memory server: its spec, and the recall and write calls."""

    spec: ServerSpec
    recall_tool: str | None
    recall_args: Any  # the parsed JSON template
    write_tool: str | None
    write_args: Any
    call_timeout_s: float
    dream_tool: str | None = None  # plugin-dreamed: called once per sequence before the initial pass
    dream_args: Any = None
    # What memory.provider.started records of where the server and its tools came from.
    preset: str | None = None
    preset_version: str | None = None
    tools_from: str | None = None  # None: the flags; preset; discovered
    model_endpoint: str | None = None  # the server's model API, behind swecl's recording gateway
    allow_hosts: tuple[str, ...] = ()  # what a confined server reaches beside the gateway

    def about(self) -> dict[str, str | None]:
        """What `memory.provider.started` records of the server's preset and the tools."""
        return {"preset": self.preset, "preset_version": self.preset_version, "recall_tool": self.recall_tool,
                "write_tool": self.write_tool, "tools_from": self.tools_from}


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _template(text: str, option: str, fields: tuple[str, ...]) -> Any:
    try:
        parsed = json.loads(text)
    except ValueError as exc:
        raise SweclError(f"{option} {text!r} is not JSON: {exc}") from None
    if not isinstance(parsed, dict):
        raise SweclError(f"{option} {text!r}: give a JSON object (the tool's arguments)")
    unknown = sorted({name for s in json_strings(parsed) for name in _PLACEHOLDER.findall(s) if name not in fields})
    if unknown:
        raise SweclError(f"{option}: unknown placeholder {{{unknown[0]}}} (known: "
                         f"{', '.join('{' + f + '}' for f in fields)})")
    return parsed


def fill(template: Any, values: dict[str, str]) -> Any:
    """`template` with its placeholders made `values`, inside strings only."""
    if isinstance(template, str):
        return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)
    if isinstance(template, dict):
        return {k: fill(v, values) for k, v in template.items()}
    if isinstance(template, list):
        return [fill(v, values) for v in template]
    return template


def check_memory_options(opts: Any, stage: Any) -> None:
    """Whatever the run's memory: the --memory-* options without --memory-server, and
    --memory-server outside the memory stages, refused in one line."""
    if opts.memory.server is None:
        given = [name for name in _MEMORY_OPTIONS if getattr(opts.memory, name.removeprefix("memory_"))]
        if opts.memory.tools_from == "agent":
            given.append("memory_agent_only")
        if given:
            raise SweclError(f"{_flag(given[0])} is for --memory-server: add --memory-server SPEC or drop it")
    elif opts.memory.tools_from == "agent":
        named = [f for f in ("recall_tool", "write_tool") if getattr(opts.memory, f)]
        if named:
            raise SweclError(f"--memory-agent-only calls none of the server's tools: drop {_flag('memory_' + named[0])}")
    elif not stage.plugin:
        raise SweclError(f"--memory-server is for the memory stages (plugin-blank, plugin-accum, plugin-dreamed, "
                         f"plugin-primed, oracle), not {stage.name!r}")


def check_server_options(opts: Any, stage: Any) -> None:
    """A memory server run's options for `stage` (`ServerMemory.check`), refused in one line."""
    policy_of(opts)  # parses the spec and the templates
    if stage.dreams_before_eval and not opts.memory.dream_tool:
        raise SweclError(f"--memory-server with {stage.name}: swecl cannot dream a server it only calls; name the "
                         "server's consolidation tool with --memory-dream-tool NAME (or use plugin-accum)")
    if opts.memory.dream_tool and not stage.dreams_before_eval:
        raise SweclError(f"--memory-dream-tool is for plugin-dreamed (its dream pass), not {stage.name!r}")
    if stage.seeds and not opts.source_memory:
        raise SweclError(f"--memory-server with {stage.name}: give --source-memory VERSION, an earlier "
                         "--memory-server run of this ledger")
    if not opts.memory.call_timeout_s > 0:
        raise SweclError(f"--memory-call-timeout {opts.memory.call_timeout_s:g}: give a positive number of seconds")


def policy_of(opts: Any) -> MemoryPolicy:
    spec = parse_memory_server(opts.memory.server, opts.memory.env)
    recall_args = _template(opts.memory.recall_args or DEFAULT_RECALL_ARGS, "--memory-recall-args", RECALL_FIELDS)
    if opts.memory.recall_args and not opts.memory.recall_tool:
        raise SweclError("--memory-recall-args is the template of --memory-recall-tool: name the tool too")
    if opts.memory.write_args and not opts.memory.write_tool:
        raise SweclError("--memory-write-args is the template of --memory-write-tool: name the tool too")
    write_text = opts.memory.write_args or DEFAULT_WRITE_ARGS.get(opts.memory.write_tool or "")
    if opts.memory.write_tool and write_text is None:
        raise SweclError(f"--memory-write-tool {opts.memory.write_tool}: swecl knows no arguments for it; give "
                         "--memory-write-args TEMPLATE (JSON with {instance_id}, {summary}, {files}, {outcome} ...)")
    write_args = _template(write_text, "--memory-write-args", WRITE_FIELDS) if write_text else None
    if opts.memory.dream_args and not opts.memory.dream_tool:
        raise SweclError("--memory-dream-args is the template of --memory-dream-tool: name the tool too")
    dream_args = _template(opts.memory.dream_args or "{}", "--memory-dream-args", DREAM_FIELDS)
    if opts.memory.allow_hosts and spec.url is not None:
        raise SweclError("--memory-allow-host is for a command-line --memory-server (swecl confines it); "
                         "an HTTP server runs elsewhere")
    return MemoryPolicy(spec=spec, recall_tool=opts.memory.recall_tool, recall_args=recall_args,
                        write_tool=opts.memory.write_tool, write_args=write_args,
                        call_timeout_s=opts.memory.call_timeout_s, dream_tool=opts.memory.dream_tool,
                        dream_args=dream_args, preset=opts.memory.preset, preset_version=opts.memory.preset_version,
                        tools_from=opts.memory.tools_from, model_endpoint=_model_endpoint(spec, opts.memory.model_endpoint),
                        allow_hosts=tuple(_allow_host(h) for h in opts.memory.allow_hosts))


def _model_endpoint(spec: ServerSpec, endpoint: str | None) -> str | None:
    """--memory-model-endpoint, checked against the spec: an http(s) URL without
    credentials (it is recorded), for a command-line server that names `{model_gateway}`."""
    if endpoint is None:
        if spec.uses_model_gateway:
            raise SweclError("--memory-env names {model_gateway}: give the model API it stands for with "
                             "--memory-model-endpoint URL (e.g. https://api.openai.com/v1)")
        return None
    if spec.url is not None:
        raise SweclError("--memory-model-endpoint is for a command-line --memory-server (swecl starts it with "
                         "{model_gateway}); an HTTP server runs elsewhere")
    try:
        parts = urlsplit(endpoint.strip())
        host, _ = parts.hostname, parts.port
    except ValueError as exc:
        raise SweclError(f"--memory-model-endpoint {endpoint!r} is not a valid URL: {exc}") from None
    if parts.scheme.lower() not in ("http", "https") or not host:
        raise SweclError(f"--memory-model-endpoint {endpoint!r}: give an http(s) URL with a host "
                         "(e.g. https://api.openai.com/v1)")
    if parts.username or parts.password or parts.query or parts.fragment:
        raise SweclError(f"--memory-model-endpoint {endpoint!r}: no credentials, query or fragment (it is recorded; "
                         "the key goes in --memory-env OPENAI_API_KEY=...)")
    return endpoint.strip()


def _allow_host(item: str) -> str:
    try:
        return agents.parse_allow_host(item)
    except ValueError as exc:
        raise SweclError(str(exc).replace("--allow-host", "--memory-allow-host", 1)) from None


# -- what a task taught, and reading it back ------------------------------------------------


def lesson_text(*, instance_id: str, repo: str, order: int, outcome: str, files: list[str], patch: str) -> str:
    record = {"instance_id": instance_id, "repo": repo, "order": order, "outcome": outcome, "files": files,
              "patch": patch}
    return LESSON_MARK + json.dumps(record, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def write_arguments(policy: MemoryPolicy, *, instance_id: str, repo: str, order: int, outcome: str,
                    files: list[str], patch: str) -> Any:
    """The write tool's arguments for a task: the template filled with what it taught
    (`patch` is the agent's patch without test-file hunks)."""
    summary = f"{instance_id} ({repo}): {outcome}; changed {', '.join(files) or 'nothing'}"
    values = {"instance_id": instance_id, "repo": repo, "order": str(order), "outcome": outcome,
              "files": ", ".join(files), "summary": summary, "patch": patch,
              "lesson": lesson_text(instance_id=instance_id, repo=repo, order=order, outcome=outcome, files=files,
                                    patch=patch)}
    return fill(policy.write_args, values)


def recalled_items(result: dict[str, Any], k: int) -> list[RecalledItem]:
    """What a recall call returned, as recalled items: each lesson swecl wrote that the
    answer quotes (outcome, files and patch known), else the answer's text as one item."""
    texts = [c.get("text", "") for c in result.get("content") or [] if isinstance(c, dict) and c.get("type") == "text"]
    strings: list[str] = []
    for text in texts:
        try:
            # A note's content may hold the lesson among other lines (a markdown server's).
            strings += [line for value in json_strings(json.loads(text)) for line in value.splitlines()]
        except ValueError:
            strings += text.splitlines()
    items: list[RecalledItem] = []
    seen: set[str] = set()
    for s in strings:
        s = s.strip()
        if not s.startswith(LESSON_MARK):
            continue
        try:
            record = json.loads(s[len(LESSON_MARK):])
        except ValueError:
            continue
        if not isinstance(record, dict) or str(record.get("instance_id")) in seen:
            continue
        iid = str(record.get("instance_id"))
        seen.add(iid)
        items.append(agents.RecalledItem(
            item_id=f"{ITEM_PREFIX}{iid}", rank=len(items) + 1, score=0.0, title=f"{iid}: {record.get('outcome')}",
            body=s, repo=str(record.get("repo") or ""), files=[str(f) for f in record.get("files") or []], symbols=[],
            outcome=record.get("outcome"), patch=record.get("patch") or None, source_instance=iid, source_run="",
            kind="provider",
        ))
    joined = "\n".join(texts).strip()
    if not items and joined and not result.get("isError"):
        items.append(agents.RecalledItem(item_id="provider:answer", rank=1, score=0.0, title="memory server answer",
                                         body=joined, repo="", files=[], symbols=[], outcome=None, patch=None,
                                         source_instance=None, source_run="", kind="provider"))
    return items[:k]


def recorded_memory_options(opts: Any) -> dict[str, Any]:
    """What run.started records of the memory server's options, over `opts`' own: the spec
    redacted (a URL without credentials or query values), of the mapped variables only
    their names (a value may be a token)."""
    if opts.memory.server is None:
        return {}
    spec = parse_memory_server(opts.memory.server, opts.memory.env)
    # A URL that lost credentials or query values: a resume must be given it again.
    return {"memory_server": spec.redacted(),
            "memory_server_redacted": spec.url is not None and spec.redacted() != spec.url,
            "memory_env_names": [item.partition("=")[0] for item in opts.memory.env]}
