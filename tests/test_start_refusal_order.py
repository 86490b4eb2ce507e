"""A queued local job refused at start (start_refusal: a volume its owner may no longer mount,
a replica count lowered since it was queued, …) is failed before the scheduling pass gives it
any cards (review57). Until then it was failed by start_job after the allocation, and its
cards and its running-jobs slot stayed taken for the rest of the pass: a later job of another
queue started ahead of the job behind it (the strict queue order broken), and a standalone job
behind it said no card was idle.

The pass starts its jobs for real, each failing at launch: each start fails at once,
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
def three_cards_failing_at_launch(local_pool_failing_at_launch):
    local_pool_failing_at_launch.LOCAL_ACCELERATORS = f"{A800}=3"
    local_pool_failing_at_launch.LOCAL_QUEUES = ["default", "research"]
    return local_pool_failing_at_launch


def _submitted(owner, name: str, roles: list[S.Role], *, queue: str = "", **changes) -> Job:
    spec = S.JobSpec(
        name=name, resource_pool_id="local", image="a/b:1", command="true", roles=roles
    )
    if queue:
        spec.submission = S.Submission(mode=S.SUBMIT_QUEUE, total=1, concurrency=1)
        spec.queue = queue
    for name, value in changes.items():
        setattr(spec, name, value)
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
    alice, bob, three_cards_failing_at_launch
):
    refused = _submitted(alice, "refused", _two_replicas_of_one_card(), queue="default")
    bobs = _submitted(bob, "bobs", _one_replica(3), queue="default")
    later = _submitted(alice, "later", _one_replica(1), queue="research")
    three_cards_failing_at_launch.LOCAL_MAX_REPLICAS = 1  # lowered after they were queued

    assert dispatch_local() == [bobs]
    assert _status(later) == JobStatus.QUEUED
    assert _status(refused) == JobStatus.FAILED
    assert "StartFailed" in _reasons(refused) and "Started" not in _reasons(refused)


def test_a_standalone_job_behind_one_refused_at_start_starts_without_saying_it_waits_for_cards(
    alice, bob, three_cards_failing_at_launch
):
    refused = _submitted(alice, "refused", _two_replicas_of_one_card())
    bobs = _submitted(bob, "bobs", _one_replica(2))
    three_cards_failing_at_launch.LOCAL_MAX_REPLICAS = 1

    assert dispatch_local() == [bobs]
    assert _status(refused) == JobStatus.FAILED
    assert STANDALONE_WAITING not in _reasons(bobs)


def test_jobs_refused_at_start_use_up_no_slot_of_the_running_jobs_limit(
    alice, bob, three_cards_failing_at_launch
):
    three_cards_failing_at_launch.LOCAL_MAX_RUNNING_JOBS = 1
    refused = [
        _submitted(alice, f"refused-{n}", _two_replicas_of_one_card(), queue="default")
        for n in range(2)
    ]
    bobs = _submitted(bob, "bobs", _one_replica(1), queue="research")
    three_cards_failing_at_launch.LOCAL_MAX_REPLICAS = 1

    assert dispatch_local() == [bobs]
    assert [_status(job) for job in refused] == [JobStatus.FAILED, JobStatus.FAILED]


def test_a_start_refused_or_failed_is_logged_in_english_under_the_default_chinese(
    alice, bob, three_cards_failing_at_launch, caplog
):
    # qa112: the worker's log read "jobs.runner pytorchjob-…: 无法启动：[Errno 28] …", though
    # its log is English (README "Where the logs are"); the events stay in the console's
    # language.
    three_cards_failing_at_launch.LANGUAGE_CODE = "zh-hans"
    refused = _submitted(alice, "refused", _two_replicas_of_one_card(), queue="default")
    failing = _submitted(bob, "failing", _one_replica(1), queue="research")
    three_cards_failing_at_launch.LOCAL_MAX_REPLICAS = 1

    with caplog.at_level("WARNING", logger="jobs.runner"):
        dispatch_local()

    said = [m for m in caplog.messages if m.startswith(("pytorchjob-", "job-"))]
    assert any(m.startswith(f"{refused.public_id}: Could not start: ") for m in said), (
        caplog.messages
    )
    assert any(m.startswith(f"{failing.public_id}: Could not start: ") for m in said), (
        caplog.messages
    )
    assert not any("无法启动" in m for m in caplog.messages)
    assert JobEvent.objects.get(job=refused, reason="StartFailed").message.startswith("无法启动：")


# -- the checks that once ran after the job was marked Running (fix126) --------------------

GPU = "nvidia.com/gpu"


def _failed_as_never_started(job: Job) -> None:
    """Failed from Queued: one StartFailed event, no Started, no start time."""
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert job.started_at is None
    assert "Started" not in _reasons(job) and _reasons(job).count("StartFailed") == 1


def test_a_job_mounting_over_a_file_of_this_machine_is_failed_before_it_takes_the_cards(
    alice, bob, three_cards_failing_at_launch, tmp_path
):
    # Refused on the mount row since fix110: a job queued before that, or whose machine has
    # the file since.
    three_cards_failing_at_launch.LOCAL_VOLUMES = f"work={tmp_path}"
    refused = _submitted(
        alice,
        "refused",
        _one_replica(3),
        queue="default",
        datasources=[S.Datasource("hostpath", "work", mount_path="/etc/passwd")],
    )
    bobs = _submitted(bob, "bobs", _one_replica(3), queue="default")
    later = _submitted(alice, "later", _one_replica(1), queue="research")

    assert dispatch_local() == [bobs]
    assert _status(later) == JobStatus.QUEUED
    _failed_as_never_started(refused)
    assert refused.status_reason_shown == (
        "Could not start: The mount /etc/passwd (volume work): A local job sees this machine's "
        "own files as its root, and there /etc/passwd is a file, not a folder: a volume cannot "
        "be mounted over it. Mount it at a folder, or at a path not there yet, e.g. /workspace."
    )


@pytest.fixture
def three_gpus_card_0_without_its_node(three_cards_failing_at_launch, tmp_path):
    """Three nvidia.com/gpu cards, the nodes of cards 1 and 2 there, card 0's missing."""
    folder = tmp_path / "dev"
    folder.mkdir()
    for name in ("nvidia1", "nvidia2"):
        (folder / name).write_text(name)
    three_cards_failing_at_launch.LOCAL_DEVICE_DIR = str(folder)
    three_cards_failing_at_launch.LOCAL_ACCELERATORS = f"{GPU}=3"
    return folder


