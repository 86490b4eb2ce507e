"""LOCAL_JOB_NETWORK=isolated-outbound: each job's own network namespace, as with `isolated`,
with outbound network through slirp4netns (jobs.network, jobs/netns_holder.py). Real jobs
through the real runner: the worker, the shims, bubblewrap, the holder, slirp4netns and the
kernel.

The machine has no general internet, and servers that tests start bind to 127.0.0.1 only.
Decision: "outbound" is shown by reaching a server in a network namespace of its own
(tests/outside_network.py), joined to this machine by a veth pair with a random /30 of the
benchmarking range 198.18.0.0/15: it binds the namespace's side, an address that exists only
in that namespace, which this machine reaches through its routing table and the veth, as it
would reach another machine through eth0. slirp4netns makes the job's connection from the
host's network, so a job reaching it has outbound network; nothing listens on the machine's
real interfaces, and the host's loopback, which slirp4netns refuses, is not what is reached.
Set up as root with iproute2 (skipped, saying so, otherwise) and removed after each test,
with whatever a killed run left first."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.utils import translation

from jobs.actions import job_delete, job_stop
from jobs.health import problem_shown
from jobs.models import Job, JobStatus
from jobs.network import isolation_problem, network_dir
from jobs.runner import live_shim, process_start
from jobs.scheduler import network_waiting_message
from jobs.texts import display_text, source_of
from jobs.worker import Worker

from .outside_network import HELLO
from .runner_helpers import (
    PY,
    UNTIL_THE_GATE_OPENS,
    log_text,
    make_spec,
    network_holders_killed_after,
    open_gate,
    processes_with,
    run_until,
    runner_settings,  # noqa: F401
    status_of,
    submit,
    volume,
)
from .test_runner_limits import limits  # noqa: F401
from .test_runner_network import (
    CONNECT,
    MEET_THEN_FAIL_ONCE,
    RENDEZVOUS,
    TWO_ROLES,
    alive,
    holder,
    netns_lines,
)
from .test_runner_races import AfterSpawn, WorkerKilled, wait_for

pytestmark = [
    pytest.mark.usefixtures("runner_settings"),
    pytest.mark.skipif(
        not os.access("/usr/bin/slirp4netns", os.X_OK),
        reason="slirp4netns is not installed (apt-get install slirp4netns)",
    ),
]


def results(job: Job, label: str = "master-0") -> list[str]:
    return [
        line.split("result: ", 1)[1]
        for line in log_text(job, label).splitlines()
        if "result: " in line
    ]


def helper_of(job: Job, attempt: int = 1) -> tuple[int, str]:
    """(pid, start time) of the attempt's slirp4netns, as its holder recorded it."""
    pid = int((network_dir(job.public_id, attempt) / "helper").read_text())
    start = process_start(pid)
    assert start is not None, "slirp4netns is not running"
    return pid, start


@pytest.fixture
def outbound(settings) -> Iterator[None]:
    settings.LOCAL_JOB_NETWORK = "isolated-outbound"
    with network_holders_killed_after():
        yield


FETCH = textwrap.dedent(
    """
    import os, sys, urllib.request
    print("netns", os.readlink("/proc/self/ns/net"), flush=True)
    try:
        body = urllib.request.urlopen(sys.argv[1], timeout=5).read().decode()
        print(f"result: got {body}")
    except OSError as exc:
        print(f"result: {type(exc).__name__} {exc}")
    """
)


@pytest.mark.usefixtures("outbound")
def test_the_replicas_of_an_outbound_job_still_rendezvous_on_127_0_0_1_in_their_own_namespace(
    alice,
):
    (volume(django_settings) / "rdzv.py").write_text(RENDEZVOUS)
    job = submit(alice, make_spec(f"{PY} /workspace/rdzv.py", roles=TWO_ROLES))

    run_until(Worker(), lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED))

    assert job.status == JobStatus.SUCCEEDED, log_text(job, "worker-0")
    assert "master got hello" in log_text(job, "master-0")
    [master_ns] = netns_lines(job, "master-0")
    assert netns_lines(job, "worker-0") == [master_ns]
    assert master_ns != os.readlink("/proc/self/ns/net")


