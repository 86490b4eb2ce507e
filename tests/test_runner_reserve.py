"""All local jobs together held to the machine less the console's reserve (jobs.cgroups,
hold_jobs): real jobs through the real runner, on the cgroups this machine offers."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from django.utils import translation

from jobs import cgroups
from jobs import spec as S
from jobs.models import JobStatus
from jobs.texts import binary_size, display_text, recorded, source_of
from jobs.worker import Worker

from .conftest import jobs_parent_files, restore_jobs_parent
from .runner_helpers import (
    PY,
    UNTIL_THE_GATE_OPENS,
    log_text,
    make_spec,
    open_gate,
    run_until,
    runner_settings,  # noqa: F401
    status_of,
    submit,
    volume,
)
from .test_foundation import manage
from .test_runner_limits import ALLOCATE, host_cgroups, limits  # noqa: F401

# alone: these hold the jobs' parent cgroup, shared by every test process's jobs, to a few
# hundred MiB or time its CPU shares; a worker another process starts meanwhile sets the parent
# back (`make test` runs them after the rest, by themselves).
pytestmark = [pytest.mark.usefixtures("runner_settings"), pytest.mark.alone]


@pytest.fixture
def parent(limits):  # noqa: F811
    """The jobs' parent cgroups (memory, cpu), restored to what they held before the test."""
    before = jobs_parent_files()
    yield limits
    restore_jobs_parent(before)


def gib_of_machine() -> float:
    return cgroups.machine_memory_bytes() / 1024**3


def parent_memory_limit(found: cgroups.Enforcement) -> int:
    name = "memory.max" if found.mode == cgroups.MODE_V2 else "memory.limit_in_bytes"
    return int((found.memory_root / name).read_text())


def test_a_replica_without_cpu_or_memory_values_runs_in_a_cgroup_under_the_jobs_parent(
    alice, settings, parent
):
    job = submit(alice, make_spec("cat /proc/self/cgroup"))

    run_until(Worker(), lambda: status_of(job) == JobStatus.SUCCEEDED)

    folders = host_cgroups(log_text(job, "master-0"), parent)
    expected = (
        {"": parent.memory_root}
        if parent.mode == cgroups.MODE_V2
        else {
            "memory": parent.memory_root,
            "cpu": parent.cpu_root,
        }
    )
    assert set(folders) == set(expected)
    for name, root in expected.items():
        assert folders[name] == root / job.public_id / "attempt-1" / "master-0"


def test_the_jobs_parent_is_held_to_the_machine_less_the_reserve_at_the_worker_start(
    settings, parent
):
    settings.LOCAL_RESERVED_MEMORY_GB = 3.5
    settings.LOCAL_RESERVED_CPUS = 0

    worker = Worker()

    held = cgroups.memory_available(parent)[0] - int(3.5 * 1024**3)
    assert worker.limits.jobs_memory_bytes == held
    # The kernel keeps a limit in whole pages.
    assert abs(parent_memory_limit(parent) - held) < os.sysconf("SC_PAGE_SIZE")
    if parent.mode == cgroups.MODE_V2:
        assert (parent.cpu_root / "cpu.weight").read_text().strip() == "10"
        assert (parent.cpu_root / "cpu.max").read_text().split() == ["max", "100000"]
    else:
        assert (parent.cpu_root / "cpu.shares").read_text().strip() == "102"
        assert (parent.cpu_root / "cpu.cfs_quota_us").read_text().strip() == "-1"
    assert f"local jobs together: memory {cgroups.gib(held)} " in worker.limits.describe()
    assert "no CPU quota (LOCAL_RESERVED_CPUS)" in worker.limits.describe()

    # A hard CPU reserve too: jobs get the machine's cores less it, as a quota.
    settings.LOCAL_RESERVED_CPUS = 0.5
    worker = Worker()

    quota = int(((os.cpu_count() or 1) - 0.5) * 100000)
    if parent.mode == cgroups.MODE_V2:
        assert (parent.cpu_root / "cpu.max").read_text().split() == [str(quota), "100000"]
    else:
        assert (parent.cpu_root / "cpu.cfs_quota_us").read_text().strip() == str(quota)
    assert f"at most {(os.cpu_count() or 1) - 0.5:g} cores" in worker.limits.describe()


