from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlparse

import httpx
import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = ROOT / "templates"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_login_page_renders(client, db):
    r = client.get("/login/")

    assert r.status_code == 200
    assert b'name="username"' in r.content


def test_anonymous_users_are_sent_to_login(client, db):
    r = client.get("/")

    assert r.status_code == 302
    assert r["Location"].startswith("/login/")


def test_pages_carry_a_content_security_policy_with_a_nonce(client, db):
    r = client.get("/login/")

    policy = r["Content-Security-Policy"]
    nonce = re.search(r"'nonce-([^']+)'", policy).group(1)
    assert f'nonce="{nonce}"' in r.content.decode()
    assert "unsafe-inline" not in policy
    assert r["X-Frame-Options"] == "DENY"


def test_ensure_superuser_creates_one_from_the_environment(db, monkeypatch, capsys):
    monkeypatch.setenv("DJANGO_SUPERUSER_USERNAME", "root")
    monkeypatch.setenv("DJANGO_SUPERUSER_PASSWORD", "a-long-password")
    monkeypatch.setenv("DJANGO_SUPERUSER_EMAIL", "root@example.com")

    call_command("ensure_superuser")
    call_command("ensure_superuser")

    user = User.objects.get(is_superuser=True)
    assert (user.username, user.email) == ("root", "root@example.com")
    assert user.check_password("a-long-password")
    assert "a-long-password" not in capsys.readouterr().out


def test_ensure_superuser_generates_and_prints_a_password_once(db, monkeypatch, capsys):
    for name in (
        "DJANGO_SUPERUSER_USERNAME",
        "DJANGO_SUPERUSER_PASSWORD",
        "DJANGO_SUPERUSER_EMAIL",
    ):
        monkeypatch.delenv(name, raising=False)

    call_command("ensure_superuser")
    first = capsys.readouterr().out
    call_command("ensure_superuser")
    second = capsys.readouterr().out

    password = re.search(r"password '([^']+)'", first).group(1)
    assert User.objects.get(username="admin").check_password(password)
    assert second == ""


def test_ensure_superuser_leaves_an_ordinary_user_of_that_name_alone_and_says_so(
    db, monkeypatch, capsys
):
    monkeypatch.delenv("DJANGO_SUPERUSER_USERNAME", raising=False)
    monkeypatch.delenv("DJANGO_SUPERUSER_PASSWORD", raising=False)
    User.objects.create_user(username="admin", password="an-ordinary-password")

    call_command("ensure_superuser")  # `make run` goes on to serve

    user = User.objects.get(username="admin")
    assert not user.is_superuser and user.check_password("an-ordinary-password")
    assert "createsuperuser" in capsys.readouterr().err


def test_serve_answers_login_admin_and_static_files_with_debug_off(tmp_path):
    """What `make run` starts: the console on 127.0.0.1:PORT, static files included."""
    port = free_port()
    env = {**os.environ, "CONSOLE_VAR_DIR": str(tmp_path), "DEBUG": "0", "PORT": str(port)}
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    server = subprocess.Popen(
        [sys.executable, "manage.py", "serve"], cwd=ROOT, env=env, start_new_session=True
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                login = httpx.get(f"{base}/login/", timeout=2)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "console did not start"
                time.sleep(0.3)
        admin = httpx.get(f"{base}/admin/", timeout=5)
        htmx = httpx.get(f"{base}/static/django_htmx/htmx-2.min.js", timeout=5)
        css = httpx.get(f"{base}/static/vendor/bootstrap-5.3.9/bootstrap.min.css", timeout=5)
        missing = httpx.get(f"{base}/login/no-such-page/", timeout=5)

        assert login.status_code == 200 and 'name="password"' in login.text
        assert admin.status_code == 302 and "/admin/login/" in admin.headers["location"]
        assert htmx.status_code == 200 and "htmx" in htmx.text
        assert css.status_code == 200
        assert missing.status_code == 404 and 'id="not-found"' in missing.text
        assert (tmp_path / "secret_key").exists()
    finally:
        os.killpg(server.pid, signal.SIGINT)
        server.wait(timeout=20)
    assert server.returncode == 0
    # Nothing it started still holds the port (a stray gunicorn worker would).
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TIME_WAIT is fine, LISTEN is not
        s.bind(("127.0.0.1", port))


def children_of(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended meanwhile
        if int(fields[1]) == pid:  # the field after the state is the parent's pid
            found.append(int(stat.parent.name))
    return found


def test_killing_serve_outright_takes_the_web_server_and_worker_with_it(tmp_path):
    port = free_port()
    env = {**os.environ, "CONSOLE_VAR_DIR": str(tmp_path), "DEBUG": "0", "PORT": str(port)}
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    server = subprocess.Popen(
        [sys.executable, "manage.py", "serve"], cwd=ROOT, env=env, start_new_session=True
    )
    deadline = time.monotonic() + 30
    while True:
        try:
            httpx.get(f"http://127.0.0.1:{port}/login/", timeout=2)
            break
        except httpx.TransportError:
            assert time.monotonic() < deadline, "console did not start"
            time.sleep(0.3)
    children = children_of(server.pid)
    assert len(children) == 2  # gunicorn's master and the worker

    server.kill()  # SIGKILL: serve cannot stop anything itself
    server.wait()

    deadline = time.monotonic() + 20
    while any(Path(f"/proc/{pid}").exists() for pid in children):
        assert time.monotonic() < deadline, "serve's children outlived it"
        time.sleep(0.2)
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))  # the port is free for the next `make run`


