"""The patch apply chain, its safety checks and test-file reverting, on real git repos."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from graders._apply import (
    ALREADY_APPLIED,
    CHAIN,
    GIT_APPLY,
    GIT_APPLY_3WAY,
    GIT_APPLY_RECOUNT,
    GIT_APPLY_REJECT,
    GNU_PATCH,
    apply_check,
    apply_patch,
    apply_test_patch,
    is_test_config_path,
    is_test_path,
    normalize_patch,
    patch_paths,
    reset_to,
    revert_test_files,
    snapshot,
    split_git_behaviour_files,
    unsafe_reason,
)
from tests.graders.exec_support import GOLD_PATCH, OPS_V1, TEST_PATCH, make_calc_repo, run_git, write


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root, _ = make_calc_repo(tmp_path / "repo")
    return root


def _tree_listing(root: Path) -> dict[str, bytes]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames:
            p = Path(dirpath) / name
            out[os.path.relpath(p, root)] = p.read_bytes() if not p.is_symlink() else b"->" + os.readlink(p).encode()
    return out


def _apply_with_reset(repo: Path, patch: str, **kw):
    prepared = snapshot(repo)
    return apply_patch(repo, patch, reset=lambda: reset_to(repo, prepared, patch_paths(normalize_patch(patch))), **kw)


def test_clean_patch_applies_with_plain_git_apply(repo: Path) -> None:
    result = _apply_with_reset(repo, GOLD_PATCH)
    assert result.ok and result.applied_with == GIT_APPLY
    assert "if x > hi:" in (repo / "calc/ops.py").read_text()


def test_crlf_patch_is_normalised_and_applies(repo: Path) -> None:
    result = _apply_with_reset(repo, GOLD_PATCH.replace("\n", "\r\n"))
    assert result.ok, result.error
    assert "\r" not in (repo / "calc/ops.py").read_text()


def test_missing_final_newline_is_added(repo: Path) -> None:
    assert normalize_patch("x") == "x\n"
    result = _apply_with_reset(repo, GOLD_PATCH.rstrip("\n"))
    assert result.ok, result.error


def test_wrong_hunk_counts_fail_as_in_swebench_but_recount_is_there_for_the_gold_tests(repo: Path) -> None:
    """swebench's chain has no `--recount`: a patch whose hunk headers miscount its lines is
    corrupt to every git apply and malformed to GNU patch. swecl fails it too (accepting it
    would grade patches swebench rejects); the gold test patch keeps the fallback."""
    broken = GOLD_PATCH.replace("@@ -13,6 +13,8 @@", "@@ -13,9 +13,2 @@")
    before = _tree_listing(repo)
    result = _apply_with_reset(repo, broken)
    assert result.status == "patch_failed", result.log
    assert [line[2:] for line in result.log.splitlines() if line.startswith("$ ")] == [
        *CHAIN, "git apply --check --reverse"]
    assert _tree_listing(repo) == before
    result = _apply_with_reset(repo, broken, strategies=(GIT_APPLY, GIT_APPLY_RECOUNT))
    assert result.ok and result.applied_with == GIT_APPLY_RECOUNT, result.log
    assert (repo / "calc/ops.py").read_text().count("if x > hi:") == 1


def test_three_way_merge_rescues_a_patch_made_on_an_older_commit(repo: Path) -> None:
    lines = [f"line {i}\n" for i in range(1, 13)]
    write(repo, "data.txt", "".join(lines))
    run_git(repo, "add", "-A")
    run_git(repo, "commit", "-q", "-m", "data")
    base = run_git(repo, "rev-parse", "HEAD")
    changed = list(lines)
    changed[4] = "line 5 fixed\n"
    write(repo, "data.txt", "".join(changed))
    patch = run_git(repo, "diff", "--full-index") + "\n"
    run_git(repo, "checkout", "-q", "--", "data.txt")
    upstream = list(lines)
    upstream[7] = "line 8 changed upstream\n"  # inside the patch's context: plain apply fails
    write(repo, "data.txt", "".join(upstream))
    run_git(repo, "commit", "-q", "-am", "upstream edit")
    assert base
    result = _apply_with_reset(repo, patch)
    assert result.ok, result.log
    assert result.applied_with == GIT_APPLY_3WAY
    text = (repo / "data.txt").read_text()
    assert "line 5 fixed" in text and "line 8 changed upstream" in text


def test_gnu_patch_fuzz_is_the_last_resort(repo: Path) -> None:
    # the context is off by a changed line git refuses, and there is no blob for --3way
    patch = GOLD_PATCH.replace("     return x\n", "     return x  # context that drifted\n")
    result = _apply_with_reset(repo, patch)
    assert result.ok, result.log
    assert result.applied_with == GNU_PATCH
    assert not list(repo.rglob("*.orig")) and not list(repo.rglob("*.rej"))


def test_failed_patch_leaves_worktree_as_it_was(repo: Path) -> None:
    before = _tree_listing(repo)
    # a removed line the file does not have: no fuzz can place it
    patch = GOLD_PATCH.replace("@@ -13,6 +13,8 @@", "@@ -13,7 +13,8 @@").replace(
        "+    if x > hi:\n", "-    this line is not in the file\n+    if x > hi:\n"
    ) + _new_file_patch("created_then_rolled_back.py")
    result = _apply_with_reset(repo, patch)
    assert not result.ok and result.status == "patch_failed"
    assert "no strategy applied" in (result.error or "")
    assert _tree_listing(repo) == before


def test_empty_patch(repo: Path) -> None:
    assert apply_patch(repo, "  \n\t\n").status == "empty_patch"
    assert apply_patch(repo, "").status == "empty_patch"


def _new_file_patch(path: str, body: str = "pwned\n") -> str:
    return (
        f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
        f"@@ -0,0 +1 @@\n+{body}"
    )


@pytest.mark.parametrize(
    ("patch", "reason"),
    [
        (_new_file_patch("../outside.txt"), ".."),
        (_new_file_patch("calc/../../outside.txt"), ".."),
        ("--- /dev/null\n+++ /tmp/swecl-abs-target.txt\n@@ -0,0 +1 @@\n+pwned\n", "absolute"),
        (_new_file_patch(".git/hooks/post-checkout", "#!/bin/sh"), ".git"),
        (_new_file_patch("sub/.git/config"), ".git"),
        (
            "diff --git a/escape b/escape\nnew file mode 120000\n--- /dev/null\n+++ b/escape\n"
            "@@ -0,0 +1 @@\n+../../outside\n\\ No newline at end of file\n",
            "symlink",
        ),
        (
            "diff --git a/abs b/abs\nnew file mode 120000\n--- /dev/null\n+++ b/abs\n"
            "@@ -0,0 +1 @@\n+/etc\n\\ No newline at end of file\n",
            "symlink",
        ),
    ],
    ids=["dotdot", "nested-dotdot", "absolute", "git-dir", "nested-git-dir", "symlink-out", "symlink-abs"],
)
def test_unsafe_patches_are_rejected_and_write_nothing(tmp_path: Path, patch: str, reason: str) -> None:
    root, _ = make_calc_repo(tmp_path / "a" / "b" / "repo")
    outside_before = _tree_listing(tmp_path)
    result = _apply_with_reset(root, patch)
    assert result.status == "patch_failed"
    assert result.error and "unsafe patch" in result.error and reason in result.error
    assert _tree_listing(tmp_path) == outside_before
    assert not Path("/tmp/swecl-abs-target.txt").exists()
    assert apply_check(root, patch) is False


def test_writing_through_a_symlink_that_leaves_the_worktree_is_rejected(tmp_path: Path) -> None:
    root, _ = make_calc_repo(tmp_path / "repo")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.py").write_text("original\n")
    os.symlink(outside, root / "linkdir")
    run_git(root, "add", "-A")
    run_git(root, "commit", "-q", "-m", "a symlink out")
    patch = (
        "--- a/linkdir/victim.py\n+++ b/linkdir/victim.py\n@@ -1 +1 @@\n-original\n+overwritten\n"
    )
    reason = unsafe_reason(root, patch)
    assert reason and "symlink" in reason
    for strategies in ((GIT_APPLY,), (GNU_PATCH,)):
        result = _apply_with_reset(root, patch, strategies=strategies)
        assert result.status == "patch_failed"
    assert (outside / "victim.py").read_text() == "original\n"


def test_a_patch_cannot_write_through_a_symlink_it_creates(repo: Path) -> None:
    patch = (
        "diff --git a/inner b/inner\nnew file mode 120000\n--- /dev/null\n+++ b/inner\n"
        "@@ -0,0 +1 @@\n+calc\n\\ No newline at end of file\n" + _new_file_patch("inner/evil.py")
    )
    assert "symlink" in (unsafe_reason(repo, patch) or "")


def test_inside_symlink_is_fine(repo: Path) -> None:
    patch = (
        "diff --git a/alias b/alias\nnew file mode 120000\n--- /dev/null\n+++ b/alias\n"
        "@@ -0,0 +1 @@\n+calc/ops.py\n\\ No newline at end of file\n"
    )
    assert unsafe_reason(repo, patch) is None
    assert _apply_with_reset(repo, patch).ok


def test_apply_check_is_a_dry_run(repo: Path) -> None:
    before = _tree_listing(repo)
    assert apply_check(repo, GOLD_PATCH) is True
    assert apply_check(repo, GOLD_PATCH.replace("@@ -13,6 +13,8 @@", "@@ -13,9 +13,2 @@")) is True
    assert apply_check(repo, "not a patch at all\n") is False
    assert apply_check(repo, "") is False
    assert _tree_listing(repo) == before


def test_patch_paths_reads_git_and_plain_headers() -> None:
    patch = (
        "diff --git a/x/old.py b/x/new.py\nsimilarity index 90%\nrename from x/old.py\nrename to x/new.py\n"
        + GOLD_PATCH
        + "--- a/plain.txt\t2020-01-01 00:00:00\n+++ b/plain.txt\t2020-01-02 00:00:00\n@@ -1 +1 @@\n-a\n+b\n"
        + 'diff --git "a/caf\\303\\251.py" "b/caf\\303\\251.py"\n--- "a/caf\\303\\251.py"\n+++ "b/caf\\303\\251.py"\n'
        "@@ -1 +1 @@\n-a\n+b\n"
    )
    assert patch_paths(patch) == ["x/old.py", "x/new.py", "calc/ops.py", "plain.txt", "café.py"]


def test_removed_line_that_looks_like_a_header_stays_content() -> None:
    patch = "--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,1 @@\n--- not a header\n keep\n"
    assert patch_paths(patch) == ["f.txt"]


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("tests/test_ops.py", True),
        ("tests/data/file.txt", True),
        ("sympy/core/tests/test_basic.py", True),
        ("testing/test_foo.py", True),
        ("testing/helper.py", True),
        ("conftest.py", True),
        ("pkg/conftest.py", True),
        ("pkg/thing_test.py", True),
        ("calc/ops.py", False),
        ("django/test/utils.py", False),  # library code, not a test
        ("sympy/testing/runtests.py", False),
        ("lib/matplotlib/testing/decorators.py", False),
        ("src/_pytest/python.py", False),
    ],
)
def test_is_test_path(path: str, expected: bool) -> None:
    assert is_test_path(path) is expected


def test_agent_edits_to_test_files_are_reverted(repo: Path) -> None:
    prepared = snapshot(repo)
    agent = (
        GOLD_PATCH
        + "diff --git a/tests/test_ops.py b/tests/test_ops.py\n--- a/tests/test_ops.py\n+++ b/tests/test_ops.py\n"
        "@@ -1,4 +1,4 @@\n-from calc.ops import add, clamp, sub\n+from calc.ops import add, clamp, sub  # agent\n \n \n def test_add():\n"
        + _new_file_patch("tests/test_agent_extra.py", "def test_x(): pass")
        + _new_file_patch("pkg/conftest.py", "import os")
    )
    result = apply_patch(repo, agent, reset=lambda: reset_to(repo, prepared, patch_paths(agent)))
    assert result.ok, result.log
    reverted = revert_test_files(repo, prepared, TEST_PATCH, also=patch_paths(agent))
    assert reverted == ["pkg/conftest.py", "tests/test_agent_extra.py", "tests/test_ops.py"]
    assert "# agent" not in (repo / "tests/test_ops.py").read_text()
    assert not (repo / "tests/test_agent_extra.py").exists()
    assert not (repo / "pkg/conftest.py").exists()
    assert "if x > hi:" in (repo / "calc/ops.py").read_text()  # the fix itself stays
    assert apply_test_patch(repo, TEST_PATCH).ok


def test_reset_to_removes_ignored_files_only_under_patch_paths(repo: Path) -> None:
    prepared = snapshot(repo)
    write(repo, "build/artifact.so", "compiled")  # ignored build output: kept
    write(repo, "build/from_patch.py", "x")  # ignored, but a patch wrote it: removed
    write(repo, "stray.txt", "untracked")  # untracked: removed
    write(repo, "calc/ops.py", OPS_V1 + "# edited\n")
    reset_to(repo, prepared, ["build/from_patch.py"])
    assert (repo / "build/artifact.so").exists()
    assert not (repo / "build/from_patch.py").exists()
    assert not (repo / "stray.txt").exists()
    assert (repo / "calc/ops.py").read_text() == OPS_V1


def test_gold_test_patch_failure_is_reported(repo: Path) -> None:
    bad = TEST_PATCH.replace("assert clamp(-5, 0, 10) == 0", "assert something_else()")
    result = apply_test_patch(repo, bad)
    assert not result.ok and result.status == "patch_failed"


# -- the chain is swebench 5.x's; each deliberate difference has its own test ----------


def test_the_chain_is_swebench_s_git_apply_cmds_in_its_order() -> None:
    swebench = pytest.importorskip("swebench.harness.run_evaluation", reason="swebench==5.0.2 (the test extra)")
    assert swebench.GIT_APPLY_CMDS == [
        "git apply --verbose", "git apply --verbose --3way", "git apply --verbose --reject",
        "patch --batch --forward --fuzz=5 -p1 -i",
    ]
    # every git apply runs with --verbose (-v), GNU patch with --batch and -p1
    assert CHAIN == (GIT_APPLY, GIT_APPLY_3WAY, GIT_APPLY_REJECT, GNU_PATCH)


def _commit_version_file(repo: Path) -> None:
    write(repo, "calc/version.py", "NAME = 'calc'\nVERSION = '2.0'\nLICENSE = 'MIT'\n")
    run_git(repo, "add", "-A")
    run_git(repo, "commit", "-q", "-m", "version 2.0")


ALREADY_THERE = (
    "diff --git a/calc/version.py b/calc/version.py\n--- a/calc/version.py\n+++ b/calc/version.py\n"
    "@@ -1,3 +1,3 @@\n NAME = 'calc'\n-VERSION = '1.0'\n+VERSION = '2.0'\n LICENSE = 'MIT'\n"
)


def test_a_patch_whose_other_hunk_is_already_applied_counts_as_applied(repo: Path) -> None:
    """sphinx-8459: GNU patch --forward skips a hunk the tree already has and exits 1 while
    the real fix applied cleanly; swebench then checks the tree with `git apply --check
    --reverse` and accepts it. So does swecl (it used to end patch_failed)."""
    _commit_version_file(repo)
    result = _apply_with_reset(repo, GOLD_PATCH + ALREADY_THERE)
    assert result.ok, result.log
    assert result.applied_with == GNU_PATCH + ALREADY_APPLIED
    assert "Reversed (or previously applied) patch detected" in result.log
    assert "if x > hi:" in (repo / "calc/ops.py").read_text()
    assert not list(repo.rglob("*.rej")) and not list(repo.rglob("*.orig"))


def test_a_rejected_try_leaves_no_rej_file_and_no_half_applied_hunk(repo: Path) -> None:
    """Difference: swebench's `--reject` try and GNU patch leave .rej/.orig files in the
    tree it tests; swecl resets before each retry and GNU patch writes none, so nothing that
    is not the patch's content reaches the tests (a test that lists files, a docs build)."""
    _commit_version_file(repo)
    before = _tree_listing(repo)
    mismatch = ALREADY_THERE.replace("-VERSION = '1.0'\n+VERSION = '2.0'", "-VERSION = '0.9'\n+VERSION = '1.0'")
    result = _apply_with_reset(repo, GOLD_PATCH + mismatch)
    assert result.status == "patch_failed"
    assert "Rejected hunk" in result.log  # the --reject try ran and rejected
    assert _tree_listing(repo) == before


