"""Hang analysis (Hang 解析): every replica's call stacks, captured by the worker with py-spy
after a detected hang or on Capture stacks, shown grouped on the job's page. Real jobs through
the real runner: the stacks read are those of the jobs' own Python processes."""

from __future__ import annotations

import contextlib
import os
import re
import textwrap
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.db.models import F
from django.test import Client
from django.urls import reverse
from django.utils import translation

from jobs import spec as S
from jobs.logs import replica_log_path
from jobs.models import Job, JobStatus, LocalRun, StackCapture
from jobs.runner import followed_here
from jobs.stacks import (
    CAPTURES_KEPT,
    Target,
    _pid_namespace,
    _python_processes,
    compact_labels,
    stack_groups,
    store_capture,
)
from jobs.wizard import example_commands
from jobs.worker import Worker

from .runner_helpers import (
    CARD,
    PY,
    log_text,
    make_spec,
    run_until,
    runner_settings,  # noqa: F401
    submit,
    volume,
)
from .test_runner import openmpi_is_mpirun

pytestmark = pytest.mark.usefixtures("runner_settings")

# One rank (0, or STUCK_RANK) blocks in stuck_in_allreduce, every other in waiting_for_peer: the classic hang
# of distributed training, one rank stuck in a collective while the others wait for it.
TRAIN = textwrap.dedent(
    """
    import os, sys, threading, time

    def stuck_in_allreduce():
        print("started", flush=True)
        threading.Event().wait()

    def waiting_for_peer():
        print("started", flush=True)
        while True:
            time.sleep(0.5)

    if os.environ.get("TOKEN"):
        threading.Thread(target=lambda: time.sleep(600), name=os.environ["TOKEN"], daemon=True).start()
    if int(os.environ["RANK"]) == int(os.environ.get("STUCK_RANK", "0")):
        stuck_in_allreduce()
    else:
        waiting_for_peer()
    """
)


def train_job(owner, settings, *, workers: int = 1, command: str = "", **changes) -> Job:
    (volume(settings) / "train.py").write_text(TRAIN)
    spec = make_spec(
        command or f"{PY} /workspace/train.py",
        roles=[S.Role("master", 1), S.Role("worker", workers)],
        **changes,
    )
    return submit(owner, spec)


def labels(job: Job) -> list[str]:
    return [f"{r.role}-{r.index}" for r in job.replicas.order_by("role", "index")]


def started(job: Job) -> bool:
    """Every replica has said it started and its Python processes sleep, each thread in the
    call it blocks in. Saying so comes just before that call: a loaded machine can hold a
    process between the two, or in its interpreter's start before, for longer than a capture
    takes to reach it, which then reads it elsewhere (a browser test, clicking as the page read
    Running, met it: master-0 still importing `site`)."""
    replicas = list(job.replicas.order_by("role", "index"))
    if not replicas or not all("started" in log_text(job, label) for label in labels(job)):
        return False
    own_namespace = _pid_namespace("self")
    for r in replicas:
        found = _python_processes(Target("", r.pid, r.process_start), own_namespace)
        if found is None:
            return False
        for process in found[0]:
            if not all(state == "S" for state in thread_states(process.pid)):
                return False
    return True


def until_started(job: Job, *, timeout: float = 30) -> None:
    """Waits for `started` where a worker runs on its own (a browser test's thread)."""
    deadline = time.monotonic() + timeout
    while not started(job):
        assert time.monotonic() < deadline, "the replicas did not start"
        time.sleep(0.05)


def blocked_in(pid: int, call: str) -> None:
    """Waits until the process sleeps in the kernel in `call` (its wchan: pause, nanosleep):
    having said it is ready, or having started, is not being there yet, and a loaded machine
    can hold a process between the two for longer than a read takes to start."""
    deadline = time.monotonic() + 30
    while call not in Path(f"/proc/{pid}/wchan").read_text():
        assert time.monotonic() < deadline, f"the process never blocked in {call}"
        time.sleep(0.01)


def thread_states(pid: int) -> list[str]:
    """Each thread's state (R running, S asleep in a call that blocks...), as the kernel says."""
    states = []
    for stat in Path(f"/proc/{pid}/task").glob("*/stat"):
        with contextlib.suppress(OSError):
            states.append(stat.read_text().rpartition(")")[2].split()[0])
    return states


def finished_captures(job: Job):
    return StackCapture.objects.filter(job=job).exclude(finished_at=None)


def capture_taken(worker: Worker, job: Job) -> StackCapture:
    def done() -> bool:
        worker.stacks.wait(30)
        return finished_captures(job).exists()

    run_until(worker, done, what="the capture")
    return finished_captures(job).first()


def frames_of(capture: StackCapture, label: str) -> list[str]:
    [replica] = [r for r in capture.replicas if r["label"] == label]
    return [f["name"] for p in replica["processes"] for t in p["threads"] for f in t["frames"]]


def silent_for_minutes(job: Job, minutes: int) -> None:
    """As if no replica had written for that long (see test_runner.silent_for_minutes)."""
    LocalRun.objects.filter(job=job).update(
        attempt_started_at=F("attempt_started_at") - timedelta(minutes=minutes)
    )
    for label in labels(job):
        log = replica_log_path(job.public_id, label)
        past = log.stat().st_mtime - minutes * 60
        os.utime(log, (past, past))


