"""matplotlib's font list in a confined test run's home (graders._sandbox_home): made once
per environment with the real matplotlib (this project's own), shown read-only in the
sandbox's home so a run does not build it again, its folder still writable; nothing for
an environment without matplotlib."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from graders._env_info import EnvInfo
from graders._sandbox_home import sandbox_home
from graders.host import sandbox_for

VERSION = ".".join(str(v) for v in sys.version_info[:2])
# what matplotlib logs when it built the list and cannot write it to its cache
REBUILT = "Could not save font_manager cache"
# In the sandbox: matplotlib's font manager, then what the home holds and allows.
PROBE = """\
import os, pathlib, matplotlib.font_manager
cache = pathlib.Path(os.path.expanduser("~/.cache/matplotlib"))
lists = sorted(p.name for p in cache.glob("fontlist-*.json"))
try:
    (cache / "x").write_text("")
    writable = True
except OSError:
    writable = False
try:
    (cache / lists[0]).write_text("")
    overwritten = True
except (OSError, IndexError):
    overwritten = False
print(lists, writable, overwritten)
"""


# this project's own packages (matplotlib among them), which the test's venvs import
PROJECT_SITE = Path(next(p for p in sys.path if p.endswith("site-packages") and Path(p, "matplotlib").is_dir()))


def _env(path: Path, *, matplotlib: bool) -> EnvInfo:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", os.fspath(path / "venv")], check=True)
    if matplotlib:
        site = subprocess.run([os.fspath(path / "venv" / "bin" / "python"), "-c",
                               "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              capture_output=True, text=True, check=True).stdout.strip()
        Path(site, "project.pth").write_text(f"{PROJECT_SITE}\n")
    return EnvInfo(key="o__n/1/x", repo="o/n", version="1", spec_hash="x", python_version=VERSION, path=path,
                   complete=True)


def _probe(env: EnvInfo, home: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    argv, run_env = sandbox_for("bwrap").wrap([os.fspath(env.python), "-c", PROBE], cwd=cwd,
                                              readable=[env.path, PROJECT_SITE], home=home,
                                              env={"PATH": os.environ["PATH"], "MPLBACKEND": "agg"})
    return subprocess.run(argv, env=run_env, capture_output=True, text=True, timeout=300)


def test_the_font_list_is_made_once_and_shown_read_only_in_the_sandboxs_home(tmp_path: Path) -> None:
    env = _env(tmp_path / "env", matplotlib=True)
    home = sandbox_home(env)
    (rel, made), = home.items()
    assert rel.startswith(".cache/matplotlib/fontlist-v") and rel.endswith(".json")
    assert json.loads(Path(made).read_text())["ttflist"]  # the fonts it found
    seeded = env.path / "sandbox-home"
    assert [p for p in seeded.rglob("*") if p.is_file() and p.name != ".swecl-home"] == [Path(made)]

    run = _probe(env, home, tmp_path)
    assert run.returncode == 0, run.stderr
    # the run took the list: one it built could not be saved over it, and matplotlib says so
    assert REBUILT not in run.stderr, run.stderr
    assert run.stdout.split() == [f"['{Path(rel).name}']", "True", "False"]  # its folder writable, the list not
    bare = _probe(env, {}, tmp_path)  # the control: an empty home, where the run builds and saves it
    assert bare.returncode == 0 and bare.stdout.split() == [f"['{Path(rel).name}']", "True", "True"], bare

    (seeded / "marker").write_text("")
    assert sandbox_home(env) == home and (seeded / "marker").exists()  # made once
    (seeded / ".swecl-home").write_text("made by another swecl")
    assert sandbox_home(env) == home and not (seeded / "marker").exists()  # made again


def test_an_environment_without_matplotlib_gets_nothing_and_says_so_once(tmp_path: Path) -> None:
    env = _env(tmp_path / "env", matplotlib=False)
    assert sandbox_home(env) == {}
    assert (env.path / "sandbox-home" / ".swecl-home").is_file()  # not tried again at every run
    assert sandbox_home(env) == {}
