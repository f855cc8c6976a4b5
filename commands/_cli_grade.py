"""`swecl verdict`: decide recorded test logs without running anything."""

from __future__ import annotations

from pathlib import Path

import click

from ._cli_common import echo_json_line


@click.command("verdict")
@click.option("--input", "input_path", required=True, type=click.Path(dir_okay=False, path_type=Path), metavar="FILE.jsonl",
              help="One line per log: {instance_id, repo, log_path, FAIL_TO_PASS, PASS_TO_PASS[, log_parser, test_exit_code]}.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line (the default prints a table).")
def verdict_cmd(input_path: Path, as_json: bool) -> None:
    """Verdicts from recorded test logs, with swebench 5.x's rules and no test run.

    Each output line: {instance_id, resolved, status, tests: {name: status}}.
    """
    from graders import verdict_lines

    rows = list(verdict_lines(input_path))  # validate every line before printing any
    if as_json:
        for row in rows:
            echo_json_line(row)
        return
    resolved = 0
    for row in rows:
        resolved += bool(row["resolved"])
        click.echo(f"{row['instance_id']}\t{row['status']}\t{len(row['tests'])} tests")
    click.echo(f"{resolved} of {len(rows)} resolved")
