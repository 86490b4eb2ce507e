"""LOCAL_JOB_NETWORK: a local job on the host's network, or isolated in a network namespace of
its own that its replicas share (jobs.network, jobs/netns_holder.py). Real processes: the
worker, the shims, bubblewrap, the holder and the kernel's namespaces."""

from __future__ import annotations

import contextlib
import html
import os
import signal
import socket
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings as django_settings

from jobs import spec as S
from jobs.actions import job_delete, job_stop
from jobs.models import Job, JobStatus
from jobs.network import network_dir
from jobs.runner import live_shim, process_start
from jobs.worker import Worker

from . import test_api as v1
from .runner_helpers import (
    CARD,
    PY,
    UNTIL_THE_GATE_OPENS,
    log_text,
    make_spec,
    network_holders_killed_after,
    open_gate,
    run_until,
    runner_settings,  # noqa: F401
    status_of,
    submit,
    volume,
)
from .test_runner_races import AfterSpawn, WorkerKilled, wait_for
from .test_volume_subfolders import start_refusal_as_read

pytestmark = pytest.mark.usefixtures("runner_settings")
wsgi, alice_key, api = v1.wsgi, v1.alice_key, v1.api

# Rank 0 listens on MASTER_ADDR:MASTER_PORT (127.0.0.1), rank 1 connects to it; each prints
# the network namespace it is in.
RENDEZVOUS = textwrap.dedent(
    """
    import os, socket, time
    print("netns", os.readlink("/proc/self/ns/net"), flush=True)
    addr = (os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]))
    if os.environ["RANK"] == "0":
        server = socket.create_server(addr)
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
        print("worker sent hello")
    """
)
# Tries the address given, and prints what came of it.
CONNECT = textwrap.dedent(
    """
    import socket, sys
    try:
        socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=3).close()
        print("result: connected")
    except OSError as exc:
        print(f"result: {type(exc).__name__} {exc}")
    """
)
TWO_ROLES = [S.Role("master", 1, CARD, 1), S.Role("worker", 1, CARD, 1)]


@pytest.fixture
def isolated(settings) -> Iterator[None]:
    settings.LOCAL_JOB_NETWORK = "isolated"
    with network_holders_killed_after():
        yield


def holder(job: Job, attempt: int = 1) -> tuple[int, str] | None:
    """(pid, start time) of the live holder of the job's attempt's network namespace."""
    return live_shim(network_dir(job.public_id, attempt))


def alive(found: tuple[int, str]) -> bool:
    """Whether that process still lives (a zombie is dead: only its parent's wait is missing)."""
    pid, start = found
    if process_start(pid) != start:
        return False
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in "ZX"
    return False


def netns_lines(job: Job, label: str) -> list[str]:
    return [
        line.split("netns ", 1)[1]
        for line in log_text(job, label).splitlines()
        if " netns " in line
    ]


@pytest.mark.usefixtures("isolated")
def test_isolated_replicas_share_one_namespace_of_their_own_and_rendezvous_on_127_0_0_1(alice):
    (volume(django_settings) / "rdzv.py").write_text(RENDEZVOUS)
    job = submit(alice, make_spec(f"{PY} /workspace/rdzv.py", roles=TWO_ROLES))

    run_until(Worker(), lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED))

    assert job.status == JobStatus.SUCCEEDED, log_text(job, "worker-0")
    assert "master got hello" in log_text(job, "master-0")
    [master_ns] = netns_lines(job, "master-0")
    assert netns_lines(job, "worker-0") == [master_ns]
    assert master_ns != os.readlink("/proc/self/ns/net")  # not the host's


@pytest.mark.parametrize(
    ("network", "result"),
    [("host", "result: connected"), ("isolated", "result: ConnectionRefusedError")],
)
def test_an_isolated_job_cannot_reach_a_port_open_on_the_hosts_loopback(
    alice, settings, network, result
):
    settings.LOCAL_JOB_NETWORK = network
    (volume(settings) / "connect.py").write_text(CONNECT)
    server = socket.create_server(("127.0.0.1", 0))
    server.setblocking(False)
    port = server.getsockname()[1]
    with server:
        job = submit(alice, make_spec(f"{PY} /workspace/connect.py 127.0.0.1 {port}"))
        run_until(Worker(), lambda: status_of(job) == JobStatus.SUCCEEDED)

        assert result in log_text(job, "master-0")
        if network == "isolated":
            with pytest.raises(BlockingIOError):
                server.accept()  # nothing came in
            assert holder(job) is None


