"""How the Ray job talks to the platform, and what both sides agree on: metric batches over
HTTP with a per-run token (``client``, models in ``wire``), the WebSocket messages the platform
pushes to dashboards (``messages``) and the metric catalogue (``catalog``, ``summary_columns``)."""