@pytest.mark.parametrize(
    ("network", "result"),
    [("isolated-outbound", f"got {HELLO}"), ("isolated", "URLError")],
)
def test_an_outbound_job_reaches_a_server_outside_this_machines_loopback(
    alice, settings, outside, network, result
):
    settings.LOCAL_JOB_NETWORK = network
    (volume(settings) / "fetch.py").write_text(FETCH)
    job = submit(alice, make_spec(f"{PY} /workspace/fetch.py {outside.url}"))

    run_until(Worker(), lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED))

    [got] = results(job)
    assert got.startswith(result), got
    assert netns_lines(job, "master-0") != [os.readlink("/proc/self/ns/net")]  # its own
    assert holder(job) is None


@pytest.mark.usefixtures("outbound")
def test_an_outbound_job_cannot_reach_the_hosts_loopback_services(alice):
    (volume(django_settings) / "connect.py").write_text(CONNECT)
    server = socket.create_server(("127.0.0.1", 0))
    server.setblocking(False)
    port = server.getsockname()[1]
    with server:
        # Its own 127.0.0.1, and the host's loopback as slirp4netns would show it (10.0.2.2).
        command = (
            f"{PY} /workspace/connect.py 127.0.0.1 {port}; "
            f"{PY} /workspace/connect.py 10.0.2.2 {port}"
        )
        job = submit(alice, make_spec(command))
        run_until(Worker(), lambda: status_of(job) == JobStatus.SUCCEEDED)

        assert results(job) == [
            "ConnectionRefusedError [Errno 111] Connection refused",
            "OSError [Errno 101] Network is unreachable",
        ]
        with pytest.raises(BlockingIOError):
            server.accept()  # nothing came in


@pytest.mark.usefixtures("outbound")
def test_an_outbound_job_cannot_reach_another_jobs_listening_port(alice, outside_or_none):
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]  # one nothing on the host listens on, 0.0.0.0 included
    listen = textwrap.dedent(
        f"""
        import os, socket
        server = socket.create_server(("0.0.0.0", {port}))
        server.setblocking(False)
        print("listening", flush=True)
        while not os.path.exists("/workspace/gate-open"):
            try:
                server.accept()
                print("someone got in", flush=True)
            except BlockingIOError:
                pass
        """
    )
    (volume(django_settings) / "listen.py").write_text(listen)
    (volume(django_settings) / "connect.py").write_text(CONNECT)
    listener = submit(alice, make_spec(f"{PY} /workspace/listen.py"))
    worker = Worker()
    run_until(worker, lambda: "listening" in log_text(listener, "master-0"))
    # Its own loopback, the host's loopback (10.0.2.2), its own tap0 address, which is also
    # the listener's in its namespace, and an address of this machine that is not loopback
    # (the veth's host side): were the listener on the host's network, its 0.0.0.0 would
    # answer there, slirp4netns connecting from the host's network.
    outside = outside_or_none
    targets = ["127.0.0.1", "10.0.2.2", "10.0.2.100", *([outside.host_side] if outside else [])]
    command = "; ".join(f"{PY} /workspace/connect.py {target} {port}" for target in targets)
    prober = submit(alice, make_spec(command))

    run_until(worker, lambda: status_of(prober) in (JobStatus.SUCCEEDED, JobStatus.FAILED))
    open_gate(django_settings)
    run_until(worker, lambda: status_of(listener) in (JobStatus.SUCCEEDED, JobStatus.FAILED))

    got = results(prober)
    assert len(got) == len(targets), log_text(prober, "master-0")
    assert not [r for r in got if r == "connected"], dict(zip(targets, got, strict=True))
    assert "someone got in" not in log_text(listener, "master-0")


ROUTES = textwrap.dedent(
    """
    ip -4 route show
    ip route del 169.254.0.0/16 2>&1 && echo "route removed"
    ip route del unreachable 169.254.0.0/16 2>&1 && echo "route removed"
    ip route add default via 10.0.2.2 dev tap0 metric 1 2>&1 && echo "route added"
    ip -4 route show | grep 169.254
    {py} /workspace/connect.py 169.254.169.254 80
    {py} /workspace/connect.py 169.254.1.1 80
    """
)