@pytest.mark.usefixtures("isolated")
def test_an_isolated_job_has_no_network_beyond_its_loopback(alice):
    (volume(django_settings) / "connect.py").write_text(CONNECT)
    # The cloud metadata service's address, and one of TEST-NET-1: no route to either.
    command = (
        f"{PY} /workspace/connect.py 169.254.169.254 80; {PY} /workspace/connect.py 192.0.2.1 80"
    )
    job = submit(alice, make_spec(command))

    run_until(Worker(), lambda: status_of(job) == JobStatus.SUCCEEDED)

    results = [
        line.split("result: ", 1)[1]
        for line in log_text(job, "master-0").splitlines()
        if "result: " in line
    ]
    assert [r.split(" ", 1)[0] for r in results] == ["OSError", "OSError"], results
    assert all("Network is unreachable" in r for r in results), results


@pytest.mark.usefixtures("isolated")
@pytest.mark.parametrize("end", ["succeeds", "stopped", "deleted"])
def test_the_namespace_holder_is_gone_once_the_job_ends_is_stopped_or_is_deleted(alice, end):
    job = submit(alice, make_spec(UNTIL_THE_GATE_OPENS, roles=TWO_ROLES))
    worker = Worker()
    run_until(worker, lambda: status_of(job) == JobStatus.RUNNING and holder(job) is not None)
    found = holder(job)
    assert found is not None and alive(found)

    if end == "succeeds":
        open_gate(django_settings)
        run_until(worker, lambda: status_of(job) == JobStatus.SUCCEEDED)
    elif end == "stopped":
        job_stop(job=Job.objects.get(pk=job.pk))
        run_until(worker, lambda: status_of(job) == JobStatus.STOPPED)
    else:
        assert job_delete(job=Job.objects.get(pk=job.pk)) is False  # goes once stopped
        run_until(worker, lambda: not Job.objects.filter(pk=job.pk).exists())

    assert not alive(found)


# The replicas meet (rdzv.py), then rank 0 fails the first attempt: a fault-tolerance restart.
MEET_THEN_FAIL_ONCE = (
    f"{PY} /workspace/rdzv.py; "
    "if [ $RANK = 0 ] && [ ! -e /workspace/failed-once ]; then touch /workspace/failed-once; exit 1; fi"
)


@pytest.mark.usefixtures("isolated")
def test_a_fault_tolerance_restart_gets_a_fresh_namespace_and_the_failed_attempts_goes(alice):
    (volume(django_settings) / "rdzv.py").write_text(RENDEZVOUS)
    job = submit(alice, make_spec(MEET_THEN_FAIL_ONCE, roles=TWO_ROLES, fault_tolerance=True))
    worker = Worker()
    run_until(worker, lambda: holder(job) is not None)
    first = holder(job)

    run_until(worker, lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED))

    assert (job.status, job.restarts) == (JobStatus.SUCCEEDED, 1), log_text(job, "master-0")
    assert log_text(job, "master-0").count("master got hello") == 2  # both attempts met
    first_ns, second_ns = netns_lines(job, "master-0")
    assert netns_lines(job, "worker-0") == [first_ns, second_ns]
    # (The kernel may give the new namespace the freed one's number: its holder tells.)
    assert first is not None and not alive(first)
    second = int((network_dir(job.public_id, 2) / "pid").read_text())
    assert second != first[0]
    assert holder(job, 2) is None


