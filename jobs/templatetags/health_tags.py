"""The worker's state on the admin's pages (templates/admin/index.html, the job list), the
platforms whose pools cannot be read, and the console's disks that are full."""

from __future__ import annotations

from typing import Any

from django import template

from jobs.backends import inventory_problems
from jobs.health import KnownWorker, WorkerState, full_disks, known_workers, worker_state
from jobs.review import Unfollowed, unfollowed_jobs

register = template.Library()


@register.simple_tag(takes_context=True)
def worker_health(context: Any) -> WorkerState | None:
    """The worker's heartbeat for staff (one query); None for anyone else (no query)."""
    request = context.get("request")
    user = getattr(request, "user", None)
    if user is None or not user.is_staff:
        return None
    return worker_state()


@register.simple_tag(name="unfollowed_jobs", takes_context=True)
def unfollowed_jobs_tag(context: Any) -> Unfollowed | None:
    """The running or stopping jobs whose platform is not configured, for staff who may see
    jobs (jobs.review.unfollowed_jobs); None for anyone else (no query)."""
    request = context.get("request")
    user = getattr(request, "user", None)
    if user is None or not user.is_staff or not user.has_perm("jobs.view_job"):
        return None
    return unfollowed_jobs()


@register.simple_tag(name="inventory_problems", takes_context=True)
def inventory_problems_tag(context: Any) -> list[str]:
    """Why an enabled platform's pools cannot be read, for staff; none for anyone else (their
    pages ask no platform for it)."""
    request = context.get("request")
    user = getattr(request, "user", None)
    if user is None or not user.is_staff:
        return []
    return inventory_problems()


@register.simple_tag(name="full_disk_notices", takes_context=True)
def full_disk_notices_tag(context: Any) -> list[str]:
    """What staff are told of each full disk of the console's (jobs.health.full_disks: what
    /healthz answers "disk": "full" for); none for anyone else (no look)."""
    request = context.get("request")
    user = getattr(request, "user", None)
    if user is None or not user.is_staff:
        return []
    return [disk.notice() for disk in full_disks()]


@register.simple_tag(name="known_workers", takes_context=True)
def known_workers_tag(context: Any) -> list[KnownWorker]:
    """Every worker seen in the last day, for staff (one query); none for anyone else."""
    request = context.get("request")
    user = getattr(request, "user", None)
    if user is None or not user.is_staff:
        return []
    return known_workers()


@register.filter
def seen_ago(seconds: int) -> str:
    """How long ago a worker was last seen, in the unit a person reads it in: seconds up to two
    minutes, then minutes up to two hours, then hours (the list covers one day). "1655 seconds
    ago" had to be worked out."""
    from django.utils.translation import ngettext

    if seconds < 120:
        return ngettext("%(count)d second ago", "%(count)d seconds ago", seconds) % {
            "count": seconds
        }
    if seconds < 2 * 3600:
        minutes = seconds // 60
        return ngettext("%(count)d minute ago", "%(count)d minutes ago", minutes) % {
            "count": minutes
        }
    hours = seconds // 3600
    return ngettext("%(count)d hour ago", "%(count)d hours ago", hours) % {"count": hours}