def section(client: Client, job: Job, capture: StackCapture | None = None, lang: str = "") -> str:
    query = f"?capture={capture.pk}" if capture else ""
    headers = {"HX-Request": "true"} | ({"Accept-Language": lang} if lang else {})
    r = client.get(reverse("job-hang", args=[job.public_id]) + query, headers=headers)
    assert r.status_code == 200
    return r.content.decode()


def groups_on_page(html: str) -> list[tuple[str, str]]:
    """(replicas, frames) of each group, in the page's order: the rows shown before any is
    folded, a line each, a Python frame as it reads, a run of native frames as its folded
    line ("native: " and its summary)."""
    cards = html.split('class="card mb-2 hang-group"')[1:]
    out = []
    for card in cards:
        replicas = re.search(r'class="hang-replicas">([^<]*)<', card).group(1)
        shown = re.search(r'class="small hang-frames" tabindex="0">(.*?)</div>\n', card).group(1)
        rows = re.findall(
            r'<div class="hang-frame">(.*?)</div>|<details class="hang-native"><summary>(.*?)</summary>',
            shown,
        )
        out.append((replicas, "\n".join(python or f"native: {native}" for python, native in rows)))
    return out


def test_a_detected_hang_captures_each_replicas_stacks_and_the_page_shows_both_groups(
    alice, alice_client, settings
):
    job = train_job(
        alice,
        settings,
        fault_tolerance_config=S.FaultToleranceConfig(
            enabled_hang_detection=True, hang_detection_timeout_minutes=1
        ),
    )
    worker = Worker()
    run_until(worker, lambda: started(job), what="both replicas")
    assert not StackCapture.objects.filter(job=job).exists()  # nothing before a hang
    silent_for_minutes(job, 2)

    capture = capture_taken(worker, job)

    assert capture.trigger == "hang"
    assert "stuck_in_allreduce" in frames_of(capture, "master-0")
    assert "waiting_for_peer" not in frames_of(capture, "master-0")
    assert "waiting_for_peer" in frames_of(capture, "worker-0")
    event = job.events.get(reason="StacksCaptured")
    assert event.message == "已抓取调用栈（检测到 hang 后）：已读取 2 个实例中的 2 个。"
    with translation.override("en"):
        assert event.message_shown == ("Call stacks captured after the hang: 2 of 2 replicas read.")
    # The page: one group per stack, each naming its replica.
    page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()
    assert 'id="hang-heading">Hang 解析<' in page
    groups = dict(groups_on_page(page))
    assert "stuck_in_allreduce (/workspace/train.py:6)" in groups["master-0"]
    assert "waiting_for_peer (/workspace/train.py:11)" in groups["worker-0"]
    assert "检测到 hang" in page
    # The hang is warned about once per silence, and so captured once.
    for _ in range(5):
        worker.tick()
    worker.stacks.wait(30)
    assert StackCapture.objects.filter(job=job).count() == 1


def test_capture_stacks_collapses_identical_stacks_puts_the_odd_rank_first_and_is_rate_limited(
    alice, alice_client, settings
):
    # The odd rank out is rank 2 (worker-1), neither the first replica nor the last.
    job = train_job(alice, settings, workers=3, envs=[S.Env("STUCK_RANK", "2")])
    worker = Worker()
    run_until(worker, lambda: started(job), what="every replica")
    capture_url = reverse("job-hang-capture", args=[job.public_id])

    r = alice_client.post(capture_url, headers={"HX-Request": "true"})

    assert r.status_code == 200
    assert 'id="hang-pending"' in r.content.decode()
    assert 'hx-trigger="every 2s"' in r.content.decode()  # polls until it is stored
    capture = capture_taken(worker, job)
    assert capture.trigger == "manual" and capture.requested_by == alice
    groups = groups_on_page(section(alice_client, job, capture))
    # The odd rank out first, the three that wait for it as one group.
    assert [replicas for replicas, _ in groups] == ["worker-1", "master-0, worker-0, worker-2"]
    assert "stuck_in_allreduce" in groups[0][1] and "waiting_for_peer" not in groups[0][1]
    assert "waiting_for_peer" in groups[1][1]
    html = section(alice_client, job, capture)
    assert "3 个实例" in html
    english = section(alice_client, job, capture, lang="en")
    assert "Hang analysis" in english and "3 replicas" in english

    # Asked again at once: refused, with why, and nothing more is captured.
    again = alice_client.post(capture_url, headers={"HX-Request": "true"})
    assert again.status_code == 200
    refused = re.search(r'id="hang-refused" role="alert">([^<]*)<', again.content.decode())
    assert refused and refused.group(1).startswith("不到 30 秒前已抓取过调用栈")
    assert StackCapture.objects.filter(job=job).count() == 1
    # Once 30 seconds have passed, it is taken again.
    StackCapture.objects.filter(job=job).update(created_at=F("created_at") - timedelta(seconds=31))
    assert alice_client.post(capture_url).status_code == 302
    assert StackCapture.objects.filter(job=job).count() == 2


def test_only_the_owner_and_staff_see_or_take_captures(alice, bob, reviewer, settings):
    job = train_job(alice, settings)
    worker = Worker()
    run_until(worker, lambda: started(job), what="both replicas")
    bob_client, staff_client = Client(), Client()
    bob_client.force_login(bob)
    staff_client.force_login(reviewer)
    hang_url = reverse("job-hang", args=[job.public_id])
    capture_url = reverse("job-hang-capture", args=[job.public_id])

    assert bob_client.post(capture_url).status_code == 404
    assert not StackCapture.objects.filter(job=job).exists()
    r = staff_client.post(capture_url)
    assert r.status_code == 302 and r["Location"] == hang_url + "#hang"
    capture_taken(worker, job)

    assert bob_client.get(hang_url).status_code == 404
    assert bob_client.get(hang_url, headers={"HX-Request": "true"}).status_code == 404
    # Staff find it from the job's page in the admin.
    admin_page = staff_client.get(reverse("admin:jobs_job_change", args=[job.pk])).content.decode()
    assert f'href="{hang_url}" id="hang-link"' in admin_page
    page = staff_client.get(hang_url).content.decode()
    assert "stuck_in_allreduce" in page and "waiting_for_peer" in page


