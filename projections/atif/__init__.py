"""Trajectories in ATIF, Harbor's Agent Trajectory Interchange Format: one JSON document
per task attempt of a run (`swecl export V --format atif --out DIR`).

`atif_trajectories(ledger, version)` gives (relative file name, trajectory) pairs;
`write_atif(ledger, version, out_dir)` writes them and an `index.json`. Transcripts are
read by their recorded format (`transcript_format`), never by the agent's name.
"""

from __future__ import annotations

from ._build import ATIF_SCHEMA_VERSION, INDEX_FILE, atif_trajectories, file_name, write_atif
from ._transcripts import read_transcript, transcript_format

__all__ = [
    "ATIF_SCHEMA_VERSION",
    "INDEX_FILE",
    "atif_trajectories",
    "file_name",
    "read_transcript",
    "transcript_format",
    "write_atif",
]
