"""The audit of a `--memory-server` run's recalls: what the user's memory server returned
to a task's recall calls, and which earlier tasks' writes stored the text it returned.

Attribution is by text, as the server is a black box: each returned line (stripped of
its indentation and a trailing comma; a line with no letter or digit, JSON's brackets
say, is not content) goes to the earliest `memory.provider.called` write (`via` write)
of the same run and sequence, recorded before the recall, whose arguments contain it,
as written or JSON-escaped (a plain-text server returns a lesson raw, the arguments hold
it as a JSON string). No such write: unattributed (a seed from another run's snapshot,
the server's own words, or the agent's own calls). Pure reads of the ledger.
"""

from __future__ import annotations

import json

from ledger import Ledger
from ledger.events import ProviderCalled
from projections._provider_calls import blob_text, excerpt, provider_calls

from ._model import AttributedLine, ProviderRecall, ProviderWrite


def _lines(text: str) -> list[str]:
    out = []
    for raw in text.splitlines():
        line = raw.strip().removesuffix(",").strip()
        if any(ch.isalnum() for ch in line):
            out.append(line)
    return out


def _contains(arguments: str, line: str) -> bool:
    return line in arguments or json.dumps(line, ensure_ascii=False)[1:-1] in arguments


def provider_recalls(ledger: Ledger, version: str, sequence_id: str, order: int, *, pass_: str | None = None,
                     recall_tool: str | None = None) -> list[ProviderRecall]:
    """The recall calls of task `order` (of pass `pass_` when given) in run `version`'s
    sequence: swecl's (`via` recall) and the agent's calls of `recall_tool`, each answer's
    lines attributed to the writes before it."""
    calls = provider_calls(ledger, version, sequence_id)
    writes: list[tuple[int, ProviderCalled, str]] = []  # (seq, event, arguments text), in ledger order
    out = []
    for seq, ev in calls:
        if ev.via == "write":
            writes.append((seq, ev, blob_text(ledger, ev.arguments) or ""))
            continue
        mine = ev.order == order and (pass_ is None or ev.pass_ == pass_)
        if not mine or not (ev.via == "recall" or (recall_tool is not None and ev.tool == recall_tool)):
            continue
        answer = blob_text(ledger, ev.result)
        lines: list[AttributedLine] = []
        attributed: dict[int, ProviderWrite] = {}  # by the write's seq, in order of first use
        for line in _lines(answer or ""):
            # `writes` holds only the writes recorded before this call: the earliest that holds the line.
            source = next((w for w in writes if _contains(w[2], line)), None)
            if source is None:
                lines.append(AttributedLine(text=line))
                continue
            write_seq, write = source[0], source[1]
            lines.append(AttributedLine(text=line, write_seq=write_seq, instance_id=write.instance_id,
                                        order=write.order))
            if write_seq not in attributed:
                attributed[write_seq] = _write(write_seq, write)
            attributed[write_seq].lines += 1
        out.append(ProviderRecall(
            seq=seq, call=ev.call, tool=ev.tool, via=ev.via, sequence_id=ev.sequence_id, pass_=ev.pass_,
            attempt=ev.attempt, is_error=ev.is_error, failure=ev.failure, error=ev.error,
            arguments=excerpt(blob_text(ledger, ev.arguments)), result_blob=ev.result,
            returned=answer is not None, lines=lines, writes=list(attributed.values()),
            unattributed=sum(1 for line in lines if line.write_seq is None),
        ))
    return out


def _write(seq: int, ev: ProviderCalled) -> ProviderWrite:
    return ProviderWrite(seq=seq, call=ev.call, tool=ev.tool, instance_id=ev.instance_id, order=ev.order,
                         pass_=ev.pass_, attempt=ev.attempt)
