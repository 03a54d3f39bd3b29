"""Benchmarks (commands that print a table and JSON; never timed tests)."""
