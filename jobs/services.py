"""Business logic for jobs: keyword-only functions, named <entity>_<action>."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from datetime import datetime, time
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Count, DateTimeField, F, Q, Subquery, Value
from django.db.models.functions import Greatest
from django.utils import timezone
from django.utils.translation import gettext_noop

from . import spec as spec_module
from .locks import job_events_locked
from .models import (
    FINAL_STATUSES,
    TRANSITIONS,
    EventType,
    Job,
    JobEvent,
    JobGroup,
    JobLabel,
    JobStatus,
    JobWait,
    ReviewState,
)
from .texts import Words, recorded, source_of


class TransitionError(Exception):
    pass


SPEC_UNREADABLE = "SpecUnreadable"
CANNOT_START_WITHOUT_SPEC = gettext_noop(
    "Its stored spec can no longer be read (fields: %(fields)s), so it cannot start. Submit "
    "it again from a new draft."
)
FOLLOWED_WITHOUT_SPEC = gettext_noop(
    "Its stored spec can no longer be read (fields: %(fields)s). It is followed until it ends "
    "without it: no time limit, hang detection, restart or alert of the spec applies."
)

# A CreateJob body's keys the console reads nowhere (jobs.spec.unread_fields): accepted, as
# AIHC accepts them, and named on the job, in the API's answer and on an imported draft. At
# most FIELDS_NAMED paths are named in a message (the API's `warnings` lists them all); never
# a value, which may be a secret.
FIELDS_NOT_READ = "FieldsNotRead"
FIELDS_NAMED = 20
FIELDS_NOT_READ_MESSAGE = gettext_noop(
    "The request's fields %(fields)s were not read (not known to this console)."
)
FIELDS_NOT_READ_MORE = gettext_noop(
    "The request's fields %(fields)s and %(more)s more were not read (not known to this console)."
)


def fields_not_read(paths: Sequence[str]) -> tuple[str, dict[str, Any]]:
    """The message (gettext_noop-marked) and its parameters naming `paths`."""
    named = Words(tuple(paths[:FIELDS_NAMED]))
    more = len(paths) - FIELDS_NAMED
    if more > 0:
        return FIELDS_NOT_READ_MORE, {"fields": named, "more": more}
    return FIELDS_NOT_READ_MESSAGE, {"fields": named}


def job_fail_unreadable(*, job: Job, exc: spec_module.SpecError) -> bool:
    """Fails a job not yet started whose stored spec this console no longer reads, naming the
    fields, so it neither blocks the others nor waits for ever (the scheduler, a remote
    backend's submit). The fields' messages are left out: they may quote what was written."""
    return job_transition(
        job=job,
        to=JobStatus.FAILED,
        reason=SPEC_UNREADABLE,
        message=recorded(CANNOT_START_WITHOUT_SPEC, fields=exc.fields),
    )


def job_spec_or_noted(
    *, job: Job, followed: str = FOLLOWED_WITHOUT_SPEC
) -> spec_module.JobSpec | None:
    """The spec of a started job, for the worker following it; None once its stored spec no
    longer reads (an upgrade that tightened a rule, an old backup), said once on the job with
    the fields in error (a SpecUnreadable warning; `followed`, marked with gettext_noop and
    holding %(fields)s, says what still applies). Such a job is not ended for it: what runs
    keeps running, and Stop and Delete still work."""
    try:
        return job.job_spec()
    except spec_module.SpecError as exc:
        if not job.events.filter(reason=SPEC_UNREADABLE).exists():
            job_event(
                job=job,
                reason=SPEC_UNREADABLE,
                message=recorded(followed, fields=exc.fields),
                warning=True,
            )
        return None


# The access key ID of the API request being served (jobs.api_views.api_view), so that what
# it does to a job says which of the owner's keys did it: "which key submitted these 40
# jobs?" had no answer once the key's owner had several (qa52). The ID, never the secret.
_signing_key: ContextVar[str] = ContextVar("signing_key", default="")


@contextlib.contextmanager
def signed_with(access_key_id: str) -> Iterator[None]:
    """Jobs created, stopped or deleted inside this block were asked for by a request signed
    with `access_key_id`."""
    token = _signing_key.set(access_key_id)
    try:
        yield
    finally:
        _signing_key.reset(token)


def signing_key() -> str:
    """The access key ID of the API request being served; "" outside one (a console page,
    the admin, the worker)."""
    return _signing_key.get()


def job_event(
    *, job: Job, reason: str, message: str = "", warning: bool = False, actor: Any = None
) -> JobEvent:
    # No savepoint: the lock and the row go together, or the caller's transaction fails.
    with transaction.atomic(savepoint=False):
        job_events_locked(job_id=job.pk)  # committed in the order of their ids (the markers)
        return JobEvent.objects.create(
            job=job,
            reason=reason,
            message=str(message),
            message_source=source_of(message),
            type=EventType.WARNING if warning else EventType.NORMAL,
            actor=actor,
        )


# A job's pages show its newest events: the owner's job page and its 3-second refresh, and
# the admin's job page. A job restarted for months holds tens of thousands, and drawing every
# one made its page megabytes, rebuilt on each refresh while it ran (scale review, session
# 18: 10,000 events were 1.6 MB and half a second a refresh). The API's job events answer
# the newest EVENTS_ANSWERED of a time range, and earlier ones by a narrower range
# (jobs.api_views).
EVENTS_SHOWN = 200
# The statuses a local job ends in that its retention period (任务退出后自动删除) applies to:
# a job stopped by someone is kept.
AUTO_DELETED_STATUSES = frozenset({JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.TIMED_OUT})


def job_events_shown(*, job: Job) -> tuple[list[JobEvent], int]:
    """The job's newest EVENTS_SHOWN events, oldest first (as the page lists them), and how
    many earlier ones it has that are not shown: one query, and a count only when there are
    more."""
    newest = list(job.events.order_by("-created_at", "-id")[: EVENTS_SHOWN + 1])
    if len(newest) <= EVENTS_SHOWN:
        return newest[::-1], 0
    return newest[EVENTS_SHOWN - 1 :: -1], job.events.count() - EVENTS_SHOWN


def job_transition(
    *,
    job: Job,
    to: str,
    reason: str,
    message: str = "",
    warning: bool = False,
    actor: Any = None,
    ended_at: datetime | None = None,
    resumed_at: datetime | None = None,
    event: bool = True,
    **fields: Any,
) -> bool:
    """Moves `job` to status `to` if the state machine allows it from its current status.

    The update is conditional on the status the caller saw, so two processes (web and
    worker) racing on one job cannot both win; the loser gets False and a refreshed job
    (or the job as it was, when it has been deleted meanwhile).
    Records an event (unless `event` is False: a move whose outcome's event says it all),
    and stamps started/finished times: a final status is stamped with `ended_at`, when the
    job's processes ended, if the caller knows it (never later than now). A job waiting to
    run again ends its wait when it moves on, or at `resumed_at`, when the caller knows when
    it ran again (a platform's own time: AIHC v2's jobTimeLine), bounded by the wait's start,
    by the start of the move's month (month_began) and by the move's time.
    """
    current = job.status
    if to not in TRANSITIONS[current]:
        raise TransitionError(f"{job.public_id}: {current} -> {to} is not allowed")
    now = timezone.now()
    updates: dict[str, Any] = {
        "status": to,
        "status_reason": str(message),
        "status_reason_source": source_of(message),
        "updated_at": now,
        **fields,
    }
    if to == JobStatus.RUNNING and job.started_at is None:
        # The caller's, when it knows when the job began (a platform's running time), else now.
        updates.setdefault("started_at", now)
    if to in FINAL_STATUSES:
        finished = min(ended_at, now) if ended_at else now
        # A command that exits within the instant the worker marks it Running can have an
        # exit record a hair before started_at: a run time is never negative.
        if job.started_at is not None and finished < job.started_at:
            finished = job.started_at
        updates["finished_at"] = finished
        # When the worker deletes it for its retention (任务退出后自动删除), found by its index
        # (Worker.delete_expired). A local job's spec is read for it only when it can be due.
        if job.backend == "local" and to in AUTO_DELETED_STATUSES:
            from .worker import retention_ends  # the worker builds on this module

            updates["deletes_at"] = retention_ends(
                backend=job.backend, status=to, finished_at=finished, spec=job.spec
            )
    with transaction.atomic():
        changed = Job.objects.filter(pk=job.pk, status=current).update(**updates)
        if changed and current == JobStatus.RUNNING and to == JobStatus.QUEUED:
            # Back to waiting after its first start (a Kubernetes job restarted as a whole
            # whose new pods the cluster has not placed, a platform's Pending again): it holds
            # no cards until it runs again, and that wait is left out of its card time
            # (jobs.usage), in the period it fell in. The local runner's restarts keep their
            # cards and the job Running, so they count.
            JobWait.objects.create(job_id=job.pk, began_at=now)
        if (
            changed
            and current != JobStatus.RUNNING
            and (to == JobStatus.RUNNING or to in FINAL_STATUSES)
        ):
            # Its wait, if it was waiting to run again, is over (never before it began). Found
            # by the rows, not by what this process read of the job: another may have moved
            # it back to Queued since (review58).
            ended = updates.get("finished_at", now)
            if resumed_at is not None:
                # Never before the month it is seen in began: a month's figures do not change
                # once it is over (review63: a wait begun 30 Nov 20:00 of a job AIHC ran again
                # at 23:00, seen on 1 Dec at 01:00, added an hour to November).
                ended = min(max(resumed_at, month_began(now)), ended)
            until = Value(ended, output_field=DateTimeField())
            JobWait.objects.filter(job_id=job.pk, ended_at=None).update(
                ended_at=Greatest(F("began_at"), until)
            )
        if changed and event:
            job_event(job=job, reason=reason, message=message, warning=warning, actor=actor)
    if not changed:
        # Deleted meanwhile (its owner deleted it while a reviewer acted): nothing to move.
        with contextlib.suppress(Job.DoesNotExist):
            job.refresh_from_db()
        return False
    for name, value in updates.items():
        setattr(job, name, value)
    return True


def month_began(when: datetime) -> datetime:
    """The start of the month `when` is in, in the console's time zone (TIME_ZONE), where the
    usage report cuts its months by default (jobs.usage.Period)."""
    console = timezone.get_default_timezone()
    first = timezone.localdate(when, console).replace(day=1)
    return timezone.make_aware(datetime.combine(first, time.min), console)


def jobs_submit(
    *,
    owner: Any,
    spec: spec_module.JobSpec,
    submit_key: str,
    backend: str = "local",
    source_job: Job | None = None,
    initial_status: str | None = None,
    unread_fields: Sequence[str] = (),
) -> list[Job]:
    """Creates the job (or, for a queue group, its N tasks) from a validated spec.
    `unread_fields`: the request's keys the console read nowhere, recorded on each job as one
    warning event (fields_not_read).

    Idempotent on `submit_key`: submitting the same draft twice returns the jobs the first
    submit created instead of creating more. The jobs start Pending review when the review
    policy (jobs.review) asks for it, else Queued; `initial_status` overrides that.
    """
    from .review import review_reason  # here: jobs.review builds on this module

    spec_module.validated(spec)
    existing = list(Job.objects.filter(submit_key__startswith=f"{submit_key}").order_by("id"))
    if existing:
        return existing
    is_group = spec.submission.mode == spec_module.SUBMIT_QUEUE
    count = spec.submission.total if is_group else 1
    document = spec.to_document()
    why_review = review_reason(spec=spec) if initial_status is None else ""
    if initial_status is None:
        initial_status = JobStatus.PENDING_REVIEW if why_review else JobStatus.QUEUED
    review_state = (
        ReviewState.PENDING
        if initial_status == JobStatus.PENDING_REVIEW
        else ReviewState.NOT_REQUIRED
    )
    try:
        with transaction.atomic():
            group = None
            if is_group:
                group = JobGroup.objects.create(
                    owner=owner,
                    name=spec.name,
                    total=spec.submission.total,
                    concurrency=spec.submission.concurrency,
                )
            jobs = []
            for n in range(count):
                job = Job.objects.create(
                    public_id=Job.new_public_id(spec.framework),
                    name=spec.name,
                    owner=owner,
                    spec=document,
                    framework=spec.framework,
                    status=initial_status,
                    status_reason=str(why_review),
                    status_reason_source=source_of(why_review),
                    review_state=review_state,
                    backend=backend,
                    resource_pool=spec.resource_pool_id,
                    queue=spec.queue,
                    priority=spec.priority,
                    total_cards=spec.total_accelerators,
                    group=group,
                    group_index=n + 1 if is_group else None,
                    submit_key=f"{submit_key}:{n}" if is_group else submit_key,
                    source_job=source_job,
                )
                key = signing_key()
                # A queue task of one is named no place (runtime_env.task_place): "(1/1)" said a
                # group that every local job the API makes is not (qa109).
                placed = is_group and count > 1
                if key and placed:
                    created = recorded(
                        gettext_noop("Job created (%(n)s/%(count)s) with API key %(key)s."),
                        n=n + 1,
                        count=count,
                        key=key,
                    )
                elif key:
                    created = recorded(gettext_noop("Job created with API key %(key)s."), key=key)
                elif placed:
                    created = recorded(
                        gettext_noop("Job created (%(n)s/%(count)s)."), n=n + 1, count=count
                    )
                else:
                    created = recorded(gettext_noop("Job created."))
                job_event(job=job, reason="Created", message=created)
                JobLabel.objects.bulk_create(
                    JobLabel(job=job, key=key, value=value)
                    for key, value in spec_module.stored_labels(document)
                )
                if unread_fields:
                    message, params = fields_not_read(unread_fields)
                    job_event(
                        job=job,
                        reason=FIELDS_NOT_READ,
                        message=recorded(message, **params),
                        warning=True,
                    )
                if initial_status == JobStatus.PENDING_REVIEW:
                    job_event(
                        job=job,
                        reason="ReviewRequired",
                        message=why_review or recorded(gettext_noop("Waiting for a reviewer.")),
                    )
                jobs.append(job)
    except IntegrityError:
        # A concurrent submit with the same key won the race; return what it created.
        return list(Job.objects.filter(submit_key__startswith=submit_key).order_by("id"))
    return jobs


# The job list's label filter suggests at most this many keys and key=value pairs: enough for
# a team's projects and experiments, few enough that the page stays light.
MAX_LABEL_SUGGESTIONS = 200
# ...read from the labels of the user's newest this many jobs: grouping every label of a user
# with 30,000 jobs (3 each) took 111 ms of the job list's 129 ms on SQLite, on every full page;
# these take 6 ms whatever the number (review23). A label only older jobs have is not
# suggested, and still filters when typed.
LABEL_SUGGESTION_JOBS = 1_000


def label_suggestions(*, owner: Any) -> list[str]:
    """What the job list's label filter suggests (its <datalist>): the keys and key=value pairs
    of `owner`'s newest LABEL_SUGGESTION_JOBS jobs, the most used first. One query: those jobs
    read through the (owner, created) index, their labels through the (job, key) one, grouped;
    never another user's labels. A key counts the jobs of the pairs read, so a key is listed
    before each of its values."""
    newest = (
        Job.objects.filter(owner=owner).order_by("-created_at").values("pk")[:LABEL_SUGGESTION_JOBS]
    )
    rows = (
        JobLabel.objects.filter(job__in=Subquery(newest))
        .values("key", "value")
        .annotate(jobs=Count("job"))
        .order_by("-jobs", "key", "value")[:MAX_LABEL_SUGGESTIONS]
    )
    used: dict[str, int] = {}
    for row in rows:
        used[f"{row['key']}={row['value']}"] = row["jobs"]
        used[row["key"]] = used.get(row["key"], 0) + row["jobs"]
    ranked = sorted(used.items(), key=lambda item: (-item[1], item[0]))
    return [text for text, _jobs in ranked[:MAX_LABEL_SUGGESTIONS]]


def labels_in_another_case(
    *, owner: Any, asked: list[tuple[str, str | None]]
) -> dict[tuple[str, str | None], tuple[str, str | None]]:
    """For each label of `asked` (key and value, or a key alone) that `owner`'s jobs have only
    in another case (LR=3e-4 asked, lr=3e-4 held: labels are case-sensitive, as Kubernetes'),
    the label they hold. One query, only asked when a filtered list came out empty."""
    if not asked:
        return {}
    matching = Q()
    for key, value in asked:
        matching |= Q(key__iexact=key) if value is None else Q(key__iexact=key, value__iexact=value)
    held = (
        JobLabel.objects.filter(matching, job__owner=owner)
        .values_list("key", "value")
        .distinct()
        .order_by("key", "value")[:100]
    )
    held = list(held)
    # A label the jobs also hold as asked is not named: the list came out empty for another
    # filter, and "no job has LR=3e-4" would be untrue.
    exact = {(key, value) for key, value in held} | {(key, None) for key, _value in held}
    found: dict[tuple[str, str | None], tuple[str, str | None]] = {}
    for key, value in held:
        for asked_key, asked_value in asked:
            pair = (asked_key, asked_value)
            if pair in found or pair in exact or key.lower() != asked_key.lower():
                continue
            if asked_value is None and key != asked_key:
                found[pair] = (key, None)
            elif (
                asked_value is not None
                and value.lower() == asked_value.lower()
                and (key, value) != pair
            ):
                found[pair] = (key, value)
    return found
