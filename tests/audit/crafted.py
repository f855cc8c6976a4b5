"""Crafted ledgers for the audit, replay, export and merge tests, built with the shared
`bench.ledgers.LedgerBuilder`, with patches the test chooses:

    r = LedgerBuilder(Ledger.open(path, create=True))
    r.start_run("1", stage="plugin-blank", plan={SEQ: TASKS})
    r.task("1", SEQ, 1, patch=P1, recalls=[["item-a", "item-b"]], write=Item("v1-1", patch=P1))
    r.finish_run("1")

Patches are real unified diffs (`diff_of`), so reuse is measured on real hunks.
"""

from __future__ import annotations

from bench.ledgers import Item, LedgerBuilder
from ledger.events import MemorySuperseded, TaskRef

REPO = "acme/widgets"
SEQ = "acme_widgets_sequence"
TASKS = [TaskRef(f"acme__widgets-{n}", n, REPO, 1) for n in (1, 2, 3)]

OTHER_REPO = "acme/gadgets"
OTHER_SEQ = "acme_gadgets_sequence"
OTHER_TASKS = [TaskRef(f"acme__gadgets-{n}", n, OTHER_REPO, 2) for n in (1, 2, 3)]

LEAK_LINE = "assert widgets.frobnicate(3) == 'three frobs, counted twice'"
F2P = "tests/test_widgets.py::test_frobnicate_counts_twice"


def diff_of(path: str, *lines: str) -> str:
    """A one-hunk unified diff of `path`; each line starts with ' ', '-' or '+'."""
    old = sum(1 for line in lines if line[:1] in " -")
    new = sum(1 for line in lines if line[:1] in " +")
    head = f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1,{old} +1,{new} @@\n"
    return head + "".join(line + "\n" for line in lines)


P1 = diff_of("widgets/core.py", " def frobnicate(n):", "-    return n", "+    return n * 2")
P2 = diff_of("widgets/text.py", " def label(x):", "-    return str(x)", "+    return f'{x} frobs'")
P3 = diff_of(
    "widgets/core.py",
    " def frobnicate(n):", "-    return n", "+    return n * 3", " def twice(n):", "-    return n + 0", "+    return n + n",
)
OWN_WRONG = diff_of("widgets/core.py", " def frobnicate(n):", "-    return n", "+    return -n")
TEST_PATCH = diff_of(
    "tests/test_widgets.py", " import widgets", "+def test_frobnicate_counts_twice():", f"+    {LEAK_LINE}"
)


def blank_run(r: LedgerBuilder, version: str = "1") -> None:
    """plugin-blank over SEQ: three tasks, each writing one item with its patch."""
    r.start_run(version, stage="plugin-blank", plan={SEQ: TASKS})
    r.pass_mark(version, SEQ, "initial", "started")
    r.task(version, SEQ, 1, patch=P1, write=Item(f"v{version}-1", patch=P1))
    r.task(version, SEQ, 2, patch=P2, recalls=[[f"v{version}-1"]],
           write=Item(f"v{version}-2", patch=P2, body=f"Remember: {LEAK_LINE}"))
    r.task(version, SEQ, 3, patch=P3, recalls=[[f"v{version}-1", f"v{version}-2"]],
           write=Item(f"v{version}-3", patch=P3, body="See test_frobnicate_counts_twice for the expected counts."))
    r.pass_mark(version, SEQ, "initial", "finished")
    r.finish_run(version)


def accum_run(r: LedgerBuilder, version: str = "2", source: str = "1") -> dict[str, int]:
    """plugin-accum seeded from `source`: task 1 is killed once (its recall is history),
    redone reusing the seeded item of the same task; a dream supersedes the seeded item
    of task 3; the re-test of task 1 recalls the run's own item and the seeded one.
    Returns the seqs of the interesting events."""
    seqs: dict[str, int] = {}
    r.start_run(version, stage="plugin-accum", plan={SEQ: TASKS})
    seqs["seed"] = r.seed(version, source).seq
    r.pass_mark(version, SEQ, "initial", "started")
    first = r.task(version, SEQ, 1, patch=OWN_WRONG, recalls=[[f"v{source}-1", f"v{source}-3", "ghost-item"]],
                   abandon=True)
    seqs["recall_abandoned"] = first[1].seq
    second = r.task(version, SEQ, 1, attempt=2, patch=P1, recalls=[[f"v{source}-1", f"v{source}-3", f"v{source}-2"]],
                    write=Item(f"v{version}-1", patch=P1))
    seqs["recall_attempt2"] = second[1].seq
    supersede(r, version, f"v{source}-3", f"v{version}-1", "contradiction: newer fix of frobnicate")
    r.task(version, SEQ, 2, patch=P2, write=Item(f"v{version}-2", patch=P2))
    r.task(version, SEQ, 3, patch=P3, write=Item(f"v{version}-3", patch=P3))
    r.pass_mark(version, SEQ, "initial", "finished")
    r.pass_mark(version, SEQ, "retest", "started")
    retest = r.task(version, SEQ, 1, pass_="retest", patch=P1, recalls=[[f"v{version}-1", f"v{source}-1"]])
    seqs["recall_retest"] = retest[1].seq
    r.pass_mark(version, SEQ, "retest", "finished")
    r.finish_run(version)
    return seqs


def supersede(r: LedgerBuilder, version: str, item_id: str, by: str, reason: str, dream_id: str = "dream-1") -> None:
    """A dream that supersedes `item_id` by `by`."""
    r.dream(version, dream_id, [MemorySuperseded(item_id=item_id, by=by, reason=reason, dream_id=dream_id)])


def secrets_for_task_1() -> dict[str, object]:
    from commands.memory import GradingSecrets

    return {"acme__widgets-1": GradingSecrets(test_patch=TEST_PATCH, fail_to_pass=(F2P,), pass_to_pass=())}
