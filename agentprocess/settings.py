"""Settings, all read from the environment (django-environ); see README "Configuration"."""

import os
import secrets
from pathlib import Path
from urllib.parse import urlsplit

import environ
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = BASE_DIR / "var"

env = environ.Env()

DEBUG = env.bool("DEBUG", default=False)
# Absolute base URL used in links that leave a request (emails, signed file URLs in MCP results).
PUBLIC_BASE_URL = env.str("PUBLIC_BASE_URL", default="http://127.0.0.1:8000").rstrip("/")
# Unset, file URLs in run data use the origin each request came to (kernel/origin.py).
PUBLIC_BASE_URL_CONFIGURED = "PUBLIC_BASE_URL" in os.environ
_public = urlsplit(PUBLIC_BASE_URL)
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")
# Served to this machine only (the embedded default of ./dev run, the tests): the one case where
# a key may be generated here and loopback hosts are allowed.
EMBEDDED = _public.hostname in LOOPBACK_HOSTS
HTTPS = _public.scheme == "https"

# --- secrets and hosts: no insecure default reaches a deployment (README "Security settings") ---
# Keys Django's deploy check calls weak (shorter than 50, fewer than 5 distinct characters, the
# django-insecure- prefix), and the development key this project once shipped.
_SHIPPED_KEYS = {"dev-only-insecure-key-change-me-0123456789abcdef"}


def _weak(key: str) -> bool:
    return key in _SHIPPED_KEYS or len(key) < 50 or len(set(key)) < 5 or key.startswith("django-insecure-")