def test_secret_values_never_appear_in_a_capture_its_page_or_its_event(
    alice, alice_client, settings
):
    secret = "tok-9f8e7d6c5b4a"
    job = train_job(
        alice,
        settings,
        # Its value in a thread's name and on the command line, both of which a capture shows.
        command=f'{PY} /workspace/train.py --token "$TOKEN"',
        envs=[S.Env("TOKEN", secret, secret=True)],
    )
    worker = Worker()
    run_until(worker, lambda: started(job), what="both replicas")
    alice_client.post(reverse("job-hang-capture", args=[job.public_id]))

    capture = capture_taken(worker, job)

    stored = str(capture.replicas)
    assert secret not in stored
    assert "--token ******" in stored  # the command line, masked
    assert "'name': '******'" in stored  # the thread named after it, masked
    html = section(alice_client, job)
    assert secret not in html and "******" in html
    assert not job.events.filter(message__contains=secret).exists()


def test_a_process_that_cannot_be_read_and_a_replica_without_python_say_why(
    alice, alice_client, settings
):
    # master-0 runs a program named python3 that is not Python (sleep, copied); worker-0 runs
    # no Python at all.
    command = (
        'if [ "$RANK" = 0 ]; then cp /bin/sleep /tmp/python3; echo started; exec /tmp/python3 300; '
        "else echo started; exec sleep 300; fi"
    )
    job = submit(alice, make_spec(command, roles=[S.Role("master", 1), S.Role("worker", 1)]))
    worker = Worker()
    run_until(worker, lambda: started(job), what="both replicas")
    alice_client.post(reverse("job-hang-capture", args=[job.public_id]))

    capture = capture_taken(worker, job)

    master, other = capture.replicas
    [process] = master["processes"]
    assert process["error"] == "unreadable"
    assert "/tmp/python3 300" in process["command"]
    assert other["error"] == "no_python"
    html = section(alice_client, job)
    assert re.search(r"master-0 pid \d+ \(/tmp/python3 300\)</span>: 无法读取其调用栈：", html)
    assert "worker-0</span>: 其中没有正在运行的 Python 进程。" in html
    assert job.events.get(reason="StacksCaptured").message.endswith("已读取 2 个实例中的 0 个。")


def test_a_capture_asked_for_a_job_that_ended_meanwhile_says_its_replicas_were_not_running(
    alice, settings
):
    job = train_job(alice, settings)
    worker = Worker()
    run_until(worker, lambda: started(job), what="both replicas")
    capture = StackCapture.objects.create(job=job, trigger="manual")
    job.replicas.update(status="stopped")
    Job.objects.filter(pk=job.pk).update(status=JobStatus.STOPPING)

    worker.stacks.tick(followed=followed_here())
    worker.stacks.wait(30)
    worker.stacks.tick(followed=followed_here())

    capture.refresh_from_db()
    assert [r["error"] for r in capture.replicas] == ["not_running", "not_running"]


def test_a_capture_event_says_how_many_replicas_had_ended_apart_from_those_not_read(alice):
    # QA 31: a rendezvous hang (the worker had exited 0, the master waited on in accept)
    # read "1 of 2 replicas read", as if the worker's stacks could not be read.
    job = submit(alice, make_spec("echo hi"))
    capture = StackCapture.objects.create(job=job, trigger="hang")
    waiting = {"pid": 2, "command": "python3 train.py", "threads": [{"frames": []}]}

    store_capture(
        pk=capture.pk,
        replicas=[
            {"label": "master-0", "processes": [waiting]},
            {"label": "worker-0", "error": "not_running", "processes": []},
        ],
    )

    event = job.events.get(reason="StacksCaptured")
    assert (
        event.message == "已抓取调用栈（检测到 hang 后）：已读取 2 个实例中的 1 个（1 个已结束）。"
    )
    with translation.override("en"):
        assert event.message_shown == (
            "Call stacks captured after the hang: 1 of 2 replicas read (1 had ended)."
        )


def test_at_most_the_newest_captures_are_kept(alice):
    job = submit(alice, make_spec("echo hi"))
    first = [
        StackCapture.objects.create(job=job, trigger="manual") for _ in range(CAPTURES_KEPT + 1)
    ]
    for capture in first:
        store_capture(pk=capture.pk, replicas=[])

    kept = list(StackCapture.objects.filter(job=job).order_by("pk").values_list("pk", flat=True))
    assert kept == [c.pk for c in first[1:]]


# The ranks of an MPI job say who they are in Open MPI's variables (no RANK there): rank 1
# blocks, rank 0 waits for it. os.write: one write per line, as mpirun forwards them.
MPI_TRAIN = textwrap.dedent(
    """
    import os, threading, time

    def stuck_in_allreduce():
        os.write(1, b"started\\n")
        threading.Event().wait()

    def waiting_for_peer():
        os.write(1, b"started\\n")
        while True:
            time.sleep(0.5)

    if os.environ["OMPI_COMM_WORLD_RANK"] == "1":
        stuck_in_allreduce()
    else:
        waiting_for_peer()
    """
)


