from __future__ import annotations

import base64
import hashlib
import random
import re
import time
from collections.abc import Callable
from urllib.parse import quote

import pytest

from agents._scrub import REDACTED, Scrubber, encodings, scrub, secret_values

ENV = {
    "ANTHROPIC_API_KEY": "gw-live-0123456789abcdef",  # a gateway key: no sk-ant shape, caught by value
    "ANTHROPIC_BASE_URL": "http://127.0.0.1:8080",
    "GITHUB_TOKEN": "ghp_abcdefghijklmnop",
    "MY_SERVICE_SECRET": "hunter2hunter2",
    "DB_PASSWORD": "short",  # too short to redact safely
    "GIT_AUTHOR_EMAIL": "someone@example.com",
    "IS_SANDBOX": "1",
    "HOME": "/root",
}


def test_secret_values_pick_key_like_names_only() -> None:
    values = secret_values(ENV)
    assert set(values) == {"gw-live-0123456789abcdef", "ghp_abcdefghijklmnop", "hunter2hunter2"}


def test_literal_values_and_key_patterns_are_redacted() -> None:
    s = Scrubber(ENV)
    text = (
        "key=gw-live-0123456789abcdef url=http://127.0.0.1:8080 "
        "pasted sk-ant-api03-AbC_dEf-123 and x-api-key: whatever-value "
        '{"authorization": "Bearer tok.en.value"} mail someone@example.com'
    )
    out = s.text(text)
    assert "gw-live-0123456789abcdef" not in out and "sk-ant-api03" not in out
    assert "whatever-value" not in out and "tok.en.value" not in out
    assert "http://127.0.0.1:8080" in out and "someone@example.com" in out
    assert out.count(REDACTED) == 4
    assert s.leaks(text) and not s.leaks(out)


def test_bytes_round_trip_non_utf8() -> None:
    s = Scrubber(ENV)
    raw = b"\xff\xfe binary hunter2hunter2 \x00"
    assert s.bytes(raw) == b"\xff\xfe binary " + REDACTED.encode() + b" \x00"


def test_longest_secret_wins_when_one_contains_another() -> None:
    env = {"A_TOKEN": "abcdefgh", "B_TOKEN": "abcdefghijkl"}
    assert scrub("x abcdefghijkl y", env) == f"x {REDACTED} y"


def _noise(n: int) -> bytes:
    """Random-looking bytes, the same in every pytest worker (parameters must match)."""
    return random.Random(n).randbytes(n)


# -- encodings ------------------------------------------------------------------------------

# `/`, `+`, `?` and `~` in the key make its base64 differ from the URL-safe one and its
# percent-encoding differ from the key; the agent's environment sees it like any key.
KEY = "gw-live-Zq8/x+Y?w~3kTn0pLm5vRr"
KEY_ENV = {"ANTHROPIC_API_KEY": KEY, "DATABASE_URL": "postgres://app:hunter2pass@db.internal:5432/x", "HOME": "/root"}
DATA = KEY.encode()


def _b64_inside(encode: Callable[[bytes], bytes], skew: int) -> str:
    """`KEY` inside a larger base64 blob, at byte alignment `skew`."""
    return encode(_noise(30 + skew) + DATA + _noise(31)).decode()


ENCODED = {
    "base64": base64.b64encode(DATA).decode(),
    "base64 without padding": base64.b64encode(DATA).decode().rstrip("="),
    "URL-safe base64": base64.urlsafe_b64encode(DATA).decode(),
    "URL-safe base64 without padding": base64.urlsafe_b64encode(DATA).decode().rstrip("="),
    **{f"base64 blob, alignment {k}": _b64_inside(base64.b64encode, k) for k in range(3)},
    **{f"URL-safe base64 blob, alignment {k}": _b64_inside(base64.urlsafe_b64encode, k) for k in range(3)},
    "base64 with a newline": base64.b64encode(DATA + b"\n").decode(),  # `echo $KEY | base64`
    "hex": DATA.hex(),
    "upper-case hex": DATA.hex().upper(),
    "percent-encoded": quote(KEY, safe=""),
    "percent-encoded, lower-case escapes": re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), quote(KEY, safe="")),
    "every byte percent-encoded": "".join(f"%{b:02X}" for b in DATA),
    "reversed": KEY[::-1],
    "in a JSON string": '{"key": "%s"}' % KEY,
}


