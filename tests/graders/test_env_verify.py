"""`swecl env verify`: a repository's environment recipe run per version as its tasks get
it, from a checkout or from the version's release sdist on a (loopback, dated) index."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from commands._env_verify import failure_causes
from commands.cli import cli
from graders._sdist import Sdist, data_members, pick_sdist, project_sdists, unpack_sdist
from ledger.errors import SweclError
from tests.graders.env_support import SETUP_PY, commit_at, dated_index
from tests.graders.exec_support import REPO, TEST_PATCH, make_calc_repo, run_git, write
from tests.run.support import events

ERA = "2024-06-15T10:00:00Z"  # pytest 8.2 of that day runs on the interpreter running the tests
SPEC = {"python": None, "pip_packages": ["pytest"], "install": "python -m pip install -e .",
        "test_cmd": "pytest -rA -p no:cacheprovider", "log_parser": "pytest"}
BROKEN = "from calc.ops import add\n\n\ndef test_add_is_wrong():\n    assert add(1, 1) == 3\n"
NEW_FILE_PATCH = ("diff --git a/tests/test_new.py b/tests/test_new.py\nnew file mode 100644\n--- /dev/null\n"
                  "+++ b/tests/test_new.py\n@@ -0,0 +1 @@\n+def test_x(): pass\n")
BROKEN_PATCH = ("diff --git a/tests/test_broken.py b/tests/test_broken.py\n--- a/tests/test_broken.py\n"
                "+++ b/tests/test_broken.py\n@@ -1 +1 @@\n-from calc.ops import add\n+from calc.ops import add  \n")


def _calc(root: Path) -> tuple[Path, str]:
    """The calc repository, installable, with one test that fails, committed in the era."""
    src, _ = make_calc_repo(root)
    write(src, "setup.py", SETUP_PY.format(version="0.1"))
    write(src, "tests/test_broken.py", BROKEN)
    return src, commit_at(src, "installable, one broken test", ERA)


def _manifest(path: Path, base: str) -> Path:
    """Two tasks of calc 0.1: their test patches touch test_ops.py, test_broken.py and a
    new module no release has."""
    tasks = []
    for n, test_patch in enumerate((TEST_PATCH + NEW_FILE_PATCH, BROKEN_PATCH), start=1):
        tasks.append({
            "metadata": {"instance_id": f"acme__calc-{n}", "repo": REPO, "base_commit": base, "version": "0.1",
                         "environment_setup_commit": base, "difficulty": "<15 min fix", "created_at": ERA},
            "task": {"problem_statement": "p", "hints_text": ""},
            "evaluation": {"patch": "", "test_patch": test_patch, "FAIL_TO_PASS": [], "PASS_TO_PASS": []},
            "continual_learning": {"sequence_position": n, "difficulty_score": 1, "dependencies": [],
                                   "modified_files": []},
        })
    doc = {"metadata": {"name": "calc", "num_sequences": 1, "total_tasks": 2, "repositories": [REPO]},
           "sequences": [{"id": "acme_calc_sequence", "repo": REPO, "num_tasks": 2, "environment": SPEC,
                          "tasks": tasks}]}
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def _verify(tmp_path: Path, *args: str) -> tuple[int, list[dict], str]:
    out = CliRunner().invoke(cli, ["--results", str(tmp_path / "results"), "env", "verify", "--repo", REPO,
                                   "--cache-dir", str(tmp_path / "cache"), "--json", *args])
    if out.exception and not isinstance(out.exception, SystemExit):
        raise out.exception
    return out.exit_code, json.loads(out.stdout), out.output


def _assert_calc_counts(check: dict) -> None:
    assert check["build_ok"] and check["install_ok"] is True, check
    # test_new.py is not in the source; test_ops.py has 3 tests, test_broken.py 1
    assert check["tests"] == ["tests/test_ops.py", "tests/test_broken.py"]
    assert (check["collected"], check["passed"], check["failed"], check["errors"]) == (4, 3, 1, 0), check
    (failure,) = check["failures"]
    assert failure["test"] == "tests/test_broken.py::test_add_is_wrong" and failure["status"] == "FAILED"
    assert "assert 2 == 3" in failure["cause"], failure
    assert check["cutoff"] == "2024-06-15T00:00:00Z" and check["error"] is None


def test_a_checkout_is_verified_at_the_versions_commit_and_recorded(tmp_path: Path) -> None:
    src, base = _calc(tmp_path / "src")
    write(src, "tests/test_ops.py", "def test_later():\n    pass\n")  # a later commit: not what the tasks see
    commit_at(src, "later", "2024-07-01T00:00:00Z")
    dataset = _manifest(tmp_path / "calc.json", base)
    code, (check,), _ = _verify(tmp_path, "--dataset", str(dataset), "--source", str(src))
    assert code == 0
    _assert_calc_counts(check)
    assert check["source"] == f"checkout at {base}" and check["cutoff_from"] == f"commit {base}"
    assert check["python"] and check["env_key"].startswith("acme__calc/0.1/")
    (recorded,) = [(stream, p) for _, stream, _, p in events(tmp_path / "results", "env.verified")]
    assert recorded[0] == f"env/{REPO}@0.1" and recorded[1]["failed"] == 1 and recorded[1]["collected"] == 4

    # a version the dataset does not have: one line, nothing recorded
    out = CliRunner().invoke(cli, ["--results", str(tmp_path / "results"), "env", "verify", "--repo", REPO,
                                   "--dataset", str(dataset), "--version", "9.9", "--source", str(src)])
    assert "--version 9.9: acme/calc has no task of that version" in str(out.exception)
    assert len(events(tmp_path / "results", "env.verified")) == 1


def _sdist(directory: Path, version: str, src: Path) -> Path:
    """calc's files as a release sdist `calc-VERSION.tar.gz` (with PKG-INFO, as sdists have)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"calc-{version}.tar.gz"
    files = {rel: (src / rel).read_bytes() for rel in ("setup.py", "calc/__init__.py", "calc/ops.py",
                                                        "tests/test_ops.py", "tests/test_broken.py", "conftest.py")}
    files["PKG-INFO"] = f"Metadata-Version: 1.1\nName: calc\nVersion: {version}\n".encode()
    with tarfile.open(path, "w:gz") as archive:
        for rel, data in files.items():
            info = tarfile.TarInfo(f"calc-{version}/{rel}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def test_the_release_sdist_before_the_era_is_verified(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src, base = _calc(tmp_path / "src")
    dataset = _manifest(tmp_path / "calc.json", base)
    files = tmp_path / "files"
    releases = {"calc": [
        ("0.1.0", "2024-01-10T00:00:00Z", _sdist(files / "a", "0.1.0", src)),
        ("0.1.1", "2024-05-02T12:00:00.123456Z", _sdist(files / "b", "0.1.1", src)),
        ("0.1.2", "2024-08-01T00:00:00Z", _sdist(files / "c", "0.1.2", src)),  # after the era
        ("0.2.0", "2024-05-20T00:00:00Z", _sdist(files / "d", "0.2.0", src)),  # another minor version
    ]}
    with dated_index(tmp_path / "index", releases) as url:
        monkeypatch.setenv("UV_INDEX", url)  # first; pytest and the seed packages still come from PyPI
        code, (check,), _ = _verify(tmp_path, "--dataset", str(dataset), "--repo-source", f"{REPO}={src}")
    assert code == 0
    assert check["source"] == "sdist calc-0.1.1.tar.gz"
    _assert_calc_counts(check)
    assert (tmp_path / "cache" / "sdists" / "acme__calc" / "calc-0.1.1.tar.gz").is_file()  # kept for next time


def test_an_sdist_without_the_specs_package_list_stops_with_its_reason(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """matplotlib 3.0's spec reads `requirements/testing/travis_all.txt`, which its sdist
    does not ship: the check stops and says a checkout is needed, not `install failed`."""
    src, base = _calc(tmp_path / "src")
    dataset = _manifest(tmp_path / "calc.json", base)
    doc = json.loads(dataset.read_text())
    doc["sequences"][0]["environment"] = {**doc["sequences"][0]["environment"], "packages": "requirements.txt"}
    dataset.write_text(json.dumps(doc))
    releases = {"calc": [("0.1.0", "2024-01-10T00:00:00Z", _sdist(tmp_path / "files", "0.1.0", src))]}
    with dated_index(tmp_path / "index", releases) as url:
        monkeypatch.setenv("UV_INDEX", url)
        code, (check,), _ = _verify(tmp_path, "--dataset", str(dataset), "--cutoff", "2024-06-15")
    assert code == 1 and check["build_ok"] and check.get("install_ok") is None, check
    assert check["error"] == ("the sdist lacks the spec's package list (none of requirements.txt exists in the "
                              "checkout): this version's recipe needs a checkout (--source DIR)")


def _tar(path: Path, *members: tuple[tarfile.TarInfo, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as archive:
        for info, data in members:
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data) if data else None)
    return path


def _member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "", mode: int = 0o644) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.mode = kind, link, mode
    return info


@pytest.mark.parametrize("hostile", [
    _member("../evil.py"), _member("pkg-1.0/../../evil.py"),
    _member("pkg-1.0/link", tarfile.SYMTYPE, "/etc/passwd"), _member("pkg-1.0/link", tarfile.SYMTYPE, "../../up"),
    _member("pkg-1.0/hard", tarfile.LNKTYPE, "../outside"), _member("pkg-1.0/dev", tarfile.CHRTYPE),
], ids=["up", "up-inside", "abs-link", "up-link", "up-hardlink", "device"])
def test_an_sdist_is_unpacked_as_data_on_every_python_3_11(tmp_path: Path, hostile: tarfile.TarInfo) -> None:
    # tarfile's "data" filter came with Python 3.11.4; before it (Debian 12's 3.11.2) the
    # same checks are swecl's own (`data_members`). Both unpack a plain sdist alike and
    # stop at the same members, with a one-line error naming the archive.
    plain = [(_member("pkg-1.0/", tarfile.DIRTYPE, mode=0o755), b""), (_member("pkg-1.0/setup.py", mode=0o4755), b"x = 1\n"),
             (_member("pkg-1.0/alias.py", tarfile.SYMTYPE, "setup.py"), b"")]
    archive = _tar(tmp_path / "pkg-1.0.tar.gz", *plain)
    top = unpack_sdist(archive, tmp_path / "a")
    assert top.name == "pkg-1.0" and (top / "alias.py").read_text() == "x = 1\n"
    with tarfile.open(archive) as tf:
        tf.extractall(tmp_path / "b", members=data_members(tf, archive.name))
    got = tmp_path / "b" / "pkg-1.0"
    assert (got / "alias.py").is_symlink() and (got / "setup.py").read_text() == "x = 1\n"
    assert (got / "setup.py").stat().st_mode & 0o7777 == (top / "setup.py").stat().st_mode & 0o7777 == 0o755

    bad = _tar(tmp_path / "bad-1.0.tar.gz", *plain, (hostile, b"" if hostile.type != tarfile.REGTYPE else b"boom"))
    with pytest.raises(SweclError, match="bad-1.0.tar.gz"):
        unpack_sdist(bad, tmp_path / "c")
    with tarfile.open(bad) as tf, pytest.raises(SweclError, match=r"bad-1\.0\.tar\.gz: .*(outside|special)"):
        data_members(tf, bad.name)
    assert not (tmp_path / "evil.py").exists()

    # an absolute name lands inside, its leading slash stripped, either way
    rooted = _tar(tmp_path / "rooted-1.0.tar.gz", *plain, (_member("/pkg-1.0/rooted.py"), b"y = 2\n"))
    assert (unpack_sdist(rooted, tmp_path / "d") / "rooted.py").read_text() == "y = 2\n"
    with tarfile.open(rooted) as tf:
        tf.extractall(tmp_path / "e", members=data_members(tf, rooted.name))
    assert (tmp_path / "e" / "pkg-1.0" / "rooted.py").read_text() == "y = 2\n"


def test_without_a_mirror_or_cutoff_the_version_stops_with_its_reason(tmp_path: Path) -> None:
    dataset = _manifest(tmp_path / "calc.json", "0" * 40)
    code, (check,), _ = _verify(tmp_path, "--dataset", str(dataset))
    assert code == 1 and not check["build_ok"]
    assert check["error"].startswith("no era cut-off: no mirror of acme/calc here")
    assert len(events(tmp_path / "results", "env.verified")) == 1  # recorded all the same


def test_sdist_selection_keeps_to_the_minor_version_and_the_era() -> None:
    def s(version: str, when: str | None, ext: str = ".tar.gz") -> Sdist:
        return Sdist(version=version, filename=f"Django-{version}{ext}", url="u", uploaded=when)

    found = [s("3.0", "2019-12-02T09:00:00Z"), s("3.0.1", "2019-12-18T08:00:00.5Z"), s("3.0.2", "2020-01-02T08:00:00Z"),
             s("3.0.3rc1", "2019-12-20T00:00:00Z"), s("3.1", "2019-12-19T00:00:00Z"), s("3.0.1", "2019-12-18T08:00:00Z", ".zip"),
             s("30.0.9", "2019-12-01T00:00:00Z")]
    chosen = pick_sdist(found, "3.0", "2019-12-19T00:00:00Z")
    assert chosen is not None and chosen.filename == "Django-3.0.1.tar.gz"
    assert pick_sdist(found, "3.0", None).version == "3.0.2"  # type: ignore[union-attr]
    assert pick_sdist(found, "3.0", "2019-11-01T00:00:00Z") is None
    assert pick_sdist([s("3.0.4", None)], "3.0", "2019-11-01T00:00:00Z").version == "3.0.4"  # type: ignore[union-attr]


def test_the_index_pages_are_read_for_sdists_only(tmp_path: Path) -> None:
    src, _ = make_calc_repo(tmp_path / "src")
    write(src, "setup.py", SETUP_PY.format(version="0.1"))
    write(src, "tests/test_broken.py", BROKEN)
    run_git(src, "add", "-A")
    sdist = _sdist(tmp_path / "f", "1.0", src)
    with dated_index(tmp_path / "index", {"calc": [("1.0", "2024-01-01T00:00:00Z", sdist)]}) as url:
        (found,) = project_sdists("calc", [url])
        assert (found.version, found.uploaded) == ("1.0", "2024-01-01T00:00:00Z") and found.sha256
        assert found.url.startswith(url.rsplit("/simple", 1)[0] + "/files/")


def test_failure_causes_from_pytest_and_django_logs() -> None:
    pytest_log = ("FAILED t.py::test_a - ZeroDivisionError: division by zero\nERROR t.py::test_b\n")
    got = failure_causes(pytest_log, {"t.py::test_a": "FAILED", "t.py::test_b": "ERROR", "t.py::test_c": "PASSED"})
    assert [(f.test, f.cause) for f in got] == [("t.py::test_a", "ZeroDivisionError: division by zero"), ("t.py::test_b", "")]
    django_log = ("test_x (utils_tests.test_text.TestX) ... FAIL\n"
                  + "=" * 70 + "\nFAIL: test_x (utils_tests.test_text.TestX)\n" + "-" * 70 + "\n"
                  "Traceback (most recent call last):\n  File \"t.py\", line 3, in test_x\n"
                  "AssertionError: 'a' != 'b'\n\n" + "-" * 70 + "\nRan 1 test in 0.001s\n")
    (f,) = failure_causes(django_log, {"test_x (utils_tests.test_text.TestX)": "FAILED"})
    assert f.cause == "AssertionError: 'a' != 'b'"
