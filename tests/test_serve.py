"""`manage.py serve`: the gunicorn it starts, and the worker it keeps running."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from jobs.management.commands.serve import gunicorn_command
from jobs.runner import free_port

ROOT = Path(__file__).resolve().parent.parent


def start_serve(env: dict[str, str]) -> subprocess.Popen:
    """`manage.py serve` on a migrated database, in its own process group (killed with it)."""
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    return subprocess.Popen(
        [sys.executable, "manage.py", "serve"],
        cwd=ROOT,
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def test_the_web_server_opens_no_control_socket_anyone_with_its_home_could_command(tmp_path):
    # gunicorn 27 listens on ~/.gunicorn/gunicorn.ctl by default, taking shutdown and reload
    # commands from whoever reaches the file.
    port = str(free_port())
    command = gunicorn_command(python=sys.executable, host="127.0.0.1", port=port)
    env = {**os.environ, "HOME": str(tmp_path), "CONSOLE_VAR_DIR": str(tmp_path / "var")}
    server = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/login/", timeout=2) as r:
                    assert r.status == 200
                    break
            except OSError:
                assert server.poll() is None, "gunicorn exited"
                assert time.monotonic() < deadline, "gunicorn never answered"
                time.sleep(0.2)
    finally:
        server.terminate()
        server.wait(timeout=30)

    assert "--no-control-socket" in command
    assert not (tmp_path / ".gunicorn").exists()


def test_a_worker_that_dies_is_started_again_and_the_console_stays_up(tmp_path):
    from tests.test_foundation import children_of

    def cmdline(pid: int) -> bytes:
        try:
            return Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:  # ended (the killed worker, reaped by serve) since it was listed
            return b""

    def worker_pids() -> list[int]:
        return [pid for pid in children_of(server.pid) if b"manage.py\x00worker" in cmdline(pid)]

    port = free_port()
    env = {**os.environ, "CONSOLE_VAR_DIR": str(tmp_path), "DEBUG": "0", "PORT": str(port)}
    server = start_serve(env)
    try:
        deadline = time.monotonic() + 30
        while not worker_pids():
            assert time.monotonic() < deadline, "no worker started"
            time.sleep(0.2)
        [first] = worker_pids()

        os.kill(first, signal.SIGKILL)

        deadline = time.monotonic() + 30
        while not [pid for pid in worker_pids() if pid != first]:
            assert server.poll() is None, "serve stopped with its worker"
            assert time.monotonic() < deadline, "the worker was not started again"
            time.sleep(0.2)
        # The pages answer all along; the first may be slow on a loaded machine (gunicorn's
        # workers importing Django while the tests beside this one run): tried for 30 s.
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/login/", timeout=10) as r:
                    assert r.status == 200
                break
            except (TimeoutError, urllib.error.URLError):
                assert time.monotonic() < deadline, "the console did not answer"
                time.sleep(0.5)
    finally:
        os.killpg(server.pid, signal.SIGINT)
        server.wait(timeout=30)


def test_the_gunicorn_the_project_requires_accepts_no_control_socket():
    """gunicorn added --no-control-socket in 25.1.0; an older one refuses to start at all."""
    import tomllib

    from packaging.requirements import Requirement

    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    gunicorn = next(Requirement(d) for d in dependencies if Requirement(d).name == "gunicorn")

    assert "--no-control-socket" in gunicorn_command(python="python", host="h", port="1")
    assert not gunicorn.specifier.contains("25.0.3")
    assert gunicorn.specifier.contains("25.1.0")


def test_an_empty_host_serves_on_loopback_only_not_on_every_interface(tmp_path):
    # `HOST=` in an env file is unset like every other variable; gunicorn reads an empty
    # host as "every interface", which would put the console on the network.
    port = free_port()
    env = {
        **os.environ,
        "CONSOLE_VAR_DIR": str(tmp_path),
        "HOST": "",
        "PORT": str(port),
        "WEB_WORKERS": "",
        "WEB_THREADS": "",
    }
    server = start_serve(env)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/login/", timeout=2) as r:
                    assert r.status == 200
                    break
            except OSError:
                assert server.poll() is None, "serve exited"
                assert time.monotonic() < deadline, "the console never answered"
                time.sleep(0.2)
        # 127.0.0.2 is this machine too: only a socket bound to every address answers there.
        with socket.socket() as s:
            s.settimeout(2)
            assert s.connect_ex(("127.0.0.2", port)) != 0
    finally:
        os.killpg(server.pid, signal.SIGINT)
        server.wait(timeout=30)


def test_a_port_already_in_use_stops_serve_at_once_saying_so_and_starts_no_worker(tmp_path):
    # Something (another console, another program) already listens on the port: gunicorn
    # alone retried for 5 s, gave up, and serve exited 0 with the worker it had started,
    # after printing "Console on <that port>", which pointed at the other program.
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        env = {**os.environ, "CONSOLE_VAR_DIR": str(tmp_path), "PORT": str(port)}
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True
        )

        served = subprocess.run(
            [sys.executable, "manage.py", "serve"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )

    assert served.returncode == 1
    assert f"Port {port} on 127.0.0.1 is already in use" in served.stderr
    assert "PORT=9000 make run" in served.stderr
    assert "Console on" not in served.stdout
    assert not (tmp_path / "runs" / "worker.lock").exists()  # no worker ever started


def ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.skipif(not ipv6_loopback(), reason="this machine has no IPv6 loopback (::1)")
def test_a_port_in_use_on_an_ipv6_host_stops_serve_saying_the_port_is_in_use(tmp_path):
    # serve's probe binds HOST=::1 as gunicorn does, over IPv6: an IPv4 socket could not bind
    # ::1 at all, and serve would say it cannot listen on the address, not that the port is
    # taken, or let gunicorn retry it for 5 s after the worker had started.
    with socket.socket(socket.AF_INET6) as other:
        other.bind(("::1", 0))
        other.listen()
        port = other.getsockname()[1]
        env = {
            **os.environ,
            "CONSOLE_VAR_DIR": str(tmp_path),
            "HOST": "::1",
            "PORT": str(port),
        }
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True
        )

        served = subprocess.run(
            [sys.executable, "manage.py", "serve"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )

    assert served.returncode == 1
    assert f"Port {port} on ::1 is already in use" in served.stderr
    assert "Cannot listen on" not in served.stderr
    assert "Console on" not in served.stdout
    assert not (tmp_path / "runs" / "worker.lock").exists()  # no worker ever started


def test_a_host_that_cannot_be_listened_on_stops_serve_at_once_naming_it_and_starts_no_worker(
    tmp_path,
):
    # A mistyped HOST (a letter l for a 1) or an address this machine does not have: gunicorn
    # retried for 5 s while the worker ran, after "Console on http://127.0.0.l:...".
    env = {**os.environ, "CONSOLE_VAR_DIR": str(tmp_path), "PORT": str(free_port())}
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)

    served = {
        host: subprocess.run(
            [sys.executable, "manage.py", "serve"],
            cwd=ROOT,
            env={**env, "HOST": host},
            capture_output=True,
            text=True,
            timeout=60,
        )
        for host in ("127.0.0.l", "192.0.2.1")  # 192.0.2.0/24: documentation only, never ours
    }

    # The resolver's reason for the name varies (no DNS: "Temporary failure in name
    # resolution"); the address's is the kernel's.
    name_reason = re.search(
        r"Cannot listen on 127\.0\.0\.l port \d+: ([^.]+)\. HOST is", served["127.0.0.l"].stderr
    )
    assert name_reason and name_reason.group(1).strip()
    assert (
        f"Cannot listen on 192.0.2.1 port {env['PORT']}: Cannot assign requested address. HOST is"
        in served["192.0.2.1"].stderr
    )
    for result in served.values():
        assert result.returncode == 1
        assert "Console on" not in result.stdout
        # The error alone (QA 22): the ALLOWED_HOSTS warning came first and sent a reader to
        # that setting for what is a mistyped HOST.
        assert "ALLOWED_HOSTS" not in result.stderr
    assert not (tmp_path / "runs" / "worker.lock").exists()  # no worker ever started


def test_serve_fails_when_its_web_server_dies_and_takes_the_worker_down_with_it(tmp_path):
    from tests.test_foundation import children_of

    port = free_port()
    env = {**os.environ, "CONSOLE_VAR_DIR": str(tmp_path), "DEBUG": "0", "PORT": str(port)}
    server = start_serve(env)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/login/", timeout=2) as r:
                    assert r.status == 200
                    break
            except OSError:
                assert server.poll() is None, "serve exited"
                assert time.monotonic() < deadline, "the console never answered"
                time.sleep(0.2)
        children = children_of(server.pid)
        [web] = [p for p in children if b"gunicorn" in Path(f"/proc/{p}/cmdline").read_bytes()]
        [worker] = [p for p in children if p != web]

        os.kill(web, signal.SIGKILL)

        # A service manager (systemd's Restart=on-failure) sees the console failed.
        assert server.wait(timeout=60) != 0
        assert not Path(f"/proc/{worker}").exists()
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGINT)
            server.wait(timeout=30)


def test_serve_warns_when_browsers_could_not_open_it_by_the_address_it_listens_on(tmp_path):
    # Found in QA: HOST=0.0.0.0 with ALLOWED_HOSTS left at its loopback default served every
    # browser on the network a 400 page, and serve had said nothing of it.
    from jobs.management.commands.serve import unlisted_host_warning

    with socket.socket() as other:  # so serve stops at once, after what it says first
        other.bind(("127.0.0.2", 0))
        other.listen()
        port = other.getsockname()[1]
        env = {**os.environ, "CONSOLE_VAR_DIR": str(tmp_path), "HOST": "127.0.0.2"}
        env.update(PORT=str(port), ALLOWED_HOSTS="")
        served = subprocess.run(
            [sys.executable, "manage.py", "serve"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )

    assert (
        "Warning: HOST=127.0.0.2, but ALLOWED_HOSTS (127.0.0.1,localhost,[::1]) does not list "
        "127.0.0.2: a browser opening the console by them gets 400"
    ) in served.stderr
    loopback = ["127.0.0.1", "localhost", "[::1]"]
    assert "does not list this machine's other addresses" in unlisted_host_warning(
        host="0.0.0.0", allowed=loopback
    )
    assert unlisted_host_warning(host="0.0.0.0", allowed=[*loopback, "console.example.com"]) == ""
    assert unlisted_host_warning(host="127.0.0.1", allowed=loopback) == ""


def test_serve_warns_when_alert_links_would_point_at_its_loopback_address(tmp_path):
    # QA 59: HOST and ALLOWED_HOSTS set for the team, SITE_URL left at its default: every
    # alert reached on-call's phone linking to http://127.0.0.1:8000/jobs/..., unopenable.
    from jobs.management.commands.serve import loopback_site_url_warning

    with socket.socket() as other:  # so serve stops at once, after what it says first
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        env = {**os.environ, "CONSOLE_VAR_DIR": str(tmp_path), "PORT": str(port)}
        env.update(ALLOWED_HOSTS="gpu01.example.com", SITE_URL="")
        served = subprocess.run(
            [sys.executable, "manage.py", "serve"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )

    assert (
        f"Warning: SITE_URL=http://127.0.0.1:{port} is this machine's loopback address, but the "
        "console is opened by gpu01.example.com: the links in alert and review mails and chat "
        "bots' messages lead nowhere for their readers. Set SITE_URL to the address people use."
    ) in served.stderr
    loopback = ["127.0.0.1", "localhost", "[::1]"]
    local = "http://127.0.0.1:8000"
    assert "opened by this machine's other addresses" in loopback_site_url_warning(
        host="0.0.0.0", allowed=loopback, site_url=local
    )
    # Nothing to say: all on this machine, or SITE_URL set to what people use.
    assert loopback_site_url_warning(host="127.0.0.1", allowed=loopback, site_url=local) == ""
    assert (
        loopback_site_url_warning(
            host="0.0.0.0", allowed=["gpu01.example.com"], site_url="http://gpu01.example.com:8000"
        )
        == ""
    )


def test_a_host_name_with_ipv6_addresses_only_is_refused_saying_which_address_to_give(tmp_path):
    """gunicorn listens on a host name over IPv4 only (it opens an IPv6 socket for an IPv6
    literal alone), so such a name cannot be served: serve says why and what to set instead,
    rather than only the resolver's "Name or service not known". The name is made in a
    mount namespace of the test's own (its /etc/hosts bound over the machine's), as root."""
    name = "ipv6-only-console.test"
    if os.geteuid() != 0 or subprocess.run(["unshare", "-m", "true"]).returncode != 0:
        pytest.skip("needs root and unshare(1) for a private /etc/hosts (CI runs as root)")
    hosts = tmp_path / "hosts"
    hosts.write_text(Path("/etc/hosts").read_text() + f"\n2001:db8::5 {name}\n")
    env = {**os.environ, "CONSOLE_VAR_DIR": str(tmp_path), "PORT": str(free_port())}
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)

    served = subprocess.run(
        [
            "unshare",
            "-m",
            "sh",
            "-c",
            'mount --bind "$0" /etc/hosts && exec "$1" manage.py serve',
            str(hosts),
            sys.executable,
        ],
        cwd=ROOT,
        env={**env, "HOST": name},
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert served.returncode == 1
    assert (
        f"Cannot listen on {name} port {env['PORT']}: {name} has IPv6 addresses only "
        f"(2001:db8::5), and gunicorn listens on a host name over IPv4 only: set HOST to the "
        f"address itself (HOST=2001:db8::5). HOST is" in served.stderr
    ), served.stderr
    assert "Console on" not in served.stdout
    assert not (tmp_path / "runs" / "worker.lock").exists()  # no worker ever started


def test_a_refused_api_body_leaves_the_connection_serving_the_next_request(tmp_path):
    """Found in QA (round 33): gunicorn drains at most 64 KB of a body the application left
    unread, then closes the connection although its answer said keep-alive; a client that
    reuses connections (httpx, a requests session) saw its next request fail with "Server
    disconnected" after a 413 EntityTooLarge, or after any refusal (a wrong key) of a body
    over 64 KB."""
    import http.client
    import json

    from jobs.aihc import signer

    port = free_port()
    env = {**os.environ, "HOME": str(tmp_path), "CONSOLE_VAR_DIR": str(tmp_path / "var")}
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    made = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", MAKE_KEY],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    access_key, secret = made.stdout.split()[-2:]
    command = gunicorn_command(python=sys.executable, host="127.0.0.1", port=str(port))
    server = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )

    def signed(method: str, content: bytes = b"", secret_key: str = secret) -> dict[str, str]:
        timestamp = signer.canonical_time(time.time())
        headers = {"Host": f"127.0.0.1:{port}", "x-bce-date": timestamp}
        if content:
            headers["Content-Type"] = "application/json"
        headers["Authorization"] = signer.authorization(
            access_key=access_key,
            secret_key=secret_key,
            method=method,
            path="/api/v1/aijobs",
            params=[("resourcePoolId", "local")],
            headers=headers,
            timestamp=timestamp,
            signed_header_names=["host", "x-bce-date"],
        )
        return headers

    too_large = json.dumps({"name": "x" * 3_000_000}).encode()  # over 2.5 MB
    large = json.dumps({"name": "x" * 200_000}).encode()
    answers = []
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/login/", timeout=2):
                    break
            except OSError:
                assert server.poll() is None, "gunicorn exited"
                assert time.monotonic() < deadline, "gunicorn never answered"
                time.sleep(0.2)
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        for content, secret_key in ((too_large, secret), (large, "0" * 32)):
            path = "/api/v1/aijobs?resourcePoolId=local"
            connection.request(
                "POST", path, body=content, headers=signed("POST", content, secret_key)
            )
            refused = connection.getresponse()
            code = json.loads(refused.read())["code"]
            connection.request("GET", path, headers=signed("GET"))  # on the same connection
            listed = connection.getresponse()
            answers.append((refused.status, code, listed.status, json.loads(listed.read())))
        connection.close()
    finally:
        server.terminate()
        server.wait(timeout=30)

    assert [(status, code, next_status) for status, code, next_status, _ in answers] == [
        (413, "EntityTooLarge", 200),
        (403, "SignatureDoesNotMatch", 200),
    ]
    assert answers[0][3]["result"]["jobs"] == []


MAKE_KEY = """
from django.contrib.auth import get_user_model
from jobs.api_keys import api_key_create
key, secret = api_key_create(owner=get_user_model().objects.create_user("alice"))
print(key.access_key_id, secret)
"""


def test_a_refused_body_sent_a_byte_at_a_time_holds_the_server_thread_a_few_seconds_only(
    tmp_path, settings
):
    """Review 25: the API read a body it had refused (unsigned here) to its end, up to 10 MB,
    however slowly it came: a client sending a byte at a time held a server thread as long as
    it went on. With one thread, any other request waited all that time."""
    import threading

    from jobs.api_views import UNREAD_BODY_DRAIN_SECONDS

    settings.WEB_WORKERS = 1
    settings.WEB_THREADS = 1
    port = free_port()
    env = {**os.environ, "HOME": str(tmp_path), "CONSOLE_VAR_DIR": str(tmp_path / "var")}
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    command = gunicorn_command(python=sys.executable, host="127.0.0.1", port=str(port))
    server = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    stop_sending = threading.Event()
    slow = socket.socket()
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/login/", timeout=2):
                    break
            except OSError:
                assert server.poll() is None, "gunicorn exited"
                assert time.monotonic() < deadline, "gunicorn never answered"
                time.sleep(0.2)
        slow.connect(("127.0.0.1", port))
        slow.sendall(
            f"POST /api/v1/aijobs?resourcePoolId=local HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            "Content-Type: application/json\r\nContent-Length: 10000000\r\n\r\n{".encode()
        )

        def trickle() -> None:
            while not stop_sending.wait(0.2):
                try:
                    slow.send(b" ")
                except OSError:
                    return

        threading.Thread(target=trickle, daemon=True).start()
        time.sleep(0.5)  # the refusal's drain has begun
        started = time.monotonic()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/login/", timeout=30) as page:
            status = page.status
        waited = time.monotonic() - started
    finally:
        stop_sending.set()
        slow.close()
        server.terminate()
        server.wait(timeout=30)

    assert status == 200
    assert waited < UNREAD_BODY_DRAIN_SECONDS + 3


def test_a_log_in_through_a_proxy_on_this_machine_is_https_to_gunicorn_even_without_the_https_setting(
    tmp_path,
):
    # README said a log-in through the proxy was refused (403) without HTTPS=1; tried as
    # written, it got in: gunicorn itself takes X-Forwarded-Proto from 127.0.0.1 (its
    # forwarded_allow_ips default). What HTTPS=1 still adds is secure cookies and HSTS; a proxy
    # on another machine, which gunicorn does not trust, is refused without it.
    import httpx

    port = free_port()
    env = {**os.environ, "CONSOLE_VAR_DIR": str(tmp_path), "DEBUG": "0", "PORT": str(port)}
    env.update(ALLOWED_HOSTS="console.example.com", HTTPS="")
    env.update(DJANGO_SUPERUSER_USERNAME="admin", DJANGO_SUPERUSER_PASSWORD="proxy-pass-1")
    server = start_serve(env)
    try:
        subprocess.run([sys.executable, "manage.py", "ensure_superuser"], cwd=ROOT, env=env)
        host = {"Host": "console.example.com"}
        client = httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=host, timeout=10)
        deadline = time.monotonic() + 60
        while True:
            try:
                client.get("/healthz?worker=0")
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "serve did not answer"
                time.sleep(0.3)

        def log_in(proxy: dict[str, str]) -> httpx.Response:
            client.cookies.clear()
            form = client.get("/login/", headers=proxy).text
            token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form)[1]  # type: ignore[index]
            origin = {"Origin": "https://console.example.com"}
            data = {"csrfmiddlewaretoken": token, "username": "admin", "password": "proxy-pass-1"}
            return client.post("/login/", data=data, headers={**proxy, **origin})

        through_this_machine = log_in({"X-Forwarded-Proto": "https"})
        unsaid = log_in({})

        assert (through_this_machine.status_code, through_this_machine.headers["location"]) == (
            302,
            "/",
        )
        assert unsaid.status_code == 403
    finally:
        os.killpg(server.pid, signal.SIGINT)
        server.wait(timeout=30)


def test_serve_and_the_worker_on_a_database_not_migrated_yet_stop_saying_to_migrate(tmp_path):
    # QA 46: after `git pull`, `manage.py serve` (or a worker on another machine) run before
    # `migrate` started on the older database: every page answered 500 and the worker logged
    # a traceback at each tick (no such column: jobs_workerheartbeat.refused).
    env = {**os.environ, "CONSOLE_VAR_DIR": str(tmp_path), "PORT": str(free_port())}
    # The newest migration, whatever it is (left35's 0039 made a fixed "0037" two behind).
    *_, before, newest = sorted(p.stem for p in (ROOT / "jobs" / "migrations").glob("0*.py"))
    for target in ([], ["jobs", before]):  # every app migrated, then the newest one back
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "-v0", *target], cwd=ROOT, env=env, check=True
        )

    def run(*command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "manage.py", *command],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )

    served = run("serve")
    worker = run("worker")
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    migrated = run("shell", "-c", "from jobs.checks import unapplied_migrations as u; print(u())")

    for stopped in (served, worker):
        assert stopped.returncode == 1
        assert stopped.stderr == (
            "CommandError: The database is not migrated to this release (1 migration to "
            f"apply: jobs.{newest}). Run `manage.py migrate` first "
            "(`make run` and the service's ExecStartPre do).\n"
        )
    assert "Console on" not in served.stdout
    assert not (tmp_path / "runs" / "worker.lock").exists()  # no worker ever started
    assert migrated.stdout.split("\n")[-2] == "[]"


def test_serve_stopped_while_a_create_waits_for_its_answer_leaves_the_job_on_the_cluster(
    tmp_path,
):
    """Ctrl-C on `serve` while its worker's create waits on a slow Kubernetes API server
    (answered 20 s after the stop, within KUBERNETES_READ_TIMEOUT): the worker is given the
    time it waits for the answer, and the job is Queued on the cluster with its name.
    review43: serve killed its worker at 15 s, so the job stayed 提交中 (Submitting) for two
    minutes after the next start and was then sent again."""
    from tests.fake_kubernetes import FakeKubernetes

    fake = FakeKubernetes().start()
    fake.add_node("gpu-1", {"nvidia.com/gpu": "8"})
    release = fake.block_next("create pytorchjobs")
    env = {**os.environ, "CONSOLE_VAR_DIR": str(tmp_path), "DEBUG": "0"}
    env.pop("DATABASE_URL", None)  # this console's own database, in tmp_path
    env |= {
        "PORT": str(free_port()),
        "CONSOLE_BACKENDS": "local,kubernetes",
        "KUBERNETES_API_URL": fake.url,
        "KUBERNETES_TOKEN": fake.token,
        "KUBERNETES_TOKEN_FILE": "",
        "KUBERNETES_CA_FILE": "",
        "KUBERNETES_NAMESPACES": "default",
        "KUBERNETES_ACCELERATORS": "nvidia.com/gpu",
        "KUBERNETES_READ_TIMEOUT": "25",
    }

    def manage_py(code: str) -> str:
        return (
            subprocess.run(
                [sys.executable, "manage.py", "shell", "-c", code],
                cwd=ROOT,
                env=env,
                check=True,
                capture_output=True,
                text=True,
            )
            .stdout.strip()
            .splitlines()[-1]
        )

    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    job_pk = manage_py(
        "import uuid\n"
        "from django.contrib.auth.models import User\n"
        "from jobs import spec as S\n"
        "from jobs.services import jobs_submit\n"
        "owner = User.objects.create_user('alice', password='x')\n"
        "spec = S.JobSpec(name='train', resource_pool_id='k8s-default', framework=S.PYTORCH,"
        " image='registry.example.com/train:1.0', command='python train.py',"
        " roles=[S.Role('master', 1, 'nvidia.com/gpu', 1)])\n"
        "[job] = jobs_submit(owner=owner, spec=spec, submit_key=str(uuid.uuid4()),"
        " backend='kubernetes')\n"
        "print(job.pk)"
    )
    server = subprocess.Popen(
        [sys.executable, "manage.py", "serve"],
        cwd=ROOT,
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not fake.calls("create pytorchjobs"):
            assert server.poll() is None, "serve stopped"
            assert time.monotonic() < deadline, "the worker never sent the create"
            time.sleep(0.2)
        os.killpg(server.pid, signal.SIGINT)
        time.sleep(20)
        release.set()
        server.wait(timeout=60)
    finally:
        release.set()
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        fake.stop()

    status = manage_py(
        f"from jobs.models import Job; j = Job.objects.get(pk={job_pk});"
        " print(j.status, bool(j.external_id))"
    )
    assert status == "queued True"
    assert len(fake.jobs()) == 1


SAY_SITE_URL = "from django.conf import settings; print(settings.SITE_URL)"


def test_the_endpoint_and_links_follow_serves_port_option_unless_site_url_is_set(
    tmp_path, monkeypatch
):
    # qa85: served with `manage.py serve --port 8485`, the API keys page gave scripts the
    # endpoint http://127.0.0.1:8000: its default followed PORT alone.
    import httpx

    from jobs.management.commands.serve import child_environment

    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("PORT", "SITE_URL")}
    env.update(CONSOLE_VAR_DIR=str(tmp_path), DEBUG="0")
    env.update(DJANGO_SUPERUSER_USERNAME="admin", DJANGO_SUPERUSER_PASSWORD="port-pass-1")
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    subprocess.run([sys.executable, "manage.py", "ensure_superuser"], cwd=ROOT, env=env)
    server = subprocess.Popen(
        [sys.executable, "manage.py", "serve", "--port", str(port)],
        cwd=ROOT,
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10)
        deadline = time.monotonic() + 60
        while True:
            try:
                client.get("/healthz?worker=0")
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "serve did not answer"
                time.sleep(0.3)
        form = client.get("/login/").text
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form)[1]  # type: ignore[index]
        data = {"csrfmiddlewaretoken": token, "username": "admin", "password": "port-pass-1"}
        assert client.post("/login/", data=data).status_code == 302
        page = client.get("/account/keys/").text
        assert f'<code id="api-endpoint">http://127.0.0.1:{port}</code>' in page
    finally:
        os.killpg(server.pid, signal.SIGINT)
        server.wait(timeout=30)

    # A SITE_URL set still wins over the port, as over PORT.
    monkeypatch.setenv("CONSOLE_VAR_DIR", str(tmp_path))
    monkeypatch.setenv("SITE_URL", "https://console.example.com")
    said = subprocess.run(
        [sys.executable, "manage.py", "shell", "--no-imports", "-c", SAY_SITE_URL],
        cwd=ROOT,
        env=child_environment(host="127.0.0.1", port="8485"),
        capture_output=True,
        text=True,
        check=True,
    )
    assert said.stdout.strip() == "https://console.example.com"


def test_the_access_log_has_each_requests_path_without_its_query_or_referer(tmp_path):
    """qa90: `?q=SUPERSECRET` typed in a log search's box was written in the access log."""
    import httpx

    port = free_port()
    env = {**os.environ, "HOME": str(tmp_path), "CONSOLE_VAR_DIR": str(tmp_path / "var")}
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    log = tmp_path / "gunicorn.log"
    command = gunicorn_command(python=sys.executable, host="127.0.0.1", port=str(port))
    with log.open("wb") as out:
        server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=out)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            deadline = time.monotonic() + 30
            while True:
                try:
                    client.get("/healthz")
                    break
                except httpx.TransportError:
                    assert server.poll() is None, "gunicorn exited"
                    assert time.monotonic() < deadline, "gunicorn never answered"
                    time.sleep(0.2)
            client.get(
                "/login/?next=/jobs/x/%3Fq%3DSUPERSECRET&q=SUPERSECRET",
                headers={"Referer": f"http://127.0.0.1:{port}/jobs/x/?q=REFERRED-SECRET"},
            )
    finally:
        server.terminate()
        server.wait(timeout=30)

    written = log.read_text()
    assert '"GET /login/ HTTP/1.1" 200' in written
    assert "SUPERSECRET" not in written and "REFERRED-SECRET" not in written


