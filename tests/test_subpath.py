"""The console under a sub-path of a company site (qa50): https://intranet.example.com/ai-console/
behind nginx, next to other apps on the same host. SITE_URL's path is the sub-path (README "Under
a sub-path"); the proxy strips it before passing a request on, as the README's nginx snippet does.

The browser tests go through a small reverse proxy bound to 127.0.0.1 that does what that nginx
snippet does: `/ai-console/...` is passed on without the prefix, with the client's Host header;
anything else is "another app" (a 404 the proxy answers itself), and is recorded: an address the
console wrote without its prefix (a hard-coded `/jobs/...`) ends up there."""

from __future__ import annotations

import http.client
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx
import pytest
from django.test import Client
from django.urls import set_script_prefix
from playwright.sync_api import expect

from jobs.aihc import signer
from jobs.runner import free_port
from tests.conftest import BROWSER_TIMEOUT_MS
from tests.runner_helpers import runner_settings  # noqa: F401
from tests.test_serve import start_serve
from tests.test_wizard import A800, V100
from tests.test_wizard_browser import fill_basic, fill_image, next_step

ROOT = Path(__file__).resolve().parent.parent
PREFIX = "/ai-console"
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "upgrade", "trailer"}


def manage_shell(tmp_path: Path, code: str, **variables: str) -> str:
    env = {**os.environ, "CONSOLE_VAR_DIR": str(tmp_path), **variables}
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "--verbosity", "0", "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_a_site_url_with_a_path_puts_every_address_and_cookie_of_the_console_under_it(tmp_path):
    code = (
        "from django.conf import settings as s; from django.urls import reverse; "
        "from django.templatetags.static import static; "
        "from jobs.alerts import job_link; from jobs.models import Job; "
        "print(s.FORCE_SCRIPT_NAME, s.SESSION_COOKIE_PATH, s.CSRF_COOKIE_PATH, "
        "s.LANGUAGE_COOKIE_PATH, static('console.css'), reverse('job-list'), "
        "job_link(Job(public_id='pytorchjob-abc')))"
    )
    out = manage_shell(tmp_path, code, SITE_URL="https://intranet.example.com/ai-console/")
    assert out.split() == [
        "/ai-console",
        "/ai-console",
        "/ai-console",
        "/ai-console",
        "/ai-console/static/console.css",
        "/ai-console/",
        # Once, not /ai-console/ai-console/: the worker's addresses carry the prefix already.
        "https://intranet.example.com/ai-console/jobs/pytorchjob-abc/",
    ]


def test_links_made_in_another_thread_as_the_worker_delivers_alerts_keep_the_sub_path(tmp_path):
    """The worker delivers alerts and mails in a thread of its own (jobs.worker.TaskThread),
    where Django's script prefix is not set: the link lost the sub-path (review32)."""
    code = (
        "import threading; from jobs.alerts import job_link; from jobs.models import Job\n"
        "t = threading.Thread(target=lambda: print(job_link(Job(public_id='pytorchjob-abc'))))\n"
        "t.start(); t.join()\n"
    )
    out = manage_shell(tmp_path, code, SITE_URL="https://intranet.example.com/ai-console")
    assert out.split() == ["https://intranet.example.com/ai-console/jobs/pytorchjob-abc/"]


def test_a_site_url_without_a_path_changes_nothing(tmp_path):
    code = (
        "from django.conf import settings as s; from jobs.alerts import job_link; "
        "from jobs.models import Job; print(s.FORCE_SCRIPT_NAME, s.SESSION_COOKIE_PATH, "
        "job_link(Job(public_id='pytorchjob-abc')))"
    )
    out = manage_shell(tmp_path, code, SITE_URL="https://console.example.com/")
    assert out.split() == ["None", "/", "https://console.example.com/jobs/pytorchjob-abc/"]


