"""Daydream: deterministic extraction and write-time governance."""

from __future__ import annotations


import json

import msgspec
import pytest

from commands.memory import (
    DaydreamInput,
    GovernancePolicy,
    GradingSecrets,
    MemoryDraft,
    TaskView,
    TrajectoryView,
    daydream,
    deterministic_extractor,
    find_secret,
    patch_facts,
    trajectory_view,
)
from ledger import Ledger
from projections.memory import load_memory

from .builders import REPO

AGENT_PATCH = """\
diff --git a/widgets/parse.py b/widgets/parse.py
index 1111111..2222222 100644
--- a/widgets/parse.py
+++ b/widgets/parse.py
@@ -10,2 +10,2 @@ class Parser:
     def parse_header(self, data):
-        return data.split(':')
+        return data.split(':', 1)
@@ -30,1 +30,4 @@ def helper(x):
     pass
+
+def strip_value(y):
+    return y.strip()
diff --git a/tests/test_parse.py b/tests/test_parse.py
--- a/tests/test_parse.py
+++ b/tests/test_parse.py
@@ -1,1 +1,3 @@
 import widgets
+def test_agent_wrote_this():
+    assert widgets.parse_header('a:b:c') == ['a', 'b:c']
"""

GOLD_TEST_PATCH = """\
diff --git a/tests/test_header.py b/tests/test_header.py
--- a/tests/test_header.py
+++ b/tests/test_header.py
@@ -1,1 +1,4 @@
 import widgets
+def test_header_keeps_colons_in_values():
+    assert Parser().parse_header('key: a:b') == ['key', ' a:b']
+    assert Parser().parse_header('x') == ['x']
"""

ISSUE = """# parse_header splits values that contain colons

When a header value contains a colon, `Parser.parse_header` splits it into too many parts.
Steps: call parse_header('key: a:b'). Expected ['key', ' a:b'].
"""

SECRETS = GradingSecrets(
    test_patch=GOLD_TEST_PATCH,
    fail_to_pass=["tests/test_header.py::test_header_keeps_colons_in_values"],
    pass_to_pass=[
        "tests/test_header.py::TestOld::test_old_behaviour_stays[param-1]",
        "test_plain_case (tests.test_misc.MiscTests)",
    ],
)


def task(order: int = 1, issue: str = ISSUE, pass_: str = "initial") -> TaskView:
    return TaskView(
        instance_id=f"acme__widgets-{order}", repo=REPO, order=order, sequence_id="s", issue=issue, pass_=pass_
    )


def test_deterministic_extraction(led: Ledger) -> None:
    recs = daydream(led, "V", task(), patch=AGENT_PATCH, status="resolved", resolved=True, secrets=SECRETS)
    assert [r.type for r in recs] == ["memory.written"] and recs[0].stream == "run/V/s"
    ev = recs[0].event
    assert ev.title == "acme__widgets-1: parse_header splits values that contain colons"
    assert ev.files == ["widgets/parse.py"]  # the agent's test-file hunk is not remembered
    assert ev.symbols == ["parse_header", "strip_value"]
    assert ev.outcome == "resolved" and ev.source_order == 1 and ev.source_pass == "initial" and ev.source_run == "V"
    assert (
        "too many parts" in ev.body
        and "Outcome: resolved" in ev.body
        and "+4 -1 lines" in ev.body
        and "# parse" not in ev.body
    )
    stored = led.get_blob(ev.patch).decode()
    assert stored.startswith("diff --git a/widgets/parse.py") and "tests/test_parse.py" not in stored
    assert load_memory(led, "V").state.items[ev.item_id].live


def test_daydream_is_idempotent_and_only_the_initial_pass_writes(led: Ledger) -> None:
    first = daydream(led, "V", task(), patch=AGENT_PATCH, status="resolved", resolved=True, secrets=SECRETS)
    again = daydream(led, "V", task(), patch=AGENT_PATCH, status="resolved", resolved=True, secrets=SECRETS)
    assert [r.seq for r in again] == [r.seq for r in first]
    assert daydream(led, "V", task(pass_="retest"), patch=AGENT_PATCH, status="resolved", resolved=True) == []
    assert len(list(led.read(types=["memory.written"]))) == 1


def test_empty_and_unparseable_patches(led: Ledger) -> None:
    empty = daydream(led, "V", task(1), patch="", status="empty_patch", resolved=False)
    assert empty[0].event.patch is None and empty[0].event.files == [] and "Patch: none" in empty[0].event.body
    broken = daydream(
        led,
        "V",
        task(2),
        patch="diff --git a/w/x.py b/w/x.py\n--- a/w/x.py\n+++ b/w/x.py\n@@ -1,9 +1,9 @@\n-x\n",
        status="patch_failed",
        resolved=False,
    )
    assert broken[0].event.files == ["w/x.py"]


