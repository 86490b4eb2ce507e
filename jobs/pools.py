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

Both read only the jobs the page is about, the running and waiting ones, never every job a
pool ever had (a year's worth: scale review, session 18). Decided: they are found by status
alone (the index job_status_sched, and job_owner_status for the viewer's own), and the pools
the console offers are picked from the grouped rows here. With the pools in the query too,
SQLite (no statistics) read every job of each pool from job_pool_queue and then looked at
its status, and took no index by status and pool instead (tried). Running and waiting jobs
of a pool that is no longer offered are read too, a few rows, and left out here.
"""

from __future__ import annotations

import logging
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db.models import (
    Case,
    Count,
    F,
    IntegerField,
    OuterRef,
    Q,
    Subquery,
    Sum,
    Value,
    When,
    Window,
)
from django.db.models.functions import RowNumber
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from .backends import BackendError, Pool, enabled_backends
from .forms import STORAGE_LABELS, NamedWithId
from .models import ACTIVE_STATUSES, Job, JobStatus, KnownPool
from .quotas import QuotaLine, over_quota_note, quota_lines
from .scheduler import queue_held_notes
from .wizard import Freshness, available_pools, pool_freshness

logger = logging.getLogger(__name__)

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
    # Held by a job the scheduler's next pass cannot start (jobs.scheduler.queue_held_notes,
    # HTML): the idle cards shown are not for the jobs of its priority or lower here.
    held: str = ""

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
    def quota_over_note(self) -> str:
        return over_quota_note(self.quota)

    @property
    def backend_label(self) -> str | Promise:
        return BACKEND_LABELS.get(self.pool.backend, self.pool.backend)

    @property
    def storage_labels(self) -> list[str | Promise]:
        return [STORAGE_LABELS.get(t, t) for t in self.pool.storage_types]


def pools_overview(*, viewer: Any) -> list[PoolOverview]:
    """Every pool the console offers, with its queues' load and the viewer's share of it."""
    pools = available_pools()
    if not pools:
        return []
    running = Q(status__in=ACTIVE_STATUSES)
    waiting = Q(status=JobStatus.QUEUED)
    mine = Q(owner=viewer)
    # Every pool's running and waiting jobs, by status: see the module's docstring.
    jobs = Job.objects.filter(status__in=SHOWN_STATUSES)
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
        if key not in loads:  # a pool the console does not offer (now)
            continue
        load = loads[key].setdefault(queue, QueueLoad(name=queue, offered=False))
        load.running, load.waiting, load.own_running, load.own_waiting, cards = figures
        own_cards[key] = own_cards.get(key, 0) + cards
    for job in _own_jobs_shown(jobs.filter(mine)):
        if (job.backend, job.resource_pool) not in loads:
            continue
        # setdefault: a job submitted between the two queries, to a queue not counted yet.
        queues = loads[(job.backend, job.resource_pool)]
        queues.setdefault(job.queue, QueueLoad(name=job.queue, offered=False)).own_jobs.append(job)
    overview = []
    for pool in pools:
        queues = loads[(pool.backend, pool.id)]
        if pool.next_pass is not None:  # the pass the pool's idle figures are read from
            for name, note in queue_held_notes(pool.next_pass(), viewer_id=viewer.pk).items():
                queues.setdefault(name, QueueLoad(name=name, offered=False)).held = note
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
    """Each queue of `pool` with jobs in it, counted as the page counts them: one query, of
    the jobs of these statuses in every pool (by status, as the page reads them: see the
    module's docstring), grouped, `pool`'s picked here."""
    rows = (
        Job.objects.filter(
            status__in=[*ACTIVE_STATUSES, JobStatus.QUEUED, JobStatus.PENDING_REVIEW],
        )
        .order_by()
        .values_list("backend", "resource_pool", "queue")
        .annotate(
            running=Count("id", filter=Q(status__in=ACTIVE_STATUSES)),
            waiting=Count("id", filter=Q(status=JobStatus.QUEUED)),
            pending_review=Count("id", filter=Q(status=JobStatus.PENDING_REVIEW)),
        )
    )
    return {
        queue: QueueCounts(*figures)
        for backend, pool_id, queue, *figures in rows
        if (backend, pool_id) == (pool.backend, pool.id)
    }


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
        # A queue group's tasks share a name: each says which task it is ("2/3"), as the job
        # list's rows do; the group joined in the same query.
        .select_related("group")
        # Their envs too, for the task a queue task of one runs again (Job.task_place).
        .with_stored_envs()
        .only(
            "public_id",
            "name",
            "status",
            "backend",
            "resource_pool",
            "queue",
            "total_cards",
            "group_index",
            "group__total",
        )
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
    answer names none, and its jobs show their pool's id (or its last known name, KnownPool:
    `pool_labels`)."""
    names: dict[str, str] = {}
    for backend in enabled_backends():
        try:
            names.update(backend.pool_names())
        except BackendError:
            continue
    return names


def unread_backends() -> set[str]:
    """The enabled backends that cannot yet say which pools they offer, because this server
    process has not read their list (AIHC before its first inventory read): a pool of theirs
    that pool_names lacks may well still be offered. No query, no wait."""
    return {backend.name for backend in enabled_backends() if not backend.pool_names_read()}


# -- names that outlive a process: KnownPool -------------------------------------------------


def _printable(text: str) -> str:
    """`text` without control characters (a NUL, an escape sequence, line breaks), stripped.

    Decided here: a pool's name is what AIHC answered, kept as shown, but a control character
    names nothing a person reads; PostgreSQL refuses a NUL, and one pool's name with one in it
    made the write of every pool's name fail, on every read."""
    return "".join(c for c in text if unicodedata.category(c) != "Cc").strip()


def known_pools_keep(*, backend: str, names: dict[str, str]) -> bool:
    """Stores `names` (pool id -> name, as `backend` has just listed them) as the pools' last
    known names: one query, whatever the number of pools. Called by a remote backend when its
    pool list was read and its names differ from what that read last kept (jobs.backends.aihc),
    in the request or worker thread that reads the pools. A pool that is gone keeps its row:
    its jobs still show its last name. A failure (the database busy) is logged and skipped: the
    page that read the pools is not refused for it, and the next read tries again (False)."""
    from django.db import DatabaseError, transaction
    from django.utils import timezone

    now = timezone.now()
    rows = [
        KnownPool(
            pool_id=pool_id,
            backend=backend,
            name=(_printable(name)[:255] or pool_id),
            seen_at=now,
        )
        for pool_id, name in names.items()
        # As Job.resource_pool holds them; an id with a control character is none AIHC makes
        # (and PostgreSQL refuses a NUL in any text: the write of every name failed with it).
        if 0 < len(pool_id) <= 64 and _printable(pool_id) == pool_id
    ]
    if not rows:
        return True
    try:
        with transaction.atomic():
            KnownPool.objects.bulk_create(
                rows,
                update_conflicts=True,
                unique_fields=["pool_id"],
                update_fields=["backend", "name", "seen_at"],
            )
    except DatabaseError as exc:
        logger.warning("The pools' names could not be kept: %s", exc)
        return False
    return True


@dataclass(frozen=True)
class KnownName:
    """A pool's last known name (KnownPool), and its backend's."""

    backend: str
    name: str


@dataclass(frozen=True)
class PoolLabel:
    """How a page names a job's pool: `text` (its id in the title), and whether the console
    offers it now, as far as this process knows (the job page links only such to 资源池)."""

    text: str
    offered: bool


def no_longer_offered(name: str, pool_id: str = "") -> NamedWithId:
    """A pool the console no longer offers, named the one way every page names it: its last
    known name, then its id and the mark in one pair of brackets, the reader's (“旧训练池
    （cce-old，已不再提供）”, “Old pool (cce-old, no longer offered)”); its id alone, marked,
    when no name of it is known. (Its name, then the mark, then the id, each in brackets of
    their own, read “旧训练池（已不再提供） (cce-old)”: full-width, then half-width.)"""
    if not pool_id or name == pool_id:
        return NamedWithId(_("%(pool)s (no longer offered)") % {"pool": name})
    return NamedWithId(_("%(name)s (%(id)s, no longer offered)") % {"name": name, "id": pool_id})


def pool_labels(
    *,
    names: dict[str, str],
    pool_ids: Iterable[str],
    known: dict[str, KnownName | None] | None = None,
) -> dict[str, PoolLabel]:
    """The labels of the pools `pool_ids` (a page's jobs'), by id: a pool offered now by its
    name (`names`: the pools read, or pool_names; labels_by_pool); any other by its last known
    name (KnownPool) when there is one: unmarked while its backend has not listed its pools in
    this process yet (unread_backends: it is most likely still offered, as the full page will
    tell), else marked no longer offered. A pool never seen by name has no label (its id is
    shown). `known`: the names already read with the page's other queries (used_pools);
    otherwise one query reads those of the pools `names` lacks, and none when it lacks none.
    """
    labels = labels_by_pool(names)
    shown = {pool_id: PoolLabel(label, True) for pool_id, label in labels.items()}
    missing = {pool_id for pool_id in pool_ids if pool_id and pool_id not in labels}
    if not missing:
        return shown
    known = dict(known or {})
    # Read unless given (a user with more than USED_POOLS_LISTED pools may lack some).
    if unread_ids := missing - known.keys():
        known.update(
            (pool_id, KnownName(backend, name))
            for pool_id, backend, name in KnownPool.objects.filter(pool_id__in=unread_ids)
            .order_by()
            .values_list("pool_id", "backend", "name")
        )
    unread = unread_backends()
    for pool_id in missing:
        last = known.get(pool_id)
        if last is None:
            continue
        if last.backend in unread:
            shown[pool_id] = PoolLabel(last.name, True)
        else:
            shown[pool_id] = PoolLabel(no_longer_offered(last.name, pool_id), False)
    return shown


def spec_pool_names(*, names: dict[str, str], pool_ids: Iterable[str]) -> dict[str, str]:
    """The names a spec's summary (the admin's job page, the wizard's review and its diff of a
    copy, jobs.summary.spec_sections) shows before a pool's id, by id: a pool offered now by its
    name as `names` has it (the id follows it there, so a name two pools share needs no id of
    its own); any other as the job list names it (pool_labels): by its last known name, marked
    no longer offered once its backend has listed its pools in this process; none for a pool
    never seen by name (its id alone is shown). One query when some pool is not in `names`,
    none otherwise."""
    shown = {pool_id: names[pool_id] for pool_id in pool_ids if pool_id in names}
    if missing := {pool_id for pool_id in pool_ids if pool_id and pool_id not in shown}:
        labels = pool_labels(names={}, pool_ids=missing)
        shown.update((pool_id, label.text) for pool_id, label in labels.items())
    return shown


# At most this many pools the user's jobs ran in are added to the job list's pool filter.
USED_POOLS_LISTED = 200


def used_pools(*, owner: Any) -> dict[str, KnownName | None]:
    """The ids of the pools `owner`'s jobs are in, whatever their status (the job list's pool
    filter adds those no longer offered), with each one's last known name (KnownPool; None:
    never seen by name): one DISTINCT query, answered from the (owner, resource_pool) index
    alone, however many jobs they have, and a lookup by primary key of each distinct pool's
    name; at most USED_POOLS_LISTED."""
    known = KnownPool.objects.filter(pool_id=OuterRef("resource_pool"))
    jobs = Job.objects.filter(owner=owner).exclude(resource_pool="")
    rows = (
        jobs.order_by("resource_pool")
        .values_list(
            "resource_pool",
            Subquery(known.values("backend")[:1]),
            Subquery(known.values("name")[:1]),
        )
        .distinct()
    )
    return {
        pool_id: None if backend is None else KnownName(backend, name)
        for pool_id, backend, name in rows[:USED_POOLS_LISTED]
    }


def pool_filter_choices(
    *, pools: list[Pool], chosen: str, used: dict[str, KnownName | None] | None = None
) -> tuple[list[tuple[str, str]], str]:
    """The job list's 资源池 filter: (value, label) for each pool the console offers, by its
    label (labels_by_pool), then each pool of `used` (the pools the user's jobs are in, with
    their last known names: used_pools) it no longer offers, by its last known name (with its
    id when that name is another pool's too) or else its id, marked "(no longer offered)"
    (unmarked while its backend has not listed its pools in this process: pool_labels), so
    jobs of a pool since removed can still be found; and which value is selected. The value
    sent is the pool's id, so the address keeps it and links made before the select (the
    pools page's, a bookmark) work as they did: letter case and spaces aside (" LOCAL " is
    local). A pool such a link names that is in neither list (a typo, another user's pool)
    is added by its id alone, so the select still says what the list is filtered on."""
    choices: list[tuple[str, str]] = [("", str(_("Any pool")))]
    names = {p.id: p.name for p in pools}
    choices += list(labels_by_pool(names).items())
    offered = {p.id.casefold() for p in pools}
    used = used or {}
    retired = sorted(pool_id for pool_id in used if pool_id.casefold() not in offered)
    last_names = {pool_id: last.name for pool_id in retired if (last := used[pool_id]) is not None}
    labels = labels_by_pool({**names, **last_names})
    unread = unread_backends() if last_names else set()
    for pool_id in retired:
        last = used[pool_id]
        if last is None:
            choices.append((pool_id, no_longer_offered(pool_id)))
        elif last.backend in unread:
            choices.append((pool_id, labels[pool_id]))
        else:
            choices.append((pool_id, no_longer_offered(last.name, pool_id)))
    wanted = chosen.strip()
    values = [value for value, _label in choices[1:]]
    selected = next((v for v in values if v.casefold() == wanted.casefold()), wanted)
    if selected and selected not in values:
        choices.append((selected, selected))
    return choices, selected
