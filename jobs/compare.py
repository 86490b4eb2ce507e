"""Compare jobs (对比任务): 2 to 8 jobs side by side, for people who run one job many times
with other learning rates, batch sizes, cards or images and ask what differed and which did
better.

Decisions:
- Who sees what: the viewer's own jobs, as the job pages; staff who may view jobs
  (`jobs.view_job`, as reviewers) any job, as they do in the admin and on Hang analysis. A
  job the viewer may not see reads as one that does not exist.
- What differs is read by the code the review of a copy uses (jobs.summary.specs_compared),
  not a second differ: the same fields, words and secret masking. The first job is the one
  the others are read against, as a copy is against its source (its command whole, the
  others' as the lines that changed; a secret "changed" where it differs from the first's,
  each column against the first alone, and only between jobs of one owner: see
  jobs.summary.specs_compared for why).
- A queue group's task is compared with its AIHC_GROUP_TASK_INDEX/TOTAL in its envs, as its
  page's request shows it (jobs.runtime_env.shown_request_spec): the group's tasks share one
  stored spec, and its Run again pins them in the new job's envs, so equal runs read equal
  and a group's tasks read their own index. A local queue task of one (every local job the
  API makes) is compared without them, as its page shows its request (review62: the two
  disagreed).
- How they did: each job's training metrics read as its page reads them, bounded
  (jobs.tensorboard.compared_metrics).
- Queries: the jobs (with their owner, queue group and local run) in one, their owners'
  groups in one more where a volume is kept for groups, and the pools' last known names in
  one where a pool is no longer offered: the same however many jobs are compared.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import Group
from django.db.models import Prefetch, QuerySet
from django.utils.translation import gettext as _

from . import spec as S
from .backends.local import host_volumes, job_on_host_network
from .models import Job
from .pools import pool_names, spec_pool_names
from .runtime_env import shown_request_spec
from .summary import ComparedField, specs_compared
from .tensorboard import MetricsComparison, compared_metrics

MIN_COMPARED = 2
# 8: a queue group's sweep (6 learning rates, say) fits on one page. Past 8 the chart's lines
# run out of colours and dash patterns told apart at a glance (console.css), and the first
# look reads each job's event files for up to 0.3 s (jobs.tensorboard.READ_SECONDS): 2.4 s.
MAX_COMPARED = 8
# Ids a comparison's address may carry before it is refused unread (a tampered link): past
# this many no job is looked up.
MAX_ASKED = 100
MAX_ID_LENGTH = 64  # Job.public_id's column


def may_view_any_job(viewer: Any) -> bool:
    """Staff who may view jobs in the admin (reviewers, superusers) compare any job."""
    return bool(viewer.is_staff and viewer.has_perm("jobs.view_job"))


def asked_ids(values: list[str]) -> list[str]:
    """The job ids of a comparison's address, each once, in their order."""
    return list(dict.fromkeys(value for value in values if value))


def looked_up(ids: list[str]) -> list[str]:
    """The ids that may be a job's: a longer one, or one with a NUL (which PostgreSQL refuses
    in a query), is none."""
    return [i for i in ids if len(i) <= MAX_ID_LENGTH and "\x00" not in i]


def jobs_found(*, viewer: Any, ids: list[str]) -> tuple[list[Job], list[str]]:
    """The jobs of `ids` the viewer may see, in the order asked, and the ids that are none (no
    such job, or another user's): one query, with what the comparison reads of each."""
    jobs: QuerySet[Job] = Job.objects.filter(public_id__in=looked_up(ids))
    if not may_view_any_job(viewer):
        jobs = jobs.filter(owner=viewer)
    jobs = jobs.select_related("owner", "group", "local_run")
    if any(volume.restricted for volume in host_volumes()):
        # Whether each owner may still mount the volume its metrics are on: all owners' groups
        # at once, not a query per job.
        jobs = jobs.prefetch_related(Prefetch("owner__groups", queryset=Group.objects.only("name")))
    found = {job.public_id: job for job in jobs}
    return [found[i] for i in ids if i in found], [i for i in ids if i not in found]


def own_jobs_oldest_first(*, owner: Any, ids: list[str]) -> list[str]:
    """Of `ids`, those of `owner`'s jobs, oldest first: the order the job list's Compare puts
    them in (the first is the one the others are read against)."""
    return list(
        Job.objects.filter(owner=owner, public_id__in=looked_up(ids))
        .order_by("created_at", "id")
        .values_list("public_id", flat=True)
    )


def column_names(jobs: list[Job]) -> list[str]:
    """Each column's job as the notes, legends and latest values under the table name it: a
    queue group's task with its place in the group ("qa-grp 2/3"), and a name columns share
    (a job and its Run again copy) with which column it is, the first being the baseline as
    its heading says (qa82: two "qa82-en: no training metrics" read the same)."""
    names = [job.task_name for job in jobs]
    shared = Counter(names)
    return [
        name
        if shared[name] == 1
        else _("%(name)s (baseline)") % {"name": name}
        if column == 0
        else _("%(name)s (column %(column)d)") % {"name": name, "column": column + 1}
        for column, name in enumerate(names)
    ]


@dataclass
class Comparison:
    jobs: list[Job]
    fields: list[ComparedField]  # every field of the specs read, each saying if they differ
    unreadable: list[bool]  # per job: its stored spec cannot be read (its column says so)
    metrics: MetricsComparison
    names: list[str]  # each column's job as the text under the table names it (column_names)

    @property
    def differing(self) -> list[ComparedField]:
        return [field for field in self.fields if field.differs]


def job_comparison(*, jobs: list[Job], log: bool = False) -> Comparison:
    """What differs among the jobs' specs, and their training metrics together (`log`: their
    charts on a log Y axis)."""
    specs: list[S.JobSpec | None] = []
    for job in jobs:
        try:
            specs.append(shown_request_spec(job.job_spec(), job))
        except S.SpecError:
            specs.append(None)
    readable = [spec for spec in specs if spec is not None]
    fields = (
        specs_compared(
            readable,
            pool_names=spec_pool_names(
                names=pool_names(), pool_ids={spec.resource_pool_id for spec in readable}
            ),
            # Secrets compared only among one owner's jobs (staff compare anyone's).
            owners=[
                job.owner_id for job, spec in zip(jobs, specs, strict=True) if spec is not None
            ],
            # Each local job's network as it ran (its local_run is read with it).
            host_networks=[
                job_on_host_network(job)
                for job, spec in zip(jobs, specs, strict=True)
                if spec is not None
            ],
        )
        if readable
        else []
    )
    if len(readable) < len(specs):
        # A job whose spec an older console stored and this one no longer reads: its column
        # says so on every row, and the others are still compared.
        cannot = _("cannot be read")
        fields = [_with_unreadable(field, specs, cannot) for field in fields]
    groups: list[set[str] | None] = [
        {group.name for group in job.owner.groups.all()}
        if "groups" in getattr(job.owner, "_prefetched_objects_cache", {})
        else None
        for job in jobs
    ]
    names = column_names(jobs)
    return Comparison(
        jobs=jobs,
        fields=fields,
        unreadable=[spec is None for spec in specs],
        metrics=compared_metrics(jobs, names=names, owner_groups=groups, log=log),
        names=names,
    )


def _with_unreadable(
    field: ComparedField, specs: list[S.JobSpec | None], cannot: str
) -> ComparedField:
    cells = iter(field.cells)
    shown = [next(cells) if spec is not None else (cannot, True) for spec in specs]
    return ComparedField(
        label=field.label,
        values=[value for value, _changed in shown],
        differs=True,
        changed=[changed for _value, changed in shown],
    )
