from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import translation

from .outside_network import Outside, outside_server, unavailable


@pytest.fixture(autouse=True)
def _isolated_var_dir(settings, tmp_path):
    """Each test gets its own run/log/volume folders under tmp_path."""
    settings.LOCAL_RUN_DIR = tmp_path / "runs"
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    # Pages link the static files as they are in static/, never by a manifest `make run`'s
    # collectstatic left in the same var/ (files of before an edit, under their old hashes).
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }


@pytest.fixture(autouse=True)
def _default_language() -> Iterator[None]:
    """Each test starts in the console's default language: a test client request activates
    its page's language in this thread and leaves it there, so what the next test's worker
    (run in this thread) writes would otherwise depend on which test ran before it."""
    yield
    translation.deactivate()


# The jobs' parent cgroup's files a worker start writes (jobs.cgroups.hold_jobs), with what a
# new cgroup holds: every test that starts a worker writes them.
JOBS_PARENT_FILES = {
    "memory.max": "max",
    "memory.swap.max": "max",
    "cpu.weight": "100",
    "cpu.max": "max 100000",
    "memory.memsw.limit_in_bytes": "-1",
    "memory.limit_in_bytes": "-1",
    "cpu.shares": "1024",
    "cpu.cfs_quota_us": "-1",
}


def jobs_parent_folders() -> set[Path]:
    """Where this process's worker would hold its jobs' parent (memory and cpu), found as
    jobs.cgroups.detect finds them but without setting anything up."""
    from jobs import cgroups

    own = cgroups.own_cgroups(cgroups._read("/proc/self/cgroup"))
    mounts = cgroups.cgroup_mounts(cgroups._read("/proc/self/mountinfo"))
    found = set()
    for mount in mounts:
        names = [""] if mount.version == 2 else sorted(mount.controllers & {"memory", "cpu"})
        for name in names:
            if name in own and (folder := cgroups.folder_of(own[name], mount)) is not None:
                if folder.name == cgroups.PROCESSES_LEAF:
                    folder = folder.parent
                found.add(folder / cgroups.JOBS_DIR)
    return found


def jobs_parent_files() -> dict[Path, str]:
    return {
        folder / name: (folder / name).read_text().strip()
        for folder in jobs_parent_folders()
        for name in JOBS_PARENT_FILES
        if (folder / name).exists()
    }


def restore_jobs_parent(before: dict[Path, str]) -> None:
    """Puts the jobs' parent's limits and CPU weight back as `before` found them, and those of
    a parent made meanwhile back to a new cgroup's (unlimited, the default weight): under
    cgroup v1 the cpu hierarchy's parent may be shared by every console on this machine,
    whose jobs would otherwise keep a tenth of the weight, or a test's tiny memory limit."""
    paths = {**jobs_parent_files(), **before}
    for _ in range(2):  # v1 refuses memory plus swap below memory alone: either order holds
        for path in paths:
            value = before.get(path, JOBS_PARENT_FILES[path.name])
            with contextlib.suppress(OSError):
                path.write_text("-1" if value == "9223372036854771712" else value)


JOBS_PARENT_BEFORE = pytest.StashKey[dict[Path, str]]()


def pytest_sessionstart(session: pytest.Session) -> None:
    """Tests that start a worker leave the jobs' parent as it was before the run: read here, put
    back in pytest_sessionfinish. Only by the process that runs the session (pytest alone, or
    pytest-xdist's controller, which finishes after every test process): a test process that
    finished first would otherwise put back the parent while the other's jobs ran under it."""
    if not hasattr(session.config, "workerinput"):
        session.config.stash[JOBS_PARENT_BEFORE] = jobs_parent_files()


def pytest_sessionfinish(session: pytest.Session) -> None:
    if (before := session.config.stash.get(JOBS_PARENT_BEFORE, None)) is not None:
        restore_jobs_parent(before)


@pytest.fixture
def local_pool_failing_at_launch(settings):
    """The local pool as the scheduling tests start jobs on it for real, each start failing
    at once, before any process, for want of a uid for its owner (LOCAL_JOB_UID_BASE too high:
    what only launching tells, jobs.runner.launch_attempt), and the job keeps the cards it was
    given until the worker ends it, as it would. The test sets LOCAL_ACCELERATORS and
    LOCAL_QUEUES on the settings it is given. (Until fix126 bubblewrap was missing, which now
    holds every job Queued.)"""
    from jobs.job_users import HIGHEST_UID

    settings.LOCAL_JOB_UID_BASE = HIGHEST_UID
    settings.LOCAL_DISK_MIN_FREE_GB = 0
    settings.LOCAL_DISK_EVICT_FREE_GB = 0
    settings.LANGUAGE_CODE = "en"
    return settings


@pytest.fixture
def alice(db) -> User:
    """Alice is a normal user who builds and runs jobs."""
    return User.objects.create_user("alice", "alice@example.com", "alice-password")


@pytest.fixture
def bob(db) -> User:
    """Bob is another normal user; he must never see Alice's jobs or drafts."""
    return User.objects.create_user("bob", "bob@example.com", "bob-password")


