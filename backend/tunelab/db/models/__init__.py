"""Every table, imported here so that Alembic's metadata sees them all."""

from tunelab.db.models.artifact import Artifact
from tunelab.db.models.dataset import Dataset
from tunelab.db.models.metric import Metric, MetricRollup, MetricSummary
from tunelab.db.models.project import Project
from tunelab.db.models.run import Run, RunStatus

__all__ = ["Artifact", "Dataset", "Metric", "MetricRollup", "MetricSummary", "Project", "Run", "RunStatus"]
