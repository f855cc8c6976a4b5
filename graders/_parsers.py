"""Test-log parsers: a test run's output -> {test name: status}, read the way swebench 5.x reads it.

Why the quirks are mirrored rather than fixed: SWE-bench's FAIL_TO_PASS / PASS_TO_PASS lists
were produced by running the gold patch through swebench's own parsers, so every test name
in them lives in the "key space" of one parser family. Plain pytest keys are the first
whitespace token of a summary line (so `test_x[a b]` is listed as `test_x[a`), the v2
family keeps the rest of the line, django keys are the runner's description (a docstring's
first line when the test has one), sympy keys are bare function names. A parser that read
the same log "more correctly" would produce names the lists do not contain, and gold
patches would stop resolving. So each family below reproduces swebench 5.0.2's reading
line for line, with three deliberate, documented differences that cannot change a listed
name:

- a name reported both failing (FAILED, ERROR) and not failing counts as failing, where
  swebench keeps whichever line came last. The code under test writes to the same log as
  the runner: an exit handler printing `PASSED <test>` after the report, then
  `os._exit(0)`, would otherwise turn a real FAILED into a pass. pytest's own double
  report (PASSED, then ERROR in teardown; -rA prints PASSED lines first) ends failing
  either way. Of the 463 official logs two report a name both ways, both with the
  failure last: no official verdict changes (tests/graders/test_parsers.py).

- only the five statuses of `TestStatus` are ever recorded. swebench stores whatever token
  starts a matching line (`ERROR:` from `ERROR: file not found: x`), which its grading then
  treats as neither pass nor fail; such keys are not test names and are dropped here.
- the v2 family strips complete ANSI colour sequences (`ESC[1;31m`, `ESC[39;49;00m`) before
  swebench's own partial clean-up (`[<digits>m` and control characters), which leaves
  multi-parameter sequences behind as text.

XPASS summary lines and sympy's `f`/`s`/`X`/`T` outcome letters are not recorded, as in
swebench: such tests never made it into any PASS_TO_PASS list, and a listed test that shows
up that way is absent, hence failed.

The log region: official logs carry the eval script's `+ ...` shell trace, git output and
the patch before the test run. `find_test_output` cuts out the test command's own output, by
swebench's `>>>>> Start/End Test Output` markers when present, else by the trace line of the
test command, else it takes the whole text (what the grader hands over when it captured the
test command's output itself). swecl frames its own logs with the same markers
(`frame_test_output`) so that one reader serves both, and swebench can read ours.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

from ledger.errors import SweclError

__all__ = [
    "END_MARKER",
    "EXIT_CODE_MARKER",
    "FAULT_MARKERS",
    "START_MARKER",
    "LogRegion",
    "ParsedLog",
    "TestStatus",
    "canonical_parser",
    "find_test_output",
    "frame_test_output",
    "log_conflicts",
    "parse_log",
    "parse_test_log",
    "parser_for_repo",
    "parser_names",
    ]


class TestStatus(StrEnum):
    """The outcome of one test as a log states it (swebench's vocabulary)."""

    __test__ = False  # a pytest collection hint: this enum is not a test class

    PASSED = "PASSED"
    FAILED = "FAILED"
    SKIPPED = "SKIPPED"
    ERROR = "ERROR"
    XFAIL = "XFAIL"


_STATUS_WORDS: tuple[str, ...] = tuple(s.value for s in TestStatus)

# swebench's eval-script markers; swecl's own framing reuses them (see frame_test_output).
START_MARKER = ">>>>> Start Test Output"
END_MARKER = ">>>>> End Test Output"
EXIT_CODE_MARKER = ">>>>> Test Exit Code"
# A log holding any of these did not complete a test run, whatever results it prints.
FAULT_MARKERS: tuple[str, ...] = (
    ">>>>> Patch Apply Failed",
    ">>>>> Reset Failed",
    ">>>>> Tests Errored",
    ">>>>> Tests Timed Out",
)
_EXIT_CODE_RE = re.compile(re.escape(EXIT_CODE_MARKER) + r":\s*(-?\d+)")


# ---------------------------------------------------------------------------------------
# pytest families


_FAILING: frozenset[TestStatus] = frozenset({TestStatus.FAILED, TestStatus.ERROR})


class _Reported(dict[str, TestStatus]):
    """The statuses a parser reads, remembering every status each key was reported with.

    The parsers store `statuses[key] = status` line by line, so a later line overwrites an
    earlier one (swebench's reading). That lets anything printed after the runner's report
    (an exit handler of the code under test writing `PASSED <test>`, then `os._exit(0)`)
    overwrite a real FAILED. `conflicts` keeps the evidence; `parse_log` settles it.
    """

    def __init__(self) -> None:
        super().__init__()
        self.failing: dict[str, TestStatus] = {}  # key -> the latest failing status it had
        self.not_failing: set[str] = set()  # keys reported at least once as not failing

    def __setitem__(self, key: str, status: TestStatus) -> None:
        if status in _FAILING:
            self.failing[key] = status
        else:
            self.not_failing.add(key)
        super().__setitem__(key, status)


def conflicting_tests(statuses: dict[str, TestStatus]) -> dict[str, TestStatus]:
    """Keys of a parse that were reported both failing and not, with their failing status."""
    if not isinstance(statuses, _Reported):
        return {}
    return {key: status for key, status in statuses.failing.items() if key in statuses.not_failing}


def _settle(statuses: dict[str, TestStatus]) -> dict[str, TestStatus]:
    """A plain dict in which a test reported both failing and not failing counts as failing.

    No runner reports a passing test as FAILED or ERROR, so a failing report is evidence
    the test failed; a passing report can come from anything that writes to the log.
    """
    settled = dict(statuses)
    settled.update(conflicting_tests(statuses))
    return settled


def _status_word(token: str) -> TestStatus | None:
    return TestStatus(token) if token in _STATUS_WORDS else None


def _starts_with_status(line: str) -> bool:
    return line.startswith(_STATUS_WORDS)


# pytest -rA prints `SKIPPED [2] tests/x.py:10: reason` for skips grouped by location:
# the bracketed count is not a test name.
_SKIP_COUNT = re.compile(r"^\[\d+\]$")


def _is_skip_count(status: str, name: str) -> bool:
    return status == TestStatus.SKIPPED and _SKIP_COUNT.match(name) is not None


def _pytest_first_token(
    text: str,
    *,
    rewrite: Callable[[str], str] | None = None,
    rename: Callable[[str], str] | None = None,
) -> dict[str, TestStatus]:
    """Summary lines `STATUS name ...`, the name being the first whitespace token."""
    statuses = _Reported()
    for line in text.split("\n"):
        if rewrite is not None:
            line = rewrite(line)
        if not _starts_with_status(line):
            continue
        if line.startswith(TestStatus.FAILED):
            # `FAILED id - message`: swebench drops every " - " before taking the first
            # token; done identically so ids containing " - " get identical keys.
            line = line.replace(" - ", " ")
        tokens = line.split()
        if len(tokens) < 2 or _is_skip_count(tokens[0], tokens[1]):
            continue
        status = _status_word(tokens[0])
        if status is not None:
            statuses[tokens[1] if rename is None else rename(tokens[1])] = status
    return statuses


def _parse_pytest(text: str) -> dict[str, TestStatus]:
    return _pytest_first_token(text)


def _mouse_buttons_by_value(line: str) -> str:
    # Parametrized ids print enum members by name on some matplotlib/Python versions and by
    # value on others; the lists use the values.
    return line.replace("MouseButton.LEFT", "1").replace("MouseButton.RIGHT", "3")


def _parse_matplotlib(text: str) -> dict[str, TestStatus]:
    return _pytest_first_token(text, rewrite=_mouse_buttons_by_value)


# `[a/b/c.py]`-style options keep only the basename: absolute paths differ between machines.
_OPTION_RE = re.compile(r"(.*?)\[(.*)\]")


def _path_option_basename(name: str) -> str:
    found = _OPTION_RE.search(name)
    if not found:
        return name
    head, option = found.groups()
    if option.startswith("/") and not option.startswith("//") and "*" not in option:
        option = "/" + option.split("/")[-1]
    return f"{head}[{option}]"


def _parse_pytest_options(text: str) -> dict[str, TestStatus]:
    return _pytest_first_token(text, rename=_path_option_basename)


_ANSI_SGR = re.compile(r"\x1b\[[0-9;]*m")
_BARE_SGR = re.compile(r"\[(\d+)m")
_CONTROL_CHARS = str.maketrans("", "", "".join(chr(c) for c in range(1, 32)))


def _clean_v2(line: str) -> str:
    """Colour codes and control characters out, as tox/sphinx/astropy output needs."""
    line = _ANSI_SGR.sub("", line)
    # swebench's own clean-up, kept for identical keys (it also eats `[12m` inside ids).
    line = _BARE_SGR.sub("", line)
    return line.translate(_CONTROL_CHARS)


def _parse_pytest_v2(text: str) -> dict[str, TestStatus]:
    """Summary lines `STATUS rest of line`, and verbose `name ... STATUS` line endings."""
    statuses = _Reported()
    for raw in text.split("\n"):
        line = _clean_v2(raw)
        if _starts_with_status(line):
            if line.startswith(TestStatus.FAILED):
                line = line.split(" - ", 1)[0]
            tokens = line.split()
            if len(tokens) >= 2 and not _is_skip_count(tokens[0], tokens[1]):
                status = _status_word(tokens[0])
                if status is not None:
                    statuses[" ".join(tokens[1:])] = status
        elif line.endswith(_STATUS_WORDS):
            # pytest -v without -rA (older astropy/sphinx setups): `path::test PASSED`
            tokens = line.split()
            if len(tokens) >= 2:
                status = _status_word(tokens[-1])
                if status is not None:
                    statuses[" ".join(tokens[:-1])] = status
    return statuses


# ---------------------------------------------------------------------------------------
# django's runtests.py --verbosity 2

_DJANGO_PASS_SUFFIXES = (" ... ok", " ... OK", " ...  OK")
# One instance (django__django-7188) prints a migration line into the test line; swebench
# special-cases exactly this prefix and so do we, so both read that log identically.
_DJANGO_MIGRATION_INTERLEAVE = "Applying sites.0002_alter_domain_unique...test_no_migrations"
# A few long prints land between `name ...` and `ok`; the status then sits on a line of its
# own after them. Each pattern comes with a cheap literal-led guard: the full patterns try
# every line start, and most logs hold none of these prints.
_DJANGO_SPLIT_OK: tuple[tuple[re.Pattern[str], re.Pattern[str]], ...] = (
    (
        re.compile(r"\.\.\.\sTesting against Django installed in"),
        re.compile(
            r"^(.*?)\s\.\.\.\sTesting against Django installed in ((?s:.*?)) silenced\)\.\nok$",
            re.MULTILINE,
        ),
    ),
    (
        re.compile(r"\.\.\.\sInternal Server Error: /"),
        re.compile(r"^(.*?)\s\.\.\.\sInternal Server Error: /(.*)/\nok$", re.MULTILINE),
    ),
    (
        re.compile(r"\.\.\.\sSystem check identified no issues \(0 silenced\)\nok"),
        re.compile(r"^(.*?)\s\.\.\.\sSystem check identified no issues \(0 silenced\)\nok$", re.MULTILINE),
    ),
)


def _parse_django(text: str) -> dict[str, TestStatus]:
    statuses = _Reported()
    last_described: str | None = None  # the latest `description ...` seen, for a lone `ok`
    for raw in text.split("\n"):
        line = raw.strip()
        if "--version is equivalent to version" in line:
            # a test whose description spans lines; its status never shares its line
            statuses["--version is equivalent to version"] = TestStatus.PASSED
        if " ... " in line:
            last_described = line.split(" ... ")[0]
        for suffix in _DJANGO_PASS_SUFFIXES:
            if line.endswith(suffix):
                if line.startswith(_DJANGO_MIGRATION_INTERLEAVE):
                    line = line.split("...", 1)[-1].strip()
                statuses[line.rsplit(suffix, 1)[0]] = TestStatus.PASSED
                break
        if " ... skipped" in line:
            statuses[line.split(" ... skipped")[0]] = TestStatus.SKIPPED
        if line.endswith(" ... FAIL"):
            statuses[line.split(" ... FAIL")[0]] = TestStatus.FAILED
        if line.startswith("FAIL:"):
            words = line.split()
            if len(words) > 1:
                statuses[words[1]] = TestStatus.FAILED
        if line.endswith(" ... ERROR"):
            statuses[line.split(" ... ERROR")[0]] = TestStatus.ERROR
        if line.startswith("ERROR:"):
            words = line.split()
            if len(words) > 1:
                statuses[words[1]] = TestStatus.ERROR
        if line.startswith("ok") and last_described is not None:
            # `name ... ` then the test's own output, then `ok` on a later line
            statuses[last_described] = TestStatus.PASSED
    for guard, pattern in _DJANGO_SPLIT_OK:
        if guard.search(text) is None:
            continue
        for found in pattern.finditer(text):
            statuses[found.group(1)] = TestStatus.PASSED
    return statuses


# ---------------------------------------------------------------------------------------
# sympy's bin/test --verbose

# `____ sympy/core/tests/test_x.py:test_y ____` heads each failure's traceback
_SYMPY_FAILURE_HEADER = re.compile(r"(_*) (.*)\.py:(.*) (_*)")


def _parse_sympy(text: str) -> dict[str, TestStatus]:
    statuses = _Reported()
    for found in _SYMPY_FAILURE_HEADER.findall(text):
        statuses[f"{found[1]}.py:{found[2]}"] = TestStatus.FAILED
    for raw in text.split("\n"):
        line = raw.strip()
        if not line.startswith("test_"):
            continue
        if line.endswith(" E"):
            statuses[line.split()[0]] = TestStatus.ERROR
        if line.endswith(" F"):
            statuses[line.split()[0]] = TestStatus.FAILED
        if line.endswith(" ok"):
            statuses[line.split()[0]] = TestStatus.PASSED
    return statuses


# ---------------------------------------------------------------------------------------
# registry

_PARSERS: dict[str, Callable[[str], dict[str, TestStatus]]] = {
    "pytest": _parse_pytest,
    "pytest_v2": _parse_pytest_v2,
    "pytest_options": _parse_pytest_options,
    "matplotlib": _parse_matplotlib,
    "django": _parse_django,
    "sympy": _parse_sympy,
}

# Names swebench gives the same families (its `parse_log_<name>` registry keys, without the
# prefix), so a SWE-bench row's `log_parser` field selects the right one.
_ALIASES: dict[str, str] = {
    "astropy": "pytest_v2",
    "scikit": "pytest_v2",
    "sklearn": "pytest_v2",
    "scikit-learn": "pytest_v2",
    "sphinx": "pytest_v2",
    "xarray": "pytest",
    "astroid": "pytest",
    "flask": "pytest",
    "marshmallow": "pytest",
    "pvlib": "pytest",
    "pyvista": "pytest",
    "sqlfluff": "pytest",
    "pydicom": "pytest_options",
    "requests": "pytest_options",
    "pylint": "pytest_options",
}

# swebench's MAP_REPO_TO_PARSER for the repositories whose families are implemented here
# (the 8 SWE-Bench-CL repositories first).
_REPO_PARSERS: dict[str, str] = {
    "django/django": "django",
    "sympy/sympy": "sympy",
    "sphinx-doc/sphinx": "pytest_v2",
    "matplotlib/matplotlib": "matplotlib",
    "scikit-learn/scikit-learn": "pytest_v2",
    "astropy/astropy": "pytest_v2",
    "pydata/xarray": "pytest",
    "pytest-dev/pytest": "pytest",
    "marshmallow-code/marshmallow": "pytest",
    "pallets/flask": "pytest",
    "psf/requests": "pytest_options",
    "pvlib/pvlib-python": "pytest",
    "pydicom/pydicom": "pytest_options",
    "pylint-dev/astroid": "pytest",
    "pylint-dev/pylint": "pytest_options",
    "pyvista/pyvista": "pytest",
    "sqlfluff/sqlfluff": "pytest",
}


def parser_names() -> tuple[str, ...]:
    """The canonical parser names `parse_log` accepts (aliases aside)."""
    return tuple(_PARSERS)


def canonical_parser(name: str) -> str:
    """`pytest`, `parse_log_scikit`, `sphinx`, ... -> the canonical family name."""
    key = name.strip()
    key = key.removeprefix("parse_log_")
    key = _ALIASES.get(key, key)
    if key not in _PARSERS:
        raise SweclError(
            f"unknown log parser {name!r}: use one of {', '.join(_PARSERS)} "
            f"(or a swebench name such as parse_log_pytest)"
        )
    return key


def parser_for_repo(repo: str) -> str:
    """The parser swebench uses for `repo` ("owner/name"), as a canonical name."""
    try:
        return _REPO_PARSERS[repo]
    except KeyError:
        raise SweclError(
            f"no log parser is known for repo {repo!r}: give log_parser explicitly "
            f"(one of {', '.join(_PARSERS)})"
        ) from None


def parse_log(text: str, parser: str) -> dict[str, TestStatus]:
    """Every test result `text` states, read by the named parser family.

    `text` is parsed as given; `parse_test_log` first cuts a whole eval log down to the
    test run. A name reported twice keeps its last status (pytest's summary comes after
    its progress lines; django's FAIL:/ERROR: recap after the per-test lines), except
    that a name reported both failing (FAILED, ERROR) and not failing counts as failing
    (`log_conflicts` lists those names): a pass printed after the runner's report, by the
    code under test, cannot overwrite the report's failure.
    """
    return _settle(_PARSERS[canonical_parser(parser)](text))


def log_conflicts(text: str, parser: str) -> dict[str, tuple[TestStatus, TestStatus]]:
    """Names `text` reports both failing and not failing: name -> (the last status, which
    swebench's reading keeps, and the failing status `parse_log` keeps)."""
    raw = _PARSERS[canonical_parser(parser)](text)
    return {key: (raw[key], failing) for key, failing in conflicting_tests(raw).items()}


# ---------------------------------------------------------------------------------------
# the test-run region of a log

Framing = Literal["markers", "xtrace", "whole"]


@dataclass(frozen=True, slots=True)
class LogRegion:
    """The part of a log that is the test command's own output, and what the log says of it.

    framing: how it was found: `markers` (swebench/swecl start and end lines), `xtrace`
    (between the `+ <test command>` trace line and the closing `+ git checkout`), or
    `whole` (no framing found: the text is the test output, as the grader hands it over).
    complete: False when a start marker has no end marker (the run was cut short).
    exit_code: the test command's exit status if the log records one.
    fault: the first swebench fault marker (patch apply failed, timeout, ...) in the log.
    """

    text: str
    framing: Framing
    complete: bool = True
    exit_code: int | None = None
    fault: str | None = None


@dataclass(frozen=True, slots=True)
class ParsedLog:
    """The statuses a log states, and the region they were read from."""

    statuses: dict[str, TestStatus]
    region: LogRegion
    # True when the region held no result and the whole log was read instead (swebench
    # does the same: some runners print results outside the markers).
    whole_log_fallback: bool = False


def frame_test_output(output: str, exit_code: int | None) -> str:
    """swecl's framing of a test command's output: swebench's markers and exit-code line.

    The grader stores this as the test log blob, so the exit status travels with the log
    and swebench's own grading can read swecl's logs too.
    """
    body = output if output.endswith("\n") or not output else output + "\n"
    lines = [START_MARKER, "\n", body, END_MARKER, "\n"]
    if exit_code is not None:
        lines += [f"{EXIT_CODE_MARKER}: {exit_code}", "\n"]
    return "".join(lines)


def _line_end(text: str, index: int) -> int:
    end = text.find("\n", index)
    return len(text) if end < 0 else end + 1


def _line_start(text: str, index: int) -> int:
    return text.rfind("\n", 0, index) + 1


_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def _command_words(command: str) -> list[str] | None:
    """A command's words without leading `VAR=value` assignments (bash traces those apart)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    while words and _ASSIGNMENT.match(words[0]):
        words = words[1:]
    return words or None


def _xtrace_region(text: str, test_cmd: str) -> str | None:
    wanted = _command_words(test_cmd)
    if wanted is None:
        return None
    program = wanted[0]
    lines = text.split("\n")
    start: int | None = None
    for number, line in enumerate(lines):
        # One `+`: a command of the eval script itself, not of a function it called. The
        # substring test goes first because shlex is slow and a patch has many `+` lines.
        if line.startswith("+ ") and program in line and _command_words(line[2:]) == wanted:
            start = number
    if start is None:
        return None
    end = len(lines)
    for number in range(len(lines) - 1, start, -1):
        if lines[number].startswith("+ git checkout "):
            end = number
            break
    return "\n".join(lines[start + 1 : end])


def find_test_output(log: str, *, test_cmd: str | None = None) -> LogRegion:
    """Find the test command's output inside an eval log (see `LogRegion`)."""
    fault = next((marker for marker in FAULT_MARKERS if marker in log), None)

    def exit_code_after(index: int) -> int | None:
        found = _EXIT_CODE_RE.search(log, index)
        return int(found.group(1)) if found else None

    start = log.find(START_MARKER)
    if start >= 0:
        body_start = _line_end(log, start)
        end = log.find(END_MARKER, body_start)
        if end < 0:
            return LogRegion(log[body_start:], "markers", False, exit_code_after(0), fault)
        # the exit code is written after the end marker: text the tests printed cannot fake it
        exit_code = exit_code_after(end)
        return LogRegion(log[body_start : _line_start(log, end)], "markers", True, exit_code, fault)
    exit_code = exit_code_after(0)
    if test_cmd:
        region = _xtrace_region(log, test_cmd)
        if region is not None:
            return LogRegion(region, "xtrace", True, exit_code, fault)
    return LogRegion(log, "whole", True, exit_code, fault)


def parse_test_log(log: str, parser: str, *, test_cmd: str | None = None) -> ParsedLog:
    """Cut `log` to its test run (`find_test_output`) and parse that with `parser`."""
    region = find_test_output(log, test_cmd=test_cmd)
    statuses = parse_log(region.text, parser)
    if not statuses and region.framing != "whole":
        return ParsedLog(parse_log(log, parser), region, whole_log_fallback=True)
    return ParsedLog(statuses, region)