@pytest.fixture
def reviewer(db) -> User:
    """Carol reviews jobs in the admin: staff, in the Reviewers group."""
    from django.contrib.auth.models import Group

    user = User.objects.create_user("carol", "carol@example.com", "carol-password", is_staff=True)
    user.groups.add(Group.objects.get(name="Reviewers"))
    return user


@pytest.fixture
def superuser(db) -> User:
    return User.objects.create_superuser("root", "root@example.com", "root-password")


@pytest.fixture
def alice_client(alice) -> Client:
    client = Client()
    client.force_login(alice)
    return client


@pytest.fixture
def alice_en(alice_client) -> Client:
    """Alice's session, reading the console in English."""
    alice_client.cookies["django_language"] = "en"
    return alice_client


@pytest.fixture
def kubernetes_settings(settings) -> None:
    """Kubernetes settings that can be used (no request is sent to this address): a job of
    the Kubernetes backend is one the console can reach, not one of a platform not
    configured (jobs.backends.configured), whose stop it refuses."""
    settings.KUBERNETES_API_URL = "https://127.0.0.1:6443"
    settings.KUBERNETES_TOKEN = "test-token"


# -- Browser tests --------------------------------------------------------------------
# Playwright drives Debian's chromium (playwright cannot download browsers here). Locally
# a missing browser skips these tests; CI sets REQUIRE_BROWSER=1 so it fails instead.

CHROMIUM = os.getenv("CHROMIUM_PATH") or shutil.which("chromium") or "/usr/bin/chromium"


# How long a browser test waits for a page, a click or an expectation. A test that passes
# waits only as long as the page takes; this bounds the wait of one that fails. On CI's 2-core
# machine, busy with the rest of the suite, an htmx round trip has taken longer than 5 s
# (Playwright's default), and once a log-in and an admin page in the two test processes at the
# same time longer than 10 s (session 41's stop: both pass in 4-9 s here, under two CPU hogs).
BROWSER_TIMEOUT_MS = 20_000


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    if not os.path.exists(CHROMIUM):
        if os.getenv("REQUIRE_BROWSER"):
            pytest.fail(f"Chromium not found at {CHROMIUM}; browser tests are required")
        pytest.skip("chromium not installed")
    # Playwright's sync API runs an event loop in this thread; Django's ORM calls made
    # by the test itself are still synchronous and safe.
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    from playwright.sync_api import expect, sync_playwright

    # Assertions wait as long as actions do (Playwright's own default is 5 s), in every
    # test: one that makes its own context (JavaScript off, another locale) too. Set in the
    # page fixture alone, it held only once a test using that fixture had run in the
    # process, so such a test's wait depended on the order the tests ran in.
    expect.set_options(timeout=BROWSER_TIMEOUT_MS)
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        yield browser
        browser.close()


@pytest.fixture
def page(browser, live_server, transactional_db):
    context = browser.new_context(base_url=live_server.url, locale="zh-CN")
    context.set_default_timeout(BROWSER_TIMEOUT_MS)
    page = context.new_page()
    yield page
    context.close()


def log_in(page, username: str, password: str) -> None:
    """Logs in through the login form, as a person would, and waits to leave it."""
    page.goto("/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("#login-submit")
    page.wait_for_url(lambda url: "/login/" not in url)


@pytest.fixture
def logged_in_page(page, alice):
    """A browser page where Alice has logged in through the login form."""
    log_in(page, "alice", "alice-password")
    page.wait_for_url(lambda url: urlparse(url).path == "/")
    return page


def run_queued_tasks() -> None:
    """Runs the django tasks queued so far (review mails, alerts) as the worker's task
    thread would, here in the test's own thread and transaction. (The worker's loop itself
    closes old connections between tasks, which would close the test's.)"""
    from django_tasks_db.management.commands.db_worker import Worker as DBWorker
    from django_tasks_db.models import DBTaskResult

    worker = DBWorker(
        queue_names=["default"],
        interval=0,
        batch=True,
        backend_name="default",
        startup_delay=False,
        max_tasks=None,
        worker_id="tests",
        excluded_queue_names=[],
    )
    while (result := DBTaskResult.objects.ready().order_by("enqueued_at").first()) is not None:
        result.claim(worker.worker_id)
        worker.run_task(result)


@pytest.fixture
def nobody_folder() -> Iterator[Path]:
    """An empty folder of the unprivileged user nobody's (uid 65534), which that user can
    reach (tmp_path is in a folder only root can enter)."""
    folder = Path(tempfile.mkdtemp(prefix="console-nobody-"))
    os.chown(folder, 65534, 65534)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def outside_or_none() -> Iterator[Outside | None]:
    """A server in a network namespace of its own, reached through a veth pair
    (tests/outside_network.py), answering HELLO; None where that cannot be set up (not root,
    no iproute2)."""
    if unavailable():
        yield None
        return
    with outside_server() as server:
        yield server


@pytest.fixture
def outside(outside_or_none) -> Outside:
    if outside_or_none is None:
        pytest.skip(unavailable())
    return outside_or_none
