"""Replaying suffix drafters on sampled responses (accept-ceiling --drafts)."""
import pytest

from umbra.bench.draft_agreement import replay
from umbra.bench.token_chains import expected_tokens


def _sure(tokens, p=0.95):
    """Each position's distribution: the sampled token most likely with ``p``."""
    return [[(t, p), (t + 1000, 1 - p)] for t in tokens]


def test_a_group_that_repeats_itself_drafts_the_argmax_and_moves_more_tokens():
    text = [5, 6, 7, 8, 9, 10, 11, 12] * 3
    batch = [(0, text, _sure(text)), (0, text, _sure(text))]
    got = replay([batch], gamma_max=4)["group"]
    assert got["drafted"] > 0.5 and got["argmax"] == 1.0 and got["p_ratio"] == pytest.approx(1.0)
    e = got["expected_tokens"]
    assert e[0] == 1.0 and e[1] > 1.4 and e[4] > e[1]


def test_a_rejected_draft_counts_its_own_probability_not_p_max():
    a, b = [1, 2, 3, 4, 1, 2, 3, 4], [1, 2, 3, 4, 1, 2, 9, 9]
    # at b's second "1 2" the group drafts 3, which b's policy does not rank at all
    top_b = [[(t + 50, 0.9), (t, 0.1)] for t in b]
    got = replay([[(0, a, _sure(a)), (0, b, top_b)]], gamma_max=2)["group"]
    # drafts (a match needs 2 tokens followed by one more): a and b at t=6 (after "1 2": 3),
    # a at t=7 (after "2 3": 4); b's "2 9" matches nothing
    assert got["positions"] == 16
    assert got["drafted"] == pytest.approx(3 / 16)
    assert got["argmax"] == pytest.approx(2 / 3) and got["p_ratio"] == pytest.approx(2 / 3)
    # a's two drafts hold with 0.95, b's with 0 (3 is not among b's likely tokens)
    assert got["expected_tokens"][1] == pytest.approx(1 + 2 * 0.95 / 16)


def test_the_true_continuation_holds_with_the_probability_of_each_position():
    text = [10, 11, 12, 13, 14, 15]
    ps = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4]
    top = [[(t, p), (t + 1000, 1 - p)] for t, p in zip(text, ps)]
    # the same prompt's earlier response is in the group's index: from position 2 on (a match of
    # 2 tokens) the group drafts exactly the sampled continuation
    got = replay([[(0, text, top)], [(0, text, top)]], gamma_max=1)["group"]
    # the first batch drafts nothing; the second drafts positions 2..5, each with its own p
    assert got["expected_tokens"][1] == pytest.approx(1 + sum(ps[2:]) / 12)
    assert got["drafted"] == pytest.approx(4 / 12)
    later = replay([[(0, text, top)], [(0, text, top)]], gamma_max=8)["group"]["expected_tokens"]
    # position t chains ps[t], ps[t+1], ... up to the response's end
    want = (12 + sum(sum(_prod(ps[t:t + k]) for k in range(1, 6 - t + 1)) for t in range(2, 6))) / 12
    assert later[8] == pytest.approx(want)


def _prod(xs):
    out = 1.0
    for x in xs:
        out *= x
    return out


def test_sure_positions_are_counted_apart():
    text = [5, 6, 7, 5, 6, 7]
    top = [[(t, 0.95 if i % 2 else 0.5), (t + 1000, 0.05 if i % 2 else 0.5)] for i, t in enumerate(text)]
    got = replay([[(0, text, top)]], gamma_max=2)["group"]
    # the lone row drafts at t=5 (after its second "5 6": 7), a sure position
    assert got["drafted"] == pytest.approx(1 / 6)
    assert got["drafted_sure"] == pytest.approx(1 / 3) and got["argmax_sure"] == 1.0


def test_a_group_spanning_two_batches_keeps_its_index():
    text = [40, 41, 42, 43, 44, 45, 46, 47]
    split = replay([[(0, text, _sure(text))], [(0, text, _sure(text))]], gamma_max=2)
    assert split["group"]["drafted"] > 0  # the second batch drafts from the first's response


def test_other_prompts_help_only_in_the_global_scope():
    common = [40, 41, 42, 43, 44, 45, 46, 47]
    batch = [(0, common, _sure(common)), (1, [7] + common[1:], _sure([7] + common[1:]))]
    got = replay([batch], gamma_max=2)
    # lockstep: no row sees another's token at its own position or later, so nothing is drafted
    assert got["group"]["drafted"] == 0 and got["group+global"]["drafted"] == 0
    # a later batch draws on the earlier batch's responses, its own group being new
    later = replay([batch, [(2, common, _sure(common))]], gamma_max=2)
    assert later["group"]["drafted"] == 0
    assert later["group+global"]["drafted"] > 0
    assert later["group+global"]["expected_tokens"][2] > later["group"]["expected_tokens"][2]


def test_copying_a_sample_is_accepted_with_the_chance_two_samples_agree():
    toks = [1, 2, 3]
    top = [[(t, p), (t + 9, 1 - p)] for t, p in zip(toks, (0.9, 0.6, 0.7))]
    got = replay([[(0, toks, top)]], gamma_max=2)["copy"]["expected_tokens"]
    agree = [p * p + (1 - p) ** 2 for p in (0.9, 0.6, 0.7)]
    assert got == pytest.approx(expected_tokens([agree], 2))
    # aligned as the ceiling: position t's first draft lands on t + 1's distribution
    assert got[1] == pytest.approx(1 + (agree[1] + agree[2]) / 3)