def _kept_secret_key(path: Path) -> str:
    """A random key made once for this machine and kept in var/ (never committed): sessions and
    lease tokens survive restarts of ./dev run. Made atomically, so concurrent starts agree."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        draft = path.with_name(f".{path.name}.{os.getpid()}")
        draft.write_text(secrets.token_urlsafe(64))
        draft.chmod(0o600)
        try:
            os.link(draft, path)  # fails if another process made it first; theirs wins
        except FileExistsError:
            pass
        finally:
            draft.unlink()
    return path.read_text().strip()


def _secret_key() -> str:
    key = env.str("SECRET_KEY", default="")
    if not key and (EMBEDDED or DEBUG):
        return _kept_secret_key(VAR_DIR / "secret_key")
    if not key:
        raise ImproperlyConfigured(
            f"SECRET_KEY is not set. A server published at {PUBLIC_BASE_URL} needs its own key, the same on every "
            "host: export SECRET_KEY=\"$(python -c 'import secrets; print(secrets.token_urlsafe(64))')\"")
    if _weak(key) and not (EMBEDDED or DEBUG):
        raise ImproperlyConfigured(
            "SECRET_KEY is too weak for a deployment (at least 50 characters, not a shipped example); "
            "generate one with: python -c 'import secrets; print(secrets.token_urlsafe(64))'")
    return key


SECRET_KEY = _secret_key()
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=[_public.hostname, *(LOOPBACK_HOSTS if EMBEDDED else ())])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[f"{_public.scheme}://{_public.netloc}"])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI served from our own static files (no CDN)
    "oauth2_provider",  # OAuth 2.1 authorization server (issue 7; kernel/oauth.py, api/oauth.py)
    "kernel",  # app label "agentprocess" (kernel/apps.py)
    "processes",
    "runs",
    "workqueue",
    "insight",  # process insight: dashboards, the heatmap, alerts (issue 27)
    "filestore",  # FILE_STORAGE=database: files' bytes in the database
    "webhooks",  # signed webhooks to other systems (issue 28)
    "sso",  # people sign in with the organization's identity provider (issue 25; README "Sign-in for people")
]

MIDDLEWARE = [
    # /healthz, /readyz, /metrics: before the https redirect, the host check and sessions, which a
    # load balancer or Prometheus calling the web host by its address could not pass (api/health.py).
    "api.health.HealthMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",  # the pages' language: a catalogue under locale/ adds one
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "workqueue.middleware.PersonTimeZone",  # times in the person's zone (their choice, else the browser's)
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "kernel.origin.OriginMiddleware",
]

# HTTPS deployments (PUBLIC_BASE_URL https://…) behind a proxy that terminates TLS and sends
# X-Forwarded-Proto: secure cookies, HSTS, and plain-http requests redirected.
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if HTTPS else None
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=HTTPS)
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = HTTPS
SESSION_COOKIE_HTTPONLY = CSRF_COOKIE_HTTPONLY = True  # no script reads either (forms carry the token)
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=31_536_000 if HTTPS else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=HTTPS)
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=HTTPS)
# Every page: scripts and style sheets from this server only (inline only with the request's
# nonce), no plugins, no framing, no foreign <base>. Images: this server and data: URIs (the
# maps are inline SVG; Swagger UI draws icons from data: URIs).
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF, CSP.NONCE],
    "style-src": [CSP.SELF, CSP.NONCE],
    "img-src": [CSP.SELF, "data:"],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
}

ROOT_URLCONF = "agentprocess.urls"
WSGI_APPLICATION = "agentprocess.wsgi.application"
ASGI_APPLICATION = "agentprocess.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "django.template.context_processors.csp",
                "workqueue.context.navigation",  # the Operators link on every page, error pages too
            ],
        },
    },
]

# Database: SQLite file by default; DATABASE_URL (e.g. postgres://user@host:5432/db) for PostgreSQL.
DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}")}
_db = DATABASES["default"]
if _db["ENGINE"] == "django.db.backends.sqlite3":
    # IMMEDIATE: every transaction takes the write lock at BEGIN, so concurrent writers
    # serialize instead of failing with "database is locked" on upgrade (lost updates).
    _db.setdefault("OPTIONS", {}).update(
        {
            "transaction_mode": "IMMEDIATE",
            "timeout": 30,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    )
    # A file, not memory, so a real server process started by a test can open it; one per test
    # process, so concurrent test runs never share it.
    _db.setdefault("TEST", {})["NAME"] = str(VAR_DIR / f"test-db-{os.getpid()}.sqlite3")
elif _db["ENGINE"].startswith("django.db.backends.postgresql"):
    # A connection pool (psycopg_pool): opening a connection per request halved throughput, and
    # persistent connections (CONN_MAX_AGE) leak under ASGI, where requests run on varying threads.
    _db["CONN_MAX_AGE"] = 0
    if env.bool("DB_POOL", default=True):
        _db.setdefault("OPTIONS", {})["pool"] = {"min_size": 1, "max_size": env.int("DB_POOL_SIZE", default=8),
                                                 "timeout": env.float("DB_POOL_TIMEOUT", default=10.0)}
        # Django then gives the pool psycopg_pool's `check`: a connection is tested as it leaves the
        # pool, so after PostgreSQL restarts the broken ones are replaced instead of failing the
        # requests that would have drawn them.
        _db["CONN_HEALTH_CHECKS"] = True
    # Server-side binding with psycopg's prepared statements (a statement text run 5 times on a
    # connection is prepared there): PostgreSQL then skips parsing and planning the hot path's
    # statements, about half its CPU per agent cycle (bench/cycle_cost.py). Off behind a pooler
    # that cannot keep them (PgBouncer in transaction mode before max_prepared_statements).
    if env.bool("DB_PREPARED_STATEMENTS", default=True):
        _db.setdefault("OPTIONS", {}).update({"server_side_binding": True, "prepare_threshold": 5})


def _migration_database(url: str) -> dict:
    """MIGRATION_DATABASE_URL: the role that owns the schema, on the same database as DATABASE_URL.
    Only `manage.py migrate` connects with it (the `migration` alias, kernel/db_roles.py); the web,
    Celery and every other command stay on DATABASE_URL's role, which owns nothing."""
    owner = env.db_url_config(url)
    if not (_db["ENGINE"] == owner["ENGINE"] == "django.db.backends.postgresql"):
        raise ImproperlyConfigured("MIGRATION_DATABASE_URL is for PostgreSQL (postgres://owner:…@host:5432/db), "
                                   "with DATABASE_URL on the same database")
    if [owner[key] for key in ("HOST", "PORT", "NAME")] != [_db[key] for key in ("HOST", "PORT", "NAME")]:
        raise ImproperlyConfigured("MIGRATION_DATABASE_URL must name the same host, port and database as "
                                   "DATABASE_URL; only its role differs")
    if not _db["USER"] or not owner["USER"] or _db["USER"] == owner["USER"]:
        raise ImproperlyConfigured("DATABASE_URL and MIGRATION_DATABASE_URL must each name a role, two different "
                                   "ones: the app's, which owns nothing, and the schema's owner")
    # A test run creates no second test database for it: the alias is then the default's.
    owner["TEST"] = {"MIRROR": "default"}
    return owner


