"""Adjust stage: manual points for written answers (OUT/manual.csv) and late penalties (deadline, extensions),
applied on top of the code's grade at every run, reused results included."""

from grader.adjust.apply import AdjustmentReport, Adjustments
from grader.adjust.late import DeadlineRule, LateOverride, deadline_rule
from grader.times import LatePolicy

__all__ = ["AdjustmentReport", "Adjustments", "DeadlineRule", "LateOverride", "LatePolicy", "deadline_rule"]
