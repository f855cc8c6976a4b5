"""Re-deciding a run's grades from the recorded logs, with the parsers of today.

A parser fix never needs a test re-run: every test log is a blob in the ledger. A
changed decision is appended as `grade.corrected` naming the decision it replaces; the
original stays, and the outcome projection uses the newest.

A regrade also applies what the latest `swecl validate` found: PASS_TO_PASS tests that
fail on this host with and without the fix are left out of the verdict (and named on the
correction), so grades recorded before the validation agree with those made after it.

Every log is checked against its hash before it is parsed (`Ledger.get_blob` does), and
the corrections are appended together only once every log has been read: a forged or
damaged log stops the regrade with nothing appended, instead of a grade decided from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from graders import grade_log, keep_blame
from ledger import Ledger, NewEvent, StreamBatch, StreamRange, SweclError, event_id_for
from ledger.events import GradeCorrected, GradeFinished, GradeStatus

from projections import p2p_excluded

# Only verdicts read from test output can be re-read; a patch that did not apply or an
# empty patch has no test log to re-decide.
_REDECIDABLE = frozenset({"resolved", "unresolved", "infra_error"})


@dataclass
class RegradeReport:
    version: str
    examined: int = 0
    skipped: int = 0
    corrected: list[tuple[str, str, str, str]] = field(default_factory=list)  # (instance, pass, old, new)

    def lines(self) -> list[str]:
        out = [f"{a}  {p}: {old} -> {new}" for a, p, old, new in self.corrected]
        out.append(
            f"regraded run {self.version}: {self.examined} decisions re-read, {len(self.corrected)} corrected, "
            f"{self.skipped} without a test log to re-read"
        )
        return out


def regrade(ledger: Ledger, version: str, *, excluded: Mapping[str, list[str]] | None = None) -> RegradeReport:
    """Re-decide run `version`'s grades. `excluded`: instance -> PASS_TO_PASS tests to
    leave out (default: what the latest validation of each task found)."""
    if ledger.stream_version(f"run/{version}") < 0:
        raise SweclError(f"no run version {version!r} in {ledger.path}")
    if excluded is None:
        excluded = p2p_excluded(ledger)
    in_force: dict[tuple[str, str, int, int], tuple[str, str, GradeFinished | GradeCorrected]] = {}
    originals: dict[str, GradeFinished | None] = {}  # decision event -> the grade whose log it read
    for rec in ledger.read(types=["grade.finished", "grade.corrected"], ranges=[StreamRange(f"run/{version}")]):
        ev = rec.event
        key = (ev.sequence_id, ev.pass_, ev.order, ev.attempt)
        if isinstance(ev, GradeFinished):
            originals[rec.event_id] = ev
            in_force[key] = (rec.stream, rec.event_id, ev)
        else:
            in_force[key] = (rec.stream, rec.event_id, ev)
            originals[rec.event_id] = originals.get(ev.corrects)
    report = RegradeReport(version)
    corrections: list[StreamBatch] = []
    for stream, event_id, current in in_force.values():
        original = originals.get(event_id)
        if original is None or original.status not in _REDECIDABLE or not original.log:
            report.skipped += 1
            continue
        report.examined += 1
        log = ledger.get_blob(original.log).decode("utf-8", "replace")
        # the task's whole list: what the grade judged and what it left out
        decision = keep_blame(grade_log(
            log, original.parser or "pytest", list(original.f2p), [*original.p2p, *original.p2p_excluded],
            test_exit_code=original.test_exit_code, excluded=excluded.get(original.instance_id, ()),
            overrides=original.channel_overrides,
        ), original.error)
        left_out = list(decision.p2p_excluded)
        status, error = decision.status, decision.error
        resolved = GradeStatus(status).resolved  # infra_error is not scored: None, as the grader records it
        same = (
            status == current.status
            and resolved == current.resolved
            and dict(decision.f2p) == dict(current.f2p)
            and dict(decision.p2p) == dict(current.p2p)
            and left_out == list(current.p2p_excluded)
        )
        if same:
            continue
        correction = GradeCorrected(
            corrects=event_id,
            sequence_id=current.sequence_id,
            instance_id=current.instance_id,
            order=current.order,
            pass_=current.pass_,
            attempt=current.attempt,
            status=status,
            resolved=resolved,
            f2p={k: str(v) for k, v in decision.f2p.items()},
            p2p={k: str(v) for k, v in decision.p2p.items()},
            tests={k: str(v) for k, v in decision.tests.items()},
            error=error,
            reason="re-decided from the recorded log with the current parsers"
                   + (f", without {len(left_out)} PASS_TO_PASS test(s) that fail on this host with and without the fix"
                      if left_out else ""),
            parser=original.parser,
            p2p_excluded=left_out,
        )
        new = NewEvent(correction, event_id_for("grade.corrected", event_id, status, resolved, *left_out))
        corrections.append(StreamBatch(stream, [new]))
        report.corrected.append((current.instance_id, current.pass_, current.status, status))
    if corrections:
        # One transaction: all corrections or none.
        ledger.append_batches(corrections, durable=True)
    return report