def _gpus(cards: int) -> list[S.Role]:
    return [S.Role("master", 1, accelerator_type=GPU, accelerators=cards, cpu=1)]


def test_a_job_needing_more_cards_than_have_their_node_waits_blocking_its_queue_not_the_others(
    alice, bob, three_gpus_card_0_without_its_node
):
    # review58: fix126 failed it from Queued; card 0's node may be back in a moment.
    from jobs.scheduler import CARD_NODES_MISSING

    held = _submitted(alice, "held", _gpus(3), queue="default")
    bobs = _submitted(bob, "bobs", _gpus(2), queue="default")
    later = _submitted(alice, "later", _gpus(1), queue="research")

    assert dispatch_local() == [later]
    assert dispatch_local() == []
    assert [_status(held), _status(bobs)] == [JobStatus.QUEUED, JobStatus.QUEUED]
    assert _reasons(held).count(CARD_NODES_MISSING) == 1
    assert "StartFailed" not in _reasons(held) and held.started_at is None
    assert CARD_NODES_MISSING not in _reasons(bobs)  # behind it in its queue
    folder = three_gpus_card_0_without_its_node
    assert JobEvent.objects.get(job=held, reason=CARD_NODES_MISSING).message_shown == (
        "Waiting for the device nodes of its cards: it needs 3 NVIDIA GPU (nvidia.com/gpu) cards, and only 2 "
        f"of the local pool's have their device node on this machine now (missing: "
        f"{folder}/nvidia0; the NVIDIA driver is not loaded, or is making them again). It "
        "starts by itself once they are back. Please contact an administrator."
    )


