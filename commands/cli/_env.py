"""`swecl env list|build|prune`: the cache of test environments per (repo, version, spec)."""

from __future__ import annotations

from pathlib import Path

import click

from graders import RepoCache, build_env, default_cache_dir, era_for, git, list_envs, prune_envs, spec_for

from ._common import echo_json, parse_python_paths, parse_repo_sources


def _cache(cache_dir: str | None):  # type: ignore[no-untyped-def]


    return Path(cache_dir) if cache_dir else default_cache_dir()


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
def env_list_cmd(cache_dir: str | None, sizes: bool, as_json: bool) -> None:
    """The environments in the cache."""
    envs = list_envs(_cache(cache_dir), sizes=sizes)
    if as_json:
        echo_json(
            [
                {
                    "key": e.key, "repo": e.repo, "version": e.version, "python": e.python_version,
                    "spec_hash": e.spec_hash, "complete": e.complete, "built_at": e.built_at,
                    "last_used": e.last_used, "size_bytes": e.size_bytes, "path": str(e.path),
                    "warnings": list(e.warnings),
                }
                for e in envs
            ]
        )
        return
    if not envs:
        click.echo(f"no environments in {_cache(cache_dir)}")
    for e in envs:
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
def env_build_cmd(repo: str, version: str, cache_dir: str | None, repo_sources: tuple[str, ...], commit: str | None,
                  python_paths: tuple[str, ...], force: bool) -> None:
    """Build (or reuse) the environment of REPO at VERSION from the shipped spec table."""

    cache = _cache(cache_dir)
    spec = spec_for(repo, version)
    paths = parse_python_paths(python_paths)
    needs_tree = bool(spec.packages and spec.packages.endswith((".txt", ".yml")))
    repos = RepoCache(cache, parse_repo_sources(repo_sources))
    cutoff = None
    if commit:
        cutoff = era_for(repos, repo, commit, commit).cutoff  # the environment grading builds for this commit
    else:
        click.echo("warning: no --commit: packages resolve as of today, not as of a task's era; grading builds "
                   "its own environment as of the task's environment_setup_commit", err=True)
    if needs_tree:
        mirror = repos.ensure_mirror(repo)

        target = commit or git(["rev-parse", "HEAD"], cwd=mirror).stdout.decode().strip()
        with repos.worktree(repo, target) as wt:
            build = build_env(repo, version, spec, cache_dir=cache, worktree=wt.path, python_paths=paths, force=force,
                              exclude_newer=cutoff)
    else:
        build = build_env(repo, version, spec, cache_dir=cache, python_paths=paths, force=force, exclude_newer=cutoff)
    click.echo(f"{build.env.key}: {'built' if build.built else 'already built'} ({build.env.path})")
    for warning in build.warnings:
        click.echo(f"warning: {warning}")


@env_group.command("prune")
@cache_option
@click.option("--keep", multiple=True, metavar="KEY", help="Keep this environment (repeatable).")
@click.option("--keep-recent", type=int, default=0, show_default=True, help="Keep the N most recently used.")
@click.option("--dry-run", is_flag=True, help="Only say what would be removed.")
def env_prune_cmd(cache_dir: str | None, keep: tuple[str, ...], keep_recent: int, dry_run: bool) -> None:
    """Remove environments (and leftovers of interrupted builds) to free disk."""
    removed = prune_envs(_cache(cache_dir), keep=keep, keep_recent=keep_recent, dry_run=dry_run)
    verb = "would remove" if dry_run else "removed"
    for path in removed:
        click.echo(f"{verb} {path}")
    click.echo(f"{verb} {len(removed)} environment(s)")
