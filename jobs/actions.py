"""What an owner does to a job: stop, delete, run again, submit again (its page), change its
priority (the AIHC-compatible API)."""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import DatabaseError, transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, gettext_noop

from .backends import PLATFORM_NAMES, BackendError, configured, get_backend
from .backends.base import STOPPED_BEFORE_DELETION
from .backends.remote import STOP_LOOKING_AT, console_time
from .models import (
    FINAL_STATUSES,
    DeletedJob,
    EventType,
    Job,
    JobEvent,
    JobGroup,
    JobStatus,
    LocalRun,
    ReviewState,
)
from .runtime_env import GROUP_INDEX, GROUP_TOTAL, GROUP_VARIABLES, group_task_of
from .services import job_event, job_transition, jobs_submit, recorded, signing_key
from .spec import MAX_ENVS, PRIORITIES, SUBMIT_QUEUE, Env, JobSpec, SpecError, validate
from .texts import Term, source_of

logger = logging.getLogger(__name__)

S = JobStatus
# The one-time key a job page's Run again button carries (uuid4().hex).
REQUEST_KEY_RE = re.compile(r"[0-9a-f]{32}")
# Statuses a job leaves directly for Stopped: nothing runs yet.
NOT_STARTED = frozenset({S.PENDING_REVIEW, S.QUEUED, S.SUBMIT_FAILED})
# Where a changed priority still takes effect. The local runner's scheduler orders its queued
# jobs by priority until one starts. A remote platform's job carries its priority in the create
# request: once it is Queued the worker may be sending it at any moment, and after that the
# platform keeps the priority it got, which the console has no call to change.
PRIORITY_CHANGEABLE = {
    "local": frozenset({S.PENDING_REVIEW, S.QUEUED}),
    "remote": frozenset({S.PENDING_REVIEW}),
}
# The priorities by the names the job pages give them, said in each reader's language.
PRIORITY_TERMS = {
    "high": Term(gettext_noop("High")),
    "normal": Term("Normal", context="priority"),  # Priority.NORMAL's label
    "low": Term(gettext_noop("Low")),
}
# How many jobs one request may stop or delete at once (the job list's selection, the API's
# BatchStopJobs): each goes through its backend in turn, and a request should end in seconds.
MAX_SELECTED = 100


# What a Delete of a job job_delete_only_stops says it did instead (the job page, Delete
# selected). Until left45 it said the job was being sent right now, and to stop it.
DELETE_ONLY_STOPPED = gettext_lazy(
    "The job was stopped, not deleted: a create of it got no clear answer, so its platform "
    "may have made it. The worker looks for it there and stops it; delete the job again once "
    "it has stopped."
)

# Why a Delete again of that job, Stopping while the worker looks for it, does not delete it yet.
DELETE_WHILE_LOOKED_FOR = gettext_lazy(
    "The job is being looked for on its platform: a create of it got no clear answer, so the "
    "platform may have made it. The worker stops it there if it finds it; delete the job "
    "again once it has stopped."
)
# The same two while the platform may still be working on that create: with the time the job
# is looked for (stop_look_time), as its reason says it (qa83: said without it, though the
# stop waits for it).
DELETE_ONLY_STOPPED_AT = gettext_lazy(
    "The job was stopped, not deleted: a create of it got no clear answer, and its platform "
    "may still make it. The worker looks for it there at %(time)s and stops it if found; "
    "delete the job again once it has stopped."
)
DELETE_WHILE_LOOKED_FOR_AT = gettext_lazy(
    "The job is being looked for on its platform: a create of it got no clear answer, and the "
    "platform may still make it. The worker looks for it there at %(time)s and stops it if "
    "found; delete the job again once it has stopped."
)

# Why Delete keeps a job left Submitting by a worker that died sending it, while the worker
# waits to look again for what that create made (its platform refused the look).
DELETE_WHILE_SUBMIT_LOOKED_FOR = gettext_lazy(
    "The job is being looked for on its platform: its submission was interrupted, so the "
    "platform may have made it, and the platform refused the look so far. Nothing is sent "
    "again before the look is answered. Stop it to have what is found stopped there, or "
    "delete it once the look has been answered."
)


