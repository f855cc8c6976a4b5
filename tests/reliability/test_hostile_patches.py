"""Hostile patches and repositories: nothing is written outside the worktree, and nothing
of a patch runs outside the test command.

Every patch here goes the whole way a model's patch goes: `swecl grade` replays it
(the predictions agent applies it with `git apply` and takes the worktree's diff, or
passes it on as given when git refuses), then the swebench grader checks it and runs
its apply chain (`git apply`, `--3way`, `--recount`, GNU `patch`), reverts test files,
applies the gold test patch and runs pytest. The repository under test is built here
and carries hostile content of its own: a committed symlink pointing out of the tree.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from bench.processes import REPO_ROOT, read_blobs, read_events
from tests.inprocess import swecl

from .support import (
    CALC_FILES,
    CALC_GOLD,
    calc_curriculum,
    git,
    ledger_state,
    make_repo,
    new_file_patch,
    symlink_patch,
    write_predictions,
)

pytestmark = pytest.mark.slow


def _canary_script(canary: Path) -> list[str]:
    return ["#!/bin/sh", f"touch '{canary}'"]


def _canary_python(canary: Path) -> list[str]:
    return ["import pathlib", f"pathlib.Path({str(canary)!r}).write_text('ran')"]


def _rename_patch(old: str, new: str) -> str:
    return f"diff --git a/{old} b/{new}\nsimilarity index 100%\nrename from {old}\nrename to {new}\n"


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory, cache: Path) -> dict[str, object]:
    """Grade every hostile patch once (one `swecl grade`), return what the tests inspect."""
    root = tmp_path_factory.mktemp("hostile")
    outside = root / "outside"  # the directory every attack aims at
    outside.mkdir()
    canaries = root / "canaries"
    canaries.mkdir()
    repo_dir = root / "repo"
    base = make_repo(repo_dir, CALC_FILES, symlinks={"escape": str(outside), "docs/up": "../../.."})
    depth = len(Path(cache, "worktrees", "acme__calc-hostile", "slot-0").parts)
    to_outside = "../" * depth + str(outside).lstrip("/")
    patches: dict[str, tuple[str, str]] = {
        # name: (patch, the status it must get)
        "traversal": (CALC_GOLD + new_file_patch(f"{to_outside}/traversal.txt", ["pwned"]), "patch_failed"),
        "dotdot-inside": (CALC_GOLD + new_file_patch("pkg/../../traversal2.txt", ["pwned"]), "patch_failed"),
        "absolute": (
            CALC_GOLD + f"--- /dev/null\n+++ {outside}/absolute.txt\n@@ -0,0 +1 @@\n+pwned\n", "patch_failed"),
        "symlink-absolute": (
            CALC_GOLD + symlink_patch("link", str(outside)) + new_file_patch("link/through.txt", ["pwned"]),
            "patch_failed"),
        "symlink-relative": (
            CALC_GOLD + symlink_patch("uplink", "../" * depth)
            + new_file_patch(f"uplink/{str(outside).lstrip('/')}/symlink-relative.txt", ["pwned"]),
            "patch_failed"),
        "existing-symlink": (CALC_GOLD + new_file_patch("escape/through-repo-link.txt", ["pwned"]), "patch_failed"),
        "existing-relative-symlink": (CALC_GOLD + new_file_patch("docs/up/escaped.txt", ["pwned"]), "patch_failed"),
        "git-hook": (
            CALC_GOLD + new_file_patch(".git/hooks/post-checkout", _canary_script(canaries / "hook"), mode="100755"),
            "patch_failed"),
        "git-hook-upper": (
            CALC_GOLD + new_file_patch(".GIT/hooks/post-checkout", _canary_script(canaries / "hook-upper"),
                                       mode="100755"),
            "patch_failed"),
        "gitfile": (CALC_GOLD + new_file_patch("sub/.git", [f"gitdir: {outside}"]), "patch_failed"),
        "rename-out": (_rename_patch("calc.py", "../calc.py"), "patch_failed"),
        "option-names": (
            CALC_GOLD + new_file_patch("-rf", ["x"]) + new_file_patch("--output=x", ["x"])
            + new_file_patch("--exec=touch pwned", ["x"]),
            "resolved"),
        "conftest": (
            CALC_GOLD + new_file_patch("conftest.py", _canary_python(canaries / "conftest"))
            + new_file_patch("tests/conftest.py", _canary_python(canaries / "tests-conftest")),
            "resolved"),
        "test-edit": (
            "diff --git a/tests/test_calc.py b/tests/test_calc.py\n--- a/tests/test_calc.py\n+++ b/tests/test_calc.py\n"
            "@@ -3,3 +3,7 @@ from calc import add\n \n def test_add_zero():\n     assert add(0, 0) == 0\n+\n+\n"
            "+def test_add_numbers():\n+    pass\n",
            "unresolved"),
        # git refuses it in the agent phase, so the grader sees it as given
        "nul-path": (CALC_GOLD.replace("+++ b/calc.py", "+++ b/\x00calc.py"), "patch_failed"),
    }
    names = list(patches)
    instances = [f"acme__calc-{i}" for i in range(1, len(names) + 1)]
    by_instance = dict(zip(instances, names, strict=True))
    dataset = calc_curriculum(root / "dataset", base=base, repo_dir=repo_dir, repo="acme/calc-hostile",
                              instances=instances)
    predictions = write_predictions(root / "pred.jsonl", {iid: patches[name][0] for iid, name in by_instance.items()})
    results = root / "results"
    done = swecl(results, "grade", "--dataset", str(dataset), "--predictions", str(predictions), "--json",
                 cache=cache, check=False, timeout=900)
    assert done.returncode == 0, done.stderr
    statuses = {by_instance[iid]: status for iid, status in json.loads(done.stdout)["statuses"].items()}
    grades = {by_instance[e["payload"]["instance_id"]]: e["payload"] for e in read_events(results)
              if e["type"] == "grade.finished"}
    return {
        "root": root, "outside": outside, "slots": Path(cache, "worktrees", "acme__calc-hostile"), "canaries": canaries, "results": results, "statuses": statuses,
        "expected": {name: want for name, (_, want) in patches.items()}, "grades": grades, "cache": cache,
        "dataset": dataset, "repo_dir": repo_dir, "by_instance": by_instance, "base": base,
        "patches": {name: patch for name, (patch, _) in patches.items()},
    }


def test_every_hostile_patch_gets_the_documented_verdict(hostile: dict) -> None:
    got = {k: v for k, v in hostile["statuses"].items() if k != "nul-path"}
    assert got == {k: v for k, v in hostile["expected"].items() if k != "nul-path"}


def test_a_nul_byte_in_a_path_is_the_patchs_failure_not_the_harness(hostile: dict) -> None:
    """`infra_error` means "no verdict": the task drops out of the metrics instead of
    counting as a failure, so a patch must never be able to turn itself into one."""
    grade = hostile["grades"]["nul-path"]
    assert (grade["status"], grade["resolved"]) == ("patch_failed", False), grade["error"]
    assert grade["error"].startswith("unsafe patch: ")


# Every file an attack would write, by the name it would have wherever it landed.
ATTACK_FILES = ("traversal.txt", "traversal2.txt", "absolute.txt", "through.txt", "symlink-relative.txt",
                "through-repo-link.txt", "escaped.txt")


def test_nothing_was_written_outside_the_worktree(hostile: dict) -> None:
    # the absolute, traversal and symlink attacks all aim at one folder
    assert sorted(os.listdir(hostile["outside"])) == []
    # the relative ones (pkg/../.., docs/up -> ../../.., a rename to ../calc.py) land
    # beside the worktree slots, if anywhere
    slots: Path = hostile["slots"]
    assert sorted(p.name for p in slots.iterdir() if not p.name.startswith("slot-")) == []
    # and nowhere else the grader writes: the test's folders, the whole cache (worktree
    # slots excepted: a refused patch is reset there, and the slot is cleaned for the next task)
    strays = [
        p for top in (hostile["root"], hostile["cache"]) for p in top.rglob("*")
        if p.name in ATTACK_FILES and not (p.is_relative_to(slots) and p.relative_to(slots).parts[0].startswith("slot-"))
    ]
    assert strays == []


def test_no_patch_content_ran_outside_the_test_command(hostile: dict) -> None:
    # hooks never ran (the patch was refused, and git runs with hooks disabled anyway);
    # conftest.py files were reverted before the tests, so not even the test command ran them
    assert sorted(os.listdir(hostile["canaries"])) == []


def test_refusals_name_the_reason(hostile: dict) -> None:
    grades = hostile["grades"]
    for name in ("traversal", "dotdot-inside", "absolute", "symlink-absolute", "symlink-relative",
                 "existing-symlink", "existing-relative-symlink", "git-hook", "git-hook-upper", "gitfile",
                 "rename-out"):
        assert grades[name]["status"] == "patch_failed"
        assert grades[name]["error"] and grades[name]["error"].startswith("unsafe patch: "), (name, grades[name]["error"])


def test_test_like_files_of_the_patch_are_reverted_before_the_tests(hostile: dict) -> None:
    grades = hostile["grades"]
    assert sorted(grades["conftest"]["test_files_reverted"]) == ["conftest.py", "tests/conftest.py"]
    assert grades["test-edit"]["test_files_reverted"] == ["tests/test_calc.py"]
    # the gold test patch ran against the agent's (reverted) tests: the real test fails
    assert grades["test-edit"]["f2p"] == {"tests/test_calc.py::test_add_numbers": "FAILED"}


def test_option_like_file_names_reach_no_command_line(hostile: dict) -> None:
    grade = hostile["grades"]["option-names"]
    assert grade["status"] == "resolved" and grade["applied_with"] == "git apply"
    assert not any(arg.startswith(("-rf", "--output", "--exec")) for arg in grade["test_cmd"])
    # `touch pwned`, had it run, would have made `pwned` in the working directory of
    # whatever ran it: the worktree slot, the cache (git, uv), or swecl's own directory
    places = [hostile["root"], hostile["cache"]]
    assert [p for top in places for p in top.rglob("pwned")] == []
    assert not (REPO_ROOT / "pwned").exists()


def test_hooks_planted_in_the_repository_cache_never_run(hostile: dict, tmp_path: Path) -> None:
    """Hooks in the bare mirror that every worktree shares: the grader's checkouts,
    resets and applies all run git with hooks disabled."""
    cache: Path = hostile["cache"]
    hooks = cache / "repos" / "acme__calc-hostile.git" / "hooks"
    hooks.mkdir(exist_ok=True)
    canary = tmp_path / "mirror-hook-ran"
    for hook in ("post-checkout", "pre-commit", "post-commit", "post-index-change", "reference-transaction",
                 "pre-auto-gc", "post-rewrite"):
        script = hooks / hook
        script.write_text(f"#!/bin/sh\necho {hook} >> '{canary}'\n")
        script.chmod(0o755)
    predictions = write_predictions(tmp_path / "pred.jsonl", {"acme__calc-1": CALC_GOLD})
    results = tmp_path / "results"
    done = swecl(results, "grade", "--dataset", str(hostile["dataset"]), "--predictions", str(predictions), "--json",
                 cache=cache, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["statuses"] == {"acme__calc-1": "resolved"}
    assert not canary.exists(), canary.read_text()
    assert ledger_state(results) == []
    # positive control: the planted hooks do fire for a git that has hooks enabled
    mirror = hooks.parent
    try:
        git(["--git-dir", str(mirror), "worktree", "add", "--detach", str(tmp_path / "control"), hostile["base"]], tmp_path)
        assert "post-checkout" in canary.read_text()
    finally:
        git(["--git-dir", str(mirror), "worktree", "remove", "--force", str(tmp_path / "control")], tmp_path)
        for hook in hooks.iterdir():
            if hook.read_text().endswith(f">> '{canary}'\n"):
                hook.unlink()


def _tree_after(repo_dir: Path, base: str, patch: bytes, where: Path) -> dict[str, bytes]:
    """Every file of `repo_dir` at `base` with `patch` applied (git apply, as graded)."""
    git(["clone", "-q", str(repo_dir), str(where)], repo_dir.parent)
    git(["checkout", "-q", "--detach", base], where)
    subprocess.run(["git", "apply", "-"], input=patch, cwd=where, check=True, capture_output=True)
    return {str(f.relative_to(where)): f.read_bytes() for f in where.rglob("*")
            if f.is_file() and ".git" not in f.relative_to(where).parts}


def test_the_recorded_patch_is_what_was_graded(hostile: dict, tmp_path: Path) -> None:
    """The hostile text is kept as evidence (a blob): a refused patch byte for byte as it
    was given; an applied one as the diff of the worktree it made, which changes the
    repository exactly as the given patch does."""
    blobs = read_blobs(hostile["results"])
    recorded = {hostile["by_instance"][e["payload"]["instance_id"]]: blobs[e["payload"]["patch"]]
                for e in read_events(hostile["results"]) if e["type"] == "agent.finished" and e["payload"]["patch"]}
    given = {name: patch.encode("utf-8") for name, patch in hostile["patches"].items()}
    assert recorded.keys() == given.keys()
    applied = {name for name, status in hostile["statuses"].items() if status != "patch_failed"}
    assert applied == {"option-names", "conftest", "test-edit"}
    for name in sorted(set(given) - applied):
        assert recorded[name] == given[name], name
    for name in sorted(applied):
        trees = [_tree_after(hostile["repo_dir"], hostile["base"], patch, tmp_path / name / which)
                 for which, patch in (("given", given[name]), ("recorded", recorded[name]))]
        assert trees[0] == trees[1], name
