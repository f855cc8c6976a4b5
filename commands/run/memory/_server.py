"""A user's MCP memory server as a run's memory (`swecl run --memory-server SPEC`).

The server takes the place of swecl's substrate in a memory stage: one host per run and
sequence (`_server_hosts`), started on the first task that needs it. Per task attempt the
agent gets a door to it (`ServerRecall`). After an initial-pass task the harness calls
`--memory-write-tool` with what the task taught (`_server_policy`), so a server the agent
never writes to still accumulates the same stream, then snapshots the server's data
directory with the task's finish. The re-test pass gets a fresh host on a copy of the
sequence's last initial-pass snapshot (what it writes reaches nothing else); the baseline
none. A plugin-accum run's first host starts on its seed (`_server_seed`); a resumed run
redoes the tasks the server failed (`resume`), and asks again for the values of the
variables it maps (`_server_resume`).
"""

from __future__ import annotations

import threading
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from commands.inputs import Benchmark, Sequence, Task
from ledger import Event, Ledger, NewEvent, StreamRange, SweclError
from ledger.events import GradeFinished
from ledger.patches import patch_paths
from projections import Results, RunOutcomes, read_run

from commands.memory import patch_facts

from .._fork_spec import parse_fork
from .._progress import Reporter
from ._interface import AgentMemory, MemoryBackend, SequenceMemory, SequencePlace, TaskMemory
from ._server_hosts import SequenceServers, ServerRecall
from ._server_policy import ITEM_PREFIX, check_server_options, policy_of, recalled_items, write_arguments
from ._server_record import CallContext
from ._server_seed import apply_server_seed, resolve_server_seed

if TYPE_CHECKING:
    from ._server_host import ServerHost

__all__ = ["ServerMemory", "ServerSequence", "ServerTask"]


class _ServerTask(TaskMemory):
    def __init__(self, sequence: _ServerSequence, host: ServerHost, task: Task, pass_: str, attempt: int,
                 release: Any) -> None:
        self.release = release  # the sequence's server lock, let go once when the attempt is over
        self.sequence, self.host, self.pass_, self.attempt, self.repo = sequence, host, pass_, attempt, task.repo
        self.context = CallContext(sequence_id=sequence.place.sequence.id, instance_id=task.instance_id,
                                   order=task.order, pass_=pass_, attempt=attempt)
        self.failures_before = len(host.failures)
        self.failed: str | None = None

    def close(self) -> None:
        release, self.release = self.release, None
        if release is not None:
            release()

    def for_agent(self, stack: ExitStack, scratch: Path) -> AgentMemory:
        door = stack.enter_context(self.host.door(scratch / "memory-server", self.context))
        recall = ServerRecall(self.host, door, self.sequence.servers.policy, self.context, self.repo)
        return AgentMemory(recall=recall, prompt_style=self.sequence.prompt_style)

    def after_grade(self, task: Task, result: Any, grade: GradeFinished, failure: str | None) -> str | None:
        if self.pass_ == "initial" and failure is None and not self._new_failures():
            self._write(task, *self.taught(task, result, grade))
        if self._new_failures():
            self.failed = self.host.failures[-1].message
        return self.failed

    def taught(self, task: Task, result: Any, grade: GradeFinished) -> tuple[str | None, str]:
        """What the harness's write gives the server of the task: a patch and its outcome
        (the agent's patch and its grade; the oracle arm's: the gold patch, resolved)."""
        return result.patch, grade.status

    def _new_failures(self) -> bool:
        return len(self.host.failures) > self.failures_before

    def _write(self, task: Task, patch: str | None, status: str) -> None:
        """The write policy: what the task taught, to the server's write tool (recorded
        with via write). The patch goes without its test-file hunks, as the daydream's."""
        policy = self.sequence.servers.policy
        if policy.write_tool is None:
            return
        test_files = patch_paths(task.test_patch) if task.test_patch else []
        facts = patch_facts(patch or None, drop=test_files)
        args = write_arguments(policy, instance_id=task.instance_id, repo=task.repo, order=task.order, outcome=status,
                               files=list(facts.files), patch=facts.kept_patch or "")
        self.host.call(replace(self.context, via="write"), policy.write_tool, args)

    def finish(self, task: Task, result: Any, grade: GradeFinished,
               ids: Any) -> tuple[list[Event | NewEvent], list[bytes]]:
        if self.failed is not None:
            # What a failing server left is no state of the memory: no snapshot, and the
            # next task starts a fresh server on the last one.
            self.sequence.servers.discard()
            return [], []
        if self.pass_ != "initial":
            return [], []
        # The server is the memory: its data directory as the task left it (no call runs
        # meanwhile), atomic with the task's finish.
        from ._server_snapshot import server_snapshot_event, snapshot_server_data  # lazy: pyfastcdc, --memory-server only

        with self.host.idle():
            manifest = snapshot_server_data(self.sequence.place.ledger, self.host.data_dir)
        return [NewEvent(server_snapshot_event(
            manifest, sequence_id=self.context.sequence_id, instance_id=task.instance_id, order=task.order,
            pass_=self.pass_, attempt=self.attempt), ids("provider.snapshot"))], []


