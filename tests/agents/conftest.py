"""Fixtures of the agents tests: real git worktrees, inputs, the real `claude` CLI from npm."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agents._protocol import AgentInput
from tests.debian import apt_install

REPO_ROOT = Path(__file__).resolve().parents[2]

MODULE_PY = '''\
"""A tiny module the tests fix."""


def greet(name):
    return "Hello, " + name.title()


def total(values):
    result = 0
    for v in values:
        result += v
    return result
'''


def git(cwd: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull,
               GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com")
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True)
    return done.stdout


def build_repo(path: Path) -> Path:
    """A small real repository: a package, a test, a .gitignore; one commit."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    (path / "pkg").mkdir()
    (path / "pkg" / "__init__.py").write_text("")
    (path / "pkg" / "util.py").write_text(MODULE_PY)
    (path / "tests").mkdir()
    (path / "tests" / "test_util.py").write_text("from pkg.util import greet\n\n\ndef test_greet():\n    assert greet('ada') == 'Hello, Ada'\n")
    (path / ".gitignore").write_text("*.log\n")
    (path / "README.md").write_text("demo\n")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "base")
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return build_repo(tmp_path / "repo")


@pytest.fixture
def make_input(tmp_path: Path, repo: Path) -> Callable[..., AgentInput]:
    def make(**overrides: Any) -> AgentInput:
        fields: dict[str, Any] = dict(
            instance_id="demo__pkg-1",
            repo="demo/pkg",
            issue="greet() crashes on None: greet(None) raises AttributeError.",
            worktree=repo,
            scratch_dir=tmp_path / "scratch",
        )
        fields.update(overrides)
        return AgentInput(**fields)

    return make


@pytest.fixture
def api_key() -> str:
    # Deliberately not shaped like any vendor's keys: only the literal-value scrubbing can catch it.
    return f"fake-key-{uuid.uuid4().hex}"


# A fix of greet() as a patch (what a gold patch / a prediction / a memory item holds).
GREET_FIX = """\
diff --git a/pkg/util.py b/pkg/util.py
--- a/pkg/util.py
+++ b/pkg/util.py
@@ -2,6 +2,8 @@
 
 
 def greet(name):
+    if name is None:
+        return "Hello"
     return "Hello, " + name.title()
 
 
"""


# --- the real vendor CLIs from npm ------------------------------------------------------

CLAUDE_VERSION = "2.1.197"  # the version of the shared captures and of claude_help.txt
CODEX_VERSION = "0.169.0"  # the version whose wire format fake_openai.py speaks (npm @openai/codex)
GEMINI_VERSION = "0.61.0"  # the version whose wire format fake_gemini.py speaks (npm @google/gemini-cli)
OPENCODE_VERSION = "1.18.33"  # the version of the captures in test_opencode_events.py (npm opencode-ai)


def _npm_cache_root() -> Path:
    return Path(os.environ.get("SWECL_NPM_CACHE") or REPO_ROOT / ".dev" / "npm")


