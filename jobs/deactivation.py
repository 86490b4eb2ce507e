"""What an account keeps once deactivated (is_active off): its jobs, which run on or wait
(jobs.scheduler's rules), its drafts and its API keys, refused while it is inactive and
working again once it is active (jobs.api_keys.verify_request). Said when a user's page is
saved inactive and on the confirmation page of the user list's *Deactivate selected*
(jobs.admin), from the same counts."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Q, QuerySet

from .api_keys import usable_keys
from .backends.remote import unsettled_creates
from .models import ACTIVE_STATUSES, ApiKey, Draft, Job, JobStatus


@dataclass(frozen=True)
class AccountLeft:
    """What an account has that its deactivation does not end."""

    running: int  # jobs running (or starting, stopping): they go on
    sent: int  # queued jobs their platform has, or may have: it starts them in their turn
    queued: int  # queued jobs (or awaiting review) that wait until the account is active
    drafts: int  # drafts not submitted
    keys: int  # API keys that still sign (refused while the account is inactive)

    @property
    def jobs(self) -> int:
        return self.running + self.sent + self.queued


def accounts_left(*, users: Iterable[Any]) -> dict[int, AccountLeft]:
    """Per user id, what each of `users` keeps if deactivated, or keeps now they are. A Queued
    job its platform has (queued there), or may have (its create got no clear answer:
    jobs.worker's dispatch_remote looks for it, and sends it if none is found), goes on:
    counted as sent, not as waiting (fix105). Counted by owner in a handful of queries
    whatever the number of users (review67: one user at a time cost ~6 queries each, 6,009
    for the confirmation page of 1,000), and those of the unsettled creates' checks."""
    ids = [getattr(user, "pk", user) for user in users]
    waiting = Q(status__in=[JobStatus.QUEUED, JobStatus.PENDING_REVIEW])
    remote = waiting & ~Q(backend="local")
    jobs = {
        owner_id: (running, queued, sent)
        for owner_id, running, queued, sent in Job.objects.filter(owner_id__in=ids)
        .order_by()
        .values("owner_id")
        .annotate(
            running=Count("pk", filter=Q(status__in=ACTIVE_STATUSES)),
            waiting=Count("pk", filter=waiting),
            sent=Count("pk", filter=remote & ~Q(external_id="")),
        )
        .values_list("owner_id", "running", "waiting", "sent")
    }
    unsettled = unsettled_creates(
        Job.objects.filter(owner_id__in=ids, status=JobStatus.QUEUED, external_id="").exclude(
            backend="local"
        )
    )
    maybe_sent = Counter(
        Job.objects.filter(pk__in=unsettled).values_list("owner_id", flat=True) if unsettled else []
    )
    drafts = _counts_by_owner(Draft.objects.filter(owner_id__in=ids, submitted_at__isnull=True))
    keys = _counts_by_owner(ApiKey.objects.filter(usable_keys(), owner_id__in=ids))
    left = {}
    for user_id in ids:
        running, waiting_jobs, sent = jobs.get(user_id, (0, 0, 0))
        sent += maybe_sent[user_id]
        left[user_id] = AccountLeft(
            running=running,
            sent=sent,
            queued=waiting_jobs - sent,
            drafts=drafts.get(user_id, 0),
            keys=keys.get(user_id, 0),
        )
    return left


def _counts_by_owner(rows: QuerySet) -> dict[int, int]:
    return dict(
        rows.order_by().values("owner_id").annotate(n=Count("pk")).values_list("owner_id", "n")
    )