def rejected(recs) -> list[tuple[str, str]]:
    return [(r.event.rule, r.event.reason) for r in recs if r.type == "memory.rejected"]


def test_gold_test_patch_content_is_rejected(led: Ledger) -> None:
    leaky = AGENT_PATCH.replace(
        "+        return data.split(':', 1)",
        "+        return data.split(':', 1)\n+    assert Parser().parse_header('key: a:b') == ['key', ' a:b']",
    ).replace("@@ -10,2 +10,2 @@", "@@ -10,2 +10,3 @@")
    recs = daydream(led, "V", task(), patch=leaky, status="resolved", resolved=True, secrets=SECRETS)
    assert rejected(recs) == [("test-leak", "patch contains a line of the gold test patch")]
    assert load_memory(led, "V").state.items == {}
    assert load_memory(led, "V").state.rejected[0].rule == "test-leak"


@pytest.mark.parametrize(
    "mention",
    [
        "tests/test_header.py::test_header_keeps_colons_in_values",  # a FAIL_TO_PASS id
        "see test_header_keeps_colons_in_values",  # its leaf name
        "test_old_behaviour_stays",  # a PASS_TO_PASS leaf (parametrised id)
        "test_plain_case",  # a django-style PASS_TO_PASS name
    ],
)
def test_test_names_are_rejected(led: Ledger, mention: str) -> None:
    recs = daydream(
        led,
        "V",
        task(issue=ISSUE + "\n" + mention),
        patch=AGENT_PATCH,
        status="resolved",
        resolved=True,
        secrets=SECRETS,
    )
    assert rejected(recs) == [("test-name", "body names a FAIL_TO_PASS/PASS_TO_PASS test")]
    payload = next(led.read_raw(types=["memory.rejected"]))[7]
    assert (
        b"test_header_keeps" not in payload
        and b"test_old_behaviour" not in payload
        and b"test_plain_case" not in payload
    )


SECRET_TEXTS = [
    "key sk-ant-api03-AbCdEf0123456789xyzXYZ_-abc",
    "export ANTHROPIC_API_KEY=not-a-real-but-secret-value",
    "creds AKIAIOSFODNN7EXAMPLE in the config",
    "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----",
    'token = "a1B2c3D4e5F6g7H8i9J0k1L2"',
    "client_secret: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
]

HARMLESS_TEXTS = [
    "token = self.next_token()",
    "password = get_password_from_config(settings)",
    "the tokenizer splits on whitespace; auth is optional",
    "API_KEY = os.environ['API_KEY']",
    "sha = 'deadbeef'",
]


@pytest.mark.parametrize("text", SECRET_TEXTS)
def test_secrets_are_rejected(led: Ledger, text: str) -> None:
    assert find_secret(text) is not None
    recs = daydream(led, "V", task(issue=ISSUE + "\n" + text), patch=AGENT_PATCH, status="resolved", resolved=True)
    assert [r for r, _ in rejected(recs)] == ["secret"]
    payload = next(led.read_raw(types=["memory.rejected"]))[7]
    assert b"AKIAIOSFODNN7" not in payload and b"sk-ant-api03" not in payload and b"a1B2c3D4" not in payload


@pytest.mark.parametrize("text", HARMLESS_TEXTS)
def test_ordinary_code_is_not_a_secret(text: str) -> None:
    assert find_secret(text) is None


def test_a_secret_in_the_title_is_withheld_from_the_rejection(led: Ledger) -> None:
    recs = daydream(
        led,
        "V",
        task(issue="use sk-ant-api03-AbCdEf0123456789xyz now\nbody"),
        patch=None,
        status="unresolved",
        resolved=False,
    )
    assert recs[0].event.rule == "secret" and recs[0].event.title == "[withheld]"


def test_extractor_hook_and_oversize(led: Ledger) -> None:
    seen: list[DaydreamInput] = []

    def llm(view: DaydreamInput) -> list[MemoryDraft | dict]:
        seen.append(view)
        return [
            MemoryDraft(
                title="Header values may contain colons",
                body="split on the first colon only",
                files=view.patch.files,
                symbols=("parse_header",),
                tags=("lesson",),
            ),
            {"title": "huge", "body": "x" * 10_000},
        ]

    recs = daydream(
        led,
        "V",
        task(),
        patch=AGENT_PATCH,
        status="resolved",
        resolved=True,
        secrets=SECRETS,
        extractor=llm,
        extractor_name="llm:test",
    )
    assert [r.type for r in recs] == ["memory.written", "memory.rejected"]
    assert recs[0].event.extractor == "llm:test" and recs[0].event.tags == ["lesson"]
    assert (recs[1].event.rule, recs[1].event.reason) == ("oversize", "body is 10000 chars, over the cap of 6000")
    # The extractor sees the task and the patch, never the grading secrets.
    assert GOLD_TEST_PATCH not in repr(seen[0]) and "test_header_keeps" not in repr(seen[0])
    assert "tests/test_parse.py" not in (seen[0].patch.kept_patch or "")


