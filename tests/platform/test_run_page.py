"""The run page: header and headline numbers with ratios to the reference run, config as
YAML, the job log folded and pushed live, series by iteration or wall time."""
import json
import re

import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator

from runs.models import Run
from tests import factories

pytestmark = pytest.mark.django_db

CONFIG = {"model": "tiny", "iterations": 5, "max_tokens": 64}


def _points(run, name, values):
    from telemetry.models import MetricPoint

    MetricPoint.objects.bulk_create([MetricPoint(run=run, name=name, step=i, value=v) for i, v in enumerate(values)])


def test_policy_keys_are_the_comparisons():
    from compare.summary import BASELINE_POLICIES, POLICY_KEYS
    from telemetry import headline

    assert headline.POLICY_KEYS == POLICY_KEYS and headline.BASELINE_POLICIES == BASELINE_POLICIES


def test_reference_is_the_experiments_baseline_of_the_same_config(team_user):
    from telemetry.headline import headline, reference_for

    team, alice = team_user
    exp, other = factories.experiment(team, "ab"), factories.experiment(team, "older")
    team_verl = factories.run(other, {**CONFIG, "rollout_policy": "verl"}, created_by=alice)
    static = factories.run(exp, {**CONFIG, "rollout_policy": "static-group"}, created_by=alice)
    factories.run(exp, {**CONFIG, "max_tokens": 128, "rollout_policy": "verl"}, created_by=alice)  # other config
    seer = factories.run(exp, {**CONFIG, "rollout_policy": "seer", "chunk_tokens": 32}, created_by=alice)
    factories.run(exp, {**CONFIG, "rollout_policy": "verl"}, created_by=alice)  # newest, but nothing logged yet
    for baseline in (team_verl, static):
        _points(baseline, "rollout/throughput_tok_s", [150.0])
    # verl is preferred to static-group, even from another experiment of the team
    assert reference_for(alice, seer) == team_verl
    team_verl.delete()
    assert reference_for(alice, seer) == static
    assert reference_for(alice, static) is None  # no earlier baseline of its config
    _points(seer, "rollout/throughput_tok_s", [100.0, 300.0, 320.0])  # median 300
    _points(seer, "reward/mean", [0.1, 0.4])
    _points(static, "rollout/tail_time_s", [0.0])  # near-zero reference: no ratio
    _points(seer, "rollout/tail_time_s", [3.0])
    _points(seer, "reward/accuracy", [0.2, 0.3])
    _points(seer, "val/accuracy", [0.5, 0.9])  # validation accuracy is its own number, not training's
    h = headline(alice, seer)
    assert h["values"] == {"throughput": 300.0, "reward": 0.4, "tail": 3.0, "accuracy": 0.3, "val_accuracy": 0.9}
    assert h["ratios"] == {"throughput": 2.0} and h["reference"]["id"] == static.pk
    _points(seer, "rollout/spec/accept_len", [1.0])  # logged without speculation: no accept length
    _points(static, "rollout/spec/accept_len", [1.0])
    assert "accept_len" not in headline(alice, seer)["values"]
    seer.config["spec_decoding"] = True
    seer.save()
    h = headline(alice, seer)
    assert h["values"]["accept_len"] == 1.0 and "accept_len" not in h["ratios"]  # the reference does not speculate


def test_a_baseline_that_ran_at_the_same_time_is_a_reference_only_when_no_other_is(team_user):
    from datetime import timedelta

    from django.utils import timezone

    from telemetry.headline import headline, reference_for

    team, alice = team_user
    exp = factories.experiment(team, "ab")
    t0 = timezone.now() - timedelta(hours=3)
    hour = timedelta(hours=1)
    earlier = factories.run(exp, {**CONFIG, "rollout_policy": "verl"}, state="succeeded", created_by=alice,
                            started_at=t0, finished_at=t0 + hour)
    during = factories.run(exp, {**CONFIG, "rollout_policy": "verl"}, state="succeeded", created_by=alice,
                           started_at=t0 + 2 * hour, finished_at=t0 + 3 * hour)
    seer = factories.run(exp, {**CONFIG, "rollout_policy": "seer"}, state="running", created_by=alice,
                         started_at=t0 + 2.5 * hour)
    for r, tok_s in ((earlier, 200.0), (during, 100.0), (seer, 240.0)):
        _points(r, "rollout/throughput_tok_s", [tok_s])
    assert reference_for(alice, seer) == earlier  # the newer verl run shared the cluster with it
    assert headline(alice, seer)["reference"]["concurrent"] is False
    earlier.delete()
    h = headline(alice, seer)
    assert h["reference"]["id"] == during.pk and h["reference"]["concurrent"] is True
    assert h["ratios"] == {"throughput": 2.4}  # shown, but the page marks it as no verdict


def test_page_header_config_yaml_and_folded_log(client, team_user):
    team, alice = team_user
    run = factories.run(factories.experiment(team, "e"), {**CONFIG, "rollout_policy": "seer"}, state=Run.State.RUNNING,
                        created_by=alice, name="my run", log_tail="\x1b[31mboom\x1b[0m")
    client.force_login(alice)
    html = client.get(f"/runs/{run.pk}/").content.decode()
    assert re.search(r"<title>(.*?)</title>", html).group(1) == "my run · Umbra"
    assert "{#" not in html and "{%" not in html  # no template syntax shown as text
    assert 'id="config-actions"' in html and 'id="copy-config"' in html
    assert "iterations: 5\nmax_tokens: 64\nmodel: tiny\nrollout_policy: seer\n" in html
    assert re.search(r'<details class="panel" id="job-log">', html)  # folded: no "open"
    assert 'id="starting"' in html and f'data-headline-url="/runs/{run.pk}/headline.json"' in html
    data = client.get(f"/runs/{run.pk}/headline.json").json()
    assert data == {"values": {}, "ratios": {}, "reference": None}


def test_series_by_wall_time_and_a_bad_axis(client, team_user):
    team, alice = team_user
    run = factories.run(factories.experiment(team, "e"), CONFIG, created_by=alice)
    _points(run, "rollout/time_s", [1.0, 2.0])
    client.force_login(alice)
    rel = client.get(f"/runs/{run.pk}/series.json?x=relative").json()
    assert rel["x"] == "relative" and [p[1] for p in rel["series"]["rollout/time_s"]] == [1.0, 2.0]
    assert all(p[0] >= 0 for p in rel["series"]["rollout/time_s"])
    bad = client.get(f"/runs/{run.pk}/series.json?x=wall")
    assert bad.status_code == 400 and "x must be" in bad.json()["detail"]


@pytest.mark.django_db(transaction=True)
def test_a_new_log_tail_is_pushed_to_the_dashboard(team_user, running_run):
    from runs.signals import log_updated
    from umbra_site.asgi import application

    _, alice = team_user
    run, _ = running_run

    async def scenario():
        from channels.db import database_sync_to_async

        comm = WebsocketCommunicator(application, f"/ws/runs/{run.pk}/", headers=[(b"origin", b"http://testserver")])
        comm.scope["user"] = alice
        assert (await comm.connect())[0]
        await database_sync_to_async(log_updated.send)(sender=Run, run_id=run.pk, tail="line 1\nline 2")
        msg = json.loads(await comm.receive_from(timeout=5))
        await comm.disconnect()
        return msg

    assert async_to_sync(scenario)() == {"type": "log", "tail": "line 1\nline 2"}
