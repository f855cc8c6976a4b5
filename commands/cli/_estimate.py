"""`swecl run --estimate`: the estimate job's document as text (or as one JSON document)."""

from __future__ import annotations

from typing import Any

import click
import msgspec


def duration(seconds: float | None) -> str:
    """`45s`, `12m05s`, `3h20m`, `2d04h`: rough, as an estimate is."""
    if seconds is None:
        return "-"
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"


def _tokens(n: float | None) -> str:
    if n is None:
        return "unknown"
    return f"{n / 1e6:.1f}M" if n >= 1e6 else f"{n / 1e3:.0f}k" if n >= 1e4 else f"{n:.0f}"


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
