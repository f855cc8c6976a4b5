"""No leaks: the agent's workspace and memory never hold the grading secrets (the gold
patch, the test patch, the FAIL_TO_PASS names) before grading, and API keys never land
in the ledger, its blobs, the materialised results or a report.

The agent here is the `command` agent running a small script: it copies everything it
can see (its worktree, its scratch dir, every git object reachable from its checkout,
its environment) into a folder the test inspects afterwards.
"""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from bench.processes import SPANS, read_events
from tests.inprocess import swecl

from .support import (
    CALC_FILES,
    CALC_GOLD,
    ENVIRONMENT,
    DemoCurriculum,
    added_lines,
    assert_clean_refusal,
    calc_curriculum,
    files_under,
    find_needles,
    ledger_texts,
    make_repo,
    write_predictions,
)

pytestmark = pytest.mark.slow

SPY = r"""
import json, os, pathlib, shutil, subprocess, sys
instance_id, workdir, scratch, out = sys.argv[1:5]
dest = pathlib.Path(out, instance_id)
dest.mkdir(parents=True, exist_ok=True)
shutil.copytree(workdir, dest / "worktree", symlinks=True, ignore=shutil.ignore_patterns(".git"))
shutil.copytree(scratch, dest / "scratch", symlinks=True)
git = lambda *a: subprocess.run(["git", *a], cwd=workdir, capture_output=True).stdout
# every object the checkout can reach, whatever the refs
(dest / "history.txt").write_bytes(
    git("log", "--all", "--reflog", "-p", "--format=%H %s") + git("cat-file", "--batch-all-objects", "--batch")
)
(dest / "env.json").write_text(json.dumps(dict(os.environ)))
patch = os.environ.get("SPY_PATCHES")
if patch:
    text = json.loads(pathlib.Path(patch).read_text()).get(instance_id)
    if text:
        subprocess.run(["git", "apply", "-"], cwd=workdir, input=text.encode(), check=True)
print("stdout of the agent; env follows:", json.dumps(dict(os.environ)))
print("stderr of the agent", os.environ.get("ANTHROPIC_API_KEY"), file=sys.stderr)
"""


def _spy(tmp_path: Path) -> tuple[str, Path]:
    script = tmp_path / "spy.py"
    script.write_text(SPY)
    out = tmp_path / "seen"
    out.mkdir()
    return f"{sys.executable} {script} {{instance_id}} {{workdir}} {{scratch}} {out}", out


@pytest.fixture(scope="module")
def spied(curriculum: DemoCurriculum, tmp_path_factory: pytest.TempPathFactory, cache: Path) -> dict[str, object]:
    """A plugin-blank run of the spans sequence by the spy agent (initial pass)."""
    tmp = tmp_path_factory.mktemp("spied")
    template, out = _spy(tmp)
    results = tmp / "results"
    swecl(results, "run", "--dataset", str(curriculum.path), "--sequence", SPANS, "--stage", "plugin-blank",
          "--agent", "command", "--command", template, "--passes", "initial", "--quiet", cache=cache, timeout=600)
    return {"out": out, "results": results}


def _secrets_of(curriculum: DemoCurriculum, iid: str) -> list[str]:
    names = curriculum.fail_to_pass(iid)
    leaves = [n.split("::")[-1] for n in names]
    return [*added_lines(curriculum.gold(iid)), *added_lines(curriculum.test_patch(iid)), *names, *leaves]


def _in_base(curriculum: DemoCurriculum, iid: str, needle: str) -> bool:
    """Is `needle` already in the task's base commit (then it is no secret)?"""
    task = curriculum.task(iid)
    repo = curriculum.repo_dir(curriculum.sequence_of(iid)["repo"])
    found = subprocess.run(["git", "grep", "-F", "-q", "-e", needle, task["metadata"]["base_commit"]], cwd=repo)
    return found.returncode == 0


def _in_history(curriculum: DemoCurriculum, iid: str, needle: str) -> bool:
    """Was `needle` in any commit up to the task's base (a line a past commit removed is
    history the agent may read, as in any clone of the repository at that commit)?"""
    task = curriculum.task(iid)
    repo = curriculum.repo_dir(curriculum.sequence_of(iid)["repo"])
    log = subprocess.run(["git", "log", "-p", "--format=", task["metadata"]["base_commit"]], cwd=repo,
                         capture_output=True, check=True).stdout
    return needle.encode() in log


def test_the_agent_sees_exactly_the_base_commit(curriculum: DemoCurriculum, spied: dict) -> None:
    out: Path = spied["out"]
    for iid in curriculum.instance_ids(SPANS):
        task = curriculum.task(iid)
        repo = curriculum.repo_dir(curriculum.sequence_of(iid)["repo"])
        base = task["metadata"]["base_commit"]
        listing = subprocess.run(["git", "ls-tree", "-r", "--name-only", base], cwd=repo, capture_output=True,
                                 text=True, check=True).stdout.split()
        expected = {name: subprocess.run(["git", "show", f"{base}:{name}"], cwd=repo, capture_output=True,
                                         check=True).stdout for name in listing}
        seen = dict(files_under(out / iid / "worktree"))
        assert seen == expected, f"{iid}: the worktree is not the base commit (extra: {sorted(set(seen) - set(expected))})"


