"""`Experiment`: the application core, one object per results folder.

The CLI (`commands.cli`) only parses, calls one of these methods and prints what it
returns; both executors (local processes and Ray) run through the same object. Every job
returns a plain document (a dataclass or a dict) and raises `SweclError` for what the
user can fix; nothing here prints.

    from commands import Experiment
    exp = Experiment("results")
    exp.metrics(versions=["1"]).document()
"""

from __future__ import annotations

from ._folder import ExperimentFolder
from ._jobs_bundle import BundleJobs
from ._jobs_counterfactual import CounterfactualJobs
from ._jobs_estimate import EstimateJobs
from ._jobs_grade import GradeJobs
from ._jobs_read import ReadJobs
from ._jobs_run import RunJobs
from ._jobs_output import OutputJobs

__all__ = ["Experiment"]


class Experiment(BundleJobs, EstimateJobs, RunJobs, GradeJobs, ReadJobs, OutputJobs, CounterfactualJobs, ExperimentFolder):
    """The jobs over one results folder (see the module doc)."""
