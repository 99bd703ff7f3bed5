"""Start-up work shared by `tunelab up`, `tunelab api` and tests: register the bundled sample datasets."""

import logging

from tunelab.core.settings import Settings
from tunelab.db.session import session_scope
from tunelab.training.formats import DatasetFormat

log = logging.getLogger(__name__)


def register_bundled_assets(settings: Settings) -> None:
    from tunelab.assets.build import SAMPLE_DATASETS
    from tunelab.services.catalog.datasets import register_bundled_dataset

    for sample in SAMPLE_DATASETS:
        path = settings.samples_dir / sample.path
        if not path.exists():
            log.info("sample dataset %s not built yet (run `tunelab assets`)", sample.name)
            continue
        with session_scope() as session:
            register_bundled_dataset(session, settings, sample.name, path, DatasetFormat(sample.format))
