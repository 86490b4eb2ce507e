"""What a local job's running replicas use, as its page shows it: CPU, memory and /tmp now,
against the replica's limits, with a small sparkline of each over the last samples; and the
same samples over a span of time, step by step, for the API's job metrics (jobs.api_views).

The samples are the ones each replica's shim writes to its state folder (jobs/shim.py,
UsageMeter and UsageLog), or, for a job on Kubernetes, the ones the worker writes in the same
form from the Metrics API (jobs.backends.kubernetes, usage_file: CPU and memory, no /tmp),
or, for a job on AIHC, the ones the worker writes from AIHC's job metrics API
(jobs.backends.aihc, usage_file: CPU and memory, no /tmp); only the newest SPARK_POINTS are
read, from the end of the file, so the page's two-second poll costs a small read per replica.
Kubernetes jobs on a cluster without metrics-server have no such files: their page has no
usage section. An AIHC job whose usage AIHC did not return says so, and why
(usage_unavailable).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.template.defaultfilters import filesizeformat
from django.utils.translation import gettext as _

from .backends import aihc as aihc_backend
from .backends.kubernetes import usage_file
from .logs import ran_elsewhere
from .models import Job, JobReplica, JobStatus, LocalRun
from .runner import replica_state_dir, role_limits
from .shim import merge_samples, read_usage
from .spec import SpecError
from .templatetags.job_tags import elapsed

SPARK_POINTS = 60  # 15 minutes at the default LOCAL_METRICS_SECONDS
SPARK_WIDTH = 120
SPARK_HEIGHT = 24


@dataclass(frozen=True)
class Sparkline:
    points: str  # an SVG polyline's points, in a SPARK_WIDTH x SPARK_HEIGHT box
    text: str  # its text alternative: the span it covers, its lowest, highest and latest


@dataclass(frozen=True)
class ReplicaUsage:
    label: str
    sampled: bool  # False until the shim has taken its first sample
    cpu: float = 0.0  # cores
    cpu_limit: int | None = None  # cores; None: no limit
    memory: int = 0  # bytes
    memory_limit: int | None = None
    tmp: int = 0  # bytes
    tmp_limit: int = 0
    tmp_measured: bool = True  # False on Kubernetes and AIHC: their metrics have no /tmp
    platform: str = ""  # where it runs when /tmp is not measured: "Kubernetes" or "AIHC"
    cpu_line: Sparkline | None = None
    memory_line: Sparkline | None = None
    tmp_line: Sparkline | None = None


def sparkline(times: list[float], values: list[float], *, top: float, text: str) -> Sparkline:
    """The values drawn over their times, 0 at the bottom and `top` at the top."""
    first, last = times[0], times[-1]
    top = top or 1
    points = []
    for when, value in zip(times, values, strict=True):
        x = (when - first) / (last - first) * SPARK_WIDTH if last > first else 0
        y = SPARK_HEIGHT - 1 - min(value / top, 1) * (SPARK_HEIGHT - 2)
        points.append(f"{x:.1f},{y:.1f}")
    if len(points) == 1:  # one sample: a level line, as a polyline of one point draws nothing
        points.append(f"{SPARK_WIDTH},{points[0].split(',')[1]}")
    return Sparkline(points=" ".join(points), text=text)


def _summary(what: str, span: str, values: list[float], shown: Callable[[float], str]) -> str:
    """A sparkline's text alternative: what it draws, over how long, lowest, highest, now."""
    return _("%(what)s over the last %(span)s: lowest %(low)s, highest %(high)s, now %(now)s") % {
        "what": what,
        "span": span,
        "low": shown(min(values)),
        "high": shown(max(values)),
        "now": shown(values[-1]),
    }


def _cores(value: float) -> str:
    return _("%(cores)s cores") % {"cores": f"{value:.2f}"}


def usage_files(job: Job) -> Callable[[str], Path] | None:
    """Where the samples of the job's replica `<role>-<index>` are (its current attempt's, for
    a local job); None for a job nothing samples (a local one not started, or one run
    elsewhere)."""
    if job.backend == "kubernetes":
        return lambda label: usage_file(job.public_id, label)
    if job.backend == "aihc":
        return lambda label: aihc_backend.usage_file(job.public_id, label)
    if job.backend != "local":
        return None
    run = LocalRun.objects.filter(job=job).only("attempt", "runner").first()
    if run is None or ran_elsewhere(run.runner):
        # Sampled on the machine it runs on, out of this web server's reach: no table, rather
        # than one saying the first sample comes within seconds.
        return None
    return lambda label: replica_state_dir(job.public_id, run.attempt, label, run.runner) / "usage"


