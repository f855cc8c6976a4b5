"""A user's MCP memory server as a run's memory (`swecl run --memory-server SPEC`).

The server ("provider", `agents.ProviderHost`) takes the place of swecl's substrate in a
memory stage: one host per run and sequence, started on the first task that needs it.
Per task attempt the agent gets a door (`ProviderRecall`, an `agents.Recall`): an MCP
client gets the provider's own tools through the door's recording proxy; the harness's
recall (the demo agent's, plugin-primed's notes) calls `--memory-recall-tool`. After an
initial-pass task the harness calls `--memory-write-tool` with what the task taught, so a
server the agent never writes to still accumulates the same stream, then snapshots the
server's data directory. The re-test pass gets a fresh host on a copy of the sequence's
last initial-pass snapshot (what it writes reaches nothing else); the baseline none. A
plugin-accum run's first host starts on its seed (`_provider_seed`).

Templates are JSON: placeholders (`{query}`, `{instance_id}` ...) are filled inside its
strings only, so a value with quotes or newlines stays valid JSON.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import agents
from ledger import Ledger, NewEvent, StreamRange, SweclError, event_id_for
from ledger.events import SnapshotFile
from projections import json_strings

from ._provider_seed import provider_seed_files

# The memory-server client (`agents._provider`: asyncio, the MCP SDK) is reached through
# `agents.X` at the call, so a run without --memory-server, which imports this module
# with the task loop, never loads it (~20 ms of CPU at every start).
if TYPE_CHECKING:
    from agents import CallContext, ProviderHost, ProviderSpec, RecalledItem

__all__ = ["MemoryPolicy", "ProviderRecall", "SequenceProviders", "check_memory_options", "lesson_text",
           "policy_of", "recalled_items", "write_arguments"]

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
# What `{lesson}` starts with: a task's lesson as one line of JSON, which recall reads back
# (a fix the demo agent can reuse) wherever the server's answer quotes it.
LESSON_MARK = "swecl-lesson "
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_MEMORY_OPTIONS = ("memory_recall_tool", "memory_recall_args", "memory_write_tool", "memory_write_args", "memory_env",
                   "memory_dream_tool", "memory_dream_args")
DREAM_FIELDS = ("sequence_id",)


@dataclass(frozen=True)
class MemoryPolicy:
    """What the harness does with the provider: its spec, and the recall and write calls."""

    spec: ProviderSpec
    recall_tool: str | None
    recall_args: Any  # the parsed JSON template
    write_tool: str | None
    write_args: Any
    call_timeout_s: float
    dream_tool: str | None = None  # plugin-dreamed: called once per sequence before the initial pass
    dream_args: Any = None


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
    """The --memory-* options of RunOptions `opts` for `stage`, refused in one line."""
    if opts.memory_server is None:
        given = [name for name in _MEMORY_OPTIONS if getattr(opts, name)]
        if given:
            raise SweclError(f"{_flag(given[0])} is for --memory-server: add --memory-server SPEC or drop it")
        return
    if not stage.plugin:
        raise SweclError(f"--memory-server is for the memory stages (plugin-blank, plugin-accum, plugin-dreamed, "
                         f"plugin-primed), not {stage.name!r}")
    policy_of(opts)  # parses the spec and the templates
    if stage.dreams_before_eval and not opts.memory_dream_tool:
        raise SweclError(f"--memory-server with {stage.name}: swecl cannot dream a server it only calls; name the "
                         "server's consolidation tool with --memory-dream-tool NAME (or use plugin-accum)")
    if opts.memory_dream_tool and not stage.dreams_before_eval:
        raise SweclError(f"--memory-dream-tool is for plugin-dreamed (its dream pass), not {stage.name!r}")
    if stage.seeds and not opts.source_memory:
        raise SweclError(f"--memory-server with {stage.name}: give --source-memory VERSION, an earlier "
                         "--memory-server run of this ledger")
    for flag, given in (("--executor ray", opts.executor == "ray"), ("--jobs N > 1", opts.jobs > 1),
                        ("--task-jobs N > 1", opts.task_jobs > 1), ("--retest-every", opts.retest_every is not None)):
        if given:
            raise SweclError(f"--memory-server does not combine with {flag} yet: drop it")
    if not opts.memory_call_timeout_s > 0:
        raise SweclError(f"--memory-call-timeout {opts.memory_call_timeout_s:g}: give a positive number of seconds")


def policy_of(opts: Any) -> MemoryPolicy:
    spec = agents.parse_memory_server(opts.memory_server, opts.memory_env)
    recall_args = _template(opts.memory_recall_args or DEFAULT_RECALL_ARGS, "--memory-recall-args", RECALL_FIELDS)
    if opts.memory_recall_args and not opts.memory_recall_tool:
        raise SweclError("--memory-recall-args is the template of --memory-recall-tool: name the tool too")
    if opts.memory_write_args and not opts.memory_write_tool:
        raise SweclError("--memory-write-args is the template of --memory-write-tool: name the tool too")
    write_text = opts.memory_write_args or DEFAULT_WRITE_ARGS.get(opts.memory_write_tool or "")
    if opts.memory_write_tool and write_text is None:
        raise SweclError(f"--memory-write-tool {opts.memory_write_tool}: swecl knows no arguments for it; give "
                         "--memory-write-args TEMPLATE (JSON with {instance_id}, {summary}, {files}, {outcome} ...)")
    write_args = _template(write_text, "--memory-write-args", WRITE_FIELDS) if write_text else None
    if opts.memory_dream_args and not opts.memory_dream_tool:
        raise SweclError("--memory-dream-args is the template of --memory-dream-tool: name the tool too")
    dream_args = _template(opts.memory_dream_args or "{}", "--memory-dream-args", DREAM_FIELDS)
    return MemoryPolicy(spec=spec, recall_tool=opts.memory_recall_tool, recall_args=recall_args,
                        write_tool=opts.memory_write_tool, write_args=write_args,
                        call_timeout_s=opts.memory_call_timeout_s, dream_tool=opts.memory_dream_tool,
                        dream_args=dream_args)


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
            item_id=f"provider:{iid}", rank=len(items) + 1, score=0.0, title=f"{iid}: {record.get('outcome')}",
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


class ProviderRecall:
    """One task attempt's memory handle (an `agents.Recall`): an MCP client gets the
    provider's tools through `door`; `recall` is the harness's call to the recall tool."""

    def __init__(self, host: ProviderHost, door: Any, policy: MemoryPolicy, context: CallContext, repo: str) -> None:
        self.host, self.door, self.policy, self.context, self.repo = host, door, policy, context, repo

    def recall(self, query: str, k: int = 5, repo: str | None = None) -> list[RecalledItem]:
        if self.policy.recall_tool is None:
            return []  # no recall tool named: the agent searches with the provider's tools itself
        args = fill(self.policy.recall_args, {"query": query, "repo": repo or self.repo,
                                              "instance_id": self.context.instance_id})
        result = self.host.call(replace(self.context, via="recall"), self.policy.recall_tool, args)
        return [] if result.get("isError") else recalled_items(result, k)

    def mcp_server_argv(self) -> list[str]:
        return list(self.door.proxy_argv)

    def mcp_server_env(self) -> dict[str, str]:
        return {}

    # The proxy is standard library only and reaches the host through the door's socket
    # (in the scratch dir, which the sandbox shows): it runs inside the agent's sandbox,
    # with no relay (swecl's own recall server reads the ledger, so it cannot).
    mcp_server_in_sandbox = True

    def mcp_call_timeout_s(self) -> float:
        """The host's limit on one call (`--memory-call-timeout`): the CLIs wait longer."""
        return self.policy.call_timeout_s

    def mcp_tools(self) -> list[str]:
        """The provider's tools as it announced them: what the prompt tells the agent to use."""
        return list(self.host.info.tool_names) if self.host.info else []


