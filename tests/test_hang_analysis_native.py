"""Hang analysis with native frames: py-spy's `--native` read of each replica's Python
processes, run in the replica's pid namespace, the native frames interleaved with the Python
ones where they are on the stack, each with its library; a Python-only read when the native
one fails. Real jobs and real processes, read by the real py-spy."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import textwrap
import time
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import translation

from jobs import spec as S
from jobs.runner import process_start
from jobs.stacks import (
    Listed,
    _ids,
    _native_argv,
    _read_process,
    py_spy,
    stack_groups,
    unread,
)
from jobs.worker import Worker

from .runner_helpers import make_spec, run_until, runner_settings, submit, volume  # noqa: F401
from .test_hang_analysis import blocked_in, capture_taken, groups_on_page, section, started
from .test_runner_job_users import BASE, GID, job_users_on  # noqa: F401, F811

pytestmark = pytest.mark.skipif(py_spy() is None, reason="py-spy is not installed")

# Rank 1 (worker-0) blocks on a lock another thread took and kept: inside the interpreter's
# C code, where Python frames stop at `acquire`. The others sleep, inside libc.
NATIVE_TRAIN = textwrap.dedent(
    """
    import os, threading, time

    def stuck_in_allreduce():
        lock = threading.Lock()
        holder = threading.Thread(target=lock.acquire, name="holder")
        holder.start()
        holder.join()
        print("started", flush=True)
        lock.acquire()

    def waiting_for_peer():
        print("started", flush=True)
        time.sleep(600)

    if os.environ["RANK"] == "1":
        stuck_in_allreduce()
    else:
        waiting_for_peer()
    """
)


def thread_frames(capture, label: str) -> list[dict]:
    [replica] = [r for r in capture.replicas if r["label"] == label]
    [process] = replica["processes"]
    [thread] = process["threads"]
    return thread["frames"]


def test_a_replica_blocked_in_c_shows_its_native_frames_above_the_python_call_grouped_across_replicas(
    job_users_on,  # noqa: F811
    alice,
    reviewer,
):
    (volume(job_users_on) / "train.py").write_text(NATIVE_TRAIN)
    job = submit(
        alice,
        make_spec(
            "/usr/bin/python3 /workspace/train.py",
            roles=[S.Role("master", 1), S.Role("worker", 2)],
        ),
    )
    worker = Worker()
    run_until(worker, lambda: started(job), what="every replica")
    owner = Client()
    owner.force_login(alice)
    assert owner.post(reverse("job-hang-capture", args=[job.public_id])).status_code == 302

    capture = capture_taken(worker, job)

    # The sleeping ranks: libc's sleep, innermost, above the Python function that called it.
    sleeping = thread_frames(capture, "master-0")
    assert sleeping[0]["name"] == "clock_nanosleep"
    assert sleeping[0]["native"] is True and sleeping[0]["library"] == "libc.so.6"
    assert sleeping[1]["name"] == "waiting_for_peer" and "native" not in sleeping[1]
    # The odd rank: the interpreter's lock wait, above the Python call that entered it.
    stuck = [(f["name"], f.get("library")) for f in thread_frames(capture, "worker-0")]
    entered = stuck.index(("stuck_in_allreduce", None))
    assert ("PyThread_acquire_lock_timed", "python3.11") in stuck[:entered]
    # Identical stacks still group (a native frame without a symbol is named "??", not by its
    # address, which differs from one process to the next), the odd rank first.
    page = section(owner, job, capture)
    groups = groups_on_page(page)
    assert [replicas for replicas, _ in groups] == ["worker-0", "master-0, worker-1"]
    lines = groups[1][1].splitlines()
    assert lines[0] == "native: clock_nanosleep (libc.so.6) · 1 个原生栈帧"
    assert lines[1] == "waiting_for_peer (/workspace/train.py:14)"
    assert "native: PyThread_acquire_lock_timed (python3.11) … · 3 个原生栈帧" in groups[0][1]
    assert 'id="hang-unread"' not in page  # every native read worked
    # Folded, one click away without JavaScript: each native frame with its library.
    assert (
        '<details class="hang-native"><summary>clock_nanosleep (libc.so.6) · 1 个原生栈帧</summary>'
        '<div class="hang-native-frame">clock_nanosleep (libc.so.6)</div></details>'
    ) in page
    english = section(owner, job, capture, lang="en")
    assert "<summary>clock_nanosleep (libc.so.6) · 1 native frame</summary>" in english
    # A native frame's path is the host's: its owner sees the library's name, staff the path.
    libc = sleeping[0]["file"]
    assert libc.startswith("/") and libc.endswith("/libc.so.6")
    assert libc not in page
    staff = Client()
    staff.force_login(reviewer)
    staff_page = section(staff, job, capture)
    assert f"clock_nanosleep (libc.so.6: {libc})" in staff_page


# A library the job loads from its own /tmp, whose function it blocks in (libc's pause() below
# it). Built twice: the job's, and a decoy of the same layout, another function's name at the
# same address, at the same path on the host: read from the host, that path is the decoy.
STUCK_LIBRARY = "#include <unistd.h>\nvoid %s(void) { pause(); }\n"
IN_ITS_OWN_LIBRARY = textwrap.dedent(
    """
    import ctypes, os, shutil, sys
    os.makedirs(os.path.dirname(sys.argv[1]))
    shutil.copy("/workspace/libstuck.so", sys.argv[1])
    stuck = ctypes.CDLL(sys.argv[1])
    print("started", flush=True)
    stuck.stuck_in_the_jobs_library()
    """
)


def built_library(function: str, path: Path) -> Path:
    source = path.with_suffix(".c")
    source.write_text(STUCK_LIBRARY % function)
    subprocess.run(["cc", "-O0", "-shared", "-fPIC", "-o", str(path), str(source)], check=True)
    path.chmod(0o755)
    return path


@pytest.mark.skipif(shutil.which("cc") is None, reason="the test's library is built with cc")
def test_a_native_frame_in_a_library_the_job_loaded_from_its_own_tmp_is_named_from_the_jobs_file(
    job_users_on,  # noqa: F811
    alice,
):
    """py-spy opens each library by the path the process maps it at, as the job sees it
    (its /tmp, its volumes), not the host's file at that path."""
    share = volume(job_users_on)
    built_library("stuck_in_the_jobs_library", share / "libstuck.so")
    # The same path on the host (its parent every user may enter) holds the decoy.
    inside = share.parent / "decoy" / "libstuck.so"
    assert str(inside).startswith("/tmp/")
    inside.parent.mkdir(mode=0o755)
    built_library("a_host_file_at_that_path_", inside)
    (share / "train.py").write_text(IN_ITS_OWN_LIBRARY)
    job = submit(alice, make_spec(f"/usr/bin/python3 /workspace/train.py {inside}"))
    worker = Worker()
    run_until(worker, lambda: started(job), what="its replica")
    owner = Client()
    owner.force_login(alice)
    assert owner.post(reverse("job-hang-capture", args=[job.public_id])).status_code == 302

    capture = capture_taken(worker, job)

    frames = [(f["name"], f.get("library")) for f in thread_frames(capture, "master-0")]
    assert frames[0] == ("pause", "libc.so.6")
    assert frames[1] == ("stuck_in_the_jobs_library", "libstuck.so")
    assert ("<module>", None) in frames[2:]
    assert 'id="hang-unread"' not in section(owner, job, capture)


