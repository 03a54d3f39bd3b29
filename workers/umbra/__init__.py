"""Umbra's Django-free side: the run-config schema, the Ray job and its parts.

Nothing under this package imports Django or the platform's apps (an import-linter
contract checks it; docs/architecture.md), so the job runs on a remote Ray cluster
without database access.
"""
