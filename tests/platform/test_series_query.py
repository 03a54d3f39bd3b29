"""The PostgreSQL downsampling and statistics queries agree with the Python reference."""
import random
import statistics

import pytest

from compare.stats import run_stats
from runs.models import Run
from telemetry import series as series_mod
from telemetry.models import MetricPoint
from tests import factories


@pytest.fixture
def two_runs(db):
    exp = factories.experiment(factories.team("t", name="T"), "e")
    runs = [factories.run(exp, config={}) for _ in range(2)]
    rng = random.Random(3)
    rows = []
    for run in runs:
        for name, n in (("a", 5000), ("b", 40)):
            steps = sorted(rng.sample(range(n * 3), n))
            rows += [MetricPoint(run=run, name=name, step=s, value=rng.gauss(0, 1) + (50 if s == steps[n // 2] else 0))
                     for s in steps]
    MetricPoint.objects.bulk_create(rows)
    return [r.pk for r in runs]


@pytest.mark.parametrize("x", ["step", "wall", "relative"])
def test_postgres_downsampling_equals_the_reference(two_runs, x, monkeypatch):
    fast = series_mod.series_of(two_runs, ["a", "b"], x=x, max_points=300, cached=False)
    assert series_mod.series_of(two_runs, ["a", "b"], x=x, max_points=300) == fast  # through the cache, twice
    assert series_mod.series_of(two_runs, ["a", "b"], x=x, max_points=300) == fast
    monkeypatch.setattr(series_mod, "_pg_points", series_mod._python_points)
    reference = series_mod.series_of(two_runs, ["a", "b"], x=x, max_points=300, cached=False)
    assert fast == reference
    for run in two_runs:
        assert len(fast["a"][run]["y"]) <= 300 and max(fast["a"][run]["y"]) > 40  # the spike survives
        assert len(fast["b"][run]["y"]) == 40  # short series untouched


def test_postgres_stats_equal_python(two_runs):
    stats = run_stats(two_runs, ["a", "b", "missing"], cached=False)
    assert run_stats(two_runs, ["a", "b", "missing"]) == stats == run_stats(two_runs, ["a", "b", "missing"])
    for run in two_runs:
        values = list(MetricPoint.objects.filter(run_id=run, name="a").order_by("step").values_list("value", flat=True))
        assert stats[run]["a"]["median"] == pytest.approx(statistics.median(values))
        assert stats[run]["a"]["last"] == values[-1] and stats[run]["a"]["count"] == 5000
        assert "missing" not in stats[run]


def test_new_points_are_never_hidden_by_the_cache(two_runs):
    before = series_mod.series_of(two_runs[:1], ["b"])["b"][two_runs[0]]
    assert len(before["y"]) == 40 and run_stats(two_runs[:1], ["b"])[two_runs[0]]["b"]["count"] == 40
    from umbra.telemetry.wire import BatchIn
    from telemetry.services import ingest

    run = Run.objects.get(pk=two_runs[0])
    assert ingest(run, BatchIn.model_validate({"seq": 1, "points": [{"name": "b", "step": 10**6, "value": 123.0}]}))
    after = series_mod.series_of(two_runs[:1], ["b"])["b"][two_runs[0]]
    assert after["x"][-1] == 10**6 and after["y"][-1] == 123.0
    assert run_stats(two_runs[:1], ["b"])[two_runs[0]]["b"]["last"] == 123.0


def test_bad_arguments_are_value_errors(two_runs):
    with pytest.raises(ValueError):
        series_mod.series_of(two_runs, ["a"], x="bogus")
    with pytest.raises(ValueError):
        series_mod.series_of(two_runs, ["a"], max_points=1)