@pytest.mark.usefixtures("isolated")
@pytest.mark.parametrize(
    ("setting_then", "setting_now"),
    [("isolated", "isolated"), ("isolated", "host"), ("host", "isolated")],
)
def test_a_worker_restarted_mid_launch_puts_the_next_replica_on_the_same_network(
    alice, settings, setting_then, setting_now
):
    settings.LOCAL_JOB_NETWORK = setting_then
    (volume(django_settings) / "rdzv.py").write_text(RENDEZVOUS)
    job = submit(alice, make_spec(f"{PY} /workspace/rdzv.py", roles=TWO_ROLES))
    doomed = Worker()

    def kill_the_worker():
        raise WorkerKilled

    # Isolated, spawn 1 is the holder and 2 master-0's shim; on the host's network, 1 is
    # master-0's. The worker dies there, before worker-0's launch.
    doomed.children = AfterSpawn(2 if setting_then == "isolated" else 1, then=kill_the_worker)
    with pytest.raises(WorkerKilled):
        doomed.tick()
    found = holder(job)
    assert (found is not None) == (setting_then == "isolated")
    wait_for(lambda: bool(netns_lines(job, "master-0")), what="master-0 listening")

    # Restarted (with the setting changed, or not): the attempt keeps the network it began
    # with, so the new worker adopts the holder (if any) and worker-0 joins master-0 there.
    settings.LOCAL_JOB_NETWORK = setting_now
    worker = Worker()
    run_until(worker, lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED))

    assert job.status == JobStatus.SUCCEEDED, log_text(job, "worker-0")
    assert "master got hello" in log_text(job, "master-0")
    [master_ns] = netns_lines(job, "master-0")
    assert netns_lines(job, "worker-0") == [master_ns]
    assert (master_ns == os.readlink("/proc/self/ns/net")) == (setting_then == "host")
    if found is not None:
        assert not alive(found)  # ended by the worker that adopted it
    assert holder(job) is None


@pytest.mark.usefixtures("isolated")
def test_a_worker_started_after_a_job_ended_without_it_ends_the_jobs_holder(alice):
    job = submit(alice, make_spec(UNTIL_THE_GATE_OPENS))
    run_until(Worker(), lambda: holder(job) is not None)
    found = holder(job)
    # The job is ended (as a worker killed right after the end was committed leaves it).
    Job.objects.filter(pk=job.pk).update(status=JobStatus.FAILED)
    open_gate(django_settings)

    Worker()

    assert found is not None and not alive(found)


def test_with_the_host_network_no_holder_is_started(alice, settings):
    assert settings.LOCAL_JOB_NETWORK == "host"  # the default
    (volume(settings) / "rdzv.py").write_text(RENDEZVOUS)
    job = submit(alice, make_spec(f"{PY} /workspace/rdzv.py", roles=TWO_ROLES))

    run_until(Worker(), lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED))

    assert job.status == JobStatus.SUCCEEDED
    assert netns_lines(job, "master-0") == [os.readlink("/proc/self/ns/net")]
    assert not network_dir(job.public_id, 1).exists()


@pytest.mark.usefixtures("isolated")
def test_a_replica_whose_running_peers_namespace_is_gone_fails_the_job_instead_of_splitting_it(
    alice,
):
    job = submit(alice, make_spec(UNTIL_THE_GATE_OPENS, roles=TWO_ROLES))
    doomed = Worker()

    def kill_the_worker():
        raise WorkerKilled

    doomed.children = AfterSpawn(2, then=kill_the_worker)  # the holder, then master-0
    with pytest.raises(WorkerKilled):
        doomed.tick()
    found = holder(job)
    assert found is not None
    os.kill(found[0], signal.SIGKILL)  # someone kills the holder; master-0 runs on in it
    wait_for(lambda: holder(job) is None, what="the holder to die")

    run_until(Worker(), lambda: status_of(job) == JobStatus.FAILED)

    assert job.status_reason == (
        "无法启动：已在运行的实例所在的网络命名空间已不存在（其持有进程已结束），其余实例无法加入"
    )
    assert [r.status for r in job.replicas.order_by("role")] == ["stopped", "stopped"]


