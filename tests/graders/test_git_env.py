"""`graders.host.git_env`, the one environment of every git swecl runs (the grader's, the agents'
patches, the demo repositories): a user's git setup changes nothing any of them does."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from agents import worktree_patch
from commands.inputs.demo import materialise_demo_repos
from graders.host import git, git_env

HOSTILE_CONFIG = "[core]\n\tautocrlf = true\n[diff]\n\tnoprefix = true\n[user]\n\tname = Someone Else\n"


@pytest.fixture
def hostile_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user whose global config, attributes and ignore rules would each change what git
    writes or diffs, and whose environment points git elsewhere."""
    home = tmp_path / "home"
    xdg = home / ".config" / "git"
    xdg.mkdir(parents=True)
    (home / ".gitconfig").write_text(HOSTILE_CONFIG)
    (xdg / "config").write_text(HOSTILE_CONFIG)
    (xdg / "attributes").write_text("* eol=crlf\n*.py -diff\n")
    (xdg / "ignore").write_text("*.py\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "elsewhere"))
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "core.attributesFile")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", str(xdg / "attributes"))
    # the control: plain git in this environment does read them
    probe = tmp_path / "probe"
    probe.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "GIT_DIR"}
    subprocess.run(["git", "init", "-q", "."], cwd=probe, env=env, check=True)
    (probe / "m.py").write_text("x\n")
    seen = subprocess.run(["git", "check-attr", "eol", "m.py"], cwd=probe, env=env, capture_output=True, text=True)
    ignored = subprocess.run(["git", "check-ignore", "m.py"], cwd=probe, env=env, capture_output=True, text=True)
    assert seen.stdout.strip() == "m.py: eol: crlf" and ignored.returncode == 0
    return home


def test_git_env_shuts_out_system_and_global_git_setup(hostile_home: Path) -> None:
    env = git_env()
    assert env["GIT_CONFIG_NOSYSTEM"] == "1" and env["GIT_ATTR_NOSYSTEM"] == "1"
    assert env["GIT_CONFIG_GLOBAL"] == os.devnull and env["GIT_LITERAL_PATHSPECS"] == "1"
    assert "GIT_DIR" not in env
    assert "GIT_LITERAL_PATHSPECS" not in git_env(literal_pathspecs=False)
    assert git_env(GIT_INDEX_FILE="i")["GIT_INDEX_FILE"] == "i"


def test_a_users_git_setup_changes_no_grader_git(hostile_home: Path, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(["init", "-q", "."], cwd=repo)
    (repo / "m.py").write_text("x\n")
    assert git(["check-attr", "-a", "m.py"], cwd=repo).stdout == b""
    assert git(["status", "--porcelain", "--ignored"], cwd=repo).stdout == b"?? m.py\n"
    assert git(["config", "--get", "user.name"], cwd=repo, check=False).returncode == 1


def test_a_users_git_setup_changes_no_agent_patch(hostile_home: Path, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(["init", "-q", "."], cwd=repo)
    (repo / "m.py").write_text("x\n")
    git(["add", "m.py"], cwd=repo)
    git(["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "base"], cwd=repo)
    (repo / "m.py").write_text("y\n")
    (repo / "new.py").write_text("z\n")
    patch = worktree_patch(repo)
    assert "\r" not in patch and "Binary files" not in patch
    assert "diff --git a/m.py b/m.py" in patch and "+y\n" in patch
    assert "diff --git a/new.py b/new.py" in patch and "+z\n" in patch  # not ignored by the user's rule


def test_a_users_git_setup_changes_no_demo_repository(hostile_home: Path, tmp_path: Path) -> None:
    repos = materialise_demo_repos(tmp_path / "demo")  # raises if git made other commits
    for path in repos.values():
        for file in path.rglob("*.py"):
            assert b"\r" not in file.read_bytes(), file
