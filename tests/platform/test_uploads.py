"""Uploads: a run's data set (the run form) and a what-if trace. Every bad file is a field
error on the file field, and nothing is stored: no run or simulation, no file on disk."""
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from runs.models import Run
from whatif.models import Simulation

pytestmark = pytest.mark.django_db

RUN_FORM = {"experiment": "exp", "model": "tiny", "dataset": "arith", "prompts_per_iteration": "4", "group_size": "4",
            "max_tokens": "32", "iterations": "2", "rollout_instances": "2", "rollout_policy": "static-group"}
PROBLEM = json.dumps({"question": "1+1?", "answer": "#### 2"})
RECORD = {"policy": "seer", "group": 0, "index": 0, "prompt_tokens": 40, "output_tokens": 20, "max_tokens": 256,
          "instances": 2, "capacity": 4}


@pytest.fixture
def media(settings, tmp_path):
    """MEDIA_ROOT in a fresh folder; yields a function listing every file stored under it."""
    settings.MEDIA_ROOT = tmp_path

    def files():
        return [p for p in tmp_path.rglob("*") if p.is_file()]
    return files


@pytest.fixture
def member(client, team_user):
    team, user = team_user
    client.force_login(user)
    return team


def _dataset(client, team, content: bytes, name="d.jsonl"):
    return client.post(f"/teams/{team.slug}/runs/new/", {**RUN_FORM, "dataset_file": SimpleUploadedFile(name, content)})


def _trace(client, team, content: bytes, name="t.jsonl"):
    return client.post(f"/teams/{team.slug}/whatif/", {
        "workload": "upload", "group_size": "8", "policies": ["static-group", "seer"], "accept_len": "2.0",
        "trace_file": SimpleUploadedFile(name, content)})


def _field_error(resp, field: str) -> str:
    assert resp.status_code == 400, resp.status_code
    errors = resp.context["form"].errors
    assert field in errors, errors
    return " ".join(errors[field])


