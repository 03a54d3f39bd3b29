"""``manage.py bench_live`` in smoke mode: real daphne, WebSocket clients and ingestion
POSTs; every posted point reaches every client exactly once (no timing asserted).
Moved from tests/platform: it starts daphne processes of its own."""
import json

import pytest
from django.core.management import call_command

from runs.models import Run
from teams.models import Team

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_bench_live_counts_add_up(tmp_path):
    out = tmp_path / "live.json"
    call_command("bench_live", clients=4, runs=2, rate=400, duration=2, batch=40, drain=20, json=str(out))
    result = json.loads(out.read_text())
    assert result["posts_failed"] == 0 and result["batches_not_sent_too_late"] == 0
    assert result["accepted_points"] == 800  # 2 runs x 10 batches x 40 points
    assert result["expected_deliveries"] == 4 * 400  # each client sees its run's 400 points
    assert (result["lost"], result["duplicated"], result["unexpected"]) == (0, 0, 0)
    assert result["received"] == result["unique"] == result["expected_deliveries"]
    assert result["clients_closed_by_server"] == 0
    # its throwaway team, runs and sessions are gone
    assert not Team.objects.filter(slug__startswith="bench-live-").exists() and not Run.objects.exists()
