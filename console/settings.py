"""Settings for the AI Job Console.

One module, configured from the environment. Every value has a default that lets a
fresh clone run (`make run`) with SQLite under `var/` and the embedded local backend.
"""

from __future__ import annotations

import contextlib
import importlib.util
import ipaddress
import math
import os
import re
import secrets
import shutil
import ssl
import time
import zoneinfo
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP
from django.utils.translation import gettext_lazy as _

from jobs.log_filters import REFUSED_REQUESTS

BASE_DIR = Path(__file__).resolve().parent.parent


# A bad value stops the console at start with a message naming the variable (manage.py prints
# it without a traceback), rather than failing later, deep inside Django or on a page. An
# empty variable counts as unset (`FOO=` in a compose file or an env file).


def env(name: str, default: str = "") -> str:
    return os.getenv(name, "").strip() or default


def envbool(name: str, default: str) -> bool:
    value = env(name, default).lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ImproperlyConfigured(f"{name} is 1/true/yes/on or 0/false/no/off, not {value!r}")


# Above this, a count, size or span is a typo (a few zeros too many), and some would only fail
# later: SESSION_COOKIE_AGE=99999999999999 made every log-in a 500 (past the dates Python
# holds), LOGIN_THROTTLE_MINUTES or WORKER_STALE_SECONDS as large every failed log-in or job
# list (past what SQLite's functions take). A thousand million seconds is over 31 years.
HIGHEST = 1_000_000_000


def envint(name: str, default: int, *, low: int = 0, high: int = HIGHEST) -> int:
    value = env(name, str(default))
    try:
        number = int(value)
    except ValueError:
        number = None
    if number is None or number < low or number > high:
        raise ImproperlyConfigured(f"{name} is a whole number from {low} to {high}, not {value!r}")
    return number


def envfloat(name: str, default: float, *, positive: bool = False, unit: str = "seconds") -> float:
    """Seconds (or another `unit`); `positive`: 0 is refused too (a timeout of 0, a tick of
    0 spinning, a size of 0)."""
    value = env(name, str(default))
    try:
        number = float(value)
    except ValueError:
        number = float("nan")
    if not math.isfinite(number) or number < 0 or (positive and number == 0) or number > HIGHEST:
        limits = "more than 0" if positive else "0 or more"
        raise ImproperlyConfigured(
            f"{name} is a number of {unit} ({limits}, at most {HIGHEST}), not {value!r}"
        )
    return number


def envlist(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in env(name, default).split(",") if item.strip()]


# The files secrets are read from (NAME_FILE): the local runner hides them from jobs.
SECRET_FILES: list[Path] = []


def envsecret(name: str) -> str | None:
    """A secret from NAME, or from the file that NAME_FILE points at (mounted secrets)."""
    path = os.getenv(f"{name}_FILE")
    if path:
        SECRET_FILES.append(Path(path))
    value = os.getenv(name)
    if value:
        return value
    if path:
        try:
            secret = Path(path).read_text().strip()
        except (OSError, UnicodeDecodeError) as e:
            reason = getattr(e, "strerror", None) or str(e)
            raise ImproperlyConfigured(f"{name}_FILE={path} cannot be read: {reason}") from None
        if not secret:
            # An empty mounted secret is a deployment mistake; ignoring it would, for
            # SECRET_KEY, silently sign sessions with another key.
            raise ImproperlyConfigured(f"{name}_FILE={path} is empty")
        return secret
    return None


def envfolder(name: str, default: str, *, make: bool = False) -> Path:
    """A folder the console keeps state in: it, or the folder it would be made in, must not
    be a file (a typo such as CONSOLE_VAR_DIR=/srv/console/env/var would otherwise end in a
    traceback, or a worker failing at each restart). `make`: made here, at start.

    A relative path is taken from the checkout, as the default is: read from the folder a
    command ran in, a `manage.py` run elsewhere would have used another database (qa46)."""
    path = Path(env(name, default))
    if not path.is_absolute():
        path = Path(os.path.normpath(BASE_DIR / path))
    for folder in (path, *path.parents):
        if folder.exists():
            if not folder.is_dir():
                raise ImproperlyConfigured(
                    f"{name} is a folder to keep the console's files in, not {str(path)!r}: "
                    f"{folder} is a file"
                )
            break
    if make:
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise ImproperlyConfigured(f"{name}={path} cannot be made: {e.strerror or e}") from None
    return path


# Runtime state (SQLite database, generated secret key, job logs) lives here; git-ignored.
VAR_DIR = envfolder("CONSOLE_VAR_DIR", str(BASE_DIR / "var"), make=True)


def _secret_key() -> str:
    # Generated once and kept, so sessions survive restarts without anyone choosing a key.
    given = envsecret("SECRET_KEY")
    if given:
        return given
    key_file = VAR_DIR / "secret_key"
    try:
        fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass
    else:
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_urlsafe(50))
    # Two processes starting at once on a fresh VAR_DIR (the web server and the worker, or
    # two test processes): the one that did not make the file may find it still empty, for
    # the moment between the other's create and its write.
    for _attempt in range(100):
        if key := key_file.read_text().strip():
            return key
        time.sleep(0.05)
    raise ImproperlyConfigured(f"{key_file} is empty: delete it, and a new key is made.")


SECRET_KEY = _secret_key()
# Earlier keys, still accepted for what they signed or sealed while SECRET_KEY is rotated:
# without them a new key logs everyone out and leaves every API key's secret unopenable
# (jobs.api_keys tries these too). Comma- or line-separated; generated keys hold neither.
SECRET_KEY_FALLBACKS = [
    key.strip()
    for key in re.split(r"[,\n]", envsecret("SECRET_KEY_FALLBACKS") or "")
    if key.strip()
]
DEBUG = envbool("DEBUG", "false")
# The error page DEBUG shows hides what was typed and each frame's variables: they hold secret
# env values, registry passwords and log-in passwords (jobs.error_reports).
DEFAULT_EXCEPTION_REPORTER_FILTER = "jobs.error_reports.ConsoleExceptionReporterFilter"
ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", "127.0.0.1,localhost,[::1]")
# A value of commas only lists nothing: every request would be answered 400.
if not ALLOWED_HOSTS:
    raise ImproperlyConfigured(
        "ALLOWED_HOSTS lists the names and addresses people open the console by, "
        f"e.g. console.example.com, not {env('ALLOWED_HOSTS')!r}"
    )
# Django's own check says so only when a command runs the checks (serve does not).
# Decided: a path after the host (https://console.example.com/, pasted from the address bar,
# or .../console for a console under a path) is dropped rather than refused: Django compares
# the Origin header, which has none, so such an entry never took part, and a value that
# started the console before this check keeps starting it (and now matches).
CSRF_TRUSTED_ORIGINS = []
for _origin in envlist("CSRF_TRUSTED_ORIGINS"):
    if not (_found := re.match(r"https?://[^/?#\s]+(?=[/?#]|\Z)", _origin)):
        raise ImproperlyConfigured(
            "CSRF_TRUSTED_ORIGINS is origin,origin,... each a scheme and host such as "
            f"https://console.example.com, not {_origin!r}"
        )
    CSRF_TRUSTED_ORIGINS.append(_found.group())
