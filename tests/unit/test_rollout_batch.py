"""The rollout manager's pure parts: the typed batch of samples and the rollout shape."""
import json

import pytest

from umbra.rollout.batch import RolloutBatch, Sample
from umbra.rollout.manager import DRAFT_ROOM, RolloutShape
from umbra.rollout.request import ChunkRecord, RequestStatus, make_groups


def test_a_sample_is_a_finished_request_with_reward_and_advantage_slots():
    r = make_groups([[1, 2]], 1, 4, seed=0)[0][0]
    with pytest.raises(ValueError, match="has not finished"):
        Sample.of(r)
    r.add_chunk(1, [5, 6], "length", 0.0, 1.0, prefill_tokens=2)
    r.add_chunk(0, [7, 8], "length", 1.0, 2.0)
    s = Sample.of(r)
    assert (s.status, s.response_token_ids, s.reward, s.advantage) == (RequestStatus.CLIPPED, [5, 6, 7, 8], None,
                                                                         None)
    assert s.chunks == [ChunkRecord(1, 0.0, 1.0, 2, 2), ChunkRecord(0, 1.0, 2.0, 2, 0)]
    assert r.clipped and r.finish_reason == "length" and r.last_instance == 0


def test_a_request_ending_at_eos_is_completed():
    r = make_groups([[1]], 1, 10, seed=0)[0][0]
    r.add_chunk(0, [3], "stop", 0.0, 1.0)
    assert r.status is RequestStatus.COMPLETED and r.done and not r.clipped and r.finish_reason == "stop"


def test_batch_groups_and_versions():
    samples = [Sample(g, i, [1], [2], RequestStatus.COMPLETED, 3, []) for g in range(3) for i in range(4)]
    batch = RolloutBatch(0, 4, samples, [], 0.0, 1.0)
    assert batch.num_groups == 3 and batch.policy_versions() == {3}


def test_shape_fits_the_longest_prompt_and_the_kv_budget(tmp_path):
    # 2 layers x 2 KV heads x head_dim 4 x K and V x 4 bytes = 128 bytes per token
    (tmp_path / "config.json").write_text(json.dumps({"num_attention_heads": 2, "num_key_value_heads": 2,
                                                      "hidden_size": 8, "num_hidden_layers": 2}))
    shape = RolloutShape.fit(str(tmp_path), context_length=2048, longest_prompt=100, group_size=8, max_tokens=412,
                             temperature=1.0, kv_cache_gib=1, max_num_seqs=256)
    assert shape.max_model_len == 512 + DRAFT_ROOM  # a full draft still fits at the last token
    assert shape.capacity == 256  # 1 GiB holds far more than 256 sequences of 512 tokens
    tight = RolloutShape.fit(str(tmp_path), 300, 100, 8, 412, 1.0, 1, 256)
    assert tight.max_model_len == 300  # never past the model's context