def npm_cli(package: str, version: str, command: str, env_var: str, *, timeout_s: float = 300,
            works: Callable[[Path, str], bool] | None = None) -> str:
    """The real `command` CLI of npm `package`@`version`, installed once into a cached
    prefix (`$SWECL_NPM_CACHE`, else `.dev/npm`) and reused by every later session; the
    first session to need it installs it, only then. $`env_var` points at an existing
    install instead. No npm or no registry: the test is skipped, loudly. `works` checks an
    install (default: `command --version` prints `version`; a server has no such flag)."""
    works = works or _works
    explicit = os.environ.get(env_var)
    if explicit:
        return explicit
    prefix = _npm_cache_root() / f"{package.rsplit('/', 1)[-1]}-{version}"
    binary = prefix / "node_modules" / ".bin" / command
    if works(binary, version):
        return str(binary)
    npm, why = apt_install(["nodejs", "npm"], lambda: shutil.which("npm"), "swecl-npm-install.lock")
    if npm is None:
        pytest.skip(f"SKIPPED LOUDLY: npm is not on PATH, so the {command} CLI {version} cannot be installed "
                    f"(install Node.js with npm, or set {env_var}): {why}")
    prefix.parent.mkdir(parents=True, exist_ok=True)
    with open(prefix.parent / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # xdist workers install once, the others wait
        if not works(binary, version):
            staging = prefix.with_name(prefix.name + ".partial")
            shutil.rmtree(staging, ignore_errors=True)
            try:
                done = subprocess.run(
                    [npm, "install", "--no-audit", "--no-fund", "--fetch-retries=1", "--prefix", str(staging),
                     f"{package}@{version}"],
                    capture_output=True, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL,
                )
            except subprocess.TimeoutExpired:
                pytest.skip(f"SKIPPED LOUDLY: npm install {package}@{version} timed out (is the npm registry reachable?)")
            staged = staging / "node_modules" / ".bin" / command
            if done.returncode != 0 or not works(staged, version):
                tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
                pytest.skip(f"SKIPPED LOUDLY: npm could not install {package}@{version} "
                            f"(registry unreachable?): {' | '.join(tail)}")
            shutil.rmtree(prefix, ignore_errors=True)
            staging.rename(prefix)
    return str(binary)


def _works(binary: Path, version: str) -> bool:
    if not binary.exists():
        return False
    try:
        done = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and version in done.stdout


@pytest.fixture(scope="session")
def claude_bin() -> str:
    """The real `claude` CLI of CLAUDE_VERSION ($SWECL_CLAUDE_BIN: another install)."""
    return npm_cli("@anthropic-ai/claude-code", CLAUDE_VERSION, "claude", "SWECL_CLAUDE_BIN")


@pytest.fixture(scope="session")
def codex_bin() -> str:
    """The real `codex` CLI of CODEX_VERSION ($SWECL_CODEX_BIN: another install). The npm
    package pulls its platform's native binary (~400 MB) as an optional dependency, so
    only the codex tests ask for it."""
    return npm_cli("@openai/codex", CODEX_VERSION, "codex", "SWECL_CODEX_BIN", timeout_s=600)


@pytest.fixture(scope="session")
def gemini_bin() -> str:
    """The real `gemini` CLI of GEMINI_VERSION ($SWECL_GEMINI_BIN: another install)."""
    return npm_cli("@google/gemini-cli", GEMINI_VERSION, "gemini", "SWECL_GEMINI_BIN")


@pytest.fixture(scope="session")
def opencode_bin() -> str:
    """The real `opencode` CLI of OPENCODE_VERSION ($SWECL_OPENCODE_BIN: another install). The
    npm package pulls its platform's native binary (~180 MB, the provider SDKs bundled) as
    an optional dependency."""
    return npm_cli("opencode-ai", OPENCODE_VERSION, "opencode", "SWECL_OPENCODE_BIN", timeout_s=600)


SERVER_MEMORY_VERSION = "2026.8.31"  # the reference MCP memory server (npm @modelcontextprotocol/server-memory)


def _server_memory_installed(binary: Path, version: str) -> bool:
    """It has no --version: its package.json says what is installed."""
    package = binary.parent.parent / "@modelcontextprotocol" / "server-memory" / "package.json"
    try:
        return binary.exists() and json.loads(package.read_text())["version"] == version
    except (OSError, ValueError, KeyError):
        return False


@pytest.fixture(scope="session")
def server_memory_bin() -> str:
    """The real reference MCP memory server of SERVER_MEMORY_VERSION ($SWECL_SERVER_MEMORY_BIN: another install)."""
    return npm_cli("@modelcontextprotocol/server-memory", SERVER_MEMORY_VERSION, "mcp-server-memory",
                   "SWECL_SERVER_MEMORY_BIN", works=_server_memory_installed)


# --- mini-swe-agent from PyPI -------------------------------------------------------------

MINI_VERSION = "2.4.6"  # the version whose CLI and trajectory format the adapter and fake_chat.py follow


def _pypi_installed(binary: Path, package: str, version: str) -> bool:
    """Whether `binary`'s venv holds `package` `version` (a CLI's `--version` may start it)."""
    python = binary.parent / "python"
    if not (binary.exists() and python.exists()):
        return False
    try:
        done = subprocess.run([str(python), "-c", f"import importlib.metadata as m; print(m.version({package!r}))"],
                              capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and done.stdout.strip() == version


def pypi_cli(package: str, version: str, command: str, env_var: str, *, python: str = sys.executable,
             imports: tuple[str, ...] = (), extra: tuple[str, ...] = (), no_deps: bool = False) -> str:
    """The real `command` CLI of PyPI `package`@`version` ($`env_var`: another install),
    installed once with uv into a cached venv of `python` (`$SWECL_PYPI_CACHE`, else
    `.dev/pypi`) and reused by every later session. No PyPI: the test is skipped, loudly.

    At install, `imports` (what the CLI imports when it runs) are imported once, which
    leaves their bytecode in the venv's own `__pycache__` folders, as pip's install would:
    the sandbox shows the venv read-only and not the tests' bytecode cache
    (PYTHONPYCACHEPREFIX, conftest, which it drops), so a large package would otherwise
    compile at every start. Not uv's `--compile-bytecode`: compiling every module of the
    package and its dependencies cost more CPU (basic-memory's: 24 s) than all the starts
    of the tests. `extra`: requirements installed beside it (in the venv's name too);
    `no_deps`: `extra` stands for the package's own requirements, which are not installed."""
    explicit = os.environ.get(env_var)
    if explicit:
        return explicit
    from graders._interpreters import uv_bin

    root = Path(os.environ.get("SWECL_PYPI_CACHE") or REPO_ROOT / ".dev" / "pypi")
    extras = "+" + hashlib.sha256("\n".join(extra).encode()).hexdigest()[:10] if extra else ""
    prefix = root / f"{package}-{version}{extras}"
    binary = prefix / "bin" / command
    warmed = prefix / ".swecl-warm"  # the imports' bytecode is in the venv (see above)
    if _pypi_installed(binary, package, version) and (warmed.exists() or not imports):
        return str(binary)
    root.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    with open(root / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # xdist workers install once, the others wait
        if _pypi_installed(binary, package, version) and (warmed.exists() or not imports):
            return str(binary)  # another worker finished it
        if not _pypi_installed(binary, package, version):
            # Built in place (a venv's scripts name its path, so it cannot be renamed): a
            # half-built one of an interrupted session fails the check and is built again.
            shutil.rmtree(prefix, ignore_errors=True)
            pip = [uv_bin(), "pip", "install", "--quiet", "--python", str(prefix / "bin" / "python")]
            installs = [[*pip, *extra], [*pip, "--no-deps", f"{package}=={version}"]] if no_deps else \
                [[*pip, f"{package}=={version}", *extra]]
            for argv in ([uv_bin(), "venv", "--quiet", "--no-python-downloads", "--python", python, str(prefix)],
                         *installs):
                try:
                    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, env=env,
                                          stdin=subprocess.DEVNULL)
                except subprocess.TimeoutExpired:
                    pytest.skip(f"SKIPPED LOUDLY: installing {package}=={version} timed out (is PyPI reachable?)")
                if done.returncode != 0:
                    tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
                    pytest.skip(f"SKIPPED LOUDLY: uv could not install {package}=={version} "
                                f"(PyPI unreachable?): {' | '.join(tail)}")
        if imports:  # in a home of its own: an import may write its config there
            # beside the sources, not in the tests' cache: no PYTHONPYCACHEPREFIX, and writes allowed
            own = {k: v for k, v in env.items() if k not in ("PYTHONPYCACHEPREFIX", "PYTHONDONTWRITEBYTECODE")}
            with tempfile.TemporaryDirectory() as home:
                # LiteLLM fetches its price list from GitHub at import unless told not to
                warm = subprocess.run([str(prefix / "bin" / "python"), "-c", f"import {', '.join(imports)}"],
                                      env={**own, "HOME": home, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
                                      capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
            if warm.returncode != 0:  # a module renamed by a new version: say so, not run slowly unseen
                shutil.rmtree(prefix, ignore_errors=True)
                pytest.fail(f"{package}=={version} installed, but `import {', '.join(imports)}` failed: "
                            f"{(warm.stderr.strip().splitlines() or ['?'])[-1]}")
            warmed.touch()
    return str(binary)


@pytest.fixture(scope="session")
def mini_bin() -> str:
    """The real `mini` CLI of MINI_VERSION ($SWECL_MINI_BIN: another install), from PyPI
    (`pypi_cli`; LiteLLM is large, hence its import at install)."""
    return pypi_cli("mini-swe-agent", MINI_VERSION, "mini", "SWECL_MINI_BIN",
                    imports=("minisweagent.run.mini", "minisweagent.models.litellm_model", "litellm"))


# --- mem0 (the mem0ai library, served by swecl's bridge) from PyPI --------------------------

MEM0_VERSION = "2.2.1"  # the mem0ai the `mem0` preset's bridge was written against
MEM0_MCP = "mcp==2.3.0"


@pytest.fixture(scope="session")
def mem0_python() -> str:
    """A Python with the real mem0ai of MEM0_VERSION and the MCP SDK from PyPI
    ($SWECL_MEM0_PYTHON: another), the install the `mem0` preset runs its bridge with."""
    return pypi_cli("mem0ai", MEM0_VERSION, "python", "SWECL_MEM0_PYTHON", extra=(MEM0_MCP,),
                    imports=("mem0", "mem0.memory.main", "mem0.vector_stores.qdrant", "mem0.llms.openai",
                             "mem0.embeddings.openai", "qdrant_client", "openai", "mcp.server.mcpserver"))


# --- cognee-mcp from PyPI, without torch ---------------------------------------------------

COGNEE_MCP_VERSION = "0.5.7"  # the cognee-mcp whose tools (remember, recall) the preset calls


@pytest.fixture(scope="session")
def cognee_bin() -> str:
    """The real `cognee-mcp` of COGNEE_MCP_VERSION ($SWECL_COGNEE_BIN: another install), with
    cognee and its requirements but not torch, which its tools never import (the preset's
    own install recipe: 1.3 GB rather than 7)."""
    from commands.run.memory import PRESETS

    preset = PRESETS["cognee"]
    return pypi_cli("cognee-mcp", COGNEE_MCP_VERSION, "cognee-mcp", "SWECL_COGNEE_BIN", extra=preset.extra,
                    no_deps=True, imports=("src.server", "cognee", "litellm", "lancedb"))


# --- basic-memory from PyPI ---------------------------------------------------------------

BASIC_MEMORY_VERSION = "0.24.1"  # the version whose tools (write_note, search_notes) the tests call


def python_at_least(minor: int) -> str | None:
    """An interpreter of Python 3.`minor` or newer on this machine: swecl's own, one on
    PATH, or one pyenv keeps (its shims fail for a version not selected); None if none."""
    if sys.version_info >= (3, minor):
        return sys.executable
    candidates = [shutil.which(f"python3.{m}") for m in range(minor, 20)]
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    if pyenv.is_dir():
        candidates += [str(p / "bin" / "python3") for p in sorted(pyenv.iterdir(), reverse=True)]
    for candidate in filter(None, candidates):
        try:
            done = subprocess.run([candidate, "-c", f"import sys; sys.exit(sys.version_info < (3, {minor}))"],
                                  capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if done.returncode == 0:
            return candidate
    return None


@pytest.fixture(scope="session")
def basic_memory_bin() -> str:
    """The real `basic-memory` CLI of BASIC_MEMORY_VERSION ($SWECL_BASIC_MEMORY_BIN: another
    install), an MCP memory server keeping markdown notes; it needs Python 3.12 or newer,
    which swecl does not: the test is skipped, loudly, on a machine without one."""
    if os.environ.get("SWECL_BASIC_MEMORY_BIN"):
        return os.environ["SWECL_BASIC_MEMORY_BIN"]
    python = python_at_least(12)
    if python is None:
        pytest.skip(f"SKIPPED LOUDLY: basic-memory {BASIC_MEMORY_VERSION} needs Python 3.12 or newer and this "
                    "machine has none (set SWECL_BASIC_MEMORY_BIN to an install)")
    return pypi_cli("basic-memory", BASIC_MEMORY_VERSION, "basic-memory", "SWECL_BASIC_MEMORY_BIN", python=python,
                    imports=("basic_memory.cli.main", "basic_memory.cli.commands.mcp", "basic_memory.mcp.server",
                             "basic_memory.mcp.tools", "basic_memory.mcp.prompts", "basic_memory.mcp.resources",
                             "basic_memory.db"))
