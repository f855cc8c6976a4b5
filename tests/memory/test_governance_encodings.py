"""Governance refuses a memory item that carries a secret of the environment in any form
the scrubber knows, or a password inside a URL: the item is never written, so never
recalled, materialised or seeded. The rejection names the form, never the value."""

from __future__ import annotations

import base64
import hashlib
import random

import pytest

from agents._scrub import Scrubber
from commands.memory import Checker, daydream, dream, find_secret
from ledger import Ledger
from projections.memory import load_memory

from .builders import item, write
from .test_daydream import AGENT_PATCH, ISSUE, rejected, task


def _noise(n: int) -> bytes:
    """Random-looking bytes, the same in every pytest worker (parameters must match)."""
    return random.Random(n).randbytes(n)


KEY = "gw-live-Zq8/x+Y?w~3kTn0pLm5vRr"
ENV = {"ANTHROPIC_API_KEY": KEY, "DATABASE_URL": "postgres://app:hunter2pass@db/x"}
DATA = KEY.encode()

FORMS = {
    "literal": KEY,
    "base64": base64.b64encode(DATA).decode(),
    "URL-safe base64": base64.urlsafe_b64encode(DATA).decode().rstrip("="),
    "base64 blob": base64.b64encode(_noise(7) + DATA + _noise(9)).decode(),
    "hex": DATA.hex(),
    "upper-case hex": DATA.hex().upper(),
    "percent-encoded": "".join(f"%{b:02x}" for b in DATA),
    "reversed": KEY[::-1],
    "cut in two": f'KEY = "{KEY[:10]}" + \n  "{KEY[10:]}"',
    "URL password of the environment": base64.b64encode(b"hunter2pass").decode(),
}


@pytest.mark.parametrize("form", list(FORMS))
def test_an_item_with_an_encoded_secret_is_rejected(form: str) -> None:
    checker = Checker(None, scrubber=Scrubber(ENV))
    for field in ("title", "body", "tags", "files", "symbols", "patch"):
        value: str | list[str] = FORMS[form] if field in ("title", "body", "patch") else [FORMS[form]]
        violation = checker.check({field: value})
        assert violation is not None and violation.rule == "secret" and violation.field == field, (form, field)
        assert "secret value of the environment" in violation.reason
        assert KEY[:6] not in violation.reason and FORMS[form][:6] not in violation.reason


@pytest.mark.parametrize(
    "text",
    [
        "connect with postgres://deploy:Xk9fQ2mZ@db.internal/app",
        "REDIS_URL=redis://:s3cr3t-pw@cache:6379/0",
    ],
)
def test_a_password_inside_a_url_is_rejected_whatever_the_environment(text: str) -> None:
    assert find_secret(text) == "a password inside a URL"
    violation = Checker(None, scrubber=Scrubber({})).check({"body": text})
    assert violation is not None and violation.rule == "secret"


@pytest.mark.parametrize(
    "text",
    [
        base64.b64encode(_noise(60)).decode(),  # an ordinary base64 blob
        hashlib.sha256(DATA).hexdigest(),  # a digest of the key is not the key
        "see https://docs.example.com:8443/api and git@github.com:acme/repo.git",
        "postgres://user:password@localhost/db in the README",  # a placeholder, not a credential
        "DATABASE_URL=postgres://app:[REDACTED]@db/x",  # what the scrubber left
        "postgres://app:${DB_PASSWORD}@db/x",
    ],
)
def test_ordinary_text_is_accepted(text: str) -> None:
    assert Checker(None, scrubber=Scrubber(ENV)).check({"body": text}) is None


def test_the_daydream_rejects_an_issue_carrying_the_key_in_base64(
    led: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checker the daydream builds knows this process's environment (the run's)."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    leaky = task(issue=ISSUE + "\nlogs: " + FORMS["base64 blob"])
    recs = daydream(led, "V", leaky, patch=AGENT_PATCH, status="resolved", resolved=True)
    assert rejected(recs) == [("secret", "body contains what looks like a secret value of the environment (base64)")]
    assert load_memory(led, "V").state.items == {}
    payload = next(led.read_raw(types=["memory.rejected"]))[7]
    assert FORMS["base64 blob"][12:30].encode() not in payload


def test_a_dream_prunes_an_item_with_an_encoded_secret(led: Ledger, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    write(led, "V", item("leaky", "V", 1, body="token in hex: " + FORMS["hex"]), item("fine", "V", 2))
    report = dream(led, "V")
    assert [(d.action, d.item_id) for d in report.decisions] == [("pruned", "leaky")]
    assert report.decisions[0].reason == (
        "governance (secret): body contains what looks like a secret value of the environment (hex)"
    )
