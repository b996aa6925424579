"""Settings shared by every environment; all values come from ``env.py``.

Development defaults are safe and local. ``production.py`` tightens them.
"""

from __future__ import annotations

import re

from reposearch.processes import QUEUES, default_web_workers

from .env import (
    DEFAULT_PG_PORT,
    DEFAULT_REDIS_PORT,
    ConfigError,
    allowed_hosts,
    data_dir,
    database_config,
    database_url,
    reader,
    redis_url,
    replica_configs,
    secret_key,
)
from .logging_config import logging_config

env = reader()

# --- Core --------------------------------------------------------------------------------------
# Off unless asked for (DEBUG=1): Django's debug pages show settings and tracebacks.
DEBUG = env.flag("DEBUG", False)
REPO_SEARCH_DATA_DIR = data_dir(env)
# SECRET_KEY, or the random one `make up` keeps in <data>/secret-key (reposearch/data_folder.py).
SECRET_KEY = secret_key(env, REPO_SEARCH_DATA_DIR)
REPO_SEARCH_BIND_HOST, REPO_SEARCH_BIND_PORT = env.bind_addr(
    "REPO_SEARCH_BIND_ADDR", "127.0.0.1:9000"
)
ALLOWED_HOSTS = allowed_hosts(env, REPO_SEARCH_BIND_HOST)
REPO_SEARCH_BIND_ADDR = f"{REPO_SEARCH_BIND_HOST}:{REPO_SEARCH_BIND_PORT}"
CSRF_TRUSTED_ORIGINS = env.csv("CSRF_TRUSTED_ORIGINS", "")

# --- Limits (SPEC §2) --------------------------------------------------------------------------
# Defaults hold the corpus the README's latency figures come from (1 M chunks in 91 repositories).
REPO_SEARCH_MAX_REPOS = env.positive_int("REPO_SEARCH_MAX_REPOS", 500)
REPO_SEARCH_MAX_REPO_SIZE_MB = env.positive_int("REPO_SEARCH_MAX_REPO_SIZE_MB", 500)
REPO_SEARCH_CLONE_TIMEOUT_SECS = env.positive_int("REPO_SEARCH_CLONE_TIMEOUT_SECS", 300)
REPO_SEARCH_HISTORY_DEPTH = env.non_negative_int("REPO_SEARCH_HISTORY_DEPTH", 1)
REPO_SEARCH_MAX_CONCURRENT_CLONES = env.positive_int("REPO_SEARCH_MAX_CONCURRENT_CLONES", 2)
REPO_SEARCH_MAX_VECTOR_ENTRIES = env.positive_int("REPO_SEARCH_MAX_VECTOR_ENTRIES", 2_000_000)
# Term postings each search process keeps in memory between searches (0: read them every time).
REPO_SEARCH_POSTINGS_MEMORY_MB = env.non_negative_int("REPO_SEARCH_POSTINGS_MEMORY_MB", 256)
# Term postings in files every web process of this host maps (unset: <data dir>/postings; "off":
# none, each process keeps its own in REPO_SEARCH_POSTINGS_MEMORY_MB).
REPO_SEARCH_POSTINGS_DIR = env.optional("REPO_SEARCH_POSTINGS_DIR")
# Posting lists from those files each web process keeps at hand (~0.6 kB each beyond the shared
# pages): more makes a stream of different queries faster at a few MB per 10,000 lists.
REPO_SEARCH_POSTINGS_LISTS_AT_HAND = env.positive_int("REPO_SEARCH_POSTINGS_LISTS_AT_HAND", 8192)
REPO_SEARCH_MAX_FILE_BYTES = env.positive_int("REPO_SEARCH_MAX_FILE_BYTES", 1_048_576)
# The index stage reads, chunks and stores a repository this much at a time (bounded memory).
REPO_SEARCH_INDEX_BATCH_MB = env.positive_int("REPO_SEARCH_INDEX_BATCH_MB", 16)
REPO_SEARCH_INDEX_BATCH_FILES = env.positive_int("REPO_SEARCH_INDEX_BATCH_FILES", 1000)
# Markdown/reStructuredText chunked by section (heading = symbol) instead of line windows.
REPO_SEARCH_DOC_SECTIONS = env.flag("REPO_SEARCH_DOC_SECTIONS", True)
REPO_SEARCH_LEARNED_FUSION = env.flag("REPO_SEARCH_LEARNED_FUSION", True)
# The cross-encoder reorders the best 10 candidates of every hybrid search that is not a lone
# identifier (search.ranking.cross_encoder; docs/benchmarks.md); a request's "use_cross_encoder"
# overrides it.
REPO_SEARCH_CROSS_ENCODER = env.flag("REPO_SEARCH_CROSS_ENCODER", True)
# A web process loads the built-in models its searches run (embedding model, cross-encoder) at
# start, in the background, so that its first search does not wait about a second for them.
REPO_SEARCH_LOAD_MODELS_AT_START = env.flag("REPO_SEARCH_LOAD_MODELS_AT_START", True)
REPO_SEARCH_GIT_TOKEN = env.optional("REPO_SEARCH_GIT_TOKEN")
REPO_SEARCH_GIT_TOKEN_HOSTS = [host.lower() for host in env.csv("REPO_SEARCH_GIT_TOKEN_HOSTS", "")]
if REPO_SEARCH_GIT_TOKEN and not REPO_SEARCH_GIT_TOKEN_HOSTS:
    raise ConfigError(
        "REPO_SEARCH_GIT_TOKEN is set but REPO_SEARCH_GIT_TOKEN_HOSTS is empty: name the git hosts"
        " that may receive it (e.g. github.com), or any user could send it to their own server"
    )
