"""Isolation: no task can change another task's grade, no agent can see the future.

Each test is an attack that was reproduced against the unconfined grader, run for real:
hostile patches through `swecl grade` (the code under test is the attacker), and a
shell-capable agent through `swecl run --agent command`. Where the attack itself must be
shown to work (a positive control), the same attack runs with `--sandbox none`.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from bench.processes import live_processes, read_blobs, read_events, spawn, swecl_argv
from tests.inprocess import swecl

from .support import CALC_GOLD, calc_curriculum, git, ledger_state, make_repo, write_predictions

pytestmark = pytest.mark.slow

CALC_WITH_IGNORE = {
    "calc.py": "def add(a, b):\n    return a - b\n",
    "pyproject.toml": '[tool.pytest.ini_options]\npythonpath = ["."]\n',
    ".gitignore": "__pycache__/\n*.pyc\n",
    "tests/__init__.py": "",
    "tests/test_calc.py": "from calc import add\n\n\ndef test_add_zero():\n    assert add(0, 0) == 0\n",
}
# A patch that changes no behaviour: add() still subtracts, so the task is unresolved.
WRONG = (
    "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,3 @@\n def add(a, b):\n"
    "+    # looked at it\n     return a - b\n"
)


def _calc_module(attack: str, *, fixed: bool = False) -> str:
    """A patch that replaces calc.py by `attack` (run when the tests import calc) + add()."""
    body = attack.rstrip("\n").splitlines() + ["", "", "def add(a, b):", f"    return a {'+' if fixed else '-'} b"]
    return (
        "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n"
        f"@@ -1,2 +1,{len(body)} @@\n-def add(a, b):\n-    return a - b\n" + "".join(f"+{line}\n" for line in body)
    )


PTH_ATTACK = '''
import os, sysconfig
POISON = "import sys, types; m = types.ModuleType('calc'); m.add = lambda a, b: a + b; sys.modules['calc'] = m\\n"
try:
    with open(os.path.join(sysconfig.get_paths()["purelib"], "zz_swecl_poison.pth"), "w") as fh:
        fh.write(POISON)
except OSError:
    pass
'''

PYC_ATTACK = '''
import importlib.util, os, py_compile, tempfile
_here = os.path.dirname(os.path.abspath(__file__))
_src = os.path.join(tempfile.mkdtemp(), "calc.py")
with open(_src, "w") as fh:
    fh.write("def add(a, b):\\n    return a + b\\n")
try:
    py_compile.compile(_src, cfile=importlib.util.cache_from_source(os.path.join(_here, "calc.py")),
                       invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
except OSError:
    pass
'''

DELETE_ATTACK = '''
import os, shutil, sysconfig
_site = sysconfig.get_paths()["purelib"]
for _name in os.listdir(_site):
    if _name.lower().startswith(("iniconfig", "pluggy")):
        shutil.rmtree(os.path.join(_site, _name), ignore_errors=True)
'''


def _home_attack(real_home: Path, token: str) -> str:
    return f'''
import os
for _path in (os.path.expanduser("~/.bashrc"), {str(real_home / ".bashrc")!r}, "/tmp/{token}", "/var/tmp/{token}"):
    try:
        with open(_path, "a") as fh:
            fh.write("echo pwned\\n")
    except OSError:
        pass
'''


def _daemon_attack(token: str, *, hang: bool) -> str:
    """A daemon that double-forks into a new session and keeps re-forking (a new pid every
    0.2 s), each generation named by `token` on its command line."""
    code = (
        "import os, sys, time\n"
        "while True:\n"
        "    if os.fork():\n"
        "        os._exit(0)\n"
        "    os.setsid()\n"
        "    time.sleep(0.2)\n"
    )
    return f'''
import subprocess, sys, time
subprocess.Popen([sys.executable, "-c", {code!r}, {token!r}], start_new_session=True,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
{"time.sleep(120)" if hang else ""}
'''


def _wait_gone(token: str, seconds: float = 10.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while live_processes(cmdline=token) and time.monotonic() < deadline:
        time.sleep(0.1)
    return live_processes(cmdline=token)


@pytest.fixture(scope="module")
def calc(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """The calc repository (with a .gitignore for bytecode) and a later commit holding its fix."""
    root = tmp_path_factory.mktemp("isolation")
    repo_dir = root / "repo"
    base = make_repo(repo_dir, CALC_WITH_IGNORE)
    (repo_dir / "calc.py").write_text("def add(a, b):\n    return a + b  # FUTURE-FIX\n")
    git(["commit", "-q", "-am", "the fix, committed after the task's base"], repo_dir)
    return {"root": root, "repo_dir": repo_dir, "base": base}


def _grade(calc: dict, tmp: Path, cache: Path, patches: list[str], *, repo: str, sandbox: str = "bwrap",
           env: dict[str, str] | None = None) -> tuple[list[str], Path]:
    """`swecl grade` of `patches`, one task each, in this order; their statuses."""
    instances = [f"acme__calc-{i}" for i in range(1, len(patches) + 1)]
    dataset = calc_curriculum(tmp / "dataset", base=calc["base"], repo_dir=calc["repo_dir"], repo=repo,
                              instances=instances)
    predictions = write_predictions(tmp / "pred.jsonl", dict(zip(instances, patches, strict=True)))
    results = tmp / "results"
    done = swecl(results, "grade", "--dataset", str(dataset), "--predictions", str(predictions), "--json",
                 "--sandbox", sandbox, cache=cache, check=False, timeout=900, env=env)
    assert done.returncode == 0, done.stderr
    statuses = json.loads(done.stdout)["statuses"]
    return [statuses[i] for i in instances], results


def _grade_logs(results: Path) -> dict[str, str]:
    blobs = read_blobs(results)
    return {e["payload"]["instance_id"]: blobs[e["payload"]["log"]].decode("utf-8", "replace")
            for e in read_events(results) if e["type"] == "grade.finished" and e["payload"]["log"]}


# -- 1. cross-task poisoning ----------------------------------------------------------------


def test_a_planted_pth_in_the_environment_changes_no_later_grade(calc: dict, tmp_path: Path, cache: Path) -> None:
    statuses, _ = _grade(calc, tmp_path / "a", cache, [_calc_module(PTH_ATTACK), WRONG, CALC_GOLD], repo="acme/calc-pth")
    assert statuses == ["unresolved", "unresolved", "resolved"]
    # and in a later invocation that shares the cache
    later, _ = _grade(calc, tmp_path / "b", cache, [WRONG], repo="acme/calc-pth")
    assert later == ["unresolved"]
    assert not list(cache.rglob("zz_swecl_poison.pth"))


def test_a_planted_pyc_in_an_ignored_pycache_changes_no_later_grade(calc: dict, tmp_path: Path, cache: Path) -> None:
    statuses, _ = _grade(calc, tmp_path / "a", cache, [_calc_module(PYC_ATTACK), WRONG], repo="acme/calc-pyc")
    assert statuses == ["unresolved", "unresolved"]
    later, _ = _grade(calc, tmp_path / "b", cache, [WRONG], repo="acme/calc-pyc")
    assert later == ["unresolved"]


def test_positive_control_the_planted_pyc_poisons_a_checkout_that_keeps_it(tmp_path: Path) -> None:
    """Without the cleaning, the attack works: the reset restores calc.py (still wrong),
    but Python loads the planted unchecked-hash bytecode and add() adds."""
    wrong = CALC_WITH_IGNORE["calc.py"]
    attacked = PYC_ATTACK + "\n\n" + wrong
    (tmp_path / "calc.py").write_text(attacked)
    subprocess.run([sys.executable, "-c", "import calc"], cwd=tmp_path, check=True)
    (tmp_path / "calc.py").write_text(wrong)  # what a reset of tracked files gives back
    done = subprocess.run([sys.executable, "-c", "from calc import add; print(add(2, 3))"], cwd=tmp_path,
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "5"


# -- 2. a patch deletes part of the shared environment --------------------------------------


def test_a_patch_that_deletes_packages_of_the_environment_breaks_no_later_grade(
    calc: dict, tmp_path: Path, cache: Path
) -> None:
    statuses, results = _grade(calc, tmp_path / "a", cache, [_calc_module(DELETE_ATTACK), CALC_GOLD],
                               repo="acme/calc-delete")
    assert statuses == ["unresolved", "resolved"], _grade_logs(results)
    later, _ = _grade(calc, tmp_path / "b", cache, [CALC_GOLD], repo="acme/calc-delete")
    assert later == ["resolved"]


# -- 7. daemons, and a killed or terminated swecl -------------------------------------------


def test_a_re_forking_daemon_does_not_outlive_its_grade(calc: dict, tmp_path: Path, cache: Path) -> None:
    token = f"swecl-daemon-{os.getpid()}-{time.monotonic_ns()}"
    statuses, _ = _grade(calc, tmp_path, cache, [_calc_module(_daemon_attack(token, hang=False), fixed=True)],
                         repo="acme/calc-daemon")
    assert statuses == ["resolved"]
    assert _wait_gone(token) == []


def _start_hanging_grade(calc: dict, tmp: Path, cache: Path, token: str, sandbox: str) -> tuple[subprocess.Popen, Path]:
    dataset = calc_curriculum(tmp / "dataset", base=calc["base"], repo_dir=calc["repo_dir"], repo="acme/calc-kill")
    predictions = write_predictions(tmp / "pred.jsonl", {"acme__calc-1": _calc_module(_daemon_attack(token, hang=True))})
    results = tmp / "results"
    proc = spawn(swecl_argv(results, "grade", "--dataset", str(dataset), "--predictions", str(predictions),
                            "--sandbox", sandbox), cache=cache, log=tmp / "swecl.log")
    deadline = time.monotonic() + 300
    while not live_processes(cmdline=token):
        assert proc.poll() is None, (tmp / "swecl.log").read_text()
        assert time.monotonic() < deadline, "the daemon never started"
        time.sleep(0.1)
    return proc, results


def test_sigkill_of_swecl_ends_the_sandboxed_test_run_and_its_daemons(calc: dict, tmp_path: Path, cache: Path) -> None:
    token = f"swecl-killed-{os.getpid()}-{time.monotonic_ns()}"
    proc, _ = _start_hanging_grade(calc, tmp_path, cache, token, "bwrap")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert _wait_gone(token) == []


def test_unconfined_leftovers_of_a_killed_swecl_are_ended_by_the_next_start(
    calc: dict, tmp_path: Path, cache: Path
) -> None:
    token = f"swecl-orphan-{os.getpid()}-{time.monotonic_ns()}"
    proc, _ = _start_hanging_grade(calc, tmp_path / "a", cache, token, "none")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    time.sleep(0.5)
    assert live_processes(cmdline=token), "positive control: unconfined, the daemon survives the SIGKILL of swecl"
    try:
        _grade(calc, tmp_path / "b", cache, [CALC_GOLD], repo="acme/calc-kill", sandbox="none")
        assert _wait_gone(token, 5) == []
    finally:
        for pid in live_processes(cmdline=token):
            os.kill(pid, signal.SIGKILL)


def test_sigterm_stops_swecl_as_ctrl_c_does(calc: dict, tmp_path: Path, cache: Path) -> None:
    token = f"swecl-term-{os.getpid()}-{time.monotonic_ns()}"
    proc, results = _start_hanging_grade(calc, tmp_path, cache, token, "bwrap")
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 143
    err = (tmp_path / "swecl.log").read_text()
    assert "swecl: terminated" in err and "Traceback" not in err, err
    finished = [e["payload"] for e in read_events(results) if e["type"] == "run.finished"]
    assert [f["status"] for f in finished] == ["interrupted"]
    assert _wait_gone(token) == []
    assert ledger_state(results) == []


# -- 8. nothing outside the worktree is written ---------------------------------------------


def test_test_code_cannot_write_home_or_tmp(calc: dict, tmp_path: Path, cache: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    token = f"swecl-canary-{os.getpid()}-{time.monotonic_ns()}"
    statuses, _ = _grade(calc, tmp_path, cache, [_calc_module(_home_attack(home, token), fixed=True)],
                         repo="acme/calc-home", env={"HOME": str(home)})
    assert statuses == ["resolved"]
    # (swecl itself may keep its tools' caches under the home it was given; the tests may not write there)
    assert not (home / ".bashrc").exists()
    assert not Path("/tmp", token).exists() and not Path("/var/tmp", token).exists()


# -- 3. the agent cannot read the future ----------------------------------------------------

# The agent: looks for the repository mirror everywhere it might be (the environment, the
# parents of its checkout, other processes' command lines), copies the fix from it when
# found, and writes what it found into its checkout, so the findings travel in its patch.
SNOOP = r'''
import glob, os, subprocess, sys
found = []
for key, value in os.environ.items():
    if key.startswith("SWECL_") and key not in ("SWECL_OWNER", "SWECL_RUN"):
        found.append("env " + key)
mirrors = set()
for var in ("SWECL_CACHE", "SWECL_RESULTS"):
    if os.environ.get(var):
        mirrors.update(glob.glob(os.path.join(os.environ[var], "repos", "*.git")))
here = os.getcwd()
while True:
    mirrors.update(glob.glob(os.path.join(here, "repos", "*.git")))
    if here == "/":
        break
    here = os.path.dirname(here)
for pid in os.listdir("/proc"):
    try:
        cmd = open("/proc/%s/cmdline" % pid, "rb").read().replace(b"\0", b" ").decode()
    except OSError:
        continue
    if ("--" + "dataset") in cmd or ("--" + "results") in cmd:  # spelled apart: not in this code's own argv
        found.append("cmdline of another process")
        break
fix = None
for mirror in sorted(mirrors):
    found.append("mirror")
    log = subprocess.run(["git", "--git-dir", mirror, "log", "--all", "--format=%H"], capture_output=True, text=True)
    for sha in log.stdout.split():
        text = subprocess.run(["git", "--git-dir", mirror, "show", sha + ":calc.py"], capture_output=True, text=True).stdout
        if "FUTURE-FIX" in text:
            fix = text
if fix:
    found.append("the fix")
    open("calc.py", "w").write(fix)
own = subprocess.run(["git", "log", "--all", "--format=%s"], capture_output=True, text=True).stdout
if "the fix" in own:
    found.append("the fix commit in its own history")
open("agent-findings.txt", "w").write("\n".join(found or ["nothing"]) + "\n")
'''


def _snoop(calc: dict, tmp: Path, cache: Path, sandbox: str) -> tuple[str, list[str]]:
    dataset = calc_curriculum(tmp / "dataset", base=calc["base"], repo_dir=calc["repo_dir"], repo="acme/calc-snoop")
    results = tmp / "results"
    done = swecl(results, "run", "--stage", "base", "--dataset", str(dataset), "--agent", "command",
                 "--command", "python3 -c ${ISOLATION_SNOOP}", "--sandbox", sandbox, "--quiet",
                 cache=cache, check=False, timeout=600, env={"ISOLATION_SNOOP": SNOOP})
    assert done.returncode == 0, done.stderr
    blobs = read_blobs(results)
    [agent] = [e["payload"] for e in read_events(results) if e["type"] == "agent.finished"]
    patch = blobs[agent["patch"]].decode()
    findings = [line[1:] for line in patch.splitlines() if line.startswith("+") and not line.startswith("+++")
                and "agent-findings" not in line]
    [grade] = [e["payload"] for e in read_events(results) if e["type"] == "grade.finished"]
    return grade["status"], [f for f in findings if not f.startswith(("def ", "    return", "#"))]


def test_a_sandboxed_agent_finds_no_mirror_no_paths_and_no_fix(calc: dict, tmp_path: Path, cache: Path) -> None:
    status, findings = _snoop(calc, tmp_path, cache, "bwrap")
    assert findings == ["nothing"]
    assert status == "unresolved"


def test_positive_control_the_same_agent_unconfined_copies_the_fix(calc: dict, tmp_path: Path, cache: Path) -> None:
    status, findings = _snoop(calc, tmp_path, cache, "none")
    # even unconfined, swecl's own variables and the agent's own history hold nothing
    assert not any(f.startswith("env ") for f in findings) and "the fix commit in its own history" not in findings
    # but the mirror is one relative path away: that is what the sandbox is for
    assert "mirror" in findings and "the fix" in findings, findings
    assert status == "resolved"


# -- 4. the agent reaches only its model API -------------------------------------------------

# The agent of issue 43: fetches the task's fix from a code host (here a loopback server
# that serves the fixed calc.py), as it would from GitHub.
FETCH_FIX = r'''
import os, urllib.request
try:
    fix = urllib.request.urlopen(os.environ["CODE_HOST"] + "/calc.py", timeout=30).read().decode()
    open("calc.py", "w").write(fix)
except Exception as exc:
    print("no fix:", exc)
'''


def _fetch_fix(calc: dict, tmp: Path, cache: Path, sandbox: str) -> tuple[str, list[str], Path]:
    asked: list[str] = []

    class CodeHost(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            body = b"def add(a, b):\n    return a + b\n"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), CodeHost)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        dataset = calc_curriculum(tmp / "dataset", base=calc["base"], repo_dir=calc["repo_dir"], repo="acme/calc-fetch")
        results = tmp / "results"
        env = {"FETCH_FIX": FETCH_FIX, "CODE_HOST": f"http://127.0.0.1:{server.server_address[1]}"}
        env.update({name: "" for name in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy")})
        done = swecl(results, "run", "--stage", "base", "--dataset", str(dataset), "--agent", "command",
                     "--command", "python3 -c ${FETCH_FIX}", "--sandbox", sandbox, "--quiet",
                     cache=cache, check=False, timeout=600, env=env)
        assert done.returncode == 0, done.stderr
    finally:
        server.shutdown()
        server.server_close()
    [grade] = [e["payload"] for e in read_events(results) if e["type"] == "grade.finished"]
    return grade["status"], asked, results


def test_a_sandboxed_agent_cannot_fetch_the_fix_from_a_code_host(calc: dict, tmp_path: Path, cache: Path) -> None:
    status, asked, results = _fetch_fix(calc, tmp_path, cache, "bwrap")
    assert asked == [] and status == "empty_patch"  # it changed nothing: no fix reached it
    [egress] = [e["payload"] for e in read_events(results) if e["type"] == "agent.egress"]
    [refused] = [c for c in egress["connections"] if not c["allowed"]]
    assert refused["host"] == "127.0.0.1" and refused["bytes_down"] == 0
    shown = swecl(results, "show", "1", "1", cache=tmp_path / "unused").stdout
    assert f"REFUSED 127.0.0.1:{refused['port']}" in shown


def test_positive_control_the_same_agent_unconfined_fetches_the_fix(calc: dict, tmp_path: Path, cache: Path) -> None:
    status, asked, results = _fetch_fix(calc, tmp_path, cache, "none")
    assert asked == ["/calc.py"] and status == "resolved"
    assert not [e for e in read_events(results) if e["type"] == "agent.egress"]


# -- 5. deny by default: nothing of the host but the system, the program and the checkout ----

# The agent of issue 65: searches every file it can read and every git directory it can
# find for a string only the fix holds, in the places given (SEARCH_ROOTS, else the whole
# file system less the system's own directories, which hold nothing of the user's), and
# copies the fix from the first history that holds it. Its findings travel in its patch.
SEARCH = r'''
import os, subprocess, sys
MARK = "FUTURE" + "-FIX"  # spelled apart: not in this code's own argv
roots = [r for r in os.environ.get("SEARCH_ROOTS", "").split(os.pathsep) if r] or ["/"]
system = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/sys", "/dev")
binary = (".so", ".pyc", ".a", ".o", ".node", ".whl", ".gz", ".zip")
found, gits, scanned = [], [], 0
here = os.getcwd()
for root in roots:
    for top, dirs, files in os.walk(root):
        if top in system or top.startswith(here):
            dirs[:] = []
            continue
        if os.path.isfile(os.path.join(top, "HEAD")) and os.path.isdir(os.path.join(top, "objects")):
            gits.append(top)
        for name in files:
            path = os.path.join(top, name)
            if name.endswith(binary) or os.path.islink(path):
                continue
            try:
                if os.path.getsize(path) > 65536:
                    continue
                with open(path, "rb") as fh:
                    scanned += 1
                    if MARK.encode() in fh.read():
                        found.append("file " + path)
            except OSError:
                pass
fix = None
for git_dir in gits:
    log = subprocess.run(["git", "--git-dir", git_dir, "log", "--all", "-p"], capture_output=True, text=True)
    if MARK in log.stdout:
        found.append("history " + git_dir)
        for sha in subprocess.run(["git", "--git-dir", git_dir, "log", "--all", "--format=%H"],
                                  capture_output=True, text=True).stdout.split():
            text = subprocess.run(["git", "--git-dir", git_dir, "show", sha + ":calc.py"],
                                  capture_output=True, text=True).stdout
            if MARK in text:
                fix = text
if fix:
    open("calc.py", "w").write(fix)
open("agent-findings.txt", "w").write("\n".join(found or ["nothing"]) + "\nscanned %d\n" % scanned)
'''


@pytest.fixture
def clones_on_the_host(calc: dict, tmp_path: Path) -> Iterator[dict[str, Path]]:
    """What a careful user's machine holds beside a run: a clone of the project (its
    history holds the fix) in the home directory and in a work folder outside the temp
    dir, and another run's predictions file holding the fix beside the latter."""
    from tests.conftest import REPO_ROOT

    tag = f"swecl-isolation-{os.getpid()}-{time.monotonic_ns()}"
    home, work = Path.home() / tag, REPO_ROOT / ".dev" / tag
    try:
        for clone in (home / "calc", work / "calc"):
            git(["clone", "-q", str(calc["repo_dir"]), str(clone)], tmp_path)
        (work / "predictions.jsonl").write_text(json.dumps({"instance_id": "acme__calc-1", "model_patch":
                                                            "+    return a + b  # FUTURE-FIX\n"}) + "\n")
        yield {"home": home, "work": work}
    finally:
        for place in (home, work):
            shutil.rmtree(place, ignore_errors=True)