def ranks_asleep(job: Job) -> bool:
    """Each worker's Python processes sleep in the call they block in, as `started` waits
    for a plain job's: its rank is not still starting when the capture reads it."""
    for r in job.replicas.filter(role="worker"):
        found = _python_processes(Target("", r.pid, r.process_start), _pid_namespace("self"))
        if not found or not found[0]:
            return False
        if not all(state == "S" for p in found[0] for state in thread_states(p.pid)):
            return False
    return True


@pytest.mark.skipif(
    not openmpi_is_mpirun(), reason="needs OpenMPI's mpirun (apt-get install openmpi-bin)"
)
def test_an_mpi_jobs_hang_shows_its_ranks_stacks_and_none_of_the_consoles_mpi_agent(
    alice, alice_client, settings
):
    # qa68: the capture read the console's own /etc/mpi/rsh processes as the job's: the
    # launcher's rsh clients (waiting on the workers) as master-0's stack, each worker's agent
    # as four more groups, among the ranks' two.
    (volume(settings) / "train.py").write_text(MPI_TRAIN)
    example = next(e["command"] for e in example_commands() if e["framework"] == S.MPI)
    job = submit(
        alice,
        make_spec(
            example,
            framework=S.MPI,
            roles=[S.Role("master", 1), S.Role("worker", 2, CARD, 1)],
            fault_tolerance_config=S.FaultToleranceConfig(
                enabled_hang_detection=True, hang_detection_timeout_minutes=1
            ),
        ),
    )
    worker = Worker()
    run_until(
        worker,
        lambda: log_text(job, "master-0").count(" started\n") == 2,
        what="both ranks",
        timeout=60,
    )
    run_until(worker, lambda: ranks_asleep(job), what="both ranks asleep")
    silent_for_minutes(job, 2)

    capture = capture_taken(worker, job)

    assert capture.trigger == "hang"
    groups = groups_on_page(section(alice_client, job, capture))
    assert sorted(replicas for replicas, _ in groups) == ["worker-0", "worker-1"]
    assert "stuck_in_allreduce" in dict(groups)["worker-1"]
    assert "waiting_for_peer" in dict(groups)["worker-0"]
    assert "/etc/mpi/rsh" not in str(capture.replicas)
    # The launcher runs mpirun (no Python of the job's): said so, as for any such replica.
    [master] = [r for r in capture.replicas if r["label"] == "master-0"]
    assert master["error"] == "no_python"


def test_an_aihc_job_says_hang_analysis_is_for_local_jobs_only(alice, alice_client):
    job = submit(alice, make_spec("echo hi"))
    Job.objects.filter(pk=job.pk).update(backend="aihc")

    html = section(alice_client, job)

    assert 'id="hang-local-only"' in html
    assert 'id="hang-capture"' not in html
    r = alice_client.post(
        reverse("job-hang-capture", args=[job.public_id]), headers={"HX-Request": "true"}
    )
    assert "只有本机任务可以抓取调用栈" in r.content.decode()
    assert not StackCapture.objects.filter(job=job).exists()


def test_an_ended_job_without_captures_says_none_were_captured_not_yet(alice, alice_client):
    job = submit(alice, make_spec("echo hi"))
    queued = section(alice_client, job)
    Job.objects.filter(pk=job.pk).update(status=JobStatus.SUCCEEDED)

    ended = section(alice_client, job)

    assert "尚未抓取调用栈。" in queued
    assert "未抓取过调用栈。" in ended and "尚未抓取调用栈" not in ended


def test_identical_stacks_of_one_role_collapse_into_a_range():
    assert compact_labels(["master-0", "worker-0", "worker-1", "worker-2", "worker-3"]) == (
        "master-0, worker-0..3"
    )
    assert compact_labels(["worker-0", "worker-2", "worker-3"]) == "worker-0, worker-2..3"
    frame = {"file": "/w/t.py", "line": 3, "name": "f"}
    replicas = [
        {
            "label": "master-0",
            "processes": [{"pid": 1, "threads": [{"name": "M", "frames": [frame]}]}],
        },
        {
            "label": "worker-0",
            "processes": [{"pid": 1, "threads": [{"name": "M", "frames": [frame]}]}],
        },
    ]
    [group] = stack_groups(replicas)
    assert group.replicas == ["master-0", "worker-0"]


def test_a_deep_stack_shows_its_innermost_frames_and_folds_the_rest(alice, alice_client, settings):
    (volume(settings) / "deep.py").write_text(
        textwrap.dedent(
            """
            import time

            def stuck_in_allreduce():
                print("started", flush=True)
                time.sleep(600)

            def layer(n):
                return layer(n - 1) if n else stuck_in_allreduce()

            layer(30)
            """
        )
    )
    job = submit(alice, make_spec(f"{PY} /workspace/deep.py"))
    worker = Worker()
    run_until(worker, lambda: started(job), what="its replica")
    alice_client.post(reverse("job-hang-capture", args=[job.public_id]))

    capture = capture_taken(worker, job)

    [(replicas, shown)] = groups_on_page(section(alice_client, job, capture))
    assert replicas == "master-0"
    lines = shown.strip().splitlines()
    assert len(lines) == 12
    assert lines[0] == "stuck_in_allreduce (/workspace/deep.py:6)"
    assert lines[1:] == ["layer (/workspace/deep.py:9)"] * 11
    # The other 21 frames (20 more layers and the module) are folded, one click away.
    html = section(alice_client, job, capture)
    assert "另有 21 个栈帧" in html
    assert "&lt;module&gt; (/workspace/deep.py:11)" in html


