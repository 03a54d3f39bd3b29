"""A what-if simulation end to end: the form stores it, the real Celery worker simulates it,
the result page and its JSON show every policy."""
import json
import time

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_uploaded_trace_is_simulated_by_the_worker(client, team_user, live_worker):
    from whatif.models import Simulation

    team, user = team_user
    client.force_login(user)
    rows = [{"policy": "static-group", "group": g, "index": i, "prompt_tokens": 30, "output_tokens": 10 + 40 * g + 9 * i,
             "max_tokens": 200, "instances": 2, "capacity": 3} for g in range(4) for i in range(4)]
    trace = SimpleUploadedFile("t.jsonl", ("\n".join(json.dumps(r) for r in rows)).encode())
    resp = client.post(f"/teams/{team.slug}/whatif/", {
        "workload": "upload", "trace_file": trace, "group_size": "8", "accept_len": "2.0",
        "policies": ["static-group", "seer-no-spec", "seer", "oracle-lfs"]})
    assert resp.status_code == 302
    sim = Simulation.objects.get()
    deadline = time.time() + 90
    while time.time() < deadline:
        sim.refresh_from_db()
        if sim.state in ("done", "failed"):
            break
        time.sleep(0.5)
    assert sim.state == "done", f"{sim.state} {sim.error}\n{live_worker.read_text()[-2000:]}"
    data = client.get(f"/whatif/{sim.pk}.json").json()
    pol = data["results"]["policies"]
    assert data["results"]["order"] == ["static-group", "seer-no-spec", "seer", "oracle-lfs"] == sorted(pol, key=list(
        data["results"]["order"]).index)
    assert all(p["output_tokens"] == sum(r["output_tokens"] for r in rows) for p in pol.values())
    assert pol["static-group"]["throughput_vs_static"] == 1.0
    assert len(data["results"]["charts"]["seer"]["requests"]) == len(rows)
    page = client.get(f"/whatif/{sim.pk}/")
    assert page.status_code == 200 and b"whatif.js" in page.content
