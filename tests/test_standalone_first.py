"""A standalone job (独立任务) admitted against idle cards starts first (sched26).

The wizard, Run again and the API admit a standalone local job only when the next scheduling
pass leaves its cards idle. The pass then starts the standalone jobs, in submit order, before
any queue task: a queue task submitted after one (a higher priority, a queue whose name sorts
first) cannot take its cards, also when the worker was down between the two submits. One
that still cannot start waits first in line, says why with its numbers, and nothing behind
it starts.

The pass starts its jobs for real, each failing at launch: each start fails at once,
and the job keeps the cards it was given until the worker ends it, as it would."""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from django.db import connection, connections, transaction

from jobs import spec as S
from jobs.actions import ActionError
from jobs.health import WorkerIdentity, worker_beat
from jobs.models import Job, JobStatus, LocalRun
from jobs.review import job_approve
from jobs.scheduler import STANDALONE_WAITING, dispatch_local, queue_position, why_waiting
from jobs.services import jobs_submit
from jobs.wizard import standalone_claim_refusals
from tests.test_concurrent_limits import _waiting_on_locks

A800 = "baidu.com/a800_80g_cgpu"
A800_SHOWN = S.card_shown(A800)


@pytest.fixture(autouse=True)
def four_cards_failing_at_launch(local_pool_failing_at_launch):
    local_pool_failing_at_launch.LOCAL_ACCELERATORS = f"{A800}=4"
    local_pool_failing_at_launch.LOCAL_QUEUES = ["default", "a-first"]


def _spec(name: str, cards: int, *, queue_task: bool = False, **changes) -> S.JobSpec:
    spec = S.JobSpec(
        name=name,
        resource_pool_id="local",
        image="a/b:1",
        command="true",
        roles=[S.Role("master", 1, accelerator_type=A800, accelerators=cards, cpu=1)],
    )
    if queue_task:
        spec.submission = S.Submission(mode=S.SUBMIT_QUEUE, total=1, concurrency=1)
    for field, value in changes.items():
        setattr(spec, field, value)
    return spec


def _admitted(owner, spec: S.JobSpec) -> tuple[list[str], Job | None]:
    """A standalone job submitted as the wizard and Run again submit one: its admission read
    under the cards lock, in the transaction that creates it."""
    key = uuid.uuid4().hex
    with transaction.atomic():
        refusals = standalone_claim_refusals(spec=spec, owner=owner, submit_key=key)
        if refusals:
            return refusals, None
        return [], jobs_submit(owner=owner, spec=spec, submit_key=key)[0]


def _queue_task(owner, spec: S.JobSpec) -> Job:
    return jobs_submit(owner=owner, spec=spec, submit_key=uuid.uuid4().hex)[0]


def _status(job: Job) -> str:
    job.refresh_from_db()
    return job.status


def test_a_higher_priority_queue_task_submitted_after_a_standalone_job_does_not_take_its_cards(
    alice, bob
):
    refusals, standalone = _admitted(alice, _spec("standalone", 4))
    # The worker is down: no pass runs before Bob's queue task comes, in a queue that sorts
    # first and at a higher priority, for the same four cards.
    later = _queue_task(bob, _spec("later", 4, queue_task=True, queue="a-first", priority="high"))

    started = dispatch_local()

    assert refusals == [] and standalone is not None
    assert started == [standalone]
    assert _status(later) == JobStatus.QUEUED
    assert LocalRun.objects.get().job == standalone


def test_two_standalone_jobs_admitted_then_a_queue_task_cannot_over_book_the_cards(alice, bob):
    _first_refusals, first = _admitted(alice, _spec("first", 2, queue="a-first"))
    _second_refusals, second = _admitted(bob, _spec("second", 2))
    later = _queue_task(bob, _spec("later", 2, queue_task=True, priority="high"))
    third_refusals, third = _admitted(alice, _spec("third", 1, queue="a-first", priority="high"))

    started = dispatch_local()

    assert first is not None and second is not None
    assert third is None
    assert any("the pool has 0 idle now" in m for m in third_refusals), third_refusals
    assert started == [first, second]  # in submit order, though the first's queue sorts first
    assert _status(later) == JobStatus.QUEUED
    assert sorted(LocalRun.objects.values_list("job__name", flat=True)) == ["first", "second"]