@pytest.mark.browser
def test_a_user_logs_in_through_the_browser(page, alice):
    page.goto("/")
    page.wait_for_url("**/login/?next=/")
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", "alice-password")
    page.click("#login-submit")

    page.wait_for_url(lambda url: urlparse(url).path == "/")
    assert page.locator("nav").inner_text().count("alice") == 1


def test_no_template_has_a_comment_that_django_would_print():
    # Django's {# #} ends at the line's end: one spread over lines is printed as text.
    unclosed = [
        f"{path.relative_to(TEMPLATES)}:{number}"
        for path in TEMPLATES.rglob("*.html")
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if "{#" in line and "#}" not in line[line.index("{#") :]
    ]

    assert unclosed == []


def test_a_missing_page_is_the_consoles_own_404_with_its_navigation(alice_client):
    r = alice_client.get("/jobs/no-such-job/")

    html = r.content.decode()
    assert r.status_code == 404
    assert 'id="not-found"' in html and 'id="nav-create-job"' in html


def test_a_server_error_page_needs_no_request_context(rf):
    from django.views.defaults import server_error

    r = server_error(rf.get("/"))

    assert r.status_code == 500
    assert "Server error" in r.content.decode() and "服务器错误" in r.content.decode()


def test_a_request_from_an_unknown_host_says_the_address_is_not_one_of_the_consoles(client):
    # Refused before the session or the user are known: the page may need neither. Found in
    # QA: opened by this machine's IP address (HOST=0.0.0.0), the console answered with the
    # page for a form over 2.5 MB, which said nothing of ALLOWED_HOSTS.
    r = client.get("/", HTTP_HOST="192.0.2.2:8000")
    odd = client.get("/", HTTP_HOST="<b>x</b>")

    page = r.content.decode()
    assert r.status_code == 400
    assert "Not an address of this console" in page and "此地址不能访问控制台" in page
    assert "“192.0.2.2:8000”" in page and "ALLOWED_HOSTS" in page
    assert "2.5 MB" not in page
    assert odd.status_code == 400 and "<b>x</b>" not in odd.content.decode()
    # Any other bad request still gets the page about what a form can hold.
    assert "2.5 MB" in client.post("/login/", {"a": "x" * 2_700_000}).content.decode()


def manage(tmp_path: Path, *args: str, **variables: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CONSOLE_VAR_DIR": str(tmp_path), **variables}
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True
    )