# Why a Stop of a job whose platform is not configured on this console (jobs.backends
# .configured) does nothing: until qa114 it said "stopped or stopping", and the job sat
# Stopping for ever, its card-hours counted.
STOP_UNREACHABLE = gettext_lazy(
    "Its platform (%(platform)s) is not configured on this console, so nothing can reach it "
    "to stop the job. Staff can end the job here with Mark as lost (in the admin); if it "
    "still runs on %(platform)s, stop it there."
)
# Why a Delete keeps a Stopping job whose platform is not configured (it said the job was
# being sent to its platform right now: qa114).
DELETE_UNREACHABLE = gettext_lazy(
    "The job is stopping, and its platform (%(platform)s) is not configured on this console, "
    "so nothing can finish its stop. Staff can end it with Mark as lost (in the admin); "
    "delete it once it has ended."
)
# Why a Delete keeps a Running job whose platform is not configured: deleting it here would
# leave it running there, unwatched, its card-hours no longer counted (review68: the owner's
# Delete did what Mark as lost, staff's, does, and its Stop refuses).
DELETE_RUNNING_UNREACHABLE = gettext_lazy(
    "The job runs on its platform (%(platform)s), which is not configured on this console, so "
    "nothing can stop it there. Staff can end it here with Mark as lost (in the admin); "
    "delete it once it has ended."
)
# Why a Delete keeps a Stopping job with no platform id otherwise: stopped while its create
# was on its way, the worker stops what that create makes.
DELETE_WHILE_CREATE_STOPPED = gettext_lazy(
    "The job is stopping: it was stopped while it was being sent to its platform, and the "
    "worker stops what that create makes there. It can be deleted once it has stopped."
)


# A Delete of a job whose platform is not configured on this console, which may still hold
# the job: removed here, nothing asked there (deleted_here_only).
DELETED_HERE_ONLY = gettext_lazy(
    "Job %(name)s deleted here only: its platform (%(platform)s) is not configured on this "
    "console, so nothing was removed there. If the job is still there, delete it there."
)


def deleted_here_only(job: Job) -> str:
    """The platform's name when a Delete of the job now removes it from this console only
    while that platform may still hold it (it was sent there, or a create of it got no clear
    answer) and is not configured here, so nothing can be asked to remove it; else ""."""
    platform = platform_unreachable(job)
    if platform and (job.external_id or get_backend(job.backend).create_unsettled(job)):
        return platform
    return ""


def platform_unreachable(job: Job) -> str:
    """The platform's name when the job's backend is a remote one not configured now (its
    platform unreachable from this console), else ""."""
    if job.backend == "local" or configured(job.backend):
        return ""
    return PLATFORM_NAMES.get(job.backend, job.backend)


class ActionError(Exception):
    """The action cannot be done now; the message is safe to show."""


def job_stop(
    *,
    job: Job,
    actor: User | None = None,
    message: str = "",
    send: bool = True,
    reason: str = "",
) -> bool:
    """Stops a job wherever it is: one that has not started directly, a running one through
    its backend. `actor` is who asked (the owner, or a reviewer in the admin). False when the
    job is already finished or stopping. `send` False: no time is left to ask the job's
    platform (jobs_stop), so the worker sends the stop (Backend.stop_unsent). `reason`: why,
    as staff gave it in the admin (qa98), in the event and the reason the job ends with
    (a remote job's too, once its platform reports it stopped: fix108)."""
    by = actor.get_username() if actor is not None else ""
    key = signing_key()  # asked through the API: which of the owner's keys
    if reason:
        message = message or recorded(
            gettext_noop("Stopped by %(user)s: %(reason)s"), user=by, reason=reason
        )
    stopped = message or _stopped_by(by=by, key=key)
    # The stop a Delete makes first of a job not started: said as the Delete's (qa112: a
    # Delete read "Stop requested by …", and, its platform not answering, "Stop requested; …").
    deleting = (source_of(message) or {}).get("key") == STOPPED_BEFORE_DELETION
    for _attempt in range(2):
        if not job_stoppable(job):
            return False
        # Not started here, on a platform not configured: stopped at once, nothing sent
        # (nothing could be), said so when the platform may hold it (review64: one with a
        # platform id, queued again by a restart, was refused for Mark as lost, which is for
        # running or stopping jobs, and its Stop sent staff there: a dead end). It holds
        # no cards here.
        unreachable = job.status in {*NOT_STARTED, S.SUBMITTING} and platform_unreachable(job)
        if (
            job.status in NOT_STARTED
            and (job.backend == "local" or not job.external_id)
            # Until left42 a job queued again after a create with no clear answer was
            # Stopped here, though the platform may have made it: left running unwatched.
            # And until left51 one Submit again held for review after its looks were given
            # up: its backend's stop now withdraws it and looks for it (Stopping).
            and not get_backend(job.backend).create_unsettled(job)
        ) or unreachable:
            # (Sent, or maybe: a create on its way or unanswered.)
            if (
                unreachable
                and not reason
                and (
                    job.external_id
                    or job.status == S.SUBMITTING
                    or get_backend(job.backend).create_unsettled(job)
                )
            ):
                stopped = recorded(
                    gettext_noop(
                        "Stopped here only: its platform (%(platform)s) is not configured on "
                        "this console, so nothing was sent to it. If the job runs there, stop "
                        "it there."
                    ),
                    platform=unreachable,
                )
            # One that waited for review waits no more: off the reviewers' pending list.
            withdrawn = (
                {"review_state": ReviewState.WITHDRAWN} if job.status == S.PENDING_REVIEW else {}
            )
            if job_transition(
                job=job, to=S.STOPPED, reason="Stopped", message=stopped, actor=actor, **withdrawn
            ):
                return True
            continue  # the worker dispatched it meanwhile: stop it through the backend
        if platform := platform_unreachable(job):
            raise ActionError(str(STOP_UNREACHABLE % {"platform": platform}))
        if actor is not None:
            if deleting and key:
                requested = recorded(
                    gettext_noop(
                        "Delete requested by %(user)s with API key %(key)s: the job is stopped "
                        "before deleting."
                    ),
                    user=by,
                    key=key,
                )
            elif deleting:
                requested = recorded(
                    gettext_noop(
                        "Delete requested by %(user)s: the job is stopped before deleting."
                    ),
                    user=by,
                )
            elif reason:
                requested = recorded(
                    gettext_noop("Stop requested by %(user)s: %(reason)s"), user=by, reason=reason
                )
            elif key:
                requested = recorded(
                    gettext_noop("Stop requested by %(user)s with API key %(key)s."),
                    user=by,
                    key=key,
                )
            else:
                requested = recorded(gettext_noop("Stop requested by %(user)s."), user=by)
            job_event(job=job, reason="StopRequested", message=requested, actor=actor)
        backend = get_backend(job.backend)
        # The reason given is what the job ends with; otherwise the backend's own word.
        ends_with = stopped if reason or deleting else ""
        try:
            if send:
                backend.stop(job, message=ends_with)
            else:
                backend.stop_unsent(job, message=ends_with)
        except BackendError as exc:
            raise ActionError(exc.message) from exc
        return True
    return False