# What a job could put where py-spy is, in its sandbox (a volume mounted over py-spy's folder):
# run by its path in the job's mount namespace, it would run holding py-spy's capability.
PLANTED = "#!/bin/sh\necho ran > /workspace/planted-ran\n"


def test_a_native_read_runs_the_workers_py_spy_even_where_the_job_mounted_its_own_over_it(
    job_users_on,  # noqa: F811
    alice,
):
    share = volume(job_users_on)
    (share / "train.py").write_text(NATIVE_TRAIN)
    planted = share / "planted"
    planted.mkdir()
    (planted / "py-spy").write_text(PLANTED)
    (planted / "py-spy").chmod(0o755)
    # The job's own folder, as one it made and filled: a read-write mount is of a folder its
    # user may write (since review 48; root's, it would fail the start instead).
    for path in (planted, planted / "py-spy"):
        os.chown(path, BASE + alice.pk, GID)
    folder = os.path.dirname(os.path.realpath(py_spy()))
    spec = make_spec("/usr/bin/python3 /workspace/train.py")
    spec.datasources.append(
        S.Datasource("hostpath", "work", source_path="planted", mount_path=folder)
    )
    job = submit(alice, spec)
    worker = Worker()
    run_until(worker, lambda: started(job), what="its replica")
    owner = Client()
    owner.force_login(alice)
    assert owner.post(reverse("job-hang-capture", args=[job.public_id])).status_code == 302

    capture = capture_taken(worker, job)

    assert thread_frames(capture, "master-0")[0]["name"] == "clock_nanosleep"
    assert not (share / "planted-ran").exists()


