"""What a hostile job can do on the local runner (security round 16): real jobs, through
the real runner and its sandbox, doing what a malicious training script would."""

from __future__ import annotations

import contextlib
import os
import platform
import shutil
import signal
import uuid
from pathlib import Path

import pytest
from django.urls import reverse

from jobs import runner
from jobs import spec as S
from jobs.actions import job_stop
from jobs.models import JobStatus
from jobs.worker import Worker

from .runner_helpers import (
    UNTIL_THE_GATE_OPENS,
    log_text,
    make_spec,
    open_gate,
    processes_with,
    run_until,
    runner_settings,  # noqa: F401
    status_of,
    submit,
    volume,
)

pytestmark = pytest.mark.usefixtures("runner_settings")

# Attaches to the sandbox's pid 1 (bwrap's, which runs as the job's user), makes it call
# setsid() through the `syscall` instruction it is stopped after, and lets it go on: pid 1
# then leaves the process group of the replica's shim. The script leaves it too, and runs
# on. x86_64 only (its registers and setsid's number).
LEAVE_THE_GROUP = """\
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
class Regs(ctypes.Structure):
    _fields_ = [(n, ctypes.c_ulonglong) for n in (
        "r15 r14 r13 r12 rbp rbx r11 r10 r9 r8 rax rcx rdx rsi rdi orig_rax rip cs eflags "
        "rsp ss fs_base gs_base ds es fs gs").split()]
ATTACH, DETACH, GETREGS, SETREGS, SINGLESTEP, WALL = 16, 17, 12, 13, 9, 0x40000000
if libc.ptrace(ATTACH, 1, None, None) != 0:
    print("pid 1 cannot be traced", ctypes.get_errno(), flush=True)
    sys.exit(3)
os.waitpid(1, WALL)
saved, regs = Regs(), Regs()
libc.ptrace(GETREGS, 1, None, ctypes.byref(saved))
ctypes.memmove(ctypes.byref(regs), ctypes.byref(saved), ctypes.sizeof(Regs))
regs.rax, regs.orig_rax, regs.rip = 112, 2**64 - 1, saved.rip - 2  # setsid()
libc.ptrace(SETREGS, 1, None, ctypes.byref(regs))
libc.ptrace(SINGLESTEP, 1, None, None)
os.waitpid(1, WALL)
saved.rip, saved.rax = saved.rip - 2, saved.orig_rax  # its own call, made again
libc.ptrace(SETREGS, 1, None, ctypes.byref(saved))
libc.ptrace(DETACH, 1, None, None)
os.setsid()
print("pid 1 is in group", os.getpgid(1), "and this script in", os.getpgid(0), flush=True)
while True:
    time.sleep(0.1)
"""


def assert_stopped_without_a_trace(alice, settings, *, source: str, name: str, command: str):
    """Runs `source` as a job's script until it has moved pid 1 out of its group, stops the
    job, and checks no process of the script is left once the job reads Stopped."""
    tag = uuid.uuid4().hex[:8]  # no other checkout's test on this machine matches it
    script = f"{name}-{tag}.py"
    (volume(settings) / script).write_text(source)
    job = submit(alice, make_spec(f"{command} /workspace/{script}"))
    worker = Worker()
    try:
        run_until(worker, lambda: "pid 1 " in log_text(job, "master-0"), what="the script")
        if "cannot be traced" in log_text(job, "master-0"):
            pytest.skip("this kernel keeps a job from tracing its sandbox's pid 1 (Yama)")
        assert "pid 1 is in group 1 and this script in 2" in log_text(job, "master-0")

        job.refresh_from_db()
        job_stop(job=job)
        run_until(worker, lambda: status_of(job) == JobStatus.STOPPED)

        assert processes_with(script) == []
    finally:
        for pid in processes_with(script):  # never left running, whatever failed
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the script injects x86_64 code")
def test_a_job_that_moves_its_sandboxs_first_process_out_of_its_group_still_dies_on_stop(
    alice, settings
):
    """High (security round 16): a Stop killed the replica's process group, and the sandbox's
    pid 1 with it, which takes every process of its pid namespace along. A job made pid 1
    leave that group (ptrace, an injected setsid()), and ran on after the job read Stopped,
    its cards given to the next job. The runner now also kills the group's children that
    left it, and waits for them as for the group."""
    assert_stopped_without_a_trace(
        alice, settings, source=LEAVE_THE_GROUP, name="leave-the-group", command="/usr/bin/python3"
    )


