"""A custom reward (``reward: file.py:function``) is accepted only from the operator's
UMBRA_REWARD_DIRS, also after symlinks are resolved; a refusal is a form field error or an
API 400 naming ``reward``, and nothing is stored."""
from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from runs.models import Experiment, Run
from tests import factories
from tests.run_config_cases import BASE, form_data

pytestmark = pytest.mark.django_db
REWARD = "def compute_score(data_source, solution_str, ground_truth, extra_info):\n    return 1.0\n"


@pytest.fixture
def folders(tmp_path, settings):
    """``(allowed, outside)``: a reward folder the operator lists, and one it does not."""
    allowed, outside = tmp_path / "rewards", tmp_path / "elsewhere"
    allowed.mkdir(), outside.mkdir()
    (allowed / "mine.py").write_text(REWARD)
    (outside / "theirs.py").write_text(REWARD)
    (allowed / "link.py").symlink_to(outside / "theirs.py")
    settings.UMBRA_REWARD_DIRS = [str(allowed)]
    return allowed, outside


@pytest.fixture
def member():
    team = factories.team("alpha")
    return team, factories.member(team, "rewards")


def _form(client, member, reward):
    team, user = member
    client.force_login(user)
    return client.post(f"/teams/{team.slug}/runs/new/", form_data({**BASE, "reward": reward}))


def _api(member, reward):
    team, user = member
    api = APIClient()
    api.force_authenticate(user)
    return api.post("/api/runs/", {"team": team.slug, "experiment": "rw", "config": {**BASE, "reward": reward}},
                    format="json")


def _refused(folders, name):
    allowed, outside = folders
    return {"outside": f"{outside}/theirs.py:compute_score", "symlink": f"{allowed}/link.py:compute_score",
            "dotdot": f"{allowed}/../elsewhere/theirs.py:compute_score",
            "no function": "mine.py:score", "missing": f"{allowed}/nope.py:compute_score",
            "not a spec": "mine.py"}[name]


REFUSED = [("outside", "not in a reward folder"), ("symlink", "not in a reward folder"),
           ("dotdot", "not in a reward folder"), ("no function", "no top-level function 'score'"),
           ("missing", "does not exist"), ("not a spec", "unknown reward")]


@pytest.mark.parametrize("case,message", REFUSED)
def test_the_form_refuses_a_reward_outside_the_folders_as_a_field_error(client, member, folders, case, message):
    resp = _form(client, member, _refused(folders, case))
    assert resp.status_code == 400
    assert message in " ".join(resp.context["form"].errors["reward"])
    assert Run.objects.count() == 0 and Experiment.objects.count() == 0


@pytest.mark.parametrize("case,message", REFUSED)
def test_the_api_refuses_a_reward_outside_the_folders_with_400(member, folders, case, message):
    resp = _api(member, _refused(folders, case))
    assert resp.status_code == 400, resp.content[:300]
    assert message in " ".join(resp.json()["config"]["reward"])
    assert Run.objects.count() == 0


def test_a_reward_in_a_folder_is_stored_by_its_full_path(client, member, folders):
    allowed, _ = folders
    resp = _form(client, member, "mine.py:compute_score")
    assert resp.status_code == 302, resp.context["form"].errors if resp.status_code == 400 else resp.status_code
    assert Run.objects.get().config["reward"] == f"{allowed}/mine.py:compute_score"
    resp = _api(member, "gsm8k-strict")
    assert resp.status_code == 201 and resp.json()["config"]["reward"] == "gsm8k-strict"


def test_without_reward_folders_only_builtins_are_accepted(member, folders, settings):
    settings.UMBRA_REWARD_DIRS = []
    resp = _api(member, f"{folders[0]}/mine.py:compute_score")
    assert resp.status_code == 400 and "UMBRA_REWARD_DIRS" in " ".join(resp.json()["config"]["reward"])
