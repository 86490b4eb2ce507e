"""What a local replica uses (CPU, memory, /tmp), sampled by its shim for the job page."""

from __future__ import annotations

import textwrap

import pytest
from django.urls import reverse

from jobs import cgroups
from jobs import spec as S
from jobs.models import JobStatus
from jobs.runner import replica_state_dir
from jobs.shim import USAGE_FULL_SAMPLES, UsageLog, read_usage
from jobs.worker import Worker

from .runner_helpers import (
    PY,
    make_spec,
    open_gate,
    run_until,
    runner_settings,  # noqa: F401
    status_of,
    submit,
    volume,
)
from .test_runner_limits import limits  # noqa: F401

pytestmark = pytest.mark.usefixtures("runner_settings")

MIB = 1024**2
# Holds 300 MiB (every page written), writes 8 MB to /tmp, then keeps one core busy until
# the test opens the gate; writes the CPU seconds it used to /workspace/cpu-used.
BURN = textwrap.dedent(
    """
    import os
    block = b"x" * (300 << 20)
    with open("/tmp/scratch.bin", "wb") as scratch:
        scratch.write(os.urandom(8_000_000))
    print("holding", len(block) >> 20, "MiB", flush=True)
    spins = 0
    while spins % 100_000 or not os.path.exists("/workspace/gate-open"):
        spins += 1
    used = os.times()
    with open("/workspace/cpu-used", "w") as out:
        out.write(str(used.user + used.system))
    """
)


def usage_of(job, label: str = "master-0") -> list[dict]:
    return read_usage(replica_state_dir(job.public_id, 1, label) / "usage")


def run_a_burning_job(alice, alice_client, settings, role: S.Role) -> list[dict]:
    """Runs BURN as the one replica of `role` until its samples show what it holds; checks
    the page shows them while it runs and drops them once it has ended. Its samples then."""
    settings.LOCAL_METRICS_SECONDS = 0.3
    settings.LOCAL_TMP_CHECK_SECONDS = 0.1
    (volume(settings) / "burn.py").write_text(BURN)
    job = submit(alice, make_spec(f"{PY} /workspace/burn.py", roles=[role]))
    worker = Worker()

    def holding() -> bool:
        return len([s for s in usage_of(job) if s["mem"] >= 300 * MIB]) >= 5

    run_until(worker, holding, what="five samples of the replica holding its memory")
    page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()
    polled = alice_client.get(
        reverse("job-live", args=[job.public_id]), headers={"HX-Request": "true"}
    ).content.decode()
    open_gate(settings)
    run_until(worker, lambda: status_of(job) == JobStatus.SUCCEEDED, what="the end")
    ended = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()

    for html in (page, polled):
        row = html.split('id="usage"')[1].split("</tr>")[1]
        assert "master-0" in row and row.count('<svg class="sparkline') == 3
    assert 'id="usage"' not in ended
    return usage_of(job)


def assert_near_what_it_used(settings, samples: list[dict]) -> None:
    # At most one busy core (a shared machine may give it less), and over all samples the
    # CPU time the job says it used, less what its last moments used after the last sample.
    reported = float((volume(settings) / "cpu-used").read_text())
    assert all(0 <= s["cpu"] < 1.3 for s in samples)
    assert 0.5 * reported - 0.4 < sum(s["cpu"] * s["s"] for s in samples) < reported + 0.3
    # Its 300 MiB and the interpreter's own, not the page cache of what it wrote.
    holding = [s for s in samples if s["mem"] >= 300 * MIB]
    assert len(holding) >= 5 and all(s["mem"] < 400 * MIB for s in samples)
    assert 8_000_000 <= holding[-1]["tmp"] < 9 * MIB


def test_a_busy_replica_without_limits_is_sampled_from_its_processes_near_what_it_uses(
    alice, alice_client, settings
):
    samples = run_a_burning_job(alice, alice_client, settings, S.Role("master", 1))

    assert_near_what_it_used(settings, samples)


def test_a_busy_replica_with_limits_is_sampled_from_its_cgroup_near_what_it_uses(
    alice,
    alice_client,
    settings,
    limits,  # noqa: F811
):
    role = S.Role("master", 1, cpu=2, memory_gb=1)

    samples = run_a_burning_job(alice, alice_client, settings, role)

    assert_near_what_it_used(settings, samples)


