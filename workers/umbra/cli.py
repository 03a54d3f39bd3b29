"""The ``umbra`` console script.

``umbra prepare-model tiny|smollm2 [--force]`` builds a named model into the model folder;
``umbra bench rollout ...`` compares rollout policies on real vLLM instances.
"""
from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and run a subcommand; returns the exit code (2 on bad input)."""
    parser = argparse.ArgumentParser(prog="umbra", description="Umbra command-line tools")
    sub = parser.add_subparsers(dest="command", required=True)
    prep = sub.add_parser("prepare-model", help="build a named model (no download)")
    prep.add_argument("name", help="tiny or smollm2")
    prep.add_argument("--force", action="store_true", help="rebuild even if present")
    bench = sub.add_parser("bench", help="benchmarks (print a table and JSON)")
    bench_sub = bench.add_subparsers(dest="bench", required=True)
    from umbra.bench import rollout as bench_rollout

    bench_rollout.add_arguments(bench_sub.add_parser("rollout", help="rollout policies side by side"))
    args = parser.parse_args(argv)

    if args.command == "bench":
        return bench_rollout.run(args)

    if args.command == "prepare-model":
        from umbra.models.prepare import prepare

        try:
            print(prepare(args.name, force=args.force))
        except (ValueError, FileNotFoundError) as exc:
            print(f"umbra: {exc}", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
