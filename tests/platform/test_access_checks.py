"""The batched re-check of open dashboard sockets (telemetry.access_checks)."""
import pytest
from django.test import Client

from runs.models import Experiment, Run
from teams.models import Membership, Team
from telemetry.access_checks import Access, check_many


@pytest.mark.django_db
def test_one_batch_answers_each_socket_for_its_own_session_and_run(team_user, django_user_model):
    team, alice = team_user
    mine = Run.objects.create(experiment=Experiment.objects.create(team=team, name="a"), config={})
    beta = Team.objects.create(name="Beta", slug="beta")
    theirs = Run.objects.create(experiment=Experiment.objects.create(team=beta, name="b"), config={})
    bob = django_user_model.objects.create_user("bob", password="x")
    Membership.objects.create(user=bob, team=beta)
    keys, browsers = {}, {}
    for name, user in (("alice", alice), ("alice-2", alice), ("bob", bob)):
        browsers[name] = Client()
        browsers[name].force_login(user)
        keys[name] = browsers[name].session.session_key
    browsers["alice-2"].logout()  # one of alice's two browsers logged out

    items = [Access(mine.pk, session_key=keys["alice"]), Access(theirs.pk, session_key=keys["alice"]),
             Access(mine.pk, session_key=keys["alice-2"]), Access(theirs.pk, session_key=keys["bob"]),
             Access(mine.pk, user=alice), Access(mine.pk, user=None), Access(mine.pk)]
    assert check_many(items) == [True, False, False, True, True, False, False]
