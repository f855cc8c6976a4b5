"""Governance: what may never become a memory, checked at write time (and again by dream).

Three families of rule. Grading secrets: the gold test patch and the FAIL_TO_PASS /
PASS_TO_PASS test names decide the score, so an item carrying them would let a later
task read its own exam. Credentials: API keys, tokens, private keys, a password inside
a URL, and the secret values of the environment in any form the scrubber knows (literal,
base64, hex, percent-encoded, reversed, cut in two: `agents._scrub`), so an item an agent
or an extractor wrote with an encoded key is never recalled or seeded. Size: bodies and
patches past a cap. A rejection names the rule and the field, never the offending text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from agents import Scrubber
from projections.memory import DEFAULT_POLICY, GovernancePolicy, GradingSecrets, leak_lines, test_names_pattern
from projections.memory import normalise_space as _normalise

# Fields of an item, in the order they are checked (the reason names the first hit).
CHECKED_FIELDS = ("title", "body", "tags", "files", "symbols", "patch")


@dataclass(frozen=True)
class Violation:
    rule: str  # test-leak | test-name | secret | oversize
    field: str
    reason: str


# -- credentials --------------------------------------------------------------------------

_PROVIDER = r"(?:ANTHROPIC|OPENAI|AWS|GITHUB|GH|HF|HUGGING_?FACE|GOOGLE|GEMINI|AZURE|SLACK|STRIPE|CLAUDE)"
_SECRET_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("an Anthropic API key", re.compile(r"sk-ant-[A-Za-z0-9_\-]{8,}")),
    ("an OpenAI-style API key", re.compile(r"\bsk-(?:proj-)?[A-Za-z0-9_\-]{20,}")),
    (
        "a provider credential assignment",
        re.compile(
            _PROVIDER
            + r"[A-Z0-9_]*(?:KEY|TOKEN|SECRET|PASSWORD)[A-Z0-9_]*\s*[=:]\s*['\"]?(?![$<{(]|os\.|None\b)[^\s'\"]{6,}"
        ),
    ),
    ("an AWS access key id", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("an AWS secret access key", re.compile(r"(?i)aws_secret_access_key\s*[=:]\s*['\"]?[A-Za-z0-9/+=]{40}")),
    ("a private key block", re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----")),
    ("a GitHub token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})")),
    ("a Hugging Face token", re.compile(r"\bhf_[A-Za-z0-9]{30,}\b")),
    ("a Slack token", re.compile(r"\bxox[abprs]-[A-Za-z0-9\-]{10,}")),
    ("a Google API key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b")),
)
_KEYLIKE_ASSIGNMENT = re.compile(
    r"(?i)[\w.\-]*(?:api[_\-]?key|secret|token|passw(?:or)?d|credential|auth[_\-]?key|access[_\-]?key)[\w.\-]*"
    r"['\"]?\s*[:=]\s*['\"]?([A-Za-z0-9+/_=\-]{16,})"
)


# `scheme://user:password@host`; the password runs to the last `@` before the path.
_URL_PASSWORD = re.compile(r"://[^\s/@:\"'<>\\?#]*:([^\s/\"'<>\\?#]+)@")
# Documentation writes these where a password goes (`postgres://user:password@localhost`);
# `[REDACTED]` is what the scrubber left of a real one.
_PLACEHOLDER_PASSWORDS = frozenset({"password", "pass", "passwd", "pwd", "secret", "changeme", "redacted", "x"})


def _real_password(value: str) -> bool:
    bare = value.strip("[]<>{}*").lower()
    return not (value.startswith(("$", "<", "{", "*", "%(", "[")) or bare in _PLACEHOLDER_PASSWORDS)


def _looks_random(value: str) -> bool:
    """A token, not an identifier: long, with digits and letters, and many distinct characters."""
    core = value.strip("=")
    if len(core) < 16:
        return False
    has_digit = any(c.isdigit() for c in core)
    has_alpha = any(c.isalpha() for c in core)
    if re.fullmatch(r"[0-9a-fA-F]{32,}", core):
        return True
    return has_digit and has_alpha and len(set(core)) >= 10


def find_secret(text: str) -> str | None:
    """What kind of credential `text` seems to hold (None if none)."""
    for what, pattern in _SECRET_PATTERNS:
        if pattern.search(text):
            return what
    for match in _KEYLIKE_ASSIGNMENT.finditer(text):
        if _looks_random(match.group(1)):
            return "a long token after a key-like name"
    if "://" in text and any(_real_password(m.group(1)) for m in _URL_PASSWORD.finditer(text)):
        return "a password inside a URL"
    return None


# -- grading secrets ----------------------------------------------------------------------


class Checker:
    """Governance rules compiled once for a task's grading secrets and the environment's
    secret values (`scrubber`; default: this process's environment, whose forms the
    scrubber compiles once per process)."""

    def __init__(
        self,
        secrets: GradingSecrets | None,
        policy: GovernancePolicy = DEFAULT_POLICY,
        scrubber: Scrubber | None = None,
    ) -> None:
        self.policy = policy
        self._scrubber = scrubber if scrubber is not None else Scrubber()
        self.leaks = leak_lines(secrets.test_patch, policy.min_leak_line_chars) if secrets else []
        self._names = test_names_pattern(secrets, policy) if secrets else None

    def check(self, fields: Mapping[str, str | Iterable[str] | None]) -> Violation | None:
        """The first rule `fields` (title, body, tags, files, symbols, patch) breaks."""
        texts = {name: _as_text(fields.get(name)) for name in CHECKED_FIELDS}
        p = self.policy
        if len(texts["title"]) > p.max_title_chars:
            return Violation(
                "oversize", "title", f"title is {len(texts['title'])} chars, over the cap of {p.max_title_chars}"
            )
        if len(texts["body"]) > p.max_body_chars:
            return Violation(
                "oversize", "body", f"body is {len(texts['body'])} chars, over the cap of {p.max_body_chars}"
            )
        patch_bytes = len(texts["patch"].encode())
        if patch_bytes > p.max_patch_bytes:
            return Violation("oversize", "patch", f"patch is {patch_bytes} bytes, over the cap of {p.max_patch_bytes}")
        for name in CHECKED_FIELDS:
            what = find_secret(texts[name]) or self._scrubber.find(texts[name], patterns=False)
            if what:
                return Violation("secret", name, f"{name} contains what looks like {what}")
        if self.leaks:
            for name in CHECKED_FIELDS:
                flat = _normalise(texts[name])
                if any(line in flat for line in self.leaks):
                    return Violation("test-leak", name, f"{name} contains a line of the gold test patch")
        if self._names is not None:
            for name in CHECKED_FIELDS:
                if self._names.search(texts[name]):
                    return Violation("test-name", name, f"{name} names a FAIL_TO_PASS/PASS_TO_PASS test")
        return None


def _as_text(value: str | Iterable[str] | None) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return "\n".join(value)
