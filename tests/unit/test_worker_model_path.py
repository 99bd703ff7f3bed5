"""A worker finds a run's base model among its own models, by the name the launch gave it (issue 25 item 2)."""

import pytest

from tunelab.assets.build import TINY_MODEL_NAME
from tunelab.core.settings import Settings
from tunelab.services.catalog.models import worker_model_path


def test_a_worker_loads_the_base_from_its_own_models_by_name_not_from_the_apis_path(tmp_path):
    worker = Settings(data_dir=tmp_path / "worker", database_url="sqlite://")
    own = worker.models_dir / TINY_MODEL_NAME
    own.mkdir(parents=True)
    (own / "config.json").write_text("{}")
    api_host_path = "/srv/api-host/models/" + TINY_MODEL_NAME  # where the API resolved it: not on this worker
    assert worker_model_path(worker, TINY_MODEL_NAME, api_host_path) == own

    elsewhere = tmp_path / "launched-path"
    elsewhere.mkdir()
    bare = Settings(data_dir=tmp_path / "bare", database_url="sqlite://")
    assert worker_model_path(bare, TINY_MODEL_NAME, str(elsewhere)) == elsewhere, "one host: the launch's path serves"
    with pytest.raises(FileNotFoundError, match=f"the base model '{TINY_MODEL_NAME}' is not on this worker"):
        worker_model_path(bare, TINY_MODEL_NAME, api_host_path)