if MIGRATION_DATABASE_URL := env.str("MIGRATION_DATABASE_URL", default=""):
    DATABASES["migration"] = _migration_database(MIGRATION_DATABASE_URL)  # kernel.db_roles.MIGRATION_ALIAS

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

PASSWORD_HASHERS = [
    "django.contrib.auth.hashers.PBKDF2PasswordHasher",
    "django.contrib.auth.hashers.PBKDF2SHA1PasswordHasher",
    "django.contrib.auth.hashers.Argon2PasswordHasher",
    "django.contrib.auth.hashers.BCryptSHA256PasswordHasher",
    "django.contrib.auth.hashers.ScryptPasswordHasher",
    "kernel.hashers.ClientSecretHasher",  # OAuth client secrets only (see the module)
]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 8}},
]

LANGUAGE_CODE = "en-us"
# The pages' strings are marked for translation ({% translate %}, gettext): a language is a
# catalogue under locale/<code>/LC_MESSAGES/django.po (compiled with compilemessages) plus its
# entry here. Numbers and dates are formatted for the active language.
LANGUAGES = [("en", "English")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
WHITENOISE_USE_FINDERS = True  # serve app static files without collectstatic in development
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
    "agentprocess.staticfinders.PdfjsFinder",  # /static/pdfjs/: PDF.js from node_modules (`npm ci`)
]


def _static_headers(headers, path, url):
    """The evidence viewer runs in a sandboxed frame (an opaque origin): the modules it loads from
    here (PDF.js and its own) must allow any origin to read them. They are public files. (WhiteNoise
    allows every origin by default; this keeps them readable if WHITENOISE_ALLOW_ALL_ORIGINS is
    turned off, and the browser tests' live server applies the same function.)"""
    if url.startswith(f"/{STATIC_URL}pdfjs/") or url.startswith(f"/{STATIC_URL}workqueue/pdf-viewer"):
        headers["Access-Control-Allow-Origin"] = "*"


WHITENOISE_ADD_HEADERS_FUNCTION = _static_headers
MEDIA_ROOT = env.path("MEDIA_ROOT", default=str(VAR_DIR / "uploads"))

# --- where uploaded files' bytes live: FILE_STORAGE names one of FILE_STORAGES (README "Files on several hosts")
# Uploads are stored under their SHA-256 (runs.models.upload_path): a name holds one content, so
# every backend overwrites rather than inventing a second name.
FILE_STORAGE = env.str("FILE_STORAGE", default="local")
S3_BUCKET = env.str("S3_BUCKET", default="")
# Downloads redirect to a presigned URL of the bucket instead of passing through the server.
S3_PRESIGNED_URLS = env.bool("S3_PRESIGNED_URLS", default=False)


def s3_storage(environment) -> dict:
    """django-storages' S3 backend from S3_* variables (a mapping: os.environ here, a test's own
    values for its moto server): AWS S3 or any S3-compatible store (MinIO, Ceph, GCS interop).
    Credentials left unset come from boto3's own chain (AWS_* variables, an instance role)."""
    # Signature version 4: what every AWS region and S3-compatible store accepts (presigned URLs too).
    options = {"bucket_name": environment.get("S3_BUCKET", ""), "file_overwrite": True, "default_acl": None,
               "querystring_auth": True, "signature_version": "s3v4"}
    for option, variable in (("endpoint_url", "S3_ENDPOINT_URL"), ("region_name", "S3_REGION"),
                             ("access_key", "S3_ACCESS_KEY_ID"), ("secret_key", "S3_SECRET_ACCESS_KEY"),
                             ("addressing_style", "S3_ADDRESSING_STYLE")):
        if value := environment.get(variable, ""):
            options[option] = value
    return {"BACKEND": "storages.backends.s3.S3Storage", "OPTIONS": options}