@pytest.mark.usefixtures("outbound")
def test_link_local_and_the_metadata_service_are_unreachable_and_the_job_cannot_change_that(
    alice,
):
    ip = shutil.which("ip", path="/usr/sbin:/sbin:/usr/bin:/bin")
    if ip is None:
        pytest.skip("iproute2 is not installed here (the job uses its `ip` to try)")
    (volume(django_settings) / "connect.py").write_text(CONNECT)
    (volume(django_settings) / "routes.sh").write_text(ROUTES.format(py=PY))
    job = submit(alice, make_spec("PATH=/usr/sbin:/sbin:$PATH sh /workspace/routes.sh"))

    run_until(Worker(), lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED))

    log = log_text(job, "master-0")
    assert "unreachable 169.254.0.0/16" in log
    assert "route removed" not in log and "route added" not in log, log
    assert log.count("Operation not permitted") == 3, log
    assert results(job) == ["OSError [Errno 113] No route to host"] * 2


RESOLVE = textwrap.dedent(
    """
    import socket, sys
    print("resolv.conf:", open("/etc/resolv.conf").read().strip())
    try:
        print("result:", socket.gethostbyname(sys.argv[1]))
    except OSError as exc:
        print(f"result: {type(exc).__name__} {exc}")
    """
)
NAME = "pypi.org"  # one a job would resolve (pip); resolved here only if this machine does


@pytest.mark.usefixtures("outbound")
def test_an_outbound_job_resolves_names_through_slirp4netns_forwarder(alice):
    try:
        expected = socket.gethostbyname(NAME)
    except OSError:
        expected = None  # no DNS on this machine: only what the job is told is checked
    (volume(django_settings) / "resolve.py").write_text(RESOLVE)
    job = submit(alice, make_spec(f"{PY} /workspace/resolve.py {NAME}"))

    run_until(Worker(), lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED))

    assert "resolv.conf: nameserver 10.0.2.3" in log_text(job, "master-0")
    if expected is None:
        pytest.skip(f"this machine does not resolve {NAME}, so neither can a job")
    assert results(job) == [expected]


def test_an_isolated_job_without_outbound_keeps_the_hosts_resolv_conf(alice, settings):
    settings.LOCAL_JOB_NETWORK = "isolated"
    (volume(settings) / "resolve.py").write_text(RESOLVE)
    job = submit(alice, make_spec(f"{PY} /workspace/resolve.py {NAME}"))

    run_until(Worker(), lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED))

    host = Path("/etc/resolv.conf").read_text().strip()
    assert f"resolv.conf: {host}" in log_text(job, "master-0")
    assert not (network_dir(job.public_id, 1) / "helper").exists()


def slirp_processes() -> list[int]:
    """Live slirp4netns processes of this test's jobs: those writing their errors into its
    run folder (another checkout's tests may run theirs meanwhile)."""
    found = []
    for pid in processes_with("slirp4netns"):
        with contextlib.suppress(OSError):
            if Path(f"/proc/{pid}/comm").read_text().strip() == "slirp4netns" and os.readlink(
                f"/proc/{pid}/fd/2"
            ).startswith(str(django_settings.LOCAL_RUN_DIR) + "/"):
                found.append(pid)
    return found


@pytest.mark.usefixtures("outbound")
@pytest.mark.parametrize("end", ["succeeds", "stopped", "deleted"])
def test_slirp4netns_ends_with_the_job_and_nothing_is_left(alice, end):
    job = submit(alice, make_spec(UNTIL_THE_GATE_OPENS, roles=TWO_ROLES))
    worker = Worker()
    run_until(worker, lambda: status_of(job) == JobStatus.RUNNING and holder(job) is not None)
    found, helper = holder(job), helper_of(job)
    assert found is not None and alive(found) and alive(helper)
    assert helper[0] in slirp_processes()

    if end == "succeeds":
        open_gate(django_settings)
        run_until(worker, lambda: status_of(job) == JobStatus.SUCCEEDED)
    elif end == "stopped":
        job_stop(job=Job.objects.get(pk=job.pk))
        run_until(worker, lambda: status_of(job) == JobStatus.STOPPED)
    else:
        assert job_delete(job=Job.objects.get(pk=job.pk)) is False
        run_until(worker, lambda: not Job.objects.filter(pk=job.pk).exists())

    assert not alive(found) and not alive(helper)
    assert slirp_processes() == []


