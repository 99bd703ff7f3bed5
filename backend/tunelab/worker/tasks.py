"""The tasks. Thin: an id in, one service call."""

import os
import threading

from celery.signals import worker_process_init, worker_ready, worker_shutdown, worker_shutting_down

from tunelab.core.redis import release_embedded_redis
from tunelab.core.settings import get_settings
from tunelab.services.evaluation.playground import execute_request, warm_up_in_background
from tunelab.services.runs import run_queues, workers
from tunelab.services.runs.exports import execute_export
from tunelab.worker.broker import get_broker
from tunelab.worker.celery_app import (
    EXPORT_RUN_TASK,
    GENERATE_COMPLETIONS_TASK,
    TRAIN_RUN_TASK,
    WORKER_QUEUES_ENV,
    celery_app,
)
from tunelab.worker.supervisor import announce_shutdown, clear_shutdown, execute_run, start_warm_process, worker_name

_presence_stop = threading.Event()


@celery_app.task(name=TRAIN_RUN_TASK)
def train_run(run_id: int) -> None:
    if _serves_the_playground():
        run_queues.refuse_training_here(get_settings(), run_id)
    else:
        execute_run(run_id, broker=get_broker())


@celery_app.task(name=EXPORT_RUN_TASK)
def export_run(export_id: int) -> None:
    execute_export(export_id, worker_name())


@celery_app.task(name=GENERATE_COMPLETIONS_TASK)
def generate_completions(request_id: str) -> None:
    execute_request(request_id)


def _serves_the_playground() -> bool:
    """An inference worker consumes the inference queue alone (`tunelab worker` refuses it beside a training queue)."""
    return get_settings().infer_queue in os.environ.get(WORKER_QUEUES_ENV, "").split(",")


@worker_process_init.connect
def _warm_up(**_):
    if _serves_the_playground():
        warm_up_in_background()
    else:
        start_warm_process()


@worker_shutting_down.connect
def _stop_runs_at_a_checkpoint(**_):
    announce_shutdown()


@worker_ready.connect
def _announce(sender, **_):
    clear_shutdown()
    queues = [q.name for q in sender.app.amqp.queues.consume_from.values()] if sender.app.amqp.queues else []
    workers.keep_announcing(sender.hostname, queues, _presence_stop)


@worker_shutdown.connect
def _withdraw(**_):
    _presence_stop.set()
    release_embedded_redis()