REPO_SEARCH_ALLOW_PRIVATE_HOSTS = env.flag("REPO_SEARCH_ALLOW_PRIVATE_HOSTS", False)
REPO_SEARCH_ALLOW_LOCAL_PATHS = env.flag("REPO_SEARCH_ALLOW_LOCAL_PATHS", False)
REPO_SEARCH_JOB_STALE_SECS = env.positive_int("REPO_SEARCH_JOB_STALE_SECS", 600)
# A worker that starts looks for jobs lost with a dead worker this long after (the others answer).
REPO_SEARCH_RESUME_AFTER_START_DELAY_SECS = env.positive_int(
    "REPO_SEARCH_RESUME_AFTER_START_DELAY_SECS", 15
)
# A repository's lock in Redis lives this long unless its holder renews it (every third of it):
# the time a redelivered task waits for a vanished worker's lock.
REPO_SEARCH_LOCK_TTL_SECS = env.positive_int("REPO_SEARCH_LOCK_TTL_SECS", 90)
REPO_SEARCH_EMBED_RETRY_DELAYS_SECS = env.positive_int_list(
    "REPO_SEARCH_EMBED_RETRY_DELAYS_SECS", "30,120,300"
)
# Stage tasks (indexing.tasks.retry_budget): a fetch's transient failures back off by these; a
# busy lock (or clone slot) is retried every LOCK_RETRY_SECS, for up to LOCK_WAIT_MAX_SECS in all
# (longer than a vanished worker's lock TTL + a whole fetch), and then the job fails saying so.
REPO_SEARCH_FETCH_RETRY_DELAYS_SECS = env.positive_int_list(
    "REPO_SEARCH_FETCH_RETRY_DELAYS_SECS", "10,30,90,270"
)
REPO_SEARCH_LOCK_RETRY_SECS = env.positive_int("REPO_SEARCH_LOCK_RETRY_SECS", 15)
REPO_SEARCH_LOCK_WAIT_MAX_SECS = env.positive_int("REPO_SEARCH_LOCK_WAIT_MAX_SECS", 1800)
# The periodic drift check (manage.py doctor's findings): how often, and whether it repairs.
REPO_SEARCH_DOCTOR_INTERVAL_SECS = env.positive_int("REPO_SEARCH_DOCTOR_INTERVAL_SECS", 900)
REPO_SEARCH_DOCTOR_REPAIR = env.flag("REPO_SEARCH_DOCTOR_REPAIR", True)
# Freshness (indexing.services.polling): check each remote's tip this often (0: never) ...
REPO_SEARCH_POLL_INTERVAL_SECS = env.non_negative_int("REPO_SEARCH_POLL_INTERVAL_SECS", 600)
# ... looking for due repositories every tick, backing off up to this long on a failing remote.
REPO_SEARCH_POLL_TICK_SECS = env.positive_int("REPO_SEARCH_POLL_TICK_SECS", 30)
REPO_SEARCH_POLL_MAX_BACKOFF_SECS = env.positive_int("REPO_SEARCH_POLL_MAX_BACKOFF_SECS", 21_600)
# Push webhooks (indexing.webhooks): a signed delivery seen again within this window (its body or
# its host's delivery id) queues nothing; calls that prove nothing (unsigned, a wrong signature,
# an unknown repository) are counted per address, refused with 429 past the limit of a window,
# and audited as a count (at 1, 10, 100 ... per window), not a row each.
REPO_SEARCH_WEBHOOK_REPLAY_WINDOW_SECS = 86_400
REPO_SEARCH_WEBHOOK_REFUSALS_PER_WINDOW = 30
REPO_SEARCH_WEBHOOK_REFUSAL_WINDOW_SECS = 600
# Many branches (indexing.services.branches): branches indexed per repository, the default included.
REPO_SEARCH_MAX_BRANCHES = env.positive_int("REPO_SEARCH_MAX_BRANCHES", 10)
# Declarative repository set (indexing.repository_sets): reconciled at start and when it changes.
REPO_SEARCH_REPOS_FILE = env.optional("REPO_SEARCH_REPOS_FILE")
REPO_SEARCH_REPOS_FILE_CHECK_SECS = env.positive_int("REPO_SEARCH_REPOS_FILE_CHECK_SECS", 60)
# Bulk import (manage.py import_repos): API tokens, sent only to the host's --base-url.
REPO_SEARCH_GITHUB_TOKEN = env.optional("REPO_SEARCH_GITHUB_TOKEN")
REPO_SEARCH_GITLAB_TOKEN = env.optional("REPO_SEARCH_GITLAB_TOKEN")
REPO_SEARCH_GITEA_TOKEN = env.optional("REPO_SEARCH_GITEA_TOKEN")

