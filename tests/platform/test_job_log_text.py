"""What a job prints is not ours: a NUL byte or a lone surrogate in its log (a reward that writes
binary) is stored as text PostgreSQL holds, so storing the log tail or the failure reason
never fails and the run stays followed."""
import pytest

from runs.dispatch import failure_reason
from runs.lifecycle import transition
from runs.models import Run
from runs.ray_jobs import logs_tail

pytestmark = pytest.mark.django_db
PRINTED = "step 1\n\x00\x1b[2J binary \ud800 from a reward\nValueError: bad\x00 row\n"


class _Logs:
    """The one call of Ray's JobSubmissionClient that logs_tail makes: its text as Ray returns it."""

    def get_job_logs(self, submission_id):
        return PRINTED


def test_a_log_with_nul_and_surrogates_is_stored_and_its_failure_reason_too(running_run):
    run, _ = running_run
    tail = logs_tail(_Logs(), "job-1")
    assert "\x00" not in tail and "\\x00" in tail and "\ud800" not in tail and "\ufffd" in tail
    Run.objects.filter(pk=run.pk).update(log_tail=tail)  # PostgreSQL text: NUL would be refused
    reason = failure_reason("Job failed\x00", PRINTED)
    assert "\x00" not in reason and "ValueError: bad\\x00 row" in reason
    transition(run.pk, Run.State.FAILED, reason)
    run.refresh_from_db()
    assert run.state == Run.State.FAILED and run.log_tail == tail