@pytest.mark.usefixtures("isolated")
def test_a_peer_namespace_gone_at_start_is_said_in_english_by_the_api_and_in_chinese_on_the_page(
    alice, alice_client, api
):
    """Session 49: jobs.network's refusals were worded as they were raised, in the worker's
    language: an English API reader got "无法启动：已在运行的实例所在的网络命名空间已不存在"."""
    job = submit(alice, make_spec(UNTIL_THE_GATE_OPENS, roles=TWO_ROLES))
    doomed = Worker()

    def kill_the_worker():
        raise WorkerKilled

    doomed.children = AfterSpawn(2, then=kill_the_worker)  # the holder, then master-0
    with pytest.raises(WorkerKilled):
        doomed.tick()
    found = holder(job)
    assert found is not None
    os.kill(found[0], signal.SIGKILL)
    wait_for(lambda: holder(job) is None, what="the holder to die")
    run_until(Worker(), lambda: status_of(job) == JobStatus.FAILED)

    read = start_refusal_as_read(job, api=api, client=alice_client)

    english = (
        "Could not start: the network namespace of its replicas already running is gone (its "
        "holder process ended), so the others cannot join them"
    )
    assert read["v1"] == read["v1 events"] == read["v2"] == english
    assert (
        "无法启动：已在运行的实例所在的网络命名空间已不存在（其持有进程已结束），其余实例无法加入"
        in read["page"]
    )


@pytest.mark.skipif(
    not os.access("/usr/bin/slirp4netns", os.X_OK),
    reason="slirp4netns is not installed (apt-get install slirp4netns)",
)
def test_slirp4netns_gone_since_the_worker_started_is_said_in_english_by_the_api_and_in_chinese_on_the_page(
    alice, alice_client, api, settings
):
    """Session 49: the holder's refusal (jobs.network.HolderFailed) was worded as it was
    raised, in the worker's language, and its reason, the check's own words, in English."""
    settings.LOCAL_JOB_NETWORK = "isolated-outbound"
    settings.LOCAL_SLIRP4NETNS = "/usr/bin/slirp4netns"
    worker = Worker()
    worker.tick()  # its start-up check passed: slirp4netns was there
    settings.LOCAL_SLIRP4NETNS = "/nonexistent/slirp4netns"  # removed since (an upgrade)
    job = submit(alice, make_spec("true"))
    run_until(worker, lambda: status_of(job) == JobStatus.FAILED)

    read = start_refusal_as_read(job, api=api, client=alice_client)

    english = (
        "Could not start: its network namespace (LOCAL_JOB_NETWORK=isolated-outbound) cannot be "
        "created: slirp4netns is not installed at /nonexistent/slirp4netns (apt-get install "
        "slirp4netns)"
    )
    assert read["v1"] == read["v1 events"] == read["v2"] == english
    assert (
        "无法启动：无法创建其网络命名空间（LOCAL_JOB_NETWORK=isolated-outbound）：未安装 "
        "slirp4netns（/nonexistent/slirp4netns；apt-get install slirp4netns）" in read["page"]
    )


def test_a_jobs_pages_say_the_network_it_ran_on_not_the_one_set_since(alice, superuser, settings):
    # left55: DescribeJob, Compare jobs and the admin's job page said today's LOCAL_JOB_NETWORK
    # of a job that ran under another; a job not started yet says what it will run on.
    from django.test import Client

    from jobs.api_views import job_view

    from .test_job_compare import compare_url, rows

    assert settings.LOCAL_JOB_NETWORK == "host"  # the default
    ran = submit(alice, make_spec("true"))
    run_until(Worker(), lambda: status_of(ran) in (JobStatus.SUCCEEDED, JobStatus.FAILED))
    settings.LOCAL_JOB_NETWORK = "isolated"
    waiting = submit(alice, make_spec("true"))
    on_host = "yes (the local pool runs every job on this machine's network)"
    own_namespace = "no (the local pool runs each job in a network namespace of its own)"

    owner, staff = Client(), Client()
    owner.force_login(alice)
    staff.force_login(superuser)
    for client in (owner, staff):
        client.cookies["django_language"] = "en"
    compared = rows(html.unescape(owner.get(compare_url(ran, waiting)).content.decode()))
    admin_page = html.unescape(staff.get(f"/admin/jobs/job/{ran.pk}/change/").content.decode())

    assert job_view(Job.objects.get(pk=ran.pk), detail=True)["hostNetwork"] is True
    assert job_view(waiting, detail=True)["hostNetwork"] is False
    assert compared["Resources · Host network"] == [on_host, own_namespace]
    assert on_host in admin_page and own_namespace not in admin_page
