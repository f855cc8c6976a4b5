"""Secret scrubbing for everything an agent run leaves behind that we keep.

API keys reach the agent's process through the environment only; this module makes sure
their literal values (and anything shaped like an Anthropic key) never reach a result,
a transcript copy or a file we keep. Values are matched literally because a key can be
any shape a gateway invents; the patterns catch keys that were never in our environment
(pasted into an issue, echoed by a tool).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

REDACTED = "[REDACTED]"

# Names of environment variables whose values are secrets. `(^|_)WORD(_|$)` keeps
# GIT_AUTHOR_EMAIL (AUTHOR) or KEYBOARD_LAYOUT-like names out.
_SECRET_NAME = re.compile(
    r"(^|_)(API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?|AUTH|COOKIE|SESSION_KEY)(_|$)",
    re.IGNORECASE,
)
# Shorter values ("1", "true", a port) would redact innocent text everywhere.
_MIN_SECRET_LEN = 8

_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"sk-ant-[A-Za-z0-9_\-]+"),
    # header-shaped leaks: `x-api-key: ...`, `"authorization": "Bearer ..."`
    re.compile(
        r"(?i)(?P<head>\b(?:x-api-key|authorization)\b[\"']?\s*[:=]\s*[\"']?(?:bearer\s+)?)[^\s\"',}]+"
    ),
)


def secret_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """Literal values of key-like variables in `environ` (default: this process's)."""
    env = os.environ if environ is None else environ
    values = {v for k, v in env.items() if _SECRET_NAME.search(k) and len(v.strip()) >= _MIN_SECRET_LEN}
    # Longest first, so a key that contains another is redacted whole.
    return sorted(values, key=len, reverse=True)


class Scrubber:
    """Redacts the secret values of an environment plus key-shaped patterns."""

    def __init__(self, environ: Mapping[str, str] | None = None, extra: Iterable[str] = ()) -> None:
        literals = set(secret_values(environ)) | {e for e in extra if len(e) >= _MIN_SECRET_LEN}
        self._literals = sorted(literals, key=len, reverse=True)

    def text(self, text: str) -> str:
        for value in self._literals:
            if value in text:
                text = text.replace(value, REDACTED)
        for pattern in _PATTERNS:
            text = pattern.sub(_replacement, text)
        return text

    def bytes(self, data: bytes) -> bytes:
        # surrogateescape round-trips any byte sequence, so binary junk survives untouched.
        return self.text(data.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")

    def optional(self, text: str | None) -> str | None:
        return None if text is None else self.text(text)

    def tree(self, root: Path, *, max_bytes: int = 64_000_000) -> list[Path]:
        """Scrub every file under `root` in place (an agent's sandbox after its run); the files changed."""
        changed: list[Path] = []
        if not root.is_dir():
            return changed
        for path in sorted(root.rglob("*")):
            if path.is_symlink() or not path.is_file() or path.stat().st_size > max_bytes:
                continue
            data = path.read_bytes()
            clean = self.bytes(data)
            if clean != data:
                path.write_bytes(clean)
                changed.append(path)
        return changed

    def leaks(self, text: str) -> bool:
        """True if `text` still holds something this scrubber would redact."""
        return self.text(text) != text


def _replacement(match: re.Match[str]) -> str:
    head = match.groupdict().get("head")
    return f"{head}{REDACTED}" if head else REDACTED


def scrub(text: str, environ: Mapping[str, str] | None = None) -> str:
    return Scrubber(environ).text(text)
