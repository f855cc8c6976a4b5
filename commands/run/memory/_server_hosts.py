"""The memory server's hosts of one sequence, and each task attempt's handle on it.

`SequenceServers` starts the sequence's server when a task first asks (the initial pass's
kept from task to task; the re-test pass's a fresh one on a copy of the initial pass's
last snapshot; the baseline none), restores it from the ledger (its last snapshot, else
the run's seed), runs plugin-dreamed's dream pass on it, and closes it. `ServerRecall` is
one attempt's `agents.Recall`: an MCP client gets the server's own tools through the
door's recording proxy; the harness's recall calls `--memory-recall-tool`.

The client (`_server_host`, `_server_snapshot`: asyncio, the MCP SDK, pyfastcdc) is
imported where a host starts or a snapshot is taken: the task loop imports this module,
and a run without --memory-server never loads it. What a call is recorded under
(`_server_record`) is light.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ledger import Ledger, NewEvent, StreamRange, event_id_for
from ledger.events import SnapshotFile
from projections import retest_row

from ._server_policy import ITEM_PREFIX, MemoryPolicy, fill, recalled_items
from ._server_record import CallContext, LedgerRecorder, MemoryServerError
from ._server_seed import server_seed_files

if TYPE_CHECKING:
    from agents import RecalledItem

    from ._server_host import ServerHost

# The calls that may have written to the server (its own recall calls only read).
REPLAYED = frozenset({"agent", "write", "dream"})

__all__ = ["SequenceServers", "ServerRecall", "dreamed", "last_snapshot"]


class ServerRecall:
    """One task attempt's memory handle (an `agents.Recall`): an MCP client gets the
    memory server's tools through `door`; `recall` is the harness's call to the recall tool."""

    def __init__(self, host: ServerHost, door: Any, policy: MemoryPolicy, context: CallContext, repo: str) -> None:
        self.host, self.door, self.policy, self.context, self.repo = host, door, policy, context, repo

    def recall(self, query: str, k: int = 5, repo: str | None = None) -> list[RecalledItem]:
        if self.policy.recall_tool is None:
            return []  # no recall tool named: the agent searches with the server's tools itself
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
        """The server's tools as it announced them: what the prompt tells the agent to use."""
        return list(self.host.info.tool_names) if self.host.info else []


# -- hosts per sequence -----------------------------------------------------------------------


