"""The team's runs table (ours): runs filtered, searched, sorted and annotated with their
latest key numbers, progress and ETA in the one paged query.

Each number is a correlated subquery on ``(run, name, step)`` (the unique index of
``MetricPoint``): one index probe per run and column on the page, not a query per run.
"""
from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Avg, Count, F, FloatField, IntegerField, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce, Now

from runs.models import Run
from telemetry.models import MetricPoint
from umbra.telemetry import catalog

# (annotation, metric): the latest value of each, shown as the table's number columns.
# The validation accuracy column appears once the catalogue has such a metric (``val/...accuracy``).
_VAL = next((m.name for m in catalog.METRICS if m.name.startswith("val/") and m.name.endswith("accuracy")), None)
KEY_NUMBERS = (("throughput", "rollout/throughput_tok_s"), ("tail", "rollout/tail_time_s"),
               ("reward", "reward/mean"), ("accuracy", "reward/accuracy"),
               *((("val_accuracy", _VAL),) if _VAL else ()))
# ?sort= values (a leading "-" for descending) and the field they order by.
SORTS = {"created": "created_at", "name": "name", "state": "state", "owner": "created_by__username",
         "experiment": "experiment__name", "duration": "duration", "progress": "iterations_done",
         **{key: key for key, _ in KEY_NUMBERS}}
DEFAULT_SORT = "-created"
PAGE_SIZE = 50


def _latest(name: str) -> Subquery:
    return Subquery(MetricPoint.objects.filter(run=OuterRef("pk"), name=name).order_by("-step").values("value")[:1],
                    output_field=FloatField())


def annotate_numbers(qs: QuerySet[Run]) -> QuerySet[Run]:
    """``qs`` with the latest value of each key number, ``iterations_done``, ``mean_iteration_s``
    and ``duration`` (a timedelta: start to finish, or to now while running)."""
    per_run = MetricPoint.objects.filter(run=OuterRef("pk"), name=catalog.ITERATION_METRIC).order_by().values("run")
    return qs.annotate(
        **{key: _latest(metric) for key, metric in KEY_NUMBERS},
        iterations_done=Coalesce(Subquery(per_run.annotate(c=Count("*")).values("c"), output_field=IntegerField()),
                                 Value(0)),
        mean_iteration_s=Subquery(per_run.annotate(a=Avg("value")).values("a"), output_field=FloatField()),
        duration=Coalesce(F("finished_at"), Now()) - F("started_at"))


@dataclass(frozen=True)
class TableQuery:
    """What the page asks for: filters (``state``, ``policy``, ``tag``, ``owner``), a search
    ``q`` (name, tag, experiment, note or #id) and ``sort``."""

    state: str = ""
    policy: str = ""
    tag: str = ""
    owner: str = ""
    q: str = ""
    sort: str = DEFAULT_SORT

    @classmethod
    def from_params(cls, params) -> tuple["TableQuery", list[str]]:
        """The query from GET parameters and the messages for those not understood (dropped)."""
        errors = []
        values = {k: (params.get(k) or "").strip()[:200] for k in ("state", "policy", "tag", "owner", "q", "sort")}
        if values["state"] and values["state"] not in Run.State.values:
            errors.append(f"state: {values['state']!r} is not one of {', '.join(Run.State.values)}")
            values["state"] = ""
        if values["sort"] and values["sort"].lstrip("-") not in SORTS:
            errors.append(f"sort: {values['sort']!r} is not one of {', '.join(SORTS)}")
            values["sort"] = ""
        values["sort"] = values["sort"] or DEFAULT_SORT
        return cls(**values), errors

    def apply(self, qs: QuerySet[Run]) -> QuerySet[Run]:
        """Filter, search and order ``qs`` (already annotated by ``annotate_numbers``)."""
        if self.state:
            qs = qs.filter(state=self.state)
        if self.policy:
            qs = qs.filter(config__rollout_policy=self.policy)
        if self.tag:
            qs = qs.filter(Q(tags__contains=[self.tag]) | Q(experiment__tags__contains=[self.tag]))
        if self.owner:
            qs = qs.filter(created_by__username=self.owner)
        if self.q:
            words = Q(name__icontains=self.q) | Q(experiment__name__icontains=self.q) | Q(
                tags__contains=[self.q]) | Q(experiment__tags__contains=[self.q]) | Q(note__icontains=self.q)
            digits = self.q.lstrip("#")
            if digits.isascii() and digits.isdigit() and len(digits) < 18:
                words |= Q(pk=int(digits))
            qs = qs.filter(words)
        field = SORTS[self.sort.lstrip("-")]
        descending = self.sort.startswith("-")
        order = F(field).desc(nulls_last=True) if descending else F(field).asc(nulls_last=True)
        return qs.order_by(order, "-pk")


def eta_s(run: Run) -> float | None:
    """Seconds left at the mean iteration time so far (None unless running with one iteration done)."""
    total = run.config.get("iterations")
    if run.state != Run.State.RUNNING or not run.mean_iteration_s or not isinstance(total, int):
        return None
    return max(total - run.iterations_done, 0) * run.mean_iteration_s


def progress_pct(run: Run) -> float:
    """Iterations done as a percentage of the configured ones (100 for a run that succeeded)."""
    total = run.config.get("iterations")
    if run.state == Run.State.SUCCEEDED:
        return 100.0
    if not isinstance(total, int) or total <= 0:
        return 0.0
    return min(100.0, 100.0 * run.iterations_done / total)
