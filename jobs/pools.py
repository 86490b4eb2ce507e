"""The resource pools page (资源池): each pool the console offers, its queues and their load.

Pools are read as the wizard and the AIHC-compatible API read them (`jobs.wizard.
available_pools`): a remote backend's figures come from its cached inventory, refreshed in
the background, so however often the page polls, AIHC or a Kubernetes API server is asked no
more often than their cache allows.

What a queue's figures count (README "Resource pools"):
- running: every user's jobs that hold cards or are about to (Submitting, Running,
  Stopping: `ACTIVE_STATUSES`, what the local scheduler counts as busy);
- waiting: every user's Queued jobs (a job Pending review waits for a reviewer, not for
  cards, and is not in the queue yet).
Other users' jobs are numbers only; the viewer's own are listed, a few per queue.

Two queries whatever the number of jobs and queues: one aggregate of every pool's queues,
one of the viewer's own jobs (at most OWN_JOBS_SHOWN per queue, picked by the database);
and for the local pool the viewer's quota (jobs.quotas), with one more for what their
running jobs hold of it when they have one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db.models import Case, Count, F, IntegerField, Q, Sum, Value, When, Window
from django.db.models.functions import RowNumber
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from .backends import BackendError, Pool, enabled_backends
from .forms import STORAGE_LABELS
from .models import ACTIVE_STATUSES, Job, JobStatus
from .quotas import QuotaLine, quota_lines
from .wizard import Freshness, available_pools, pool_freshness

# The viewer's own jobs listed per queue; the rest are counted, with a link to the job list.
OWN_JOBS_SHOWN = 5
SHOWN_STATUSES = frozenset({*ACTIVE_STATUSES, JobStatus.QUEUED})
BACKEND_LABELS: dict[str, str | Promise] = {
    "local": _("Local runner"),
    "aihc": "AIHC",
    "kubernetes": "Kubernetes",
}


@dataclass
class QueueLoad:
    name: str
    running: int = 0  # every user's
    waiting: int = 0
    own_running: int = 0
    own_waiting: int = 0
    # The viewer's running jobs first, then the waiting ones, oldest first in each.
    own_jobs: list[Job] = field(default_factory=list)
    # False for a queue the pool no longer offers that still has jobs: they are counted too.
    offered: bool = True

    @property
    def own_more(self) -> int:
        """The viewer's jobs here that are counted but not listed."""
        return max(self.own_running + self.own_waiting - len(self.own_jobs), 0)


@dataclass
class PoolOverview:
    pool: Pool
    freshness: Freshness | None
    queues: list[QueueLoad]
    own_cards: int  # held by the viewer's running jobs in this pool
    # The viewer's quota here and what they hold of it: the local pool's only (a remote
    # platform keeps its own quotas); empty when none applies to them.
    quota: list[QuotaLine] = field(default_factory=list)

    @property
    def backend_label(self) -> str | Promise:
        return BACKEND_LABELS.get(self.pool.backend, self.pool.backend)

    @property
    def storage_labels(self) -> list[str | Promise]:
        return [STORAGE_LABELS.get(t, t) for t in self.pool.storage_types]


def _in_pools(pools: list[Pool]) -> Q:
    """Jobs of these pools; a pool id is its backend's (jobs name both)."""
    where = Q(pk__in=[])
    for pool in pools:
        where |= Q(backend=pool.backend, resource_pool=pool.id)
    return where


def pools_overview(*, viewer: Any) -> list[PoolOverview]:
    """Every pool the console offers, with its queues' load and the viewer's share of it."""
    pools = available_pools()
    if not pools:
        return []
    running = Q(status__in=ACTIVE_STATUSES)
    waiting = Q(status=JobStatus.QUEUED)
    mine = Q(owner=viewer)
    jobs = Job.objects.filter(_in_pools(pools), status__in=SHOWN_STATUSES)
    totals = (
        jobs.order_by()
        .values_list("backend", "resource_pool", "queue")
        .annotate(
            running=Count("id", filter=running),
            waiting=Count("id", filter=waiting),
            own_running=Count("id", filter=mine & running),
            own_waiting=Count("id", filter=mine & waiting),
            own_cards=Sum("total_cards", filter=mine & running, default=0),
        )
    )
    loads: dict[tuple[str, str], dict[str, QueueLoad]] = {
        (pool.backend, pool.id): {name: QueueLoad(name=name) for name in pool.queues}
        for pool in pools
    }
    own_cards: dict[tuple[str, str], int] = {}
    for backend, pool_id, queue, *figures in totals:
        key = (backend, pool_id)
        load = loads[key].setdefault(queue, QueueLoad(name=queue, offered=False))
        load.running, load.waiting, load.own_running, load.own_waiting, cards = figures
        own_cards[key] = own_cards.get(key, 0) + cards
    for job in _own_jobs_shown(jobs.filter(mine)):
        # setdefault: a job submitted between the two queries, to a queue not counted yet.
        queues = loads[(job.backend, job.resource_pool)]
        queues.setdefault(job.queue, QueueLoad(name=job.queue, offered=False)).own_jobs.append(job)
    overview = []
    for pool in pools:
        queues = loads[(pool.backend, pool.id)]
        offered = [queues[name] for name in dict.fromkeys(pool.queues)]
        others = sorted((q for q in queues.values() if not q.offered), key=lambda q: q.name)
        overview.append(
            PoolOverview(
                pool=pool,
                freshness=pool_freshness(pool),
                queues=[*offered, *others],
                own_cards=own_cards.get((pool.backend, pool.id), 0),
                quota=quota_lines(viewer) if pool.backend == "local" else [],
            )
        )
    return overview