def test_a_standalone_job_whose_cards_were_taken_outside_the_plan_waits_first_with_its_numbers(
    alice, bob
):
    _refusals, standalone = _admitted(alice, _spec("standalone", 3))
    assert standalone is not None
    # Three cards taken by a job the admission did not see (a worker restarted with fewer
    # cards, a run the console did not start): one card is idle now.
    outside = _queue_task(bob, _spec("outside", 3, queue_task=True))
    Job.objects.filter(pk=outside.pk).update(status=JobStatus.RUNNING)
    LocalRun.objects.create(job=outside, devices={A800: [0, 1, 2]}, cpus=[])
    small = _queue_task(bob, _spec("small", 1, queue_task=True, priority="high"))
    admission_refusals, none_admitted = _admitted(bob, _spec("another", 1))

    started = dispatch_local()
    dispatch_local()  # said once, not on every pass

    assert started == []
    assert _status(standalone) == JobStatus.QUEUED
    assert _status(small) == JobStatus.QUEUED  # nothing behind it starts on the idle card
    assert none_admitted is None
    assert any("a standalone job submitted before it is waiting" in m for m in admission_refusals)
    said = list(standalone.events.filter(reason=STANDALONE_WAITING).values_list("message", "type"))
    assert said == [
        (
            "Waiting for cards: a standalone job starts before every queue task, but it needs 3 "
            f"{A800_SHOWN} cards and 1 are idle now. It starts first, by itself, once they are idle; "
            "no job behind it starts before it.",
            "Warning",
        )
    ]
    worker_beat(worker=WorkerIdentity.here())  # a worker runs (dispatch_local is its pass)
    assert why_waiting(standalone) == said[0][0]
    # The queue task waits behind it (sched35: the position counts the standalone jobs too).
    assert queue_position(standalone) == 1 and queue_position(small) == 2

    Job.objects.filter(pk=outside.pk).update(status=JobStatus.SUCCEEDED)  # its cards are free

    assert dispatch_local() == [standalone, small]  # first, then the card it leaves


def test_a_waiting_standalone_jobs_page_says_what_it_lacks_now_not_what_the_last_pass_found(
    alice, bob, settings
):
    _refusals, standalone = _admitted(alice, _spec("standalone", 3))
    outside = _queue_task(bob, _spec("outside", 3, queue_task=True))
    Job.objects.filter(pk=outside.pk).update(status=JobStatus.RUNNING)
    run = LocalRun.objects.create(job=outside, devices={A800: [0, 1, 2]}, cpus=[])
    dispatch_local()  # "it needs 3 … and 1 are idle now", said once
    worker_beat(worker=WorkerIdentity.here())

    run.devices = {A800: [0, 1]}  # one card given back: 2 are idle
    run.save()
    with_two_idle = why_waiting(standalone)
    settings.LOCAL_MAX_RUNNING_JOBS = 1  # and the pool may run no more job beside that one
    at_the_limit = why_waiting(standalone)

    assert (
        "it needs 3 A800 80GB (baidu.com/a800_80g_cgpu) cards and 2 are idle now" in with_two_idle
    )
    assert at_the_limit.startswith("Waiting for room: a standalone job starts before every")
    assert "runs at most 1 job at once" in at_the_limit
    assert standalone.events.filter(reason=STANDALONE_WAITING).count() == 1


def test_approving_a_held_standalone_job_is_refused_when_it_would_make_one_let_in_after_it_wait(
    alice, bob, admin_user
):
    # Alice's job (no exclusive cores) waits for review; Bob's CPU-exclusive job is let in
    # meanwhile. Approved, Alice's would start first (it was submitted first), and once a job
    # that pins no core runs, no core is left to pin: Bob's would wait, blocking the pool.
    held = jobs_submit(
        owner=alice,
        spec=_spec("held", 1),
        submit_key=uuid.uuid4().hex,
        initial_status=JobStatus.PENDING_REVIEW,
    )[0]
    _refusals, exclusive = _admitted(bob, _spec("exclusive", 1, cpu_exclusive=True))
    assert exclusive is not None

    with pytest.raises(ActionError) as refused:
        job_approve(job=held, reviewer=admin_user)
    started = dispatch_local()

    assert "Not approved: a standalone job must start at once" in str(refused.value)
    assert "the CPU cores they need would then be taken" in str(refused.value)
    assert _status(held) == JobStatus.PENDING_REVIEW
    assert started == [exclusive]
    assert not exclusive.events.filter(reason=STANDALONE_WAITING).exists()
    # Once Bob's job has started, Alice's is approved: it starts beside it.
    assert job_approve(job=held, reviewer=admin_user) is True
    assert _status(held) == JobStatus.QUEUED