@pytest.mark.usefixtures("outbound")
def test_slirp4netns_gets_no_environment_and_no_descriptor_of_the_worker(alice, monkeypatch):
    monkeypatch.setenv("SECRET_KEY_OF_THE_WORKER", "do-not-pass-me")
    job = submit(alice, make_spec(UNTIL_THE_GATE_OPENS))
    worker = Worker()
    run_until(worker, lambda: status_of(job) == JobStatus.RUNNING and holder(job) is not None)
    pid, _ = helper_of(job)
    state = network_dir(job.public_id, 1)

    environ = Path(f"/proc/{pid}/environ").read_bytes()
    targets = sorted(os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd"))
    open_gate(django_settings)
    run_until(worker, lambda: status_of(job) == JobStatus.SUCCEEDED)

    assert environ == b""
    assert str(state / "lock") not in targets
    assert [t for t in targets if t.startswith("/")] == [
        "/dev/net/tun",
        "/dev/null",
        "/dev/null",
        str(state / "slirp.err"),
    ], targets


@pytest.mark.usefixtures("outbound")
def test_slirp4netns_ends_by_itself_when_its_holder_is_killed_alone(alice):
    job = submit(alice, make_spec(UNTIL_THE_GATE_OPENS))
    worker = Worker()
    run_until(worker, lambda: status_of(job) == JobStatus.RUNNING and holder(job) is not None)
    found, helper = holder(job), helper_of(job)
    assert found is not None

    os.kill(found[0], signal.SIGKILL)  # someone kills the holder alone

    wait_for(lambda: not alive(helper), what="slirp4netns to end with its holder")
    # The job keeps running (its replicas keep the namespace), and says why its connections
    # out now fail.
    run_until(worker, lambda: outbound_lost_events(job) == 1, what="the event")
    open_gate(django_settings)
    run_until(worker, lambda: status_of(job) == JobStatus.SUCCEEDED)
    assert outbound_lost_events(job) == 1


@pytest.mark.usefixtures("outbound")
def test_a_fault_tolerant_jobs_lost_network_says_its_next_attempt_gets_it_and_what_to_do_now(
    alice,
):
    # QA round 24: the warning names what the owner can do, and a fault-tolerance restart only
    # for a job that has one.
    job = submit(alice, make_spec(UNTIL_THE_GATE_OPENS, fault_tolerance=True))
    worker = Worker()
    run_until(worker, lambda: status_of(job) == JobStatus.RUNNING and holder(job) is not None)

    os.kill(helper_of(job)[0], signal.SIGKILL)  # someone kills slirp4netns alone

    run_until(worker, lambda: outbound_lost_events(job) == 1, what="the event")
    [event] = job.events.filter(reason="OutboundLost")
    with translation.override("en"):
        said = display_text(event.message, event.message_source)
    assert said.endswith(
        "the next attempt of a fault-tolerance restart gets outbound network again. To have "
        "it back now, stop the job and press Run again."
    )
    open_gate(django_settings)
    run_until(worker, lambda: status_of(job) == JobStatus.SUCCEEDED)


def outbound_lost_events(job: Job) -> int:
    return job.events.filter(reason="OutboundLost", type="Warning").count()


@pytest.mark.usefixtures("outbound")
def test_a_killed_slirp4netns_is_said_once_the_job_keeps_running_and_nothing_is_left(
    alice, outside
):
    # Chaos round 18: a job whose slirp4netns was killed kept running, as README decides, but
    # its connections out failed ("Network is unreachable") with nothing said of why.
    (volume(django_settings) / "fetch.py").write_text(FETCH)
    command = (
        f"{PY} /workspace/fetch.py {outside.url}; {UNTIL_THE_GATE_OPENS}; "
        f"{PY} /workspace/fetch.py {outside.url}"
    )
    job = submit(alice, make_spec(command))
    worker = Worker()
    run_until(worker, lambda: results(job) == [f"got {HELLO}"], what="the first fetch")
    found, helper = holder(job), helper_of(job)
    assert outbound_lost_events(job) == 0

    os.kill(helper[0], signal.SIGKILL)  # someone kills slirp4netns alone
    run_until(worker, lambda: outbound_lost_events(job) == 1, what="the event")
    [event] = job.events.filter(reason="OutboundLost")
    assert "slirp4netns" in event.message and "Network is unreachable" in event.message
    # And what to do: a job without fault tolerance never gets it back by itself (QA round 24).
    assert "如需恢复：请停止任务，再点击“再次运行”" in event.message  # stored in LANGUAGE_CODE
    with translation.override("zh-hans"):
        assert "出站网络已中断" in display_text(event.message, event.message_source)
    # Said once: on the next ticks, and by a worker started again (the mark in its folder).
    Worker().tick()
    (network_dir(job.public_id, 1) / "outbound-lost").unlink()
    restarted = Worker()
    restarted.tick()
    restarted.tick()
    assert outbound_lost_events(job) == 1
    assert status_of(job) == JobStatus.RUNNING

    open_gate(django_settings)
    run_until(restarted, lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED))
    assert results(job)[0] == f"got {HELLO}"
    assert "unreachable" in results(job)[1].lower(), results(job)
    assert not alive(found) and not alive(helper)
    assert slirp_processes() == []


