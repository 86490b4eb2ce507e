"""Which queued local jobs start now, and where a waiting job stands in its queue.

Rules (decisions):
- Per queue, jobs are taken by priority (high > normal > low), then first come first
  served. The first job of a queue that does not fit blocks the rest of that queue for this
  pass (no back-filling), so a large job is not starved by a stream of small ones. Other
  queues still use what is left.
- A task of a queue group is skipped (without blocking its queue) while the group already
  runs `concurrency` tasks.
- A job that could never fit the pool (more cards than exist) fails at once instead of
  blocking its queue forever.
- Cards are counted per type and never over-allocated; at most LOCAL_MAX_RUNNING_JOBS
  local jobs run at once; a CPU-exclusive job needs cores no other running job may use.
- Jobs Pending review are never dispatched: only Queued jobs are considered.
- No job starts while the disk of LOCAL_RUN_DIR has less than LOCAL_DISK_MIN_FREE_GB free
  (the kubelet's disk pressure): each job that would start now says so, once, and blocks
  its queue until there is room.
- A job whose start would put its owner over their card quota (jobs.quotas) is set aside,
  saying why, once: it does not block its queue (Kueue's BestEffortFIFO), so other users'
  jobs behind it, and its owner's smaller ones that fit, start. It starts by itself once
  its owner's jobs hold little enough.
"""

from __future__ import annotations

from collections import Counter

from django.db.models import Case, Count, IntegerField, Q, Value, When

from .models import ACTIVE_STATUSES, Job, JobGroup, JobStatus
from .quotas import Limit, Usage, excesses, local_usage, quota_limits, waiting_message
from .services import job_transition

PRIORITY_RANK = Case(
    When(priority="high", then=Value(0)),
    When(priority="normal", then=Value(1)),
    default=Value(2),
    output_field=IntegerField(),
)
RANKS = {"high": 0, "normal": 1}


def dispatch_local(*, children: dict | None = None) -> list[Job]:
    """One scheduling pass over the queued local jobs; returns the jobs it started."""
    from .runner import (
        current_capacity,
        disk_pressure_message,
        held_for,
        held_for_disk,
        requirement,
        run_dir_disk,
        start_job,
    )

    capacity = current_capacity()
    held: str | None = None  # why no job may start for want of disk space
    disk_measured = False
    group_running: Counter[int] = Counter(
        dict(
            Job.objects.filter(group__isnull=False, status__in=ACTIVE_STATUSES)
            .values_list("group")
            .annotate(n=Count("id"))
            .values_list("group", "n")
        )
    )
    group_caps: dict[int, int] = {}
    usage = local_usage()  # per owner, kept current as this pass starts jobs
    limits: dict[int, list[Limit]] = {}  # per owner, read when one of their jobs comes up
    blocked: set[str] = set()
    started: list[Job] = []
    rows = (
        Job.objects.filter(backend="local", status=JobStatus.QUEUED)
        .annotate(rank=PRIORITY_RANK)
        .order_by("queue", "rank", "created_at", "id")
        .values_list("id", "queue", "group_id", "owner_id")
    )
    for job_id, queue, group_id, owner_id in rows.iterator(chunk_size=2000):
        if queue in blocked:
            continue
        if group_id is not None:
            if group_id not in group_caps:
                group_caps[group_id] = (
                    JobGroup.objects.filter(pk=group_id)
                    .values_list("concurrency", flat=True)
                    .first()
                    or 1
                )
            if group_running[group_id] >= group_caps[group_id]:
                continue
        job = Job.objects.filter(pk=job_id, status=JobStatus.QUEUED).first()
        if job is None:
            continue
        need = requirement(job.job_spec())
        impossible = capacity.impossible(need)
        if impossible:
            job_transition(job=job, to=JobStatus.FAILED, reason="Unschedulable", message=impossible)
            continue
        if owner_id not in limits:
            limits[owner_id] = quota_limits(owner_id)
        over = excesses(limits[owner_id], usage.get(owner_id, Usage()), need.cards)
        if over:
            # Not added to `blocked`: the queue goes on past it (see the rules above).
            held_for(job, "QuotaExceeded", waiting_message(over[0]))
            continue
        allocation = capacity.allocate(need)
        if allocation is None:
            blocked.add(queue)
            continue
        if not disk_measured:  # once a pass, and only when a job would start
            held, disk_measured = disk_pressure_message(run_dir_disk()), True
        if held:
            # It keeps its place (and what it was allocated this pass, so the jobs said to
            # wait for disk are those that would start now): it starts once there is room.
            held_for_disk(job, held)
            blocked.add(queue)
            continue
        if start_job(job, allocation, children=children):
            started.append(job)
            usage.setdefault(owner_id, Usage()).add(need.cards)
            if group_id is not None:
                group_running[group_id] += 1
    return started


def queue_position(job: Job) -> int | None:
    """1 for the next job of its pool and queue to start, 2 for the one after...

    Only the local runner's order is ours to tell: a remote platform queues a job by its
    own rules, and a job not sent yet goes out at once."""
    if job.status != JobStatus.QUEUED or job.backend != "local":
        return None
    rank = RANKS.get(job.priority, 2)
    ahead = (
        Job.objects.filter(
            backend=job.backend,
            resource_pool=job.resource_pool,
            queue=job.queue,
            status=JobStatus.QUEUED,
        )
        .annotate(rank=PRIORITY_RANK)
        .filter(
            Q(rank__lt=rank)
            | Q(rank=rank, created_at__lt=job.created_at)
            | Q(rank=rank, created_at=job.created_at, id__lt=job.pk)
        )
        .count()
    )
    return ahead + 1