# --- Accounts (accounts/) -----------------------------------------------------------------------
# Anonymous requests may read (search, ask, view) when set; writes always need an account.
REPO_SEARCH_ANONYMOUS_READ = env.flag("REPO_SEARCH_ANONYMOUS_READ", False)
# Per-account budgets (DRF rates: N/sec|min|hour|day); over them: 429 with Retry-After.
REPO_SEARCH_THROTTLE_SEARCH = env.text("REPO_SEARCH_THROTTLE_SEARCH", "240/min")
REPO_SEARCH_THROTTLE_ASK = env.text("REPO_SEARCH_THROTTLE_ASK", "30/min")
REPO_SEARCH_THROTTLE_WRITES = env.text("REPO_SEARCH_THROTTLE_WRITES", "60/min")
# Costly searches (a regex with no literal, exact totals over many files) one account (or
# anonymous address) may run at once; past them: 429 with Retry-After (search/fair_use.py).
REPO_SEARCH_COSTLY_SEARCHES_PER_USER = env.positive_int("REPO_SEARCH_COSTLY_SEARCHES_PER_USER", 2)
for _name in ("SEARCH", "ASK", "WRITES"):
    _rate = globals()[f"REPO_SEARCH_THROTTLE_{_name}"]
    if not re.fullmatch(r"[1-9][0-9]*/(s|sec|second|m|min|minute|h|hour|d|day)", _rate):
        raise ConfigError(
            f"REPO_SEARCH_THROTTLE_{_name}={_rate!r}: expected a rate such as 120/min"
        )

# --- Models (SPEC §6): reposearch/settings/language_models.py ----------------------------------
from .language_models import *  # noqa: E402, F403

# --- Processes `make up` runs -----------------------------------------------------------------
REPO_SEARCH_WEB_WORKERS = env.positive_int("REPO_SEARCH_WEB_WORKERS", default_web_workers())
REPO_SEARCH_WORKER_CONCURRENCY = env.positive_int("REPO_SEARCH_WORKER_CONCURRENCY", 2)
# A pool child whose peak memory passed this is replaced after its task: the embedding model
# (and a big repository's chunks) are held only while a task needs them, not while idle.
REPO_SEARCH_WORKER_MAX_MEMORY_MB = env.positive_int("REPO_SEARCH_WORKER_MAX_MEMORY_MB", 200)
# `make up` runs the embed queue in a worker of its own, so a new repository is cloned and
# searchable by full text while others embed; this many processes embed at once.
REPO_SEARCH_EMBED_CONCURRENCY = env.positive_int("REPO_SEARCH_EMBED_CONCURRENCY", 1)
# An embed task works this long, then queues itself again behind the other repositories'
# embedding: the embed worker's time is shared between repositories, not taken by the first.
REPO_SEARCH_EMBED_SLICE_SECS = env.positive_float("REPO_SEARCH_EMBED_SLICE_SECS", 60.0)

