from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from console.static_storage import static_files_collected
from jobs.checks import (
    bwrap_problems,
    card_nodes_missing,
    local_jobs_run_as_root,
    not_migrated_problem,
    run_dir_smaller_than_a_log,
)
from jobs.worker import create_wait_seconds

# How long a stopped child is given before it is killed.
STOP_SECONDS = 15


def worker_stop_seconds() -> float:
    """The worker's: STOP_SECONDS, and as long again as a create on a remote backend may
    wait for its answer, which a stopped worker waits for (RemoteThread.finish_submit).
    review43: killed at 15 s, a slower create (AIHC or an API server answering in 20 s) was
    cut off, its job left 提交中 for 2 minutes and then sent again, while the worker's log
    said it would wait 35 s."""
    remote = [b for b in settings.CONSOLE_BACKENDS if b != "local"]
    return STOP_SECONDS + max((create_wait_seconds(b) for b in remote), default=0)


class Command(BaseCommand):
    help = "Serves the console (gunicorn) and runs the background worker, until Ctrl-C."

    def add_arguments(self, parser: Any) -> None:
        # Defaults from HOST and PORT as settings read them: an empty HOST= is unset (loopback),
        # never gunicorn's "every interface".
        parser.add_argument("--host", default=settings.HOST)
        parser.add_argument("--port", default=str(settings.PORT))

    def handle(self, *args: Any, host: str, port: str, **options: Any) -> None:
        python = sys.executable
        # Before anything starts, an address gunicorn could never bind (a mistyped HOST, an
        # address this machine does not have): it retried for 5 s, after the worker had started.
        if problem := unbindable(host=host, port=port):
            raise CommandError(
                f"Cannot listen on {host} port {port}: {problem}. HOST is an address of this "
                f"machine (127.0.0.1, the default; 0.0.0.0 or :: for every address) or a name "
                f"of one, and PORT a port it may open."
            )
        # Once HOST is known to be good (QA 22): before, a mistyped HOST was first warned
        # about as missing from ALLOWED_HOSTS, which sent the reader to the wrong setting.
        warning = unlisted_host_warning(host=host, allowed=settings.ALLOWED_HOSTS)
        if warning:
            self.stderr.write(warning)
        # SITE_URL as the web server gets it (child_environment): by default it follows --port.
        site_url = settings.SITE_URL
        if not os.getenv("SITE_URL", "").strip():
            site_url = f"http://127.0.0.1:{port}"
        if warning := loopback_site_url_warning(
            host=host, allowed=settings.ALLOWED_HOSTS, site_url=site_url
        ):
            self.stderr.write(warning)
        # Nor a port in use: gunicorn alone would retry the port for 5 s and give up,
        # after the worker had started and "Console on ..." had pointed at whatever holds it.
        if port_in_use(host=host, port=port):
            raise CommandError(
                f"Port {port} on {host} is already in use (another console, or another "
                f"program, listens there). Stop it, or choose another port: "
                f"PORT={suggested_port(port)} make run (manage.py serve --port "
                f"{suggested_port(port)})."
            )
        # Nor a mistyped LOCAL_BWRAP: the console would take local jobs that all fail at
        # their launch, and its worker would be refused at each restart (QA 46).
        if problems := bwrap_problems():
            raise CommandError("; ".join(problems))
        # Last: what is wrong with HOST or PORT is said first, whatever the database holds.
        if problem := not_migrated_problem():
            raise CommandError(problem)
        # Run as root, what local jobs could reach (a deploy check, said here too: qa90).
        for warning in local_jobs_run_as_root():
            self.stderr.write(f"Warning: {warning.msg} {warning.hint}")
        # Card nodes that are not there (qa95): the worker's start log says it too.
        # And a run directory with less room than one log may take (qa102).
        for warning in [*card_nodes_missing(), *run_dir_smaller_than_a_log()]:
            self.stderr.write(f"Warning: {warning.msg} {warning.hint}")
        # The static files as WhiteNoise serves them best: under hashed names, with gzipped
        # copies, cached for a year (console/static_storage.py). qa108: nothing ran it, and
        # every file went out as written, cached for a minute. Quietly: it says nothing that
        # matters at each start. Before the web server starts, which reads them once. A failure
        # (a full disk) is warned of, and pages link the files the last whole collect made, or
        # by their plain names when none did (review61, review64).
        if failure := static_files_collected():
            self.stderr.write(
                f"Warning: static files could not be collected ({failure}): pages link the "
                "files the last whole collect made (a file it lacks by its plain name, "
                "uncompressed) until a later start collects them."
            )
        # Each child gets its own process group: Ctrl-C reaches only this command, which then
        # stops every group in order, and a gunicorn worker caught mid-boot cannot outlive
        # its master and keep the port bound. If this command itself is killed (SIGKILL,
        # nothing to clean up with), the kernel sends each child SIGTERM.
        parent = os.getpid()

        environment = child_environment(host=host, port=port)

        def start(command: list[str], pass_fds: tuple[int, ...] = ()) -> subprocess.Popen[bytes]:
            return subprocess.Popen(
                command,
                env=environment,
                start_new_session=True,
                preexec_fn=lambda: die_with(parent),
                pass_fds=pass_fds,
            )

        # A worker refusing its settings writes why here (jobs/management/commands/worker.py),
        # and this command says it once per distinct reason, not at each of its restarts.
        # Decided in review: a file with no name, open in this command and handed to each
        # worker it starts as /dev/fd/N: a named one in VAR_DIR was left there by a kill -9
        # of this command (one more at each start), and a link planted at its name would
        # have had the worker (root, with LOCAL_JOB_UID_BASE) write through it.
        refusal_file = tempfile.TemporaryFile(dir=settings.VAR_DIR)  # noqa: SIM115 (closed by stop)
        refusal_fd = refusal_file.fileno()
        worker_command = [python, "manage.py", "worker", "--refusal-file", f"/dev/fd/{refusal_fd}"]
        children = [start(gunicorn_command(python=python, host=host, port=port))]
        children.append(start(worker_command, (refusal_fd,)))
        self.stdout.write(f"Console on http://{host}:{port}/ (Ctrl-C stops it)")

        def stop(*_: Any, code: int = 0) -> None:
            for child in children:
                signal_group(child, signal.SIGTERM)
            started = time.monotonic()
            for child, seconds in zip(children, (STOP_SECONDS, worker_stop_seconds()), strict=True):
                with contextlib.suppress(subprocess.TimeoutExpired):
                    child.wait(timeout=max(started + seconds - time.monotonic(), 0.1))
                # Whatever is left in the group (jobs run in sessions of their own).
                signal_group(child, signal.SIGKILL)
                child.wait()
            refusal_file.close()
            sys.exit(code)

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        web = children[0]
        worker_started = time.monotonic()
        restart_delay = 0.0
        refusal_said = ""
        while web.poll() is None:
            time.sleep(0.5)
            worker = children[1]
            if worker.poll() is None:
                continue
            # The worker ended on its own (a crash, a stray signal): the console stays up and
            # the worker comes back, re-adopting running jobs as after any restart. The delay
            # doubles while it keeps dying soon after each start.
            lived = time.monotonic() - worker_started
            restart_delay = (
                WORKER_RESTART_FIRST_DELAY
                if lived >= WORKER_HEALTHY_SECONDS or not restart_delay
                else min(restart_delay * 2, WORKER_RESTART_MAX_DELAY)
            )
            try:
                refusal = os.pread(refusal_fd, REFUSAL_READ_BYTES, 0).decode(errors="replace")
            except OSError:
                refusal = ""
            said, refusal_said = worker_exit_message(
                code=worker.returncode, refusal=refusal, said=refusal_said, delay=restart_delay
            )
            self.stderr.write(said)
            signal_group(worker, signal.SIGKILL)  # anything it left in its group
            time.sleep(restart_delay)
            os.ftruncate(refusal_fd, 0)
            children[1] = start(worker_command, (refusal_fd,))
            worker_started = time.monotonic()
        # The web server ended on its own (it could not bind, crashed, was killed): the
        # console is down, so this command fails too, and a service manager sees it failed.
        self.stderr.write(f"The web server exited with code {web.returncode}; stopping the worker")
        stop(code=web.returncode or 1)