# LEAVE_THE_GROUP, and then pid 1's standard input, output and error closed through the same
# injected `syscall` (close), and the script's own pointed at /dev/null: nothing of the
# sandbox holds the shim's pipe but the outer bwrap.
LEAVE_AND_GO_QUIET = LEAVE_THE_GROUP.replace(
    "saved.rip, saved.rax = saved.rip - 2, saved.orig_rax",
    """for fd in (0, 1, 2):
    ctypes.memmove(ctypes.byref(regs), ctypes.byref(saved), ctypes.sizeof(Regs))
    regs.rax, regs.orig_rax, regs.rip, regs.rdi = 3, 2**64 - 1, saved.rip - 2, fd  # close()
    libc.ptrace(SETREGS, 1, None, ctypes.byref(regs))
    libc.ptrace(SINGLESTEP, 1, None, None)
    os.waitpid(1, WALL)
saved.rip, saved.rax = saved.rip - 2, saved.orig_rax""",
).replace(
    "flush=True)\nwhile True:",
    """flush=True)
null = os.open("/dev/null", os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(null, fd)
while True:""",
)


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the script injects x86_64 code")
def test_a_job_that_moves_pid_1_out_of_its_group_and_closes_its_output_still_dies_on_stop(
    alice, settings
):
    """High (review 16): with its output closed too, the stop's SIGTERM ended the outer bwrap,
    the shim read the end of the output and exited, and pid 1, adopted by the shim, went to
    init, where the SIGKILL's look at the group's children did not find it: the job ran on
    after it read Stopped. The shim now stays until what it adopted has ended."""
    assert_stopped_without_a_trace(
        alice,
        settings,
        source=LEAVE_AND_GO_QUIET,
        name="leave-and-go-quiet",
        command="exec /usr/bin/python3",
    )


# Folders nested past the kernel's PATH_MAX (4096 bytes) from the /tmp they are in, and 5 MB
# at the bottom: 40 levels of 200-character names.
NEST_PAST_PATH_MAX = """\
import os, time
fd = os.open("/tmp", os.O_RDONLY)
for _ in range(40):
    os.mkdir("d" * 200, dir_fd=fd)
    fd = os.open("d" * 200, os.O_RDONLY, dir_fd=fd)
print("nested", flush=True)
with open(os.open("checkpoint.bin", os.O_CREAT | os.O_WRONLY, dir_fd=fd), "wb") as out:
    out.write(os.urandom(5_000_000))
print("written", flush=True)
time.sleep(60)
"""


def test_what_a_job_writes_deeper_in_its_tmp_than_a_path_can_name_counts_against_its_cap(
    alice, settings
):
    """High (security round 16): /tmp was measured by opening each folder by its whole
    path, which the kernel refuses past 4096 bytes: what a job wrote deeper went uncounted,
    against its cap and the disk's eviction alike, and it could fill the disk. Each folder
    is now opened from one held open above it."""
    settings.LOCAL_TMP_MAX_GB = 0.001  # ~1 MB
    settings.LOCAL_TMP_CHECK_SECONDS = 0.1
    (volume(settings) / "nest.py").write_text(NEST_PAST_PATH_MAX)
    job = submit(alice, make_spec("/usr/bin/python3 /workspace/nest.py"))

    run_until(Worker(), lambda: status_of(job) == JobStatus.FAILED, timeout=20)

    # Nested past PATH_MAX, then failed for its cap: only the file written there was over it.
    # ("written" may never come: the check can kill it while its 5 MB are being written.)
    assert "nested" in log_text(job, "master-0")
    assert job.status_reason.startswith("master-0 向 /tmp 写入了 0.00"), job.status_reason
    assert "超过 0.001 GB 的上限（LOCAL_TMP_MAX_GB）" in job.status_reason