def test_the_workspace_never_holds_grading_secrets(curriculum: DemoCurriculum, spied: dict) -> None:
    out: Path = spied["out"]
    for iid in curriculum.instance_ids(SPANS):
        needles = [n for n in _secrets_of(curriculum, iid) if not _in_base(curriculum, iid, n)]
        view = files_under(out / iid / "worktree") + files_under(out / iid / "scratch")
        assert find_needles(view, needles) == [], iid
        env = json.loads((out / iid / "env.json").read_text())
        assert find_needles([("environment", json.dumps(env).encode())], needles) == [], iid


def test_the_repository_history_the_agent_can_reach_holds_no_grading_secrets(
    curriculum: DemoCurriculum, spied: dict
) -> None:
    """`git log --all -p` / `git cat-file --batch-all-objects` from the agent's checkout:
    later commits (the task's own fix and tests among them) must not be reachable."""
    out: Path = spied["out"]
    leaks = {}
    for iid in curriculum.instance_ids(SPANS):
        needles = [n for n in _secrets_of(curriculum, iid) if not _in_history(curriculum, iid, n)]
        history = (out / iid / "history.txt").read_bytes()
        # positive controls: the dump holds the base commit and its objects, and the
        # needles are found in the source repository, where the later commits are
        task = curriculum.task(iid)
        assert task["metadata"]["base_commit"].encode() in history, iid
        repo = curriculum.repo_dir(curriculum.sequence_of(iid)["repo"])
        everything = subprocess.run(["git", "log", "--all", "-p"], cwd=repo, capture_output=True, check=True).stdout
        assert needles and find_needles([("source repository", everything)], needles) != [], iid
        hits = find_needles([("git objects", history)], needles)
        if hits:
            leaks[iid] = hits[:3]
    assert leaks == {}


def test_memory_never_holds_grading_secrets(curriculum: DemoCurriculum, tmp_path: Path, cache: Path) -> None:
    """The agent submits the fix, the task's own new tests, and a note naming the
    FAIL_TO_PASS test in a non-test file: the daydream keeps the fix, drops the test
    hunks, and governance refuses an item that names a grading test."""
    template, out = _spy(tmp_path)
    instances = curriculum.instance_ids(SPANS)
    patches = {}
    for iid in instances:
        leaf = curriculum.fail_to_pass(iid)[0].split("::")[-1]
        note = (f"diff --git a/NOTES.md b/NOTES.md\nnew file mode 100644\n--- /dev/null\n+++ b/NOTES.md\n"
                f"@@ -0,0 +1 @@\n+remember {leaf}\n") if iid == instances[0] else ""
        patches[iid] = curriculum.gold(iid) + curriculum.test_patch(iid) + note
    # in the folder the spy's command line names: the only one of this test's the sandbox lets it see
    table = out / "patches.json"
    table.write_text(json.dumps(patches))
    results = tmp_path / "results"
    swecl(results, "run", "--dataset", str(curriculum.path), "--sequence", SPANS, "--stage", "plugin-blank",
          "--agent", "command", "--command", template, "--passes", "initial", "--quiet", cache=cache,
          env={"SPY_PATCHES": str(table)}, timeout=600)
    events = read_events(results)
    written = [e["payload"] for e in events if e["type"] == "memory.written"]
    rejected = [e["payload"] for e in events if e["type"] == "memory.rejected"]
    # the note names a grading test: refused; any other refusal is for a credential an
    # issue holds (the demo's spans #24), never for the gold tests (their hunks were dropped)
    rules = {(r["source_instance"], r["rule"]) for r in rejected}
    assert written and (instances[0], "test-name") in rules
    assert {rule for iid, rule in rules if iid != instances[0]} <= {"secret"}
    blobs = {d: b for d, b in _blobs(results).items()}
    memory = [(f"memory {m['item_id']}", json.dumps(m).encode()) for m in written]
    memory += [(f"memory patch {m['item_id']}", blobs[m["patch"]]) for m in written if m.get("patch")]
    memory += [(f"rejection {r['item_id']}", json.dumps(r).encode()) for r in rejected]
    for path in results.glob("v*/_memory/**/*"):
        if path.is_file():
            memory.append((str(path.relative_to(results)), path.read_bytes()))
    needles = []
    for iid in instances:
        needles += [*added_lines(curriculum.test_patch(iid)), *curriculum.fail_to_pass(iid),
                    *[n.split("::")[-1] for n in curriculum.fail_to_pass(iid)]]
    assert find_needles(memory, [n for n in needles if len(n) >= 8]) == []


def _blobs(results: Path) -> dict[str, bytes]:
    from bench.processes import read_blobs

    return read_blobs(results)


# -- API keys -------------------------------------------------------------------------------


def _key() -> str:
    return "sk-ant-test-" + secrets.token_hex(16)


