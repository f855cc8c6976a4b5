"""The bundle jobs of `Experiment`: `swecl bundle` (write a results folder's runs into a
bundle), `swecl check` (check one, optionally grading it again), `swecl keygen` and
`swecl leaderboard` (rank the runs of checked bundles). See `_bundle`, `_bundle_check`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ._folder import ExperimentFolder

if TYPE_CHECKING:
    from ._bundle import BundleReport
    from ._bundle_board import BoardReport
    from ._bundle_check import CheckReport
    from ._bundle_keys import KeyPair


class BundleJobs(ExperimentFolder):
    """Bundles: make, check, sign (see the module doc)."""

    def bundle(self, versions: Sequence[str], *, out: str | os.PathLike[str], with_runs: Sequence[str] = (),
               key: str | os.PathLike[str] | None = None, dataset: str | None = None, rows: str | None = None,
               cache_dir: str | None = None) -> BundleReport:
        """`swecl bundle`: runs `versions` and everything their numbers stand on, in one file."""
        from ._bundle import make_bundle  # lazy: only `swecl bundle` pays for it

        return make_bundle(type(self), self.results.root, versions, out, with_runs=with_runs, key=key, dataset=dataset,
                           rows=rows, cache_dir=cache_dir)

    @classmethod
    def check(cls, path: str | os.PathLike[str], *, keys: Sequence[str] = (), regrade: bool = False,
              repo_sources: Mapping[str, str] | None = None, cache_dir: str | None = None, jobs: int = 1,
              python_paths: Mapping[str, str] | None = None,
              say: Callable[[str], object] = lambda line: None) -> CheckReport:
        """`swecl check`: the bundle's signature, chain and numbers; with `regrade`, every
        bundled patch graded again on this host."""
        from ._bundle_check import check_bundle

        return check_bundle(cls, Path(path), keys=keys, regrade=regrade, repo_sources=repo_sources,
                            cache_dir=cache_dir, jobs=jobs, python_paths=python_paths, say=say)

    @classmethod
    def leaderboard(cls, bundles: Sequence[str | os.PathLike[str]], *, out: str | os.PathLike[str],
                    keys: Sequence[str] = (), say: Callable[[str], object] = lambda line: None) -> BoardReport:
        """`swecl leaderboard`: check the bundles and rank their runs on one static page."""
        from ._bundle_board import build_board

        return build_board(cls, [Path(b) for b in bundles], Path(out), keys=keys, say=say)

    @staticmethod
    def keygen(path: str | os.PathLike[str]) -> KeyPair:
        """`swecl keygen`: a new Ed25519 key pair for signing bundles."""
        from ._bundle_keys import generate_key

        return generate_key(path)