@pytest.mark.parametrize(
    "variables",
    [
        {"DATABASE_CONN_MAX_AGE": "ten"},
        {"EMAIL_HOST": "smtp.example.com", "EMAIL_PORT": "smtp"},
        {"EMAIL_HOST": "smtp.example.com", "EMAIL_USE_TLS": "maybe"},
        # Without EMAIL_HOST too (qa32: checked only once mail was turned on).
        {"EMAIL_PORT": "abc"},
        {"EMAIL_PORT": "0"},
        {"EMAIL_USE_TLS": "maybe"},
        {"HTTPS": "ture"},
        {"TIME_ZONE": "Beijing"},
        {"LANGUAGE_CODE": "fr"},
        {"SECRET_KEY_FILE": "/no/such/secret"},
        # Without EMAIL_HOST too (qa46: read only once mail was turned on, as EMAIL_PORT was).
        {"EMAIL_HOST_PASSWORD_FILE": "/no/such/password"},
        # qa46: every mail was refused by the SMTP server, one worker log line each.
        {"DEFAULT_FROM_EMAIL": "ai-job-console"},
        {"DEFAULT_FROM_EMAIL": "AI Job Console <console@>"},
        {"SITE_URL": "console.example.com"},
        {"CONSOLE_BACKENDS": "local,aihcc"},
        {"LOCAL_ACCELERATORS": "baidu.com/a800_80g_cgpu:8"},
        {"LOCAL_VOLUMES": "scratch=data/scratch"},
        {"LOCAL_VOLUMES": "team-a=/data/a@"},
        {"LOCAL_VOLUMES": "shared=/data/s@team-a++team-b"},
        {"LOCAL_VOLUMES": "models=relative:ro@team-a"},
        {"LOCAL_VOLUMES": "a=/data/a@team-a,a=/data/b"},
        {"LOCAL_QUEUES": "default,gpu/a100"},
        {"LOCAL_QUEUES": 'default,q<b>&"x'},
        {"LOCAL_QUEUES": "default,default"},
        {"REVIEW_POLICY": "above-cards"},
        {"REVIEW_ABOVE_CARDS": "eight"},
        {"REVIEW_ALLOW_SELF_APPROVAL": "maybe"},
        {"DATABASE_URL": "postgress://u:hunter2@db/console"},
        {"WORKER_POLL_SECONDS": "-1"},
        {"WORKER_POLL_SECONDS": "0"},
        {"WORKER_STALE_SECONDS": "0"},
        {"WORKER_STALE_SECONDS": "soon"},
        {"WORKER_POLL_SECONDS": "10", "WORKER_STALE_SECONDS": "29"},
        {"WORKER_HEARTBEAT_SECONDS": "0.1"},
        {"WORKER_HEARTBEAT_SECONDS": "120"},
        {"WORKER_HEARTBEAT_SECONDS": "often"},
        {"WORKER_HEARTBEAT_SECONDS": "1", "WORKER_STALE_SECONDS": "3"},
        {"JOB_MINUTE_SECONDS": "0"},
        {"CONSOLE_BACKENDS": "local,aihc", "AIHC_READ_TIMEOUT": "0"},
        {"LOG_LEVEL": "verbose"},
        {"PORT": "eighty"},
        {"PORT": "70000"},
        {"WEB_WORKERS": "two"},
        {"WEB_THREADS": "0"},
        {"LOGIN_FAILURES_PER_USERNAME": "0"},
        {"LOGIN_FAILURES_PER_IP": "-1"},
        {"LOGIN_THROTTLE_MINUTES": "0"},
        {"SESSION_COOKIE_AGE": "0"},
        {"LOCAL_MAX_RUNNING_JOBS": "0"},
        {"LOCAL_LOG_MAX_MB": "0"},
        {"LOCAL_LOG_MAX_MB": "-5"},
        {"LOCAL_LOG_MAX_MB": "1GB"},
        {"LOCAL_TMP_MAX_GB": "0"},
        {"LOCAL_TMP_MAX_GB": "-1"},
        {"LOCAL_TMP_MAX_GB": "ten"},
        {"LOCAL_TMP_MAX_GB": "inf"},
        {"LOCAL_ENFORCE_LIMITS": "on"},
        {"LOCAL_JOB_NETWORK": "none"},
        {"LOCAL_DEVICE_DIR": "/no/such/device/folder"},
        {"LOCAL_DEVICE_DIR": "dev"},
        {"LOCAL_NVIDIA_GPUS_DIR": "proc/driver/nvidia/gpus"},
        {"LOCAL_PORTS": "29999-20000"},
        {"LOCAL_PORTS": "80-90"},
        {"LOCAL_TMP_CHECK_SECONDS": "0"},
        {"LOCAL_TMP_CHECK_SECONDS": "soon"},
        {"LOCAL_METRICS_SECONDS": "0"},
        {"LOCAL_METRICS_SECONDS": "-15"},
        {"LOCAL_METRICS_SECONDS": "often"},
        {"LOCAL_DISK_MIN_FREE_GB": "-1"},
        {"LOCAL_DISK_MIN_FREE_GB": "ten"},
        {"LOCAL_DISK_EVICT_FREE_GB": "nan"},
        {"LOCAL_DISK_MIN_FREE_GB": "5", "LOCAL_DISK_EVICT_FREE_GB": "6"},
        {"DATABASE_CONN_MAX_AGE": "-1"},
        {"CONSOLE_BACKENDS": "local,aihc", "AIHC_REGION": "beijing"},
        {"CONSOLE_BACKENDS": "local,aihc", "AIHC_ENDPOINT": "ftp://aihc.example.com"},
        # qa46: taken as https://<it>, each of these was a "host" nothing could ever answer at.
        {"CONSOLE_BACKENDS": "local,aihc", "AIHC_ENDPOINT": "http//aihc.example.com"},
        {"CONSOLE_BACKENDS": "local,aihc", "AIHC_ENDPOINT": "%aihc%"},
        {"CONSOLE_BACKENDS": "local,aihc", "AIHC_ENDPOINT": "aihc.example.com:https"},
        {"CONSOLE_BACKENDS": "local,aihc", "AIHC_API_VERSION": "v3"},
        {"CONSOLE_BACKENDS": "local,aihc", "AIHC_POOL_API_VERSIONS": "cce-abc=2"},
        {"CONSOLE_VAR_DIR": "/dev/null/var"},
        {"LOCAL_RUN_DIR": "/dev/null/runs"},
        {"LOCAL_RUN_DIR": "/dev/null"},
        {"ALLOWED_HOSTS": ","},
        {"HTTPS": "1", "ALLOWED_HOSTS": " , "},
        {"CSRF_TRUSTED_ORIGINS": "console.example.com"},
        {"CSRF_TRUSTED_ORIGINS": "https://"},
        {"CSRF_TRUSTED_ORIGINS": "https://console.example.com:8443x y"},
        {"CONSOLE_BACKENDS": ","},
        {"LOCAL_QUEUES": ","},
        {"LOCAL_ACCELERATORS": "baidu.com/a800_80g_cgpu=8,baidu.com/a800_80g_cgpu=4"},
        # A few zeros too many: each made log-ins or the job list answer 500.
        {"SESSION_COOKIE_AGE": "12096000000000"},
        {"LOGIN_THROTTLE_MINUTES": "15000000000000"},
        {"WORKER_STALE_SECONDS": "1e308"},
        {"LOCAL_TMP_MAX_GB": "5e12"},
        # QA 59: a company CA for https webhooks; a wrong path would fail every alert.
        {"ALERT_WEBHOOK_CA_FILE": "/no/such/company-ca.pem"},
        {"ALERT_WEBHOOK_CA_FILE": "/etc/hostname"},
    ],
    ids=lambda variables: list(variables)[-1],
)
def test_startup_stops_with_a_message_naming_the_variable_when_a_value_is_bad(tmp_path, variables):
    result = manage(tmp_path, "check", **variables)

    assert result.returncode == 1
    name = list(variables)[-1]
    assert result.stderr.startswith(f"Configuration error: {name}")
    assert "Traceback" not in result.stderr
    assert "hunter2" not in result.stderr


