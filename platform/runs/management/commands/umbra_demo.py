"""``manage.py umbra_demo``: the demo team and user, then one demo run.

Prints the login and the dashboard URL; with ``--follow`` shows progress (state
changes, then one line per iteration) until the run ends.
"""
import sys
import time

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from runs.config_check import check_config
from runs.models import Experiment, Run
from runs.services import SubmissionRefused, create_run
from runs.validators import printable_name
from teams.models import Membership, Team

DEMO_USER, DEMO_PASSWORD = "demo", "umbra-demo"
# printed per iteration when present (val/accuracy only at validation iterations)
FOLLOWED_MORE = (("reward/mean", "reward"), ("val/accuracy", "val/accuracy"))
FOLLOWED = ("rollout/throughput_tok_s", *(name for name, _ in FOLLOWED_MORE))



DEMO_TEAM = "demo"


def _read_config(path: str):
    """A run config YAML file (fields, optional experiment), read as ``umbra submit FILE`` reads
    it; a ``team`` other than the demo's is refused (the demo user is only in the demo team)."""
    from umbra.client.errors import UsageError
    from umbra.client.submission import load_submission

    try:
        submission = load_submission(path)
    except UsageError as exc:
        raise CommandError(str(exc)) from None
    if submission.team not in (None, DEMO_TEAM):
        raise CommandError(f"{path}: team: the demo submits to team '{DEMO_TEAM}', not {submission.team[:60]!r} "
                           "(remove the key, or submit the file with `umbra submit`)")
    return submission


def _checked_experiment(name: str) -> str:
    """``name`` if the form and the API would take it as an experiment name."""
    limit = Experiment._meta.get_field("name").max_length
    try:
        printable_name(name)
    except ValidationError as exc:
        raise CommandError(f"experiment: {exc.messages[0]}") from None
    if len(name) > limit:
        raise CommandError(f"experiment: at most {limit} characters (it has {len(name)})")
    return name


def _one_line(errors: dict[str, list[str]]) -> str:
    """check_config's field errors as one line: ``field: message; field: message``."""
    return "; ".join(f"{field}: {msg}" if field != "__all__" else msg
                     for field, messages in errors.items() for msg in messages)


class Command(BaseCommand):
    help = "Create the demo team/user and submit a demo run"

    def add_arguments(self, parser):
        parser.add_argument("--data", default="arith", help="'arith' or a GSM8K-style JSONL path")
        parser.add_argument("--model", default="smollm2")
        parser.add_argument("--iterations", type=int, default=20)
        parser.add_argument("--prompts", type=int, default=8)
        parser.add_argument("--group-size", type=int, default=8)
        parser.add_argument("--max-tokens", type=int, default=256)
        parser.add_argument("--config", default="",
                            help="a run config YAML file; its fields replace the demo's (e.g. examples/learn.yaml)")
        parser.add_argument("--follow", action="store_true",
                            help="show progress until the run ends (exit 1 unless it succeeds)")
        parser.add_argument("--base-url", default="http://127.0.0.1:8000")

    def handle(self, *args, **opts):
        fields = {"model": opts["model"], "dataset": opts["data"], "iterations": opts["iterations"],
                  "prompts_per_iteration": opts["prompts"], "group_size": opts["group_size"],
                  "max_tokens": opts["max_tokens"]}
        experiment = "demo"
        if opts["config"]:
            submission = _read_config(opts["config"])
            fields.update(submission.config)
            experiment = _checked_experiment(submission.experiment or experiment)
        # the check every door asks, strictly as the API and `umbra submit` (YAML gives typed values)
        config, errors = check_config(fields, strict=True, team=DEMO_TEAM)
        if errors:
            raise CommandError(f"invalid demo config: {_one_line(errors)}")
        team, _ = Team.objects.get_or_create(slug=DEMO_TEAM, defaults={"name": "Demo team"})
        user, created = get_user_model().objects.get_or_create(username=DEMO_USER)
        if created:
            user.set_password(DEMO_PASSWORD)
            user.save()
        Membership.objects.get_or_create(user=user, team=team, defaults={"role": Membership.Role.ADMIN})
        try:
            run = create_run(user, team, experiment, config)
        except SubmissionRefused as exc:  # e.g. the demo team's queue is full
            raise CommandError(f"the demo run was not submitted: {exc}") from None
        url = f"{opts['base_url']}/runs/{run.pk}/"
        self.stdout.write(f"Login: {DEMO_USER} / {DEMO_PASSWORD}\nDashboard: {url}")
        if opts["follow"]:
            self._follow(run.pk)

    def _follow(self, run_id: int) -> None:
        """Print state changes, then one line per iteration, until the run ends."""
        start, last, seen = time.time(), None, -1
        while True:
            run = Run.objects.get(pk=run_id)
            # telemetry's MetricPoint, through its reverse relation: runs does not import telemetry
            rows = run.metric_points.filter(step__gt=seen, name__in=FOLLOWED).values_list("step", "name", "value")
            points: dict[int, dict[str, float]] = {}
            for step, name, value in rows:
                points.setdefault(step, {})[name] = value
            for step in sorted(p for p in points if "rollout/throughput_tok_s" in points[p]):
                note = " (first point: the dashboard is live)" if seen < 0 else ""
                got = points[step]
                more = "".join(f", {label} {got[name]:.3f}" for name, label in FOLLOWED_MORE if name in got)
                self.stdout.write(f"\n[{time.time() - start:5.0f}s] iteration {step}: "
                                  f"{got['rollout/throughput_tok_s']:.0f} tok/s rollout throughput{more}{note}",
                                  ending="")
                seen = step
            if run.is_terminal:
                self.stdout.write(f"\n[{time.time() - start:5.0f}s] run {run.state}")
                if run.state != Run.State.SUCCEEDED:
                    event = run.events.last()
                    raise CommandError(f"run ended {run.state}: {event.reason if event else ''}")
                return
            if run.state != last:
                self.stdout.write(f"\n[{time.time() - start:5.0f}s] run {run.state}", ending="")
                last = run.state
            elif not points:
                self.stdout.write(".", ending="")
            sys.stdout.flush()
            time.sleep(settings.UMBRA_FOLLOW_INTERVAL_S)
