from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from tunelab.schemas.common import ResourceId

MAX_RUNS_PER_LINK = 50


class ShareCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    run_ids: list[ResourceId] = Field(min_length=1, max_length=MAX_RUNS_PER_LINK,
                               description="One run, or the runs of a comparison (all from one project)")
    title: str | None = Field(None, max_length=200, description="Defaults to the run's name")
    expires_at: datetime | None = Field(None, description="Never expires when omitted")
    allow_downloads: bool = Field(False, description="Let the link's holders download the runs' artifacts")


ShareKind = Literal["run", "comparison", "study", "pipeline"]


class StudyShareCreate(BaseModel):
    """A link to a study's or a pipeline's page."""

    model_config = ConfigDict(extra="forbid")

    title: str | None = Field(None, max_length=200, description="Defaults to the study's (or pipeline's) name")
    expires_at: datetime | None = Field(None, description="Never expires when omitted")
    allow_downloads: bool = Field(False, description="Let the link's holders download the runs' artifacts")


class SharePublic(BaseModel):
    id: int
    project_id: int
    kind: ShareKind
    run_ids: list[int]
    study_id: int | None = Field(None, description="The study a study link shows")
    pipeline_id: int | None = Field(None, description="The pipeline a pipeline link shows")
    title: str
    allow_downloads: bool
    created_by: str | None = Field(description="Email of who made the link")
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None
    last_opened_at: datetime | None
    open_count: int
    active: bool


class ShareCreated(SharePublic):
    url: str = Field(description="Path of the shared page, /s/<token>; the token is shown only now")
    token: str


class SharesPublic(BaseModel):
    data: list[SharePublic]
    count: int


class SharedViewPublic(BaseModel):
    """What a link's holder learns about the link: enough to render the shared page, and nothing about who made it
    (a link travels further than its project: its holders are told the project and the title, not an email)."""

    kind: ShareKind
    title: str
    run_ids: list[int]
    study_id: int | None = Field(None, description="The study a study link shows (GET /studies/{study_id})")
    pipeline_id: int | None = Field(None, description="The pipeline a pipeline link shows (GET "
                                    "/pipelines/{pipeline_id})")
    allow_downloads: bool
    project_name: str
    expires_at: datetime | None
