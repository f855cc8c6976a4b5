"""The built-in demo benchmark: three small real Python libraries, generated as git
repositories on the spot, with tasks designed so that memory visibly matters.

See README.md in this folder for the design of every task. Nothing here touches the
network, and the same bytes come out on every machine: commit SHAs are computed in
Python and checked against what git writes.
"""

from __future__ import annotations

from ._build import (
    DEMO_ATTEMPTS,
    DEMO_DESIGN,
    DEMO_ENVIRONMENT,
    DEMO_OWNER,
    DemoDesign,
    default_repos_dir,
    demo_benchmark,
    materialise_demo_repos,
    repos_dir_in,
    write_demo_curriculum,
)

__all__ = [
    "DEMO_ATTEMPTS",
    "DEMO_DESIGN",
    "DEMO_ENVIRONMENT",
    "DEMO_OWNER",
    "DemoDesign",
    "default_repos_dir",
    "demo_benchmark",
    "materialise_demo_repos",
    "repos_dir_in",
    "write_demo_curriculum",
]
