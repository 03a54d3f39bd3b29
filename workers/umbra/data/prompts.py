"""Turn problems into prompt token ids with the model's chat template."""
from __future__ import annotations

from umbra.data.problem import Problem

INSTRUCTION = "Solve the problem step by step. Write the final answer on the last line as '#### <number>'."


def chat_messages(p: Problem) -> list[dict]:
    """The chat a problem is prompted with: its own messages (veRL/TRL rows) as they are, else
    the system instruction and the question (plain prompts, as before)."""
    if p.messages:
        return [dict(m) for m in p.messages]
    return [{"role": "system", "content": INSTRUCTION}, {"role": "user", "content": p.question}]


def _plain_text(p: Problem) -> str:
    """The prompt text for a tokenizer without a chat template (ours)."""
    if p.messages:
        return "".join(f"{m['role']}: {m['content']}\n" for m in p.messages) + "assistant:"
    return f"{INSTRUCTION}\nQuestion: {p.question}\nAnswer:"


def encode_prompts(tokenizer, problems: list[Problem]) -> list[list[int]]:
    """Prompt token ids per problem (``[P][*]``), chat-formatted when the tokenizer has a template."""
    out = []
    for p in problems:
        if tokenizer.chat_template:
            ids = tokenizer.apply_chat_template(chat_messages(p), add_generation_prompt=True, tokenize=True)
            if isinstance(ids, dict) or hasattr(ids, "input_ids"):
                ids = ids["input_ids"]
        else:
            ids = tokenizer(_plain_text(p))["input_ids"]
        out.append(list(ids))
    return out