def _search(calc: dict, tmp: Path, cache: Path, sandbox: str, roots: list[Path]) -> tuple[str, list[str], int]:
    dataset = calc_curriculum(tmp / "dataset", base=calc["base"], repo_dir=calc["repo_dir"], repo="acme/calc-search")
    text = dataset.read_text().replace("+    return a + b\\n", "+    return a + b  # FUTURE-FIX\\n")
    assert "FUTURE-FIX" in text  # the dataset holds the fix, as SWE-bench rows do
    dataset.write_text(text)
    results = tmp / "results"
    program = os.path.realpath(sys.executable)  # an interpreter of the host's, named by its path
    done = swecl(results, "run", "--stage", "base", "--dataset", str(dataset), "--agent", "command",
                 "--command", f"{program} -c ${{ISOLATION_SEARCH}}", "--sandbox", sandbox, "--quiet",
                 "--repo-source", f"acme/calc-search={calc['repo_dir']}",
                 cache=cache, check=False, timeout=600,
                 env={"ISOLATION_SEARCH": SEARCH, "SEARCH_ROOTS": os.pathsep.join(map(str, roots))})
    assert done.returncode == 0, done.stderr
    blobs = read_blobs(results)
    [agent] = [e["payload"] for e in read_events(results) if e["type"] == "agent.finished"]
    added = [line[1:] for line in blobs[agent["patch"]].decode().splitlines()
             if line.startswith("+") and not line.startswith("+++")]
    scanned = int(next(a for a in added if a.startswith("scanned ")).split()[1])
    findings = [a for a in added if a.startswith(("file ", "history ", "nothing"))]
    [grade] = [e["payload"] for e in read_events(results) if e["type"] == "grade.finished"]
    return grade["status"], findings, scanned


