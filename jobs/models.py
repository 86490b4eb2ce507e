from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.db.models.fields.json import KeyTransform
from django.utils import timezone, translation
from django.utils.translation import gettext_lazy as _
from django.utils.translation import gettext_noop, ngettext, pgettext_lazy

from . import spec as spec_module
from .runtime_env import TaskPlace, task_place
from .texts import display_text, list_words, one_line


class JobStatus(models.TextChoices):
    PENDING_REVIEW = "pending_review", _("Pending review")
    QUEUED = "queued", _("Queued")
    SUBMITTING = "submitting", _("Submitting")
    RUNNING = "running", _("Running")
    SUCCEEDED = "succeeded", _("Succeeded")
    FAILED = "failed", _("Failed")
    STOPPING = "stopping", _("Stopping")
    STOPPED = "stopped", _("Stopped")
    TIMED_OUT = "timed_out", _("Timed out")
    SUBMIT_FAILED = "submit_failed", _("Submission failed")
    REJECTED = "rejected", _("Rejected")


S = JobStatus
# The job state machine. A job starts Pending review (when the review policy asks for it)
# or Queued. Queued jobs are dispatched: the local runner goes straight to Running, remote
# backends pass through Submitting (and may report Queued again while the cloud queues it).
# Submit failed and Rejected are not final: the owner may fix and resubmit.
TRANSITIONS: dict[str, frozenset[str]] = {
    # Pending review -> Stopping: only a job Submit again held for review after its last
    # submission was given up on refused looks, whose platform may have made it (left51).
    S.PENDING_REVIEW: frozenset({S.QUEUED, S.REJECTED, S.STOPPING, S.STOPPED}),
    # Queued -> Stopping: a job queued on a platform whose stop the platform has not confirmed.
    S.QUEUED: frozenset(
        {S.SUBMITTING, S.RUNNING, S.STOPPING, S.STOPPED, S.PENDING_REVIEW, S.FAILED}
    ),
    S.SUBMITTING: frozenset({S.QUEUED, S.RUNNING, S.SUBMIT_FAILED, S.STOPPING, S.FAILED}),
    S.RUNNING: frozenset({S.SUCCEEDED, S.FAILED, S.STOPPING, S.TIMED_OUT, S.QUEUED}),
    S.STOPPING: frozenset({S.STOPPED, S.SUCCEEDED, S.FAILED, S.TIMED_OUT}),
    S.SUBMIT_FAILED: frozenset({S.QUEUED, S.PENDING_REVIEW, S.STOPPED}),
    S.REJECTED: frozenset({S.QUEUED, S.PENDING_REVIEW}),
    S.SUCCEEDED: frozenset(),
    S.FAILED: frozenset(),
    S.STOPPED: frozenset(),
    S.TIMED_OUT: frozenset(),
}
FINAL_STATUSES = frozenset(s for s, targets in TRANSITIONS.items() if not targets)
# Statuses in which a job holds (or is about to hold) accelerators.
ACTIVE_STATUSES = frozenset({S.SUBMITTING, S.RUNNING, S.STOPPING})


class ReviewState(models.TextChoices):
    NOT_REQUIRED = "not_required", _("Not required")
    PENDING = "pending", _("Pending")
    APPROVED = "approved", _("Approved")
    REJECTED = "rejected", _("Rejected")
    # Stopped while it waited for review: no longer waiting, and never decided on.
    WITHDRAWN = "withdrawn", _("Withdrawn")