# --- Database and broker -----------------------------------------------------------------------
# Both default to the embedded servers of `make up` (REPO_SEARCH_PG_PORT / REPO_SEARCH_REDIS_PORT),
# so every manage.py command reaches the servers `make up` started with the same environment.
REPO_SEARCH_PG_PORT = env.port("REPO_SEARCH_PG_PORT", DEFAULT_PG_PORT)
REPO_SEARCH_REDIS_PORT = env.port("REPO_SEARCH_REDIS_PORT", DEFAULT_REDIS_PORT)
DATABASE_URL = database_url(env)
# Per process: a web process serves Django from 8 threads and runs retrieval lists on 4 more.
REPO_SEARCH_DB_POOL_SIZE = env.non_negative_int("REPO_SEARCH_DB_POOL_SIZE", 16)
DATABASES = {"default": database_config(DATABASE_URL, REPO_SEARCH_DB_POOL_SIZE)}
# Streaming replicas that searches read from once they have replayed what a search needs
# (docs/operators/replicas.md); every write and every permission check stays on the primary.
DATABASES.update(replica_configs(env))
DATABASE_ROUTERS = ["search.retrieval.db.SearchReadRouter"]
REDIS_URL = redis_url(env)

# Throttle and sign-in counters are shared by every web process through Redis; short timeouts,
# and callers carry on without them if Redis is away (accounts/throttles.py).
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": "reposearch",
        "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5},
    }
}

# --- Django ------------------------------------------------------------------------------------
INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI served from here, not a CDN
    "accounts",
    "indexing",
    "search",
    "llm",
    "frontend",
]

MIDDLEWARE = [
    # First: the client's address and scheme, from X-Forwarded-* of trusted proxies only.
    "accounts.identity.proxies.TrustedProxyMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "reposearch.security_headers.SecurityHeadersMiddleware",  # CSP etc. on every response
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    # Before CSRF reads a form body; inside CommonMiddleware so APPEND_SLASH still redirects.
    "reposearch.request_guards.RequestGuardMiddleware",
    "reposearch.request_guards.FriendlyNotFoundMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "accounts.identity.remote_user.TrustedHeaderMiddleware",  # REPO_SEARCH_REMOTE_USER_HEADER
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

# --- Sign-in (accounts/sign_in.py): the UI's page. Attempts past the free ones per (user name,
# address), per address, and per user name from new addresses wait 2, 4, 8 ... seconds
# (accounts/sign_in_throttle.py): slowed down, never locked out from the account's own address.
LOGIN_URL = "sign-in"
LOGIN_REDIRECT_URL = "/"
REPO_SEARCH_SIGN_IN_MAX_FAILURES = env.positive_int("REPO_SEARCH_SIGN_IN_MAX_FAILURES", 5)
REPO_SEARCH_SIGN_IN_MAX_ADDRESS_FAILURES = env.positive_int(
    "REPO_SEARCH_SIGN_IN_MAX_ADDRESS_FAILURES", 20
)
REPO_SEARCH_SIGN_IN_MAX_ACCOUNT_FAILURES = env.positive_int(
    "REPO_SEARCH_SIGN_IN_MAX_ACCOUNT_FAILURES", 100
)
REPO_SEARCH_SIGN_IN_WINDOW_SECS = env.positive_int("REPO_SEARCH_SIGN_IN_WINDOW_SECS", 900)
REPO_SEARCH_SIGN_IN_MAX_DELAY_SECS = env.positive_int("REPO_SEARCH_SIGN_IN_MAX_DELAY_SECS", 900)

ROOT_URLCONF = "reposearch.urls"
WSGI_APPLICATION = "reposearch.wsgi.application"
ASGI_APPLICATION = "reposearch.asgi.application"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = REPO_SEARCH_DATA_DIR / "static"
DATA_UPLOAD_MAX_MEMORY_SIZE = 1_048_576
# Bodies arrive whole on the event loop before a web thread is used (reposearch/request_bodies.py):
# within this many seconds (else 408), at most this many at once per client address (else 429),
# and over this many bytes only from a request whose token or session checks out (else 401).
REPO_SEARCH_BODY_TIMEOUT_SECS = 20.0
REPO_SEARCH_PENDING_BODIES_PER_ADDRESS = 16
REPO_SEARCH_ANONYMOUS_BODY_BYTES = 65_536

REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "reposearch.api_errors.api_exception_handler",
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    # accounts: a bearer token or the UI's session (CSRF enforced), a role per operation.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "accounts.authentication.BearerTokenAuthentication",
        "accounts.authentication.CsrfSessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["accounts.permissions.RolePermission"],
    "DEFAULT_THROTTLE_CLASSES": ["accounts.throttles.WriteRateThrottle"],
}
SPECTACULAR_SETTINGS = {
    "TITLE": "reposearch API",
    "DESCRIPTION": "Index git repositories and search them with hybrid full-text + vector search.",
    "VERSION": "0.1.0",
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_SETTINGS": {"deepLinking": True, "validatorUrl": None},  # no call to swagger.io
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # The schema and its docs page need an account, like every other part of the API.
    "SERVE_PERMISSIONS": ["accounts.permissions.RolePermission"],
    "ENUM_NAME_OVERRIDES": {  # one name per choice set (else: StatusD2dEnum, MatchEnum twice)
        "TokenScopeEnum": "accounts.models.TokenScope",
        "StageStatusEnum": ["ran", "skipped", "failed"],  # a search's and localize's stages
        "SymbolMatchEnum": ["exact", "prefix", "substring", "fuzzy"],  # search.symbols TIERS
    },
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "reposearch.api_schema.declare_common_errors",  # 400/404/413 of the request guards
    ],
}

