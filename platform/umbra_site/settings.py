"""Settings, all overridable from the environment.

Default: the local PostgreSQL (database ``umbra``, created by `make demo`), the local
Redis, a local Ray head started on demand. Production: DATABASE_URL, REDIS_URL, RAY_ADDRESS.
"""
import os
import re
import sys
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from umbra_site.installation import installation_name

BASE_DIR = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(BASE_DIR / "workers"))
VAR_DIR = Path(os.environ.get("UMBRA_VAR_DIR", BASE_DIR / "var"))
VAR_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = os.environ.get("DJANGO_DEBUG", "1") == "1"
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY") or ("dev-only-insecure-key" if DEBUG else None)
if not SECRET_KEY:
    raise RuntimeError("DJANGO_SECRET_KEY must be set when DJANGO_DEBUG=0")
ALLOWED_HOSTS = os.environ.get("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost,testserver,[::1]").split(",")
CSRF_TRUSTED_ORIGINS = [o for o in os.environ.get("DJANGO_CSRF_TRUSTED_ORIGINS", "").split(",") if o]
# Production sends session and CSRF cookies over HTTPS only; HSTS is opt-in because
# browsers remember it (a wrong value locks users out of plain-HTTP hosts).
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = os.environ.get("DJANGO_SECURE_COOKIES", "0" if DEBUG else "1") == "1"
SECURE_HSTS_SECONDS = int(os.environ.get("DJANGO_HSTS_SECONDS", "0"))

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "channels",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI's files, served from here (no CDN) at /api/docs/
    "teams",
    "runs",
    "telemetry",
    "compare",
    "api",
    "whatif",
    "benchmarks",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "umbra_site.middleware.RejectNulBytes",
    "api.middleware.RefuseEmptyQueryValues",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "umbra_site.urls"
TEMPLATES = [{
    "BACKEND": "django.template.backends.django.DjangoTemplates",
    "DIRS": [BASE_DIR / "platform" / "templates"],
    "APP_DIRS": True,
    "OPTIONS": {"context_processors": [
        "django.template.context_processors.request",
        "django.contrib.auth.context_processors.auth",
        "django.contrib.messages.context_processors.messages",
    ]},
}]
ASGI_APPLICATION = "umbra_site.asgi.application"
WSGI_APPLICATION = None

# PostgreSQL only, the one database of the demo, the tests and production: queries such
# as the tag filter (JSON containment) exist on no other backend.
DATABASE_URL = os.environ.get("DATABASE_URL", "").strip() or "postgres://postgres@127.0.0.1:5432/umbra"
try:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=0)}
except ValueError as exc:  # an unknown scheme
    raise ImproperlyConfigured(f"DATABASE_URL is no database URL ({exc}): give postgres://user@host:port/name") \
        from None
if DATABASES["default"]["ENGINE"] not in ("django.db.backends.postgresql", "django.contrib.gis.db.backends.postgis"):
    raise ImproperlyConfigured(f"DATABASE_URL must be a PostgreSQL URL (postgres://user@host:port/name), "
                               f"not {DATABASE_URL.split(':', 1)[0]}: Umbra runs on PostgreSQL only")
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
# One name per installation (derived from the database, see umbra_site.installation): the
# default Celery queue and Channels/cache prefix, so that two platforms sharing a Redis
# never take each other's tasks. UMBRA_CELERY_QUEUE / UMBRA_CHANNEL_PREFIX override each.
UMBRA_INSTALLATION = os.environ.get("UMBRA_INSTALLATION") or installation_name(DATABASES["default"])
UMBRA_CHANNEL_PREFIX = os.environ.get("UMBRA_CHANNEL_PREFIX") or UMBRA_INSTALLATION
# socket_timeout above channels_redis's 5 s blocking read, or idle sockets time out and drop.
CHANNEL_LAYERS = {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer",
                              "CONFIG": {"hosts": [{"address": REDIS_URL, "socket_timeout": 30}],
                                         "prefix": UMBRA_CHANNEL_PREFIX}}}
