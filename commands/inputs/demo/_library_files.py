"""The demo libraries, read from their data files in `libraries/` (the format is in
libraries/README.md) into the objects `_history.py` builds repositories from."""

from __future__ import annotations

import tomllib
from collections.abc import Iterator
from importlib.resources import files
from importlib.resources.abc import Traversable
from typing import Any

from ._history import GOLD, Commit, DemoTask, Edit, Library

__all__ = ["INICONF", "SPANS", "TEXTKIT", "load_library"]

_ROOT = files(__package__).joinpath("libraries")


def _text(path: Traversable, where: str) -> str:
    # Bytes, decoded here: reading as text would translate line endings.
    text = path.read_bytes().decode("utf-8")
    if "\r" in text:
        raise AssertionError(f"{where}: a carriage return (the demo's files use \\n line endings)")
    return text


def _toml(path: Traversable, where: str) -> dict[str, Any]:
    try:
        return tomllib.loads(_text(path, where))
    except tomllib.TOMLDecodeError as error:
        raise AssertionError(f"{where}: {error}") from None


def _walk(folder: Traversable, prefix: str = "") -> Iterator[str]:
    for item in folder.iterdir():
        if item.is_dir():
            if item.name != "__pycache__":
                yield from _walk(item, f"{prefix}{item.name}/")
        else:
            yield prefix + item.name


def _edits(items: list[dict[str, str]], where: str) -> tuple[Edit, ...]:
    for item in items:
        if not {"path", "new"} <= set(item) <= {"path", "old", "new"}:
            raise AssertionError(f"{where}: an edit has the keys {sorted(item)}, not path, old (optional), new")
    return tuple(Edit(item["path"], item.get("old"), item["new"]) for item in items)


def _task(number: int, data: dict[str, Any], where: str) -> DemoTask:
    fields = dict(data)
    attempt = fields.get("attempt")
    if attempt == "gold":
        fields["attempt"] = GOLD
    elif attempt == "empty":
        fields["attempt"] = None
    elif isinstance(attempt, list):
        fields["attempt"] = _edits(attempt, f"{where} attempt")
    else:
        raise AssertionError(f'{where}: attempt must be "gold", "empty" or [[attempt]] edits, not {attempt!r}')
    for name in ("fix", "tests"):
        if name in fields:
            fields[name] = _edits(fields[name], f"{where} {name}")
    for name in ("fail_to_pass", "pass_to_pass"):
        if name in fields:
            fields[name] = tuple(fields[name])
    if "before" in fields:
        before = fields["before"]
        fields["before"] = tuple(Commit(c["message"], _edits(c["edits"], f"{where} before")) for c in before)
    try:
        return DemoTask(number=number, **fields)
    except TypeError as error:  # a missing or unknown field
        raise AssertionError(f"{where}: {error}") from None


def load_library(name: str) -> Library:
    """The library in libraries/<name>/: its initial files and its tasks, in order."""
    folder = _ROOT.joinpath(name)
    meta = _toml(folder.joinpath("library.toml"), f"{name}/library.toml")
    tree, listed = folder.joinpath("tree"), meta["files"]
    found = set(_walk(tree))
    if found != set(listed) or len(listed) != len(found):
        raise AssertionError(
            f"{name}/tree holds {sorted(found - set(listed))} unlisted in library.toml's files, "
            f"lacks {sorted(set(listed) - found)}, or files lists one twice"
        )
    stray = set(_walk(folder.joinpath("tasks"))) - {f"{number}.toml" for number in meta["tasks"]}
    if stray:
        raise AssertionError(f"{name}/tasks holds {sorted(stray)}, which library.toml's tasks does not list")
    return Library(
        name=name,
        initial_message=meta["initial_message"],
        initial=tuple(Edit(path, None, _text(tree.joinpath(*path.split("/")), f"{name}/tree/{path}")) for path in listed),
        tasks=tuple(
            _task(number, _toml(folder.joinpath("tasks", f"{number}.toml"), f"{name}#{number}"), f"{name}#{number}")
            for number in meta["tasks"]
        ),
        start=meta["start"],
    )


TEXTKIT = load_library("textkit")
INICONF = load_library("iniconf")
SPANS = load_library("spans")
