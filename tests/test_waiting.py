"""A queued local job's page says what it waits for now: its quota with today's figures, disk
space, or its turn in its queue (jobs.scheduler.held_for, why_waiting). The scheduler says it
anew when the reason changes, never on every pass, and nothing it says is lost or said twice
when the worker is restarted; the page works the figures out as it is read.

Real jobs and a real worker: the jobs holding cards run until the test opens their gate."""

from __future__ import annotations

import html
import re
import time

import pytest
from django.db import transaction
from django.test import Client
from django.urls import reverse

from jobs import spec as S
from jobs.health import WorkerIdentity, worker_beat
from jobs.models import CardQuota, Job, JobStatus
from jobs.scheduler import WAITING_REASONS, dispatch_local
from jobs.services import jobs_submit
from jobs.worker import Worker

from .runner_helpers import (
    CARD,
    make_spec,
    run_until,
    runner_settings,  # noqa: F401
    status_of,
    submit,
    volume,
)

pytestmark = pytest.mark.usefixtures("runner_settings")
# The runner's card type as the waiting texts name it (jobs.spec.card_shown).
CARD_SHOWN = S.card_shown(CARD)

IN_QUEUE = (
    "Waiting in its queue: it starts by itself, in the queue's order, once the local pool "
    "has room for it."
)

BEHIND = (
    "Waiting behind an earlier job of queue “default” that needs more than is free now: no "
    "job passes the first job of its queue (so a big job is not starved by small ones), and "
    "this one starts after it, although what it asks for is free now."
)


@pytest.fixture(autouse=True)
def stored_in_english(settings):
    settings.LANGUAGE_CODE = "en"  # what events store; pages are read in either language


def cards(count: int, command: str, **changes) -> S.JobSpec:
    """A queue task asking `count` cards: what this file follows is a job waiting its turn (a
    standalone job starts first, or says it waits for room: test_standalone_first)."""
    roles = [S.Role("master", 1, accelerator_type=CARD, accelerators=count)]
    changes.setdefault("submission", S.Submission(S.SUBMIT_QUEUE, 1, 1))
    return make_spec(command, roles=roles, **changes)


def until_gate(name: str) -> str:
    return f"until [ -e /workspace/gate-{name} ]; do sleep 0.05; done"


def open_gate(settings, name: str) -> None:
    (volume(settings) / f"gate-{name}").touch()


def holding(worker: Worker, owner, count: int, gate: str) -> Job:
    """A job of `owner` running on `count` cards until its gate opens."""
    job = submit(owner, cards(count, until_gate(gate)))
    run_until(worker, lambda: status_of(job) == JobStatus.RUNNING, what=f"job {gate}")
    return job


def ended(worker: Worker, settings, job: Job, gate: str) -> None:
    open_gate(settings, gate)
    run_until(worker, lambda: status_of(job) == JobStatus.SUCCEEDED, what=f"job {gate} ending")


def passes(worker: Worker, seconds: float = 1.0) -> None:
    """As many scheduling passes as the worker makes in `seconds` (10 or more)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        worker.tick()
        time.sleep(0.05)


def said(job: Job) -> list[tuple[str, str]]:
    """What the scheduler said the job waits for, oldest first."""
    return list(
        job.events.filter(reason__in=WAITING_REASONS)
        .order_by("created_at", "id")
        .values_list("reason", "message")
    )


def quota_words(held: int, asked: int, allowed: int) -> str:
    return (
        f"Waiting for your quota: your quota is {allowed} {CARD_SHOWN} card{'s' if allowed != 1 else ''}; your running jobs hold "
        f"{held} and this job asks for {asked}. It starts by itself when your other jobs end."
    )


def client_in(user, language: str) -> Client:
    client = Client()
    client.force_login(user)
    client.cookies["django_language"] = language
    return client


def waiting_line(client: Client, job: Job) -> str | None:
    """The job page's "why is this job waiting" line, as the status poll refreshes it."""
    answer = client.get(reverse("job-live", args=[job.public_id]), headers={"HX-Request": "true"})
    assert answer.status_code in (200, 286)  # 286: the job has ended, polling stops
    found = re.search(r'<p class="mb-2" id="why-waiting">(.*?)</p>', answer.content.decode())
    return html.unescape(found.group(1)) if found else None


