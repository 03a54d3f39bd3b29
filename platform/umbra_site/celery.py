"""The Celery application (broker: Redis)."""
import os

from celery import Celery
from celery.signals import worker_ready

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "umbra_site.settings")

app = Celery("umbra")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_ready.connect
def take_up_unfinished_runs(sender=None, **kwargs) -> None:
    """On every worker start, take up the runs a killed worker may have dropped: Redis
    hands a dead worker's unacknowledged tasks (its dispatches, its scheduled follow
    polls) to others only after the visibility timeout, an hour."""
    from runs.tasks import recover_runs

    recover_runs.delay()
