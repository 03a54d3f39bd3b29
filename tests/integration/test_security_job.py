"""The README's security claim about a real dispatched Ray job: its entrypoint is exactly
``python -m umbra.job`` and the run's ingestion token and the platform's SECRET_KEY appear
in no platform log (DEBUG), job log, stored log tail, run event, dashboard or log API.

Moved from tests/platform/test_security.py (the other claims stay there): it submits a real
job to the session's Ray head."""
import hashlib
import logging
import time

import pytest
from django.test import Client

from runs.models import Experiment, Run
from umbra.config import RunConfig

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def test_real_job_keeps_token_out_of_logs_and_entrypoint(ray_cluster, tiny_model_path, settings, caplog,
                                                        monkeypatch, team_user, tmp_path):
    """Dispatch a real Ray job (it fails fast: every prompt is too long) and read every log."""
    from runs import ray_jobs, tasks

    team, user = team_user
    data = tmp_path / "long.jsonl"
    data.write_text('{"question": "%s", "answer": "#### 1"}\n' % ("one two three " * 400))
    settings.RAY_ADDRESS = ray_cluster["dashboard"]
    settings.SECRET_KEY = "secret-key-" + "q" * 40
    exp = Experiment.objects.create(team=team, name="sec")
    run = Run.objects.create(experiment=exp, config=RunConfig(model="tiny", dataset=str(data)).model_dump(),
                             created_by=user)
    follows = []
    monkeypatch.setattr(tasks.follow_run, "apply_async", lambda *a, **k: follows.append(a))  # we poll below
    caplog.set_level(logging.DEBUG)

    tasks.dispatch_run(run.pk)
    assert follows, "dispatch should hand the run to the follow task"
    client = ray_jobs.client_for(run.config)
    deadline = time.time() + 300
    while str(client.get_job_status(run.submission_id).value) not in ("SUCCEEDED", "FAILED", "STOPPED"):
        assert time.time() < deadline, "the job did not end"
        time.sleep(0.5)
    tasks.follow_run(run.pk)

    info = client.get_job_info(run.submission_id)
    assert info.entrypoint == "python -m umbra.job"
    token = info.runtime_env["env_vars"]["UMBRA_INGEST_TOKEN"]
    run.refresh_from_db()
    assert hashlib.sha256(token.encode()).hexdigest() == run.ingest_token_hash
    assert run.state == Run.State.FAILED and "longer than 512 tokens" in run.log_tail  # the real job ran
    web = Client()
    web.force_login(user)
    shown = [caplog.text, run.log_tail, client.get_job_logs(run.submission_id), str(info.message),
             *run.events.values_list("reason", flat=True),
             web.get(f"/runs/{run.pk}/").content.decode(), web.get(f"/api/runs/{run.pk}/logs/").content.decode()]
    for secret in (token, settings.SECRET_KEY):
        assert not [text for text in shown if secret in text]
