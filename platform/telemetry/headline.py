"""The run page's headline numbers (ours): rollout throughput and tail time (medians over
iterations, which damp the first iteration's warm-up, as the comparison's summary does),
acceptance length, the last reward, validation accuracy and training accuracy, and their ratio to a reference run:
the experiment's ``verl`` (else ``static-group``) run of the same config, else the team's
latest such run.

A baseline that shared the cluster with the run while it ran (``runs.overlap``) is taken only
when no other of the same config exists, and then the answer says so (``concurrent``): their
throughput ratio would say as much about the overlap as about the policy.

"The same config" is every config key but the rollout policy's own (``POLICY_KEYS``, as in
``compare.summary``; tests/platform/test_run_page.py keeps the two equal).
"""
from __future__ import annotations

from django.db import connection
from django.db.models import Exists, OuterRef
from django.utils import timezone

from runs.models import Run
from runs.overlap import ran_concurrently
from runs.selectors import visible_runs
from telemetry.models import MetricPoint

POLICY_KEYS = frozenset({"rollout_policy", "chunk_tokens", "seer_divided", "seer_context_aware", "seer_length_history",
                         "spec_decoding", "spec_history"})
BASELINE_POLICIES = ("verl", "static-group")
# (key, metric, statistic): the headline, in the order shown.
HEADLINE = (("throughput", "rollout/throughput_tok_s", "median"), ("tail", "rollout/tail_time_s", "median"),
            ("accept_len", "rollout/spec/accept_len", "median"), ("reward", "reward/mean", "last"),
            ("val_accuracy", "val/accuracy", "last"), ("accuracy", "reward/accuracy", "last"))
CANDIDATES = 200  # the team's latest baseline runs looked at for one of the same config

_STATS = """
SELECT run_id, name, percentile_cont(0.5) WITHIN GROUP (ORDER BY value),
       (array_agg(value ORDER BY step DESC))[1]
FROM telemetry_metricpoint WHERE run_id = ANY(%s) AND name = ANY(%s) GROUP BY run_id, name
"""


def _same_config(a: dict, b: dict) -> bool:
    return {k: v for k, v in a.items() if k not in POLICY_KEYS} == {k: v for k, v in b.items() if k not in POLICY_KEYS}


def reference_for(user, run: Run) -> Run | None:
    """The run ``run`` is measured against (see the module docstring), or None: never ``run``
    itself, only runs with a throughput logged (a baseline cancelled before its first point is
    no reference), and for a baseline run only one created before it."""
    measured = MetricPoint.objects.filter(run=OuterRef("pk"), name=HEADLINE[0][1])
    baselines = visible_runs(user).filter(Exists(measured), experiment__team=run.experiment.team_id,
                                          config__rollout_policy__in=BASELINE_POLICIES).exclude(pk=run.pk)
    if run.config.get("rollout_policy") in BASELINE_POLICIES:
        baselines = baselines.filter(created_at__lt=run.created_at)
    same = [r for r in baselines.order_by("-created_at", "-pk")[:CANDIDATES] if _same_config(r.config, run.config)]
    now = timezone.now()
    alone = [r for r in same if not ran_concurrently(r, run, now)]
    for candidates in (alone, same):
        for policy in BASELINE_POLICIES:
            for pool in ([r for r in candidates if r.experiment_id == run.experiment_id], candidates):
                found = next((r for r in pool if r.config.get("rollout_policy") == policy), None)
                if found:
                    return found
    return None


def headline_values(run_ids: list[int]) -> dict[int, dict[str, float]]:
    """``{run_id: {key: value}}`` of the HEADLINE numbers each run logged (one query)."""
    by_metric = {metric: (key, stat) for key, metric, stat in HEADLINE}
    out: dict[int, dict[str, float]] = {r: {} for r in run_ids}
    with connection.cursor() as cur:
        cur.execute(_STATS, [run_ids, list(by_metric)])
        for run_id, name, median, last in cur.fetchall():
            key, stat = by_metric[name]
            out[run_id][key] = float(median if stat == "median" else last)
    return out


def headline(user, run: Run) -> dict:
    """``{"values": {...}, "reference": {"id", "policy", "name", "values", "url", "concurrent"} | None,
    "ratios": {...}}``;
    a ratio is left out where either value is missing or the reference's is near zero."""
    ref = reference_for(user, run)
    values = headline_values([run.pk] + ([ref.pk] if ref else []))
    for r in (run, ref):  # a run without speculation logs accept length 1: no accept length (as compare.summary)
        if r is not None and not r.config.get("spec_decoding"):
            values[r.pk].pop("accept_len", None)
    mine = values[run.pk]
    ratios = {}
    if ref:
        for key, value in mine.items():
            base = values[ref.pk].get(key)
            if base is not None and abs(base) > 1e-9:
                ratios[key] = value / base
    return {"values": mine, "ratios": ratios,
            "reference": None if ref is None else {"id": ref.pk, "policy": ref.config.get("rollout_policy"),
                                                   "name": ref.name or f"#{ref.pk}", "values": values[ref.pk],
                                                   "url": f"/runs/{ref.pk}/",
                                                   "concurrent": ran_concurrently(ref, run, timezone.now())}}
