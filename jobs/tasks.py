"""Discrete background tasks (django.tasks, stored by django-tasks-db).

Alert delivery is a task: it is decided once, persisted, and runs apart from the worker's
supervision loop (a webhook timing out must not delay stopping or restarting jobs). The
`worker` command runs these tasks in a thread; `manage.py db_worker` runs them too.

Dispatch, supervision and sync stay in the worker loop instead: they are a continuous
reconciliation of the database with live processes, not units of work one could enqueue.
"""

from __future__ import annotations

from django.tasks import task

from .models import Job


@task
def deliver_alert(*, job_id: int, item: str, message: str, time: str) -> None:
    from .alerts import deliver

    job = Job.objects.filter(pk=job_id).first()
    if job is None:  # deleted meanwhile: nobody to tell
        return
    deliver(job=job, item=item, message=message, time=time)
