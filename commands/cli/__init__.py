"""The `swecl` command line: a thin click layer over the command handlers.

Every command works on the experiment root `./results/` (its `ledger.db` inside),
overridable with `--results DIR` or `SWECL_RESULTS`. A user error is one line on
stderr and a non-zero exit, never a traceback.
"""

from __future__ import annotations

import errno
import importlib
import os
import sys
import traceback
from typing import Any, NoReturn

import click

from ledger import SweclError, Terminated, sqlite

from .. import _stops

from ._common import CONTEXT_SETTINGS, ResultsParam

# Every command: (its module under commands.cli, its name there). A module is imported
# when one of its commands is called or listed (`--help`), not at every start: `swecl
# runs` need not load the graders and the run machinery, only what it reads with.
_COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("_run", "run_cmd"),
    "runs": ("_metrics", "runs_cmd"),
    "metrics": ("_metrics", "metrics_cmd"),
    "compare": ("_compare", "compare_cmd"),
    "report": ("_report", "report_cmd"),
    "view": ("_view", "view_cmd"),
    "audit": ("_audit", "audit_cmd"),
    "funnel": ("_funnel", "funnel_cmd"),
    "counterfactual": ("_counterfactual", "counterfactual_cmd"),
    "replay": ("_replay", "replay_cmd"),
    "export": ("_export", "export_cmd"),
    "merge": ("_merge", "merge_cmd"),
    "bundle": ("_bundle", "bundle_cmd"),
    "check": ("_bundle", "check_cmd"),
    "keygen": ("_bundle", "keygen_cmd"),
    "leaderboard": ("_bundle", "leaderboard_cmd"),
    "sequences": ("_inputs", "sequences_cmd"),
    "show": ("_show", "show_cmd"),  # `show VERSION TASK` (an attempt), or `show TASK` (_inputs' benchmark task)
    "agents": ("_inputs", "agents_cmd"),
    "grade": ("_grade", "grade_cmd"),
    "regrade": ("_grade", "regrade_cmd"),
    "verdict": ("_grade", "verdict_cmd"),
    "validate": ("_grade", "validate_cmd"),
    "dream": ("_memory", "dream_cmd"),
    "memory": ("_memory", "memory_group"),
    "env": ("_env", "env_group"),
    "init": ("_ledger", "init_cmd"),
    "log": ("_ledger", "log_cmd"),
    "verify": ("_ledger", "verify_cmd"),
}


class _Swecl(click.Group):
    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        # `swecl --version 2 metrics` meant a run version, but before the command
        # `--version` is the program's flag: click would print 0.1.0 and exit 0.
        rest = iter(args)
        for arg in rest:
            if arg == "--results":
                next(rest, None)
            elif arg == "--version":
                if next(rest, None) is not None:
                    raise SweclError("--version before a command prints swecl's own version and takes nothing after "
                                     "it; for a run version put it after the command (swecl metrics --version 2)")
                break
            elif not arg.startswith("-"):
                break  # the command: what follows is its own
        return super().parse_args(ctx, args)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_COMMANDS)  # as click lists the commands of a group

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in _COMMANDS:
            return None
        module, name = _COMMANDS[cmd_name]
        command: click.Command = getattr(importlib.import_module(f"{__name__}.{module}"), name)
        return command

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.exceptions.NoSuchCommand as exc:
            # click draws its "Did you mean" from the commands it holds: here, none until used.
            raise click.exceptions.NoSuchCommand(exc.command_name, possibilities=self.list_commands(ctx),
                                                 ctx=ctx) from None


@click.group(cls=_Swecl, context_settings=CONTEXT_SETTINGS)
@click.option(
    "--results",
    "results",
    type=ResultsParam(),
    default=None,
    metavar="DIR",
    help="Experiment root holding ledger.db (default: $SWECL_RESULTS or ./results).",
)
@click.version_option(package_name="swecl", prog_name="swecl")
@click.pass_context
def cli(ctx: click.Context, results: Any) -> None:
    """swecl: a continual-learning benchmark harness for coding agents.

    Runs an agent task by task over ordered sequences of SWE-bench tasks, grades every
    patch, lets a memory substrate accumulate, and scores learning, retention and
    transfer. Every action is an event in one SQLite ledger; everything else is
    rebuilt from it.
    """
    ctx.obj = results


def main(argv: list[str] | None = None) -> None:
    # Ctrl-C, and `kill`, a batch scheduler's time limit, a container stop (SIGTERM): the
    # same clean stop, whatever dispositions and mask this process inherited (_stops).
    previous = _stops.install()
    try:
        _main(argv)
    finally:
        _stops.restore(previous)


def _main(argv: list[str] | None) -> None:
    try:
        # Without standalone mode click returns a command's exit code instead of exiting.
        code = cli.main(args=argv, prog_name="swecl", standalone_mode=False)
        if isinstance(code, int) and code:
            sys.exit(code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.Abort as exc:
        if isinstance(exc.__cause__, KeyboardInterrupt):  # click turns KeyboardInterrupt into Abort
            _stopped(exc.__cause__)
        click.echo("swecl: aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except SweclError as exc:
        click.echo(f"swecl: error: {_one_line(str(exc))}", err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt as exc:
        _stopped(exc)
    except sqlite.CorruptError:
        # Only the ledger is opened with apsw: a malformed page a command met past its checks.
        click.echo("swecl: error: the ledger is damaged: SQLite reports a malformed database image; "
                   "run `swecl verify`", err=True)
        sys.exit(2)
    except BrokenPipeError:
        # `swecl log | head`: the reader left; not an error of ours.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)
    except Exception as exc:  # a bug: say so in one line, full traceback on request
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG):
            # A full disk, a quota or a read-only mount that a writer did not word itself:
            # the user's to fix (exit 2, like every SweclError), not a bug of ours.
            where = f" {exc.filename}" if exc.filename else ""
            click.echo(f"swecl: error: cannot write{where}: {exc.strerror or exc}", err=True)
            sys.exit(2)
        if os.environ.get("SWECL_DEBUG"):
            traceback.print_exc()
        click.echo(
            f"swecl: internal error: {type(exc).__name__}: {_one_line(str(exc))} (set SWECL_DEBUG=1 for the traceback)",
            err=True,
        )
        sys.exit(70)


def _stopped(exc: KeyboardInterrupt) -> NoReturn:
    """Ctrl-C (exit 130) or SIGTERM (143), said in one line."""
    if isinstance(exc, _stops.StoppedAfterFinish):
        click.echo(exc.message(), err=True)
        sys.exit(143 if exc.terminated else 130)
    terminated = isinstance(exc, Terminated)
    click.echo("swecl: terminated (SIGTERM)" if terminated else "swecl: interrupted", err=True)
    sys.exit(143 if terminated else 130)


def _one_line(text: str) -> str:
    return " ".join(text.split())
