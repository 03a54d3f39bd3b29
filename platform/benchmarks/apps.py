from django.apps import AppConfig


class BenchmarksConfig(AppConfig):
    """Benchmark harnesses (``manage.py bench_live``, ``bench_compare``; ``make bench-live`` and
    ``make bench-compare``): kept out of the apps they measure. No models, no URLs."""

    name = "benchmarks"
