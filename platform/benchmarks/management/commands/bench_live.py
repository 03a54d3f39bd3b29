"""``manage.py bench_live``: live dashboards under ingestion load.

Creates a throwaway team, user, ``--runs`` running runs and one logged-in session per
client (all removed afterwards), starts ``--servers`` daphne processes on free ports with
a channel prefix of their own, opens ``--clients`` WebSocket clients spread over the runs
and servers (``benchmarks.live_clients``, a separate process), then POSTs metric batches
to ``/api/runs/<id>/metrics/`` with each run's bearer token at ``--rate`` points/s in all
for ``--duration`` s (one thread per run, batches of ``--batch`` points on a fixed schedule;
sending stops at 1.5 x duration + 5 s when the server cannot keep up, and says so).

Each client counts every (run, name, step) it receives: lost = expected - unique,
duplicated = received - unique, where expected is every point of every batch the server
answered 201 to. Delay: from the wall time just before the POST is sent (written into
each point's ``value``) to the client's receipt of the message; p50/p95/p99/max over
points. Prints a table and writes ``--json``.
"""
from __future__ import annotations

import json
import math
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import numpy as np
import requests
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.sessions.models import Session
from django.core.management.base import BaseCommand, CommandError
from django.test import Client

from runs.models import Experiment, Run
from runs.ingest_tokens import issue_ingest_token
from teams.models import Membership, Team