class _ServerSequence(SequenceMemory):
    ordered_initial = True
    task_memory: type[_ServerTask] = _ServerTask  # what each attempt's memory is

    def __init__(self, place: SequencePlace, servers: SequenceServers, prompt_style: str) -> None:
        super().__init__(place)
        self.servers, self.prompt_style = servers, prompt_style
        # One task at a time on the sequence's server, whichever pass it is of: with
        # --task-jobs the re-test rows run beside the initial pass, and a task's calls,
        # failures and snapshot must be its own. Tasks without memory (the baseline) and
        # other sequences (each with its own server) still run at once.
        self.lock = threading.Lock()

    def task(self, task: Task, pass_: str, attempt: int) -> TaskMemory:
        if pass_ == "baseline":
            return TaskMemory()
        self.lock.acquire()
        try:
            host = self.servers.host_for(self.place.ledger, pass_)
        except BaseException:
            self.lock.release()
            raise
        return self.task_memory(self, host, task, pass_, attempt, self.lock.release)

    def close(self) -> None:
        self.servers.close()

    def resume(self, state: RunOutcomes) -> None:
        """A resumed run: the tasks whose last attempt the memory server failed (infra_error
        with a failed call recorded) run again as their next attempt, on a fresh server
        restored from the last snapshot; the failed attempts stay recorded. In the initial
        pass only the failures after its last task that finished with a working server: a
        failed task followed by one that finished ran the memory on without it, so redoing
        it out of order would show it a later memory. Once an initial-pass task is redone,
        the re-test pass (which recalls the initial pass's end) is redone whole."""
        place = self.place
        seq = state.sequences.get(place.sequence.id)
        if seq is None:
            return
        failed = {(rec.event.pass_, rec.event.order, rec.event.attempt)
                  for rec in place.ledger.read(types=["memory.provider.called"], ranges=[StreamRange(place.stream)])
                  if rec.event.failure is not None}

        def server_failed(pass_: str, order: int) -> bool:
            cell = seq.passes.get(pass_, {}).get(order)
            return cell is not None and cell.done and cell.status == "infra_error" and (pass_, order, cell.attempt) in failed

        reopen: list[tuple[str, int]] = []
        initial = seq.passes.get("initial", {})
        for task in reversed(place.sequence.tasks):
            cell = initial.get(task.order)
            if cell is None or not cell.done:
                continue
            if not server_failed("initial", task.order):
                break
            reopen.append(("initial", task.order))
        retest = seq.passes.get("retest", {})
        reopen += [("retest", order) for order in retest if (reopen and retest[order].done) or server_failed("retest", order)]
        for pass_, order in reopen:
            # Dropped from this process's view only: the attempt numbers (`attempts`) keep
            # it, so the redo is the next attempt; nothing recorded changes.
            del seq.passes[pass_][order]
        if reopen:
            place.reporter.note(f"{place.sequence.id}: {len(reopen)} task(s) the memory server failed run again "
                                "on a fresh server, from its last snapshot")


