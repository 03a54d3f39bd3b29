#!/usr/bin/env bash
# `make test-fast`: the unit and platform tiers without Ray, vLLM or a browser, with the
# import contracts and the front-end unit tests. Two pytest processes side by side, one
# per core: the generated-input (hypothesis) files, half of the time, on a test database,
# Redis db, queue and channel prefix of their own, and everything else. With arguments
# (`make test-fast PYTEST_ARGS=-x`) one process runs it all. Non-zero if either failed.
set -uo pipefail
cd "$(dirname "$0")/.."
TIERS=(tests/unit tests/platform -m "not integration and not browser")
if [ $# -gt 0 ]; then
  UMBRA_TEST_CHECKS=1 exec bash scripts/test.sh "${TIERS[@]}" "$@"
fi
GENERATED=(tests/platform/test_api_contract.py tests/platform/test_fuzz_inputs.py)
log=$(mktemp)
TEST_DATABASE_URL="${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}_generated" \
  TEST_REDIS_URL="${TEST_GENERATED_REDIS_URL:-redis://127.0.0.1:6379/6}" \
  UMBRA_CHANNEL_PREFIX="${UMBRA_CHANNEL_PREFIX:-umbra-test}-generated" \
  UMBRA_CELERY_QUEUE="${UMBRA_CELERY_QUEUE:-umbra-test}-generated" \
  UMBRA_TEST_CHECKS=0 bash scripts/test.sh "${GENERATED[@]}" -q >"$log" 2>&1 &
generated=$!
UMBRA_TEST_CHECKS=1 bash scripts/test.sh "${TIERS[@]}" "${GENERATED[@]/#/--ignore=}" -q
rc=$?
wait $generated
generated_rc=$?
echo "==> generated-input tests (${GENERATED[*]}), run alongside"
cat "$log"
rm -f "$log"
[ $rc = 0 ] && exit $generated_rc
exit $rc
