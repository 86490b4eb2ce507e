"""Review of submitted jobs: the policy that decides which jobs wait for a reviewer, and the
reviewer's actions (approve, reject, stop, resubmit, mark as lost).

The policy comes from settings (REVIEW_POLICY, REVIEW_ABOVE_CARDS, REVIEW_QUEUES,
REVIEW_ALLOW_SELF_APPROVAL) until a superuser saves it in the admin; from then on the saved
ReviewPolicy row applies. REVIEW_PRIVILEGED (hold every job asking for privileged containers)
is the operator's alone and applies whatever policy is saved: a setting, not a policy field,
so no superuser's edit in the admin turns it off (and no migration was needed). Unless it allows self-approval, nobody approves a job they
submitted, superusers included: a second person does (rejecting one's own job stays allowed,
it only withdraws it). Every action goes through `job_transition`, so it is recorded as an
event with who (the event's actor) and when, and it cannot race the worker into an
impossible state.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth.models import Group, Permission
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import Count, Q
from django.urls import reverse
from django.utils import timezone, translation
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from . import spec as spec_module
from .actions import ActionError
from .alerts import job_alert, job_link, named_for_alert
from .backends import PLATFORM_NAMES, configured, unconfigured_remote
from .health import active_runner
from .languages import reader_language
from .models import (
    Job,
    JobReplica,
    JobStatus,
    LocalRun,
    ReplicaStatus,
    ReviewMode,
    ReviewPolicy,
    ReviewState,
)
from .services import job_event, job_transition, recorded
from .texts import display_text, joined, ngettext_noop, recorded_plural, source_of

logger = logging.getLogger(__name__)

REVIEWERS_GROUP = "Reviewers"
# What a reviewer may do in the admin: see jobs and their events, and act on jobs.
REVIEWER_PERMISSIONS = ["view_job", "view_jobevent", "review_job"]


# -- policy -----------------------------------------------------------------------------


def policy_from_settings() -> ReviewPolicy:
    """The policy the settings describe (unsaved): the default until a superuser saves one."""
    mode = settings.REVIEW_POLICY if settings.REVIEW_POLICY in ReviewMode.values else "none"
    return ReviewPolicy(
        pk=1,
        mode=mode,
        above_cards=settings.REVIEW_ABOVE_CARDS,
        queues="\n".join(settings.REVIEW_QUEUES),
        allow_self_approval=settings.REVIEW_ALLOW_SELF_APPROVAL,
    )


def current_policy() -> ReviewPolicy:
    return ReviewPolicy.objects.filter(pk=1).first() or policy_from_settings()


def policy_queues(policy: ReviewPolicy) -> set[str]:
    return {
        line.strip()
        for chunk in policy.queues.splitlines()
        for line in chunk.split(",")
        if line.strip()
    }


def review_reason(*, spec: spec_module.JobSpec, policy: ReviewPolicy | None = None) -> str:
    """Why the policy holds this job for review (shown to the owner), or "" when it does not."""
    if spec.privileged and settings.REVIEW_PRIVILEGED:
        # Before the policy's own rules: the operator's, not the saved policy's to turn off.
        return recorded(
            gettext_noop(
                "Waiting for review: the job asks for privileged containers, which a reviewer "
                "approves first."
            )
        )
    policy = policy or current_policy()
    if policy.mode == ReviewMode.ALL:
        return recorded(gettext_noop("Waiting for review: every job is reviewed before it runs."))
    if policy.mode == ReviewMode.ABOVE_CARDS and spec.total_accelerators > policy.above_cards:
        return recorded_plural(
            ngettext_noop(
                "Waiting for review: the job asks for %(cards)s card, more than %(limit)s.",
                "Waiting for review: the job asks for %(cards)s cards, more than %(limit)s.",
            ),
            "cards",
            cards=spec.total_accelerators,
            limit=policy.above_cards,
        )
    if policy.mode == ReviewMode.QUEUES:
        queues = policy_queues(policy)
        if spec.queue in queues or f"{spec.resource_pool_id}/{spec.queue}" in queues:
            return recorded(
                gettext_noop(
                    "Waiting for review: jobs in queue %(queue)s are reviewed before they run."
                ),
                queue=spec.queue,
            )
    return ""


# -- reviewers --------------------------------------------------------------------------


def ensure_reviewers_group(**kwargs: Any) -> None:
    """Creates the Reviewers group with its permissions; runs after every migrate."""
    group, _ = Group.objects.get_or_create(name=REVIEWERS_GROUP)
    permissions = Permission.objects.filter(
        content_type__app_label="jobs", codename__in=REVIEWER_PERMISSIONS
    )
    group.permissions.add(*permissions)


# -- actions ----------------------------------------------------------------------------


def _notify_owner(*, job: Job, subject: str, body: str) -> None:
    """Queues a mail to the owner about a review decision, when they have an address: sent
    by the worker, so a slow or unreachable mail server never holds up the reviewer's page
    (a bulk approval would otherwise wait for each mail's timeout in turn)."""
    from .tasks import mail_owner

    if not job.owner.email:
        return
    try:
        # The texts with their sources: the worker writes them in the owner's language.
        mail_owner.enqueue(
            job_id=job.pk,
            subject=str(subject),
            body=str(body),
            subject_source=source_of(subject),
            body_source=source_of(body),
        )
    except Exception:
        # The queue's trouble must not undo a review decision; the event stays.
        logger.exception("Could not queue the review mail for job %s", job.public_id)


def send_owner_mail(
    *,
    job: Job,
    subject: str,
    body: str,
    subject_source: dict[str, Any] | None = None,
    body_source: dict[str, Any] | None = None,
) -> None:
    """Sends the review mail (jobs.tasks.mail_owner), with a link to the job, in the owner's
    language (jobs.languages). Texts without a source (queued by a release before it) go as
    they were recorded, in the console's language."""
    if not job.owner.email:
        return
    link = job_link(job)
    with translation.override(reader_language(user=job.owner)):
        subject = display_text(subject, subject_source)
        body = display_text(body, body_source)
    try:
        send_mail(
            subject=subject,
            message=f"{body}\n\n{link}\n",
            from_email=None,
            recipient_list=[job.owner.email],
        )
    except Exception:
        # A mail server being down must not undo a review decision; the event stays.
        logger.exception("Could not mail %s about job %s", job.owner.email, job.public_id)


def own_job(*, job: Job, reviewer: Any) -> bool:
    return bool(job.owner_id == reviewer.pk)


def may_approve(*, job: Job, reviewer: Any, policy: ReviewPolicy | None = None) -> bool:
    """Whether the reviewer may approve this job: not one they submitted, unless the policy
    allows self-approval (superusers follow the same rule)."""
    if not own_job(job=job, reviewer=reviewer):
        return True
    return (policy or current_policy()).allow_self_approval


def job_approve(*, job: Job, reviewer: Any) -> bool:
    """Pending review -> Queued: the worker dispatches it. Refused (ActionError) for the
    reviewer's own job unless the policy allows self-approval, for a job whose stored
    spec no longer reads: it could never start, and an approval should not turn into a
    failure the reviewer did not choose. It stays Pending review for them to reject. Also
    refused, with the numbers, for a standalone local job that cannot start now (its cards
    taken while it waited for review, its queue blocked, its owner's quota full): a
    standalone job never waits, and approving it would have queued it to wait. It stays
    Pending review, to be approved once it fits or rejected."""
    from .wizard import standalone_approval_refusals

    if job.status != JobStatus.PENDING_REVIEW:
        return False
    if not may_approve(job=job, reviewer=reviewer):
        raise ActionError(
            _("You submitted this job: the review policy has another reviewer approve it.")
        )
    try:
        spec = job.job_spec()
    except spec_module.SpecError as exc:
        raise ActionError(
            _(
                "This job's stored spec cannot be read (fields: %(fields)s), so it cannot be "
                "approved. Reject it: its owner submits it again from a new draft."
            )
            % {"fields": exc.fields}
        ) from None
    message = (
        recorded(
            gettext_noop("Approved by %(user)s, who submitted it (the review policy allows it)."),
            user=reviewer.get_username(),
        )
        if own_job(job=job, reviewer=reviewer)
        else recorded(gettext_noop("Approved by %(user)s."), user=reviewer.get_username())
    )
    with transaction.atomic():
        # Read and queued under the cards lock, one decision at a time, as the wizard's
        # submit is: two approvals (or an approval and a submit) for the last cards at the
        # same instant would both find them idle.
        refusals = standalone_approval_refusals(spec=spec, job=job)
        if refusals:
            raise ActionError(
                _(
                    "Not approved: a standalone job must start at once, and this one cannot "
                    "start now. It stays Pending review: approve it once it fits, or reject it "
                    "so that its owner submits it as a queue task. %(why)s"
                )
                % {"why": " ".join(refusals)}
            )
        done = job_transition(
            job=job,
            to=JobStatus.QUEUED,
            reason="Approved",
            message=message,
            actor=reviewer,
            review_state=ReviewState.APPROVED,
            reviewed_by=reviewer,
            reviewed_at=timezone.now(),
        )
    if done:
        _notify_owner(
            job=job,
            subject=recorded(gettext_noop("Job %(name)s approved"), name=job.task_name),
            body=recorded(
                gettext_noop("Your job %(name)s (%(id)s) was approved and is queued to run."),
                name=job.task_name,
                id=job.public_id,
            ),
        )
    return done


def job_reject(*, job: Job, reviewer: Any, reason: str) -> bool:
    """Pending review -> Rejected; the reason is the job's status reason the owner sees."""
    reason = reason.strip()
    if not reason:
        raise ValueError("A rejection needs a reason.")
    if job.status != JobStatus.PENDING_REVIEW:
        return False
    with transaction.atomic():
        # The status reason is the reviewer's words alone (the owner's page and list say them
        # under 已拒绝); the event names the reviewer too, as an approval's does (qa98).
        done = job_transition(
            job=job,
            to=JobStatus.REJECTED,
            reason="Rejected",
            message=reason,
            event=False,
            review_state=ReviewState.REJECTED,
            reviewed_by=reviewer,
            reviewed_at=timezone.now(),
        )
        if done:
            job_event(
                job=job,
                reason="Rejected",
                message=recorded(
                    gettext_noop("Rejected by %(user)s: %(reason)s"),
                    user=reviewer.get_username(),
                    reason=reason,
                ),
                warning=True,
                actor=reviewer,
            )
    if done:
        _notify_owner(
            job=job,
            subject=recorded(gettext_noop("Job %(name)s rejected"), name=job.task_name),
            body=recorded(
                gettext_noop("Your job %(name)s (%(id)s) was rejected: %(reason)s"),
                name=job.task_name,
                id=job.public_id,
                reason=reason,
            ),
        )
    return done


def job_resubmit(*, job: Job, actor: Any) -> bool:
    """Rejected or Submit failed -> Queued, or Pending review when the policy asks. Queued at
    once only if it may start now when it is a standalone local job, as for an approval
    (ActionError with the numbers otherwise; it stays as it was)."""
    from .wizard import standalone_approval_refusals

    if job.status not in (JobStatus.REJECTED, JobStatus.SUBMIT_FAILED):
        return False
    try:
        spec = job.job_spec()
        why_review = review_reason(spec=spec)
    except spec_module.SpecError as exc:
        raise ActionError(
            _(
                "This job's stored spec cannot be read (fields: %(fields)s), so it cannot be "
                "resubmitted."
            )
            % {"fields": exc.fields}
        ) from None
    by = recorded(gettext_noop("Resubmitted by %(user)s."), user=actor.get_username())
    if why_review:
        return job_transition(
            job=job,
            to=JobStatus.PENDING_REVIEW,
            reason="Resubmitted",
            message=joined(by, why_review),
            actor=actor,
            review_state=ReviewState.PENDING,
            reviewed_by=None,
            reviewed_at=None,
        )
    fields: dict[str, Any] = {}
    if job.review_state == ReviewState.REJECTED:
        # The policy no longer asks for it. The rejecting reviewer and time go with the
        # rejection, as when it is held for review again (its events keep who did what):
        # left, the job page read "Review: not required, reviewed by <the rejecter>".
        fields.update(review_state=ReviewState.NOT_REQUIRED, reviewed_by=None, reviewed_at=None)
    with transaction.atomic():
        # Queued at once, so checked as an approval is: a standalone job never waits.
        refusals = standalone_approval_refusals(spec=spec, job=job)
        if refusals:
            raise ActionError(
                _(
                    "Not resubmitted: a standalone job must start at once, and this one cannot "
                    "start now. %(why)s"
                )
                % {"why": " ".join(refusals)}
            )
        return job_transition(
            job=job, to=JobStatus.QUEUED, reason="Resubmitted", message=by, actor=actor, **fields
        )


# -- lost local jobs ----------------------------------------------------------------------
# A local job's processes are followed only by a worker on the host and run directory that
# started them (jobs.runner.followed_here). If that machine is gone for good, nothing ends
# the job: a reviewer marks it as lost. Decisions: offered only while no active worker
# follows the run (one elsewhere, or none running at all: then nothing follows it either);
# it ends the job at once, Failed (Stopped if someone had asked it to stop), without
# touching any process (they are on the other machine); its cards go back to the pool; a
# worker that comes back there ends what still runs (jobs.runner.end_leftover_replicas).
#
# A remote job whose platform this console has no usable settings for (never set up, or its
# credentials taken away: jobs.backends.configured) is followed by nothing either: no sync reads its status, a Stop reaches no
# platform, and its card-hours counted for ever (qa114: 12 such jobs, 39% of a month's
# report). It is marked as lost the same way, its replicas shown ended with it; a platform
# that still runs it is the operator's to stop there. While its backend is configured its
# platform follows it, and Mark as lost is not offered.

LOST_STATUSES = frozenset({JobStatus.RUNNING, JobStatus.STOPPING})


def markable_lost(*, active: str | None) -> Q:
    """The jobs that may be marked as lost, `active` being where the active worker runs
    local jobs (jobs.health.active_runner; None: no worker runs)."""
    q = Q(backend="local", status__in=LOST_STATUSES, local_run__isnull=False)
    if active is not None:
        q &= ~Q(local_run__runner__in=["", active])
    return q | Q(backend__in=unconfigured_remote(), status__in=LOST_STATUSES)


@dataclass(frozen=True)
class Unfollowed:
    """The running or stopping jobs on remote backends not configured now (markable_lost's),
    for the admin's index: how many, their platforms' names, and the job list showing them."""

    count: int
    platforms: str
    url: str


def unfollowed_jobs() -> Unfollowed | None:
    """Unfollowed, or None when there are none (one query; none while every backend is
    configured)."""
    backends = unconfigured_remote()
    if not backends:
        return None
    found = dict(
        Job.objects.filter(backend__in=backends, status__in=LOST_STATUSES)
        .order_by()
        .values_list("backend")
        .annotate(count=Count("pk"))
    )
    if not found:
        return None
    return Unfollowed(
        count=sum(found.values()),
        platforms=", ".join(PLATFORM_NAMES.get(name, name) for name in sorted(found)),
        # The job list's UnfollowedFilter.
        url=f"{reverse('admin:jobs_job_changelist')}?unfollowed=1",
    )


def lost_refusal(*, job: Job, active: str | None) -> str:
    """Why the job cannot be marked as lost ("" when it can), for the reviewer."""
    if job.backend != "local" and configured(job.backend):
        return _(
            "Only a job of the local pool can be marked as lost; its platform follows this one."
        )
    if job.status not in LOST_STATUSES:
        return _("Only a running or stopping job can be marked as lost.")
    if job.backend != "local":
        return ""  # its backend is not configured: nothing follows it (markable_lost)
    run = LocalRun.objects.filter(job=job).values_list("runner", flat=True).first()
    if run is None:
        return _("Only a running or stopping job can be marked as lost.")
    if active is not None and run in ("", active):
        return _(
            "The active worker follows this job: stop it instead (Mark as lost is for a job "
            "whose worker is gone with its machine)."
        )
    return ""


def _ended_as_recorded(*, job: Job, reviewer: Any) -> bool:
    """Ends a running job marked as lost with the end its replicas recorded where it ran, when
    that folder is on this host and says how every replica ended (jobs.runner
    .exits_recorded_where_it_ran): Succeeded, Failed with the replica's exit code (or with
    the failure its worker had decided), or Timed out at its limit, and its alert, instead of
    Failed for being lost (qa102: a backup restored into another CONSOLE_VAR_DIR left a job
    that had finished meanwhile Running, and marking it lost ended a succeeded job Failed). A
    restart its worker had decided leaves it Failed for being lost (review 54). Called inside
    job_mark_lost's transaction."""
    from .runner import exits_recorded_where_it_ran, job_end_as_recorded  # it imports much

    run = LocalRun.objects.filter(job=job).first()
    end = exits_recorded_where_it_ran(job, run) if run is not None else None
    if end is None:
        return False
    user = reviewer.get_username()
    if end.succeeded and not end.why:  # a TensorFlow job's says what its chief decided
        message = recorded(
            gettext_noop(
                "Marked as lost by %(user)s, and ended as it ended where it ran (another run "
                "directory on this machine): all replicas exited with code 0."
            ),
            user=user,
        )
    else:
        message = recorded(
            gettext_noop(
                "Marked as lost by %(user)s, and ended as it ended where it ran (another run "
                "directory on this machine): %(why)s"
            ),
            user=user,
            why=end.why or "",
        )
    done = job_end_as_recorded(job=job, end=end, message=message, actor=reviewer)
    if done:
        logger.warning(
            "%s marked as lost by %s, ended %s from its exit records",
            job.public_id,
            user,
            job.status,
        )
    return done


def _lost_remote_message(*, job: Job, reviewer: Any, stopping: bool) -> str:
    """The reason a remote job whose backend is not configured is marked as lost with."""
    values = {
        "user": reviewer.get_username(),
        "platform": PLATFORM_NAMES.get(job.backend, job.backend),
    }
    if stopping:
        return recorded(
            gettext_noop(
                "Marked as lost by %(user)s while stopping: its platform (%(platform)s) is not "
                "configured on this console, so nothing could stop it from here. Its card time "
                "ends now; if it still runs on %(platform)s, stop it there."
            ),
            **values,
        )
    return recorded(
        gettext_noop(
            "Marked as lost by %(user)s: its platform (%(platform)s) is not configured on this "
            "console, so nothing follows it from here. Its card time ends now; if it still runs "
            "on %(platform)s, stop it there."
        ),
        **values,
    )


def job_mark_lost(*, job: Job, reviewer: Any) -> bool:
    """Ends a local job that no worker can follow any more, or a remote one whose backend is
    not configured now: Failed, or Stopped if it was Stopping, naming the reviewer; its cards
    are released (they are counted while it runs); no process is signalled. A jobFailed alert goes as for any failure. Refused
    (ActionError) when the job is not one to mark (lost_refusal)."""
    with transaction.atomic():
        # The run's row is held as request_stop holds it; the active worker is read inside,
        # so a worker taking the lease where it started is not missed in between.
        LocalRun.objects.select_for_update().filter(job=job).first()
        job.refresh_from_db()
        refusal = lost_refusal(job=job, active=active_runner())
        if refusal:
            raise ActionError(refusal)
        stopping = job.status == JobStatus.STOPPING
        remote = job.backend != "local"
        if not remote and not stopping and _ended_as_recorded(job=job, reviewer=reviewer):
            return True
        message = (
            _lost_remote_message(job=job, reviewer=reviewer, stopping=stopping)
            if remote
            else (
                recorded(
                    gettext_noop(
                        "Marked as lost by %(user)s while stopping: the worker where it ran (another "
                        "machine or run directory) is gone, so it could not be stopped from here. "
                        "Its cards are released; if its processes still run there, the worker ends "
                        "them once it runs there again."
                    ),
                    user=reviewer.get_username(),
                )
                if stopping
                else recorded(
                    gettext_noop(
                        "Marked as lost by %(user)s: the worker where it ran (another machine or run "
                        "directory) is gone, so it could not be followed from here. Its cards are "
                        "released; if its processes still run there, the worker ends them once it "
                        "runs there again."
                    ),
                    user=reviewer.get_username(),
                )
            )
        )
        done = job_transition(
            job=job,
            to=JobStatus.STOPPED if stopping else JobStatus.FAILED,
            reason="MarkedLost",
            message=message,
            warning=True,
            actor=reviewer,
        )
        if done and remote:
            # As a remote job's end closes them (RemoteBackend._close_replicas): no sync will.
            JobReplica.objects.filter(
                job=job, status__in=[ReplicaStatus.PENDING, ReplicaStatus.RUNNING]
            ).update(status=ReplicaStatus.STOPPED, finished_at=job.finished_at)
        if done and not stopping:
            job_alert(job=job, item="jobFailed", message=named_for_alert(job=job, message=message))
    if done:
        logger.warning("%s marked as lost by %s", job.public_id, reviewer.get_username())
    return done
