"""The Celery application (broker: Redis).

Its default queue is the installation's (``CELERY_TASK_DEFAULT_QUEUE``, derived from the
database unless ``UMBRA_CELERY_QUEUE`` names it), so two platforms sharing a Redis never
take each other's tasks.
"""
import os

from celery import Celery
from celery.signals import worker_ready

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "umbra_site.settings")

app = Celery("umbra")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# Where `celery beat` runs (the compose stack), it also pumps the run queue now and then;
# without beat the queue schedules its own looks while runs wait (runs.tasks).
app.conf.beat_schedule = {"pump-run-queue": {"task": "runs.tasks.pump_queue", "schedule": 30.0}}


@worker_ready.connect
def take_up_unfinished_runs(sender=None, **kwargs) -> None:
    """On every worker start, take up the runs a killed worker may have dropped and pump
    the queue: Redis hands a dead worker's unacknowledged tasks (its dispatches, its
    scheduled follow polls) to others only after the visibility timeout, an hour, and
    the queued runs wait in the database, not in messages."""
    from runs.tasks import recover_runs

    recover_runs.delay()
