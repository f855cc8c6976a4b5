"""The audit of a `--memory-server` run's recalls: what the user's memory server returned
to a task's recall calls, which earlier writes stored the text it returned, and the
leakage flags of each.

Which recorded calls (`memory.provider.called`) read and which write (`_Tools`): swecl's
own are what their `via` says (recall, write). An agent's call is judged by its tool, as
the server's tool list (`memory.provider.started`'s `tools_listing`) describes it: the
configured write tool writes, the configured recall tool reads; any other tool the list
marks read-only (the MCP annotation `readOnlyHint: true`) reads, and every other tool
(`readOnlyHint` false, or no hint: a server that does not say is assumed to store what
it is given) writes. An agent's write the server answered with an error (`is_error`) is
no source: it stored nothing to rely on, and its retry would lose the attribution.

Attribution is by text, as the server is a black box. The returned text is split into
lines (each stripped of its indentation and a trailing comma; a line with no letter or
digit, JSON's brackets say, is not content); an answer that is one line of JSON (an
object or array: a server answering `output_format: json`) gives the lines of its string
values instead. Each line goes to the earliest write that reached the server before the
recall and whose arguments contain it, as written or JSON-escaped (a plain-text server
returns a lesson raw, the arguments hold it as a JSON string). The writes that reached
it: the run's own in the same sequence before the call (swecl's and the agents'), and,
for a copy-seeded run (plugin-accum), the source run's initial-pass writes of that
sequence before the snapshot the seed names (and so on up the source's own seed). No
such write: unattributed (the server's own words, or a seed this ledger holds no write of).

Leakage flags (`_flags` says why), per attributed write, relative to the recalling task:
`same-instance` (written for this very task) and `later-task` (by a task later in the
sequence's order), except this run's own writes in its re-test passes (retention, the
design); `test-content` for the returned lines of a write, or the unattributed ones, that
hold the task's gold test content, JSON layers undone. Pure reads of the ledger.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from ledger import Ledger, StreamRange
from ledger.events import ProviderCalled, ProviderStarted
from projections._cut import OrderCut
from projections._provider_calls import blob_text, excerpt, json_strings

from ._flags import TestContent
from ._model import FLAG_KINDS, AttributedLine, Flag, ProviderRecall, ProviderWrite

UNATTRIBUTED = "provider:unattributed"  # the summary's item for a recall's unattributed lines


def _split(text: str) -> list[str]:
    out = []
    for raw in text.splitlines():
        line = raw.strip().removesuffix(",").strip()
        if any(ch.isalnum() for ch in line):
            out.append(line)
    return out


def _lines(text: str) -> list[str]:
    lines = _split(text)
    if len(lines) == 1 and lines[0][:1] in "{[":
        try:
            parsed = json.loads(lines[0])
        except ValueError:
            return lines
        return [line for s in json_strings(parsed) for line in _split(s)]
    return lines


def _contains(arguments: str, line: str) -> bool:
    return line in arguments or json.dumps(line, ensure_ascii=False)[1:-1] in arguments


def _plain(text: str, depth: int = 0) -> list[str]:
    """`text` and what its JSON layers hold (a quoted line, a lesson's record): the forms
    the test-content check reads, so an escaped test line is found as the agent read it."""
    out = [text]
    if depth >= 3:
        return out
    for start in {0, *(i for i in (text.find("{"), text.find("[")) if i > 0)}:
        try:
            parsed = json.loads(text[start:])
        except ValueError:
            continue
        out += [p for s in json_strings(parsed) if s != text for p in _plain(s, depth + 1)]
    return out


@dataclass
class _Tools:
    """Which calls of a run's sequence write to the server and which read from it (see
    the module doc), from the configured tools and the tool lists recorded so far."""

    recall_tool: str | None = None
    write_tool: str | None = None
    read_only: dict[str, bool] = field(default_factory=dict)  # tool -> its readOnlyHint, where given

    def learn(self, ledger: Ledger, started: ProviderStarted) -> None:
        """The hints of a server's tool list (a later start's list replaces a tool's hint)."""
        try:
            listing = json.loads(blob_text(ledger, started.tools_listing) or "[]")
        except ValueError:
            return
        for tool in listing if isinstance(listing, list) else []:
            hints = tool.get("annotations") if isinstance(tool, dict) else None
            hint = hints.get("readOnlyHint") if isinstance(hints, dict) else None
            if isinstance(tool.get("name"), str) and isinstance(hint, bool):
                self.read_only[tool["name"]] = hint

    def writes(self, ev: ProviderCalled) -> bool:
        if ev.via == "write":
            return True
        if ev.via != "agent" or ev.is_error:
            return False
        if ev.tool == self.write_tool:
            return True
        return ev.tool != self.recall_tool and self.read_only.get(ev.tool) is not True

    def reads(self, ev: ProviderCalled) -> bool:
        if ev.via == "recall":
            return True
        if ev.via != "agent":
            return False
        return ev.tool == self.recall_tool or (ev.tool != self.write_tool and self.read_only.get(ev.tool) is True)


