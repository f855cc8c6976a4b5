"""Secret scrubbing for everything an agent run leaves behind that we keep.

API keys reach the agent's process through the environment only; this module makes sure
their values never reach a result, a transcript copy or a file we keep, neither literally
nor in the encodings a tool or an adversarial agent produces without trying: reversed,
hex (lower/upper), percent-encoded (as `quote` writes it, or every byte escaped; escapes
all upper or all lower case), base64 and URL-safe base64 (padded or not, and the run of
base64 characters the value fixes at each of the 3 byte alignments, so the value is
found inside a larger base64 blob too). Each form of up to 512 characters is also found
when cut in two by whitespace, a line break, quotes or `+` (`"sk-ant-abc" + "def"`,
`abc\\` newline `def`, a JSON `\\n`, base64 wrapped across lines), with at most 64 such
characters per cut.

Credentials inside URLs (`scheme://user:password@host`) are redacted wherever they
appear, and the password of any such URL in the environment (DATABASE_URL, REDIS_URL,
whatever the variable is called) is a secret value like a key is.

Not caught (by design, each would need a decoder or a search with false positives): a
value cut in more than two pieces (found only if one piece holds a whole half of the
form), pieces joined by anything else (`a = "sk-ant-ab"; b = "cdef"; a + b`, a comma, a
variable), a value split across two separate outputs, other case changes of the value
(percent escapes of mixed case among them), compositions of encodings (base64 of the
hex, reversed base64, gzip then base64), hex with separators (`\\x73\\x6b`, `73 6b 2d`
byte by byte), other encodings (base32, rot13, UTF-16, JSON `\\u0073` escapes, HTML
entities), a value under 8 characters, and a password in a URL of another shape
(`https://TOKEN@host` has no `:` and is left alone: `git@host` is not a secret). Values
are matched literally because a key can be any shape a gateway invents; the patterns
catch keys that were never in our environment (pasted into an issue, echoed by a tool).
"""

from __future__ import annotations

import base64
import functools
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from urllib.parse import quote, quote_plus, unquote

REDACTED = "[REDACTED]"

# Names of environment variables whose values are secrets. `(^|_)WORD(_|$)` keeps
# GIT_AUTHOR_EMAIL (AUTHOR) or KEYBOARD_LAYOUT-like names out.
_SECRET_NAME = re.compile(
    r"(^|_)(API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?|AUTH|COOKIE|SESSION_KEY)(_|$)",
    re.IGNORECASE,
)
# A name that ends in what it configures is a setting about a credential, not one:
# RAY_AUTH_MODE=disabled, TOKEN_FILE=/path, API_KEY_ENV=NAME. Redacting their values would
# cut ordinary words out of every text, and governance would refuse every memory item
# that says "disabled". (A URL's password in them is still found below.)
_SETTING_NAME = re.compile(
    r"_(MODE|TYPE|METHOD|ENABLED|DISABLED|REQUIRED|FILE|PATH|DIR|HOST|PORT|URL|URI|ENDPOINT|TIMEOUT|ENV|NAME|ID)$",
    re.IGNORECASE,
)
# Shorter values ("1", "true", a port) would redact innocent text everywhere.
_MIN_SECRET_LEN = 8

# `://user:password@`, the password running to the last `@` before the path, so an
# unencoded `@` in it is covered. Anchored on the literal `://`: a scheme pattern in front
# would rescan every word of a large blob from each of its letters.
_URL_CREDENTIALS = re.compile(r"(?P<head>://[^\s/@:\"'<>\\?#]*:)(?P<password>[^\s/\"'<>\\?#]+)(?=@)")

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("an Anthropic API key", re.compile(r"sk-ant-[A-Za-z0-9_\-]+")),
    # header-shaped leaks: `x-api-key: ...`, `"authorization": "Bearer ..."`
    (
        "an API key header",
        re.compile(r"(?i)(?P<head>\b(?:x-api-key|authorization)\b[\"']?\s*[:=]\s*[\"']?(?:bearer\s+)?)[^\s\"',}]+"),
    ),
    ("a password inside a URL", _URL_CREDENTIALS),
)

# What may cut a value in two and still be found: whitespace and line breaks, quotes, `+`
# (string concatenation), a backslash (line continuation, `\"` in JSON) and the escaped
# line breaks of a JSON or Python string. `\\[nrt]` first: each character of a cut is
# consumed one way only, so a failed match backtracks linearly.
_CUT = r"(?:\\[nrt]|[\s\"'`+\\]){0,64}"
# Longer forms (a private key in a variable) are found whole only: a regex with a cut
# between every pair of thousands of characters is slow to build for no real gain.
_MAX_CUT_FORM = 512


def secret_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """Values of key-like variables in `environ` (default: this process's), and the
    password of any URL with credentials in any variable."""
    env = os.environ if environ is None else environ
    values = {
        v for k, v in env.items()
        if _SECRET_NAME.search(k) and not _SETTING_NAME.search(k) and len(v.strip()) >= _MIN_SECRET_LEN
    }
    for value in env.values():
        if "://" not in value:
            continue
        for match in _URL_CREDENTIALS.finditer(value):
            password = match.group("password")
            values.update(p for p in (password, unquote(password)) if len(p) >= _MIN_SECRET_LEN)
    # Longest first, so a key that contains another is redacted whole.
    return sorted(values, key=len, reverse=True)