@pytest.mark.django_db(transaction=True)
def test_a_job_the_worker_starts_while_a_standalone_job_is_admitted_is_counted_once(alice, bob):
    """The admission reads the cards the running jobs hold, then the Queued jobs: two reads.
    On PostgreSQL each sees what was committed when it ran, so a start the worker's pass
    committed between them hid that job from both (no longer Queued, not yet holding cards
    when the first read ran): its cards read as idle, the standalone job was let in on them,
    and then waited first in line, nothing behind it starting. SQLite's transaction holds
    the database's one write lock, so no start lands between the two reads there."""
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL's read committed transactions only")
    queued = _queue_task(bob, _spec("queued", 4, queue_task=True))
    passes: list[object] = []

    def the_worker_passes() -> None:
        try:
            passes.append(dispatch_local())
        except Exception as exc:  # said below, not lost in the thread
            passes.append(exc)
        finally:
            connections.close_all()

    worker = threading.Thread(target=the_worker_passes)

    def between_the_two_reads(execute, sql, params, many, context):
        # Just before the Queued jobs are read (jobs.scheduler._queued_local_rows), the
        # worker's pass runs: to its end, or until it waits for this transaction's lock.
        if "q_line" in sql and not worker.is_alive() and not passes:
            worker.start()
            deadline = time.monotonic() + 30
            while worker.is_alive() and not _waiting_on_locks() and time.monotonic() < deadline:
                time.sleep(0.02)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(between_the_two_reads):
        refusals, standalone = _admitted(alice, _spec("standalone", 4))
    worker.join(timeout=60)

    assert standalone is None
    assert any("the pool has 0 idle now" in m for m in refusals), refusals
    assert passes == [[queued]]
    assert _status(queued) == JobStatus.RUNNING


# -- what only the machine lacks: card device nodes, bubblewrap (review58) ------------------

GPU = "nvidia.com/gpu"


def _gpu_spec(name: str, cards: int) -> S.JobSpec:
    spec = _spec(name, 0)
    spec.roles = [S.Role("master", 1, accelerator_type=GPU, accelerators=cards, cpu=1)]
    return spec


@pytest.fixture
def two_gpus_card_1_without_its_node(local_pool_failing_at_launch, tmp_path):
    folder = tmp_path / "dev"
    folder.mkdir()
    (folder / "nvidia0").write_text("")
    local_pool_failing_at_launch.LOCAL_DEVICE_DIR = str(folder)
    local_pool_failing_at_launch.LOCAL_ACCELERATORS = f"{GPU}=2"
    return folder


def test_a_standalone_job_needing_a_card_whose_node_is_missing_is_refused_naming_the_node(
    alice, two_gpus_card_1_without_its_node
):
    refusals, job = _admitted(alice, _gpu_spec("both", 2))

    assert job is None
    folder = two_gpus_card_1_without_its_node
    assert refusals == [
        "A standalone job needs 2 NVIDIA GPU (nvidia.com/gpu) cards but only 1 of the pool's "
        f"have their device node on this machine now (missing: {folder}/nvidia1), and a "
        "standalone job must start at once; submit it as a queue task, which waits for the nodes, or ask an "
        "administrator to load the NVIDIA driver."
    ]
    assert not Job.objects.exists()


def test_a_standalone_job_whose_node_went_missing_after_it_was_let_in_waits_first_saying_why(
    alice, bob, two_gpus_card_1_without_its_node
):
    from jobs.scheduler import CARD_NODES_MISSING, held_for_waiting_note, next_pass

    standalone = _queue_task(alice, _gpu_spec("both", 2))  # let in while the node was there
    behind = _queue_task(bob, _spec("behind", 1, queue_task=True))

    assert dispatch_local() == []
    assert [_status(standalone), _status(behind)] == [JobStatus.QUEUED, JobStatus.QUEUED]
    assert list(standalone.events.values_list("reason", flat=True)).count(CARD_NODES_MISSING) == 1
    plan = next_pass()
    assert plan.standalone_waits
    assert "have their device node on this machine now" in held_for_waiting_note(plan)


def test_a_standalone_job_is_refused_while_bubblewrap_is_missing(
    alice, local_pool_failing_at_launch, tmp_path
):
    local_pool_failing_at_launch.LOCAL_BWRAP = str(tmp_path / "no-bwrap")

    refusals, job = _admitted(alice, _spec("standalone", 1))

    assert job is None
    assert refusals == [
        "Bubblewrap, which sandboxes every replica of a local job, is not installed at "
        f"{tmp_path}/no-bwrap on this machine now, and a standalone job must start at once. "
        "Submit it as a queue task, which waits for it, or submit it again once an "
        "administrator has installed it."
    ]
