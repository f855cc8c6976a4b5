"""The builtin stage's memory folder is named after a sequence id, which is dataset text."""

from __future__ import annotations

from pathlib import Path

from projections import Results


def test_a_plain_sequence_id_is_the_folder_name(tmp_path: Path) -> None:
    results = Results(tmp_path)
    assert results.builtin_dir("3", "django_django_sequence") == tmp_path / "v3" / "_builtin" / "django_django_sequence"


def test_a_sequence_id_that_is_not_a_plain_name_never_leaves_the_run_folder(tmp_path: Path) -> None:
    results = Results(tmp_path)
    base = (tmp_path / "v3" / "_builtin").resolve()
    names = set()
    for hostile in ("../../etc", "/abs/olute", "a/b", "..", ".", ".hidden", "x\x00y", "-rf", "a b", "a\udcffb"):
        path = results.builtin_dir("3", hostile)
        assert path.resolve().parent == base, hostile
        names.add(path.name)
    assert len(names) == 10  # distinct ids never share a folder
    assert results.builtin_dir("3", "a/b") != results.builtin_dir("3", "a_b")


def test_a_retest_reads_the_builtin_memory_as_it_stands_and_its_writes_are_discarded(tmp_path: Path) -> None:
    """The initial pass keeps its notes in the sequence's folder; a re-test gets a copy, so
    what the agent notes while re-tested never reaches the initial pass's later tasks."""
    from commands.run.memory import builtin_memory_for

    kept = tmp_path / "v3" / "_builtin" / "seq"
    (kept / "auto-memory").mkdir(parents=True)
    (kept / "auto-memory" / "MEMORY.md").write_text("- task 1: read the failing test first\n")
    assert builtin_memory_for(kept, "initial", tmp_path / "scratch-1") == kept
    assert builtin_memory_for(kept, "baseline", tmp_path / "scratch-2") is None
    assert builtin_memory_for(None, "retest", tmp_path / "scratch-3") is None

    for pass_ in ("retest-1", "retest"):
        copy = builtin_memory_for(kept, pass_, tmp_path / f"scratch-{pass_}")
        assert copy is not None and copy != kept and not copy.is_relative_to(kept)
        assert (copy / "auto-memory" / "MEMORY.md").read_text() == "- task 1: read the failing test first\n"
        (copy / "auto-memory" / "MEMORY.md").write_text("written while re-tested\n")
        (copy / "auto-memory" / "extra.md").write_text("x")
    assert sorted(p.name for p in (kept / "auto-memory").iterdir()) == ["MEMORY.md"]
    assert (kept / "auto-memory" / "MEMORY.md").read_text() == "- task 1: read the failing test first\n"
    # A sequence whose initial pass wrote nothing yet: the re-test starts from an empty folder.
    empty = builtin_memory_for(tmp_path / "none-yet", "retest-1", tmp_path / "scratch-empty")
    assert empty is not None and empty.is_dir() and not any(empty.iterdir())