class WorkerKilled(Exception):
    pass


def test_quota_figures_that_change_show_on_the_page_at_once_and_add_no_event(alice, settings):
    settings.LOCAL_ACCELERATORS = f"{CARD}=4"
    CardQuota.objects.create(user=alice, card_type=CARD, max_cards=3)
    worker = Worker()
    big = holding(worker, alice, 2, "big")
    small = holding(worker, alice, 1, "small")
    waiting = submit(alice, cards(3, "echo waited"))
    en, zh = client_in(alice, "en"), client_in(alice, "zh-hans")

    passes(worker)
    assert said(waiting) == [("QuotaExceeded", quota_words(held=3, asked=3, allowed=3))]
    assert waiting_line(en, waiting) == quota_words(held=3, asked=3, allowed=3)

    ended(worker, settings, big, "big")  # her jobs now hold 1: still too many for 3 more
    assert waiting_line(en, waiting) == quota_words(held=1, asked=3, allowed=3)
    assert "1" in waiting_line(zh, waiting) and waiting_line(zh, waiting) != quota_words(1, 3, 3)
    passes(worker)
    assert len(said(waiting)) == 1  # the same reason: the events do not repeat it

    ended(worker, settings, small, "small")
    run_until(worker, lambda: status_of(waiting) == JobStatus.SUCCEEDED, what="the waiting job")
    assert len(said(waiting)) == 1


def free_gb_as_n(text: str | None) -> str | None:
    """`text` with its free-space figures as N (the one figure the page reads anew)."""
    return None if text is None else re.sub(r"\b\d+(\.\d+)? GB free", "N GB free", text)


def test_a_job_held_for_its_quota_and_then_for_disk_says_so_at_once_and_its_page_follows(
    alice, settings
):
    CardQuota.objects.create(user=alice, card_type=CARD, max_cards=1)
    worker = Worker()
    holder = holding(worker, alice, 1, "a")
    waiting = submit(alice, cards(1, "echo waited"))
    en, zh = client_in(alice, "en"), client_in(alice, "zh-hans")

    passes(worker)
    assert said(waiting) == [("QuotaExceeded", quota_words(held=1, asked=1, allowed=1))]
    assert waiting_line(en, waiting) == quota_words(held=1, asked=1, allowed=1)

    settings.LOCAL_DISK_MIN_FREE_GB = 10**6  # more than this machine's disk has free
    ended(worker, settings, holder, "a")  # her quota now lets it start: the disk does not
    passes(worker)

    reasons = [reason for reason, _message in said(waiting)]
    assert reasons == ["QuotaExceeded", "DiskPressure"]  # at once, and once in many passes
    disk = said(waiting)[1][1]
    assert disk.startswith("Waiting for disk space: the disk of the run folder has ")
    # The page says the disk's free space now, the event as it was at the pass: the figure
    # moves with whatever else writes to this disk meanwhile (72.8 -> 72.9 GB in a CI run).
    assert free_gb_as_n(waiting_line(en, waiting)) == free_gb_as_n(disk)
    assert waiting_line(zh, waiting).startswith("等待磁盘空间：运行目录所在磁盘仅剩 ")

    settings.LOCAL_DISK_MIN_FREE_GB = 0
    run_until(worker, lambda: status_of(waiting) == JobStatus.SUCCEEDED, what="the waiting job")
    assert waiting_line(en, waiting) is None


def test_a_job_its_quota_no_longer_holds_says_it_waits_its_turn_while_the_cards_are_busy(
    alice, bob, settings
):
    settings.LOCAL_ACCELERATORS = f"{CARD}=3"
    CardQuota.objects.create(user=alice, card_type=CARD, max_cards=2)
    worker = Worker()
    hers = holding(worker, alice, 1, "hers")
    bobs = holding(worker, bob, 2, "bobs")
    waiting = submit(alice, cards(2, "echo waited"))
    passes(worker, 0.5)
    assert said(waiting) == [("QuotaExceeded", quota_words(held=1, asked=2, allowed=2))]

    ended(worker, settings, hers, "hers")  # her quota allows 2 now; only 1 card is idle
    passes(worker)

    assert said(waiting)[1:] == [("WaitingInQueue", IN_QUEUE)]
    assert waiting.events.get(reason="WaitingInQueue").type == "Normal"
    assert waiting_line(client_in(alice, "en"), waiting) == IN_QUEUE
    assert waiting_line(client_in(alice, "zh-hans"), waiting) == (
        "排队等待：本机资源池有空余资源时，本任务会按队列顺序自动启动。"
    )
    ended(worker, settings, bobs, "bobs")
    run_until(worker, lambda: status_of(waiting) == JobStatus.SUCCEEDED, what="the waiting job")