@pytest.mark.parametrize("form", list(ENCODED))
def test_every_encoding_of_a_secret_is_redacted(form: str) -> None:
    s = Scrubber(KEY_ENV)
    text = f"the agent printed: {ENCODED[form]} (done)"
    out = s.text(text)
    assert REDACTED in out and out.startswith("the agent printed: ") and out.endswith(" (done)")
    assert s.find(text) is not None and not s.leaks(out) and s.find(out) is None
    # nothing the value fixes is left: no 8-character run of any of its forms survives
    for encoded in encodings(KEY):
        assert not any(encoded[i : i + 8] in out for i in range(len(encoded) - 7)), (form, encoded)


def test_the_finding_names_the_encoding_and_never_the_value() -> None:
    s = Scrubber(KEY_ENV)
    assert s.find(f"x {KEY} y") == "a secret value of the environment"
    assert s.find(ENCODED["hex"]) == "a secret value of the environment (hex)"
    assert s.find(ENCODED["URL-safe base64"]) == "a secret value of the environment (URL-safe base64)"
    assert s.find(f'"{KEY[:9]}" + "{KEY[9:]}"') == "a secret value of the environment (cut in two, literal)"
    assert s.find("redis://:s3cretpw0rd@cache") == "a password inside a URL"
    for text in ENCODED.values():
        what = s.find(text) or ""
        assert KEY not in what and KEY[:6] not in what


SPLIT = {
    "line break": f"{KEY[:11]}\n{KEY[11:]}",
    "CRLF and indentation": f"{KEY[:5]}\r\n        {KEY[5:]}",
    "whitespace": f"{KEY[:14]}   {KEY[14:]}",
    "+ concatenation": f'key = "{KEY[:7]}" + "{KEY[7:]}"',
    "implicit concatenation, single quotes": f"key = ('{KEY[:20]}'\n       '{KEY[20:]}')",
    "backslash continuation": f"export K={KEY[:16]}\\\n{KEY[16:]}",
    "JSON-escaped line break": '{"text": "%s\\n%s"}' % (KEY[:3], KEY[3:]),
    "JSON-escaped concatenation": '{"cmd": "k=\\"%s\\" + \\"%s\\""}' % (KEY[:18], KEY[18:]),
    "wrapped base64": ENCODED["base64"][:17] + "\n" + ENCODED["base64"][17:],
}


@pytest.mark.parametrize("form", list(SPLIT))
def test_a_secret_cut_in_two_is_redacted(form: str) -> None:
    s = Scrubber(KEY_ENV)
    out = s.text(SPLIT[form])
    assert REDACTED in out and KEY[:3] + KEY[3:6] not in out and not s.leaks(out), out
    assert s.find(SPLIT[form]) is not None


def test_what_a_cut_in_two_does_not_catch() -> None:
    """Documented limits: pieces joined by anything else, three small pieces."""
    s = Scrubber(KEY_ENV)
    assert not s.leaks(f'a = "{KEY[:12]}"; b = "{KEY[12:]}"; key = a + b')
    third = len(KEY) // 3
    assert not s.leaks(f"{KEY[:third]} {KEY[third : 2 * third]} {KEY[2 * third :]}")


URLS_WITH_CREDENTIALS = [
    "postgres://user:hunter2pass@db/x",
    "DATABASE_URL=mysql+pymysql://root:pw@127.0.0.1:3306/app",
    'conn = "redis://:onlyapassword@cache:6379/0"',
    "amqp://guest:p@ss:w0rd@rabbit/vhost?heartbeat=10",
    '{"url": "https://deploy:ghs_16CharsOfToken@github.com/acme/repo.git"}',
]


