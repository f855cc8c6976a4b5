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
