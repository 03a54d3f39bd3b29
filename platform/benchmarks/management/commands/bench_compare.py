"""``manage.py bench_compare``: how fast a big comparison is served and drawn.

Stores ``--runs`` runs x ``--metrics`` metrics x ``--points`` points in a throwaway team
(removed afterwards), times ``GET /api/compare/`` in-process (full middleware, DRF and
JSON rendering; median and max of ``--repeat`` calls), and with ``--browser`` also starts
daphne and headless Chromium to time drawing the page (fetch answer to charts drawn,
and the longest main-thread task). Prints a table and writes ``--json``.

Each run's downsampled series and statistics are stored as its end does
(``compare.tasks.warm_run_caches``, timed per run); the first API call is then cold (no
Redis cache: it reads the stored rows); later calls are warm. ``queries_uncached`` times the two
database aggregates alone.
"""
from __future__ import annotations

import json
import math
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import connection
from django.test import Client

from compare.services import store_derived
from compare.stats import run_stats
from compare.summary import STAT_METRICS
from runs.models import Experiment, Run
from teams.models import Membership, Team
from telemetry.models import MetricPoint
from telemetry.series import series_of

METRICS = ["rollout/throughput_tok_s", "rollout/tail_time_s", "reward/mean", "rollout/spec/accept_len",
           "train/loss", "train/kl", "reward/accuracy", "iteration/time_s"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Command(BaseCommand):
    help = "Time the compare API and page on a large comparison (a benchmark: prints a table and JSON)"

    def add_arguments(self, parser):
        parser.add_argument("--runs", type=int, default=20)
        parser.add_argument("--metrics", type=int, default=4)
        parser.add_argument("--points", type=int, default=10_000)
        parser.add_argument("--repeat", type=int, default=5)
        parser.add_argument("--max-points", type=int, default=1500)
        parser.add_argument("--browser", action="store_true", help="also time drawing in headless Chromium")
        parser.add_argument("--json", help="write the results here")

    def handle(self, *args, **opts):
        if not 1 <= opts["runs"] <= 50 or not 1 <= opts["metrics"] <= len(METRICS):
            raise CommandError(f"--runs must be 1..50 and --metrics 1..{len(METRICS)}")
        if not 2 <= opts["points"] <= 1_000_000 or not 1 <= opts["repeat"] <= 100:
            raise CommandError("--points must be 2..1,000,000 and --repeat 1..100")
        tag = uuid.uuid4().hex[:8]
        team = Team.objects.create(name=f"bench-{tag}", slug=f"bench-{tag}")
        user = get_user_model().objects.create_user(f"bench-{tag}", password=f"pw-{tag}-bench")
        try:
            Membership.objects.create(user=user, team=team, role="member")
            run_ids = self._seed(team, opts)
            result = {"runs": opts["runs"], "metrics": opts["metrics"], "points_per_series": opts["points"],
                      "stored_points": opts["runs"] * opts["metrics"] * opts["points"],
                      "max_points": opts["max_points"], "database": connection.vendor}
            result.update(self._time_api(user, run_ids, opts))
            if opts["browser"]:
                result.update(self._time_browser(user.username, f"pw-{tag}-bench", run_ids, opts))
        finally:
            team.delete()
            user.delete()
        self._report(result, opts.get("json"))

    def _seed(self, team, opts) -> list[int]:
        exp = Experiment.objects.create(team=team, name="bench")
        ids = []
        t0 = time.perf_counter()
        for r in range(opts["runs"]):
            policy = "static-group" if r == 0 else "seer"
            run = Run.objects.create(experiment=exp, state=Run.State.SUCCEEDED,
                                     config={"model": "tiny", "rollout_policy": policy, "seed": r})
            ids.append(run.pk)
            if connection.vendor == "postgresql":  # one statement a run: seconds, not minutes, on a busy machine
                with connection.cursor() as cur:
                    cur.execute("""INSERT INTO telemetry_metricpoint (run_id, name, step, value, wall_time)
                                   SELECT %s, m, s, 100 + 10 * sin(s / 50.0 + %s) + CASE WHEN s = 7777 THEN 200 ELSE 0 END, now()
                                   FROM unnest(%s::text[]) m, generate_series(0, %s - 1) s""",
                                [run.pk, r, METRICS[:opts["metrics"]], opts["points"]])
                continue
            rows = [MetricPoint(run=run, name=name, step=s, value=100 + 10 * math.sin(s / 50 + r) + (200 if s == 7777 else 0))
                    for name in METRICS[:opts["metrics"]] for s in range(opts["points"])]
            MetricPoint.objects.bulk_create(rows, batch_size=20_000)
        self.stdout.write(f"stored {opts['runs'] * opts['metrics'] * opts['points']:,} points in "
                          f"{time.perf_counter() - t0:.1f} s")
        t0 = time.perf_counter()
        for run_id in ids:  # what the end of each run does (compare.tasks.warm_run_caches)
            store_derived(run_id, opts["max_points"])
        self.store_ms = round((time.perf_counter() - t0) * 1000 / len(ids), 1)
        return ids

    def _query(self, run_ids, opts) -> str:
        metrics = ",".join(METRICS[:opts["metrics"]])
        return f"runs={','.join(map(str, run_ids))}&metrics={metrics}&max_points={opts['max_points']}"

    def _time_api(self, user, run_ids, opts) -> dict:
        client = Client()
        client.force_login(user)
        url = f"/api/compare/?{self._query(run_ids, opts)}"
        times, size = [], 0
        for _ in range(opts["repeat"] + 1):  # the first call computes and caches the series (cold)
            t0 = time.perf_counter()
            resp = client.get(url)
            times.append(time.perf_counter() - t0)
            if resp.status_code != 200:
                raise CommandError(f"compare answered {resp.status_code}: {resp.content[:300]!r}")
            size = len(resp.content)
        doc = json.loads(resp.content)
        served = sum(len(s["y"]) for by_run in doc["series"].values() for s in by_run.values())
        counted = times[1:]
        uncached = []
        for _ in range(min(opts["repeat"], 3)):
            t0 = time.perf_counter()
            series_of(run_ids, METRICS[:opts["metrics"]], max_points=opts["max_points"], cached=False)
            run_stats(run_ids, STAT_METRICS, cached=False)
            uncached.append(time.perf_counter() - t0)
        return {"api_cold_ms": round(times[0] * 1000, 1), "stored_at_run_end_ms_per_run": self.store_ms,
                "api_warm_median_ms": round(statistics.median(counted) * 1000, 1),
                "api_warm_max_ms": round(max(counted) * 1000, 1),
                "queries_uncached_median_ms": round(statistics.median(uncached) * 1000, 1),
                "response_bytes": size, "served_points": served}

    def _time_browser(self, username, password, run_ids, opts) -> dict:
        from playwright.sync_api import sync_playwright

        port = _free_port()
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
        web = subprocess.Popen([str(Path(sys.executable).parent / "daphne"), "-b", "127.0.0.1", "-p", str(port),
                                "umbra_site.asgi:application"], env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
        base = f"http://127.0.0.1:{port}"
        try:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=shutil.which("chromium") or "/usr/bin/chromium",
                                             args=["--no-sandbox", "--disable-gpu"])
                page = browser.new_page(viewport={"width": 1400, "height": 900})
                for _ in range(120):
                    try:
                        page.goto(f"{base}/accounts/login/")
                        break
                    except Exception:
                        time.sleep(0.5)
                page.fill("#id_username", username)
                page.fill("#id_password", password)
                page.click("#login")
                page.wait_for_url(f"{base}/**")
                page.add_init_script("""window.__longest = 0; new PerformanceObserver(l => l.getEntries().forEach(
                    e => { window.__longest = Math.max(window.__longest, e.duration); })).observe({type: 'longtask', buffered: true});""")
                t0 = time.perf_counter()
                page.goto(f"{base}/compare/?{self._query(run_ids, opts)}")
                page.wait_for_function("document.body.dataset.compareDrawn !== undefined", timeout=120_000)
                wall = time.perf_counter() - t0
                drawn = int(page.evaluate("document.body.dataset.compareDrawn"))
                draw_ms = page.evaluate("window.__compareDrawMs")
                smooth_ms = page.eval_on_selector("#smooth", """el => new Promise(done => {
                    const t = performance.now(); el.value = '0.9'; el.dispatchEvent(new Event('input'));
                    requestAnimationFrame(() => done(performance.now() - t)); })""")
                longest = page.evaluate("window.__longest")
                browser.close()
        finally:
            web.terminate()
            web.wait(timeout=30)
        return {"page_load_to_drawn_s": round(wall, 2), "draw_ms": round(draw_ms, 1), "drawn_points": drawn,
                "longest_main_thread_task_ms": round(longest, 1), "smooth_redraw_ms": round(smooth_ms, 1)}

    def _report(self, result: dict, path: str | None) -> None:
        width = max(map(len, result))
        self.stdout.write("\n".join(f"{k:<{width}}  {v}" for k, v in result.items()))
        if path:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text(json.dumps(result, indent=2))
            self.stdout.write(f"wrote {path}")