def test_nothing_to_draft_gives_one_token_a_step():
    got = replay([[(0, [1, 2, 3], _sure([1, 2, 3]))]], gamma_max=3)
    # a lone row of distinct tokens: no suffix of >= 2 tokens recurs
    assert got["group"]["drafted"] == 0 and got["group"]["expected_tokens"] == [1.0] * 4
    assert replay([], gamma_max=2)["group"]["positions"] == 0


def test_accept_ceiling_drafts_end_to_end_on_the_tiny_model(tiny_model_path, tmp_path, capsys):
    import argparse
    import json

    from umbra.bench import accept_ceiling

    p = argparse.ArgumentParser()
    accept_ceiling.add_arguments(p)
    out = tmp_path / "ceiling.json"
    args = p.parse_args(["--model", "tiny", "--data", "arith", "--prompts", "2", "--group-size", "3",
                         "--max-tokens", "24", "--batch", "4", "--temperature", "0.5", "--drafts",
                         "--json", str(out)])
    assert accept_ceiling.run(args) == 0
    got = json.loads(out.read_text())
    assert set(got["drafts"]) == {"copy", "group", "group+global"}
    for scope in ("group", "group+global"):
        assert got["drafts"][scope]["positions"] == got["tokens"]  # every sampled position replayed once
    assert "best token" in capsys.readouterr().out


def test_sample_pmax_records_what_the_replay_reads(tiny_model_path):
    import torch
    from transformers import AutoModelForCausalLM

    from umbra.bench.accept_ceiling import sample_pmax

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_path, dtype=torch.float32).eval()
    record = []
    pmax = sample_pmax(model, [[1, 2, 3], [4, 5]], 3, 6, 1.0, 4, set(), 0, record)
    rows = [row for batch in record for row in batch]
    assert [g for g, _, _ in rows] == [0, 0, 0, 1, 1, 1]  # a group spans the batches of 4
    assert [len(b) for b in record] == [4, 2]
    for (g, toks, top), pm in zip(rows, pmax):
        assert len(toks) == len(top) == len(pm) == 6
        assert [dist[0][1] for dist in top] == pytest.approx(pm)  # the most likely first, p_max
        assert all(len(dist) == 4 and dist[0][1] >= dist[-1][1] for dist in top)


def test_history_rounds_seed_each_group_with_its_prompts_earlier_responses():
    from umbra.bench.draft_agreement import replay_rounds

    text = [10, 11, 12, 13, 14, 15]
    ps = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4]
    top = [[(t, p), (t + 1000, 1 - p)] for t, p in zip(text, ps)]
    other = [20, 21, 22, 23, 24, 25]
    rounds = [[[(0, text, top)]], [[(0, other, _sure(other))]], [[(0, text, top)]]]
    got = replay_rounds(rounds, gamma_max=1)
    assert [r["history"] for r in got] == [0, 1, 2]
    assert got[0]["group"]["drafted"] == 0  # nothing earlier, one row: nothing to draft from
    # the third round finds the first round's response in its prompt's history (unbounded) ...
    assert got[2]["group"]["expected_tokens"][1] == pytest.approx(1 + sum(ps[2:]) / 6)
    # ... but not when only the most recent earlier response is kept (the second round's)
    kept = replay_rounds(rounds, gamma_max=1, keep=1)
    assert [r["history"] for r in kept] == [0, 1, 1]
    assert kept[2]["group"]["drafted"] == 0
    # a replay without seeds is the plain replay
    assert replay_rounds(rounds[:1], gamma_max=1)[0]["group"] == replay(rounds[0], gamma_max=1)["group"]


def test_accept_ceiling_rounds_end_to_end_on_the_tiny_model(tiny_model_path, tmp_path, capsys):
    import argparse
    import json

    from umbra.bench import accept_ceiling

    p = argparse.ArgumentParser()
    accept_ceiling.add_arguments(p)
    out = tmp_path / "rounds.json"
    args = p.parse_args(["--model", "tiny", "--data", "arith", "--prompts", "2", "--group-size", "3",
                         "--max-tokens", "16", "--batch", "6", "--temperature", "0.5", "--rounds", "3",
                         "--json", str(out)])
    assert accept_ceiling.run(args) == 0
    got = json.loads(out.read_text())
    assert got["responses"] == 2 * 3 * 3
    for key in ("rounds", "rounds_unbounded"):
        assert [r["history"] for r in got[key]] == [0, 3, 6]  # 8 kept: every earlier response here
        # each round replays its own responses' positions once
        assert sum(r["group"]["positions"] for r in got[key]) == got["tokens"]
    assert "history drafts" in capsys.readouterr().out
    bad = p.parse_args(["--model", "tiny", "--rounds", "0"])
    assert accept_ceiling.run(bad) == 2


@pytest.mark.parametrize("flags, says", [
    (["--temperature", "0.001"], "--temperature"),  # vLLM would raise it to 0.01 unseen
    (["--seed", "-1"], "--seed"),
    (["--seed", str(2**32)], "--seed"),
    (["--json", "/nonexistent-folder/x.json"], "--json"),
    (["--max-tokens", "5000"], "positions"),  # the tiny model has 1024
    (["--model", "/nonexistent-model-folder"], "--model"),
])
def test_accept_ceiling_refuses_bad_input_before_sampling(tiny_model_path, tmp_path, capsys, flags, says):
    import argparse

    from umbra.bench import accept_ceiling

    p = argparse.ArgumentParser()
    accept_ceiling.add_arguments(p)
    args = p.parse_args(["--model", "tiny", "--data", "arith", "--prompts", "1", "--group-size", "1",
                         "--max-tokens", "4", *flags])
    assert accept_ceiling.run(args) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err
    assert "sampled" not in capsys.readouterr().out
