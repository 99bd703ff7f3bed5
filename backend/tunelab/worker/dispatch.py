"""Sending work to workers, by task name, so that the API never imports the training stack."""

from tunelab.worker.celery_app import TRAIN_RUN_TASK, celery_app


def send_train_run(run_id: int, queue: str) -> None:
    celery_app.send_task(TRAIN_RUN_TASK, args=[run_id], queue=queue)
