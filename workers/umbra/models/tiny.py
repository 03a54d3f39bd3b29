"""A tiny random Llama with its own byte-level BPE tokenizer, built in seconds.

Tests and quick demos use it so that nothing needs SmolLM2 or a download.
head_dim is 64 because vLLM's CPU attention supports no smaller head size.
"""
from __future__ import annotations

from pathlib import Path

from umbra.data import arith

CHAT_TEMPLATE = (
    "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% endif %}"
)


def build_tiny_model(out: str | Path, seed: int = 0, vocab_size: int = 512) -> Path:
    """Write a float32 LlamaForCausalLM (2 layers, hidden 128, 2 heads of 64)
    and its tokenizer to ``out``; returns ``out``. Idempotent for a fixed seed."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<unk>", "<s>", "</s>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    corpus = [f"user: {p.question}\nassistant: {p.answer} #### {p.answer}" for p in arith.generate(400, seed)]
    tok.train_from_iterator(corpus, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>")
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(out)

    cfg = LlamaConfig(vocab_size=len(fast), hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=1024,
                      bos_token_id=1, eos_token_id=2, tie_word_embeddings=True)
    cfg.torch_dtype = "float32"
    torch.manual_seed(seed)
    LlamaForCausalLM(cfg).to(torch.float32).save_pretrained(out, safe_serialization=True)
    return out
