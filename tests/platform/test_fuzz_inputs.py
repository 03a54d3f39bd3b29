"""Generated input for the endpoints outside the OpenAPI schema (see test_api_contract.py for
the API): metric ingestion, the run form with a data set upload and the what-if form with a
trace upload. Bodies are drawn by hypothesis, near-valid and garbage alike; no answer may be
a 5xx, and a refusal must say why (a JSON ``detail`` or a form error)."""
import dataclasses
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runs.models import Run
from umbra.config import RunConfig
from umbra.sim.workload import PRESETS
from whatif.forms import POLICY_CHOICES
from whatif.models import Simulation

pytestmark = pytest.mark.django_db

FUZZ = settings(max_examples=150, deadline=None, database=None, suppress_health_check=list(HealthCheck))

# Numbers and text near the bounds the schemas check, and past them.
NUMBERS = st.one_of(st.integers(-3, 70), st.integers(), st.sampled_from([0, 1, 2**31 - 1, 2**31, -2**31, 2**63, 10**30]),
                    st.floats(allow_nan=True, allow_infinity=True))
ANY_SCALAR = st.one_of(NUMBERS, st.text(max_size=30), st.booleans(), st.none())
JSON = st.recursive(ANY_SCALAR, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                        st.dictionaries(st.text(max_size=10), inner, max_size=4)),
                    max_leaves=12)


def _maybe(strategy, valid):
    """Mostly ``valid`` values (to get past the first check), sometimes anything from ``strategy``."""
    return st.one_of(valid, valid, strategy)


POINT = st.fixed_dictionaries({"name": _maybe(ANY_SCALAR, st.from_regex(r"[a-z]{1,8}/[a-z_]{1,12}", fullmatch=True)),
                               "step": _maybe(ANY_SCALAR, st.integers(0, 100)),
                               "value": _maybe(ANY_SCALAR, st.floats(-1e6, 1e6))})
ROW = st.fixed_dictionaries(
    {"group": _maybe(ANY_SCALAR, st.integers(0, 8)), "index": _maybe(ANY_SCALAR, st.integers(0, 8)),
     "start_s": _maybe(ANY_SCALAR, st.floats(0, 10)), "finish_s": _maybe(ANY_SCALAR, st.floats(0, 20)),
     "output_tokens": _maybe(ANY_SCALAR, st.integers(0, 500))},
    optional={"instance": NUMBERS, "prompt_tokens": NUMBERS, "finish_reason": ANY_SCALAR, "policy_version": NUMBERS,
              "chunks": st.lists(st.lists(NUMBERS, min_size=3, max_size=5), max_size=3)})
TRACE = st.fixed_dictionaries(
    {"iteration": _maybe(ANY_SCALAR, st.integers(0, 10)), "requests": st.lists(ROW, max_size=4)},
    optional={"meta": st.fixed_dictionaries({"policy": _maybe(ANY_SCALAR, st.sampled_from(["seer", "static-group"])),
                                             "instances": NUMBERS, "capacity": NUMBERS, "kv_cache_gib": NUMBERS,
                                             "max_tokens": NUMBERS})})
BATCH = st.fixed_dictionaries({"seq": _maybe(ANY_SCALAR, st.integers(1, 50)), "points": st.lists(POINT, max_size=5)},
                              optional={"trace": TRACE, "events": st.lists(_maybe(ANY_SCALAR, st.text(max_size=40)),
                                                                           max_size=3),
                                        "extra": JSON})
VALID_BATCH = st.fixed_dictionaries({"seq": st.integers(1, 10**6), "points": st.lists(st.fixed_dictionaries(
    {"name": st.sampled_from(["reward/mean", "rollout/time_s"]), "step": st.integers(0, 2**31 - 1),
     "value": st.floats(allow_nan=False, allow_infinity=False)}), max_size=5)})