def worker_exit_message(*, code: int, refusal: str, said: str, delay: float) -> tuple[str, str]:
    """What serve says when its worker ended on its own, and the refusal said so far.

    A worker refusing its settings (exit code 78, the reason in its refusal file) is refused
    again at each restart until someone fixes them: its reason is said in full the first time
    and whenever it changes, then one line a restart, so the output (the service's log) is not
    filled with the same reason every 30 s. Decided: a crash or a worker that ran in between
    forgets it, so a refusal after that is said in full again."""
    from .worker import EXIT_REFUSED

    again = f"the worker is tried again in {delay:.0f} s"
    refusal = refusal.strip()
    if code != EXIT_REFUSED or not refusal:
        return f"The worker exited with code {code}; restarting it in {delay:.0f} s", ""
    if refusal == said:
        return f"The worker refused to start again, for the reason above; {again}", said
    return (
        f"The worker refused to start (exit code {code}): {refusal}\n"
        f"It is refused at each start until that is fixed; {again}, then after a wait that "
        f"doubles up to {WORKER_RESTART_MAX_DELAY:.0f} s (this reason is not said again).",
        refusal,
    )


# A refusal says a few problems (jobs.job_users.problems names at most three users and
# groups each): read up to this much of it.
REFUSAL_READ_BYTES = 64 * 1024
PR_SET_PDEATHSIG = 1
WORKER_RESTART_FIRST_DELAY = 1.0
WORKER_RESTART_MAX_DELAY = 30.0
WORKER_HEALTHY_SECONDS = 60.0