@pytest.mark.skipif(os.geteuid() != 0, reason="the worker drops privileges for py-spy only as root")
def test_py_spy_of_a_worker_run_as_root_runs_without_any_capability_nor_a_way_to_gain_one():
    import subprocess

    from jobs.stacks import _unprivileged

    argv = _unprivileged(
        ["/bin/grep", "-E", "^(CapPrm|CapEff|CapBnd|NoNewPrivs)", "/proc/self/status"]
    )
    assert argv is not None
    shown = dict(
        line.split(":\t", 1)
        for line in subprocess.run(
            argv, capture_output=True, text=True, check=True
        ).stdout.splitlines()
    )

    assert shown == {
        "CapPrm": "0000000000000000",
        "CapEff": "0000000000000000",
        "CapBnd": "0000000000000000",
        "NoNewPrivs": "1",
    }


def test_stacks_of_a_process_that_ended_while_it_was_read_are_not_kept(tmp_path):
    import subprocess
    import sys

    from jobs.runner import process_start
    from jobs.stacks import Listed, _dump

    target = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    # Stands in for py-spy (not ours): it reads "a stack", but the process ends meanwhile and
    # its pid may be another process's by the time the read is over.
    tool = tmp_path / "py-spy"
    tool.write_text(
        "#!/bin/sh\n"
        'kill -9 "$4"\n'
        "sleep 0.2\n"
        'echo \'[{"thread_name": "MainThread", "frames": [{"name": "f", "filename": "x.py", "line": 1}]}]\'\n'
    )
    tool.chmod(0o755)
    import threading

    reaper = threading.Thread(target=target.wait)  # reaped once killed: its pid is free again
    reaper.start()
    try:
        listed = Listed(target.pid, process_start(target.pid), target.pid, "")
        read = _dump(str(tool), listed, 5, [])
    finally:
        target.kill()
        target.wait()

    assert read == {"error": "unreadable", "detail": "the process ended while it was read"}


@pytest.mark.skipif(os.geteuid() != 0, reason="the worker drops privileges for py-spy only as root")
def test_py_spy_reads_a_job_run_as_a_user_of_its_own_as_that_user_and_nothing_more():
    import subprocess

    from jobs.stacks import _unprivileged

    argv = _unprivileged(
        ["/bin/grep", "-E", "^(Uid|Gid|Groups|CapEff)", "/proc/self/status"],
        as_ids=(200007, 200001),
    )
    assert argv is not None
    done = subprocess.run(argv, capture_output=True, text=True, check=True)
    shown = {
        name: value.split()
        for name, value in (line.split(":", 1) for line in done.stdout.splitlines())
    }

    assert shown == {
        "Uid": ["200007"] * 4,
        "Gid": ["200001"] * 4,
        "Groups": [],
        "CapEff": ["0000000000000000"],
    }


def _with_pid(pid: int, argv: list[str]):
    """A process started with the given pid, through the kernel's ns_last_pid (root), retried
    while other processes of this machine take it first; None if it never got it."""
    import subprocess

    for _ in range(500):
        Path("/proc/sys/kernel/ns_last_pid").write_text(str(pid - 1))
        process = subprocess.Popen(argv)
        if process.pid == pid:
            return process
        process.kill()
        process.wait()
    return None


# A replica's command: a Python process (pid 1 of its sandbox's pid namespace) that starts a
# second one, as torchrun starts its ranks.
TWO_PYTHONS = (
    "import signal, subprocess, sys, time\n"
    "signal.signal(signal.SIGCHLD, signal.SIG_IGN)\n"
    "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
    "time.sleep(60)"
)
NO_CAPABILITY = ["setpriv", "--bounding-set=-all", "--inh-caps=-all"]  # as a job runs
# Another user's job's process (another uid, no capability), with a secret on its command line.
ANOTHER_JOBS = [
    "setpriv", "--reuid=200099", "--regid=200099", "--clear-groups", "--inh-caps=-all",
    "--bounding-set=-all", "/usr/bin/python3", "-c",
    "import time\ndef another_jobs_loop():\n    time.sleep(60)\nanother_jobs_loop()",
    "--token=ANOTHER-JOBS-SECRET",
]  # fmt: skip