def test_a_failing_extractor_falls_back_to_the_deterministic_one(led: Ledger) -> None:
    def broken(view: DaydreamInput) -> list[MemoryDraft]:
        raise RuntimeError("model unavailable")

    recs = daydream(led, "V", task(), patch=AGENT_PATCH, status="resolved", resolved=True, extractor=broken)
    assert recs[0].event.extractor == "deterministic" and "extractor-failed:llm" in recs[0].event.tags


def test_policy_caps_are_configurable(led: Ledger) -> None:
    recs = daydream(
        led,
        "V",
        task(),
        patch=AGENT_PATCH,
        status="resolved",
        resolved=True,
        policy=GovernancePolicy(max_patch_bytes=100),
    )
    assert rejected(recs)[0][0] == "oversize"


def test_patch_facts_drop_the_gold_test_files() -> None:
    facts = patch_facts(AGENT_PATCH, drop=["widgets/parse.py"])
    assert (
        facts.files == ()
        and facts.kept_patch is None
        and facts.dropped_files == ("tests/test_parse.py", "widgets/parse.py")
    )


def _touching(*paths: str) -> str:
    return "".join(
        f"diff --git a/{p} b/{p}\n--- a/{p}\n+++ b/{p}\n@@ -1,1 +1,1 @@\n-old\n+new\n" for p in paths
    )


def test_patch_facts_call_test_files_what_the_grader_reverts() -> None:
    """One rule (ledger.patches.is_test_path, the grader's): library code under a `test/` or
    `testing/` package is remembered, as it was graded; pytest-named files are not."""
    from graders import is_test_path

    library = ("django/test/utils.py", "sympy/testing/runtests.py", "pkg/thing_tests.py", "calc/ops.py")
    tests = ("tests/test_ops.py", "pkg/tests/helper.py", "pkg/thing_test.py", "pkg/conftest.py", "test/x.py")
    facts = patch_facts(_touching(*library, *tests))
    assert facts.files == tuple(sorted(library)) and facts.dropped_files == tuple(sorted(tests))
    assert [p for p in (*library, *tests) if is_test_path(p)] == list(tests)


def test_patch_facts_name_the_files_of_a_patch_unidiff_cannot_parse() -> None:
    """A truncated hunk (its header promises more lines than follow) fails unidiff; the
    header-only reader still names every file, quoted, spaced and renamed ones included."""
    import unidiff

    from ledger.patches import patch_paths

    truncated = (
        "diff --git a/src/my mod.py b/src/my mod.py\n--- a/src/my mod.py\n+++ b/src/my mod.py\n"
        "@@ -1,9 +1,9 @@\n-a\n+b\n"
        'diff --git "a/src/caf\\303\\251.py" "b/src/caf\\303\\251.py"\n'
        '--- "a/src/caf\\303\\251.py"\n+++ "b/src/caf\\303\\251.py"\n@@ -1,1 +1,1 @@\n-x\n+y\n'
        "diff --git a/tests/test_old.py b/tests/test_new.py\nsimilarity index 90%\n"
        "rename from tests/test_old.py\nrename to tests/test_new.py\n"
    )
    with pytest.raises(unidiff.UnidiffParseError):
        unidiff.PatchSet(truncated)
    assert patch_paths(truncated) == ["src/my mod.py", "src/café.py", "tests/test_old.py", "tests/test_new.py"]
    facts = patch_facts(truncated)
    assert facts.files == ("src/café.py", "src/my mod.py")
    assert facts.dropped_files == ("tests/test_new.py", "tests/test_old.py")
    assert facts.kept_patch is None  # a patch that cannot be split by file is not kept in part


def mini_trajectory(last_words: str, commands: list[str]) -> bytes:
    """A mini-swe-agent trajectory as the adapter keeps it (one JSON line), in its real shape."""
    messages: list[dict[str, object]] = [{"role": "system", "content": "You are a helpful assistant."},
                                         {"role": "user", "content": "Please solve this issue: ..."}]
    for i, command in enumerate(commands):
        words = last_words if i == len(commands) - 1 else "Looking."
        messages.append({"role": "assistant", "content": words, "tool_calls": [],
                         "extra": {"actions": [{"command": command, "tool_call_id": f"c{i}"}]}})
        messages.append({"role": "tool", "content": "{}", "extra": {"returncode": 0}})
    messages.append({"role": "exit", "content": "", "extra": {"exit_status": "Submitted", "submission": ""}})
    return json.dumps({"info": {"exit_status": "Submitted", "submission": ""}, "messages": messages,
                       "trajectory_format": "mini-swe-agent-1.1"}, separators=(",", ":")).encode()