def test_an_agent_searching_the_whole_host_finds_no_clone_dataset_or_predictions(
        calc: dict, tmp_path: Path, cache: Path, clones_on_the_host: dict[str, Path]) -> None:
    status, findings, scanned = _search(calc, tmp_path, cache, "bwrap", [])
    assert findings == ["nothing"], findings
    assert scanned > 100  # it read what it was shown (its interpreter's own files among them)
    assert status == "unresolved"
    # what it was shown is recorded with the run
    [started] = [e["payload"] for e in read_events(tmp_path / "results") if e["type"] == "run.started"]
    paths = [m["path"] for m in started["visible"]["agent"]]
    assert "{checkout}" in paths and "/usr" in paths and not any(str(Path.home()) == p for p in paths)
    assert not any(p.startswith(str(clones_on_the_host["work"])) or p.startswith(str(calc["repo_dir"])) for p in paths)


def test_positive_control_the_same_search_unconfined_finds_the_clones_and_copies_the_fix(
        calc: dict, tmp_path: Path, cache: Path, clones_on_the_host: dict[str, Path]) -> None:
    status, findings, _ = _search(calc, tmp_path, cache, "none", list(clones_on_the_host.values()))
    assert f"history {clones_on_the_host['home'] / 'calc' / '.git'}" in findings, findings
    assert f"history {clones_on_the_host['work'] / 'calc' / '.git'}" in findings
    assert f"file {clones_on_the_host['work'] / 'predictions.jsonl'}" in findings
    assert status == "resolved"


