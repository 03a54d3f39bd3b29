"""The rollout layer: requests and groups, policies, vLLM instances, metrics."""