# Where `manage.py serve` (`make run`) listens, and its gunicorn's processes and threads.
HOST = env("HOST", "127.0.0.1")
PORT = envint("PORT", 8000, low=1, high=65535)
WEB_WORKERS = envint("WEB_WORKERS", 2, low=1)
WEB_THREADS = envint("WEB_THREADS", 4, low=1)
# A remote job's whole-log download (AIHC, Kubernetes) holds one of those threads until its
# platform has given the whole log: all its reads and retries end within this many seconds.
LOG_DOWNLOAD_TOTAL_SECONDS = envfloat("LOG_DOWNLOAD_TOTAL_SECONDS", 60, positive=True)
# The longest a Stop selected or Delete selected (and the API's BatchStopJobs) goes on asking
# AIHC or Kubernetes: each call is bounded, but 100 jobs of a platform that does not answer
# held the page 100 times as long. Jobs not reached by then are stopped by the worker
# (Stopping) or, for a delete, kept as they are, said on the page.
BULK_ACTION_SECONDS = envfloat("BULK_ACTION_SECONDS", 20, positive=True)
# Links in mails and alerts; by default where `make run` serves (PORT, default 8000).
SITE_URL = env("SITE_URL", f"http://127.0.0.1:{PORT}").rstrip("/")
if not re.fullmatch(r"https?://[^/?#\s]+(/[^?#\s]*)?", SITE_URL):
    raise ImproperlyConfigured(
        f"SITE_URL is the address people open, e.g. https://console.example.com, not {SITE_URL!r}"
    )
# A path in SITE_URL (https://intranet.example.com/ai-console) serves the console under that
# sub-path of a site shared with other apps, behind a proxy that strips it before passing a
# request on (README "Under a sub-path"): every address the console writes (links, redirects,
# htmx requests, static files) starts with it, and its cookies are sent to it only, so another
# Django app on the same host keeps its own `sessionid` and `csrftoken`. One setting, not two
# that could disagree: links in mails are SITE_URL's host and these addresses (qa50).
SITE_PATH = SITE_URL.split("://", 1)[1].partition("/")[2].rstrip("/")
if SITE_PATH:
    SITE_PATH = "/" + SITE_PATH
    FORCE_SCRIPT_NAME = SITE_PATH
    SESSION_COOKIE_PATH = CSRF_COOKIE_PATH = LANGUAGE_COOKIE_PATH = SITE_PATH

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django_htmx",
    "crispy_forms",
    "crispy_bootstrap5",
    "console.apps.TasksConfig",  # django_tasks_db, with a translated name
    "jobs",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Django's, answering 503 when the session cannot be saved for a busy or full database.
    "jobs.http.SessionMiddleware",
    # Django's, with English for a browser naming only languages the console lacks.
    "jobs.http.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # The cookie a browser that logged in gets, which the login throttle reads (jobs.throttle).
    "jobs.throttle.KnownLoginMiddleware",
    # Times in the user's own zone (jobs.time_zones), kept in their session.
    "jobs.time_zones.UserTimeZoneMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "jobs.http.HtmxLoginEndedMiddleware",
    "jobs.http.DatabaseUnreachableMiddleware",
]

ROOT_URLCONF = "console.urls"
WSGI_APPLICATION = "console.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.template.context_processors.csp",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]
# Every form's fields name their error before their help text (aria-describedby).
FORM_RENDERER = "jobs.form_rendering.ConsoleFormRenderer"

try:
    DATABASES = {
        "default": dj_database_url.parse(
            env("DATABASE_URL", f"sqlite:///{VAR_DIR / 'console.sqlite3'}"),
            # Keeping connections open saves connecting (and SQLite's PRAGMAs) on every request:
            # 0.5-1 ms of a 5 ms partial (bench/bench_wizard.py). The health check replaces a
            # connection the database dropped before a request uses it. 0 closes after each.
            conn_max_age=envint("DATABASE_CONN_MAX_AGE", 600),
            conn_health_checks=True,
        )
    }
except ValueError as e:  # the message names the scheme only, never the password
    raise ImproperlyConfigured(f"DATABASE_URL: {e}") from None


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # ValueError: a module set to None in sys.modules
        return False


if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql" and not any(
    _importable(driver) for driver in ("psycopg", "psycopg2")
):
    # Else Django's "Error loading psycopg2 or psycopg module", with a traceback, at the first
    # command.
    raise ImproperlyConfigured(
        "DATABASE_URL names PostgreSQL, whose driver is not installed: "
        ".venv/bin/pip install -e '.[postgres]' (make .venv/.installed-postgres)"
    )
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The web server and the worker write concurrently: WAL and a busy timeout keep
    # SQLite from answering "database is locked" under that load. synchronous=FULL syncs
    # each commit to disk (about 0.2 ms here): with NORMAL, WAL's default, a power cut could
    # take back the last commits, a job whose submit had been answered among them (QA 69).
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 20,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;",
    }
    # Tests run the web server (live_server), the worker and the test itself on separate
    # connections. SQLite's shared-cache in-memory test database answers concurrent writers
    # with "table is locked" at once instead of waiting, so tests use a file like production.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test-console.sqlite3")}


def _sqlite_private(path: Path) -> None:
    """The SQLite database readable and writable by the console's user only, as its secret key
    is: it holds the sessions (whoever reads a session key is logged in as its user), password
    hashes and sealed secrets. Made so when missing (SQLite makes its -wal and -shm files with
    the database's mode), and an older install's 0644 files are set so at the next start (its
    -wal file holds the newest writes, and outlives a console that did not close cleanly).
    Found in QA: under a checkout in /srv (0755), any account on the machine could read it."""
    try:
        if not path.exists() and path.parent.is_dir():
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        for file in (path, path.with_name(f"{path.name}-wal"), path.with_name(f"{path.name}-shm")):
            if file.exists() and file.stat().st_mode & 0o077:
                file.chmod(file.stat().st_mode & 0o700)
    except OSError:  # another user's file, a folder that does not exist: migrate says so
        pass


if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3" and DATABASES["default"][
    "NAME"
] not in ("", ":memory:"):
    _sqlite_private(Path(DATABASES["default"]["NAME"]))
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Argon2 first: a log-in checks a password in ~0.16 s instead of PBKDF2's ~0.8 s (1.5 million
# rounds) on a 2-core machine, so people logging in at once wait a fifth as long, and Argon2id
# is the memory-hard hash OWASP recommends first. Each check holds ~100 MiB for that moment.
# The rest stay so passwords stored before still log in; Django re-hashes them with Argon2 at
# that log-in.
PASSWORD_HASHERS = [
    "django.contrib.auth.hashers.Argon2PasswordHasher",
    "django.contrib.auth.hashers.PBKDF2PasswordHasher",
    "django.contrib.auth.hashers.PBKDF2SHA1PasswordHasher",
    "django.contrib.auth.hashers.BCryptSHA256PasswordHasher",
    "django.contrib.auth.hashers.ScryptPasswordHasher",
]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Django's ModelBackend, reading the request's user with one plain query (jobs.auth_backends).
AUTHENTICATION_BACKENDS = ["jobs.auth_backends.ConsoleModelBackend"]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "job-list"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = env("LANGUAGE_CODE", "zh-hans").lower()
LANGUAGES = [("zh-hans", _("Simplified Chinese")), ("en", _("English"))]
if LANGUAGE_CODE not in dict(LANGUAGES):
    raise ImproperlyConfigured(f"LANGUAGE_CODE is zh-hans or en, not {LANGUAGE_CODE!r}")
# Django reads LOCALE_PATHS' catalogues before those of the installed apps ("How Django discovers
# translations"): listed here, the console's own takes precedence over django.contrib.admin's
# and auth's (which come first in INSTALLED_APPS, so as apps they would win), and a msgid it
# translates is said its way in the admin too (jobs.django_terms: 按状态, not 以 状态).
LOCALE_PATHS = [BASE_DIR / "jobs" / "locale"]
# Date-times in the admin's lists and pages as the job list writes them, "2026-12-07 14:26" in
# either language and the reader's time zone (console/formats; qa98: three formats).
FORMAT_MODULE_PATH = ["console.formats"]
TIME_ZONE = env("TIME_ZONE", "Asia/Shanghai")
try:
    zoneinfo.ZoneInfo(TIME_ZONE)
except (zoneinfo.ZoneInfoNotFoundError, ValueError):
    raise ImproperlyConfigured(
        f"TIME_ZONE is an IANA time zone such as Asia/Shanghai or UTC, not {TIME_ZONE!r}"
    ) from None
