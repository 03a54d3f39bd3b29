"""The run filter shared by the API's run list and the compare page's run picker
(django-filter): team, experiment, tag, policy, state, creation date, name search."""
from __future__ import annotations

import datetime as dt

import django_filters
from django import forms
from django.db.models import Q

from runs.models import Run


class _RunFilterForm(forms.Form):
    def _utc(self, name: str):
        value = self.cleaned_data.get(name)
        if value is None:
            return None
        try:  # the database takes any instant, but not every written offset (e.g. +17:55)
            return value.astimezone(dt.timezone.utc)
        except (OverflowError, ValueError):
            raise forms.ValidationError("date out of range") from None

    def clean_created_after(self):
        return self._utc("created_after")

    def clean_created_before(self):
        return self._utc("created_before")


class RunFilter(django_filters.FilterSet):
    """Query parameters: ``team`` (slug), ``experiment`` (name or id), ``tag``, ``policy``,
    ``state``, ``created_after`` / ``created_before`` (ISO date or datetime), ``search``."""

    team = django_filters.CharFilter(field_name="experiment__team__slug", max_length=100)
    experiment = django_filters.CharFilter(method="filter_experiment", max_length=200)
    tag = django_filters.CharFilter(method="filter_tag", max_length=50)
    policy = django_filters.CharFilter(field_name="config__rollout_policy", max_length=50)
    state = django_filters.ChoiceFilter(choices=Run.State.choices)
    created_after = django_filters.IsoDateTimeFilter(field_name="created_at", lookup_expr="gte")
    created_before = django_filters.IsoDateTimeFilter(field_name="created_at", lookup_expr="lte")
    search = django_filters.CharFilter(method="filter_search", max_length=200)

    class Meta:
        model = Run
        fields: list[str] = []
        form = _RunFilterForm

    def filter_experiment(self, queryset, name, value):
        q = Q(experiment__name=value)
        if value.isascii() and value.isdigit() and len(value) < 18:
            q |= Q(experiment_id=int(value))
        return queryset.filter(q)

    def filter_tag(self, queryset, name, value):
        return queryset.filter(Q(experiment__tags__contains=[value]) | Q(tags__contains=[value]))

    def filter_search(self, queryset, name, value):
        """The experiment's or the run's name contains ``value`` (case-insensitive)."""
        return queryset.filter(Q(experiment__name__icontains=value) | Q(name__icontains=value))
