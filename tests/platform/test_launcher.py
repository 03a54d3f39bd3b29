"""The launcher (issue 17): the run form in sections with an unknown field in Advanced,
a YAML config pasted or uploaded into the same validation, the tiny model as default
where only it is prepared, Clone of a visible run, and the A/B button that queues the
baseline and seer one after the other (the second is dispatched only after the first ends)."""
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from runs import queue
from runs.form_sections import ADVANCED, MODEL_AND_DATA, RESOURCES, ROLLOUT, section_of
from runs.forms import RunForm, default_model
from runs.lifecycle import transition
from runs.models import Run
from tests import factories

pytestmark = pytest.mark.django_db
GOOD = {"experiment": "exp", "model": "tiny", "dataset": "arith", "prompts_per_iteration": "4", "group_size": "4",
        "max_tokens": "32", "iterations": "2", "rollout_instances": "2", "rollout_policy": "static-group"}
ROOMY = {"CPU": 64.0, "memory": 256.0 * 2**30}


def _post(client, team, **changes):
    return client.post(f"/teams/{team.slug}/runs/new/", {**GOOD, **changes})


def test_sections_place_known_fields_and_send_unknown_ones_to_advanced():
    assert section_of("model") == MODEL_AND_DATA and section_of("val_every") == MODEL_AND_DATA
    assert section_of("seer_divided") == ROLLOUT and section_of("trainer_ranks") == RESOURCES
    assert section_of("some_field_added_later") == ADVANCED
    titles = [s["title"] for s in RunForm().sections()]
    assert titles[0] == MODEL_AND_DATA and titles[-1] == ADVANCED
    drawn = [f.name for s in RunForm().sections() for f in s["fields"]]
    from umbra.config import RunConfig
    assert set(RunConfig.model_fields) <= set(drawn)  # every schema field is drawn somewhere


def test_form_page_draws_sections_with_help_beside_and_errors_under_their_field(client, team_user):
    team, user = team_user
    client.force_login(user)
    page = client.get(f"/teams/{team.slug}/runs/new/").content.decode()
    for title in ("Model and data", "Rollout policy", "Training", "Resources"):
        assert f"<legend>{title}</legend>" in page
    assert '<details class="form-section" id="section-advanced">' in page  # collapsed
    assert 'id="id_group_size_helptext"' in page and 'aria-describedby="id_group_size_helptext"' in page
    page = _post(client, team, group_size="1").content.decode()
    summary = page[page.index('id="form-error-summary"'):page.index("</div>", page.index('id="form-error-summary"'))]
    assert '1 field to fix' in summary and '<a href="#id_group_size">Group size</a>' in summary  # over the form
    block = page[page.index('data-field="group_size"'):]
    block = block[:block.index('data-field="', 10)]
    assert block.index("<label") < block.index('class="field-error"')  # the message sits under its own field


def test_yaml_paste_fills_the_fields_and_is_validated_like_the_form(client, team_user):
    team, user = team_user
    client.force_login(user)
    resp = _post(client, team, config_yaml="rollout_policy: seer\ngroup_size: 6\nspec_decoding: true\nlearning_rate: 3e-6\n")
    assert resp.status_code == 302
    config = Run.objects.get().config
    assert (config["rollout_policy"], config["group_size"], config["spec_decoding"]) == ("seer", 6, True)
    assert config["learning_rate"] == 3e-6  # 1e-6 reads as a number, as in the CLI's files
    resp = _post(client, team, config_yaml="group_size: 1\n")
    assert resp.status_code == 400 and "greater than or equal to 2" in " ".join(resp.context["form"].errors["group_size"])
    assert Run.objects.count() == 1


@pytest.mark.parametrize("text,msg", [
    ("model: [tiny\n", "YAML could not be read (line"),
    ("- a\n- b\n", "must be a mapping"),
    ("colour: blue\n", "unknown config field in YAML: colour"),
    ("model:\n  name: tiny\n", "must be a single value"),
])
def test_bad_yaml_is_a_form_error_and_stores_nothing(client, team_user, text, msg):
    team, user = team_user
    client.force_login(user)
    resp = _post(client, team, config_yaml=text)
    assert resp.status_code == 400
    assert msg in " ".join(resp.context["form"].errors["config_yaml"])
    assert Run.objects.count() == 0


def test_yaml_with_a_team_line_is_read_for_this_team_and_refused_for_another(client, team_user):
    team, user = team_user
    client.force_login(user)
    resp = _post(client, team, config_yaml=f"team: {team.slug}\nexperiment: from-cli\niterations: 3\n")
    assert resp.status_code == 302 and Run.objects.get().config["iterations"] == 3  # the CLI's run.yaml as is
    resp = _post(client, team, config_yaml="team: beta\niterations: 3\n")
    assert resp.status_code == 400
    assert "names team 'beta'" in " ".join(resp.context["form"].errors["config_yaml"])
    assert Run.objects.count() == 1


