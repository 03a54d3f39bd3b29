"""Entry point of the Ray job: ``python -m umbra.job``.

Reads the run config and platform coordinates from the environment (so no
secret appears in the job's entrypoint): ``UMBRA_RUN_CONFIG`` (JSON),
``UMBRA_RUN_ID``, ``UMBRA_PLATFORM_URL``, ``UMBRA_INGEST_TOKEN``; optional
``UMBRA_CHECKPOINT_DIR`` (the run's checkpoint folder: resume from it, save to it) and
``UMBRA_SEQ_START`` (metric batches already sent by earlier attempts of the run).
"""
from __future__ import annotations

import logging
import os
import signal
import sys


def main() -> int:
    """Validate the config, connect to Ray, run the loop. Returns the exit code."""
    from pydantic import ValidationError

    from umbra.config import RunConfig
    from umbra.job.checkpoint import CheckpointDir
    from umbra.job.loop import run
    from umbra.telemetry.client import TelemetryClient

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        config = RunConfig.model_validate_json(os.environ.get("UMBRA_RUN_CONFIG", "{}"))
    except ValidationError as exc:
        print(f"invalid run config: {exc}", file=sys.stderr)
        return 2
    import ray

    ray.init(address=os.environ.get("RAY_ADDRESS") or None)
    # Cancel = Ray's stop_job: SIGTERM, then SIGKILL after 3 s. Ray's handler (set by
    # ray.init) raises SystemExit, which runs the loop's cleanup (engine shutdowns, up to
    # a minute) and so always ran into the SIGKILL; die at once instead: Ray kills the
    # job's actors, and their engine processes, when its driver is gone.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    telemetry = TelemetryClient(os.environ.get("UMBRA_PLATFORM_URL", ""), os.environ.get("UMBRA_RUN_ID", "local"),
                                os.environ.get("UMBRA_INGEST_TOKEN", ""),
                                seq_start=int(os.environ.get("UMBRA_SEQ_START") or 0))
    folder = os.environ.get("UMBRA_CHECKPOINT_DIR")
    run(config, telemetry, CheckpointDir(folder) if folder else None)
    if not telemetry.flush():
        print("could not deliver every metric batch to the platform", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
