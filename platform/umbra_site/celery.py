"""The Celery application (broker: Redis)."""
import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "umbra_site.settings")

app = Celery("umbra")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