def _stopped_by(*, by: str, key: str) -> str:
    """The reason (and event) of a job stopped before it started, by whom."""
    if by and key:
        return recorded(gettext_noop("Stopped by %(user)s with API key %(key)s."), user=by, key=key)
    if by:
        return recorded(gettext_noop("Stopped by %(user)s."), user=by)
    return recorded(gettext_noop("Stopped by its owner."))


@dataclass(frozen=True)
class GroupStopped:
    """What Stop the group did: the tasks stopped before they started, and the outcomes of
    those stopped one by one (running, or on another platform)."""

    stopped: list[str]  # public ids of the local tasks stopped before they started
    outcomes: list[Outcome]

    @property
    def done(self) -> int:
        return len(self.stopped) + sum(1 for o in self.outcomes if o.done)


# The local tasks Stop the group stops in one UPDATE: not started, nothing sent anywhere.
GROUP_UNSTARTED = (S.QUEUED, S.PENDING_REVIEW, S.SUBMIT_FAILED)


# The statuses of a task a Stop changes (job_stoppable's).
GROUP_STOPPABLE = frozenset({S.RUNNING, S.SUBMITTING, S.QUEUED, S.PENDING_REVIEW, S.SUBMIT_FAILED})


def group_stoppable(group: JobGroup) -> Any:
    """The tasks of `group` a Stop would change."""
    return Job.objects.filter(group=group, status__in=GROUP_STOPPABLE)


def group_stop(*, group: JobGroup, actor: User) -> GroupStopped:
    """Stops every unfinished task of a queue group at once (qa93: a 1,000-task sweep took
    ten rounds of Stop selected's 100). Its work does not grow with the group's size: the
    local tasks not started yet (all but `concurrency` of a big sweep) are Stopped by one
    UPDATE per status, their events written by one INSERT per 500, as job_stop writes them
    one by one; the rest (the running ones, at most the group's concurrency, and any on
    another platform) go through jobs_stop, the runner's own stop, its platform asked within
    BULK_ACTION_SECONDS. Sent again it stops nothing twice and records no event twice: the
    UPDATE matches only tasks still not started, and job_stop passes over a Stopping one."""
    by, key = actor.get_username(), signing_key()
    message = _stopped_by(by=by, key=key)
    now = timezone.now()
    unstarted = Job.objects.filter(group=group, backend="local", status__in=GROUP_UNSTARTED)
    with transaction.atomic():
        for status in GROUP_UNSTARTED:
            fields: dict[str, Any] = {
                "status": S.STOPPED,
                "status_reason": str(message),
                "status_reason_source": source_of(message),
                "updated_at": now,
                "finished_at": now,
            }
            if status == S.PENDING_REVIEW:  # off the reviewers' pending list, as job_stop
                fields["review_state"] = ReviewState.WITHDRAWN
            unstarted.filter(status=status).update(**fields)
        # The rows these UPDATEs stopped: their time stamp is theirs alone.
        stopped = list(
            Job.objects.filter(group=group, status=S.STOPPED, updated_at=now).values_list(
                "pk", "public_id"
            )
        )
        JobEvent.objects.bulk_create(
            [
                JobEvent(
                    job_id=pk,
                    reason="Stopped",
                    message=str(message),
                    message_source=source_of(message),
                    type=EventType.NORMAL,
                    actor=actor,
                )
                for pk, _public_id in stopped
            ],
            batch_size=500,
        )
    rest = group_stoppable(group).select_related("group").order_by("group_index")
    return GroupStopped(
        stopped=[public_id for _pk, public_id in stopped],
        outcomes=jobs_stop(jobs=rest, actor=actor),
    )