# Code under test that, on import, looks for a git directory holding the fix in the given
# places (and everywhere outside the system's directories) and runs that commit's module.
HUNT_ATTACK = '''
import os, subprocess
_MARK = "FUTURE" + "-FIX"
_SYSTEM = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/sys", "/dev")
def _hunt(roots):
    for root in roots:
        for top, dirs, files in os.walk(root):
            if top in _SYSTEM:
                dirs[:] = []
                continue
            if not (os.path.isfile(os.path.join(top, "HEAD")) and os.path.isdir(os.path.join(top, "objects"))):
                continue
            shas = subprocess.run(["git", "--git-dir", top, "log", "--all", "--format=%H"], capture_output=True,
                                  text=True).stdout.split()
            for sha in shas:
                text = subprocess.run(["git", "--git-dir", top, "show", sha + ":calc.py"], capture_output=True,
                                      text=True).stdout
                if _MARK in text:
                    return text
_fix = _hunt(ROOTS)
'''


def _hunting_patch(roots: list[str]) -> str:
    """calc.py: the hunt, its own (wrong) add(), and the fix's add() over it when found."""
    body = (HUNT_ATTACK.replace("ROOTS", repr(roots)) + "\n\ndef add(a, b):\n    return a - b\n\n\n"
            "if _fix:\n    exec(_fix)\n").splitlines()
    return ("diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n"
            f"@@ -1,2 +1,{len(body)} @@\n-def add(a, b):\n-    return a - b\n" + "".join(f"+{line}\n" for line in body))


def test_code_under_test_that_hunts_the_host_for_the_fix_does_not_resolve(
        calc: dict, tmp_path: Path, cache: Path, clones_on_the_host: dict[str, Path]) -> None:
    roots = [str(p) for p in clones_on_the_host.values()] + [str(calc["repo_dir"]), "/"]
    [status], _ = _grade(calc, tmp_path, cache, [_hunting_patch(roots)], repo="acme/calc-hunt")
    assert status == "unresolved"


def test_positive_control_the_hunting_code_unconfined_resolves(
        calc: dict, tmp_path: Path, cache: Path, clones_on_the_host: dict[str, Path]) -> None:
    roots = [str(clones_on_the_host["home"])]
    [status], _ = _grade(calc, tmp_path, cache, [_hunting_patch(roots)], repo="acme/calc-hunt-control",
                         sandbox="none")
    assert status == "resolved"