class SequenceServers:
    """The memory server hosts of one sequence of a run: the initial pass's (kept from task
    to task), the re-test pass's (a fresh host on the initial pass's last snapshot). Started
    when a task first asks; closed by `close`. `root` is the sequence's server folder in the
    run's results (`_provider/`, hidden from the agent's sandbox, like the ledger)."""

    def __init__(self, policy: MemoryPolicy, root: Path, ledger_path: Path, version: str, sequence_id: str, *,
                 sandbox: Any, network: bool, dream: bool = False, dream_order: int = 0,
                 hidden: frozenset[str] = frozenset()) -> None:
        self.policy, self.root, self.ledger_path = policy, root, Path(ledger_path)
        self.version, self.sequence_id = version, sequence_id
        self.sandbox, self.network = sandbox, network
        self.dream = dream and policy.dream_tool is not None  # plugin-dreamed: the dream pass before the first task
        self.dream_order = dream_order  # the dream's snapshot stands before task dream_order + 1 (a fork's K)
        self._host: ServerHost | None = None
        self._phase: str | None = None
        # `swecl counterfactual`: the tasks whose writes the server must never have had
        # (from the hidden items `server:ID`); its data is then rebuilt without them.
        self.hidden_tasks = frozenset(i.removeprefix(ITEM_PREFIX) for i in hidden if i.startswith(ITEM_PREFIX))

    def host_for(self, ledger: Ledger, pass_: str) -> ServerHost | None:
        if pass_ == "baseline":
            return None
        # The re-test pass and each `retest-{i}` row (--retest-every) recall the memory as
        # it stood at their cut-off: a host of their own, on the last snapshot before it.
        phase = pass_ if pass_.startswith("retest-") else "initial" if pass_ == "initial" else "retest"
        if self._phase == phase and self._host is not None:
            return self._host
        self.close()
        host = self._start(ledger, phase)
        self._host, self._phase = host, phase
        if phase == "initial" and self.dream and not dreamed(ledger, self.version, self.sequence_id):
            self._dream(ledger, host)
        return host

    def _start(self, ledger: Ledger, phase: str) -> ServerHost:
        """A host of `phase` on a fresh data directory, restored from the ledger (the last
        snapshot before the phase's cut-off), with the tools the options name."""
        from ._server_host import ServerHost  # lazy: asyncio, the MCP SDK
        from ._server_snapshot import restore_server_data  # lazy: pyfastcdc, with the client

        folder = self.root / phase
        shutil.rmtree(folder, ignore_errors=True)  # never what an earlier process left: the ledger says
        data = folder / "data"
        row = retest_row(phase)
        # Without hidden tasks, the last snapshot before the cut-off; with them, the data is
        # rebuilt from the run's seed by the calls that made it, theirs left out (`_replay`).
        seed = None if self.hidden_tasks else last_snapshot(ledger, self.version, self.sequence_id, upto_order=row)
        if seed is None:
            # A copy-seeded run (plugin-accum) before its first snapshot: the source run's.
            seed = server_seed_files(ledger, self.version, self.sequence_id)
        if seed is not None:
            # The initial pass after a stop, or the re-test pass: the memory as the last
            # initial-pass task left it (or as the seed gave it).
            restore_server_data(ledger, seed, data)
        recorder = LedgerRecorder(self.ledger_path, self.version, self.sequence_id)
        # The model gateway records from threads of its own: a connection of its own.
        model_recorder = LedgerRecorder(self.ledger_path, self.version, self.sequence_id) \
            if self.policy.model_endpoint is not None else None
        host = ServerHost(self.policy.spec, data, recorder, sequence_id=self.sequence_id,
                          call_timeout_s=self.policy.call_timeout_s, sandbox=self.sandbox, network=self.network,
                          about=self.policy.about(),
                          model_endpoint=self.policy.model_endpoint, model_recorder=model_recorder,
                          allow_hosts=self.policy.allow_hosts)
        host.__enter__()
        offered = host.info.tool_names if host.info else []
        for tool in (self.policy.recall_tool, self.policy.write_tool, self.policy.dream_tool if self.dream else None):
            if tool is not None and tool not in offered:
                host.close()
                raise MemoryServerError(f"the memory server {self.policy.spec.redacted()!r} has no tool {tool!r} "
                                        f"(it offers: {', '.join(offered) or 'none'})")
        if self.hidden_tasks:
            self._replay(ledger, host, row)
        return host

    def _replay(self, ledger: Ledger, host: ServerHost, upto_order: int | None) -> None:
        """The server's data as the initial pass made it (up to a row's task, when given)
        without the hidden tasks: every call that may have written to it (the agents', the
        write policy's, the dream's) made again in order on a fresh server, but those of the
        hidden tasks; recorded with via `replay`. A replay that fails fails the re-run."""
        failures = len(host.failures)
        for rec in ledger.read(types=["memory.provider.called"], ranges=[StreamRange(f"run/{self.version}/{self.sequence_id}")]):
            ev = rec.event
            if (ev.pass_ != "initial" or ev.via not in REPLAYED or ev.failure is not None
                    or ev.instance_id in self.hidden_tasks or (upto_order is not None and ev.order > upto_order)):
                continue
            arguments = json.loads(ledger.get_blob(ev.arguments)) if ev.arguments else {}
            host.call(CallContext(sequence_id=self.sequence_id, instance_id=ev.instance_id, order=ev.order,
                                  pass_="initial", attempt=ev.attempt, via="replay"), ev.tool, arguments)
            if len(host.failures) > failures:
                host.close()
                raise MemoryServerError(f"the memory server failed replaying {ev.tool} of {ev.instance_id or 'the dream'} "
                                        f"without {', '.join(sorted(self.hidden_tasks))}: {host.failures[-1].message}")

    def _dream(self, ledger: Ledger, host: ServerHost) -> None:
        """plugin-dreamed's dream pass over the server: its consolidation tool, once, on the
        seed, then the data directory as it left it (a snapshot of no task, order 0, or K-1
        in a fork dreamed at K, which the first task starts on and a resume finds: the
        dream is not called again)."""
        from ._server_snapshot import server_snapshot_event, snapshot_server_data  # lazy: pyfastcdc, with the client

        assert self.policy.dream_tool is not None
        failures = len(host.failures)
        context = CallContext(sequence_id=self.sequence_id, instance_id="", order=self.dream_order, via="dream")
        args = fill(self.policy.dream_args, {"sequence_id": self.sequence_id})
        result = host.call(context, self.policy.dream_tool, args)
        if len(host.failures) > failures or result.get("isError"):
            why = host.failures[-1].message if len(host.failures) > failures else \
                " ".join(str(c.get("text", "")) for c in result.get("content") or [] if isinstance(c, dict))[:300]
            self.close()
            raise MemoryServerError(f"the dream pass of sequence {self.sequence_id} failed: "
                                    f"{self.policy.dream_tool} of {self.policy.spec.redacted()!r}: {why}")
        with host.idle():
            manifest = snapshot_server_data(ledger, host.data_dir)
        ledger.append(f"run/{self.version}/{self.sequence_id}", [NewEvent(
            server_snapshot_event(manifest, sequence_id=self.sequence_id, instance_id=None, order=self.dream_order),
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


def last_snapshot(ledger: Ledger, version: str, sequence_id: str,
                  upto_order: int | None = None) -> list[SnapshotFile] | None:
    """The files of the sequence's last initial-pass server snapshot in run `version` (of
    a task at or before `upto_order`, when given)."""
    last = None
    for rec in ledger.read(types=["memory.provider.snapshot"], ranges=[StreamRange(f"run/{version}/{sequence_id}")]):
        if rec.event.pass_ == "initial" and (upto_order is None or rec.event.order <= upto_order):
            last = rec.event.files
    return last