USE_I18N = True
USE_TZ = True

# Under a sub-path, with it: Django adds the prefix to a relative STATIC_URL when first read,
# and WhiteNoise read it at start, before any request had set the prefix (qa50: every page
# linked /static/..., another app's address). WhiteNoise serves it without the prefix.
STATIC_URL = f"{SITE_PATH}/static/" if SITE_PATH else "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"
STATIC_ROOT.mkdir(exist_ok=True)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # Hashed names and gzipped copies, written by the collectstatic `manage.py serve` runs
    # (console/static_storage.py): WhiteNoise sends them compressed, cached for a year.
    "staticfiles": {"BACKEND": "console.static_storage.ConsoleStaticFilesStorage"},
}
# Before any collectstatic (the tests, a gunicorn started by hand), files are served straight
# from the app and STATICFILES_DIRS folders, so a fresh clone serves its CSS and htmx with
# DEBUG off all the same, uncompressed.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

CRISPY_ALLOWED_TEMPLATE_PACKS = "bootstrap5"
CRISPY_TEMPLATE_PACK = "bootstrap5"
CRISPY_FAIL_SILENTLY = not DEBUG

# Security baseline. Scripts only from our own origin or carrying the per-request nonce;
# htmx is configured (static/console.js) not to eval and not to inject inline styles.
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF, CSP.NONCE],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
    "form-action": [CSP.SELF],
    "base-uri": [CSP.SELF],
    "object-src": [CSP.NONE],
}
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SESSION_COOKIE_HTTPONLY = True
# No script of the console reads the CSRF cookie: htmx sends the token the page carries
# (hx-headers on <body>) and forms their hidden field. Out of scripts' reach it is out of an
# injected one's too (qa90).
CSRF_COOKIE_HTTPONLY = True
# Behind HTTPS (set HTTPS=1): secure cookies, HSTS, and trust the proxy's scheme header.
HTTPS = envbool("HTTPS", "false")
SESSION_COOKIE_SECURE = HTTPS
CSRF_COOKIE_SECURE = HTTPS
# Django's page expired, but the 503 page while the database cannot be reached (review 25).
CSRF_FAILURE_VIEW = "jobs.http.csrf_failure"
SECURE_HSTS_SECONDS = 31536000 if HTTPS else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = HTTPS
if HTTPS:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# The proxies whose X-Forwarded-For the login throttle reads (with HTTPS=1): addresses or
# networks of the connections' peers. Loopback by default, as gunicorn's forwarded_allow_ips.
TRUSTED_PROXIES = envlist("TRUSTED_PROXIES", "127.0.0.1,::1")
for _proxy in TRUSTED_PROXIES:
    try:
        ipaddress.ip_network(_proxy, strict=False)
    except ValueError:
        raise ImproperlyConfigured(
            "TRUSTED_PROXIES is address,address,... each an IP address or network of a proxy "
            f"in front of the console, such as 127.0.0.1 or 10.0.0.0/24, not {_proxy!r}"
        ) from None
# Login throttling (jobs.throttle): after this many failed log-ins within the window, further
# attempts for that username, or from that address, are refused until the window passes.
# 0 would lock every log-in out (and fail it with a server error): at least 1.
LOGIN_FAILURES_PER_USERNAME = envint("LOGIN_FAILURES_PER_USERNAME", 5, low=1)
LOGIN_FAILURES_PER_IP = envint("LOGIN_FAILURES_PER_IP", 20, low=1)
# A browser that has logged in as the account before (jobs.throttle.KNOWN_LOGIN_COOKIE) is
# held back by its own failures alone, fewer than the account's: the account's count (which
# anyone may fill) no longer stops it, so one who took the cookie gets fewer guesses.
LOGIN_FAILURES_PER_DEVICE = envint("LOGIN_FAILURES_PER_DEVICE", 3, low=1)
LOGIN_THROTTLE_MINUTES = envint("LOGIN_THROTTLE_MINUTES", 15, low=1)
# Sessions live in the database (Django's `db` engine; jobs.sessions reads a session's row with
# one plain SELECT instead of through the ORM, ~0.16 ms less on every logged-in request).
# Not `cached_db` with the per-process memory cache: a session logged out in one gunicorn
# worker would stay valid in the others' caches.
SESSION_ENGINE = "jobs.sessions"
# Sessions outlive a browser restart; drafts live in the database regardless.
SESSION_COOKIE_AGE = envint("SESSION_COOKIE_AGE", 14 * 24 * 3600, low=1)

# Email for alerts and review notices. Default: printed to the console (no SMTP needed).
# Set EMAIL_HOST to send through an SMTP server. Its port and TLS are read either way, so a
# wrong value is refused at start as every other setting is, not only once mail is turned on
# (qa32: EMAIL_PORT=abc went unnoticed until EMAIL_HOST was set, at the next restart).
_email_port = envint("EMAIL_PORT", 25, low=1, high=65535)
_email_use_tls = envbool("EMAIL_USE_TLS", "false")
# Its file too: an unreadable EMAIL_HOST_PASSWORD_FILE is refused before mail is on (qa46).
_email_password = envsecret("EMAIL_HOST_PASSWORD") or ""
# The SMTP server's timeout for each exchange, in seconds. Not a variable: the worker's bound
# on a delivery (jobs.worker.longest_delivery, after which a task left Running is queued
# again) counts with this one value (until left45 it wrote its own 10 beside this one).
MAIL_TIMEOUT_SECONDS = 10
if env("EMAIL_HOST"):
    MAILERS = {
        "default": {
            # Django's, keeping which recipients the server refused (jobs.mail).
            "BACKEND": "jobs.mail.EmailBackend",
            "OPTIONS": {
                "host": env("EMAIL_HOST"),
                "port": _email_port,
                "username": env("EMAIL_HOST_USER"),
                "password": _email_password,
                "use_tls": _email_use_tls,
                "timeout": MAIL_TIMEOUT_SECONDS,
            },
        }
    }
else:
    MAILERS = {"default": {"BACKEND": "django.core.mail.backends.console.EmailBackend"}}
DEFAULT_FROM_EMAIL = env("DEFAULT_FROM_EMAIL", "ai-job-console@localhost")


def _not_an_address(value: str) -> bool:
    # An address, bare or after a display name ("AI Job Console <console@example.com>"): any
    # other value had the SMTP server refuse every mail, one worker log line each (qa46).
    import re
    from email.utils import parseaddr

    from django.core.exceptions import ValidationError
    from django.core.validators import EmailValidator

    _name, address = parseaddr(value)
    # A machine's own name as the domain (ai-job-console@gpu01, as the default's localhost) is
    # an address SMTP servers take; Django's validator wants a dot in it (review30: refused).
    domain = address.rpartition("@")[2]
    machine = re.fullmatch(r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?", domain)
    try:
        EmailValidator(allowlist=[domain] if machine else ["localhost"])(address)
    except ValidationError:
        return True
    return False


if _not_an_address(DEFAULT_FROM_EMAIL):
    raise ImproperlyConfigured(
        f"DEFAULT_FROM_EMAIL is an email address (console@example.com, or "
        f"AI Job Console <console@example.com>), not {DEFAULT_FROM_EMAIL!r}"
    )

# Not configurable: the worker runs django-tasks-db's queue (alerts, review mails), so any other
# backend would leave those tasks where nothing runs them.
TASKS = {
    "default": {
        "BACKEND": "django_tasks_db.DatabaseBackend",
        "QUEUES": ["default"],
    }
}

LOG_LEVEL = env("LOG_LEVEL", "INFO").upper()
if LOG_LEVEL not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
    raise ImproperlyConfigured(
        f"LOG_LEVEL is DEBUG, INFO, WARNING, ERROR or CRITICAL, not {LOG_LEVEL!r}"
    )
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "filters": {
        "healthz_answers": {"()": "jobs.log_filters.HealthzAnswers"},
        "unlisted_host": {"()": "jobs.log_filters.UnlistedHostOneLine"},
        "permission_denied": {"()": "jobs.log_filters.PermissionDeniedOneLine"},
        "refused_request": {"()": "jobs.log_filters.RefusedRequestOneLine"},
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        "httpx": {"level": "WARNING"},
        "httpcore": {"level": "WARNING"},
        # A probe's /healthz 503 is its answer, not the web server's error.
        # ...and a 403 of a permission check one line, without a traceback.
        "django.request": {"filters": ["healthz_answers", "permission_denied"]},
        # A Host ALLOWED_HOSTS does not list (a scanner, a mistyped address): one WARNING line.
        "django.security.DisallowedHost": {"filters": ["unlisted_host"]},
        # A refused admin filter, too many fields: one WARNING line each (jobs.log_filters).
        **{
            f"django.security.{name}": {"filters": ["refused_request"]} for name in REFUSED_REQUESTS
        },
    },
}

