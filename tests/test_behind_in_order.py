"""A Queued job's page says it waits behind the job holding its line only when the scheduling
pass reaches it after that job (review63). Until then the page asked only that the holder was
not the job itself: a high-priority task submitted after its queue's holder, a standalone job
submitted before the standalone one that waits, and a job the disk no longer held each come
first and start at the next pass, yet read "Waiting behind job “held”…", or that an earlier job
of its queue holds it. Driven by real scheduling passes (tests/test_behind_card_nodes.py's
pools: a card whose device node is missing, and starts that fail at launch)."""

from __future__ import annotations

from jobs.models import JobStatus
from jobs.scheduler import CARD_NODES_MISSING, DISK_PRESSURE, IN_QUEUE_MESSAGE, dispatch_local
from tests import test_behind_card_nodes
from tests.test_behind_card_nodes import _said, _submitted, _waiting

# tests/test_behind_card_nodes.py's pool: three cards, card 0's device node missing.
three_gpus_card_0_without_its_node = test_behind_card_nodes.three_gpus_card_0_without_its_node

IN_QUEUE = str(IN_QUEUE_MESSAGE)


def _with_priority(job, priority: str):
    job.priority = priority
    job.save(update_fields=["priority"])
    return job


def test_a_high_priority_task_submitted_after_its_queues_holder_reads_as_next_not_behind_it(
    alice, three_gpus_card_0_without_its_node
):
    held = _submitted(alice, "held", 3, queue="default")
    assert dispatch_local() == []  # it waits for card 0's node, first in its queue
    urgent = _with_priority(_submitted(alice, "urgent", 1, queue="default"), "high")
    later = _submitted(alice, "later", 1, queue="default")

    assert _waiting(urgent) == IN_QUEUE  # the next pass starts it, before "held"
    assert _waiting(later).startswith("Waiting behind job “held”, the first job of queue")
    assert CARD_NODES_MISSING in _said(held)
    assert [urgent.status, later.status] == [JobStatus.QUEUED, JobStatus.QUEUED]
    # The pass does as its page says: it starts the urgent task, not the one behind the holder.
    assert [job.pk for job in dispatch_local()] == [urgent.pk]
    later.refresh_from_db()
    assert later.status == JobStatus.QUEUED


def test_a_standalone_job_submitted_before_a_standalone_one_waiting_for_nodes_is_not_behind_it(
    alice, three_gpus_card_0_without_its_node
):
    first = _submitted(alice, "first", 1)
    held = _submitted(alice, "held", 3)  # 3 cards, one of whose nodes is missing
    after = _submitted(alice, "after", 1)

    assert _waiting(first) == IN_QUEUE
    assert _waiting(after).startswith("Waiting behind job “held”, a standalone job first in")
    assert [first.status, held.status] == [JobStatus.QUEUED, JobStatus.QUEUED]


def test_a_job_the_disk_no_longer_holds_is_not_said_to_wait_behind_the_job_after_it(
    alice, three_gpus_card_0_without_its_node, settings
):
    settings.LOCAL_DISK_MIN_FREE_GB = 10**9  # no disk has that much free
    first = _submitted(alice, "first", 1, queue="default")
    held = _submitted(alice, "held", 3, queue="default")
    assert dispatch_local() == []
    assert DISK_PRESSURE in _said(first)

    settings.LOCAL_DISK_MIN_FREE_GB = 0  # room again: "first" starts at the next pass

    assert _waiting(first) == IN_QUEUE
    assert CARD_NODES_MISSING not in _said(held)  # the pass stopped at "first"


def test_a_high_priority_task_fitting_in_the_idle_cards_is_not_said_to_wait_behind_its_queue(
    alice, bob, three_gpus_card_0_without_its_node
):
    # The idle-cards reading (every node there): "big" asks all 3 cards, and the urgent task
    # submitted after it with a higher priority takes one of them first at the next pass.
    (three_gpus_card_0_without_its_node / "nvidia0").write_text("nvidia0")
    big = _submitted(bob, "big", 3, queue="default")
    urgent = _with_priority(_submitted(alice, "urgent", 1, queue="default"), "high")
    behind = _submitted(alice, "behind", 1, queue="default")

    assert _waiting(urgent) == IN_QUEUE
    assert _waiting(behind).startswith("Waiting behind an earlier job of queue “default”")
    assert [big.status, urgent.status] == [JobStatus.QUEUED, JobStatus.QUEUED]