def server_calls(ledger: Ledger, stream: str, tools: _Tools, upto: int | None = None) -> Iterator[tuple[int, ProviderCalled]]:
    """The calls recorded in `stream` (up to seq `upto`), `tools` learning each tool list
    on the way (a server's list is recorded before its first call)."""
    for rec in ledger.read(types=["memory.provider.started", "memory.provider.called"], ranges=[StreamRange(stream)],
                           upto=upto):
        if isinstance(rec.event, ProviderStarted):
            tools.learn(ledger, rec.event)
        elif isinstance(rec.event, ProviderCalled):
            yield rec.seq, rec.event


@dataclass(frozen=True)
class _Write:
    seq: int
    run: str
    event: ProviderCalled
    arguments: str


def seeded_server_writes(ledger: Ledger, version: str, sequence_id: str, seen: frozenset[str],
                   configs: Callable[[str], _Tools]) -> list[_Write]:
    """The writes the server of a copy-seeded run's sequence started with: the source
    run's initial-pass writes before the snapshot the seed names, its own seed's first
    (`configs(run)`: that run's tools, as its own configuration names them)."""
    out: list[_Write] = []
    for rec in ledger.read(types=["memory.seeded"], streams=[f"run/{version}"]):
        snap_seq = rec.event.provider_snapshots.get(sequence_id)
        snap = ledger.get(snap_seq) if snap_seq is not None else None
        if snap is None or not snap.stream.startswith("run/"):
            continue
        source = snap.stream.split("/")[1]
        if source in seen:
            continue
        out += seeded_server_writes(ledger, source, sequence_id, seen | {source}, configs)
        tools = configs(source)
        for seq, ev in server_calls(ledger, f"run/{source}/{sequence_id}", tools, upto=snap_seq):
            if ev.pass_ == "initial" and tools.writes(ev):
                out.append(_Write(seq, source, ev, blob_text(ledger, ev.arguments) or ""))
    return out


def server_tools(ledger: Ledger, version: str) -> _Tools:
    """A run's tools as its `run.started` configuration names them."""
    for rec in ledger.read(types=["run.started"], streams=[f"run/{version}"]):
        config = rec.event.config
        return _Tools(recall_tool=config.get("memory_recall_tool"), write_tool=config.get("memory_write_tool"))
    return _Tools()


def _flags(version: str, recall: ProviderCalled, write: _Write, checker: TestContent | None,
           lines: list[str]) -> list[Flag]:
    flags: list[Flag] = []
    # A run's own writes in its re-test passes are the design (retention), not a leak.
    own_retest = write.run == version and recall.pass_ != "initial"
    where = f"(by v{write.run}, {write.event.tool} #{write.event.call} at seq {write.seq})"
    if not own_retest and write.event.instance_id == recall.instance_id:
        flags.append(Flag(kind="same-instance", detail=f"written for this same task {recall.instance_id} {where}"))
    if not own_retest and write.event.order > recall.order:
        flags.append(Flag(kind="later-task", detail=f"written after task {write.event.order} of {recall.sequence_id} "
                                                    f"{where}; this is task {recall.order}"))
    return flags + _test_content(checker, lines, "the returned lines it wrote")


def _test_content(checker: TestContent | None, lines: list[str], what: str) -> list[Flag]:
    if checker is None or not lines:
        return []
    text = "\n".join(p for line in lines for p in _plain(line))
    return [Flag(kind="test-content", detail=detail) for detail in checker.find({what: text})]


