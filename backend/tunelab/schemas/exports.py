from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from tunelab.db.models.export import ExportStatus


class RunExportPublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    run_id: int
    status: ExportStatus
    status_reason: str | None = Field(description="Why it failed")
    requested_by: str
    queued_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    worker: str | None
    archive_url: str | None = Field(None, description="The merged model as one zip, once the export succeeded")


class RunExportsPublic(BaseModel):
    data: list[RunExportPublic]
    count: int
