"""The tag filter (a JSON list lookup, PostgreSQL's containment) in its three doors: the
API's run list, the compare page's run picker, and the filter itself."""
import pytest
from django.test import Client
from rest_framework.test import APIClient

from runs.filters import RunFilter
from runs.models import Run
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def runs():
    team = factories.team("alpha")
    user = factories.member(team, "alice")
    tagged = factories.run(factories.experiment(team, "gsm", tags=["math", "gsm8k"]))
    other = factories.run(factories.experiment(team, "arith", tags=["mathematics"]))
    return user, tagged, other


def test_the_filter_matches_whole_tags(runs):
    _, tagged, other = runs
    assert list(RunFilter({"tag": "math"}, queryset=Run.objects.all()).qs) == [tagged]
    assert list(RunFilter({"tag": "mathematics"}, queryset=Run.objects.all()).qs) == [other]
    assert not RunFilter({"tag": "mat"}, queryset=Run.objects.all()).qs.exists()


def test_the_api_filters_by_tag(runs):
    user, tagged, _ = runs
    client = APIClient()
    client.force_authenticate(user)
    resp = client.get("/api/runs/?tag=gsm8k")
    assert resp.status_code == 200 and [r["id"] for r in resp.json()["results"]] == [tagged.pk]


def test_the_compare_picker_filters_by_tag(runs):
    user, tagged, _ = runs
    browser = Client()
    browser.force_login(user)
    page = browser.get("/compare/?tag=math")
    assert page.status_code == 200
    assert [r.pk for r in page.context["candidates"]] == [tagged.pk]