def stop_look_time(job: Job) -> str:
    """When the worker looks on its platform for what a create of the job, stopped (Stopping)
    while that create got no clear answer, may still make, as its reason says it
    (STOP_LOOKING_AT: in the console's zone); "" when it looks at its next pass, or the job
    is not one stopped so. What Stop, Delete, their selected forms and the API say of such a
    job is worded with it here."""
    if job.status != S.STOPPING:
        return ""
    at = get_backend(job.backend).stop_look_at(job)
    return console_time(at) if at else ""


def stop_look_time_ahead(job: Job) -> str:
    """stop_look_time of a Stop (or a first Delete) not made yet: when the worker would look
    for the job on its platform if it were stopped now, its create having got no clear answer
    while the platform may still make it; "" for any other job. What the questions before a
    Stop or Delete say of it (qa84: they gave the ordinary words, the time said only after)."""
    at = stop_look_at_ahead(job)
    return console_time(at) if at else ""


def stop_look_at_ahead(job: Job) -> datetime | None:
    """stop_look_time_ahead's moment itself, to compare several (the earliest of them)."""
    if not job_stoppable(job) or job.backend == "local" or platform_unreachable(job):
        return None  # (nothing looks for a job of a platform not configured here)
    backend = get_backend(job.backend)
    # stop_look_at first: no query for a job with no such create (the job page asks it).
    at = backend.stop_look_at(job)
    return at if at and backend.create_unsettled(job) else None


def stop_looked_for(job: Job) -> str:
    """What a Stop that went through says of a job whose platform may still make it
    (stop_look_time), in the reader's language: its reason's words; "" for any other job."""
    at = stop_look_time(job)
    return _(STOP_LOOKING_AT) % {"time": at} if at else ""


def job_stoppable(job: Job) -> bool:
    """Whether job_stop has anything to do: not once the job has ended or is stopping."""
    return not (job.status in FINAL_STATUSES or job.status in (S.STOPPING, S.REJECTED))


def job_delete_waits(job: Job) -> bool:
    """Whether job_delete stops the job first and the worker deletes it once it has stopped
    (a local job with processes to end), rather than deleting it at once."""
    return job.backend == "local" and job.status in (S.RUNNING, S.STOPPING)


def job_delete_only_stops(job: Job) -> bool:
    """Whether job_delete stops the job and keeps it: queued again after a create of it got
    no clear answer (no platform id yet), so its platform may have made it. Deleting the row
    would leave what was made running unwatched: the job goes Stopping, the worker looks for
    it there and stops it, and a Delete again removes the job once it has stopped."""
    return (
        job.backend != "local"
        and not job.external_id
        and job.status in NOT_STARTED
        # Nothing looks for it on a platform not configured here: its Stop ends it at once,
        # and the Delete deletes it here only (review68: asked "Stop this job and keep it?").
        and not platform_unreachable(job)
        and get_backend(job.backend).create_unsettled(job)
    )


def job_delete_looked_for(job: Job) -> bool:
    """Whether job_delete keeps the job as one being looked for on its platform: Stopping (a
    first Delete, or a Stop) after a create of it got no clear answer, while the worker looks
    for what that create made, to stop it (DELETE_WHILE_LOOKED_FOR)."""
    return (
        job.backend != "local"
        and not job.external_id
        and job.status == S.STOPPING
        and get_backend(job.backend).create_unsettled(job)
    )


