"""Pieces every CLI command shares: the results dir, JSON output, option types."""

from __future__ import annotations

import json
import sys
from typing import Any

import click
import msgspec

from projections import Results, resolve_results_dir

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class ResultsParam(click.ParamType):
    name = "DIR"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        return value


def results_of(ctx: click.Context) -> Results:
    """The experiment root chosen on the group (`--results`), env or default."""
    root = ctx.find_root().obj
    return Results(resolve_results_dir(root))


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
