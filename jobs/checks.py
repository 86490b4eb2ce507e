"""Start-up checks that need the database (run by `migrate`, so by `make run` and the
service's ExecStartPre, and by `manage.py check --database default`). They read a database
migrated to this release only: `migrate` runs its checks before it migrates, on the old
schema, and says them once it has migrated instead (said_after_migrating)."""

from __future__ import annotations

import os
from contextvars import ContextVar
from typing import Any

from django.conf import settings
from django.core import checks
from django.db import DatabaseError, transaction
from django.utils.translation import gettext_noop

from .job_users import Problem

# The stderr of the `migrate` running (jobs/management/commands/migrate.py), which
# post_migrate does not hand its receivers. None: sys.stderr.
migrate_stderr: ContextVar[Any] = ContextVar("migrate_stderr", default=None)


def said_after_migrating(
    *, plan: Any = None, using: str = "default", stdout: Any = None, **kwargs: Any
) -> None:
    """The post_migrate receiver: once `migrate` has applied migrations, it runs the checks
    that read the database, and prints what they find as `migrate` printed its own checks
    (to stderr, before migrating). Those read nothing of a database not migrated to this
    release (schema_current), so an upgrade's `migrate` said no W001 or W005 (qa110: a
    restored backup of 0050 migrated by `make run` said nothing of the queued jobs that
    would run again, a second `migrate` did). A `migrate` with nothing to apply said them
    before."""
    if not plan:
        return
    from django.core.management.base import BaseCommand

    # Where `migrate` writes: call_command("migrate", stderr=...) captures them (review61).
    BaseCommand(stdout=stdout, stderr=migrate_stderr.get()).check(
        tags=[checks.Tags.database], databases=[using]
    )


def schema_current() -> bool:
    """Whether the database is migrated to this release: the checks below read it only then
    (its tables may lack a column this release's models have; the query fails, or would read
    what a migration is about to change)."""
    try:
        return not unapplied_migrations()
    except DatabaseError:  # no database to read
        return False


@checks.register(checks.Tags.database)
def secret_key_opens_what_it_sealed(
    app_configs: Any = None, databases: Any = None, **kwargs: Any
) -> list[checks.CheckMessage]:
    """A backup restored with another SECRET_KEY (or a key changed without
    SECRET_KEY_FALLBACKS) would otherwise log everyone out and make every API key answer
    InvalidAccessKeyId without a word to the operator."""
    if not databases or "default" not in databases or not schema_current():
        return []
    from .api_keys import sealed_with_another_key

    try:
        # A savepoint: on PostgreSQL a failed query would otherwise end the transaction
        # a caller (a test's) runs the checks in.
        with transaction.atomic():
            bad_keys, keys, bad_sessions, sessions = sealed_with_another_key()
    except DatabaseError:  # the database out of reach meanwhile
        return []
    if not bad_keys and not bad_sessions:
        return []
    return [
        checks.Warning(
            f"SECRET_KEY does not open what the database holds: {bad_keys} of the {keys} "
            f"newest API access keys in use and {bad_sessions} of the {sessions} newest sessions were "
            f"sealed with another key (a backup restored without its secret key, or the key "
            f"changed).",
            hint=(
                # The file's real path: CONSOLE_VAR_DIR moves it out of var/ (qa89).
                f"Put the key back ({settings.VAR_DIR / 'secret_key'}, SECRET_KEY or "
                "SECRET_KEY_FILE), or list it in SECRET_KEY_FALLBACKS. Otherwise those people "
                "log in again, and each of those API keys answers InvalidAccessKeyId: their "
                "owners make new ones."
            ),
            id="jobs.W001",
        )
    ]