@pytest.mark.parametrize(
    "sender",
    [
        "console@example.com",
        "AI Job Console <console@example.com>",
        # A machine's own name, as the default's localhost: SMTP servers take it, and until
        # review30 it stopped the start (Django's validator wants a dot in the domain).
        "ai-job-console@gpu01",
        "AI Job Console <ai-job-console@mailhub>",
    ],
)
def test_a_sender_address_on_a_domain_or_a_machines_name_starts_the_console(tmp_path, sender):
    result = manage(tmp_path, "check", DEFAULT_FROM_EMAIL=sender)

    assert result.returncode == 0, result.stderr


def test_a_database_that_cannot_be_reached_stops_the_start_naming_database_url_without_a_traceback(
    tmp_path,
):
    missing_folder = manage(
        tmp_path, "migrate", DATABASE_URL="sqlite:////no/such/folder/console.sqlite3"
    )
    # Any other database error is not the setting's: it keeps its traceback.
    no_table = manage(
        tmp_path,
        "shell",
        "-c",
        "from django.db import connection; connection.cursor().execute('SELECT * FROM no_such_table')",
    )

    assert missing_folder.returncode == 1
    assert missing_folder.stderr == (
        "Configuration error: DATABASE_URL: the database cannot be reached: "
        "unable to open database file\n"
    )
    assert "Traceback" in no_table.stderr and "no such table: no_such_table" in no_table.stderr


def test_a_postgresql_server_not_listening_is_named_without_the_password(tmp_path):
    pytest.importorskip("psycopg")
    port = free_port()  # nothing listens there

    result = manage(
        tmp_path, "migrate", DATABASE_URL=f"postgres://console:hunter2@127.0.0.1:{port}/console"
    )

    assert result.returncode == 1
    assert result.stderr.startswith(
        "Configuration error: DATABASE_URL: the database cannot be reached: connection failed: "
        f'connection to server at "127.0.0.1", port {port} failed: Connection refused'
    )
    assert "Traceback" not in result.stderr and "hunter2" not in result.stderr


def test_a_postgresql_url_without_its_driver_says_how_to_install_it(tmp_path):
    # As on a machine where `.[postgres]` was never installed (the driver unimportable).
    hide_drivers = (
        "import runpy, sys; sys.modules['psycopg'] = sys.modules['psycopg2'] = None; "
        "sys.argv = ['manage.py', 'check']; runpy.run_path('manage.py', run_name='__main__')"
    )
    env = {
        **os.environ,
        "CONSOLE_VAR_DIR": str(tmp_path),
        "DATABASE_URL": "postgres://console:hunter2@127.0.0.1/console",
    }

    result = subprocess.run(
        [sys.executable, "-c", hide_drivers], cwd=ROOT, env=env, capture_output=True, text=True
    )

    assert result.returncode == 1
    assert result.stderr == (
        "Configuration error: DATABASE_URL names PostgreSQL, whose driver is not installed: "
        ".venv/bin/pip install -e '.[postgres]' (make .venv/.installed-postgres)\n"
    )


def test_the_heartbeat_is_read_and_lets_a_short_stale_threshold_through(tmp_path):
    code = (
        "from django.conf import settings as s; "
        "print(s.WORKER_HEARTBEAT_SECONDS, s.WORKER_STALE_SECONDS)"
    )

    given = manage(
        tmp_path,
        "shell",
        "--no-imports",
        "-c",
        code,
        WORKER_POLL_SECONDS="0.1",
        WORKER_HEARTBEAT_SECONDS="1",
        WORKER_STALE_SECONDS="3",
    )
    default = manage(tmp_path, "shell", "--no-imports", "-c", code)

    assert given.returncode == 0, given.stderr
    assert given.stdout.split() == ["1.0", "3.0"]
    assert default.stdout.split() == ["5.0", "60.0"]


def test_the_log_cap_is_read_and_defaults_to_1024_mb(tmp_path):
    code = "from django.conf import settings as s; print(s.LOCAL_LOG_MAX_MB)"

    given = manage(tmp_path, "shell", "--no-imports", "-c", code, LOCAL_LOG_MAX_MB="200")
    default = manage(tmp_path, "shell", "--no-imports", "-c", code)

    assert given.returncode == 0, given.stderr
    assert given.stdout.split() == ["200"]
    assert default.stdout.split() == ["1024"]


def test_the_tmp_cap_is_read_and_defaults_to_50_gb_or_a_quarter_of_the_run_dirs_disk(tmp_path):
    code = (
        "from django.conf import settings as s; "
        "print(s.LOCAL_TMP_MAX_GB, s.LOCAL_TMP_CHECK_SECONDS)"
    )

    given = manage(
        tmp_path,
        "shell",
        "--no-imports",
        "-c",
        code,
        LOCAL_TMP_MAX_GB="0.5",
        LOCAL_TMP_CHECK_SECONDS="2.5",
    )
    default = manage(tmp_path, "shell", "--no-imports", "-c", code)

    assert given.returncode == 0, given.stderr
    assert given.stdout.split() == ["0.5", "2.5"]
    cap, every = default.stdout.split()
    # The run dir (CONSOLE_VAR_DIR/runs) does not exist yet: the disk it will be on.
    disk_gb = shutil.disk_usage(tmp_path).total / 1024**3
    assert float(cap) == min(50, round(disk_gb / 4, 1))
    assert float(every) == 10


