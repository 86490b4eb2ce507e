"""Small display helpers for job pages."""

from __future__ import annotations

from typing import Any

from django import template
from django.forms import BoundField
from django.utils import timezone

register = template.Library()

STATUS_CLASSES = {
    "pending_review": "text-bg-warning",
    "queued": "text-bg-secondary",
    "submitting": "text-bg-info",
    "running": "text-bg-primary",
    "stopping": "text-bg-warning",
    "succeeded": "text-bg-success",
    "failed": "text-bg-danger",
    "submit_failed": "text-bg-danger",
    "timed_out": "text-bg-danger",
    "rejected": "text-bg-danger",
    "stopped": "text-bg-dark",
}


@register.filter
def status_class(status: str) -> str:
    return STATUS_CLASSES.get(status, "text-bg-light")


@register.filter
def duration(job: Any) -> str:
    """How long the job has run: start to finish, or to now while it runs."""
    if job.started_at is None:
        return "–"
    end = job.finished_at or timezone.now()
    seconds = max(int((end - job.started_at).total_seconds()), 0)
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes}m"
    if minutes:
        return f"{minutes}m {seconds}s"
    return f"{seconds}s"


@register.filter
def marked_invalid(field: BoundField) -> str:
    """A row-table cell's input with Bootstrap's red outline (is-invalid), as crispy gives the
    fields it renders; Django already points aria-describedby at the cell's `<id>_error`."""
    existing = field.field.widget.attrs.get("class", "")
    return field.as_widget(attrs={"class": f"{existing} is-invalid".strip()})