@pytest.mark.parametrize("text", URLS_WITH_CREDENTIALS)
def test_credentials_inside_any_url_are_redacted(text: str) -> None:
    out = Scrubber({}).text(text)
    assert f":{REDACTED}@" in out and out.count(REDACTED) == 1
    for password in ("hunter2pass", ":pw@", "onlyapassword", "p@ss:w0rd", "ghs_16CharsOfToken"):
        assert password not in out
    assert Scrubber({}).text(out) == out  # idempotent: scrubbed text has nothing left to find


def test_a_url_password_in_the_environment_is_a_secret_in_every_form() -> None:
    """DATABASE_URL is no key-like name; its password is redacted alone, and encoded."""
    assert "hunter2pass" in secret_values(KEY_ENV)
    assert "p@ss w0rd!" in secret_values({"BROKER_URL": "amqp://u:p%40ss%20w0rd%21@rabbit/"})  # decoded too
    s = Scrubber(KEY_ENV)
    for text in ("the password is hunter2pass", base64.b64encode(b"hunter2pass").decode(), b"hunter2pass".hex()):
        assert s.text(text) != text and "hunter2pass" not in s.text(text)


NOT_SECRETS = [
    base64.b64encode(_noise(300)).decode(),  # an ordinary base64 blob
    base64.b64encode(b"gw-live-Zq8/x+Y?w~3kTn0pLm5vRQ").decode(),  # a near-miss: the last character differs
    hashlib.sha256(DATA).hexdigest(),  # a hex digest of the key is not the key
    hashlib.sha1(b"commit").hexdigest().upper(),
    "https://example.com:8080/path?q=1 and http://127.0.0.1:8080",
    "git@github.com:acme/repo.git and ssh://git@github.com/acme/repo.git",
    "mailto:someone@example.com, user@host:~/dir",
    "gw-live-Zq8 is a prefix, 3kTn0pLm5vRr a suffix, each too short to be the key",
    "%2Fusr%2Flocal%2Fbin and 2f7573722f6c6f63616c",
]


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_text_that_is_not_a_secret_is_left_alone(text: str) -> None:
    s = Scrubber(KEY_ENV)
    assert s.text(text) == text and s.find(text) is None and not s.leaks(text)


def test_forms_are_compiled_once_per_set_of_secrets() -> None:
    first, second = Scrubber(KEY_ENV), Scrubber(dict(KEY_ENV, HOME="/elsewhere"))
    assert first._forms is second._forms  # the per-task Scrubber costs no regex compilation
    assert Scrubber({**KEY_ENV, "OTHER_TOKEN": "another-secret-1"})._forms is not first._forms


def test_scrubbing_a_large_blob_stays_linear() -> None:
    """A few MB of base64 without a space (a transcript with an image in it): no pattern
    may rescan it from every position."""
    s = Scrubber({**KEY_ENV, "GITHUB_TOKEN": "ghp_" + "a1b2c3d4" * 4})
    blob = base64.b64encode(_noise(3_000_000)).decode()
    started = time.monotonic()
    assert s.text(blob + " " + ENCODED["hex"]) == blob + " " + REDACTED
    assert time.monotonic() - started < 15


def test_a_setting_about_a_credential_is_no_secret() -> None:
    """RAY_AUTH_MODE=disabled: redacting it would cut the word out of every text, and
    governance would refuse every memory item that says "disabled"."""
    env = {"RAY_AUTH_MODE": "disabled", "TOKEN_FILE": "/run/secrets/tok", "SERVICE_TOKEN": "enabledeverywhere",
           "DB_PASSWORD": "hunter2pass", "CACHE_URL": "redis://u:hunter3pass@db/0"}
    values = secret_values(env)
    assert "disabled" not in values and "/run/secrets/tok" not in values
    assert {"enabledeverywhere", "hunter2pass", "hunter3pass"} <= set(values)
    assert Scrubber(env).text("auth disabled, token enabledeverywhere") == f"auth disabled, token {REDACTED}"
