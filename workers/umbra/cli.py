"""The ``umbra`` console script.

``umbra prepare-model tiny|smollm2 [--force]`` builds a named model into the model folder;
``umbra bench rollout ...`` compares rollout policies on real vLLM instances;
``umbra bench profile ...`` fits the simulator's step model to the real engine;
``umbra sim --workload NAME|trace:PATH ...`` simulates them at any scale;
``umbra login|whoami|logout|submit|runs|show|follow|logs|events|cancel|resume|compare`` talk
to the platform's REST API (see ``umbra.client``); ``umbra --version`` prints the version.
"""
from __future__ import annotations

import argparse
import sys

from umbra.client.errors import UsageError


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are raised (one ``umbra: ...`` line, exit 2)
    instead of printing the usage and exiting."""

    def error(self, message: str):
        raise UsageError(f"{message} (see `{self.prog} --help`)")


def build_parser() -> argparse.ArgumentParser:
    """The parser of every subcommand."""
    from umbra.bench import accept_ceiling as bench_accept_ceiling
    from umbra.bench import profile as bench_profile
    from umbra.bench import rollout as bench_rollout
    from umbra.bench import spec_bound as bench_spec_bound
    from umbra.bench import spec_cost as bench_spec_cost
    from umbra.bench import tail_anatomy as bench_tail
    from umbra.bench import train as bench_train
    from umbra.client import commands as client_commands
    from umbra.client.version import package_version
    from umbra.sim import cli as sim_cli

    parser = _Parser(prog="umbra", description="Umbra command-line tools")
    parser.add_argument("--version", action="version", version=f"umbra {package_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    prep = sub.add_parser("prepare-model", help="build a named model (no download)")
    prep.add_argument("name", help="tiny or smollm2")
    prep.add_argument("--force", action="store_true", help="rebuild even if present")
    bench = sub.add_parser("bench", help="benchmarks (print a table and JSON)")
    bench_sub = bench.add_subparsers(dest="bench", required=True)
    bench_rollout.add_arguments(bench_sub.add_parser("rollout", help="rollout policies side by side"))
    bench_profile.add_arguments(bench_sub.add_parser("profile", help="fit the simulator's step model to this machine"))
    bench_train.add_arguments(bench_sub.add_parser("train", help="one GRPO step of the trainer (ranks, device)"))
    bench_spec_cost.add_arguments(bench_sub.add_parser(
        "spec-cost", help="an engine step's cost with each speculation method, and per verified draft token"))
    bench_spec_bound.add_arguments(bench_sub.add_parser(
        "spec-bound", help="the most an oracle drafter could speed up a recorded rollout on this machine"))
    bench_accept_ceiling.add_arguments(bench_sub.add_parser(
        "accept-ceiling", help="tokens per step the best token drafter could get verified on the policy's responses"))
    bench_tail.add_arguments(bench_sub.add_parser(
        "tail", help="where a recorded rollout's tail time goes: late starts, parked requests, one instance alone"))
    sim_cli.add_arguments(sub.add_parser("sim", help="simulate rollout policies on a preset or trace workload"))
    client_commands.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and run a subcommand; returns the exit code (2 on bad input,
    1 on a server or connection failure, 130 on Ctrl-C)."""
    from umbra.client import commands as client_commands

    try:
        args = build_parser().parse_args(argv)
    except UsageError as err:
        for line in err.lines():
            print(line, file=sys.stderr)
        return err.exit_code
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else 0

    if args.command in client_commands.MODULES:
        return client_commands.run(args)

    if args.command == "sim":
        from umbra.sim import cli as sim_cli

        return sim_cli.run(args)

    if args.command == "bench":
        from umbra.bench import accept_ceiling as bench_accept_ceiling
        from umbra.bench import profile as bench_profile
        from umbra.bench import rollout as bench_rollout
        from umbra.bench import spec_bound as bench_spec_bound
        from umbra.bench import spec_cost as bench_spec_cost
        from umbra.bench import tail_anatomy as bench_tail
        from umbra.bench import train as bench_train

        return {"profile": bench_profile, "train": bench_train, "spec-cost": bench_spec_cost,
                "spec-bound": bench_spec_bound, "accept-ceiling": bench_accept_ceiling, "tail": bench_tail}.get(
            args.bench, bench_rollout).run(args)

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
