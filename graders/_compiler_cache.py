"""A compiler cache for installs that compile: ccache, when the host has it.

Why: a compiled repository is installed again at every base commit (`install_per_task`:
astropy builds its C extensions in place), and most of what it compiles is the same from
commit to commit and from version to version (cextern's wcslib, cfitsio and expat): 140 s
of an astropy 5.1 install were C compiles, about half of them of sources another commit
had compiled already. ccache hands back the object the compiler made before for the same
preprocessed source, options and compiler, and is built to give exactly what the
compiler would (its manual: "the only way you should be able to tell that you are using
ccache is the speed"), so no verdict depends on whether a compile was cached.

How: ccache masquerades as the compilers: a folder of links named `cc`, `gcc`, `g++`, ...
to ccache, first on the install's PATH (only for the names the host has). The build's
commands stay what the interpreter's sysconfig says, word for word (setting `CC` instead
would drop sysconfig's flags); ccache runs the real compiler further down PATH. Its cache
lives in swecl's cache (`ccache/`): an empty swecl cache is a cold one, and nothing comes
from outside it. `CCACHE_BASEDIR` is swecl's cache, so paths in a worktree are hashed
relative to the build's directory and a slot's compile serves the other slot's;
`CCACHE_NOHASHDIR`: the build's directory is left out of the hash (the debug information
of an object may name the slot that compiled it first: only a debugger reads it).

Limit: a source that includes numpy's headers from pip's isolated build environment (a new
random folder at each install) hashes that folder's path, so Cython's modules compile at
every install.

Off with `SWECL_CCACHE=0`, or when ccache is not on PATH (`apt-get install ccache`).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

__all__ = ["COMPILER_NAMES", "compiler_cache_environment"]

# what setuptools' and make's builds call, by the names sysconfig and Makefiles use
COMPILER_NAMES = ("cc", "gcc", "c++", "g++", "clang", "clang++",
                  "x86_64-linux-gnu-gcc", "x86_64-linux-gnu-g++", "aarch64-linux-gnu-gcc", "aarch64-linux-gnu-g++")


def compiler_cache_environment(cache_root: Path | None, path: str) -> dict[str, str]:
    """The variables that send an install's compiles through ccache (PATH first, given
    the PATH the install would have), or {} when there is no ccache or it is turned off."""
    if cache_root is None or os.environ.get("SWECL_CCACHE", "1").strip().lower() in ("0", "no", "false", "off"):
        return {}
    ccache = shutil.which("ccache", path=path)
    if ccache is None:
        return {}
    links = cache_root / "ccache" / "bin"
    found = [name for name in COMPILER_NAMES if shutil.which(name, path=path)]
    if not found:
        return {}
    _link_compilers(links, Path(ccache).resolve(), found)
    return {
        "PATH": os.pathsep.join([os.fspath(links), path]),
        "CCACHE_DIR": os.fspath(cache_root / "ccache" / "store"),
        "CCACHE_BASEDIR": os.fspath(cache_root.resolve()),
        "CCACHE_NOHASHDIR": "1",
    }


def _link_compilers(links: Path, ccache: Path, names: list[str]) -> None:
    """`links/NAME` -> ccache for each name, made again if it points elsewhere (ccache moved)."""
    links.mkdir(parents=True, exist_ok=True)
    for name in names:
        link = links / name
        try:
            if Path(os.readlink(link)) == ccache:
                continue
            link.unlink()
        except FileNotFoundError:
            pass
        except OSError:  # not a link: a file someone put there
            link.unlink()
        tmp = links / f".{name}.{os.getpid()}"
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(ccache)
        os.replace(tmp, link)  # two grades at once: each link appears whole