def test_a_job_run_as_root_is_read_without_native_frames_and_the_capture_says_why_in_the_readers_language(
    alice,
    alice_client,
    settings,
    runner_settings,  # noqa: F811
):
    (volume(settings) / "train.py").write_text(NATIVE_TRAIN)
    job = submit(alice, make_spec("/usr/bin/python3 /workspace/train.py"))
    worker = Worker()
    run_until(worker, lambda: started(job), what="its replica")
    alice_client.post(reverse("job-hang-capture", args=[job.public_id]))

    capture = capture_taken(worker, job)

    frames = thread_frames(capture, "master-0")
    assert [f["name"] for f in frames] == ["waiting_for_peer", "<module>"]
    html = section(alice_client, job, capture, lang="en")
    # Once, in plain words under the stacks: the console's set-up, not a failure of the
    # process's read (qa92: a line per process, orange, in broken English).
    assert re.search(
        r'id="hang-native-note">Only Python frames are shown: native frames can be read only '
        r"(when jobs run under their own user IDs \(an administrator sets LOCAL_JOB_UID_BASE\)"
        r"|when the worker runs as root)\.</p>",
        html,
    )
    assert "/workspace/train.py)</span>: Its native frames" not in html
    assert "waiting_for_peer (/workspace/train.py:14)" in html
    # The default set-up's reason is the console's own, not py-spy's: in Chinese on a Chinese
    # page (QA 31 found it in English there, in every capture).
    html = section(alice_client, job, capture, lang="zh-hans")
    assert re.search(
        r"只显示 Python 栈帧：(只有任务以各自的用户 ID 运行时（由管理员设置 LOCAL_JOB_UID_BASE）"
        r"|只有以 root 运行的任务调度进程（worker）)才能读取原生栈帧。",
        html,
    )
    assert "native frames are read only" not in html


# A process as a job run as a user of its own is (bwrap --unshare-user --unshare-pid): another
# uid, in a user and a pid namespace of its own, without capabilities.
AS_A_JOB = [
    "setpriv", "--reuid=200099", "--regid=200099", "--clear-groups", "--inh-caps=-all",
    "--bounding-set=-all", "unshare", "--user", "--map-current-user", "--pid", "--fork", "--mount-proc",
    "--kill-child", "/usr/bin/python3", "-c",
]  # fmt: skip
# It blocks in libc's pause() through ctypes, a C call Python cannot see into.
IN_C = "import ctypes\ndef blocked_in_c():\n    print('ready', flush=True)\n    ctypes.CDLL(None).pause()\nblocked_in_c()"


