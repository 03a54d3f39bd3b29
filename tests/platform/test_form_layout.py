"""Forms outside the run form (login, team members, what-if) use the run form's aligned layout
(runs/_field.html: label | control with its error under it | help), never Django's ``as_p``; labels
are sentence case without a colon; the run form's labels say the field's own terms; states are
badges (issue: a look that holds up beside W&B)."""
import re

import pytest

from runs.forms import RunForm, field_label
from umbra.rollout.policies.variants import SIM_VARIANT_NAMES
from tests import factories

pytestmark = pytest.mark.django_db


def _field_block(page: str, name: str) -> str:
    start = page.index(f'data-field="{name}"')
    nxt = page.find('data-field="', start + 10)
    return page[start:nxt if nxt > 0 else len(page)]


def _labels(page: str) -> list[str]:
    return [re.sub(r"<[^>]+>", "", m).strip() for m in re.findall(r'class="form-(?:label|field[^"]*)"[^>]*>\s*<(?:label|span)[^>]*>(.*?)</', page)]


def test_login_form_is_aligned_and_its_error_shows_above_the_fields(client, team_user):
    page = client.get("/accounts/login/").content.decode()
    assert 'data-field="username"' in page and 'data-field="password"' in page and "<p><label" not in page
    assert '<label for="id_username">Username</label>' in page and "Username:" not in page
    page = client.post("/accounts/login/", {"username": "alice", "password": "wrong"}).content.decode()
    assert 'class="form-errors" role="alert"' in page


def test_members_form_is_aligned_with_its_error_under_the_field(client):
    team = factories.team("alpha")
    admin = factories.member(team, "root", role="admin", password="pw-root-123")
    client.force_login(admin)
    page = client.get(f"/teams/{team.slug}/members/").content.decode()
    assert all(f'data-field="{n}"' in page for n in ("username", "role", "remove")) and "<p><label" not in page
    assert '<span class="badge">admin</span>' in page
    page = client.post(f"/teams/{team.slug}/members/", {"username": "nobody-here", "role": "member"}).content.decode()
    block = _field_block(page, "username")
    assert block.index("<label") < block.index('class="field-error"')  # the message sits under its own field


def test_whatif_form_is_aligned_and_groups_its_policies(client, team_user):
    team, user = team_user
    client.force_login(user)
    page = client.get(f"/teams/{team.slug}/whatif/").content.decode()
    assert "<p><label" not in page and 'data-field="accept_len"' in page
    policies = _field_block(page, "policies")
    assert 'role="group"' in policies and 'class="choice-grid' in policies
    assert policies.count('class="choice"') == len(SIM_VARIANT_NAMES) and "oracle-divided" in policies
    labels = _labels(page)
    assert "Shared KV pool" in labels and "Max batch per instance" in labels and "Policies" in labels
    assert all(lb[:1].isupper() and not lb.endswith(":") for lb in labels), labels
    # an error sits under its field
    page = client.post(f"/teams/{team.slug}/whatif/", {"workload": "upload", "group_size": "8",
                                                       "policies": ["seer"], "accept_len": "2.0"}).content.decode()
    block = _field_block(page, "trace_file")
    assert block.index("<label") < block.index('class="field-error"') < block.index('class="form-help"')


def test_run_form_labels_say_the_fields_terms_and_the_bare_fields_have_help():
    form = RunForm()
    assert [field_label(n) for n in ("kl_coef", "kv_cache_gib", "reward_timeout_s", "max_num_seqs", "learning_rate")] \
        == ["KL coef", "KV cache (GiB)", "Reward timeout (s)", "Max num seqs", "Learning rate"]
    assert form.fields["kv_cache_gib"].label == "KV cache (GiB)"
    for name in ("temperature", "iterations", "learning_rate", "seed"):
        assert form.fields[name].help_text, name
    assert "1.0 = the policy as is" in form.fields["temperature"].help_text
    labels = [form[n].label for n in form.fields]
    assert all(lb[:1].isupper() and not lb.endswith(":") for lb in labels), labels


def test_run_form_page_has_a_primary_submit_and_aligned_ablations(client, team_user):
    team, user = team_user
    client.force_login(user)
    page = client.get(f"/teams/{team.slug}/runs/new/").content.decode()
    assert 'id="submit-run" class="primary"' in page
    ablations = _field_block(page, "ab_ablations")
    assert 'role="group"' in ablations and ablations.count('class="choice"') == 3
    assert ">KV cache (GiB)</label>" in page and ">KL coef</label>" in page


def test_ab_status_and_whatif_list_show_states_as_badges(client, team_user):
    team, user = team_user
    client.force_login(user)
    ab = factories.experiment(team, "ab")
    factories.run(ab, created_by=user)
    page = client.get(f"/teams/{team.slug}/ab/{ab.pk}/").content.decode()
    assert '<span class="badge state-queued">queued</span>' in page
