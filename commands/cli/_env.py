"""`swecl env list|build|prune`: the cache of test environments per (repo, version, spec).

The jobs are `Experiment`'s (commands._jobs_grade); here: options, one call, printing."""

from __future__ import annotations

import click

from ledger import SweclError

from ._common import echo_json, experiment_of, parse_python_paths, parse_repo_sources

cache_option = click.option(
    "--cache-dir", default=None, metavar="DIR", help="The cache root (default: $SWECL_CACHE or ~/.cache/swecl)."
)


@click.group("env")
def env_group() -> None:
    """Test environments: built once per (repo, version, spec) and reused across runs."""


@env_group.command("list")
@cache_option
@click.option("--sizes", is_flag=True, help="Also measure each environment's size on disk.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def env_list_cmd(ctx: click.Context, cache_dir: str | None, sizes: bool, as_json: bool) -> None:
    """The environments in the cache."""
    listing = experiment_of(ctx).env_list(cache_dir=cache_dir, sizes=sizes)
    if as_json:
        echo_json(listing.document())
        return
    if not listing.envs:
        click.echo(f"no environments in {listing.cache}")
    for e in listing.envs:
        size = f"  {e.size_bytes / 1e6:.0f} MB" if e.size_bytes is not None else ""
        state = "" if e.complete else "  (incomplete)"
        click.echo(f"{e.key}  python {e.python_version}{size}{state}")


@env_group.command("build")
@click.argument("repo")
@click.argument("version")
@cache_option
@click.option("--repo-source", "repo_sources", multiple=True, metavar="OWNER/NAME=PATH_OR_URL",
              help="Where to clone the repository from (needed for requirements files).")
@click.option("--commit", default=None,
              help="The environment_setup_commit: requirement files are read there and packages resolve as of its "
                   "date, as grading does (default: the mirror's HEAD and today's packages, with a warning).")
@click.option("--python", "python_paths", multiple=True, metavar="VERSION=PATH", help="Interpreter for a Python version.")
@click.option("--force", is_flag=True, help="Rebuild even if a complete environment exists.")
@click.pass_context
def env_build_cmd(ctx: click.Context, repo: str, version: str, cache_dir: str | None, repo_sources: tuple[str, ...],
                  commit: str | None, python_paths: tuple[str, ...], force: bool) -> None:
    """Build (or reuse) the environment of REPO at VERSION from the shipped spec table."""
    built = experiment_of(ctx).env_build(
        repo=repo, version=version, cache_dir=cache_dir, repo_sources=parse_repo_sources(repo_sources), commit=commit,
        python_paths=parse_python_paths(python_paths), force=force, warn=lambda text: click.echo(text, err=True),
    )
    click.echo(f"{built.key}: {'built' if built.built else 'already built'} ({built.path})")
    for warning in built.warnings:
        click.echo(f"warning: {warning}")


@env_group.command("prune")
@cache_option
@click.option("--keep", multiple=True, metavar="KEY", help="Keep this environment (repeatable).")
@click.option("--keep-recent", type=int, default=0, show_default=True, help="Keep the N most recently used.")
@click.option("--dry-run", is_flag=True, help="Only say what would be removed.")
@click.pass_context
def env_prune_cmd(ctx: click.Context, cache_dir: str | None, keep: tuple[str, ...], keep_recent: int,
                  dry_run: bool) -> None:
    """Remove environments (and leftovers of interrupted builds) to free disk."""
    pruned = experiment_of(ctx).env_prune(cache_dir=cache_dir, keep=keep, keep_recent=keep_recent, dry_run=dry_run)
    verb = "would remove" if pruned.dry_run else "removed"
    for path in pruned.removed:
        click.echo(f"{verb} {path}")
    click.echo(f"{verb} {len(pruned.removed)} environment(s)")


@env_group.command("system-deps")
@click.option("--dataset", default=None, metavar="X",
              help="Whose specs: this dataset's tasks (default: every repo@version of the spec table).")
@click.option("--rows", default=None, metavar="FILE", help="SWE-bench rows that complete a manifest.")
@click.option("--repo", default=None, metavar="OWNER/NAME", help="Only this repository's specs.")
@click.option("--install", is_flag=True, help="As root: apt-get install -y the missing ones (said before it runs).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def env_system_deps_cmd(ctx: click.Context, dataset: str | None, rows: str | None, repo: str | None, install: bool,
                        as_json: bool) -> None:
    """The Debian packages the specs' set-up lines install with apt, and which this host lacks.

    The set-up's system lines never run when an environment is built (they need root);
    what they would install can decide whether a task is gradeable here (Graphviz for
    sphinx 7.x, FreeType and pkg-config for matplotlib). With --install, as root, the
    missing ones are installed with apt-get once.
    """
    from commands._env_system import install_system_deps

    deps = experiment_of(ctx).env_system_deps(dataset=dataset, rows=rows, repo=repo)
    if install and deps.missing:
        still = install_system_deps(deps.missing, lambda text: click.echo(text, err=as_json))
        if still:
            raise SweclError(f"still missing after apt-get: {' '.join(still)}")
        deps = experiment_of(ctx).env_system_deps(dataset=dataset, rows=rows, repo=repo)
    if as_json:
        echo_json(deps.document())
        return
    if not deps.checked:
        click.echo("no dpkg-query on this host: which packages are installed is not known")
    for spec in deps.specs:
        lacking = f"  missing: {' '.join(spec.missing)}" if spec.missing else ""
        click.echo(f"{spec.repo}@{spec.version}: {' '.join(spec.packages)}{lacking}")
    if deps.missing:
        click.echo(f"missing on this host: {' '.join(deps.missing)}")
        click.echo(f"install them: apt-get install -y {' '.join(deps.missing)}  (or swecl env system-deps --install "
                   "as root)")
    elif deps.checked:
        click.echo(f"all {len(deps.packages)} package(s) the set-up of {deps.source} names are installed")


@env_group.command("verify")
@click.option("--dataset", required=True, metavar="MANIFEST", help="The tasks whose versions are checked.")
@click.option("--rows", default=None, metavar="FILE", help="SWE-bench rows that complete a manifest (test patches).")
@click.option("--repo", required=True, metavar="OWNER/NAME", help="The repository.")
@click.option("--version", "versions", multiple=True, metavar="V", help="This version (repeatable; default: all of the repository's).")
@click.option("--source", default="sdist", show_default=True, metavar="sdist|DIR",
              help="The release sdist of each version from the package index, or a checkout.")
@click.option("--cutoff", default=None, metavar="DATE",
              help="The era cut-off (UTC date) when no mirror holds the version's setup commit.")
@click.option("--test", "tests", multiple=True, metavar="TEST",
              help="Also run this test module or label (repeatable; for tasks without test patches).")
@click.option("--max-tests", type=int, default=8, show_default=True, metavar="N", help="Test modules sampled per version.")
@click.option("--repo-source", "repo_sources", multiple=True, metavar="OWNER/NAME=PATH_OR_URL",
              help="Where to clone the repository from (its mirror gives the era cut-off).")
@click.option("--python", "python_paths", multiple=True, metavar="VERSION=PATH", help="Interpreter for a Python version.")
@cache_option
@click.option("--sandbox", type=click.Choice(["bwrap", "none"]), default="bwrap", envvar="SWECL_SANDBOX",
              show_default=True, help="Where the tests run: bwrap or none (unconfined).")
@click.option("--test-timeout", type=float, default=1800.0, show_default=True, metavar="S", help="Seconds per test run.")
@click.option("--json", "as_json", is_flag=True, help="One JSON document: a list, one entry per version.")
@click.pass_context
def env_verify_cmd(ctx: click.Context, dataset: str, rows: str | None, repo: str, versions: tuple[str, ...], source: str,
                   cutoff: str | None, tests: tuple[str, ...], max_tests: int, repo_sources: tuple[str, ...],
                   python_paths: tuple[str, ...], cache_dir: str | None, sandbox: str, test_timeout: float,
                   as_json: bool) -> None:
    """Run a repository's environment recipe here, per version, as its tasks would get it.

    For each version: the spec and era cut-off a task of it gets, the environment built
    and the repository installed as grading does, then the spec's test command on a
    sample of the version's test modules. The source is the version's release sdist
    (newest patch release before the cut-off) or a checkout. One env.verified event per
    version. This checks the recipe, not the tasks' gold patches.
    """
    checks = experiment_of(ctx).env_verify(
        dataset=dataset, rows=rows, repo=repo, versions=versions, source=source, cutoff=cutoff,
        cache_dir=cache_dir, repo_sources=parse_repo_sources(repo_sources),
        python_paths=parse_python_paths(python_paths), sandbox=sandbox, test_timeout=test_timeout,
        max_tests=max_tests, tests=tests, say=lambda text: click.echo(text, err=True),
    )
    if as_json:
        echo_json(checks)
    else:
        for c in checks:
            build = (f"build ok {c.build_s:.0f}s{'' if c.built else ' (cached)'}" if c.build_ok
                     else f"build FAILED {c.build_s:.0f}s" if (c.error or "").startswith("build failed") else "build -")
            install = {True: "install ok", False: "install FAILED", None: "install -"}[c.install_ok]
            click.echo(f"{c.repo}@{c.version}  {c.source or '-'}  python {c.python or '-'}  {build}  {install}  "
                       f"tests {c.collected}: {c.passed} passed, {c.failed} failed, {c.errors} errors, "
                       f"{c.skipped} skipped")
            for f in c.failures:
                click.echo(f"  {f.status} {f.test}: {f.cause or '(no cause in the log)'}")
            if c.error:
                click.echo(f"  stopped: {c.error}")
    if any(c.error or not c.build_ok for c in checks):
        ctx.exit(1)