def test_the_disk_pressure_thresholds_are_read_and_default_to_10_and_5_percent_of_the_disk_at_most_10_and_5_gb(
    tmp_path,
):
    code = (
        "from django.conf import settings as s; "
        "print(s.LOCAL_DISK_MIN_FREE_GB, s.LOCAL_DISK_EVICT_FREE_GB)"
    )

    given = manage(
        tmp_path,
        "shell",
        "--no-imports",
        "-c",
        code,
        LOCAL_DISK_MIN_FREE_GB="20",
        LOCAL_DISK_EVICT_FREE_GB="7.5",
    )
    start_only = manage(tmp_path, "shell", "--no-imports", "-c", code, LOCAL_DISK_MIN_FREE_GB="0.5")
    default = manage(tmp_path, "shell", "--no-imports", "-c", code)

    assert given.returncode == 0, given.stderr
    assert given.stdout.split() == ["20.0", "7.5"]
    # A start threshold set lower than the eviction default lowers the eviction one with it.
    assert start_only.stdout.split() == ["0.5", "0.5"]
    disk_gb = shutil.disk_usage(tmp_path).total / 1024**3
    assert [float(v) for v in default.stdout.split()] == [
        min(round(disk_gb * 0.10, 1), 10.0),
        min(round(disk_gb * 0.05, 1), 5.0),
    ]


@pytest.mark.parametrize(("value", "allowed"), [("", "False"), ("Yes", "True")])
def test_reviewers_may_approve_their_own_jobs_only_when_the_setting_turns_it_on(
    tmp_path, value, allowed
):
    code = "from jobs.review import policy_from_settings as p; print(p().allow_self_approval)"

    result = manage(tmp_path, "shell", "--no-imports", "-c", code, REVIEW_ALLOW_SELF_APPROVAL=value)

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == allowed


def test_the_aihc_backend_starts_with_a_known_region_or_an_endpoint(tmp_path):
    region = manage(tmp_path, "check", CONSOLE_BACKENDS="local,aihc", AIHC_REGION="cn-suzhou")
    endpoint = manage(
        tmp_path,
        "check",
        CONSOLE_BACKENDS="local,aihc",
        AIHC_REGION="anything",
        AIHC_ENDPOINT="http://127.0.0.1:8900",
        AIHC_POOL_API_VERSIONS="cce-abc=V2",
    )

    assert region.returncode == 0, region.stderr
    assert endpoint.returncode == 0, endpoint.stderr


def test_a_relative_var_dir_is_taken_from_the_checkout_whatever_folder_a_command_runs_in(
    tmp_path,
):
    # qa46: CONSOLE_VAR_DIR=var2 was read from the folder a command ran in (so a manage.py run
    # elsewhere had another database), and stopped the start blaming LOCAL_VOLUMES, whose
    # default it had made relative.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    relative = os.path.relpath(tmp_path / "state", ROOT)
    show = "from django.conf import settings as s; print(s.VAR_DIR, s.LOCAL_RUN_DIR)"

    result = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "shell", "-c", show],
        cwd=elsewhere,
        env={**os.environ, "CONSOLE_VAR_DIR": relative},
        capture_output=True,
        text=True,
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[-2] == f"{tmp_path / 'state'} {tmp_path / 'state' / 'runs'}"
    assert (tmp_path / "state" / "secret_key").exists()
    assert not (elsewhere / relative).exists()


def test_an_empty_variable_means_its_default_and_an_empty_secret_file_is_refused(tmp_path):
    empty = tmp_path / "secret_key_mounted"
    empty.write_text("\n")

    show = "from django.conf import settings as s; print(s.ALLOWED_HOSTS, s.CONSOLE_BACKENDS)"
    defaults = manage(tmp_path, "shell", "-c", show, ALLOWED_HOSTS="", CONSOLE_BACKENDS="")
    refused = manage(tmp_path, "check", SECRET_KEY_FILE=str(empty))

    assert defaults.returncode == 0, defaults.stderr
    assert defaults.stdout.split("\n")[-2] == "['127.0.0.1', 'localhost', '[::1]'] ['local']"
    assert refused.returncode == 1
    assert refused.stderr.strip() == f"Configuration error: SECRET_KEY_FILE={empty} is empty"