@pytest.mark.usefixtures("outbound")
def test_a_fault_tolerance_restart_gets_a_fresh_slirp4netns_and_the_old_one_goes(alice):
    (volume(django_settings) / "rdzv.py").write_text(RENDEZVOUS)
    job = submit(alice, make_spec(MEET_THEN_FAIL_ONCE, roles=TWO_ROLES, fault_tolerance=True))
    worker = Worker()
    run_until(worker, lambda: holder(job) is not None)
    first = helper_of(job)

    run_until(worker, lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED))

    assert (job.status, job.restarts) == (JobStatus.SUCCEEDED, 1), log_text(job, "master-0")
    assert log_text(job, "master-0").count("master got hello") == 2
    assert not alive(first)
    second = int((network_dir(job.public_id, 2) / "helper").read_text())
    assert second != first[0]
    assert (network_dir(job.public_id, 2) / "resolv.conf").exists()
    assert slirp_processes() == []


@pytest.mark.usefixtures("outbound")
@pytest.mark.parametrize("setting_now", ["isolated-outbound", "isolated", "host"])
def test_a_restarted_worker_adopts_the_holder_and_ends_its_slirp4netns_with_the_job(
    alice, settings, outside, setting_now
):
    (volume(django_settings) / "rdzv.py").write_text(RENDEZVOUS)
    (volume(django_settings) / "fetch.py").write_text(FETCH)
    command = (
        f"{PY} /workspace/rdzv.py && {PY} /workspace/fetch.py {outside.url} && cat /etc/resolv.conf"
    )
    job = submit(alice, make_spec(command, roles=TWO_ROLES))
    doomed = Worker()

    def kill_the_worker():
        raise WorkerKilled

    doomed.children = AfterSpawn(2, then=kill_the_worker)  # the holder, then master-0's shim
    with pytest.raises(WorkerKilled):
        doomed.tick()
    helper = helper_of(job)

    # Restarted, with the setting changed or not: worker-0, launched by the new worker, joins
    # master-0 in the attempt's namespace, outbound network and resolv.conf included.
    settings.LOCAL_JOB_NETWORK = setting_now
    run_until(Worker(), lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED))

    assert job.status == JobStatus.SUCCEEDED, log_text(job, "worker-0")
    assert results(job, "master-0") == [f"got {HELLO}"]
    assert results(job, "worker-0") == [f"got {HELLO}"]
    assert "nameserver 10.0.2.3" in log_text(job, "worker-0")
    assert not alive(helper)
    assert slirp_processes() == []


