"""The run queue: a queued run is dispatched only when its Ray cluster can hold it.

The queue is the database's ``queued`` runs, never Celery messages, so a restart of the
web server or the worker loses nothing. Each cluster has its own line, in
``runs.fairness`` order (round-robin between teams, first come first served within one).
:func:`pump` walks each line and hands the runs that fit to the dispatcher
(``runs.dispatch.dispatch``): a run fits when its demand (``runs.demand``) fits the
cluster's total resources less the demand of the platform's runs already dispatched
there (``dispatching`` or ``running``). Ray's own "available" figures are not used: they
lag the autoscaler's reports, and a run just dispatched holds nothing until its engines
have loaded, so the next run would be let in on top of it.

The head of a line that does not fit blocks the runs behind it (no back-filling with
smaller runs: the big one would starve). A run larger than its whole cluster is dispatched
when nothing else of the platform runs there (Ray, or its autoscaler, then decides), so a
run on an idle cluster always starts at once. A team with ``UMBRA_TEAM_MAX_RUNNING`` runs
dispatched is passed over, without blocking the others.

A run with ``after`` set waits outside the lines until that run has ended (succeeded,
failed or cancelled): the A/B launcher's runs share a cluster one after another.

One pump decides at a time (the lease ``runs:queue:pump``): two would both count the same
free resources. The Celery side (when to pump) is ``runs.tasks``.
"""
from __future__ import annotations

import uuid
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction
from django.db.models import Max, Q
from django.utils import timezone

from runs import leases, ray_jobs
from runs.demand import ModelSize, Resources, model_size, run_demand
from runs.fairness import Waiting, fair_order
from runs.lifecycle import transition
from runs.models import Run
from umbra.config import RunConfig

ACTIVE = (Run.State.DISPATCHING, Run.State.RUNNING)
PUMP_LEASE_KEY = "runs:queue:pump"
# Seconds one pump may take to read every cluster and decide; renewed per cluster.
PUMP_LEASE_S = 120
# The id a not-yet-stored run takes in the order: after every stored one of the same instant.
_NEW_RUN = 2**62


@dataclass(frozen=True)
class Decision:
    """What one pump did: the runs it moved to ``dispatching`` (to be submitted, in order),
    and how many runs still wait."""

    dispatched: list[int] = field(default_factory=list)
    waiting: int = 0


def _line_key(config: dict) -> str:
    return ray_jobs.cluster_address(config)


def _served_at_by_line_and_team() -> dict[tuple[str, int], object]:
    """When each team last had a run dispatched on each cluster: round-robin is per line,
    so a team busy on another cluster does not lose its turn on this one."""
    served: dict[tuple[str, int], object] = {}
    for team_id, cluster, at in (Run.objects.filter(dispatched_at__isnull=False)
                                 .values("experiment__team", "config__cluster")
                                 .annotate(last=Max("dispatched_at"))
                                 .values_list("experiment__team", "config__cluster", "last")):
        key = (_line_key({"cluster": cluster}), team_id)
        served[key] = max(served.get(key, at), at)  # "" and None (the default cluster) meet here
    return served


def _lines(extra: Waiting | None = None, extra_config: dict | None = None) -> dict[str, list[Waiting]]:
    """Every cluster's waiting runs in dispatch order (plus ``extra``, a run not stored, on
    the line of ``extra_config``)."""
    served = _served_at_by_line_and_team()
    by_line: dict[str, list[Waiting]] = defaultdict(list)
    for run_id, team_id, queued_at, config in _ready().values_list("pk", "experiment__team", "queued_at", "config"):
        line = _line_key(config)
        by_line[line].append(Waiting(run_id, team_id, queued_at, served.get((line, team_id))))
    if extra is not None:
        line = _line_key(extra_config or {})
        by_line[line].append(Waiting(extra.run_id, extra.team_id, extra.queued_at, served.get((line, extra.team_id))))
    return {line: fair_order(waiting) for line, waiting in by_line.items()}


def _ready():
    """Queued runs not waiting for another run (``Run.after``) to end: a run behind one
    still queued or running is out of every line, so it blocks nobody."""
    return Run.objects.filter(state=Run.State.QUEUED).filter(Q(after__isnull=True) | Q(after__state__in=Run.TERMINAL))


def positions() -> dict[int, int]:
    """``{run id: 1-based place in its cluster's line}`` for every queued run."""
    return {w.run_id: i for line in _lines().values() for i, w in enumerate(line, start=1)}


def would_be_position(team, config: RunConfig) -> int:
    """The place a run of ``config`` submitted now by ``team`` would take in its line."""
    new = Waiting(_NEW_RUN, team.pk, timezone.now())
    dumped = config.model_dump()
    line = _lines(new, dumped)[_line_key(dumped)]
    return next(i for i, w in enumerate(line, start=1) if w.run_id == _NEW_RUN)


