"""The Ray job: the synchronous RL loop (rollout -> reward -> GRPO step -> weight sync)."""