def test_the_lesson_tells_how_it_was_found_from_the_trajectory(led: Ledger) -> None:
    words = "parse_header split on every colon; maxsplit=1 keeps the value whole.\n\n```diff\n-x\n+y\n```"
    transcript = mini_trajectory(words, ["grep -rn parse_header widgets", "sed -i 's/x/y/' widgets/parse.py",
                                         "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"])
    view = trajectory_view(transcript)
    assert view is not None and view.commands[0] == "grep -rn parse_header widgets" and len(view.commands) == 3
    assert view.final_message == "parse_header split on every colon; maxsplit=1 keeps the value whole."
    plain = daydream(led, "V", task(1), patch=AGENT_PATCH, status="resolved", resolved=True, secrets=SECRETS)
    read = daydream(led, "V", task(2), patch=AGENT_PATCH, status="resolved", resolved=True, secrets=SECRETS,
                    transcript=transcript)
    body = read[0].event.body
    assert body.endswith("\nHow it was found: " + view.final_message)
    # the rest of the lesson is what it is without a transcript
    assert body.split("\nHow it was found")[0] == plain[0].event.body.replace("acme__widgets-1", "acme__widgets-2")
    # capped, however long the agent's last words
    long = trajectory_view(mini_trajectory("word " * 1000, ["ls"]))
    assert long is not None and long.final_message is not None and len(long.final_message) <= 400
    many = trajectory_view(mini_trajectory("done", [f"cat f{i}.py" for i in range(50)]))
    assert many is not None and many.commands == tuple(f"cat f{i}.py" for i in range(30, 50))


def test_a_claude_transcript_gives_its_result_and_bash_commands() -> None:
    lines = [
        {"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "grep -n parse_header -r ."}},
            {"type": "tool_use", "id": "t2", "name": "Read", "input": {"file_path": "widgets/parse.py"}}]}},
        {"type": "result", "subtype": "success", "result": "Split once: values keep their colons."},
    ]
    view = trajectory_view("\n".join(json.dumps(line) for line in lines))
    assert view is not None
    assert (view.final_message, view.commands) == ("Split once: values keep their colons.", ("grep -n parse_header -r .",))


def test_a_plain_text_or_missing_transcript_leaves_the_lesson_as_it_was(led: Ledger) -> None:
    # the demo agent's transcript: its steps, one a line (no words of an agent's own)
    demo = b"apply_check\napply\nsubmitted memory item mem-1\n"
    assert trajectory_view(demo) is None and trajectory_view(b"") is None and trajectory_view(None) is None
    bodies = [daydream(led, v, task(), patch=AGENT_PATCH, status="resolved", resolved=True, secrets=SECRETS,
                       **kw)[0].event.body for v, kw in (("V1", {}), ("V2", {"transcript": demo}))]
    assert bodies[0] == bodies[1] and "How it was found" not in bodies[0]


def test_a_trajectory_naming_a_grading_secret_is_left_out_of_the_lesson(led: Ledger) -> None:
    plain = daydream(led, "V0", task(1), patch=AGENT_PATCH, status="resolved", resolved=True, secrets=SECRETS)
    for n, words in enumerate((
        "Ran test_header_keeps_colons_in_values and it passes now.",  # a FAIL_TO_PASS test's name
        "Checked: assert Parser().parse_header('key: a:b') == ['key', ' a:b']",  # a line of the gold test patch
    )):
        recs = daydream(led, f"V{n + 1}", task(1), patch=AGENT_PATCH, status="resolved", resolved=True,
                        secrets=SECRETS, transcript=mini_trajectory(words, ["pytest -q"]))
        # The lesson is written as without a transcript; the agent's words are nowhere in it.
        assert [r.type for r in recs] == ["memory.written"]
        assert recs[0].event.body == plain[0].event.body
        assert words not in json.dumps(msgspec.to_builtins(recs[0].event))


def test_an_extractor_never_sees_an_account_governance_refuses(led: Ledger) -> None:
    seen = []

    def extractor(view: DaydreamInput) -> list[MemoryDraft]:
        seen.append(view.trajectory)
        return deterministic_extractor(view)

    words = "Ran test_header_keeps_colons_in_values and it passes now."
    daydream(led, "V", task(1), patch=AGENT_PATCH, status="resolved", resolved=True, secrets=SECRETS,
             transcript=mini_trajectory(words, ["pytest -q"]), extractor=extractor)
    assert seen == [TrajectoryView(final_message=None, commands=("pytest -q",))]
