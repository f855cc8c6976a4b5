"""The audit of a `--memory-server` run's recalls: what the user's memory server returned
to a task's recall calls, which earlier writes stored the text it returned, and the
leakage flags of each.

Attribution is by text, as the server is a black box. The returned text is split into
lines (each stripped of its indentation and a trailing comma; a line with no letter or
digit, JSON's brackets say, is not content); an answer that is one line of JSON (an
object or array: a server answering `output_format: json`) gives the lines of its string
values instead. Each line goes to the earliest write (`memory.provider.called`, `via`
write) that reached the server before the recall and whose arguments contain it, as
written or JSON-escaped (a plain-text server returns a lesson raw, the arguments hold it
as a JSON string). The writes that reached it: the run's own in the same sequence before
the call, and, for a copy-seeded run (plugin-accum), the source run's initial-pass writes
of that sequence before the snapshot the seed names (and so on up the source's own
seed). No such write: unattributed (the server's own words, the agent's own calls, or a
seed this ledger holds no write of).

Leakage flags (`_flags` says why), per attributed write, relative to the recalling task:
`same-instance` (written for this very task) and `later-task` (by a task later in the
sequence's order), except this run's own writes in its re-test passes (retention, the
design); `test-content` for the returned lines of a write, or the unattributed ones, that
hold the task's gold test content, JSON layers undone. Pure reads of the ledger.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ledger import Ledger, StreamRange
from ledger.events import ProviderCalled
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


@dataclass(frozen=True)
class _Write:
    seq: int
    run: str
    event: ProviderCalled
    arguments: str


def _seeded_writes(ledger: Ledger, version: str, sequence_id: str, seen: frozenset[str]) -> list[_Write]:
    """The writes the server of a copy-seeded run's sequence started with: the source
    run's initial-pass writes before the snapshot the seed names, its own seed's first."""
    out: list[_Write] = []
    for rec in ledger.read(types=["memory.seeded"], streams=[f"run/{version}"]):
        snap_seq = rec.event.provider_snapshots.get(sequence_id)
        snap = ledger.get(snap_seq) if snap_seq is not None else None
        if snap is None or not snap.stream.startswith("run/"):
            continue
        source = snap.stream.split("/")[1]
        if source in seen:
            continue
        out += _seeded_writes(ledger, source, sequence_id, seen | {source})
        for call in ledger.read(types=["memory.provider.called"], ranges=[StreamRange(f"run/{source}/{sequence_id}")],
                                upto=snap_seq):
            ev = call.event
            if ev.via == "write" and ev.pass_ == "initial":
                out.append(_Write(call.seq, source, ev, blob_text(ledger, ev.arguments) or ""))
    return out


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
    recall_tool: str | None = None, checker_of: Callable[[str], TestContent | None] = lambda _: None,
    cut: OrderCut | None = None,
) -> Iterator[ProviderRecall]:
    """The recall calls of run `version`'s sequence that `wanted` keeps (and the cut, when
    given): swecl's (`via` recall) and the agent's calls of `recall_tool`, each answer's
    lines attributed to the writes that reached the server before it, with the flags
    relative to the recalling task (`checker_of(instance_id)`: its test content)."""
    writes = _seeded_writes(ledger, version, sequence_id, frozenset({version}))
    for rec in ledger.read(types=["memory.provider.called"], ranges=[StreamRange(f"run/{version}/{sequence_id}")]):
        ev = rec.event
        if ev.via == "write":
            writes.append(_Write(rec.seq, version, ev, blob_text(ledger, ev.arguments) or ""))
            continue
        if not (ev.via == "recall" or (recall_tool is not None and ev.tool == recall_tool)):
            continue
        if not wanted(ev) or (cut is not None and not cut.keeps(rec.seq, rec.type, ev)):
            continue
        yield _recall(ledger, version, rec.seq, ev, writes, checker_of(ev.instance_id))


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
            seq=w.seq, call=w.event.call, tool=w.event.tool, instance_id=w.event.instance_id, order=w.event.order,
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
                     recall_tool: str | None = None, checker: TestContent | None = None) -> list[ProviderRecall]:
    """The recall calls of task `order` (of pass `pass_` when given) in run `version`'s
    sequence, attributed and flagged (`checker`: the task's test content, when known)."""
    return list(iter_provider_recalls(
        ledger, version, sequence_id, recall_tool=recall_tool, checker_of=lambda _: checker,
        wanted=lambda ev: ev.order == order and (pass_ is None or ev.pass_ == pass_)))


def recall_sources(recall: ProviderRecall) -> list[tuple[str, list[Flag]]]:
    """What the summary counts as the items a recall call returned: each attributed write
    (`provider:write@{seq}`), and its unattributed lines as one more, each with its flags."""
    out = [(f"provider:write@{w.seq}", w.flags) for w in recall.writes]
    if recall.unattributed:
        out.append((UNATTRIBUTED, recall.unattributed_flags))
    return out
