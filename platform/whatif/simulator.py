"""What-if simulations, the computing side: build the workload a form asked for and run
``umbra.sim`` on it (no writes; storing and queueing simulations is ``whatif.services``)."""
from __future__ import annotations

from umbra.sim.workload import PRESETS

MAX_CHART_REQUESTS = 2000  # per policy: what the result page draws (every k-th request)
MAX_CHART_CHUNKS = 50


def workload_for(params: dict, trace: list[dict] | None):
    """The simulator workload of a stored simulation. Raises ValueError on a bad trace."""
    from umbra.sim.compare import trace_cluster_workload
    from umbra.sim.step_model import CPU_SMOLLM2
    from umbra.sim.workload import preset_workload, with_cluster

    if params["workload"] in PRESETS:
        return with_cluster(preset_workload(params["workload"], params["group_size"], params.get("seed", 0)),
                            params.get("instances"), params.get("kv_tokens"), params.get("max_batch"))
    from umbra.sim.step_model import StepModel

    step = StepModel(**params["step_model"]) if params.get("step_model") else CPU_SMOLLM2
    return trace_cluster_workload(trace or [], params.get("trace_policy"), params.get("instances"),
                                  params.get("kv_tokens"), params.get("max_batch"), step, params["label"])


def fitted_step_model(records: list, policy: str | None = None) -> tuple[dict | None, str]:
    """The step model fitted to a trace's raw records (their chunks: the engine that recorded
    it, whatever its model and machine), and a line saying where the model came from; None
    (the SmolLM2 CPU default) when the records cannot determine one."""
    from umbra.sim.step_model import fit, samples_from_trace

    mine = [r for r in records if isinstance(r, dict) and (policy is None or r.get("policy", policy) == policy)]
    try:
        samples = samples_from_trace(mine)
        model = fit(samples)
    except (ValueError, TypeError, KeyError, IndexError, ZeroDivisionError, OverflowError):
        return None, ("SmolLM2-135M on 2 CPU cores (the default: this trace's chunks cannot determine a step "
                      "model, e.g. every chunk ran at the same batch size)")
    return ({"c0": model.c0, "c_seq": model.c_seq, "c_ctx": model.c_ctx, "c_prefill": model.c_prefill,
             "c_host": model.c_host},
            f"fitted to this trace ({len(samples)} chunks): T = {model.c0 * 1e3:.2f} ms + "
            f"{model.c_seq * 1e3:.3f} ms/sequence + {model.c_ctx * 1e6:.3f} us/context token"
            + (f" + {model.c_host * 1e3:.3f} ms per sequence on the host's other instances" if model.c_host else ""))


def simulate(params: dict, trace: list[dict] | None) -> dict:
    """Run every requested policy; returns ``{"policies": {name: row}, "order": [names],
    "charts": {name: trace}, "workload": {...}}`` where chart traces hold at most
    MAX_CHART_REQUESTS requests."""
    from umbra.sim.compare import simulate_policies
    from umbra.sim.spec_model import SpecModel

    workload = workload_for(params, trace)
    chunk = params.get("chunk_tokens") or max(64, workload.max_tokens // 32)
    spec = SpecModel.from_accept_len(params["accept_len"])
    results = simulate_policies(workload, params["policies"], chunk, spec, params["shared_kv"])
    charts = {}
    for name, row in results.items():
        records = row.pop("records")
        step = max(1, len(records) // MAX_CHART_REQUESTS)
        charts[name] = {"iteration": 0, "requests": [{**r, "chunks": r["chunks"][:MAX_CHART_CHUNKS]}
                                                     for r in records[::step]]}
    # jsonb keeps no key order: "order" keeps the requested one for the page
    return {"policies": results, "order": list(results), "charts": charts, "chunk_tokens": chunk,
            "workload": {"name": workload.name, "requests": sum(len(g) for g in workload.groups),
                         "groups": len(workload.groups), "max_tokens": workload.max_tokens,
                         "instances": workload.cluster.instances, "kv_tokens": workload.cluster.kv_tokens,
                         "max_batch": workload.cluster.max_batch}}


def run_trace_rows(run, iteration: int | None = None) -> tuple[int, list[dict], list[dict]]:
    """``(iteration, trace records, stored request records)``: a run's stored trace (the last
    iteration unless ``iteration``) as trace records with its set-up, and as stored (with
    chunks). Raises ValueError when the run has no such trace."""
    traces = run.traces.order_by("-iteration")
    t = traces.filter(iteration=iteration).first() if iteration is not None else traces.first()
    if t is None:
        raise ValueError(f"run #{run.pk} has no trace{'' if iteration is None else f' for iteration {iteration}'}")
    meta = t.meta or {}
    cfg = run.config or {}
    policy = meta.get("policy") or cfg.get("rollout_policy", "")
    from umbra.sim.workload import trace_row

    rows = []
    for r in t.requests:  # the simulator's bounds apply to stored traces too
        rows.append(trace_row({"policy": policy, "group": r["group"], "index": r["index"],
                               "prompt_tokens": r.get("prompt_tokens") or 1, "output_tokens": max(1, r["output_tokens"]),
                               "max_tokens": meta.get("max_tokens") or cfg.get("max_tokens") or 0,
                               "instances": meta.get("instances") or cfg.get("rollout_instances") or 0,
                               "capacity": meta.get("capacity") or 0}))
    return t.iteration, rows, t.requests


def measured_accept_len(run) -> float:
    """The accept length to simulate a run's trace with (ours): its mean
    ``rollout/spec/accept_len`` where it speculated, else 1.0 (no draft measured, none assumed),
    so that a run's what-if never credits speculation with a gain its workload did not show."""
    from django.db.models import Avg

    if not (run.config or {}).get("spec_decoding"):
        return 1.0
    mean = run.metric_points.filter(name="rollout/spec/accept_len").aggregate(v=Avg("value"))["v"]
    return min(8.9, max(1.0, float(mean))) if mean is not None else 1.0