@checks.register(checks.Tags.security, deploy=True)
def local_jobs_run_as_root(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """Said by `manage.py check --deploy` and at the start of `serve` (not by every command
    that runs the checks: a root dev clone's migrate, worker and tests would each print them)
    when they run as root with the local runner on: its jobs
    then run as uid 0 unless LOCAL_JOB_UID_BASE is set, and on this machine's network unless
    LOCAL_JOB_NETWORK isolates them. The defaults stay (a fresh clone runs jobs without
    either: README "What a job gets"); the warnings say what a shared server sets (qa90: a
    job read another console's var/secret_key on the machine, and reached this console on
    127.0.0.1 and the cloud's metadata service at 169.254.169.254)."""
    if "local" not in settings.CONSOLE_BACKENDS or os.geteuid() != 0:
        return []
    found: list[checks.CheckMessage] = []
    if settings.LOCAL_JOB_UID_BASE is None:
        found.append(
            checks.Warning(
                "Running as root with LOCAL_JOB_UID_BASE unset: local jobs run as uid 0, and "
                "read every file root keeps from others on this machine (another console's "
                "var/secret_key, a service's data under /var/lib).",
                hint=(
                    "Set LOCAL_JOB_UID_BASE (e.g. 200000) to run each user's jobs as a user of "
                    "their own, or run the console as an unprivileged user. README: Security "
                    "baseline, before a shared server."
                ),
                id="jobs.W002",
            )
        )
    if settings.LOCAL_JOB_NETWORK == "host":
        found.append(
            checks.Warning(
                "Running as root with LOCAL_JOB_NETWORK=host: local jobs share this machine's "
                "network and reach whatever listens on it (the console on 127.0.0.1, a "
                "database on loopback, the cloud's metadata service at 169.254.169.254).",
                hint=(
                    "Set LOCAL_JOB_NETWORK=isolated (no network beyond the job's own) or "
                    "isolated-outbound (outbound only, not this machine's loopback nor "
                    "link-local addresses). README: Security baseline, before a shared server."
                ),
                id="jobs.W003",
            )
        )
    return found


@checks.register(checks.Tags.compatibility, deploy=True)
def card_nodes_missing(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """Said by `manage.py check --deploy`, at the start of `serve` and in the worker's start
    log (as W002): the local pool offers `nvidia.com/gpu` cards (LOCAL_ACCELERATORS, on a
    machine whose nvidia-smi found none) whose device nodes do not exist. Such a card is not
    offered, and a job needing more cards than have their nodes waits Queued for them
    (jobs.runner.current_capacity, cards_short_of_nodes); until qa95 each replica failed in
    bwrap ("Can't find source path /dev/nvidia0"), the job's reason only its exit code.
    Other card types are demo cards, with no node to find."""
    from .backends.local import NVIDIA_RESOURCE, detected_accelerators, missing_card_nodes

    if "local" not in settings.CONSOLE_BACKENDS:
        return []
    count = detected_accelerators().get(NVIDIA_RESOURCE, 0)
    missing = missing_card_nodes(NVIDIA_RESOURCE, range(count))
    if not missing:
        return []
    shown = ", ".join(missing[:4]) + (", …" if len(missing) > 4 else "")
    return [
        checks.Warning(
            f"The local pool offers {count} {NVIDIA_RESOURCE} cards, but {len(missing)} of their "
            f"device nodes do not exist on this machine ({shown}): such a card is given to no "
            f"local job, and a job needing more cards than have their nodes waits queued until "
            f"they exist, naming the missing nodes.",
            hint=(
                "Install the NVIDIA driver, or give demo cards another card type in "
                "LOCAL_ACCELERATORS (baidu.com/a800_80g_cgpu=8): a type other than "
                f"{NVIDIA_RESOURCE} needs no device node. README: Settings, LOCAL_ACCELERATORS."
            ),
            id="jobs.W004",
        )
    ]


# The queued jobs looked at (newest first): the check runs at every start, its cost bounded.
RERUN_JOBS_LOOKED_AT = 1000


@checks.register(checks.Tags.database)
def queued_jobs_already_run(
    app_configs: Any = None, databases: Any = None, **kwargs: Any
) -> list[checks.CheckMessage]:
    """Local jobs waiting to start (Queued, or held for review) whose folder in LOCAL_RUN_DIR
    has an exit record newer than the job's last event: they ran after the database was
    copied, so this database is a restored backup, and they will run again (qa102: nothing
    told the operator). A job resubmitted after it ran is not one: its Resubmitted event is
    newer than its last run's exits. Said by `migrate` (so `make run` and the unit's
    ExecStartPre), `manage.py check --database default` and the worker's start log."""
    if not databases or "default" not in databases:
        return []
    if "local" not in settings.CONSOLE_BACKENDS or not schema_current():
        return []
    from django.db.models import Max

    from . import logs as job_logs
    from .models import Job, JobStatus

    try:
        with transaction.atomic():  # a savepoint, as above
            waiting = list(
                Job.objects.filter(
                    backend="local", status__in=[JobStatus.QUEUED, JobStatus.PENDING_REVIEW]
                )
                .annotate(last_event=Max("events__created_at"))
                .order_by("-created_at", "-id")
                .values_list("public_id", "last_event", "created_at")[:RERUN_JOBS_LOOKED_AT]
            )
    except DatabaseError:  # the database out of reach meanwhile
        return []
    ran: list[str] = []
    for public_id, last_event, created_at in waiting:
        since = (last_event or created_at).timestamp()
        folder = job_logs.job_dir(public_id)
        try:
            exits = [p.stat().st_mtime for p in folder.glob("attempt-*/*/exit")]
        except OSError:
            continue
        if any(mtime > since for mtime in exits):
            ran.append(public_id)
    if not ran:
        return []
    shown = ", ".join(ran[:5]) + (", …" if len(ran) > 5 else "")
    return [
        checks.Warning(
            f"{len(ran)} queued local jobs have already run here (restored from a backup?): "
            f"their folders in {settings.LOCAL_RUN_DIR} hold exits recorded after the "
            f"database last changed them, and they will run again ({shown}).",
            hint=(
                "Before the worker starts them, stop or delete those that must not run again "
                "(their page's Stop, or the admin's job list). As it starts each, the worker "
                "moves its earlier run's records and logs to a folder earlier-run-<time> of its "
                "folder. README: Backup and restore."
            ),
            id="jobs.W005",
        )
    ]


@checks.register(checks.Tags.compatibility, deploy=True)
def run_dir_smaller_than_a_log(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """Said by `manage.py check --deploy`, at the start of `serve` and in the worker's start
    log: the file system holding LOCAL_RUN_DIR has less room than one replica's log may take
    (LOCAL_LOG_MAX_MB), so a job's log can fill it before its cap cuts it, and every job on
    the machine and the console with it (qa102)."""
    if "local" not in settings.CONSOLE_BACKENDS:
        return []
    run_dir = settings.LOCAL_RUN_DIR
    # The folder may not exist yet (the worker makes it): its nearest existing parent's disk.
    path = os.path.abspath(run_dir)
    while not os.path.exists(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    try:
        found = os.statvfs(path)
    except OSError:
        return []
    free_mb = found.f_bavail * found.f_frsize // (1024 * 1024)
    if free_mb >= settings.LOCAL_LOG_MAX_MB:
        return []
    return [
        checks.Warning(
            f"The file system holding LOCAL_RUN_DIR ({run_dir}) has {free_mb} MB free, less "
            f"than one replica's log may take (LOCAL_LOG_MAX_MB={settings.LOCAL_LOG_MAX_MB}): "
            f"a job writing that much fills it before its log is cut.",
            hint=(
                "Free room there, lower LOCAL_LOG_MAX_MB, or put LOCAL_RUN_DIR on a file system "
                "of its own. README: Deployment."
            ),
            id="jobs.W006",
        )
    ]


def unapplied_migrations() -> list[str]:
    """The migrations of this release the database lacks (`app.name`, in the order `migrate`
    applies them): none once `migrate` has run."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    return [f"{migration.app_label}.{migration.name}" for migration, _backwards in plan]


def not_migrated_problem() -> str:
    """Why `serve` and `worker` must not start yet, or "": on a database of an older release
    (this release pulled, `migrate` not run yet) every page would answer 500 and the worker
    log a traceback at each tick (QA 46). A database out of reach raises OperationalError,
    which manage.py says as DATABASE_URL's problem."""
    names = unapplied_migrations()
    if not names:
        return ""
    shown = ", ".join(names[:3]) + (", …" if len(names) > 3 else "")
    count = f"{len(names)} migration{'s' if len(names) != 1 else ''}"
    return (
        f"The database is not migrated to this release ({count} to apply: {shown}). "
        f"Run `manage.py migrate` first (`make run` and the service's ExecStartPre do)."
    )


def bwrap_problems() -> list[Problem]:
    """Why the local runner could not start any job with LOCAL_BWRAP (empty: it can, or the
    local runner is not enabled, CONSOLE_BACKENDS): a mistyped path let `serve` and the worker
    start, and each local job then failed at its launch (QA 46). `serve` and the worker refuse
    to start on it (a Problem, as the worker's others, so /healthz and staff's pages say it)."""
    if "local" not in settings.CONSOLE_BACKENDS:
        return []
    path = settings.LOCAL_BWRAP
    if os.path.isfile(path) and os.access(path, os.X_OK):
        return []
    return [
        Problem(
            gettext_noop(
                "LOCAL_BWRAP=%(path)s is not a program this machine can run: it is the path of "
                "bubblewrap (bwrap), which sandboxes each replica of a local job, "
                "/usr/bin/bwrap where the bubblewrap package installs it (apt-get install "
                "bubblewrap). Correct it, or leave local out of CONSOLE_BACKENDS"
            ),
            gettext_noop(
                "LOCAL_BWRAP does not name a program this machine can run: no local job can start"
            ),
            path=path,
        )
    ]
