"""A queued local job refused at start (start_refusal: a volume its owner may no longer mount,
a replica count lowered since it was queued, …) is failed before the scheduling pass gives it
any cards (review57). Until then it was failed by start_job after the allocation, and its
cards and its running-jobs slot stayed taken for the rest of the pass: a later job of another
queue started ahead of the job behind it (the strict queue order broken), and a standalone job
behind it said no card was idle.

The pass starts its jobs for real, on a machine without bubblewrap: each start fails at once,
and the job keeps the cards it was given until the worker ends it, as it would."""

from __future__ import annotations

import uuid

import pytest

from jobs import spec as S
from jobs.models import Job, JobEvent, JobStatus
from jobs.scheduler import STANDALONE_WAITING, dispatch_local
from jobs.services import jobs_submit

A800 = "baidu.com/a800_80g_cgpu"


@pytest.fixture(autouse=True)
def three_cards_without_bubblewrap(local_pool_without_bubblewrap):
    local_pool_without_bubblewrap.LOCAL_ACCELERATORS = f"{A800}=3"
    local_pool_without_bubblewrap.LOCAL_QUEUES = ["default", "research"]
    return local_pool_without_bubblewrap


def _submitted(owner, name: str, roles: list[S.Role], *, queue: str = "", **changes) -> Job:
    spec = S.JobSpec(
        name=name, resource_pool_id="local", image="a/b:1", command="true", roles=roles
    )
    if queue:
        spec.submission = S.Submission(mode=S.SUBMIT_QUEUE, total=1, concurrency=1)
        spec.queue = queue
    return jobs_submit(owner=owner, spec=spec, submit_key=uuid.uuid4().hex)[0]


def _one_replica(cards: int) -> list[S.Role]:
    return [S.Role("master", 1, accelerator_type=A800, accelerators=cards, cpu=1)]


def _two_replicas_of_one_card() -> list[S.Role]:
    """Two cards in two replicas: refused once LOCAL_MAX_REPLICAS is lowered to 1."""
    return [
        S.Role("master", 1, accelerator_type=A800, accelerators=1, cpu=1),
        S.Role("worker", 1, accelerator_type=A800, accelerators=1, cpu=1),
    ]


def _status(job: Job) -> str:
    job.refresh_from_db()
    return job.status


def _reasons(job: Job) -> list[str]:
    return list(JobEvent.objects.filter(job=job).values_list("reason", flat=True))


def test_a_job_refused_at_start_leaves_its_cards_to_the_next_of_its_queue_not_to_a_later_queue(
    alice, bob, three_cards_without_bubblewrap
):
    refused = _submitted(alice, "refused", _two_replicas_of_one_card(), queue="default")
    bobs = _submitted(bob, "bobs", _one_replica(3), queue="default")
    later = _submitted(alice, "later", _one_replica(1), queue="research")
    three_cards_without_bubblewrap.LOCAL_MAX_REPLICAS = 1  # lowered after they were queued

    assert dispatch_local() == [bobs]
    assert _status(later) == JobStatus.QUEUED
    assert _status(refused) == JobStatus.FAILED
    assert "StartFailed" in _reasons(refused) and "Started" not in _reasons(refused)


def test_a_standalone_job_behind_one_refused_at_start_starts_without_saying_it_waits_for_cards(
    alice, bob, three_cards_without_bubblewrap
):
    refused = _submitted(alice, "refused", _two_replicas_of_one_card())
    bobs = _submitted(bob, "bobs", _one_replica(2))
    three_cards_without_bubblewrap.LOCAL_MAX_REPLICAS = 1

    assert dispatch_local() == [bobs]
    assert _status(refused) == JobStatus.FAILED
    assert STANDALONE_WAITING not in _reasons(bobs)


def test_jobs_refused_at_start_use_up_no_slot_of_the_running_jobs_limit(
    alice, bob, three_cards_without_bubblewrap
):
    three_cards_without_bubblewrap.LOCAL_MAX_RUNNING_JOBS = 1
    refused = [
        _submitted(alice, f"refused-{n}", _two_replicas_of_one_card(), queue="default")
        for n in range(2)
    ]
    bobs = _submitted(bob, "bobs", _one_replica(1), queue="research")
    three_cards_without_bubblewrap.LOCAL_MAX_REPLICAS = 1

    assert dispatch_local() == [bobs]
    assert [_status(job) for job in refused] == [JobStatus.FAILED, JobStatus.FAILED]
