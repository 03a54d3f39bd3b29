"""At most ``MAX_METRIC_NAMES`` distinct metric names per run (ours): the run page loads every
name a run logged, so a job that logs a new name per point (a host name, a key from a reward)
must not make it load hundreds of thousands. Points of names past the limit are dropped, the
batch's other points kept (refusing the batch would lose the iteration's metrics)."""
from __future__ import annotations

from django.db import connection

from telemetry.models import MetricPoint

# Far above what a run logs: ~100 catalogue names, 3 per actor (64 trainer ranks + 64
# rollout instances), 7 per Ray node, per-instance rollout families, 16 reward extras.
MAX_METRIC_NAMES = 3000

# The run's distinct names, one index probe each on (run_id, name, step), stopped past ``limit``:
# a count(DISTINCT name) would read every point of a long run.
_COUNT_NAMES = f"""
WITH RECURSIVE names(name) AS (
  (SELECT name FROM {MetricPoint._meta.db_table} WHERE run_id = %(run)s ORDER BY name LIMIT 1)
  UNION ALL
  SELECT (SELECT p.name FROM {MetricPoint._meta.db_table} p WHERE p.run_id = %(run)s AND p.name > names.name
          ORDER BY p.name LIMIT 1)
  FROM names WHERE names.name IS NOT NULL
)
SELECT count(name) FROM (SELECT name FROM names WHERE name IS NOT NULL LIMIT %(limit)s) AS first_names
"""


def stored_name_count(run_id: int, limit: int | None = None) -> int:
    """How many distinct metric names run ``run_id`` has stored, counted up to ``limit``
    (MAX_METRIC_NAMES + 1 by default)."""
    with connection.cursor() as cur:
        cur.execute(_COUNT_NAMES, {"run": run_id, "limit": limit or MAX_METRIC_NAMES + 1})
        return cur.fetchone()[0]


def within_name_limit(run_id: int, points: list) -> tuple[list, list[str]]:
    """``(kept, dropped)``: ``points`` less those of new names past the run's limit (new names
    are taken in the order the batch gives them), and the dropped names."""
    names = list(dict.fromkeys(p.name for p in points))
    known = set(MetricPoint.objects.filter(run_id=run_id, name__in=names).values_list("name", flat=True).distinct())
    new = [n for n in names if n not in known]
    if not new:
        return points, []
    room = max(0, MAX_METRIC_NAMES - stored_name_count(run_id))
    if len(new) <= room:
        return points, []
    dropped = set(new[room:])
    return [p for p in points if p.name not in dropped], new[room:]