BAD_DATASETS = [
    (b"", "The submitted file is empty"),
    (b"\n \n\t\n", "no problems in the file"),
    ("{\"question\": \"caf\u00e9?\", \"answer\": \"#### 1\"}\n".encode("latin-1"), "not UTF-8 text"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xd8", "not UTF-8 text"),
    (b"\x00\x01\x02\x03 binary but valid UTF-8", "line 1: not JSON"),
    (b"question,answer\n1+1?,2\n", "line 1: not JSON"),
    ((PROBLEM + "\n" + "{\"question\": \"q\"").encode(), "line 2: not JSON"),
    (b"[1, 2]\n", "line 1: not a JSON object"),
    (b'{"question": "q"}\n', "no known row shape: columns found: question; expected verl"),
    (b'{"answer": "#### 3"}\n', "columns found: answer;"),
    (b'{"question": 5, "answer": "#### 3"}\n', "row 1: needs string fields"),
    (b'{"question": "q", "answer": "three"}\n', "no '#### <final answer>' line"),
    (b'{"question": "q", "answer": "####   "}\n', "empty final answer"),
    (b"[" * 100_000 + b"]" * 100_000, "too deeply nested or too large"),
]


@pytest.mark.parametrize("content,msg", BAD_DATASETS)
def test_bad_dataset_upload_is_a_field_error_and_stores_nothing(client, member, media, content, msg):
    assert msg in _field_error(_dataset(client, member, content), "dataset_file")
    assert Run.objects.count() == 0 and media() == []


def test_dataset_size_limit_is_inclusive(client, member, media, settings):
    settings.DATASET_UPLOAD_MAX_BYTES = 1000
    line = PROBLEM.encode() + b"\n"
    exact = line + b" " * (1000 - len(line))  # trailing blanks are skipped
    too_big = exact + b" "
    assert "at most 1,000" in _field_error(_dataset(client, member, too_big), "dataset_file")
    assert Run.objects.count() == 0 and media() == []
    assert _dataset(client, member, exact).status_code == 302
    assert Run.objects.count() == 1 and len(media()) == 1


def test_dataset_over_the_default_size_limit_is_refused(client, member, media, settings):
    content = (PROBLEM + "\n").encode() * (settings.DATASET_UPLOAD_MAX_BYTES // len(PROBLEM) + 1)
    assert len(content) > settings.DATASET_UPLOAD_MAX_BYTES
    assert "bytes; at most" in _field_error(_dataset(client, member, content), "dataset_file")
    assert Run.objects.count() == 0 and media() == []


def test_dataset_row_limit_is_inclusive(client, member, media, monkeypatch):
    monkeypatch.setattr("runs.forms.MAX_DATASET_ROWS", 3)
    assert "4 problems; at most 3" in _field_error(_dataset(client, member, (PROBLEM + "\n").encode() * 4),
                                                   "dataset_file")
    assert Run.objects.count() == 0 and media() == []
    assert _dataset(client, member, (PROBLEM + "\n\n").encode() * 3).status_code == 302  # blank lines do not count
    assert Run.objects.count() == 1


def test_rejected_config_with_good_dataset_writes_no_file(client, member, media):
    resp = client.post(f"/teams/{member.slug}/runs/new/", {
        **RUN_FORM, "group_size": "1", "dataset_file": SimpleUploadedFile("d.jsonl", PROBLEM.encode())})
    assert "greater than or equal to 2" in _field_error(resp, "group_size")
    assert Run.objects.count() == 0 and media() == []


def _jsonl(*records) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


BAD_TRACES = [
    (b"", "The submitted file is empty"),
    (b"\n\n  \n", "no trace records"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xd8", "not UTF-8 text"),
    # valid JSON with a Latin-1 byte in a key the simulator ignores: refused, not decoded with replacement
    (b'{"group":0,"index":0,"output_tokens":5,"note":"caf\xe9"}\n', "not UTF-8 text"),
    (b"group,index,output_tokens\n0,0,5\n", "t.jsonl:1: not a trace record"),
    (_jsonl(RECORD) + b'{"group": 0, "index": 1', "t.jsonl:2: not a trace record"),
    (b"[0, 0, 5]\n", "a record is a JSON object"),
    (_jsonl({"group": 0, "index": 0}), "output_tokens must be an integer"),
    (_jsonl({"index": 0, "output_tokens": 5}), "group must be an integer"),
    (_jsonl({**RECORD, "group": "0"}), "group must be an integer"),
    (_jsonl({**RECORD, "output_tokens": 5.5}), "output_tokens must be an integer"),
    (_jsonl({**RECORD, "output_tokens": True}), "output_tokens must be an integer"),
    (_jsonl({**RECORD, "output_tokens": 0}), "output_tokens must be within"),
    (_jsonl({**RECORD, "prompt_tokens": 10**30}), "prompt_tokens must be within"),
    (_jsonl({**RECORD, "policy": ["seer"]}), "policy must be a name"),
    (b'{"group":0,"index":0,"output_tokens":NaN}\n', "not a trace record"),
    (_jsonl(RECORD, RECORD), "appears twice"),
]


@pytest.mark.parametrize("content,msg", BAD_TRACES)
def test_bad_trace_upload_is_a_field_error_and_stores_nothing(client, member, media, content, msg):
    resp = _trace(client, member, content)
    errors = resp.context["form"].errors if resp.status_code == 400 else {}
    assert resp.status_code == 400
    assert msg in " ".join(errors.get("trace_file", []) + errors.get("__all__", [])), errors
    assert Simulation.objects.count() == 0 and media() == []


@pytest.mark.parametrize("chunks", [
    "zzz", {"a": 1}, [None], [[1]], [["a", "b", "c", "d"]], [[[], 0.0, 1.0, 16]],
    [[0, 1e308, -1e308, 10**400], [0, 0.0, 1e308, 16], [0, 0.0, 1e-300, 16]],
    [[0, 0.0, 1.0, 16], [0, 0.5, 2.0, 16], [0, 1.0, 1e308, 16], [1, 0.0, 1e300, 10**20]],
])
def test_garbage_chunks_fall_back_to_the_default_step_model(client, member, chunks):
    """``chunks`` only feed the step-model fit: garbage there means the default model, not a 500."""
    rows = [{**RECORD, "index": i, "chunks": chunks} for i in range(4)]
    resp = _trace(client, member, _jsonl(*rows))
    assert resp.status_code == 302, resp.context["form"].errors if resp.status_code == 400 else resp.status_code
    params = Simulation.objects.get().params
    assert params["step_model"] is None or all(v == v and abs(v) < float("inf") for v in params["step_model"].values())


def test_trace_size_and_row_limits_are_inclusive(client, member, monkeypatch):
    rows = [{**RECORD, "index": i} for i in range(5)]
    monkeypatch.setattr("whatif.forms.MAX_TRACE_REQUESTS", 4)
    assert "5 requests; at most 4" in _field_error(_trace(client, member, _jsonl(*rows)), "trace_file")
    content = _jsonl(*rows[:4])
    monkeypatch.setattr("whatif.forms.MAX_TRACE_BYTES", len(content) - 1)
    assert f"at most {len(content) - 1}" in _field_error(_trace(client, member, content), "trace_file")
    assert Simulation.objects.count() == 0
    monkeypatch.setattr("whatif.forms.MAX_TRACE_BYTES", len(content))
    assert _trace(client, member, content).status_code == 302
    assert len(Simulation.objects.get().trace) == 4


def test_trace_over_the_default_row_limit_is_refused(client, member):
    from whatif.forms import MAX_TRACE_REQUESTS

    rows = [{"group": i // 8, "index": i % 8, "output_tokens": 5} for i in range(MAX_TRACE_REQUESTS + 1)]
    msg = _field_error(_trace(client, member, _jsonl(*rows)), "trace_file")
    assert f"{MAX_TRACE_REQUESTS + 1} requests; at most {MAX_TRACE_REQUESTS}" in msg
    assert Simulation.objects.count() == 0


def test_a_verl_parquet_upload_is_stored_as_parquet_and_read_as_verl(client, member, media):
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    from umbra.data.files import load_file

    rows = [{"data_source": "openai/gsm8k", "prompt": [{"role": "user", "content": "1+1?"}],
             "reward_model": {"style": "rule", "ground_truth": "2"}, "extra_info": {"index": 0}}]
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows), buf)
    assert _dataset(client, member, buf.getvalue(), name="train.parquet").status_code == 302
    (stored,) = media()
    assert Run.objects.get().config["dataset"] == str(stored) and stored.suffix == ".parquet"
    loaded = load_file(stored)
    assert loaded.shape == "verl" and loaded.problems[0].answer == "2"
    bad = pa.Table.from_pylist([{**rows[0], "reward_model": {"style": "rule", "ground_truth": None}}])
    buf = io.BytesIO()
    pq.write_table(bad, buf)
    msg = _field_error(_dataset(client, member, buf.getvalue(), name="bad.parquet"), "dataset_file")
    assert "bad.parquet: row 1: reward_model must be a mapping with a 'ground_truth'" in msg
    assert Run.objects.count() == 1


def test_an_upload_is_its_teams_alone(client, member, media):
    """A team names only its own uploads: another team's file is refused by the API and the
    form as any path outside the data folders is, and the owner's run may name it again."""
    from rest_framework.test import APIClient

    from tests import factories

    assert _dataset(client, member, (PROBLEM + "\n").encode()).status_code == 302
    (stored,) = media()
    assert stored.parent.name == member.slug
    other = factories.team("other")
    eve = APIClient()
    eve.force_authenticate(factories.member(other, "eve"))
    body = {"team": "other", "experiment": "x", "config": {"model": "tiny", "dataset": str(stored)}}
    resp = eve.post("/api/runs/?dry_run=1", body, format="json")
    assert resp.status_code == 400 and "unknown dataset" in str(resp.data["config"]["dataset"])
    eve_form = client.__class__()
    eve_form.force_login(factories.member(other, "eve2"))
    resp = eve_form.post(f"/teams/{other.slug}/runs/new/", {**RUN_FORM, "dataset": str(stored)})
    assert "unknown dataset" in _field_error(resp, "dataset")
    mine = APIClient()
    mine.force_authenticate(Run.objects.get().created_by)
    body = {"team": member.slug, "experiment": "x", "config": {"model": "tiny", "dataset": str(stored)}}
    assert mine.post("/api/runs/?dry_run=1", body, format="json").status_code == 200
