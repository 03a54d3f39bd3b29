"""Model preparation and lookup: the tiny test model, SmolLM2 from its GGUF, paths."""
