"""The metric catalogue: one entry per metric the job logs, with its unit, its section on the
charts, a short label, what it means and which way is better.

Names use the field's terms (rollout throughput, tail time, acceptance length, KL). Every reader takes names and their meaning from
here: the platform (comparison summary and defaults), the CLI, and the browser, which gets
``document()`` embedded in the dashboard and compare pages (``{% metric_catalog %}``, in
``platform/telemetry/templatetags/metric_catalog.py``).
``tests/unit/test_metric_catalog.py`` fails on a metric-shaped string in the source that is
not catalogued, so a new metric cannot be logged without an entry here.

A family of metrics keyed by what they measure has one entry whose name holds a placeholder
(``PLACEHOLDERS``): ``{instance}`` (``rollout/instance_idle_frac/{instance}`` covers
``rollout/instance_idle_frac/0``, ...), ``{key}``, ``{actor}`` (``system/actor/{actor}/rss_gib``
covers ``system/actor/trainer-0/rss_gib``) or ``{node}``; a family on the dashboard is one
chart with a line per member. Fixed families (percentiles) have one entry per member, with
``family`` naming the group.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Literal

Better = Literal["higher", "lower", "none"]

# Chart sections, in display order.
SECTIONS = ("Rollout speed", "Tail and latency", "Scheduling", "Speculation", "Reward and validation",
            "Training", "System")


@dataclass(frozen=True)
class Metric:
    """One logged metric (or a family, a placeholder such as ``{instance}`` in ``name``).

    ``unit``: as printed after a value (``""`` for counts, fractions and scores);
    ``dashboard``: charted on the run dashboard; ``compare``: a default metric of the
    comparison; ``family``: the name shared by the members of a fixed family.
    """

    name: str
    section: str
    label: str
    unit: str
    better: Better
    description: str
    dashboard: bool = True
    compare: bool = False
    family: str | None = None


def _m(name, section, label, unit, better, description, **kw) -> Metric:
    return Metric(name, section, label, unit, better, description, **kw)


def _family(base: str, section: str, label: str, unit: str, better: Better, what: str,
            members: tuple[str, ...], charted: tuple[str, ...] | None = None) -> tuple[Metric, ...]:
    """``base/member`` for each member (``p50``, ``max``, ...); ``charted``: those on the dashboard (all)."""
    return tuple(_m(f"{base}/{k}", section, f"{label} {k}", unit, better, f"{what}: {k} over the iteration's requests",
                    dashboard=charted is None or k in charted, family=base) for k in members)


SPEED, TAIL, SCHED, SPEC, REWARD, TRAIN, SYSTEM = SECTIONS

METRICS: tuple[Metric, ...] = (
    # Rollout speed
    _m("rollout/throughput_tok_s", SPEED, "throughput", "tok/s", "higher",
       "output tokens / rollout time (the paper's rollout throughput)", compare=True),
    _m("rollout/time_s", SPEED, "rollout time", "s", "lower", "wall time of the rollout phase"),
    _m("rollout/decode_tok_s", SPEED, "decode speed", "tok/s", "higher",
       "per-request decode speed, median (a faster rollout may decode each request slower)"),
    _m("rollout/output_tokens", SPEED, "output tokens", "tokens", "none", "tokens generated in the rollout",
       dashboard=False),
    *_family("rollout/response_len", SPEED, "response length", "tokens", "none", "response length",
             ("mean", "max"), charted=("mean",)),
    _m("rollout/clip_ratio", SPEED, "clip ratio", "", "none", "fraction of responses cut at max_tokens"),
    # Tail and latency
    _m("rollout/tail_time_s", TAIL, "tail time", "s", "lower",
       "time spent solely on the last 10% of requests to complete (the paper's tail time)", compare=True),
    _m("rollout/tail_frac", TAIL, "tail fraction", "", "lower", "tail time / rollout time", dashboard=False),
    *_family("rollout/request_latency_s", TAIL, "request latency", "s", "lower", "request latency",
             ("p50", "p90", "p99", "max")),
    _m("rollout/instance_idle_frac", TAIL, "instance idle", "", "lower",
       "fraction of the rollout an instance ran no chunk, mean over instances"),
    _m("rollout/instance_idle_frac/{instance}", TAIL, "instance idle", "", "lower",
       "fraction of the rollout this instance ran no chunk", dashboard=False),
    # Scheduling
    _m("rollout/preemptions", SCHED, "preemptions", "", "lower", "requests the engines preempted (KV full)"),
    _m("rollout/migrations", SCHED, "migrations", "", "lower",
       "chunks moved to another instance than their request's last (divided rollout)"),
    _m("rollout/kv_given_up", SCHED, "KV given up", "", "lower",
       "parked requests whose KV the policy's ledger gave up (their next chunk re-prefills)", dashboard=False),
    _m("rollout/reprefill_tokens", SCHED, "re-prefilled tokens", "tokens", "lower",
       "context tokens recomputed by later chunks (partial KV blocks, migrations)"),
    _m("rollout/chunks", SCHED, "chunks", "", "none", "chunks run in the rollout", dashboard=False),
    # Speculation
    _m("rollout/spec/accept_len", SPEC, "accept len", "tokens/step", "higher",
       "mean tokens per verification step with a draft, incl. the bonus token (1 without drafts)", compare=True),
    _m("rollout/spec/draft_tokens", SPEC, "drafted tokens", "tokens", "none", "draft tokens proposed",
       dashboard=False),
    _m("rollout/spec/accepted_tokens", SPEC, "accepted tokens", "tokens", "higher", "draft tokens accepted",
       dashboard=False),
    _m("rollout/spec/history_mb", SPEC, "draft history", "MiB", "none",
       "earlier rollouts' responses the draft server holds as drafts for returning prompts"),
    _m("rollout/spec/history_prompts", SPEC, "history prompts", "", "none",
       "prompts the draft history holds responses to", dashboard=False),
    _m("rollout/spec/seeded_groups", SPEC, "groups with history", "", "higher",
       "groups of the rollout that started with earlier responses to their prompt", dashboard=False),
    _m("rollout/spec/drafting_steps_frac", SPEC, "drafting steps", "", "none",
       "share of engine steps in which some request got a draft (Alg. 1 chose a length above 0 and a group matched)"),
    _m("rollout/spec/step_cost_ms", SPEC, "step cost", "ms", "none",
       "Alg. 1's fit of an engine step's fixed cost, measured on the running engines", dashboard=False),
    _m("rollout/spec/row_cost_ms", SPEC, "row cost", "ms", "none",
       "Alg. 1's fit of the cost of each row (request) of a step, measured on the running engines",
       dashboard=False),
    _m("rollout/spec/context_cost_us", SPEC, "context token cost", "us", "none",
       "Alg. 1's fit of the cost of each context token a row or draft token attends over, measured on the "
       "running engines", dashboard=False),
    _m("rollout/spec/draft_cost_ms", SPEC, "draft token cost", "ms", "none",
       "Alg. 1's fit of the cost of each draft token a step verifies, measured on the running engines",
       dashboard=False),
    # Reward and validation
    _m("reward/mean", REWARD, "reward", "", "higher", "mean reward of the iteration's responses", compare=True),
    _m("reward/accuracy", REWARD, "accuracy", "", "higher", "fraction of responses with reward > 0.5"),
    _m("reward/errors", REWARD, "reward errors", "", "lower",
       "reward calls that raised, timed out or returned no finite number (scored 0; first of each kind in the job notes)"),
    _m("reward/extra/{key}", REWARD, "reward extra", "", "none",
       "an extra number a custom reward returned in its dict (veRL's reward_extra_info), mean over the responses",
       dashboard=False),
    _m("val/accuracy", REWARD, "val accuracy", "", "higher",
       "validation: fraction of responses to the held-out prompts with reward > 0.5 (every val_every iterations)"),
    _m("val/reward_mean", REWARD, "val reward", "", "higher", "validation: mean reward of the responses"),
    _m("val/response_len/mean", REWARD, "val response length", "tokens", "none",
       "validation: mean response length"),
    _m("val/reward_errors", REWARD, "val reward errors", "", "lower",
       "validation: reward calls that raised, timed out or returned no finite number (scored 0; "
       "first of each kind in the job notes)"),
    _m("val/time_s", REWARD, "validation time", "s", "lower", "wall time of the validation rollout and scoring",
       dashboard=False),
    # Training
    _m("train/loss", TRAIN, "loss", "", "none", "GRPO loss (clipped policy loss + KL term)"),
    _m("train/kl", TRAIN, "KL", "", "none", "k3 KL estimate to the reference model"),
    _m("train/entropy", TRAIN, "entropy", "", "none", "mean token entropy of the responses"),
    _m("train/clip_frac", TRAIN, "clip fraction", "", "none", "fraction of tokens whose ratio was clipped",
       dashboard=False),
    _m("train/grad_norm", TRAIN, "grad norm", "", "none", "gradient norm before clipping, last optimizer step",
       dashboard=False),
    _m("train/time_s", TRAIN, "train time", "s", "lower", "wall time of the train step"),
    _m("train/tokens", TRAIN, "train tokens", "tokens", "none", "response tokens in the train step (all ranks)",
       dashboard=False),
    # System
    _m("sync/weight_time_s", SYSTEM, "weight sync", "s", "lower", "time to push the new weights to every instance"),
    _m("sync/weight_bytes", SYSTEM, "weight sync size", "bytes", "none", "size of the weights file sent to the instances",
       dashboard=False),
    _m("iteration/time_s", SYSTEM, "iteration time", "s", "lower", "wall time of the whole iteration"),
    _m("rollout/instances_lost", SYSTEM, "instances lost", "", "lower",
       "rollout instances that died during the rollout (replaced after it)", dashboard=False),
    _m("rollout/redispatched_chunks", SYSTEM, "re-dispatched chunks", "", "lower",
       "chunks that were running on a lost instance and ran again elsewhere", dashboard=False),
    _m("rollout/policy_version", SYSTEM, "policy version", "", "none", "weights version the rollout sampled with",
       dashboard=False),
    # System: CPU, memory and GPU per Ray node and per actor (umbra.telemetry.system)
    _m("system/node/{node}/mem_frac", SYSTEM, "node memory used", "", "lower",
       "fraction of a Ray node's memory in use (total - available), a line per node the run uses"),
    _m("system/node/{node}/mem_used_gib", SYSTEM, "node memory", "GiB", "lower", "memory in use on a Ray node"),
    _m("system/node/{node}/mem_total_gib", SYSTEM, "node memory total", "GiB", "none", "memory of a Ray node",
       dashboard=False),
    _m("system/node/{node}/cpu_percent", SYSTEM, "node CPU", "%", "none",
       "CPU use of a Ray node since the previous iteration, percent of all its cores"),
    _m("system/node/{node}/gpu_util_percent", SYSTEM, "node GPU", "%", "none",
       "GPU utilisation of a Ray node, mean over its GPUs (NVML: only where pynvml is installed)"),
    _m("system/node/{node}/gpu_mem_used_gib", SYSTEM, "node GPU memory", "GiB", "lower",
       "GPU memory in use on a Ray node, summed over its GPUs (NVML)"),
    _m("system/node/{node}/gpu_mem_total_gib", SYSTEM, "node GPU memory total", "GiB", "none",
       "GPU memory of a Ray node, summed over its GPUs (NVML)", dashboard=False),
    _m("system/actor/{actor}/rss_gib", SYSTEM, "actor memory", "GiB", "lower",
       "resident memory of a trainer rank or rollout instance actor with the processes it started "
       "(the vLLM engine core), a line per actor (hosts and pids in the events)"),
    _m("system/actor/{actor}/cpu_percent", SYSTEM, "actor CPU", "%", "none",
       "CPU use of an actor and the processes it started since the previous iteration, percent of one core"),
    _m("system/actor/{actor}/gpu_mem_gib", SYSTEM, "actor GPU memory", "GiB", "lower",
       "GPU memory of an actor's processes (NVML per process, else torch's reserved memory); GPU runs only"),
    _m("system/driver_rss_gib", SYSTEM, "driver memory", "GiB", "lower", "resident memory of the job's driver"),
)

BY_NAME: dict[str, Metric] = {m.name: m for m in METRICS}
# The metric counted for "iterations done" (one point per finished iteration).
ITERATION_METRIC = "iteration/time_s"


# What each placeholder of a family's name stands for (a regular expression, the same in
# JavaScript: the browser reads them from ``document()``); actors and nodes as
# ``umbra.telemetry.probe.metric_key`` writes them.
PLACEHOLDERS = {"instance": r"\d+", "key": r"[a-z0-9_]+", "actor": r"[a-z0-9_.-]+", "node": r"[a-z0-9_.-]+"}


def _pattern(template: str) -> re.Pattern:
    pattern = re.escape(template)
    for name, regex in PLACEHOLDERS.items():
        pattern = pattern.replace(re.escape("{" + name + "}"), regex)
    return re.compile(pattern)


_FAMILIES = tuple((_pattern(m.name), m) for m in METRICS if "{" in m.name)


def lookup(name: str) -> Metric | None:
    """The entry of a logged name (a family member maps to its family), or None."""
    if name in BY_NAME:
        return BY_NAME[name]
    return next((m for p, m in _FAMILIES if p.fullmatch(name)), None)


def get(name: str) -> Metric:
    """The entry of ``name``; raises KeyError for a name the catalogue lacks (a typo in a reader)."""
    m = lookup(name)
    if m is None:
        raise KeyError(f"{name!r} is not in the metric catalogue (umbra.telemetry.catalog)")
    return m


def dashboard_metrics() -> list[str]:
    """Names charted on the run dashboard, in catalogue order (a family: one chart, a line per member)."""
    return [m.name for m in METRICS if m.dashboard]


def compare_defaults() -> list[str]:
    """The metrics a comparison shows when none are asked for."""
    return [m.name for m in METRICS if m.compare]


def document() -> dict:
    """The catalogue as JSON for the browser: ``{"sections": [...], "metrics": [{"name",
    "section", "label", "unit", "better", "description", "dashboard", "compare", "family"}, ...],
    "placeholders": PLACEHOLDERS}``."""
    return {"sections": list(SECTIONS), "metrics": [asdict(m) for m in METRICS], "placeholders": dict(PLACEHOLDERS)}
