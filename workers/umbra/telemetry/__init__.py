"""How the Ray job talks to the platform: metric batches over HTTP with a per-run token."""
