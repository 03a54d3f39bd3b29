"""Umbra's Django-free side: the run-config schema, the Ray job and its parts.

Nothing under this package imports Django (the boundary rule of DESIGN.md), so
the job can run on a remote Ray cluster without database access.
"""