def test_a_new_reason_a_killed_worker_decided_is_said_once_by_the_restarted_one(alice, settings):
    settings.LOCAL_ACCELERATORS = f"{CARD}=1"
    quota = CardQuota.objects.create(user=alice, card_type=CARD, max_cards=1)
    worker = Worker()
    holder = holding(worker, alice, 1, "holder")
    waiting = submit(alice, cards(1, "echo waited"))
    passes(worker, 0.5)
    assert said(waiting) == [("QuotaExceeded", quota_words(held=1, asked=1, allowed=1))]

    quota.max_cards = 2  # an administrator raises it: the only card is still busy
    quota.save()
    with pytest.raises(WorkerKilled), transaction.atomic():
        dispatch_local()  # decides to take the quota reason back and writes it...
        raise WorkerKilled  # ...but the worker dies before its transaction commits
    assert len(said(waiting)) == 1
    assert waiting_line(client_in(alice, "en"), waiting) == IN_QUEUE  # the page is already true
    worker = Worker()  # restarted
    passes(worker, 0.5)
    Worker().tick()  # and again

    assert said(waiting)[1:] == [("WaitingInQueue", IN_QUEUE)]
    ended(worker, settings, holder, "holder")
    run_until(worker, lambda: status_of(waiting) == JobStatus.SUCCEEDED, what="the waiting job")


def test_a_job_behind_a_blocked_queue_takes_back_its_quota_reason_once_the_quota_allows_it(
    alice, bob, settings
):
    settings.LOCAL_ACCELERATORS = f"{CARD}=4"
    CardQuota.objects.create(user=alice, card_type=CARD, max_cards=1)
    worker = Worker()
    hers = holding(worker, alice, 1, "hers")
    bobs = holding(worker, bob, 2, "bobs")
    waiting = submit(alice, cards(1, "echo waited"))
    passes(worker, 0.5)
    assert said(waiting) == [("QuotaExceeded", quota_words(held=1, asked=1, allowed=1))]
    # Ahead of it in the queue now, and blocking it: 3 cards when at most 2 are idle.
    ahead = submit(bob, cards(3, "echo ahead", priority="high"))

    ended(worker, settings, hers, "hers")  # her quota allows it now; bob's job is first
    passes(worker)

    assert status_of(ahead) == JobStatus.QUEUED and status_of(waiting) == JobStatus.QUEUED
    assert said(ahead) == []  # never held for anything but its turn: nothing to say
    assert said(waiting)[1:] == [("WaitingInQueue", IN_QUEUE)]
    # 2 cards are idle and it asks for 1: its page says the job ahead holds it (QA 63).
    assert waiting_line(client_in(alice, "en"), waiting) == BEHIND

    ended(worker, settings, bobs, "bobs")
    run_until(
        worker,
        lambda: status_of(ahead) == status_of(waiting) == JobStatus.SUCCEEDED,
        what="both jobs, in their queue's order",
    )
    assert ahead.started_at < waiting.started_at


def test_a_job_that_never_waited_for_anything_else_shows_it_waits_its_turn_in_both_languages(
    alice,
):
    worker_beat(worker=WorkerIdentity.here())  # a worker runs, but has not had a pass yet
    job = submit(alice, cards(1, "true"))  # still Queued

    assert waiting_line(client_in(alice, "en"), job) == IN_QUEUE
    assert waiting_line(client_in(alice, "zh-hans"), job).startswith("排队等待：")
    assert said(job) == []


