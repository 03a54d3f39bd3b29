"""Training: the trainer group (train on rollout batches, own the weight sync), the GRPO step
(group-normalized advantages, clipped loss with KL) and the trainer actor."""
