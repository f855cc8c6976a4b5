"""The ray executor's edges that need no Ray instance: a machine without Ray, misplaced
options, and the builtin stage's memory directory rebuilt from the ledger."""

from __future__ import annotations

from pathlib import Path

import pytest

from commands.run.memory import restore_builtin_files
from ledger import Ledger
from ledger.events import MemoryWritten
from tests.run.support import REPO_ROOT, SPANS, swecl


def test_without_ray_the_error_is_one_line_and_nothing_is_claimed(tmp_path: Path) -> None:
    # A Python where `import ray` fails, as on a machine without the extra.
    shadow = tmp_path / "no-ray" / "ray"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError(\"No module named 'ray'\")\n")
    env = {"PYTHONPATH": f"{shadow.parent}:{REPO_ROOT}"}
    results = tmp_path / "results"
    proc = swecl(results, "run", "--stage", "base", "--sequence", SPANS, "--executor", "ray", "--quiet",
                 cache=tmp_path / "cache", env=env, check=False)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "--executor ray needs Ray" in lines[0] and "swecl[ray]" in lines[0]
    assert not (results / "ledger.db").exists()  # no version was claimed


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (("--shard-dir", "shards"), "--shard-dir"),
        (("--ray-address", "127.0.0.1:1"), "--ray-address"),
        (("--max-retries", "3"), "--max-retries"),
        (("--executor", "local", "--ray-cpus", "2"), "--ray-cpus"),
    ],
)
def test_ray_options_need_the_ray_executor(tmp_path: Path, args: tuple[str, ...], flag: str) -> None:
    proc = swecl(tmp_path, "run", "--stage", "base", "--sequence", SPANS, *args, cache=tmp_path / "cache", check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"swecl: error: {flag} is for --executor ray; add --executor ray or drop {flag}"


def test_builtin_memory_files_are_rebuilt_from_the_ledger(tmp_path: Path) -> None:
    def written(item: str, path: str, body: str, seq: str = SPANS) -> MemoryWritten:
        return MemoryWritten(item_id=item, kind="builtin-file", title=path, body=body, repo="o/r", source_run="1",
                             sequence_id=seq)

    with Ledger.open(tmp_path / "ledger.db", create=True) as ledger:
        stream = f"run/1/{SPANS}"
        ledger.append(stream, [written("a1", "MEMORY.md", "first"), written("b1", "notes/x.md", "x")])
        ledger.append(stream, [written("a2", "MEMORY.md", "second"), written("evil", "../outside.md", "no")])
        ledger.append("run/1/other", [written("o1", "MEMORY.md", "another sequence", seq="other")])
        ledger.append(f"run/2/{SPANS}", [written("v2", "MEMORY.md", "another run")])
        count = restore_builtin_files(ledger, "1", SPANS, tmp_path / "dir")
    root = tmp_path / "dir" / "auto-memory"
    assert count == 3
    assert (root / "MEMORY.md").read_text() == "second"  # the latest version of each file
    assert (root / "notes" / "x.md").read_text() == "x"
    assert not (tmp_path / "dir" / "outside.md").exists()  # never outside the folder
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()) == ["MEMORY.md", "notes/x.md"]


def test_an_address_where_nothing_listens_is_refused_at_once(tmp_path: Path) -> None:
    import socket

    with socket.socket() as sock:  # a loopback port that was free a moment ago
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = swecl(tmp_path, "run", "--stage", "base", "--sequence", SPANS, "--executor", "ray",
                 "--ray-address", f"127.0.0.1:{port}", "--quiet", cache=tmp_path / "cache", check=False, timeout=60)
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith(f"swecl: error: --ray-address 127.0.0.1:{port}: nothing answers there")
    assert not (tmp_path / "ledger.db").exists()