def job_delete(*, job: Job, for_retention: bool = False, actor: User | None = None) -> bool:
    """Deletes the job; True when it is gone now, False when it goes once it has stopped.
    `for_retention`: the worker deletes it because its retention period passed (said on the
    page an old link to it opens: DeletedJob). `actor`: who asked, named by the stop a Delete
    makes of a job not ended (qa81: a Delete that stopped a job recorded no one)."""
    if job_delete_waits(job):
        from .runner import TARGET_STOPPED, request_stop

        request_stop(
            job,
            target=TARGET_STOPPED,
            message=recorded(STOPPED_BEFORE_DELETION),
            delete=True,
        )
        job.refresh_from_db()
        if job.status not in FINAL_STATUSES:
            return False  # the worker deletes it once it has stopped
        # It ended while the request came in: nothing is left to stop, so it goes now.
    _refuse_while_sending(job)
    if job_delete_only_stops(job):
        job_stop(job=job, actor=actor)
        job.refresh_from_db()
        if job.status == S.STOPPING:
            at = stop_look_time(job)
            raise ActionError(
                str(DELETE_ONLY_STOPPED_AT % {"time": at} if at else DELETE_ONLY_STOPPED)
            )
    if job.status not in FINAL_STATUSES and job.status in NOT_STARTED:
        job_stop(job=job, actor=actor, message=recorded(STOPPED_BEFORE_DELETION))
        # The worker may have started sending it since the page loaded: job_stop then found
        # it Submitting and stopped it through the backend, and the create is still on its way.
        _refuse_while_sending(job)
    backend = get_backend(job.backend)
    try:
        if platform_unreachable(job):
            # Nothing can reach its platform (the Delete said so in the operator's English,
            # "KUBERNETES_API_URL is not set", and kept the job for ever): deleted here, as a
            # Stop of it stops it here only (deleted_here_only says so).
            secret_left = backend.delete_here(job) or ""
        else:
            secret_left = backend.delete(job) or ""
    except BackendError as exc:
        raise ActionError(exc.message) from exc
    # Which of the owner's keys deleted it, if a script did: this request's, or, for a job
    # the worker deletes once it has stopped, that of the Delete it was flagged by.
    key = signing_key() or (
        ""
        if for_retention
        else LocalRun.objects.filter(job=job, delete_when_stopped=True)
        .values_list("delete_api_key", flat=True)
        .first()
        or ""
    )
    place = job.task_place  # its group's place, read while the job is there to read it
    try:
        with transaction.atomic():  # a savepoint: the request's own work goes on after it
            deleted, _by_model = Job.objects.filter(pk=job.pk).delete()
            if deleted:  # (not when a concurrent deletion took it first: that one keeps it)
                spec = job.spec if isinstance(job.spec, dict) else {}
                DeletedJob.objects.update_or_create(
                    public_id=job.public_id,
                    defaults={
                        "owner_id": job.owner_id,
                        "name": job.name,
                        "deleted_at": timezone.now(),
                        "reason": DeletedJob.RETENTION if for_retention else "",
                        "retention": str(spec.get("retentionPeriod", ""))[:16]
                        if for_retention
                        else "",
                        "api_key": key,
                        "secret_left": secret_left,
                        "group_index": place.index if place else None,
                        "group_total": place.total if place else None,
                        "group_again": place.again if place else False,
                        **duplicate_watch_kept(job),
                    },
                )
    except DatabaseError as exc:
        # The database refused the row (a constraint, a trigger, a lock held too long): the
        # job is kept, and the person deleting it is told so, not given an error page
        # (review 19). Its files are gone already; a Delete later removes the row.
        said = (str(exc).strip().splitlines() or [""])[0][:200]
        raise ActionError(
            _(
                "The database refused to delete the job (%(error)s), so it is kept. Try again "
                "later, or ask an administrator."
            )
            % {"error": f"{type(exc).__name__}: {said}" if said else type(exc).__name__}
        ) from exc
    return True


def duplicate_watch_kept(job: Job) -> dict[str, Any]:
    """The deleted job's record of the watch for a create of it landing late on AIHC, while it
    lasts (DeletedJob.duplicate_watch_until): the worker goes on looking after the Delete."""
    until = job.duplicate_watch_until
    if until is None or until <= timezone.now():
        return {}
    return {
        "duplicate_watch_until": until,
        "duplicate_watch": {"pool": job.resource_pool, "queue": job.queue},
    }


def deletion_left_secret(*, public_id: str) -> bool:
    """Whether deleting job `public_id` left its Kubernetes Secret (the job's secret env
    values) for the worker to remove, the API server not answering in the Delete's short
    wait (DeletedJob.secret_left): every Delete says so, the job page's, the list's and the
    API's, so no one thinks it gone while it is still in the cluster."""
    return DeletedJob.objects.filter(public_id=public_id).exclude(secret_left="").exists()


def secret_given_up(sender: Any, instance: DeletedJob, **kwargs: Any) -> None:
    """pre_delete of a DeletedJob (connected in jobs.apps): one whose Secret the worker has
    still to remove goes only with its owner (a user deleted takes theirs) or an
    administrator's delete, and the worker then no longer knows of the Secret. Said once,
    in the log, with its name, so an operator removes it by hand (forget_deleted_jobs
    keeps such a row)."""
    if instance.secret_left:
        namespace, _sep, name = instance.secret_left.partition("/")
        logger.warning(
            "the record of deleted job %s went (its owner deleted) while its Kubernetes "
            "Secret %s was still to be removed: the worker no longer removes it; remove it "
            "by hand (kubectl delete secret -n %s %s)",
            instance.public_id,
            instance.secret_left,
            namespace,
            name,
        )


@dataclass(frozen=True)
class Outcome:
    """What a stop or delete did to one of several jobs."""

    job: Job
    # job_stop's or job_delete's answer: stop requested / deleted now (False: the job had
    # already ended or was stopping / it goes once it has stopped).
    done: bool
    # Why it was refused (ActionError's message); nothing was done to this job then.
    error: str = ""
    # Deleted, but its Kubernetes Secret was left for the worker (deletion_left_secret).
    secret_left: bool = False
    # Its platform was not asked: the bulk action's time (BULK_ACTION_SECONDS) was up. A stop
    # is then the worker's to send (the job Stopping); a delete was not done (the job kept).
    not_reached: bool = False
    # Deleted here only: its platform, not configured on this console, may still hold it
    # (deleted_here_only, the platform's name).
    here_only: str = ""