class JobGroup(models.Model):
    """A queue-group submission: `total` tasks of one spec, at most `concurrency` at once."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    name = models.CharField(max_length=50)
    total = models.PositiveIntegerField(default=1)
    concurrency = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = _("queue group")
        verbose_name_plural = _("queue groups")

    def __str__(self) -> str:
        return ngettext(
            "%(name)s (%(total)s task, at most %(concurrency)s at once)",
            "%(name)s (%(total)s tasks, at most %(concurrency)s at once)",
            self.total,
        ) % {
            "name": self.name,
            "total": self.total,
            "concurrency": self.concurrency,
        }


class Priority(models.TextChoices):
    # The console's 高/中/低; "normal" is the AIHC API's value for 中, and English says Normal
    # as AIHC's English docs and the API do (qa91: it said Medium). In context: an event type's
    # Normal is 正常.
    HIGH = "high", _("High")
    NORMAL = "normal", pgettext_lazy("priority", "Normal")
    LOW = "low", _("Low")


class ReplicaStatus(models.TextChoices):
    # The local runner's states and AIHC's pod phases (lowercased). Stopped: ended by a stop,
    # a timeout or a whole-job restart, not on its own.
    PENDING = "pending", pgettext_lazy("replica status", "Pending")
    RUNNING = "running", pgettext_lazy("replica status", "Running")
    SUCCEEDED = "succeeded", pgettext_lazy("replica status", "Succeeded")
    FAILED = "failed", pgettext_lazy("replica status", "Failed")
    STOPPED = "stopped", pgettext_lazy("replica status", "Stopped")
    LOST = "lost", pgettext_lazy("replica status", "Lost")
    UNKNOWN = "unknown", pgettext_lazy("replica status", "Unknown")


# Recorded status reasons that only say the status again (Job.status_reason_says_more).
STATUS_ONLY_REASONS = frozenset({gettext_noop("Stopped.")})


class JobQuerySet(models.QuerySet):
    def with_stored_envs(self) -> JobQuerySet:
        """Each job's envs read in the same query (`env_items`, Job._stored_envs): a queue
        task of one (every local job the API makes) names itself from them (task_place), and
        a list that leaves the spec unread loaded it once per row (qa98: the admin's job list
        made 50 queries more per page of API-made jobs)."""
        return self.annotate(env_items=KeyTransform("envs", KeyTransform("jobSpec", "spec")))


class Job(models.Model):
    objects = JobQuerySet.as_manager()

    public_id = models.CharField(_("job ID"), max_length=64, unique=True, editable=False)
    name = models.CharField(_("name"), max_length=50)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="jobs",
        verbose_name=_("owner"),
    )
    # The canonical spec document (jobs.spec): the AIHC v1 body plus console extensions.
    spec = models.JSONField(_("spec"))
    framework = models.CharField(
        _("framework"),
        max_length=16,
        choices=list(spec_module.FRAMEWORK_LABELS.items()),
        default=spec_module.PYTORCH,
    )
    status = models.CharField(
        _("status"), max_length=16, choices=JobStatus.choices, default=JobStatus.QUEUED
    )
    status_reason = models.TextField(_("status reason"), blank=True)
    # The message the reason was recorded from, to show it in the reader's language.
    status_reason_source = models.JSONField(null=True, blank=True, editable=False)
    backend = models.CharField(_("backend"), max_length=16, default="local")
    external_id = models.CharField(_("external ID"), max_length=128, blank=True)
    # Kubernetes: the KUBERNETES_TRAINING_API the job was created under ("v1", "trainer"; ""
    # before the first create, and for jobs from before the setting: v1), so a change of the
    # setting never looks for a running job under the other API's kind.
    training_api = models.CharField(max_length=16, blank=True, default="", editable=False)
    # Kubernetes: the uid the API server gave the job's resource (its metadata.uid), as its
    # create or the latest read answered it (a restart's new resource has another); "" until
    # then and off Kubernetes. AIHC's GetJob answers it as k8sUID (qa105).
    k8s_uid = models.CharField(max_length=64, blank=True, default="", editable=False)
    # AIHC: the namespace of the job's Kubernetes resource in the pool's cluster, as AIHC's
    # GetJob last answered it (v1's k8sNamespace; a v2 JobItem has none), answered again by
    # the console's GetJob; "" until AIHC answered one, and off AIHC (a Kubernetes pool's jobs
    # are in its pool's namespace: jobs.backends.kubernetes.namespace_of).
    k8s_namespace = models.CharField(max_length=63, blank=True, default="", editable=False)
    # AIHC: the job's BCCL check as AIHC's GetJob last answered it (enableBcclStatus: success,
    # failed or unknown; enableBcclErrorReason), answered again by the console's GetJob
    # (jobs.api_views.bccl_fields); "" until AIHC answered one, and off AIHC.
    bccl_status = models.CharField(max_length=16, blank=True, default="", editable=False)
    bccl_error_reason = models.TextField(blank=True, default="", editable=False)
    # AIHC: until when the worker looks on AIHC for another job carrying this job's id label
    # (jobs.backends.aihc.AihcBackend.stop_duplicates): a create that got no clear answer, or
    # that a worker died sending, may land after the job was created again or ended here.
    duplicate_watch_until = models.DateTimeField(null=True, blank=True, editable=False)
    resource_pool = models.CharField(_("resource pool"), max_length=64)
    queue = models.CharField(_("queue"), max_length=64, default="default")
    priority = models.CharField(
        _("priority"), max_length=8, choices=Priority.choices, default=Priority.NORMAL
    )
    total_cards = models.PositiveIntegerField(_("cards"), default=0)
    # Its cards per card type, as the usage report splits its card-hours (spec.charged_cards:
    # {}: CPU only): worked out from the spec whenever save() writes it, so the report sums
    # this small column instead of reading every job's spec (scale review, session 19).
    cards = models.JSONField(default=dict, editable=False)
    # Its image address, copied from the spec whenever save() writes it (spec.stored_image),
    # so the admin's search finds who runs an image through job_search instead of reading
    # every job's spec (qa98: "who runs nvcr.io/...?" found nothing).
    image = models.CharField(_("image"), max_length=512, blank=True, default="", editable=False)
    group = models.ForeignKey(
        JobGroup,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="jobs",
        verbose_name=_("queue group"),
    )
    # Which task of its queue group this is (1..total), fixed at submit: deleting one task
    # does not renumber the others.
    group_index = models.PositiveIntegerField(null=True, blank=True, editable=False)
    # Makes submission idempotent: a resent or double-clicked submit carries the same key.
    submit_key = models.CharField(max_length=80, unique=True, null=True, blank=True, editable=False)
    source_job = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="copies",
        verbose_name=_("copied from"),
    )
    restarts = models.PositiveIntegerField(_("restarts"), default=0)
    # When the console last asked the platform to delete the job's resource (Kubernetes), set
    # before the delete leaves and cleared when it is refused: the worker, in another process,
    # then takes a resource it finds gone for the stop's doing (Stopped), not lost (Failed),
    # also before the web has saved Stopping.
    stop_sent_at = models.DateTimeField(null=True, blank=True, editable=False)
    # The status reason a stop asked the job to end with (Backend.stop's message: a staff
    # member's Stop reason), kept before the stop is sent to the job's platform: a remote job
    # ends Stopped later, in the worker's sync, once the platform reports it ended, and ends
    # with this, the platform's words going in its Stopped event (fix108: they replaced it).
    # Cleared when the platform refuses the stop. "": no such reason (the platform's words).
    stop_reason = models.TextField(blank=True, default="", editable=False)
    stop_reason_source = models.JSONField(null=True, blank=True, editable=False)
    # When the console began a fault-tolerance restart of the job's Kubernetes resource (set
    # with `restarts` + 1 and the Restarted event, before the failed resource's delete
    # leaves), cleared once the next one is created: while set, the worker's sync waits for
    # the failed one to be gone and creates it again, also after a worker killed in between.
    restart_begun_at = models.DateTimeField(null=True, blank=True, editable=False)
    # Review (jobs.review): whether the job had to wait for a reviewer, and their decision.
    review_state = models.CharField(
        _("review"), max_length=16, choices=ReviewState.choices, default=ReviewState.NOT_REQUIRED
    )
    reviewed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("reviewed by"),
    )
    reviewed_at = models.DateTimeField(_("reviewed"), null=True, blank=True)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    started_at = models.DateTimeField(_("started"), null=True, blank=True)
    finished_at = models.DateTimeField(_("finished"), null=True, blank=True)
    # Its card time (jobs.usage) leaves out the time it spent back in Queued after its first
    # start: each such wait is a JobWait of its own (jobs.services.job_transition).
    # When the worker deletes it for its retention (任务退出后自动删除): stored when it ends
    # (jobs.services.job_transition), so the worker finds those due by this index rather
    # than by reading every finished job's spec (qa107). None: never (jobs.worker.deletes_at).
    deletes_at = models.DateTimeField(null=True, blank=True, editable=False, db_index=True)

    class Meta:
        verbose_name = _("job")
        verbose_name_plural = _("jobs")
        ordering = ["-created_at", "-id"]
        permissions = [("review_job", _("Can review jobs: approve, reject, stop, resubmit"))]
        indexes = [
            # The admin changelist's default order; keeps it fast at any number of jobs.
            models.Index(fields=["-created_at", "-id"], name="job_created"),
            models.Index(fields=["owner", "-created_at"], name="job_owner_created"),
            models.Index(fields=["status", "priority", "created_at"], name="job_status_sched"),
            models.Index(fields=["resource_pool", "queue"], name="job_pool_queue"),
            # The pools a user's jobs ran in (the job list's pool filter): read from the index
            # alone, without visiting each of their jobs. Also a user's jobs in one pool newest
            # first (the API's ListJobs and DescribeJobs), read in order: job_pool_created
            # below would otherwise be taken for them (SQLite keeps no statistics here), over
            # every user's jobs of the pool. (0026: was owner and pool alone, job_owner_pool.)
            models.Index(
                fields=["owner", "resource_pool", "-created_at", "-id"],
                name="job_owner_pool_created",
            ),
            # The admin's job list filtered by pool, newest first, and its date drill-down's
            # first and last day: read in order from this, where job_pool_queue made the
            # database sort every job of the pool (a year's worth: scale review, session 18).
            # Not one by status: SQLite then took it for a user's own list filtered by status
            # too (no statistics), over every user's jobs of that status.
            models.Index(fields=["resource_pool", "-created_at", "-id"], name="job_pool_created"),
            # The worker's look for AIHC duplicates, once a minute: the few jobs watched,
            # not every job (stop_duplicates).
            models.Index(
                fields=["duplicate_watch_until"],
                name="job_duplicate_watch",
                condition=models.Q(duplicate_watch_until__isnull=False),
            ),
            # A user's running and waiting jobs (the pools page's own jobs, their quota's
            # use), without reading every job they ever had; also a user's jobs of one status
            # newest first (the job list's status filter), read in order.
            models.Index(fields=["owner", "status", "-created_at", "-id"], name="job_owner_status"),
            # The admin's job list filtered by review state (审核), newest first, its count and
            # its date drill-down's first and last day, as job_pool_created for the pool
            # filter: each was a scan of every job (scale follow-up, session 18b).
            models.Index(fields=["review_state", "-created_at", "-id"], name="job_review_created"),
            # The admin's job list filtered by status (?status__exact=failed), newest first,
            # read in order: the database sorted every job of that status (qa107: 3,400 rows at
            # 20,000 jobs, 8 to 17 times a bare page). A user's own list by status still reads
            # job_owner_status (owner and status, both equal: SQLite prefers it).
            models.Index(fields=["status", "-created_at", "-id"], name="job_status_created"),
            # The admin's search (JobAdmin.get_search_results): a substring of the name has
            # no index to seek, but its count and date drill-down read this (a tenth of the
            # table: no spec) instead of every job's row; the owner and creation time are in
            # it so that they never visit a row (left21); the image too, which the search
            # finds as well (qa98), so a word looked for in names and images still reads
            # only this.
            models.Index(fields=["name", "owner", "created_at", "image"], name="job_search"),
            # job_search's columns and the status reason, which the search compares too
            # (qa114), on SQLite alone: made by 0066's own SQL, declared here (0068) so that a
            # later migration that remakes the table on SQLite (an AlterField does) makes it
            # again rather than dropping it unsaid (review67). Not made on PostgreSQL (0066,
            # 0068): a B-tree entry holds at most about 2,700 bytes there and a reason may be
            # longer, so a job's save would fail; it has a trigram index of the reason
            # instead. So a squash of these migrations, or a RenameIndex of it, must keep
            # 0066's and 0068's split by database (PostgreSQL's RemoveIndex says IF EXISTS).
            models.Index(
                fields=["name", "owner", "created_at", "image", "status_reason"],
                name="job_search_reason",
            ),
            # Everything the usage report reads of a job, with what it groups by first: its
            # pass over a period's jobs reads this index alone, in group order, not each job's
            # row with its spec (scale review, session 19: half the time of reading the rows
            # and sorting the groups, at 30,000 jobs). Not the owner first: SQLite (no
            # statistics) then took it for a user's jobs by status, over all their jobs.
            models.Index(
                fields=[
                    "cards",
                    "owner",
                    "backend",
                    "resource_pool",
                    "total_cards",
                    "created_at",
                    "started_at",
                    "finished_at",
                ],
                name="job_usage",
            ),
            # A user's usage ("My usage", its CSV): their jobs that ended since the period
            # began, or have not ended (jobs.usage._running), not every job they ever had.
            models.Index(fields=["owner", "finished_at"], name="job_owner_finished"),
            # The admin's job list filtered by when jobs finished (?finished=today: qa114),
            # its count and its date drill-down's first and last day: the jobs of that range
            # alone, not every job read newest first. Only jobs that finished: SQLite takes a
            # partial index only for a query that implies its condition, so the usage
            # report's "not finished, or finished since" (jobs.usage._running) keeps reading
            # job_usage as it did.
            models.Index(
                fields=["finished_at"],
                name="job_finished",
                condition=models.Q(finished_at__isnull=False),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.public_id})"

    def save(self, *args: Any, **kwargs: Any) -> None:
        # Here rather than in each place that stores a spec: every create and save of the
        # whole row passes through, so none can forget it. A queryset's update() or
        # bulk_create() does not: those that write `spec` or `total_cards` set `cards` too.
        update_fields = kwargs.get("update_fields")
        if update_fields is not None:
            # Read once: Django takes any iterable here, and a generator read by the check
            # below would reach Django empty (nothing saved) or as `cards` alone.
            update_fields = kwargs["update_fields"] = set(update_fields)
        if update_fields is None or {"spec", "total_cards"} & update_fields:
            self.cards = spec_module.charged_cards(self.spec, self.total_cards)
            if update_fields is not None:
                kwargs["update_fields"] = {*update_fields, "cards"}
        if update_fields is None or "spec" in update_fields:
            self.image = spec_module.stored_image(self.spec)
            if update_fields is not None:
                kwargs["update_fields"] = {*kwargs["update_fields"], "image"}
        super().save(*args, **kwargs)

    @staticmethod
    def new_public_id(framework: str) -> str:
        return f"{spec_module.JOB_ID_PREFIX.get(framework, 'job')}-{uuid.uuid4()}"

    @property
    def is_final(self) -> bool:
        return self.status in FINAL_STATUSES

    @property
    def resource_namespace(self) -> str:
        """The namespace of the job's Kubernetes resource: its Kubernetes pool's (a pool is a
        namespace there), or the one AIHC's GetJob last answered for an AIHC job
        (k8s_namespace); "" on the local runner, and for an AIHC job until answered."""
        if self.backend == "kubernetes":
            from .kubernetes.config import namespace_of

            return namespace_of(self.resource_pool)
        return self.k8s_namespace

    @property
    def status_reason_shown(self) -> str:
        return display_text(self.status_reason, self.status_reason_source)

    @property
    def status_reason_one_line(self) -> str:
        """status_reason_shown where there is room for one line (the job list): a platform's
        message of several lines with its lines joined (texts.one_line). The job page, the
        admin and the API keep its line breaks."""
        return one_line(self.status_reason_shown)

    @property
    def status_reason_says_more(self) -> bool:
        """Whether the reason says more than the status: a bare "Stopped." under the badge
        已停止, after "状态已变为：已停止", said it a third time (copy edit), so the job page
        leaves it out. A reason that says more (who stopped it, a stop before a delete) stays."""
        if not self.status_reason:
            return False
        return (self.status_reason_source or {}).get("key") not in STATUS_ONLY_REASONS

    @property
    def task_name(self) -> str:
        """Its name as the job list shows it: a queue group's tasks share a name, so a task
        has its place in the group after it, `qa-grp 2/3`, or `qa-grp 6/8 (again)` (task_place).
        Reads the group (one query unless selected with it)."""
        place = self.task_place
        return self.name if place is None else place.named(self.name)

    @property
    def task_place(self) -> TaskPlace | None:
        """Which task of its queue group it is (runtime_env.task_place). A queue task of one
        reads its envs: a list annotates them as `env_items` so that no row loads its spec."""
        return task_place(self, self._stored_envs)

    def _stored_envs(self) -> Any:
        if "env_items" in self.__dict__:
            return self.__dict__["env_items"]
        job_spec = self.spec.get("jobSpec") if isinstance(self.spec, dict) else None
        return job_spec.get("envs") if isinstance(job_spec, dict) else None

    def job_spec(self) -> spec_module.JobSpec:
        return spec_module.parse_document(self.spec)

    @property
    def asks_privileged(self) -> bool:
        """Whether its stored spec asks for privileged containers (jobSpec.privileged), read
        without parsing the whole spec (a list of jobs says it on each)."""
        job_spec = self.spec.get("jobSpec") if isinstance(self.spec, dict) else None
        return isinstance(job_spec, dict) and job_spec.get("privileged") is True

    @property
    def labels_text(self) -> str:
        """Its labels (标签) as "key=value, key=value", from its stored spec (a reviewer's page
        and the review's confirmation say them without a query)."""
        return ", ".join(f"{k}={v}" for k, v in spec_module.stored_labels(self.spec))

    def secret_values(self) -> list[str]:
        """What to mask in anything shown of the job, also once its stored spec no longer
        parses (spec.stored_secret_values)."""
        return spec_module.stored_secret_values(self.spec)


class JobLabel(models.Model):
    """One of a job's labels (标签), as its stored spec has them: the job list filters by
    `?label=key=value` on this indexed table (a JOIN per label asked for), which a query on the
    spec's JSON list of {"key", "value"} objects cannot do through an index on SQLite or
    PostgreSQL alike. Written with the job (jobs.services.jobs_submit); a job's labels never
    change after. Migration 0033 filled it for the jobs there were."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="labels")
    # jobs.spec's rule: a 253-character prefix, "/" and a 63-character name; values 63.
    key = models.CharField(max_length=317)
    value = models.CharField(max_length=63, blank=True)

    class Meta:
        verbose_name = _("job label")
        verbose_name_plural = _("job labels")
        constraints = [
            models.UniqueConstraint(fields=["job", "key"], name="job_label_unique_key"),
        ]
        indexes = [
            # The list's filter: the jobs holding key=value, each then checked to be the user's.
            models.Index(fields=["key", "value", "job"], name="job_label_key_value"),
        ]

    def __str__(self) -> str:
        return f"{self.key}={self.value}"


class EventType(models.TextChoices):
    NORMAL = "Normal", _("Normal")
    WARNING = "Warning", _("Warning")


# Event reasons are codes, as in Kubernetes (the API, the admin's filters and the tests use
# them); pages show these labels. Reasons not listed (AIHC's own, "AIHC:<k8s reason>") show as
# they are.
EVENT_REASONS = {
    "Created": pgettext_lazy("event reason", "Created"),
    "FieldsNotRead": pgettext_lazy("event reason", "Request fields not read"),
    "ReviewRequired": pgettext_lazy("event reason", "Review required"),
    "Approved": pgettext_lazy("event reason", "Approved"),
    "Rejected": pgettext_lazy("event reason", "Rejected"),
    "Resubmitted": pgettext_lazy("event reason", "Resubmitted"),
    "Submitted": pgettext_lazy("event reason", "Submitted to the backend"),
    "SubmitTimedOut": pgettext_lazy("event reason", "Submit timed out"),
    "SubmitServerError": pgettext_lazy("event reason", "Submit met a server error"),
    "SubmitRetry": pgettext_lazy("event reason", "Submit to be retried"),
    "SubmitDeferred": pgettext_lazy("event reason", "Submit deferred"),
    # The platform refused the look for what an unanswered create made (left46).
    "LookRefused": pgettext_lazy("event reason", "Look refused"),
    "SubmitFailed": pgettext_lazy("event reason", "Submit failed"),
    # Another AIHC job carrying this job's id label, made by a create that landed late (qa80).
    "DuplicateStopped": pgettext_lazy("event reason", "Duplicate stopped"),
    "DuplicateFound": pgettext_lazy("event reason", "Duplicate found"),
    "Queued": pgettext_lazy("event reason", "Queued"),
    "Submitting": pgettext_lazy("event reason", "Submitting"),
    "Started": pgettext_lazy("event reason", "Started"),
    "Running": pgettext_lazy("event reason", "Running"),
    "StartFailed": pgettext_lazy("event reason", "Start failed"),
    "ReplicaFailed": pgettext_lazy("event reason", "Replica failed"),
    "LimitsNotEnforced": pgettext_lazy("event reason", "CPU and memory not enforced"),
    "Restarted": pgettext_lazy("event reason", "Restarted (fault tolerance)"),
    # A Kubernetes restart that could not keep the failed run's logs (fix115).
    "LogsNotKept": pgettext_lazy("event reason", "Logs not kept"),
    "HangSuspected": pgettext_lazy("event reason", "Hang suspected"),
    "HangCleared": pgettext_lazy("event reason", "Hang cleared"),
    "StacksCaptured": pgettext_lazy("event reason", "Stacks captured"),
    "StopRequested": pgettext_lazy("event reason", "Stop requested"),
    "StopFailed": pgettext_lazy("event reason", "Stop failed"),
    "StopUnconfirmed": pgettext_lazy("event reason", "Stop not confirmed"),
    "Stopping": pgettext_lazy("event reason", "Stopping"),
    "Stopped": pgettext_lazy("event reason", "Stopped"),
    "PriorityChanged": pgettext_lazy("event reason", "Priority changed"),
    "Timeout": pgettext_lazy("event reason", "Timeout reached"),
    "TimedOut": pgettext_lazy("event reason", "Timed out"),
    "TimeoutStopFailed": pgettext_lazy("event reason", "Timeout stop not taken"),
    # A TensorFlow job's chief (worker 0) exited 0: the others are being stopped (QA 58).
    "Succeeding": pgettext_lazy("event reason", "Result decided: stopping the rest"),
    "Succeeded": pgettext_lazy("event reason", "Succeeded"),
    "Failed": pgettext_lazy("event reason", "Failed"),
    "Lost": pgettext_lazy("event reason", "Lost"),
    "Unschedulable": pgettext_lazy("event reason", "Unschedulable"),
    "SpecUnreadable": pgettext_lazy("event reason", "Spec unreadable"),
    "DiskPressure": pgettext_lazy("event reason", "Waiting for disk space"),
    "QuotaExceeded": pgettext_lazy("event reason", "Waiting for your quota"),
    "WaitingInQueue": pgettext_lazy("event reason", "Waiting in its queue"),
    "StandaloneWaiting": pgettext_lazy("event reason", "Standalone job waiting for room"),
    "NetworkUnavailable": pgettext_lazy("event reason", "Waiting for isolated networking"),
    # The scheduler's other holds (jobs.scheduler.HELD_REASONS; qa115: shown as their codes).
    "SandboxUnavailable": pgettext_lazy("event reason", "Waiting for the sandbox"),
    "CardNodesMissing": pgettext_lazy("event reason", "Waiting for device nodes"),
    "OwnerDeactivated": pgettext_lazy("event reason", "Waiting: owner's account deactivated"),
    "NotFollowed": pgettext_lazy("event reason", "Not followed by the active worker"),
    "FollowedAgain": pgettext_lazy("event reason", "Followed again after a takeover"),
    "OutboundLost": pgettext_lazy("event reason", "Outbound network lost"),
    "MarkedLost": pgettext_lazy("event reason", "Marked as lost"),
    "LeftoverEnded": pgettext_lazy("event reason", "Leftover processes ended"),
    # A Queued job's folder held an earlier run's files (a restored backup, qa110).
    "EarlierRunSetAside": pgettext_lazy("event reason", "Earlier run's files set aside"),
    "EndedUnwatched": pgettext_lazy("event reason", "Ended while no worker ran"),
    "DeleteFailed": pgettext_lazy("event reason", "Deletion failed"),
    "UnknownStatus": pgettext_lazy("event reason", "Unknown status"),
    "AlertSent": pgettext_lazy("event reason", "Alert sent"),
    "AlertFailed": pgettext_lazy("event reason", "Alert failed"),
    "AlertNotSent": pgettext_lazy("event reason", "Alert not sent"),
}


class JobEvent(models.Model):
    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="events")
    created_at = models.DateTimeField(_("time"), auto_now_add=True)
    type = models.CharField(
        _("type"), max_length=8, choices=EventType.choices, default=EventType.NORMAL
    )
    reason = models.CharField(_("reason"), max_length=64)
    message = models.TextField(_("message"), blank=True)
    message_source = models.JSONField(null=True, blank=True, editable=False)  # as Job's
    # Who caused the event (a reviewer's action, the owner's stop); None for the system.
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("by"),
    )

    class Meta:
        verbose_name = _("job event")
        verbose_name_plural = _("job events")
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["job", "created_at"], name="jobevent_job_time")]

    def __str__(self) -> str:
        return f"{self.type} {self.reason}: {self.message[:60]}"

    @property
    def reason_label(self) -> str:
        return str(EVENT_REASONS.get(self.reason, self.reason))

    @property
    def message_shown(self) -> str:
        return display_text(self.message, self.message_source)

    @property
    def message_after_label(self) -> str:
        """message_shown for a list that shows reason_label before it: without the label again
        when the message begins with it ("Waiting for your quota · Waiting for your quota: your
        quota is…", qa92), as a status reason's message does to stand alone; old events too."""
        message, label = self.message_shown, self.reason_label
        for colon in (":", "："):
            if message.startswith(label + colon):
                return message[len(label) + 1 :].lstrip()
        return message


class AlertChannel(models.TextChoices):
    """How an alert goes out; each has its own hourly bound per user (jobs.alerts)."""

    EMAIL = "email", _("email")
    WEBHOOK = "webhook", _("webhook")


class UserPreference(models.Model):
    """What a user chose for themselves, kept on the server: the language the console's mails
    to them are written in (jobs.languages), and the time zone their pages show times in
    (jobs.time_zones). The language cookie says the language to the browser it was set in; a
    mail sent by the worker has no browser to ask. No row: neither chosen yet (mails in the
    console's language, LANGUAGE_CODE; times in its TIME_ZONE)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="preference",
    )
    # A code of LANGUAGES, as the language cookie holds it; empty: none chosen (the row was
    # made for the time zone).
    language = models.CharField(max_length=16)
    # The IANA zone the user reads times in (jobs.time_zones); empty: the console's TIME_ZONE.
    time_zone = models.CharField(max_length=64, blank=True, default="")

    class Meta:
        verbose_name = _("user preference")
        verbose_name_plural = _("user preferences")

    def __str__(self) -> str:
        return f"{self.user_id} {self.language}"


class AlertDelivery(models.Model):
    """One alert sent for a user's jobs on one channel (jobs.alerts): what the hourly bounds
    on alerts count (ALERT_EMAILS_PER_HOUR: one row per alert email, whatever its number of
    addresses; ALERT_WEBHOOKS_PER_HOUR: one row per alert posted to its job's webhooks,
    whatever their number). Rows older than the hour are deleted as new ones come."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    channel = models.CharField(
        max_length=8, choices=AlertChannel.choices, default=AlertChannel.EMAIL
    )
    sent_at = models.DateTimeField(db_index=False)

    class Meta:
        verbose_name = _("alert delivery")
        verbose_name_plural = _("alert deliveries")
        indexes = [
            models.Index(fields=["owner", "channel", "sent_at"], name="alertdelivery_owner_time")
        ]

    def __str__(self) -> str:
        return f"{self.owner_id} {self.channel} {self.sent_at:%Y-%m-%d %H:%M:%S}"


class JobReplica(models.Model):
    """One instance of one role (e.g. worker-1), as the backend reports or runs it."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="replicas")
    role = models.CharField(_("role"), max_length=32)
    index = models.PositiveIntegerField(_("index"))
    status = models.CharField(
        _("status"), max_length=16, choices=ReplicaStatus.choices, default=ReplicaStatus.PENDING
    )
    restarts = models.PositiveIntegerField(_("restarts"), default=0)
    pid = models.IntegerField(null=True, blank=True)
    exit_code = models.IntegerField(null=True, blank=True)
    node = models.CharField(_("node"), max_length=128, blank=True)
    # A Kubernetes replica's pod as the cluster names it (`<name>-<12 hex>-master-0`), which a
    # user gives the cluster's admin; not AIHC's `<job name>-master-0` the API's podList shows.
    pod_name = models.CharField(_("pod"), max_length=253, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Local runner: `pid` is the replica's process-group leader; its start time
    # ("<boot id>:<ticks since boot>") tells a recycled pid from ours after a worker restart.
    process_start = models.CharField(max_length=64, blank=True)
    devices = models.CharField(_("cards"), max_length=256, blank=True)  # the host's card numbers
    cpus = models.CharField(_("CPU cores"), max_length=256, blank=True)  # pinned cores, "0,1"
    # Why it ended as it did, when its status alone does not say (a local replica killed for
    # its memory limit: "OOMKilled: ..."); a recorded text, see jobs.texts.
    reason = models.CharField(_("reason"), max_length=500, blank=True)
    reason_source = models.JSONField(null=True, blank=True, editable=False)

    class Meta:
        verbose_name = _("job replica")
        verbose_name_plural = _("job replicas")
        ordering = ["job", "id"]
        constraints = [
            models.UniqueConstraint(fields=["job", "role", "index"], name="jobreplica_unique")
        ]

    def __str__(self) -> str:
        return f"{self.role}-{self.index}"

    @property
    def reason_shown(self) -> str:
        return display_text(self.reason, self.reason_source)

    @property
    def devices_shown(self) -> str:
        """Its card numbers as a list in the reader's language ("0, 1"; 中文 "0、1"), as the
        job's Started event says them (qa92: the table said "0,1", the event "[0, 1]")."""
        return list_words(self.devices.split(","))


class Draft(models.Model):
    """A job being built in the wizard, saved per step so nothing typed is lost."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="drafts"
    )
    # Per step: the submitted form data, as typed (valid or not).
    data = models.JSONField(default=dict)
    completed_steps = models.JSONField(default=list)
    source_job = models.ForeignKey(
        Job, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    submitted_at = models.DateTimeField(null=True, blank=True)
    # The one-time key of the page whose "New draft" button made it: the same click sent
    # twice (a double click, a resend) finds this draft instead of making an empty second.
    create_key = models.CharField(max_length=32, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = _("draft")
        verbose_name_plural = _("drafts")
        ordering = ["-updated_at"]
        indexes = [models.Index(fields=["owner", "-updated_at"], name="draft_owner_updated")]
        constraints = [
            models.UniqueConstraint(
                fields=["owner", "create_key"],
                condition=~models.Q(create_key=""),
                name="draft_owner_create_key",
            )
        ]

    def __str__(self) -> str:
        return str(self.id)


class ReviewMode(models.TextChoices):
    NONE = "none", _("No review")
    ALL = "all", _("Review every job")
    ABOVE_CARDS = "above_cards", _("Review jobs above a number of cards")
    QUEUES = "queues", _("Review jobs in the listed queues")


class ReviewPolicy(models.Model):
    """The one review policy (jobs.review). Until a superuser saves it in the admin, the
    settings REVIEW_POLICY / REVIEW_ABOVE_CARDS / REVIEW_QUEUES / REVIEW_ALLOW_SELF_APPROVAL
    apply."""

    mode = models.CharField(_("review"), max_length=16, choices=ReviewMode.choices)
    above_cards = models.PositiveIntegerField(
        _("more than N cards"),
        default=8,
        help_text=_("With “review jobs above a number of cards”: jobs asking for more cards."),
    )
    queues = models.TextField(
        _("queues"),
        blank=True,
        help_text=_(
            "With “review jobs in the listed queues”: one per line, a queue name (any pool) "
            "or pool/queue."
        ),
    )
    # Off: a job's own submitter never approves it, superusers included (four eyes).
    allow_self_approval = models.BooleanField(
        _("reviewers may approve their own jobs"),
        default=False,
        help_text=_(
            "Off: a job a reviewer submitted is approved by another reviewer (superusers "
            "included). Rejecting one's own job stays possible."
        ),
    )
    updated_at = models.DateTimeField(_("updated"), auto_now=True)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("updated by"),
    )

    class Meta:
        verbose_name = _("review policy")
        verbose_name_plural = _("review policy")

    def __str__(self) -> str:
        return str(self.get_mode_display())


class CardQuota(models.Model):
    """A cap on what one user holds at once in the local pool (jobs.quotas), as Slurm's
    MaxTRESPerUser or a Kueue ClusterQueue's quota: at most `max_cards` cards of
    `card_type` (blank: of every type, counted together) and/or at most `max_running_jobs`
    running local jobs (using that card type; blank: any). For a user, for each member of a
    group, or (neither) for everyone; which one applies is jobs.quotas.quota_limits."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="card_quotas",
        verbose_name=_("user"),
    )
    group = models.ForeignKey(
        "auth.Group",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="card_quotas",
        verbose_name=_("group"),
    )
    card_type = models.CharField(
        _("card type"),
        max_length=64,
        blank=True,
        help_text=_("Blank: cards of every type, counted together."),
    )
    max_cards = models.PositiveIntegerField(
        _("at most N cards"),
        null=True,
        blank=True,
        help_text=_("Held at once by the user's running local jobs. Blank: no card limit."),
    )
    max_running_jobs = models.PositiveIntegerField(
        _("at most M running jobs"),
        null=True,
        blank=True,
        help_text=_(
            "Local jobs running at once (using this card type, if one is set). Blank: no job limit."
        ),
    )
    updated_at = models.DateTimeField(_("updated"), auto_now=True)

    class Meta:
        verbose_name = _("card quota")
        verbose_name_plural = _("card quotas")
        ordering = ["user__username", "group__name", "card_type", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(user__isnull=True) | Q(group__isnull=True),
                name="cardquota_user_or_group",
                violation_error_message=_(
                    "A quota is for a user or for a group, not both; leave both blank for everyone."
                ),
            ),
            models.CheckConstraint(
                condition=Q(max_cards__isnull=False) | Q(max_running_jobs__isnull=False),
                name="cardquota_some_limit",
                violation_error_message=_("Set at most N cards, at most M running jobs, or both."),
            ),
            models.UniqueConstraint(
                fields=["user", "card_type"],
                condition=Q(user__isnull=False),
                name="cardquota_user_card",
                violation_error_message=_("This user already has a quota for this card type."),
            ),
            models.UniqueConstraint(
                fields=["group", "card_type"],
                condition=Q(group__isnull=False),
                name="cardquota_group_card",
                violation_error_message=_("This group already has a quota for this card type."),
            ),
            models.UniqueConstraint(
                fields=["card_type"],
                condition=Q(user__isnull=True, group__isnull=True),
                name="cardquota_everyone_card",
                violation_error_message=_(
                    "There already is a quota for everyone for this card type."
                ),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.subject}: {self.card_type or _('every card type')}"

    @staticmethod
    def repr_in_language(text: str) -> str:
        """A quota's name as str() gave it in any of the console's languages (the admin's
        history keeps it as written, "alice: every card type"), in the active one: its words
        (everyone, group X, every card type) said again (qa98). Other text is left as it is."""
        subject, colon, card_type = text.rpartition(": ")
        if not colon:
            return text
        for code, _name in settings.LANGUAGES:
            with translation.override(code):
                every, everyone = str(_("every card type")), str(_("everyone"))
                group = str(_("group %(name)s")).partition("%(name)s")
            if card_type == every:
                card_type = str(_("every card type"))
            if subject == everyone:
                subject = str(_("everyone"))
            elif group[0] and subject.startswith(group[0]) and subject.endswith(group[2]):
                name = subject[len(group[0]) : len(subject) - len(group[2])]
                subject = _("group %(name)s") % {"name": name}
        return f"{subject}: {card_type}"

    @property
    def subject(self) -> str:
        if self.user_id is not None:
            return str(self.user)
        if self.group_id is not None:
            return _("group %(name)s") % {"name": self.group}
        return str(_("everyone"))