# --- Sign-in from the team's identity provider: reposearch/settings/identity.py -----------------
from .identity import *  # noqa: E402, F403

# TrustedProxyMiddleware has put the client (from trusted proxies only) in REMOTE_ADDR: DRF's
# throttles must use it, not an X-Forwarded-For any client can write.
REST_FRAMEWORK["NUM_PROXIES"] = 0  # type: ignore[assignment]
INSTALLED_APPS.append("mozilla_django_oidc")
# All three always: a session keeps working only while the backend that made it is listed.
AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "accounts.identity.remote_user.TrustedHeaderBackend",
    "accounts.identity.oidc.GroupSyncingOIDCBackend",
]

# --- Celery (CONVENTIONS: queues by resource profile, explicit policy) ----------------------------
CELERY_BROKER_URL = REDIS_URL
# kombu's Redis transport, minus a crash when Redis goes away mid-task (reposearch/broker.py).
CELERY_BROKER_TRANSPORT = "reposearch.broker:Transport"
CELERY_RESULT_BACKEND = None  # progress lives on IndexJob rows, not in a result backend
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = False  # set per idempotent task, not globally
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SOFT_TIME_LIMIT = 3 * 3600
CELERY_TASK_TIME_LIMIT = 3 * 3600 + 300
# Longer than the longest task, or Redis redelivers a running task to a second worker.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 4 * 3600}
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_QUEUES_NAMES = QUEUES
CELERY_WORKER_CONCURRENCY = REPO_SEARCH_WORKER_CONCURRENCY
CELERY_WORKER_MAX_MEMORY_PER_CHILD = REPO_SEARCH_WORKER_MAX_MEMORY_MB * 1024  # KB
CELERY_TASK_ROUTES = {
    "indexing.tasks.git.*": {"queue": "git"},
    "indexing.tasks.index.*": {"queue": "index"},
    "indexing.tasks.embed.*": {"queue": "embed"},
}
CELERY_BEAT_SCHEDULE = {
    "reap-stale-jobs": {"task": "indexing.tasks.maintenance.reap_stale_jobs", "schedule": 60.0},
    "fill-missing-vectors": {
        "task": "indexing.tasks.maintenance.fill_missing_vectors",
        "schedule": 300.0,
    },
    "repair-drift": {
        "task": "indexing.tasks.maintenance.repair_drift",
        "schedule": float(REPO_SEARCH_DOCTOR_INTERVAL_SECS),
    },
    "poll-remotes": {
        "task": "indexing.tasks.polling.poll_due_repositories",
        "schedule": float(REPO_SEARCH_POLL_TICK_SECS),
    },
    "check-repository-file": {
        "task": "indexing.tasks.repository_file.check_repository_file",
        "schedule": float(REPO_SEARCH_REPOS_FILE_CHECK_SECS),
    },
}
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_ALWAYS_EAGER = False

LOGGING = logging_config(env.log_level("LOG_LEVEL", "INFO"))