def test_a_job_past_the_memory_all_jobs_share_is_oom_killed_and_the_worker_goes_on(
    alice, settings, parent
):
    # Jobs together get 256 MiB of this machine; the job has no memory value of its own.
    settings.LOCAL_RESERVED_MEMORY_GB = gib_of_machine() - 0.25
    (volume(settings) / "allocate.py").write_text(ALLOCATE)
    job = submit(
        alice,
        make_spec(
            f"{PY} /workspace/allocate.py 768",
        ),
    )
    worker = Worker()
    assert cgroups.gib(worker.limits.jobs_memory_bytes) == "256Mi"

    run_until(worker, lambda: status_of(job) == JobStatus.FAILED, what="the OOM kill")

    replica = job.replicas.get()
    assert (replica.status, replica.exit_code) == ("failed", 137)
    assert "allocated" not in log_text(job, "master-0")
    machine = binary_size(cgroups.machine_memory_bytes())
    assert replica.reason == (
        f"OOMKilled：所有本机任务共用的内存（256.0\xa0MiB，即本机内存 {machine} 减去 "
        "LOCAL_RESERVED_MEMORY_GB）已用尽"
    )
    job.refresh_from_db()
    assert job.status_reason == f"master-0 内存不足，被终止（{replica.reason}）。"
    with translation.override("en"):
        assert job.status_reason_shown == (
            "master-0 ran out of memory and was killed (OOMKilled: the memory all local jobs "
            f"share, 256.0\xa0MiB (this machine's memory, {machine}, less LOCAL_RESERVED_MEMORY_GB), "
            "ran out)."
        )
    # The worker (this process) was outside the parent, and goes on running jobs.
    own = cgroups.own_cgroups(Path("/proc/self/cgroup").read_text())
    assert cgroups.JOBS_DIR + "/" not in own.get("memory", own.get("", ""))
    small = submit(alice, make_spec(f"{PY} /workspace/allocate.py 16"))
    run_until(worker, lambda: status_of(small) == JobStatus.SUCCEEDED)
    assert "allocated 16 MiB" in log_text(small, "master-0")


def test_a_role_with_a_memory_value_above_what_jobs_share_reads_as_the_shared_limit(
    alice, settings, parent
):
    settings.LOCAL_RESERVED_MEMORY_GB = gib_of_machine() - 0.25
    (volume(settings) / "allocate.py").write_text(ALLOCATE)
    spec = make_spec(f"{PY} /workspace/allocate.py 768", roles=[S.Role("master", 1, memory_gb=1)])
    job = submit(alice, spec)

    run_until(Worker(), lambda: status_of(job) == JobStatus.FAILED, what="the OOM kill")

    assert job.replicas.get().reason.startswith("OOMKilled：所有本机任务共用的内存（256.0\xa0MiB")


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        (
            "LOCAL_RESERVED_MEMORY_GB",
            "-1",
            "is a number of GB (0 or more, at most 1000000000), not '-1'",
        ),
        (
            "LOCAL_RESERVED_MEMORY_GB",
            "two",
            "is a number of GB (0 or more, at most 1000000000), not 'two'",
        ),
        ("LOCAL_RESERVED_MEMORY_GB", "1000000", "is less than this machine's memory ("),
        (
            "LOCAL_RESERVED_CPUS",
            "-0.5",
            "is a number of cores (0 or more, at most 1000000000), not '-0.5'",
        ),
        ("LOCAL_RESERVED_CPUS", "100000", "is less than this machine's"),
    ],
)
def test_a_reserve_below_zero_or_past_the_machine_stops_the_start_naming_it(
    tmp_path, variable, value, message
):
    result = manage(tmp_path, "check", **{variable: value})

    assert result.returncode == 1
    assert result.stderr.startswith(f"Configuration error: {variable} {message}")
    assert "Traceback" not in result.stderr


def test_the_default_reserve_is_left_to_the_worker_and_a_set_one_is_read(tmp_path):
    code = "from django.conf import settings as s; print(s.LOCAL_RESERVED_MEMORY_GB)"

    # Unset, the worker takes a tenth of the memory it has (memory_available, reserve_bytes).
    assert manage(tmp_path, "shell", "-c", code).stdout.split()[-1] == "None"
    result = manage(tmp_path, "shell", "-c", code, LOCAL_RESERVED_MEMORY_GB="1.5")
    assert result.stdout.split()[-1] == "1.5"


