"""The ``umbra`` REST client: log in, submit, list, follow, cancel and compare runs.

Talks to the platform's ``/api/`` (docs/api.md) with ``requests`` and renders with
``rich``. Like the rest of ``umbra``, nothing here imports Django.
"""
