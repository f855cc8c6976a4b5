"""The overlap grader: no test runs, a proxy verdict from how much the model patch looks
like the gold patch (files, hunks, changed lines; test files left out of both)."""

from __future__ import annotations

import time
from collections import Counter

from graders._apply import is_test_path, normalize_patch
from graders._grade import GradeOutcome, GradeRequest, _finish, _Notes

__all__ = ["OVERLAP_LINES_F1", "OverlapGrader", "patch_similarity"]

# resolved iff every gold file is touched and the changed-line F1 reaches this.
OVERLAP_LINES_F1 = 0.5


def _changed_lines(patch: str) -> tuple[dict[str, list[tuple[int, int]]], Counter[tuple[str, str, str]]]:
    """(file -> hunk source ranges, multiset of (file, +/-, stripped line)), test files left out."""
    from unidiff import PatchSet  # a dependency of swecl; imported here to keep import time low

    hunks: dict[str, list[tuple[int, int]]] = {}
    lines: Counter[tuple[str, str, str]] = Counter()
    for pf in PatchSet(normalize_patch(patch)):
        path = pf.path
        if is_test_path(path):
            continue
        hunks.setdefault(path, [])
        for h in pf:
            hunks[path].append((h.source_start, h.source_start + max(h.source_length, 1)))
            for ln in h:
                if (ln.is_added or ln.is_removed) and ln.value.strip():
                    lines[(path, "+" if ln.is_added else "-", ln.value.strip())] += 1
    return hunks, lines


def patch_similarity(model_patch: str, gold_patch: str) -> dict[str, float]:
    """How much a model patch looks like the gold patch (files, hunks, changed lines).

    Test files are left out of both sides (a model's own new tests are not part of the
    fix). files_*: over the sets of files; hunks_recall: gold hunks whose source range
    overlaps a model hunk of the same file; lines_*: over the multisets of changed
    (file, +/-, stripped text) lines.
    """
    mh, ml = _changed_lines(model_patch)
    gh, gl = _changed_lines(gold_patch)
    mf, gf = set(mh), set(gh)
    both = mf & gf
    hit = sum(
        1 for f, ranges in gh.items() for (a, b) in ranges
        if any(a < d and c < b for (c, d) in mh.get(f, []))
    )
    total_hunks = sum(len(r) for r in gh.values())
    common = sum((ml & gl).values())
    lp = common / sum(ml.values()) if ml else 0.0
    lr = common / sum(gl.values()) if gl else 0.0
    return {
        "files_precision": len(both) / len(mf) if mf else 0.0,
        "files_recall": len(both) / len(gf) if gf else 0.0,
        "files_jaccard": len(both) / len(mf | gf) if mf | gf else 0.0,
        "hunks_recall": hit / total_hunks if total_hunks else 0.0,
        "lines_precision": lp,
        "lines_recall": lr,
        "lines_f1": 2 * lp * lr / (lp + lr) if lp + lr else 0.0,
    }


class OverlapGrader:
    """No execution: similarity of the model patch to the gold patch (a proxy verdict)."""

    name = "overlap"

    def grade(self, req: GradeRequest) -> GradeOutcome:
        start = time.monotonic()
        notes = _Notes(self.name, req)
        proxy = (f"proxy verdict, no tests were run: resolved iff the patch touches every gold file and its "
                 f"changed lines reach F1 >= {OVERLAP_LINES_F1} against the gold patch")
        if not req.model_patch or not req.model_patch.strip():
            return _finish(self.name, notes, start, "empty_patch", error="the patch is empty")
        if not req.gold_patch or not req.gold_patch.strip():
            return _finish(self.name, notes, start, "infra_error", error="the overlap grader needs the task's gold patch")
        try:
            sim = patch_similarity(req.model_patch, req.gold_patch)
        except Exception as exc:  # unidiff: a patch that does not parse
            notes.add(f"[swecl] the model patch does not parse as a diff: {exc}")
            return _finish(self.name, notes, start, "patch_failed", error=f"not a unified diff: {exc}",
                           similarity={})
        resolved = sim["files_recall"] == 1.0 and sim["lines_f1"] >= OVERLAP_LINES_F1
        notes.add("[swecl] " + proxy)
        notes.add("[swecl] similarity: " + ", ".join(f"{k}={v:.3f}" for k, v in sim.items()))
        return _finish(self.name, notes, start, "resolved" if resolved else "unresolved", error=proxy, similarity=sim)