def _everything(results: Path, *extra: Path) -> list[tuple[str, bytes]]:
    """Every payload and blob (decompressed), and every file under the results dir (the
    SQLite files themselves, projections.db, materialised memory) and `extra` dirs."""
    texts = ledger_texts(results)
    for root in (results, *extra):
        texts += [(f"{root.name}/{p}", b) for p, b in files_under(root)]
    return texts


def test_an_api_key_in_the_environment_never_lands_anywhere(
    curriculum: DemoCurriculum, tmp_path: Path, cache: Path
) -> None:
    key, other = _key(), "ghp_" + secrets.token_hex(18)
    template, _ = _spy(tmp_path)
    # the agent also writes the key into the worktree, so its patch carries it
    writer = tmp_path / "writer.py"
    writer.write_text(
        "import os, pathlib, subprocess, sys\n"
        "pathlib.Path(sys.argv[1], 'leak.txt').write_text(os.environ['ANTHROPIC_API_KEY'] + '\\n')\n"
        "subprocess.run(sys.argv[2:], check=True)\n"
    )
    template = f"{sys.executable} {writer} {{workdir}} {template}"
    results = tmp_path / "results"
    env = {"ANTHROPIC_API_KEY": key, "GITHUB_TOKEN": other}
    first_two = curriculum.instance_ids(SPANS)[:2]
    swecl(results, "run", "--dataset", str(curriculum.path), "--sequence", SPANS, "--stage", "plugin-blank",
          "--agent", "command", "--command", template, "--instance", first_two[0], "--instance", first_two[1],
          "--quiet", cache=cache, env=env, timeout=600)
    report = tmp_path / "report"
    swecl(results, "report", "--out", str(report), cache=cache, env=env)
    log = swecl(results, "log", "--json", cache=cache, env=env).stdout
    assert find_needles([*_everything(results, report), ("swecl log", log.encode())], [key, other]) == []
    # the agent did see and use the key: it is redacted, not absent by accident
    patches = [b for w, b in ledger_texts(results) if b"leak.txt" in b]
    assert patches and all(b"[REDACTED]" in b for b in patches if b"+++ b/leak.txt" in b)
    assert any(b"+++ b/leak.txt" in b and b"[REDACTED]" in b for b in patches)  # the all() above is not vacuous


def test_an_api_key_on_the_command_line_is_refused_and_its_environment_form_is_not_recorded(
    curriculum: DemoCurriculum, tmp_path: Path, cache: Path
) -> None:
    """A template written with the key in it (`--api-key $ANTHROPIC_API_KEY`, expanded
    by the user's shell): run options are recorded (a resume runs them again), so the
    run is refused with one line and nothing is written. The `${NAME}` form the command
    agent expands itself runs, and records the name, not the key."""
    key = _key()
    template, seen = _spy(tmp_path)
    results = tmp_path / "results"
    first = curriculum.instance_ids(SPANS)[0]
    common = ("run", "--dataset", str(curriculum.path), "--sequence", SPANS, "--stage", "base",
              "--agent", "command", "--instance", first, "--quiet")
    refused = swecl(results, *common, "--command", f"{template} --api-key {key}", cache=cache, check=False)
    assert_clean_refusal(refused)
    assert not (results / "ledger.db").exists() or find_needles(ledger_texts(results), [key]) == []
    swecl(results, *common, "--command", template + " --api-key ${SPY_KEY}", cache=cache, env={"SPY_KEY": key},
          timeout=600)
    assert (seen / first).is_dir()  # the agent ran
    assert find_needles(ledger_texts(results), [key]) == []


def test_an_api_key_printed_by_a_setup_command_is_not_recorded(tmp_path: Path, cache: Path) -> None:
    """Setup lines of a task's environment run with the user's environment; what they
    print goes into the grade log."""
    key = _key()
    repo_dir = tmp_path / "repo"
    base = make_repo(repo_dir, CALC_FILES)
    dataset = calc_curriculum(tmp_path / "ds", base=base, repo_dir=repo_dir, repo="acme/calc-setup")
    document = json.loads(dataset.read_text())
    document["sequences"][0]["environment"] = {
        **ENVIRONMENT,
        # the key, and a marker: a positive control that the line ran and what it printed
        # was recorded (a reversed or encoded key would be redacted as well)
        "pre_install": ["python -c 'import os,sys; print(os.environ.get(\"ANTHROPIC_API_KEY\")); "
                        "print(\"setup-line-\" + \"ran\"); sys.exit(3)'"],
    }
    dataset.write_text(json.dumps(document))
    predictions = write_predictions(tmp_path / "pred.jsonl", {"acme__calc-1": CALC_GOLD})
    results = tmp_path / "results"
    done = swecl(results, "grade", "--dataset", str(dataset), "--predictions", str(predictions), "--json",
                 cache=cache, env={"ANTHROPIC_API_KEY": key}, check=False)
    assert done.returncode == 0, done.stderr
    recorded = ledger_texts(results)
    assert find_needles(recorded, ["setup-line-ran"]) != [], "the setup line did not run, or its output was not recorded"
    assert find_needles(recorded, [key]) == []
