"""``manage.py umbra_demo``: the demo team and user, then one demo run.

Prints the login and the dashboard URL; with ``--follow`` shows progress (state
changes, then one line per iteration) until the run ends.
"""
import sys
import time

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from pydantic import ValidationError

from runs.models import Run
from runs.services import SubmissionRefused, create_run
from teams.models import Membership, Team
from umbra.config import RunConfig

DEMO_USER, DEMO_PASSWORD = "demo", "umbra-demo"


class Command(BaseCommand):
    help = "Create the demo team/user and submit a demo run"

    def add_arguments(self, parser):
        parser.add_argument("--data", default="arith", help="'arith' or a GSM8K-style JSONL path")
        parser.add_argument("--model", default="smollm2")
        parser.add_argument("--iterations", type=int, default=20)
        parser.add_argument("--prompts", type=int, default=8)
        parser.add_argument("--group-size", type=int, default=8)
        parser.add_argument("--max-tokens", type=int, default=256)
        parser.add_argument("--follow", action="store_true",
                            help="show progress until the run ends (exit 1 unless it succeeds)")
        parser.add_argument("--base-url", default="http://127.0.0.1:8000")

    def handle(self, *args, **opts):
        team, _ = Team.objects.get_or_create(slug="demo", defaults={"name": "Demo team"})
        user, created = get_user_model().objects.get_or_create(username=DEMO_USER)
        if created:
            user.set_password(DEMO_PASSWORD)
            user.save()
        Membership.objects.get_or_create(user=user, team=team, defaults={"role": Membership.Role.ADMIN})
        try:
            config = RunConfig(model=opts["model"], dataset=opts["data"], iterations=opts["iterations"],
                               prompts_per_iteration=opts["prompts"], group_size=opts["group_size"],
                               max_tokens=opts["max_tokens"])
        except ValidationError as exc:
            raise CommandError(f"invalid demo config: {exc}") from None
        try:
            run = create_run(user, team, "demo", config)
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
            points = dict(run.metric_points.filter(step__gt=seen, name="rollout/throughput_tok_s")
                          .values_list("step", "value"))
            for step in sorted(points):
                note = " (first point: the dashboard is live)" if seen < 0 else ""
                self.stdout.write(f"\n[{time.time() - start:5.0f}s] iteration {step}: "
                                  f"{points[step]:.0f} tok/s rollout throughput{note}", ending="")
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