def replica_usage(*, job: Job, replicas: list[JobReplica]) -> list[ReplicaUsage] | None:
    """One entry per running replica of a job that runs; None when the job has no usage to
    show (one not running, or a Kubernetes or AIHC one with no sample at all: its cluster has
    no metrics-server, AIHC did not return its metrics, or the first read is still to
    come)."""
    if job.status not in (JobStatus.RUNNING, JobStatus.STOPPING):
        return None
    file_of = usage_files(job)
    if file_of is None:
        return None
    platform = {"kubernetes": "Kubernetes", "aihc": "AIHC"}.get(job.backend, "")
    by_worker = bool(platform)  # read by the worker: CPU and memory, no /tmp
    if by_worker and not any(file_of(f"{r.role}-{r.index}").exists() for r in replicas):
        return None
    try:
        roles = {role.name: role for role in job.job_spec().roles}
    except SpecError:  # an old spec: usage still shows, without limits
        roles = {}
    tmp_limit = int(settings.LOCAL_TMP_MAX_GB * 1024**3)
    found = []
    for replica in replicas:
        if replica.status != "running":
            continue
        label = f"{replica.role}-{replica.index}"
        samples = read_usage(file_of(label), last=SPARK_POINTS)
        if not samples:
            found.append(ReplicaUsage(label=label, sampled=False))
            continue
        memory_limit, cpu_limit = (
            role_limits(roles[replica.role]) if replica.role in roles else (None, None)
        )
        times = [sample["t"] for sample in samples]
        span = elapsed(round(times[-1] - times[0] + samples[0]["s"]))
        cpu = [sample["cpu"] for sample in samples]
        memory = [sample["mem"] for sample in samples]
        tmp = [sample["tmp"] for sample in samples]
        found.append(
            ReplicaUsage(
                label=label,
                sampled=True,
                cpu=cpu[-1],
                cpu_limit=cpu_limit,
                memory=memory[-1],
                memory_limit=memory_limit,
                tmp=tmp[-1],
                tmp_limit=tmp_limit,
                tmp_measured=not by_worker,
                platform=platform,
                cpu_line=sparkline(
                    times,
                    cpu,
                    top=max(cpu_limit or 0, *cpu),
                    text=_summary(_("CPU"), span, cpu, _cores),
                ),
                memory_line=sparkline(
                    times,
                    memory,
                    top=max(memory_limit or 0, *memory),
                    text=_summary(_("Memory"), span, memory, filesizeformat),
                ),
                # Against what it held at most: the cap (tens of GB) would flatten the line.
                tmp_line=None
                if by_worker
                else sparkline(
                    times, tmp, top=max(tmp), text=_summary("/tmp", span, tmp, filesizeformat)
                ),
            )
        )
    return found


def usage_unavailable(job: Job) -> str | None:
    """Why a running AIHC job's usage is not shown up to date: the error of the worker's last
    read, when it failed (AIHC refused it, did not answer, or is unreachable); else None."""
    if job.backend != "aihc" or job.status not in (JobStatus.RUNNING, JobStatus.STOPPING):
        return None
    return aihc_backend.usage_unavailable(job.public_id)


@dataclass(frozen=True)
class UsagePoint:
    time: int  # the start of its step, unix seconds
    cpu: float  # cores, averaged over the step
    memory: int  # bytes, the most held in the step
    tmp: int  # bytes, the most held in the step


def usage_points(
    samples: list[dict], *, start: float | None, end: float | None, step: int
) -> list[UsagePoint]:
    """`samples` (a usage file's, oldest first) taken from `start` to `end` (unix seconds,
    either end open when None), one point per `step` seconds that has any, merged as the file
    merges its old samples (shim.merge_samples: CPU averaged, memory and /tmp at their peak).
    Steps are aligned on multiples of `step`, so the same step asked twice gives the same
    points as the file grows."""
    steps: dict[int, list[dict]] = {}
    for sample in samples:
        if (start is None or sample["t"] >= start) and (end is None or sample["t"] <= end):
            steps.setdefault(int(sample["t"] // step) * step, []).append(sample)
    points = []
    for when, group in steps.items():
        merged = merge_samples(group)
        points.append(
            UsagePoint(time=when, cpu=merged["cpu"], memory=merged["mem"], tmp=merged["tmp"])
        )
    return points


def replica_usage_history(
    *, job: Job, start: float | None, end: float | None, step: int
) -> list[tuple[str, list[UsagePoint]]]:
    """Each replica of a local, Kubernetes or AIHC job (`<role>-<index>`) with what it used from
    `start` to `end` (a local job's: in its current attempt), `step` seconds a point
    (usage_points); a replica not yet sampled has none. Unlike the page's table, a replica
    that has ended keeps its history: its file stays until the job is deleted."""
    file_of = usage_files(job)
    found = []
    for replica in job.replicas.all():
        label = f"{replica.role}-{replica.index}"
        samples = read_usage(file_of(label)) if file_of is not None else []
        found.append((label, usage_points(samples, start=start, end=end, step=step)))
    return found
