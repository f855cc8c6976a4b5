"""A compiler cache for installs and environment builds that compile: ccache, when the
host has it.

Why: a compiled repository is installed again at every base commit (`install_per_task`:
astropy builds its C extensions in place), and most of what it compiles is the same from
commit to commit and from version to version (cextern's wcslib, cfitsio and expat): 140 s
of an astropy 5.1 install were C compiles, about half of them of sources another commit
had compiled already. ccache hands back the object the compiler made before for the same
preprocessed source, options and compiler, and is built to give exactly what the
compiler would (its manual: "the only way you should be able to tell that you are using
ccache is the speed"), so no verdict depends on whether a compile was cached.

How: a folder of small scripts named `cc`, `gcc`, `g++`, ... (only the names the host has),
first on the install's PATH, each running ccache with the real compiler. The build's
commands stay what the interpreter's sysconfig says, word for word but `-g0` at the end of
a compile (below; setting `CC` instead would drop sysconfig's flags). ccache's cache lives in swecl's cache (`ccache/`): an empty
swecl cache is a cold one, and nothing comes from outside it. `CCACHE_BASEDIR` is swecl's
cache, so paths in a worktree are hashed relative to the build's directory and a slot's
compile serves the other slot's; `CCACHE_NOHASHDIR`: the build's directory is left out of
the hash (the debug information of an object may name the slot that compiled it first:
only a debugger reads it).

pip's isolated build environment is a new random folder at each install
(`$TMPDIR/pip-build-env-XXXXXXXX`), and every source that includes numpy's headers from
it named that folder in its command line and its preprocessed text: astropy's Cython
modules missed the cache at every install (about 40 s of a 73 s astropy 5.1 install).
So the install's TMPDIR is a folder of its environment's own (`<env>/build-tmp`: one
install at a time under the environment's lock), and the scripts name pip's folder by a
link there that points at it (`build-tmp/build-env`): the same headers at the same path
from install to install. The compiler reads the same files through the link, so the
object is the one it would make (only the paths written into debug information and line
markers name the link instead). A command line naming no such folder goes through as is.

A compile leaves out debug information (`-g0` after the build's own flags): the
interpreters' sysconfig asks for `-g -O3` (as the official images' conda Pythons did), and
writing DWARF for astropy's Cython modules is about a quarter of each compile (cparser.c:
9.9 s with `-g`, 7.2 s without). GCC and clang give the same machine code with and
without `-g` (what GCC's `-fcompare-debug` checks); only a debugger reads the rest, and no
test does. `tests/graders/test_compiler_cache.py` compares the code.

The environment builds' uv calls go through the same scripts (`graders._uv._Log.env`):
their fallbacks build an sdist again after a failed attempt (xarray 0.12's build compiled
numcodecs' c-blosc in the isolated attempt, without isolation, then as of SWE-bench's
images), and environments of one repository build the same sdists (sphinx 3.x's typed-ast
1.4.1): every compile after the first of a source is a hit.

Off with `SWECL_CCACHE=0`, or when ccache is not on PATH (`apt-get install ccache`).
"""

from __future__ import annotations

import os
import shlex
import shutil
from pathlib import Path

__all__ = ["COMPILER_NAMES", "compiler_cache_environment"]

# what setuptools' and make's builds call, by the names sysconfig and Makefiles use
COMPILER_NAMES = ("cc", "gcc", "c++", "g++", "clang", "clang++",
                  "x86_64-linux-gnu-gcc", "x86_64-linux-gnu-g++", "aarch64-linux-gnu-gcc", "aarch64-linux-gnu-g++")


def compiler_cache_environment(cache_root: Path | None, path: str, tmp: Path | None = None) -> dict[str, str]:
    """The variables that send an install's compiles through ccache (PATH first, given
    the PATH the install would have; `tmp`: the install's own TMPDIR, see the module
    doc), or {} when there is no ccache or it is turned off."""
    if cache_root is None or os.environ.get("SWECL_CCACHE", "1").strip().lower() in ("0", "no", "false", "off"):
        return {}
    ccache = shutil.which("ccache", path=path)
    if ccache is None:
        return {}
    scripts = cache_root / "ccache" / "bin"
    found = {name: compiler for name in COMPILER_NAMES if (compiler := shutil.which(name, path=path))}
    if not found:
        return {}
    _write_scripts(scripts, ccache, found)
    out = {
        "PATH": os.pathsep.join([os.fspath(scripts), path]),
        "CCACHE_DIR": os.fspath(cache_root / "ccache" / "store"),
        "CCACHE_BASEDIR": os.fspath(cache_root.resolve()),
        "CCACHE_NOHASHDIR": "1",
    }
    if tmp is not None:
        tmp.mkdir(parents=True, exist_ok=True)
        out["TMPDIR"] = os.fspath(tmp)
    return out


# POSIX sh: an argument naming `$TMPDIR/pip-build-env-XXXX` names `$TMPDIR/build-env`
# instead, a link to that folder made (atomically: two compiles at once) when it points
# elsewhere; a compile (`-c`) ends with `-g0`, which overrides any `-g` before it
_SCRIPT = """#!/bin/sh
# made by swecl (graders/_compiler_cache.py): @COMPILER@ through ccache, pip's build
# environment named by a stable link, compiles without debug information
compiles=
prefix="$TMPDIR/pip-build-env-"
link="$TMPDIR/build-env"
for a do
  shift
  case $a in
    *"$prefix"*)
      head=${a%%"$prefix"*}; rest=${a#*"$prefix"}; name=${rest%%/*}; rest=${rest#"$name"}
      if [ -n "$TMPDIR" ]; then
        [ "$(readlink "$link")" = "pip-build-env-$name" ] ||
          { ln -s "pip-build-env-$name" "$link.$$" && mv -Tf "$link.$$" "$link"; }
        # named by the link only when it points there (else as it came: a miss, not an error)
        [ "$(readlink "$link")" = "pip-build-env-$name" ] && a="$head$link$rest"
      fi 2>/dev/null;;
  esac
  [ "$a" = -c ] && compiles=1
  set -- "$@" "$a"
done
# a compile: no debug information (the same machine code, a quarter less time)
[ -n "$compiles" ] && set -- "$@" -g0
exec @CCACHE@ @COMPILER@ "$@"
"""


def _write_scripts(folder: Path, ccache: str, compilers: dict[str, str]) -> None:
    """`folder/NAME` for each compiler, written again when it says otherwise (ccache or the
    compiler moved, an earlier swecl's link)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, compiler in compilers.items():
        text = _SCRIPT.replace("@CCACHE@", shlex.quote(ccache)).replace("@COMPILER@", shlex.quote(compiler))
        script = folder / name
        try:
            if not script.is_symlink() and script.read_text(encoding="utf-8") == text:
                continue
        except OSError:
            pass
        tmp = folder / f".{name}.{os.getpid()}"
        tmp.write_text(text, encoding="utf-8")
        tmp.chmod(0o755)
        os.replace(tmp, script)  # two grades at once: each script appears whole
