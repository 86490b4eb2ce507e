"""The admin's reminder of the reviews waiting (templates/admin/base_site.html) and the count
under its lists (templates/admin/pagination.html)."""

from __future__ import annotations

import re
from typing import Any

from django import template
from django.utils.translation import npgettext

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


@register.simple_tag
def result_count(cl: Any) -> str:
    """The count under an admin list: "3 training jobs", "3 个训练任务". Django's own
    (admin/pagination.html) put the number before the model's name with no measure word,
    "3 训练任务", and offers no message to translate it by (templates/admin/pagination.html)."""
    count = cl.result_count
    name = str(cl.opts.verbose_name if count == 1 else cl.opts.verbose_name_plural)
    text = npgettext("admin list count", "%(count)s %(name)s", "%(count)s %(name)s", count) % {
        "count": count,
        "name": name,
    }
    # A name starting with a Latin word ("API 访问密钥") is set apart from 个 by a space, as
    # the console's Chinese does between Chinese and Latin words.
    return re.sub(r"(?<=个)(?=[A-Za-z0-9])", " ", text)


@register.filter
def log_object_shown(entry: Any) -> str:
    """The admin's Recent actions: a log entry's object in the page's language (qa98)."""
    from jobs.history_admin import log_object_shown as shown

    return shown(entry)