# --- Backends -----------------------------------------------------------------------
# Which backends are enabled, in the order their pools are listed. The embedded local
# runner is on by default so a fresh clone runs real jobs with no cloud.
CONSOLE_BACKENDS = envlist("CONSOLE_BACKENDS", "local")
if not CONSOLE_BACKENDS:  # commas only: no pool anywhere, every job refused
    raise ImproperlyConfigured(
        f"CONSOLE_BACKENDS lists local, aihc and/or kubernetes, not {env('CONSOLE_BACKENDS')!r}"
    )
# jobs.backends.BACKEND_MODULES: a misspelt name would otherwise just offer no pools.
if unknown := [name for name in CONSOLE_BACKENDS if name not in ("local", "aihc", "kubernetes")]:
    raise ImproperlyConfigured(
        f"CONSOLE_BACKENDS lists local, aihc and/or kubernetes, not {', '.join(map(repr, unknown))}"
    )

# Local runner: where job logs and per-job scratch files go.
# Made by the worker; checked here, or the worker would fail at each of serve's restarts of it.
LOCAL_RUN_DIR = envfolder("LOCAL_RUN_DIR", str(VAR_DIR / "runs"))
# Accelerators the local pool offers when nvidia-smi finds none, as
# "resource-name=count,..." e.g. "baidu.com/a800_80g_cgpu=8". Empty: CPU-only.
LOCAL_ACCELERATORS = env("LOCAL_ACCELERATORS")
_card_types: list[str] = []
for _item in envlist("LOCAL_ACCELERATORS"):
    _name, _eq, _count = (part.strip() for part in _item.partition("="))
    # A type named twice (a800=8,a800=4) would silently offer only the last count.
    if not (_name and _eq and _count.isascii() and _count.isdigit()) or _name in _card_types:
        raise ImproperlyConfigured(
            f"LOCAL_ACCELERATORS is card-type=count,... each type once "
            f"(e.g. baidu.com/a800_80g_cgpu=8), not {_item!r}"
        )
    _card_types.append(_name)
# Host directories users may mount, as "volume-name=/abs/root[:ro][@group+group],...":
# ":ro" makes a volume read-only for everyone, "@team-a+team-b" lets only members of those
# Django groups (and superusers) mount it; a volume without "@" is open to every user. A
# folder holding an "@" is written in double quotes: lab="/srv/u@lab":ro@team-a.
# Mounts must stay inside a volume's root. Parsed and enforced by jobs.volume_access.
LOCAL_VOLUMES = env("LOCAL_VOLUMES", f"scratch={VAR_DIR / 'volumes' / 'scratch'}")
try:
    from jobs.volume_access import parse_volumes

    parse_volumes(LOCAL_VOLUMES)
except ValueError as _exc:
    raise ImproperlyConfigured(str(_exc)) from None

# --- AIHC OpenAPI backend (jobs.backends.aihc; enable with CONSOLE_BACKENDS=local,aihc) ---
# Where: a region (cn-beijing, cn-guangzhou, cn-suzhou, cn-baoding, cn-wuhan, cn-yangquan)
# or an explicit endpoint URL, which wins (e.g. http://127.0.0.1:8900 for a test double).
AIHC_REGION = env("AIHC_REGION", "cn-beijing")
AIHC_ENDPOINT = env("AIHC_ENDPOINT")
# Credentials only from the environment or mounted files (AIHC_ACCESS_KEY_FILE, ...):
# never stored in the database, rendered, logged or put in an event.
AIHC_ACCESS_KEY = envsecret("AIHC_ACCESS_KEY") or ""
AIHC_SECRET_KEY = envsecret("AIHC_SECRET_KEY") or ""
# API generation: v1 (REST, the default) or v2 (action style), overridable per pool with
# "pool-id=v2,other-pool=v1".
AIHC_API_VERSION = env("AIHC_API_VERSION", "v1").lower()
AIHC_POOL_API_VERSIONS = {
    k.strip(): v.strip().lower()
    for k, _, v in (item.partition("=") for item in envlist("AIHC_POOL_API_VERSIONS"))
}
# Only these pool ids are offered (empty: every pool the account sees).
AIHC_POOLS = envlist("AIHC_POOLS")
if "aihc" in CONSOLE_BACKENDS:
    # Checked at start: a misspelt region or version would otherwise only log a warning on
    # the first inventory read, and the console would run with no AIHC pools.
    from jobs.aihc.endpoints import API_VERSIONS, REGION_HOSTS, endpoint_for

    if AIHC_ENDPOINT:
        try:
            endpoint_for(endpoint=AIHC_ENDPOINT)
        except ValueError:
            raise ImproperlyConfigured(
                f"AIHC_ENDPOINT is an http(s) URL (e.g. https://aihc.bj.baidubce.com), "
                f"not {AIHC_ENDPOINT!r}"
            ) from None
    elif AIHC_REGION not in REGION_HOSTS:
        raise ImproperlyConfigured(
            f"AIHC_REGION is one of {', '.join(REGION_HOSTS)} (or set AIHC_ENDPOINT), "
            f"not {AIHC_REGION!r}"
        )
    if AIHC_API_VERSION not in API_VERSIONS:
        raise ImproperlyConfigured(f"AIHC_API_VERSION is v1 or v2, not {AIHC_API_VERSION!r}")
    for _pool, _version in AIHC_POOL_API_VERSIONS.items():
        if not _pool or _version not in API_VERSIONS:
            raise ImproperlyConfigured(
                "AIHC_POOL_API_VERSIONS is pool-id=v1|v2,... (e.g. cce-abc=v2), "
                f"not {_pool + '=' + _version!r}"
            )
