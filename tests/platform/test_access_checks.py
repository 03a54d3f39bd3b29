"""The batched re-check of open dashboard sockets (telemetry.access_checks)."""
import pytest
from django.test import Client

from telemetry.access_checks import Access, check_many
from tests import factories


@pytest.mark.django_db
def test_one_batch_answers_each_socket_for_its_own_session_and_run(team_user):
    team, alice = team_user
    mine = factories.run(factories.experiment(team, "a"), config={})
    beta = factories.team("beta")
    theirs = factories.run(factories.experiment(beta, "b"), config={})
    bob = factories.member(beta, "bob")
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