@pytest.mark.skipif(os.geteuid() != 0, reason="ns_last_pid, to reuse a pid, is root's")
def test_a_python_process_whose_pid_names_another_process_by_the_time_it_is_read_is_not_read():
    """Review 17b: a replica's Python processes are listed, then read one by one (up to 10 s
    each); one that ended before its turn, its pid taken meanwhile by another user's job's
    process, had that process's command line stored and its stacks read (as its uid): each
    process's identity (its start) is now taken when it is listed and checked when it is read."""
    import signal
    import subprocess
    import sys

    from jobs.runner import process_start
    from jobs.stacks import Target, py_spy, read_stacks

    if py_spy() is None:
        pytest.skip("py-spy is not installed")
    leader = subprocess.Popen(
        [
            "unshare",
            "--pid",
            "--fork",
            "--kill-child",
            *NO_CAPABILITY,
            sys.executable,
            "-c",
            TWO_PYTHONS,
        ],  # fmt: skip
        start_new_session=True,
    )
    other = None
    try:
        pythons: list[int] = []
        for _ in range(200):
            found = Path(f"/proc/{leader.pid}/task/{leader.pid}/children").read_text().split()
            if found:
                first = found[0]
                pythons = [int(first)] + [
                    int(p) for p in Path(f"/proc/{first}/task/{first}/children").read_text().split()
                ]
            if len(pythons) == 2:
                break
            time.sleep(0.05)
        assert len(pythons) == 2
        target = Target("master-0", leader.pid, process_start(leader.pid))
        calls = []

        def clock() -> float:
            # Called before the listing, then before each process is read: while the first
            # is read, the second ends and another user's job's process takes its pid.
            nonlocal other
            calls.append(1)
            if len(calls) == 2:
                os.kill(pythons[1], signal.SIGKILL)
                while Path(f"/proc/{pythons[1]}").exists():
                    time.sleep(0.01)
                other = _with_pid(pythons[1], ANOTHER_JOBS)
                if other is None:
                    pytest.skip("other processes of this machine took the pid each time")
                blocked_in(other.pid, "nanosleep")  # in its loop, for py-spy to read
            return time.monotonic()

        [replica] = read_stacks(targets=[target], secrets=[], clock=clock)
    finally:
        for process in (leader, other):
            if process is not None:
                process.kill()
                process.wait()

    first, second = replica["processes"]
    assert "threads" in first  # the replica's own first process is read
    assert "ANOTHER-JOBS-SECRET" not in str(replica)
    assert "another_jobs_loop" not in str(replica)
    assert second["error"] == "unreadable"
    assert second["detail"] == "the process ended while it was read"


def test_a_python_only_read_of_a_pid_that_names_another_process_than_the_one_listed_is_not_made():
    """Review 24: the pid-reuse test above passes on the native reader's own check of the
    process's start (a worker run as root reads native frames first); a worker not run as
    root reads Python frames only, and _dump's check before the read is then all that keeps
    py-spy off whatever process holds the pid now: reverted, that test still passed."""
    import subprocess
    import sys

    from jobs.stacks import ENDED, Listed, _dump, py_spy

    if py_spy() is None:
        pytest.skip("py-spy is not installed")
    now_there = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        # Listed when its pid named another process: another start.
        listed = Listed(now_there.pid, "another-boot:1", now_there.pid, "")
        read = _dump(py_spy(), listed, 10, [])
    finally:
        now_there.kill()
        now_there.wait()

    assert read == ENDED


@pytest.mark.skipif(
    os.geteuid() != 0, reason="a pid namespace of its own, as a sandbox's, is root's"
)
def test_a_replica_with_more_python_processes_than_are_read_has_them_counted_not_listed(tmp_path):
    """Review 17b: each Python process past the first PROCESSES_PER_REPLICA had an entry of its
    own, with its command line, in the stored capture and on the page: a replica of thousands
    made a capture of megabytes. Now they are counted, once per replica."""
    import shutil
    import subprocess

    from jobs.runner import process_start
    from jobs.stacks import PROCESSES_PER_REPLICA, Target, py_spy, read_stacks, unread

    if py_spy() is None:
        pytest.skip("py-spy is not installed")
    # Taken for Python by its program's name, as the README says: a cheap stand-in for many.
    program = tmp_path / "python3"
    shutil.copy("/bin/sleep", program)
    many = PROCESSES_PER_REPLICA + 8
    leader = subprocess.Popen(
        ["unshare", "--pid", "--fork", "--kill-child", "sh", "-c",
         f"for i in $(seq {many}); do {program} 60 & done; wait"],
        start_new_session=True,
    )  # fmt: skip
    try:
        for _ in range(600):
            shell = Path(f"/proc/{leader.pid}/task/{leader.pid}/children").read_text().split()
            pids = (
                Path(f"/proc/{shell[0]}/task/{shell[0]}/children").read_text().split()
                if shell
                else []
            )
            programs = [os.path.basename(os.readlink(f"/proc/{pid}/exe")) for pid in pids]
            if programs == ["python3"] * many:  # each one exec'd, not a fork of the shell
                break
            time.sleep(0.05)
        else:
            pytest.fail(f"{many} processes did not start")
        target = Target("master-0", leader.pid, process_start(leader.pid))
        [replica] = read_stacks(targets=[target], secrets=[])
    finally:
        leader.kill()
        leader.wait()

    assert len(replica["processes"]) == PROCESSES_PER_REPLICA
    assert replica["processes_dropped"] == 8
    with translation.override("en"):
        said = [why for who, why in unread([replica]) if who == "master-0"]
    assert said == [
        f"8 more Python processes were not read: only the first {PROCESSES_PER_REPLICA} are."
    ]


# A Python process of 200 threads, each 2,000 frames deep: py-spy's JSON of it is about 100 MB.
# Its py-spy output is about 47 MB: 50 threads 800 frames deep, each frame about 1.2 KB, as
# its function has a name of 1,000 characters. (It was 200 threads 2,000 frames deep, whose
# 400,000 frames py-spy took 13 s to read here and 25 s beside two CPU burners, of the 30 s
# given.) It says it is ready once every thread is at the bottom, not as they set off.
DEEP = textwrap.dedent(
    """
    import threading, time
    THREADS = 50
    at_the_bottom = threading.Barrier(THREADS + 1)
    def deep(n):
        if n == 0:
            at_the_bottom.wait()
            time.sleep(600)
        return deep(n - 1)
    deep.__code__ = deep.__code__.replace(co_name="d" * 1000, co_qualname="d" * 1000)
    for _ in range(THREADS):
        threading.Thread(target=deep, args=(800,), daemon=True).start()
    at_the_bottom.wait()
    print("ready", flush=True)
    time.sleep(600)
    """
)