# Inventory (pools, queues, idle cards) is cached this long; a stale value is served while
# one background refresh runs, so a slow AIHC never slows the wizard.
AIHC_CACHE_SECONDS = envfloat("AIHC_CACHE_SECONDS", 10)
# How long a page waits for the very first inventory before rendering without it.
AIHC_INVENTORY_WAIT_SECONDS = envfloat("AIHC_INVENTORY_WAIT_SECONDS", 3)
# How long a page waits for the refresh of figures older than AIHC_CACHE_SECONDS before it
# shows the old ones with their age.
AIHC_REFRESH_WAIT_SECONDS = envfloat("AIHC_REFRESH_WAIT_SECONDS", 1)
AIHC_CONNECT_TIMEOUT = envfloat("AIHC_CONNECT_TIMEOUT", 5, positive=True)
AIHC_READ_TIMEOUT = envfloat("AIHC_READ_TIMEOUT", 30, positive=True)
# Reads are retried this many times on connection errors, timeouts, 500 and 503, waiting
# AIHC_RETRY_BACKOFF x 2^n seconds between tries. Creating a job is never retried blindly.
AIHC_RETRIES = envint("AIHC_RETRIES", 3)
# Reads a page waits on (a job's log tail): one try, at most this long.
AIHC_PAGE_READ_TIMEOUT = envfloat("AIHC_PAGE_READ_TIMEOUT", 4, positive=True)
# A whole-log download's wait for each answer's next bytes (the first included), each read
# tried AIHC_RETRIES more times, all within LOG_DOWNLOAD_TOTAL_SECONDS.
# Longer than a page's read: AIHC composes a log's whole answer before its first byte.
AIHC_DOWNLOAD_READ_TIMEOUT = envfloat("AIHC_DOWNLOAD_READ_TIMEOUT", 10, positive=True)
AIHC_RETRY_BACKOFF = envfloat("AIHC_RETRY_BACKOFF", 0.5)
# A create that never reached AIHC (connection refused, HTTP 429) pauses submits this long,
# doubling on each further failure up to the maximum; the jobs stay Queued meanwhile.
AIHC_SUBMIT_PAUSE_SECONDS = envfloat("AIHC_SUBMIT_PAUSE_SECONDS", 5)
AIHC_SUBMIT_PAUSE_MAX_SECONDS = envfloat("AIHC_SUBMIT_PAUSE_MAX_SECONDS", 300)
# A create that got no clear answer (none in time, a 5xx) may still be under way on AIHC: the
# job is looked for again, and sent again only if AIHC shows none, this long after it (qa80:
# sent again at once, the first create landed after the second, two jobs on AIHC).
AIHC_CREATE_SETTLE_SECONDS = envfloat("AIHC_CREATE_SETTLE_SECONDS", 120)
# How often (seconds) the worker reads a running AIHC job's pod usage from AIHC's job metrics
# API (one GpuUsage, one CpuUsage and one MemoryUsage read per job: utilisations), for the
# job page and the API's job metrics; as often as Kubernetes' metrics-server is read by default.
AIHC_METRICS_SECONDS = envfloat("AIHC_METRICS_SECONDS", 15, positive=True)

# --- Kubernetes with the Kubeflow training operator (jobs.backends.kubernetes; enable with
# CONSOLE_BACKENDS=local,kubernetes). In a pod, the service account's token, CA and namespace
# are the defaults (KUBERNETES_SERVICEACCOUNT_DIR says where they are mounted).
_SA_DIR = Path(
    env("KUBERNETES_SERVICEACCOUNT_DIR", "/var/run/secrets/kubernetes.io/serviceaccount")
)
KUBERNETES_API_URL = env("KUBERNETES_API_URL")
if not KUBERNETES_API_URL and env("KUBERNETES_SERVICE_HOST"):
    _host = env("KUBERNETES_SERVICE_HOST")
    KUBERNETES_API_URL = (
        f"https://{f'[{_host}]' if ':' in _host else _host}:{env('KUBERNETES_SERVICE_PORT', '443')}"
    )
# The bearer token: KUBERNETES_TOKEN, or the file KUBERNETES_TOKEN_FILE names (read again on
# each use: a pod's projected token is rotated), by default the pod's service account token.
KUBERNETES_TOKEN = os.getenv("KUBERNETES_TOKEN", "").strip()
KUBERNETES_TOKEN_FILE = env(
    "KUBERNETES_TOKEN_FILE", str(_SA_DIR / "token") if (_SA_DIR / "token").is_file() else ""
)
if KUBERNETES_TOKEN_FILE:
    SECRET_FILES.append(Path(KUBERNETES_TOKEN_FILE))
KUBERNETES_CA_FILE = env(
    "KUBERNETES_CA_FILE", str(_SA_DIR / "ca.crt") if (_SA_DIR / "ca.crt").is_file() else ""
)
# One resource pool per namespace; by default the pod's own namespace, else "default".
try:
    _sa_namespace = (_SA_DIR / "namespace").read_text().strip()
except (OSError, UnicodeDecodeError):  # not in a pod (or not readable): no default from it
    _sa_namespace = ""
KUBERNETES_NAMESPACES = env("KUBERNETES_NAMESPACES", _sa_namespace or "default")
KUBERNETES_CLUSTER_NAME = env("KUBERNETES_CLUSTER_NAME", "Kubernetes")
# Kueue LocalQueue names offered as queues (label kueue.x-k8s.io/queue-name); empty: "default",
# no Kueue.
KUBERNETES_QUEUES = env("KUBERNETES_QUEUES")
# card-type[=resource-name][;node-label=value],... e.g.
# baidu.com/a800_80g_cgpu=nvidia.com/gpu;nvidia.com/gpu.product=NVIDIA-A800-SXM4-80GB
KUBERNETES_ACCELERATORS = env("KUBERNETES_ACCELERATORS", "nvidia.com/gpu")
# PersistentVolumeClaims offered as pfs/nas/cfs volumes ("pfs=datasets,nas=home"), and node
# folders offered as hostpath volumes ("scratch=/data/scratch").
KUBERNETES_VOLUMES = env("KUBERNETES_VOLUMES")
KUBERNETES_HOST_PATHS = env("KUBERNETES_HOST_PATHS")
# high|normal|low=PriorityClass name,...; a priority not listed sets no priorityClassName.
KUBERNETES_PRIORITY_CLASSES = env("KUBERNETES_PRIORITY_CLASSES")
# Taints every job's pods tolerate ("dedicated=training:NoSchedule,nvidia.com/gpu:NoSchedule"),
# and the Secrets their images are pulled with ("regcred").
KUBERNETES_TOLERATIONS = env("KUBERNETES_TOLERATIONS")
KUBERNETES_IMAGE_PULL_SECRETS = env("KUBERNETES_IMAGE_PULL_SECRETS")
# Namespaces whose jobs may run privileged containers (jobSpec.privileged: every device and
# capability of the node); empty: none may, each such job is refused.
KUBERNETES_PRIVILEGED_NAMESPACES = env("KUBERNETES_PRIVILEGED_NAMESPACES")
# Which Kubeflow API PyTorch jobs become: v1 (the training operator's PyTorchJob) or trainer
# (Kubeflow Trainer v2's TrainJob on the torch-distributed runtime); see README.
KUBERNETES_TRAINING_API = env("KUBERNETES_TRAINING_API", "v1")
# Nodes, pods and the namespaces' ResourceQuotas are read for idle cards at most once per this
# many seconds, by one background refresh; pages are served the last figures meanwhile.
KUBERNETES_CACHE_SECONDS = envfloat("KUBERNETES_CACHE_SECONDS", 10)
# How long a page waits for the very first figures before rendering without them.
KUBERNETES_INVENTORY_WAIT_SECONDS = envfloat("KUBERNETES_INVENTORY_WAIT_SECONDS", 3)
# How long a page waits for the refresh of figures older than KUBERNETES_CACHE_SECONDS before
# it shows the old ones with their age.
KUBERNETES_REFRESH_WAIT_SECONDS = envfloat("KUBERNETES_REFRESH_WAIT_SECONDS", 1)
KUBERNETES_CONNECT_TIMEOUT = envfloat("KUBERNETES_CONNECT_TIMEOUT", 5, positive=True)
KUBERNETES_READ_TIMEOUT = envfloat("KUBERNETES_READ_TIMEOUT", 30, positive=True)
KUBERNETES_PAGE_READ_TIMEOUT = envfloat("KUBERNETES_PAGE_READ_TIMEOUT", 4, positive=True)
# A whole-log download's wait for each answer's next bytes (the first included), each read
# tried twice more, all within LOG_DOWNLOAD_TOTAL_SECONDS; see README.
KUBERNETES_DOWNLOAD_READ_TIMEOUT = envfloat("KUBERNETES_DOWNLOAD_READ_TIMEOUT", 10, positive=True)
# How often (seconds) the worker reads the pods' usage from the Metrics API (metrics-server),
# one list per namespace, for the job page and the API's job metrics; metrics-server itself
# scrapes every 15 s by default.
KUBERNETES_METRICS_SECONDS = envfloat("KUBERNETES_METRICS_SECONDS", 15, positive=True)
if "kubernetes" in CONSOLE_BACKENDS:
    import sys as _sys

    from jobs.kubernetes.config import Config as _KubernetesConfig
    from jobs.kubernetes.config import ConfigError as _KubernetesConfigError

    try:
        _KubernetesConfig.from_settings(_sys.modules[__name__])
    except _KubernetesConfigError as _e:
        raise ImproperlyConfigured(str(_e)) from None

