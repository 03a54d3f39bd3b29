"""The what-if form picks a run from a list (issue 17): the runs the user may see that have
a trace, newest first; a run of another team is neither offered nor accepted."""
import pytest

from telemetry.models import IterationTrace
from tests import factories

pytestmark = pytest.mark.django_db


def test_run_picker_lists_visible_runs_with_a_trace(client, team_user):
    team, user = team_user
    traced = factories.run(factories.experiment(team, "gsm8k"), config={"model": "tiny", "rollout_policy": "seer"})
    untraced = factories.run(factories.experiment(team, "gsm8k"), config={"model": "tiny"})
    other = factories.team("beta")
    foreign = factories.run(factories.experiment(other, "secret"), config={"model": "tiny"})
    for run in (traced, foreign):
        IterationTrace.objects.create(run=run, iteration=0, requests=[])
    client.force_login(user)
    page = client.get(f"/teams/{team.slug}/whatif/").content.decode()
    select = page[page.index('<select name="run"'):]
    select = select[:select.index("</select>")]
    assert f'value="{traced.pk}"' in select and f"#{traced.pk} Alpha/gsm8k · seer" in select
    assert f'value="{untraced.pk}"' not in select and f'value="{foreign.pk}"' not in select
    resp = client.post(f"/teams/{team.slug}/whatif/", {"workload": "run", "run": foreign.pk, "group_size": 8,
                                                         "policies": ["seer"], "accept_len": 2.0})
    assert resp.status_code == 400 and "no such run" in " ".join(resp.context["form"].errors["run"])


def test_a_picked_run_with_a_preset_workload_is_an_error_not_ignored(client, team_user):
    from whatif.models import Simulation

    team, user = team_user
    traced = factories.run(factories.experiment(team, "gsm8k"), config={"model": "tiny", "rollout_policy": "seer"})
    IterationTrace.objects.create(run=traced, iteration=0, requests=[])
    client.force_login(user)
    resp = client.post(f"/teams/{team.slug}/whatif/", {"workload": "moonlight", "run": traced.pk, "group_size": 8,
                                                         "policies": ["seer"], "accept_len": 2.0})
    assert resp.status_code == 400
    assert "a run is picked" in " ".join(resp.context["form"].errors["workload"])
    assert Simulation.objects.count() == 0
