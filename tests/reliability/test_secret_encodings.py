"""No secret lands anywhere we keep in an encoded form either: the agent prints the API
key and the DATABASE_URL password as base64 (standard, URL-safe, inside a larger blob
at each byte alignment), hex, percent-encoding, reversed and cut in two, writes them into
its worktree (so its patch carries them), and the issue itself carries the key in base64
(so the daydream proposes a memory holding it). None of it reaches an event payload, a
blob, the materialised memory, the report or `swecl log`; the memory item is refused by
governance, with a reason that names the form and not the value.
"""

from __future__ import annotations

import base64
import json
import secrets
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from bench.processes import SPANS, read_events
from tests.inprocess import swecl

from .support import DemoCurriculum, find_needles, ledger_texts, one_sequence_curriculum
from .test_leaks import _everything, _key

pytestmark = pytest.mark.slow

# What the agent does with the secrets it finds in its environment: every form goes to
# stdout, stderr and a file in the worktree.
ENCODER = r"""
import base64, os, pathlib, sys
key, url = os.environ["ANTHROPIC_API_KEY"], os.environ["DATABASE_URL"]
password = url.split("://", 1)[1].split("@", 1)[0].split(":", 1)[1]
raw = key.encode()
forms = [
    base64.b64encode(raw).decode(),
    base64.urlsafe_b64encode(raw).decode().rstrip("="),
    *(base64.b64encode(b"P" * (40 + skew) + raw + b"Q" * 40).decode() for skew in range(3)),
    raw.hex(),
    raw.hex().upper(),
    "".join(f"%{b:02X}" for b in raw),
    key[::-1],
    f'KEY = "{key[:15]}" + "{key[15:]}"',
    key[:20] + "\n" + key[20:],
    "connecting to " + url,
    base64.b64encode(password.encode()).decode(),
    "mysql://root:" + os.environ["SPARE_DB_PW"] + "@10.0.0.7/app",
]
text = "\n".join(forms) + "\n"
print(text)
print(text, file=sys.stderr)
pathlib.Path(sys.argv[1], "encoded.txt").write_text(text)
"""


def _inner_b64(data: bytes, start: int, length: int) -> str:
    """The base64 characters of `data` that encode bytes [start, start+length) and
    nothing else, shrunk by a character at each end (computed here, independently of the
    scrubber: the secret must not survive inside a larger blob)."""
    encoded = base64.b64encode(data).decode()
    first, last = -(-start * 8 // 6), (start + length) * 8 // 6
    return encoded[first + 1 : last - 1]


def _needles(key: str, password: str, other: str) -> list[str]:
    raw = key.encode()
    needles = [
        key, password, other, key[::-1],
        base64.b64encode(raw).decode(), base64.b64encode(raw).decode().rstrip("="),
        base64.urlsafe_b64encode(raw).decode().rstrip("="),
        raw.hex(), raw.hex().upper(), "".join(f"%{b:02X}" for b in raw),
        base64.b64encode(password.encode()).decode().rstrip("="),
        # no half of a cut key survives either
        key[:15], key[15:], key[:20], key[20:],
    ]
    for skew in range(3):
        needles.append(_inner_b64(b"P" * (40 + skew) + raw + b"Q" * 40, 40 + skew, len(raw)))
    return needles


def test_encoded_secrets_never_land_anywhere(curriculum: DemoCurriculum, tmp_path: Path, cache: Path) -> None:
    key, password, other = _key(), "pw-" + secrets.token_hex(8), "other-" + secrets.token_hex(8)
    blob_of_key = base64.b64encode(b"log line, then the key: " + key.encode() + b" and more").decode()

    first, second = curriculum.instance_ids(SPANS)[:2]

    def carry_the_key(task: dict[str, Any]) -> None:
        if task["metadata"]["instance_id"] == first:  # early, so the memory's issue summary holds it
            title, rest = task["task"]["problem_statement"].split("\n", 1)
            task["task"]["problem_statement"] = f"{title}\nThe failing request's body was {blob_of_key}\n{rest}"

    dataset = one_sequence_curriculum(curriculum, tmp_path / "ds", [first, second], edit=carry_the_key)
    sequence = json.loads(dataset.read_text())["sequences"][0]["id"]
    # `python -c`: no script file the agent's sandbox would have to be able to read
    template = f"{shlex.quote(sys.executable)} -c {shlex.quote(ENCODER)} {{workdir}}"
    env = {
        "ANTHROPIC_API_KEY": key,
        "DATABASE_URL": f"postgres://app:{password}@db.internal:5432/x",  # no key-like name
        "SPARE_DB_PW": other,  # no key-like name either: caught as a URL password in the output
    }
    results = tmp_path / "results"
    swecl(results, "run", "--dataset", str(dataset), "--sequence", sequence, "--stage", "plugin-blank",
          "--agent", "command", "--command", template, "--passes", "initial",
          "--quiet", cache=cache, env=env, timeout=600)
    report = tmp_path / "report"
    swecl(results, "report", "--out", str(report), cache=cache, env=env)
    log = swecl(results, "log", "--json", cache=cache, env=env).stdout

    haystack = [*_everything(results, report), ("swecl log", log.encode())]
    needles = _needles(key, password, other) + [_inner_b64(base64.b64decode(blob_of_key), 24, len(key))]
    assert find_needles(haystack, needles) == []

    # Not absent by accident: the agent did print and write every form, and each was redacted.
    memory_files = list(results.glob("v*/_memory/**/*.md"))
    assert memory_files, "the run materialised no memory: the test would prove nothing about it"
    events = read_events(results)
    agent = [e["payload"] for e in events if e["type"] == "agent.finished"]
    assert len(agent) == 2 and all(a["transcript"] and a["patch"] for a in agent), json.dumps(agent)[:2000]
    blobs = dict(ledger_texts(results))
    transcript = blobs[f"blob {agent[1]['transcript'][:12]}"]
    assert transcript.count(b"[REDACTED]") >= 2 * 14  # every form, on stdout and on stderr
    assert b"connecting to postgres://app:[REDACTED]@db.internal" in transcript
    patch = blobs[f"blob {agent[1]['patch'][:12]}"]
    assert b"+++ b/encoded.txt" in patch and patch.count(b"[REDACTED]") >= 14

    # The memory is refused, naming the form; the other task's memory is kept.
    rejected = [e["payload"] for e in events if e["type"] == "memory.rejected"]
    assert [(r["rule"], r["source_instance"]) for r in rejected] == [("secret", first)]
    assert "secret value of the environment (base64)" in rejected[0]["reason"]
    written = [e["payload"] for e in events if e["type"] == "memory.written"]
    assert {w["source_instance"] for w in written} == {second}
