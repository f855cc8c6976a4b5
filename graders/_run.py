"""Running things in a worktree without a shell: the test command, setup command lines.

swebench's specs are shell text written for a Docker image (`export LANG=...`,
`sed -i ... && ...`, `apt-get install ...`, paths under /testbed). Here nothing is
handed to a shell: a line is split with shlex into simple commands joined by `&&`,
`||` and `;`, each run as an argv list. What needs a real shell (pipes, redirections,
subshells) or root (apt-get, locale-gen) is *reported* with the reason, never run.

Every process runs in its own session (`start_new_session=True`); a timeout kills the
whole process group, so a hanging test and the children it spawned all go. Output goes to
a temporary file rather than a pipe: a grandchild that escaped the group cannot keep a
pipe open and hang the grader.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from graders._apply import normalize_patch
from graders._bytecode import PYCACHE_VAR
from graders._py_compat import installed, site_packages
from graders._results_plugin import PLUGIN_NAME, ResultsChannel
from graders.host import Sandbox, run_in_session
from graders._tox import pytest_args_at

__all__ = [
    "LineResult",
    "ProcessResult",
    "TestCommand",
    "build_test_command",
    "parse_eval_commands",
    "pytest_version",
    "resolve_program",
    "skip_reason",
    "split_line",
    "run_line",
    "run_process",
    "test_directives",
    "test_environment",
]

# swebench's NON_TEST_EXTS: files of a test patch that are data, not test modules.
NON_TEST_EXTS = (".json", ".png", "csv", ".txt", ".md", ".jpg", ".jpeg", ".pkl", ".yml", ".yaml", ".toml")
DOCKER_WORKDIR = "/testbed"
SYSTEM_COMMANDS = frozenset(
    {"apt-get", "apt", "aptitude", "dpkg", "yum", "dnf", "apk", "brew", "sudo", "su",
     "locale-gen", "update-locale", "localedef", "conda", "mamba", "source", ".", "chown", "useradd"}
)
# Fetching arbitrary URLs (matplotlib's qhull tarball) is not done: environments come from
# the package registries only, and a blocked host would stall every task until timeout.
DOWNLOAD_COMMANDS = frozenset({"wget", "curl"})
_PYTHON_MODULE_SCRIPTS = {"pytest": "pytest", "py.test": "pytest", "tox": "tox", "pip": "pip", "pip3": "pip"}
_ASSIGN_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)
_VAR_RE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
_SHELL_ONLY = {"|", "|&", ">", ">>", "<", "<<", "&", "(", ")", ">&", "<&", "&>"}
# Host variables a test run may see; everything else (PYTHONPATH, PYTEST_ADDOPTS,
# VIRTUAL_ENV of the grader's own venv, ...) would change what the tests do.
_PASSTHROUGH = ("HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "TERM", "SHELL")


@dataclass(slots=True)
class ProcessResult:
    exit_code: int | None
    output: bytes
    duration_s: float
    timed_out: bool = False
    error: str | None = None  # the program could not be started


@dataclass(slots=True)
class LineResult:
    line: str
    status: str  # ok | failed | skipped
    exit_code: int | None = None
    output: str = ""
    reason: str | None = None


@dataclass(slots=True)
class TestCommand:
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)  # from the command's VAR=value prefix
    directives: list[str] = field(default_factory=list)
    channel: ResultsChannel | None = None  # a pytest run's results channel (graders._results_plugin)
    notes: list[str] = field(default_factory=list)  # what was changed in the command, for the grade's log

    __test__ = False  # not a pytest class


def run_process(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout_s: float | None,
    sandbox: Sandbox | None = None,
    writable: Sequence[Path] = (),
    readable: Sequence[Path] = (),
    home: Mapping[str, str] | None = None,
) -> ProcessResult:
    """Run argv in its own session; on timeout kill the whole group at once (a test run has
    nothing to flush). Output: stdout+stderr, through a file (see the module doc). The
    session, the kill and the reaping are `graders.host`'s, shared with the agents.

    With a confined `sandbox` the command runs inside it, `cwd` and `writable` read-write,
    `readable` read-only, nothing else writable, no network, `home`'s files read-only in
    its home (see `_sandbox`, `graders._sandbox_home`)."""

    def confine(argv: Sequence[str], env: dict[str, str]) -> tuple[Sequence[str], Mapping[str, str]]:
        if sandbox is not None and sandbox.confined:
            return sandbox.wrap(argv, cwd=cwd, env=env, writable=writable, readable=readable, home=home)
        return argv, env

    start = time.monotonic()
    with tempfile.TemporaryFile(prefix="swecl-out-") as sink:
        try:
            run = run_in_session(argv, cwd=cwd, env=env, stdout=sink, stderr=subprocess.STDOUT,
                                 timeout_s=timeout_s, wrap=confine)
        except OSError as exc:
            return ProcessResult(None, b"", time.monotonic() - start, error=f"cannot run {argv[0]!r}: {exc}")
        sink.seek(0)
        output = sink.read()
    if run.timed_out:
        output += f"\n[swecl] timed out after {timeout_s}s: process group killed\n".encode()
    return ProcessResult(run.returncode, output, run.duration_s, run.timed_out)


def test_directives(repo: str, test_patch: str) -> list[str]:
    """What to pass the test command, as swebench's `get_test_directives`: the files the
    test patch touches (data files left out); django wants module labels (`tests/a/b.py`
    -> `a.b`)."""
    found = re.findall(r"diff --git a/.* b/(.*)", normalize_patch(test_patch or ""))
    directives = [d for d in dict.fromkeys(found) if not any(d.endswith(ext) for ext in NON_TEST_EXTS)]
    if repo == "django/django":
        labels = []
        for d in directives:
            d = d[: -len(".py")] if d.endswith(".py") else d
            d = d[len("tests/") :] if d.startswith("tests/") else d
            labels.append(d.replace("/", "."))
        directives = labels
    return directives


def _expand(token: str, variables: Mapping[str, str], worktree: Path) -> str:
    def sub(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        return variables.get(name, m.group(0))

    token = _VAR_RE.sub(sub, token)
    if token == DOCKER_WORKDIR or token.startswith(DOCKER_WORKDIR + "/"):
        token = os.fspath(worktree) + token[len(DOCKER_WORKDIR) :]
    return token.replace("=" + DOCKER_WORKDIR, "=" + os.fspath(worktree))


def split_line(line: str) -> list[tuple[str, list[str]]] | str:
    """`a && b || c; d` -> [(';', a), ('&&', b), ('||', c), (';', d)], or why it can't be."""
    if "`" in line or "$(" in line:
        return "needs a shell (command substitution)"
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|<>()")
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        tokens = list(lexer)
    except ValueError as exc:
        return f"cannot be split ({exc})"
    segments: list[tuple[str, list[str]]] = []
    op, words = ";", []
    for tok in tokens:
        if tok in ("&&", "||", ";"):
            if words:
                segments.append((op, words))
            op, words = tok, []
        elif tok in _SHELL_ONLY or set(tok) <= set(";&|<>()"):
            return f"needs a shell ({tok!r})"
        else:
            words.append(tok)
    if words:
        segments.append((op, words))
    return segments