# A child that leaves the replica's session (setsid, as a daemonising tool does) and keeps one
# core busy until the test opens the gate; its parent waits for it, so until then no process
# of the replica's session has its CPU time. Writes the CPU seconds the child used.
BURN_IN_ITS_OWN_SESSION = textwrap.dedent(
    """
    import os
    pid = os.fork()
    if pid == 0:
        os.setsid()
        print("burning in session", os.getsid(0), flush=True)
        spins = 0
        while spins % 100_000 or not os.path.exists("/workspace/gate-open"):
            spins += 1
        used = os.times()
        with open("/workspace/cpu-used", "w") as out:
            out.write(str(used.user + used.system))
        os._exit(0)
    os.waitpid(pid, 0)
    """
)


def test_cpu_of_a_process_that_left_the_replica_s_session_is_counted_from_its_cgroup(
    alice,
    settings,
    limits,  # noqa: F811
):
    if limits.mode == cgroups.MODE_V1 and not (
        limits.cpuacct_root or (limits.cpu_root and (limits.cpu_root / "cpuacct.usage").exists())
    ):
        pytest.skip("no cpuacct hierarchy the worker can write here")
    settings.LOCAL_METRICS_SECONDS = 0.3
    (volume(settings) / "burn.py").write_text(BURN_IN_ITS_OWN_SESSION)
    job = submit(alice, make_spec(f"{PY} /workspace/burn.py", roles=[S.Role("master", 1, cpu=2)]))
    worker = Worker()

    def counted() -> float:
        return sum(s["cpu"] * s["s"] for s in usage_of(job))

    # Read from /proc, the session's processes would add up to almost nothing.
    run_until(worker, lambda: counted() >= 1.0, what="a second of the child's CPU counted")
    seen = counted()
    open_gate(settings)
    run_until(worker, lambda: status_of(job) == JobStatus.SUCCEEDED, what="the end")

    assert seen <= float((volume(settings) / "cpu-used").read_text()) + 0.3
    if limits.mode == cgroups.MODE_V1 and limits.cpuacct_root:
        # Its cpuacct cgroup went with the job's others.
        assert not (limits.cpuacct_root / job.public_id).exists()


def sample(when: float, *, cpu: float = 1.0, mem: int = 100 * MIB) -> dict:
    return {"t": when, "s": 15.0, "cpu": cpu, "mem": mem, "tmp": 4096}


def test_a_week_of_samples_stays_under_150_kb_keeping_the_last_hour_whole_and_the_peaks(
    tmp_path,
):
    path = tmp_path / "usage"
    log = UsageLog(path)
    start = 1_800_000_000.0
    week = 7 * 24 * 3600 // 15
    written = []
    for n in range(week):
        # An old spike of memory, and CPU that alternates between 0 and 2 cores.
        record = sample(start + n * 15, cpu=2.0 * (n % 2), mem=(900 if n == 1000 else 100) * MIB)
        written.append(record)
        log.append(record)

    kept = read_usage(path)
    assert path.stat().st_size < 150 * 1024
    assert kept[-USAGE_FULL_SAMPLES:] == written[-USAGE_FULL_SAMPLES:]
    assert [r["t"] for r in kept] == sorted(r["t"] for r in kept)
    # The whole week is still there, coarser: its time, its average CPU and its peak.
    assert kept[0]["t"] < start + 24 * 3600
    assert sum(r["s"] for r in kept) == pytest.approx(week * 15)
    assert sum(r["cpu"] * r["s"] for r in kept) == pytest.approx(week * 15, rel=0.001)
    assert max(r["mem"] for r in kept) == 900 * MIB
    assert read_usage(path, last=3) == written[-3:]


def test_a_usage_file_cut_short_or_missing_reads_as_the_samples_it_holds(tmp_path):
    path = tmp_path / "usage"
    assert read_usage(path) == []
    log = UsageLog(path)
    log.append(sample(1.0))
    with open(path, "a") as file:
        file.write('{"t":2.0,"s":15')  # a full disk cut the last line

    assert read_usage(path) == [sample(1.0)]
    assert read_usage(path, last=5) == [sample(1.0)]