FILE_STORAGES = {
    "local": {"BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"allow_overwrite": True}},
    "database": {"BACKEND": "filestore.storage.DatabaseStorage"},
    **({"s3": s3_storage(os.environ)} if S3_BUCKET else {}),
}
if FILE_STORAGE not in ("local", "database", "s3"):
    raise ImproperlyConfigured(f"FILE_STORAGE={FILE_STORAGE!r}: use local, database or s3")
if FILE_STORAGE not in FILE_STORAGES:
    raise ImproperlyConfigured("FILE_STORAGE=s3 needs S3_BUCKET (and S3_ENDPOINT_URL for a store other than AWS)")
if S3_PRESIGNED_URLS and FILE_STORAGE != "s3":
    raise ImproperlyConfigured("S3_PRESIGNED_URLS is for FILE_STORAGE=s3")
STORAGES = {
    "default": FILE_STORAGES[FILE_STORAGE],
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

LOGIN_URL = "/accounts/login/"
# --- sign-in for people (issue 25; README "Sign-in for people") ----------------------------------
# Passwords kept here: off, the login page shows only the identity providers' buttons, the reset
# pages answer 404 and a password POST is refused; only BREAK_GLASS_ACCOUNTS (usernames of
# createsuperuser accounts) may still sign in with a password, at /admin/login/, each use audited.
PASSWORD_LOGIN = env.bool("PASSWORD_LOGIN", default=True)
BREAK_GLASS_ACCOUNTS = env.list("BREAK_GLASS_ACCOUNTS", default=[])
# OpenID Connect (sso/providers.py reads these): one provider from OIDC_ISSUER (discovery at
# <issuer>/.well-known/openid-configuration) into the default organization, or several from
# OIDC_PROVIDERS, a JSON list of {"name", "slug", "issuer", "client_id", "client_secret", "scopes",
# "organization", and any of the settings below in lower case without OIDC_}.
OIDC_ISSUER = env.str("OIDC_ISSUER", default="").rstrip("/")
OIDC_CLIENT_ID = env.str("OIDC_CLIENT_ID", default="")
OIDC_CLIENT_SECRET = env.str("OIDC_CLIENT_SECRET", default="")
OIDC_SCOPES = env.str("OIDC_SCOPES", default="openid email profile")
OIDC_NAME = env.str("OIDC_NAME", default="single sign-on")
OIDC_PROVIDERS = env.json("OIDC_PROVIDERS", default=[])
# A person seen for the first time is created (else refused until an admin adds them).
OIDC_CREATE_USERS = env.bool("OIDC_CREATE_USERS", default=False)
# An existing account is linked by its email address only when the provider marks the address
# verified (email_verified) and this is on; otherwise only the stored `sub` matches.
OIDC_LINK_VERIFIED_EMAIL = env.bool("OIDC_LINK_VERIFIED_EMAIL", default=False)
OIDC_GROUPS_CLAIM = env.str("OIDC_GROUPS_CLAIM", default="groups")
# idp-group=our-group,…; unset, a provider group gives the group of the same name here.
OIDC_GROUP_MAP = env.str("OIDC_GROUP_MAP", default="")
# Members of this provider group are the organization's operators; unset, admins decide.
OIDC_OPERATOR_GROUP = env.str("OIDC_OPERATOR_GROUP", default="")
# manage.py deactivate_leavers: people a provider signed in who have not signed in for this many
# days are deactivated (0: only with --days).
OIDC_DEACTIVATE_AFTER_DAYS = env.float("OIDC_DEACTIVATE_AFTER_DAYS", default=0.0)
# Calls to the provider (discovery, keys, token) give up after this many seconds.
OIDC_TIMEOUT = env.float("OIDC_TIMEOUT", default=10.0)
# SCIM 2.0 provisioning at /scim/v2/ (issue 25; sso/scim/, rules in sso/provisioning.py): django-scim2,
# with our adapters, a bearer token per provider (`manage.py scim_token <provider>`) and every
# call narrowed to the provider's organization. Read once at start-up by django-scim2.
SCIM_SERVICE_PROVIDER = {
    "NETLOC": _public.netloc,
    "BASE_LOCATION_GETTER": "sso.scim.adapters.base_location",
    "USER_ADAPTER": "sso.scim.adapters.ScimUser",
    "GROUP_ADAPTER": "sso.scim.adapters.ScimGroup",
    "USER_FILTER_PARSER": "sso.scim.filters.UserFilter",
    "GROUP_FILTER_PARSER": "sso.scim.filters.GroupFilter",
    "SERVICE_PROVIDER_CONFIG_MODEL": "sso.scim.adapters.ServiceProviderConfig",
    "SCHEMAS_GETTER": "sso.scim.filters.schemas",
    "AUTH_CHECK_MIDDLEWARE": "sso.scim.auth.BearerCheck",
    "GET_EXTRA_MODEL_FILTER_KWARGS_GETTER": "sso.scim.auth.filter_kwargs_getter",
    "AUTHENTICATION_SCHEMES": [{"type": "oauthbearertoken", "name": "Bearer token",
                                "description": "The token `manage.py scim_token <provider>` printed", "primary": True}],
}
# Django's, with the email address read without case (people's addresses are stored lower-cased);
# sso's signs in people their identity provider vouched for (it never checks a password).
AUTHENTICATION_BACKENDS = ["workqueue.accounts.EmailBackend", "sso.backends.ProviderBackend"]
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

# --- agentprocess protocol ------------------------------------------------------------
LEASE_SECONDS = env.int("LEASE_SECONDS", default=600)
# get_work hands the first steps it lists to the calling agent for this long: other agents' get_work
# leaves them out meanwhile, so agents polling together do not all race for the same oldest steps
# (issue 23). 0 turns it off. Advisory: any agent may still claim any ready step.
GET_WORK_HANDOUT_SECONDS = env.float("GET_WORK_HANDOUT_SECONDS", default=2.0)
RUN_DATA_BYTES = env.int("RUN_DATA_BYTES", default=1024 * 1024)
MAX_UPLOAD_BYTES = env.int("MAX_UPLOAD_BYTES", default=10 * 1024 * 1024)
# Signed file URLs in run data live this long.
FILE_URL_SECONDS = env.int("FILE_URL_SECONDS", default=3600)
# setup_demo (./dev run) keeps the demo tokens it printed here, to print the same ones at the next start.
DEMO_TOKENS_FILE = VAR_DIR / "demo-tokens.json"
# Tools switched off on this server; publishing refuses processes that need them (spec §4.2).
DISABLED_TOOLS = env.list("DISABLED_TOOLS", default=[])
# MCP: answer a plain 2026-07-28 tools/call without the SDK's per-request dispatch (api/mcp.py);
# off sends every request through the SDK.
MCP_DIRECT_TOOL_CALLS = env.bool("MCP_DIRECT_TOOL_CALLS", default=True)
# Profiles switched off; publishing refuses processes using them (spec §8).
DISABLED_PROFILES = env.list("DISABLED_PROFILES", default=[])
# A base64 upload of MAX_UPLOAD_BYTES plus the JSON around it must fit in one request body.
DATA_UPLOAD_MAX_MEMORY_SIZE = MAX_UPLOAD_BYTES * 4 // 3 + 64 * 1024
# Large REST bodies (more than one read) buffered at once per worker; others wait (api/rest_asgi.py).
REST_BODY_BUFFERS = env.int("REST_BODY_BUFFERS", default=8)
# list_runs: at most this many input fields to filter on (each is one condition of one query).
LIST_RUNS_INPUT_FILTERS = env.int("LIST_RUNS_INPUT_FILTERS", default=16)

# --- email -------------------------------------------------------------------------------
vars().update(env.email_url("EMAIL_URL", default="consolemail://"))
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="agentprocess@localhost")
# A worker that takes a notice to send holds it this long; if it dies meanwhile, another sends it.
NOTICE_SEND_LEASE_SECONDS = env.int("NOTICE_SEND_LEASE_SECONDS", default=300)
# A person's "summary mail" notices go together once per this many minutes (runs/services/notifications.py).
NOTICE_DIGEST_MINUTES = env.float("NOTICE_DIGEST_MINUTES", default=60.0)

# --- Webhooks (issue 28; webhooks/) ------------------------------------------------------
# Receivers on private networks and loopback (on-premises, tests); link-local never.
WEBHOOK_ALLOW_PRIVATE = env.bool("WEBHOOK_ALLOW_PRIVATE", default=False)
WEBHOOK_TIMEOUT_SECONDS = env.float("WEBHOOK_TIMEOUT_SECONDS", default=10.0)
# A delivery that fails is retried (exponential pauses with jitter) this long, then given up and
# its subscription paused, the operators told.
WEBHOOK_RETRY_HOURS = env.float("WEBHOOK_RETRY_HOURS", default=24.0)
WEBHOOK_CONCURRENCY_PER_URL = env.int("WEBHOOK_CONCURRENCY_PER_URL", default=4)
# After a secret is rotated the old one keeps signing (both signatures sent) this long.
WEBHOOK_SECRET_GRACE_HOURS = env.float("WEBHOOK_SECRET_GRACE_HOURS", default=24.0)
# A worker that takes a delivery holds it this long; if it dies meanwhile, another sends it again.
WEBHOOK_SEND_LEASE_SECONDS = env.int("WEBHOOK_SEND_LEASE_SECONDS", default=120)
# Deliveries done (delivered or given up) and their attempts are kept this many days.
WEBHOOK_LOG_DAYS = env.int("WEBHOOK_LOG_DAYS", default=30)
WEBHOOK_INTERVAL_SECONDS = env.float("WEBHOOK_INTERVAL_SECONDS", default=5.0)

# --- Celery and the cache ----------------------------------------------------------------
REDIS_URL = env.str("REDIS_URL", default="")
# The cache holds the sign-in and token throttles (kernel/throttle.py): shared by every worker and
# host through Redis (CACHE_URL, default REDIS_URL); `locmem` keeps it in process memory, the
# embedded default (and the test suite's, so tests never share counters).
CACHE_URL = env.str("CACHE_URL", default=REDIS_URL or "locmem")
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"} if CACHE_URL == "locmem"
          else {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": CACHE_URL,
                "KEY_PREFIX": "agentprocess"}}
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default=REDIS_URL or "filesystem://")
CELERY_BROKER_TRANSPORT_OPTIONS = (
    {
        "data_folder_in": str(VAR_DIR / "broker"),
        "data_folder_out": str(VAR_DIR / "broker"),
        "processed_folder": str(VAR_DIR / "broker-processed"),
        # Where kombu keeps its exchange table; its default is ./control in the working directory.
        "control_folder": str(VAR_DIR / "broker-control"),
        "store_processed": False,
    }
    if CELERY_BROKER_URL.startswith("filesystem://")
    else {}
)
CELERY_TASK_IGNORE_RESULT = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
SWEEP_INTERVAL_SECONDS = env.float("SWEEP_INTERVAL_SECONDS", default=15.0)
CELERY_BEAT_SCHEDULE = {
    # A sweep not started within one interval is dropped: the next one does the same work.
    "sweep": {"task": "runs.tasks.sweep", "schedule": SWEEP_INTERVAL_SECONDS,
              "options": {"expires": SWEEP_INTERVAL_SECONDS}},
    # Walks the upload storage, so hourly: an orphan is only removed once an hour old anyway.
    "webhooks": {"task": "webhooks.tasks.deliver", "schedule": WEBHOOK_INTERVAL_SECONDS,
                 "options": {"expires": WEBHOOK_INTERVAL_SECONDS}},
    "webhooks-log": {"task": "webhooks.tasks.forget_old", "schedule": 3600, "options": {"expires": 3600}},
    "sweep-orphan-files": {"task": "runs.tasks.sweep_orphan_files", "schedule": 3600, "options": {"expires": 3600}},
}
# Process insight's alert rules (issue 27): evaluated once a minute by default; each evaluation
# reads the rule's figures in a few aggregate statements.
ALERT_SWEEP_SECONDS = env.float("ALERT_SWEEP_SECONDS", default=60.0)
CELERY_BEAT_SCHEDULE["sweep-alerts"] = {"task": "insight.tasks.sweep_alerts", "schedule": ALERT_SWEEP_SECONDS,
                                        "options": {"expires": ALERT_SWEEP_SECONDS}}

