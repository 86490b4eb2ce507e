"""The admin's reminder of the reviews waiting (templates/admin/base_site.html)."""

from __future__ import annotations

from typing import Any

from django import template

from jobs.models import Job, JobStatus

register = template.Library()


@register.simple_tag(takes_context=True)
def pending_reviews(context: Any) -> int | None:
    """How many jobs wait for a reviewer; None for a user who cannot review (no query)."""
    request = context.get("request")
    user = getattr(request, "user", None)
    if user is None or not user.has_perm("jobs.review_job"):
        return None
    return Job.objects.filter(status=JobStatus.PENDING_REVIEW).count()
