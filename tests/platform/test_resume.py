"""Resume (a new attempt of a failed or cancelled run) and what the job sends for it:
replaced metric points, job notes in the event log, batch numbers after the stored ones."""
import pytest
from rest_framework.test import APIClient

from runs import ray_jobs
from runs.models import Run, RunEvent
from runs.ingest_tokens import issue_ingest_token
from telemetry.models import MetricBatch, MetricPoint

pytestmark = pytest.mark.django_db


def _api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.mark.parametrize("state", ["failed", "cancelled"])
def test_failed_or_cancelled_run_resumes_as_a_new_attempt(running_run, team_user, state):
    run, _ = running_run
    Run.objects.filter(pk=run.pk).update(state=state, ray_job_id=run.submission_id)
    resp = _api(team_user[1]).post(f"/api/runs/{run.pk}/resume/")
    assert resp.status_code == 202, resp.content
    run.refresh_from_db()
    assert (run.state, run.attempt, run.ray_job_id, run.finished_at) == ("queued", 1, "", None)
    assert run.submission_id == f"umbra-run-{run.pk}-a1"
    last = run.events.last()
    assert (last.from_state, last.to_state) == (state, "queued") and "checkpoint" in last.reason


@pytest.mark.parametrize("state", ["queued", "dispatching", "running", "succeeded"])
def test_only_failed_or_cancelled_runs_resume(running_run, team_user, state):
    run, _ = running_run
    Run.objects.filter(pk=run.pk).update(state=state)
    resp = _api(team_user[1]).post(f"/api/runs/{run.pk}/resume/")
    assert resp.status_code == 409 and state in resp.json()["detail"]
    run.refresh_from_db()
    assert (run.state, run.attempt) == (state, 0)


def _shown(page: str, button: str) -> bool:
    """Whether the form holding ``button`` is drawn visible (the page's script toggles it live)."""
    form = next(f for f in page.split("<form")[1:] if f'id="{button}"' in f)
    return " hidden>" not in form.split(">", 1)[0] + ">"


def test_resume_button_only_on_a_resumable_run(client, running_run, team_user):
    run, _ = running_run
    client.force_login(team_user[1])
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert _shown(page, "cancel") and not _shown(page, "resume")
    Run.objects.filter(pk=run.pk).update(state="failed")
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert _shown(page, "resume") and not _shown(page, "cancel")
    resp = client.post(f"/runs/{run.pk}/resume/")
    assert resp.status_code == 302 and Run.objects.get(pk=run.pk).state == "queued"


def test_resume_retires_the_earlier_attempts_token(client, running_run, team_user):
    run, token = running_run
    Run.objects.filter(pk=run.pk).update(state="failed")
    assert _api(team_user[1]).post(f"/api/runs/{run.pk}/resume/").status_code == 202
    # queued for its new attempt: the old job's token must not write into its history
    assert _post(client, run, token, {"seq": 1, "points": []}).status_code == 404


def _post(client, run, token, body):
    return client.post(f"/api/runs/{run.pk}/metrics/", body, content_type="application/json",
                       HTTP_AUTHORIZATION=f"Bearer {token}")


def test_a_later_batch_replaces_points_of_the_same_step(client, running_run):
    run, token = running_run
    point = {"name": "reward/mean", "step": 4}
    assert _post(client, run, token, {"seq": 1, "points": [{**point, "value": 1.0}]}).status_code == 201
    # a resumed attempt re-runs iteration 4; one batch may also repeat a point: the last one wins
    body = {"seq": 2, "points": [{**point, "value": 2.0}, {**point, "value": 3.0}]}
    assert _post(client, run, token, body).status_code == 201
    assert list(MetricPoint.objects.filter(run=run).values_list("step", "value")) == [(4, 3.0)]


def test_job_notes_go_to_the_event_log_and_the_dashboard(client, running_run, team_user):
    run, token = running_run
    note = "rollout instance 1 died during the rollout of iteration 3; a replacement instance was started"
    assert _post(client, run, token, {"seq": 1, "points": [], "events": [note]}).status_code == 201
    event = run.events.get(kind=RunEvent.Kind.JOB)
    assert (event.reason, event.from_state, event.to_state) == (note, "running", "running")
    client.force_login(team_user[1])
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert note in page and '<details class="panel" id="events" open>' in page
    api = _api(team_user[1]).get(f"/api/runs/{run.pk}/events/").json()
    assert api[-1]["kind"] == "job" and api[-1]["reason"] == note