def test_gnu_patch_reads_unified_diffs_only(repo: Path) -> None:
    """Difference: swebench's GNU patch also takes context, normal and ed-script diffs. The
    path checks read unified headers only, and an ed script can run commands, so swecl's
    GNU patch runs with --unified: other formats fail to apply."""
    context = (
        "*** a/calc/ops.py\n--- b/calc/ops.py\n***************\n*** 15,17 ****\n--- 15,19 ----\n"
        "          return lo\n+     if x > hi:\n+         return hi\n      return x\n"
    )
    result = _apply_with_reset(repo, context)
    assert result.status == "patch_failed"
    assert "if x > hi:" not in (repo / "calc/ops.py").read_text()


def test_git_behaviour_files_are_left_out_and_named(repo: Path) -> None:
    """Difference: swebench applies a .gitattributes a patch brings; swecl leaves sections
    touching .gitattributes/.gitmodules out (anywhere in the tree) and lists them."""
    patch = (
        _new_file_patch(".gitattributes", "* working-tree-encoding=UTF-16\n") + GOLD_PATCH
        + _new_file_patch("calc/.gitattributes", "*.py ident\n") + _new_file_patch(".gitmodules", "[submodule]\n")
    )
    result = _apply_with_reset(repo, patch)
    assert result.ok and result.applied_with == GIT_APPLY, result.log
    assert result.not_applied == [".gitattributes", "calc/.gitattributes", ".gitmodules"]
    assert "not applied (git behaviour files" in result.log
    assert not (repo / ".gitattributes").exists() and not (repo / ".gitmodules").exists()
    assert "if x > hi:" in (repo / "calc/ops.py").read_text()
    only = _apply_with_reset(repo, _new_file_patch(".gitattributes", "* -text\n"))
    assert only.status == "patch_failed" and "only git behaviour files" in (only.error or "")
    kept, dropped = split_git_behaviour_files(GOLD_PATCH)
    assert (kept, dropped) == (GOLD_PATCH, [])


