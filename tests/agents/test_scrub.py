from __future__ import annotations

from agents._scrub import REDACTED, Scrubber, scrub, secret_values

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