BODY = st.one_of(VALID_BATCH.map(lambda b: json.dumps(b).encode()),
                 BATCH.map(lambda b: json.dumps(b).encode()),  # NaN and Infinity are written as such
                 JSON.map(lambda b: json.dumps(b).encode()),
                 st.binary(max_size=200),
                 BATCH.map(lambda b: json.dumps(b).encode()).flatmap(
                     lambda raw: st.integers(0, len(raw)).map(lambda cut: raw[:cut])))  # truncated


def test_generated_metric_batches_never_get_a_server_error(client, running_run):
    from telemetry.models import MetricBatch

    run, token = running_run
    answers = []

    @given(body=BODY)
    @FUZZ
    def post(body):
        resp = client.post(f"/api/runs/{run.pk}/metrics/", body, content_type="application/json",
                           HTTP_AUTHORIZATION=f"Bearer {token}")
        answers.append(resp.status_code)
        assert resp.status_code in (200, 201, 400), (body[:300], resp.status_code, resp.content[:300])
        if resp.status_code == 400:
            assert resp.json()["detail"]

    post()
    assert len(answers) >= 150 and answers.count(400) > 10 and 201 in answers, answers
    assert MetricBatch.objects.filter(run=run).count() == answers.count(201)


def _form_text(info):
    """Text for one run form field: valid-looking, at the edges, or garbage."""
    near = [str(getattr(meta, f.name)) for meta in info.metadata if dataclasses.is_dataclass(meta)
            for f in dataclasses.fields(meta) if isinstance(getattr(meta, f.name), (int, float))]
    return st.one_of(st.sampled_from(near or ["x"]), NUMBERS.map(str), st.text(max_size=12),
                     st.sampled_from(["", " ", "1e3", "nan", "-0", "٣", "1_0", "0x10"]))


RUN_FORM = st.fixed_dictionaries(
    {"experiment": _maybe(st.text(max_size=210), st.just("fuzz"))},
    optional={name: st.sampled_from(["on", ""]) if info.annotation is bool else _form_text(info)
              for name, info in RunConfig.model_fields.items() if name not in ("model", "dataset")}
    | {"model": st.sampled_from(["tiny", "smollm2", "", "/etc", "x" * 600]),
       "dataset": st.sampled_from(["arith", "", "/etc/passwd", "../x.jsonl"])})
DATASET_LINE = st.one_of(
    st.fixed_dictionaries({"question": st.text(max_size=20), "answer": st.text(max_size=10).map(lambda a: f"{a}\n#### 4")}),
    st.fixed_dictionaries({"question": ANY_SCALAR, "answer": ANY_SCALAR}), JSON).map(json.dumps)
DATASET = st.one_of(st.none(), st.binary(max_size=300),
                    st.lists(DATASET_LINE, max_size=5).map(lambda lines: "\n".join(lines).encode()),
                    st.lists(DATASET_LINE, max_size=5).map(lambda lines: "\n".join(lines).encode("utf-16")))