@dataclass(frozen=True)
class QueueCounts:
    """Every user's jobs in a queue, as numbers (what the API's queue objects report)."""

    running: int = 0  # holding cards or about to (ACTIVE_STATUSES)
    waiting: int = 0  # Queued: admitted, waiting for cards
    pending_review: int = 0  # waiting for a reviewer, not in the queue yet


def queue_counts(*, pool: Pool) -> dict[str, QueueCounts]:
    """Each queue of `pool` with jobs in it, counted as the page counts them: one query."""
    rows = (
        Job.objects.filter(
            backend=pool.backend,
            resource_pool=pool.id,
            status__in=[*ACTIVE_STATUSES, JobStatus.QUEUED, JobStatus.PENDING_REVIEW],
        )
        .order_by()
        .values_list("queue")
        .annotate(
            running=Count("id", filter=Q(status__in=ACTIVE_STATUSES)),
            waiting=Count("id", filter=Q(status=JobStatus.QUEUED)),
            pending_review=Count("id", filter=Q(status=JobStatus.PENDING_REVIEW)),
        )
    )
    return {queue: QueueCounts(*figures) for queue, *figures in rows}


def _own_jobs_shown(own: Any) -> list[Job]:
    """The first OWN_JOBS_SHOWN of the viewer's jobs in each queue, in one query."""
    running_first = Case(
        When(status__in=ACTIVE_STATUSES, then=Value(0)),
        default=Value(1),
        output_field=IntegerField(),
    )
    return list(
        own.annotate(
            place=Window(
                RowNumber(),
                partition_by=[F("backend"), F("resource_pool"), F("queue")],
                order_by=[running_first.asc(), F("created_at").asc(), F("id").asc()],
            )
        )
        .filter(place__lte=OWN_JOBS_SHOWN)
        .order_by("place")
        .only("public_id", "name", "status", "backend", "resource_pool", "queue", "total_cards")
    )


def labels_by_pool(names: dict[str, str]) -> dict[str, str]:
    """Each pool's label by its id, as the pools page and the wizard name it (本机 Local), with
    its id when two pools share a name, so each can be told apart."""
    taken = list(names.values())
    return {
        pool_id: name if taken.count(name) == 1 else f"{name} ({pool_id})"
        for pool_id, name in names.items()
    }


def pool_names() -> dict[str, str]:
    """The names of the pools the console offers now, by id, without the figures
    `available_pools` reads: no query, no remote call, no wait (each backend's `pool_names`).
    For the job list's refresh every 3 seconds and the admin's list; a backend that cannot
    answer names none, and its jobs show their pool's id."""
    names: dict[str, str] = {}
    for backend in enabled_backends():
        try:
            names.update(backend.pool_names())
        except BackendError:
            continue
    return names


# At most this many pools the user's jobs ran in are added to the job list's pool filter.
USED_POOLS_LISTED = 200


def used_pools(*, owner: Any) -> list[str]:
    """The ids of the pools `owner`'s jobs are in, whatever their status (the job list's pool
    filter adds those no longer offered): one DISTINCT query, answered from the (owner,
    resource_pool) index alone, however many jobs they have; at most USED_POOLS_LISTED."""
    jobs = Job.objects.filter(owner=owner).exclude(resource_pool="")
    ids = jobs.order_by("resource_pool").values_list("resource_pool", flat=True).distinct()
    return list(ids[:USED_POOLS_LISTED])


def pool_filter_choices(
    *, pools: list[Pool], chosen: str, used: list[str] | None = None
) -> tuple[list[tuple[str, str]], str]:
    """The job list's 资源池 filter: (value, label) for each pool the console offers, by its
    label (labels_by_pool), then each pool of `used` (the pools the user's jobs are in,
    used_pools) it no longer offers, by its id marked "(no longer offered)", so jobs of a
    pool since removed can still be found; and which value is selected. The value sent is
    the pool's id, so the address keeps it and links made before the select (the pools
    page's, a bookmark) work as they did: letter case and spaces aside (" LOCAL " is local).
    A pool such a link names that is in neither list (a typo, another user's pool) is added
    by its id alone, so the select still says what the list is filtered on."""
    choices: list[tuple[str, str]] = [("", str(_("Any pool")))]
    choices += list(labels_by_pool({p.id: p.name for p in pools}).items())
    offered = {p.id.casefold() for p in pools}
    for pool_id in sorted({u for u in used or [] if u.casefold() not in offered}):
        choices.append((pool_id, str(_("%(id)s (no longer offered)") % {"id": pool_id})))
    wanted = chosen.strip()
    values = [value for value, _label in choices[1:]]
    selected = next((v for v in values if v.casefold() == wanted.casefold()), wanted)
    if selected and selected not in values:
        choices.append((selected, selected))
    return choices, selected
