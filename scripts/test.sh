#!/usr/bin/env bash
# Run the suite against the real services. Tests use their own ports, queue and
# channel prefix so they never meet a running demo.
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH" PYTHONPATH="$PWD/platform:$PWD/workers"
export DJANGO_SETTINGS_MODULE=umbra_site.settings
export DATABASE_URL=${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}
export REDIS_URL=${TEST_REDIS_URL:-redis://127.0.0.1:6379/5}
export UMBRA_CHANNEL_PREFIX=umbra-test UMBRA_CELERY_QUEUE=umbra-test UMBRA_FOLLOW_INTERVAL_S=1
export UMBRA_VAR_DIR="$PWD/var/test" UMBRA_MODEL_DIR="$PWD/var/test/models"
export UMBRA_DATA_DIRS="$PWD/../shared/data"  # the GSM8K test set, where this workspace has it
export VLLM_CPU_KVCACHE_SPACE=1 TOKENIZERS_PARALLELISM=false RAY_DEDUP_LOGS=0
# The test cluster listens on loopback only; Ray token auth would need a token shared by every process.
export RAY_AUTH_MODE=${RAY_AUTH_MODE:-disabled}
mkdir -p "$UMBRA_VAR_DIR"
python -m pytest -p no:cacheprovider "$@"
rc=$?
[ $rc = 5 ] && { echo "no tests ran" >&2; exit 1; }
exit $rc
