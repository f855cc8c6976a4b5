"""Pieces every CLI command shares: the results dir, JSON output, option types, and the
parsers of options several commands take (--lambda, --repo-source, --python)."""

from __future__ import annotations

import json
import math
import re
import sys
from typing import Any

import click
import msgspec

from commands import Experiment
from ledger import SweclError
from projections import canonical_version
from projections.metrics import Lambdas

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class ResultsParam(click.ParamType):
    name = "DIR"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        return value


class PassParam(click.ParamType):
    """A pass of a run: initial, retest, baseline, or retest-K (a `--retest-every` row).
    A typo is refused: a filter that matches nothing would print nothing and exit 0."""

    name = "P"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if value in ("initial", "retest", "baseline") or re.fullmatch(r"retest-[1-9][0-9]*", str(value)):
            return value
        self.fail(f"{value!r} is not a pass: initial, retest, baseline or retest-K (a --retest-every row)", param, ctx)


def experiment_of(ctx: click.Context) -> Experiment:
    """The application core over the results folder chosen on the group (`--results`),
    env or default: what every command calls."""
    return Experiment(ctx.find_root().obj)


def _remember_results(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
    if value is not None:
        ctx.find_root().obj = value


results_option = click.option(
    "--results",
    type=ResultsParam(),
    default=None,
    expose_value=False,
    is_eager=True,
    callback=_remember_results,
    metavar="DIR",
    help="Experiment root holding ledger.db (default: $SWECL_RESULTS or ./results).",
)
"""Lets `--results DIR` follow the command name too (`swecl log --results DIR`)."""


def echo_json(obj: Any) -> None:
    """One JSON document on stdout (msgspec handles Structs, bytes -> base64)."""
    sys.stdout.write(msgspec.json.encode(obj).decode() + "\n")


def echo_json_line(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n")


def run_version(ctx: click.Context, _param: click.Parameter, value: Any) -> Any:
    """A run version as users type it: `v2` names run 2, as its folder `results/v2` does
    (a run really named `v2` keeps its name). For a VERSION argument or option, single or
    repeated."""
    if value is None:
        return value
    given = (value,) if isinstance(value, str) else tuple(value)
    if not any(len(v) > 1 and v[0] in "vV" for v in given):
        return value
    experiment = experiment_of(ctx)
    if not experiment.has_ledger():
        return value
    with experiment.reading() as reading:
        found = tuple(canonical_version(reading.ledger, v) for v in given)
    return found[0] if isinstance(value, str) else found


_LAMBDA_NAMES = {"acc": "acc", "f": "f", "fwt": "fwt", "bwt": "bwt", "aulc": "aulc"}

def parse_lambdas(values: tuple[str, ...]) -> Lambdas | None:
    if not values:
        return None
    weights: dict[str, float] = {}
    for item in values:
        name, sep, number = item.partition("=")
        key = _LAMBDA_NAMES.get(name.strip().lower())
        if not sep or key is None:
            raise SweclError(f"--lambda {item!r}: expected NAME=VALUE with NAME one of {', '.join(_LAMBDA_NAMES)}")
        try:
            value = float(number)
        except ValueError:
            raise SweclError(f"--lambda {item!r}: {number!r} is not a number") from None
        if not math.isfinite(value):
            raise SweclError(f"--lambda {item!r}: the weight must be finite")
        weights[key] = value
    return Lambdas(**weights)


def parse_repo_sources(values: tuple[str, ...]) -> dict[str, str]:
    sources: dict[str, str] = {}
    for item in values:
        name, sep, where = item.partition("=")
        if not sep or name.count("/") != 1 or not where:
            raise SweclError(f"--repo-source {item!r}: expected OWNER/NAME=PATH_OR_URL")
        sources[name] = where
    return sources


def parse_python_paths(values: tuple[str, ...]) -> dict[str, str]:
    paths: dict[str, str] = {}
    for item in values:
        version, sep, path = item.partition("=")
        if not sep or not version or not path:
            raise SweclError(f"--python {item!r}: expected VERSION=/path/to/python (e.g. 3.9=/usr/bin/python3.9)")
        paths[version] = path
    return paths