def test_a_log_line_cannot_reorder_how_the_page_draws_it(alice, alice_client):
    """Low (security round 16): a line holding Unicode's right-to-left override (U+202E)
    was drawn on the job page (and its search results) in another order than it holds:
    "report.\u202etxt.exe" read as "report.exe.txt". The page drops bidirectional
    overrides, embeddings and isolates, as it drops terminal codes; the download keeps
    the bytes as written."""
    job = submit(alice, make_spec(r"printf 'saved report.\u202etxt.exe \u2067isolated\u2069\n'"))

    run_until(Worker(), lambda: status_of(job) == JobStatus.SUCCEEDED)

    assert "report.\u202etxt.exe" in log_text(job, "master-0")
    page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()
    assert "saved report.txt.exe isolated" in page
    found = alice_client.get(
        reverse("job-log-search", args=[job.public_id]),
        {"replica": "master-0", "q": "saved"},
        headers={"HX-Request": "true"},
    ).content.decode()
    assert "report.txt.exe" in found
    for control in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069":
        assert control not in page and control not in found


def test_a_finished_jobs_tmp_of_many_files_is_removed_a_part_a_tick_not_in_one(alice, settings):
    """Medium (security round 16): a finished job's /tmp was removed whole within the
    worker's tick, so one holding millions of files held the worker (every other job's
    stop, timeout and start) for minutes. It is moved aside at once and removed at most
    REMOVE_PER_TICK entries a tick."""
    many = 60_000  # more than the tick that ends the job removes: 2 x REMOVE_PER_TICK
    command = f"cd /tmp && seq {many} | xargs touch && ls | wc -l"
    job = submit(alice, make_spec(command))
    worker = Worker()

    run_until(worker, lambda: status_of(job) == JobStatus.SUCCEEDED, timeout=60)

    assert f" {many}\n" in log_text(job, "master-0")
    state = runner.replica_state_dir(job.public_id, 1, "master-0")
    assert not (state / "tmp").exists()  # moved aside at once
    discarded = Path(settings.LOCAL_RUN_DIR) / "discarded"
    assert discarded.is_dir() and os.listdir(discarded)  # and not removed in that tick
    run_until(worker, lambda: not os.listdir(discarded), what="the removal")


# A library whose constructor, run by the dynamic loader of whatever process loads it, writes
# `id`'s uid to MARK: built by one job in its own /tmp, then named by another job's
# environment. Also a stand-in libcap.so.2 (the one library of bwrap's that LD_LIBRARY_PATH
# can replace without its symbols failing to bind first: bwrap takes only cap_from_name
# from it).
CONSTRUCTOR_WRITES_MARK = r"""
#include <stdio.h>
#include <unistd.h>
__attribute__((constructor)) static void pwned(void) {
    FILE *mark = fopen(MARK, "w");
    if (mark) { fprintf(mark, "uid=%d\n", (int)getuid()); fclose(mark); }
}
unsigned la_version(unsigned version) { return version; }
int cap_from_name(const char *name, unsigned *value) { return -1; }
"""


