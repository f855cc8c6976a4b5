"""Agents reach only their model API, with the real vendor CLIs (npm, pinned versions)
sandboxed against their loopback fakes: the API works, their web tools are off, and a
code host on another loopback port receives nothing, its refusal recorded."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agents._claude import ClaudeAgent
from agents._egress import Egress
from agents._protocol import AgentInput, Budget
from graders.host import sandbox_for

from . import fake_chat, fake_gemini, fake_openai
from .cli_scenarios import CASES, Harness, harness, isolate, start_fakes
from .fake_anthropic import FakeAnthropic, text, tool_use
from .test_egress import Recording, servers  # noqa: F401  (a fixture)

pytestmark = pytest.mark.slow


@pytest.fixture
def anthropic(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, api_key: str) -> Iterator[Callable[..., FakeAnthropic]]:
    isolate(monkeypatch, tmp_path, ("ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "CLAUDE_CODE_USE_BEDROCK",
                                    "CLAUDE_CODE_USE_VERTEX", "ANTHROPIC_MODEL"))
    for start in start_fakes(FakeAnthropic):
        def point(*args: object, **kwargs: object) -> FakeAnthropic:
            fake = start(*args, **kwargs)
            monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
            monkeypatch.setenv("ANTHROPIC_API_KEY", api_key)
            return fake
        yield point


def _tools(body: dict) -> set[str]:
    return {t.get("name") for t in body.get("tools", [])}


@pytest.mark.parametrize("allow_web", [False, True], ids=["web-off", "allow-web"])
def test_claude_reaches_its_api_and_its_web_fetch_reaches_nothing(
    claude_bin: str, make_input: Callable[..., AgentInput], anthropic: Callable[..., FakeAnthropic],
    servers: Callable[[bytes], Recording], allow_web: bool,
) -> None:
    code_host = servers(b"the gold patch")
    fake = anthropic([
        [tool_use("WebFetch", {"url": f"{code_host.url}/fix.patch", "prompt": "the fix"})],
        [tool_use("WebSearch", {"query": "greet None fix site:github.com"})],
        [text("done")],
    ])
    egress = Egress(allow_web=allow_web)
    inp = make_input(model="claude-fake", sandbox=sandbox_for("bwrap"), egress=egress, budget=Budget(timeout_s=120))
    result = ClaudeAgent(executable=claude_bin, max_retries=0).run(inp)
    assert result.exit == "completed", result.error
    assert code_host.paths == []  # the code host received nothing
    offered = _tools(fake.api_requests[0].body)
    api = {(c.host, c.port) for c in egress.connections if c.allowed}
    assert api == {("127.0.0.1", int(fake.url.rsplit(":", 1)[1].split("/")[0]))}  # the API, and only it, worked
    assert all(c.bytes_up > 0 and c.bytes_down > 0 for c in egress.connections if c.allowed)
    if not allow_web:
        assert not {"WebFetch", "WebSearch"} & offered and "Read" in offered
        assert [c for c in egress.connections if not c.allowed] == []
    else:
        # WebSearch runs on the provider's side (the fake answers it); WebFetch runs here
        # and its first call out (the CLI's check of the domain) is refused and recorded.
        assert {"WebFetch", "WebSearch"} <= offered
        assert [c.allowed for c in egress.connections].count(False) >= 1


SHELL = {
    "codex": lambda cmd: [fake_openai.exec_command(cmd)],
    "gemini": lambda cmd: [fake_gemini.function_call("run_shell_command", {"command": cmd, "description": "fetch"})],
    "opencode": lambda cmd: [tool_use("bash", {"command": cmd, "description": "fetch"})],
    "mini": lambda cmd: [fake_chat.bash(cmd)],
}
WEB_TOOL = {  # what each model may ask for that reaches the web; the CLI has no such tool
    "codex": lambda url: [fake_openai.function_call("web_search", {"query": f"{url} fix"})],
    "gemini": lambda url: [fake_gemini.function_call("web_fetch", {"prompt": f"Summarize {url}/fix.patch"})],
    "opencode": lambda url: [tool_use("webfetch", {"url": f"{url}/fix.patch", "format": "text"})],
}  # mini-swe-agent has no tool but its shell


OFFERED = {
    "codex": lambda body: {str(t.get("name") or t.get("type")) for t in body.get("tools", [])},
    "gemini": lambda body: set(fake_gemini.declared_tools(body)),
    "opencode": lambda body: {t["name"] for t in body.get("tools", [])},
}
# opencode's websearch and codesearch are offered only with an Exa key: webfetch stands for them
WEB_TOOLS = {"codex": {"web_search"}, "gemini": {"google_web_search", "web_fetch"}, "opencode": {"webfetch"}}


@pytest.fixture(params=CASES, ids=[c.name for c in CASES])
def cli(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        api_key: str) -> Iterator[Harness]:
    yield from harness(request.param, request, monkeypatch, tmp_path, api_key)


def test_codex_and_gemini_reach_their_api_and_nothing_else(
    cli: Harness, make_input: Callable[..., AgentInput], servers: Callable[[bytes], Recording],
) -> None:
    code_host = servers(b"the gold patch")
    fetch = f"python3 -c \"import urllib.request as u; print(u.urlopen('{code_host.url}/fix.patch').read())\""
    name = cli.case.name
    web = [WEB_TOOL[name](code_host.url)] if name in WEB_TOOL else []
    script = [*web, SHELL[name](fetch), cli.case.say("done")]
    fake = cli.fake(script)
    egress = Egress()
    result = cli.run(make_input(model=cli.case.model, sandbox=sandbox_for("bwrap"), egress=egress,
                                budget=Budget(timeout_s=120)))
    assert result.exit == "completed", result.error
    assert code_host.paths == []  # the code host received nothing
    assert len(fake.api_requests) == len(script)  # the API worked, turn after turn
    allowed = {(c.host, c.port) for c in egress.connections if c.allowed}
    refused = [c for c in egress.connections if not c.allowed]
    assert allowed == {("127.0.0.1", int(fake.url.split(":")[2].split("/")[0]))}
    # the shell's fetch, refused and recorded (codex's own calls to github.com and
    # chatgpt.com at start are refused too: they are not its configured API)
    assert ("127.0.0.1", code_host.port) in {(c.host, c.port) for c in refused}
    assert "403" in cli.case.returned(fake.api_requests[-1].body)  # what the model was told
    if name in WEB_TOOLS:  # web off by default: the CLI's own web tools are not even offered
        assert not WEB_TOOLS[name] & OFFERED[name](fake.api_requests[0].body)


WEB_CASES = [c for c in CASES if c.name in WEB_TOOLS]


@pytest.fixture(params=WEB_CASES, ids=[c.name for c in WEB_CASES])
def web_cli(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
            api_key: str) -> Iterator[Harness]:
    """A CLI with web tools of its own (mini-swe-agent has none: its shell is its one tool)."""
    yield from harness(request.param, request, monkeypatch, tmp_path, api_key)


def test_allow_web_turns_codex_and_gemini_web_tools_back_on(
    web_cli: Harness, make_input: Callable[..., AgentInput],
) -> None:
    """--allow-web offers the CLIs' own web tools again (off, the default, they are not: the test above)."""
    cli = web_cli
    fake = cli.fake([cli.case.say("done")])
    result = cli.run(make_input(model=cli.case.model, sandbox=sandbox_for("bwrap"), egress=Egress(allow_web=True),
                                budget=Budget(timeout_s=120)))
    assert result.exit == "completed", result.error
    assert WEB_TOOLS[cli.case.name] <= OFFERED[cli.case.name](fake.api_requests[0].body)