# --- check-1 evaluator (OpenAI-compatible chat completions); unset = no check profile ----
CHECK_EVALUATOR_URL = env.str("CHECK_EVALUATOR_URL", default="")
CHECK_EVALUATOR_MODEL = env.str("CHECK_EVALUATOR_MODEL", default="")
CHECK_EVALUATOR_API_KEY = env.str("CHECK_EVALUATOR_API_KEY", default="")
CHECK_EVALUATOR_TIMEOUT = env.float("CHECK_EVALUATOR_TIMEOUT", default=30.0)
# describe.limits of check-1 §5.
CHECK_PASS = env.float("CHECK_PASS", default=0.9)
CHECK_FAIL = env.float("CHECK_FAIL", default=None)
CHECK_CONFIDENCE = env.float("CHECK_CONFIDENCE", default=0.8)
CHECK_STATE_BYTES = env.int("CHECK_STATE_BYTES", default=64 * 1024)

# --- OAuth 2.1 (issue 7): django-oauth-toolkit, wired up in kernel/oauth.py and api/oauth.py
# Authorization code + PKCE (S256 only) for people's MCP clients, client credentials for agents,
# rotating refresh tokens with replay detection; no implicit or password grant; access and refresh
# tokens stored only as SHA-256 checksums; bearer tokens only in the Authorization header.
# The issuer is PUBLIC_BASE_URL, as in the WWW-Authenticate challenge (api/auth.py).
OAUTH2_PROVIDER = {
    "CLIENT_SECRET_HASHER": "sha256_client_secret",
    "SCOPES": {"tools": "Use the agentprocess tools (MCP and REST) as this identity"},
    "DEFAULT_SCOPES": ["tools"],
    "PKCE_REQUIRED": True,
    "ACCESS_TOKEN_EXPIRE_SECONDS": env.int("OAUTH_ACCESS_TOKEN_SECONDS", default=3600),
    "REFRESH_TOKEN_EXPIRE_SECONDS": env.int("OAUTH_REFRESH_TOKEN_SECONDS", default=30 * 24 * 3600),
    "ROTATE_REFRESH_TOKEN": True,
    "REFRESH_TOKEN_REUSE_PROTECTION": True,
    # Native MCP clients receive the code on a loopback port chosen at run time (RFC 8252 §7.3);
    # this extends that to http://localhost. http stays allowed for loopback redirect URIs.
    "ALLOW_LOCALHOST_LOOPBACK": True,
    "OIDC_ISS_ENDPOINT": PUBLIC_BASE_URL,
    "OAUTH2_SERVER_CLASS": "api.oauth.Server",  # PKCE S256 only, refused before consent
    "OAUTH2_VALIDATOR_CLASS": "api.oauth.Validator",
    # RFC 8414 discovery advertises what is accepted, nothing more.
    "OAUTH2_RESPONSE_TYPES_SUPPORTED": ["code"],
    "OAUTH2_GRANT_TYPES_SUPPORTED": ["authorization_code", "client_credentials", "refresh_token"],
    "OAUTH2_TOKEN_ENDPOINT_AUTH_METHODS_SUPPORTED": ["client_secret_basic", "client_secret_post", "none"],
    "OAUTH2_PROTECTED_RESOURCE_NAME": "agentprocess process server",
    # RFC 9700 gates (defaults flip in DOT 4.0): see ../shared/notes/stack-notes.md §2.
    "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
    "COMPLIANT_BCP_RFC9700_ACCESS_TOKEN_TRANSPORT": True,
    "COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS": True,
    "COMPLIANT_BCP_RFC9700_TOKEN_STORAGE": True,
    "COMPLIANT_BCP_RFC9700_REFRESH_TOKEN": True,
    "COMPLIANT_BCP_RFC9700_REDIRECT_URI_MATCHING": True,
    "COMPLIANT_BCP_RFC9700_PKCE_REQUIRED": True,
}
# DOT warns of any http redirect URI; RFC 9700 §2.1 itself excepts loopback redirects of native
# apps (RFC 8252 §7.3), which is how desktop MCP clients receive their code, so http stays allowed.
SILENCED_SYSTEM_CHECKS = ["oauth2_provider.W008"]
# DOT's default, named so migrations of models pointing at it (AgentApplication) can resolve it.
OAUTH2_PROVIDER_APPLICATION_MODEL = "oauth2_provider.Application"

