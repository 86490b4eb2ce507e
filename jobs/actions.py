"""What an owner does to a job from its page: stop, delete, run again."""

from __future__ import annotations

import uuid

from django.contrib.auth.models import User

from .backends import BackendError, get_backend
from .models import FINAL_STATUSES, Job, JobStatus
from .services import job_event, job_transition, jobs_submit

S = JobStatus
# Statuses a job leaves directly for Stopped: nothing runs yet.
NOT_STARTED = frozenset({S.PENDING_REVIEW, S.QUEUED, S.SUBMIT_FAILED})


class ActionError(Exception):
    """The action cannot be done now; the message is safe to show."""


def job_stop(*, job: Job, actor: User | None = None, message: str = "") -> bool:
    """Stops a job wherever it is: one that has not started directly, a running one through
    its backend. `actor` is who asked (the owner, or a reviewer in the admin). False when the
    job is already finished or stopping."""
    by = actor.get_username() if actor is not None else ""
    for _attempt in range(2):
        if job.status in FINAL_STATUSES or job.status in (S.STOPPING, S.REJECTED):
            return False
        if job.status in NOT_STARTED and (job.backend == "local" or not job.external_id):
            stopped = message or (f"Stopped by {by}." if by else "Stopped by its owner.")
            if job_transition(
                job=job, to=S.STOPPED, reason="Stopped", message=stopped, actor=actor
            ):
                return True
            continue  # the worker dispatched it meanwhile: stop it through the backend
        if actor is not None:
            job_event(
                job=job,
                reason="StopRequested",
                message=f"Stop requested by {by}.",
                actor=actor,
            )
        try:
            get_backend(job.backend).stop(job)
        except BackendError as exc:
            raise ActionError(exc.message) from exc
        return True
    return False


def job_delete(*, job: Job) -> bool:
    """Deletes the job; True when it is gone now, False when it goes once it has stopped."""
    if job.backend == "local" and job.status in (S.RUNNING, S.STOPPING):
        from .runner import TARGET_STOPPED, request_stop

        request_stop(job, target=TARGET_STOPPED, message="Stopped to be deleted.", delete=True)
        return False
    if job.status not in FINAL_STATUSES and job.status in NOT_STARTED:
        job_stop(job=job, message="Stopped to be deleted.")
    try:
        get_backend(job.backend).delete(job)
    except BackendError as exc:
        raise ActionError(exc.message) from exc
    Job.objects.filter(pk=job.pk).delete()
    return True


def job_rerun(*, job: Job, owner: User) -> list[Job]:
    """A new job (or group) from the same spec, as if submitted again."""
    return jobs_submit(
        owner=owner,
        spec=job.job_spec(),
        submit_key=f"rerun-{uuid.uuid4()}",
        backend=job.backend,
        source_job=job,
    )
