"""What-if simulations: the form refuses bad input with field errors and stores nothing; a
team's simulations stay its own; a run's trace downloads as JSONL and feeds the simulator."""
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from runs.models import Run
from telemetry.models import IterationTrace, MetricPoint
from tests import factories
from whatif.models import Simulation

pytestmark = pytest.mark.django_db

TRACE = [{"policy": "seer", "group": g, "index": i, "prompt_tokens": 40, "output_tokens": 20 + 30 * g + 7 * i,
          "max_tokens": 256, "instances": 2, "capacity": 4} for g in range(3) for i in range(4)]


def _jsonl(rows) -> bytes:
    return ("\n".join(json.dumps(r) for r in rows) + "\n").encode()


def _post(client, team, **fields):
    data = {"workload": "upload", "group_size": "8", "policies": ["static-group", "seer"], "accept_len": "2.0"}
    data.update(fields)
    return client.post(f"/teams/{team.slug}/whatif/", data)


def _run_with_trace(team, user, iteration=0):
    run = factories.run(factories.experiment(team, f"e{team.slug}"), created_by=user, state=Run.State.SUCCEEDED,
                        config={"rollout_policy": "seer", "rollout_instances": 2, "max_tokens": 256,
                                "kv_cache_gib": 1})
    IterationTrace.objects.create(run=run, iteration=iteration, meta={"policy": "seer", "instances": 2, "capacity": 4,
                                                                      "kv_cache_gib": 1, "max_tokens": 256},
                                  requests=[{k: v for k, v in r.items() if k not in ("policy", "max_tokens", "instances",
                                                                                    "capacity")}
                                            | {"instance": 0, "start_s": 0.0, "finish_s": 1.0, "chunks": []}
                                            for r in TRACE])
    return run


@pytest.mark.parametrize("fields,field,msg", [
    ({"workload": "nope"}, "workload", "valid choice"),
    ({}, "trace_file", "choose a JSONL trace file"),
    ({"trace_file": SimpleUploadedFile("t.jsonl", b'{"group": 0}\n')}, "trace_file", "not a trace record"),
    ({"trace_file": SimpleUploadedFile("t.jsonl", b"\x00\xff garbage")}, "trace_file", "not a trace record"),
    ({"trace_file": SimpleUploadedFile("t.jsonl", b" " * (5 * 1024 * 1024 + 1))}, "trace_file", "at most"),
    ({"trace_file": SimpleUploadedFile("t.jsonl", _jsonl(TRACE)), "trace_policy": "oracle"}, "trace_policy",
     "the trace records: seer"),
    ({"trace_file": SimpleUploadedFile("t.jsonl", _jsonl(TRACE)), "kv_tokens": "10"}, "kv_tokens", "no request fits the KV cache"),
    ({"trace_file": SimpleUploadedFile("t.jsonl", b'{"group":0,"index":0,"output_tokens":5,"instances":3000000}')},
     "trace_file", "instances must be within"),
    ({"trace_file": SimpleUploadedFile("t.jsonl", b'{"group":0,"index":0,"output_tokens":Infinity}')},
     "trace_file", "not a trace record"),
    ({"trace_file": SimpleUploadedFile("t.jsonl", b'{"group":0,"index":0,"output_tokens":5,"policy":"a\\u0000b"}')},
     "trace_file", "policy must be a name"),
    ({"trace_file": SimpleUploadedFile("t.jsonl", b"[" * 100_000 + b"]" * 100_000)}, "trace_file", "not a trace record"),
    ({"trace_file": SimpleUploadedFile("t.jsonl", b'{"group":0,"index":0,"output_tokens":5,"max_tokens":-5}')},
     "trace_file", "max_tokens must be within"),
    ({"workload": "run"}, "run", "give the id"),
    ({"workload": "run", "run": "999999"}, "run", "no such run"),
    ({"workload": "moonlight", "policies": ["bogus"]}, "policies", "valid choice"),
    ({"workload": "moonlight", "accept_len": "50"}, "accept_len", "less than or equal"),
    ({"workload": "moonlight", "instances": "0"}, "instances", "greater than or equal"),
    ({"workload": "kimi-k2", "group_size": "7"}, "group_size", "valid choice"),
])
def test_bad_input_gets_a_field_error_and_stores_nothing(client, team_user, fields, field, msg):
    team, user = team_user
    client.force_login(user)
    resp = _post(client, team, **fields)
    assert resp.status_code == 400
    errors = resp.context["form"].errors
    assert msg in " ".join(errors.get(field, []) + errors.get("__all__", [])), errors
    assert Simulation.objects.count() == 0


def test_another_teams_run_and_simulation_are_invisible(client, team_user):
    team, user = team_user
    other = factories.team("beta")
    bob = factories.member(other, "bob")
    their_run = _run_with_trace(other, bob)
    theirs = Simulation.objects.create(team=other, created_by=bob, label="x", params={"policies": []})
    client.force_login(user)
    resp = _post(client, team, workload="run", run=str(their_run.pk))
    assert resp.status_code == 400 and "no such run" in str(resp.context["form"].errors)
    assert client.get(f"/whatif/{theirs.pk}/").status_code == 404
    assert client.get(f"/whatif/{theirs.pk}.json").status_code == 404
    assert client.get(f"/api/runs/{their_run.pk}/trace.jsonl").status_code == 404
    assert client.get("/teams/beta/whatif/").status_code == 404


