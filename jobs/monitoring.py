"""What a local job's running replicas use, as its page shows it: CPU, memory and /tmp now,
against the replica's limits, with a small sparkline of each over the last samples; and the
same samples over a span of time, step by step, for the API's job metrics (jobs.api_views).

The samples are the ones each replica's shim writes to its state folder (jobs/shim.py,
UsageMeter and UsageLog), or, for a job on Kubernetes, the ones the worker writes in the same
form from the Metrics API (jobs.backends.kubernetes, usage_file: CPU and memory, no /tmp),
or, for a job on AIHC, the ones the worker writes from AIHC's job metrics API
(jobs.backends.aihc, usage_file: GPU, CPU and memory utilisation in percent, no amounts and
no /tmp; replica_utilisation); only the newest SPARK_POINTS are
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
from django.utils.translation import gettext as _

from .backends import aihc as aihc_backend
from .backends.kubernetes import usage_file
from .logs import ran_elsewhere
from .models import Job, JobReplica, JobStatus, LocalRun
from .runner import replica_state_dir, role_limits
from .shim import merge_samples, read_usage
from .spec import SpecError
from .templatetags.job_tags import elapsed
from .texts import binary_size

SPARK_POINTS = 60  # 15 minutes at the default LOCAL_METRICS_SECONDS
# Running replicas whose usage a job's page shows unless asked for all (`?usage=all`): each
# row is about 3 KB of sparklines, re-sent with every 2-second refresh, so a job of 64 running
# replicas made each refresh 209 KB (QA 56).
USAGE_SHOWN = 16
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
    tmp_measured: bool = True  # False on Kubernetes: the Metrics API has no /tmp figure
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
    if run is None or ran_elsewhere(job.public_id, run.runner):
        # Sampled on the machine it runs on, out of this web server's reach: no table, rather
        # than one saying the first sample comes within seconds.
        return None
    return lambda label: replica_state_dir(job.public_id, run.attempt, label, run.runner) / "usage"


def replica_usage(
    *, job: Job, replicas: list[JobReplica]
) -> list[ReplicaUsage] | list[ReplicaUtilisation] | None:
    """One entry per running replica of a job that runs (an AIHC job's: ReplicaUtilisation);
    None when the job has no usage to
    show (one not running, or a Kubernetes or AIHC one with no sample at all: its cluster has
    no metrics-server, AIHC did not return its metrics, or the first read is still to
    come)."""
    if job.status not in (JobStatus.RUNNING, JobStatus.STOPPING):
        return None
    file_of = usage_files(job)
    if file_of is None:
        return None
    by_worker = job.backend in ("kubernetes", "aihc")  # read by the worker
    if by_worker and not any(file_of(f"{r.role}-{r.index}").exists() for r in replicas):
        return None
    if job.backend == "aihc":  # AIHC gives utilisations, not amounts: their own table
        return replica_utilisation(job=job, replicas=replicas)
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
                    text=_summary(_("Memory"), span, memory, binary_size),
                ),
                # Against what it held at most: the cap (tens of GB) would flatten the line.
                tmp_line=None
                if by_worker
                else sparkline(
                    times, tmp, top=max(tmp), text=_summary("/tmp", span, tmp, binary_size)
                ),
            )
        )
    return found


@dataclass(frozen=True)
class ReplicaUtilisation:
    """An AIHC job's running replica as its page shows it: AIHC's utilisations, in percent as
    AIHC gives them (jobs.backends.aihc: the scale is a decision, unclamped)."""

    label: str
    sampled: bool  # False until the worker has read its first point
    gpu: float | None = None  # None: AIHC gave no GPU figure for its latest point
    cpu: float = 0.0
    memory: float = 0.0
    gpu_line: Sparkline | None = None  # None: no GPU figure at all
    cpu_line: Sparkline | None = None
    memory_line: Sparkline | None = None


def _percent(value: float) -> str:
    return f"{value:.1f}%"


def _utilisation_line(what: str, span: str, samples: list[dict], key: str) -> Sparkline | None:
    """The sparkline of one utilisation over the samples that have it (None: none has)."""
    having = [sample for sample in samples if sample[key] is not None]
    if not having:
        return None
    values = [sample[key] for sample in having]
    # Against 100%, or the highest value when AIHC gives more (nothing is clamped).
    return sparkline(
        [sample["t"] for sample in having],
        values,
        top=max(100.0, *values),
        text=_summary(what, span, values, _percent),
    )


def replica_utilisation(*, job: Job, replicas: list[JobReplica]) -> list[ReplicaUtilisation]:
    """One entry per running replica of a running AIHC job that has samples (the caller,
    replica_usage, has checked the job runs and some replica has a file)."""
    found = []
    for replica in replicas:
        if replica.status != "running":
            continue
        label = f"{replica.role}-{replica.index}"
        samples = aihc_backend.read_utilisation(
            aihc_backend.usage_file(job.public_id, label), last=SPARK_POINTS
        )
        if not samples:
            found.append(ReplicaUtilisation(label=label, sampled=False))
            continue
        times = [sample["t"] for sample in samples]
        span = elapsed(round(times[-1] - times[0] + samples[0]["s"]))

        found.append(
            ReplicaUtilisation(
                label=label,
                sampled=True,
                gpu=samples[-1]["gpu"],
                cpu=samples[-1]["cpu"],
                memory=samples[-1]["mem"],
                gpu_line=_utilisation_line(_("GPU utilisation"), span, samples, "gpu"),
                cpu_line=_utilisation_line(_("CPU utilisation"), span, samples, "cpu"),
                memory_line=_utilisation_line(_("Memory utilisation"), span, samples, "mem"),
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


@dataclass(frozen=True)
class UtilisationPoint:
    time: int  # the start of its step, unix seconds
    gpu: float | None  # percent, averaged over the step; None: AIHC gave none
    cpu: float  # percent, averaged over the step
    memory: float  # percent, the highest in the step


def replica_utilisation_history(
    *, job: Job, start: float | None, end: float | None, step: int
) -> list[tuple[str, list[UtilisationPoint]]]:
    """Each replica of an AIHC job (`<role>-<index>`) with its utilisation from `start` to
    `end`, `step` seconds a point, steps aligned and merged as usage_points does
    (jobs.backends.aihc.merge_utilisation); a replica not yet sampled has none."""
    found = []
    for replica in job.replicas.all():
        label = f"{replica.role}-{replica.index}"
        steps: dict[int, list[dict]] = {}
        for sample in aihc_backend.read_utilisation(aihc_backend.usage_file(job.public_id, label)):
            if (start is None or sample["t"] >= start) and (end is None or sample["t"] <= end):
                steps.setdefault(int(sample["t"] // step) * step, []).append(sample)
        points = []
        for when, group in steps.items():
            merged = aihc_backend.merge_utilisation(group)
            points.append(
                UtilisationPoint(
                    time=when, gpu=merged["gpu"], cpu=merged["cpu"], memory=merged["mem"]
                )
            )
        found.append((label, points))
    return found


def replica_usage_history(
    *, job: Job, start: float | None, end: float | None, step: int
) -> list[tuple[str, list[UsagePoint]]]:
    """Each replica of a local or Kubernetes job (`<role>-<index>`) with what it used from
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
