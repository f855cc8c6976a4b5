"""`swecl bundle`, `swecl check`, `swecl keygen`: results another person can check."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ._common import echo_json, experiment_of, parse_python_paths, parse_repo_sources, results_option


@click.command("bundle")
@results_option
@click.argument("versions", nargs=-1, required=True, metavar="VERSION...")
@click.option("--out", "out", required=True, type=click.Path(dir_okay=False, path_type=Path), metavar="FILE",
              help="The bundle file to write (never overwritten).")
@click.option("--with", "with_runs", multiple=True, metavar="V",
              help="Another run to carry (a base or validation run the numbers are compared against); repeatable.")
@click.option("--sign", "key", default=None, type=click.Path(dir_okay=False, path_type=Path), metavar="KEY",
              help="Sign the bundle with this Ed25519 private key (`swecl keygen`).")
@click.option("--dataset", default=None, metavar="X", help="The dataset the runs ran on, when it moved since.")
@click.option("--rows", default=None, metavar="FILE", help="The rows that complete that dataset's manifest.")
@click.option("--cache-dir", default=None, metavar="DIR", help="The environment cache whose locks to carry.")
@click.option("--json", "as_json", is_flag=True, help="Print what was bundled as JSON.")
@click.pass_context
def bundle_cmd(ctx: click.Context, versions: tuple[str, ...], out: Path, with_runs: tuple[str, ...], key: Path | None,
               dataset: str | None, rows: str | None, cache_dir: str | None, as_json: bool) -> None:
    """Write runs VERSION... and everything their numbers stand on into one file.

    The bundle is a swecl ledger: the runs' events and blobs, the runs they are compared
    against (base and oracle candidates), seeded or forked from, every validation, the
    environment checks, then a sealing event naming a manifest: the source ledger's head,
    the dataset's hashes and the task rows used, the environments' locks, the memory
    servers, the metrics as `swecl metrics --json` prints them. Before sealing, the
    metrics are computed again from the bundle alone and must be the same. With --sign
    the manifest is signed (Ed25519). No secret is ever bundled: a bundle whose events
    hold one is refused. Check one with `swecl check FILE`.
    """
    report = experiment_of(ctx).bundle(list(versions), out=out, with_runs=with_runs, key=key, dataset=dataset,
                                       rows=rows, cache_dir=cache_dir)
    if as_json:
        echo_json(report.document())
        return
    others = ", ".join(f"{v} ({why})" for v, why in report.carried.items() if why != "bundled")
    click.echo(f"bundled run{'s' if len(report.runs) != 1 else ''} {', '.join(report.runs)} into {report.path}: "
               f"{report.events} events, {report.blobs} blobs, {report.size / 1e6:.1f} MB")
    if others:
        click.echo(f"carried along: {others}")
    for note in report.notes:
        click.echo(note)
    signed = f"signed by key {report.fingerprint}" if report.fingerprint else "not signed (--sign KEY signs it)"
    click.echo(f"head hash {report.head_hash}; {signed}")
    click.echo(f"check it: swecl check {report.path}{' --key ' + report.fingerprint[:16] if report.fingerprint else ''}")


@click.command("check")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE")
@click.option("--key", "keys", multiple=True, metavar="FINGERPRINT",
              help="Require a signature by this key (its fingerprint, 16+ hex digits, or its .pub file); repeatable.")
@click.option("--regrade", is_flag=True, help="Grade every bundled patch again on this host and compare verdicts.")
@click.option("--repo-source", "repo_sources", multiple=True, metavar="OWNER/NAME=PATH_OR_URL",
              help="Where to clone a repo from (--regrade).")
@click.option("--python", "pythons", multiple=True, metavar="VERSION=PATH", help="Interpreter for a Python version.")
@click.option("--cache-dir", default=None, metavar="DIR",
              help="Environment cache for --regrade (default: a fresh one, removed afterwards).")
@click.option("--jobs", type=int, default=1, show_default=True, metavar="N", help="Tasks graded at once (--regrade).")
@click.option("--json", "as_json", is_flag=True, help="Print the check as JSON.")
def check_cmd(path: Path, keys: tuple[str, ...], regrade: bool, repo_sources: tuple[str, ...],
              pythons: tuple[str, ...], cache_dir: str | None, jobs: int, as_json: bool) -> None:
    """Check a bundle: its hash chain and blobs, its seal, its signature, and every number.

    Rebuilds every projection from the bundle's events and compares the metrics,
    outcomes and verdicts with those recorded, naming the first that differs. With
    --regrade, grades every recorded patch again in fresh environments (the task rows and
    repositories as the bundle names them) and reports per task: the same verdict, a
    different one, or infrastructure. Exit 0 when everything holds, 1 otherwise.
    """
    from commands import Experiment

    if jobs < 1:
        raise click.BadParameter("must be 1 or more", param_hint="--jobs")
    report = Experiment.check(path, keys=keys, regrade=regrade, repo_sources=parse_repo_sources(repo_sources),
                              cache_dir=cache_dir, jobs=jobs, python_paths=parse_python_paths(pythons),
                              say=lambda line: click.echo(f"swecl: {line}", err=True))
    if as_json:
        echo_json(report.document())
    else:
        for line in report.passed:
            click.echo(f"ok  {line}")
        if report.regraded is not None:
            _print_regrade(report.regraded)
    if report.problem is not None:
        click.echo(f"swecl: check failed: {report.problem}", err=True)
    if not report.ok:
        raise click.exceptions.Exit(1)
    if not as_json:
        click.echo(f"{path}: the bundle holds")


def _print_regrade(regraded: Any) -> None:
    """The tasks that did not agree, one line each, then the counts."""
    for t in regraded.tasks:
        if t.agreement != "same":
            click.echo(f"    run {t.run} {t.pass_} {t.instance_id}: {t.agreement} (recorded {t.recorded}, "
                       f"here {t.regraded})")
    envs: dict[str, int] = {}
    for state in regraded.environments.values():
        envs[state] = envs.get(state, 0) + 1
    if envs:
        click.echo("    environments against the bundle's locks: " + ", ".join(f"{n} {s}" for s, n in sorted(envs.items())))
    counts = ", ".join(f"{n} {what}" for what, n in sorted(regraded.counts().items()))
    mark = "ok " if regraded.agrees else "BAD"
    click.echo(f"{mark} regraded {regraded.grades} distinct patches on this host: {counts}")


@click.command("keygen")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE")
def keygen_cmd(path: Path) -> None:
    """Make an Ed25519 key pair for signing bundles: FILE (private, mode 0600) and FILE.pub.

    Keep FILE to yourself; give others the fingerprint printed here (or FILE.pub) so
    `swecl check --key` can tell your bundles from anyone else's.
    """
    from commands import Experiment

    pair = Experiment.keygen(path)
    click.echo(f"private key: {pair.private} (keep it to yourself)")
    click.echo(f"public key:  {pair.public}")
    click.echo(f"fingerprint: {pair.fingerprint}")


@click.command("leaderboard")
@click.argument("bundles", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path), metavar="FILE...")
@click.option("--out", "out", required=True, type=click.Path(file_okay=False, path_type=Path), metavar="DIR",
              help="The directory to write index.html, the bundles and their reports into.")
@click.option("--key", "keys", multiple=True, metavar="FINGERPRINT",
              help="Only bundles signed by this key pass their check (repeatable); others show unranked.")
def leaderboard_cmd(bundles: tuple[Path, ...], out: Path, keys: tuple[str, ...]) -> None:
    """Rank the runs of bundles on one static, offline page: DIR/index.html.

    Every bundle is checked first (as `swecl check` without --regrade); its runs are
    ranked per dataset and sequence by the initial-pass resolve rate with its Wilson
    interval (CL-Score beside it), each row with its memory system, agent, model, cost
    per solved task, whether its bundle was checked and by which key, and links to the
    bundle and its report. Runs of different datasets, passes or formula versions are
    never ranked together; the page says why. A bundle that fails its check is listed
    unranked, with why.
    """
    from commands import Experiment

    board = Experiment.leaderboard(list(bundles), out=out, keys=keys,
                                   say=lambda line: click.echo(f"swecl: {line}", err=True))
    for line in board.failed:
        click.echo(f"swecl: check failed: {line}", err=True)
    click.echo(f"{board.page}: {board.rows} run{'s' if board.rows != 1 else ''} of {board.bundles} "
               f"bundle{'s' if board.bundles != 1 else ''}" + (f", {len(board.failed)} failed their check"
                                                               if board.failed else ""))