def test_a_cpu_reserve_below_a_running_replicas_cores_waits_for_the_next_start(
    alice, settings, parent
):
    cores = os.cpu_count() or 1
    spec = make_spec(f"echo ready; {UNTIL_THE_GATE_OPENS}", roles=[S.Role("master", 1, cpu=cores)])
    running = submit(alice, spec)
    worker = Worker()
    run_until(worker, lambda: "ready" in log_text(running, "master-0"), what="the command")
    settings.LOCAL_RESERVED_CPUS = 0.5

    # cgroup v1 refuses a parent's quota below one of its children's: the memory and the
    # weight still hold, and the start line says there is no quota yet.
    restarted = Worker()

    said = restarted.limits.describe()
    assert f"memory {cgroups.gib(restarted.limits.jobs_memory_bytes)} " in said
    if parent.mode == cgroups.MODE_V1:
        assert "no CPU quota" in said
        assert (parent.cpu_root / "cpu.cfs_quota_us").read_text().strip() == "-1"
    open_gate(settings)
    # Ended, and its cgroups gone with its last process.
    run_until(
        restarted,
        lambda: (
            status_of(running) == JobStatus.SUCCEEDED
            and not (parent.cpu_root / running.public_id).exists()
        ),
    )

    # The next start sets it. (gVisor's cgroups may go on refusing it for a moment after the
    # replica's cgroup was removed: a start a little later does.)
    deadline = time.monotonic() + 15
    while "at most" not in (said := Worker().limits.describe()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert f"at most {cores - 0.5:g} cores" in said


HOLD = (
    "import os, time; block = b'x' * (512 << 20); print('allocated', flush=True)\n"
    "while not os.path.exists('/workspace/gate-open'): time.sleep(0.05)\n"
)


def test_a_larger_reserve_while_jobs_use_more_keeps_the_limit_before_until_the_next_start(
    alice, settings, parent
):
    if parent.mode != cgroups.MODE_V1:
        pytest.skip("cgroup v1 only: v2 lowers memory.max at once, reclaiming or OOM-killing")
    (volume(settings) / "hold.py").write_text(HOLD)
    job = submit(alice, make_spec(f"{PY} /workspace/hold.py"))
    worker = Worker()
    run_until(worker, lambda: "allocated" in log_text(job, "master-0"), what="the allocation")
    memory = parent.memory_root
    limit_before = parent_memory_limit(parent)
    swap_before = (memory / "memory.memsw.limit_in_bytes").read_text().strip()
    (parent.cpu_root / "cpu.shares").write_text("1024")

    # Restarted with jobs held to 256 MiB, while this one uses 512 MiB: v1 refuses that limit.
    settings.LOCAL_RESERVED_MEMORY_GB = cgroups.memory_available(parent)[0] / 1024**3 - 0.25
    restarted = Worker()

    # What held before still holds, memory plus swap too, and the CPU weight is set.
    assert parent_memory_limit(parent) == limit_before
    assert (memory / "memory.memsw.limit_in_bytes").read_text().strip() == swap_before
    assert (parent.cpu_root / "cpu.shares").read_text().strip() == "102"
    assert "not held" not in restarted.limits.describe()
    assert restarted.limits.jobs_memory_bytes == limit_before
    open_gate(settings)
    run_until(restarted, lambda: status_of(job) == JobStatus.SUCCEEDED)


def test_a_job_filling_its_dev_shm_past_what_jobs_share_is_oom_killed_too(alice, settings, parent):
    # tmpfs pages are no process's, but are charged to the cgroup of the process that wrote
    # them: the jobs' parent holds them with the rest.
    settings.LOCAL_RESERVED_MEMORY_GB = gib_of_machine() - 0.25
    job = submit(alice, make_spec("head -c 768M /dev/zero > /dev/shm/fill; echo written"))
    worker = Worker()

    run_until(worker, lambda: status_of(job) == JobStatus.FAILED, what="the OOM kill")

    assert job.replicas.get().reason.startswith("OOMKilled：所有本机任务共用的内存（256.0\xa0MiB")
    assert "written" not in log_text(job, "master-0")
    # The sandbox's /dev/shm went with it: the next job has the memory again.
    after = submit(alice, make_spec("head -c 128M /dev/zero > /dev/shm/fill; echo written"))
    run_until(worker, lambda: status_of(after) == JobStatus.SUCCEEDED)


# -- the memory the worker has (a fake cgroup file system: its folders and limit files) ------


def fake_tree(root: Path, mode: str, files: dict[str, str]) -> cgroups.Enforcement:
    """A cgroup hierarchy under `root` as the kernel shows it: `files` maps a folder (relative
    to the mount point, "" for it) to its memory limit file's content; the worker's own cgroup
    is the deepest, and the jobs' parent is made under it, as detect() makes it."""
    name = "memory.max" if mode == cgroups.MODE_V2 else "memory.limit_in_bytes"
    for folder, value in files.items():
        (root / folder).mkdir(parents=True, exist_ok=True)
        (root / folder / name).write_text(f"{value}\n")
    own = root / max(files, key=len)
    jobs = own / cgroups.JOBS_DIR
    jobs.mkdir()
    written = (
        ("memory.max", "memory.swap.max", "cpu.weight", "cpu.max")
        if mode == cgroups.MODE_V2
        else ("memory.limit_in_bytes", "cpu.shares", "cpu.cfs_period_us", "cpu.cfs_quota_us")
    )
    for file in written:
        (jobs / file).write_text("")
    return cgroups.Enforcement(mode, memory_root=jobs, cpu_root=jobs)


GIB = 1024**3
UNLIMITED = {cgroups.MODE_V2: "max", cgroups.MODE_V1: "9223372036854771712"}


@pytest.mark.parametrize("mode", [cgroups.MODE_V2, cgroups.MODE_V1])
def test_a_worker_under_a_memory_limit_holds_its_jobs_to_that_limit_less_the_reserve(
    tmp_path, mode
):
    # The worker's systemd unit (MemoryMax=4G) in a slice without one, on a larger machine.
    found = fake_tree(
        tmp_path,
        mode,
        {
            "": UNLIMITED[mode],
            "system.slice": UNLIMITED[mode],
            "system.slice/console-worker.service": str(4 * GIB),
        },
    )
    assert cgroups.machine_memory_bytes() > 4 * GIB

    held = cgroups.hold_jobs_to_reserve(found, reserved_memory_gb=1.5, reserved_cpus=0)

    name = "memory.max" if mode == cgroups.MODE_V2 else "memory.limit_in_bytes"
    assert (found.memory_root / name).read_text() == str(int(2.5 * GIB))
    assert held.jobs_memory_bytes == int(2.5 * GIB)
    unit = tmp_path / "system.slice/console-worker.service"
    assert f"local jobs together: memory 2.5Gi (of the limit of {unit}, 4Gi)" in held.reserve()


@pytest.mark.parametrize("mode", [cgroups.MODE_V2, cgroups.MODE_V1])
def test_a_job_killed_past_what_jobs_share_is_told_whose_memory_that_was_less_the_reserve(
    tmp_path, mode
):
    """QA 23 follow-up: the reason said "this machine's" memory even where the worker's
    cgroup's limit (its unit's MemoryMax=) was the smaller, and so what jobs shared."""
    under_unit = cgroups.hold_jobs_to_reserve(
        fake_tree(
            tmp_path / "unit",
            mode,
            {"": UNLIMITED[mode], "system.slice/console-worker.service": str(4 * GIB)},
        ),
        reserved_memory_gb=1.5,
        reserved_cpus=0,
    )
    on_machine = cgroups.hold_jobs_to_reserve(
        fake_tree(tmp_path / "machine", mode, {"": UNLIMITED[mode], "worker": UNLIMITED[mode]}),
        reserved_memory_gb=1,
        reserved_cpus=0,
    )
    unit = tmp_path / "unit" / "system.slice/console-worker.service"
    # Measured, so in binary units as the job page's memory (README: sizes).
    machine = binary_size(cgroups.machine_memory_bytes())
    shared = binary_size(cgroups.machine_memory_bytes() - GIB)

    by_unit = cgroups.shared_memory_oom_reason(under_unit)
    by_machine = cgroups.shared_memory_oom_reason(on_machine)

    assert by_unit == (
        f"OOMKilled：所有本机任务共用的内存（2.5\xa0GiB，即任务调度进程（worker）所在 cgroup {unit} 的内存上限 4.0\xa0GiB "
        "减去 LOCAL_RESERVED_MEMORY_GB）已用尽"
    )
    assert by_machine == (
        f"OOMKilled：所有本机任务共用的内存（{shared}，即本机内存 {machine} 减去 "
        "LOCAL_RESERVED_MEMORY_GB）已用尽"
    )
    with translation.override("en"):
        assert display_text(by_unit, source_of(by_unit)) == (
            "OOMKilled: the memory all local jobs share, 2.5\xa0GiB (the memory limit of the "
            f"worker's cgroup {unit}, 4.0\xa0GiB, less LOCAL_RESERVED_MEMORY_GB), ran out"
        )
        assert display_text(by_machine, source_of(by_machine)) == (
            f"OOMKilled: the memory all local jobs share, {shared} (this machine's memory, "
            f"{machine}, less LOCAL_RESERVED_MEMORY_GB), ran out"
        )


def test_a_reason_recorded_in_the_old_words_is_still_said_in_each_language():
    """Replicas killed before the rewording keep their reason, and an English reader still
    reads it in English (its message stays in the catalogue: jobs.texts.REWORDED)."""
    old = recorded(
        "OOMKilled: the memory all local jobs share, %(limit)s (this machine's less "
        "LOCAL_RESERVED_MEMORY_GB), ran out",
        limit="256Mi",
    )
    assert (
        old
        == "OOMKilled：所有本机任务共用的内存（256Mi，本机内存减去 LOCAL_RESERVED_MEMORY_GB）已用尽"
    )
    with translation.override("en"):
        assert display_text(old, source_of(old)).startswith(
            "OOMKilled: the memory all local jobs share, 256Mi (this machine's less"
        )


@pytest.mark.parametrize("mode", [cgroups.MODE_V2, cgroups.MODE_V1])
def test_the_smallest_limit_of_any_ancestor_holds_not_only_the_workers_own(tmp_path, mode):
    # A container's limit (3 GiB) two levels above the worker's unlimited cgroup.
    found = fake_tree(
        tmp_path,
        mode,
        {"": str(3 * GIB), "worker": UNLIMITED[mode], "worker/inner": str(8 * GIB)},
    )

    held = cgroups.hold_jobs_to_reserve(found, reserved_memory_gb=1, reserved_cpus=0)

    assert held.jobs_memory_bytes == 2 * GIB


def test_the_default_reserve_is_a_tenth_of_what_the_worker_has_not_of_the_machine(tmp_path):
    # At least 2 GiB, at most half: of a 4 GiB unit, 2 GiB (half the machine's tenth would be
    # more than the unit has on a machine of 40 GiB or more).
    small = fake_tree(tmp_path / "small", cgroups.MODE_V2, {"": "max", "unit": str(4 * GIB)})
    # 30 GiB: 3 GiB kept.
    large = fake_tree(tmp_path / "large", cgroups.MODE_V2, {"": "max", "unit": str(30 * GIB)})

    assert (
        cgroups.hold_jobs_to_reserve(
            small, reserved_memory_gb=None, reserved_cpus=0
        ).jobs_memory_bytes
        == 2 * GIB
    )
    expected = min(30, cgroups.machine_memory_bytes() / GIB)
    assert cgroups.hold_jobs_to_reserve(
        large, reserved_memory_gb=None, reserved_cpus=0
    ).jobs_memory_bytes == int(expected * GIB) - int(
        round(min(max(2.0, expected / 10), expected / 2), 1) * GIB
    )


def test_a_reserve_not_below_the_workers_limit_leaves_jobs_unheld_and_says_so(tmp_path):
    found = fake_tree(tmp_path, cgroups.MODE_V2, {"": "max", "unit": str(2 * GIB)})
    (found.memory_root / "memory.max").write_text(str(GIB))  # an earlier start's limit

    held = cgroups.hold_jobs_to_reserve(found, reserved_memory_gb=3, reserved_cpus=0)

    assert (found.memory_root / "memory.max").read_text() == "max"
    assert held.jobs_memory_bytes is None
    assert held.reserve() == (
        "local jobs together are not held: LOCAL_RESERVED_MEMORY_GB (3 GB) is not less than "
        f"the memory the worker has, 2Gi ({tmp_path / 'unit'}'s limit)"
    )
    # The CPU weight still holds.
    assert (found.cpu_root / "cpu.weight").read_text() == "10"