class ServerMemory(MemoryBackend):
    kind = "server"
    recorded_mode = "plugin-real"
    sequence_memory = _ServerSequence
    state_label = "its memory server's data"

    def check(self) -> None:
        check_server_options(self.opts, self.stage)

    def check_seed(self, ledger: Ledger, version: str, benchmark: Benchmark, sequences: list[Sequence]) -> None:
        if self.stage.seeds:
            resolve_server_seed(ledger, version, self.opts.source_memory, [s.id for s in sequences])

    def prepare(self, ledger: Ledger, version: str, benchmark: Benchmark, sequences: list[Sequence],
                reporter: Reporter, fork: Any = None) -> None:
        # A server's dream is its own tool's, called per sequence when its host first starts.
        if fork is None and self.stage.seeds:
            plan = resolve_server_seed(ledger, version, self.opts.source_memory, [s.id for s in sequences])
            apply_server_seed(ledger, plan)
            reporter.note(plan.describe())

    def fork_snapshots(self, ledger: Ledger, fork_text: str, source: str, cuts: dict[str, int]) -> dict[str, int]:
        """Per sequence, the source's last initial-pass server snapshot before its task K: the
        data the fork's server starts on (a fork of a fork finds it along the chain)."""
        out: dict[str, int] = {}
        for rec in read_run(ledger, source, ["memory.provider.snapshot"]):
            ev = rec.event
            if ev.pass_ == "initial" and ev.sequence_id in cuts and rec.seq <= cuts[ev.sequence_id]:
                out[ev.sequence_id] = rec.seq
        missing = sorted(set(cuts) - set(out))
        if missing:
            raise SweclError(f"--fork {fork_text}: run {source} has no memory server snapshot of sequence "
                             f"{missing[0]} before the fork's task: nothing to start its server on")
        return out

    def sequence_folder(self, results: Results, version: str, sequence_id: str) -> Path | None:
        return results.provider_dir(version, sequence_id)

    def cannot_hide_items(self, version: str) -> str | None:
        return None  # a hidden task's writes are left out when the server's data is rebuilt (`SequenceServers._replay`)

    def hideable_items(self, ledger: Ledger, version: str) -> set[str]:
        """What can be hidden: each task that wrote to the server, as `provider:ID`."""
        return {ITEM_PREFIX + rec.event.instance_id for rec in read_run(ledger, version, ["memory.provider.called"])
                if rec.event.via in ("write", "agent") and rec.event.instance_id}

    def recalled_items(self, ledger: Ledger, stream: str, cell: tuple[str, int, int], after: int = 0) -> list[str]:
        """The items an attempt's recall calls gave (pass, order, attempt), in order."""
        found: list[str] = []
        for rec in ledger.read(types=["memory.provider.called"], ranges=[StreamRange(stream)], after=after):
            ev = rec.event
            if (ev.pass_, ev.order, ev.attempt) == cell and ev.via == "recall" and ev.result and not ev.is_error:
                text = ledger.get_blob(ev.result).decode("utf-8", "replace")
                items = recalled_items({"content": [{"type": "text", "text": text}]}, 50)
                found += [i.item_id for i in items if i.item_id.startswith(ITEM_PREFIX) and i.item_id not in found]
        return found

    def restore_folder(self, ledger: Ledger, version: str, sequence_id: str, folder: Path) -> Path | None:
        # Any empty folder: a host starts on the data its pass's snapshot in the ledger holds.
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def sequence(self, place: SequencePlace) -> SequenceMemory:
        if place.folder is None:
            raise SweclError("--memory-server runs its sequences in the run's own process only (report this)")
        servers = SequenceServers(policy_of(self.opts), place.folder, place.ledger.path, place.version,
                                  place.sequence.id, sandbox=place.sandbox, network=place.network,
                                  hidden=place.hidden, **self._dream())
        return self.sequence_memory(place, servers, self.stage.prompt_style)  # type: ignore[call-arg]

    def _dream(self) -> dict[str, Any]:
        """Whether the sequence's server is dreamed before the run's first task, and the order
        its snapshot then stands before: plugin-dreamed's before task 1; a fork's only with
        --dream-at-fork, before task K (V's dream, if any, is in V's snapshots before K)."""
        if self.opts.fork is None:
            return {"dream": self.stage.dreams_before_eval, "dream_order": 0}
        return {"dream": self.opts.dream_at_fork and self.stage.dreams_before_eval,
                "dream_order": parse_fork(self.opts.fork)[1] - 1}


ServerSequence, ServerTask = _ServerSequence, _ServerTask  # what another kind builds on (`_oracle`)
