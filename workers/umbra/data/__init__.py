"""Problem sets: a GSM8K-style JSONL loader and a generated arithmetic default."""