def namespaced_python(program: str) -> tuple[subprocess.Popen, Listed]:
    leader = subprocess.Popen(
        [*AS_A_JOB, program],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert leader.stdout.readline() == "ready\n"
    [child] = Path(f"/proc/{leader.pid}/task/{leader.pid}/children").read_text().split()
    return leader, listed(int(child))


def listed(pid: int) -> Listed:
    [inside] = [
        line.split()[-1]
        for line in Path(f"/proc/{pid}/status").read_text().splitlines()
        if line.startswith("NSpid:")
    ]
    return Listed(pid, process_start(pid), int(inside), "")


@pytest.mark.skipif(os.geteuid() != 0, reason="native frames are read by a worker run as root")
def test_a_native_read_out_of_its_time_falls_back_to_the_python_frames_within_the_process_bound(
    tmp_path,
):
    leader, process = namespaced_python(IN_C)
    try:
        blocked_in(process.pid, "pause")
        read_in_time = _read_process(py_spy(), process, 10, [])
        # Then libc, in the job's mount namespace, is covered by a FIFO no one writes to:
        # py-spy, which names native frames from the library's file, waits to open it for
        # ever, a native read out of its time however fast the machine. (Not one given 0.05 s:
        # a loaded machine that held the worker just after starting py-spy let it finish.)
        [libc] = {
            line.split()[-1]
            for line in Path(f"/proc/{process.pid}/maps").read_text().splitlines()
            if os.path.basename(line.split()[-1]) == "libc.so.6"
        }
        os.mkfifo(tmp_path / "never-written")
        in_its_mounts = ["nsenter", f"--target={process.pid}", "--mount"]
        mount = [*in_its_mounts, "mount", "--bind", str(tmp_path / "never-written"), libc]
        subprocess.run(mount, check=True)
        began = time.monotonic()
        read_late = _read_process(py_spy(), process, 10, [], native_seconds=1)
        took = time.monotonic() - began
    finally:
        leader.kill()
        leader.wait()

    # Given its time, the native read shows libc's pause() above the Python call.
    [thread] = read_in_time["threads"]
    names = [(f["name"], f.get("library")) for f in thread["frames"]]
    assert names[0] == ("pause", "libc.so.6")
    assert names.index(("blocked_in_c", None)) > 0
    assert "native_error" not in read_in_time
    # Out of its time: killed, and the process read again for its Python frames only.
    [thread] = read_late["threads"]
    assert [f["name"] for f in thread["frames"]] == ["blocked_in_c", "<module>"]
    assert read_late["native_error"] == {"error": "timeout", "seconds": 1}
    assert 1 <= took < 10
    with translation.override("en"):
        [(who, why)] = unread([{"label": "master-0", "processes": [read_late | {"pid": 2}]}])
    assert why.startswith(
        "Its native frames could not be read, so only its Python frames are shown: "
        "Reading its stacks took longer than"
    )


# The job's process: starts a process of its own, then is given another's pid (the job sees)
# and says which of the two it may read the environment of (as ptrace may: the same check).
PRYING = textwrap.dedent(
    """
    import subprocess
    own = subprocess.Popen(["sleep", "60"])

    def readable(pid):
        try:
            open(f"/proc/{pid}/environ", "rb").read()
            return "read"
        except PermissionError:
            return "refused"

    print("ready", flush=True)
    other = input()
    print(readable(own.pid), readable(other), flush=True)
    own.kill()
    """
)


@pytest.mark.skipif(os.geteuid() != 0, reason="native frames are read by a worker run as root")
def test_the_py_spy_of_a_native_read_runs_in_the_jobs_namespaces_out_of_its_processes_reach():
    """py-spy runs where the job can see it, as the job's uid: a job process that could
    ptrace it would act through it outside the sandbox. It holds CAP_SYS_PTRACE in the job's
    user namespace, which no job process has, and nothing else; it sees the job's files
    (its mount namespace), and holds no descriptor of the host's."""
    leader, job = namespaced_python(PRYING)
    # py-spy sampling the job for a minute (not pausing it), run as a native read runs it.
    argv = _native_argv(py_spy(), job, _ids(job.pid))
    argv = [*argv[: argv.index("--") + 2], "record", "--pid", str(job.inside), "--nonblocking",
            "--duration", "60", "--format", "raw", "--output", "/dev/null"]  # fmt: skip
    reader = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            children = Path(f"/proc/{reader.pid}/task/{reader.pid}/children").read_text().split()
            if children and os.readlink(f"/proc/{children[0]}/exe") == os.path.realpath(py_spy()):
                break
            assert time.monotonic() < deadline
            time.sleep(0.02)
        py_spy_process = listed(int(children[0]))
        status = dict(
            line.split(":\t", 1)
            for line in Path(f"/proc/{py_spy_process.pid}/status").read_text().splitlines()
        )
        namespaces = {
            ns: os.readlink(f"/proc/{py_spy_process.pid}/ns/{ns}")
            == os.readlink(f"/proc/{job.pid}/ns/{ns}")
            for ns in ("user", "pid", "mnt")
        }
        descriptors = {}
        for fd in os.listdir(f"/proc/{py_spy_process.pid}/fd"):
            with contextlib.suppress(FileNotFoundError):  # py-spy's own, closed meanwhile
                descriptors[int(fd)] = os.readlink(f"/proc/{py_spy_process.pid}/fd/{fd}")
        leader.stdin.write(f"{py_spy_process.inside}\n")
        leader.stdin.flush()
        said = leader.stdout.readline().split()
    finally:
        for process in (reader, leader):
            os.killpg(process.pid, 9)
            process.wait()

    assert said == ["read", "refused"]
    assert namespaces == {"user": True, "pid": True, "mnt": True}
    # Its input and outputs, and the files py-spy itself opens once sampling (the job's, seen
    # through its mount namespace: CI caught one between two samples): not the descriptor it
    # was run from (a pipe or socket), nor the namespaces' or a pidfd, none of them a path.
    assert {0, 1, 2} <= descriptors.keys()
    inherited = [link for fd, link in descriptors.items() if fd > 2 and not link.startswith("/")]
    assert inherited == [], descriptors
    assert status["Uid"].split() == ["200099"] * 4
    assert status["Groups"].strip() == ""
    ptrace_only = f"{1 << 19:016x}"
    assert [status[c] for c in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")] == [
        ptrace_only
    ] * 5
    assert status["NoNewPrivs"] == "1"


@pytest.mark.skipif(os.geteuid() != 0, reason="native frames are read by a worker run as root")
def test_a_native_read_through_a_program_that_names_an_interpreter_is_refused():
    """The kernel would load the interpreter a dynamically linked program names (ld.so) by
    its path in the job's mount namespace, where the job's volume may be."""
    leader, job = namespaced_python(IN_C)
    try:
        argv = _native_argv("/bin/true", job, _ids(job.pid))
        done = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    finally:
        os.killpg(leader.pid, 9)
        leader.wait()

    assert done.returncode == 2
    assert done.stderr == (
        "Error: /bin/true is not a static program: it is not run in a job's namespaces\n"
    )


def test_a_rank_read_without_its_native_frames_groups_with_the_ranks_of_its_python_stack():
    """A native read that failed for one rank (its Python frames only) would otherwise make
    its stack differ from the others', and put it first, as the odd rank out."""
    sleep = {"name": "clock_nanosleep", "file": "/lib/libc.so.6", "line": 0, "native": True,
             "library": "libc.so.6"}  # fmt: skip
    python = [{"name": "waiting_for_peer", "file": "/workspace/train.py", "line": 14}]
    stuck = [{"name": "stuck_in_allreduce", "file": "/workspace/train.py", "line": 10}]

    def replica(label: str, frames: list[dict], **process) -> dict:
        threads = [{"name": "MainThread", "frames": frames}]
        return {"label": label, "processes": [{"pid": 2, "threads": threads, **process}]}

    replicas = [
        replica("master-0", [sleep, *python]),
        replica("worker-0", stuck, native_error={"error": "timeout", "seconds": 6}),
        replica("worker-1", python, native_error={"error": "timeout", "seconds": 6}),
        replica("worker-2", [sleep, *python]),
    ]

    groups = stack_groups(replicas)

    assert [g.replicas for g in groups] == [["worker-0"], ["master-0", "worker-1", "worker-2"]]
    assert groups[1].frames == [sleep, *python]  # shown with the native frames read
    # Every process read natively: native frames count, as the stacks differ there.
    cond_wait = {**sleep, "name": "pthread_cond_wait"}
    natively = [replica("master-0", [sleep, *python]), replica("worker-0", [cond_wait, *python])]
    assert [g.replicas for g in stack_groups(natively)] == [["master-0"], ["worker-0"]]


# A job process that made a user namespace of its own inside its sandbox's (where no seccomp
# filter refuses it: libseccomp not installed), a pid namespace too or not, and runs its
# Python there, while the job's first process stays outside it: its owner, holding every
# capability over it, CAP_SYS_PTRACE too.
NESTED = textwrap.dedent(
    """
    import subprocess, sys
    unshare = ["unshare", "--user", "--map-current-user", *sys.argv[2:]]
    subprocess.run([*unshare, sys.executable, "-c", sys.argv[1]])
    """
)


def deepest(pid: int) -> int:
    while children := Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
        [pid] = map(int, children)
    return pid


@pytest.mark.skipif(os.geteuid() != 0, reason="native frames are read by a worker run as root")
@pytest.mark.parametrize("nested", [[], ["--pid", "--fork"]], ids=["user", "user-and-pid"])
def test_a_native_read_of_a_process_in_namespaces_the_job_made_is_refused(nested):
    """py-spy would hold CAP_SYS_PTRACE in that user namespace only, which the job's
    processes outside it hold too (its owner's): they could ptrace it and act through it in
    the host's mount and network namespaces (review 19)."""
    leader = subprocess.Popen(
        [*AS_A_JOB, NESTED, IN_C, *nested],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert leader.stdout.readline() == "ready\n"
        [outer] = Path(f"/proc/{leader.pid}/task/{leader.pid}/children").read_text().split()
        job = listed(deepest(int(outer)))
        assert os.readlink(f"/proc/{job.pid}/ns/user") != os.readlink(f"/proc/{outer}/ns/user")
        argv = _native_argv(py_spy(), job, _ids(job.pid))
        done = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    finally:
        os.killpg(leader.pid, 9)
        leader.wait()

    assert done.returncode == 2
    assert done.stderr == (
        "Error: native frames are read only of a sandbox whose processes share its user and mount "
        "namespaces\n"
    )


# The job's first process moves itself into a user namespace of its own making, keeping the
# capabilities its maker gets there (no exec since), CAP_SYS_PTRACE among them, with no other
# process of the sandbox left outside it.
MADE_ITS_OWN = textwrap.dedent(
    """
    import ctypes, os
    uid, gid = os.getuid(), os.getgid()
    assert ctypes.CDLL(None, use_errno=True).unshare(0x10000000) == 0  # CLONE_NEWUSER
    open("/proc/self/setgroups", "w").write("deny")
    open("/proc/self/uid_map", "w").write(f"{uid} {uid} 1")
    open("/proc/self/gid_map", "w").write(f"{gid} {gid} 1")
    print("ready", flush=True)
    ctypes.CDLL(None).pause()
    """
)


@pytest.mark.skipif(os.geteuid() != 0, reason="native frames are read by a worker run as root")
def test_a_native_read_of_a_sandbox_with_a_process_holding_capabilities_is_refused():
    leader, job = namespaced_python(MADE_ITS_OWN)
    try:
        assert "CapPrm:\t0000000000000000" not in Path(f"/proc/{job.pid}/status").read_text()
        argv = _native_argv(py_spy(), job, _ids(job.pid))
        done = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    finally:
        os.killpg(leader.pid, 9)
        leader.wait()

    assert done.returncode == 2
    assert done.stderr == (
        "Error: native frames are read only of a sandbox whose processes share its user and mount "
        "namespaces\n"
    )
