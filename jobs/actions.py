"""What an owner does to a job from its page: stop, delete, run again."""

from __future__ import annotations

import uuid

from django.contrib.auth.models import User

from .backends import BackendError, get_backend
from .models import FINAL_STATUSES, Job, JobStatus
from .services import TransitionError, job_transition, jobs_submit

S = JobStatus
# Statuses a job leaves directly for Stopped: nothing runs yet.
NOT_STARTED = frozenset({S.PENDING_REVIEW, S.QUEUED, S.SUBMIT_FAILED})


class ActionError(Exception):
    """The action cannot be done now; the message is safe to show."""


def job_stop(*, job: Job, message: str = "Stopped by its owner.") -> None:
    if job.status in FINAL_STATUSES or job.status == S.STOPPING:
        return
    if job.status in NOT_STARTED and (job.backend == "local" or not job.external_id):
        try:
            if job_transition(job=job, to=S.STOPPED, reason="Stopped", message=message):
                return
        except TransitionError:
            pass
        job.refresh_from_db()
        if job.status in FINAL_STATUSES or job.status == S.STOPPING:
            return
    try:
        get_backend(job.backend).stop(job)
    except BackendError as exc:
        raise ActionError(exc.message) from exc


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
