"""The rollout layer: the rollout manager and its typed batch, requests and groups, policies,
vLLM instances, metrics."""
