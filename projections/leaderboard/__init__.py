"""The leaderboard page (`swecl leaderboard FILE... --out DIR`): runs of shared bundles,
grouped by what must be shared to compare them and ranked, as one static offline page.

    from projections.leaderboard import BoardEntry, build_leaderboard, write_leaderboard

    board = build_leaderboard([BoardEntry(bundle="a.swecl", metrics=version_doc, ...), ...])
    write_leaderboard(board, Path("board"))  # board/index.html

The caller reads the bundles (and checks them); this package only groups, ranks
(`_rank`: the rule, stated on the page too) and draws (`_html`). `build_leaderboard` is a
pure function of the entries; the same entries give the same bytes.
"""

from __future__ import annotations

from ._html import render, write_leaderboard
from ._model import BoardEntry, Figure, Group, GroupKey, Leaderboard, Ranking, Row
from ._rank import MACRO, RULE, build_leaderboard, group_key

__all__ = [
    "MACRO",
    "RULE",
    "BoardEntry",
    "Figure",
    "Group",
    "GroupKey",
    "Leaderboard",
    "Ranking",
    "Row",
    "build_leaderboard",
    "group_key",
    "render",
    "write_leaderboard",
]
