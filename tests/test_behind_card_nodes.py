"""The jobs behind a job waiting for its cards' device nodes (CardNodesMissing) are told so
(fix141). The scheduling pass holds such a job in its place (review58): a queue task blocks its
queue, a standalone job everything behind it. Until fix141 the preview of that pass (next_pass:
the pools page's note on a held queue, the API's, the waiting pages of the jobs behind) said
the holder "waits for 3 nvidia.com/gpu cards", and a job behind it that asked for idle cards
that it "starts after it, although what it asks for is free now", or that it waits for room:
no card coming free starts them, the nodes coming back do. Driven by real scheduling passes."""

from __future__ import annotations

import html
import uuid
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone, translation

from jobs import spec as S
from jobs.health import WorkerState
from jobs.models import Job, JobStatus
from jobs.scheduler import CARD_NODES_MISSING, dispatch_local, why_waiting
from jobs.services import jobs_submit
from tests import test_api
from tests.test_queue_held import _api_queue

GPU = "nvidia.com/gpu"
# The console as a WSGI transport, for the API's calls (the v1 tests' fixture).
wsgi = test_api.wsgi
# A worker beating now: why_waiting puts a worker that is down before every other reason.
WORKER_RUNNING = WorkerState(seen_at=timezone.now(), age=timedelta(0))


@pytest.fixture
def three_gpus_card_0_without_its_node(local_pool_failing_at_launch, tmp_path):
    """Three nvidia.com/gpu cards, the nodes of cards 1 and 2 there, card 0's missing."""
    folder = tmp_path / "dev"
    folder.mkdir()
    for name in ("nvidia1", "nvidia2"):
        (folder / name).write_text(name)
    local_pool_failing_at_launch.LOCAL_DEVICE_DIR = str(folder)
    local_pool_failing_at_launch.LOCAL_ACCELERATORS = f"{GPU}=3"
    local_pool_failing_at_launch.LOCAL_QUEUES = ["default", "research"]
    return folder


@pytest.fixture
def four_gpus_without_their_nodes(local_pool_failing_at_launch, tmp_path):
    """Four nvidia.com/gpu cards, none of whose nodes is there (the driver reloading)."""
    folder = tmp_path / "dev"
    folder.mkdir()
    local_pool_failing_at_launch.LOCAL_DEVICE_DIR = str(folder)
    local_pool_failing_at_launch.LOCAL_ACCELERATORS = f"{GPU}=4"
    local_pool_failing_at_launch.LOCAL_QUEUES = ["default", "research"]
    return folder


def _submitted(owner, name: str, cards: int, *, queue: str = "") -> Job:
    spec = S.JobSpec(
        name=name,
        resource_pool_id="local",
        image="a/b:1",
        command="true",
        roles=[S.Role("master", 1, accelerator_type=GPU, accelerators=cards, cpu=1)],
    )
    if queue:
        spec.submission = S.Submission(mode=S.SUBMIT_QUEUE, total=1, concurrency=1)
        spec.queue = queue
    return jobs_submit(owner=owner, spec=spec, submit_key=uuid.uuid4().hex)[0]


def _waiting(job: Job, language: str = "en") -> str | None:
    job.refresh_from_db()
    with translation.override(language):
        return why_waiting(job, worker=WORKER_RUNNING)


def _said(job: Job) -> list[str]:
    return list(job.events.values_list("reason", flat=True))


def test_a_job_behind_a_queue_task_waiting_for_device_nodes_says_so_naming_the_nodes(
    alice, bob, three_gpus_card_0_without_its_node
):
    folder = three_gpus_card_0_without_its_node
    held = _submitted(alice, "held", 3, queue="default")
    bobs = _submitted(bob, "bobs", 1, queue="default")  # 2 cards with their node are idle
    mine = _submitted(alice, "mine", 1, queue="default")

    assert dispatch_local() == []

    assert CARD_NODES_MISSING in _said(held)
    assert CARD_NODES_MISSING not in _said(bobs) + _said(mine)
    # Another user's job is not named, as on the pools page; the owner's is.
    assert _waiting(bobs) == (
        "Waiting behind a job of another user, the first job of queue “default”, which waits "
        f"for the device nodes of its cards (missing: {folder}/nvidia0): no job passes the "
        "first job of its queue, so this one starts after it, once they are back."
    )
    assert _waiting(mine).startswith("Waiting behind job “held”, the first job of queue")
    assert _waiting(mine, "zh-hans").startswith("排在任务“held”之后等待")
    assert f"{folder}/nvidia0" in _waiting(mine, "zh-hans")
    assert [bobs.status, mine.status] == [JobStatus.QUEUED, JobStatus.QUEUED]


def test_with_every_node_missing_a_task_behind_its_queues_first_says_it_waits_behind_it(
    alice, four_gpus_without_their_nodes
):
    # No card is offered at all: the pass's preview reads past the last card to find the
    # queue's first job (it stopped there, and the task behind said it waits for room).
    first = _submitted(alice, "first", 1, queue="default")
    second = _submitted(alice, "second", 1, queue="default")

    assert dispatch_local() == []

    assert CARD_NODES_MISSING in _said(first)
    assert _waiting(second).startswith("Waiting behind job “first”, the first job of queue")


def test_a_job_behind_a_standalone_job_waiting_for_device_nodes_says_it_waits_behind_it(
    alice, bob, four_gpus_without_their_nodes
):
    folder = four_gpus_without_their_nodes
    standalone = _submitted(alice, "standalone", 1)
    task = _submitted(alice, "task", 1, queue="research")
    bobs = _submitted(bob, "bobs", 1)

    assert dispatch_local() == []

    assert CARD_NODES_MISSING in _said(standalone)
    nodes = ", ".join(f"{folder}/nvidia{minor}" for minor in range(4))
    assert _waiting(task) == (
        "Waiting behind job “standalone”, a standalone job first in line, which waits for the "
        f"device nodes of its cards (missing: {nodes}): no job starts before it, so this one "
        "starts after it, once they are back."
    )
    assert _waiting(bobs).startswith("Waiting behind a job of another user, a standalone job")
    # The job that waits for them says so itself, not that it waits behind itself.
    assert _waiting(standalone).startswith("Waiting for the device nodes of its cards:")


def test_the_pools_page_and_the_api_say_a_queue_is_held_by_a_job_waiting_for_device_nodes(
    alice, bob, three_gpus_card_0_without_its_node, wsgi
):
    folder = three_gpus_card_0_without_its_node
    held = _submitted(alice, "held", 3, queue="default")
    dispatch_local()

    # The API first: the test client's request gives back the signal that closes the
    # connection, which the WSGI transport's requests then would (tests/test_api.py's wsgi).
    for version in ("v1", "v2"):
        said = _api_queue(wsgi, bob, version=version)["default"]
        assert said["missingDeviceNodes"] == [f"{folder}/nvidia0"], version
        assert said["shortCards"] == {GPU: 3}, version  # as many as it asks: all it lacks
        assert "which waits for the device nodes of its cards" in said["note"], version
    client = Client(headers={"Accept-Language": "en"})
    client.force_login(bob)
    page = html.unescape(client.get("/pools/").content.decode())

    assert (
        "Queue “default” is held by a job of another user, which waits for the device nodes "
        f"of its cards (missing: {folder}/nvidia0): until it starts"
    ) in page
    assert f"which waits for 3 {S.card_shown(GPU)} cards" not in page
    assert held.status == JobStatus.QUEUED