class LoginFailure(models.Model):
    """One failed log-in, counted per username and per address (jobs.throttle)."""

    username = models.CharField(max_length=150)
    ip = models.GenericIPAddressField(null=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        verbose_name = _("failed login")
        verbose_name_plural = _("failed logins")
        indexes = [
            models.Index(fields=["username", "created_at"], name="loginfailure_user"),
            models.Index(fields=["ip", "created_at"], name="loginfailure_ip"),
        ]


class LocalRun(models.Model):
    """The local runner's bookkeeping for one job: what it holds and what it was asked to do.

    Cards and cores are held from dispatch until every process of the job is gone, so the
    scheduler never hands them out twice, even across a worker restart.
    """

    job = models.OneToOneField(Job, on_delete=models.CASCADE, related_name="local_run")
    attempt = models.PositiveIntegerField(default=1)
    devices = models.JSONField(default=dict)  # accelerator type -> card indices
    cpus = models.JSONField(default=list)  # cores pinned exclusively (CPU 独占)
    master_port = models.PositiveIntegerField(null=True, blank=True)
    # Set when processes must end: the status to land on (stopped, timed_out, failed,
    # or queued for a fault-tolerance restart) and when SIGKILL follows SIGTERM.
    stop_target = models.CharField(max_length=16, blank=True)
    stop_message = models.TextField(blank=True)
    stop_message_source = models.JSONField(null=True, blank=True)  # see jobs.texts
    kill_at = models.DateTimeField(null=True, blank=True)
    # A tear-down of a job in an old run folder (jobs.runner._end_the_rest_where_it_ran and
    # _stop_where_it_ran) commits its kill_at before it sends SIGTERM, and clears this once
    # sent: a worker killed in between leaves it set, and the next look sends that SIGTERM
    # with a grace period of its own, never a SIGKILL alone.
    sigterm_due = models.BooleanField(default=False)
    delete_when_stopped = models.BooleanField(default=False)
    # The access key ID of the API request that asked for that deletion ("" for a console
    # page's Delete): the worker deletes the job once it has stopped, outside the request, and
    # its DeletedJob row still names the key (jobs.services.signing_key).
    delete_api_key = models.CharField(max_length=64, blank=True)
    hang_warned_at = models.DateTimeField(null=True, blank=True)
    attempt_started_at = models.DateTimeField(null=True, blank=True)
    # The job's jobRunning alert is still to be decided (it goes once the sandbox of every
    # replica of the first attempt has started). Cleared in the transaction that queues it, so a worker
    # killed before that commit leaves it to the next worker, and none sends it twice.
    running_alert_due = models.BooleanField(default=False)
    # Where its replicas run: the starting worker's host and LOCAL_RUN_DIR
    # (jobs.runner.runner_key), whose files alone say whether they live. "" for a run
    # started before 0015 (followed by whichever worker is active, as before).
    runner = models.CharField(max_length=1024, blank=True)
    # The host uid and gid this attempt's replicas were started as (LOCAL_JOB_UID_BASE,
    # jobs.job_users), the worker's own user included (since session 19), recorded by the
    # runner as it starts them; None: not started yet, or a run started before 0025 (or as
    # the worker's own user before session 19): nothing recorded, the job page then says
    # nothing rather than guess from today's setting.
    run_uid = models.PositiveBigIntegerField(null=True, blank=True)
    run_gid = models.PositiveBigIntegerField(null=True, blank=True)
    # Whether this attempt's replicas run on this machine's network (LOCAL_JOB_NETWORK=host)
    # rather than in a namespace of their own, recorded by the runner as it starts them: what
    # the job ran with is a fact of the job, which a later change of the setting does not
    # change (jobs.backends.local.job_on_host_network). None: not started yet, or started
    # before 0046.
    host_network = models.BooleanField(null=True, blank=True)

    class Meta:
        verbose_name = _("local run")
        verbose_name_plural = _("local runs")

    def __str__(self) -> str:
        return f"local run of {self.job_id} (attempt {self.attempt})"


class StackCaptureTrigger(models.TextChoices):
    HANG = "hang", _("hang detected")
    MANUAL = "manual", _("manual")


class StackCapture(models.Model):
    """One capture of a local job's call stacks (jobs.stacks, the job page's Hang analysis).

    Asked for (pending: `finished_at` None) by the worker's hang detection or the owner's
    Capture stacks; taken by the worker following the job, which fills `replicas`: one entry
    per replica, {"label", "error", "processes": [{"pid", "command", "error", "native_error",
    "threads": [{"name", "frames": [{"name", "file", "line", "native", "library"}]}]}]} (a
    native frame has `native` and its `library`; `native_error`, the reason of a native read
    that failed, its Python-only read kept), secret values masked. Deleted with
    the job (as its logs are), and at most jobs.stacks.CAPTURES_KEPT per job."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="stack_captures")
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    trigger = models.CharField(max_length=8, choices=StackCaptureTrigger.choices)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    replicas = models.JSONField(default=list)

    class Meta:
        verbose_name = _("stack capture")
        verbose_name_plural = _("stack captures")
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["job", "created_at"], name="stackcapture_job_time")]

    def __str__(self) -> str:
        return f"stacks of {self.job_id} at {self.created_at} ({self.trigger})"


class ApiKeyRevokeReason(models.TextChoices):
    """Who or what revoked an access key (ApiKey.revoke_reason)."""

    OWNER = "owner", _("its owner")
    OWNER_ALL = "owner_all", _("its owner, with all their keys")
    PASSWORD_CHANGE = "password", _("its owner's password change")
    STAFF = "staff", _("staff, in the admin")
    # Someone else set its owner's password (a superuser in the admin, manage.py
    # changepassword, code): jobs.api_keys.password_saved.
    PASSWORD_RESET = "password_reset", _("its owner's password set by an administrator")


class ApiKey(models.Model):
    """An access key pair for the AIHC-compatible API (jobs.api_keys): scripts and SDKs sign
    their requests with bce-auth-v1 as they do for AIHC, and act as the key's owner.

    The secret key cannot be stored as a one-way hash (the server recomputes the HMAC with
    it), so it is stored encrypted with a key derived from SECRET_KEY (`secret_sealed`,
    see jobs.api_keys.seal): a database dump alone gives no usable secret. It is shown once,
    when the key is created, and never again (not on the key page, not in the admin)."""

    access_key_id = models.CharField(_("access key ID"), max_length=64, unique=True, editable=False)
    secret_sealed = models.TextField(editable=False)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="api_keys",
        verbose_name=_("owner"),
    )
    description = models.CharField(_("description"), max_length=100, blank=True)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    last_used_at = models.DateTimeField(_("last used"), null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(_("revoked"), null=True, blank=True, editable=False)
    # When the key stops working (jobs.api_keys: checked on the web server's clock); null:
    # never. Chosen when the key is made and never changed; keys made before expiry existed
    # keep null.
    expires_at = models.DateTimeField(_("expires"), null=True, blank=True, editable=False)
    # Why it was revoked: the audit trace of a revocation, beside revoked_at ("" for keys
    # revoked before this was kept).
    revoke_reason = models.CharField(
        _("revoked by"), max_length=16, blank=True, editable=False, choices=ApiKeyRevokeReason
    )
    # The keys page's one-time form key (jobs.api_keys.api_key_create): the same form sent
    # again (a reload of the page showing the secret, a double click) makes no second key.
    # "" for keys made without one (before it existed).
    create_key = models.CharField(max_length=32, blank=True, default="", editable=False)

    class Meta:
        verbose_name = _("API access key")
        verbose_name_plural = _("API access keys")
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["owner", "create_key"],
                condition=~models.Q(create_key=""),
                name="apikey_owner_create_key",
            )
        ]

    def __str__(self) -> str:
        return self.access_key_id

    @property
    def is_revoked(self) -> bool:
        return self.revoked_at is not None

    def is_expired(self, *, now: datetime | None = None) -> bool:
        return self.expires_at is not None and self.expires_at <= (now or timezone.now())

    @property
    def expired(self) -> bool:
        """Expired now (for templates)."""
        return self.is_expired()


class DeletedJob(models.Model):
    """What is kept of a deleted job so that an old link to its page (an alert mail, a
    bookmark) tells its owner what became of it, instead of a page that might never have
    existed: written by jobs.actions.job_delete, in the deletion's own savepoint, for every
    job it deletes (its owner's Delete, the API's, the retention's). Its name and ID, which
    the owner's own mails and bookmarks hold already; no spec, command or secret. Gone with
    its owner (a user deleted takes theirs: the page is the owner's only)."""

    RETENTION = "retention"

    public_id = models.CharField(_("job ID"), max_length=64, unique=True, editable=False)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="+",
        editable=False,
        verbose_name=_("owner"),
    )
    name = models.CharField(_("name"), max_length=50, editable=False)
    deleted_at = models.DateTimeField(_("deleted"), editable=False)
    # Why: RETENTION, by the worker once its retention period had passed (任务退出后自动删除),
    # with that period as the spec gave it ("1d"); "" for any other deletion.
    reason = models.CharField(max_length=16, blank=True, editable=False)
    retention = models.CharField(max_length=16, blank=True, editable=False)
    # The access key ID of the API request that deleted it (left31: as the job's Created and
    # Stopped events name the key, qa52); "" for a console page's Delete and the worker's
    # retention; null for rows written before 0037, which did not record it (a console page
    # or the API). The ID, never the secret.
    api_key = models.CharField(_("API key"), max_length=64, null=True, blank=True, editable=False)
    # The job's Kubernetes Secret ("<namespace>/<name>") its deletion could not remove, the
    # API server not answering in the Delete's short wait: the worker removes it once the
    # cluster answers (Worker.remove_secrets_left), then clears this. Its name, never a value.
    secret_left = models.CharField(max_length=320, blank=True, editable=False)
    # A queue group's task: which one (Job.group_index, 1..total) of how many, so that its page
    # and the admin name it as the job list did, `qa-grp 2/3` (qa76: the group's tasks share a
    # name, and a deleted one's page did not say which it was). Null for a standalone job and
    # for rows written before 0044.
    group_index = models.PositiveIntegerField(null=True, blank=True, editable=False)
    group_total = models.PositiveIntegerField(null=True, blank=True, editable=False)
    # Its place is a sweep's task run again (Job.task_place's `again`): group_index and
    # group_total are that task's, "6/8 (again)", not its own group of one's 1/1.
    group_again = models.BooleanField(default=False, editable=False)
    # AIHC: the job's Job.duplicate_watch_until, when it was deleted while a create of it that
    # got no clear answer might still land (qa81: deleted once Stopped, as its Delete had
    # said to, the late AIHC job then ran on, followed by nothing), and where the worker looks
    # for it meanwhile: {"pool": …, "queue": …} (AihcBackend.stop_duplicates).
    duplicate_watch_until = models.DateTimeField(null=True, blank=True, editable=False)
    duplicate_watch = models.JSONField(null=True, blank=True, editable=False)
    # What that watch found: each AIHC job carrying its label that such a create made, as
    # {"id": …, "at": ISO time, "error": …}, stopped at "at" ("error" empty) or its stop
    # refused then ("error": AIHC's code, HTTP status and request id, never its words, which
    # may quote a secret value a deleted job no longer keeps to mask). Shown on its Deleted
    # jobs admin page (qa83: said in the worker's log only). Null: none found.
    duplicates_found = models.JSONField(null=True, blank=True, editable=False)

    class Meta:
        verbose_name = _("deleted job")
        verbose_name_plural = _("deleted jobs")

    def __str__(self) -> str:
        return self.public_id

    def duplicate_found(self, job_id: str, *, refused: str = "") -> None:
        """Records AIHC job `job_id`, found by the watch: stopped now, or its stop `refused`
        (recorded once a job, not at every minute's try)."""
        found = list(self.duplicates_found or [])
        if refused and any(f.get("id") == job_id for f in found):
            return
        found.append({"id": job_id, "at": timezone.now().isoformat(), "error": refused})
        DeletedJob.objects.filter(pk=self.pk).update(duplicates_found=found)
        self.duplicates_found = found

    @property
    def task_name(self) -> str:
        """Its name, with its place in its queue group for a group's task, as Job.task_name
        says it (`qa-grp 2/3`, a sweep's task run again `qa-grp 6/8 (again)`). A queue task
        of one deleted before fix131 recorded 1/1, which Job no longer says (task_place): no
        place for it either."""
        if self.group_index is None or self.group_total is None:
            return self.name
        if self.group_total == 1 and not self.group_again:
            return self.name
        return TaskPlace(self.group_index, self.group_total, again=self.group_again).named(
            self.name
        )


class UsageRecord(models.Model):
    """What the usage report (jobs.usage) needs of a job that ran, kept when the job is
    deleted, whoever or whatever deletes it: written in the deletion's own transaction, so
    last month's figures do not change after the fact. Holds no spec, command or secret."""

    public_id = models.CharField(_("job ID"), max_length=64, editable=False)
    name = models.CharField(_("name"), max_length=50, editable=False)  # the job's, for My usage
    # The owner's id and name when the job was deleted: kept after the user is deleted too
    # (ids are never reused), so their usage still shows under their name.
    owner_pk = models.BigIntegerField(editable=False)
    username = models.CharField(_("owner"), max_length=150, editable=False)
    # The owner's group names then, sorted: the report counts a deleted user's usage in them.
    groups = models.JSONField(default=list, editable=False)
    backend = models.CharField(_("backend"), max_length=16, editable=False)
    resource_pool = models.CharField(_("resource pool"), max_length=64, editable=False)
    total_cards = models.PositiveIntegerField(_("cards"), editable=False)
    # Cards per card type, as the report splits them (summing to total_cards; {}: CPU only).
    cards = models.JSONField(default=dict, editable=False)
    started_at = models.DateTimeField(_("started"), editable=False)
    # Its finish, or the deletion when it was deleted before it finished. Its waits to run
    # again (JobWait.usage_record) are left out of that time.
    ended_at = models.DateTimeField(_("ended"), editable=False)
    deleted_at = models.DateTimeField(_("deleted"), editable=False)

    class Meta:
        verbose_name = _("usage record of a deleted job")
        verbose_name_plural = _("usage records of deleted jobs")
        ordering = ["-ended_at", "-id"]
        # The report reads the records that ended after its period began.
        indexes = [models.Index(fields=["ended_at"], name="usagerecord_ended")]

    def __str__(self) -> str:
        return self.public_id


class JobWait(models.Model):
    """A wait of a job back in Queued after its first start (a Kubernetes job restarted as a
    whole whose new pods the cluster has not placed, an AIHC job Pending again): it holds no
    cards meanwhile, so its card time (jobs.usage) leaves out each wait's part of a period.
    Each wait is kept as its own interval (review58: one total taken from the earliest part
    changed a closed month's figures later). Opened and closed by
    jobs.services.job_transition; moved to the job's UsageRecord when the job is deleted."""

    job = models.ForeignKey(
        Job, null=True, blank=True, on_delete=models.SET_NULL, related_name="waits"
    )
    usage_record = models.ForeignKey(
        UsageRecord, null=True, blank=True, on_delete=models.CASCADE, related_name="waits"
    )
    began_at = models.DateTimeField(editable=False)
    # None: still waiting (it counts as waiting up to now).
    ended_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        # Named for the admin's permission lists (a group's or user's permissions).
        verbose_name = _("wait to run again")
        verbose_name_plural = _("waits to run again")
        ordering = ["began_at", "id"]

    def __str__(self) -> str:
        return f"{self.began_at} – {self.ended_at or ''}"


class WorkerHeartbeat(models.Model):
    """The active worker's lease and heartbeat (jobs.health): one row, held by the one worker
    that dispatches on this database, renewed by it at most every few seconds and read by the
    web server, the health endpoint and the banner. In the database because that is all
    workers and web servers on several machines share (a file in the var dir would be on one
    of them only). Times are the database's clock (NOW()), never a machine's."""

    # Renewed at (the lease's age is measured from it).
    seen_at = models.DateTimeField(_("last seen"), null=True)
    # When the holder took the lease.
    started_at = models.DateTimeField(_("started"), null=True)
    # Set when it stopped cleanly (SIGTERM, Ctrl-C): the lease is free at once.
    stopped_at = models.DateTimeField(_("stopped"), null=True)
    host = models.CharField(_("host"), max_length=255, blank=True)
    pid = models.PositiveIntegerField(_("process ID"), null=True)
    version = models.CharField(_("version"), max_length=32, blank=True)
    # The holder: the WorkerProcess.instance of the process that holds the lease ("" for a
    # row written before 0015).
    holder = models.CharField(max_length=32, blank=True)
    run_dir = models.CharField(_("run directory"), max_length=1024, blank=True)
    # Why the holder cannot start local jobs ("" when it can): its start-up check's finding,
    # e.g. the kernel refusing the network namespaces of LOCAL_JOB_NETWORK=isolated.
    network_problem = models.TextField(blank=True, default="")
    # Why the last worker started on this database refused to run, its settings failing its
    # start-up checks (jobs.job_users.problems), "" when none did since a worker last took
    # the lease (taking it clears them): in English, as /healthz says it; `refused_source`
    # keeps each reason's message and parameters, said again in a reader's language.
    refused = models.TextField(blank=True, default="")
    refused_source = models.JSONField(blank=True, default=list)
    refused_at = models.DateTimeField(null=True)
    # The holder's remote thread (AIHC and Kubernetes submits and syncs, beside the loop that
    # renews this row): when it last got to a job or began a pass (null: no remote thread
    # reported, a row from before 0041), whether the holder finds it stuck (waiting longer
    # than jobs.worker.REMOTE_STUCK_SECONDS) and the platform it waits on then. Written with
    # each renewal, so staff and /healthz see what only the worker's log said (left40).
    remote_progress_at = models.DateTimeField(null=True)
    remote_stuck = models.BooleanField(default=False)
    remote_platform = models.CharField(max_length=32, blank=True, default="")

    class Meta:
        verbose_name = _("worker heartbeat")
        verbose_name_plural = _("worker heartbeat")

    def __str__(self) -> str:
        return f"worker {self.pid} on {self.host}"


class WorkerProcess(models.Model):
    """One worker process that ran on this database, active or standing by (jobs.health):
    each beats its own row, so staff see every worker, not only the one holding the lease."""

    # Random per process: a pid and a host name may come back.
    instance = models.CharField(max_length=32, unique=True)
    host = models.CharField(_("host"), max_length=255, blank=True)
    pid = models.PositiveIntegerField(_("process ID"), null=True)
    run_dir = models.CharField(_("run directory"), max_length=1024, blank=True)
    version = models.CharField(_("version"), max_length=32, blank=True)
    started_at = models.DateTimeField(_("started"), null=True)
    seen_at = models.DateTimeField(_("last seen"), null=True, db_index=True)
    stopped_at = models.DateTimeField(_("stopped"), null=True)
    network_problem = models.TextField(blank=True, default="")  # as WorkerHeartbeat's

    class Meta:
        verbose_name = _("worker process")
        verbose_name_plural = _("worker processes")

    def __str__(self) -> str:
        return f"worker {self.pid} on {self.host}"


class KnownPool(models.Model):
    """The last name the console saw of each pool a remote backend offered (jobs.pools.
    known_pools_keep): AIHC names its pools in its own inventory, which a server process knows
    only once it has read it. Pages that name pools without reading a backend's figures (the
    job list's refresh, a job page) fall back to this, so a process that has not read AIHC
    yet still names its pools, and a pool no longer offered keeps its last name (marked so).
    A pool's id never changes; a rename overwrites the name."""

    pool_id = models.CharField(_("resource pool"), max_length=64, primary_key=True)
    backend = models.CharField(_("backend"), max_length=16)
    name = models.CharField(_("name"), max_length=255)
    seen_at = models.DateTimeField(_("last seen"))

    class Meta:
        verbose_name = _("known pool")
        verbose_name_plural = _("known pools")

    def __str__(self) -> str:
        return self.pool_id