def test_processes_starting_together_on_a_fresh_var_folder_share_one_secret_key(tmp_path):
    """The web server and the worker (or two test processes) start at once on a fresh
    CONSOLE_VAR_DIR: each makes or reads the same key, none fails on the other's file."""
    show = "from django.conf import settings as s; print(s.SECRET_KEY)"
    env = {**os.environ, "CONSOLE_VAR_DIR": str(tmp_path)}
    env.pop("SECRET_KEY", None)
    starts = [
        subprocess.Popen(
            [sys.executable, "manage.py", "shell", "-c", show],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    answers = [start.communicate(timeout=120) for start in starts]

    assert [start.returncode for start in starts] == [0] * 4, [err for _, err in answers]
    keys = {out.strip().splitlines()[-1] for out, _ in answers}
    assert keys == {(tmp_path / "secret_key").read_text().strip()}
    assert (tmp_path / "secret_key").stat().st_mode & 0o777 == 0o600


def test_a_secret_key_file_left_empty_is_refused_saying_to_delete_it(tmp_path):
    (tmp_path / "secret_key").write_text("")

    refused = manage(tmp_path, "check")

    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        f"Configuration error: {tmp_path / 'secret_key'} is empty: delete it, and a new key is "
        "made."
    )


def test_a_rotated_secret_key_still_opens_api_keys_and_signatures_listed_as_a_fallback(tmp_path):
    old, new = "old-secret-key-" + "o" * 40, "new-secret-key-" + "n" * 40
    made = manage(
        tmp_path,
        "shell",
        "-c",
        "from django.core import signing; from jobs.api_keys import seal; "
        "print(seal('the-api-secret', access_key_id='AK1')); print(signing.dumps('signed'))",
        SECRET_KEY=old,
    )
    assert made.returncode == 0, made.stderr
    sealed, signed = made.stdout.split("\n")[-3:-1]
    open_both = (
        "from django.core import signing; from jobs.api_keys import unseal; "
        f"print(unseal({sealed!r}, access_key_id='AK1')); print(signing.loads({signed!r}))"
    )
    listed = tmp_path / "secret_key_fallbacks"
    listed.write_text(f"an-even-older-key\n{old}\n")

    rotated = manage(
        tmp_path, "shell", "-c", open_both, SECRET_KEY=new, SECRET_KEY_FALLBACKS=f"x,{old}"
    )
    mounted = manage(
        tmp_path, "shell", "-c", open_both, SECRET_KEY=new, SECRET_KEY_FALLBACKS_FILE=str(listed)
    )
    forgotten = manage(
        tmp_path,
        "shell",
        "-c",
        f"from jobs.api_keys import unseal; print(unseal({sealed!r}, access_key_id='AK1'))",
        SECRET_KEY=new,
        SECRET_KEY_FALLBACKS="",
    )

    assert rotated.stdout.split("\n")[-3:-1] == ["the-api-secret", "signed"], rotated.stderr
    assert mounted.stdout.split("\n")[-3:-1] == ["the-api-secret", "signed"], mounted.stderr
    assert forgotten.stdout.split("\n")[-2] == "None"


def test_a_database_restored_with_another_secret_key_is_reported_at_start(client, alice, settings):
    from django.core import checks

    from jobs.api_keys import api_key_create

    api_key_create(owner=alice, description="nightly")
    client.force_login(alice)
    old = settings.SECRET_KEY

    as_backed_up = checks.run_checks(databases=["default"])
    settings.SECRET_KEY = "a-key-generated-anew-after-the-restore"
    restored_without_key = checks.run_checks(databases=["default"])
    static_only = checks.run_checks()  # `manage.py check` without --database
    settings.SECRET_KEY_FALLBACKS = [old]
    old_key_listed = checks.run_checks(databases=["default"])

    assert [m for m in as_backed_up if m.id == "jobs.W001"] == []
    [warning] = [m for m in restored_without_key if m.id == "jobs.W001"]
    assert warning.msg.startswith(
        "SECRET_KEY does not open what the database holds: 1 of the 1 newest API access keys "
        "in use and 1 of the 1 newest sessions were sealed with another key"
    )
    assert "SECRET_KEY_FALLBACKS" in warning.hint
    assert [m for m in static_only if m.id == "jobs.W001"] == []
    assert [m for m in old_key_listed if m.id == "jobs.W001"] == []


def test_the_secret_key_warning_names_the_key_file_of_the_var_dir_in_use(
    client, alice, settings, tmp_path
):
    """qa89: with CONSOLE_VAR_DIR set, the hint still said to put the key back in
    var/secret_key, a file this console never reads."""
    from django.core import checks

    client.force_login(alice)
    settings.VAR_DIR = tmp_path / "console-state"
    settings.SECRET_KEY = "a-key-generated-anew-after-the-restore"

    [warning] = [m for m in checks.run_checks(databases=["default"]) if m.id == "jobs.W001"]

    assert f"Put the key back ({tmp_path / 'console-state' / 'secret_key'}, " in warning.hint
    assert "var/secret_key," not in warning.hint


def test_a_trusted_origin_with_a_path_after_its_host_starts_the_console_as_its_origin(tmp_path):
    # Started the console before start-up checked the list: it keeps starting it.
    code = "from django.conf import settings as s; print(s.CSRF_TRUSTED_ORIGINS)"
    origins = "https://console.example.com/,http://[::1]:8000/console?x#y,https://b.example.com"

    result = manage(tmp_path, "shell", "-c", code, CSRF_TRUSTED_ORIGINS=origins)

    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[-2] == str(
        ["https://console.example.com", "http://[::1]:8000", "https://b.example.com"]
    )


def test_the_secret_key_check_tries_only_the_newest_usable_api_keys(alice, settings, monkeypatch):
    from django.core import checks

    from jobs import api_keys

    settings.SECRET_KEY = "the-key-before-the-restore"
    for n in range(2):
        api_keys.api_key_create(owner=alice, description=f"old {n}")
    revoked, _secret = api_keys.api_key_create(owner=alice, description="revoked")
    api_keys.api_key_revoke(key=revoked)
    settings.SECRET_KEY = "the-key-after-it"
    api_keys.api_key_create(owner=alice, description="made since")

    every_key = checks.run_checks(databases=["default"])
    # A sample of one (the sample's size, not a behaviour: 200 keys take a while to make).
    monkeypatch.setattr(api_keys, "KEYS_SAMPLED", 1)
    newest_only = checks.run_checks(databases=["default"])

    # The revoked key, sealed with the old key too, is not tried.
    [warning] = [m for m in every_key if m.id == "jobs.W001"]
    assert "2 of the 3 newest API access keys in use" in warning.msg
    # The newest key opens, and the older ones are not read.
    assert [m for m in newest_only if m.id == "jobs.W001"] == []


def test_every_variable_left_empty_starts_the_console_on_its_defaults(tmp_path):
    # An env file or compose file with `NAME=` lines: each counts as unset, as README says.
    names = [
        *("HOST", "PORT", "WEB_WORKERS", "WEB_THREADS", "DEFAULT_FROM_EMAIL"),
        *("AIHC_REGION", "AIHC_ENDPOINT", "AIHC_API_VERSION", "LOCAL_BWRAP", "LOCAL_PORTS"),
    ]
    show = f"from django.conf import settings as s; print([getattr(s, n) for n in {names!r}])"

    result = manage(
        tmp_path, "shell", "-c", show, CONSOLE_BACKENDS="local,aihc", **dict.fromkeys(names, "")
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[-2] == str(
        [
            "127.0.0.1",
            8000,
            2,
            4,
            "ai-job-console@localhost",
            "cn-beijing",
            "",
            "v1",
            "/usr/bin/bwrap",
            (20000, 29999),
        ]
    )


def test_replicas_are_sampled_every_local_metrics_seconds_by_default_15(tmp_path):
    code = "from django.conf import settings as s; print(s.LOCAL_METRICS_SECONDS)"

    given = manage(tmp_path, "shell", "--no-imports", "-c", code, LOCAL_METRICS_SECONDS="2.5")
    default = manage(tmp_path, "shell", "--no-imports", "-c", code)

    assert given.returncode == 0, given.stderr
    assert given.stdout.split() == ["2.5"]
    assert default.stdout.split() == ["15.0"]


def test_a_request_from_an_unknown_host_is_logged_as_one_warning_line_without_a_traceback(
    client, caplog
):
    # Found in QA: each such request (a scanner, a mistyped address) was an ERROR with a
    # ten-line traceback, the Host header written in full twice, however long it was sent.
    client.get("/", HTTP_HOST="console.example.com")
    client.get("/", HTTP_HOST="a" * 3000)

    records = [r for r in caplog.records if r.name == "django.security.DisallowedHost"]
    assert [r.levelname for r in records] == ["WARNING", "WARNING"]
    assert all(r.exc_info is None and r.exc_text is None for r in records)
    assert "'console.example.com'" in records[0].getMessage()
    assert len(records[1].getMessage()) <= 301
    assert "a" * 3000 not in caplog.text


def test_a_refused_admin_filter_and_too_many_fields_are_each_one_warning_line_naming_the_path(
    superuser, caplog, settings
):
    """qa90: each was an ERROR with a 40-line traceback: anyone could flood the log."""
    client = Client(raise_request_exception=False)
    client.force_login(superuser)
    settings.DATA_UPLOAD_MAX_NUMBER_FIELDS = 5

    refused = client.get("/admin/jobs/job/?spec__icontains=x")
    too_many = client.post("/login/", {f"f{n}": "x" for n in range(10)})

    assert (refused.status_code, too_many.status_code) == (400, 400)
    records = [r for r in caplog.records if r.name.startswith("django.security.")]
    assert [r.name.rpartition(".")[2] for r in records] == [
        "DisallowedModelAdminLookup",
        "TooManyFieldsSent",
    ]
    assert all(r.levelname == "WARNING" and r.exc_info is None for r in records)
    assert records[0].getMessage().endswith(": /admin/jobs/job/")
    assert records[1].getMessage().endswith(": /login/")
    assert "Traceback" not in caplog.text


def test_the_csrf_cookie_is_out_of_scripts_reach(client):
    """qa90: it was readable from JavaScript, which no script of the console needs (htmx
    sends the token the page carries)."""
    r = client.get("/login/")

    assert r.cookies["csrftoken"]["httponly"]


@pytest.mark.parametrize(
    ("uid", "variables", "warned"),
    [
        (0, {}, {"jobs.W002", "jobs.W003"}),
        (0, {"LOCAL_JOB_UID_BASE": 200000}, {"jobs.W003"}),
        (0, {"LOCAL_JOB_NETWORK": "isolated-outbound"}, {"jobs.W002"}),
        (0, {"LOCAL_JOB_UID_BASE": 200000, "LOCAL_JOB_NETWORK": "isolated"}, set()),
        (0, {"CONSOLE_BACKENDS": ["aihc"]}, set()),
        (1000, {}, set()),
    ],
)
def test_running_as_root_warns_of_local_jobs_as_uid_0_or_on_the_hosts_network(
    settings, monkeypatch, uid, variables, warned
):
    """qa90: a root worker's jobs (the defaults) read another console's var/secret_key and
    reached this console on 127.0.0.1; the defaults stay, and the checks say so."""
    from jobs.checks import local_jobs_run_as_root

    for name, value in variables.items():
        setattr(settings, name, value)
    monkeypatch.setattr(os, "geteuid", lambda: uid)

    found = local_jobs_run_as_root()

    assert {w.id for w in found} == warned
    for warning in found:
        named = "LOCAL_JOB_UID_BASE" if warning.id == "jobs.W002" else "LOCAL_JOB_NETWORK"
        assert named in warning.msg and named in warning.hint


@pytest.mark.skipif(os.geteuid() != 0, reason="says so only when run as root")
def test_manage_check_deploy_run_as_root_says_both_warnings_with_the_defaults(tmp_path):
    result = manage(tmp_path, "check", "--deploy")

    assert "(jobs.W002) Running as root with LOCAL_JOB_UID_BASE unset" in result.stderr
    assert "(jobs.W003) Running as root with LOCAL_JOB_NETWORK=host" in result.stderr


def test_a_short_database_password_is_masked_where_it_stands_alone_not_inside_other_words():
    from manage import without_password

    reason = (
        'connection to server at "127.0.0.1", port 5432 failed: FATAL: password authentication '
        'failed for user "console" (dsn postgres://console:p@127.0.0.1/console, password=p)'
    )

    assert without_password(reason, "p") == (
        'connection to server at "127.0.0.1", port 5432 failed: FATAL: password authentication '
        'failed for user "console" (dsn postgres://console:***@127.0.0.1/console, password=***)'
    )
    assert without_password("dsn u:p!@h, p!x", "p!") == "dsn u:***@h, ***x"
    assert without_password("hunter2 was refused", "hunter2") == "*** was refused"


def test_a_database_password_is_masked_however_the_connection_string_echoes_it():
    # Review 18c: only the password as it is was masked, after the message's whitespace was
    # made single spaces: a password with a run of spaces, or quoted and escaped as libpq's
    # connection strings write it, or percent-encoded in a URL, was shown as it was.
    from manage import without_password

    cases = [  # (password, message, what must not be shown of it)
        ("two  spaces", "FATAL: bad password=two  spaces\nfor user", ["two", "spaces"]),
        ("it's a \\secret", r"bad: password='it\'s a \\secret' port=5432", ["it", "secret"]),
        ("p@ss wd/1", "cannot reach postgres://console:p%40ss%20wd%2F1@db/db", ["ss", "wd"]),
        ("p@ss wd", "cannot reach postgres://console:p%40ss+wd@db/db", ["ss", "wd"]),
    ]
    for password, reason, parts in cases:
        shown = without_password(reason, password)
        assert "***" in shown and "\n" not in shown, shown
        assert not any(part in shown for part in parts), shown
    # Whatever the password is: a password= value and a URL's user:…@ are masked too.
    assert without_password("dsn password='x y' host=db", "other") == "dsn password=*** host=db"
    assert (
        without_password("u postgres://console:abc@db/x", None) == "u postgres://console:***@db/x"
    )
    # And the port, the user and the message's words stay readable.
    assert without_password("port 5432 user console password=p", "p") == (
        "port 5432 user console password=***"
    )


def test_the_sqlite_database_is_readable_by_the_consoles_user_only(tmp_path):
    # Found in QA: it was made 0644 (the umask's), so under a checkout in /srv any account on
    # the machine could read its session keys and log in as whoever they belong to.
    env = {**os.environ, "CONSOLE_VAR_DIR": str(tmp_path)}
    env.pop("DATABASE_URL", None)
    database = tmp_path / "console.sqlite3"
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    assert database.stat().st_mode & 0o777 == 0o600
    # An older install's files, made 0644, are set so at the next start: the -wal file too,
    # here held open (with a write in it) by a connection of the console still running.
    running = sqlite3.connect(database)
    running.execute("CREATE TABLE recent (x)")
    running.commit()
    files = [database, tmp_path / "console.sqlite3-wal", tmp_path / "console.sqlite3-shm"]
    for file in files:
        file.chmod(0o644)

    subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, check=True, capture_output=True
    )

    assert [file.stat().st_mode & 0o777 for file in files] == [0o600, 0o600, 0o600]
    running.close()


def test_check_deploy_with_the_readmes_production_settings_reports_only_what_the_readme_explains(
    tmp_path, monkeypatch
):
    # Set by the browser tests' fixture (tests/conftest.py) in this process; no deployment has it.
    monkeypatch.delenv("DJANGO_ALLOW_ASYNC_UNSAFE", raising=False)
    production = {
        "HTTPS": "1",
        "ALLOWED_HOSTS": "console.example.com",
        "SITE_URL": "https://console.example.com",
        # README's "Before a shared server": run as root (as here), the console warns without
        # them (jobs.W002, jobs.W003).
        "LOCAL_JOB_UID_BASE": "200000",
        "LOCAL_JOB_NETWORK": "isolated",
    }

    without_mail = manage(tmp_path, "check", "--deploy", **production)
    with_mail = manage(tmp_path, "check", "--deploy", EMAIL_HOST="smtp.example.com", **production)

    # The proxy redirects to HTTPS (W008); HSTS preload is the operator's choice (W021); without
    # EMAIL_HOST mail goes to the log (mail.E001). README "Behind a reverse proxy with TLS".
    def issues(result):
        return set(re.findall(r"^\?: \(([a-z]+\.[A-Z]\d+)\)", result.stderr, re.MULTILINE))

    assert with_mail.returncode == 0, with_mail.stderr
    assert issues(with_mail) == {"security.W008", "security.W021"}
    assert without_mail.returncode == 1
    assert issues(without_mail) == {"mail.E001", "security.W008", "security.W021"}
