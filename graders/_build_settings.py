"""Settings a repository's source build reads that its spec implies but cannot give here,
and the Debian packages they need.

matplotlib 3.4 and later build FreeType 2.6.1 and Qhull 2020.2 from tarballs their
setupext.py downloads at build time (SourceForge, savannah, qhull.org), unless the file
`MPLSETUPCFG` names (else `mplsetup.cfg`) sets `system_freetype` and `system_qhull` in its
`[libs]` section. SWE-bench's images have the internet; hosts like this one reach only the
package registries, so the build links Debian's libraries instead: libfreetype-dev
(found with pkg-config) and libqhull-dev (`libqhull_r`). 3.0 to 3.3 link the system
FreeType anyway (their specs install libfreetype6-dev, which libfreetype-dev provides) and
ignore the options they do not know. What this changes: text is drawn by Debian's FreeType,
not 2.6.1, so image tests that keep their text may differ from SWE-bench's; validation
names any such PASS_TO_PASS test as failing here either way.

The settings go into the install's environment (`install_environment`), as a file under
the environment's folder; the packages are listed by `swecl env system-deps` beside the
specs' own, so its `--install` brings them and `swecl validate` names a missing one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["BuildSettings", "build_settings", "build_settings_environment", "build_system_packages"]


@dataclass(frozen=True, slots=True)
class BuildSettings:
    variable: str  # the environment variable the build reads the file's path from
    filename: str
    text: str
    packages: tuple[str, ...]  # Debian packages the settings need on the host


_SETTINGS = {
    "matplotlib/matplotlib": BuildSettings(
        variable="MPLSETUPCFG",
        filename="mplsetup.cfg",
        text="# swecl: Debian's FreeType and Qhull, not the tarballs setupext.py downloads\n"
             "[libs]\nsystem_freetype = True\nsystem_qhull = True\n",
        packages=("libfreetype-dev", "libqhull-dev", "pkg-config"),
    ),
}


def build_settings(repo: str) -> BuildSettings | None:
    return _SETTINGS.get(repo)


def build_system_packages(repo: str) -> list[str]:
    """The Debian packages the repository's build settings need (none for most)."""
    found = build_settings(repo)
    return list(found.packages) if found else []


def build_settings_environment(repo: str, folder: Path) -> dict[str, str]:
    """The variables that give the repository's build its settings, the file written
    under `folder` (the environment's); {} for a repository without any."""
    found = build_settings(repo)
    if found is None:
        return {}
    path = folder / "build-settings" / found.filename
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.is_file() or path.read_text(encoding="utf-8") != found.text:
        path.write_text(found.text, encoding="utf-8")
    return {found.variable: os.fspath(path)}