# Downsampled series and run statistics are cached here, keyed by each run's metrics_version.
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL,
                "KEY_PREFIX": UMBRA_CHANNEL_PREFIX, "TIMEOUT": 7 * 24 * 3600},
    "throttle": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "throttle"},
}
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", REDIS_URL)
CELERY_RESULT_BACKEND = None
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_DEFAULT_QUEUE = os.environ.get("UMBRA_CELERY_QUEUE") or UMBRA_INSTALLATION
CELERY_WORKER_PREFETCH_MULTIPLIER = 1

# Ray: empty RAY_ADDRESS means a local head at LOCAL_RAY_DASHBOARD, started on demand.
# Taken out of the environment: Ray's JobSubmissionClient replaces the address it is given
# with $RAY_ADDRESS (or $RAY_API_SERVER_ADDRESS), which would send a run whose `cluster`
# names another cluster to this one. The platform passes addresses explicitly.
RAY_ADDRESS = os.environ.pop("RAY_ADDRESS", "")
os.environ.pop("RAY_API_SERVER_ADDRESS", None)
LOCAL_RAY_DASHBOARD = os.environ.get("UMBRA_LOCAL_RAY_DASHBOARD", "http://127.0.0.1:8265")
LOCAL_RAY_GCS_PORT = int(os.environ.get("UMBRA_LOCAL_RAY_PORT", "6380"))
# Ray addresses a run's `cluster` field may name (besides empty = the default); anything
# else is refused, so members cannot point the worker at arbitrary hosts.
UMBRA_ALLOWED_CLUSTERS = [a for a in os.environ.get("UMBRA_ALLOWED_CLUSTERS", "").split(",") if a]
# How the Ray job reaches the platform's ingestion endpoint.
UMBRA_PLATFORM_URL = os.environ.get("UMBRA_PLATFORM_URL", "http://127.0.0.1:8000")
UMBRA_MODEL_DIR = os.environ.get("UMBRA_MODEL_DIR", str(VAR_DIR / "models"))
os.environ.setdefault("UMBRA_MODEL_DIR", UMBRA_MODEL_DIR)
# Run checkpoints (run-<id>/ each); on a multi-node cluster, storage every node mounts here.
# Run ids are per database: another installation in the same folder (a second demo of one
# checkout) gets a folder of its own, or its run 2 would resume the first's run 2.
UMBRA_CHECKPOINT_DIR = os.environ.get("UMBRA_CHECKPOINT_DIR", str(
    VAR_DIR / "checkpoints" if UMBRA_INSTALLATION == "umbra" else VAR_DIR / "checkpoints" / UMBRA_INSTALLATION))
# Folders whose files runs may name as `dataset` / `model` (besides uploads and UMBRA_MODEL_DIR).
UMBRA_DATA_DIRS = [d for d in os.environ.get("UMBRA_DATA_DIRS", "").split(os.pathsep) if d]
UMBRA_MODEL_DIRS = [d for d in os.environ.get("UMBRA_MODEL_DIRS", "").split(os.pathsep) if d]
# Folders whose files runs may name as a custom `reward` (file.py:function); none = built-ins only.
UMBRA_REWARD_DIRS = [d for d in os.environ.get("UMBRA_REWARD_DIRS", "").split(os.pathsep) if d]
# Lifetime of a run's ingestion token (seconds from dispatch); it also dies with its run.
UMBRA_INGEST_TOKEN_TTL_S = int(os.environ.get("UMBRA_INGEST_TOKEN_TTL_S", str(7 * 24 * 3600)))
if UMBRA_INGEST_TOKEN_TTL_S <= 0:
    raise RuntimeError("UMBRA_INGEST_TOKEN_TTL_S must be a positive number of seconds")
# Seconds between two polls of a Ray job's status by the follow task.
UMBRA_FOLLOW_INTERVAL_S = float(os.environ.get("UMBRA_FOLLOW_INTERVAL_S", "2"))
# How long the Ray cluster may fail to answer about a run's job before the run is marked failed.
UMBRA_FOLLOW_GRACE_S = float(os.environ.get("UMBRA_FOLLOW_GRACE_S", "30"))