# --- Local runner and worker (jobs.runner, jobs.worker) ----------------------------------
# At most this many local jobs run at once (CPU-only jobs need no cards, so cards alone do
# not bound them).
LOCAL_MAX_RUNNING_JOBS = envint("LOCAL_MAX_RUNNING_JOBS", 8, low=1)
# At most this many replicas in one local job (every role's instances together). They all
# start on this machine, one after another in the worker's loop, each a sandbox of its own: a
# CPU-only job needs no cards, so without it a job of 1 master and 1000 workers (or a custom
# job's 50 roles of 1000) was taken and started as that many processes (QA 56).
LOCAL_MAX_REPLICAS = envint("LOCAL_MAX_REPLICAS", 128, low=1)
# Seconds between SIGTERM and SIGKILL when a job is stopped.
LOCAL_STOP_GRACE_SECONDS = envfloat("LOCAL_STOP_GRACE_SECONDS", 10)
# Seconds an MPI job's launcher has to end the job itself once a rank in a worker ended with a
# code other than 0 or by a signal; past them the job fails (MPICH's mpiexec waits for ever for
# a rank that exited without MPI_Abort). Open MPI's abort and hydra's cleanup take a few
# seconds on a loaded machine; 30 leaves them room and frees the cards within a minute.
LOCAL_MPI_RANK_GRACE_SECONDS = envfloat("LOCAL_MPI_RANK_GRACE_SECONDS", 30, positive=True)
# Seconds the workers of a TensorFlow job without ps (MultiWorkerMirroredStrategy) have to end
# by themselves once its chief (worker 0) exited 0, before they are stopped: they finish with
# it, but a moment later (qa87: up to 1.1 s by hand with TF 2.21), and TF catches SIGTERM.
LOCAL_TF_WORKER_WAIT_SECONDS = envfloat("LOCAL_TF_WORKER_WAIT_SECONDS", 10)
# The bubblewrap binary that sandboxes each replica (mounts, /dev/shm, /etc/mpi).
LOCAL_BWRAP = env("LOCAL_BWRAP", "/usr/bin/bwrap")
# Where the host's accelerator device nodes are read from (/dev/nvidia3, /dev/nvidiactl...);
# in the sandbox they are always under /dev. Another folder only for tests (stand-in nodes
# on a machine without cards) and hosts that keep the nodes elsewhere.
LOCAL_DEVICE_DIR = env("LOCAL_DEVICE_DIR", "/dev")
# Checked here: a folder that is not there would silently give every job no card at all.
if not (os.path.isabs(LOCAL_DEVICE_DIR) and os.path.isdir(LOCAL_DEVICE_DIR)):
    raise ImproperlyConfigured(
        f"LOCAL_DEVICE_DIR is the absolute path of the folder holding the host's device nodes "
        f"(/dev), not {LOCAL_DEVICE_DIR!r}: no such folder"
    )
# The NVIDIA driver's per-card folder (one entry per card, named by its PCI address, with the
# card's "Device Minor"): read for cards' minors, and shown in each sandbox, at the same path,
# holding only the replica's own cards' entries. Another folder only for tests (a stand-in the
# job sees through the host's read-only tree); nothing is covered where it does not exist.
LOCAL_NVIDIA_GPUS_DIR = env("LOCAL_NVIDIA_GPUS_DIR", "/proc/driver/nvidia/gpus")
if not os.path.isabs(LOCAL_NVIDIA_GPUS_DIR):
    raise ImproperlyConfigured(
        f"LOCAL_NVIDIA_GPUS_DIR is an absolute path (/proc/driver/nvidia/gpus), "
        f"not {LOCAL_NVIDIA_GPUS_DIR!r}"
    )
# A replica's log file is kept under this many MB (MiB) on disk: a job printing in a loop
# would otherwise fill the disk the database lives on. Past it, the log keeps its beginning
# and its latest part, with a [console] line saying how much was dropped between them
# (jobs/shim.py, ReplicaLog). 1 GB holds days of a normal training log.
LOCAL_LOG_MAX_MB = envint("LOCAL_LOG_MAX_MB", 1024, low=1)


def _disk_gb(path: Path) -> float:
    """The size of the disk `path` is on (or will be: its nearest existing folder)."""
    for folder in (path, *path.parents):
        with contextlib.suppress(OSError):
            return shutil.disk_usage(folder).total / 1024**3
    return 200.0  # unknown: the 50 GB default stands


# A replica's private /tmp (also its HOME and working folder) is a folder under
# LOCAL_RUN_DIR, on disk like a container's writable layer, and may hold at most this many
# GB (GiB; decimals allowed, e.g. 0.5), as Kubernetes caps a pod's ephemeral storage: the
# replica's shim measures it every LOCAL_TMP_CHECK_SECONDS and the runner ends a replica
# over it as a failure. By default 50 GB: a pip cache with PyTorch (~5 GB), a 7B model in
# Hugging Face's cache (~15 GB) and a few checkpoints fit; data sets and checkpoints to
# keep belong on a volume. Never more than a quarter of the disk LOCAL_RUN_DIR is on, so
# on a small disk one replica cannot fill the disk the console's logs (and, by default,
# its database) live on.
# The size of the disk the defaults below are shares of, read once at start-up.
_disk_total_gb = _disk_gb(LOCAL_RUN_DIR)
LOCAL_TMP_MAX_GB = envfloat(
    "LOCAL_TMP_MAX_GB",
    min(50, max(round(_disk_total_gb / 4, 1), 0.1)),
    positive=True,
    unit="GB",
)
# How often (seconds) each replica's /tmp is measured against LOCAL_TMP_MAX_GB. A pass
# walks at most jobs/shim.py's TMP_WALK_MAX_ENTRIES files; a bigger /tmp is measured over
# several passes.
LOCAL_TMP_CHECK_SECONDS = envfloat("LOCAL_TMP_CHECK_SECONDS", 10, positive=True)
# How often (seconds) each running replica's CPU, memory and /tmp use is sampled for its job
# page (jobs/shim.py, UsageMeter): from its cgroup when it has one, else from its processes.
LOCAL_METRICS_SECONDS = envfloat("LOCAL_METRICS_SECONDS", 15, positive=True)
# Disk pressure on the file system LOCAL_RUN_DIR is on, as the kubelet guards a node's disk:
# the caps above hold each replica, not all of them together, and a full disk breaks the
# console itself (its database and logs usually share it). While it has less than
# LOCAL_DISK_MIN_FREE_GB free (GiB; decimals allowed; 0: only below HEALTH_DISK_FREE_MB)
# no local job starts: it stays Queued, saying why, and starts by itself once there is room. Below LOCAL_DISK_EVICT_FREE_GB
# the running replica holding the most in /tmp is evicted (ended as a failure, like one over
# LOCAL_TMP_MAX_GB), one at a time. By default 10% of the disk for starting and 5% for
# eviction, each at most 10 and 5 GB: the kubelet's nodefs.available default is 10%, but a
# node's kubelet owns its disk, while this console often shares a workstation's: on a 2 TB
# disk, 10% would hold back 200 GB that nothing of the console needs. What it does need is
# room for its own database and logs and for the checkpoints running jobs are writing. The
# gap between the two is room for running jobs to go on writing before one is evicted. (A
# restart's new attempt is not held: its failed attempt's /tmp has just been freed, and its
# cards stay taken.)
LOCAL_DISK_MIN_FREE_GB = envfloat(
    "LOCAL_DISK_MIN_FREE_GB", min(round(_disk_total_gb * 0.10, 1), 10.0), unit="GB"
)
# Never above the start threshold by default: a job it let start would be evicted at once.
LOCAL_DISK_EVICT_FREE_GB = envfloat(
    "LOCAL_DISK_EVICT_FREE_GB",
    min(round(_disk_total_gb * 0.05, 1), 5.0, LOCAL_DISK_MIN_FREE_GB or math.inf),
    unit="GB",
)
if LOCAL_DISK_MIN_FREE_GB and LOCAL_DISK_EVICT_FREE_GB > LOCAL_DISK_MIN_FREE_GB:
    raise ImproperlyConfigured(
        f"LOCAL_DISK_EVICT_FREE_GB is at most LOCAL_DISK_MIN_FREE_GB "
        f"({LOCAL_DISK_MIN_FREE_GB:g} GB; a job it let start would be evicted at once), "
        f"not {LOCAL_DISK_EVICT_FREE_GB:g}"
    )