def bulk_deadline() -> float:
    """When a Stop or Delete of several jobs stops asking platforms (monotonic time)."""
    return time.monotonic() + settings.BULK_ACTION_SECONDS


def job_stop_by(*, job: Job, actor: User, deadline: float, reason: str = "") -> Outcome:
    """job_stop as one of several jobs' stops (jobs_stop, the admin's Stop selected jobs):
    past `deadline` a stop that would wait on the job's platform is the worker's to send."""
    late = time.monotonic() >= deadline and get_backend(job.backend).stop_asks_platform(job)
    done = job_stop(job=job, actor=actor, send=not late, reason=reason)
    return Outcome(job=job, done=done, not_reached=late and done)


def jobs_stop(*, jobs: Iterable[Job], actor: User) -> list[Outcome]:
    """Stops each job as its own page's Stop does; one refused does not keep the others.

    Each platform call is bounded, but in turn: 100 jobs of a platform that does not answer
    held the page 100 such bounds (until left42). Once BULK_ACTION_SECONDS have passed no
    platform is asked: a job whose stop would wait on one goes Stopping and the worker sends
    it, as it sends again a stop the platform did not answer. A call begun before then ends
    within its own bound, so the whole takes at most that much longer."""
    deadline = bulk_deadline()
    outcomes = []
    for job in jobs:
        try:
            outcomes.append(job_stop_by(job=job, actor=actor, deadline=deadline))
        except ActionError as exc:
            outcomes.append(Outcome(job=job, done=False, error=str(exc)))
    return outcomes


def jobs_delete(*, jobs: Iterable[Job], actor: User | None = None) -> list[Outcome]:
    """Deletes each job as its own page's Delete does; one refused (a job being sent to its
    platform) is kept, and the others still go. Once BULK_ACTION_SECONDS have passed (see
    jobs_stop) a job whose delete would wait on its platform is left as it is, untouched:
    deleted by a Delete again."""
    deadline = bulk_deadline()
    outcomes = []
    for job in jobs:
        if (
            time.monotonic() >= deadline
            and get_backend(job.backend).delete_asks_platform(job)
            and not platform_unreachable(job)  # nothing is asked of it: deleted here only
        ):
            outcomes.append(Outcome(job=job, done=False, not_reached=True))
            continue
        try:
            here_only = deleted_here_only(job)
            gone = job_delete(job=job, actor=actor)
            # (A Secret left by a Delete here only waits for its platform to be configured.)
            left = gone and not here_only and deletion_left_secret(public_id=job.public_id)
            outcomes.append(
                Outcome(job=job, done=gone, secret_left=left, here_only=here_only if gone else "")
            )
        except ActionError as exc:
            outcomes.append(Outcome(job=job, done=False, error=str(exc)))
    return outcomes


def job_priority_change(*, job: Job, priority: str, actor: User) -> bool:
    """Changes the priority of a job that has not started (see PRIORITY_CHANGEABLE); False
    when it had that priority already. The stored spec changes with it, so what is sent or
    scheduled later is the new priority. ActionError when it can no longer take effect."""
    if priority not in PRIORITIES:
        raise ActionError(_("Priority must be high, normal or low."))
    for _attempt in range(2):
        changeable = PRIORITY_CHANGEABLE["local" if job.backend == "local" else "remote"]
        if job.status not in changeable:
            if job.backend != "local" and job.status in (S.QUEUED, S.SUBMITTING):
                raise ActionError(
                    _(
                        "This job is on its way to its platform, which keeps the priority it "
                        "was sent with; a job for another platform than this machine can "
                        "change priority only while it waits for review."
                    )
                )
            raise ActionError(_("The job has started or ended; its priority no longer matters."))
        if job.priority == priority:
            return False
        old = job.priority
        document = {**job.spec, "priority": priority}
        with transaction.atomic():
            # Conditional on what was seen, as job_transition is: a job the worker has just
            # started, or someone else has just changed, is decided again as it is now.
            changed = Job.objects.filter(pk=job.pk, status=job.status, priority=old).update(
                priority=priority, spec=document, updated_at=timezone.now()
            )
            if changed:
                job_event(
                    job=job,
                    reason="PriorityChanged",
                    message=recorded(
                        gettext_noop("Priority changed from %(old)s to %(new)s by %(user)s."),
                        old=PRIORITY_TERMS.get(old, old),
                        new=PRIORITY_TERMS[priority],
                        user=actor.get_username(),
                    ),
                    actor=actor,
                )
        if changed:
            job.priority, job.spec = priority, document
            return True
        fresh = Job.objects.filter(pk=job.pk).first()
        if fresh is None:
            raise ActionError(_("The job has been deleted."))
        job = fresh
    raise ActionError(_("The job changed meanwhile; try again."))


