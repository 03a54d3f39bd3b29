"""History drafts: the draft server remembers each rollout's responses under their prompts,
seeds a returning prompt's group with them, drops stale ones, and stays within its bounds."""
import random

import pytest

from umbra.speculative.history import ResponseHistory
from umbra.speculative.replica import GroupReplica
from umbra.speculative.server import DraftServer


def _rollout(server: DraftServer, prompts: dict[int, list[int]], version: int, responses, use_history=True):
    """One rollout on ``server``: begin, then every request's tokens appended in two chunks."""
    stats = server.begin(prompts, version, use_history)
    for g, rs in responses.items():
        for i, tokens in enumerate(rs):
            server.append(g, f"g{g}-r{i}", tokens[:3])
            server.append(g, f"g{g}-r{i}", tokens[3:])
    return stats


def test_a_returning_prompt_starts_with_its_earlier_responses_whole():
    server = DraftServer()
    a, b = [1, 2, 3], [4, 5]
    _rollout(server, {0: a, 1: b}, 0, {0: [[7, 8, 9, 10, 11], [7, 8, 12, 13]], 1: [[20, 21, 22, 23]]})
    # next rollout: prompt a comes back under another group id, b does not
    stats = server.begin({5: a, 6: [9, 9]}, 1)
    assert stats["seeded_groups"] == 1 and stats["history_prompts"] == 2 and stats["history_responses"] == 3
    version, updates = server.since(5, 0)
    assert updates == [("h0", [7, 8, 9, 10, 11]), ("h1", [7, 8, 12, 13])] and version == 2
    assert server.since(6, 0) == (0, [])
    # the replica drafts from them from the first step on
    replica = GroupReplica()
    replica.apply(5, a, updates)
    assert replica.suffix_index(5).propose([1, 2, 3, 7, 8, 9], 3) == [10, 11]


def test_without_history_nothing_is_seeded_but_responses_are_still_remembered():
    server = DraftServer()
    _rollout(server, {0: [1, 2]}, 0, {0: [[5, 6, 7, 8]]})
    assert server.begin({0: [1, 2]}, 1, use_history=False)["seeded_groups"] == 0
    assert server.since(0, 0) == (0, [])
    _rollout(server, {0: [1, 2]}, 2, {})
    assert server.begin({0: [1, 2]}, 2)["seeded_groups"] == 1  # the first rollout's response, still fresh


def test_seeded_responses_are_not_remembered_twice():
    server = DraftServer()
    _rollout(server, {0: [1]}, 0, {0: [[5, 6, 7, 8]]})
    _rollout(server, {0: [1]}, 1, {0: [[9, 9, 9, 9]]})  # seeded with h0, then a new response
    server.begin({0: [1]}, 2)
    assert [t for _, t in server.since(0, 0)[1]] == [[5, 6, 7, 8], [9, 9, 9, 9]]


def test_responses_older_than_max_age_are_dropped():
    h = ResponseHistory(per_prompt=8, max_age=2)
    h.add([1], [[1, 2]], version=0)
    h.add([1], [[3, 4]], version=3)
    assert h.recall([1], 2) == [[1, 2], [3, 4]]
    assert h.recall([1], 3) == [[3, 4]]  # version 0 is 3 versions old at 3: dropped
    assert h.nbytes == 8
    assert h.recall([1], 6) == [] and len(h) == 0 and h.nbytes == 0


def test_per_prompt_bound_keeps_the_most_recent():
    h = ResponseHistory(per_prompt=2)
    h.add([1], [[1], [2], [3]], 0)
    h.add([1], [[4]], 1)
    assert h.recall([1], 1) == [[3], [4]] and h.nbytes == 8


def test_memory_stays_within_its_bound_under_a_long_feed():
    """1,000 prompts, 10 epochs of G=8 responses of up to 300 tokens: the bytes held never
    pass the bound, least recently used prompts go first, and the count is exact."""
    rng = random.Random(0)
    bound = 4 * 2**20
    server = DraftServer(ResponseHistory(per_prompt=8, max_age=16, max_bytes=bound))
    prompts = [[rng.randrange(50_000) for _ in range(rng.randint(5, 40))] for _ in range(1000)]
    for epoch in range(10):
        order = rng.sample(range(1000), 1000)
        for step in range(0, 1000, 64):  # one rollout = 64 prompts
            groups = {i: prompts[p] for i, p in enumerate(order[step:step + 64])}
            responses = {i: [[rng.randrange(50_000) for _ in range(rng.randint(1, 300))] for _ in range(8)]
                         for i in groups}
            _rollout(server, groups, epoch * 16 + step // 64, responses)
            h = server.history
            assert h.nbytes <= bound
            assert h.nbytes == sum(4 * len(t) for d in h._by_prompt.values() for _, t in d)
    assert server.stats()["history_mb"] <= 4.0
    assert 0 < len(server.history) < 1000  # the bound forced prompts out


def test_bad_bounds_are_refused():
    with pytest.raises(ValueError):
        ResponseHistory(per_prompt=0)
