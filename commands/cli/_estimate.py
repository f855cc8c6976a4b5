"""`swecl run --estimate`: the estimate job's document as text (or as one JSON document)."""

from __future__ import annotations

from typing import Any

import click
import msgspec

from projections import duration_text as duration
from projections import tokens_text


def _tokens(n: float | None) -> str:
    return "unknown" if n is None else tokens_text(n)


def _usd(x: float | None) -> str:
    return "unknown" if x is None else f"${x:,.2f}"


def print_estimate(doc: dict[str, Any], *, as_json: bool) -> None:
    if as_json:
        click.echo(msgspec.json.encode(doc).decode())
        return
    who = doc["agent"] + (f" with {doc['model']}" if doc["model"] else "")
    click.echo(f"estimate of this run ({who}); nothing ran and nothing was written")
    _wrapped(f"rests on: {doc['says']}")
    recorded = doc.get("recorded")
    if recorded:
        for repo, r in {**recorded["by_repo"], "(all)": recorded["overall"]}.items():
            _wrapped(f"  {repo}: {r['seconds']:.1f}s, {_usd(r['usd']) if r['usd_attempts'] else 'no cost reported'}, "
                       f"{_tokens(r['tokens']) + ' tokens' if r['tokens_attempts'] else 'no tokens reported'} "
                       f"an attempt ({r['attempts']} attempts)")
        if recorded["env_builds"] and recorded["env_build_s"] >= 1:  # not a cache's look-up
            _wrapped(f"  left out: {recorded['env_builds']} test environment builds on record (about "
                     f"{recorded['env_build_s']:.0f}s each), made once per cache and reused by later runs")
    line = "{:<16} {:<18} {:>8} {:>10} {:>10} {:>12}"
    click.echo(line.format("stage", "pass", "attempts", "time", "tokens", "dollars"))
    for run in doc["runs"]:
        for i, p in enumerate(run["passes"]):
            click.echo(line.format(run["stage"] if i == 0 else "", p["pass"], p["attempts"], duration(p["seconds"]),
                                   _tokens(p["tokens"]), _usd(p["usd"])))
    total = doc["total"]
    click.echo(line.format("total", f"{len(doc['runs'])} run(s)", total["attempts"], duration(total["attempt_seconds"]),
                           _tokens(total["tokens"]), _usd(total["usd"])))
    workers = total["workers"]
    _wrapped(f"wall time: about {duration(total['wall_seconds'])} ({workers} attempt{'s' if workers > 1 else ''} "
             "at once, from --jobs and --task-jobs as the sequences and cores allow); rough: "
             "a model's speed, retries and cache hits vary")
    budget = doc.get("budget")
    if budget is not None:
        _wrapped(f"--budget-usd {budget['usd']:g} covers: {budget['says']}")


def _wrapped(text: str) -> None:
    """A long line in lines of at most 100 columns, the rest indented."""
    import textwrap

    click.echo(textwrap.fill(text, width=100, subsequent_indent="  "))