@pytest.fixture
def four_gpus_without_their_nodes(three_cards_failing_at_launch, tmp_path):
    """Four nvidia.com/gpu cards, none of whose nodes is there (the driver reloading)."""
    folder = tmp_path / "dev"
    folder.mkdir()
    three_cards_failing_at_launch.LOCAL_DEVICE_DIR = str(folder)
    three_cards_failing_at_launch.LOCAL_ACCELERATORS = f"{GPU}=4"
    return folder


def test_with_every_node_missing_one_pass_fails_no_job_and_they_all_start_once_the_nodes_are_back(
    alice, bob, four_gpus_without_their_nodes
):
    # review58 (M2): one pass failed all four, a refused job not blocking what is behind it.
    from jobs.scheduler import CARD_NODES_MISSING

    first = _submitted(alice, "first", _gpus(1), queue="default")
    second = _submitted(bob, "second", _gpus(1), queue="default")
    research = _submitted(bob, "research", _gpus(1), queue="research")
    standalone = _submitted(alice, "standalone", _gpus(1))
    jobs = [standalone, first, second, research]

    assert dispatch_local() == []
    assert [_status(job) for job in jobs] == [JobStatus.QUEUED] * 4
    # The standalone job comes first and nothing passes it; it alone says why.
    assert [_reasons(job).count(CARD_NODES_MISSING) for job in jobs] == [1, 0, 0, 0]

    for minor in range(4):
        (four_gpus_without_their_nodes / f"nvidia{minor}").write_text("")

    assert dispatch_local() == jobs


def test_with_every_node_missing_the_first_job_of_each_queue_says_it_waits_for_them(
    alice, bob, four_gpus_without_their_nodes
):
    from jobs.scheduler import CARD_NODES_MISSING

    never = _submitted(alice, "never", _gpus(5), queue="default")  # more than the pool has
    first = _submitted(alice, "first", _gpus(1), queue="default")
    second = _submitted(bob, "second", _gpus(1), queue="default")
    research = _submitted(bob, "research", _gpus(1), queue="research")

    assert dispatch_local() == []
    assert _status(never) == JobStatus.FAILED and "Unschedulable" in _reasons(never)
    assert [_status(job) for job in (first, second, research)] == [JobStatus.QUEUED] * 3
    assert [_reasons(job).count(CARD_NODES_MISSING) for job in (first, second, research)] == [
        1,
        0,
        1,
    ]


def test_a_job_is_given_the_idle_cards_whose_nodes_are_there_not_one_whose_node_is_missing(
    alice, three_gpus_card_0_without_its_node
):
    job = _submitted(alice, "two", _gpus(2))

    assert dispatch_local() == [job]
    job.refresh_from_db()
    assert job.local_run.devices == {GPU: [1, 2]}
    assert "no device node" not in job.status_reason


def test_without_bubblewrap_jobs_wait_in_their_place_and_start_once_it_is_there_again(
    alice, bob, three_cards_failing_at_launch, tmp_path
):
    from jobs.scheduler import SANDBOX_UNAVAILABLE

    installed = three_cards_failing_at_launch.LOCAL_BWRAP
    three_cards_failing_at_launch.LOCAL_BWRAP = str(tmp_path / "no-bwrap")
    first = _submitted(alice, "first", _one_replica(3), queue="default")
    behind = _submitted(bob, "behind", _one_replica(1), queue="default")

    assert dispatch_local() == []
    assert dispatch_local() == []  # said once
    assert [_status(first), _status(behind)] == [JobStatus.QUEUED, JobStatus.QUEUED]
    assert _reasons(first).count(SANDBOX_UNAVAILABLE) == 1
    assert "Started" not in _reasons(first) and first.started_at is None
    assert SANDBOX_UNAVAILABLE not in _reasons(behind)  # behind it in its queue
    event = JobEvent.objects.get(job=first, reason=SANDBOX_UNAVAILABLE)
    assert event.message_shown == (
        f"Waiting for bubblewrap, which sandboxes every replica of a local job: bubblewrap is "
        f"not installed at {tmp_path}/no-bwrap (apt-get install bubblewrap). It starts by "
        "itself once it is installed again. Please contact an administrator."
    )

    three_cards_failing_at_launch.LOCAL_BWRAP = installed

    assert dispatch_local() == [first]