@pytest.mark.usefixtures("outbound")
def test_slirp4netns_and_its_holder_run_in_their_jobs_cgroup_under_the_jobs_parent(
    alice,
    limits,  # noqa: F811
):
    # Its memory is the job's traffic: held with the jobs, not from the console's reserve.
    job = submit(alice, make_spec(UNTIL_THE_GATE_OPENS))
    worker = Worker()
    run_until(worker, lambda: status_of(job) == JobStatus.RUNNING and holder(job) is not None)
    found, helper = holder(job), helper_of(job)

    folders = [
        root / job.public_id / "attempt-1" / "network"
        for root in {limits.memory_root, limits.cpu_root}
    ]
    for folder in folders:
        assert {str(found[0]), str(helper[0])} <= set((folder / "cgroup.procs").read_text().split())

    # Ended first, so the job's cgroups, the network's included, all go with the job.
    open_gate(django_settings)
    run_until(worker, lambda: status_of(job) == JobStatus.SUCCEEDED)
    assert not alive(found) and not alive(helper)
    for root in {limits.memory_root, limits.cpu_root}:
        assert not (root / job.public_id).exists()


@pytest.mark.usefixtures("outbound")
def test_a_holder_spawned_just_before_the_worker_was_killed_is_moved_into_its_cgroup_on_adoption(
    alice,
    limits,  # noqa: F811
):
    # Chaos round 18: the worker moved the holder and slirp4netns into the job's network
    # cgroup only right after spawning them; killed in between (the holder is spawned, not yet
    # ready), the next worker adopted the holder as it was, in the killed worker's cgroup,
    # where slirp4netns's memory came out of the console's reserve for the job's whole life.
    job = submit(alice, make_spec(UNTIL_THE_GATE_OPENS))
    doomed = Worker()

    def kill_the_worker():
        raise WorkerKilled

    doomed.children = AfterSpawn(1, then=kill_the_worker)  # the holder, before it is ready
    with pytest.raises(WorkerKilled):
        doomed.tick()

    worker = Worker()
    run_until(worker, lambda: status_of(job) == JobStatus.RUNNING and holder(job) is not None)
    found, helper = holder(job), helper_of(job)
    for root in {limits.memory_root, limits.cpu_root}:
        procs = (root / job.public_id / "attempt-1" / "network" / "cgroup.procs").read_text()
        assert {str(found[0]), str(helper[0])} <= set(procs.split())

    open_gate(django_settings)
    run_until(worker, lambda: status_of(job) == JobStatus.SUCCEEDED)
    assert not alive(found) and not alive(helper)
    for root in {limits.memory_root, limits.cpu_root}:
        assert not (root / job.public_id).exists()


# -- the worker's start-up check --------------------------------------------------------


def test_the_outbound_check_sets_up_slirp4netns_and_leaves_nothing_behind(settings, tmp_path):
    settings.LOCAL_JOB_NETWORK = "isolated-outbound"
    settings.LOCAL_RUN_DIR = str(tmp_path / "runs")
    Path(settings.LOCAL_RUN_DIR).mkdir()
    # The real slirp4netns, through a script that says it was run and with what.
    ran = tmp_path / "ran"
    wrapper = tmp_path / "slirp4netns"
    wrapper.write_text(f'#!/bin/sh\necho "$@" > {ran}\nexec /usr/bin/slirp4netns "$@"\n')
    wrapper.chmod(0o755)
    settings.LOCAL_SLIRP4NETNS = str(wrapper)

    assert isolation_problem() == ""

    assert "--disable-host-loopback" in ran.read_text().split()
    state = tmp_path / "runs" / "network-check"
    assert sorted(p.name for p in state.iterdir()) == []
    assert slirp_processes() == []


