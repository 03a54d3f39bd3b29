"""Entry point of the Ray job: ``python -m umbra.job``.

Reads the run config and platform coordinates from the environment (so no
secret appears in the job's entrypoint): ``UMBRA_RUN_CONFIG`` (JSON),
``UMBRA_RUN_ID``, ``UMBRA_PLATFORM_URL``, ``UMBRA_INGEST_TOKEN``.
"""
from __future__ import annotations

import logging
import os
import sys


def main() -> int:
    """Validate the config, connect to Ray, run the loop. Returns the exit code."""
    from pydantic import ValidationError

    from umbra.config import RunConfig
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
    telemetry = TelemetryClient(os.environ.get("UMBRA_PLATFORM_URL", ""), os.environ.get("UMBRA_RUN_ID", "local"),
                                os.environ.get("UMBRA_INGEST_TOKEN", ""))
    run(config, telemetry)
    if not telemetry.flush():
        print("could not deliver every metric batch to the platform", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