def skip_reason(parts: list[tuple[str, list[str]]] | str) -> str | None:
    """Why a split line (`split_line`) is not run here, or None when it can be."""
    if isinstance(parts, str):
        return parts
    for _, words in parts:
        program = next((w for w in words if not _ASSIGN_RE.match(w)), None)
        if program in SYSTEM_COMMANDS:
            return f"system command {program!r} needs root and a system package manager"
        if program in DOWNLOAD_COMMANDS:
            return f"{program!r} downloads from outside the package registries"
    return None


def resolve_program(name: str, *, python: Path, bin_dir: Path | None, worktree: Path) -> list[str]:
    """argv[0] -> the argv prefix to run it with the environment's interpreter and tools."""
    if name in ("python", "python3") or re.fullmatch(r"python\d(\.\d+)?", name):
        return [os.fspath(python)]
    if "/" in name:
        script = (worktree / name) if not os.path.isabs(name) else Path(name)
        if script.is_file():
            with open(script, "rb") as fh:
                first = fh.readline(200)
            # run Python scripts with the env's interpreter, whatever their shebang or mode bits
            if name.endswith(".py") or (first.startswith(b"#!") and b"python" in first):
                return [os.fspath(python), os.fspath(script)]
            return [os.fspath(script)]
        return [name]
    if bin_dir is not None and (bin_dir / name).is_file():
        return [os.fspath(bin_dir / name)]
    if name in _PYTHON_MODULE_SCRIPTS:
        return [os.fspath(python), "-m", _PYTHON_MODULE_SCRIPTS[name]]
    path = os.pathsep.join(p for p in (os.fspath(bin_dir) if bin_dir else "", os.environ.get("PATH", "")) if p)
    found = shutil.which(name, path=path)
    return [found or name]


