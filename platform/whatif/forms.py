"""The what-if form: a workload (preset, a run's trace, or an uploaded trace), cluster shape
overrides and the policies to simulate. Every bad input becomes a field error."""
from __future__ import annotations

import json

from django import forms

from runs.selectors import visible_runs
from umbra.rollout.policies.variants import DEFAULT_VARIANTS, SIM_VARIANT_NAMES
from umbra.sim.workload import PRESETS

POLICY_CHOICES = [(n, n) for n in SIM_VARIANT_NAMES]
MAX_TRACE_BYTES = 5 * 1024 * 1024
MAX_TRACE_REQUESTS = 20_000


# Runs offered by the run picker (newest first); older ones are reached from their run page.
RUN_PICKER_LIMIT = 200


class SimulationForm(forms.Form):
    """``cleaned_data`` gains ``params`` (JSON for Simulation.params), ``trace`` (records or
    None) and ``source_run`` (a Run or None)."""

    workload = forms.ChoiceField(choices=[(p, f"preset: {p}") for p in PRESETS] +
                                 [("run", "a run's trace"), ("upload", "an uploaded trace (JSONL)")])
    group_size = forms.TypedChoiceField(choices=[(8, "8"), (16, "16")], coerce=int, initial=8,
                                        help_text="G of a preset workload")
    run = forms.IntegerField(required=False, min_value=1, help_text="run id (workload: a run's trace)")
    iteration = forms.IntegerField(required=False, min_value=0, help_text="default: the run's last iteration")
    trace_file = forms.FileField(required=False, help_text="JSONL from `umbra bench rollout --trace` or a "
                                                           "run's trace download, at most 5 MiB")
    trace_policy = forms.CharField(required=False, max_length=40, help_text="which policy's records of the trace")
    instances = forms.IntegerField(required=False, min_value=1, max_value=1024,
                                   help_text="rollout instances; empty = the workload's")
    kv_tokens = forms.IntegerField(required=False, min_value=1, max_value=10**10, label="KV tokens per instance",
                                   help_text="KV cache capacity of an instance, tokens; empty = the workload's")
    max_batch = forms.IntegerField(required=False, min_value=1, max_value=65_536, label="Max batch per instance",
                                   help_text="max concurrent sequences of an instance; empty = the workload's")
    policies = forms.MultipleChoiceField(choices=POLICY_CHOICES, widget=forms.CheckboxSelectMultiple,
                                         initial=list(DEFAULT_VARIANTS),
                                         help_text="each runs the same workload; ratios are to verl and static-group")
    accept_len = forms.FloatField(min_value=1.0, max_value=8.9, required=False, label="Accept length",
                                  widget=forms.NumberInput(attrs={"placeholder": "measured / 2.0", "step": "any"}),
                                  help_text="grouped speculative decoding: tokens per step at full draft length; "
                                            "empty = a picked run's measured value (1.0 without speculation), "
                                            "else 2.0")
    shared_kv = forms.BooleanField(required=False, label="Shared KV pool",
                                   help_text="instances share one KV pool: migrations re-prefill nothing")

    def __init__(self, *args, user=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.user = user
        if user is not None:  # a run picker: the newest runs the user may see that have a trace
            runs = (visible_runs(user).filter(traces__isnull=False).distinct().select_related("experiment__team")
                    .order_by("-pk")[:RUN_PICKER_LIMIT])
            choices = [("", "— pick a run —")] + [
                (r.pk, f"#{r.pk} {r.experiment.team.name}/{r.experiment.name} · {r.config.get('rollout_policy', '?')}"
                       f" · {r.state}") for r in runs]
            self.fields["run"].widget = forms.Select(choices=choices)
            self.fields["run"].help_text = "a run with a trace (workload: a run's trace)"
        for name, field in self.fields.items():  # help beside the field, read out with it
            if field.help_text and not isinstance(field.widget, forms.CheckboxSelectMultiple):
                field.widget.attrs.setdefault("aria-describedby", f"id_{name}_helptext")

    def clean(self):
        from umbra.sim.workload import parse_trace, trace_policies

        data = super().clean()
        kind = data.get("workload")
        if kind is None or self.errors:
            return data
        trace, run, raw = None, None, []
        if kind in PRESETS and (data.get("run") or data.get("trace_file")):  # else it would be silently ignored
            picked = "a run is picked" if data.get("run") else "a trace file is chosen"
            self.add_error("workload", f"{picked}: choose \"a run's trace\" or \"an uploaded trace\", "
                                       f"or clear it to simulate the preset")
            return data
        if kind == "run":
            if not data.get("run"):
                self.add_error("run", "give the id of a run with a trace")
                return data
            run = visible_runs(self.user).filter(pk=data["run"]).first()
            if run is None:
                self.add_error("run", "no such run")
                return data
            from whatif.simulator import run_trace_rows

            try:
                data["iteration"], trace, raw = run_trace_rows(run, data.get("iteration"))
            except ValueError as exc:
                self.add_error("run", str(exc))
                return data
        elif kind == "upload":
            f = data.get("trace_file")
            if f is None:
                self.add_error("trace_file", "choose a JSONL trace file")
                return data
            if f.size > MAX_TRACE_BYTES:
                self.add_error("trace_file", f"the file is {f.size} bytes; at most {MAX_TRACE_BYTES}")
                return data
            try:
                lines = f.read().decode("utf-8").splitlines()
            except UnicodeDecodeError as exc:
                self.add_error("trace_file", f"not a trace record: the file is not UTF-8 text (byte {exc.start})")
                return data
            try:
                trace = parse_trace(lines, f.name)
            except ValueError as exc:
                self.add_error("trace_file", str(exc))
                return data
            raw = [json.loads(line) for line in lines if line.strip()]  # valid JSON: parse_trace read it
        if trace is not None:
            if len(trace) > MAX_TRACE_REQUESTS:
                self.add_error("trace_file" if kind == "upload" else "run",
                               f"{len(trace)} requests; at most {MAX_TRACE_REQUESTS}")
                return data
            policy = data.get("trace_policy") or None
            if policy is not None and policy not in trace_policies(trace):
                self.add_error("trace_policy", f"the trace records: {', '.join(trace_policies(trace)) or '(none)'}")
                return data
        if data.get("accept_len") is None:
            from umbra.sim.spec_model import ASSUMED_ACCEPT_LEN
            from whatif.simulator import measured_accept_len

            data["accept_len"] = measured_accept_len(run) if run is not None else ASSUMED_ACCEPT_LEN
        label = kind if kind in PRESETS else (f"run #{run.pk}" if run else f"upload {data['trace_file'].name}")[:200]
        params = {"workload": kind, "label": label, "group_size": data.get("group_size") or 8,
                  "instances": data.get("instances"), "kv_tokens": data.get("kv_tokens"),
                  "max_batch": data.get("max_batch"), "policies": list(dict.fromkeys(data.get("policies") or [])),
                  "accept_len": data.get("accept_len"), "shared_kv": bool(data.get("shared_kv")),
                  "trace_policy": data.get("trace_policy") or None, "iteration": data.get("iteration")}
        if trace is not None:
            from whatif.simulator import fitted_step_model

            params["step_model"], params["step_model_source"] = fitted_step_model(
                raw, params["trace_policy"] or trace[0]["policy"] or None)
        if not self.errors:
            from whatif.simulator import workload_for

            try:  # build it once here so that a bad combination is a form error, not a failed task
                w = workload_for(params, trace)
            except ValueError as exc:
                self.add_error(None, str(exc))
                return data
            try:
                w.cluster.concurrency_cap(w.max_len)
            except ValueError as exc:
                self.add_error("kv_tokens", str(exc))
        data.update(params=params, trace=trace, source_run=run)
        return data
