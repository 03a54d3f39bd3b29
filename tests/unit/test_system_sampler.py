"""umbra.telemetry.probe and .system: what each actor reads about its processes and node with
psutil (real processes: this one and a child it starts, no Ray), the ``system/*`` names the
driver makes of the answers (catalogued, accepted by the wire format), and the per-node
memory note."""
import os
import subprocess
import sys

import pytest

from umbra.telemetry import catalog, probe, system
from umbra.telemetry.client import TelemetryClient


@pytest.fixture
def child():
    """A child process of this one (as a vLLM engine core is of its actor) that uses some memory."""
    proc = subprocess.Popen([sys.executable, "-c", "import sys, time; b = b'x' * (64 << 20); "
                             "sys.stdout.write('up\\n'); sys.stdout.flush(); time.sleep(60)"], stdout=subprocess.PIPE)
    assert proc.stdout.readline() == b"up\n"
    yield proc
    proc.kill()
    proc.wait()


def test_a_process_counts_the_processes_it_started(child):
    alone = probe.ProcessProbe(children=False).process_sample()
    both = probe.ProcessProbe().process_sample()
    assert alone["processes"] == 1 and both["processes"] >= 2
    assert both["rss_gib"] >= alone["rss_gib"] + 60 / 1024  # the child's 64 MiB
    assert both["cpu_percent"] >= 0 and "gpu_mem_gib" not in both  # no GPU here
    child.kill()
    child.wait()
    assert probe.ProcessProbe().process_sample()["processes"] == both["processes"] - 1  # an ended child is left out


def test_node_sample_reads_memory_and_leaves_gpus_out_without_nvml():
    node = probe.node_sample()
    assert 0 < node["mem_frac"] < 1 and node["mem_used_gib"] < node["mem_total_gib"]
    assert 0 <= node["cpu_percent"] <= 100
    assert probe.gpu_node_sample() == {} and not any(k.startswith("gpu_") for k in node)  # no pynvml here


def test_metric_keys_are_one_lower_case_segment():
    assert probe.metric_key("IP-10.0.0.7:6379") == "ip-10.0.0.7-6379"
    assert probe.metric_key("a/b c") == "a-b-c" and probe.metric_key("") == "unknown"
    assert len(probe.metric_key("x" * 300)) == 63
    assert probe.host_key() == probe.metric_key(os.uname().nodename)


def test_actor_and_node_samples_are_catalogued_valid_names(child):
    rollout = probe.ProcessProbe(pid=os.getpid())  # this process with its child, as an instance and its engine
    sampler = system.SystemSampler(lambda: {"rollout-0": rollout.sample(), "trainer-0": probe.own_sample()})
    metrics, notes = sampler.sample()
    host = probe.host_key()
    assert {"system/driver_rss_gib", f"system/node/{host}/mem_frac", f"system/node/{host}/cpu_percent",
            "system/actor/rollout-0/rss_gib", "system/actor/rollout-0/cpu_percent",
            "system/actor/trainer-0/rss_gib"} <= set(metrics)
    assert not any("/gpu_" in name for name in metrics)  # no GPU here: left out, not 0
    assert all(catalog.lookup(name) is not None for name in metrics)
    assert all(catalog.lookup(name).section == "System" for name in metrics)
    batch = TelemetryClient.build(1, 0, metrics, events=notes)  # the wire format accepts every name
    assert {p.name for p in batch.points} == set(metrics)
    assert metrics["system/actor/rollout-0/rss_gib"] > 60 / 1024
    assert notes[0].startswith(f"system: rollout-0 on {host} (pid {os.getpid()}, ") and " child process" in notes[0]
    assert f"trainer-0 on {host} (pid {os.getpid()}" in notes[0]
    assert not any(n.startswith(f"system: rollout-0 on") for n in sampler.sample()[1])  # named once


