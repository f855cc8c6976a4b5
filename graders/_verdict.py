"""`swecl verdict`: grade existing test logs listed in a JSONL file, one verdict per line.

Each input line names a log and the tests to judge it by:
`{instance_id, repo, log_path, FAIL_TO_PASS, PASS_TO_PASS}` plus optional `log_parser`
(a parser name; default: the repo's), `test_exit_code` (int or null) and `test_cmd` (to
find the test run inside an unframed eval log). FAIL_TO_PASS / PASS_TO_PASS are lists of
names or JSON strings of such lists (SWE-bench rows store them that way). A relative
`log_path` is taken from the input file's directory. Other fields are ignored, so
SWE-bench rows can be passed through with a log_path added.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from graders._decide import grade_log
from graders._limits import MAX_JSON_BYTES, MAX_LOG_BYTES, InputRefused, json_problem, read_limited
from graders._parsers import canonical_parser, parser_for_repo
from ledger.errors import SweclError

__all__ = ["verdict_lines"]


class _Line:
    """Where a value came from, for errors that name the file, line and field."""

    def __init__(self, path: Path, number: int) -> None:
        self.path = path
        self.number = number

    def error(self, field: str | None, problem: str) -> SweclError:
        where = f"{self.path}:{self.number}"
        if field is not None:
            where += f": field {field!r}"
        return SweclError(f"{where}: {problem}")


def _text(row: dict[str, Any], field: str, at: _Line, *, required: bool = True) -> str | None:
    value = row.get(field)
    if value is None:
        if required:
            raise at.error(field, "is missing; every line needs it")
        return None
    if not isinstance(value, str) or not value.strip():
        raise at.error(field, f"must be a non-empty string, not {value!r}")
    return value


def _names(row: dict[str, Any], field: str, at: _Line) -> list[str]:
    if field not in row:
        raise at.error(field, "is missing; give a list of test names (may be empty)")
    value = row[field]
    if isinstance(value, str):
        value, problem = json_problem(value)
        if problem is not None:
            raise at.error(field, f"is a string but not a JSON list of test names ({problem})")
    if not isinstance(value, list) or not all(isinstance(name, str) for name in value):
        raise at.error(field, "must be a list of test names (strings) or a JSON string of one")
    return value


def _exit_code(row: dict[str, Any], at: _Line) -> int | None:
    value = row.get("test_exit_code")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise at.error("test_exit_code", f"must be an integer or null, not {value!r}")
    return value


def _parser(row: dict[str, Any], repo: str, at: _Line) -> str:
    explicit = _text(row, "log_parser", at, required=False)
    try:
        return canonical_parser(explicit) if explicit is not None else parser_for_repo(repo)
    except SweclError as exc:
        raise at.error("log_parser" if explicit is not None else "repo", str(exc)) from None


def _read_log(path: Path, at: _Line) -> str:
    try:
        data = read_limited(path, repr(str(path)), MAX_LOG_BYTES)
    except InputRefused as exc:
        if exc.reason == "missing":
            raise at.error("log_path", f"log file {str(path)!r} does not exist") from None
        if exc.reason == "directory":
            raise at.error("log_path", f"{str(path)!r} is a directory, not a log file") from None
        raise at.error("log_path", str(exc)) from None
    # Logs carry whatever bytes the tests printed; a stray invalid byte must not stop grading.
    return data.decode("utf-8", errors="replace")


def verdict_lines(input_path: str | Path) -> Iterator[dict[str, Any]]:
    """One verdict per input line: `{instance_id, resolved, status, tests, f2p, p2p, error}`.

    `tests` is every status the log states; `f2p` / `p2p` give each listed test's status
    (or MISSING / AMBIGUOUS); `error` says why a status is infra_error. Blank lines are
    skipped. A malformed line raises `SweclError` naming the file, line number and field;
    lines before it have already been yielded.
    """
    source = Path(input_path)
    try:
        data = read_limited(source, str(source), MAX_JSON_BYTES)
    except InputRefused as exc:
        if exc.reason == "missing":
            raise SweclError(f"{source}: input file does not exist") from None
        if exc.reason == "directory":
            raise SweclError(f"{source}: is a directory, not a JSONL input file") from None
        raise
    for number, raw_bytes in enumerate(data.split(b"\n"), start=1):
        if not raw_bytes.strip():
            continue
        at = _Line(source, number)
        try:
            raw = raw_bytes.decode("utf-8")
        except UnicodeDecodeError:
            raise at.error(None, "is not UTF-8 text") from None
        yield _verdict(raw, source, at)


def _verdict(raw: str, source: Path, at: _Line) -> dict[str, Any]:
    row, problem = json_problem(raw)
    if problem is not None:
        raise at.error(None, problem.replace(" at line 1 column ", " at column "))
    if not isinstance(row, dict):
        raise at.error(None, "must be a JSON object")
    instance_id = _text(row, "instance_id", at)
    repo = _text(row, "repo", at, required="log_parser" not in row) or ""
    parser = _parser(row, repo, at)
    log_path = Path(_text(row, "log_path", at) or "")
    if not log_path.is_absolute():
        log_path = source.parent / log_path
    fail_to_pass = _names(row, "FAIL_TO_PASS", at)
    pass_to_pass = _names(row, "PASS_TO_PASS", at)
    exit_code = _exit_code(row, at)
    test_cmd = _text(row, "test_cmd", at, required=False)
    decision = grade_log(
        _read_log(log_path, at),
        parser,
        fail_to_pass,
        pass_to_pass,
        test_exit_code=exit_code,
        test_cmd=test_cmd,
    )
    return {
        "instance_id": instance_id,
        "resolved": decision.resolved,
        "status": decision.status,
        "tests": decision.tests,
        "f2p": decision.f2p,
        "p2p": decision.p2p,
        "error": decision.error,
    }
