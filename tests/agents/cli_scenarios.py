"""What the end-to-end tests of the CLI agents (claude, codex, gemini, opencode) share: an isolated
environment pointed at a loopback fake, the fakes' lifetimes, a ledger with one lesson
recalled through the project's own recall service, a memory server that fails to start,
and the checks that no key is kept anywhere and no process outlives its run; and for the
CLIs added beside claude, a `Case` each (what differs between them) and a `Harness` that
runs one against its fake."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from agents._cli_agent import CliAgent
from agents._codex import CodexAgent
from agents._gemini import GeminiAgent
from agents._mini import MiniSweAgent
from agents._opencode import OpencodeAgent
from agents._protocol import AgentInput, AgentResult
from agents._recall import RecallService
from ledger import Ledger
from ledger.events import MemoryRecalled, MemoryWritten, RunStarted, TaskFinished, TaskStarted
from projections import write_atif
from tests.atif_check import AtifValidator

from . import fake_anthropic, fake_chat, fake_gemini, fake_openai
from .fake_api import FakeAPI, Step
from .mini_recall import Item

F = TypeVar("F", bound=FakeAPI)

# Proxies would send the CLI's loopback calls elsewhere.
PROXIES = ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy")
LESSON = "greet(None) needs a None guard before .title()"


@dataclass(frozen=True)
class Case:
    name: str
    agent: type[CliAgent[Any]]
    fake: type[FakeAPI]
    model: str
    dropped: tuple[str, ...]  # other ways to log in or configure the CLI
    base_url_var: str
    key_var: str
    say: Callable[[str], Step]  # a model reply with just this text
    recall: Callable[[str], list[Step]]  # the model replies that end in a recall with this query
    sent: Callable[[dict[str, Any]], str]  # what a request gives the model, as text
    returned: Callable[[dict[str, Any]], str]  # the tool results a request sends back, as text
    rejected: str  # what the CLI says of a key the API refuses
    mcp: bool = True  # an MCP client: recall is its tool (else the notes come primed in the prompt)
    sessions: bool = True  # the CLI names its session (an id in the result)
    # How long the CLI may take, on a loaded 2-core machine, from its start to its first
    # API request (the hanging-API test's time limit must come after it): opencode's
    # native binary and mini-swe-agent's import of LiteLLM (seconds of CPU) start slowly.
    start_s: float = 15


CASES = [
    Case("codex", CodexAgent, fake_openai.FakeOpenAI, fake_openai.MODEL,
         ("CODEX_API_KEY", "CODEX_HOME", "OPENAI_ORGANIZATION", "OPENAI_PROJECT", "RUST_LOG"),
         "OPENAI_BASE_URL", "OPENAI_API_KEY",
         say=lambda words: [fake_openai.text(words)],
         # codex defers MCP tools behind its tool search: the model finds the tool first
         recall=lambda query: [[fake_openai.tool_search("recall")],
                               [fake_openai.mcp_call("memory", "recall", {"query": query, "repo": "demo/pkg", "k": 3})]],
         sent=lambda body: json.dumps(body["input"]),
         returned=lambda body: json.dumps(fake_openai.tool_outputs(body)),
         rejected="401 Unauthorized"),
    Case("gemini", GeminiAgent, fake_gemini.FakeGemini, fake_gemini.MODEL,
         ("GEMINI_CLI_HOME", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_GCA", "GOOGLE_CLOUD_PROJECT",
          "GEMINI_MODEL"),
         "GOOGLE_GEMINI_BASE_URL", "GEMINI_API_KEY",
         say=lambda words: [fake_gemini.text(words)],
         recall=lambda query: [[fake_gemini.function_call("mcp_memory_recall", {"query": query, "repo": "demo/pkg", "k": 3})]],
         sent=lambda body: json.dumps(body["contents"]),
         returned=lambda body: json.dumps(fake_gemini.function_responses(body)),
         rejected="API key not valid"),
    # No MCP client; through LiteLLM's `openai/` provider. It finishes by a command, never
    # by words alone (a reply without a tool call is a format error to it).
    Case("mini", MiniSweAgent, fake_chat.FakeChat, fake_chat.MODEL,
         ("MSWEA_GLOBAL_CONFIG_DIR", "MSWEA_MODEL_NAME", "OPENAI_API_BASE", "LITELLM_MODEL_REGISTRY_PATH"),
         "OPENAI_BASE_URL", "OPENAI_API_KEY",
         say=lambda words: [fake_chat.text(words), fake_chat.bash(fake_chat.SUBMIT)],
         recall=lambda query: [],
         sent=lambda body: json.dumps(body["messages"]),
         returned=lambda body: json.dumps(fake_chat.tool_results(body)),
         rejected="Incorrect API key provided", mcp=False, sessions=False, start_s=45),
    # opencode's anthropic provider, at ANTHROPIC_BASE_URL as the claude CLI reads it
    Case("opencode", OpencodeAgent, fake_anthropic.FakeAnthropic, fake_anthropic.OPENCODE_MODEL,
         ("ANTHROPIC_AUTH_TOKEN", "OPENCODE_CONFIG", "OPENCODE_CONFIG_DIR", "OPENCODE_CONFIG_CONTENT", "XDG_CONFIG_HOME",
          "XDG_DATA_HOME"),
         "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY",
         say=lambda words: [fake_anthropic.text(words)],
         recall=lambda query: [[fake_anthropic.tool_use("memory_recall", {"query": query, "repo": "demo/pkg", "k": 3})]],
         sent=lambda body: json.dumps(body["messages"]),
         returned=lambda body: json.dumps(fake_anthropic.tool_results(body)),
         rejected="invalid x-api-key", start_s=45),
]
MCP_CASES = [c for c in CASES if c.mcp]


class Harness:
    """One case's CLI, its fakes and the environment pointing it at them."""

    def __init__(self, case: Case, binary: str, monkeypatch: pytest.MonkeyPatch, api_key: str,
                 start: Callable[..., FakeAPI]) -> None:
        self.case, self.binary, self.monkeypatch, self.api_key, self._start = case, binary, monkeypatch, api_key, start

    def fake(self, *args: Any, **kwargs: Any) -> FakeAPI:
        fake = self._start(*args, **kwargs)
        self.monkeypatch.setenv(self.case.base_url_var, fake.url)
        self.monkeypatch.setenv(self.case.key_var, self.api_key)
        return fake

    def run(self, inp: AgentInput) -> AgentResult:
        return self.case.agent(executable=self.binary, max_retries=0).run(inp)


