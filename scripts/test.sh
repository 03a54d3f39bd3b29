#!/usr/bin/env bash
# Run the suite against the real services. Tests use their own ports, queue and
# channel prefix so they never meet a running demo.
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH" PYTHONPATH="$PWD/platform:$PWD/workers"
export DJANGO_SETTINGS_MODULE=umbra_site.settings
export DATABASE_URL=${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}
export REDIS_URL=${TEST_REDIS_URL:-redis://127.0.0.1:6379/5}
export UMBRA_CHANNEL_PREFIX=${UMBRA_CHANNEL_PREFIX:-umbra-test} UMBRA_CELERY_QUEUE=${UMBRA_CELERY_QUEUE:-umbra-test} UMBRA_FOLLOW_INTERVAL_S=1
export UMBRA_VAR_DIR="${UMBRA_VAR_DIR:-$PWD/var/test}" UMBRA_MODEL_DIR="$PWD/var/test/models"
export UMBRA_DATA_DIRS="$PWD/../shared/data"  # the GSM8K test set, where this workspace has it
export UMBRA_REWARD_DIRS="$PWD/examples/rewards"  # the example custom rewards (countdown.py)
export VLLM_CPU_KVCACHE_SPACE=1 TOKENIZERS_PARALLELISM=false RAY_DEDUP_LOGS=0
# The test cluster listens on loopback only; Ray token auth would need a token shared by every process.
export RAY_AUTH_MODE=${RAY_AUTH_MODE:-disabled}
mkdir -p "$UMBRA_VAR_DIR"
# The checks beside pytest: import-graph contracts (.importlinter) and the front-end unit
# tests (vitest). Run for the whole suite (no arguments, as `make test` and CI call it) or
# with UMBRA_TEST_CHECKS=1 (`make test-fast`); they run first, and pytest runs even when
# one fails, so that its summary line stays the last line of the output.
checks=${UMBRA_TEST_CHECKS:-$([ $# -eq 0 ] && echo 1 || echo 0)}
checks_rc=0
if [ "$checks" = 1 ]; then
  echo "==> import contracts (lint-imports)"
  lint-imports --no-cache || { checks_rc=1; echo "==> import contracts BROKEN (above)" >&2; }
  echo "==> front-end unit tests (vitest)"
  npm test --silent --prefix frontend || { checks_rc=1; echo "==> front-end unit tests FAILED (above)" >&2; }
fi
python -m pytest -p no:cacheprovider "$@"
rc=$?
[ $rc = 5 ] && { echo "no tests ran" >&2; exit 1; }
[ $rc = 0 ] && [ $checks_rc != 0 ] && exit 1
exit $rc