def admin_waiting_line(client: Client, job: Job) -> str | None:
    """The admin job page's "why is this job waiting" line, its place in line first."""
    answer = client.get(reverse("admin:jobs_job_change", args=[job.pk]))
    assert answer.status_code == 200
    found = re.search(r'<p class="help" id="why-waiting">(.*?)</p>', answer.content.decode())
    return html.unescape(re.sub(r"<[^>]+>", "", found.group(1))) if found else None


def test_the_admin_page_of_a_queued_job_says_its_place_in_line_and_why_it_waits(
    alice, bob, reviewer
):
    # qa98: the reviewer's page of a queued job did not say why it waits.
    worker_beat(worker=WorkerIdentity.here())  # a worker runs, but has not had a pass yet
    first = submit(alice, cards(1, "true"))
    second = submit(bob, cards(1, "true"))
    bob.is_active = False
    bob.save(update_fields=["is_active"])
    third = submit(alice, cards(1, "true"))

    assert (
        admin_waiting_line(client_in(reviewer, "en"), first)
        == f"Position 1 in the queue · {IN_QUEUE}"
    )
    assert admin_waiting_line(client_in(reviewer, "zh-hans"), third).startswith(
        "队列中第 2 位 · 排队等待："
    )
    # Its owner's account deactivated: no place in line, and the reason.
    assert admin_waiting_line(client_in(reviewer, "en"), second) == (
        "Waiting: its owner's account is deactivated, and no job of a deactivated account "
        "starts. It stays queued and starts by itself, in its turn, once an administrator "
        "activates the account again."
    )
    third.status = JobStatus.STOPPED
    third.save(update_fields=["status"])
    assert admin_waiting_line(client_in(reviewer, "en"), third) is None  # ended: nothing said


def test_a_queue_task_held_by_its_groups_cap_says_so_not_that_the_pool_lacks_room(alice, settings):
    spec = make_spec(until_gate("group"), submission=S.Submission(S.SUBMIT_QUEUE, 3, 1))
    first, second, third = jobs_submit(owner=alice, spec=spec, submit_key="group-of-three")
    worker = Worker()
    run_until(worker, lambda: status_of(first) == JobStatus.RUNNING, what="the first task")
    passes(worker, 0.3)  # the pool has room for all three: only the group's cap holds them

    assert status_of(second) == status_of(third) == JobStatus.QUEUED
    assert waiting_line(client_in(alice, "en"), second) == (
        "Waiting for its queue group: at most 1 of its tasks runs at once (1 running now). "
        "It starts by itself once one of them ends."
    )
    assert waiting_line(client_in(alice, "zh-hans"), third) == (
        "等待所在的队列任务组：该组最多同时运行 1 个任务（当前运行 1 个）。"
        "其中一个结束后，本任务会自动启动。"
    )
    open_gate(settings, "group")
    run_until(worker, lambda: status_of(third) == JobStatus.SUCCEEDED, what="the group's end")
    assert waiting_line(client_in(alice, "en"), third) is None


def unreadable(job: Job) -> None:
    """The job's stored spec as an older console may have left it: one this one refuses."""
    stored = Job.objects.get(pk=job.pk).spec
    stored["console"]["roles"][0]["replicas"] = "many"
    Job.objects.filter(pk=job.pk).update(spec=stored)


def test_a_queued_job_whose_stored_spec_no_longer_reads_fails_naming_it_and_the_others_start(
    alice, bob, settings
):
    broken = submit(alice, cards(1, "true"))
    unreadable(broken)
    behind = submit(bob, cards(1, "true"))  # later, in the same queue

    started = dispatch_local()

    assert started == [behind]
    assert status_of(broken) == JobStatus.FAILED
    event = broken.events.latest("created_at", "id")
    assert event.reason == "SpecUnreadable"
    assert event.message == (
        "Its stored spec can no longer be read (fields: roles[0].replicas), so it cannot "
        "start. Submit it again from a new draft."
    )
    page = client_in(alice, "zh-hans").get(reverse("job-detail", args=[broken.public_id]))
    assert (
        "该任务保存的配置已无法读取（字段：roles[0].replicas），无法启动。" in page.content.decode()
    )


