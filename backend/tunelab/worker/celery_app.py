"""The Celery app: three tasks (train a run, export a run's merged model, generate a playground request's
completions on the `infer` queue), JSON only, no result backend (their state
lives in SQL)."""

from celery import Celery

from tunelab.core.redis import redis_url
from tunelab.core.settings import get_settings

TRAIN_RUN_TASK = "tunelab.train_run"
EXPORT_RUN_TASK = "tunelab.export_run"
GENERATE_COMPLETIONS_TASK = "tunelab.generate_completions"
# The queues `tunelab worker` consumes, for its pool's processes (an inference worker's import torch at start).
WORKER_QUEUES_ENV = "TUNELAB_WORKER_QUEUES"


def make_celery() -> Celery:
    settings = get_settings()
    app = Celery("tunelab", broker=redis_url(), include=["tunelab.worker.tasks"])
    app.conf.update(
        task_serializer="json",
        accept_content=["json"],
        task_ignore_result=True,
        result_backend=None,
        task_acks_late=True,
        # A message whose worker died is not delivered again by the broker: the reaper sees the silent heartbeat in
        # SQL and re-queues the run to resume from its checkpoint, with a new message of its own.
        task_reject_on_worker_lost=False,
        worker_prefetch_multiplier=1,
        # Take a message only with a free process. A busy worker's prefetch window is normally full (its running task
        # is unacknowledged), but Celery resets the window when the broker connection comes back: after a Redis
        # restart a worker still training reserved the next run's message and held it behind its own long run while
        # another worker of the queue sat idle.
        worker_disable_prefetch=True,
        # The task only claims and supervises; each run trains in a fresh process of its own (a clean CUDA context, a
        # true peak-RSS figure), so the pool's child stays warm and drops a duplicate delivery in milliseconds.
        task_default_queue=settings.default_queue,
        broker_transport_options={"visibility_timeout": settings.visibility_timeout_s, "socket_connect_timeout": 3},
        broker_connection_retry_on_startup=True,
        worker_hijack_root_logger=False,
    )
    return app


celery_app = make_celery()