def test_the_gold_test_patch_may_bring_git_behaviour_files(repo: Path) -> None:
    result = apply_test_patch(repo, TEST_PATCH + _new_file_patch("tests/.gitattributes", "*.bin binary\n"))
    assert result.ok and result.not_applied == []
    assert (repo / "tests/.gitattributes").is_file()


@pytest.mark.parametrize(
    ("path", "expected"),
    [("pytest.ini", True), ("tox.ini", True), ("setup.cfg", True), ("pyproject.toml", True),
     ("sub/dir/pyproject.toml", True), ("a/conftest.py", True), (".pytest.ini", True),
     ("setup.py", False), ("src/pytest_ini.py", False), ("docs/conf.py", False)],
)
def test_is_test_config_path(path: str, expected: bool) -> None:
    assert is_test_config_path(path) is expected


def test_test_configuration_changes_are_reverted_and_source_changes_stay(repo: Path) -> None:
    write(repo, "setup.cfg", "[metadata]\nname = calc\n")
    run_git(repo, "add", "-A")
    run_git(repo, "commit", "-q", "-m", "setup.cfg")
    prepared = snapshot(repo)
    agent = (
        GOLD_PATCH + _new_file_patch("pytest.ini", "[pytest]\naddopts = -p evil\n")
        + "diff --git a/setup.cfg b/setup.cfg\n--- a/setup.cfg\n+++ b/setup.cfg\n@@ -1,2 +1,4 @@\n"
        " [metadata]\n name = calc\n+[tool:pytest]\n+addopts = -p evil\n"
    )
    assert _apply_with_reset(repo, agent).ok
    reverted = revert_test_files(repo, prepared, TEST_PATCH, also=patch_paths(agent))
    assert sorted(reverted) == ["pytest.ini", "setup.cfg"]
    assert not (repo / "pytest.ini").exists()
    assert (repo / "setup.cfg").read_text() == "[metadata]\nname = calc\n"
    assert "if x > hi:" in (repo / "calc/ops.py").read_text()