@pytest.mark.skipif(os.geteuid() != 0, reason="the process is run as another user, as a job is")
def test_py_spy_output_past_its_bound_is_not_read_into_the_worker():
    """Review 17b: py-spy's whole output was read into the worker and parsed, however large: a
    job's process of many deep threads made it 100 MB (more the longer py-spy runs), all in the
    worker's memory (the console's). Past 16 MB (OUTPUT_BYTES) py-spy is stopped and nothing kept."""
    import subprocess

    from jobs.runner import process_start
    from jobs.stacks import Listed, _dump, py_spy

    if py_spy() is None:
        pytest.skip("py-spy is not installed")
    job = subprocess.Popen(
        [*ANOTHER_JOBS[:6], "/usr/bin/python3", "-c", DEEP], stdout=subprocess.PIPE, text=True
    )
    try:
        assert job.stdout.readline() == "ready\n"
        listed = Listed(job.pid, process_start(job.pid), job.pid, "")
        read = _dump(py_spy(), listed, 30, [])
    finally:
        job.kill()
        job.wait()

    assert read == {
        "error": "unreadable",
        "detail": "py-spy's output was larger than 16 MB",
    }


def test_py_spy_runs_held_to_its_data_limit(tmp_path):
    """Review 17b: py-spy's memory grows with what the process it reads holds (it is the
    worker's, in the console's cgroup, not the job's): it runs with RLIMIT_DATA at 256 MB."""
    import subprocess
    import sys

    from jobs.runner import process_start
    from jobs.stacks import Listed, _dump

    target = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    # Stands in for py-spy (not ours): names a thread after the data limit it runs with.
    tool = tmp_path / "py-spy"
    tool.write_text(
        "#!/bin/sh\n"
        "limit=$(grep 'Max data size' /proc/self/limits | awk '{print $4}')\n"
        'echo "[{\\"thread_name\\": \\"$limit\\", \\"frames\\": []}]"\n'
    )
    tool.chmod(0o755)
    try:
        listed = Listed(target.pid, process_start(target.pid), target.pid, "")
        read = _dump(str(tool), listed, 5, [])
    finally:
        target.kill()
        target.wait()

    assert [t["name"] for t in read["threads"]] == [str(256 * 2**20)]


def stuck_py_spy(tmp_path) -> tuple[Path, Path]:
    """Stands in for a py-spy stuck mid-read (not ours): it writes its pid and sleeps."""
    pid_file = tmp_path / "py-spy.pid"
    tool = tmp_path / "py-spy"
    tool.write_text(f"#!/bin/sh\necho $$ > {pid_file}\nexec sleep 600\n")
    tool.chmod(0o755)
    return tool, pid_file


def wait_until_gone(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        if state == "Z":  # ended, waiting for a parent that is gone (the test's reaper)
            return True
        time.sleep(0.1)
    return False


def test_a_stuck_py_spy_is_killed_with_everything_it_was_run_through_when_its_read_takes_too_long(
    tmp_path,
):
    import subprocess
    import sys

    from jobs.runner import process_start
    from jobs.stacks import Listed, _dump

    target = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    tool, pid_file = stuck_py_spy(tmp_path)
    try:
        listed = Listed(target.pid, process_start(target.pid), target.pid, "")
        read = _dump(str(tool), listed, 1, [])
    finally:
        target.kill()
        target.wait()

    assert read == {"error": "timeout", "seconds": 1}
    # Killing only the head of the chain (timeout, prlimit, setpriv) left py-spy running.
    assert wait_until_gone(int(pid_file.read_text()), 5)


def test_a_stuck_py_spy_ends_by_itself_when_nothing_is_left_to_kill_it(tmp_path):
    """Chaos 18: a worker killed while py-spy was stuck mid-read left it running for good (and
    py-spy pauses the process it reads). The chain it runs through ends it by itself a little
    after the worker's own bound."""
    import subprocess
    import sys

    from jobs.runner import process_start

    target = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    tool, pid_file = stuck_py_spy(tmp_path)
    # The read in a process of its own, killed outright as a worker is, mid-read.
    reader = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import django, sys; django.setup(); from jobs.stacks import Listed, _dump; "
            f"_dump({str(tool)!r}, Listed({target.pid}, {process_start(target.pid)!r}, "
            f"{target.pid}, ''), 1, [])",
        ],
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "console.settings"},
        cwd=Path(__file__).resolve().parent.parent,
    )
    try:
        deadline = time.monotonic() + 30
        while not pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        stuck = int(pid_file.read_text())
        reader.kill()
        reader.wait()
        assert Path(f"/proc/{stuck}").exists()

        assert wait_until_gone(stuck, 15)  # its bound is 1 s, and 2 s more for the chain's own
    finally:
        target.kill()
        target.wait()