def encodings(value: str) -> dict[str, str]:
    """The forms of `value` that are redacted, each mapped to the name of its encoding."""
    data = value.encode("utf-8", "surrogateescape")
    forms: dict[str, str] = {}

    def add(form: str, name: str) -> None:
        if len(form) >= _MIN_SECRET_LEN:
            forms.setdefault(form, name)

    add(value, "literal")
    add(value.strip(), "literal")
    add(value[::-1], "reversed")
    add(data.hex(), "hex")
    add(data.hex().upper(), "hex")
    every_byte = "".join(f"%{b:02X}" for b in data)
    for form in (quote(value, safe=""), quote(value), quote_plus(value), every_byte):
        add(form, "percent-encoded")
        add(re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), form), "percent-encoded")
    for name, encode in (("base64", base64.b64encode), ("URL-safe base64", base64.urlsafe_b64encode)):
        whole = encode(data).decode("ascii")
        add(whole, name)
        add(whole.rstrip("="), name)
        for skew in range(3):
            # Base64 character i holds bits 6i..6i+5: with `skew` bytes of something else in
            # front, the characters from ceil(8*skew/6) up to floor(8*(skew+n)/6) depend
            # on the value alone, whatever surrounds it in a larger blob.
            shifted = encode(b"\0" * skew + data).decode("ascii")
            add(shifted[-(-8 * skew // 6) : 8 * (skew + len(data)) // 6], name)
    return forms


class _Form:
    """One form of one secret value. Its cut-tolerant regex is compiled when a text first
    holds half of the form: most processes never need most of them, and compiling all of
    a key's forms costs a tenth of a second at every start of the CLI."""

    __slots__ = ("_cut", "halves", "name", "text")

    def __init__(self, text: str, name: str) -> None:
        self.text = text
        self.name = name
        half = len(text) // 2
        self.halves = (text[:half], text[half:])
        self._cut: re.Pattern[str] | None = None

    def _present(self, text: str) -> bool:
        # Cut in two, one piece holds a whole half: two fast substring searches decide
        # whether the (slower) regex needs to run at all.
        if len(self.text) > _MAX_CUT_FORM:
            return self.text in text
        return self.halves[0] in text or self.halves[1] in text

    def _pattern(self) -> re.Pattern[str]:
        if self._cut is None:  # two threads may both compile it: the same pattern either way
            self._cut = re.compile(_CUT.join(map(re.escape, self.text)))
        return self._cut

    def find(self, text: str) -> bool:
        if not self._present(text):
            return False
        return len(self.text) > _MAX_CUT_FORM or self._pattern().search(text) is not None

    def redact(self, text: str) -> str:
        if not self._present(text):
            return text
        if len(self.text) > _MAX_CUT_FORM:
            return text.replace(self.text, REDACTED)
        return self._pattern().sub(REDACTED, text)


@functools.lru_cache(maxsize=32)
def _compile(literals: tuple[str, ...]) -> tuple[_Form, ...]:
    """Every form of every value, longest first, built once per set of secrets (a
    process builds a Scrubber per task; the environment rarely changes in between)."""
    forms: dict[str, str] = {}
    for value in literals:
        for form, name in encodings(value).items():
            forms.setdefault(form, name)
    return tuple(_Form(form, name) for form, name in sorted(forms.items(), key=lambda item: (-len(item[0]), item[0])))


class Scrubber:
    """Redacts the secret values of an environment (in every form above) plus key-shaped patterns."""

    def __init__(self, environ: Mapping[str, str] | None = None, extra: Iterable[str] = ()) -> None:
        literals = set(secret_values(environ)) | {e for e in extra if len(e) >= _MIN_SECRET_LEN}
        self._forms = _compile(tuple(sorted(literals)))

    def text(self, text: str) -> str:
        for form in self._forms:
            text = form.redact(text)
        for _, pattern in _PATTERNS:
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

    def find(self, text: str, *, patterns: bool = True) -> str | None:
        """What `text` holds that this scrubber would redact, named without the value
        (None: nothing). `patterns=False`: the environment's values only, for callers
        with their own judgement of what a key looks like (memory governance)."""
        for form in self._forms:
            if form.find(text):
                how = "" if form.text in text else "cut in two, "
                what = "" if form.name == "literal" and not how else f" ({how}{form.name})"
                return f"a secret value of the environment{what}"
        if not patterns:
            return None
        for what, pattern in _PATTERNS:
            if any(m.group(0) != _replacement(m) for m in pattern.finditer(text)):
                return what
        return None

    def leaks(self, text: str) -> bool:
        """True if `text` still holds something this scrubber would redact."""
        return self.text(text) != text


def _replacement(match: re.Match[str]) -> str:
    head = match.groupdict().get("head")
    return f"{head}{REDACTED}" if head else REDACTED


def scrub(text: str, environ: Mapping[str, str] | None = None) -> str:
    return Scrubber(environ).text(text)

