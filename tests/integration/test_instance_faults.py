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