@pytest.mark.skipif(not shutil.which("gcc"), reason="the job builds its library with gcc")
def test_a_jobs_loader_variables_reach_its_sandbox_only_never_a_process_on_the_host(
    alice, settings, tmp_path
):
    """Critical (qa100): the shim started bwrap with the job's environment, and bwrap, not
    setuid, is loaded by the host's dynamic loader, which honours LD_PRELOAD, LD_AUDIT and
    LD_LIBRARY_PATH before any namespace or seccomp filter exists: a library one job built
    in its /tmp, named by another job's envs, ran on the host as the worker's user (root
    here) and read the console's secret key and database. bwrap now starts with a fixed
    environment of the shim's, and sets the job's own (--clearenv, --setenv from the
    descriptor it reads its options from) only for the command it starts in the sandbox."""
    (volume(settings) / "evil.c").write_text(CONSTRUCTOR_WRITES_MARK)
    marks = {kind: tmp_path / f"PWNED-{kind}.txt" for kind in ("preload", "audit", "libpath")}
    build = " && ".join(
        f"gcc -shared -fPIC -DMARK='\"{mark}\"' -o {target} /workspace/evil.c"
        for mark, target in [
            (marks["preload"], "/tmp/evil.so"),
            (marks["audit"], "/tmp/audit.so"),
            (marks["libpath"], "/tmp/lib/libcap.so.2"),
        ]
    )
    builder = submit(
        alice, make_spec(f"mkdir /tmp/lib && {build} && echo built && {UNTIL_THE_GATE_OPENS}")
    )
    worker = Worker()
    run_until(worker, lambda: "built" in log_text(builder, "master-0"), what="the build")
    built = runner.replica_state_dir(builder.public_id, 1, "master-0") / "tmp"
    assert (built / "evil.so").is_file()  # where the host's loader would find them
    loader_envs = {
        "LD_PRELOAD": f"{built}/evil.so",
        "LD_AUDIT": f"{built}/audit.so",
        "LD_LIBRARY_PATH": f"{built}/lib",
        "GCONV_PATH": f"{built}/lib",
    }
    envs = [S.Env(name, value) for name, value in loader_envs.items()]
    job = submit(alice, make_spec("env | grep -E '^(LD_|GCONV_PATH)' | sort", envs=envs))

    run_until(worker, lambda: status_of(job) == JobStatus.SUCCEEDED, timeout=60)

    assert [mark for mark in marks.values() if mark.exists()] == []
    # Inside, where none of those paths exists, the job has each as given.
    output = log_text(job, "master-0")
    for name, value in loader_envs.items():
        assert f" {name}={value}\n" in output
    open_gate(settings)
    run_until(worker, lambda: status_of(builder) == JobStatus.SUCCEEDED)


def test_a_secret_env_value_is_in_no_host_processs_command_line_or_environment(alice, settings):
    """With the loader variables (above), every other of the job's variables stayed in the
    environment of bwrap's process on the host, readable in /proc/<pid>/environ by whoever
    may read that process's, and the shim ran with the job's PATH. Only the sandboxed
    command's processes have them now."""
    token = "Wq3-only-in-the-sandbox-5Hd"
    envs = [S.Env("TOK", token, secret=True), S.Env("PATH", f"/{token}/bin:/usr/bin:/bin")]
    spec = make_spec(UNTIL_THE_GATE_OPENS, envs=envs)
    job = submit(alice, spec)
    worker = Worker()
    run_until(worker, lambda: status_of(job) == JobStatus.RUNNING)
    replica = job.replicas.get()
    own_namespace = os.readlink("/proc/self/ns/pid")
    seen: dict[str, list[bytes]] = {"host": [], "sandbox": []}
    run_until(worker, lambda: bool(sandboxed(replica.pid)), what="the command")
    for pid in in_session(replica.pid):
        with contextlib.suppress(OSError):
            where = "host" if os.readlink(f"/proc/{pid}/ns/pid") == own_namespace else "sandbox"
            for name in ("cmdline", "environ"):
                seen[where].append(Path(f"/proc/{pid}/{name}").read_bytes())
    open_gate(settings)
    run_until(worker, lambda: status_of(job) == JobStatus.SUCCEEDED)

    assert len(seen["host"]) == 4  # the shim and bwrap's outer process, each read
    assert not [read for read in seen["host"] if token.encode() in read]
    for variable in (f"TOK={token}", f"PATH=/{token}/bin:"):
        assert [read for read in seen["sandbox"] if variable.encode() in read]


def in_session(session: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError, ValueError):
            if entry.name.isdigit() and os.getsid(int(entry.name)) == session:
                found.append(int(entry.name))
    return found


def sandboxed(session: int) -> list[int]:
    """The processes of the session in a pid namespace of their own (the sandbox's), past
    bwrap's own (its init): those of the command."""
    own = os.readlink("/proc/self/ns/pid")
    found = []
    for pid in in_session(session):
        with contextlib.suppress(OSError):
            if (
                os.readlink(f"/proc/{pid}/ns/pid") != own
                and b"bwrap" not in Path(f"/proc/{pid}/cmdline").read_bytes()
            ):
                found.append(pid)
    return found
