from fastapi import APIRouter, status

from tunelab.api.deps import ExportBrokerDep, SessionDep, SettingsDep
from tunelab.api.policies import ReaderDep, RunDownloader, RunExporter
from tunelab.api.routes.runs import archive_url
from tunelab.core.errors import responses
from tunelab.db.models import ExportStatus, RunExport
from tunelab.schemas.exports import RunExportPublic, RunExportsPublic
from tunelab.services.runs import exports

router = APIRouter(tags=["exports"])


def to_public(export: RunExport) -> RunExportPublic:
    public = RunExportPublic.model_validate(export)
    if export.status == ExportStatus.succeeded:
        public.archive_url = archive_url(export.run_id, exports.MERGED_DIR)
    return public


@router.post("/runs/{run_id}/exports", response_model=RunExportPublic, status_code=status.HTTP_202_ACCEPTED,
             responses=responses(401, 403, 404, 409))
def create_run_export(run: RunExporter, session: SessionDep, settings: SettingsDep, broker: ExportBrokerDep,
                      principal: ReaderDep) -> RunExportPublic:
    """Merge the run's adapter into its base on a worker of the run's queue: `merged/` in its artifacts, in Hugging
    Face format with the tokenizer (`AutoModelForCausalLM.from_pretrained` loads it). 409 when the run has no
    adapter that merges (not finished, full fine-tuning, a prompt-learning method) or an export is under way."""
    return to_public(exports.request_export(session, settings, run, broker, principal.actor))


@router.get("/runs/{run_id}/exports", response_model=RunExportsPublic, responses=responses(401, 403, 404))
def read_run_exports(run: RunDownloader, session: SessionDep) -> RunExportsPublic:
    """The run's merged-model exports, newest first."""
    found = exports.list_exports(session, run.id)
    return RunExportsPublic(data=[to_public(e) for e in found], count=len(found))
