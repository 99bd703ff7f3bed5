"""The Celery app: one task, JSON only, no result backend (run state lives in SQL)."""

from celery import Celery

from tunelab.core.redis import redis_url
from tunelab.core.settings import get_settings

TRAIN_RUN_TASK = "tunelab.train_run"


def make_celery() -> Celery:
    settings = get_settings()
    app = Celery("tunelab", broker=redis_url(), include=["tunelab.worker.tasks"])
    app.conf.update(
        task_serializer="json",
        accept_content=["json"],
        task_ignore_result=True,
        result_backend=None,
        task_acks_late=True,
        # A run killed with its worker must not be re-trained from scratch by another: SQL says "worker lost".
        task_reject_on_worker_lost=False,
        worker_prefetch_multiplier=1,
        # One process per run: a clean CUDA context and a true peak-RSS figure for each run.
        worker_max_tasks_per_child=1,
        task_default_queue=settings.default_queue,
        broker_transport_options={"visibility_timeout": settings.visibility_timeout_s},
        broker_connection_retry_on_startup=True,
        worker_hijack_root_logger=False,
    )
    return app


celery_app = make_celery()