def job_delete_refusal(job: Job) -> str:
    """Why job_delete refuses the job now ("" when it does not)."""
    # A Stopping job nothing can reach, with a platform id or not: worded from its state
    # (review64: one looked for said when it would be, though nothing will look; one with
    # an id got the bare credentials error of the delete it was sent to).
    if job.status == S.STOPPING and (platform := platform_unreachable(job)):
        return str(DELETE_UNREACHABLE % {"platform": platform})
    if job.status == S.RUNNING and (platform := platform_unreachable(job)):
        return str(DELETE_RUNNING_UNREACHABLE % {"platform": platform})
    if job.backend != "local" and not job.external_id and job.status in (S.SUBMITTING, S.STOPPING):
        # A create is on its way to the platform, or one got no clear answer and the worker
        # looks for what it made: deleting the row now would leave whatever the platform has
        # running there with nothing tracking it.
        if job_delete_looked_for(job):
            # Stopped (a first Delete: job_delete_only_stops) after such a create: nothing is
            # being sent. Until left47 this said it was, and to stop the job.
            at = stop_look_time(job)
            return str(DELETE_WHILE_LOOKED_FOR_AT % {"time": at} if at else DELETE_WHILE_LOOKED_FOR)
        if get_backend(job.backend).submit_looked_for(job):
            # Until lookfix this said it was being sent right now, to wait a moment.
            return str(DELETE_WHILE_SUBMIT_LOOKED_FOR)
        # A Stopping job is not being sent (qa114 said so of one stuck for days).
        if job.status == S.STOPPING:
            return str(DELETE_WHILE_CREATE_STOPPED)
        return _(
            "The job is being sent to its platform right now. Stop it, or wait a moment; "
            "it can be deleted once the platform has answered."
        )
    return ""


def _refuse_while_sending(job: Job) -> None:
    refusal = job_delete_refusal(job)
    if refusal:
        raise ActionError(refusal)


def job_rerun(*, job: Job, owner: User, request_key: str = "") -> list[Job]:
    """A new job from the same spec, checked as a submit from the wizard is: the pool must
    still take it, and a standalone job must find its cards idle now. One task of a queue
    group runs again as one queue task, not as a new group of `total` tasks.

    `request_key` comes with the page's Run again button: the same click sent twice (a
    double click, a resend, two tabs of one page) finds the job the first one made."""
    if not REQUEST_KEY_RE.fullmatch(request_key):
        request_key = uuid.uuid4().hex  # an old page without a key: a fresh run
    # The job's pk, not its public id: with the 32-digit key that would pass Job.submit_key's
    # 80 characters, which PostgreSQL enforces (SQLite stores any length).
    submit_key = f"rerun-{job.pk}-{request_key}"
    existing = list(Job.objects.filter(submit_key__startswith=submit_key, owner=owner))
    if existing:
        return existing  # before the checks: the first run now holds the cards
    spec = _task_spec_checked(
        job,
        unreadable=_(
            "This job's stored spec cannot be read (fields: %(fields)s), so it cannot run again."
        ),
        rerun=True,
    )
    from .wizard import standalone_claim_refusals

    with transaction.atomic():
        if job.backend == "local":
            # The cards were idle when checked above; another submit may have taken them since.
            claim = standalone_claim_refusals(spec=spec, owner=owner, submit_key=submit_key)
            if claim:
                raise ActionError(" ".join(claim))
        return jobs_submit(
            owner=owner,
            spec=spec,
            submit_key=submit_key,
            backend=job.backend,
            source_job=job,
        )


def job_submit_again(*, job: Job, actor: User) -> None:
    """Sends a job whose submission failed again, as the same job (its events and id kept):
    for a refusal that has passed, such as a full quota or an outage. Checked as a submit
    from the wizard is; the review policy applies as on the first submit."""
    from .review import job_resubmit

    if job.status != S.SUBMIT_FAILED:
        raise ActionError(_("Only a job whose submission failed can be submitted again."))
    _task_spec_checked(
        job,
        unreadable=_(
            "This job's stored spec cannot be read (fields: %(fields)s), so it cannot be "
            "submitted again."
        ),
    )
    if not job_resubmit(job=job, actor=actor):
        raise ActionError(_("The job changed meanwhile; reload the page."))


