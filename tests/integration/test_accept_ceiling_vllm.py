"""``accept-ceiling --engine vllm`` reads the engine's own sampling distribution: after
temperature, most likely first, the same as softmax(logits / T) of the model (tiny float32)."""
import pytest

pytestmark = pytest.mark.integration


def test_vllm_records_the_distribution_after_temperature(tiny_model_path):
    import torch
    from transformers import AutoModelForCausalLM

    from umbra.bench.pmax_vllm import close, sample_pmax_vllm

    prompts = [[1, 5, 9, 13, 17], [1, 4, 4, 4]]
    model = AutoModelForCausalLM.from_pretrained(tiny_model_path, dtype=torch.float32).eval()
    with torch.inference_mode():
        first_logits = [model(torch.tensor([p])).logits[0, -1] for p in prompts]
    llm = None
    try:
        for temperature in (0.5, 2.0):  # one engine: temperature is per request
            record = []
            pmax, llm = sample_pmax_vllm(tiny_model_path, prompts, 3, 12, temperature, 4, 7, 4, record, llm)
            rows = [row for batch in record for row in batch]
            assert [len(b) for b in record] == [4, 2]  # batches of 4 rows, as the replay reads them
            assert [g for g, _, _ in rows] == [0, 0, 0, 1, 1, 1]
            for (g, toks, dists), pm in zip(rows, pmax):
                assert len(toks) == len(dists) == len(pm) and toks
                for dist in dists:
                    ps = [p for _, p in dist]
                    assert len(dist) == 4 and ps == sorted(ps, reverse=True) and sum(ps) <= 1 + 1e-5
                assert [d[0][1] for d in dists] == pm
                # the first position depends on the prompt alone: the model's softmax(logits / T)
                want = torch.softmax(first_logits[g] / temperature, dim=-1).topk(4)
                assert [t for t, _ in dists[0]] == want.indices.tolist()
                assert [p for _, p in dists[0]] == pytest.approx(want.values.tolist(), abs=1e-4)
    finally:
        close(llm)
