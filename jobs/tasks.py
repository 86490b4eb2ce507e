"""Discrete background tasks (django.tasks, stored by django-tasks-db).

Alert delivery and review mails are tasks: decided once, persisted, and run apart from the
worker's supervision loop and from the web request (a webhook or mail server timing out must
not delay stopping jobs, nor a reviewer's page). The
`worker` command runs these tasks in a thread; `manage.py db_worker` runs them too.

Dispatch, supervision and sync stay in the worker loop instead: they are a continuous
reconciliation of the database with live processes, not units of work one could enqueue.
"""

from __future__ import annotations

from typing import Any

from django.tasks import task

from .models import Job
from .texts import restored

# Texts come with their sources (jobs.texts) so that the worker writes each mail in its
# reader's language (jobs.languages). A task queued by a release before the sources has no
# source arguments: its texts go as they were recorded, in the console's language.


@task
def deliver_alert(
    *,
    job_id: int,
    item: str,
    message: str,
    time: str,
    message_source: dict[str, Any] | None = None,
    webhooks: list[int] | None = None,
    emails: list[int] | None = None,
    attempt: int = 1,
    counted: bool = False,
) -> None:
    """`webhooks`, `emails`, `attempt`, `counted`: a later try of the destinations an earlier
    one could not reach (jobs.alerts.RETRY_MINUTES); a task queued before retries has none: a
    first try."""
    from .alerts import deliver

    job = Job.objects.filter(pk=job_id).first()
    if job is None:  # deleted meanwhile: nobody to tell
        return
    deliver(
        job=job,
        item=item,
        message=restored(message, message_source),
        time=time,
        webhooks=webhooks,
        emails=emails,
        attempt=attempt,
        counted=counted,
    )


@task
def mail_owner(
    *,
    job_id: int,
    subject: str,
    body: str,
    subject_source: dict[str, Any] | None = None,
    body_source: dict[str, Any] | None = None,
) -> None:
    from .review import send_owner_mail

    job = Job.objects.select_related("owner").filter(pk=job_id).first()
    if job is None:  # deleted meanwhile: the decision no longer concerns anyone
        return
    send_owner_mail(
        job=job,
        subject=subject,
        body=body,
        subject_source=subject_source,
        body_source=body_source,
    )
