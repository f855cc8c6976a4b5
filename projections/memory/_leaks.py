"""What counts as a task's exam inside a memory: the grading secrets, the policy's
thresholds, and the forms a leak takes (the gold test patch's specific lines, a test's
full id and leaf name). Pure functions over text, shared by the write-time checks
(`commands.memory`) and the audit (`projections.audit`), which must agree."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class GradingSecrets:
    """What the grader knows and the agent must not: passed in only to check against."""

    test_patch: str = ""
    fail_to_pass: Sequence[str] = ()
    pass_to_pass: Sequence[str] = ()


@dataclass(frozen=True)
class GovernancePolicy:
    max_title_chars: int = 300
    max_body_chars: int = 6000
    max_patch_bytes: int = 200_000
    # A gold test-patch line shorter than this is too generic to call a leak (`)`,
    # `assert x`, `def setUp(self):`); longer ones are specific to the test.
    min_leak_line_chars: int = 24
    # Leaf test names shorter than this (`test_a`) are too generic to match on their own.
    min_test_name_chars: int = 8


DEFAULT_POLICY = GovernancePolicy()


def normalise_space(text: str) -> str:
    return " ".join(text.split())


def leak_lines(test_patch: str, min_chars: int) -> list[str]:
    """The gold test patch's added lines specific enough to count as its content."""
    out: dict[str, None] = {}
    for line in test_patch.splitlines():
        if not line.startswith("+") or line.startswith("+++"):
            continue
        body = normalise_space(line[1:])
        if len(body) < min_chars:
            continue
        if body.startswith(("import ", "from ", "#")) or body.strip("\"'`()[]{}:,. ") == "":
            continue
        out[body] = None
    return list(out)


_DJANGO_NAME = re.compile(r"^(\w+) \(([\w.]+)\)")


def test_names_pattern(secrets: GradingSecrets, policy: GovernancePolicy = DEFAULT_POLICY) -> re.Pattern[str] | None:
    """One pattern matching every FAIL_TO_PASS / PASS_TO_PASS test of `secrets` by its full
    id or its leaf name (those at least `min_test_name_chars` long), longest first, not
    inside a longer identifier; None when there is none."""
    names: dict[str, None] = {}
    for name in [*secrets.fail_to_pass, *secrets.pass_to_pass]:
        for form in test_name_forms(name):
            if len(form) >= policy.min_test_name_chars:
                names[form] = None
    if not names:
        return None
    return re.compile("|".join(rf"(?<![\w.]){re.escape(n)}(?![\w])" for n in sorted(names, key=len, reverse=True)))


def test_name_forms(name: str) -> list[str]:
    """The full test id and its leaf name (`a.py::C::test_x[p]` -> `test_x`)."""
    name = name.strip()
    forms = [name]
    m = _DJANGO_NAME.match(name)
    leaf = m.group(1) if m else name.split("::")[-1].split("[")[0].split(".")[-1].split(" ")[0]
    if leaf and leaf != name:
        forms.append(leaf)
    return forms
