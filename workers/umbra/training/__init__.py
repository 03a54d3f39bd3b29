"""GRPO: group-normalized advantages, the clipped loss with KL, the trainer actor."""