@pytest.mark.parametrize(
    ("slirp", "problem"),
    [
        ("/nonexistent/slirp4netns", "slirp4netns is not installed at /nonexistent/slirp4netns"),
        ("/bin/false", "slirp4netns failed: exit code 1"),
        # Its own last word, not the warning it prints first whenever it starts.
        ("fails-saying-why", "slirp4netns failed: open(/dev/net/tun): No such device"),
    ],
)
def test_where_slirp4netns_is_missing_or_fails_the_check_says_so(
    settings, tmp_path, slirp, problem
):
    if slirp == "fails-saying-why":
        slirp = str(tmp_path / "slirp4netns")
        Path(slirp).write_text(
            "#!/bin/sh\necho 'open(/dev/net/tun): No such device' >&2\n"
            "echo 'WARNING: Support for seccomp is experimental' >&2\nexit 1\n"
        )
        Path(slirp).chmod(0o755)
    settings.LOCAL_JOB_NETWORK = "isolated-outbound"
    settings.LOCAL_SLIRP4NETNS = slirp
    settings.LOCAL_RUN_DIR = str(tmp_path / "runs")
    Path(settings.LOCAL_RUN_DIR).mkdir()

    assert isolation_problem() == problem

    assert live_shim(tmp_path / "runs" / "network-check") is None


def test_a_missing_slirp4netns_is_said_in_chinese_and_english(settings):
    settings.LOCAL_JOB_NETWORK = "isolated-outbound"
    problem = "slirp4netns is not installed at /usr/bin/slirp4netns"
    waiting = network_waiting_message(problem)

    with translation.override("zh-hans"):
        shown_zh = problem_shown(problem)
        waiting_zh = display_text(waiting, source_of(waiting))
    with translation.override("en"):
        shown_en = problem_shown(problem)
        waiting_en = display_text(waiting, source_of(waiting))

    assert shown_zh == (
        "隔离网络不可用：未安装 slirp4netns（/usr/bin/slirp4netns；apt-get install slirp4netns）"
    )
    assert shown_en == (
        "isolated networking unavailable: slirp4netns is not installed at "
        "/usr/bin/slirp4netns (apt-get install slirp4netns)"
    )
    assert "LOCAL_JOB_NETWORK=isolated-outbound" in waiting_zh
    assert "未安装 slirp4netns" in waiting_zh
    assert waiting_en.startswith(
        "Waiting for isolated networking: this machine cannot set up the network namespace "
        "with outbound network each local job gets (LOCAL_JOB_NETWORK=isolated-outbound): "
        "slirp4netns is not installed at /usr/bin/slirp4netns (apt-get install slirp4netns)."
    )


def test_the_setting_takes_isolated_outbound_and_names_the_three_values_when_wrong(tmp_path):
    from .test_foundation import manage

    assert manage(tmp_path, "check", LOCAL_JOB_NETWORK="isolated-outbound").returncode == 0
    wrong = manage(tmp_path, "check", LOCAL_JOB_NETWORK="outbound")

    assert wrong.returncode == 1
    assert wrong.stderr.strip() == (
        "Configuration error: LOCAL_JOB_NETWORK is host, isolated or isolated-outbound, "
        "not 'outbound'"
    )


def test_the_workers_log_says_what_a_missing_slirp4netns_holds_up_without_blaming_namespaces(
    settings, tmp_path, caplog
):
    """QA 22: with slirp4netns missing the log said jobs wait for "a worker that can create
    network namespaces", which this machine can; what it lacks is slirp4netns."""
    from jobs.worker import checked_identity

    settings.LOCAL_JOB_NETWORK = "isolated-outbound"
    settings.LOCAL_SLIRP4NETNS = str(tmp_path / "nonexistent")
    settings.LOCAL_RUN_DIR = str(tmp_path / "runs")
    Path(settings.LOCAL_RUN_DIR).mkdir()

    with caplog.at_level("ERROR", logger="jobs.worker"):
        identity = checked_identity()

    assert identity.network_problem == f"slirp4netns is not installed at {tmp_path}/nonexistent"
    [said] = [r.getMessage() for r in caplog.records if r.name == "jobs.worker"]
    assert "until a worker that can set up their network runs" in said
    assert "network namespaces" not in said