def test_generated_run_forms_never_get_a_server_error(client, team_user, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    # Every accepted form stores a run: the submission limits (tests/platform/test_run_submission_limits.py) stay out.
    settings.UMBRA_TEAM_MAX_QUEUED = settings.UMBRA_USER_MAX_SUBMISSIONS = 0
    team, user = team_user
    client.force_login(user)
    answers = []

    @given(fields=RUN_FORM, dataset=DATASET)
    @FUZZ
    def post(fields, dataset):
        data = dict(fields)
        if dataset is not None:
            data["dataset_file"] = SimpleUploadedFile("d.jsonl", dataset)
        before = Run.objects.count()
        resp = client.post(f"/teams/{team.slug}/runs/new/", data)
        answers.append(resp.status_code)
        assert resp.status_code in (302, 400), (fields, dataset, resp.status_code)
        if resp.status_code == 400:
            assert resp.context["form"].errors and Run.objects.count() == before
        else:
            assert Run.objects.count() == before + 1

    post()
    assert len(answers) >= 150 and 400 in answers and 302 in answers, answers
    stored = {p for p in (tmp_path / "datasets").rglob("*") if p.is_file()} if (tmp_path / "datasets").exists() else set()
    assert len(stored) <= answers.count(302)  # only accepted runs wrote a data set


TRACE_RECORD = st.fixed_dictionaries(
    {"group": _maybe(ANY_SCALAR, st.integers(0, 3)), "index": _maybe(ANY_SCALAR, st.integers(0, 7)),
     "output_tokens": _maybe(ANY_SCALAR, st.integers(1, 2000))},
    optional={"prompt_tokens": _maybe(ANY_SCALAR, st.integers(1, 500)),
              "policy": _maybe(ANY_SCALAR, st.sampled_from(["seer", "static-group"])),
              "max_tokens": NUMBERS, "instances": NUMBERS, "capacity": NUMBERS,
              "chunks": _maybe(JSON, st.lists(st.tuples(st.integers(0, 2), st.floats(0, 5), st.floats(0, 9),
                                                        st.integers(0, 64)), max_size=4))})
CHUNKS = _maybe(JSON, st.lists(st.tuples(st.integers(0, 2), st.floats(0, 5), st.floats(0, 9), st.integers(0, 64)),
                                max_size=4))


def _good_record(key):
    group, index = key
    return st.fixed_dictionaries({"group": st.just(group), "index": st.just(index),
                                  "output_tokens": st.integers(1, 2000)},
                                 optional={"prompt_tokens": st.integers(1, 500), "policy": st.just("seer"),
                                           "max_tokens": st.integers(0, 4096), "instances": st.integers(0, 8),
                                           "capacity": st.integers(0, 64), "chunks": CHUNKS})


# Records with distinct (group, index), so that most files get past parsing to the simulator's checks.
GOOD_TRACE = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 7)), min_size=1, max_size=12, unique=True).flatmap(
    lambda keys: st.tuples(*map(_good_record, keys)))
TRACE_FILE = st.one_of(GOOD_TRACE, GOOD_TRACE, st.lists(TRACE_RECORD, max_size=12)).map(
    lambda rows: "\n".join(json.dumps(r) for r in rows).encode()) | st.binary(max_size=300)
VALID_POLICIES = [p for p, _ in POLICY_CHOICES]
SIM_FORM = st.fixed_dictionaries(
    {"workload": st.sampled_from([*PRESETS, "upload", "upload", "upload", "upload", "run", "nope"]),
     "policies": _maybe(st.lists(st.sampled_from(VALID_POLICIES + ["bogus"]), max_size=4),
                        st.lists(st.sampled_from(VALID_POLICIES), min_size=1, max_size=3)),
     "accept_len": _maybe(NUMBERS.map(str), st.sampled_from(["1.0", "2.0", "8.9"])),
     "group_size": _maybe(st.sampled_from(["7", "x", ""]), st.sampled_from(["8", "16"]))},
    optional={              "run": NUMBERS.map(str), "iteration": NUMBERS.map(str),
              "trace_policy": _maybe(st.text(max_size=45), st.just("seer")),
              **{k: _maybe(NUMBERS.map(str), st.integers(1, 64).map(str))
                 for k in ("instances", "kv_tokens", "max_batch")},
              "shared_kv": st.sampled_from(["on", ""])})


def test_generated_whatif_forms_never_get_a_server_error(client, team_user):
    team, user = team_user
    client.force_login(user)
    answers = []

    @given(fields=SIM_FORM, trace=TRACE_FILE)
    @FUZZ
    def post(fields, trace):
        data = {**fields, "trace_file": SimpleUploadedFile("t.jsonl", trace)} if trace else dict(fields)
        before = Simulation.objects.count()
        resp = client.post(f"/teams/{team.slug}/whatif/", data)
        answers.append(resp.status_code)
        assert resp.status_code in (302, 400), (fields, trace[:300], resp.status_code)
        if resp.status_code == 400:
            assert resp.context["form"].errors and Simulation.objects.count() == before

    post()
    assert len(answers) >= 150 and 400 in answers and 302 in answers, answers