# --- REST --------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": [],
    "UNAUTHENTICATED_USER": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "agentprocess REST API",
    "DESCRIPTION": "Every agentprocess tool (core-2) as POST /api/v1/tools/<tool>.",
    "VERSION": "core-2",
    "SERVE_INCLUDE_SCHEMA": False,
    "OAS_VERSION": "3.1.0",
    "POSTPROCESSING_HOOKS": ["api.openapi.expand_tool_paths"],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# --- health, metrics and logs (issue 22; README "Health, metrics and logs") ------------------------
def _networks(entries: list[str]) -> tuple:
    import ipaddress

    try:
        return tuple(ipaddress.ip_network(entry.strip(), strict=False) for entry in entries if entry.strip())
    except ValueError as error:
        raise ImproperlyConfigured(f"METRICS_ALLOW lists addresses or networks (127.0.0.1, 10.0.0.0/8, ::1): "
                                   f"{error}") from error


# Who may read /metrics besides a METRICS_TOKEN bearer: None is the default, loopback connected
# directly; set, exactly these addresses and networks (empty: nobody without the token).
METRICS_ALLOW = _networks(env.list("METRICS_ALLOW")) if "METRICS_ALLOW" in os.environ else None
METRICS_TOKEN = env.str("METRICS_TOKEN", default="")
if METRICS_TOKEN and len(METRICS_TOKEN) < 16:
    raise ImproperlyConfigured("METRICS_TOKEN must be at least 16 characters; generate one with: "
                               "python -c 'import secrets; print(secrets.token_urlsafe(32))'")
# prometheus-client reads it from the environment itself (kernel/metrics.py); checked here so that a
# folder that is missing or read-only stops the server at start, not every tool call's metrics.
if (_metrics_folder := os.environ.get("PROMETHEUS_MULTIPROC_DIR")) and not (
        os.path.isdir(_metrics_folder) and os.access(_metrics_folder, os.W_OK)):
    raise ImproperlyConfigured(f"PROMETHEUS_MULTIPROC_DIR is not a folder this process can write: {_metrics_folder}")
# One JSON object per line in a deployment; readable text for ./dev run (embedded) and DEBUG.
LOG_FORMAT = env.str("LOG_FORMAT", default="text" if (DEBUG or EMBEDDED) else "json")
if LOG_FORMAT not in ("json", "text"):
    raise ImproperlyConfigured(f"LOG_FORMAT is json or text, not {LOG_FORMAT!r}")
from kernel.logs import configuration as _log_configuration  # noqa: E402 - no Django import in it

LOGGING = _log_configuration(LOG_FORMAT, env.str("LOG_LEVEL", default="WARNING"))
# The Celery worker keeps these handlers and formats (its --loglevel still sets the level).
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
