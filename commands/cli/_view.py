"""`swecl view [--port P] [--host H]`: the core's view of the ledger, served on a local port
(`commands._view_server`)."""

from __future__ import annotations

import sys

import click

from ledger import Terminated

from ._common import experiment_of, results_option

DEFAULT_PORT = 8421


@click.command("view")
@results_option
@click.option("--port", type=click.IntRange(0, 65535), default=DEFAULT_PORT, show_default=True, metavar="P",
              help="TCP port to listen on (0: any free port; the address is printed).")
@click.option("--host", default="127.0.0.1", show_default=True, metavar="H",
              help="Address to bind. The default serves this machine only; another address serves the network.")
@click.pass_context
def view_cmd(ctx: click.Context, port: int, host: str) -> None:
    """A local web app over the ledger, read-only and live: runs -> run -> a(i,j) -> task.

    Lists the runs (as `swecl runs`, with headline metrics and the progress and time left
    of a running run), each run's metrics and a(i,j) matrices, a sequence's tasks, and one
    attempt's evidence as `swecl show` gives it: FAIL_TO_PASS/PASS_TO_PASS results, the
    patch, the test output, the recalled memories with leak flags, the transcript. Pages
    follow the ledger while a run appends to it. Ctrl-C stops the server.
    """
    from .._view_server import listen  # http.server (and http.client, ssl): not on every swecl start-up

    experiment = experiment_of(ctx)
    view = experiment.view(log_error=lambda text: sys.stderr.write(f"swecl view: {text}\n"))
    server, url = listen(view, host, port)
    click.echo(f"swecl view: serving {experiment.ledger_path} at {url} (Ctrl-C to stop)")
    sys.stdout.flush()
    try:
        server.serve_forever(poll_interval=0.5)
    except Terminated:
        raise
    except KeyboardInterrupt:
        click.echo("swecl view: stopped", err=True)
    finally:
        server.server_close()
