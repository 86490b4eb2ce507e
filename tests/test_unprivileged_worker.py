"""The worker run as README recommends: as a dedicated unprivileged user, here `nobody`.

Every other test runs as root, which reads and writes whatever the permissions say, so only
these show the recommended setup works: the real `manage.py worker`, as uid 65534, with its
var folder, run folder and SQLite database that user's, runs jobs in its sandbox, measures
and cleans up what they leave in /tmp, and says it cannot enforce CPU and memory. The test
process talks to the worker's database through `manage.py shell` run as that user too (its
own test database is another one), submitting with jobs.services as the web process does.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from jobs.models import JobStatus

from .outside_network import HELLO
from .runner_helpers import NOBODY

ROOT = Path(__file__).resolve().parent.parent
RESULT = "RESULT:"

pytestmark = pytest.mark.slow


def reachable_by_nobody(path: Path) -> bool:
    """Whether NOBODY can reach `path` through the folders above it (it is not their owner,
    and belongs to no group of theirs: the permissions for others apply)."""
    for folder in [*reversed(path.parents), path]:
        info = folder.stat()
        if info.st_uid != NOBODY and not info.st_mode & stat.S_IXOTH:
            return False
    return True


def blocking_folder(path: Path) -> Path | None:
    """The uppermost folder above `path` NOBODY cannot enter, if any."""
    for folder in reversed(path.parents):
        info = folder.stat()
        if info.st_uid != NOBODY and not info.st_mode & stat.S_IXOTH:
            return folder
    return None


def as_nobody_prefix(stash: Path) -> list[str]:
    """The command line prefix that runs a command as NOBODY with this checkout and its
    interpreter readable. Where they are (the interpreter of a pyenv in /root, 0700, here),
    the command runs in a mount namespace of its own in which each folder NOBODY cannot
    enter is a read-only-to-others empty folder (tmpfs) with only the needed folders bound
    back into it: nothing else of root's is shown, and nothing on the host changes."""
    if os.geteuid() != 0:
        pytest.skip("starts the worker as another user, which needs root (CI runs as root)")
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("needs setpriv (util-linux) to start the worker as another user")
    become = [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    needed = [Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve(), ROOT]
    blocked: dict[Path, list[Path]] = {}
    for path in needed:
        blocker = blocking_folder(path)
        if blocker is not None:
            blocked.setdefault(blocker, []).append(path)
    if not blocked:
        return become
    if shutil.which("unshare") is None:
        pytest.skip(f"{', '.join(map(str, blocked))} cannot be entered by uid {NOBODY}")
    script = ["set -e"]
    for number, (blocker, paths) in enumerate(blocked.items()):
        kept = stash / str(number)
        kept.mkdir()
        script += [
            f"mount --bind '{blocker}' '{kept}'",
            f"mount -t tmpfs -o mode=755 tmpfs '{blocker}'",
        ]
        for path in paths:
            inner = path.relative_to(blocker)
            script += [f"mkdir -p '{path}'", f"mount --bind '{kept / inner}' '{path}'"]
        script.append(f"umount -l '{kept}'")
    script.append('exec "$@"')
    prefix = ["unshare", "--mount", "--propagation", "private", "sh", "-c", "\n".join(script)]
    prefix += ["sh", *become]
    probe = subprocess.run(
        [*prefix, sys.executable, "-c", "import django"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0:
        pytest.skip(
            f"uid {NOBODY} cannot reach {', '.join(map(str, blocked))}, and a mount namespace "
            f"revealing the interpreter and checkout fails here: {probe.stderr.strip()[-300:]}"
        )
    return prefix


@pytest.fixture
def unprivileged(nobody_folder):
    """(the prefix running a command as NOBODY, the environment of the worker and its
    shells: a var folder and database of NOBODY's, small caps and short timings)."""
    stash = Path(tempfile.mkdtemp(prefix="console-stash-"))
    prefix = as_nobody_prefix(stash)
    var = nobody_folder / "var"
    home = nobody_folder / "home"
    for folder in (var, home):
        folder.mkdir()
        os.chown(folder, NOBODY, NOBODY)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "HOME": str(home),
        "CONSOLE_VAR_DIR": str(var),
        "LANGUAGE_CODE": "en",
        "WORKER_POLL_SECONDS": "0.2",
        "LOCAL_STOP_GRACE_SECONDS": "1",
        "LOCAL_TMP_MAX_GB": "0.002",  # ~2 MB
        "LOCAL_TMP_CHECK_SECONDS": "0.2",
    }
    migrate = subprocess.run(
        [*prefix, sys.executable, "manage.py", "migrate", "-v0"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert migrate.returncode == 0, migrate.stderr
    yield prefix, env
    shutil.rmtree(stash, ignore_errors=True)


def console(prefix: list[str], env: dict[str, str], code: str):
    """What `code`, run in `manage.py shell` as NOBODY on the worker's database, sets
    `result` to."""
    program = f"import json\nresult = None\n{code}\nprint({RESULT!r} + json.dumps(result))"
    done = subprocess.run(
        [*prefix, sys.executable, "manage.py", "shell", "-v0", "-c", program],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    [line] = [text for text in done.stdout.splitlines() if text.startswith(RESULT)]
    return json.loads(line.removeprefix(RESULT))


SUBMIT = """
import uuid
from django.contrib.auth.models import User
from jobs import spec as S
from jobs.services import jobs_submit
owner, _ = User.objects.get_or_create(username="alice")
result = {}
for name, command in COMMANDS.items():
    spec = S.JobSpec(
        name=name,
        resource_pool_id="local",
        image="python:3.12",
        command=command,
        roles=[S.Role("master", 1, cpu=1, memory_gb=1)],
    )
    [job] = jobs_submit(owner=owner, spec=spec, submit_key=str(uuid.uuid4()))
    result[name] = job.public_id
"""

REPORT = """
from jobs.logs import replica_log_path
from jobs.models import FINAL_STATUSES, Job
result = {}
for job in Job.objects.all():
    log = replica_log_path(job.public_id, "master-0")
    result[job.name] = {
        "status": job.status,
        "final": job.status in FINAL_STATUSES,
        "reason": job.status_reason,
        "events": [[event.reason, event.message] for event in job.events.all()],
        "log": log.read_text() if log.exists() else "",
    }
"""


def test_the_worker_run_as_an_unprivileged_user_runs_measures_and_cleans_up_jobs(
    unprivileged, nobody_folder
):
    prefix, env = unprivileged
    var = Path(env["CONSOLE_VAR_DIR"])
    database = var / "console.sqlite3"
    commands = {
        "hello": (
            'echo "hello from uid $(id -u)"; '
            f"cat {database} > /dev/null 2>&1 && echo DATABASE-READ || echo DATABASE-HIDDEN"
        ),
        # Go's module cache (read-only folders), and 4 MB, over the cap, in a folder its
        # owner may write to but not list, then not even enter.
        "locked-tmp": (
            "mkdir -p /tmp/go/pkg/mod/example.com/lib@v1 && "
            "echo 'package lib' > /tmp/go/pkg/mod/example.com/lib@v1/lib.go && "
            "chmod -R a-w /tmp/go && "
            "mkdir /tmp/locked && chmod 300 /tmp/locked && "
            "head -c 4000000 /dev/urandom > /tmp/locked/blob && chmod 000 /tmp/locked && "
            "echo WRITTEN; sleep 60"
        ),
    }
    ids = console(prefix, env, f"COMMANDS = {commands!r}\n{SUBMIT}")
    worker_log = nobody_folder / "worker.log"
    with open(worker_log, "wb") as output:
        worker = subprocess.Popen(
            [*prefix, sys.executable, "manage.py", "worker"],
            cwd=ROOT,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 90
        while True:
            jobs = console(prefix, env, REPORT)
            if all(job["final"] for job in jobs.values()):
                break
            assert worker.poll() is None, worker_log.read_text()
            assert time.monotonic() < deadline, (jobs, worker_log.read_text())
            time.sleep(0.5)

        hello, locked = jobs["hello"], jobs["locked-tmp"]
        assert hello["status"] == JobStatus.SUCCEEDED, (hello, worker_log.read_text())
        assert f"hello from uid {NOBODY}\n" in hello["log"]
        # The console's state stays hidden from its jobs.
        assert "DATABASE-HIDDEN\n" in hello["log"]
        # cgroups are root's here: CPU and memory are not enforced, and the job says so.
        [not_enforced] = [m for reason, m in hello["events"] if reason == "LimitsNotEnforced"]
        assert not_enforced.startswith("CPU and memory are not enforced on this machine: ")
        # What it hid in a folder it could not list still counted against its /tmp cap.
        assert locked["status"] == JobStatus.FAILED, locked
        assert locked["reason"].startswith("master-0 wrote 0.00"), locked["reason"]
        assert "to /tmp, over the 0.002 GB limit (LOCAL_TMP_MAX_GB)." in locked["reason"]
        run = var / "runs" / ids["locked-tmp"]
        # Its /tmp went when it ended, read-only and unreadable folders and all ...
        assert not (run / "attempt-1" / "master-0" / "tmp").exists()
        assert (run / "attempt-1" / "master-0").is_dir()

        # ... and everything else of it when it is deleted.
        deleted = console(
            prefix,
            env,
            "from jobs.actions import job_delete\nfrom jobs.models import Job\n"
            f"result = job_delete(job=Job.objects.get(public_id={ids['locked-tmp']!r}))",
        )
        assert deleted is True
        assert not run.exists()
        assert (var / "runs" / ids["hello"]).is_dir()
    finally:
        worker.terminate()
        worker.wait(timeout=30)


# Rank 0 listens on MASTER_ADDR:MASTER_PORT and tries the host's port given; rank 1 connects
# to rank 0. Each prints its network namespace and what came of its connections.
ISOLATED_JOB = """/usr/bin/python3 - {port} <<'PY'
import os, socket, sys, time
print("netns", os.readlink("/proc/self/ns/net"), flush=True)
addr = (os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]))
if os.environ["RANK"] == "0":
    server = socket.create_server(addr)
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=3).close()
        print("host port: connected")
    except OSError as exc:
        print("host port:", type(exc).__name__)
    conn, _ = server.accept()
    print("master got", conn.recv(16).decode())
else:
    for _ in range(400):
        try:
            conn = socket.create_connection(addr)
            break
        except OSError:
            time.sleep(0.05)
    conn.sendall(b"hello")
PY
"""


def run_two_role_job_beside_a_loopback_server(
    prefix: list[str], env: dict[str, str], name: str, command: str, *, worker_log: Path
) -> tuple[dict[str, str], dict]:
    """Submits a master + worker job running `command` (its `{port}`: a server this test
    holds on the host's 127.0.0.1), runs the worker as NOBODY until the job ends, and checks
    that nothing of the job reached that server. Returns the jobs' ids and the job's report."""
    server = socket.create_server(("127.0.0.1", 0))
    server.setblocking(False)
    submit = SUBMIT.replace(
        'roles=[S.Role("master", 1, cpu=1, memory_gb=1)]',
        'roles=[S.Role("master", 1), S.Role("worker", 1)]',
    )
    command = command.replace("{port}", str(server.getsockname()[1]))
    ids = console(prefix, env, f"COMMANDS = {{{name!r}: {command!r}}}\n{submit}")
    with server, open(worker_log, "wb") as output:
        worker = subprocess.Popen(
            [*prefix, sys.executable, "manage.py", "worker"],
            cwd=ROOT,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + 90
            while not (job := console(prefix, env, REPORT)[name])["final"]:
                assert worker.poll() is None, worker_log.read_text()
                assert time.monotonic() < deadline, (job, worker_log.read_text())
                time.sleep(0.5)
            with pytest.raises(BlockingIOError):
                server.accept()  # nothing of the job came in
        finally:
            worker.terminate()
            worker.wait(timeout=30)
    return ids, job


def test_the_worker_run_as_an_unprivileged_user_isolates_a_jobs_network(
    unprivileged, nobody_folder
):
    prefix, env = unprivileged
    env = {**env, "LOCAL_JOB_NETWORK": "isolated"}
    var = Path(env["CONSOLE_VAR_DIR"])
    worker_log = nobody_folder / "worker.log"
    ids, job = run_two_role_job_beside_a_loopback_server(
        prefix, env, "isolated", ISOLATED_JOB, worker_log=worker_log
    )

    assert job["status"] == JobStatus.SUCCEEDED, (job, worker_log.read_text())
    assert "host port: ConnectionRefusedError\n" in job["log"]
    assert "master got hello\n" in job["log"]
    [netns] = [line.split("netns ")[1] for line in job["log"].splitlines() if " netns " in line]
    assert netns != os.readlink("/proc/self/ns/net")
    assert "network of local jobs: isolated" in worker_log.read_text()
    # Its holder ran as NOBODY (in a user namespace of its own, as itself: it wrote its pid
    # file as NOBODY), and is gone, its lock with it.
    network = var / "runs" / ids["isolated"] / "attempt-1" / "network"
    assert (network / "pid").stat().st_uid == NOBODY
    assert not (network / "lock").exists()
    holder = int((network / "pid").read_text())
    with contextlib.suppress(FileNotFoundError):
        state = Path(f"/proc/{holder}/stat").read_text().rsplit(")", 1)[1].split()[0]
        assert state in ("Z", "X"), f"the holder {holder} still runs"


# Rank 0 listens on MASTER_ADDR:MASTER_PORT, says who it is and what it is told to resolve
# with, fetches the page of a server outside this machine's loopback and tries the host's
# loopback port; rank 1 connects to rank 0.
OUTBOUND_JOB = """/usr/bin/python3 - {url} {port} <<'PY'
import os, socket, sys, time, urllib.request
print("netns", os.readlink("/proc/self/ns/net"), flush=True)
addr = (os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]))
if os.environ["RANK"] == "0":
    server = socket.create_server(addr)
    print("uid", os.getuid(), "gid", os.getgid())
    print("resolv.conf:", open("/etc/resolv.conf").read().strip())
    try:
        print("page:", urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())
    except OSError as exc:
        print("page:", type(exc).__name__, exc)
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[2])), timeout=3).close()
        print("host port: connected")
    except OSError as exc:
        print("host port:", type(exc).__name__)
    try:
        socket.create_connection(("169.254.169.254", 80), timeout=3).close()
        print("metadata: connected")
    except OSError as exc:
        print("metadata:", exc)
    import subprocess
    removed = subprocess.run(
        ["/usr/sbin/ip", "route", "del", "169.254.0.0/16"], capture_output=True, text=True
    )
    print("route del:", removed.returncode, removed.stderr.strip())
    conn, _ = server.accept()
    print("master got", conn.recv(16).decode())
else:
    for _ in range(400):
        try:
            conn = socket.create_connection(addr)
            break
        except OSError:
            time.sleep(0.05)
    conn.sendall(b"hello")
PY
"""


def test_the_worker_run_as_an_unprivileged_user_gives_isolated_jobs_outbound_network(
    unprivileged, nobody_folder, outside
):
    # `outside`, set up as root: a server in a network namespace of its own, reached through
    # a veth pair (tests/outside_network.py), neither on this machine's loopback nor its eth0.
    if shutil.which("slirp4netns") is None:
        pytest.skip("slirp4netns is not installed (apt-get install slirp4netns)")
    prefix, env = unprivileged
    env = {**env, "LOCAL_JOB_NETWORK": "isolated-outbound"}
    var = Path(env["CONSOLE_VAR_DIR"])
    worker_log = nobody_folder / "worker.log"
    ids, job = run_two_role_job_beside_a_loopback_server(
        prefix, env, "outbound", OUTBOUND_JOB.replace("{url}", outside.url), worker_log=worker_log
    )

    assert job["status"] == JobStatus.SUCCEEDED, (job, worker_log.read_text())
    assert f"uid {NOBODY} gid {NOBODY}\n" in job["log"]  # itself, as without outbound
    assert "resolv.conf: nameserver 10.0.2.3\n" in job["log"]
    assert f"page: {HELLO}\n" in job["log"]
    assert "host port: ConnectionRefusedError\n" in job["log"]
    assert "metadata: [Errno 113] No route to host\n" in job["log"]
    assert "route del: 2 RTNETLINK answers: Operation not permitted\n" in job["log"]
    assert "master got hello\n" in job["log"]
    assert "network of local jobs: isolated-outbound" in worker_log.read_text()
    network = var / "runs" / ids["outbound"] / "attempt-1" / "network"
    assert (network / "pid").stat().st_uid == NOBODY
    assert not (network / "lock").exists()
    for name in ("pid", "helper"):  # the holder and its slirp4netns, both gone
        pid = int((network / name).read_text())
        with contextlib.suppress(FileNotFoundError):
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            assert state in ("Z", "X"), f"{name} {pid} still runs"