def test_yaml_upload_goes_through_the_same_checks(client, team_user):
    team, user = team_user
    client.force_login(user)
    resp = _post(client, team, config_file=SimpleUploadedFile("c.yaml", b"iterations: 5\n"))
    assert resp.status_code == 302 and Run.objects.get().config["iterations"] == 5
    resp = _post(client, team, config_file=SimpleUploadedFile("c.yaml", b"\xff\xfe"))
    assert "not UTF-8" in " ".join(resp.context["form"].errors["config_file"])


def test_default_model_is_tiny_only_where_it_alone_is_prepared(tmp_path, monkeypatch):
    monkeypatch.setenv("UMBRA_MODEL_DIR", str(tmp_path))
    assert default_model() == "smollm2"
    (tmp_path / "tiny").mkdir()
    (tmp_path / "tiny" / "config.json").write_text("{}")
    assert default_model() == "tiny" and RunForm()["model"].initial == "tiny"
    (tmp_path / "smollm2").mkdir()
    (tmp_path / "smollm2" / "config.json").write_text("{}")
    assert default_model() == "smollm2"


def test_clone_prefills_the_form_and_other_teams_runs_are_404(client, team_user):
    team, user = team_user
    client.force_login(user)
    assert _post(client, team, group_size="6", rollout_policy="seer").status_code == 302
    run = Run.objects.get()
    resp = client.get(f"/teams/{team.slug}/runs/new/?clone={run.pk}")
    form = resp.context["form"]
    assert form["group_size"].value() == 6 and form["rollout_policy"].value() == "seer"
    assert form["experiment"].value() == "exp" and f"run #{run.pk}" in resp.content.decode()
    other = factories.team("beta")
    foreign = Run.objects.create(experiment=other.experiments.create(name="x"), config={"model": "tiny"})
    assert client.get(f"/teams/{team.slug}/runs/new/?clone={foreign.pk}").status_code == 404
    assert client.get(f"/teams/{team.slug}/runs/new/?clone=abc").status_code == 404


def test_ab_queues_baseline_then_seer_and_the_second_waits_for_the_first(client, team_user):
    team, user = team_user
    client.force_login(user)
    resp = _post(client, team, ab="1", ab_ablations=["no-divided"], seer_divided="on", seer_context_aware="on")
    assert resp.status_code == 302
    base, seer, ablation = Run.objects.order_by("pk")
    assert resp["Location"] == f"/teams/{team.slug}/ab/{base.experiment_id}/"
    assert [r.config["rollout_policy"] for r in (base, seer, ablation)] == ["verl", "seer", "seer"]
    assert ablation.config["seer_divided"] is False and seer.config["seer_divided"] is True
    assert base.experiment_id == seer.experiment_id == ablation.experiment_id and "A/B" in base.experiment.name
    assert (seer.after_id, ablation.after_id) == (base.pk, seer.pk)

    assert queue.pump(lambda config: ROOMY).dispatched == [base.pk]  # room for all: still one at a time
    assert queue.pump(lambda config: ROOMY).dispatched == []
    page = client.get(resp["Location"]).content.decode()
    assert f"run #{base.pk} to end" in page and "dispatching" in page
    transition(base.pk, Run.State.RUNNING, "Ray job running")
    transition(base.pk, Run.State.FAILED, "Ray job failed")  # any end lets the next one go
    assert queue.pump(lambda config: ROOMY).dispatched == [seer.pk]
    transition(seer.pk, Run.State.RUNNING, "Ray job running")
    transition(seer.pk, Run.State.SUCCEEDED, "Ray job succeeded")
    assert queue.pump(lambda config: ROOMY).dispatched == [ablation.pk]
    transition(ablation.pk, Run.State.CANCELLED, "cancelled")
    done = client.get(resp["Location"])
    assert done.status_code == 302 and done["Location"] == f"/compare/?runs={base.pk}%2C{seer.pk}%2C{ablation.pk}"


def test_two_ab_launches_in_one_second_get_an_experiment_each(client, team_user, monkeypatch):
    from datetime import datetime, timezone as tz

    from runs import ab

    team, user = team_user
    client.force_login(user)
    monkeypatch.setattr(ab.timezone, "now", lambda: datetime(2026, 12, 1, 23, 10, 5, tzinfo=tz.utc))
    for _ in range(2):
        assert _post(client, team, ab="1").status_code == 302
    runs = list(Run.objects.order_by("pk"))
    names = [r.experiment.name for r in runs]
    assert len(runs) == 4 and names[0] == names[1] != names[2] == names[3], names
    assert names[2].endswith("A/B 2026-12-01 23:10:05 (2)")
    assert runs[2].after_id is None and runs[3].after_id == runs[2].pk  # each pair is its own chain


def test_a_run_waiting_for_another_blocks_nobody_behind_it(client, team_user):
    team, user = team_user
    client.force_login(user)
    _post(client, team, ab="1")
    base, seer = Run.objects.order_by("pk")
    _post(client, team)
    other = Run.objects.order_by("pk").last()
    assert set(queue.pump(lambda config: ROOMY).dispatched) == {base.pk, other.pk}
    assert Run.objects.get(pk=seer.pk).state == "queued"
