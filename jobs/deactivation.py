"""What an account keeps once deactivated (is_active off): its jobs, which run on or wait
(jobs.scheduler's rules), its drafts and its API keys, refused while it is inactive and
working again once it is active (jobs.api_keys.verify_request). Said when a user's page is
saved inactive and on the confirmation page of the user list's *Deactivate selected*
(jobs.admin), from the same counts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .api_keys import usable_keys
from .backends.remote import unsettled_creates
from .models import ACTIVE_STATUSES, JobStatus


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


def account_left(*, user: Any) -> AccountLeft:
    """What `user` keeps if deactivated, or keeps now they are. A Queued job its platform has
    (queued there), or may have (its create got no clear answer: jobs.worker's
    dispatch_remote looks for it, and sends it if none is found), goes on: counted as sent,
    not as waiting (fix105)."""
    running = user.jobs.filter(status__in=ACTIVE_STATUSES).count()
    waiting = user.jobs.filter(status__in=[JobStatus.QUEUED, JobStatus.PENDING_REVIEW])
    remote = waiting.exclude(backend="local")
    sent = remote.exclude(external_id="").count() + len(
        unsettled_creates(remote.filter(status=JobStatus.QUEUED, external_id=""))
    )
    return AccountLeft(
        running=running,
        sent=sent,
        queued=waiting.count() - sent,
        drafts=user.drafts.filter(submitted_at__isnull=True).count(),
        keys=user.api_keys.filter(usable_keys()).count(),
    )
