# Two commands: `make demo` (set up, start everything, submit a demo run) and
# `make test` (set up, run the whole suite against real PostgreSQL/Redis/Celery/Ray/vLLM).
# `make test-fast`: the unit and platform tiers (PostgreSQL and Redis; no Ray, vLLM or
# browser), the import contracts and the front-end unit tests, in about a minute and a half.
SHELL := /bin/bash
DATA ?= arith
MODEL ?= smollm2
PYTEST_ARGS ?=
export VLLM_CPU_KVCACHE_SPACE ?= 1

.PHONY: setup demo learn test test-fast browser openapi fuzz-api bench-compare bench-live
setup:
	@bash scripts/setup.sh

demo: setup
	@DATA="$(if $(wildcard $(DATA)),$(abspath $(DATA)),$(DATA))" MODEL="$(MODEL)" bash scripts/demo.sh

# The learning curve of README's "Proof that it learns": SmolLM2-135M on arith-easy, 15 iterations (about 21 minutes).
learn: setup
	@CONFIG=examples/learn.yaml bash scripts/demo.sh

browser:
	@command -v chromium >/dev/null || (echo "==> installing Debian chromium for browser tests" && \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null)

test: setup browser
	@bash scripts/services.sh
	@bash scripts/test.sh $(PYTEST_ARGS)

test-fast: setup
	@bash scripts/services.sh
	@bash scripts/test-fast.sh $(PYTEST_ARGS)

openapi: setup
	@PYTHONPATH=platform:workers .venv/bin/python manage.py spectacular --file docs/openapi.yaml --validate
	@echo "docs/openapi.yaml written"

# The API contract test (schemathesis, every check and phase) with more examples per operation
# and phase than the suite's 5; FUZZ_EXAMPLES / FUZZ_SEED change them.
fuzz-api: setup
	@bash scripts/services.sh
	@UMBRA_FUZZ_EXAMPLES=$${FUZZ_EXAMPLES:-50} UMBRA_FUZZ_SEED=$${FUZZ_SEED:-1} \
	  bash scripts/test.sh tests/platform/test_api_contract.py -s -q $(PYTEST_ARGS)

bench-compare: setup browser
	@bash scripts/services.sh
	@export PYTHONPATH=platform:workers DATABASE_URL=$${BENCH_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}; \
	  .venv/bin/python manage.py migrate -v0 && .venv/bin/python manage.py bench_compare --browser --json var/bench-compare.json

bench-live: setup
	@bash scripts/services.sh
	@export PYTHONPATH=platform:workers DATABASE_URL=$${BENCH_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}; \
	  .venv/bin/python manage.py migrate -v0 && .venv/bin/python manage.py bench_live --json var/bench-live.json $(BENCH_ARGS)
