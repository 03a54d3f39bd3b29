"""A rollout instance killed mid-rollout (a real vLLM actor process, SIGKILL): its running
chunks run on the other instance and every request of every group completes exactly once."""
import os
import signal
import threading
import time

import pytest

pytestmark = pytest.mark.integration


def test_chunks_of_a_killed_instance_finish_on_the_other(ray_driver, doomed_instances):
    """On the session's plain pair (this test runs after the others that use it)."""
    from umbra.rollout.policies import make_policy
    from umbra.rollout.request import make_groups
    from umbra.rollout.runner import run_rollout

    ray = ray_driver
    instances = doomed_instances
    victim_pid = ray.get(instances[1].ready.remote())["pid"]
    groups = make_groups([[1, 2, 3, 4]] * 4, 4, 128, seed=3, temperature=1.0)
    policy = make_policy("seer", chunk_tokens=16)
    result, errors = {}, []

    def roll():
        try:
            result["out"] = run_rollout(policy, instances, groups, [12, 12])
        except Exception as exc:  # noqa: BLE001 - re-raised in the test thread
            errors.append(exc)

    thread = threading.Thread(target=roll)
    thread.start()
    # Kill once instance 1 has finished some chunks and is running others.
    deadline = time.time() + 120
    while time.time() < deadline and not any(c.instance == 1 for g in groups for r in g for c in r.chunks):
        time.sleep(0.01)
    killed_at = time.time()
    os.kill(victim_pid, signal.SIGKILL)
    thread.join(300)
    try:
        assert not thread.is_alive() and not errors, errors
        done, _, _ = result["out"]
        assert policy.lost_instances == [1]
        assert policy.redispatched >= 1  # chunks were running there when it died
        assert len(done) == 16 and len({r.request_id for r in done}) == 16
        for r in done:
            assert r.done and r.num_generated == sum(c.tokens for c in r.chunks) <= 128
            assert len(r.output_token_ids) == r.num_generated
        # nothing started on the dead instance after it died; the other one carried on
        assert all(c.start_s < killed_at for r in done for c in r.chunks if c.instance == 1)
        assert any(c.start_s > killed_at for r in done for c in r.chunks if c.instance == 0)
    finally:  # free both engines now: a later user of the pair gets new ones
        for inst in instances:
            ray.kill(inst)


def test_an_instance_that_died_after_the_rollout_is_replaced_at_the_weight_sync(ray_driver, doomed_instances,
                                                                                tiny_model_path, tmp_path):
    """It died while the trainer ran (a run failed on it when the kill missed the rollout):
    the sync starts a replacement with the same id, which loads the new weights; the run's
    events say so."""
    from pathlib import Path

    from safetensors.torch import load, save_file

    from tests.integration.conftest import _start
    from umbra.rollout.instance_pool import InstancePool
    from umbra.rollout.manager import RolloutManager, RolloutShape

    ray = ray_driver
    pool = InstancePool(doomed_instances, start=lambda n, first: _start(n, tiny_model_path, first_id=first))
    manager = RolloutManager(pool, RolloutShape(4, 16, 1.0, 512, 64, 16, 1))
    tensors = load((Path(tiny_model_path) / "model.safetensors").read_bytes())
    tensors["lm_head.weight"] = tensors["model.embed_tokens.weight"].clone()  # tied, as the trainer sends it
    save_file(tensors, str(tmp_path / "v1.safetensors"))
    victim = doomed_instances[1]
    os.kill(ray.get(victim.ready.remote())["pid"], signal.SIGKILL)
    try:
        answers = manager.load_weights(str(tmp_path / "v1.safetensors"), 1)
        assert len(answers) == 2 and all(answers)  # both loaded the file, the replacement too
        assert manager.instances[1] is not victim
        assert [ray.get(i.ready.remote())["policy_version"] for i in manager.instances] == [1, 1]
        assert any("rollout instance 1 died before the weight sync of policy version 1" in n for n in manager._notes)
    finally:
        for inst in manager.instances:
            ray.kill(inst)
