"""A role's CPU and memory held with cgroups by the local runner (jobs.cgroups): real jobs."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import textwrap
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import translation

from jobs import cgroups
from jobs import spec as S
from jobs.models import JobStatus
from jobs.worker import Worker

from .runner_helpers import (
    PY,
    UNTIL_THE_GATE_OPENS,
    as_nobody,
    log_text,
    make_spec,
    open_gate,
    run_until,
    runner_settings,  # noqa: F401
    status_of,
    submit,
    volume,
)

# alone: these hold the jobs' parent cgroup, shared by every test process's jobs, to a few
# hundred MiB or time its CPU shares; a worker another process starts meanwhile sets the parent
# back (`make test` runs them after the rest, by themselves).
pytestmark = [pytest.mark.usefixtures("runner_settings"), pytest.mark.alone]

# Fills `MiB` of memory (every page written, so it is really used), then says so.
ALLOCATE = "import sys; block = b'x' * (int(sys.argv[1]) << 20); print('allocated', len(block) >> 20, 'MiB')"
# Two processes spin for a second of wall-clock time; prints the CPU time they got per
# second of it (up to 2.0 on two free cores, at most 1.0 held to one core), and the CPU quota
# of the job's own cgroup as the job sees it through /sys. (A busy machine also keeps the
# spinners under 2.0, and keeps a quota from being reached: so the quota is read too.)
SPIN = textwrap.dedent(
    """
    import os, time
    start, before = time.monotonic(), os.times()
    children = []
    for _ in range(2):
        pid = os.fork()
        if pid == 0:
            end = time.monotonic() + 1.0
            while time.monotonic() < end:
                pass
            os._exit(0)
        children.append(pid)
    for pid in children:
        os.waitpid(pid, 0)
    after, wall = os.times(), time.monotonic() - start
    used = (after.children_user + after.children_system) - (
        before.children_user + before.children_system
    )
    print(f"cpu per second {used / wall:.2f}")

    mounts = {}
    for line in open("/proc/self/mountinfo"):
        fields = line.split()
        kind, options = fields[fields.index("-") + 1], fields[fields.index("-") + 3]
        if kind == "cgroup2" or (kind == "cgroup" and "cpu" in options.split(",")):
            mounts[kind] = (fields[3], fields[4])
    for line in open("/proc/self/cgroup"):
        hierarchy, controllers, path = line.strip().split(":", 2)
        kind = "cgroup2" if hierarchy == "0" else "cgroup"
        if kind not in mounts or (kind == "cgroup" and "cpu" not in controllers.split(",")):
            continue
        root, point = mounts[kind]
        folder = os.path.join(point, os.path.relpath(path, root))
        for name in ("cpu.max", "cpu.cfs_quota_us"):
            if os.path.exists(os.path.join(folder, name)):
                print(f"{name} {open(os.path.join(folder, name)).read().strip()}")
    """
)


@pytest.fixture
def limits(runner_settings):  # noqa: F811
    """The cgroups this machine offers the worker; the test is skipped where it has none."""
    found = cgroups.redetect()
    if not found.active:
        pytest.skip(f"no cgroup the worker can write here: {found.describe()}")
    assert found.describe().startswith(f"enforced with {found.mode} under /")
    yield found
    # Whatever the test left running (it failed half-way) ends first: a cgroup with a
    # process in it cannot be removed.
    from jobs.models import Job, JobReplica
    from jobs.runner import groups_still_alive

    replicas = list(JobReplica.objects.exclude(pid=None))
    for replica in replicas:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(replica.pid, signal.SIGKILL)
    groups_still_alive(replicas, wait=5)
    for public_id in Job.objects.values_list("public_id", flat=True):
        cgroups.remove_job_cgroups(found, public_id=public_id)


def a_job_where_the_worker_allocates(settings, mib: int, *, memory_gb: int | None) -> S.JobSpec:
    """The worker allocates `mib` MiB; the master waits for the gate (or its tear-down)."""
    (volume(settings) / "allocate.py").write_text(ALLOCATE)
    command = (
        f'if [ "$AIHC_ROLE" = worker ]; then {PY} /workspace/allocate.py {mib}; '
        f"else {UNTIL_THE_GATE_OPENS}; fi"
    )
    return make_spec(command, roles=[S.Role("master", 1), S.Role("worker", 1, memory_gb=memory_gb)])


def host_cgroups(log: str, limits: cgroups.Enforcement) -> dict[str, Path]:
    """The replica's cgroup folders on the host, per controller, from the /proc/self/cgroup
    the job printed from inside its sandbox."""
    mounts = cgroups.cgroup_mounts(Path("/proc/self/mountinfo").read_text())
    found = {}
    for line in log.splitlines():
        match = re.search(r" (\d+):([\w,=]*):(/\S*ai-job-console/\S+)$", line)
        if not match:
            continue
        names = match.group(2).split(",") if match.group(2) else [""]
        for name in names:
            mount = next(
                (
                    m
                    for m in mounts
                    if (m.version == 2 and name == "") or (m.version == 1 and name in m.controllers)
                ),
                None,
            )
            if mount and name in ("memory", "cpu", ""):
                found[name] = cgroups.folder_of(match.group(3), mount)
    return found


def test_a_replica_past_its_memory_limit_is_oom_killed_and_the_job_fails_naming_it(
    alice, alice_client, settings, limits
):
    job = submit(alice, a_job_where_the_worker_allocates(settings, 1536, memory_gb=1))

    run_until(Worker(), lambda: status_of(job) == JobStatus.FAILED, what="the OOM kill")

    replicas = {f"{r.role}-{r.index}": r for r in job.replicas.all()}
    worker, master = replicas["worker-0"], replicas["master-0"]
    assert (worker.status, worker.exit_code) == ("failed", 137)
    assert "allocated" not in log_text(job, "worker-0")
    # Its /dev/shm is the default 10 Gi, larger than its 1 GB: the reason says it counts,
    # as a condition (it wrote nothing there: a plain leak is not told that was the cause).
    said = (
        "OOMKilled：超出内存上限 1 GiB；任务写入 /dev/shm（共享内存，最多 10 GiB）的内容也计入"
        "该上限：若任务向其中写入，请给该角色更多内存，或调小共享内存"
    )
    assert worker.reason == said
    assert (master.status, master.reason) == ("stopped", "")
    failed = job.events.get(reason="ReplicaFailed")
    assert failed.message == job.status_reason
    assert job.status_reason == f"worker-0 内存不足，被终止（{said}）。"
    page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()
    assert f'<div class="small text-danger replica-reason">{said}</div>' in page
    with translation.override("en"):
        assert worker.reason_shown.startswith("OOMKilled: memory limit 1 GiB exceeded; ")
        assert "(shared memory, up to 10 GiB) counts against it too: if the job writes there" in (
            worker.reason_shown
        )
        assert job.status_reason_shown.startswith(
            "worker-0 ran out of memory and was killed (OOMKilled: memory limit 1 GiB exceeded; "
        )


def test_a_replica_killed_with_a_shared_memory_near_its_memory_says_dev_shm_counts(
    alice, settings, limits
):
    # qa60: a 2Gi /dev/shm beside 1 GB of memory was killed at 1.5 GB written there, its
    # reason naming the memory only, and its user looked for a leak in their program.
    command = (
        'if [ "$AIHC_ROLE" = worker ]; then '
        "dd if=/dev/zero of=/dev/shm/batch bs=1M count=1536 status=none; "
        f"else {UNTIL_THE_GATE_OPENS}; fi"
    )
    spec = make_spec(command, roles=[S.Role("master", 1), S.Role("worker", 1, memory_gb=1)])
    spec.shared_memory_gi = 2
    job = submit(alice, spec)

    run_until(Worker(), lambda: status_of(job) == JobStatus.FAILED, what="the OOM kill")

    worker = job.replicas.get(role="worker")
    assert (worker.status, worker.exit_code) == ("failed", 137)
    assert worker.reason == (
        "OOMKilled：超出内存上限 1 GiB；任务写入 /dev/shm（共享内存，最多 2 GiB）的内容也计入"
        "该上限：若任务向其中写入，请给该角色更多内存，或调小共享内存"
    )
    with translation.override("en"):
        assert worker.reason_shown == (
            "OOMKilled: memory limit 1 GiB exceeded; what the job writes to /dev/shm (shared "
            "memory, up to 2 GiB) counts against it too: if the job writes there, give the "
            "role more memory or make the shared memory smaller"
        )


def test_the_same_job_without_a_memory_limit_succeeds(alice, settings, limits):
    job = submit(alice, a_job_where_the_worker_allocates(settings, 1536, memory_gb=None))
    worker = Worker()
    run_until(worker, lambda: "allocated" in log_text(job, "worker-0"), what="the allocation")

    open_gate(settings)

    run_until(worker, lambda: status_of(job) == JobStatus.SUCCEEDED)
    assert "allocated 1536 MiB" in log_text(job, "worker-0")
    assert [r.reason for r in job.replicas.all()] == ["", ""]


def test_a_replica_killed_for_its_memory_is_restarted_like_any_failure(alice, settings, limits):
    (volume(settings) / "allocate.py").write_text(ALLOCATE)
    spec = make_spec(
        # The first run needs more than its limit, the second does not.
        "if [ -e /workspace/ran ]; then echo second run; "
        f"else touch /workspace/ran; {PY} /workspace/allocate.py 1536; fi",
        roles=[S.Role("master", 1, memory_gb=1)],
        fault_tolerance=True,
        fault_tolerance_config=S.FaultToleranceConfig(fault_tolerance_limit=1),
    )
    job = submit(alice, spec)

    run_until(Worker(), lambda: status_of(job) == JobStatus.SUCCEEDED, what="the second run")

    restarted = job.events.get(reason="Restarted")
    # (its default 10 Gi /dev/shm, larger than its 1 GB, is named after the limit)
    assert (
        "master-0 内存不足，被终止（OOMKilled：超出内存上限 1 GiB；任务写入 /dev/shm"
        in restarted.message
    )
    replica = job.replicas.get()
    assert (replica.status, replica.restarts, replica.reason) == ("succeeded", 1, "")
    for attempt in (1, 2):
        folders = cgroups.replica_folders(
            limits, public_id=job.public_id, attempt=attempt, label="master-0"
        )
        assert not any(folder.exists() for folder in folders)
    assert not any((root / job.public_id).exists() for root in limits.roots())


def test_a_cpu_limit_of_one_core_holds_two_busy_processes_to_about_one_core(
    alice, settings, limits
):
    (volume(settings) / "spin.py").write_text(SPIN)
    spec = make_spec(f"{PY} /workspace/spin.py", roles=[S.Role("master", 1, cpu=1)])
    job = submit(alice, spec)

    run_until(Worker(), lambda: status_of(job) == JobStatus.SUCCEEDED)

    log = log_text(job, "master-0")
    [per_second] = re.findall(r"cpu per second ([\d.]+)", log)
    quota = re.findall(r"(cpu.max|cpu.cfs_quota_us) (.+)$", log, re.MULTILINE)
    assert quota in ([("cpu.max", "100000 100000")], [("cpu.cfs_quota_us", "100000")])
    # At most about one core. No lower bound: all jobs have a tenth of the console's CPU
    # weight (cgroups.hold_jobs), so on a busy shared machine the spinners get far less.
    assert float(per_second) <= 1.3


def test_a_replica_cgroup_holds_its_limits_while_it_runs_and_a_stop_is_not_taken_for_oom(
    alice, settings, limits
):
    from jobs.actions import job_stop

    settings.LOCAL_STOP_GRACE_SECONDS = 0.5
    spec = make_spec(
        # Ignores the stop's SIGTERM, so it ends by SIGKILL (exit code 137, as an OOM kill).
        f"cat /proc/self/cgroup; trap '' TERM; echo ready; {UNTIL_THE_GATE_OPENS}",
        roles=[S.Role("master", 1, cpu=1, memory_gb=2)],
    )
    job = submit(alice, spec)
    worker = Worker()
    run_until(worker, lambda: "ready" in log_text(job, "master-0"), what="the command")

    folders = host_cgroups(log_text(job, "master-0"), limits)
    if limits.mode == cgroups.MODE_V2:
        assert (folders[""] / "memory.max").read_text().strip() == str(2 * 1024**3)
        assert (folders[""] / "cpu.max").read_text().split() == ["100000", "100000"]
    else:
        assert (folders["memory"] / "memory.limit_in_bytes").read_text().strip() == str(2 * 1024**3)
        assert (folders["cpu"] / "cpu.cfs_quota_us").read_text().strip() == "100000"
    assert all(f"{job.public_id}/attempt-1/master-0" in str(f) for f in folders.values())

    job.refresh_from_db()
    job_stop(job=job)
    run_until(worker, lambda: status_of(job) == JobStatus.STOPPED)

    replica = job.replicas.get()
    assert (replica.status, replica.exit_code, replica.reason) == ("stopped", 137, "")
    assert "OOMKilled" not in " ".join(e.message for e in job.events.all())
    assert not any(folder.exists() for folder in folders.values())


def test_a_restarted_worker_removes_the_cgroups_of_jobs_that_ended_and_keeps_running_ones(
    alice, settings, limits
):
    spec = make_spec(f"echo ready; {UNTIL_THE_GATE_OPENS}", roles=[S.Role("master", 1, cpu=1)])
    running = submit(alice, spec)
    worker = Worker()
    run_until(worker, lambda: "ready" in log_text(running, "master-0"), what="the command")
    # An ended job whose cgroups a killed worker left behind.
    ended = submit(alice, make_spec("true"))
    run_until(worker, lambda: status_of(ended) == JobStatus.SUCCEEDED)
    left = cgroups.create_replica_cgroup(
        limits,
        public_id=ended.public_id,
        attempt=1,
        label="master-0",
        memory_bytes=None,
        cpu_cores=1,
    )
    kept = cgroups.replica_folders(limits, public_id=running.public_id, attempt=1, label="master-0")
    assert all(folder.is_dir() for folder in [*left, *kept])

    restarted = Worker()

    assert not any((root / ended.public_id).exists() for root in limits.roots())
    assert all(folder.is_dir() for folder in kept)
    open_gate(settings)
    run_until(restarted, lambda: status_of(running) == JobStatus.SUCCEEDED)
    assert not any((root / running.public_id).exists() for root in limits.roots())


def test_with_enforcement_off_a_job_setting_cpu_or_memory_says_once_they_are_not_held(
    alice, settings
):
    settings.LOCAL_ENFORCE_LIMITS = "off"
    limited = submit(alice, make_spec("cat /proc/self/cgroup", roles=[S.Role("master", 1, cpu=1)]))
    plain = submit(alice, make_spec("true"))
    worker = Worker()
    # What the worker's start line says (jobs.worker.run_forever).
    assert worker.limits.describe() == (
        "not enforced: turned off (LOCAL_ENFORCE_LIMITS=off); "
        "local jobs together are not held (no reserve for the console)"
    )

    run_until(
        worker,
        lambda: {status_of(limited), status_of(plain)} == {JobStatus.SUCCEEDED},
    )

    [said] = limited.events.filter(reason="LimitsNotEnforced")
    assert said.message == "本机不限制 CPU 和内存：已关闭（LOCAL_ENFORCE_LIMITS=off）。"
    with translation.override("en"):
        assert said.message_shown == (
            "CPU and memory are not enforced on this machine: "
            "turned off (LOCAL_ENFORCE_LIMITS=off)."
        )
    assert not plain.events.filter(reason="LimitsNotEnforced").exists()
    assert "ai-job-console" not in log_text(limited, "master-0")


# Forks up to 200 children (each waits on a pipe, so none ends by itself) until the kernel
# refuses one, says how many it got, then ends them all. Bounded: with no limit it stops at
# 200, which is enough to show there was none and harmless to a shared machine.
FORK_UNTIL_REFUSED = textwrap.dedent(
    """
    import os, signal
    read, write = os.pipe()
    children, refused = [], False
    for _ in range(200):
        try:
            pid = os.fork()
        except BlockingIOError:
            refused = True
            break
        if pid == 0:
            os.close(write)
            os.read(read, 1)
            os._exit(0)
        children.append(pid)
    print(f"forked {len(children)} refused {refused}", flush=True)
    os.close(write)
    for pid in children:
        os.waitpid(pid, 0)
    """
)


def test_a_job_that_forks_without_end_is_refused_processes_past_the_limit(alice, settings, limits):
    # Medium (security round 13): a job's command could fork until the machine had no process
    # left, the worker's and the web server's included. No CPU or memory value is set: the
    # limit holds every replica.
    if limits.pids_root is None:
        pytest.skip(f"no pids controller the worker can write here: {limits.describe()}")
    settings.LOCAL_MAX_PROCESSES = 30
    (volume(settings) / "fork.py").write_text(FORK_UNTIL_REFUSED)
    job = submit(alice, make_spec(f"{PY} /workspace/fork.py"))

    run_until(Worker(), lambda: status_of(job) == JobStatus.SUCCEEDED)

    log = log_text(job, "master-0")
    [said] = re.findall(r"forked (\d+) refused (\w+)", log)
    # bash and python count too: fewer than 30 children, and the next one refused.
    assert said[1] == "True", log
    assert int(said[0]) < 30


def test_a_job_with_no_process_limit_set_forks_as_it_likes(alice, settings, limits):
    settings.LOCAL_MAX_PROCESSES = 0
    (volume(settings) / "fork.py").write_text(FORK_UNTIL_REFUSED)
    job = submit(alice, make_spec(f"{PY} /workspace/fork.py"))

    run_until(Worker(), lambda: status_of(job) == JobStatus.SUCCEEDED)

    assert "forked 200 refused False" in log_text(job, "master-0")


def test_the_worker_finds_its_own_cgroups_where_the_host_mounts_them():
    # A systemd host (cgroup v2), and a container whose v1 mounts show its own cgroup only.
    systemd = "0::/system.slice/console.service\n"
    container = "4:memory:/docker/abc\n3:cpu,cpuacct:/docker/abc\n0::/\n"
    mountinfo = (
        "25 30 0:22 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n"
        "26 30 0:23 / /proc rw shared:5 - proc proc rw\n"
        "27 30 0:24 /docker/abc /sys/fs/cgroup/cpu,cpuacct ro - cgroup cgroup rw,cpu,cpuacct\n"
    )

    v2, v1 = cgroups.cgroup_mounts(mountinfo)

    assert cgroups.own_cgroups(systemd) == {"": "/system.slice/console.service"}
    assert cgroups.folder_of("/system.slice/console.service", v2) == Path(
        "/sys/fs/cgroup/system.slice/console.service"
    )
    own = cgroups.own_cgroups(container)
    assert (own["cpu"], own["cpuacct"], own[""]) == ("/docker/abc", "/docker/abc", "/")
    assert v1.controllers == {"cpu", "cpuacct"}
    assert cgroups.folder_of(own["cpu"], v1) == Path("/sys/fs/cgroup/cpu,cpuacct")
    assert cgroups.folder_of("/elsewhere", v1) is None


def fake_cgroup2(tmp_path: Path, own: str) -> tuple[Path, str, str]:
    """A cgroup2 mount's files as the kernel shows a cgroup holding the worker (pid 4242)
    with memory and cpu available, nothing enabled for children."""
    folder = tmp_path / own.lstrip("/")
    folder.mkdir(parents=True)
    (folder / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    (folder / "cgroup.subtree_control").write_text("\n")
    (folder / "cgroup.procs").write_text("4242\n")
    mountinfo = f"25 30 0:22 / {tmp_path} rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"
    return folder, f"0::{own}\n", mountinfo


def test_a_v2_cgroup_not_delegated_to_the_worker_is_left_as_it_is_and_nothing_is_enforced(
    tmp_path,
):
    folder, proc_cgroup, mountinfo = fake_cgroup2(tmp_path, "/user.slice/session-3.scope")

    found = cgroups.detect(setting="auto", proc_cgroup=proc_cgroup, mountinfo=mountinfo)

    assert found.mode == cgroups.MODE_NONE
    assert "Delegate=yes" in str(found.why)
    assert not (folder / cgroups.PROCESSES_LEAF).exists()
    assert not (folder / cgroups.JOBS_DIR).exists()
    assert (folder / "cgroup.subtree_control").read_text() == "\n"


def test_a_v2_cgroup_delegated_to_the_worker_is_made_ready_for_the_jobs(tmp_path):
    folder, proc_cgroup, mountinfo = fake_cgroup2(tmp_path, "/system.slice/console.service")
    os.setxattr(folder, "user.delegate", b"1")  # as systemd marks a Delegate=yes unit

    found = cgroups.detect(setting="auto", proc_cgroup=proc_cgroup, mountinfo=mountinfo)

    assert found.mode == cgroups.MODE_V2
    assert (folder / cgroups.PROCESSES_LEAF / "cgroup.procs").read_text() == "4242"
    # pids too, where the cgroup has it (LOCAL_MAX_PROCESSES).
    assert (folder / "cgroup.subtree_control").read_text() == "+memory +cpu +pids"
    assert found.memory_root == folder / cgroups.JOBS_DIR
    # Devices are held by eBPF programs under v2, which the console does not build: its
    # replicas get no device cgroup (only their sandbox's bind mounts), and nothing fails.
    assert found.devices_root is None
    [replica] = cgroups.create_replica_cgroup(
        found,
        public_id="job-1",
        attempt=1,
        label="master-0",
        memory_bytes=None,
        cpu_cores=1,
        devices=cgroups.device_rules([]),
    )
    assert not list(replica.glob("devices.*"))


def test_cgroups_a_root_worker_made_before_leave_an_unprivileged_worker_enforcing_nothing(
    nobody_folder,
):
    # A worker run as root once made its folder in each hierarchy; the worker now runs as
    # an unprivileged user, which finds it but cannot make cgroups in it.
    mountinfo = ""
    for number, controller in enumerate(("memory", "cpu")):
        hierarchy = nobody_folder / controller
        (hierarchy / cgroups.JOBS_DIR).mkdir(parents=True)
        mountinfo += (
            f"{30 + number} 25 0:{40 + number} / {hierarchy} rw - cgroup cgroup rw,{controller}\n"
        )
    os.chmod(nobody_folder, 0o755)
    proc_cgroup = "4:memory:/\n1:cpu:/\n0::/\n"

    found = as_nobody(
        lambda: cgroups.detect(
            setting="auto", proc_cgroup=proc_cgroup, mountinfo=mountinfo
        ).describe()
    )

    assert found == (
        "not enforced: cgroup v1: the worker cannot create "
        f"{nobody_folder / 'memory' / cgroups.JOBS_DIR} (Permission denied); "
        "local jobs together are not held (no reserve for the console)"
    )


def fake_cgroup1(tmp_path: Path, hierarchies: list[str]) -> tuple[str, str]:
    """cgroup v1 mounts (one per entry, e.g. "cpu,cpuacct") with the worker at their root."""
    mountinfo = proc_cgroup = ""
    for number, controllers in enumerate(hierarchies):
        (tmp_path / controllers).mkdir()
        mountinfo += (
            f"{30 + number} 25 0:{40 + number} / {tmp_path / controllers} rw - cgroup cgroup "
            f"rw,{controllers}\n"
        )
        proc_cgroup += f"{number + 1}:{controllers}:/\n"
    return proc_cgroup, mountinfo


def test_a_v1_cpuacct_hierarchy_of_its_own_gets_the_replicas_cgroups_too(tmp_path):
    proc_cgroup, mountinfo = fake_cgroup1(tmp_path, ["memory", "cpu", "cpuacct"])
    found = cgroups.detect(setting="auto", proc_cgroup=proc_cgroup, mountinfo=mountinfo)

    folders = cgroups.create_replica_cgroup(
        found, public_id="job-1", attempt=1, label="master-0", memory_bytes=None, cpu_cores=None
    )

    assert found.cpuacct_root == tmp_path / "cpuacct" / cgroups.JOBS_DIR
    assert folders == [
        tmp_path / name / cgroups.JOBS_DIR / "job-1" / "attempt-1" / "master-0"
        for name in ("memory", "cpu", "cpuacct")
    ]
    assert all(folder.is_dir() for folder in folders)
    assert cgroups.job_ids_with_cgroups(found) == {"job-1"}
    assert cgroups.remove_job_cgroups(found, public_id="job-1")
    assert not any((root / "job-1").exists() for root in found.roots())


def test_a_v1_cpuacct_mounted_with_cpu_needs_no_cgroup_of_its_own(tmp_path):
    proc_cgroup, mountinfo = fake_cgroup1(tmp_path, ["memory", "cpu,cpuacct"])

    found = cgroups.detect(setting="auto", proc_cgroup=proc_cgroup, mountinfo=mountinfo)

    assert found.mode == cgroups.MODE_V1
    assert found.cpu_root == tmp_path / "cpu,cpuacct" / cgroups.JOBS_DIR
    assert found.cpuacct_root is None
    assert found.roots() == [found.memory_root, found.cpu_root]


def test_a_replica_without_cpu_or_memory_joins_its_v1_memory_cpu_and_pids_cgroups(tmp_path):
    proc_cgroup, mountinfo = fake_cgroup1(tmp_path, ["memory", "cpu,cpuacct", "pids"])
    found = cgroups.detect(setting="auto", proc_cgroup=proc_cgroup, mountinfo=mountinfo)

    folders = cgroups.create_replica_cgroup(
        found,
        public_id="job-1",
        attempt=1,
        label="master-0",
        memory_bytes=None,
        cpu_cores=None,
        max_processes=64,
    )

    assert found.pids_root == tmp_path / "pids" / cgroups.JOBS_DIR
    replica = Path(cgroups.JOBS_DIR, "job-1", "attempt-1", "master-0")
    pids = tmp_path / "pids" / replica
    # Memory and cpu too, with no limit of their own: under the jobs' parent (hold_jobs),
    # which holds every job together.
    assert folders == [tmp_path / "memory" / replica, tmp_path / "cpu,cpuacct" / replica, pids]
    assert (pids / "pids.max").read_text() == "64"
    assert not (tmp_path / "memory" / replica / "memory.limit_in_bytes").exists()
    # Found at a worker's start like the others, to be removed with the job's.
    assert cgroups.job_ids_with_cgroups(found) == {"job-1"}