def harness(case: Case, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
            api_key: str) -> Iterator[Harness]:
    """For a `cli` fixture: the case's npm-installed CLI in an isolated environment; its
    fakes stop when the test ends."""
    binary = request.getfixturevalue(f"{case.name}_bin")
    isolate(monkeypatch, tmp_path, case.dropped)
    yield from (Harness(case, binary, monkeypatch, api_key, start) for start in start_fakes(case.fake))


def isolate(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, dropped: Iterable[str]) -> Path:
    """A throw-away HOME, so nothing of the real user's is read or written, and none of
    `dropped` (other ways to log in or configure the CLI) nor a proxy. Returns HOME."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in (*dropped, *PROXIES):
        monkeypatch.delenv(name, raising=False)
    return home


def start_fakes(cls: type[F]) -> Iterator[Callable[..., F]]:
    """For a `fakes` fixture: start fakes of `cls` on demand, stop them all at the end."""
    started: list[F] = []

    def start(*args: object, **kwargs: object) -> F:
        fake = cls(*args, **kwargs)  # type: ignore[arg-type]
        fake.start()
        started.append(fake)
        return fake

    yield start
    for fake in started:
        fake.stop()


def no_secret_anywhere(result: AgentResult, scratch: Path, secret: str, *extra: Path) -> None:
    """`secret` is in nothing the result carries, nor in any file under scratch or `extra`."""
    kept = [result.patch, result.transcript.decode("utf-8", "replace"), result.prompt, result.error or "",
            json.dumps(result.memory_files)]
    assert not any(secret in k for k in kept)
    for root in (scratch, *extra):
        for path in root.rglob("*"):
            if path.is_file() and not path.is_symlink():
                assert secret.encode() not in path.read_bytes(), f"the API key leaked into {path}"


def processes_mentioning(needle: str) -> list[Path]:
    """Live processes whose command line or environment names `needle` (a test's tmp dir)."""
    return [p for p in Path("/proc").iterdir() if p.name.isdigit() and _mentions(p, needle)]


def _mentions(proc: Path, needle: str) -> bool:
    try:
        cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
        environ = (proc / "environ").read_bytes().decode("utf-8", "replace")
    except OSError:
        return False
    return needle in cmdline or needle in environ


def time_out_while_the_api_hangs(attempt: Callable[[float, Path], tuple[AgentResult, FakeAPI]], tmp_path: Path,
                                 start_s: float) -> tuple[AgentResult, FakeAPI]:
    """`attempt(limit, scratch)` (a run against a hanging fake API with a time limit of
    `limit` seconds), with limits growing to `start_s` (a sixth of it, a third, all of it),
    each tried only if the CLI had not yet reached the API when the one before passed.

    The hanging-API tests are about what happens once the CLI waits on the API: the limit
    must pass after its first request. How long a CLI takes to get there ranges from a
    second (codex) to tens of seconds (LiteLLM's import on a loaded machine); waiting
    `start_s` every time cost the suite minutes, and a third of it (the first limit
    before) still left each test waiting on a hung CLI for most of its time. Each attempt
    must end by its limit and leave no process behind; the one that reached the API must
    end as a timeout. Only that premise (a request was made) decides whether a longer
    one runs.
    """
    for i, limit in enumerate((start_s / 6, start_s / 3, start_s)):
        scratch = tmp_path / f"scratch-{i}"
        started = time.monotonic()
        result, fake = attempt(limit, scratch)
        assert time.monotonic() - started < limit + 30
        assert processes_mentioning(str(tmp_path)) == []  # nor the CLI, nor its MCP server
        if fake.api_requests:
            assert result.exit == "timeout" and result.exit_code is None, (result.exit, result.error)
            return result, fake
    raise AssertionError(f"the CLI made no API request in {start_s} s")


class BrokenRecall:
    """A recall service whose MCP server exits at once."""

    def recall(self, query: str, k: int = 5, repo: str | None = None) -> list[Item]:
        return []

    def mcp_server_argv(self) -> list[str]:
        return [sys.executable, "-c", "import sys; sys.exit('no memory today')"]


def ledger_with_a_lesson(ledger_path: Path) -> RecallService:
    """A ledger holding one lesson (item-1, LESSON) of task 1 of run v1, and the project's
    recall service as task 2 of that run sees it."""
    with Ledger.open(ledger_path, create=True) as ledger:
        ledger.append("run/v1/seq1", [MemoryWritten(
            item_id="item-1", kind="episode", title="greet None guard", body=LESSON,
            repo="demo/pkg", source_run="v1", sequence_id="seq1", source_instance="demo__pkg-0", source_order=1,
            source_pass="initial", outcome="resolved", files=["pkg/util.py"], symbols=["greet"],
        )])
    return RecallService(ledger_path, "v1", "seq1", "initial", 2, "demo__pkg-1", 1, "demo/pkg")


def the_lesson_was_recalled(ledger_path: Path, query: str) -> None:
    """The ledger holds one memory.recalled event, over MCP, of task 2 with `query`, finding item-1."""
    with Ledger.open(ledger_path, readonly=True) as ledger:
        recalled = [r.event for r in ledger.read(types=["memory.recalled"])]
    assert len(recalled) == 1
    event = recalled[0]
    assert isinstance(event, MemoryRecalled) and event.via == "mcp"
    assert event.instance_id == "demo__pkg-1" and event.order == 2 and event.query == query
    assert [h.item_id for h in event.results] == ["item-1"]


def exported_trajectory(ledger_path: Path, result: AgentResult, agent: str, validator: AtifValidator,
                        out_dir: Path) -> dict[str, Any]:
    """`result` recorded as task 2 of run v1 (the task `ledger_with_a_lesson`'s recall
    service serves: its memory.recalled events are this attempt's), exported as ATIF,
    held to harbor's models, and the one trajectory returned."""
    task = {"sequence_id": "seq1", "instance_id": "demo__pkg-1", "order": 2, "pass_": "initial", "attempt": 1}
    with Ledger.open(ledger_path, create=True) as ledger:
        ledger.append("run/v1", [RunStarted(version="v1", benchmark="demo", dataset_hash="0", sequences=["seq1"],
                                            stage="plugin-blank", memory_mode="plugin-real", agent=agent)])
        ledger.append("run/v1/seq1", [
            TaskStarted(repo="demo/pkg", **task),
            result.to_event(ledger.put_blob, agent=agent, **task),
            TaskFinished(resolved=True, status="resolved", **{k: v for k, v in task.items() if k != "repo"}),
        ])
        files = write_atif(ledger, "v1", out_dir)
    assert [f.relative_to(out_dir).as_posix() for f in files] == ["seq1/0002-demo__pkg-1-initial-a1.json"]
    assert validator.errors(files) == {}
    trajectory: dict[str, Any] = json.loads(files[0].read_text())
    assert trajectory["agent"]["name"] == agent and trajectory["extra"]["swecl"]["resolved"] is True
    return trajectory


def recall_call_and_memory_steps(trajectory: dict[str, Any]) -> None:
    """The agent's recall tool call has its result on its step, and swecl's record of the
    same recall (memory.recalled, via mcp) is a step of its own, marked."""
    steps = trajectory["steps"]
    calls = [(s, c) for s in steps for c in s.get("tool_calls", []) if "recall" in c["function_name"]]
    assert calls, [s.get("tool_calls") for s in steps]
    step, call = calls[0]
    results = {r.get("source_call_id"): r["content"] for r in step["observation"]["results"]}
    assert LESSON in results[call["tool_call_id"]]
    memory = [s for s in steps if s.get("extra", {}).get("swecl_memory")]
    assert [s["extra"]["swecl_memory"]["via"] for s in memory] == ["mcp"]
    assert memory[0]["observation"]["results"][0]["content"] == "item-1"