def test_a_head_answers_as_a_get_without_a_body_and_gunicorn_logs_no_warning_of_one(tmp_path):
    """qa89: gunicorn 27 logs "WSGI app sent body bytes on a no-body response" as a WARNING
    for each HEAD Django answered with its GET's body; every monitor's probe wrote a line."""
    import httpx

    port = free_port()
    env = {**os.environ, "HOME": str(tmp_path), "CONSOLE_VAR_DIR": str(tmp_path / "var")}
    env.update(DJANGO_SUPERUSER_USERNAME="admin", DJANGO_SUPERUSER_PASSWORD="head-pass-1")
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    subprocess.run([sys.executable, "manage.py", "ensure_superuser"], cwd=ROOT, env=env, check=True)
    log = tmp_path / "gunicorn.log"
    command = gunicorn_command(python=sys.executable, host="127.0.0.1", port=str(port))
    with log.open("wb") as out:
        server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=out)
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30)
    answers = {}
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                client.get("/login/")
                break
            except httpx.TransportError:
                assert server.poll() is None, "gunicorn exited"
                assert time.monotonic() < deadline, "gunicorn never answered"
                time.sleep(0.2)
        anonymous = ["/healthz", "/healthz?worker=0", "/login/", "/no-such-page/"]
        for path in anonymous:
            answers[path] = (client.get(path), client.head(path))
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', client.get("/login/").text)
        data = {"csrfmiddlewaretoken": token[1], "username": "admin", "password": "head-pass-1"}  # type: ignore[index]
        assert client.post("/login/", data=data).status_code == 302
        for path in ["/", "/account/usage/"]:
            answers[path] = (client.get(path), client.head(path))
    finally:
        server.terminate()
        server.wait(timeout=30)

    # Headers that differ between any two answers (the date, the CSRF cookie, the nonce) aside.
    varying = {"date", "set-cookie", "content-security-policy", "expires"}
    for path, (get, head) in answers.items():
        assert head.status_code == get.status_code, path
        assert head.content == b"" and get.content, path
        assert {k: v for k, v in head.headers.items() if k not in varying} == {
            k: v for k, v in get.headers.items() if k not in varying
        }, path
    assert [answers[p][1].status_code for p in anonymous] == [503, 200, 200, 404]
    assert "body bytes" not in log.read_text()