def iter_provider_recalls(
    ledger: Ledger, version: str, sequence_id: str, *, wanted: Callable[[ProviderCalled], bool],
    recall_tool: str | None = None, write_tool: str | None = None,
    checker_of: Callable[[str], TestContent | None] = lambda _: None, cut: OrderCut | None = None,
) -> Iterator[ProviderRecall]:
    """The recall calls of run `version`'s sequence that `wanted` keeps (and the cut, when
    given): swecl's (`via` recall) and the agent's reading calls (`recall_tool`, or a tool
    its server marks read-only), each answer's lines attributed to the writes that reached
    the server before it (swecl's `via` write, the agent's writing calls: `write_tool` or
    any tool not marked read-only), with the flags relative to the recalling task
    (`checker_of(instance_id)`: its test content)."""
    writes = seeded_server_writes(ledger, version, sequence_id, frozenset({version}), lambda run: server_tools(ledger, run))
    tools = _Tools(recall_tool=recall_tool, write_tool=write_tool)
    for seq, ev in server_calls(ledger, f"run/{version}/{sequence_id}", tools):
        if tools.writes(ev):
            writes.append(_Write(seq, version, ev, blob_text(ledger, ev.arguments) or ""))
            continue
        if not tools.reads(ev):
            continue
        if not wanted(ev) or (cut is not None and not cut.keeps(seq, "memory.provider.called", ev)):
            continue
        yield _recall(ledger, version, seq, ev, writes, checker_of(ev.instance_id))


def _recall(ledger: Ledger, version: str, seq: int, ev: ProviderCalled, writes: list[_Write],
            checker: TestContent | None) -> ProviderRecall:
    answer = blob_text(ledger, ev.result)
    lines: list[AttributedLine] = []
    by_write: dict[int, list[str]] = {}  # the write's seq -> its returned lines, in order of first use
    sources: dict[int, _Write] = {}
    for line in _lines(answer or ""):
        # `writes` holds only the writes recorded before this call: the earliest that holds the line.
        source = next((w for w in writes if _contains(w.arguments, line)), None)
        if source is None:
            lines.append(AttributedLine(text=line))
            continue
        lines.append(AttributedLine(text=line, write_seq=source.seq, instance_id=source.event.instance_id,
                                    order=source.event.order, run=source.run))
        by_write.setdefault(source.seq, []).append(line)
        sources[source.seq] = source
    attributed = []
    for write_seq, returned in by_write.items():
        w = sources[write_seq]
        attributed.append(ProviderWrite(
            seq=w.seq, call=w.event.call, tool=w.event.tool, via=w.event.via, instance_id=w.event.instance_id,
            order=w.event.order,
            pass_=w.event.pass_, attempt=w.event.attempt, lines=len(returned), run=w.run,
            flags=_flags(version, ev, w, checker, returned)))
    loose = [line.text for line in lines if line.write_seq is None]
    loose_flags = _test_content(checker, loose, "the unattributed returned lines")
    kinds = {f.kind for w in attributed for f in w.flags} | {f.kind for f in loose_flags}
    return ProviderRecall(
        seq=seq, call=ev.call, tool=ev.tool, via=ev.via, sequence_id=ev.sequence_id, instance_id=ev.instance_id,
        order=ev.order, pass_=ev.pass_,
        attempt=ev.attempt, is_error=ev.is_error, failure=ev.failure, error=ev.error,
        arguments=excerpt(blob_text(ledger, ev.arguments)), result_blob=ev.result,
        returned=answer is not None, lines=lines, writes=attributed, unattributed=len(loose),
        unattributed_flags=loose_flags, test_content_checked=checker is not None,
        flags=[k for k in FLAG_KINDS if k in kinds],
    )


def provider_recalls(ledger: Ledger, version: str, sequence_id: str, order: int, *, pass_: str | None = None,
                     recall_tool: str | None = None, write_tool: str | None = None,
                     checker: TestContent | None = None) -> list[ProviderRecall]:
    """The recall calls of task `order` (of pass `pass_` when given) in run `version`'s
    sequence, attributed and flagged (`checker`: the task's test content, when known)."""
    return list(iter_provider_recalls(
        ledger, version, sequence_id, recall_tool=recall_tool, write_tool=write_tool, checker_of=lambda _: checker,
        wanted=lambda ev: ev.order == order and (pass_ is None or ev.pass_ == pass_)))


def recall_sources(recall: ProviderRecall) -> list[tuple[str, list[Flag]]]:
    """What the summary counts as the items a recall call returned: each attributed write
    (`provider:write@{seq}`), and its unattributed lines as one more, each with its flags."""
    out = [(f"provider:write@{w.seq}", w.flags) for w in recall.writes]
    if recall.unattributed:
        out.append((UNATTRIBUTED, recall.unattributed_flags))
    return out