def test_job_notes_per_run_are_bounded(client, running_run, team_user, monkeypatch):
    from telemetry import services

    monkeypatch.setattr(services, "MAX_JOB_NOTES", 3)
    run, token = running_run
    for seq in (1, 2):
        assert _post(client, run, token, {"seq": seq, "points": [], "events": [f"n{seq}a", f"n{seq}b"]}).status_code == 201
    assert list(run.events.filter(kind="job").values_list("reason", flat=True)) == ["n1a", "n1b", "n2a"]


@pytest.mark.parametrize("events", [[""], ["x" * 1001], ["ok"] * 101, [1], "note"])
def test_bad_job_notes_are_refused(client, running_run, events):
    run, token = running_run
    resp = _post(client, run, token, {"seq": 1, "points": [], "events": events})
    assert resp.status_code == 400 and "events" in resp.json()["detail"]
    assert not RunEvent.objects.filter(run=run, kind="job").exists() and not MetricBatch.objects.exists()


def test_a_resumed_job_numbers_batches_after_the_stored_ones(running_run, settings, tmp_path):
    """The job's environment: the run's checkpoint folder and the last stored batch number."""
    run, _ = running_run
    settings.UMBRA_CHECKPOINT_DIR = str(tmp_path)
    MetricBatch.objects.bulk_create([MetricBatch(run=run, seq=s) for s in (1, 2, 5)])

    class Recorder:  # stands in for Ray's JobSubmissionClient: only the arguments matter here
        def submit_job(self, **kwargs):
            self.kwargs = kwargs
            return kwargs["submission_id"]

    jobs = Recorder()
    from runs.dispatch import _last_batch_seq

    ray_jobs.submit(jobs, "umbra-run-x", run.pk, {"model": "tiny"}, issue_ingest_token(run), _last_batch_seq(run))
    env = jobs.kwargs["runtime_env"]["env_vars"]
    assert env["UMBRA_SEQ_START"] == "5"
    assert env["UMBRA_CHECKPOINT_DIR"] == str(tmp_path / f"run-{run.pk}")
    assert jobs.kwargs["entrypoint"] == "python -m umbra.job"


class _Cluster:
    """Stands in for Ray's JobSubmissionClient in the dispatch sequencing tests: records
    jobs submitted and stopped; ``during_submit`` runs while a submission is in flight."""

    def __init__(self, during_submit=None, jobs=()):
        self.jobs, self.stopped, self.during_submit = set(jobs), [], during_submit

    def get_job_info(self, job):
        if job not in self.jobs:
            raise RuntimeError("404")
        return object()

    def submit_job(self, **kwargs):
        self.jobs.add(kwargs["submission_id"])
        if self.during_submit:
            self.during_submit()
        return kwargs["submission_id"]

    def stop_job(self, job):
        if job not in self.jobs:
            raise RuntimeError("404")
        self.stopped.append(job)
        return True


@pytest.mark.parametrize("change", ["cancel", "resume again"])
def test_a_job_submitted_for_a_run_that_changed_meanwhile_is_stopped(running_run, monkeypatch, change):
    from unittest import mock

    from runs import tasks
    from runs.services import request_resume, transition

    run, _ = running_run
    Run.objects.filter(pk=run.pk).update(state="failed")
    request_resume(Run.objects.get(pk=run.pk))  # queued, attempt 1

    def meanwhile():
        if change == "cancel":  # cancel_run found no job yet: it records the cancel itself
            transition(run.pk, Run.State.CANCELLED, "cancelled before the Ray job started")
        else:
            transition(run.pk, Run.State.FAILED, "x")
            request_resume(Run.objects.get(pk=run.pk))

    cluster = _Cluster(meanwhile, jobs={f"umbra-run-{run.pk}"})
    monkeypatch.setattr(ray_jobs, "client_for", lambda config: cluster)
    with mock.patch.object(tasks.follow_run, "apply_async") as follow:
        tasks.dispatch_run(run.pk)
    assert f"umbra-run-{run.pk}-a1" in cluster.stopped and not follow.called
    assert f"umbra-run-{run.pk}" in cluster.stopped  # the earlier attempt's job, in case it still ran
    assert Run.objects.get(pk=run.pk).ray_job_id == ""