def test_environment(
    *, bin_dir: Path | None, venv: Path | None = None, extra: Mapping[str, str] = (), channel: ResultsChannel | None = None,
    pycache: Path | None = None,
) -> dict[str, str]:
    """The variables a test run gets: a short host allowlist, the env's bin first on PATH,
    with a prepared results `channel` its plugin on PYTHONPATH (ahead of the spec's), and
    with `pycache` that private bytecode cache (graders._bytecode)."""
    env = {k: os.environ[k] for k in _PASSTHROUGH if k in os.environ}
    env.setdefault("LANG", "C.UTF-8")
    path = os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin")
    env["PATH"] = os.pathsep.join([os.fspath(bin_dir), path]) if bin_dir else path
    if venv is not None:
        env["VIRTUAL_ENV"] = os.fspath(venv)
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # no .pyc files left in the worktree between tasks
    env.update(dict(extra))
    if pycache is not None:
        env[PYCACHE_VAR] = os.fspath(pycache)  # after `extra`: the spec does not choose it
    if channel is not None and channel.dir is not None:
        env = channel.environment(env)
    return env


def _runs_pytest(words: Sequence[str]) -> bool:
    """`pytest ...`, `py.test ...`, `python -m pytest ...` (tox and other runners: no)."""
    program = os.path.basename(words[0])
    if program in ("pytest", "py.test"):
        return True
    return bool(re.fullmatch(r"python(\d(\.\d+)?)?", program)) and list(words[1:3]) == ["-m", "pytest"]


# `--no-header` came with pytest 6.0. The command SWE-bench made the task lists with gives
# it (graders/data/extract_env_specs.py: LISTS_TEST_PYTEST), and its environments had a
# pytest that knew it; an environment resolved as of an older era may hold a pytest
# without it, which would stop at the unknown option before running a single test. There
# the option goes, and the header is shown, as swebench 4.1.0's own `pytest -rA` shows it.
_NO_HEADER = "--no-header"
_NO_HEADER_SINCE = (6, 0)


def _version_tuple(text: str) -> tuple[int, ...] | None:
    """`7.4.0` -> (7, 4, 0), `6.0.0rc1` -> (6, 0, 0); None when it does not start with a number."""
    parts = []
    for piece in text.split("."):
        m = re.match(r"\d+", piece)
        if not m:
            break
        parts.append(int(m.group()))
        if m.end() != len(piece):
            break
    return tuple(parts) or None


def pytest_version(venv: Path) -> tuple[int, ...] | None:
    """The version of the pytest installed in `venv` (from its dist-info), None when none is
    found (no venv, an egg-link install, an unreadable name)."""
    site = site_packages(venv)
    if site is None:
        return None
    found = installed(site).get("pytest")
    return _version_tuple(found[0]) if found else None


def parse_eval_commands(lines: Sequence[str], worktree: Path) -> tuple[dict[str, str], list[str]]:
    """`export NAME=value` lines -> variables; every other line is returned as skipped."""
    env: dict[str, str] = {}
    skipped: list[str] = []
    for line in lines:
        parts = split_line(line)
        if isinstance(parts, str) or len(parts) != 1 or parts[0][1][0] != "export":
            skipped.append(line)
            continue
        words = parts[0][1][1:]
        assigns = [_ASSIGN_RE.match(w) for w in words]
        if not words or not all(assigns):
            skipped.append(line)
            continue
        for m in assigns:
            assert m is not None
            env[m.group(1)] = _expand(m.group(2), env, worktree)
    return env, skipped


