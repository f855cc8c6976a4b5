"""--jobs N: sequences in parallel processes, one consistent ledger, the same results."""

from __future__ import annotations

from pathlib import Path

import pytest

from .support import INICONF, SPANS, events, finished_cells, first_of, swecl, swecl_json

pytestmark = pytest.mark.slow


def test_parallel_sequences_match_a_sequential_run(tmp_path: Path, cache: Path) -> None:
    # each sequence's first three tasks: enough for the two processes' events to interleave
    common = ("run", "--stage", "plugin-blank", "--sequence", SPANS, "--sequence", INICONF, *first_of(3, SPANS, INICONF),
              "--passes", "initial,baseline")
    serial, parallel = tmp_path / "serial", tmp_path / "parallel"
    swecl(serial, *common, "--quiet", cache=cache)
    proc = swecl(parallel, *common, "--jobs", "2", "--json", cache=cache)
    assert '"event":"task_finished"' in proc.stdout  # progress reached the parent from the workers
    assert swecl_json(parallel, "metrics", cache=cache)["versions"][0]["sequences"] == \
        swecl_json(serial, "metrics", cache=cache)["versions"][0]["sequences"]
    cells = finished_cells(parallel, "1")
    assert len(cells) == len(set(cells)) == 2 * (3 + 3)
    assert "ledger OK" in swecl(parallel, "verify", cache=cache).stdout
    # both sequences really ran at the same time: their events interleave in the log
    streams = [s for _, s, t, _ in events(parallel, "task.started")]
    switches = sum(1 for a, b in zip(streams, streams[1:]) if a != b)
    assert switches > 1
