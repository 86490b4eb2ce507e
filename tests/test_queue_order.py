"""The order between the local pool's queues (sched35): the queue tasks of every queue are
taken by priority (high > normal > low), then submit time, then job id, whatever their
queues' names; within one queue the first job that does not fit still blocks the rest of
that queue (no back-filling), and other queues go on with what is left.

Until session 35 the queues were served in the order of their names: QA 63 saw a high
task of `research`, its page saying "Position 1 in the queue", wait while a low task of
`default` submitted after it took the two cards that freed.

"Position N in the queue" counts the Queued jobs that start before it: the standalone jobs
(they start first), then the queue tasks of every queue ahead of it in that order, less
those set aside for their owner's quota or their queue group's cap (they do not hold it).

The pass starts its jobs for real, each failing at launch: each start fails at once,
and the job keeps the cards it was given until the worker ends it, as it would."""

from __future__ import annotations

import uuid

import pytest
from django.urls import reverse

from jobs import spec as S
from jobs.health import WorkerIdentity, worker_beat
from jobs.models import CardQuota, Job, JobStatus, LocalRun
from jobs.scheduler import dispatch_local, next_pass, queue_position
from jobs.services import jobs_submit

A800 = "baidu.com/a800_80g_cgpu"


@pytest.fixture(autouse=True)
def two_cards_failing_at_launch(local_pool_failing_at_launch):
    local_pool_failing_at_launch.LOCAL_ACCELERATORS = f"{A800}=2"
    local_pool_failing_at_launch.LOCAL_QUEUES = ["default", "research", "vision"]


def _spec(name: str, cards: int, *, standalone: bool = False, **changes) -> S.JobSpec:
    spec = S.JobSpec(
        name=name,
        resource_pool_id="local",
        image="a/b:1",
        command="true",
        roles=[S.Role("master", 1, accelerator_type=A800, accelerators=cards, cpu=1)],
    )
    if not standalone:
        spec.submission = S.Submission(mode=S.SUBMIT_QUEUE, total=1, concurrency=1)
    for field, value in changes.items():
        setattr(spec, field, value)
    return spec


def _submitted(owner, spec: S.JobSpec) -> Job:
    return jobs_submit(owner=owner, spec=spec, submit_key=uuid.uuid4().hex)[0]


def _holding(owner, devices: list[int]) -> Job:
    """A job running on `devices` (the cards a pass gave it, or a run the console does not
    schedule): they free up when it ends (_ended)."""
    job = _submitted(owner, _spec("holding", len(devices)))
    Job.objects.filter(pk=job.pk).update(status=JobStatus.RUNNING)
    LocalRun.objects.create(job=job, devices={A800: devices}, cpus=[])
    return job


def _ended(job: Job) -> None:
    Job.objects.filter(pk=job.pk).update(status=JobStatus.SUCCEEDED)


def _status(job: Job) -> str:
    job.refresh_from_db()
    return job.status


def test_a_high_task_of_research_takes_the_freed_cards_before_a_low_task_of_default_sent_after(
    alice, bob
):
    # QA 63, as the lead saw it: the two cards busy, a high task of `research`, then a low
    # task of `default`, both for the two cards.
    busy = _holding(bob, [0, 1])
    high = _submitted(alice, _spec("high", 2, queue="research", priority="high"))
    low = _submitted(bob, _spec("low", 2, queue="default", priority="low"))
    assert dispatch_local() == []
    assert queue_position(high) == 1 and queue_position(low) == 2

    _ended(busy)  # the two cards free up

    assert next_pass().free == {A800: []}
    assert dispatch_local() == [high]
    assert _status(low) == JobStatus.QUEUED
    assert queue_position(low) == 1


def test_tasks_of_several_queues_start_by_priority_then_submit_time_whatever_the_queue_names(
    alice, bob
):
    busy = _holding(bob, [0, 1])
    sent = [
        _submitted(alice, _spec("vision-low", 1, queue="vision", priority="low")),
        _submitted(bob, _spec("default-normal", 1, queue="default", priority="normal")),
        _submitted(alice, _spec("research-normal", 1, queue="research", priority="normal")),
        _submitted(bob, _spec("vision-high", 1, queue="vision", priority="high")),
        _submitted(alice, _spec("default-low", 1, queue="default", priority="low")),
    ]
    by_name = {job.name: job for job in sent}
    expected = ["vision-high", "default-normal", "research-normal", "vision-low", "default-low"]
    assert [queue_position(by_name[name]) for name in expected] == [1, 2, 3, 4, 5]

    started: list[str] = []
    _ended(busy)
    while len(started) < len(sent):
        # One card at a time: each pass gives it to the next job in line.
        holder = _holding(bob, [0])
        free = next_pass().free
        ran = dispatch_local()
        assert free == {A800: []} and len(ran) == 1, (started, ran)
        started.append(ran[0].name)
        LocalRun.objects.filter(job=ran[0]).delete()
        _ended(ran[0])
        _ended(holder)

    assert started == expected