def build_test_command(
    test_cmd: str,
    directives: Sequence[str],
    *,
    python: Path,
    bin_dir: Path | None,
    worktree: Path,
    channel: ResultsChannel | None = None,
    pytest_version: tuple[int, ...] | None = None,
) -> TestCommand:
    """spec.test_cmd + directives as argv; leading VAR=value words become variables.

    With a `channel`, a pytest command also loads swecl's results plugin (`-p`, right after
    the program, or after the `--` of a `tox --current-env` command) and the channel is
    prepared; any other runner is left as it is.
    `pytest_version`: the environment's pytest (`pytest_version`); one older than 6.0 gets
    the command without `--no-header`, which it does not know (the command's `notes` say so)."""
    parts = split_line(test_cmd)
    if isinstance(parts, str) or len(parts) != 1:
        raise ValueError(f"test command {test_cmd!r} is not a simple command: {parts if isinstance(parts, str) else 'several commands'}")
    words = parts[0][1]
    env: dict[str, str] = {}
    while words and _ASSIGN_RE.match(words[0]):
        m = _ASSIGN_RE.match(words[0])
        assert m is not None
        env[m.group(1)] = m.group(2)
        words = words[1:]
    if not words:
        raise ValueError(f"test command {test_cmd!r} names no program")
    words = [_expand(w, env, worktree) for w in words]
    program = resolve_program(words[0], python=python, bin_dir=bin_dir, worktree=worktree)
    rest = words[1:]
    notes: list[str] = []
    if _runs_pytest(words) and _NO_HEADER in rest and pytest_version is not None and pytest_version < _NO_HEADER_SINCE:
        rest = [w for w in rest if w != _NO_HEADER]
        notes.append(f"[swecl] test command without {_NO_HEADER}: the environment's pytest "
                     f"{'.'.join(map(str, pytest_version))} has no such option (it came with pytest 6.0)")
    # where pytest's own arguments go: after the program (`python -m pytest`: after the
    # module), or after a `tox --current-env ... --` (its posargs, graders/_tox.py)
    at: int | None = None
    if _runs_pytest(words):
        at = 2 if rest[:2] == ["-m", "pytest"] else 0
    elif (after := pytest_args_at(words)) is not None:
        at = after - 1  # `rest` is `words` without the program
    use_channel = channel is not None and at is not None
    if use_channel:
        assert channel is not None and at is not None
        channel.prepare()
        rest = [*rest[:at], "-p", PLUGIN_NAME, *rest[at:]]
    argv = program + rest + list(directives)
    return TestCommand(argv=argv, env=env, directives=list(directives), channel=channel if use_channel else None,
                       notes=notes)


def run_line(
    line: str,
    *,
    cwd: Path,
    env: Mapping[str, str],
    python: Path,
    bin_dir: Path | None,
    variables: dict[str, str] | None = None,
    timeout_s: float | None = 3600,
) -> LineResult:
    """Run one setup line (`sed -i ... && ...`) without a shell; see the module doc.

    `variables` carries shell variables between lines (`QHULL_TAR=...` then `wget -O "$QHULL_TAR"`).
    """
    variables = {} if variables is None else variables
    parts = split_line(line)
    if isinstance(parts, str):
        return LineResult(line, "skipped", reason=parts)
    reason = skip_reason(parts)
    if reason:
        return LineResult(line, "skipped", reason=reason)
    rc = 0
    outputs: list[str] = []
    for op, words in parts:
        if (op == "&&" and rc != 0) or (op == "||" and rc == 0):
            continue
        words = [_expand(w, {**env, **variables}, cwd) for w in words]
        local_env: dict[str, str] = {}
        while words and _ASSIGN_RE.match(words[0]):
            m = _ASSIGN_RE.match(words[0])
            assert m is not None
            local_env[m.group(1)] = m.group(2)
            words = words[1:]
        if not words:
            variables.update(local_env)
            rc = 0
            continue
        if words[0] in ("export",):
            for w in words[1:]:
                m = _ASSIGN_RE.match(w)
                if m:
                    variables[m.group(1)] = m.group(2)
            rc = 0
            continue
        if words[0] in ("true", ":"):
            rc = 0
            continue
        argv = resolve_program(words[0], python=python, bin_dir=bin_dir, worktree=cwd) + words[1:]
        result = run_process(argv, cwd=cwd, env={**env, **local_env}, timeout_s=timeout_s)
        outputs.append(f"$ {shlex.join(argv)}\n" + result.output.decode("utf-8", "replace"))
        if result.error:
            outputs.append(result.error + "\n")
        rc = 124 if result.timed_out else (result.exit_code if result.exit_code is not None else 127)
    return LineResult(line, "ok" if rc == 0 else "failed", rc, "".join(outputs))


# pytest collects imported `test_*` callables; these two are not tests
test_directives.__test__ = False  # type: ignore[attr-defined]
test_environment.__test__ = False  # type: ignore[attr-defined]
