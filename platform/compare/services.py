"""Build a comparison of runs the user may see: summary table, reference ratios,
config diff and downsampled overlaid series (the JSON of ``GET /api/compare/``)."""
from __future__ import annotations

from django.http import Http404
from django.utils import timezone

from compare.concurrency import concurrent_pairs, shared_with_others
from compare import stats as stats_mod
from compare.stored import stored_per_run
from compare.summary import (STAT_METRICS, applicable, config_diff, default_reference, ratios,
                             reference_mismatch, summary_row, summary_sources)
from runs.models import Run
from runs.selectors import visible_runs
from telemetry.series import MAX_POINTS_LIMIT, X_AXES, metric_names, names_per_run, series_points, shape_series
from telemetry.series_cache import cached_per_run, run_versions
from umbra.telemetry import catalog

MAX_RUNS = 50
MAX_SERVED_POINTS = 300_000  # runs x metrics x max_points: bounds the answer's size and time
DEFAULT_METRICS = tuple(catalog.compare_defaults())  # the catalogue's ``compare`` entries
# a custom reward's extra numbers (umbra.rewards.score): "reward/extra/" and the reward's own keys
REWARD_EXTRA_PREFIX = catalog.get("reward/extra/{key}").name.partition("{")[0]


def runs_for_compare(user, run_ids: list[int]) -> list[Run]:
    """The runs ``run_ids`` in the given order (duplicates dropped).

    Raises ValueError for none or more than 50 ids, Http404 if any is not visible to ``user``.
    """
    ids = list(dict.fromkeys(run_ids))
    if not 1 <= len(ids) <= MAX_RUNS:
        raise ValueError(f"give between 1 and {MAX_RUNS} run ids")
    found = {r.pk: r for r in visible_runs(user).filter(pk__in=ids)}
    missing = [i for i in ids if i not in found]
    if missing:
        raise Http404(f"no such run: {missing[0]}")
    return [found[i] for i in ids]


def label(run: Run) -> str:
    """Short human label: ``#7 Alpha/gsm8k seer``, the run's own name after the id where it has one
    (``#7 baseline-lr3e-6 · Alpha/gsm8k seer``)."""
    named = f"{run.name} · " if run.name else ""
    return f"#{run.pk} {named}{run.experiment.team.name}/{run.experiment.name} {run.config.get('rollout_policy', '?')}"


def _stats(run_ids: list[int], names: list[str], versions: dict[int, str]) -> dict[int, dict[str, dict]]:
    """``compare.stats.run_stats``, with ended runs' statistics stored (``compare.stored``)."""
    pairs = stored_per_run("stats", run_ids, names, versions,
                           lambda runs, parts: cached_per_run("stats", runs, parts, stats_mod.compute, versions))
    out: dict[int, dict[str, dict]] = {}
    for (run_id, name), value in pairs.items():
        out.setdefault(run_id, {})[name] = value
    return out


def reward_extras(run_ids: list[int], versions: dict[int, str]) -> list[str]:
    """The ``reward/extra/<key>`` names any of ``run_ids`` logged (at most 16 a run), for the
    page's metric picker; stored for ended runs and cached for live ones like their series."""
    def compute(runs, parts):
        return {(run_id, REWARD_EXTRA_PREFIX): names for run_id, names in names_per_run(runs, REWARD_EXTRA_PREFIX).items()}

    found = stored_per_run("names", run_ids, [REWARD_EXTRA_PREFIX], versions,
                           lambda runs, parts: cached_per_run("names", runs, parts, compute, versions))
    return sorted({name for names in found.values() for name in names})


def build_comparison(user, run_ids: list[int], metrics: list[str] | None = None, x: str = "step",
                     max_points: int = 1500, reference: int | None = None) -> dict:
    """The comparison document (shape in docs/api.md, "Compare").

    Raises ValueError for bad arguments (unknown x, reference not among the runs, too
    many runs or metrics) and Http404 for runs the user may not see.
    """
    runs = runs_for_compare(user, run_ids)
    metrics = list(dict.fromkeys(metrics or DEFAULT_METRICS))
    if len(metrics) > 20:
        raise ValueError("give at most 20 metrics")
    if len(runs) * len(metrics) * max_points > MAX_SERVED_POINTS:
        raise ValueError(f"{len(runs)} runs x {len(metrics)} metrics x max_points {max_points} is more than "
                         f"{MAX_SERVED_POINTS:,} points: lower max_points or compare fewer runs or metrics")
    configs = {r.pk: r.config for r in runs}
    versions = run_versions(list(configs))
    if x not in X_AXES:
        raise ValueError(f"x must be one of {', '.join(X_AXES)}")
    if not 2 <= max_points <= MAX_POINTS_LIMIT:
        raise ValueError(f"max_points must be between 2 and {MAX_POINTS_LIMIT}")
    stats = _stats(list(configs), STAT_METRICS, versions)
    if reference is None:
        reference = default_reference(configs, with_data=set(stats))
    elif reference not in configs:
        raise ValueError("reference must be one of the compared runs")
    rows = {r.pk: applicable(summary_row(stats.get(r.pk, {})), r.config) for r in runs}
    sources = {r.pk: summary_sources(stats.get(r.pk, {})) for r in runs}
    series = shape_series(stored_per_run(
        f"series-{max_points}", list(configs), metrics, versions,
        lambda runs, parts: series_points(runs, parts, max_points, versions=versions)), list(configs), x)
    return {
        "x": x, "metrics": metrics, "reward_extras": reward_extras(list(configs), versions), "reference": reference,
        "reference_mismatch": {str(k): v for k, v in reference_mismatch(configs, reference).items()},
        "concurrent": concurrent_pairs(runs, timezone.now()),
        "shared_cluster": shared_with_others(runs, user, timezone.now()),
        "runs": [{"id": r.pk, "label": label(r), "team": r.experiment.team.slug, "experiment": r.experiment.name,
                  "policy": r.config.get("rollout_policy"), "state": r.state, "url": f"/runs/{r.pk}/",
                  "summary": rows[r.pk], "sources": sources[r.pk],
                  "ratios": ratios(rows[r.pk], rows[reference], sources[r.pk], sources[reference])} for r in runs],
        "config_diff": {"keys": (d := config_diff(configs))["keys"],
                        "values": {str(k): v for k, v in d["values"].items()}},
        "series": {m: {str(r): s for r, s in by_run.items()} for m, by_run in series.items()},
    }


def store_derived(run_id: int, max_points: int) -> int:
    """Compute and store an ended run's series of every metric it logged (at ``max_points``),
    its summary statistics and its reward extras' names; what a comparison then reads. Returns the number of series."""
    names = metric_names([run_id])
    versions = run_versions([run_id])
    stored_per_run(f"series-{max_points}", [run_id], names, versions,
                   lambda runs, parts: series_points(runs, parts, max_points, versions=versions))
    _stats([run_id], STAT_METRICS, versions)
    reward_extras([run_id], versions)  # the metric picker's names: else the first comparison's slowest query
    return len(names)