def test_the_wsgi_application_gunicorn_serves_links_its_static_files_under_the_sub_path(tmp_path):
    """As gunicorn loads it (console.wsgi, no script prefix set before the first request):
    Django adds the prefix to a relative STATIC_URL only when first read, which WhiteNoise
    did at start, so every page linked /static/... (the other app's) and had no style."""
    code = (
        "from console.wsgi import application; from wsgiref.util import setup_testing_defaults\n"
        "environ = {}; setup_testing_defaults(environ)\n"
        "environ.update(PATH_INFO='/login/', SCRIPT_NAME='', HTTP_HOST='intranet.example.com')\n"
        "print(b''.join(application(environ, lambda status, headers: None)).decode())\n"
    )
    env = {
        **os.environ,
        "CONSOLE_VAR_DIR": str(tmp_path),
        "DJANGO_SETTINGS_MODULE": "console.settings",
        "SITE_URL": "https://intranet.example.com/ai-console",
        "ALLOWED_HOSTS": "intranet.example.com",
    }
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    addresses = re.findall(r'(?:href|src|action)="(/[^"]*)"', result.stdout)
    assert "/ai-console/static/console.css" in addresses
    assert [a for a in addresses if not a.startswith(PREFIX + "/")] == []


@pytest.fixture
def under_prefix(settings) -> Iterator[None]:
    """The test client's requests as the proxy passes them on (paths without the prefix),
    with what console/settings.py makes of SITE_URL=https://intranet.example.com/ai-console."""
    settings.SITE_URL = "https://intranet.example.com" + PREFIX
    settings.ALLOWED_HOSTS = ["intranet.example.com"]
    settings.FORCE_SCRIPT_NAME = PREFIX
    settings.SESSION_COOKIE_PATH = settings.CSRF_COOKIE_PATH = PREFIX
    settings.LANGUAGE_COOKIE_PATH = PREFIX
    settings.STATIC_URL = PREFIX + "/static/"
    # What Django's WSGIHandler does at each request (the test client's handler does not).
    set_script_prefix(PREFIX)
    yield
    set_script_prefix("/")  # what each request set, for the tests after this one


@pytest.mark.parametrize(
    ("next_address", "landing"),
    [
        ("/other-app/", f"{PREFIX}/"),  # on the site, but another app's
        ("/", f"{PREFIX}/"),
        ("https://intranet.example.com/other-app/", f"{PREFIX}/"),
        ("https://evil.example.com/ai-console/", f"{PREFIX}/"),
        (f"{PREFIX}/account/usage/", f"{PREFIX}/account/usage/"),
        # Under the prefix as written, another app's once the browser resolves the dots.
        (f"{PREFIX}/../other-app/", f"{PREFIX}/"),
        (f"{PREFIX}/%2e%2E/other-app/", f"{PREFIX}/"),
        (f"{PREFIX}/.%2e/other-app/", f"{PREFIX}/"),
        (f"{PREFIX}/..%5Cother-app/", f"{PREFIX}/"),
        (f"{PREFIX}/.%09./other-app/", f"{PREFIX}/"),
        (f"{PREFIX}2/", f"{PREFIX}/"),  # another app whose name starts as the console's
    ],
)
def test_logging_in_goes_to_next_only_when_it_is_an_address_of_the_console(
    client, alice, under_prefix, next_address, landing
):
    response = client.post(
        f"/login/?next={next_address}",
        {"username": "alice", "password": "alice-password"},
        HTTP_HOST="intranet.example.com",
    )
    assert response.status_code == 302
    assert response["Location"] == landing
    assert client.session.get("_auth_user_id") == str(alice.pk)


@pytest.mark.parametrize(
    ("next_address", "landing"),
    [
        ("/other-app/", f"{PREFIX}/admin/"),
        (f"{PREFIX}/../other-app/", f"{PREFIX}/admin/"),
        (f"{PREFIX}/admin/jobs/job/", f"{PREFIX}/admin/jobs/job/"),
    ],
)
def test_logging_in_to_the_admin_goes_to_next_only_when_it_is_an_address_of_the_console(
    client, reviewer, under_prefix, next_address, landing
):
    response = client.post(
        f"/admin/login/?next={next_address}",
        {"username": "carol", "password": "carol-password", "next": next_address},
        HTTP_HOST="intranet.example.com",
    )
    assert response.status_code == 302
    assert response["Location"] == landing
    assert client.session.get("_auth_user_id") == str(reviewer.pk)


def test_logging_out_with_next_outside_the_sub_path_lands_on_the_console_login_page(
    alice_client, under_prefix
):
    response = alice_client.post("/logout/?next=/other-app/", HTTP_HOST="intranet.example.com")
    assert response.status_code == 302
    assert response["Location"] == f"{PREFIX}/login/"
    assert "_auth_user_id" not in alice_client.session