def test_serve_sends_the_pages_static_files_compressed_and_cached_for_a_year(tmp_path):
    """qa108: every page's first open was 440-495 KB: nothing ran collectstatic, so WhiteNoise
    sent each file as written (bootstrap.min.css, 232 KB; 30 KB gzipped), cached a minute."""
    import httpx

    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("PORT", "SITE_URL")}
    env.update(CONSOLE_VAR_DIR=str(tmp_path), DEBUG="0", PORT=str(port))
    server = start_serve(env)
    try:
        client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10)
        deadline = time.monotonic() + 60
        while True:
            try:
                page = client.get("/login/")
                break
            except httpx.TransportError:
                assert server.poll() is None, "serve exited"
                assert time.monotonic() < deadline, "serve did not answer"
                time.sleep(0.3)
        css = re.search(r'href="(/static/vendor/bootstrap-[^"]+\.css)"', page.text)[1]  # type: ignore[index]
        sent = client.get(css, headers={"Accept-Encoding": "gzip, br"})
    finally:
        os.killpg(server.pid, signal.SIGINT)
        server.wait(timeout=30)

    assert "Content-Encoding" not in page.headers  # pages are not compressed (README: BREACH)
    assert re.fullmatch(r"/static/vendor/bootstrap-5\.3\.9/bootstrap\.min\.[0-9a-f]{12}\.css", css)
    assert sent.status_code == 200
    assert sent.headers["Content-Encoding"] == "gzip"
    assert int(sent.headers["Content-Length"]) < 40_000
    assert "max-age=315360000" in sent.headers["Cache-Control"]
    assert "immutable" in sent.headers["Cache-Control"]
    assert ".container" in sent.text