# -- hosts per sequence -----------------------------------------------------------------------


class SequenceProviders:
    """The provider hosts of one sequence of a run: the initial pass's (kept from task to
    task), the re-test pass's (a fresh host on the initial pass's last snapshot). Started
    when a task first asks; closed by `close`. `root` is the sequence's provider folder
    in the run's results (hidden from the agent's sandbox, like the ledger)."""

    def __init__(self, policy: MemoryPolicy, root: Path, ledger_path: Path, version: str, sequence_id: str, *,
                 sandbox: Any, network: bool, dream: bool = False, dream_order: int = 0) -> None:
        self.policy, self.root, self.ledger_path = policy, root, Path(ledger_path)
        self.version, self.sequence_id = version, sequence_id
        self.sandbox, self.network = sandbox, network
        self.dream = dream and policy.dream_tool is not None  # plugin-dreamed: the dream pass before the first task
        self.dream_order = dream_order  # the dream's snapshot stands before task dream_order + 1 (a fork's K)
        self._host: ProviderHost | None = None
        self._phase: str | None = None

    def host_for(self, ledger: Ledger, pass_: str) -> ProviderHost | None:
        if pass_ == "baseline":
            return None
        phase = "initial" if pass_ == "initial" else "retest"
        if self._phase == phase and self._host is not None:
            return self._host
        self.close()
        folder = self.root / phase
        shutil.rmtree(folder, ignore_errors=True)  # never what an earlier process left: the ledger says
        data = folder / "data"
        seed = last_snapshot(ledger, self.version, self.sequence_id)
        if seed is None:
            # A copy-seeded run (plugin-accum) before its first snapshot: the source run's.
            seed = provider_seed_files(ledger, self.version, self.sequence_id)
        if seed is not None:
            # The initial pass after a stop, or the re-test pass: the memory as the last
            # initial-pass task left it (or as the seed gave it).
            agents.restore_provider_data(ledger, seed, data)
        recorder = agents.LedgerRecorder(self.ledger_path, self.version, self.sequence_id)
        host = agents.ProviderHost(self.policy.spec, data, recorder, sequence_id=self.sequence_id,
                                   call_timeout_s=self.policy.call_timeout_s, sandbox=self.sandbox,
                                   network=self.network)
        host.__enter__()
        offered = host.info.tool_names if host.info else []
        for tool in (self.policy.recall_tool, self.policy.write_tool, self.policy.dream_tool if self.dream else None):
            if tool is not None and tool not in offered:
                host.close()
                raise agents.ProviderError(f"the memory server {self.policy.spec.redacted()!r} has no tool {tool!r} "
                                           f"(it offers: {', '.join(offered) or 'none'})")
        self._host, self._phase = host, phase
        if phase == "initial" and self.dream and not dreamed(ledger, self.version, self.sequence_id):
            self._dream(ledger, host)
        return host

    def _dream(self, ledger: Ledger, host: ProviderHost) -> None:
        """plugin-dreamed's dream pass over the server: its consolidation tool, once, on the
        seed, then the data directory as it left it (a snapshot of no task, order 0, or K-1
        in a fork dreamed at K, which the first task starts on and a resume finds: the
        dream is not called again)."""
        assert self.policy.dream_tool is not None
        failures = len(host.failures)
        context = agents.CallContext(sequence_id=self.sequence_id, instance_id="", order=self.dream_order, via="dream")
        args = fill(self.policy.dream_args, {"sequence_id": self.sequence_id})
        result = host.call(context, self.policy.dream_tool, args)
        if len(host.failures) > failures or result.get("isError"):
            why = host.failures[-1].message if len(host.failures) > failures else \
                " ".join(str(c.get("text", "")) for c in result.get("content") or [] if isinstance(c, dict))[:300]
            self.close()
            raise agents.ProviderError(f"the dream pass of sequence {self.sequence_id} failed: "
                                       f"{self.policy.dream_tool} of {self.policy.spec.redacted()!r}: {why}")
        with host.idle():
            manifest = agents.snapshot_provider_data(ledger, host.data_dir)
        ledger.append(f"run/{self.version}/{self.sequence_id}", [NewEvent(
            agents.provider_snapshot_event(manifest, sequence_id=self.sequence_id, instance_id=None,
                                           order=self.dream_order),
            event_id_for(self.version, self.sequence_id, "provider.dream.snapshot"))], durable=True)

    def discard(self) -> None:
        """The host failed in a task (crashed, hung, wrote garbage): closed, so the next task
        starts a fresh server on the last snapshot, not on what a failing server left."""
        self.close()

    def close(self) -> None:
        host, self._host, self._phase = self._host, None, None
        if host is not None:
            host.close()


def dreamed(ledger: Ledger, version: str, sequence_id: str) -> bool:
    """Whether the sequence's dream pass is recorded (its snapshot of no task)."""
    return any(rec.event.instance_id is None and rec.event.pass_ == "initial"
               for rec in ledger.read(types=["memory.provider.snapshot"],
                                      ranges=[StreamRange(f"run/{version}/{sequence_id}")]))


def last_snapshot(ledger: Ledger, version: str, sequence_id: str) -> list[SnapshotFile] | None:
    """The files of the sequence's last initial-pass provider snapshot in run `version`."""
    last = None
    for rec in ledger.read(types=["memory.provider.snapshot"], ranges=[StreamRange(f"run/{version}/{sequence_id}")]):
        if rec.event.pass_ == "initial":
            last = rec.event.files
    return last
