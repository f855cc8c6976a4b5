"""The pydantic schemas of what users hand swecl: a curriculum or manifest (its sequences
and tasks, their `environment`), SWE-bench rows, predictions.

Only reading such a file needs them. pydantic builds a model's validator when the class
is made, and the first model made loads pydantic's whole schema machinery: about 90 ms
of CPU that every `swecl run` of the built-in demo (built in code, checked by its tests)
and every command that reads no such file would pay at start-up for nothing. So this
module is imported by the functions that read a user's file (`_load`, `_rows`,
`_predictions`), on their first call, never at start-up.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictBool, StrictInt, StrictStr, ValidationError

__all__ = [
    "ContinualIn",
    "EnvironmentIn",
    "EvaluationIn",
    "MetadataIn",
    "OpenIn",
    "PredictionIn",
    "SequenceIn",
    "SwebenchRow",
    "TaskIn",
    "TestIds",
    "TextIn",
    "Timestamp",
    "ValidationError",
    "VerifiedExtraIn",
]


def _decode_test_ids(value: Any) -> Any:
    # SWE-bench rows carry FAIL_TO_PASS/PASS_TO_PASS as JSON-encoded strings, curricula
    # as lists; both mean the same list.
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):  # RecursionError: "[[[[..." a million deep
            raise ValueError("not a JSON-encoded list of test ids") from None
        if not isinstance(value, list):
            raise ValueError("not a JSON-encoded list of test ids")
    return value


def _timestamp_text(value: Any) -> Any:
    # Parquet readers may hand back datetimes where JSON has ISO strings.
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.timezone.utc)
        return value.isoformat().replace("+00:00", "Z")
    return value


TestIds = Annotated[list[StrictStr], BeforeValidator(_decode_test_ids)]
Timestamp = Annotated[StrictStr, BeforeValidator(_timestamp_text)]


class EnvironmentIn(BaseModel):
    """How to build and test a task's repository; mirrors the grader's `EnvSpec` fields.

    Unknown keys are refused: a misspelt `test_command` silently ignored would run the
    wrong tests.
    """

    model_config = ConfigDict(extra="forbid")

    python: StrictStr | None = None
    pip_packages: list[StrictStr] = []
    packages: StrictStr | None = None
    pre_install: list[StrictStr] = []
    install: StrictStr | None = None
    eval_commands: list[StrictStr] = []
    test_cmd: StrictStr | None = None
    log_parser: StrictStr | None = None
    install_per_task: StrictBool = False


# --- a curriculum or manifest ----------------------------------------------------------


class OpenIn(BaseModel):
    # Curricula carry fields we do not use (statistics, order_source...): keep quiet.
    model_config = ConfigDict(extra="allow")


class MetadataIn(OpenIn):
    instance_id: StrictStr = Field(min_length=1)
    repo: StrictStr | None = None
    base_commit: StrictStr = Field(min_length=1)
    created_at: Timestamp | None = None
    difficulty: StrictStr | None = None
    version: StrictStr | None = None
    environment_setup_commit: StrictStr | None = None


class TextIn(OpenIn):
    problem_statement: StrictStr | None = None
    hints_text: StrictStr | None = None


class EvaluationIn(OpenIn):
    patch: StrictStr | None = None
    test_patch: StrictStr | None = None
    FAIL_TO_PASS: TestIds | None = None
    PASS_TO_PASS: TestIds | None = None


class ContinualIn(OpenIn):
    sequence_position: StrictInt = Field(ge=1)
    difficulty_score: StrictInt | None = Field(default=None, ge=1, le=4)
    dependencies: list[StrictStr] = []
    modified_files: list[StrictStr] | None = None


class VerifiedExtraIn(OpenIn):
    version: StrictStr | None = None


class TaskIn(OpenIn):
    metadata: MetadataIn
    task: TextIn | None = None
    evaluation: EvaluationIn | None = None
    continual_learning: ContinualIn
    swebench_verified_extra: VerifiedExtraIn | None = None
    environment: EnvironmentIn | None = None


class SequenceIn(OpenIn):
    id: StrictStr = Field(min_length=1)
    repo: StrictStr = Field(min_length=1)
    num_tasks: StrictInt | None = None
    environment: EnvironmentIn | None = None
    tasks: list[Any]


# --- SWE-bench rows and predictions ----------------------------------------------------


class SwebenchRow(BaseModel):
    """One SWE-bench row; columns beyond these are ignored."""

    model_config = ConfigDict(extra="ignore")

    instance_id: StrictStr
    repo: StrictStr
    base_commit: StrictStr
    patch: StrictStr | None = None
    test_patch: StrictStr | None = None
    problem_statement: StrictStr | None = None
    hints_text: StrictStr | None = None
    created_at: Timestamp | None = None
    version: StrictStr | None = None
    FAIL_TO_PASS: TestIds | None = None
    PASS_TO_PASS: TestIds | None = None
    difficulty: StrictStr | None = None
    # the commit SWE-bench builds the environment at: the grader's era and manifests
    environment_setup_commit: StrictStr | None = None


class PredictionIn(BaseModel):
    model_config = ConfigDict(extra="allow")

    instance_id: StrictStr = Field(min_length=1)
    model_patch: StrictStr | None
    model_name_or_path: StrictStr | None = None
