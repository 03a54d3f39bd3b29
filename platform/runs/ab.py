"""The A/B launcher (ours): one config run under the baseline (veRL's rollout, policy
``verl``) and under ``seer`` (plus optional ablations of seer), grouped as one new
experiment and queued one after another on the same cluster (``Run.after``: the queue
dispatches a run only once the one before it has ended), so that neither run's
throughput is measured while the other competes for the cluster."""
from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from runs.models import Experiment, Run
from runs.services import create_run
from umbra.config import RunConfig

BASELINE = "verl"


def ab_configs(config: RunConfig, ablations: list[tuple[str, dict]]) -> list[tuple[str, RunConfig]]:
    """``[(label, config), ...]`` in queue order: the baseline, seer, then each ablation of seer."""
    seer = config.model_copy(update={"rollout_policy": "seer"})
    out = [(BASELINE, config.model_copy(update={"rollout_policy": BASELINE})), ("seer", seer)]
    for label, changes in ablations:
        out.append((label, RunConfig.model_validate({**seer.model_dump(), **changes})))
    return out


def ab_experiment_name(base: str, now=None) -> str:
    """A fresh experiment name for one A/B launch: ``gsm8k · A/B 2026-12-01 23:10:05``."""
    stamp = (now or timezone.now()).strftime("%Y-%m-%d %H:%M:%S")
    return f"{base.strip()[:170]} · A/B {stamp}"


def launch_ab(user, team, experiment: str, config: RunConfig, ablations: list[tuple[str, dict]]) -> list[Run]:
    """Queue the A/B runs of ``config`` in a new experiment, each after the one before.

    All or nothing: raises SubmissionRefused (nothing stored) when the team's or the
    user's limits refuse any of them.
    """
    stamp = ab_experiment_name(experiment)
    runs: list[Run] = []
    with transaction.atomic():  # create_run's pump request fires once this commits
        # two launches within one second must not share an experiment (their runs would mix)
        name, n = stamp, 2
        while Experiment.objects.filter(team=team, name=name).exists():
            name, n = f"{stamp} ({n})", n + 1
        for label, cfg in ab_configs(config, ablations):
            run = create_run(user, team, name, cfg)
            if runs:
                Run.objects.filter(pk=run.pk).update(after=runs[-1])
                run.after = runs[-1]
            runs.append(run)
    return runs
