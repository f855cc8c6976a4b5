"""The leakage flags of a recalled item (`_leak_flags`) and the test content of a task
they look for (`TestContent`).

Leakage flags of a recalled item, relative to the asking task:
- `same-instance`: written for this very task (same instance_id). Expected only in the
  re-test passes of the run that wrote it (the re-test measures retention with the
  end-of-sequence memory), so those are not flagged; from a seed (plugin-accum,
  plugin-dreamed over the same sequence) or an import it is the answer to the exam.
- `later-task`: written by a task later in the same sequence's order than the asking
  one (again, except this run's own items in its re-test passes): knowledge of the
  future, possible only through a seed or an import.
- `test-content`: the item (title, body, tags, files, symbols or patch) holds lines of
  the task's gold test patch or names its FAIL_TO_PASS / PASS_TO_PASS tests, by the
  rules governance applies at write time. Checked only when the benchmark's tasks are
  available (`commands.inputs.load_task_secrets`); otherwise the audit says so.
"""

from __future__ import annotations

from collections.abc import Mapping

from ledger.events import TaskRef
from projections.memory import DEFAULT_POLICY, GradingSecrets, MemoryItem, leak_lines, test_names_pattern, written_by

from ._model import Flag


# -- test content -------------------------------------------------------------------------


class TestContent:
    """The grading secrets of one task, compiled as governance compiles them."""

    __test__ = False  # not a pytest class

    def __init__(self, secrets: GradingSecrets) -> None:
        self.lines = leak_lines(secrets.test_patch, DEFAULT_POLICY.min_leak_line_chars)
        self.pattern = test_names_pattern(secrets)

    def find(self, fields: Mapping[str, str]) -> list[str]:
        """One detail per field that holds test content (empty: none)."""
        details = []
        for name, text in fields.items():
            flat = " ".join(text.split())
            lines = sum(1 for line in self.lines if line in flat)
            tests = sorted({m.group(0) for m in self.pattern.finditer(text)}) if self.pattern else []
            parts = []
            if lines:
                parts.append(f"{lines} line(s) of the gold test patch")
            if tests:
                parts.append("test name(s) " + ", ".join(tests[:5]) + (" ..." if len(tests) > 5 else ""))
            if parts:
                details.append(f"{name} holds " + " and ".join(parts))
        return details


def _leak_flags(
    item: MemoryItem, version: str, task: TaskRef, sequence_id: str, pass_: str, checker: TestContent | None,
    patch_text: str | None,
) -> list[Flag]:
    flags: list[Flag] = []
    # A run's own items in its re-test passes are the design (retention), not a leak.
    own_retest = written_by(item, version) and pass_ != "initial"
    where = _where(item)
    if not own_retest and item.source_instance == task.instance_id:
        flags.append(Flag(kind="same-instance", detail=f"written for this same task {task.instance_id} {where}"))
    if (
        not own_retest
        and item.sequence_id == sequence_id
        and item.source_order is not None
        and item.source_order > task.order
    ):
        flags.append(
            Flag(
                kind="later-task",
                detail=f"written after task {item.source_order} of {sequence_id} {where}; this is task {task.order}",
            )
        )
    if checker is not None:
        fields = {
            "title": item.title,
            "body": item.body,
            "tags": "\n".join(item.tags),
            "files": "\n".join(item.files),
            "symbols": "\n".join(item.symbols),
            "patch": patch_text or "",
        }
        for detail in checker.find(fields):
            flags.append(Flag(kind="test-content", detail=detail))
    return flags


def _where(item: MemoryItem) -> str:
    origin = item.origin
    if not origin:
        return f"by v{item.source_run}"
    text = f"by v{origin[0].run}"
    for hop in origin[1:]:
        text += f", {hop.via} into v{hop.run}" + (f" from {hop.path}" if hop.path else "")
    return f"({text})"