def die_with(parent: int) -> None:
    """In a child, before exec: SIGTERM when the parent dies (Linux's PR_SET_PDEATHSIG)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)


def child_environment(*, host: str, port: str) -> dict[str, str]:
    """The environment of the web server and the worker: this command's, with HOST and PORT as
    it listens (--host, --port), so that the settings that follow them follow the options too:
    SITE_URL's default, the API keys page's endpoint and the links in alerts and review mails
    (qa85: served with --port 8485, the page said http://127.0.0.1:8000). A SITE_URL set in
    the environment is kept, and wins, as it does over PORT."""
    return {**os.environ, "HOST": host, "PORT": port}


# gunicorn's default line with the path alone (%(U)s) where it has the request line (%(r)s),
# and no Referer (%(f)s): a query holds what people type (a log search's words, ?q=, maybe a
# token pasted by mistake), and the Referer of a console page is its whole address, query and
# all (Referrer-Policy same-origin sends it to the console itself). qa90: `?q=SUPERSECRET`
# typed in a search box was in the access log.
ACCESS_LOG_FORMAT = '%(h)s %(l)s %(u)s %(t)s "%(m)s %(U)s %(H)s" %(s)s %(b)s "%(a)s"'


def gunicorn_command(*, python: str, host: str, port: str) -> list[str]:
    return [
        python,
        "-m",
        "gunicorn",
        "console.wsgi:application",
        "--bind",
        f"{host}:{port}",
        "--workers",
        str(settings.WEB_WORKERS),
        "--threads",
        str(settings.WEB_THREADS),
        "--access-logfile",
        "-",
        "--access-logformat",
        ACCESS_LOG_FORMAT,
        # gunicorn (25.1 and later) opens a control socket (gunicorn.ctl) that takes shutdown
        # and reload commands from anyone who can reach the file; the console never uses it.
        "--no-control-socket",
    ]


LOOPBACK_NAMES = {"127.0.0.1", "localhost", "::1", "[::1]"}


def unlisted_host_warning(*, host: str, allowed: list[str]) -> str:
    """What to say when the address serve listens on is one a browser cannot open the console
    by, ALLOWED_HOSTS being left at its loopback default: every address of the machine
    (HOST=0.0.0.0) or one ALLOWED_HOSTS does not list. Such a browser gets 400."""
    from django.http.request import validate_host

    name = host.strip("[]")
    if name in ("0.0.0.0", "::"):
        if {h.lower() for h in allowed} - LOOPBACK_NAMES:
            return ""
        what = "this machine's other addresses and names"
    elif validate_host(f"[{name}]" if ":" in name else name, allowed):
        return ""
    else:
        what = name
    return (
        f"Warning: HOST={host}, but ALLOWED_HOSTS ({','.join(allowed)}) does not list {what}: "
        f"a browser opening the console by them gets 400 (Not an address of this console). "
        f"Set ALLOWED_HOSTS to the names and addresses people use, and SITE_URL to the one "
        f"links should carry."
    )


def loopback_site_url_warning(*, host: str, allowed: list[str], site_url: str) -> str:
    """What to say when SITE_URL, the base of the links in alert and review mails and chat
    messages, is this machine's loopback address (its default) while people open the console
    by another (HOST listens beyond loopback, or ALLOWED_HOSTS names others: a proxy's). QA 59:
    an on-call engineer's phone got alerts linking to http://127.0.0.1:8000/jobs/..., and
    nothing had said SITE_URL was left unset."""
    from urllib.parse import urlsplit

    site_host = (urlsplit(site_url).hostname or "").lower()
    if not (site_host in LOOPBACK_NAMES or site_host.startswith("127.")):
        return ""
    others = sorted({h.lower() for h in allowed} - LOOPBACK_NAMES - {"*"})
    name = host.strip("[]")
    if others:
        used = ", ".join(others)
    elif name in LOOPBACK_NAMES or name.startswith("127."):
        return ""
    else:
        used = "this machine's other addresses" if name in ("0.0.0.0", "::") else name
    return (
        f"Warning: SITE_URL={site_url} is this machine's loopback address, but the console is "
        f"opened by {used}: the links in alert and review mails and chat bots' messages lead "
        f"nowhere for their readers. Set SITE_URL to the address people use."
    )


def bind_failure(*, name: str, port: str) -> OSError | ValueError | OverflowError | None:
    """What binding name:port raises, bound as gunicorn binds it: IPv6 for an IPv6 address,
    else IPv4 (a host name too), with SO_REUSEADDR, so a port left in TIME_WAIT by a console
    just stopped is free; None if it binds. port_in_use and unbindable both ask it, so that
    the two checks bind alike."""
    family = socket.AF_INET6 if ":" in name else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((name, int(port)))
        except (OSError, ValueError, OverflowError) as exc:
            return exc
    return None


def port_in_use(*, host: str, port: str) -> bool:
    """Whether binding host:port fails because something listens there, bound as gunicorn
    binds it (bind_failure). Other failures (an address this machine does not have) are left
    to gunicorn to report."""
    failure = bind_failure(name=host.strip("[]"), port=port)
    return isinstance(failure, OSError) and failure.errno == errno.EADDRINUSE


def unbindable(*, host: str, port: str) -> str | None:
    """Why binding host:port fails for any reason but the port being in use (port_in_use
    says that), bound as gunicorn binds it; None if it binds.

    Decided (review 18 asked for the family to come from getaddrinfo "as gunicorn does"):
    gunicorn (27, sock._sock_type) does not resolve the name first: it opens an IPv6 socket
    for an IPv6 literal only, and an IPv4 one for any name, which the kernel's resolver then
    resolves over IPv4. So a HOST name with IPv6 addresses only cannot be served, and this
    check refuses it as gunicorn would fail on it, after the worker had started; it says why
    and which address to give instead. (A name for ::1 in /etc/hosts binds: glibc answers an
    IPv4 lookup of it with 127.0.0.1, and gunicorn then listens there.)"""
    name = host.strip("[]")
    failure = bind_failure(name=name, port=port)
    if failure is None:
        return None
    if isinstance(failure, socket.gaierror):
        return only_ipv6(name) or failure.strerror or str(failure)
    if isinstance(failure, OSError):
        if failure.errno == errno.EADDRINUSE:
            return None
        return failure.strerror or str(failure)
    return str(failure)


def only_ipv6(name: str) -> str:
    """Why a host name gunicorn cannot bind is refused when it has IPv6 addresses only ("":
    it has none, or an IPv4 one too)."""
    if ":" in name:
        return ""
    try:
        found = socket.getaddrinfo(name, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return ""
    addresses = [str(info[4][0]) for info in found if info[0] == socket.AF_INET6]
    if not addresses or len(addresses) != len(found):
        return ""
    return (
        f"{name} has IPv6 addresses only ({addresses[0]}), and gunicorn listens on a host "
        f"name over IPv4 only: set HOST to the address itself (HOST={addresses[0]})"
    )


def suggested_port(port: str) -> int:
    return 9000 if port != "9000" else 9001


def signal_group(child: subprocess.Popen[bytes], signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(child.pid, signum)