def _task_spec_checked(job: Job, *, unreadable: str, rerun: bool = False) -> JobSpec:
    """The job's spec as one task (a queue group's task runs as itself, not as its group),
    checked as a submit from the wizard is: the pool must still take it, and a standalone
    job must find its cards idle now. The wizard's rules, one copy: no other door. `rerun`:
    for a new job (Run again), which pins a group task's AIHC_GROUP_TASK_* in its envs."""
    from .wizard import console_rules, find_pool, pool_refusals, template_job_rules

    try:
        spec = job.job_spec()
    except SpecError as exc:
        raise ActionError(unreadable % {"fields": exc.fields}) from exc
    task = group_task_of(job)
    # Only for a new job: Submit again sends the same task of its group, which gets them from
    # its group as on its first send (review29: pinned, a task of 49 envs was refused).
    if (
        rerun
        and task is not None
        and task[1] > 1
        and not {e.name for e in spec.envs} & GROUP_VARIABLES
    ):
        # It runs as a group of one, which would be told it is task 0 of 1: its
        # own AIHC_GROUP_TASK_* go into its envs instead (before the rules are checked: they
        # count among its 50), so a sweep's best task runs with its own parameter again, as
        # its spec and Compare say (QA 42).
        if len(spec.envs) + 2 > MAX_ENVS:
            # Said as what it is: "this one has 51" named a count the job does not have.
            raise ActionError(
                _(
                    "Run again keeps this task's AIHC_GROUP_TASK_INDEX=%(index)d and "
                    "AIHC_GROUP_TASK_TOTAL=%(total)d in its envs, and with its %(count)d that "
                    "passes the %(max)d a job may have: copy the job, remove %(excess)d of its "
                    "envs and set these two in the copy."
                )
                % {
                    "index": task[0],
                    "total": task[1],
                    "count": len(spec.envs),
                    "max": MAX_ENVS,
                    "excess": len(spec.envs) + 2 - MAX_ENVS,
                }
            )
        spec.envs += [Env(GROUP_INDEX, str(task[0])), Env(GROUP_TOTAL, str(task[1]))]
    # A spec stored before a rule was made stricter (at most 50 variables, labels without a
    # line break) still reads, but jobs_submit would refuse it with an exception: say why.
    problems = validate(spec)
    if problems:
        raise ActionError(
            _(
                "its spec no longer passes the console's rules (%(problems)s); copy the job "
                "and change what they name."
            )
            % {
                "problems": "; ".join(
                    f"{path}: {' '.join(str(m) for m in messages)}"
                    for path, messages in problems.items()
                )
            }
        )
    if spec.submission.mode == SUBMIT_QUEUE:
        spec.submission.total = spec.submission.concurrency = 1
    # The wizard's own rules too (review 46: a template job the API made before left38, its
    # cards no multiple of its parallel sizes, ran again, and Megatron stopped it at start).
    refusals = {**console_rules(spec), **template_job_rules(spec)}
    for path, messages in pool_refusals(
        spec, find_pool(spec.resource_pool_id), owner=job.owner
    ).items():
        refusals.setdefault(path, []).extend(messages)
    if refusals:
        said = " ".join(
            _mount_named(spec, path, message)
            for path, messages in refusals.items()
            for message in messages
        )
        # A rule's refusal asks for a change (turn fault tolerance off, fewer cards), which
        # Run again and Submit again cannot make: it says where one is made, as the spec
        # rules' refusal above does. What holds only now (idle cards, a pool gone) is not
        # changed by a copy.
        if set(refusals) - {"submission.mode", "resourcePoolId"}:
            said = _(
                "%(refusals)s The job is sent as it is: copy it (Copy & edit) and change "
                "what this names there."
            ) % {"refusals": said}
        raise ActionError(said)
    return spec


def _mount_named(spec: JobSpec, path: str, message: str) -> str:
    """A refusal of a volume row said with the row's mount point and volume, as a start that
    fails on it says it: the page's Run again has no form to put it under (QA 99: "The
    path must stay inside the volume" named no mount)."""
    found = re.fullmatch(r"datasources\[(\d+)\]\.\w+", path)
    if found is None or int(found.group(1)) >= len(spec.datasources):
        return message
    row = spec.datasources[int(found.group(1))]
    return _("The mount %(mount)s (volume %(volume)s): %(reason)s") % {
        "mount": row.mount_path,
        "volume": row.name,
        "reason": message,
    }


def forget_deleted_jobs() -> int:
    """Deletes what is kept of jobs deleted more than DELETED_JOB_KEEP_DAYS ago (DeletedJob;
    0: none is), for the worker's hourly housekeeping; returns how many rows went. A year
    by default: the rows exist so that an old link (an alert mail, a bookmark) tells the
    owner their job was deleted, and when, and such links are followed within weeks; kept
    for ever, one row per deleted job, including every job a retention period deletes, would
    grow without end."""
    days = settings.DELETED_JOB_KEEP_DAYS
    if not days:
        return 0
    cutoff = timezone.now() - timedelta(days=days)
    # One whose Secret the worker has still to remove (secret_left) is kept until it has:
    # forgotten, the Secret would stay in the cluster with nothing left to remove it.
    return DeletedJob.objects.filter(deleted_at__lt=cutoff, secret_left="").delete()[0]
