"""What a sandboxed agent gets: its environment, its object stores, the recall bridge, and
the mounts that hide the cache, the results and the dataset (real bwrap, real processes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from agents._claude import MCP_SERVER_NAME, ClaudeAgent
from agents._confine import RecallBridge, agent_environment, checkout_object_stores
from agents._protocol import AgentInput
from graders.host import Sandbox, sandbox_for

from .mini_recall import Item, MiniRecall


def test_the_agent_environment_names_no_swecl_variable_and_no_hidden_path() -> None:
    environ = {
        "PATH": "/usr/bin", "SWECL_CACHE": "/c", "SWECL_RESULTS": "/r", "SWECL_OWNER": "1.2",
        "PYTHONPATH": "/cache/envs/x:/lib", "NOTES": "see /results/ledger.db", "HOME": "/home/u",
    }
    env = agent_environment(environ, ["/cache", "/results"])
    assert env == {"PATH": "/usr/bin", "SWECL_OWNER": "1.2", "HOME": "/home/u"}


def test_object_stores_are_followed_through_alternates(tmp_path: Path) -> None:
    first, second = tmp_path / "a" / "objects", tmp_path / "b" / "objects"
    for store in (first, second):
        (store / "info").mkdir(parents=True)
    checkout = tmp_path / "checkout"
    (checkout / ".git" / "objects" / "info").mkdir(parents=True)
    (checkout / ".git" / "objects" / "info" / "alternates").write_text(f"{first}\n")
    (first / "info" / "alternates").write_text(f"{second}\n# a comment\n")
    assert checkout_object_stores(checkout) == [first, second]


def test_the_bridge_connects_the_relay_to_a_server_started_outside(tmp_path: Path) -> None:
    # The "server" upper-cases what it reads: proof that bytes went out and came back.
    server = [sys.executable, "-c", "import sys; sys.stdout.write(sys.stdin.read().upper())"]
    with RecallBridge(server, {}, tmp_path / "bridge") as bridge:
        done = subprocess.run(bridge.relay_argv, input=b"recall me\n", capture_output=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout == b"RECALL ME\n"
    assert not bridge.socket_path.exists()


def test_the_bridge_works_from_inside_the_sandbox(tmp_path: Path) -> None:
    hidden = tmp_path / "results"
    hidden.mkdir()
    (hidden / "ledger.db").write_text("secret")
    sandbox = sandbox_for("bwrap", hide=[hidden])
    server = [sys.executable, "-c", "import sys; sys.stdout.write(sys.stdin.read()[::-1])"]
    scratch = tmp_path / "scratch"
    with RecallBridge(server, {}, scratch / "bridge") as bridge:
        argv, env = sandbox.wrap(bridge.relay_argv, cwd=scratch, env={"PATH": "/usr/bin:/bin"}, writable=[scratch],
                                 network=True)
        done = subprocess.run(argv, env=env, input=b"abc", capture_output=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout == b"cba"


def test_what_the_sandbox_hides_and_what_it_keeps(tmp_path: Path) -> None:
    cache, results, work = tmp_path / "cache", tmp_path / "results", tmp_path / "cache" / "workspaces" / "w"
    for d in (cache / "repos" / "x.git", results, work):
        d.mkdir(parents=True)
    (cache / "repos" / "x.git" / "HEAD").write_text("ref: refs/heads/main\n")
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"patch": "the answer"}\n')
    sandbox = sandbox_for("bwrap", hide=[cache, results, rows])
    script = (
        "import os\n"
        f"print(os.path.exists({str(cache / 'repos' / 'x.git' / 'HEAD')!r}))\n"
        "try:\n"
        f"    print(open({str(rows)!r}).read() == '')\n"
        "except OSError:\n"
        "    print(True)\n"
        "open('made-here.txt', 'w').write('ok')\n"
        "for p in ('/usr/x', os.environ['HOME'] + '/.bashrc', '/tmp/t'):\n"
        "    try:\n"
        "        open(p, 'w').write('x'); print('wrote', p)\n"
        "    except OSError as exc:\n"
        "        print('refused', p, exc.errno)\n"
        "print(os.environ['HOME'], len([p for p in os.listdir('/proc') if p.isdigit()]))\n"
    )
    argv, env = sandbox.wrap([sys.executable, "-c", script], cwd=work, env={"PATH": "/usr/bin:/bin", "HOME": "/root"})
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "False"  # the mirror is gone
    assert lines[1] == "True"  # the rows file cannot be read (or reads as empty)
    assert lines[2].startswith("refused /usr/x")  # the system is read-only
    assert lines[3] == "wrote /tmp/home/.bashrc" and lines[4] == "wrote /tmp/t"  # private ones
    home, processes = lines[5].split()
    assert home == "/tmp/home" and int(processes) <= 3  # its own PID namespace
    assert (work / "made-here.txt").read_text() == "ok"  # the worktree is writable
    assert not Path("/tmp/t").exists() or Path("/tmp/t").read_text() != "x"


def test_unconfined_wrap_is_the_command_itself(tmp_path: Path) -> None:
    argv, env = Sandbox("none").wrap(["true"], cwd=tmp_path, env={"A": "1"})
    assert argv == ["true"] and env == {"A": "1"}


def test_an_unknown_mode_is_refused_in_one_line() -> None:
    from ledger import SweclError

    with pytest.raises(SweclError, match="--sandbox 'docker' is not one of bwrap, none"):
        sandbox_for("docker")


def test_a_missing_bwrap_is_refused_with_how_to_install_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from graders.host import SandboxUnavailable

    monkeypatch.setenv("SWECL_BWRAP", str(tmp_path / "no-bwrap"))
    with pytest.raises(SandboxUnavailable, match="apt-get install bubblewrap") as info:
        sandbox_for("bwrap")
    assert "--sandbox none" in str(info.value) and "\n" not in str(info.value)


def test_a_sandboxed_claude_is_given_the_relay_not_the_server(
    make_input: Callable[..., AgentInput], tmp_path: Path
) -> None:
    recall = MiniRecall([Item("m1", 1, 1.0, "a lesson", "body")], tmp_path / "recall")
    sandbox = sandbox_for("bwrap", hide=[tmp_path / "recall"])
    inv = ClaudeAgent(executable=sys.executable).prepare(make_input(recall=recall, sandbox=sandbox))
    config = json.loads(Path(inv.argv[inv.argv.index("--mcp-config") + 1]).read_text())
    server = config["mcpServers"][MCP_SERVER_NAME]
    assert server["args"][-1].endswith("recall.sock") and "recall_relay.py" in server["args"][-2]
    assert str(tmp_path / "recall") not in json.dumps(config)
    assert inv.recall_server is not None and inv.recall_server[0] == recall.mcp_server_argv()


def test_a_program_in_a_private_tree_comes_back_with_its_venv_and_hidden_paths_inside_stay_hidden(
    tmp_path: Path,
) -> None:
    """A clone in /tmp: the program's venv comes back (read-only, over the private /tmp)
    with its base interpreter's install, and results kept inside a shown folder stay
    hidden (mounted after it)."""
    checkout = tmp_path / "checkout"
    venv = checkout / ".venv"
    results = venv / "results"
    results.mkdir(parents=True)
    (venv / "bin").mkdir()
    base = Path(os.path.realpath(sys.executable))
    (venv / "pyvenv.cfg").write_text(f"home = {base.parent}\n")
    (venv / "bin" / "python").symlink_to(base)
    plan = sandbox_for("bwrap", hide=[results]).plan([str(venv / "bin" / "python")], cwd=tmp_path / "cwd", env={})
    modes = {m.path: m.mode for m in plan}
    assert modes[str(venv)] == "ro" and modes[str(results)] == "empty"
    order = [m.path for m in plan]
    assert order.index(str(venv)) < order.index(str(results))
    assert str(checkout) not in modes and str(tmp_path) not in modes  # the venv, not its parents
    if not base.is_relative_to("/usr"):
        assert modes[str(base.parent.parent)] == "ro"  # the interpreter's install
