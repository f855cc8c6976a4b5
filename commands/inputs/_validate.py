"""Shared pieces of input validation: field types, file reading, one-line error text.

Every loader reports a bad input as ONE line that names the file and the place in it
(sequence, task or line) and the field, e.g.
`bad.json: sequence 'x', task 'y': continual_learning.sequence_position: duplicate value 3`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graders import MAX_JSON_BYTES, json_problem, read_limited
from ledger.errors import SweclError

if TYPE_CHECKING:
    from pydantic import ValidationError

    from ._schemas import EnvironmentIn

__all__ = [
    "describe_validation_error",
    "environment_dict",
    "parse_json",
    "read_text",
    "short_repr",
]


def environment_dict(env: EnvironmentIn | None) -> dict[str, Any] | None:
    """The validated environment with only the keys the user wrote (explicit nulls kept)."""
    return None if env is None else env.model_dump(exclude_unset=True)


def short_repr(value: Any, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def describe_validation_error(exc: ValidationError, prefix: str = "") -> str:
    """'field.path[2]: what is wrong' for the first error pydantic found."""
    error = exc.errors(include_url=False)[0]
    parts: list[str] = []
    for part in error["loc"]:
        if isinstance(part, int) and parts:
            parts[-1] += f"[{part}]"
        else:
            parts.append(str(part))
    where = ".".join(([prefix] if prefix else []) + parts)
    if error["type"] == "missing":
        message = "field required"
    else:
        message = error["msg"]
        for noise in ("Value error, ", "Assertion failed, "):
            if message.startswith(noise):
                message = message[len(noise):]
        message = message[:1].lower() + message[1:]
        # Our schema classes are private names users never wrote.
        message = re.sub(r" or instance of _?\w+", "", message)
        if error["type"] == "extra_forbidden":
            message = "unknown field"
        elif error["type"] != "value_error" and "input" in error:
            message += f" (got {short_repr(error['input'])})"
    return f"{where}: {message}" if where else message


def read_text(path: Path, label: str, limit: int = MAX_JSON_BYTES) -> str:
    """The file's text as strict UTF-8 (a leading BOM tolerated), or a one-line error.

    Only a regular file of at most `limit` bytes is read (`graders._limits`): a FIFO,
    `/dev/zero` or a 2 GB file is refused before it can hang or fill memory.
    """
    data = read_limited(path, label, limit)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SweclError(
            f"{label}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
            "save it as UTF-8"
        ) from None


def parse_json(text: str, label: str) -> Any:
    # Depth and huge integers are capped there, so the recursive walk below stays shallow.
    document, problem = json_problem(text)
    if problem is not None:
        raise SweclError(f"{label}: {problem}")
    where = _unpaired_surrogate(document, "")
    if where is not None:
        # JSON may spell a lone surrogate ("\udcff"): valid JSON, not text. Refused here,
        # it can never reach a patch file, a blob or an event payload later.
        raise SweclError(f"{label}: {where or 'the document'}: holds an unpaired surrogate escape, which is not valid Unicode text")
    return document


def _unpaired_surrogate(value: Any, path: str) -> str | None:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return path
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            found = _unpaired_surrogate(key, path) or _unpaired_surrogate(item, f"{path}.{key}" if path else str(key))
            if found is not None:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = _unpaired_surrogate(item, f"{path}[{index}]")
            if found is not None:
                return found
    return None
