"""Git submodules (astropy_helpers in old astropy): filled from a cached mirror at the
recorded commit, named offline with a repo source, cleaned between tasks, and a gold
patch whose tests import from a submodule resolves."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from graders import GradeRequest, get_grader
from graders.host import GitError, RepoCache
from graders.host._submodules import parse_gitmodules, submodule_repo
from ledger.errors import SweclError
from tests.graders.exec_support import run_git, write

SUPER = "acme/app"
HELPERS = "acme/helpers"

GOLD = """\
diff --git a/app/core.py b/app/core.py
--- a/app/core.py
+++ b/app/core.py
@@ -1,5 +1,5 @@
 from vendor_helpers import LIMIT
{blank}
{blank}
 def limit():
-    return LIMIT + 1
+    return LIMIT
""".format(blank=" ")

TEST_PATCH = """\
diff --git a/tests/test_core.py b/tests/test_core.py
new file mode 100644
--- /dev/null
+++ b/tests/test_core.py
@@ -0,0 +1,5 @@
+from app.core import limit
+
+
+def test_limit():
+    assert limit() == 10
"""


def _helpers(root: Path) -> tuple[Path, str, str]:
    """A helpers repository: LIMIT is 10 at the first commit, 99 at the second."""
    root.mkdir(parents=True)
    run_git(root, "init", "-q", "-b", "main")
    write(root, "__init__.py", "LIMIT = 10\n")
    write(root, ".gitignore", "*.egg-info/\n")
    run_git(root, "add", "-A")
    run_git(root, "commit", "-q", "-m", "limit 10")
    first = run_git(root, "rev-parse", "HEAD")
    write(root, "__init__.py", "LIMIT = 99\n")
    run_git(root, "commit", "-qam", "limit 99")
    return root, first, run_git(root, "rev-parse", "HEAD")


def _super(root: Path, url: str, pinned: str) -> tuple[Path, str]:
    """A repository with `vendor_helpers` as a submodule pinned at `pinned`, made without
    `git submodule add` (which would need the URL to be reachable)."""
    root.mkdir(parents=True)
    run_git(root, "init", "-q", "-b", "main")
    write(root, "app/__init__.py", "")
    write(root, "app/core.py", "from vendor_helpers import LIMIT\n\n\ndef limit():\n    return LIMIT + 1\n")
    write(root, "conftest.py", "")
    write(root, ".gitmodules", f'[submodule "helpers"]\n\tpath = vendor_helpers\n\turl = {url}\n')
    run_git(root, "add", "-A")
    run_git(root, "update-index", "--add", "--cacheinfo", f"160000,{pinned},vendor_helpers")
    run_git(root, "commit", "-q", "-m", "app with a helpers submodule")
    return root, run_git(root, "rev-parse", "HEAD")


@pytest.fixture
def repos(tmp_path: Path) -> dict:
    helpers, first, second = _helpers(tmp_path / "helpers")
    app, base = _super(tmp_path / "app", "https://github.com/acme/helpers.git", first)
    return {"helpers": helpers, "first": first, "second": second, "app": app, "base": base,
            "cache": tmp_path / "cache"}


def test_submodule_urls_name_a_repository() -> None:
    assert submodule_repo("https://github.com/astropy/astropy-helpers.git", "astropy/astropy") == (
        "astropy/astropy-helpers", "https://github.com/astropy/astropy-helpers.git")
    assert submodule_repo("git@github.com:astropy/astropy-helpers.git", "astropy/astropy")[0] == "astropy/astropy-helpers"
    # relative to the superproject's own remote, as git resolves it
    assert submodule_repo("../astropy-helpers.git", "astropy/astropy") == ("astropy/astropy-helpers", None)
    assert submodule_repo("./sub", "acme/app") == ("app/sub", None)
    for bad in ("../../../x", "https://example.org/x"):
        with pytest.raises(SweclError):
            submodule_repo(bad, "acme/app")
    listing = "submodule.a.b.path\nsub\0submodule.a.b.url\n../x.git\0core.bare\nfalse"
    assert parse_gitmodules(listing) == {"a.b": {"path": "sub", "url": "../x.git"}}


def test_worktree_fills_the_submodule_at_its_recorded_commit(repos: dict) -> None:
    cache = RepoCache(repos["cache"], {SUPER: str(repos["app"]), HELPERS: str(repos["helpers"])})
    with cache.worktree(SUPER, repos["base"]) as wt:
        # the pinned commit, not the helpers' newest one
        assert (wt.path / "vendor_helpers" / "__init__.py").read_text() == "LIMIT = 10\n"
        write(wt.path, "vendor_helpers/__init__.py", "LIMIT = 0\n")  # a task edits inside it
        write(wt.path, "vendor_helpers/planted.py", "x = 1\n")
        write(wt.path, "vendor_helpers/app.egg-info/PKG-INFO", "built\n")  # an install's product
    with cache.worktree(SUPER, repos["base"]) as wt:
        sub = wt.path / "vendor_helpers"
        assert (sub / "__init__.py").read_text() == "LIMIT = 10\n"
        assert not (sub / "planted.py").exists()
        # ignored files inside a submodule are the install's (astropy_helpers builds there)
        assert (sub / "app.egg-info" / "PKG-INFO").exists()


def test_a_submodule_without_a_reachable_source_says_which_repo_source_is_missing(tmp_path: Path) -> None:
    helpers, first, _ = _helpers(tmp_path / "helpers")
    app, base = _super(tmp_path / "app", f"file://{tmp_path}/nowhere/acme/helpers.git", first)
    cache = RepoCache(tmp_path / "cache", {SUPER: str(app)})
    with pytest.raises(GitError, match=r"--repo-source acme/helpers=PATH"):
        with cache.worktree(SUPER, base):
            pass
    # named offline, it is found; a relative URL maps the same way
    app2, base2 = _super(tmp_path / "app2", "../helpers.git", first)
    cache = RepoCache(tmp_path / "cache2", {SUPER: str(app2), HELPERS: str(helpers)})
    with cache.worktree(SUPER, base2) as wt:
        assert (wt.path / "vendor_helpers" / "__init__.py").read_text() == "LIMIT = 10\n"


def test_an_agent_checkout_has_the_submodule_and_no_path_of_the_cache(repos: dict) -> None:
    cache = RepoCache(repos["cache"], {SUPER: str(repos["app"]), HELPERS: str(repos["helpers"])})
    with cache.agent_checkout(SUPER, repos["base"], parent=repos["cache"].parent / "ws") as path:
        assert (path / "vendor_helpers" / "__init__.py").read_text() == "LIMIT = 10\n"
        configs = [path / ".git" / "config", *(path / ".git" / "modules").rglob("config")]
        text = "".join(p.read_text() for p in configs if p.is_file())
        assert str(repos["cache"]) not in text
        assert "https://github.com/acme/helpers.git" in text


@pytest.mark.slow
def test_a_gold_patch_needing_a_submodule_resolves(repos: dict) -> None:
    grader = get_grader("local", cache_dir=repos["cache"], python=sys.executable,
                        repo_sources={SUPER: str(repos["app"]), HELPERS: str(repos["helpers"])})
    req = dict(instance_id="acme__app-1", repo=SUPER, version=None, base_commit=repos["base"],
               test_patch=TEST_PATCH, fail_to_pass=["tests/test_core.py::test_limit"], pass_to_pass=[])
    gold = grader.grade(GradeRequest(model_patch=GOLD, **req))
    assert gold.status == "resolved", gold.log.decode()
    noop = grader.grade(GradeRequest(model_patch=GOLD.replace("return LIMIT\n", "return LIMIT + 1  # same\n"), **req))
    assert noop.status == "unresolved", noop.log.decode()
