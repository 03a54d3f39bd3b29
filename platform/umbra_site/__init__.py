"""The Django project of Umbra's web platform."""
from umbra_site.celery import app as celery_app

__all__ = ("celery_app",)