def test_serve_starts_when_it_cannot_collect_the_static_files_saying_so_with_pages_working(
    tmp_path,
):
    """review61: collectstatic failing (a full disk: OSError ENOSPC) stopped serve at each of
    systemd's restarts, and a manifest it left half written made every page answer 500."""
    import httpx

    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("PORT", "SITE_URL")}
    env.update(CONSOLE_VAR_DIR=str(tmp_path), DEBUG="0", PORT=str(port))
    (tmp_path / "staticfiles").mkdir()
    (tmp_path / "staticfiles" / "staticfiles.json").write_text('{"paths": {"console.css": "co')
    (tmp_path / "staticfiles.lock").mkdir()  # its lock cannot be opened: an OSError
    said = tmp_path / "serve.err"
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    with said.open("w") as err:
        server = subprocess.Popen(
            [sys.executable, "manage.py", "serve"],
            cwd=ROOT,
            env=env,
            start_new_session=True,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    try:
        client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10)
        deadline = time.monotonic() + 60
        while True:
            try:
                page = client.get("/login/")
                break
            except httpx.TransportError:
                assert server.poll() is None, "serve exited"
                assert time.monotonic() < deadline, "serve did not answer"
                time.sleep(0.3)
        css = client.get("/static/vendor/bootstrap-5.3.9/bootstrap.min.css")
    finally:
        os.killpg(server.pid, signal.SIGINT)
        server.wait(timeout=30)

    assert page.status_code == 200
    assert 'href="/static/vendor/bootstrap-5.3.9/bootstrap.min.css"' in page.text
    assert css.status_code == 200
    assert "Warning: static files could not be collected ([Errno 21] Is a directory" in (
        said.read_text()
    )
    # Nothing ran, so nothing was removed (review64); the half-written manifest is read as none.
    assert (tmp_path / "staticfiles" / "staticfiles.json").read_text().endswith('"co')
