"""The one patch path every agent shares, on real git repositories."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from agents._diff import apply_patch, check_patch, extract_diff, head_commit, unsafe_paths, worktree_patch

from ledger import SweclError

from .conftest import GREET_FIX, git


def _applies_cleanly(tmp_path: Path, base_repo: Path, patch: str) -> Path:
    """Clone the base and apply `patch` with plain git: the patch must rebuild the edit."""
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(base_repo), str(clone)], check=True)
    subprocess.run(["git", "apply", "-"], cwd=clone, input=patch.encode(), check=True)
    return clone


def test_clean_worktree_has_empty_patch(repo: Path) -> None:
    assert worktree_patch(repo) == ""


def test_patch_holds_edits_new_and_deleted_files_but_not_ignored_or_bytecode(repo: Path, tmp_path: Path) -> None:
    base = head_commit(repo)
    (repo / "pkg" / "util.py").write_text((repo / "pkg" / "util.py").read_text().replace("result = 0", "result = 0.0"))
    (repo / "pkg" / "new_mod.py").write_text("X = 1\n")
    (repo / "README.md").unlink()
    (repo / "debug.log").write_text("ignored by .gitignore\n")
    (repo / "pkg" / "__pycache__").mkdir()
    (repo / "pkg" / "__pycache__" / "util.cpython-311.pyc").write_bytes(b"\x00\x01junk")
    status_before = git(repo, "status", "--porcelain")

    patch = worktree_patch(repo)

    assert "diff --git a/pkg/util.py b/pkg/util.py" in patch and "+    result = 0.0" in patch
    assert "new file mode" in patch and "+++ b/pkg/new_mod.py" in patch
    assert "deleted file mode" in patch and "--- a/README.md" in patch
    assert "debug.log" not in patch and "__pycache__" not in patch
    # the worktree's own index is untouched (nothing staged by taking the patch)
    assert git(repo, "status", "--porcelain") == status_before
    assert head_commit(repo) == base
    clone = _applies_cleanly(tmp_path, repo, patch)
    assert (clone / "pkg" / "new_mod.py").read_text() == "X = 1\n"
    assert not (clone / "README.md").exists()


def test_patch_is_against_the_base_even_if_the_agent_committed(repo: Path) -> None:
    base = head_commit(repo)
    (repo / "pkg" / "util.py").write_text("committed = True\n")
    git(repo, "commit", "-qam", "agent commit")
    (repo / "extra.txt").write_text("staged\n")
    git(repo, "add", "extra.txt")
    patch = worktree_patch(repo, base)
    assert "+committed = True" in patch and "+++ b/extra.txt" in patch
    since_head = worktree_patch(repo)  # default base: HEAD, now the agent's commit
    assert "+++ b/extra.txt" in since_head and "committed" not in since_head


def test_apply_then_diff_round_trips_a_patch(repo: Path) -> None:
    assert check_patch(repo, GREET_FIX)
    assert apply_patch(repo, GREET_FIX) == "git apply"
    patch = worktree_patch(repo)
    assert "+    if name is None:" in patch
    # applying again fails (already applied), atomically
    assert not check_patch(repo, GREET_FIX)
    assert apply_patch(repo, GREET_FIX) is None
    assert worktree_patch(repo) == patch


def test_apply_recounts_a_hunk_with_wrong_line_counts(repo: Path) -> None:
    broken = GREET_FIX.replace("@@ -2,6 +2,8 @@", "@@ -2,6 +2,9 @@")
    assert subprocess.run(["git", "apply", "--check", "-"], cwd=repo, input=broken.encode()).returncode != 0
    assert apply_patch(repo, broken) == "git apply --recount"
    assert "if name is None" in (repo / "pkg" / "util.py").read_text()


def test_apply_normalises_crlf_transport_damage(repo: Path) -> None:
    assert apply_patch(repo, GREET_FIX.replace("\n", "\r\n")) is not None
    assert "\r" not in (repo / "pkg" / "util.py").read_text()


def test_unsafe_paths_are_refused_before_touching_disk(repo: Path, tmp_path: Path) -> None:
    evil = "--- a/../outside.txt\n+++ b/../outside.txt\n@@ -0,0 +1 @@\n+x\n"
    git_evil = "diff --git a/.git/config b/.git/config\n--- a/.git/config\n+++ b/.git/config\n@@ -1 +1 @@\n-a\n+b\n"
    absolute = f"--- /dev/null\n+++ {tmp_path}/abs.txt\n@@ -0,0 +1 @@\n+x\n"
    assert unsafe_paths(evil) == ["a/../outside.txt", "b/../outside.txt"]
    assert unsafe_paths(git_evil)
    assert unsafe_paths(absolute)
    assert unsafe_paths(GREET_FIX) == []
    for patch in (evil, git_evil, absolute):
        assert apply_patch(repo, patch) is None
        assert not check_patch(repo, patch)
    assert not (tmp_path / "outside.txt").exists() and not (tmp_path / "abs.txt").exists()


def test_empty_patch_is_not_applied(repo: Path) -> None:
    assert apply_patch(repo, "  \n") is None
    assert not check_patch(repo, "")


def test_extract_diff_from_fenced_and_bare_answers() -> None:
    fenced = f"Here is the fix:\n\n```diff\n{GREET_FIX}```\nThat should do it."
    assert extract_diff(fenced) == GREET_FIX
    bare = "Fix below.\n" + GREET_FIX
    assert extract_diff(bare) == GREET_FIX
    two = "```diff\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n```\nand\n```patch\n--- a/y.py\n+++ b/y.py\n@@ -1 +1 @@\n-c\n+d\n```"
    joined = extract_diff(two)
    assert joined is not None and "+++ b/x.py" in joined and "+++ b/y.py" in joined
    assert extract_diff("I could not find the bug.") is None
    assert extract_diff("```python\nprint('no diff')\n```") is None


def test_a_missing_or_non_git_worktree_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(SweclError, match="does not exist"):
        worktree_patch(tmp_path / "nowhere")
    (tmp_path / "plain").mkdir()
    with pytest.raises(SweclError, match="git rev-parse HEAD failed"):
        worktree_patch(tmp_path / "plain")