@pytest.mark.skipif(os.geteuid() != 0, reason="the worker drops privileges for py-spy only as root")
def test_py_spy_run_through_its_whole_chain_is_the_jobs_uid_without_capabilities_and_held_to_its_limit():
    """Review 18b: py-spy now runs under timeout, before prlimit and setpriv; the checks above
    run setpriv alone. Through _dump's whole chain, a stand-in for py-spy (not ours) names a
    thread after what it runs as: the read process's uid, no capability and no way to gain
    one, the data limit."""
    import subprocess
    import tempfile

    from jobs.runner import process_start
    from jobs.stacks import PY_SPY_DATA_BYTES, Listed, _dump, _ids

    folder = Path(tempfile.mkdtemp(prefix="console-py-spy-"))
    folder.chmod(0o755)  # the job's uid runs the stand-in from here
    tool = folder / "py-spy"
    tool.write_text(
        "#!/bin/sh\n"
        "uid=$(awk '/^Uid:/ {print $2\"/\"$3}' /proc/self/status)\n"
        "caps=$(awk '/^(CapPrm|CapEff|CapBnd):/ {printf $2}' /proc/self/status)\n"
        "nnp=$(awk '/^NoNewPrivs:/ {print $2}' /proc/self/status)\n"
        "limit=$(grep 'Max data size' /proc/self/limits | awk '{print $4}')\n"
        'echo "[{\\"thread_name\\": \\"$uid $caps $nnp $limit\\", \\"frames\\": []}]"\n'
    )
    tool.chmod(0o755)
    target = subprocess.Popen(ANOTHER_JOBS[:-1])
    try:
        deadline = time.monotonic() + 10  # until setpriv has made it the job's uid
        while _ids(target.pid) != (200099, 200099):
            assert time.monotonic() < deadline
            time.sleep(0.02)
        listed = Listed(target.pid, process_start(target.pid), target.pid, "")
        read = _dump(str(tool), listed, 5, [])
    finally:
        target.kill()
        target.wait()
        tool.unlink()
        folder.rmdir()

    assert [t["name"] for t in read["threads"]] == [
        f"200099/200099 {'0' * 48} 1 {PY_SPY_DATA_BYTES}"
    ]


def test_a_capture_of_one_replica_says_1_of_1_replica_read_in_either_language(alice):
    # qa92: "1 of 1 replicas read".
    job = submit(alice, make_spec("echo hi"))
    capture = StackCapture.objects.create(job=job, trigger="manual")
    waiting = {"pid": 2, "command": "python3 train.py", "threads": [{"frames": []}]}

    store_capture(pk=capture.pk, replicas=[{"label": "master-0", "processes": [waiting]}])

    event = job.events.get(reason="StacksCaptured")
    assert event.message == "已按请求抓取调用栈：已读取 1 个实例中的 1 个。"
    with translation.override("en"):
        assert event.message_shown == "Call stacks captured on request: 1 of 1 replica read."


def test_native_frames_the_consoles_set_up_does_not_read_are_said_once_in_plain_words(
    alice, alice_client
):
    # qa92: each process had an orange line beside its monospace name, as if its read had
    # failed, saying "native frames are read only of jobs run as users of their own
    # (LOCAL_JOB_UID_BASE)" without a full stop.
    job = submit(alice, make_spec("echo hi"))
    capture = StackCapture.objects.create(job=job, trigger="manual")
    refused = {
        "error": "unreadable",
        "detail": "native frames are read only of jobs run as users of their own "
        "(LOCAL_JOB_UID_BASE)",
        "detail_code": "native_needs_own_user",
    }
    processes = [
        {"pid": pid, "command": "python3 train.py", "threads": [], "native_error": refused}
        for pid in (2, 3)
    ]
    store_capture(pk=capture.pk, replicas=[{"label": "master-0", "processes": processes}])

    english = section(alice_client, job, capture, lang="en")
    chinese = section(alice_client, job, capture, lang="zh-hans")

    assert english.count('id="hang-native-note"') == 1
    assert (
        '<p class="small mb-1" id="hang-native-note">Only Python frames are shown: native frames '
        "can be read only when jobs run under their own user IDs (an administrator sets "
        "LOCAL_JOB_UID_BASE).</p>"
    ) in english
    assert 'id="hang-unread"' not in english
    assert (
        'id="hang-native-note">只显示 Python 栈帧：只有任务以各自的用户 ID 运行时'
        "（由管理员设置 LOCAL_JOB_UID_BASE）才能读取原生栈帧。</p>"
    ) in chinese


def test_a_capture_where_no_replica_ran_python_says_so_not_0_of_3_read(alice):
    # qa95: an MPI job of a C program read "已读取 3 个实例中的 0 个" / "0 of 3 replicas read",
    # as if reading had failed.
    job = submit(alice, make_spec("echo hi"))
    capture = StackCapture.objects.create(job=job, trigger="hang")
    none = {"error": "no_python", "processes": []}

    store_capture(
        pk=capture.pk,
        replicas=[
            {"label": "master-0", **none},
            {"label": "worker-0", **none},
            {"label": "worker-1", "error": "not_running", "processes": []},
        ],
    )

    event = job.events.get(reason="StacksCaptured")
    assert event.message == (
        "已抓取调用栈（检测到 hang 后）：3 个实例中都没有运行中的 Python 进程"
        "（只能读取 Python 进程的调用栈）。"
    )
    with translation.override("en"):
        assert event.message_shown == (
            "Call stacks captured after the hang: no Python process ran in any of the 3 "
            "replicas, and only Python processes' stacks are read."
        )
    manual = StackCapture.objects.create(job=job, trigger="manual")
    store_capture(pk=manual.pk, replicas=[{"label": "master-0", **none}])
    with translation.override("en"):
        assert job.events.filter(reason="StacksCaptured").latest("pk").message_shown == (
            "Call stacks captured on request: no Python process ran in the 1 replica, and "
            "only Python processes' stacks are read."
        )
