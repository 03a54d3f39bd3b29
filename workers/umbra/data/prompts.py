"""Turn problems into prompt token ids with the model's chat template."""
from __future__ import annotations

from umbra.data.problem import Problem

INSTRUCTION = "Solve the problem step by step. Write the final answer on the last line as '#### <number>'."


def encode_prompts(tokenizer, problems: list[Problem]) -> list[list[int]]:
    """Prompt token ids per problem (``[P][*]``), chat-formatted when the tokenizer has a template."""
    out = []
    for p in problems:
        messages = [{"role": "system", "content": INSTRUCTION}, {"role": "user", "content": p.question}]
        if tokenizer.chat_template:
            ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
            if isinstance(ids, dict) or hasattr(ids, "input_ids"):
                ids = ids["input_ids"]
        else:
            ids = tokenizer(f"{INSTRUCTION}\nQuestion: {p.question}\nAnswer:")["input_ids"]
        out.append(list(ids))
    return out