@pytest.mark.parametrize("sent", [{}, {"next": "/other-app/"}])
def test_choosing_a_language_without_a_next_address_of_the_console_stays_under_it(
    alice_client, under_prefix, sent
):
    response = alice_client.post(
        "/i18n/setlang/", {"language": "en", **sent}, HTTP_HOST="intranet.example.com"
    )
    assert response.status_code == 302
    assert response["Location"] == f"{PREFIX}/"
    assert response.cookies["django_language"].value == "en"
    assert response.cookies["django_language"]["path"] == PREFIX


@pytest.mark.parametrize("template", ["400.html", "500.html", "503_database.html"])
def test_the_error_pages_link_back_to_the_job_list_under_the_sub_path(under_prefix, template):
    from django.template import loader

    html = loader.render_to_string(template)
    assert re.findall(r'href="([^"]*)"', html) == [f"{PREFIX}/"]


class PrefixProxy:
    """nginx's `location /ai-console/ { proxy_pass http://127.0.0.1:8000/; }`, in a thread."""

    def __init__(self, upstream: str) -> None:
        target = urlsplit(upstream)
        self.outside: list[str] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def relay(self) -> None:
                if not self.path.startswith(PREFIX + "/"):
                    proxy.outside.append(f"{self.command} {self.path}")
                    body = b"another app"
                    self.send_response(404)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
                headers["X-Forwarded-Proto"] = "http"
                connection = http.client.HTTPConnection(target.hostname, target.port, timeout=30)
                connection.request(
                    self.command, self.path[len(PREFIX) :], body=body, headers=headers
                )
                response = connection.getresponse()
                data = response.read()
                self.send_response(response.status)
                for name, value in response.getheaders():
                    if name.lower() not in HOP_BY_HOP and name.lower() != "content-length":
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                connection.close()

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = relay

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def console(tmp_path_factory) -> Iterator[PrefixProxy]:
    """A real console (`manage.py serve`: gunicorn, WhiteNoise and the worker) with SITE_URL
    under the prefix, behind the proxy; Alice (a superuser, for the admin) can log in."""
    port = free_port()
    front = PrefixProxy(f"http://127.0.0.1:{port}")
    folder = tmp_path_factory.mktemp("subpath")
    (folder / "scratch").mkdir()
    env = {
        **os.environ,
        "CONSOLE_VAR_DIR": str(folder / "var"),
        "PORT": str(port),
        "SITE_URL": front.url + PREFIX,
        "LOCAL_ACCELERATORS": f"{A800}=8,{V100}=4",
        "LOCAL_VOLUMES": f"scratch={folder / 'scratch'}",
        "WEB_WORKERS": "1",
    }
    server = start_serve(env)
    try:
        manage_shell(
            folder / "var",
            "from django.contrib.auth.models import User; "
            "User.objects.create_superuser('alice', 'alice@example.com', 'alice-password')",
            **{k: v for k, v in env.items() if k != "CONSOLE_VAR_DIR"},
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{front.url}{PREFIX}/login/", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            assert server.poll() is None, "serve exited"
            assert time.monotonic() < deadline, "the console never answered"
            time.sleep(0.3)
        front.manage = lambda code: manage_shell(
            folder / "var", code, **{k: v for k, v in env.items() if k != "CONSOLE_VAR_DIR"}
        )
        yield front
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
        front.close()


@pytest.fixture
def prefixed(browser, console):
    context = browser.new_context(locale="zh-CN")
    context.set_default_timeout(BROWSER_TIMEOUT_MS)
    page = context.new_page()
    page.front = console
    console.outside.clear()
    failed: list[str] = []
    # 401: the answer to an htmx request once the log-in ended, which the page handles.
    page.on(
        "response",
        lambda r: failed.append(r.url) if r.status >= 400 and r.status != 401 else None,
    )
    yield page
    context.close()
    # Nothing the console wrote sent the browser outside its sub-path, and every page,
    # fragment, script and stylesheet was there.
    assert console.outside == []
    assert failed == []


def at(page, path: str = "/") -> str:
    return page.front.url + PREFIX + path


def log_in_under_prefix(page) -> None:
    page.goto(at(page))
    page.wait_for_url(re.compile(rf"{PREFIX}/login/\?next={PREFIX}/$"))
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", "alice-password")
    page.click("#login-submit")
    page.wait_for_url(at(page, "/"))


pytestmark_browser = pytest.mark.browser


@pytestmark_browser
def test_logging_in_and_out_under_the_sub_path_stays_under_it_with_its_own_cookies(prefixed):
    page = prefixed
    log_in_under_prefix(page)
    expect(page.locator("#nav-create-job")).to_be_visible()
    cookies = {c["name"]: c for c in page.context.cookies()}
    assert cookies["sessionid"]["path"] == PREFIX
    assert cookies["csrftoken"]["path"] == PREFIX
    # The stylesheet and scripts came through the prefix (else the page has no style at all).
    assert page.evaluate("getComputedStyle(document.body).fontFamily") != "Times New Roman"
    page.get_by_role("button", name="退出登录").click()
    page.wait_for_url(re.compile(rf"{PREFIX}/login/"))


@pytestmark_browser
def test_the_whole_wizard_runs_under_the_sub_path_and_opens_the_job_there(prefixed):
    page = prefixed
    log_in_under_prefix(page)
    page.click("#nav-create-job")
    page.click("#new-draft")
    page.wait_for_url(re.compile(rf"{PREFIX}/create/[0-9a-f-]+/basic/$"))
    with page.expect_response(lambda r: "/aiak/" in r.url):
        page.check("input[name=creation_mode][value=aiak]")
    page.select_option("#id_training_mode", "SFT")
    page.select_option("#id_training_method", "full")
    with page.expect_response(lambda r: "/aiak/" in r.url and "llama2-7b" in r.url):
        page.select_option("#id_aiak_template", "llama2-7b")
    expect(page.locator("#aiak-fill")).to_contain_text("sft_llama2_7b.sh")
    page.check("input[name=creation_mode][value=custom]")
    fill_basic(page)
    page.fill("#id_image", "registry.example.com/train/pytorch:2.5")
    page.click("#examples summary")
    page.click("#fill-example")
    expect(page.locator("#id_command")).not_to_have_value("")
    fill_image(page)
    expect(page.locator("#idle-0")).to_contain_text("8")
    expect(page.locator("#card-totals")).to_contain_text(A800)
    next_step(page, "data")
    page.fill("#id_mounts-0-mount_path", "/workspace")
    next_step(page, "fault")
    next_step(page, "advanced")
    next_step(page, "submission")
    next_step(page, "review")
    page.click("#wizard-submit")
    page.wait_for_url(re.compile(rf"{PREFIX}/jobs/pytorchjob-"))
    expect(page.locator("h1")).to_contain_text("bert-large")


@pytestmark_browser
def test_a_job_runs_streams_its_log_stops_and_is_deleted_under_the_sub_path(prefixed):
    page = prefixed
    log_in_under_prefix(page)
    page.click("#nav-create-job")
    page.click("#new-draft")
    page.wait_for_url(re.compile(rf"{PREFIX}/create/[0-9a-f-]+/basic/$"))
    fill_basic(page, name="under-prefix")
    page.fill("#id_image", "registry.example.com/train/pytorch:2.5")
    page.fill("#id_command", "for i in $(seq 1 600); do echo tick-$RANK-$i; sleep 0.1; done")
    next_step(page, "resources")
    next_step(page, "data")
    page.fill("#id_mounts-0-mount_path", "/workspace")
    for slug in ("fault", "advanced", "submission", "review"):
        next_step(page, slug)
    page.click("#wizard-submit")
    page.wait_for_url(re.compile(rf"{PREFIX}/jobs/pytorchjob-"))
    job_page = page.url

    # The page follows the job (htmx polling) and tails its log, both through the prefix.
    expect(page.locator("#job-status")).to_have_text(re.compile("运行中"), timeout=30_000)
    expect(page.locator("#log-lines")).to_contain_text("tick-0-", timeout=30_000)
    page.reload()
    with page.expect_download() as download:
        page.click("#log-download")
    assert "tick-0-" in Path(download.value.path()).read_text()

    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#job-stop")
    expect(page.locator("#job-status")).to_have_text(re.compile("已停止"), timeout=30_000)

    # The list, a filter and the job's link from it.
    page.goto(at(page, "/?status=Stopped"))
    page.click("a:has-text('under-prefix')")
    page.wait_for_url(job_page)
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#job-delete")
    page.wait_for_url(re.compile(rf"{PREFIX}/(\?.*)?$"))
    expect(page.locator(f"a[href='{urlsplit(job_page).path}']")).to_have_count(0)


@pytestmark_browser
def test_usage_api_keys_and_the_admin_open_under_the_sub_path(prefixed):
    page = prefixed
    log_in_under_prefix(page)
    page.goto(at(page, "/account/usage/"))
    expect(page.locator("h1")).to_be_visible()
    page.goto(at(page, "/account/keys/"))
    # Scripts are given the public address, prefix and all.
    expect(page.locator("body")).to_contain_text(page.front.url + PREFIX)
    page.goto(at(page, "/admin/"))
    page.click("a[href$='/admin/jobs/job/']")
    page.wait_for_url(at(page, "/admin/jobs/job/"))
    page.goto(at(page, "/admin/"))
    page.click("a[href$='/admin/logout/']") if page.locator(
        "a[href$='/admin/logout/']"
    ).count() else (page.click("#logout-form button"))
    page.wait_for_url(re.compile(rf"{PREFIX}/(admin/)?(login|logout)/"))


@pytestmark_browser
def test_a_step_sent_after_the_log_in_ended_is_saved_after_logging_in_again_under_the_sub_path(
    prefixed,
):
    page = prefixed
    log_in_under_prefix(page)
    page.click("#nav-create-job")
    page.click("#new-draft")
    fill_basic(page, name="typed-while-logged-out")
    other = page.context.new_page()
    other.goto(at(page))
    other.get_by_role("button", name="退出登录").click()
    other.wait_for_url(re.compile(rf"{PREFIX}/login/"))

    page.fill("#id_image", "registry.example.com/train/pytorch:2.5")
    page.fill("#id_command", "torchrun typed-while-logged-out.py")
    page.click("#wizard-next")
    expect(page.locator("#request-error")).to_contain_text("请刷新页面重新登录")
    page.reload()
    page.wait_for_url(re.compile(rf"{PREFIX}/login/\?next={PREFIX}/create/"))
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", "alice-password")
    page.click("#login-submit")
    page.wait_for_url(re.compile(rf"{PREFIX}/create/[0-9a-f-]+/resources/$"))
    page.click("#wizard-back")
    expect(page.locator("#id_command")).to_have_value("torchrun typed-while-logged-out.py")


def test_a_script_signing_the_path_under_the_sub_path_is_answered_through_the_proxy(console):
    """The README's promise for scripts: SITE_URL is their endpoint, and the path they sign
    is the one they send, /ai-console/api/v1/... (the console checks it with the prefix)."""
    key_id, secret = console.manage(
        "from django.contrib.auth.models import User; from jobs.api_keys import api_key_create; "
        "key, secret = api_key_create(owner=User.objects.get(username='alice')); "
        "print(key.access_key_id, secret)"
    ).split()
    host = urlsplit(console.url).netloc

    def describe_jobs(signed_path: str) -> httpx.Response:
        timestamp = signer.canonical_time(time.time())
        headers = {"Host": host, "x-bce-date": timestamp}
        params = [("resourcePoolId", "local")]
        headers["Authorization"] = signer.authorization(
            access_key=key_id,
            secret_key=secret,
            method="GET",
            path=signed_path,
            params=params,
            headers=headers,
            timestamp=timestamp,
        )
        return httpx.get(
            f"{console.url}{PREFIX}/api/v1/aijobs?resourcePoolId=local", headers=headers
        )

    answered = describe_jobs(f"{PREFIX}/api/v1/aijobs")
    assert answered.status_code == 200, answered.text
    assert "jobs" in answered.json()["result"]
    # A path signed without the prefix is not the one sent.
    refused = describe_jobs("/api/v1/aijobs")
    assert refused.status_code == 403
    assert refused.json()["code"] == "SignatureDoesNotMatch"


# -- every address on the pages (left31) -------------------------------------------------

# Attributes that hold an address the browser follows, fetches or sends to: links, forms,
# scripts and styles, and htmx's requests.
ADDRESS_ATTRIBUTES = re.compile(
    r"\s(href|src|action|formaction|hx-get|hx-post|hx-put|hx-patch|hx-delete|data-[a-z-]*url)"
    r'="([^"]*)"'
)


def addresses_outside(page: str, *, at: str) -> list[str]:
    """The addresses on a page at `at` (its public address) that a browser would resolve
    outside the sub-path."""
    outside = []
    for attribute, value in ADDRESS_ATTRIBUTES.findall(page):
        address = value.replace("&amp;", "&")
        if address.startswith(("mailto:", "javascript:")):
            continue
        parts = urlsplit(urljoin(at, address))  # as the browser resolves `../password/`
        if parts.scheme and parts.netloc != "intranet.example.com":
            continue  # another site (documentation links)
        # The prefix alone: the admin's View site (nginx's `location =` sends it on to /).
        if parts.path != PREFIX and not parts.path.startswith(PREFIX + "/"):
            outside.append(f"{attribute}={address}")
    return outside


@pytest.mark.usefixtures("runner_settings")
def test_every_link_form_and_htmx_address_on_the_consoles_pages_keeps_the_sub_path(
    superuser, under_prefix
):
    """Follows every link from the job list, the drafts, My usage, the keys page and the
    admin (their pages, sorts, filters and CSV exports), as a person clicking would, and
    reads every address on each page: none may leave /ai-console/ (README "Under a
    sub-path"). Enough jobs and drafts for a second page of each list."""
    from django.utils import timezone

    from jobs.api_keys import api_key_create
    from jobs.models import Job, JobStatus
    from jobs.services import jobs_submit
    from jobs.views import PAGE_SIZE
    from jobs.wizard import draft_create

    from .runner_helpers import make_spec

    jobs = [
        jobs_submit(
            owner=superuser,
            spec=make_spec("echo hi", name=f"job-{n}"),
            submit_key=f"k{n}",
            backend="local",
        )[0]
        for n in range(PAGE_SIZE + 2)
    ]
    # One that ended: its page has Run again, Copy & edit, Delete and its log's links.
    Job.objects.filter(pk=jobs[0].pk).update(
        status=JobStatus.FAILED, started_at=timezone.now(), finished_at=timezone.now()
    )
    for _n in range(PAGE_SIZE + 2):
        draft_create(owner=superuser)
    api_key_create(owner=superuser, description="ci")
    client = Client(HTTP_HOST="intranet.example.com")
    client.force_login(superuser)

    seen: set[str] = set()
    queue = [
        "/",
        f"/jobs/{jobs[0].public_id}/",
        f"/jobs/{jobs[0].public_id}/logs/",
        "/create/",
        "/account/usage/",
        "/account/keys/",
        "/admin/",
        "/pools/",
    ]
    outside: dict[str, list[str]] = {}
    shapes: dict[tuple[str, tuple[str, ...]], int] = {}
    while queue and len(seen) < 800:
        path = queue.pop(0)
        if path in seen:
            continue
        seen.add(path)
        response = client.get(path)
        assert response.status_code in (200, 302, 404), (path, response.status_code)
        if response.status_code == 302:
            assert response["Location"].startswith((PREFIX + "/", "?")), path
            continue
        if "html" not in response.get("Content-Type", ""):
            continue  # a CSV export, a log download
        page = response.content.decode()
        if found := addresses_outside(page, at=f"https://intranet.example.com{PREFIX}{path}"):
            outside[path] = found
        public = f"https://intranet.example.com{PREFIX}{path}"
        for address in re.findall(r'\shref="([^"#]*)"', page):
            parts = urlsplit(urljoin(public, address.replace("&amp;", "&")))
            if parts.netloc != "intranet.example.com" or not parts.path.startswith(PREFIX + "/"):
                continue
            local = parts.path.removeprefix(PREFIX) + (f"?{parts.query}" if parts.query else "")
            # Not the log-out nor static files; two of each kind of page (a job's, a
            # draft's step, an admin list with one filter or sort) are enough.
            shape = (
                re.sub(r"[0-9a-f-]{8,}|\d+", "N", parts.path),
                tuple(sorted(parse_qs(parts.query))),
            )
            if "logout" in local or local.startswith("/static/") or local in seen:
                continue
            if shapes.get(shape, 0) < 2 and len(shape[1]) <= 2:
                shapes[shape] = shapes.get(shape, 0) + 1
                queue.append(local)

    print("SEEN", len(seen), sorted(seen))
    assert outside == {}
    assert len(seen) > 40, seen  # it did follow the lists' links
