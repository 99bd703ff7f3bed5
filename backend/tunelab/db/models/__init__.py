"""Every table, imported here so that Alembic's metadata sees them all."""

from tunelab.db.models.artifact import Artifact
from tunelab.db.models.audit import AuditEvent
from tunelab.db.models.dataset import Dataset
from tunelab.db.models.export import ExportStatus, RunExport
from tunelab.db.models.idempotency import IdempotencyKey
from tunelab.db.models.metric import MetricChunk, MetricRollup, MetricSummary
from tunelab.db.models.pipeline import Pipeline, PipelineStage, StageState
from tunelab.db.models.project import Project, ProjectMember, Role
from tunelab.db.models.run import Run, RunStatus, RunTag
from tunelab.db.models.share import ShareLink
from tunelab.db.models.signin import SigninFailures
from tunelab.db.models.study import Study
from tunelab.db.models.user import ApiToken, User, UserSession

__all__ = ["ApiToken", "Artifact", "AuditEvent", "Dataset", "ExportStatus", "IdempotencyKey", "MetricChunk",
           "MetricRollup", "MetricSummary", "Pipeline",
           "PipelineStage", "Project", "ProjectMember", "Role", "Run", "RunExport", "RunStatus", "RunTag",
           "ShareLink", "SigninFailures", "StageState", "Study", "User", "UserSession"]