class _Demands:
    """Run demands on one cluster, with the model sizes read once per pump."""

    def __init__(self, gpu_cluster: bool):
        self.gpu_cluster = gpu_cluster
        self._sizes: dict[str, ModelSize] = {}

    def of(self, config: dict) -> Resources:
        # Stored configs were validated when submitted; a data set or model folder gone
        # since must not stop the queue (the dispatch reports it), so no validation here.
        cfg = RunConfig.model_construct(**{k: v for k, v in config.items() if k in RunConfig.model_fields})
        if cfg.model not in self._sizes:
            self._sizes[cfg.model] = model_size(cfg.model)
        return run_demand(cfg, self._sizes[cfg.model], self.gpu_cluster)


def pump(totals_of: Callable[[dict], dict] | None = None) -> Decision | None:
    """Move every waiting run that its cluster can hold now to ``dispatching``, in fair
    order; returns the :class:`Decision`, or None when another pump holds the lease.

    ``totals_of(config)`` gives the total resources (Ray's names) of a run's cluster
    (``runs.ray_jobs.cluster_totals``; tests give fixed ones). A cluster whose totals cannot
    be read gets one run when none of the platform's runs is there: its dispatch then
    retries and, if the cluster stays silent, fails the run with the cluster's error.
    """
    totals_of = totals_of or ray_jobs.cluster_totals
    owner = uuid.uuid4().hex
    if not leases.hold(PUMP_LEASE_KEY, owner, PUMP_LEASE_S):
        return None
    try:
        lines = _lines()
        if not lines:
            return Decision()
        running = Counter(Run.objects.filter(state__in=ACTIVE).values_list("experiment__team", flat=True))
        active_by_line: dict[str, list[dict]] = defaultdict(list)
        for config in Run.objects.filter(state__in=ACTIVE).values_list("config", flat=True):
            active_by_line[_line_key(config)].append(config)
        configs = dict(_ready().values_list("pk", "config"))
        dispatched: list[int] = []
        for line, waiting in lines.items():
            if not leases.hold(PUMP_LEASE_KEY, owner, PUMP_LEASE_S):
                break  # the lease lapsed (a very slow cluster): another pump decides now
            dispatched += _pump_line(waiting, configs, active_by_line[line], running, totals_of,
                                     lambda: leases.hold(PUMP_LEASE_KEY, owner, PUMP_LEASE_S))
        return Decision(dispatched, sum(len(w) for w in lines.values()) - len(dispatched))
    finally:
        leases.release(PUMP_LEASE_KEY, owner)


def _pump_line(waiting: list[Waiting], configs: dict[int, dict], active: list[dict], running: Counter,
               totals_of: Callable[[dict], dict], still_ours: Callable[[], bool]) -> list[int]:
    """Dispatch the runs of one cluster's line that fit (see the module docstring)."""
    waiting = [w for w in waiting if w.run_id in configs]  # ended between the two reads
    if not waiting:
        return []
    try:
        totals = Resources.from_ray(totals_of(configs[waiting[0].run_id]))
    except ray_jobs.ClusterUnavailable as exc:
        totals, unreadable = None, str(exc)
    demands = _Demands(gpu_cluster=totals is not None and totals.gpu >= 1)
    held = sum((demands.of(c) for c in active), Resources())
    busy = bool(active)
    cap = settings.UMBRA_TEAM_MAX_RUNNING
    out = []
    for w in waiting:
        if cap and running[w.team_id] >= cap:
            continue  # this team waits for one of its runs to end; the others go on
        need = demands.of(configs[w.run_id])
        if totals is None:
            if busy:
                break
            why = f"the cluster's resources could not be read ({unreadable}); nothing else runs there"
        elif need.fits_in(totals - held):
            why = f"needs {need}; {totals - held} free of {totals}"
        elif not busy:
            why = f"needs {need}, more than the cluster's {totals}; it has the cluster to itself"
        else:
            break  # the head waits for room, and so does every run behind it
        if not still_ours():
            break  # the lease lapsed mid-line: another pump decides from here
        if _take(w.run_id, f"dispatched from the queue: {why}"):
            out.append(w.run_id)
            held, busy = held + need, True
            running[w.team_id] += 1
    return out


def _take(run_id: int, reason: str) -> bool:
    """Move a queued run to ``dispatching`` (False if it was cancelled meanwhile)."""
    with transaction.atomic():
        if not transition(run_id, Run.State.DISPATCHING, reason):
            return False
        Run.objects.filter(pk=run_id).update(dispatched_at=timezone.now())
    return True