def test_a_queue_whose_first_task_does_not_fit_holds_only_its_own_later_tasks(alice, bob):
    _holding(bob, [0])  # one card idle
    big = _submitted(alice, _spec("big", 2, queue="research", priority="high"))
    behind_big = _submitted(alice, _spec("behind-big", 1, queue="research", priority="high"))
    other = _submitted(bob, _spec("other", 1, queue="default", priority="low"))
    # The position is the place in line: `other` is third, and starts first all the same on
    # the card `big` cannot use, as a job of another queue may (README "Scheduling").
    assert [queue_position(j) for j in (big, behind_big, other)] == [1, 2, 3]

    assert {queue: held.rank for queue, held in next_pass().blocked.items()} == {"research": 0}
    assert dispatch_local() == [other]
    assert _status(behind_big) == JobStatus.QUEUED  # no back-filling in its own queue


def test_the_position_of_a_queue_task_counts_the_standalone_jobs_which_start_first(alice, bob):
    _holding(bob, [0, 1])
    task = _submitted(alice, _spec("task", 2, queue="default", priority="high"))
    standalone = _submitted(bob, _spec("standalone", 2, standalone=True))

    assert queue_position(standalone) == 1
    assert queue_position(task) == 2


def test_the_position_leaves_out_the_jobs_set_aside_for_their_owners_quota_or_group(alice, bob):
    _holding(bob, [0])  # one card idle
    # Alice may hold one card: her two-card task is set aside once a pass has looked at it.
    quota = CardQuota.objects.create(user=alice, card_type=A800, max_cards=1)
    over_quota = _submitted(alice, _spec("over-quota", 2, queue="research", priority="high"))
    group_spec = _spec("group", 2, queue="vision", priority="high")
    group_spec.submission = S.Submission(mode=S.SUBMIT_QUEUE, total=2, concurrency=1)
    first_task, second_task = jobs_submit(owner=bob, spec=group_spec, submit_key="group")
    mine = _submitted(bob, _spec("mine", 2, queue="default", priority="normal"))
    assert queue_position(mine) == 4  # before any pass, every job ahead counts

    assert dispatch_local() == []  # the over-quota task set aside, the others too big
    assert queue_position(mine) == 3  # the group's two tasks
    assert queue_position(over_quota) is None  # the pass goes past it: no place in line

    Job.objects.filter(pk=first_task.pk).update(status=JobStatus.RUNNING)
    # Its group runs its one task at a time: the second waits beside the line.
    assert queue_position(mine) == 1
    assert queue_position(second_task) is None

    quota.max_cards = 2
    quota.save()  # the over-quota task is in line again, as its own page says at once
    assert queue_position(mine) == 2
    assert queue_position(over_quota) == 1


def test_the_waiting_tasks_of_a_sweep_held_by_its_groups_cap_show_no_position_but_why_they_wait(
    alice, bob, client
):
    # qa91: a sweep of 5 tasks, one at a time; its first runs, the pool has room for all.
    worker_beat(worker=WorkerIdentity.here())  # a worker runs: its pages say why jobs wait
    sweep = _spec("sweep", 1)
    sweep.submission = S.Submission(mode=S.SUBMIT_QUEUE, total=5, concurrency=1)
    running, *waiting = jobs_submit(owner=alice, spec=sweep, submit_key="sweep")
    Job.objects.filter(pk=running.pk).update(status=JobStatus.RUNNING)
    later = _submitted(bob, _spec("later", 1))
    client.force_login(alice)

    # Each said "Position 1 in the queue" (its siblings and itself left out, as set aside),
    # which none of them is: the next pass goes past all four.
    assert [queue_position(task) for task in waiting] == [None] * 4
    for task in waiting:
        page = client.get(reverse("job-detail", args=[task.public_id])).content.decode()
        assert 'id="queue-position"' not in page
        assert (
            "Waiting for its queue group: at most 1 of its tasks runs at once (1 running now)."
            in page
        )
    # A job not held by a cap keeps its place: the four go unseen, it is next.
    assert queue_position(later) == 1
    assert dispatch_local() == [later]

    _ended(running)  # the group's one task ends: the next is in line again, first
    assert [queue_position(task) for task in waiting] == [1, 2, 3, 4]
