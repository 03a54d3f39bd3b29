"""The step probe's prompts: which hit the prefix cache and which do not."""
from umbra.rollout.step_probe import LinearStep, probe_prompt

BLOCK = 16


def test_different_salts_share_no_first_block():
    # bench profile times "tokens" then "1 token" with salts s and s + 1: the second must
    # prefill anew, or its prefill is missing from c_prefill and added to the decode step
    firsts = {tuple(probe_prompt(64, salt)[:BLOCK]) for salt in range(0, 70_000, 7)}
    assert len(firsts) == len(range(0, 70_000, 7))
    assert probe_prompt(64, 10_000)[:BLOCK] != probe_prompt(64, 11_000)[:BLOCK]
    assert probe_prompt(4, 0) != probe_prompt(4, 8_000_000)  # no period at 200**3


def test_same_salt_same_prompt_and_valid_ids():
    a, b = probe_prompt(300, 4_2100), probe_prompt(300, 4_2100)
    assert a == b and len(a) == 300 and all(1 <= t <= 200 for t in a)
    assert probe_prompt(2, 5) == probe_prompt(40, 5)[:2]


def test_linear_step():
    s = LinearStep(0.01, 0.002)
    assert abs(s(10) - 0.03) < 1e-12
