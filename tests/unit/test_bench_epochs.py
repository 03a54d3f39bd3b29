"""The rollout bench's per-epoch summary: what each rollout re-prefilled, beside its throughput
and tail (the first rollout of a run is where the KV reserve gives up KV)."""
from umbra.bench.rollout import print_epochs, reprefill_pct


def row(tput, tail, reprefill, output):
    return {"throughput_tok_s": tput, "tail_time_s": tail, "reprefill_tokens": reprefill, "output_tokens": output}


def test_each_epoch_shows_its_re_prefill_as_a_share_of_the_output(capsys):
    assert reprefill_pct(row(1, 1, 21664.0, 94482.0)) == 100 * 21664 / 94482
    assert reprefill_pct(row(1, 1, 0.0, 0.0)) == 0.0  # an empty rollout: no division by zero
    print_epochs({"seer-no-spec": [row(214.0, 14.8, 21664.0, 94482.0), row(223.9, 13.8, 1600.0, 92554.0)]})
    out = capsys.readouterr().out
    assert "214 / 14.8 / 22.9%, 224 / 13.8 / 1.7%; median 219 / 14.3" in out


def test_bench_refuses_a_chunked_oracle_without_a_chunked_rollout_before_it(capsys):
    # the chunked oracles rank by the lengths an earlier chunked rollout of the same seeds sampled:
    # without one before them (speculation samples other tokens) they are refused before any engine starts
    import argparse

    from umbra.bench import rollout as bench
    from umbra.rollout.policies.variants import oracle_length_source, variant

    p = argparse.ArgumentParser()
    bench.add_arguments(p)
    for policies in ("verl,oracle-divided", "oracle-group,seer-no-spec", "seer,oracle-divided@estimate",
                     "seer-no-divided,oracle-group-mean", "oracle-divided,oracle-group"):
        assert bench.run(p.parse_args(["--policies", policies])) == 2
        assert "before it in --policies" in capsys.readouterr().err
    assert [oracle_length_source(variant(n, 64), True) for n in ("seer-no-spec", "seer-divided", "seer-no-spec@adaptive")] \
        == [True, True, True]
    assert not any(oracle_length_source(variant(n, 64), True) for n in ("seer", "seer-no-divided", "verl"))
    # oracle-divided samples as the chunked rollouts do (it may serve a later oracle), never as a whole one
    assert oracle_length_source(variant("oracle-divided", 64), True)
    # oracle-lfs ranks by a whole-request rollout without speculation, never by a chunked one
    assert [oracle_length_source(variant(n, 64), False) for n in ("verl", "static-group", "oracle-lfs")] == [True] * 3
    assert not any(oracle_length_source(variant(n, 64), False)
                   for n in ("seer-no-spec", "oracle-divided", "oracle-group", "seer-no-divided"))