NAMES = ["bench/throughput_tok_s", "bench/tail_time_s", "bench/reward_mean", "bench/loss"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _database_url() -> str:
    """The URL of the database this process uses (in tests: the test database), for daphne."""
    db = settings.DATABASES["default"]
    if not db["ENGINE"].endswith("postgresql"):
        raise CommandError("bench_live needs PostgreSQL (set DATABASE_URL): daphne runs in other processes")
    auth = db.get("USER") or "postgres"
    if db.get("PASSWORD"):
        auth += f":{db['PASSWORD']}"
    return f"postgres://{auth}@{db.get('HOST') or '127.0.0.1'}:{db.get('PORT') or 5432}/{db['NAME']}"


def weighted_percentiles(values, weights, qs) -> list[float]:
    """Percentiles ``qs`` (0..100) of ``values`` where value i counts ``weights[i]`` times."""
    order = np.argsort(values)
    v, cum = np.asarray(values)[order], np.cumsum(np.asarray(weights)[order])
    return [float(v[min(np.searchsorted(cum, q / 100 * cum[-1]), len(v) - 1)]) for q in qs]


class Command(BaseCommand):
    help = "Live dashboards under ingestion load: loss, duplicates and delay (a benchmark: prints a table and JSON)"

    def add_arguments(self, parser):
        parser.add_argument("--clients", type=int, default=100, help="WebSocket clients (spread over the runs)")
        parser.add_argument("--runs", type=int, default=10)
        parser.add_argument("--rate", type=int, default=10_000, help="points per second, all runs together")
        parser.add_argument("--duration", type=float, default=60, help="seconds of ingestion")
        parser.add_argument("--batch", type=int, default=1000, help="points per POST (a multiple of 4)")
        parser.add_argument("--servers", type=int, default=2,
                            help="daphne processes (one per core; one daphne is a single Python event loop)")
        parser.add_argument("--drain", type=float, default=15, help="seconds to wait for the last points")
        parser.add_argument("--json", help="write the results here")

    def handle(self, *args, **opts):
        self._check(opts)
        tag = uuid.uuid4().hex[:8]
        team = Team.objects.create(name=f"bench-live-{tag}", slug=f"bench-live-{tag}")
        user = get_user_model().objects.create_user(f"bench-live-{tag}", password=f"pw-{tag}-bench")
        servers, clients, session_keys = [], None, []
        try:
            Membership.objects.create(user=user, team=team, role="viewer")
            exp = Experiment.objects.create(team=team, name="bench-live")
            runs = [Run.objects.create(experiment=exp, state=Run.State.RUNNING, config={"model": "tiny"})
                    for _ in range(opts["runs"])]
            tokens = {run.pk: issue_ingest_token(run) for run in runs}
            for _ in range(opts["clients"]):
                c = Client()
                c.force_login(user)
                session_keys.append(c.session.session_key)
            servers = self._start_servers(opts["servers"], f"umbra-bench-live-{tag}")
            load_before = os.getloadavg()
            clients = self._start_clients(servers, [r.pk for r in runs], session_keys, opts)
            cpu0 = self._cpu([s[0] for s in servers])
            drive = self._drive(servers, tokens, opts)
            counted = self._finish_clients(clients, drive, opts)
            cpu = {"cpu_s_daphne": round(self._cpu([s[0] for s in servers]) - cpu0, 1),
                   "cpu_s_clients": round(counted["cpu_s"], 1)}
            result = self._summarize(opts, drive, counted, load_before, os.getloadavg(), cpu)
        finally:
            if clients is not None and clients.poll() is None:
                clients.kill()
            for proc, _ in servers:
                proc.terminate()
            for proc, _ in servers:
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
            Session.objects.filter(session_key__in=session_keys).delete()
            team.delete()
            user.delete()
        self._report(result, opts.get("json"))

    def _check(self, opts) -> None:
        if not 1 <= opts["runs"] <= 100 or not opts["runs"] <= opts["clients"] <= 1000:
            raise CommandError("--runs must be 1..100 and --clients runs..1000")
        if not 1 <= opts["rate"] <= 1_000_000 or not 0.5 <= opts["duration"] <= 3600:
            raise CommandError("--rate must be 1..1,000,000 points/s and --duration 0.5..3600 s")
        if not 4 <= opts["batch"] <= 10_000 or opts["batch"] % len(NAMES):
            raise CommandError(f"--batch must be 4..10,000 and a multiple of {len(NAMES)}")
        if not 1 <= opts["servers"] <= 16 or not 0 <= opts["drain"] <= 600:
            raise CommandError("--servers must be 1..16 and --drain 0..600 s")
        if opts["rate"] / opts["runs"] < opts["batch"] / 10:
            raise CommandError("--rate per run must be at least --batch / 10 (one batch per 10 s)")

    def _start_servers(self, n: int, prefix: str) -> list[tuple[subprocess.Popen, str]]:
        """``n`` daphne processes sharing one channel prefix; answers [(process, base URL)]."""
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), DATABASE_URL=_database_url(),
                   UMBRA_CHANNEL_PREFIX=prefix)
        log_dir = Path(settings.VAR_DIR) / "log"
        log_dir.mkdir(parents=True, exist_ok=True)
        servers = []
        for i in range(n):
            port = _free_port()
            log = open(log_dir / f"bench-live-daphne-{i}.log", "w")
            proc = subprocess.Popen([str(Path(sys.executable).parent / "daphne"), "-b", "127.0.0.1", "-p", str(port),
                                     "umbra_site.asgi:application"], env=env, stdout=log, stderr=subprocess.STDOUT)
            servers.append((proc, f"127.0.0.1:{port}"))
        for proc, host in servers:
            deadline = time.monotonic() + 60
            while True:
                if proc.poll() is not None:
                    raise CommandError(f"daphne exited with {proc.returncode} (see {log_dir})")
                try:
                    requests.get(f"http://{host}/accounts/login/", timeout=2)
                    break
                except requests.RequestException:
                    if time.monotonic() > deadline:
                        raise CommandError(f"daphne on {host} did not answer within 60 s") from None
                    time.sleep(0.3)
        return servers

    def _start_clients(self, servers, run_ids, session_keys, opts) -> subprocess.Popen:
        """The client process with every socket open (client i: run i mod runs, server i mod servers)."""
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
        proc = subprocess.Popen([sys.executable, "-m", "benchmarks.live_clients"], env=env, text=True,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        cookie = settings.SESSION_COOKIE_NAME
        spec = {"names": NAMES, "points_per_run": self._batches(opts) * opts["batch"],
                "clients": [{"url": f"ws://{servers[i % len(servers)][1]}/ws/runs/{run_ids[i % len(run_ids)]}/",
                             "origin": f"http://{servers[i % len(servers)][1]}", "cookie": f"{cookie}={key}",
                             "run": run_ids[i % len(run_ids)]} for i, key in enumerate(session_keys)]}
        proc.stdin.write(json.dumps(spec) + "\n")
        proc.stdin.flush()
        ready = json.loads(proc.stdout.readline() or '{"ready": 0, "errors": ["client process died"]}')
        if ready["errors"] or ready["ready"] != len(session_keys):
            proc.kill()
            raise CommandError(f"{ready['ready']} of {len(session_keys)} clients connected: {ready['errors'][:3]}")
        return proc

    def _batches(self, opts) -> int:
        per_run = opts["rate"] / opts["runs"]
        return max(1, round(per_run * opts["duration"] / opts["batch"]))

    def _drive(self, servers, tokens: dict[int, str], opts) -> dict:
        """POST every run's batches on schedule, one thread per run; answers the accepted seqs per
        run, failures, POST latencies and how late the sends got behind schedule."""
        batch, per_batch = opts["batch"], opts["batch"] // len(NAMES)
        interval = batch / (opts["rate"] / opts["runs"])
        n = self._batches(opts)
        accepted = {pk: [] for pk in tokens}
        failures, latencies, late = [], [], []
        t0 = time.monotonic() + 0.2
        lock = threading.Lock()
        give_up, unsent = t0 + 1.5 * opts["duration"] + 5, [0]

        def post_run(i: int, pk: int) -> None:
            host = servers[i % len(servers)][1]
            s = requests.Session()
            s.headers.update({"Authorization": f"Bearer {tokens[pk]}", "Content-Type": "application/json"})
            start = t0 + interval * i / len(tokens)  # runs staggered across one interval
            for seq in range(1, n + 1):
                target = start + (seq - 1) * interval
                if time.monotonic() > give_up:  # far behind schedule: the rate is not sustained
                    with lock:
                        unsent[0] += n - seq + 1
                    return
                wait = target - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                sent_mono, sent = time.monotonic(), time.time()
                points = [{"name": name, "step": (seq - 1) * per_batch + j, "value": sent}
                          for j in range(per_batch) for name in NAMES]
                try:
                    resp = s.post(f"http://{host}/api/runs/{pk}/metrics/", data=json.dumps({"seq": seq, "points": points}),
                                  timeout=30)
                    ok, why = resp.status_code == 201, f"HTTP {resp.status_code} {resp.text[:200]}"
                except requests.RequestException as exc:
                    ok, why = False, repr(exc)
                with lock:
                    latencies.append(time.monotonic() - sent_mono)
                    late.append(sent_mono - target)
                    (accepted[pk].append(seq) if ok else failures.append(f"run {pk} seq {seq}: {why}"))

        threads = [threading.Thread(target=post_run, args=(i, pk)) for i, pk in enumerate(tokens)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.monotonic() - t0
        return {"accepted": accepted, "failures": failures, "latencies": latencies, "late": late,
                "elapsed_s": elapsed, "batches": n,
                "unsent": unsent[0]}

    def _finish_clients(self, proc: subprocess.Popen, drive: dict, opts) -> dict:
        proc.stdin.write(json.dumps({"accepted": drive["accepted"], "batch": opts["batch"],
                                     "drain_s": opts["drain"]}) + "\n")
        proc.stdin.flush()
        line = proc.stdout.readline()
        proc.wait(timeout=60)
        if not line:
            raise CommandError(f"the client process exited with {proc.returncode} without a report")
        return json.loads(line)

    def _cpu(self, procs: list[subprocess.Popen]) -> float:
        """CPU seconds used so far by ``procs`` together."""
        import psutil

        return sum(sum(psutil.Process(p.pid).cpu_times()[:2]) for p in procs)

    def _summarize(self, opts, drive, counted, load_before, load_after, cpu) -> dict:
        clients = counted["clients"]
        accepted_points = sum(len(v) for v in drive["accepted"].values()) * opts["batch"]
        expected = sum(c["expected"] for c in clients)
        received = sum(c["received"] for c in clients)
        unique = sum(c["unique"] for c in clients)
        unexpected = sum(c["unexpected"] for c in clients)  # points of no accepted batch (0 unless broken)
        delays, sizes = counted["delays_s"], counted["delay_points"]
        pct = weighted_percentiles(delays, sizes, [50, 95, 99, 100]) if delays else [math.nan] * 4
        lat = sorted(drive["latencies"])
        return {
            "clients": opts["clients"], "runs": opts["runs"], "servers": opts["servers"],
            "target_rate_points_s": opts["rate"], "duration_s": opts["duration"], "batch_points": opts["batch"],
            "posts": len(lat), "posts_failed": len(drive["failures"]),
            "batches_not_sent_too_late": drive["unsent"],
            "first_failures": drive["failures"][:3],
            "accepted_points": accepted_points,
            "achieved_rate_points_s": round(accepted_points / drive["elapsed_s"]),
            "post_latency_p50_ms": round(1000 * lat[len(lat) // 2], 1),
            "post_latency_p95_ms": round(1000 * lat[int(0.95 * (len(lat) - 1))], 1),
            "send_behind_schedule_max_ms": round(1000 * max(drive["late"]), 1),
            "expected_deliveries": expected, "received": received, "unique": unique,
            "lost": expected - unique, "duplicated": received - unique - unexpected, "unexpected": unexpected,
            "clients_closed_by_server": sum(1 for c in clients if c["closed"]),
            "delay_from": "POST sent",
            "delay_p50_ms": round(1000 * pct[0], 1), "delay_p95_ms": round(1000 * pct[1], 1),
            "delay_p99_ms": round(1000 * pct[2], 1), "delay_max_ms": round(1000 * pct[3], 1),
            **cpu, "cpu_count": os.cpu_count(),
            "loadavg_1m_before": round(load_before[0], 2), "loadavg_1m_after": round(load_after[0], 2),
        }

    def _report(self, result: dict, path: str | None) -> None:
        width = max(map(len, result))
        self.stdout.write("\n".join(f"{k:<{width}}  {v}" for k, v in result.items()))
        if path:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text(json.dumps(result, indent=2))
            self.stdout.write(f"wrote {path}")
