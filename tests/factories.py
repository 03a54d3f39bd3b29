"""Test data for the platform's models: teams, users, memberships, experiments, runs.

Plain functions with the defaults the tests share; every other field is passed through.
A user gets a password only when one is asked for: Django's hasher is slow by design, so
each distinct password is hashed once per test session and the hash reused."""
from __future__ import annotations

from functools import lru_cache


def password_hash(password: str) -> str:
    """``make_password(password)``, computed once per password and hasher setting (a salted
    hash: any copy checks)."""
    from django.conf import settings

    return _hashed(password, tuple(settings.PASSWORD_HASHERS))


@lru_cache(maxsize=None)
def _hashed(password: str, hashers: tuple[str, ...]) -> str:
    from django.contrib.auth.hashers import make_password

    return make_password(password)


def team(slug: str = "alpha", name: str | None = None):
    """Team ``slug``, named ``slug.capitalize()`` unless ``name`` is given."""
    from teams.models import Team

    return Team.objects.create(name=name or slug.capitalize(), slug=slug)


def user(username: str, password: str | None = None, **fields):
    """A user; without ``password`` it has none usable (nothing to hash)."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.hashers import make_password

    return get_user_model().objects.create(
        username=username, password=password_hash(password) if password else make_password(None), **fields)


def membership(user, team, role: str = "member"):
    """``user``'s membership of ``team`` with ``role`` (viewer, member or admin)."""
    from teams.models import Membership

    return Membership.objects.create(user=user, team=team, role=role)


def member(team, username: str, role: str = "member", password: str | None = None):
    """A new user who belongs to ``team`` with ``role``."""
    new = user(username, password=password)
    membership(new, team, role=role)
    return new


def experiment(team, name: str = "exp", **fields):
    """``team``'s experiment ``name`` (created if it does not exist yet; ``fields`` for a new one)."""
    from runs.models import Experiment

    return Experiment.objects.get_or_create(team=team, name=name, defaults=fields)[0]


def run(experiment, config: dict | None = None, state: str = "queued", created_by=None, **fields):
    """A run of ``experiment`` (config ``{"model": "tiny"}`` unless given), stored as is:
    no event, no token, nothing dispatched."""
    from runs.models import Run

    return Run.objects.create(experiment=experiment, config={"model": "tiny"} if config is None else config,
                              state=state, created_by=created_by, **fields)