# Whether the worker enforces each role's CPU and memory with cgroups (jobs.cgroups): "auto"
# where it can write a cgroup (root, or a delegated one), saying so in each job that sets them
# where it cannot; "off" never, each such job saying so.
LOCAL_ENFORCE_LIMITS = env("LOCAL_ENFORCE_LIMITS", "auto").lower()
if LOCAL_ENFORCE_LIMITS not in ("auto", "off"):
    raise ImproperlyConfigured(f"LOCAL_ENFORCE_LIMITS is auto or off, not {LOCAL_ENFORCE_LIMITS!r}")

# What the console keeps of this machine for itself (its web server, worker and database)
# from all local jobs together, as the kubelet's system-reserved keeps part of a node from its
# pods (jobs.cgroups, hold_jobs): where CPU and memory are enforced, every replica runs under
# one parent cgroup held to the memory the worker has less LOCAL_RESERVED_MEMORY_GB (GiB;
# decimals allowed). By default 10% of that memory, at least 2 GB (the console's processes and
# a PostgreSQL on the same machine need about 1 GB under load; the rest is headroom for the
# page cache its database reads through), but never more than half the machine's.
# LOCAL_RESERVED_CPUS (cores; decimals allowed) is 0 by default: the jobs' parent gets a tenth
# of the CPU weight of the console's own processes instead, so the console comes first
# whenever it wants CPU and jobs still use every core it leaves idle; a hard reserve would
# take its cores from jobs even while the console sleeps (on 2 cores, 1 reserved halves
# them). Set it to hold jobs to the machine's cores less it (a CFS quota) as well.
# "Memory" is what the worker has: the machine's, or less where its cgroup or an ancestor's is
# limited (a unit's MemoryMax=, a container's), which only the worker reads
# (jobs.cgroups.memory_available, reserve_bytes): unset, None here, and the worker takes its
# default of that; a value not below it leaves the jobs' memory unheld, said on the worker's
# start line. Checked here against the machine's only (the web server reads no cgroup).
_memory_total_gb = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 1024**3
LOCAL_RESERVED_MEMORY_GB: float | None = (
    envfloat("LOCAL_RESERVED_MEMORY_GB", 0, unit="GB") if env("LOCAL_RESERVED_MEMORY_GB") else None
)
if LOCAL_RESERVED_MEMORY_GB is not None and LOCAL_RESERVED_MEMORY_GB >= _memory_total_gb:
    raise ImproperlyConfigured(
        f"LOCAL_RESERVED_MEMORY_GB is less than this machine's memory "
        f"({_memory_total_gb:.1f} GB; jobs get what it leaves), not {LOCAL_RESERVED_MEMORY_GB:g}"
    )
_cpu_total = os.cpu_count() or 1
LOCAL_RESERVED_CPUS = envfloat("LOCAL_RESERVED_CPUS", 0, unit="cores")
if LOCAL_RESERVED_CPUS > _cpu_total - 0.1:
    raise ImproperlyConfigured(
        f"LOCAL_RESERVED_CPUS is less than this machine's {_cpu_total} cores (leaving jobs at "
        f"least 0.1 of a core), not {LOCAL_RESERVED_CPUS:g}"
    )

# The most processes (threads included, as the kernel counts them) one local replica may
# have at once: a job's command that forks without end (a fork bomb, a runaway worker pool)
# would otherwise take every process the machine has, and the console's own with them.
# Held with the cgroup `pids` controller where the worker enforces CPU and memory
# (jobs.cgroups): then every replica runs in a cgroup with this `pids.max`. 0: no limit.
# 4096 leaves room for a PyTorch job's processes on 8 cards, their data loader workers and
# their threads (about 2,000 at most); raise it for a job that needs more (Kubernetes'
# kubelet has no limit unless its podPidsLimit is set).
LOCAL_MAX_PROCESSES = envint("LOCAL_MAX_PROCESSES", 4096)

# The network local jobs run on (jobs.network): "host", this machine's, as every process
# here (the default); "isolated", a network namespace per job with only loopback, which its
# replicas share and nothing else reaches; "isolated-outbound", the same namespace with
# outbound network through slirp4netns (LOCAL_SLIRP4NETNS), but not to this machine's
# loopback nor link-local addresses. A new value rather than a second setting: it is one
# choice of three, and "isolated" keeps meaning what it meant. One setting for every local job
# (no per-pool or per-job choice). An attempt keeps the network it started with.
LOCAL_JOB_NETWORK = env("LOCAL_JOB_NETWORK", "host").lower()
if LOCAL_JOB_NETWORK not in ("host", "isolated", "isolated-outbound"):
    raise ImproperlyConfigured(
        f"LOCAL_JOB_NETWORK is host, isolated or isolated-outbound, not {LOCAL_JOB_NETWORK!r}"
    )
# Local jobs of a worker run as root run as a user of their owner's: host uid
# LOCAL_JOB_UID_BASE + the console user's id (a stable uid per console user, as Slurm runs a
# user's jobs as that user), in group LOCAL_JOB_GID (a number or a group's name; unset: each
# job's gid is its uid). Unset or empty: as before, jobs run as the worker's user (uid 0 for
# a root worker). Decision: a base and a user's id rather than a table of console users to
# host users, so nothing needs to be made on the host for each console user, and one
# number says it; the base is at least 100000 (above every id a system hands out to its own
# users) and at most what leaves a million console users below 2^31-1. What the worker
# checks at its start (it is root, no user or subordinate id of this machine in the range,
# the run folder reachable) is in jobs.job_users.
_uid_base = env("LOCAL_JOB_UID_BASE")
LOCAL_JOB_UID_BASE: int | None = None
if _uid_base:
    LOCAL_JOB_UID_BASE = envint("LOCAL_JOB_UID_BASE", 0, low=100_000, high=2**31 - 2 - 1_000_000)
LOCAL_JOB_GID = env("LOCAL_JOB_GID")
# slirp4netns (Debian's package of that name), for LOCAL_JOB_NETWORK=isolated-outbound.
LOCAL_SLIRP4NETNS = env("LOCAL_SLIRP4NETNS", "/usr/bin/slirp4netns")

# The ports local jobs get (MASTER_PORT, TF_CONFIG's): below Linux's ephemeral range
# (32768-60999), which the kernel hands out to other programs' connections.
_ports = env("LOCAL_PORTS", "20000-29999")
try:
    _low, _high = (int(part) for part in _ports.split("-"))
    if not 1024 <= _low <= _high <= 65535:
        raise ValueError
except ValueError:
    raise ImproperlyConfigured(
        f"LOCAL_PORTS is a range of ports like 20000-29999 (1024 to 65535), not {_ports!r}"
    ) from None