def test_each_node_gets_its_own_memory_note_once_per_crossing(monkeypatch):
    monkeypatch.setattr(system, "MEMORY_WARN_FRAC", 0.0)  # every node is "near its limit"
    other = {"host": "Worker-2", "pid": 7, "process": {"rss_gib": 1.5, "cpu_percent": 12.0, "processes": 1},
             "node": {"mem_frac": 0.95, "mem_used_gib": 57.0, "mem_total_gib": 60.0}}
    sampler = system.SystemSampler(lambda: {"rollout-1": other})
    metrics, notes = sampler.sample()
    assert metrics["system/node/worker-2/mem_frac"] == 0.95 and metrics["system/actor/rollout-1/rss_gib"] == 1.5
    assert "system: node worker-2 is near its memory limit: 57.0 of 60.0 GiB used (95%)" in notes
    assert any(n.startswith(f"system: node {probe.host_key()} is near its memory limit") for n in notes)
    assert not any("near its memory limit" in n for n in sampler.sample()[1])  # still near: no new note
    monkeypatch.setattr(system, "MEMORY_WARN_FRAC", 0.99)
    assert not any("near its memory limit" in n for n in sampler.sample()[1])  # dropped below
    monkeypatch.setattr(system, "MEMORY_WARN_FRAC", 0.0)
    assert any("node worker-2 is near" in n for n in sampler.sample()[1])  # crossed again


def test_bad_or_missing_answers_are_left_out():
    answers = {"rollout-0": "not a dict", "trainer-0": {"host": "h", "process": {"rss_gib": float("nan"),
               "cpu_percent": True, "gpu_mem_gib": 2.0}, "node": {"mem_frac": "high"}}}
    metrics, _ = system.SystemSampler(lambda: answers).sample()
    assert not any(k.startswith("system/actor/rollout-0/") for k in metrics)
    assert [k for k in metrics if k.startswith("system/actor/")] == ["system/actor/trainer-0/gpu_mem_gib"]

    def broken():
        raise RuntimeError("no Ray")

    metrics, _ = system.SystemSampler(broken).sample()
    assert f"system/node/{probe.host_key()}/mem_frac" in metrics  # the driver's own node still


def test_an_actor_that_cannot_be_asked_is_left_out():
    assert system.ask_actors([]) == {}
    assert system.ask_actors([("trainer-0", object())]) == {}  # no system_sample method: never waited on


def test_long_actor_lists_are_split_into_notes_the_batch_keeps_whole():
    notes = system._lines("system: ", [f"rollout-{i} on some-long-host-name (pid {10000 + i})" for i in range(64)])
    assert len(notes) > 1 and all(len(n) <= 1000 and n.startswith("system: ") for n in notes)
    assert sum(n.count("rollout-") for n in notes) == 64


HOSTILE_HOSTS = ["node with spaces", "ünïcødé-ноде", "x" * 300, "{node}", "a/b/../c", "..", "İ\x00\u202e", "", 7]


def test_hostile_host_names_give_names_the_wire_and_the_catalog_accept():
    """A host name the job does not choose (spaces, unicode, 300 characters, ``{}`` or ``/``)
    must not make a name the platform refuses: a refused batch loses the iteration's metrics."""
    node = {"mem_frac": 0.5, "mem_used_gib": 1.0, "mem_total_gib": 2.0, "cpu_percent": 3.0}
    answers = {f"rollout-{i}": {"host": h, "pid": i, "process": {"rss_gib": 0.1}, "node": node}
               for i, h in enumerate(HOSTILE_HOSTS)}
    metrics, notes = system.SystemSampler(lambda: answers).sample()
    nodes = {name.split("/")[2] for name in metrics if name.startswith("system/node/")}
    assert len(nodes) >= len(HOSTILE_HOSTS) - 2  # "" and ".." both read "unknown"; the rest stay apart
    assert all(len(key) <= 63 and key == probe.metric_key(key) for key in nodes)
    assert all(catalog.lookup(name) is not None and catalog.lookup(name).section == "System" for name in metrics)
    batch = TelemetryClient.build(1, 0, metrics, events=notes)  # raises for a name or note the wire refuses
    assert {p.name for p in batch.points} == set(metrics)
