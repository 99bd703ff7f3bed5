"""The tasks. Thin: an id in, one service call."""

import threading

from celery.signals import worker_ready, worker_shutdown

from tunelab.core.redis import release_embedded_redis
from tunelab.services import workers
from tunelab.services.exports import execute_export
from tunelab.services.playground import execute_request
from tunelab.services.supervisor import execute_run, worker_name
from tunelab.worker.broker import get_broker
from tunelab.worker.celery_app import EXPORT_RUN_TASK, GENERATE_COMPLETIONS_TASK, TRAIN_RUN_TASK, celery_app

_presence_stop = threading.Event()


@celery_app.task(name=TRAIN_RUN_TASK)
def train_run(run_id: int) -> None:
    execute_run(run_id, broker=get_broker())


@celery_app.task(name=EXPORT_RUN_TASK)
def export_run(export_id: int) -> None:
    execute_export(export_id, worker_name())


@celery_app.task(name=GENERATE_COMPLETIONS_TASK)
def generate_completions(request_id: str) -> None:
    execute_request(request_id)


@worker_ready.connect
def _announce(sender, **_):
    queues = [q.name for q in sender.app.amqp.queues.consume_from.values()] if sender.app.amqp.queues else []
    workers.keep_announcing(sender.hostname, queues, _presence_stop)


@worker_shutdown.connect
def _withdraw(**_):
    _presence_stop.set()
    release_embedded_redis()
