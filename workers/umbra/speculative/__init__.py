"""Adaptive grouped speculative decoding (Seer §5): per-group suffix index, draft
server, the vLLM proposer and the adaptive draft length (Alg. 1)."""
