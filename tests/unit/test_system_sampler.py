"""umbra.telemetry.system: what the driver samples with psutil each iteration (real
processes, no Ray: the actor list is given), catalogued names, and the memory note."""
import os

from umbra.telemetry import catalog, system


def test_node_driver_and_actor_samples_are_catalogued():
    sampler = system.SystemSampler(list_actors=lambda: [("a1", "RolloutInstance", os.getpid())])
    metrics, notes = sampler.sample()
    assert {"system/node_cpu_percent", "system/node_mem_frac", "system/driver_rss_gib",
            "system/actor_rss_gib/0", "system/actor_cpu_percent/0"} <= set(metrics)
    assert all(catalog.lookup(name) is not None for name in metrics)
    assert 0 < metrics["system/node_mem_frac"] < 1 and metrics["system/actor_rss_gib/0"] > 0
    assert notes[0] == f"system: actor 0 = RolloutInstance (pid {os.getpid()})"
    assert sampler.sample()[1] == [] or "near its memory limit" in sampler.sample()[1][0]  # named once


def test_a_gone_actor_is_left_out_and_the_memory_note_comes_once(monkeypatch):
    monkeypatch.setattr(system, "MEMORY_WARN_FRAC", 0.0)  # every node is "near its limit"
    sampler = system.SystemSampler(list_actors=lambda: [("gone", "Trainer", 2 ** 22 + 12345)])
    metrics, notes = sampler.sample()
    assert "system/actor_rss_gib/0" not in metrics and "system/node_mem_frac" in metrics
    assert any("near its memory limit" in n for n in notes)
    assert not any("near its memory limit" in n for n in sampler.sample()[1])


def test_without_rays_state_api_there_are_no_actors():
    assert system._job_actors() == []  # no Ray here: monitoring gives up quietly
