"""Data: the data source (which prompts each iteration gets), problem sets (a GSM8K-style
JSONL loader, a generated arithmetic default) and prompt formatting."""