def test_a_job_held_for_its_quota_whose_spec_no_longer_reads_still_has_a_page(alice, settings):
    CardQuota.objects.create(user=alice, card_type=CARD, max_cards=1)
    job = submit(alice, cards(2, "true"))
    dispatch_local()
    assert said(job)[-1][0] == "QuotaExceeded"
    unreadable(job)
    worker_beat(worker=WorkerIdentity.here())  # the worker runs (dispatch_local is its pass)

    assert waiting_line(client_in(alice, "en"), job) == IN_QUEUE


def test_a_job_behind_its_queues_first_says_so_while_the_card_it_asks_for_is_idle(
    alice, bob, settings
):
    # QA 63: it said it starts "once the local pool has room for it" while the card it asked
    # for showed idle on the pools page, and its owner went looking for a room that was there.
    settings.LOCAL_ACCELERATORS = f"{CARD}=3"
    worker = Worker()
    bobs = holding(worker, bob, 2, "bobs")
    first = submit(bob, cards(2, "echo first"))  # 1 card is idle: it blocks its queue
    behind = submit(alice, cards(1, "echo behind"))
    passes(worker, 0.5)

    assert status_of(behind) == JobStatus.QUEUED
    assert waiting_line(client_in(alice, "en"), behind) == BEHIND
    assert waiting_line(client_in(alice, "zh-hans"), behind) == (
        "排在队列“default”中一个更早的任务之后等待：该任务需要的资源多于当前空闲的，而队列中的"
        "任务不会越过排在最前的任务（以免大任务一直被小任务抢先），因此本任务会在它之后启动，"
        "尽管本任务所需的资源现在是空闲的。"
    )
    assert waiting_line(client_in(bob, "en"), first) == IN_QUEUE  # its own room is what it lacks

    ended(worker, settings, bobs, "bobs")
    run_until(
        worker,
        lambda: status_of(first) == status_of(behind) == JobStatus.SUCCEEDED,
        what="both jobs, in their queue's order",
    )
    first.refresh_from_db()
    behind.refresh_from_db()
    assert first.started_at <= behind.started_at


def test_a_cpu_only_job_behind_its_queues_first_says_so_while_every_card_is_taken(
    alice, bob, settings
):
    """Review 46: with no card idle the page's reading of the next pass stopped before the
    queue's first job (the room for cards was gone), found no queue blocked, and said the job
    waits for the pool to have room, while the cores it asks for were free."""
    settings.LOCAL_ACCELERATORS = f"{CARD}=2"
    worker = Worker()
    bobs = holding(worker, bob, 2, "bobs")
    first = submit(bob, cards(1, "echo first"))  # no card is idle: it blocks its queue
    cores_only = make_spec(
        "echo behind", roles=[S.Role("master", 1)], submission=S.Submission(S.SUBMIT_QUEUE, 1, 1)
    )
    behind = submit(alice, cores_only)
    passes(worker, 0.5)

    assert status_of(first) == status_of(behind) == JobStatus.QUEUED
    assert waiting_line(client_in(alice, "en"), behind) == BEHIND
    assert waiting_line(client_in(bob, "en"), first) == IN_QUEUE  # its own room is what it lacks

    ended(worker, settings, bobs, "bobs")
    # Both run once bob's cards are free; either may end first (CI on a busy machine saw the
    # CPU-only one end while `echo first` still ran), so each is waited for.
    run_until(worker, lambda: status_of(behind) == JobStatus.SUCCEEDED, what="the job behind")
    run_until(worker, lambda: status_of(first) == JobStatus.SUCCEEDED, what="the first job")


def test_a_job_behind_its_queues_first_asking_more_than_is_idle_says_it_waits_for_room(
    alice, bob, settings
):
    settings.LOCAL_ACCELERATORS = f"{CARD}=3"
    worker = Worker()
    bobs = holding(worker, bob, 2, "bobs")
    submit(bob, cards(3, "echo first"))
    behind = submit(alice, cards(2, "echo behind"))  # 1 idle: it waits for room itself
    passes(worker, 0.5)

    assert waiting_line(client_in(alice, "en"), behind) == IN_QUEUE
    ended(worker, settings, bobs, "bobs")
    run_until(worker, lambda: status_of(behind) == JobStatus.SUCCEEDED, what="the job behind")
