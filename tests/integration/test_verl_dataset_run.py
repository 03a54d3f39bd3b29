"""A member's own data and reward on the real stack (form -> Celery -> Ray job -> vLLM, tiny
model): a Parquet file in veRL's row shape, built from GSM8K's test split, uploaded through
the run form, scored by a reward file of the test's own in a folder listed in
UMBRA_REWARD_DIRS (veRL's ``compute_score`` signature, returning a dict), validated after
every iteration; a WebSocket client logged in as the member sees ``val/accuracy`` and the
reward's extra number arrive live, as the dashboard does; the actors' own ``system/*``
samples reach the platform too."""
import json
import threading
import time
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from runs.models import Run
from telemetry.models import MetricPoint

GSM8K = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "gsm8k" / "test.jsonl"
pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True),
              pytest.mark.skipif(not GSM8K.is_file(), reason=f"{GSM8K} is absent")]
ITERATIONS, PROBLEMS = 2, 16
# veRL's signature; the extra number is 1 only when the row's veRL fields reached the reward
REWARD = '''
def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    fields_arrived = (data_source == "openai/gsm8k" and (extra_info or {}).get("split") == "test"
                      and ground_truth.replace(",", "").lstrip("-").isdigit())
    return {"score": float(ground_truth in solution_str), "fields_arrived": float(fields_arrived)}
'''
VAL_METRICS = ("val/accuracy", "val/reward_mean")
EXTRA = "reward/extra/fields_arrived"


class _Socket(threading.Thread):
    """A dashboard's WebSocket on the run (the member's session cookie): keeps every pushed
    metric point as ``{name: {step: value}}``."""

    def __init__(self, url: str, origin: str, cookie: str):
        super().__init__(daemon=True)
        self.url, self.origin, self.cookie = url, origin, cookie
        self.points: dict[str, dict[int, float]] = {}
        self.open, self.stop = threading.Event(), threading.Event()

    def run(self):
        from websockets.sync.client import connect

        with connect(self.url, origin=self.origin, additional_headers={"Cookie": self.cookie},
                     open_timeout=30) as ws:
            self.open.set()
            while not self.stop.is_set():
                try:
                    message = json.loads(ws.recv(timeout=1))
                except TimeoutError:
                    continue
                if message.get("type") == "metrics":
                    for p in message["points"]:
                        self.points.setdefault(p["name"], {})[p["step"]] = p["value"]


def _parquet(tmp_path) -> bytes:
    from umbra.data.gsm8k import load_jsonl
    from umbra.data.verl_parquet import write_verl_parquet

    return write_verl_parquet(load_jsonl(GSM8K)[:PROBLEMS], tmp_path / "gsm8k.parquet").read_bytes()


def test_verl_parquet_and_custom_reward_from_the_form_reach_the_dashboard_live(
        client, team_user, live_web, live_worker, tiny_model_path, tmp_path, settings):
    team, user = team_user
    rewards = tmp_path / "rewards"
    rewards.mkdir()
    (rewards / "my_reward.py").write_text(REWARD)
    settings.UMBRA_REWARD_DIRS = [str(rewards)]  # the form's check runs in this process
    client.force_login(user)
    form = {"experiment": "verl", "model": "tiny", "dataset": "arith", "prompts_per_iteration": "4",
            "group_size": "2", "max_tokens": "24", "iterations": str(ITERATIONS), "rollout_instances": "1",
            "max_num_seqs": "8", "learning_rate": "1e-3", "reward": "my_reward.py:compute_score",
            "val_fraction": "0.25", "val_every": "1", "checkpoint_every": "0",
            "dataset_file": SimpleUploadedFile("gsm8k.parquet", _parquet(tmp_path))}
    resp = client.post(f"/teams/{team.slug}/runs/new/", form)
    assert resp.status_code == 302, resp.content[:2000]
    run = Run.objects.latest("pk")
    assert run.config["dataset"].endswith(".parquet")
    assert run.config["reward"] == f"{rewards}/my_reward.py:compute_score"  # stored by its full path

    host = live_web.removeprefix("http://")
    socket = _Socket(f"ws://{host}/ws/runs/{run.pk}/", live_web,
                     f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}")
    socket.start()
    assert socket.open.wait(30), "the run's WebSocket did not open"
    deadline = time.time() + 600
    while time.time() < deadline and not run.is_terminal:
        time.sleep(0.5)
        run.refresh_from_db()
    names = (*VAL_METRICS, EXTRA, "reward/errors")
    seen = time.time() + 10  # pushes follow each batch's commit, before the job ends: allow a margin
    while time.time() < seen and not all(ITERATIONS - 1 in socket.points.get(n, {}) for n in names):
        time.sleep(0.2)
    socket.stop.set()
    socket.join(5)
    assert run.state == "succeeded", f"{run.state}\n{run.log_tail[-3000:]}\n{live_worker.read_text()[-2000:]}"

    steps = list(range(ITERATIONS))
    for name in names:
        stored = dict(MetricPoint.objects.filter(run=run, name=name).values_list("step", "value"))
        assert sorted(stored) == steps, (name, stored)
        assert socket.points.get(name) == stored, (name, socket.points.get(name), stored)  # pushed live
    assert all(0.0 <= v <= 1.0 for name in VAL_METRICS for v in socket.points[name].values())
    assert set(socket.points[EXTRA].values()) == {1.0}  # every row's veRL fields reached the reward
    assert set(socket.points["reward/errors"].values()) == {0.0}
    # the System charts' points: each actor sampled itself (with its vLLM engine process), and its node
    system = set(MetricPoint.objects.filter(run=run, name__startswith="system/").values_list("name", flat=True))
    assert {"system/actor/trainer-0/rss_gib", "system/actor/rollout-0/rss_gib", "system/actor/rollout-0/cpu_percent",
            "system/driver_rss_gib"} <= system, sorted(system)
    assert any(n.startswith("system/node/") and n.endswith("/mem_frac") for n in system), sorted(system)
    notes = list(run.events.filter(kind="job").values_list("reason", flat=True))
    assert any("rollout-0 on " in n and "child process" in n for n in notes), notes