def test_viewer_cannot_start_a_simulation(client, team_user):
    team, _ = team_user
    viewer = factories.member(team, "vera", role="viewer")
    client.force_login(viewer)
    assert client.get(f"/teams/{team.slug}/whatif/").status_code == 200
    assert _post(client, team, workload="moonlight").status_code == 403
    assert Simulation.objects.count() == 0


def test_trace_download_round_trips_into_the_simulator(client, team_user):
    from umbra.sim.workload import parse_trace

    team, user = team_user
    run = _run_with_trace(team, user)
    client.force_login(user)
    resp = client.get(f"/api/runs/{run.pk}/trace.jsonl")
    assert resp.status_code == 200 and resp["Content-Type"] == "application/x-ndjson"
    rows = parse_trace(resp.content.decode().splitlines())
    assert len(rows) == len(TRACE) and rows[0]["capacity"] == 4 and rows[0]["policy"] == "seer"
    assert client.get(f"/api/runs/{run.pk}/trace.jsonl?iteration=x").status_code == 400
    assert client.get(f"/api/runs/{run.pk}/trace.jsonl?iteration=7").status_code == 404
    # and the what-if form accepts the run's trace
    resp = _post(client, team, workload="run", run=str(run.pk))
    assert resp.status_code == 302, resp.context and resp.context["form"].errors
    sim = Simulation.objects.get()
    assert sim.source_run == run and len(sim.trace) == len(TRACE) and sim.state == "queued"
    MetricPoint.objects.create(run=run, name="rollout/time_s", step=0, value=123.5)
    page = client.get(f"/whatif/{sim.pk}/")
    assert page.status_code == 200 and page.context["measured"] == {"rollout/time_s": 123.5}


def test_a_trace_is_replayed_with_the_step_model_fitted_to_its_own_chunks(client, team_user):
    from umbra.rollout.metrics import request_records
    from umbra.rollout.policies import RequestLBPolicy
    from umbra.sim.engine import simulate
    from umbra.sim.step_model import StepModel
    from umbra.sim.workload import Cluster, Workload

    team, user = team_user
    client.force_login(user)
    # a "recorded" rollout whose engine steps cost 10 ms + 2 ms per sequence (not the SmolLM2 default)
    groups = [[(20, 10 + 13 * g + 5 * i) for i in range(4)] for g in range(6)]
    res = simulate(RequestLBPolicy(), Workload("t", groups, 200, Cluster(2, 10_000, 5, StepModel(0.01, 0.002, 0, 0))))
    rows = [{"policy": "request-lb", "max_tokens": 200, "instances": 2, "capacity": 5, **r}
            for r in request_records(res.requests, 0.0)]
    resp = _post(client, team, trace_file=SimpleUploadedFile("t.jsonl", _jsonl(rows)))
    assert resp.status_code == 302, resp.context and resp.context["form"].errors
    sim = Simulation.objects.get()
    assert sim.params["step_model"]["c_seq"] == pytest.approx(0.002, rel=0.15)  # chunk-midpoint batches: approximate
    assert sim.params["step_model_source"].startswith("fitted to this trace")
    assert b"fitted to this trace" in client.get(f"/whatif/{sim.pk}/").content
    # a trace without chunks falls back to the default, and says so
    resp = _post(client, team, trace_file=SimpleUploadedFile("t.jsonl", _jsonl(TRACE)))
    assert Simulation.objects.latest("pk").params["step_model"] is None
    assert "default" in Simulation.objects.latest("pk").params["step_model_source"]


def test_a_runs_trace_is_simulated_at_its_own_accept_length_unless_one_is_given(client, team_user):
    """A run without speculation gives seer no draft credit (it read 2.04x on a trace of 1.00 accept length)."""
    team, user = team_user
    client.force_login(user)
    plain = _run_with_trace(team, user)
    speculating = _run_with_trace(team, user)
    speculating.config["spec_decoding"] = True
    speculating.save()
    for step, v in enumerate([1.4, 1.6]):
        MetricPoint.objects.create(run=speculating, name="rollout/spec/accept_len", step=step, value=v)
    used = []
    for run, given in ((plain, ""), (speculating, ""), (plain, "3.0")):
        resp = _post(client, team, workload="run", run=str(run.pk), accept_len=given)
        assert resp.status_code == 302, resp.context and resp.context["form"].errors
        used.append(Simulation.objects.latest("pk").params["accept_len"])
    assert used == [1.0, pytest.approx(1.5), 3.0]
    assert b"seer speculates at accept length 3.00" in client.get(f"/whatif/{Simulation.objects.latest('pk').pk}/").content
    resp = _post(client, team, trace_file=SimpleUploadedFile("t.jsonl", _jsonl(TRACE)), accept_len="")
    assert Simulation.objects.latest("pk").params["accept_len"] == 2.0  # an upload: the documented default