LOCAL_PORTS = (_low, _high)
# Below this much free space (MB, for an unprivileged user) on the file system of
# CONSOLE_VAR_DIR or of a SQLite database, /healthz answers "disk": "full" and 503
# (jobs.health.disk_full): writes are about to fail, or already do.
HEALTH_DISK_FREE_MB = envint("HEALTH_DISK_FREE_MB", 64)
# How often the worker dispatches, supervises and syncs (seconds).
WORKER_POLL_SECONDS = envfloat("WORKER_POLL_SECONDS", 1, positive=True)
# How often the worker renews its lease and beats its own row (jobs.health), and how often a
# worker standing by tries to take the lease over (seconds). One indexed UPDATE each time;
# at least 0.5 s (a shorter one only adds writes), at most 60 s.
WORKER_HEARTBEAT_SECONDS = envfloat("WORKER_HEARTBEAT_SECONDS", 5, positive=True)
if not 0.5 <= WORKER_HEARTBEAT_SECONDS <= 60:
    raise ImproperlyConfigured(
        f"WORKER_HEARTBEAT_SECONDS is between 0.5 and 60 seconds, not {WORKER_HEARTBEAT_SECONDS:g}"
    )
# After how long without a heartbeat the worker counts as not running (jobs.health): the
# health endpoint answers 503, users waiting on it see a banner, and a worker standing by
# takes its lease over (aged on the database's clock). It beats every tick, at
# most every WORKER_HEARTBEAT_SECONDS, so less than twice a tick plus a heartbeat would
# report a live worker dead (the default grows with a long WORKER_POLL_SECONDS or
# WORKER_HEARTBEAT_SECONDS; a value set too short is refused).
_STALE_AT_LEAST = 2 * (WORKER_POLL_SECONDS + WORKER_HEARTBEAT_SECONDS)
WORKER_STALE_SECONDS = envfloat("WORKER_STALE_SECONDS", max(60, _STALE_AT_LEAST), positive=True)
if WORKER_STALE_SECONDS < _STALE_AT_LEAST:
    raise ImproperlyConfigured(
        f"WORKER_STALE_SECONDS is at least twice (WORKER_POLL_SECONDS + "
        f"WORKER_HEARTBEAT_SECONDS), {_STALE_AT_LEAST:g} here, not {WORKER_STALE_SECONDS:g}"
    )
# How often remote (non-local) jobs are synced with their backend (seconds).
WORKER_REMOTE_SYNC_SECONDS = envfloat("WORKER_REMOTE_SYNC_SECONDS", 15)
# Length in seconds of one "minute" of job thresholds (hang detection, timeout, retention).
# Always 60 in production; tests shorten it so a 1-minute threshold passes in a moment.
JOB_MINUTE_SECONDS = envfloat("JOB_MINUTE_SECONDS", 60, positive=True)
# Days the page of a deleted job still tells its owner what became of it (jobs.models
# DeletedJob: an alert mail's link, a bookmark), after which the worker forgets the row and an
# old link is the usual page-not-found; 0: kept for ever. At most a hundred years: the worker
# takes that many days from now, and a larger number (1000000 meant as "for ever") passed the
# dates Python holds, so every hour's pass failed with a traceback in the worker's log.
DELETED_JOB_KEEP_DAYS = envint("DELETED_JOB_KEEP_DAYS", 365, high=36_500)
# Alert webhooks to loopback, link-local or private addresses are refused (SSRF) unless
# this is on (e.g. an on-premises chat gateway on 10.x).
ALERT_WEBHOOK_ALLOW_PRIVATE = envbool("ALERT_WEBHOOK_ALLOW_PRIVATE", "false")
ALERT_WEBHOOK_TIMEOUT_SECONDS = envfloat("ALERT_WEBHOOK_TIMEOUT_SECONDS", 5, positive=True)
# PEM certificates an https webhook's certificate may also be signed by, besides the public
# CAs (certifi's, which the chat bots' certificates are): a company CA, for a chat gateway or a
# private Feishu/WeCom deployment on the company network (QA 59: no setting took one, and such
# a webhook failed every try with CERTIFICATE_VERIFY_FAILED).
ALERT_WEBHOOK_CA_FILE = env("ALERT_WEBHOOK_CA_FILE", "")
if ALERT_WEBHOOK_CA_FILE:
    try:
        ssl.create_default_context(cafile=ALERT_WEBHOOK_CA_FILE)
    except ssl.SSLError as _e:
        raise ImproperlyConfigured(
            f"ALERT_WEBHOOK_CA_FILE={ALERT_WEBHOOK_CA_FILE} holds no PEM certificates TLS can "
            f"use: {_e}"
        ) from None
    except OSError as _e:
        raise ImproperlyConfigured(
            f"ALERT_WEBHOOK_CA_FILE={ALERT_WEBHOOK_CA_FILE} cannot be read: {_e.strerror or _e}"
        ) from None
# At most this many alert emails an hour for one user's jobs, all together (a 1,000-task queue
# group alerting on each failure would otherwise mail every address 1,000 times); 0: no bound.
ALERT_EMAILS_PER_HOUR = envint("ALERT_EMAILS_PER_HOUR", 30)
# The same for alerts posted to webhooks (one alert to a job's webhooks counts once); higher,
# as programs take a burst better than inboxes do. 0: no bound.
ALERT_WEBHOOKS_PER_HOUR = envint("ALERT_WEBHOOKS_PER_HOUR", 60)

# --- Review (jobs.review) ------------------------------------------------------------
# Which submitted jobs wait for a reviewer before they run: "none", "all", "above_cards"
# (jobs asking for more than REVIEW_ABOVE_CARDS cards) or "queues" (jobs in REVIEW_QUEUES,
# each a queue name or pool/queue). The default until a superuser edits the policy in the admin.
REVIEW_POLICY = env("REVIEW_POLICY", "none").lower()
REVIEW_ABOVE_CARDS = envint("REVIEW_ABOVE_CARDS", 8)
REVIEW_QUEUES = envlist("REVIEW_QUEUES")
# Whether a reviewer (superusers included) may approve a job they submitted themselves. Off: a
# second person approves every held job (four eyes). The default until the policy is saved.
REVIEW_ALLOW_SELF_APPROVAL = envbool("REVIEW_ALLOW_SELF_APPROVAL", "false")
# Whether every job asking for privileged containers (jobSpec.privileged) waits for a
# reviewer, whatever the policy above or the one saved in the admin: the operator's, so a
# saved policy cannot turn it off.
REVIEW_PRIVILEGED = envbool("REVIEW_PRIVILEGED", "false")
# A mistyped policy ("above-cards") or the queues policy without queues would review nothing:
# refuse to start rather than run every job unreviewed.
if REVIEW_POLICY not in ("none", "all", "above_cards", "queues"):
    raise ImproperlyConfigured(
        f"REVIEW_POLICY is none, all, above_cards or queues, not {REVIEW_POLICY!r}"
    )
if REVIEW_POLICY == "queues" and not REVIEW_QUEUES:
    raise ImproperlyConfigured("REVIEW_POLICY=queues needs REVIEW_QUEUES (queue or pool/queue)")
# Queues of the local pool (jobs are FIFO by priority within each queue).
LOCAL_QUEUES = envlist("LOCAL_QUEUES", "default")
if not LOCAL_QUEUES:  # commas only: the local pool would offer no queue to send a job to
    raise ImproperlyConfigured(
        f"LOCAL_QUEUES is queue,queue,... (at least one), not {env('LOCAL_QUEUES')!r}"
    )
# Each name as a job's queue must be (jobs/spec.py's QUEUE_RE): the wizard would offer a queue
# such as `gpu/a` and then refuse every job sent to it, so such a name stops the start instead.
_queue_re = re.compile(r"^[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,62}[A-Za-z0-9])?\Z")
for _queue in LOCAL_QUEUES:
    if not _queue_re.match(_queue) or LOCAL_QUEUES.count(_queue) > 1:
        raise ImproperlyConfigured(
            "LOCAL_QUEUES is queue,queue,... each once, of letters, digits, '-', '_' and '.' "
            f"(up to 64, starting and ending with a letter or digit), not {_queue!r}"
        )
