"""The columns of a comparison's summary table: which metric, reduced how.

One definition for the platform (``compare.summary`` computes them, ``GET /api/compare/``
returns them under these keys), the CLI (``umbra compare``) and the compare page (embedded
with the metric catalogue). Titles and which way is better come from the catalogue.
"""
from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass
from typing import Literal

from umbra.telemetry import catalog

Stat = Literal["median", "last", "count"]
_STAT_WORDS = {"median": "median", "last": "final"}


@dataclass(frozen=True)
class SummaryColumn:
    """``key`` in the API's ``summary`` / ``ratios``; ``stat`` over the run's points of
    ``metric``: ``median`` (damps the first iteration's warm-up), ``last`` (the value at the
    highest step) or ``count`` (points, i.e. iterations done). A run without ``metric`` is read
    from ``fallback`` when given (validation accuracy, else training accuracy); ``label``
    replaces the metric's label in the title (a column of two metrics)."""

    key: str
    metric: str
    stat: Stat
    fallback: str | None = None
    label: str | None = None

    @property
    def metrics(self) -> tuple[str, ...]:
        """The metrics the column reads, preferred first."""
        return (self.metric,) if self.fallback is None else (self.metric, self.fallback)

    def source(self, logged: Container[str]) -> str | None:
        """The metric this column reads for a run that logged ``logged``; None if neither."""
        return next((m for m in self.metrics if m in logged), None)

    @property
    def title(self) -> str:
        """Short header without the statistic: ``throughput tok/s``; ``iterations`` for a count."""
        if self.stat == "count":
            return "iterations"
        m = catalog.get(self.metric)
        return f"{self.label or m.label} {m.unit}".strip()

    @property
    def better(self) -> catalog.Better:
        return "none" if self.stat == "count" else catalog.get(self.metric).better

    def as_dict(self) -> dict:
        """``{key, metric, stat, title, heading, better}``; ``heading`` names the statistic too."""
        word = _STAT_WORDS.get(self.stat)
        return {"key": self.key, "metric": self.metric, "stat": self.stat, "title": self.title,
                "heading": f"{self.title} ({word})" if word else self.title, "better": self.better}


SUMMARY_COLUMNS: tuple[SummaryColumn, ...] = (
    SummaryColumn("throughput_tok_s", "rollout/throughput_tok_s", "median"),
    SummaryColumn("tail_time_s", "rollout/tail_time_s", "median"),
    SummaryColumn("accept_len", "rollout/spec/accept_len", "median"),
    SummaryColumn("reward", "reward/mean", "last"),
    # validation accuracy where the run validated (val/accuracy), else training accuracy; the API
    # says which per run (``sources``) and the page labels the two apart
    SummaryColumn("accuracy", "val/accuracy", "last", fallback="reward/accuracy", label="accuracy"),
    SummaryColumn("iterations", catalog.ITERATION_METRIC, "count"),
)
for _column in SUMMARY_COLUMNS:  # a renamed metric fails here (KeyError), at import, not as an empty column
    for _name in _column.metrics:
        catalog.get(_name)
del _column, _name
