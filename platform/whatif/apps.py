from django.apps import AppConfig


class WhatifConfig(AppConfig):
    """What-if simulations of rollout policies (the ``umbra.sim`` simulator, run by Celery)."""

    name = "whatif"
    default_auto_field = "django.db.models.BigAutoField"
