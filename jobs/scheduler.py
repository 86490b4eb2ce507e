"""Which queued local jobs start now, and where a waiting job stands in line.

Rules (decisions):
- The queue tasks of every queue are taken in one order: by priority (high > normal >
  low), then first come first served (submit time, then job id). A queue's name plays no
  part: until session 35 the queues were served in the order of their names, and a low task
  of `default` took the cards a high task of `research` submitted before it waited for
  (QA 63).
- The first job of a queue that does not fit blocks the rest of that queue for this pass
  (no back-filling), so a large job is not starved by a stream of small ones. Other queues
  still use what is left: their jobs further down the order may start before it.
- A task of a queue group is skipped (without blocking its queue) while the group already
  runs `concurrency` tasks.
- A job that could never fit the pool (more cards than exist) fails at once instead of
  blocking its queue forever.
- A job whose stored spec this console no longer reads (stored by an older version) fails
  at once, naming the fields (SpecUnreadable), when a pass comes to it: it could never
  start, and skipping it would leave it Queued for ever. It stops nothing else.
- Cards are counted per type and never over-allocated; at most LOCAL_MAX_RUNNING_JOBS
  local jobs run at once; a CPU-exclusive job needs cores no other running job may use.
- Jobs Pending review are never dispatched: only Queued jobs are considered.
- No job starts while the disk of LOCAL_RUN_DIR has less than LOCAL_DISK_MIN_FREE_GB free
  (the kubelet's disk pressure), nor less than HEALTH_DISK_FREE_MB, where /healthz calls it
  full, whatever LOCAL_DISK_MIN_FREE_GB: each job that would start now says so and blocks its
  queue until there is room. So does a job whose folder the disk had no room to make as it
  started (ENOSPC: jobs.runner.make_run_folder), before it is marked Running (qa112).
- A job whose start would put its owner over their card quota (jobs.quotas) is set aside,
  saying why: it does not block its queue (Kueue's BestEffortFIFO), so other users' jobs
  behind it, and its owner's smaller ones that fit, start. It starts by itself once its
  owner's jobs hold little enough.
- A job whose owner's account is deactivated (is_active off, in the admin) is set aside,
  as for a quota: it stays Queued, saying why once (OWNER_DEACTIVATED), holds no cards in
  the idle figure and blocks no queue; once the account is active again it starts in its
  turn (qa98: a deactivated user's queued job started and took the cards). The remote
  backends' jobs not sent yet wait the same way, all but one whose create got no clear
  answer, which goes on to its submit's look (jobs.worker: dispatch_remote).
- No job starts while the worker cannot make the network namespaces of
  LOCAL_JOB_NETWORK=isolated (its start-up check): as for disk, each job that would start
  now says so and blocks its queue. Nor while bubblewrap is missing at LOCAL_BWRAP
  (SANDBOX_UNAVAILABLE, asked once a pass): a fact of the machine that installing it mends,
  where failing would fail every queued job in turn (fix126). A job whose shim found it gone
  as it started is put back to Queued with that reason (jobs.runner.supervise, qa112).
- A job needing more cards of a type than have their device node on this machine (the
  others are not offered: jobs.runner.current_capacity), but no more than the pool has,
  waits for the nodes (CARD_NODES_MISSING), saying so once, in its place: a queue task
  blocks its queue, a standalone job everything behind it (as for cards it lacks). Nodes
  go missing for a while (the driver reloaded); failing it, as fix126 did, failed every
  queued job asking a card in one pass (review58). A job that needs more than the pool
  has at all fails (Unschedulable) whatever the nodes.
- A job refused at start (jobs.runner.start_refusal: a volume it may no longer mount, a mount
  over a file of this machine, more cards than have their device nodes...) fails from Queued
  before it is given any cards or a running-jobs slot: the jobs behind it are served as if it
  had not been there (review57, fix126).
- Standalone jobs (独立任务) come first: each pass starts the Queued standalone jobs, in
  submit order, before any queue task, whatever the queue tasks' queues and priorities. The
  wizard, Run again, Copy & edit and the API admit a standalone job only when this pass
  leaves its cards idle (next_pass, under jobs.locks.local_cards_locked), so a queue task
  submitted after it (at a higher priority) can no longer take them, also while the worker
  is down or between two passes.
- A standalone job that still cannot start (its cards taken by a process the console does
  not run, a worker restarted with fewer cards, or one queued before this rule by the API)
  waits, saying so with the numbers (STANDALONE_WAITING), and keeps its place first:
  nothing behind it starts until it has (no back-filling, as in a queue), so it is the next
  job to start and waits as little as the pool allows. Failing it instead would throw away a
  job the console promised to run because of something the user did not do.
- What a waiting job's page says it waits for stays true (`held_for`, `why_waiting`): a job
  that said it waits for its quota or for disk is looked at again on every pass, even behind
  a blocked queue, and says so anew when the reason changes (its figures the page works
  out as it is read); once neither holds it, it says it waits for its turn in its queue. A job that never waited for anything
  else says nothing: its page says that by default.
- The order is written three times and they agree (tests/test_next_pass_agrees.py):
  dispatch_local's (LINE_ORDER), next_pass's raw SQL (_queued_local_rows) and the position
  a waiting job's page shows (queue_position): 1 + the Queued jobs ahead of it in that
  order, standalone jobs included, less those the pass goes past (a queue group at its cap,
  an owner's quota); none for a job the pass goes past itself.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connections, router, transaction
from django.db.models import (
    Case,
    Count,
    F,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
)
from django.urls import reverse
from django.utils.html import conditional_escape, format_html
from django.utils.safestring import mark_safe
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop, ngettext, pgettext

from .health import WorkerIdentity, WorkerState, holds_lease, problem_recorded, worker_state
from .models import ACTIVE_STATUSES, CardQuota, Job, JobEvent, JobGroup, JobStatus, Priority
from .quotas import Limit, Usage, excesses, local_usage, quota_limits, waiting_message
from .services import job_event, job_fail_unreadable, job_transition
from .spec import SUBMIT_QUEUE, SpecError, card_shown, parse_document
from .texts import (
    Words,
    display_text,
    list_words,
    ngettext_noop,
    recorded,
    recorded_plural,
    source_of,
)

if TYPE_CHECKING:
    from .runner import Capacity, Requirement

PRIORITY_RANK = Case(
    When(priority="high", then=Value(0)),
    When(priority="normal", then=Value(1)),
    default=Value(2),
    output_field=IntegerField(),
)
RANKS = {"high": 0, "normal": 1}
# The two lines of a pass: the standalone jobs first (in submit order), then the queue tasks
# of every queue (by priority, then submit time). A spec without a submission mode reads as
# standalone (jobs.spec.Submission's default).
STANDALONE_LINE, QUEUE_LINE = 0, 1
LINE = Case(
    When(spec__console__submission__mode=SUBMIT_QUEUE, then=Value(QUEUE_LINE)),
    default=Value(STANDALONE_LINE),
    output_field=IntegerField(),
)
# dispatch_local's order over rows annotated with `rank` and `line`: a standalone job's
# priority does not count (it orders the queue tasks only), and no job's queue does: queue
# names are labels, not a policy (until session 35 they were served in name order).
# _queued_local_rows and queue_position keep the same order.
LINE_ORDER = (
    "line",
    Case(When(line=STANDALONE_LINE, then=Value(0)), default=F("rank"), output_field=IntegerField()),
    "created_at",
    "id",
)

# What the scheduler says a Queued local job waits for (event reasons). The job's latest
# event (alert deliveries aside: they happen beside its life, not in it) is its current
# word when it is one of these; any other (Created, Approved, PriorityChanged...) means it
# waits for its turn, until the scheduler says otherwise.
QUOTA_EXCEEDED = "QuotaExceeded"
DISK_PRESSURE = "DiskPressure"
NETWORK_UNAVAILABLE = "NetworkUnavailable"
SANDBOX_UNAVAILABLE = "SandboxUnavailable"
CARD_NODES_MISSING = "CardNodesMissing"
IN_QUEUE = "WaitingInQueue"
STANDALONE_WAITING = "StandaloneWaiting"
OWNER_DEACTIVATED = "OwnerDeactivated"
HELD_REASONS = frozenset(
    {
        QUOTA_EXCEEDED,
        DISK_PRESSURE,
        NETWORK_UNAVAILABLE,
        SANDBOX_UNAVAILABLE,
        CARD_NODES_MISSING,
        OWNER_DEACTIVATED,
    }
)
WAITING_REASONS = HELD_REASONS | {IN_QUEUE, STANDALONE_WAITING}
ALERT_REASONS = ("AlertSent", "AlertFailed", "AlertNotSent")
IN_QUEUE_MESSAGE = gettext_noop(
    "Waiting in its queue: it starts by itself, in the queue's order, once the local pool "
    "has room for it."
)
NETWORK_UNAVAILABLE_MESSAGE = gettext_noop(
    "Waiting for isolated networking: this machine refuses to create the network namespace "
    "each local job gets (LOCAL_JOB_NETWORK=isolated): %(reason)s. It starts by itself once "
    "a worker that can create one runs. Please contact an administrator."
)
SANDBOX_UNAVAILABLE_MESSAGE = gettext_noop(
    "Waiting for bubblewrap, which sandboxes every replica of a local job: %(reason)s. It "
    "starts by itself once it is installed again. Please contact an administrator."
)
CARD_NODES_MISSING_MESSAGE = ngettext_noop(
    "Waiting for the device nodes of its cards: it needs %(wanted)d %(card)s card, and only "
    "%(present)d of the local pool's have their device node on this machine now (missing: "
    "%(nodes)s; the NVIDIA driver is not loaded, or is making them again). It starts by "
    "itself once they are back. Please contact an administrator.",
    "Waiting for the device nodes of its cards: it needs %(wanted)d %(card)s cards, and only "
    "%(present)d of the local pool's have their device node on this machine now (missing: "
    "%(nodes)s; the NVIDIA driver is not loaded, or is making them again). It starts by "
    "itself once they are back. Please contact an administrator.",
)
NETWORK_UNAVAILABLE_OUTBOUND_MESSAGE = gettext_noop(
    "Waiting for isolated networking: this machine cannot set up the network namespace with "
    "outbound network each local job gets (LOCAL_JOB_NETWORK=isolated-outbound): %(reason)s. "
    "It starts by itself once a worker that can set one up runs. Please contact an "
    "administrator."
)
STANDALONE_CARDS_MESSAGE = ngettext_noop(
    "Waiting for cards: a standalone job starts before every queue task, but it needs "
    "%(wanted)d %(card)s card and %(idle)d are idle now. It starts first, by itself, once "
    "they are idle; no job behind it starts before it.",
    "Waiting for cards: a standalone job starts before every queue task, but it needs "
    "%(wanted)d %(card)s cards and %(idle)d are idle now. It starts first, by itself, once "
    "they are idle; no job behind it starts before it.",
)
STANDALONE_JOBS_MESSAGE = ngettext_noop(
    "Waiting for room: a standalone job starts before every queue task, but the local pool "
    "runs at most %(limit)d job at once and runs that many now. It starts first, by itself, "
    "once one ends; no job behind it starts before it.",
    "Waiting for room: a standalone job starts before every queue task, but the local pool "
    "runs at most %(limit)d jobs at once and runs that many now. It starts first, by itself, "
    "once one ends; no job behind it starts before it.",
)
STANDALONE_CORES_MESSAGE = gettext_noop(
    "Waiting for CPU cores: a standalone job starts before every queue task, but the cores "
    "it needs are taken by running jobs now. It starts first, by itself, once they are free; "
    "no job behind it starts before it."
)
OWNER_DEACTIVATED_MESSAGE = gettext_noop(
    "Waiting: its owner's account is deactivated, and no job of a deactivated account "
    "starts. It stays queued and starts by itself, in its turn, once an administrator "
    "activates the account again."
)
WORKER_DOWN_MESSAGE = gettext_noop(
    "Waiting for the job scheduler (worker), which is not running: no queued job starts until "
    "it runs again. Please contact an administrator."
)


def dispatch_local(
    *, children: dict | None = None, network_problem: str = "", worker: WorkerIdentity | None = None
) -> list[Job]:
    """One scheduling pass over the queued local jobs; returns the jobs it started.

    `worker`: the worker making the pass; each start is made only while it still holds the
    lease (jobs.runner.start_job), and the pass ends at the first it no longer does.

    `network_problem`: why the worker cannot make the network namespaces of
    LOCAL_JOB_NETWORK=isolated (its start-up check, jobs.worker.checked_identity). Then no
    job starts: each that would start now says so and keeps its place, as for disk, and as
    for bubblewrap missing."""
    from .runner import (
        NoRoomForRunFolder,
        bwrap_missing_message,
        current_capacity,
        disk_pressure_message,
        refuse_start,
        requirement,
        run_dir_disk,
        start_job,
    )

    capacity = current_capacity()
    held: str | None = None  # why no job may start for want of disk space
    disk_measured = False
    no_sandbox: str | None = None  # bubblewrap missing: no job may start
    sandbox_looked = False
    group_running = _group_running()
    group_caps: dict[int, int] = {}
    usage = local_usage()  # per owner, kept current as this pass starts jobs
    limits: dict[int, list[Limit]] = {}  # per owner, read when one of their jobs comes up
    blocked: set[str] = set()
    standalone_waits = False  # a standalone job found no room: nothing behind it starts
    started: list[Job] = []
    rows = (
        Job.objects.filter(backend="local", status=JobStatus.QUEUED)
        .annotate(
            rank=PRIORITY_RANK,
            line=LINE,
            said=Subquery(_words(OuterRef("pk")).values("reason")[:1]),
        )
        .order_by(*LINE_ORDER)
        .values_list("id", "queue", "group_id", "owner_id", "said", "line", "owner__is_active")
    )
    for job_id, queue, group_id, owner_id, said, line, owner_active in rows.iterator(
        chunk_size=2000
    ):
        if not owner_active:
            # Set aside without blocking anything (see the rules above), said once.
            if said != OWNER_DEACTIVATED:
                say_owner_deactivated(Job.objects.filter(pk=job_id))
            continue
        standalone = line == STANDALONE_LINE
        not_its_turn = standalone_waits or queue in blocked
        if group_id is not None and not not_its_turn:
            if group_id not in group_caps:
                group_caps[group_id] = (
                    JobGroup.objects.filter(pk=group_id)
                    .values_list("concurrency", flat=True)
                    .first()
                    or 1
                )
            not_its_turn = group_running[group_id] >= group_caps[group_id]
        if not_its_turn and said not in HELD_REASONS:
            continue  # the common case: nothing to start, nothing said to take back
        job = Job.objects.filter(pk=job_id, status=JobStatus.QUEUED).first()
        if job is None:
            continue
        try:
            spec = job.job_spec()
            need = requirement(spec)
        except SpecError as exc:
            job_fail_unreadable(job=job, exc=exc)
            continue
        if not_its_turn:
            # It said it waits for its quota or for disk. It is not reached this pass, but
            # what it said may have become untrue meanwhile (its owner's jobs ended): it says
            # again what holds it, with today's figures, or that it waits for its turn.
            if not _over_quota(job, need, limits=limits, usage=usage):
                held_for(job, IN_QUEUE, recorded(IN_QUEUE_MESSAGE))
            continue
        impossible = capacity.impossible(need)
        if impossible:
            job_transition(job=job, to=JobStatus.FAILED, reason="Unschedulable", message=impossible)
            continue
        if _over_quota(job, need, limits=limits, usage=usage):
            # Not added to `blocked`: the queue goes on past it (see the rules above).
            continue
        if refuse_start(job=job, spec=spec, worker=worker):
            # Failed before it takes any cards or a running-jobs slot: the jobs behind it
            # are served as if it had not been there (review57).
            if worker is not None and not _still_holds(worker):
                break
            continue
        allocation = capacity.allocate(need)
        if allocation is None and (short_of_nodes := cards_short_of_their_nodes(need.cards)):
            # Held, not failed (see the rules above): it keeps its place, as a job whose
            # cards are taken does, and starts by itself once the nodes are back. next_pass
            # tells the jobs behind it the same, by the same rule (QueueHolder.missing_nodes).
            held_for(job, CARD_NODES_MISSING, card_nodes_message(short_of_nodes))
            if standalone:
                standalone_waits = True
            else:
                blocked.add(queue)
            continue
        if allocation is None and standalone:
            # Admitted against idle cards, it should have had them (see the rules above).
            standalone_waits = True
            held_for(job, STANDALONE_WAITING, standalone_waiting_message(need, capacity))
            continue
        if allocation is None:
            blocked.add(queue)
            if said in HELD_REASONS:  # no longer held for its quota or disk, but for room
                held_for(job, IN_QUEUE, recorded(IN_QUEUE_MESSAGE))
            continue
        if not sandbox_looked:  # once a pass, and only when a job would start
            no_sandbox, sandbox_looked = bwrap_missing_message(), True
        if no_sandbox:
            # Held, not failed: bubblewrap is a fact of this machine, not of the job, and
            # failing would fail every queued job in turn, each to be submitted again, when
            # installing it again lets them all start. The worker refuses to start without
            # it (jobs.checks.bwrap_problems): this is bubblewrap removed under a running
            # worker. It keeps its place, as for the network below.
            held_for(
                job, SANDBOX_UNAVAILABLE, recorded(SANDBOX_UNAVAILABLE_MESSAGE, reason=no_sandbox)
            )
            if not standalone:
                blocked.add(queue)
            continue
        if network_problem:
            # Failing it would only repeat the kernel's refusal on every job in turn. A
            # standalone job keeps what it was given, before any queue task (no queue of
            # theirs to block).
            held_for(job, NETWORK_UNAVAILABLE, network_waiting_message(network_problem))
            if not standalone:
                blocked.add(queue)
            continue
        if not disk_measured:  # once a pass, and only when a job would start
            held, disk_measured = disk_pressure_message(run_dir_disk()), True
        if held:
            # It keeps its place (and what it was allocated this pass, so the jobs said to
            # wait for disk are those that would start now): it starts once there is room.
            held_for(job, DISK_PRESSURE, held)
            if not standalone:
                blocked.add(queue)
            continue
        try:
            started_now = start_job(job, allocation, children=children, worker=worker)
        except NoRoomForRunFolder as exc:
            # Held as for disk pressure, not failed (qa112: a full LOCAL_RUN_DIR failed every
            # new job in turn, "Could not start: [Errno 28]"), and so is every job after it in
            # this pass: the disk is full for them too.
            held, disk_measured = exc.args[0], True
            held_for(job, DISK_PRESSURE, held)
            if not standalone:
                blocked.add(queue)
            continue
        if started_now:
            started.append(job)
            usage.setdefault(owner_id, Usage()).add(need.cards)
            if group_id is not None:
                group_running[group_id] += 1
        elif worker is not None and not _still_holds(worker):
            break  # taken over: the new holder makes the passes from now on
    return started


def say_owner_deactivated(jobs: QuerySet[Job]) -> None:
    """Says on each of these Queued jobs whose owner's account is deactivated that this holds
    it, unless it said so last: one query when all have (passes come every few seconds), which
    reads only the ids of those that have not (until fix105 every held job's whole row, its
    spec too, each pass, to be picked out here)."""
    unsaid = (
        jobs.filter(status=JobStatus.QUEUED, owner__is_active=False)
        .annotate(said=Subquery(_words(OuterRef("pk")).values("reason")[:1]))
        # A job with no event at all (said NULL) has not said it either.
        .filter(Q(said__isnull=True) | ~Q(said=OWNER_DEACTIVATED))
        .only("id")
    )
    for job in unsaid:
        held_for(job, OWNER_DEACTIVATED, recorded(OWNER_DEACTIVATED_MESSAGE))


def standalone_waiting_message(need: Requirement, capacity: Capacity) -> str:
    """Why a standalone job the pass cannot start waits, with the numbers (Capacity.allocate's
    rules, in its order: the running-jobs limit, the cards, the cores)."""
    shortfall = capacity.shortfall(need)
    if shortfall == "running":
        return recorded_plural(
            STANDALONE_JOBS_MESSAGE, "limit", limit=settings.LOCAL_MAX_RUNNING_JOBS
        )
    if shortfall == "cards":
        if no_nodes := card_nodes_waiting_message(need.cards):
            return no_nodes  # the real reason, not "0 idle" (review58)
        for card, wanted in need.cards.items():
            idle = len(capacity.free_devices.get(card, []))
            if idle < wanted:
                return recorded_plural(
                    STANDALONE_CARDS_MESSAGE,
                    "wanted",
                    wanted=wanted,
                    card=card_shown(card),
                    idle=idle,
                )
    return recorded(STANDALONE_CORES_MESSAGE)


def cards_short_of_their_nodes(cards: dict[str, int]) -> tuple[str, int, int, list[str]] | None:
    """The rule by which a job asking `cards`, which the pass cannot give them, waits for
    device nodes (CARD_NODES_MISSING) rather than for cards other jobs hold: it asks more of a
    type than have their node on this machine now, but no more than the pool has
    (jobs.runner.cards_short_of_nodes: the card type, how many it asks, how many have their
    node, the missing nodes). The pass (dispatch_local) and its preview (next_pass: the pools
    page, the API's queues, the pages of the jobs behind it) both ask it here, so they cannot
    disagree on it. None otherwise."""
    from .runner import cards_short_of_nodes

    return cards_short_of_nodes(cards)


def card_nodes_waiting_message(cards: dict[str, int]) -> str | None:
    """Why a job asking `cards` waits for device nodes (CARD_NODES_MISSING), or None
    (cards_short_of_their_nodes)."""
    short = cards_short_of_their_nodes(cards)
    return card_nodes_message(short) if short else None


def card_nodes_message(short: tuple[str, int, int, list[str]]) -> str:
    """CARD_NODES_MISSING's message, recorded, from cards_short_of_their_nodes' answer."""
    card, wanted, present, missing = short
    return recorded_plural(
        CARD_NODES_MISSING_MESSAGE,
        "wanted",
        wanted=wanted,
        # Recorded as shown: the event and each reader's page name the model (fix154).
        card=card_shown(card),
        present=present,
        nodes=Words(tuple(missing)),
    )


def line_jumped(job: Job) -> bool:
    """Whether queuing `job` now (a standalone job approved or resubmitted: Pending review,
    Rejected or Submit failed until then) would leave a Queued standalone job without room.

    The pass takes the standalone jobs in submit order, and this one was submitted before
    those let in while it was held: it goes before them, not after them as the admission's
    next_pass counts it. Cards are the same in either order, but not the cores: once a job
    that pins none starts, no core is left to pin (Capacity.allocate), and a CPU-exclusive
    job let in meanwhile then waited first in line, nothing behind it starting. Only the
    standalone line is gone through (it comes first); a job the pass sets aside for its
    owner's quota is counted as starting, which can only refuse more."""
    from .runner import current_capacity, requirement

    later = Q(created_at__gt=job.created_at) | Q(created_at=job.created_at, id__gt=job.pk)
    line = (
        Job.objects.filter(backend="local", status=JobStatus.QUEUED)
        .annotate(line=LINE)
        .filter(line=STANDALONE_LINE)
        .order_by("created_at", "id")
    )
    if not line.filter(later).exists():
        return False  # it goes last, as the admission counted it
    capacity = current_capacity()
    for queued in [*line.exclude(later), job, *line.filter(later)]:
        try:
            need = requirement(queued.job_spec())
        except SpecError:
            continue  # the pass fails it
        if capacity.impossible(need):
            continue  # the pass fails it
        if capacity.allocate(need) is None:
            return True
    return False


def idle_for_new_jobs(plan: NextPass) -> dict[str, list[int]]:
    """The cards of each type a job submitted now could be given (the local pool's idle
    figure): those the next pass leaves idle, or none while a standalone job waits first in
    line: no job starts before it (the pass) and a new standalone job is refused (the
    wizard, the API), so the cards it leaves are not a new job's (held_for_waiting_note)."""
    return {} if plan.standalone_waits else plan.free


def held_for_waiting_note(plan: NextPass) -> str:
    """What the local pool says beside its idle figure while a standalone job waits first in
    line (idle_for_new_jobs), in the reader's language; "" otherwise. It gives the waiting
    job's need and what it lacks, as its own page does, but not its name or owner: the pool
    shows other users' jobs as numbers only."""
    if plan.waiting is None or plan.left is None:
        return ""
    why = standalone_waiting_message(plan.waiting, plan.left)
    return _(
        "No card is idle for a new job: a standalone job submitted earlier waits first in "
        "line, and no job starts before it. %(why)s"
    ) % {"why": display_text(why, source_of(why))}


def nodes_wanted(nodes: tuple[str, ...]) -> str:
    """What a job waiting for device nodes waits for, in the language active now, to follow
    "waits for" in a sentence about it (a queue's holder, the job a waiting job is behind)."""
    return _("the device nodes of its cards (missing: %(nodes)s)") % {"nodes": list_words(nodes)}


# A blocker's rank (RANKS) as its priority is shown (高/中/低).
RANK_PRIORITIES = (Priority.HIGH, Priority.NORMAL, Priority.LOW)


@dataclass(frozen=True)
class QueueHeld:
    """A queue a job blocks in a pass's plan (no back-filling), as a reader of that plan is
    told: the job that holds it (its ID and name for its owner only, None for anyone else),
    what it waits for, and the priority at or below which the queue's jobs wait behind it."""

    queue: str
    job: tuple[str, str] | None  # (public_id, name): the reader's own job
    short_cards: dict[str, int]  # per card type, how many it lacks; none: the CPU cores
    priority: Priority
    # The device nodes it waits for (QueueHolder.missing_nodes): then the cards it lacks are
    # not taken by other jobs, and saying it waits for them sent readers looking for those.
    missing_nodes: tuple[str, ...] = ()

    def note(self, *, link: bool) -> str:
        """The sentence, in the language active now: as HTML with the reader's job linked to
        its page (`link`: the pools page, the wizard), or as plain text (the API)."""
        say = conditional_escape if link else str
        if self.missing_nodes:
            need = nodes_wanted(self.missing_nodes)
        elif self.short_cards:
            need = pgettext("between list items", "; ").join(
                ngettext("%(count)d %(card)s card", "%(count)d %(card)s cards", count)
                % {"count": count, "card": card_shown(card)}
                for card, count in sorted(self.short_cards.items())
            )
        else:
            need = _("the CPU cores it needs")
        figures = {
            "queue": say(self.queue),
            "need": say(need),
            "priority": say(self.priority.label),
        }
        if self.job is None:
            message = _(
                "Queue “%(queue)s” is held by a job of another user, which waits for "
                "%(need)s: until it starts, no job of this queue of priority %(priority)s or "
                "lower starts, even one asking for no card, and a standalone job of such a "
                "priority is refused in this queue."
            )
        else:
            public_id, name = self.job
            figures["job"] = (
                format_html(
                    '<a href="{}" id="queue-held-by-{}">{}</a>',
                    reverse("job-detail", args=[public_id]),
                    public_id,
                    name,
                )
                if link
                else name
            )
            message = _(
                "Queue “%(queue)s” is held by your job %(job)s, which waits for %(need)s: "
                "until it starts, no job of this queue of priority %(priority)s or lower "
                "starts, even one asking for no card, and a standalone job of such a priority "
                "is refused in this queue."
            )
        if not link:
            return message % figures
        return mark_safe(conditional_escape(message) % figures)


def queues_held(plan: NextPass, *, viewer_id: int | None) -> dict[str, QueueHeld]:
    """Each queue a job blocks in `plan`, as QueueHeld tells it to `viewer_id`. The holder is
    named for its owner only (a job's page is its owner's); anyone else is told "a job of
    another user". No query unless the viewer holds a queue: then one, for the names of their
    jobs that do."""
    if not plan.blocked:
        return {}
    own = [held.job_id for held in plan.blocked.values() if held.owner_id == viewer_id]
    names: dict[int, tuple[str, str]] = {}
    if own:
        names = {
            pk: (public_id, name)
            for pk, public_id, name in Job.objects.filter(pk__in=own).values_list(
                "pk", "public_id", "name"
            )
        }
    return {
        queue: QueueHeld(
            queue=queue,
            job=names.get(held.job_id) if held.owner_id == viewer_id else None,
            short_cards=dict(held.short_cards),
            priority=RANK_PRIORITIES[min(held.rank, 2)],
            missing_nodes=held.missing_nodes,
        )
        for queue, held in plan.blocked.items()
    }


def queue_held_notes(plan: NextPass, *, viewer_id: int | None) -> dict[str, str]:
    """For each queue a job blocks in `plan` (no back-filling), what a page showing the idle
    cards read from that plan says beside them, in the reader's language, as HTML: the job
    that holds the queue, what it waits for, and that the jobs of that queue of its priority
    or lower wait behind it and a standalone one is refused (jobs.wizard._queue_blocked, from
    the same plan). qa91: 2 of 4 cards showed idle in the wizard and on the pools page while
    a 3-card task held the only queue; a 1-card queue task waited, and a standalone job,
    even a CPU-only one, was refused only once its form was filled. The API says the same of
    its queues from the same plan (queues_held; jobs.api_views.queue_held_fields)."""
    held = queues_held(plan, viewer_id=viewer_id)
    return {queue: h.note(link=True) for queue, h in held.items()}


@dataclass(frozen=True)
class QueueHolder:
    """The first job of a queue that the next pass cannot start (next_pass): no job of its
    queue behind it starts before it (no back-filling), whatever it asks."""

    # Its priority (RANKS): a job of that rank or a lower priority, submitted now, would wait
    # behind it, and a standalone one is refused (jobs.wizard._queue_blocked).
    rank: int
    job_id: int
    owner_id: int
    # What it lacks at its turn: the cards of each type of which it asks more than are left
    # (none: the CPU cores it needs are taken).
    short_cards: dict[str, int]
    # The device nodes it waits for, when what it lacks is cards whose nodes are missing
    # (cards_short_of_their_nodes: the pass says CARD_NODES_MISSING of it); () otherwise.
    missing_nodes: tuple[str, ...] = ()


@dataclass(frozen=True)
class NextPass:
    """What the next scheduling pass would do, read only (next_pass)."""

    free: dict[str, list[int]]  # the cards it leaves idle, per type
    # Per queue, the job that blocks it (no back-filling).
    blocked: dict[str, QueueHolder]
    # Per owner, what their jobs hold once it has started its jobs (card quotas count them);
    # None where it read no usage (no quota exists, or nothing is queued): jobs.quotas'
    # local_usage is then what holds.
    usage: dict[int, Usage] | None = None
    # What is left once it has started its jobs: the cards (`free`), the cores, and how many
    # local jobs then run (LOCAL_MAX_RUNNING_JOBS). A standalone job whose cards are idle
    # still waits when no job may start beside them, or its cores are taken.
    left: Capacity | None = None
    # A Queued standalone job the pass cannot start: it waits first in line, and nothing
    # behind it starts (`free` and `left` are then what it leaves, which no job gets).
    standalone_waits: bool = False
    # What that job needs (None when none waits).
    waiting: Requirement | None = None
    # That job, as QueueHolder tells it (None when none waits).
    first_in_line: QueueHolder | None = None


def next_pass(*, past_the_last_card: bool = False) -> NextPass:
    """What the next scheduling pass would do (dispatch_local's order and rules, read only:
    nothing is said, failed or started): the cards of each type it leaves idle, those no
    dispatched job holds less those it hands the Queued jobs whose turn it is, and the queues
    a job too big for the cards left blocks (found until no card is left: past that, a job
    asking for cards waits anyway; `past_the_last_card` goes on, for a job asking none,
    which the jobs behind may still block or leave no room beside).

    This is the local pool's idle figure (the wizard's, the review's "fits now", 资源池, the
    API's). Cards a Queued job is about to get are not idle: counted as idle, two people
    submitting standalone jobs for the last cards between two passes (or while the worker
    is down) were both told they fit, and the second one's job then waited behind the first
    one's, which a standalone job is refused rather than made to do. The standalone jobs
    come first, as in the pass: a new standalone job is let in on what they and the queue
    tasks whose turn it is leave, and refused while one of them waits (`standalone_waits`).

    Two queries when nothing is queued (the cards held, the queued jobs); else the queued
    jobs are read in one query, in order, until no card is left to give, and, once when
    first needed, the running tasks of queue groups and whether any card quota exists; with
    quotas, what owners hold and each owner's quota (one query per owner reached)."""
    from .runner import current_capacity, requirement

    capacity = current_capacity()
    group_running: Counter[int] | None = None
    quotas: bool | None = None  # whether any card quota exists (most consoles have none)
    usage: dict[int, Usage] | None = None
    limits: dict[int, list[Limit]] = {}
    blocked: dict[str, QueueHolder] = {}
    standalone_waits = False
    waiting: Requirement | None = None
    first_in_line: QueueHolder | None = None
    rows = _queued_local_rows()
    for line, queue, rank, group_id, concurrency, owner_id, document, job_id in rows:
        # The standalone jobs (few, and first) are each looked at: whether one waits is part
        # of the answer (standalone_waits), which the short cuts below would not find.
        if line == QUEUE_LINE and capacity.running >= settings.LOCAL_MAX_RUNNING_JOBS:
            break  # no job may start, whatever it asks
        if (
            line == QUEUE_LINE
            and not past_the_last_card
            and not any(capacity.free_devices.values())
        ):
            break  # no card is left to give, whatever the rest ask for
        if queue in blocked:
            continue
        if group_id is not None:
            if group_running is None:
                group_running = _group_running()
            if group_running[group_id] >= (concurrency or 1):
                continue
        try:
            need = requirement(parse_document(document))
        except SpecError:
            continue  # the pass fails it
        if capacity.impossible(need):
            continue  # the pass fails it
        if quotas is None:
            quotas = CardQuota.objects.exists()
        if quotas:
            if usage is None:
                usage = local_usage()
            if owner_id not in limits:
                limits[owner_id] = quota_limits(owner_id)
            if excesses(limits[owner_id], usage.get(owner_id, Usage()), need.cards):
                continue  # set aside for its owner's quota, without blocking its queue
        if capacity.allocate(need) is None:
            short = {
                card: wanted
                for card, wanted in need.cards.items()
                if wanted > len(capacity.free_devices.get(card, []))
            }
            # What the pass says it waits for (dispatch_local, the same rule).
            nodes = cards_short_of_their_nodes(need.cards)
            holder = QueueHolder(rank, job_id, owner_id, short, tuple(nodes[3]) if nodes else ())
            if line == STANDALONE_LINE:
                standalone_waits = True  # it waits first in line: nothing behind it starts
                waiting, first_in_line = need, holder
                break
            blocked[queue] = holder
            continue
        if usage is not None:
            usage.setdefault(owner_id, Usage()).add(need.cards)
        if group_id is not None and group_running is not None:
            group_running[group_id] += 1
    rows.close()  # (ends the cursor's read when the loop stopped early)
    return NextPass(
        free=capacity.free_devices,
        blocked=blocked,
        usage=usage,
        left=capacity,
        standalone_waits=standalone_waits,
        waiting=waiting,
        first_in_line=first_in_line,
    )


def _queued_local_rows() -> Iterator[tuple[int, str, int, int | None, int | None, int, Any, int]]:
    """(line, queue, priority rank, group id, group concurrency, owner id, stored spec, job
    id) of each Queued local job, in dispatch_local's order (LINE_ORDER), read in batches.

    One plain SELECT on the connection's cursor, the spec decoded as the ORM's JSONField
    does (jobs.runner.held_by_active_runs does the same): the idle count is polled every few
    seconds, and through the ORM building and compiling this query cost ~0.9 ms, most of the
    idle-count partial, also when no job is queued. The line is read from the stored spec's
    submission mode, as LINE does (JSON functions differ: PostgreSQL's jsonb operators,
    SQLite's json_extract)."""
    alias = router.db_for_read(Job)
    connection = connections[alias]
    quote = connection.ops.quote_name
    job, group, owner = Job._meta, JobGroup._meta, get_user_model()._meta

    def col(name: str) -> str:
        return f"j.{quote(job.get_field(name).column)}"

    if connection.vendor == "postgresql":
        mode = f"({col('spec')} -> 'console' -> 'submission' ->> 'mode')"
    else:
        mode = f"json_extract({col('spec')}, '$.console.submission.mode')"
    inner = (
        f"SELECT CASE WHEN {mode} = %s THEN {QUEUE_LINE} ELSE {STANDALONE_LINE} END AS q_line, "
        f"{col('queue')} AS q_queue, CASE {col('priority')} "
        f"WHEN %s THEN {RANKS['high']} WHEN %s THEN {RANKS['normal']} ELSE 2 END AS q_rank, "
        f"{col('group')} AS q_group, g.{quote(group.get_field('concurrency').column)} AS q_cap, "
        f"{col('owner')} AS q_owner, {col('spec')} AS q_spec, {col('created_at')} AS q_created, "
        f"j.{quote(job.pk.column)} AS q_id "
        f"FROM {quote(job.db_table)} j LEFT OUTER JOIN {quote(group.db_table)} g "
        f"ON {col('group')} = g.{quote(group.pk.column)} "
        # A deactivated owner's jobs are set aside (see the rules above).
        f"INNER JOIN {quote(owner.db_table)} u ON {col('owner')} = u.{quote(owner.pk.column)} "
        f"WHERE {col('backend')} = %s AND {col('status')} = %s "
        f"AND u.{quote(owner.get_field('is_active').column)} = %s"
    )
    standalone = f"q_line = {STANDALONE_LINE}"
    sql = (
        f"SELECT q_line, q_queue, q_rank, q_group, q_cap, q_owner, q_spec, q_id FROM ({inner}) q "
        f"ORDER BY q_line, CASE WHEN {standalone} THEN 0 ELSE q_rank END, q_created, q_id"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [SUBMIT_QUEUE, "high", "normal", "local", JobStatus.QUEUED, True])
        while batch := cursor.fetchmany(200):
            for line, queue, rank, group_id, concurrency, owner_id, spec, job_id in batch:
                document = json.loads(spec) if isinstance(spec, str) else spec
                yield line, queue, rank, group_id, concurrency, owner_id, document, job_id


def _group_running() -> Counter[int]:
    """Per queue group, how many of its tasks hold cards now."""
    return Counter(
        dict(
            Job.objects.filter(group__isnull=False, status__in=ACTIVE_STATUSES)
            .values_list("group")
            .annotate(n=Count("id"))
            .values_list("group", "n")
        )
    )


def _still_holds(worker: WorkerIdentity) -> bool:
    with transaction.atomic():  # (holds_lease locks the lease's row)
        return holds_lease(worker=worker)


def network_waiting_message(problem: str) -> str:
    # The check's own words are said in each reader's language too (problem_recorded).
    outbound = settings.LOCAL_JOB_NETWORK == "isolated-outbound"
    message = NETWORK_UNAVAILABLE_OUTBOUND_MESSAGE if outbound else NETWORK_UNAVAILABLE_MESSAGE
    return recorded(message, reason=problem_recorded(problem))


def _over_quota(
    job: Job, need: Requirement, *, limits: dict[int, list[Limit]], usage: dict[int, Usage]
) -> bool:
    """Whether starting the job now would put its owner over their quota; if so, it says so.
    `limits` is filled as owners come up, once a pass each."""
    if job.owner_id not in limits:
        limits[job.owner_id] = quota_limits(job.owner_id)
    over = excesses(limits[job.owner_id], usage.get(job.owner_id, Usage()), need.cards)
    if over:
        held_for(job, QUOTA_EXCEEDED, waiting_message(over[0]))
    return bool(over)


def _words(job: Job | OuterRef) -> QuerySet[JobEvent]:
    """The job's events but alert deliveries, latest first: the first is what the scheduler
    last said about it, if it is one of WAITING_REASONS."""
    return (
        JobEvent.objects.filter(job=job)
        .exclude(reason__in=ALERT_REASONS)
        .order_by("-created_at", "-id")
    )


def held_for(job: Job, reason: str, message: str) -> None:
    """Says on the job's page why the scheduler leaves it Queued (QUOTA_EXCEEDED,
    DISK_PRESSURE or IN_QUEUE), as one event, when that is news:

    - a new reason is said at once (quota, then disk; or a start that failed meanwhile);
    - the same reason is never said again, whatever its figures now: the disk's free space
      drifts on every pass while jobs write, and a user's quota figures change with each
      start and end of their other jobs, so saying figures would fill the job's events (one
      a minute is still 1440 a day). The events are the history of why it waited; the page
      says the figures of now (`why_waiting` works them out as it is read), as a Kubernetes
      pod's conditions say the present and its events the changes;
    - IN_QUEUE only to take back another reason: a job that never waited for anything else
      says nothing, its page says so by default.

    Nothing is kept in memory between passes: what was said is read from the job's events,
    so a scheduler killed between deciding and writing decides again on its next pass (the
    event is not lost), and one killed after writing reads it back (it is not said twice).
    The look and the write are one transaction holding the job's row (SQLite's IMMEDIATE
    transactions hold the database): a stop that lands meanwhile is not followed by a
    waiting event, and two passes cannot both say the same."""
    if not _news(job, reason):  # the common case, without a write lock
        return
    with transaction.atomic():
        queued = Job.objects.select_for_update().filter(pk=job.pk, status=JobStatus.QUEUED)
        if queued.exists() and _news(job, reason):
            job_event(job=job, reason=reason, message=message, warning=reason != IN_QUEUE)


def _news(job: Job, reason: str) -> bool:
    """Whether saying `reason` now tells the job's page something (see held_for)."""
    said = _words(job).values_list("reason", flat=True).first()
    if said is None or said not in WAITING_REASONS:
        return reason != IN_QUEUE
    return said != reason


def why_waiting(job: Job, *, worker: WorkerState | None = None) -> str | None:
    """What a Queued local job waits for, in the page's language and with the figures of
    now: the reason the scheduler last gave (see held_for) worked out again as the page is
    read, so the line is true between passes and the events need not repeat it. A reason
    that no longer holds (its owner's jobs ended, the disk has room) reads as its turn in
    its queue, which the scheduler's next pass says too. None for a job not waiting in the
    local runner's queues (a remote platform queues by its own rules).

    A worker that is not running (jobs.health; `worker`: its state, read here if not given)
    comes before every other reason: no scheduling pass runs, so nothing else it waits for
    can let it start."""
    if job.status != JobStatus.QUEUED or job.backend != "local":
        return None
    worker = worker or worker_state()
    if not worker.running:
        return _(WORKER_DOWN_MESSAGE)
    if not job.owner.is_active:
        return _(OWNER_DEACTIVATED_MESSAGE)
    # A task of a queue group whose group already runs its cap of tasks is passed over by
    # the scheduler before anything else is looked at (dispatch_local): the pool may have
    # all the room it needs, and "once the pool has room" would send its owner looking for
    # a busy pool that is not there.
    if job.group_id is not None:
        cap = (
            JobGroup.objects.filter(pk=job.group_id).values_list("concurrency", flat=True).first()
            or 1
        )
        running = Job.objects.filter(group_id=job.group_id, status__in=ACTIVE_STATUSES).count()
        if running >= cap:
            return ngettext(
                "Waiting for its queue group: at most %(cap)d of its tasks runs at once "
                "(%(running)d running now). It starts by itself once one of them ends.",
                "Waiting for its queue group: at most %(cap)d of its tasks run at once "
                "(%(running)d running now). It starts by itself once one of them ends.",
                cap,
            ) % {"cap": cap, "running": running}
    from .runner import disk_pressure_message, requirement, run_dir_disk

    said = _words(job).values_list("reason", flat=True).first()
    now: str | None = None
    if said == QUOTA_EXCEEDED:
        try:
            need = requirement(job.job_spec())
        except SpecError:  # the scheduler's next pass fails it, saying why
            return _(IN_QUEUE_MESSAGE)
        usage = local_usage(owner=job.owner_id).get(job.owner_id, Usage())
        over = excesses(quota_limits(job.owner_id), usage, need.cards)
        now = waiting_message(over[0]) if over else None
    elif said == STANDALONE_WAITING:
        # What it lacks now, as the next pass would find it (the event is said once, with the
        # numbers of the pass that first found it short: cards given back since, or the
        # running-jobs limit now the reason, made it untrue). The pass stops at the first
        # standalone job without room (`left`: what there was at its turn).
        try:
            need = requirement(job.job_spec())
        except SpecError:  # the scheduler's next pass fails it, saying why
            return _(IN_QUEUE_MESSAGE)
        plan = next_pass()
        if plan.standalone_waits and plan.left is not None and plan.left.shortfall(need):
            now = standalone_waiting_message(need, plan.left)
    elif said == CARD_NODES_MISSING:
        try:
            need = requirement(job.job_spec())
        except SpecError:  # the scheduler's next pass fails it, saying why
            return _(IN_QUEUE_MESSAGE)
        now = card_nodes_waiting_message(need.cards)
    elif said == SANDBOX_UNAVAILABLE:
        from .runner import bwrap_missing_message

        missing = bwrap_missing_message()
        now = recorded(SANDBOX_UNAVAILABLE_MESSAGE, reason=missing) if missing else None
    elif said == NETWORK_UNAVAILABLE:
        # The active worker's finding now (another worker may have taken over since).
        now = network_waiting_message(worker.network_problem) if worker.network_problem else None
    elif said == DISK_PRESSURE:
        try:
            now = disk_pressure_message(run_dir_disk())
        except OSError:
            now = None  # the run folder's disk is gone: the worker says what that does
        if now is None and _held_for_no_room(job):
            # Its folder found no room though the disk is above every threshold (they may be
            # 0, or a few bytes free are not a block): said again with the free space of now,
            # until the next pass starts it.
            from .runner import no_room_message

            now = no_room_message()
    if now is None:
        return _behind_its_queues_first(job) or _(IN_QUEUE_MESSAGE)
    return display_text(now, source_of(now))


def _held_for_no_room(job: Job) -> bool:
    """Whether the scheduler's last word on the job is that its folder found no room
    (jobs.runner.NO_ROOM_MESSAGE), rather than a threshold of the disk."""
    from .runner import NO_ROOM_MESSAGE

    source = _words(job).values_list("message_source", flat=True).first()
    return isinstance(source, dict) and source.get("key") == NO_ROOM_MESSAGE


def _behind_its_queues_first(job: Job) -> str | None:
    """For a job that waits behind the job holding its line while what it asks for is free,
    or behind one that waits for the device nodes of its cards, why, in the page's language.

    The pass gives a queue nothing past its first job that does not fit (no back-filling),
    and nothing at all past a standalone job that waits first in line. QA 63: a queue task's
    page said it starts "once the local pool has room for it" while the cards it asked for
    showed idle on the pools page and in the wizard, and its owner went looking for a room
    that was there. fix141: behind a job waiting for missing device nodes (CardNodesMissing)
    it said the same, though no card coming free starts it: the nodes coming back do. The
    holder is next_pass's (its rule the pass's: cards_short_of_their_nodes). None otherwise:
    its own room is what it waits for, or the pass reaches it before the holder (review63)."""
    from .runner import requirement

    try:
        need = requirement(job.job_spec())
    except SpecError:  # the scheduler's next pass fails it, saying why
        return None
    # A job asking no card is read past the last card, as its idle figure is: the pass
    # stops looking once no card is left (review 46: the queue's first job then went
    # unread, no queue was blocked, and a job asking only free cores was told it waits
    # for room). So is every job while a card's node is missing: those cards are not
    # offered, and the job waiting for them may be past the last card offered.
    plan = next_pass(past_the_last_card=not any(need.cards.values()) or _a_card_node_missing())
    standalone = is_standalone(job)
    if plan.standalone_waits:
        holder = plan.first_in_line
    else:
        holder = None if standalone else plan.blocked.get(job.queue)
    if holder is None or plan.left is None or not _ahead_of(job, holder.job_id):
        # Only a job the pass reaches after the holder waits behind it (review63: a high
        # priority task submitted after its queue's holder, a standalone job submitted before
        # the standalone one that waits, a job the disk no longer holds: each comes first, and
        # each read that it waited behind a job it starts before, at the next pass). By the
        # order rather than by what the pass would start: a job ahead that the pass sets aside
        # (its group's cap, reached by a task the pass starts; its quota) is not behind it
        # either.
        return None
    if holder.missing_nodes:
        return _behind_nodes_message(job, holder, standalone=plan.standalone_waits)
    if plan.standalone_waits or plan.left.shortfall(need):
        return None  # it would not start either: the room is what it waits for
    if plan.usage is not None and excesses(
        quota_limits(job.owner_id), plan.usage.get(job.owner_id, Usage()), need.cards
    ):
        return None  # its quota holds it too: the pass says so
    return _(
        "Waiting behind an earlier job of queue “%(queue)s” that needs more than is free now: "
        "no job passes the first job of its queue (so a big job is not starved by small ones), "
        "and this one starts after it, although what it asks for is free now."
    ) % {"queue": job.queue}


def _behind_nodes_message(job: Job, holder: QueueHolder, *, standalone: bool) -> str:
    """Why `job` waits behind `holder`, which waits for device nodes: the holder named by its
    name when it is of the same owner (a job's page is its owner's), else as another user's,
    as the pools page names a queue's holder (QueueHeld)."""
    name, owner_id = Job.objects.filter(pk=holder.job_id).values_list(
        "name", "owner_id"
    ).first() or ("", None)
    if owner_id == job.owner_id:
        behind = _("job “%(name)s”") % {"name": name}
    else:
        behind = _("a job of another user")
    figures = {"holder": behind, "queue": job.queue, "need": nodes_wanted(holder.missing_nodes)}
    if standalone:
        return (
            _(
                "Waiting behind %(holder)s, a standalone job first in line, which waits for "
                "%(need)s: no job starts before it, so this one starts after it, once they are "
                "back."
            )
            % figures
        )
    return (
        _(
            "Waiting behind %(holder)s, the first job of queue “%(queue)s”, which waits for "
            "%(need)s: no job passes the first job of its queue, so this one starts after it, "
            "once they are back."
        )
        % figures
    )


def _a_card_node_missing() -> bool:
    """Whether the device node of any card of the local pool is missing now (those cards are
    not offered: jobs.runner.current_capacity)."""
    from .backends.local import detected_accelerators, missing_card_nodes

    return any(
        missing_card_nodes(card, range(total)) for card, total in detected_accelerators().items()
    )


def queue_position(job: Job) -> int | None:
    """1 for the next job of the local pool to start, 2 for the one after...: 1 + the Queued
    jobs it waits behind, in dispatch_local's order (LINE_ORDER): for a standalone job the
    standalone jobs submitted before it; for a queue task every standalone job (they start
    first) and the queue tasks of every queue ahead of it (a higher priority, or the same
    and submitted before it). Left out: the jobs set aside (_set_aside), which the pass goes
    past.

    None while the job is set aside itself (its queue group runs its cap of tasks, or its
    owner's quota holds it, or its owner's account is deactivated): the pass goes past it,
    and any place in line would say something false of it. fix91b (qa91): the four waiting
    tasks of a sweep whose group runs one task at a time all said "Position 1 in the queue",
    each leaving out its siblings (set aside) and itself; read as "next", it was true of none
    of them. Its waiting line says what it waits for (why_waiting: its group's cap, its
    quota, its owner's account).

    A job of another queue ahead of it may start after it (its own queue's first job does
    not fit, and holds it): the position is the place in line, not a promise, as the README
    says. Only the local runner's order is ours to tell: a remote platform queues a job by
    its own rules, and a job not sent yet goes out at once."""
    if job.status != JobStatus.QUEUED or job.backend != "local":
        return None
    if not job.owner.is_active or _set_aside(Job.objects.filter(pk=job.pk)):
        return None
    ahead = (
        Job.objects.filter(backend=job.backend, resource_pool=job.resource_pool)
        .filter(status=JobStatus.QUEUED, owner__is_active=True)
        .exclude(pk=job.pk)
        .annotate(line=LINE, rank=PRIORITY_RANK)
        .filter(_in_line_before(job))
    )
    return ahead.count() - _set_aside(ahead) + 1


def _in_line_before(job: Job) -> Q:
    """The jobs dispatch_local reaches before `job` (LINE_ORDER), as a filter on jobs
    annotated with `line` (LINE) and `rank` (PRIORITY_RANK): for a standalone job the
    standalone jobs submitted before it; for a queue task every standalone job and the queue
    tasks of a higher priority, or of the same and submitted before it."""
    earlier = Q(created_at__lt=job.created_at) | Q(created_at=job.created_at, id__lt=job.pk)
    if is_standalone(job):
        return Q(line=STANDALONE_LINE) & earlier
    rank = RANKS.get(job.priority, 2)
    before = Q(rank__lt=rank) | (Q(rank=rank) & earlier)
    return Q(line=STANDALONE_LINE) | (Q(line=QUEUE_LINE) & before)


def _ahead_of(job: Job, holder_id: int) -> bool:
    """Whether the job `holder_id` comes before `job` in the pass's order (not itself)."""
    return (
        Job.objects.filter(pk=holder_id)
        .annotate(line=LINE, rank=PRIORITY_RANK)
        .filter(_in_line_before(job))
        .exists()
    )


def _set_aside(jobs: QuerySet[Job]) -> int:
    """How many of these Queued local jobs the next pass goes past without their blocking
    anything: the tasks of a queue group that runs as many tasks as it may at once, and the
    jobs whose owner's quota holds them (the pass said so and it still holds now, as their
    own page works it out: why_waiting)."""
    running = None
    capped: set[int] = set()
    for job_id, group_id, concurrency in jobs.filter(group__isnull=False).values_list(
        "id", "group_id", "group__concurrency"
    ):
        if running is None:
            running = _group_running()
        if running[group_id] >= (concurrency or 1):
            capped.add(job_id)
    held = (
        jobs.exclude(pk__in=capped)
        .annotate(said=Subquery(_words(OuterRef("pk")).values("reason")[:1]))
        .filter(said=QUOTA_EXCEEDED)
    )
    from .runner import requirement

    over = 0
    limits: dict[int, list[Limit]] = {}
    usage: dict[int, Usage] = {}
    for waiting in held:
        try:
            need = requirement(waiting.job_spec())
        except SpecError:
            continue  # the pass fails it, saying why
        owner = waiting.owner_id
        if owner not in limits:
            limits[owner] = quota_limits(owner)
            usage[owner] = local_usage(owner=owner).get(owner, Usage())
        if excesses(limits[owner], usage[owner], need.cards):
            over += 1
    return len(capped) + over


def is_standalone(job: Job) -> bool:
    """Whether the job is a standalone job (独立任务) by its stored spec, as LINE reads it."""
    console = job.spec.get("console") if isinstance(job.spec, dict) else None
    submission = console.get("submission") if isinstance(console, dict) else None
    mode = submission.get("mode") if isinstance(submission, dict) else None
    return mode != SUBMIT_QUEUE
