"""Signals of the runs app, so that other apps react to runs without runs importing them.

``state_changed`` is sent once the transaction that moved a run to a new state has
committed (``runs.lifecycle.transition``), with ``run_id``, ``state`` and ``reason``.
Connected in the receivers' AppConfig.ready: the queue looks for room when a run ends
(``runs.receivers``), telemetry pushes the state to open
dashboards (``telemetry.receivers``), compare warms a finished run's caches
(``compare.receivers``).
"""
from django.dispatch import Signal

state_changed = Signal()
# Sent by the follow chain when the Ray job's log tail changed, with ``run_id`` and ``tail``
# (telemetry pushes it to open dashboards: ``telemetry.receivers``).
log_updated = Signal()