def _count_setting(name: str, default: int) -> int:
    """A whole number >= 0 from the environment; anything else stops the start with its name."""
    raw = os.environ.get(name, str(default))
    if not re.fullmatch(r"[0-9]+", raw.strip()):  # (not isdigit: it takes "²")
        raise RuntimeError(f"{name} must be a whole number >= 0, not {raw!r}")
    return int(raw)


# The run queue (runs.queue): a run is dispatched when its cluster can hold it. Per team:
# at most UMBRA_TEAM_MAX_QUEUED runs waiting (more submissions are refused, HTTP 429) and
# UMBRA_TEAM_MAX_RUNNING dispatched at once (the others wait). Per user: at most
# UMBRA_USER_MAX_SUBMISSIONS submissions in UMBRA_USER_SUBMISSION_WINDOW_S seconds (429).
# 0 for a limit = no limit. Documented in README.md (Settings) and docs/api.md.
UMBRA_TEAM_MAX_QUEUED = _count_setting("UMBRA_TEAM_MAX_QUEUED", 20)
UMBRA_TEAM_MAX_RUNNING = _count_setting("UMBRA_TEAM_MAX_RUNNING", 4)
UMBRA_USER_MAX_SUBMISSIONS = _count_setting("UMBRA_USER_MAX_SUBMISSIONS", 30)
UMBRA_USER_SUBMISSION_WINDOW_S = _count_setting("UMBRA_USER_SUBMISSION_WINDOW_S", 600)
# Seconds between two looks at the clusters while runs wait (besides the looks when a run
# is submitted, ends or is cancelled).
UMBRA_QUEUE_RETRY_S = _count_setting("UMBRA_QUEUE_RETRY_S", 10) or 1

MEDIA_ROOT = VAR_DIR / "media"
DATASET_UPLOAD_MAX_BYTES = 20 * 1024 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = 8 * 1024 * 1024  # metric batches above this are refused with 400
STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "platform" / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"
STATIC_ROOT.mkdir(exist_ok=True)
# Serve platform/static straight from the finders: no collectstatic step needed to run.
WHITENOISE_USE_FINDERS = True
STORAGES = {"staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
            "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"}}

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["rest_framework.authentication.TokenAuthentication",
                                       "rest_framework.authentication.SessionAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "api.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "api.schema.ApiAutoSchema",
    # JSON in and out (docs/api.md); people read the API at /api/docs/ (Swagger UI).
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["api.parsers.BoundedJSONParser"],
    "EXCEPTION_HANDLER": "api.exceptions.api_exception_handler",
    # Client addresses (login throttling) come from the socket, never from X-Forwarded-For,
    # unless the operator says how many proxies sit in front.
    "NUM_PROXIES": int(os.environ.get("UMBRA_NUM_PROXIES", "0")),
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Umbra API",
    "DESCRIPTION": "Runs, experiments, metrics and comparisons of Umbra (docs/api.md).",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "COMPONENT_SPLIT_REQUEST": True,
    "SWAGGER_UI_DIST": "SIDECAR",  # Swagger UI from drf-spectacular-sidecar's static files
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # The Ray job's ingestion (POST /api/runs/{id}/metrics/) signs in with its run's token.
    "APPEND_COMPONENTS": {"securitySchemes": {"ingestToken": {
        "type": "http", "scheme": "bearer",
        "description": "The run's ingestion token, given to its Ray job at dispatch (not a user's token)"}}},
}

LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"
AUTH_PASSWORD_VALIDATORS = [{"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"}]
USE_TZ = True
TIME_ZONE = "UTC"
LOGGING = {"version": 1, "disable_existing_loggers": False,
           "handlers": {"console": {"class": "logging.StreamHandler"}},
           "root": {"handlers": ["console"], "level": os.environ.get("UMBRA_LOG_LEVEL", "INFO")}}
