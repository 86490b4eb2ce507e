"""The AIHC backend against the strict fake: inventory, refusals, submission, sync, logs."""

from __future__ import annotations

import html
import json
import logging
import os
import subprocess
import sys
import threading
import time
import uuid
from datetime import UTC, timedelta
from pathlib import Path

import pytest
from django.db import connection
from django.db.models import F
from django.utils import timezone, translation

from jobs import spec as S
from jobs.aihc.mapping import v2_from_v1
from jobs.backends import BackendError, all_pools, find_pool, get_backend
from jobs.logs import shown_lines
from jobs.models import Job, JobEvent, JobStatus
from jobs.services import job_transition, jobs_submit
from jobs.usage import job_usage_text
from tests import test_api
from tests.fake_aihc import FakeAihc, configure

SEED_DOC = json.loads(
    (Path(__file__).parent / "data" / "seed001_create_job_request.json").read_text()
)
A800 = "baidu.com/a800_80g_cgpu"
POOL = "cce-pool1"
# The console as a WSGI transport for an API script (tests/test_api.py).
wsgi = test_api.wsgi


@pytest.fixture
def fake(settings, db):
    # db: reading AIHC's pools keeps their names in the database (KnownPool).
    fake = FakeAihc().start()
    fake.add_pool(
        POOL, "训练池", queues=("default", "research"), gpus={A800: (16, 6)}, pfs="pfs-7xWeAt"
    )
    fake.add_pool("cce-pool2", "推理池", gpus={"nvidia.com/gpu": (8, 8)})
    configure(settings, fake)
    # A job is looked for, and sent again, at the next pass after a create that got no clear
    # answer, not AIHC_CREATE_SETTLE_SECONDS later: the tests of what comes of each look and
    # create go pass by pass. The wait itself is tested with it set (test_a_create_...).
    settings.AIHC_CREATE_SETTLE_SECONDS = 0
    yield fake
    fake.stop()


@pytest.fixture(autouse=True)
def english():
    """Messages are compared in English (the console defaults to Chinese)."""
    with translation.override("en"):
        yield


@pytest.fixture
def aihc():
    return get_backend("aihc")


def seed_spec(**changes) -> S.JobSpec:
    spec = S.parse_document(SEED_DOC, resource_pool_id=POOL)
    for key, value in changes.items():
        setattr(spec, key, value)
    return spec


def submit(owner, spec: S.JobSpec) -> list[Job]:
    return jobs_submit(owner=owner, spec=spec, submit_key=str(uuid.uuid4()), backend="aihc")


def wait_for_inventory(aihc) -> None:
    aihc._inventory().join()


def quiet_spell(aihc, *, seconds: float) -> None:
    """Moves the last pool read back in time, as if `seconds` had passed since, instead of
    sleeping past a short cache period (a loaded machine can take longer than that between
    two steps, a fast one less)."""
    inventory = aihc._inventory()
    inventory.attempted_at -= seconds
    inventory.as_of -= timedelta(seconds=seconds)


def refused_looks_earlier(job: Job, *, seconds: float) -> None:
    """Moves the job's refused looks back in time, as if `seconds` had passed since (its next
    look is due by them: they are kept in its events), instead of sleeping past the wait."""
    job.events.filter(reason="LookRefused").update(
        created_at=F("created_at") - timedelta(seconds=seconds)
    )


def zoned(moment) -> str:
    """A time as events and reasons say it: HH:MM:SS in the console's zone, the zone named
    by its offset (Asia/Shanghai by default: "18:24:50 (UTC+08:00)"; qa81)."""
    local = timezone.localtime(moment)
    offset = local.utcoffset()
    hours, rest = divmod(int(offset.total_seconds()) // 60, 60)
    return (
        f"{local:%H:%M:%S} (UTC{'+' if offset >= timedelta(0) else '-'}{abs(hours):02}:{rest:02})"
    )


def times_said(start, end, *, seconds: int) -> set[str]:
    """The time a reason may give for `seconds` after a moment between `start` and `end`
    (each whole second between: the time is said to the second, qa80, with its zone, qa81)."""
    first = start.replace(microsecond=0)
    return {
        zoned(first + timedelta(seconds=seconds + n))
        for n in range(int((end - first).total_seconds()) + 1)
    }


def submit_pause_over(aihc) -> None:
    """Ends the submit pause now, as if its time had passed (instead of sleeping past it)."""
    with aihc._lock:
        for key, (_until, delay) in aihc._pauses.items():
            aihc._pauses[key] = (time.monotonic(), delay)


# -- inventory ---------------------------------------------------------------------------


def test_pools_come_from_aihc_with_queues_idle_cards_and_volumes(fake, aihc):
    pools = {p.id: p for p in aihc.pools()}

    assert set(pools) == {POOL, "cce-pool2"}
    pool = pools[POOL]
    assert (pool.name, pool.backend) == ("训练池", "aihc")
    assert pool.queues == ["default", "research"]
    assert [(a.type, a.total, a.idle) for a in pool.accelerators] == [(A800, 16, 10)]
    assert pool.idle(A800) == 10
    assert [(v.type, v.name) for v in pool.volumes] == [("pfs", "pfs-7xWeAt")]
    assert "pfs" in pool.storage_types and "nas" not in pool.storage_types
    assert pool.as_of is not None and not pool.stale and pool.error == ""
    assert pools["cce-pool2"].idle("nvidia.com/gpu") == 0


def test_aihc_pools_are_listed_beside_the_local_pool(fake, db):
    assert {p.backend for p in all_pools()} == {"local", "aihc"}
    assert find_pool(POOL).queues == ["default", "research"]


def test_polling_the_pools_asks_aihc_at_most_once_per_ttl(fake, aihc, db):
    for _ in range(25):
        aihc.pools()
        find_pool(POOL)

    assert len(fake.calls("DescribeResourcePools")) == 1
    assert len(fake.calls("DescribeQueues")) == 2  # one per pool


def test_a_slow_aihc_gets_the_last_pools_at_once_while_one_refresh_runs(fake, aihc, settings):
    assert aihc.pools()[0].idle(A800) == 10
    settings.AIHC_CACHE_SECONDS = 0
    fake.pools[POOL]["gpus"][A800] = (16, 12)
    release = fake.block_next("DescribeResourcePools")

    during = [aihc.pools() for _ in range(5)]  # would hang here if it waited for AIHC

    assert all(pools[0].idle(A800) == 10 and pools[0].stale for pools in during)
    release.set()
    wait_for_inventory(aihc)
    assert len(fake.calls("DescribeResourcePools")) == 2  # one refresh, not five
    settings.AIHC_CACHE_SECONDS = 60
    assert aihc.pools()[0].idle(A800) == 4


def test_a_failing_aihc_shows_the_last_known_pools_with_their_age_and_the_error(
    fake, aihc, settings
):
    first = {p.id: p for p in aihc.pools()}
    settings.AIHC_CACHE_SECONDS = 0
    fake.fail_next("DescribeResourcePools", status=503, code="ServiceUnavailable", times=10)
    aihc.pools()
    wait_for_inventory(aihc)
    settings.AIHC_CACHE_SECONDS = 60

    pools = {p.id: p for p in aihc.pools()}

    assert set(pools) == set(first)
    assert pools[POOL].idle(A800) == 10
    assert pools[POOL].stale
    assert "ServiceUnavailable" in pools[POOL].error
    assert pools[POOL].as_of == first[POOL].as_of


def test_without_credentials_the_backend_offers_no_pools_and_does_not_fail(fake, aihc, settings):
    settings.AIHC_SECRET_KEY = ""
    assert aihc.pools() == []
    assert fake.requests == []


def test_a_misconfigured_backend_offers_no_pools_and_fails_submits_with_the_reason(
    fake, aihc, alice, settings
):
    [job] = submit(alice, seed_spec())
    settings.AIHC_API_VERSION = "v3"

    assert aihc.pools() == []
    aihc.submit(job)

    job.refresh_from_db()
    assert job.status == JobStatus.SUBMIT_FAILED
    assert "v1 or v2" in job.status_reason
    assert fake.requests == []


def test_the_pool_filter_and_per_pool_api_version_apply(fake, aihc, settings):
    settings.AIHC_POOLS = ["cce-pool2"]
    settings.AIHC_POOL_API_VERSIONS = {"cce-pool2": "v2"}

    [pool] = aihc.pools()

    assert pool.id == "cce-pool2"
    assert "bos" in pool.storage_types
    [queues_call] = fake.calls("DescribeQueues")
    assert queues_call.version == "v2"


def test_a_pool_offers_only_storage_types_a_mount_can_be_filled_in_with(fake, aihc, settings):
    settings.AIHC_POOL_API_VERSIONS = {POOL: "v2", "cce-pool2": "v2"}

    pools = {p.id: p for p in aihc.pools()}

    # PFS: the pool has a PFS instance to choose; the node's local disk (hostpath) and BOS
    # need none (a node path, a bucket path). CFS, RapidFS and datasets are accepted by v2
    # but the console cannot list their instances.
    assert pools[POOL].storage_types == ["pfs", "hostpath", "bos"]
    assert pools["cce-pool2"].storage_types == ["hostpath", "bos"]  # no PFS instance


def test_figures_older_than_the_cache_are_refreshed_before_a_page_uses_them(fake, aihc, settings):
    settings.AIHC_CACHE_SECONDS = 60
    settings.AIHC_REFRESH_WAIT_SECONDS = 10  # the fake answers at once, however loaded the machine
    assert aihc.pools()[0].idle(A800) == 10
    fake.pools[POOL]["gpus"][A800] = (16, 12)
    quiet_spell(aihc, seconds=61)  # longer than the cache period

    [pool, _other] = aihc.pools()

    assert pool.idle(A800) == 4 and not pool.stale  # a healthy AIHC: current, no age note


def test_two_pages_finding_the_pools_out_of_date_at_once_ask_aihc_once(fake, aihc, settings):
    """The second page found the figures older than the cache period, then was held (as a
    loaded machine's scheduler may) until the first page's refresh had ended: until left41
    it started a refresh of its own, asking AIHC twice in the period, since the age was
    looked at outside the lock. The hold is a trace on the second page's thread that stops it
    as it enters the refresh's start (nothing of ours replaced)."""
    settings.AIHC_CACHE_SECONDS = 60
    settings.AIHC_REFRESH_WAIT_SECONDS = 10
    aihc.pools()
    quiet_spell(aihc, seconds=61)
    at_start = threading.Event()
    first_done = threading.Event()

    def hold_at_refresh_start(frame, event, _arg):
        if event == "call" and frame.f_code.co_name == "_start_refresh":
            at_start.set()
            first_done.wait(10)

    def second_page() -> None:
        sys.settrace(hold_at_refresh_start)
        try:
            aihc.pools()
        finally:
            sys.settrace(None)

    second = threading.Thread(target=second_page)
    second.start()
    assert at_start.wait(10)
    [pool, _other] = aihc.pools()  # the first page
    wait_for_inventory(aihc)
    first_done.set()
    second.join(10)
    wait_for_inventory(aihc)

    assert not second.is_alive() and not pool.stale
    assert len(fake.calls("DescribeResourcePools")) == 2  # the first read and one refresh


def test_a_v2_account_reads_pools_and_idle_cards_through_actions(fake, aihc, settings):
    settings.AIHC_API_VERSION = "v2"

    pools = {p.id: p for p in aihc.pools()}

    assert pools[POOL].idle(A800) == 10
    assert pools[POOL].queues == ["default", "research"]
    assert {c.version for c in fake.requests} == {"v2"}


# -- what AIHC cannot run ---------------------------------------------------------------


def test_it_refuses_tensorflow_on_v1_but_not_on_v2(fake, aihc, settings):
    spec = seed_spec(
        framework=S.TENSORFLOW,
        roles=[S.Role("worker", 2, A800, 8), S.Role("ps", 1)],
    )
    assert "jobFramework" in aihc.check_spec(spec)
    settings.AIHC_POOL_API_VERSIONS = {POOL: "v2"}
    assert "jobFramework" not in aihc.check_spec(spec)


def test_it_refuses_what_the_api_cannot_express_on_the_right_fields(fake, aihc):
    spec = seed_spec(
        cpu_exclusive=True,
        log_persistence=True,
        retention_period="7d",
        datasources=[
            S.Datasource("pfs", "pfs-7xWeAt", "/mnt/cluster"),
            S.Datasource("nas", "nas-1", "/mnt/nas"),
        ],
    )
    errors = aihc.check_spec(spec)

    assert set(errors) == {
        "cpuExclusive",
        "logPersistence",
        "retentionPeriod",
        "datasources[1].type",
    }
    assert "nas" in errors["datasources[1].type"][0]
    assert aihc.check_spec(seed_spec()) == {}


def test_it_refuses_a_pool_or_queue_aihc_does_not_have(fake, aihc):
    assert set(aihc.check_spec(seed_spec(queue="nightly"))) == {"queue"}
    assert "research" in aihc.check_spec(seed_spec(queue="nightly"))["queue"][0]
    assert set(aihc.check_spec(seed_spec(resource_pool_id="cce-gone"))) == {"resourcePoolId"}


def test_the_queues_a_pool_has_are_listed_with_the_readers_separator(fake, aihc):
    pool = find_pool(seed_spec().resource_pool_id)
    assert len(pool.queues) > 1
    with translation.override("zh-hans"):
        chinese = aihc.check_spec(seed_spec(queue="nightly"))["queue"][0]
    with translation.override("en"):
        english = aihc.check_spec(seed_spec(queue="nightly"))["queue"][0]

    # An ASCII ", " in Chinese until fix84b's leftovers.
    assert f"可用队列：{'、'.join(pool.queues)}。" in chinese
    assert f"it has {', '.join(pool.queues)}." in english


def test_it_refuses_custom_roles_and_an_mpi_cpu_only_master(fake, aihc):
    custom = seed_spec(framework=S.CUSTOM, roles=[S.Role("trainer", 2, A800, 8)])
    assert "jobFramework" in aihc.check_spec(custom)
    mpi = seed_spec(
        framework=S.MPI,
        roles=[S.Role("master", 1, "", 0, cpu=4), S.Role("worker", 2, A800, 8, cpu=32)],
    )
    assert S.validate(mpi) == {}  # the console itself allows it
    errors = aihc.check_spec(mpi)
    assert "CPU-only master" in errors["roles[1].acceleratorType"][0]
    assert "roles[1].cpu" in errors


def test_it_refuses_console_alert_channels_but_passes_aihc_alerts(fake, aihc):
    spec = seed_spec()
    spec.alert = S.AlertConfig(items=["jobFailed"], emails=["ops@example.com"])
    errors = aihc.check_spec(spec)
    assert set(errors) == {"alert.emails", "alertConfig.instanceId", "alertConfig.notifyRuleId"}
    spec.alert = S.AlertConfig(
        items=["jobFailed"], instance_id="cprom-1", notify_rule_id="notify-1"
    )
    assert aihc.check_spec(spec) == {}


# -- submission -------------------------------------------------------------------------


def test_submitting_the_seed_job_sends_exactly_its_v1_body(fake, aihc, alice):
    [job] = submit(alice, seed_spec())

    aihc.submit(job)

    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED
    [call] = fake.calls("CreateJob")
    # The seed's body, plus one label: the console job's id, to know the job again by.
    label = {"key": "ai-job-console/job-id", "value": job.public_id}
    assert call.body == {**SEED_DOC, "labels": [*SEED_DOC.get("labels", []), label]}
    assert call.body == {**job.job_spec().to_v1_body(), "labels": call.body["labels"]}
    assert call.params == {"resourcePoolId": POOL}
    assert job.external_id == next(iter(fake.jobs))
    reasons = list(job.events.values_list("reason", flat=True))
    # The first sync right after the create brings AIHC's own event in, at the time AIHC
    # wrote it: after the console sent the job, before AIHC's answer reached it.
    assert reasons == ["Created", "Submitting", "AIHC:Created", "Submitted"]


def test_a_v2_pool_gets_the_mapped_body_with_queue_in_the_query(fake, aihc, alice, settings):
    settings.AIHC_POOL_API_VERSIONS = {POOL: "v2"}
    spec = seed_spec(queue="research")
    spec.fault_tolerance = True
    spec.fault_tolerance_config = S.FaultToleranceConfig(True, 10, 2, ["Loss nan"])
    [job] = submit(alice, spec)

    aihc.submit(job)

    [call] = fake.calls("CreateJob")
    assert call.version == "v2"
    assert call.params == {"action": "CreateJob", "resourcePoolId": POOL, "queueID": "research"}
    v1 = spec.to_v1_body()
    label = {"key": "ai-job-console/job-id", "value": job.public_id}
    assert call.body == {**v2_from_v1(v1), "labels": [label]}
    assert call.body["jobType"] == "PyTorchJob" and "jobFramework" not in call.body
    assert call.body["command"] == v1["jobSpec"]["command"]
    assert "command" not in call.body["jobSpec"]
    assert call.body["faultToleranceArgs"] == (
        "--enable-hang-detection=true --hang-detection-log-timeout-minutes=10 "
        "--max-num-of-unconditional-retry=2 --custom-log-patterns='Loss nan'"
    )
    job.refresh_from_db()
    assert job.external_id in fake.jobs


def test_a_v2_tensorflow_job_sends_one_job_spec_per_role(fake, aihc, alice, settings):
    settings.AIHC_POOL_API_VERSIONS = {POOL: "v2"}
    spec = seed_spec(
        framework=S.TENSORFLOW,
        roles=[S.Role("chief", 1, A800, 8), S.Role("worker", 2, A800, 8), S.Role("ps", 1, cpu=8)],
    )
    [job] = submit(alice, spec)

    aihc.submit(job)

    [call] = fake.calls("CreateJob")
    assert call.status == 200
    assert call.body["jobType"] == "TFJob"
    specs = call.body["jobSpec"]
    assert {k: (v["replicas"], v["resources"]) for k, v in specs.items()} == {
        "Chief": (1, [{"name": A800, "quantity": 8}]),
        "Worker": (2, [{"name": A800, "quantity": 8}]),
        "PS": (1, [{"name": "cpu", "quantity": 8}]),
    }
    assert all(v["image"] == spec.image for v in specs.values())


def test_a_refused_spec_fails_without_calling_aihc(fake, aihc, alice):
    [job] = submit(alice, seed_spec(cpu_exclusive=True))

    aihc.submit(job)

    job.refresh_from_db()
    assert job.status == JobStatus.SUBMIT_FAILED
    assert job.status_reason.startswith("cpuExclusive: ")
    assert fake.calls("CreateJob") == []


def test_a_platform_refusal_leaves_submit_failed_with_its_message_and_resubmits(fake, aihc, alice):
    fake.fail_next("CreateJob", status=400, code="QuotaExceeded", message="队列 default 配额不足")
    [job] = submit(alice, seed_spec())

    aihc.submit(job)

    job.refresh_from_db()
    assert job.status == JobStatus.SUBMIT_FAILED
    assert "队列 default 配额不足" in job.status_reason
    assert "QuotaExceeded" in job.status_reason
    assert job.external_id == ""
    failed = job.events.get(reason="SubmitFailed")
    assert failed.type == "Warning" and "配额不足" in failed.message

    assert job_transition(job=job, to=JobStatus.QUEUED, reason="Resubmitted")
    aihc.submit(job)

    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED and job.external_id in fake.jobs
    assert len(fake.jobs) == 1


def test_a_create_that_times_out_is_reconciled_and_the_job_created_once(
    fake, aihc, alice, settings
):
    settings.AIHC_READ_TIMEOUT = 0.5
    fake.delay_next("CreateJob", 1.5)
    [job] = submit(alice, seed_spec())

    aihc.submit(job)

    job.refresh_from_db()
    assert len(fake.calls("CreateJob")) == 1
    assert len(fake.jobs) == 1
    assert job.status == JobStatus.QUEUED
    assert job.external_id == next(iter(fake.jobs))
    reasons = list(job.events.values_list("reason", flat=True))
    # AIHC created it at once (its event's time); the console heard of it only later.
    assert reasons[-3:] == ["AIHC:Created", "SubmitTimedOut", "Submitted"]
    assert "已关联该任务而未重复创建" in job.events.get(reason="Submitted").message


def test_a_create_lost_on_the_way_is_tried_again_only_at_a_later_pass_after_checking(
    fake, aihc, alice
):
    fake.drop_next("CreateJob")
    [job] = submit(alice, seed_spec())

    aihc.submit(job)

    job.refresh_from_db()
    assert (job.status, job.external_id) == (JobStatus.QUEUED, "")
    assert job.events.get(reason="SubmitTimedOut").message_shown == (
        "AIHC closed the connection without answering the create request; checking whether "
        "it was created."
    )
    ops = [r.op for r in fake.requests if r.op in ("CreateJob", "DescribeJobs")]
    assert ops == ["CreateJob", "DescribeJobs"]  # not sent again in the same pass (qa80)

    aihc.submit(job)

    job.refresh_from_db()
    ops = [r.op for r in fake.requests if r.op in ("CreateJob", "DescribeJobs")]
    assert ops == ["CreateJob", "DescribeJobs", "DescribeJobs", "CreateJob"]
    assert len(fake.jobs) == 1
    assert job.external_id in fake.jobs


def test_a_job_created_after_two_unanswered_creates_is_adopted_on_the_next_try(fake, aihc, alice):
    fake.drop_next("CreateJob", times=2)
    [job] = submit(alice, seed_spec())

    aihc.submit(job)
    aihc.submit(job)

    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED and job.external_id == ""
    assert job.events.filter(reason="SubmitTimedOut").count() == 2
    assert fake.jobs == {}
    at = timezone.localtime(job.events.filter(reason="SubmitTimedOut").last().created_at)
    with translation.override("en"):  # stored in Chinese, read in English as a whole
        assert job.status_reason_shown == (
            "AIHC gave no clear answer to the job's create requests (2 so far) and shows no "
            "such job. A create AIHC is still working on may show up later: the job is looked "
            f"for again at {zoned(at)}, and sent again only if AIHC still shows none."
        )
    # Meanwhile the job shows up on AIHC (a create that was slow, not lost).
    created = fake.create_external(POOL, fake.calls("CreateJob")[-1].body)

    aihc.submit(job)

    job.refresh_from_db()
    assert job.external_id == created.job_id
    assert len(fake.calls("CreateJob")) == 2
    assert len(fake.jobs) == 1


def test_a_job_of_the_same_name_made_by_hand_is_never_adopted_after_an_unanswered_create(
    fake, aihc, alice
):
    fake.drop_next("CreateJob")
    [job] = submit(alice, seed_spec())
    # Someone made a job of the same name on AIHC by hand, just now: not this create's.
    theirs = fake.create_external(POOL, SEED_DOC)

    aihc.submit(job)
    aihc.submit(job)

    job.refresh_from_db()
    assert job.external_id and job.external_id != theirs.job_id  # its own create, sent again
    assert len(fake.jobs) == 2
    [first, second] = fake.calls("CreateJob")
    labels = {label["key"]: label["value"] for label in second.body["labels"]}
    assert labels["ai-job-console/job-id"] == job.public_id


def test_after_four_unanswered_creates_the_job_is_submit_failed(fake, aihc, alice):
    fake.drop_next("CreateJob", times=4)
    [job] = submit(alice, seed_spec())

    for _pass in range(4):
        aihc.submit(job)

    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED  # the fourth may still land: looked for once more
    assert len(fake.calls("CreateJob")) == 4

    aihc.submit(job)

    job.refresh_from_db()
    assert job.status == JobStatus.SUBMIT_FAILED
    assert len(fake.calls("CreateJob")) == 4
    assert "4" in job.status_reason
    assert fake.jobs == {}


def test_a_create_answered_with_a_server_error_after_aihc_created_it_is_adopted_not_repeated(
    fake, aihc, alice
):
    fake.fail_after_next("CreateJob", status=502, code="BadGateway")
    [job] = submit(alice, seed_spec())

    aihc.submit(job)

    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED
    assert len(fake.calls("CreateJob")) == 1 and len(fake.jobs) == 1
    assert job.external_id == next(iter(fake.jobs))
    event = job.events.get(reason="SubmitServerError")
    assert "BadGateway" in event.message and event.type == "Warning"


def test_a_create_and_its_look_both_unanswered_requeue_the_job_then_adopt_it_not_create_again(
    fake, aihc, alice, settings
):
    settings.AIHC_RETRIES = 0  # one drop is the look's whole answer
    fake.fail_after_next("CreateJob", status=502, code="BadGateway")  # created, then failed
    fake.drop_next("DescribeJobs")  # the look for it: no answer
    [job] = submit(alice, seed_spec())

    aihc.submit(job)

    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED and job.external_id == ""
    assert len(fake.calls("CreateJob")) == 1  # not sent again without a look
    assert len(fake.jobs) == 1
    retry = job.events.get(reason="SubmitRetry")
    assert retry.type == "Warning"
    with translation.override("en"):
        shown = job.status_reason_shown
    assert shown.startswith(
        "AIHC gave no clear answer to the job's create requests (1 so far) and did not answer "
        "the look for it: "
    )
    assert "shows no such job" not in shown  # it had not said, and had made it
    assert shown.endswith("The job will be submitted again after checking it was not created.")

    submit_pause_over(aihc)  # the look that got no answer paused submits
    aihc.submit(job)  # AIHC answers again

    job.refresh_from_db()
    assert job.external_id == next(iter(fake.jobs))  # adopted
    assert len(fake.calls("CreateJob")) == 1 and len(fake.jobs) == 1
    assert "已关联该任务而未重复创建" in job.events.get(reason="Submitted").message


@pytest.mark.parametrize(
    "look_fails",
    [
        pytest.param(lambda fake: fake.drop_next("DescribeJobs"), id="look-unanswered"),
        pytest.param(
            lambda fake: fake.fail_next("DescribeJobs", status=403, code="AccessDenied"),
            id="look-refused",  # waiting for its own next look (left46)
        ),
    ],
)
def test_a_job_queued_again_after_an_unsettled_create_is_stopped_on_aihc_not_left_there(
    fake, aihc, alice, settings, look_fails
):
    """Until left42 Stop took such a job (Queued, no AIHC id yet) for one nothing ran for:
    Stopped at once, while the AIHC job its create made ran on, unwatched."""
    from jobs.actions import job_stop

    settings.AIHC_RETRIES = 0
    fake.fail_after_next("CreateJob", status=502, code="BadGateway")  # created, then failed
    look_fails(fake)  # the look for it
    [job] = submit(alice, seed_spec())
    aihc.submit(job)
    job.refresh_from_db()
    assert (job.status, job.external_id) == (JobStatus.QUEUED, "")

    job_stop(job=job, actor=alice)

    job.refresh_from_db()
    assert job.status == JobStatus.STOPPING
    with translation.override("en"):
        assert "the worker looks for it and stops it" in job.status_reason_shown
    earlier = timezone.now() - timedelta(minutes=5)
    job.events.update(created_at=earlier)
    Job.objects.filter(pk=job.pk).update(updated_at=earlier)
    job.refresh_from_db()
    aihc.sync(job)  # found by its label, adopted, stopped there

    job.refresh_from_db()
    made = next(iter(fake.jobs))
    assert job.external_id == made
    assert [call.route["job"] for call in fake.calls("StopJob")] == [made]
    assert len(fake.calls("CreateJob")) == 1


def test_a_last_create_whose_look_goes_unanswered_keeps_the_job_queued_not_submit_failed(
    fake, aihc, alice, settings
):
    """Until left41 the fourth unanswered create, its look unanswered too, failed the job
    (SubmitFailed, "shows no such job") while AIHC had made it: a job left running there that
    the console no longer watched. Now it stays Queued until a look is answered."""
    settings.AIHC_RETRIES = 0
    fake.drop_next("CreateJob", times=3)  # lost on the way: not made
    fake.fail_after_next("CreateJob", status=502, code="BadGateway")  # the fourth: made
    # A pass looks before its create (after the first) and right after it: six looks
    # answered (no delay), then the fourth create's own look gets no answer.
    fake.delay_next("DescribeJobs", 0, times=6)
    fake.drop_next("DescribeJobs")
    [job] = submit(alice, seed_spec())

    for _pass in range(4):
        aihc.submit(job)

    job.refresh_from_db()
    assert len(fake.calls("CreateJob")) == 4 and len(fake.jobs) == 1
    assert job.status == JobStatus.QUEUED and job.external_id == ""
    with translation.override("en"):
        assert "(4 so far) and did not answer the look for it: " in job.status_reason_shown

    submit_pause_over(aihc)  # the look that got no answer paused submits
    aihc.submit(job)  # AIHC answers the look

    job.refresh_from_db()
    assert job.external_id == next(iter(fake.jobs))
    assert len(fake.calls("CreateJob")) == 4 and len(fake.jobs) == 1


def test_submit_again_after_four_unanswered_creates_sends_a_create_again(
    fake, aihc, alice, settings
):
    """Until left42 the creates were counted over the job's life: Submit again on a job
    given up after its fourth failed it again at once, looking but sending no create."""
    from jobs.actions import job_submit_again

    settings.AIHC_RETRIES = 0
    fake.drop_next("CreateJob", times=4)
    [job] = submit(alice, seed_spec())
    for _pass in range(5):  # four creates, then the look that finds none of them
        aihc.submit(job)
    job.refresh_from_db()
    assert job.status == JobStatus.SUBMIT_FAILED and len(fake.calls("CreateJob")) == 4

    job_submit_again(job=job, actor=alice)
    job.refresh_from_db()
    aihc.submit(job)

    job.refresh_from_db()
    assert len(fake.calls("CreateJob")) == 5 and len(fake.jobs) == 1
    assert job.external_id == next(iter(fake.jobs))


def test_after_four_unanswered_creates_a_look_answered_late_fails_the_job_sending_none_again(
    fake, aihc, alice, settings
):
    settings.AIHC_RETRIES = 0
    fake.drop_next("CreateJob", times=4)
    fake.delay_next("DescribeJobs", 0, times=6)  # a pass's look before its create, and after
    fake.drop_next("DescribeJobs")
    [job] = submit(alice, seed_spec())
    for _pass in range(4):
        aihc.submit(job)
    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED

    submit_pause_over(aihc)  # the look that got no answer paused submits
    aihc.submit(job)  # the look answered: no such job

    job.refresh_from_db()
    assert job.status == JobStatus.SUBMIT_FAILED
    with translation.override("en"):
        assert "(4 so far) and shows no such job" in job.status_reason_shown
    assert len(fake.calls("CreateJob")) == 4 and fake.jobs == {}


def test_a_fourth_unanswered_create_whose_look_goes_unanswered_says_it_is_not_sent_again(
    fake, aihc, alice, settings
):
    """Until review 48 the job's reason ended "The job will be submitted again after checking
    it was not created." there too, though no fifth create is sent: a look that finds none
    fails it (the test above)."""
    settings.AIHC_RETRIES = 0
    fake.drop_next("CreateJob", times=4)
    fake.delay_next("DescribeJobs", 0, times=6)  # a pass's look before its create, and after
    fake.drop_next("DescribeJobs")
    [job] = submit(alice, seed_spec())
    for _pass in range(4):
        aihc.submit(job)

    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED
    with translation.override("en"):
        shown = job.status_reason_shown
    assert "(4 so far) and did not answer the look for it: " in shown
    assert "submitted again" not in shown
    assert shown.endswith(
        "It is looked for again, and not sent again: once AIHC answers that it has no such "
        "job, the job is Submit failed."
    )
    with translation.override("zh-hans"):
        assert "将再次查询该任务，不会再次提交" in job.status_reason_shown


def test_a_look_for_an_unanswered_create_that_gets_no_answer_pauses_submits_not_every_pass(
    fake, aihc, alice, settings
):
    """The worker passes over its queued remote jobs a second apart. A job whose create got
    no clear answer is looked for before anything else; with AIHC not answering, each pass
    looked again and wrote two events, Submitting and SubmitRetry (until review 49). The
    look pauses submits as a create that never reached AIHC does: one look per pause."""
    settings.AIHC_RETRIES = 0
    settings.AIHC_SUBMIT_PAUSE_SECONDS = 60  # the next passes fall within it, however slow
    fake.drop_next("CreateJob", times=4)
    fake.delay_next("DescribeJobs", 0, times=6)  # a pass's look before its create, and after
    fake.drop_next("DescribeJobs", times=30)  # AIHC stops answering the looks
    [job] = submit(alice, seed_spec())
    for _pass in range(4):
        aihc.submit(job)
    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED  # the fourth create's look went unanswered
    looks, events = len(fake.calls("DescribeJobs")), job.events.count()

    for _ in range(5):  # the worker's next passes, within the pause
        aihc.submit(job)
        job.refresh_from_db()

    assert job.status == JobStatus.QUEUED
    assert len(fake.calls("DescribeJobs")) == looks
    assert job.events.count() == events
    fake.faults.clear()  # AIHC answers again
    submit_pause_over(aihc)

    aihc.submit(job)

    job.refresh_from_db()
    assert job.status == JobStatus.SUBMIT_FAILED  # the look answered: nothing was made
    assert len(fake.calls("DescribeJobs")) == looks + 1
    assert len(fake.calls("CreateJob")) == 4 and fake.jobs == {}


def test_a_look_aihc_refuses_is_made_again_only_at_its_time_one_event_each_not_holding_others(
    fake, aihc, alice, settings
):
    """Until left46 a look AIHC answered with a refusal (403, a 5xx) was made again at every
    pass of the worker, a second apart, two events each (Submitting, SubmitRetry). The job
    now waits for its own next look, 30 s after the first refusal, then 60 s, doubling to 10
    minutes; the account's other jobs are created meanwhile (no pause of its submits)."""
    settings.AIHC_RETRIES = 0
    fake.fail_after_next("CreateJob", status=502, code="BadGateway")  # created, then failed
    fake.fail_next("DescribeJobs", status=403, code="AccessDenied", message="no list", times=2)
    [job] = submit(alice, seed_spec())
    start = timezone.now()

    aihc.submit(job)

    job.refresh_from_db()
    assert (job.status, job.external_id) == (JobStatus.QUEUED, "")
    assert job.events.get(reason="LookRefused").type == "Warning"
    with translation.override("en"):
        shown = job.status_reason_shown
    assert shown.startswith("AIHC refused the look for the job its creates may have made: ")
    assert "AccessDenied" in shown
    at = shown.removesuffix(".").rsplit(" at ", 1)[1]
    assert at in times_said(start, timezone.now(), seconds=30)
    assert shown.endswith(f"The job stays queued and is looked for again at {at}.")
    with translation.override("zh-hans"):
        assert "查找被百舸 AIHC 拒绝" in job.status_reason_shown
        assert f"将于 {at} 再次查找" in job.status_reason_shown
    looks, events = len(fake.calls("DescribeJobs")), job.events.count()

    for _ in range(5):  # the worker's next passes, before the job's time
        aihc.submit(job)
        job.refresh_from_db()
    type(aihc)().submit(job)  # a worker started again: its wait is kept in its events
    [other] = submit(alice, seed_spec(name="other-job"))
    aihc.submit(other)  # another job on the account is created meanwhile

    assert len(fake.calls("DescribeJobs")) == looks and job.events.count() == events
    other.refresh_from_db()
    assert other.external_id in fake.jobs
    refused_looks_earlier(job, seconds=31)
    start = timezone.now()

    aihc.submit(job)  # its time: looked for again, refused again

    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED
    assert len(fake.calls("DescribeJobs")) == looks + 1
    assert [e.reason for e in job.events.order_by("pk")[events:]] == ["LookRefused"]
    with translation.override("en"):
        at = job.status_reason_shown.removesuffix(".").rsplit(" at ", 1)[1]
    assert at in times_said(start, timezone.now(), seconds=60)
    refused_looks_earlier(job, seconds=31)
    aihc.submit(job)  # 31 s is not its time any more: the wait doubled
    assert len(fake.calls("DescribeJobs")) == looks + 1
    refused_looks_earlier(job, seconds=30)

    aihc.submit(job)  # AIHC answers the look: the job its create made is adopted

    job.refresh_from_db()
    assert job.external_id in fake.jobs and job.external_id != other.external_id
    assert len(fake.calls("CreateJob")) == 2 and len(fake.jobs) == 2


def test_a_look_aihc_has_refused_for_an_hour_fails_the_job_saying_where_to_look_for_it(
    fake, aihc, alice, settings
):
    settings.AIHC_RETRIES = 0
    fake.fail_after_next("CreateJob", status=502, code="BadGateway")  # created, then failed
    fake.fail_next("DescribeJobs", status=403, code="AccessDenied", times=2)
    [job] = submit(alice, seed_spec())
    aihc.submit(job)
    refused_looks_earlier(job, seconds=3600)

    aihc.submit(job)  # refused again, an hour after the first

    job.refresh_from_db()
    assert job.status == JobStatus.SUBMIT_FAILED
    with translation.override("en"):
        shown = job.status_reason_shown
    assert shown.startswith(
        "AIHC refused the looks for the job its creates may have made for an hour (the last: "
    )
    assert (
        f"look in pool {POOL} for a job named {job.name} labelled "
        f"ai-job-console/job-id={job.public_id}. Submit again looks for it first and follows it "
        "as this job; to drop it instead, stop it there."
    ) in shown
    assert len(fake.calls("CreateJob")) == 1 and len(fake.calls("DescribeJobs")) == 2


def test_a_create_refused_with_a_server_error_is_sent_again_only_after_looking(fake, aihc, alice):
    fake.fail_next("CreateJob", status=500, code="InternalError")
    [job] = submit(alice, seed_spec())

    aihc.submit(job)
    aihc.submit(job)

    job.refresh_from_db()
    ops = [r.op for r in fake.requests if r.op in ("CreateJob", "DescribeJobs")]
    assert ops == ["CreateJob", "DescribeJobs", "DescribeJobs", "CreateJob"]
    assert len(fake.jobs) == 1 and job.external_id in fake.jobs


# -- a create that lands late (qa80) ------------------------------------------------------


def create_settled(job: Job, *, seconds: float = 121) -> None:
    """Moves the job's creates that got no clear answer back in time, as if `seconds` had
    passed since (AIHC_CREATE_SETTLE_SECONDS, 120 by default, then over), instead of
    sleeping past the wait."""
    job.events.filter(reason__in=["SubmitTimedOut", "SubmitServerError"]).update(
        created_at=F("created_at") - timedelta(seconds=seconds)
    )


def held_create(fake, settings) -> threading.Event:
    """The next create is held by AIHC past the console's read timeout, and carried out
    when the returned event is set: a create AIHC is still working on."""
    settings.AIHC_CREATE_SETTLE_SECONDS = 120  # the default
    settings.AIHC_READ_TIMEOUT = 0.5
    settings.AIHC_RETRIES = 0
    return fake.block_next("CreateJob")


def landed(fake, count: int) -> None:
    """Waits until AIHC has `count` jobs (the held create carried out)."""
    deadline = time.monotonic() + 10
    while len(fake.jobs) < count and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(fake.jobs) == count


def sent_again_then_landed(fake, aihc, alice, settings) -> Job:
    """A job whose first create AIHC held past the wait: sent again and followed, then the
    first landed too (two AIHC jobs carry its label)."""
    release = held_create(fake, settings)
    [job] = submit(alice, seed_spec())
    aihc.submit(job)
    create_settled(job)
    aihc.submit(job)
    release.set()
    landed(fake, 2)
    return job


def test_a_create_aihc_is_still_working_on_is_looked_for_again_only_once_it_could_have_landed(
    fake, aihc, alice, settings
):
    """Until qa80 the console looked at once, found nothing (AIHC still creating it), and
    created the job again in the same pass: when the first create landed, AIHC had two."""
    release = held_create(fake, settings)
    [job] = submit(alice, seed_spec())

    aihc.submit(job)

    job.refresh_from_db()
    assert (job.status, job.external_id) == (JobStatus.QUEUED, "")
    assert len(fake.calls("CreateJob")) == 1
    timed_out = job.events.get(reason="SubmitTimedOut").created_at
    said = zoned(timed_out + timedelta(seconds=120))
    assert job.status_reason_shown.endswith(
        f"A create AIHC is still working on may show up later: the job is looked for again at "
        f"{said}, and sent again only if AIHC still shows none."
    )
    looks = len(fake.calls("DescribeJobs"))
    for _pass in range(3):  # the worker's next passes, within the wait: nothing sent
        aihc.submit(job)
    assert len(fake.calls("DescribeJobs")) == looks and len(fake.calls("CreateJob")) == 1

    release.set()  # AIHC finishes the create
    landed(fake, 1)
    create_settled(job)
    aihc.submit(job)

    job.refresh_from_db()
    assert job.external_id == next(iter(fake.jobs))  # adopted, not created again
    assert len(fake.calls("CreateJob")) == 1 and len(fake.jobs) == 1
    with translation.override("zh-hans"):
        job.refresh_from_db()
        assert "（已 1 次）" in job.events.get(reason="SubmitRetry").message_shown


def test_the_job_list_says_until_when_a_job_waits_for_a_create_to_land(
    fake, aihc, alice, alice_en, settings
):
    """qa81: the list said a bare Queued while the job page said until when."""
    from django.urls import reverse

    release = held_create(fake, settings)
    [job] = submit(alice, seed_spec())
    aihc.submit(job)
    release.set()

    listed = alice_en.get(reverse("job-list")).content.decode()

    row = listed[listed.index(f'data-job="{job.public_id}"') :]
    row = row[: row.index("</tr>")]
    assert "job-status-reason" in row
    assert "A create AIHC is still working on may show up later" in row


def in_doubt(fake, aihc, alice, settings) -> tuple[Job, str, threading.Event]:
    """A job Queued while AIHC holds its create (CREATE_SETTLING), when it is looked for as
    its reason says it, and the event that lets AIHC carry the create out."""
    release = held_create(fake, settings)
    [job] = submit(alice, seed_spec())
    aihc.submit(job)
    job.refresh_from_db()
    timed_out = job.events.get(reason="SubmitTimedOut").created_at
    return job, zoned(timed_out + timedelta(seconds=120)), release


def test_stopping_a_job_whose_create_aihc_may_still_make_says_when_it_is_looked_for(
    fake, aihc, alice, alice_en, settings
):
    """qa83: Stop said the ordinary "Stop requested." and its reason nothing of when, though
    the stop waits for the create's time (_finish_stop_in_flight)."""
    from django.contrib.messages import get_messages
    from django.urls import reverse

    job, at, release = in_doubt(fake, aihc, alice, settings)

    answer = alice_en.post(reverse("job-stop", args=[job.public_id]), {"confirmed": "1"})

    said = (
        "Stop requested. A create of the job got no clear answer, and the platform may still "
        f"make it: the worker looks for it there at {at} and stops it if found, or ends the job "
        "Stopped if there is none."
    )
    assert [str(m) for m in get_messages(answer.wsgi_request)] == [said]
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPING and job.status_reason_shown == said
    with translation.override("zh-hans"):
        assert f"将于 {at} 在平台上查找该任务" in job.status_reason_shown
    release.set()


def test_deleting_a_job_whose_create_aihc_may_still_make_says_when_it_is_looked_for(
    fake, aihc, alice, alice_en, settings
):
    from django.contrib.messages import get_messages
    from django.urls import reverse

    job, at, release = in_doubt(fake, aihc, alice, settings)
    delete = reverse("job-delete", args=[job.public_id])

    alice_en.post(delete, {"confirmed": "1"})
    again = alice_en.post(delete, {"confirmed": "1"})  # the first's message not read yet

    assert [str(m) for m in get_messages(again.wsgi_request)] == [
        "The job was stopped, not deleted: a create of it got no clear answer, and its platform "
        f"may still make it. The worker looks for it there at {at} and stops it if found; "
        "delete the job again once it has stopped.",
        "The job is being looked for on its platform: a create of it got no clear answer, and "
        f"the platform may still make it. The worker looks for it there at {at} and stops it "
        "if found; delete the job again once it has stopped.",
    ]
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPING
    release.set()


def test_stop_and_delete_selected_say_when_a_job_aihc_may_still_make_is_looked_for(
    fake, aihc, alice, alice_en, settings
):
    from django.contrib.messages import get_messages
    from django.urls import reverse

    stopped, at, release = in_doubt(fake, aihc, alice, settings)
    form = {"jobs": [stopped.public_id], "back": "", "confirmed": "1"}

    stop = alice_en.post(reverse("job-bulk"), {**form, "action": "stop"})
    delete = alice_en.post(reverse("job-bulk"), {**form, "action": "delete"})

    assert [str(m) for m in get_messages(stop.wsgi_request)] == [
        "Stop requested for 1 job.",
        f"Job {stopped.name}: Stop requested. A create of the job got no clear answer, and the "
        f"platform may still make it: the worker looks for it there at {at} and stops it if "
        "found, or ends the job Stopped if there is none.",
    ]
    refused = [str(m) for m in get_messages(delete.wsgi_request)][-1]
    assert refused.startswith(f"Job {stopped.name} was not deleted: ")
    assert f"The worker looks for it there at {at} and stops it if found" in refused
    release.set()


def test_the_apis_stop_and_delete_say_when_a_job_aihc_may_still_make_is_looked_for(
    fake, aihc, alice, settings
):
    from jobs.api_views import STOP_LOOKED_FOR_LATER, ApiError, job_deleted, job_stopped

    job, at, release = in_doubt(fake, aihc, alice, settings)
    other, _at, _release = in_doubt(fake, aihc, alice, settings)

    answer = job_stopped(job=job, owner=alice)
    with pytest.raises(ApiError) as deleted:
        job_deleted(job=other, actor=alice)

    [warning] = answer["warnings"]
    assert warning["code"] == STOP_LOOKED_FOR_LATER
    assert f"the worker looks for it there at {at} and stops it if found" in warning["message"]
    assert f"The worker looks for it there at {_at} and stops it if found" in str(
        deleted.value.message
    )
    # Stopped again (a retried stop): nothing more to say.
    assert job_stopped(job=job, owner=alice) == {}
    release.set()
    _release.set()


def test_the_questions_before_stop_and_delete_say_when_a_job_aihc_may_still_make_is_looked_for(
    fake, aihc, alice, alice_en, settings
):
    """qa84: the question before a Stop or a Delete (the job page's, and its page of its own
    without JavaScript) gave the ordinary words, the time said only once the job was stopped."""
    from django.urls import reverse

    from jobs import views

    job, at, release = in_doubt(fake, aihc, alice, settings)
    stop, delete = (reverse(name, args=[job.public_id]) for name in ("job-stop", "job-delete"))

    def read(answer) -> str:
        return html.unescape(answer.content.decode())

    page = read(alice_en.get(reverse("job-detail", args=[job.public_id])))
    asked_stop, asked_delete = read(alice_en.post(stop)), read(alice_en.post(delete))
    alice_en.post(delete, {"confirmed": "1"})  # stopped and kept, looked for at `at`
    asked_again = read(alice_en.post(delete))

    stop_question = (
        "Stop this job? A create of it got no clear answer, and its platform may still make "
        f"it: the worker looks for it there at {at} and stops it if found, or ends the job "
        "Stopped if there is none. It cannot be resumed."
    )
    delete_question = (
        "Stop this job and keep it? A create of it got no clear answer, and its platform may "
        f"still make it: Delete stops the job first (the worker looks for it there at {at} and "
        "stops it if found) and keeps it, not deleted. Delete it again once it has stopped."
    )
    assert f'<p id="stop-question">{stop_question}</p>' in asked_stop
    assert f'<p id="delete-question">{delete_question}</p>' in asked_delete
    assert f'data-confirm="{stop_question}"' in page
    assert f'data-confirm="{delete_question}"' in page
    assert (
        '<p id="delete-question">This job cannot be deleted yet: a create of it got no clear '
        f"answer, and its platform may still make it. The worker looks for it there at {at} "
        "and stops it if found. Delete it again once it has stopped.</p>"
    ) in asked_again
    with translation.override("zh-hans"):
        assert f"将于 {at} 在平台上查找该任务" in views.STOP_LOOKED_FOR_AT_QUESTION % {"time": at}
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPING
    release.set()


def test_stop_and_delete_selecteds_questions_say_when_a_job_aihc_may_still_make_is_looked_for(
    fake, aihc, alice, alice_en, settings
):
    """qa84: Stop selected's page said "Will be stopped.", Delete selected's that the job's
    platform may have made it, neither when the worker looks for it."""
    from django.urls import reverse

    job, at, release = in_doubt(fake, aihc, alice, settings)
    form = {"jobs": [job.public_id], "back": ""}

    stop = alice_en.post(reverse("job-bulk"), {**form, "action": "stop"}).content.decode()
    delete = alice_en.post(reverse("job-bulk"), {**form, "action": "delete"}).content.decode()

    assert (
        "Will be stopped. A create of it got no clear answer, and its platform may still make "
        f"it: the worker looks for it there at {at} and stops it if found."
    ) in html.unescape(stop)
    assert (
        "Will be stopped and kept, not deleted: a create of it got no clear answer, and its "
        f"platform may still make it. The worker looks for it there at {at} and stops it if "
        "found; delete the job again once it has stopped."
    ) in html.unescape(delete)
    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED  # only asked
    release.set()


def test_delete_selecteds_notice_of_the_jobs_it_keeps_says_when_those_aihc_may_make_are_looked_for(
    fake, aihc, alice, alice_en, settings
):
    """qa84: each row said when its job is looked for, the notice above the table of none."""
    from django.urls import reverse

    first, at, release = in_doubt(fake, aihc, alice, settings)
    [ordinary] = submit(alice, seed_spec())  # Queued, never sent: deleted at once

    def notice(*jobs: Job) -> str:
        form = {"jobs": [job.public_id for job in jobs], "back": "", "action": "delete"}
        page = html.unescape(alice_en.post(reverse("job-bulk"), form).content.decode())
        return page[page.index('id="bulk-only-stopped"') :].split("</p>")[0]

    assert notice(first, ordinary).endswith(
        'delete it again once it has stopped. <span id="bulk-looked-for">Its platform may '
        f"still make {first.task_name}: the worker looks for it there at {at}.</span>"
    )
    release.set()
    second, _later, release = in_doubt(fake, aihc, alice, settings)
    assert notice(second, first, ordinary).endswith(
        '<span id="bulk-looked-for">Their platform may still make 2 of them: the worker looks '
        f"for them there, the earliest at {at}.</span>"
    )
    alice_en.cookies["django_language"] = "zh-hans"
    assert f"最早于 {at}" in notice(second, first)
    for job in (first, second, ordinary):
        job.refresh_from_db()
        assert job.status == JobStatus.QUEUED  # only asked
    release.set()


def test_the_admins_stop_selected_says_when_a_job_aihc_may_still_make_is_looked_for(
    fake, aihc, alice, reviewer, settings
):
    """qa84: it said only how many jobs were stopped or stopping."""
    from django.contrib.messages import get_messages
    from django.test import Client

    job, at, release = in_doubt(fake, aihc, alice, settings)
    [ordinary] = submit(alice, seed_spec())  # Queued, never sent: Stopped at once
    client = Client()
    client.force_login(reviewer)
    client.cookies["django_language"] = "en"
    form = {"action": "stop_jobs", "_selected_action": [str(job.pk), str(ordinary.pk)]}

    client.post("/admin/jobs/job/", form)
    answer = client.post("/admin/jobs/job/", {**form, "post": "yes"})

    assert [str(m) for m in get_messages(answer.wsgi_request)] == [
        "2 jobs stopped or stopping.",
        f"Job {job.name} ({job.public_id}): Stop requested. A create of the job got no clear "
        f"answer, and the platform may still make it: the worker looks for it there at {at} "
        "and stops it if found, or ends the job Stopped if there is none.",
    ]
    release.set()


def test_the_admins_stop_selected_confirmation_says_when_a_job_aihc_may_still_make_is_looked_for(
    fake, aihc, alice, reviewer, settings
):
    """qa84: the page asking listed the jobs without it; only the message after said it."""
    from django.test import Client

    job, at, release = in_doubt(fake, aihc, alice, settings)
    [ordinary] = submit(alice, seed_spec())  # Queued, never sent
    client = Client()
    client.force_login(reviewer)
    client.cookies["django_language"] = "en"
    form = {"action": "stop_jobs", "_selected_action": [str(job.pk), str(ordinary.pk)]}

    page = html.unescape(client.post("/admin/jobs/job/", form).content.decode())

    said = (
        "A create of it got no clear answer, and its platform may still make it: the worker "
        f"looks for it there at {at} and stops it if found, or ends the job Stopped if there "
        "is none."
    )
    # On the job's line, not the other's.
    [line] = [item for item in page.split("<li>") if said in item]
    assert job.public_id in line and ordinary.public_id not in line
    assert page.count(said) == 1
    client.cookies["django_language"] = "zh-hans"
    chinese = html.unescape(client.post("/admin/jobs/job/", form).content.decode())
    assert f"任务调度进程（worker）将于 {at} 在平台上查找该任务" in chinese
    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED  # only asked
    release.set()


def test_v2s_batch_stop_warns_on_each_job_aihc_may_still_make_when_it_is_looked_for(
    fake, aihc, alice, settings, wsgi
):
    """qa84: StopJob warned (LookedForLater), BatchStopJobs said nothing of such a job."""
    from jobs.aihc.endpoints import V2
    from jobs.api_keys import api_key_create
    from jobs.api_views import STOP_LOOKED_FOR_LATER
    from tests.test_api import client_for

    job, at, release = in_doubt(fake, aihc, alice, settings)
    [ordinary] = submit(alice, seed_spec())
    key, secret = api_key_create(owner=alice, description="script")
    api = client_for(wsgi, key.access_key_id, secret)

    answer = api.request(
        "POST",
        "/",
        params=[("action", "BatchStopJobs"), ("resourcePoolId", POOL)],
        body={"jobList": [{"jobId": job.public_id}, {"jobId": ordinary.public_id}]},
        version=V2,
        idempotent=False,
    )

    warning = (
        "Stop requested. A create of the job got no clear answer, and the platform may still "
        f"make it: the worker looks for it there at {at} and stops it if found, or ends the job "
        "Stopped if there is none."
    )
    assert answer["result"]["successList"] == [
        {
            "jobId": job.public_id,
            "success": True,
            "errorMsg": "",
            "warnings": [{"code": STOP_LOOKED_FOR_LATER, "message": warning}],
        },
        {"jobId": ordinary.public_id, "success": True, "errorMsg": ""},
    ]
    release.set()


def test_a_create_that_lands_after_the_job_was_sent_again_is_stopped_there_and_said_on_the_job(
    fake, aihc, alice, settings
):
    release = held_create(fake, settings)
    [job] = submit(alice, seed_spec())
    aihc.submit(job)
    create_settled(job)  # the wait is over, and AIHC still works on the first create
    aihc.submit(job)  # looked for (none yet), sent again: accepted
    job.refresh_from_db()
    followed = job.external_id
    assert followed and len(fake.calls("CreateJob")) == 2
    theirs = fake.create_external(POOL, SEED_DOC)  # a job of the same name made by hand
    release.set()
    landed(fake, 3)
    [late] = set(fake.jobs) - {followed, theirs.job_id}

    aihc.stop_duplicates()

    assert [call.route["job"] for call in fake.calls("StopJob")] == [late]
    assert fake.jobs[late].status == "ManualTermination"
    assert fake.jobs[followed].status != "ManualTermination"
    assert fake.jobs[theirs.job_id].status != "ManualTermination"  # never touched
    job.refresh_from_db()
    assert job.external_id == followed
    event = job.events.get(reason="DuplicateStopped")
    assert event.type == "Warning"
    assert event.message_shown == (
        f"AIHC had another job labelled with this job's id, {late}: a create that got no "
        "clear answer landed late. The console stopped it there. It stays in AIHC's job "
        "list: delete it there once its logs are not needed."
    )
    with translation.override("zh-hans"):
        assert (
            late in event.message_shown
            and "控制台已在百舸 AIHC 上停止该任务" in event.message_shown
        )

    aihc.stop_duplicates()  # stopped already: not stopped again, not said again

    assert len(fake.calls("StopJob")) == 1
    assert job.events.filter(reason="DuplicateStopped").count() == 1


def test_a_create_that_lands_after_the_job_was_stopped_here_is_stopped_there(
    fake, aihc, alice, settings
):
    """qa80: Stop pressed while AIHC held the create; the look after the wait found none, the
    job ended Stopped, and the create landed after: a job running on AIHC, untracked."""
    from jobs.actions import job_stop

    release = held_create(fake, settings)
    [job] = submit(alice, seed_spec())
    aihc.submit(job)
    job.refresh_from_db()
    job_stop(job=job, actor=alice)
    create_settled(job, seconds=180)
    job.refresh_from_db()
    aihc.sync(job)  # looked for once the create could have landed: none yet
    job.refresh_from_db()
    assert (job.status, job.external_id) == (JobStatus.STOPPED, "")
    release.set()
    landed(fake, 1)
    [late] = fake.jobs

    aihc.stop_duplicates()

    assert [call.route["job"] for call in fake.calls("StopJob")] == [late]
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPED
    said = (
        f"AIHC made this job after all, as {late}: a create that got no clear answer landed "
        "after the job ended here. The console stopped it there. It stays in AIHC's job list: "
        "delete it there once its logs are not needed."
    )
    assert job.events.get(reason="DuplicateStopped").message_shown == said
    # Its reason no longer says it was stopped before AIHC created it (qa81).
    assert job.status_reason_shown == said


def test_a_create_that_lands_after_the_job_was_deleted_is_stopped_there(
    fake, aihc, alice, settings
):
    """qa81: Stop, then Delete once Stopped (as the first Delete said to): the watch went with
    the job's row, and the late AIHC job ran on, followed by nothing."""
    from jobs.actions import ActionError, job_delete
    from jobs.models import DeletedJob

    release = held_create(fake, settings)
    [job] = submit(alice, seed_spec())
    aihc.submit(job)
    job.refresh_from_db()
    with pytest.raises(ActionError, match="The job was stopped, not deleted"):
        job_delete(job=job, actor=alice)
    job.refresh_from_db()
    # The Delete's stop names who asked, as a Stop's does (qa81: it named no one).
    assert job.events.get(reason="StopRequested").actor == alice
    create_settled(job, seconds=180)
    job.refresh_from_db()
    aihc.sync(job)  # none yet: Stopped
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPED
    assert job_delete(job=job, actor=alice)
    assert DeletedJob.objects.get(public_id=job.public_id).duplicate_watch == {
        "pool": POOL,
        "queue": "default",
    }
    release.set()
    landed(fake, 1)
    [late] = fake.jobs

    aihc.stop_duplicates()

    assert [call.route["job"] for call in fake.calls("StopJob")] == [late]
    aihc.stop_duplicates()  # stopped: not again
    assert len(fake.calls("StopJob")) == 1
    # Once the watch is over, nothing is asked of AIHC for it.
    DeletedJob.objects.update(duplicate_watch_until=timezone.now())
    lists = len(fake.calls("DescribeJobs"))
    aihc.stop_duplicates()
    assert len(fake.calls("DescribeJobs")) == lists


def deleted_in_doubt(fake, aihc, alice, settings) -> tuple[str, threading.Event]:
    """A job deleted (Stopped first, its look finding none) while AIHC held its create, so
    watched for it (DeletedJob.duplicate_watch_until): its id, and the create's release."""
    from jobs.actions import ActionError, job_delete

    job, _at, release = in_doubt(fake, aihc, alice, settings)
    with pytest.raises(ActionError):
        job_delete(job=job, actor=alice)  # stopped, not deleted
    create_settled(job, seconds=180)
    job.refresh_from_db()
    aihc.sync(job)  # none yet: Stopped
    job.refresh_from_db()
    assert job_delete(job=job, actor=alice)
    return job.public_id, release


def deleted_job_page(superuser, public_id: str) -> str:
    """The Deleted jobs admin page of the job, in English."""
    from django.test import Client

    from jobs.models import DeletedJob

    staff = Client()
    staff.force_login(superuser)
    staff.cookies["django_language"] = "en"
    pk = DeletedJob.objects.get(public_id=public_id).pk
    return html.unescape(staff.get(f"/admin/jobs/deletedjob/{pk}/change/").content.decode())


def test_a_deleted_jobs_late_create_stopped_on_aihc_is_said_on_its_admin_page(
    fake, aihc, alice, superuser, settings
):
    """qa83: what the watch of a deleted job found and did was said in the worker's log only."""
    public_id, release = deleted_in_doubt(fake, aihc, alice, settings)
    assert "None found so far" in deleted_job_page(superuser, public_id)
    release.set()
    landed(fake, 1)
    [late] = fake.jobs

    aihc.stop_duplicates()
    aihc.stop_duplicates()  # stopped: not again, not recorded again

    page = deleted_job_page(superuser, public_id)
    assert f"Stopped AIHC job {late} at " in page
    assert page.count(f"AIHC job {late}") == 1


def test_a_refused_stop_of_a_deleted_jobs_late_create_keeps_aihcs_words_out(
    fake, aihc, alice, superuser, settings, caplog
):
    """qa83: a deleted job keeps no spec, so the secret values AIHC's error may quote are not
    known to mask: of AIHC's error only its code, status and request id are said for it."""
    from jobs.models import DeletedJob

    secret = "sk-live-7Hq2"  # e.g. an env value of the job, quoted back by AIHC
    public_id, release = deleted_in_doubt(fake, aihc, alice, settings)
    release.set()
    landed(fake, 1)
    [late] = fake.jobs
    fake.fail_next("DescribeJobs", status=403, code="AccessDenied", message=f"env {secret}")
    fake.fail_next("StopJob", status=403, code="AccessDenied", message=f"env {secret}", times=2)

    with caplog.at_level(logging.WARNING, "jobs.aihc"):
        aihc.stop_duplicates()  # the look refused
        aihc.stop_duplicates()  # the stop refused
        aihc.stop_duplicates()  # refused again: recorded once

    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "AccessDenied, HTTP 403" in logged and secret not in logged
    [found] = DeletedJob.objects.get(public_id=public_id).duplicates_found
    assert found["id"] == late and found["error"].startswith("AccessDenied, HTTP 403")
    page = deleted_job_page(superuser, public_id)
    assert f"AIHC job {late} carries this job's id label" in page and secret not in page
    assert "AccessDenied, HTTP 403" in page

    aihc.stop_duplicates()  # AIHC takes the stop now

    assert f"Stopped AIHC job {late} at " in deleted_job_page(superuser, public_id)


def test_a_job_deleted_with_no_create_in_doubt_keeps_no_watch(fake, aihc, alice):
    from jobs.actions import job_delete
    from jobs.models import DeletedJob

    [job] = submit(alice, seed_spec())
    aihc.submit(job)
    job.refresh_from_db()
    fake.set_job_status(job.external_id, "Succeeded")
    aihc.sync(job)
    job.refresh_from_db()

    assert job_delete(job=job, actor=alice)

    gone = DeletedJob.objects.get(public_id=job.public_id)
    assert (gone.duplicate_watch_until, gone.duplicate_watch) == (None, None)


def test_a_late_create_of_a_job_given_up_submit_failed_is_stopped_there_and_said_so(
    fake, aihc, alice, settings
):
    """qa83: Submit failed is no final status (Submit again), so the job was skipped as one
    still looking for its creates, and the four landing late ran on."""
    settings.AIHC_RETRIES = 0
    fake.drop_next("CreateJob", times=4)
    [job] = submit(alice, seed_spec())
    for _pass in range(5):
        aihc.submit(job)
    job.refresh_from_db()
    assert job.status == JobStatus.SUBMIT_FAILED
    late = made_late(fake, job)  # one of its creates landed after all

    aihc.stop_duplicates()

    assert [call.route["job"] for call in fake.calls("StopJob")] == [late.job_id]
    job.refresh_from_db()
    assert job.status == JobStatus.SUBMIT_FAILED
    assert job.status_reason_shown.startswith(f"AIHC made this job after all, as {late.job_id}:")


def test_the_worker_stops_a_late_create_once_a_minute_while_the_job_is_watched(
    fake, aihc, alice, settings
):
    from jobs.worker import Worker

    job = sent_again_then_landed(fake, aihc, alice, settings)
    worker = Worker()

    worker.stop_aihc_duplicates()

    assert len(fake.calls("StopJob")) == 1
    lists = len(fake.calls("DescribeJobs"))
    job.refresh_from_db()
    assert job.duplicate_watch_until > timezone.now() + timedelta(minutes=59)
    worker.remote_pass()  # within the minute: not looked again
    assert len(fake.calls("DescribeJobs")) == lists

    # Once the watch is over, the job is not looked at again.
    Job.objects.filter(pk=job.pk).update(duplicate_watch_until=timezone.now())
    worker.stop_aihc_duplicates()
    assert len(fake.calls("DescribeJobs")) == lists


def test_a_late_create_aihc_will_not_stop_is_said_once_and_tried_again(fake, aihc, alice, settings):
    job = sent_again_then_landed(fake, aihc, alice, settings)
    fake.fail_next("StopJob", status=403, code="AccessDenied", message="no stop", times=2)

    aihc.stop_duplicates()
    aihc.stop_duplicates()

    assert len(fake.calls("StopJob")) == 2  # tried again
    [found] = job.events.filter(reason="DuplicateFound")  # said once
    assert "AccessDenied" in found.message_shown
    assert "Stop it in AIHC's console if it runs on." in found.message_shown

    aihc.stop_duplicates()  # AIHC takes the stop now

    assert len(fake.calls("StopJob")) == 3
    assert job.events.filter(reason="DuplicateStopped").count() == 1


def test_a_job_still_looking_for_its_own_create_is_not_taken_for_a_duplicates_owner(
    fake, aihc, alice, settings
):
    """Queued after an unanswered create, the job's own look adopts what the create made:
    stop_duplicates must not stop it first."""
    release = held_create(fake, settings)
    [job] = submit(alice, seed_spec())
    aihc.submit(job)
    release.set()
    landed(fake, 1)

    aihc.stop_duplicates()

    assert fake.calls("StopJob") == []
    create_settled(job)
    aihc.submit(job)
    job.refresh_from_db()
    assert job.external_id == next(iter(fake.jobs))


def test_a_create_without_a_clear_answer_is_logged_in_english_whatever_the_consoles_language(
    fake, aihc, alice, settings, caplog
):
    settings.AIHC_RETRIES = 0
    fake.drop_next("CreateJob")
    [job] = submit(alice, seed_spec())

    with translation.override("zh-hans"), caplog.at_level(logging.WARNING, "jobs.aihc"):
        aihc.submit(job)

    [line] = [r.getMessage() for r in caplog.records if "got no clear answer" in r.getMessage()]
    assert "AIHC closed the connection without answering" in line, line
    assert not any("\u4e00" <= ch <= "\u9fff" for ch in line), line


def test_a_throttled_create_keeps_the_job_queued_and_pauses_submits(fake, aihc, alice, settings):
    settings.AIHC_SUBMIT_PAUSE_SECONDS = 60  # the next tick falls within it, however slow
    fake.fail_next("CreateJob", status=429, code="RequestLimitExceeded", message="too many")
    [job] = submit(alice, seed_spec())

    aihc.submit(job)
    aihc.submit(job)  # the worker's next tick, within the pause: AIHC is not asked

    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED and job.external_id == ""
    assert len(fake.calls("CreateJob")) == 1
    deferred = job.events.get(reason="SubmitDeferred")
    assert "RequestLimitExceeded" in deferred.message and deferred.type == "Warning"
    submit_pause_over(aihc)
    aihc.submit(job)
    job.refresh_from_db()
    assert job.external_id in fake.jobs and len(fake.jobs) == 1


def test_an_unreachable_aihc_keeps_the_job_queued_with_the_reason_in_the_consoles_language(
    fake, aihc, alice, settings
):
    live = fake.url
    fake.stop()  # nothing listens there any more: connection refused
    settings.AIHC_ENDPOINT = live
    [job] = submit(alice, seed_spec())

    aihc.submit(job)
    aihc.submit(job)

    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED and job.external_id == ""
    [deferred] = job.events.filter(reason="SubmitDeferred")
    assert "无法连接百舸 AIHC (Unreachable, ConnectError)" in deferred.message
    assert job.events.filter(reason="Submitting").count() == 1  # paused: one try, not two


def test_aihc_statuses_become_console_event_reasons_with_aihcs_name_in_the_message(
    fake, aihc, alice
):
    job = submitted(fake, aihc, alice)
    fake.set_job_status(job.external_id, "Running")
    aihc.sync(job)
    fake.set_job_status(job.external_id, "ManualTermination")

    aihc.sync(job)

    job.refresh_from_db()
    assert job.status == JobStatus.STOPPED
    stopped = job.events.filter(reason="Stopped").last()
    assert "ManualTermination" in stopped.message
    assert not job.events.filter(reason__in=["ManualTermination", "Running "]).exists()
    assert job.events.filter(reason="Running").exists()


def test_a_stop_aihc_refuses_fails_with_what_did_not_happen_and_aihcs_reason(fake, aihc, alice):
    job = submitted(fake, aihc, alice)
    fake.set_job_status(job.external_id, "Running")
    aihc.sync(job)
    fake.fail_next("StopJob", status=400, code="JobStateConflict", message="job is terminating")

    with pytest.raises(BackendError) as caught:
        aihc.stop(job)

    message = caught.value.message
    assert message.startswith("AIHC did not stop the job: job is terminating")
    assert "JobStateConflict" in message and "requestId" in message
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING  # a clear no: the job runs on
    [failed] = job.events.filter(reason="StopFailed")
    assert "job is terminating" in failed.message
    assert not job.events.filter(reason="Stopping").exists()


@pytest.mark.parametrize(
    ("no_clear_answer", "said"),
    [
        (
            lambda fake: fake.fail_next(
                "StopJob", status=500, code="InternalError", message="etcd is unavailable"
            ),
            "Stop requested; AIHC answered it with an error (etcd is unavailable "
            "(InternalError, HTTP 500, requestId ",
        ),
        (
            lambda fake: fake.fail_next("StopJob", status=429, code="RequestLimitExceeded"),
            "Stop requested; AIHC answered it with an error (Internal error "
            "(RequestLimitExceeded, HTTP 429, requestId ",
        ),
        (
            lambda fake: fake.drop_next("StopJob"),
            # AIHC's words in the console's language, as recorded (Chinese by default).
            "Stop requested; AIHC did not answer it yet (百舸 AIHC 未响应就关闭了连接 "
            "(ConnectionClosed, ",
        ),
    ],
    ids=["server-error", "throttled", "no-answer"],
)
def test_a_stop_aihc_answered_with_an_error_says_its_error_and_one_unanswered_says_no_answer(
    fake, aihc, alice, no_clear_answer, said
):
    """qa80: a StopJob answered 500 was worded "AIHC did not answer it yet"."""
    job = submitted(fake, aihc, alice)
    fake.set_job_status(job.external_id, "Running")
    aihc.sync(job)
    no_clear_answer(fake)

    aihc.stop(job)

    stopping = Job.objects.get(pk=job.pk).events.get(reason="Stopping")
    assert stopping.message_shown.startswith(said)
    assert stopping.message_shown.endswith(
        "The console sends the stop again until AIHC reports the job ended."
    )
    with translation.override("zh-hans"):
        assert ("百舸 AIHC 以错误答复" in stopping.message_shown) == ("answered" in said)


def stop_sent_minutes_ago(job: Job, minutes: int) -> None:
    """Moves the job's move to Stopping back in time (instead of waiting for a resend)."""
    Job.objects.filter(pk=job.pk).update(updated_at=timezone.now() - timedelta(minutes=minutes))
    job.refresh_from_db()


# A stop AIHC gives no clear answer to: a server error, throttling, no answer at all.
NO_CLEAR_ANSWER = pytest.mark.parametrize(
    "no_clear_answer",
    [
        lambda fake: fake.fail_next("StopJob", status=500, code="InternalError"),
        lambda fake: fake.fail_next("StopJob", status=429, code="RequestLimitExceeded"),
        lambda fake: fake.drop_next("StopJob"),
    ],
    ids=["server-error", "throttled", "no-answer"],
)


@NO_CLEAR_ANSWER
def test_a_stop_aihc_gives_no_clear_answer_is_taken_and_sent_again_until_the_job_stops(
    fake, aihc, alice, no_clear_answer
):
    job = submitted(fake, aihc, alice)
    fake.set_job_status(job.external_id, "Running")
    aihc.sync(job)
    no_clear_answer(fake)

    aihc.stop(job)  # no error for the person who pressed Stop

    job.refresh_from_db()
    assert job.status == JobStatus.STOPPING
    assert fake.jobs[job.external_id].status == "Running"
    stopping = job.events.get(reason="Stopping")
    assert stopping.type == "Warning"
    assert "sends the stop again" in stopping.message_shown
    assert not job.events.filter(reason="StopFailed").exists()
    aihc.sync(job)  # within a minute of the stop: not sent again yet
    assert len(fake.calls("StopJob")) == 1
    stop_sent_minutes_ago(job, 2)

    aihc.sync(job)  # AIHC still runs it: the stop goes again, and this time AIHC takes it
    aihc.sync(job)

    job.refresh_from_db()
    assert len(fake.calls("StopJob")) == 2
    assert job.status == JobStatus.STOPPED
    assert job.events.filter(reason__in=["Stopping", "StopRequested"]).count() == 1


def test_a_stop_aihc_did_not_answer_from_a_page_that_loaded_the_job_queued_is_sent_again(
    fake, aihc, alice
):
    """The worker ran the job (Queued to Running) while the unanswered stop was out: the move
    to Stopping from the page's Queued lost, and the job ran on as Running, its stop never
    sent again (sync sends it again only for a Stopping job)."""
    job = submitted(fake, aihc, alice)
    as_the_page_loaded_it = Job.objects.get(pk=job.pk)
    fake.set_job_status(job.external_id, "Running")
    aihc.sync(job)
    fake.fail_next("StopJob", status=500, code="InternalError")

    aihc.stop(as_the_page_loaded_it)

    job.refresh_from_db()
    assert job.status == JobStatus.STOPPING
    assert job.events.get(reason="Stopping").type == "Warning"
    stop_sent_minutes_ago(job, 2)
    aihc.sync(job)  # AIHC still runs it: the stop goes again, and AIHC takes it
    aihc.sync(job)

    job.refresh_from_db()
    assert len(fake.calls("StopJob")) == 2
    assert job.status == JobStatus.STOPPED


def test_a_stop_that_cannot_reach_aihc_stays_stopping_until_aihc_is_back_and_stops_the_job(
    fake, aihc, alice, settings
):
    job = submitted(fake, aihc, alice)
    fake.set_job_status(job.external_id, "Running")
    aihc.sync(job)
    settings.AIHC_ENDPOINT = "http://127.0.0.1:9"  # nothing listens on the discard port

    aihc.stop(job)
    stop_sent_minutes_ago(job, 2)
    with pytest.raises(BackendError):
        aihc.sync(job)  # AIHC still down: the worker logs it and tries at its next sync

    job.refresh_from_db()
    assert job.status == JobStatus.STOPPING
    assert "Unreachable" in job.events.get(reason="Stopping").message
    assert fake.calls("StopJob") == []
    settings.AIHC_ENDPOINT = fake.url  # AIHC is back
    aihc.sync(job)
    aihc.sync(job)
    job.refresh_from_db()
    assert len(fake.calls("StopJob")) == 1
    assert job.status == JobStatus.STOPPED


def test_a_job_queued_on_aihc_whose_stop_got_no_answer_is_stopping_not_stopped(fake, aihc, alice):
    job = submitted(fake, aihc, alice)
    assert job.status == JobStatus.QUEUED and job.external_id
    fake.fail_next("StopJob", status=503, code="ServiceUnavailable")

    aihc.stop(job)

    job.refresh_from_db()
    assert job.status == JobStatus.STOPPING  # AIHC may still start it
    stop_sent_minutes_ago(job, 2)
    aihc.sync(job)
    aihc.sync(job)
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPED


def test_a_job_aihc_never_confirms_stopped_stays_stopping_and_warns_once_after_half_an_hour(
    fake, aihc, alice
):
    job = submitted(fake, aihc, alice)
    fake.set_job_status(job.external_id, "Running")
    aihc.sync(job)
    fake.fail_next("StopJob", status=500, code="InternalError", times=100)
    aihc.stop(job)
    stop_sent_minutes_ago(job, 29)
    aihc.sync(job)  # sent again
    assert not job.events.filter(reason="StopUnconfirmed").exists()
    aihc._stops_sent[job.pk] -= timedelta(minutes=2)
    stop_sent_minutes_ago(job, 31)

    aihc.sync(job)
    aihc._stops_sent[job.pk] -= timedelta(minutes=2)
    aihc.sync(job)

    job.refresh_from_db()
    assert job.status == JobStatus.STOPPING  # it may still run on AIHC: still watched
    assert len(fake.calls("StopJob")) == 4  # the stop and three resends, logged, not evented
    assert job.events.filter(reason="Stopping").count() == 1
    [warned] = job.events.filter(reason="StopUnconfirmed")
    assert warned.type == "Warning"
    assert job.external_id in warned.message and "Running" in warned.message
    fake.set_job_status(job.external_id, "Stopped")  # AIHC takes a later resend
    aihc.sync(job)
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPED


def test_a_failed_log_read_says_the_logs_were_not_returned_in_the_readers_language(
    fake, aihc, alice, settings
):
    job = submitted(fake, aihc, alice)
    settings.AIHC_ENDPOINT = "http://127.0.0.1:9"  # nothing listens on the discard port

    with pytest.raises(BackendError) as english:
        aihc.logs(job, "master-0", tail=10)
    with translation.override("zh-hans"), pytest.raises(BackendError) as chinese:
        aihc.logs(job, "master-0", tail=10)

    assert english.value.message == (
        "AIHC did not return the logs: AIHC could not be reached (Unreachable, ConnectError)"
    )
    assert (
        chinese.value.message
        == "百舸 AIHC 未能返回日志：无法连接百舸 AIHC (Unreachable, ConnectError)"
    )


def test_reconciliation_skips_jobs_of_the_same_name_that_other_rows_own(
    fake, aihc, alice, settings
):
    [first] = submit(alice, seed_spec())
    aihc.submit(first)
    first.refresh_from_db()
    settings.AIHC_READ_TIMEOUT = 0.5
    fake.delay_next("CreateJob", 1.5)
    [second] = submit(alice, seed_spec())

    aihc.submit(second)

    second.refresh_from_db()
    assert len(fake.jobs) == 2
    assert second.external_id in fake.jobs
    assert second.external_id != first.external_id


def test_a_queue_group_submits_each_task_and_respects_its_concurrency(fake, aihc, alice):
    spec = seed_spec()
    spec.submission = S.Submission(mode=S.SUBMIT_QUEUE, total=3, concurrency=2)
    jobs = submit(alice, spec)

    for job in jobs:
        aihc.submit(job)

    assert len(fake.calls("CreateJob")) == 2
    for job in jobs:
        job.refresh_from_db()
    assert [bool(j.external_id) for j in jobs] == [True, True, False]
    fake.set_job_status(jobs[0].external_id, "Succeeded")
    aihc.sync(jobs[0])
    aihc.submit(jobs[2])
    jobs[2].refresh_from_db()
    assert jobs[2].external_id in fake.jobs
    assert len(fake.jobs) == 3


def test_a_task_whose_create_got_no_clear_answer_holds_its_place_in_its_group(
    fake, aihc, alice, settings
):
    """qa81: the held task went back to Queued with no AIHC id and no longer counted, so the
    group's next task went out (two on AIHC under "at most 1"); and the held one was not
    looked for at its time while the group was full, its late create followed by nothing."""
    release = held_create(fake, settings)
    spec = seed_spec()
    spec.submission = S.Submission(mode=S.SUBMIT_QUEUE, total=2, concurrency=1)
    first, second = submit(alice, spec)
    aihc.submit(first)
    first.refresh_from_db()
    assert (first.status, first.external_id) == (JobStatus.QUEUED, "")

    aihc.submit(second)

    assert len(fake.calls("CreateJob")) == 1  # the second waits for the first's place
    second.refresh_from_db()
    assert second.external_id == ""
    release.set()
    landed(fake, 1)
    create_settled(first)
    aihc.submit(first)  # looked for at its time, though its group counts it full
    first.refresh_from_db()
    assert first.external_id == next(iter(fake.jobs))
    aihc.submit(second)
    assert len(fake.calls("CreateJob")) == 1  # the first now runs on AIHC, in its place


def _sent_envs(call) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in call.body["jobSpec"]["envs"]}


def test_each_task_of_a_queue_group_is_sent_its_own_index_and_the_groups_size(fake, aihc, alice):
    spec = seed_spec()
    spec.submission = S.Submission(mode=S.SUBMIT_QUEUE, total=3, concurrency=3)
    jobs = submit(alice, spec)

    for job in jobs:
        aihc.submit(job)

    sent = [_sent_envs(call) for call in fake.calls("CreateJob")]
    assert [e["AIHC_GROUP_TASK_INDEX"] for e in sent] == ["0", "1", "2"]
    assert {e["AIHC_GROUP_TASK_TOTAL"] for e in sent} == {"3"}
    # The stored spec, shared by the group, is unchanged: the index is each task's own.
    assert all("AIHC_GROUP_TASK_INDEX" not in str(j.spec) for j in Job.objects.all())


def test_a_queue_groups_own_env_of_a_group_variable_wins_for_every_task(fake, aihc, alice):
    spec = seed_spec()
    spec.envs = [*spec.envs, S.Env("AIHC_GROUP_TASK_INDEX", "4")]
    spec.submission = S.Submission(mode=S.SUBMIT_QUEUE, total=2, concurrency=2)
    jobs = submit(alice, spec)

    for job in jobs:
        aihc.submit(job)

    sent = [_sent_envs(call) for call in fake.calls("CreateJob")]
    assert [e["AIHC_GROUP_TASK_INDEX"] for e in sent] == ["4", "4"]
    assert [e["AIHC_GROUP_TASK_TOTAL"] for e in sent] == ["2", "2"]
    names = [[e["name"] for e in call.body["jobSpec"]["envs"]] for call in fake.calls("CreateJob")]
    assert all(n.count("AIHC_GROUP_TASK_INDEX") == 1 for n in names)


def test_run_again_of_a_task_sent_to_aihc_sends_that_tasks_index_again(fake, aihc, alice):
    from jobs.actions import job_rerun

    spec = seed_spec()
    spec.submission = S.Submission(mode=S.SUBMIT_QUEUE, total=3, concurrency=3)
    jobs = submit(alice, spec)
    for job in jobs:
        aihc.submit(job)
        job.refresh_from_db()
    fake.set_job_status(jobs[1].external_id, "Succeeded")
    aihc.sync(jobs[1])

    [again] = job_rerun(job=jobs[1], owner=alice)
    aihc.submit(again)

    # A group of one would be told index 0: task 2/3's own values are in its spec instead.
    assert _sent_envs(fake.calls("CreateJob")[-1])["AIHC_GROUP_TASK_INDEX"] == "1"
    envs = {e.name: e.value for e in again.job_spec().envs}
    assert (envs["AIHC_GROUP_TASK_INDEX"], envs["AIHC_GROUP_TASK_TOTAL"]) == ("1", "3")


def test_a_task_whose_send_failed_is_sent_again_with_as_many_envs_as_a_job_may_hold(
    fake, aihc, alice
):
    # Submit again sends the same task of its group: its index comes from the group, as on
    # its first send, and is not counted among its envs (a sweep of 49 envs was refused).
    from jobs.actions import job_submit_again

    spec = seed_spec()
    spec.envs = [S.Env(f"SWEEP_{i}", str(i)) for i in range(S.MAX_ENVS - 1)]
    spec.submission = S.Submission(mode=S.SUBMIT_QUEUE, total=3, concurrency=3)
    first, second, _third = submit(alice, spec)
    aihc.submit(first)
    fake.fail_next("CreateJob", status=400, code="QuotaExceeded", message="quota")
    aihc.submit(second)
    second.refresh_from_db()
    assert second.status == JobStatus.SUBMIT_FAILED

    job_submit_again(job=second, actor=alice)
    aihc.submit(second)

    second.refresh_from_db()
    assert second.status == JobStatus.QUEUED and second.external_id in fake.jobs
    assert _sent_envs(fake.calls("CreateJob")[-1])["AIHC_GROUP_TASK_INDEX"] == "1"
    assert "AIHC_GROUP_TASK_INDEX" not in str(second.spec)


def test_a_queue_tasks_page_shows_the_request_sent_with_its_own_index(
    fake, aihc, alice, alice_client, reviewer
):
    # "The exact request this job corresponds to": what was sent, the index included, so a
    # request imported from the page (a standalone job) runs that task's value again.
    import html as html_module
    import json
    import re

    from django.urls import reverse

    spec = seed_spec()
    spec.submission = S.Submission(mode=S.SUBMIT_QUEUE, total=3, concurrency=3)
    jobs = submit(alice, spec)
    for job in jobs:
        aihc.submit(job)

    r = alice_client.get(reverse("job-detail", args=[jobs[2].public_id]))

    assert r.status_code == 200
    shown = re.search(r'id="api-request"[^>]*>[^\n]*\n(.*?)</pre>', r.content.decode(), re.S)
    body = json.loads(html_module.unescape(shown.group(1)))
    envs = {e["name"]: e["value"] for e in body["jobSpec"]["envs"]}
    assert (envs["AIHC_GROUP_TASK_INDEX"], envs["AIHC_GROUP_TASK_TOTAL"]) == ("2", "3")
    assert envs == _sent_envs(fake.calls("CreateJob")[2])
    # The reviewer's reading in the admin is that request too.
    alice_client.force_login(reviewer)
    admin = alice_client.get(reverse("admin:jobs_job_change", args=[jobs[2].pk]))
    shown = re.search(r'class="api-request">[^\n]*\n(.*?)</pre>', admin.content.decode(), re.S)
    body = json.loads(html_module.unescape(shown.group(1)))
    assert {e["name"]: e["value"] for e in body["jobSpec"]["envs"]} == envs


def test_an_aihc_task_and_its_groups_review_list_the_group_variables(fake, aihc, alice):
    from jobs.runtime_env import ReplicaRef, group_task_of

    spec = seed_spec()
    spec.submission = S.Submission(mode=S.SUBMIT_QUEUE, total=3, concurrency=3)
    jobs = submit(alice, spec)
    ref = ReplicaRef(spec.roles[0].name, 0, 0)

    before = aihc.environment_preview(spec, ref, job_id="preview")
    third = aihc.environment_preview(
        spec, ref, job_id=jobs[2].public_id, group_task=group_task_of(jobs[2])
    )

    assert before["AIHC_GROUP_TASK_INDEX"].startswith("0 ")  # "0 to 2, one per task"
    assert (third["AIHC_GROUP_TASK_INDEX"], third["AIHC_GROUP_TASK_TOTAL"]) == ("2", "3")


def test_a_standalone_job_is_sent_no_group_variable(fake, aihc, alice):
    [job] = submit(alice, seed_spec())

    aihc.submit(job)

    [call] = fake.calls("CreateJob")
    assert not {"AIHC_GROUP_TASK_INDEX", "AIHC_GROUP_TASK_TOTAL"} & set(_sent_envs(call))


# -- following a job ----------------------------------------------------------------------


def submitted(fake, aihc, owner, **changes) -> Job:
    spec = seed_spec(**changes)
    [job] = submit(owner, spec)
    aihc.submit(job)
    job.refresh_from_db()
    return job


def test_sync_follows_aihc_states_replicas_and_events_without_duplicates(fake, aihc, alice):
    job = submitted(
        fake, aihc, alice, roles=[S.Role("master", 1, A800, 8), S.Role("worker", 2, A800, 8)]
    )
    fake.set_job_status(job.external_id, "Running", restarts=1)

    aihc.sync(job)
    aihc.sync(job)

    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING and job.started_at is not None
    replicas = list(
        job.replicas.order_by("role", "index").values_list(
            "role", "index", "status", "restarts", "node"
        )
    )
    assert replicas == [
        ("master", 0, "running", 1, "node-10-0-0-1"),
        ("worker", 0, "running", 1, "node-10-0-0-1"),
        ("worker", 1, "running", 1, "node-10-0-0-1"),
    ]
    aihc_events = list(
        job.events.filter(reason__startswith="AIHC:").values_list("reason", flat=True)
    )
    assert aihc_events == ["AIHC:Created", "AIHC:Running"]

    fake.set_job_status(job.external_id, "Succeeded")
    aihc.sync(job)
    aihc.sync(job)

    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED and job.finished_at is not None
    assert job.events.filter(reason="AIHC:Succeeded").count() == 1
    assert set(job.replicas.values_list("status", flat=True)) == {"succeeded"}


def aihc_event(fake, job: Job, reason: str, message: str, stamp: str, kind: str = "Normal"):
    """An event AIHC lists for the job, written at `stamp` (its firstTimestamp)."""
    event = {**fake._event(reason, message, kind), "firstTimestamp": stamp}
    event["lastTimestamp"] = stamp
    fake.jobs[job.external_id].events.append(event)


def test_aihc_events_carry_aihcs_own_time_not_a_utc_stamp_in_their_message(fake, aihc, alice):
    job = submitted(fake, aihc, alice)
    later = timezone.now().astimezone(UTC).replace(microsecond=0) + timedelta(hours=1)
    aihc_event(
        fake, job, "FailedScheduling", "0/4 nodes are available", f"{later:%Y-%m-%dT%H:%M:%SZ}"
    )
    # The same words again, later (a pod backing off twice), and an RFC 3339 time with an offset.
    aihc_event(
        fake,
        job,
        "FailedScheduling",
        "0/4 nodes are available",
        (later + timedelta(minutes=5, milliseconds=250))
        .astimezone(timezone.get_fixed_timezone(480))
        .isoformat(),
        "Warning",
    )

    aihc.sync(job)
    aihc.sync(job)

    events = list(job.events.filter(reason="AIHC:FailedScheduling"))
    assert [(e.created_at, e.message, e.type) for e in events] == [
        (later, "0/4 nodes are available", "Normal"),
        (later + timedelta(minutes=5, milliseconds=250), "0/4 nodes are available", "Warning"),
    ]
    assert job.events.last().reason == "AIHC:FailedScheduling"  # in time order, the latest


def test_an_aihc_event_of_the_second_the_console_asked_for_a_stop_is_listed_after_the_stop(
    fake, aihc, alice
):
    """qa80: AIHC stamps whole seconds, so its event of the second the stop was asked showed
    before the stop. One the console had read before the stop stays before it."""
    job = submitted(fake, aihc, alice)
    fake.set_job_status(job.external_id, "Running")
    aihc.sync(job)
    job.refresh_from_db()
    aihc.stop(job)
    asked = job.events.get(reason="Stopping").created_at
    second = f"{asked.astimezone(UTC):%Y-%m-%dT%H:%M:%SZ}"
    aihc_event(fake, job, "Killing", "stopping container pytorch", second)

    aihc.sync(job)
    aihc.sync(job)

    reasons = list(job.events.values_list("reason", flat=True))
    assert reasons.count("AIHC:Killing") == 1
    assert reasons.index("Stopping") < reasons.index("AIHC:Killing")
    running = job.events.get(reason="AIHC:Running").created_at
    assert running <= asked and reasons.index("AIHC:Running") < reasons.index("Stopping")


def test_an_aihc_event_of_the_second_a_job_in_doubt_was_adopted_to_stop_is_listed_after_it(
    fake, aihc, alice, settings
):
    """qa83: found on AIHC after its Stop and adopted to be stopped ("Submitted"), the job's
    stop goes out in that second with no event of its own, and AIHC's events of that second
    showed before the adoption."""
    from jobs.actions import job_stop

    job, _at, release = in_doubt(fake, aihc, alice, settings)
    job_stop(job=job, actor=alice)
    release.set()
    landed(fake, 1)
    # The Stop and the create long ago: the create's time is over, and its events' seconds
    # are not the adoption's.
    job.events.update(created_at=F("created_at") - timedelta(seconds=180))
    job.refresh_from_db()
    aihc.sync(job)  # found by its label, adopted, stopped there
    adopted = job.events.get(reason="Submitted").created_at
    second = f"{adopted.astimezone(UTC):%Y-%m-%dT%H:%M:%SZ}"
    aihc_event(fake, job, "Killing", "stopping container pytorch", second)

    job.refresh_from_db()
    aihc.sync(job)
    aihc.sync(job)

    reasons = list(job.events.values_list("reason", flat=True))
    assert reasons.count("AIHC:Killing") == 1
    assert reasons.index("Stopping") < reasons.index("Submitted") < reasons.index("AIHC:Killing")


def test_an_aihc_event_with_a_time_that_cannot_be_read_is_dated_when_copied_and_copied_once(
    fake, aihc, alice
):
    job = submitted(fake, aihc, alice)
    aihc_event(fake, job, "Pulled", "image pulled", "yesterday-ish")
    before = timezone.now()

    aihc.sync(job)
    aihc.sync(job)

    [event] = job.events.filter(reason="AIHC:Pulled")
    assert event.message == "image pulled"
    assert before <= event.created_at <= timezone.now()


def test_an_aihc_event_never_shows_before_the_console_sent_the_job(fake, aihc, alice):
    """AIHC stamps whole seconds (and its clock may lag): an event stamped before the job was
    sent shows right after the console's Submitting, not before the job existed."""
    job = submitted(fake, aihc, alice)
    aihc_event(fake, job, "Scheduled", "assigned to node-1", "2020-01-01T00:00:00Z")

    aihc.sync(job)

    sent = job.events.get(reason="Submitting").created_at
    assert job.events.get(reason="AIHC:Scheduled").created_at == sent
    reasons = list(job.events.values_list("reason", flat=True))
    assert reasons.index("AIHC:Scheduled") > reasons.index("Submitting")


def test_aihc_events_copied_before_their_time_was_read_are_not_copied_again(fake, aihc, alice):
    job = submitted(fake, aihc, alice)
    aihc_event(fake, job, "Pulled", "image pulled", "2030-01-02T03:04:05Z")
    JobEvent.objects.create(
        job=job, reason="AIHC:Pulled", message="image pulled [2030-01-02T03:04:05Z]"
    )

    aihc.sync(job)

    assert job.events.filter(reason="AIHC:Pulled").count() == 1


def test_an_unknown_aihc_status_is_recorded_once_and_changes_nothing(fake, aihc, alice):
    job = submitted(fake, aihc, alice)
    fake.set_job_status(job.external_id, "Hibernating")

    aihc.sync(job)
    aihc.sync(job)

    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED
    [event] = job.events.filter(reason="UnknownStatus")
    assert "Hibernating" in event.message and event.type == "Warning"


def test_a_job_that_finishes_between_syncs_passes_through_running(fake, aihc, alice):
    job = submitted(fake, aihc, alice)
    fake.set_job_status(job.external_id, "Failed")

    aihc.sync(job)

    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    reasons = list(job.events.values_list("reason", flat=True))
    assert reasons.index("Failed") > reasons.index("Submitted")


@pytest.mark.parametrize("version", ["v1", "v2"])
@pytest.mark.parametrize("ended", ["Succeeded", "Failed"])
def test_a_job_that_ran_and_ended_between_two_syncs_starts_when_aihc_says_it_began_running(
    fake, aihc, alice, settings, version, ended
):
    """qa80: seen Queued, then ended, such a job had no start, so no duration or card-hours.
    AIHC's running time (v1 runningAt, v2 jobTimeLine) is its start."""
    settings.AIHC_API_VERSION = version
    job = submitted(fake, aihc, alice)
    three_hours_ago = timezone.now() - timedelta(hours=3)
    job.events.filter(reason="Submitting").update(created_at=three_hours_ago)
    aihc.sync(job)
    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED
    # Between two syncs, it ran for two hours and ended.
    fake.set_job_status(job.external_id, "Running")
    began = (timezone.now() - timedelta(hours=2)).astimezone(UTC).replace(microsecond=0)
    fake.jobs[job.external_id].running_at = f"{began:%Y-%m-%dT%H:%M:%SZ}"
    fake.set_job_status(job.external_id, ended)

    aihc.sync(job)

    job.refresh_from_db()
    assert job.status == ended.lower()
    assert job.started_at == began
    reasons = list(job.events.values_list("reason", flat=True))
    assert reasons.index("Running") < reasons.index(ended)
    # Two hours of its cards (and the moments the test took), on its page.
    assert job.total_cards and abs(float(job_usage_text(job=job)) - 2 * job.total_cards) < 0.1


def test_a_job_aihc_gives_a_zero_running_time_that_ended_between_syncs_is_given_no_start(
    fake, aihc, alice
):
    """Go's zero time, which an API may give for "never", is no start (nor the job's send)."""
    job = submitted(fake, aihc, alice)
    fake.jobs[job.external_id].running_at = "0001-01-01T00:00:00Z"
    fake.set_job_status(job.external_id, "Failed")

    aihc.sync(job)

    job.refresh_from_db()
    assert job.status == JobStatus.FAILED and job.started_at is None
    assert not job.events.filter(reason="Running").exists()


def test_stopping_stops_the_aihc_job_and_sync_sees_it_stopped(fake, aihc, alice):
    job = submitted(fake, aihc, alice)
    fake.set_job_status(job.external_id, "Running")
    aihc.sync(job)

    aihc.stop(job)

    job.refresh_from_db()
    assert job.status == JobStatus.STOPPING
    assert len(fake.calls("StopJob")) == 1
    aihc.sync(job)
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPED


def test_a_job_stopped_from_a_page_that_loaded_it_queued_ends_stopped_though_it_ran_meanwhile(
    fake, aihc, alice
):
    """The move from the status the page loaded (Queued to Stopped) loses to the worker's sync
    (Queued to Running): the job goes Stopping at once, not Running until the next sync, and
    that sync, reading AIHC's own stopped status, ends it Stopped."""
    job = submitted(fake, aihc, alice)
    as_the_page_loaded_it = Job.objects.get(pk=job.pk)
    assert as_the_page_loaded_it.status == JobStatus.QUEUED
    fake.set_job_status(job.external_id, "Running")
    aihc.sync(job)  # the worker's sync, before the owner presses Stop

    aihc.stop(as_the_page_loaded_it)

    job.refresh_from_db()
    assert job.status == JobStatus.STOPPING
    aihc.sync(job)

    job.refresh_from_db()
    assert job.status == JobStatus.STOPPED
    assert len(fake.calls("StopJob")) == 1
    assert not job.events.filter(reason__in=["Failed", "Lost"]).exists()


def test_a_queued_job_not_yet_on_aihc_stops_without_calling_it(fake, aihc, alice):
    [job] = submit(alice, seed_spec())

    aihc.stop(job)

    job.refresh_from_db()
    assert job.status == JobStatus.STOPPED
    assert fake.requests == []


def submitting_in_a_thread(fake, aihc, job: Job) -> threading.Thread:
    """The worker's submit, in a thread of its own, once its CreateJob has reached AIHC."""

    def worker_submits() -> None:
        try:
            aihc.submit(Job.objects.get(pk=job.pk))
        finally:
            connection.close()

    worker = threading.Thread(target=worker_submits)
    worker.start()
    deadline = time.monotonic() + 30
    while not fake.calls("CreateJob"):
        assert time.monotonic() < deadline, "the worker's CreateJob never reached AIHC"
        time.sleep(0.01)
    return worker


def test_a_job_stopped_while_its_create_is_in_flight_is_stopped_on_aihc(
    fake, aihc, alice, transactional_db
):
    [job] = submit(alice, seed_spec())
    release = fake.block_next("CreateJob")

    worker = submitting_in_a_thread(fake, aihc, job)
    job.refresh_from_db()
    assert job.status == JobStatus.SUBMITTING
    aihc.stop(job)
    assert job.status == JobStatus.STOPPING
    release.set()
    worker.join(10)

    job.refresh_from_db()
    assert job.status == JobStatus.STOPPING
    assert job.external_id in fake.jobs
    assert len(fake.calls("StopJob")) == 1
    aihc.sync(job)
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPED


def test_a_job_stopped_while_a_throttled_create_is_in_flight_ends_stopped(
    fake, aihc, alice, transactional_db
):
    [job] = submit(alice, seed_spec())
    release = fake.fail_next("CreateJob", status=429, code="RequestLimitExceeded", held=True)

    worker = submitting_in_a_thread(fake, aihc, job)
    job.refresh_from_db()
    aihc.stop(job)
    assert job.status == JobStatus.STOPPING
    release.set()  # the 429 answers the create only now, after the stop
    worker.join(10)

    job.refresh_from_db()
    assert job.status == JobStatus.STOPPED  # not left Stopping with nothing to stop
    assert fake.jobs == {}


def stopped_during_an_unanswered_create(job: Job, minutes_ago: int) -> None:
    """The job as a worker leaves it when a stop lands while a create got no answer."""
    job_transition(job=job, to=JobStatus.SUBMITTING, reason="Submitting")
    job_transition(job=job, to=JobStatus.STOPPING, reason="Stopping")
    event = JobEvent.objects.create(job=job, reason="SubmitTimedOut", message="no answer")
    JobEvent.objects.filter(pk=event.pk).update(
        created_at=event.created_at - timedelta(minutes=minutes_ago)
    )


def made_late(fake, job: Job):
    """What the console's unanswered create made on AIHC after all (its labelled body)."""
    from jobs.backends.aihc import AihcBackend

    return fake.create_external(
        POOL, AihcBackend.request_body(job.job_spec(), "v1", job_id=job.public_id)
    )


def test_a_job_stopped_during_an_unanswered_create_stops_what_aihc_made_of_it(fake, aihc, alice):
    [job] = submit(alice, seed_spec())
    stopped_during_an_unanswered_create(job, minutes_ago=3)
    created = made_late(fake, job)  # the create did happen, late

    aihc.sync(job)

    job.refresh_from_db()
    assert job.status == JobStatus.STOPPING and job.external_id == created.job_id
    assert len(fake.calls("StopJob")) == 1
    aihc.sync(job)
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPED


def test_a_job_stopped_during_an_unanswered_create_waits_then_ends_stopped_when_aihc_has_none(
    fake, aihc, alice, settings
):
    settings.AIHC_CREATE_SETTLE_SECONDS = 120  # the default
    [recent] = submit(alice, seed_spec())
    stopped_during_an_unanswered_create(recent, minutes_ago=0)
    [old] = submit(alice, seed_spec())
    stopped_during_an_unanswered_create(old, minutes_ago=3)

    aihc.sync(recent)
    aihc.sync(old)

    recent.refresh_from_db()
    old.refresh_from_db()
    assert recent.status == JobStatus.STOPPING  # a slow create may still show up
    assert old.status == JobStatus.STOPPED and fake.calls("StopJob") == []


def test_a_stopped_jobs_look_aihc_refuses_is_made_again_only_at_its_time_then_stops_what_it_made(
    fake, aihc, alice
):
    """Until left48 a look for what an unanswered create made, for a job stopped meanwhile,
    that AIHC refused (403, a 5xx) was made again at every sync, for ever, saying nothing.
    It now waits for the job's own next look (30 s, then 60 s, ...), one event a look."""
    [job] = submit(alice, seed_spec())
    stopped_during_an_unanswered_create(job, minutes_ago=3)
    created = made_late(fake, job)
    fake.fail_next("DescribeJobs", status=403, code="AccessDenied", message="no list", times=2)
    start = timezone.now()

    aihc.sync(job)

    job.refresh_from_db()
    assert (job.status, job.external_id) == (JobStatus.STOPPING, "")
    refused = job.events.get(reason="LookRefused")
    assert refused.type == "Warning"
    assert refused.message_shown.startswith(
        "AIHC refused the look for the job its creates may have made, to stop it: "
    )
    at = refused.message_shown.removesuffix(".").rsplit(" at ", 1)[1]
    assert at in times_said(start, timezone.now(), seconds=30)
    assert "AccessDenied" in refused.message_shown
    events = job.events.count()

    for _ in range(3):  # the worker's next syncs, before the job's time
        aihc.sync(job)
        job.refresh_from_db()

    assert len(fake.calls("DescribeJobs")) == 1 and job.events.count() == events
    refused_looks_earlier(job, seconds=31)
    aihc.sync(job)  # its time: looked for again, refused again
    job.refresh_from_db()
    assert len(fake.calls("DescribeJobs")) == 2
    assert [e.reason for e in job.events.order_by("pk")[events:]] == ["LookRefused"]
    refused_looks_earlier(job, seconds=31)
    aihc.sync(job)  # 31 s is not its time any more: the wait doubled
    assert len(fake.calls("DescribeJobs")) == 2
    refused_looks_earlier(job, seconds=30)

    aihc.sync(job)  # AIHC answers the look: what the create made is adopted and stopped

    job.refresh_from_db()
    assert (job.status, job.external_id) == (JobStatus.STOPPING, created.job_id)
    assert [call.route["job"] for call in fake.calls("StopJob")] == [created.job_id]


def test_a_stopped_jobs_look_aihc_has_refused_for_an_hour_ends_it_stopped_saying_where_to_look(
    fake, aihc, alice
):
    [job] = submit(alice, seed_spec())
    stopped_during_an_unanswered_create(job, minutes_ago=3)
    fake.fail_next("DescribeJobs", status=403, code="AccessDenied", times=2)
    aihc.sync(job)
    refused_looks_earlier(job, seconds=3600)

    aihc.sync(job)  # refused again, an hour after the first

    job.refresh_from_db()
    assert job.status == JobStatus.STOPPED
    assert job.events.filter(reason="Stopped").get().type == "Warning"
    assert job.status_reason_shown.startswith(
        "AIHC refused the looks for the job its creates may have made for an hour (the last: "
    )
    assert job.status_reason_shown.endswith(
        "so the console stopped looking and ended the job Stopped. AIHC may have made it: look "
        f"in pool {POOL} for a job named {job.name} labelled ai-job-console/job-id="
        f"{job.public_id}, and stop it there if it runs."
    )
    assert len(fake.calls("DescribeJobs")) == 2 and fake.calls("StopJob") == []


def stuck_in_submitting(job: Job) -> None:
    """The job as a worker that died while sending its create leaves it, 3 minutes ago (past
    STUCK_SUBMITTING): the next sync looks for what the create made."""
    job_transition(job=job, to=JobStatus.SUBMITTING, reason="Submitting")
    Job.objects.filter(pk=job.pk).update(updated_at=timezone.now() - timedelta(minutes=3))
    job.refresh_from_db()


def test_a_stuck_submit_is_looked_for_only_once_a_longer_create_wait_has_passed(
    fake, aihc, alice, settings
):
    """qa83: with AIHC_CREATE_SETTLE_SECONDS above STUCK_SUBMITTING, a job left Submitting by
    a worker that died sending it was looked for, and sent again, before its create had the
    time an unanswered one gets."""
    settings.AIHC_CREATE_SETTLE_SECONDS = 300
    [job] = submit(alice, seed_spec())
    stuck_in_submitting(job)  # 3 minutes ago

    aihc.sync(job)

    job.refresh_from_db()
    assert job.status == JobStatus.SUBMITTING and fake.calls("DescribeJobs") == []
    Job.objects.filter(pk=job.pk).update(updated_at=timezone.now() - timedelta(minutes=6))
    job.refresh_from_db()
    aihc.sync(job)
    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED and len(fake.calls("DescribeJobs")) == 1


def test_a_look_for_a_stuck_submit_aihc_refuses_waits_for_its_time_and_sends_nothing_meanwhile(
    fake, aihc, alice, settings
):
    """Until left48 the look for what the create of a job left Submitting made (the worker
    died sending it) that AIHC refused was made again at every sync, for ever, saying
    nothing. It now waits for the job's own next look, the job Submitting (nothing is sent
    again before a look is answered), one event a look."""
    settings.AIHC_RETRIES = 0  # each 500 answers one look
    [job] = submit(alice, seed_spec())
    stuck_in_submitting(job)
    created = made_late(fake, job)  # the dead worker's create was made
    fake.fail_next("DescribeJobs", status=500, code="InternalError", message="list down", times=2)

    aihc.sync(job)

    job.refresh_from_db()
    assert (job.status, job.external_id) == (JobStatus.SUBMITTING, "")
    refused = job.events.get(reason="LookRefused")
    assert refused.type == "Warning"
    assert refused.message_shown.startswith(
        "AIHC refused the look for the job its interrupted submission may have made: "
    )
    assert refused.message_shown.endswith("; nothing is sent again before AIHC answers the look.")
    events = job.events.count()
    for _ in range(3):  # the worker's next syncs and a hand-back, before the job's time
        aihc.sync(job)
        aihc.submit(job)
        job.refresh_from_db()
    assert len(fake.calls("DescribeJobs")) == 1 and job.events.count() == events
    refused_looks_earlier(job, seconds=31)
    aihc.sync(job)  # its time: refused again
    refused_looks_earlier(job, seconds=31)
    aihc.sync(job)  # not its time: the wait doubled
    job.refresh_from_db()
    assert len(fake.calls("DescribeJobs")) == 2
    assert [e.reason for e in job.events.order_by("pk")[events:]] == ["LookRefused"]
    refused_looks_earlier(job, seconds=30)

    aihc.sync(job)  # AIHC answers the look: what the create made is adopted, not made again

    job.refresh_from_db()
    assert job.external_id == created.job_id
    assert fake.calls("CreateJob") == [] and len(fake.jobs) == 1


def test_a_stuck_submit_whose_look_aihc_refused_says_why_in_the_list_and_on_delete(
    fake, aihc, alice, alice_en
):
    """Until lookfix such a job showed a bare Submitting in the list and on its page, and
    Delete said it was being sent right now, to wait a moment, for up to an hour."""
    from django.urls import reverse

    from jobs.actions import job_delete_refusal

    [job] = submit(alice, seed_spec())
    stuck_in_submitting(job)
    fake.fail_next("DescribeJobs", status=403, code="AccessDenied", message="no list")

    aihc.sync(job)

    job.refresh_from_db()
    assert job.status == JobStatus.SUBMITTING
    assert job.status_reason_shown == job.events.get(reason="LookRefused").message_shown
    listed = alice_en.get(reverse("job-list")).content.decode()
    row = listed[listed.index(f'data-job="{job.public_id}"') :]
    row = row[: row.index("</tr>")]
    assert "job-status-reason" in row
    assert "AIHC refused the look for the job its interrupted submission may have made" in row
    assert job_delete_refusal(job).startswith(
        "The job is being looked for on its platform: its submission was interrupted"
    )


def test_a_look_for_a_stuck_submit_aihc_has_refused_for_an_hour_fails_the_job_saying_where_to_look(
    fake, aihc, alice
):
    [job] = submit(alice, seed_spec())
    stuck_in_submitting(job)
    fake.fail_next("DescribeJobs", status=403, code="AccessDenied", times=2)
    aihc.sync(job)
    refused_looks_earlier(job, seconds=3600)

    aihc.sync(job)  # refused again, an hour after the first

    job.refresh_from_db()
    assert job.status == JobStatus.SUBMIT_FAILED
    assert job.status_reason_shown.endswith(
        f"look in pool {POOL} for a job named {job.name} labelled "
        f"ai-job-console/job-id={job.public_id}. Submit again looks for it first and follows it "
        "as this job; to drop it instead, stop it there."
    )
    assert fake.calls("CreateJob") == []


def test_a_job_stopped_while_a_dead_worker_left_it_submitting_is_looked_for_and_stopped_on_aihc(
    fake, aihc, alice
):
    """qa73: a job a worker died sending (left Submitting; since left48 kept so for up to an
    hour while AIHC refuses the look) is stopped by its owner. Its create left no
    SubmitTimedOut event, so until lookfix the stop's look (AihcBackend._finish_stop_in_flight)
    was never made: the job ended "Stopped before AIHC created the job." while the job the
    create made ran on AIHC, untracked."""
    from jobs.actions import job_stop

    [job] = submit(alice, seed_spec())
    stuck_in_submitting(job)
    created = made_late(fake, job)  # the dead worker's create was made
    job_stop(job=job, actor=alice)
    Job.objects.filter(pk=job.pk).update(updated_at=timezone.now() - timedelta(minutes=5))
    job.refresh_from_db()

    for _ in range(2):  # found and adopted, then its stop sent
        aihc.sync(job)
        job.refresh_from_db()

    assert job.status_reason_shown != "Stopped before AIHC created the job."
    assert job.external_id == created.job_id
    assert [call.route["job"] for call in fake.calls("StopJob")] == [created.job_id]


def given_up_on_refused_looks(fake, aihc, alice, settings, *, made: bool) -> Job:
    """A job whose create AIHC answered with a 502 (`made`: after creating it) and whose looks
    for it AIHC refused for an hour: Submit failed, saying where to look."""
    settings.AIHC_RETRIES = 0  # each 502 and 403 answers one request
    if made:
        fake.fail_after_next("CreateJob", status=502, code="BadGateway")
    else:
        fake.fail_next("CreateJob", status=502, code="BadGateway")
    fake.fail_next("DescribeJobs", status=403, code="AccessDenied", times=2)
    [job] = submit(alice, seed_spec())
    aihc.submit(job)
    refused_looks_earlier(job, seconds=3600)
    aihc.submit(job)  # refused again, an hour after the first: given up
    job.refresh_from_db()
    assert job.status == JobStatus.SUBMIT_FAILED
    return job


def submission_an_hour_ago(fake, job: Job) -> None:
    """The job's events and what AIHC has were made an hour ago (the submission given up
    lasted that long): its create is past the wait a slow create gets, as it is for real."""
    job.events.update(created_at=F("created_at") - timedelta(hours=1))
    with fake.lock:
        for made in fake.jobs.values():
            made.created_at = (timezone.now() - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_submit_again_after_the_looks_were_given_up_takes_what_the_unclear_create_made(
    fake, aihc, alice, settings
):
    """qa73: a job given up after an hour of refused looks and submitted again once AIHC
    answers again was created a second time, the first job (made by the unclear create)
    running on AIHC untracked: Submit again sent a create without a look (its unanswered
    creates were counted in the submission that ended). On Kubernetes the same Submit again
    adopts the first (the create's 409 by name)."""
    from jobs.actions import job_submit_again

    job = given_up_on_refused_looks(fake, aihc, alice, settings, made=True)
    [made] = list(fake.jobs)

    job_submit_again(job=job, actor=alice)  # AIHC answers looks again
    job.refresh_from_db()
    aihc.submit(job)

    job.refresh_from_db()
    assert list(fake.jobs) == [made]
    assert job.external_id == made


def test_submit_again_whose_look_gets_no_answer_stays_queued_and_sends_no_create(
    fake, aihc, alice, settings
):
    from jobs.actions import job_submit_again

    job = given_up_on_refused_looks(fake, aihc, alice, settings, made=True)
    job_submit_again(job=job, actor=alice)
    job.refresh_from_db()
    fake.drop_next("DescribeJobs")

    aihc.submit(job)

    job.refresh_from_db()
    assert (job.status, job.external_id) == (JobStatus.QUEUED, "")
    with translation.override("en"):
        assert job.status_reason_shown.startswith(
            "AIHC did not answer the look for the job the last submission may have made: "
        )
    assert len(fake.calls("CreateJob")) == 1
    submit_pause_over(aihc)
    aihc.submit(job)  # AIHC answers the look
    job.refresh_from_db()
    assert job.external_id == next(iter(fake.jobs)) and len(fake.jobs) == 1


def test_a_job_given_up_submitted_again_and_stopped_while_queued_stops_what_aihc_made_there(
    fake, aihc, alice, settings
):
    """left49: Submit again looks for what the given-up submission made before it sends a
    create; stopped while Queued, before that look, the job had no unanswered create in its
    submission, so it was Stopped at once, unlooked-for, and the job AIHC had made ran on,
    untracked and billed. It is Stopping now; the worker looks for it and stops it there."""
    from jobs.actions import job_stop, job_submit_again

    job = given_up_on_refused_looks(fake, aihc, alice, settings, made=True)
    [made] = list(fake.jobs)
    submission_an_hour_ago(fake, job)
    job_submit_again(job=job, actor=alice)
    job.refresh_from_db()
    assert (job.status, job.external_id) == (JobStatus.QUEUED, "")

    job_stop(job=job, actor=alice)

    job.refresh_from_db()
    assert job.status == JobStatus.STOPPING
    assert "the worker looks for it and stops it" in job.status_reason_shown
    aihc.sync(job)  # found by its label, adopted, its stop sent
    job.refresh_from_db()
    assert job.external_id == made
    assert [call.route["job"] for call in fake.calls("StopJob")] == [made]
    aihc.sync(job)  # AIHC reports it stopped
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPED
    assert len(fake.calls("CreateJob")) == 1 and list(fake.jobs) == [made]


def test_a_job_given_up_submitted_again_and_stopped_ends_stopped_once_aihc_shows_none(
    fake, aihc, alice, settings
):
    from jobs.actions import job_stop, job_submit_again

    job = given_up_on_refused_looks(fake, aihc, alice, settings, made=False)
    assert fake.jobs == {}
    submission_an_hour_ago(fake, job)
    job_submit_again(job=job, actor=alice)
    job.refresh_from_db()
    job_stop(job=job, actor=alice)
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPING
    looks = len(fake.calls("DescribeJobs"))

    aihc.sync(job)

    job.refresh_from_db()
    assert len(fake.calls("DescribeJobs")) == looks + 1  # looked for, then ended
    assert job.status == JobStatus.STOPPED
    assert job.status_reason_shown == "Stopped before AIHC created the job."
    assert len(fake.calls("CreateJob")) == 1 and fake.calls("StopJob") == []


def test_deleting_a_job_submitted_again_after_its_looks_were_given_up_stops_it_and_keeps_it(
    fake, aihc, alice, settings
):
    """Deleting the row at once, as until left49, would leave what the given-up submission
    made running on AIHC with nothing tracking it."""
    from jobs.actions import ActionError, job_delete, job_submit_again

    job = given_up_on_refused_looks(fake, aihc, alice, settings, made=True)
    job_submit_again(job=job, actor=alice)
    job.refresh_from_db()

    with pytest.raises(ActionError, match="The job was stopped, not deleted: a create of it"):
        job_delete(job=job)

    job.refresh_from_db()
    assert job.status == JobStatus.STOPPING and len(fake.jobs) == 1


def given_up_and_held_for_review(fake, aihc, alice, settings, *, made: bool) -> Job:
    """A job given up on refused looks (given_up_on_refused_looks) that Submit again held for
    review, the review policy asking for every job: Pending review, not sent."""
    from jobs.actions import job_submit_again
    from jobs.models import ReviewMode, ReviewPolicy

    job = given_up_on_refused_looks(fake, aihc, alice, settings, made=made)
    submission_an_hour_ago(fake, job)
    ReviewPolicy.objects.create(pk=1, mode=ReviewMode.ALL)
    job_submit_again(job=job, actor=alice)
    job.refresh_from_db()
    assert (job.status, job.external_id) == (JobStatus.PENDING_REVIEW, "")
    return job


def test_a_job_given_up_held_for_review_and_stopped_is_withdrawn_and_what_aihc_made_stopped(
    fake, aihc, alice, settings
):
    """left51: Pending review went only to Stopped, so the Stop of a job Submit again held
    for review withdrew it and Stopped it at once, unlooked-for: the job the given-up
    submission made ran on AIHC, untracked and billed. It is withdrawn and Stopping now; the
    worker looks for it and stops it there."""
    from jobs.actions import job_stop
    from jobs.models import ReviewState

    job = given_up_and_held_for_review(fake, aihc, alice, settings, made=True)
    [made] = list(fake.jobs)

    assert job_stop(job=job, actor=alice)

    job.refresh_from_db()
    assert (job.status, job.review_state) == (JobStatus.STOPPING, ReviewState.WITHDRAWN)
    assert "the worker looks for it and stops it" in job.status_reason_shown
    aihc.sync(job)  # found by its label, adopted, its stop sent
    job.refresh_from_db()
    assert job.external_id == made
    assert [call.route["job"] for call in fake.calls("StopJob")] == [made]
    aihc.sync(job)  # AIHC reports it stopped
    job.refresh_from_db()
    assert (job.status, job.review_state) == (JobStatus.STOPPED, ReviewState.WITHDRAWN)
    assert len(fake.calls("CreateJob")) == 1 and list(fake.jobs) == [made]


def test_a_job_given_up_held_for_review_and_stopped_ends_stopped_once_aihc_shows_none(
    fake, aihc, alice, settings
):
    from jobs.actions import job_stop
    from jobs.models import ReviewState

    job = given_up_and_held_for_review(fake, aihc, alice, settings, made=False)
    assert fake.jobs == {}
    job_stop(job=job, actor=alice)
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPING
    looks = len(fake.calls("DescribeJobs"))

    aihc.sync(job)

    job.refresh_from_db()
    assert len(fake.calls("DescribeJobs")) == looks + 1  # looked for, then ended
    assert (job.status, job.review_state) == (JobStatus.STOPPED, ReviewState.WITHDRAWN)
    assert job.status_reason_shown == "Stopped before AIHC created the job."
    assert len(fake.calls("CreateJob")) == 1 and fake.calls("StopJob") == []


def test_a_job_given_up_held_for_review_whose_stop_look_aihc_refuses_waits_its_turn(
    fake, aihc, alice, settings
):
    """Its look is paced as the others' are: refused, the job stays Stopping and is not
    looked for again before its wait has passed."""
    from jobs.actions import job_stop

    job = given_up_and_held_for_review(fake, aihc, alice, settings, made=True)
    job_stop(job=job, actor=alice)
    job.refresh_from_db()
    fake.fail_next("DescribeJobs", status=403, code="AccessDenied")
    aihc.sync(job)  # refused
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPING
    looks = len(fake.calls("DescribeJobs"))

    aihc.sync(job)  # the refused look's 30 s have not passed

    assert len(fake.calls("DescribeJobs")) == looks
    refused_looks_earlier(job, seconds=31)
    aihc.sync(job)
    job.refresh_from_db()
    assert job.external_id == next(iter(fake.jobs))


def test_deleting_a_job_given_up_and_held_for_review_withdraws_it_stops_it_and_keeps_it(
    fake, aihc, alice, settings
):
    from jobs.actions import ActionError, job_delete
    from jobs.models import ReviewState

    job = given_up_and_held_for_review(fake, aihc, alice, settings, made=True)

    with pytest.raises(ActionError, match="The job was stopped, not deleted: a create of it"):
        job_delete(job=job)

    job.refresh_from_db()
    assert (job.status, job.review_state) == (JobStatus.STOPPING, ReviewState.WITHDRAWN)
    assert len(fake.jobs) == 1


def test_a_job_held_for_review_on_its_first_submit_is_still_withdrawn_and_stopped_at_once(
    fake, aihc, alice
):
    """Only a job whose last submission was given up goes Stopping out of review: one never
    sent to AIHC is Stopped at once, asking AIHC nothing."""
    from jobs.actions import job_stop
    from jobs.models import ReviewMode, ReviewPolicy, ReviewState

    ReviewPolicy.objects.create(pk=1, mode=ReviewMode.ALL)
    [job] = submit(alice, seed_spec())
    assert job.status == JobStatus.PENDING_REVIEW

    assert job_stop(job=job, actor=alice)

    job.refresh_from_db()
    assert (job.status, job.review_state) == (JobStatus.STOPPED, ReviewState.WITHDRAWN)
    assert fake.calls("DescribeJobs") == [] and fake.calls("StopJob") == []


def test_a_stuck_submit_given_up_submitted_again_and_stopped_is_looked_for_from_its_start(
    fake, aihc, alice
):
    """The given-up submission was one a worker died sending (no unanswered create event);
    Submit again's look was refused, then the job stopped. The stop's look waits for the
    job's own time (look_wait), and looks from the given-up submission's start: from this
    submission's, it missed the job AIHC made an hour before, and ended the job Stopped."""
    from jobs.actions import job_stop, job_submit_again

    [job] = submit(alice, seed_spec())
    stuck_in_submitting(job)
    made = made_late(fake, job).job_id  # the dead worker's create was made
    fake.fail_next("DescribeJobs", status=403, code="AccessDenied", times=2)
    aihc.sync(job)
    refused_looks_earlier(job, seconds=3600)
    aihc.sync(job)  # refused again, an hour after the first: given up
    job.refresh_from_db()
    assert job.status == JobStatus.SUBMIT_FAILED
    submission_an_hour_ago(fake, job)
    job_submit_again(job=job, actor=alice)
    job.refresh_from_db()
    fake.fail_next("DescribeJobs", status=403, code="AccessDenied")
    aihc.submit(job)  # Submit again's look for what the given-up submission made: refused
    job.refresh_from_db()
    assert (job.status, job.external_id) == (JobStatus.QUEUED, "")

    job_stop(job=job, actor=alice)

    job.refresh_from_db()
    assert job.status == JobStatus.STOPPING
    # Past the wait a create that may still show up gets after the stop (STUCK_SUBMITTING).
    Job.objects.filter(pk=job.pk).update(updated_at=timezone.now() - timedelta(minutes=5))
    job.refresh_from_db()
    looks = len(fake.calls("DescribeJobs"))
    aihc.sync(job)  # the refused look's 30 s have not passed
    assert len(fake.calls("DescribeJobs")) == looks
    refused_looks_earlier(job, seconds=31)
    aihc.sync(job)  # found by its label, adopted, its stop sent
    job.refresh_from_db()
    assert job.external_id == made
    assert [call.route["job"] for call in fake.calls("StopJob")] == [made]
    assert fake.calls("CreateJob") == []


def test_a_job_aihc_no_longer_has_is_marked_failed(fake, aihc, alice):
    job = submitted(fake, aihc, alice)
    del fake.jobs[job.external_id]

    aihc.sync(job)

    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert job.external_id in job.status_reason


def test_a_job_aihc_no_longer_has_while_it_was_being_stopped_is_stopped_not_failed(
    fake, aihc, alice
):
    job = submitted(fake, aihc, alice)
    fake.set_job_status(job.external_id, "Running")
    aihc.sync(job)
    job.refresh_from_db()
    aihc.stop(job)  # AIHC answers the stop; the job is Stopping until AIHC says it ended
    del fake.jobs[job.external_id]  # ended and removed before the console's next look

    aihc.sync(job)

    job.refresh_from_db()
    assert job.status == JobStatus.STOPPED
    assert job.events.last().reason == "Stopped"


def started_minutes_ago(job: Job, minutes: int) -> None:
    """Moves the job's start back in time, so a timeout check does not race the clock."""
    Job.objects.filter(pk=job.pk).update(started_at=timezone.now() - timedelta(minutes=minutes))
    job.refresh_from_db()


def test_the_console_enforces_the_job_timeout_aihc_lacks(fake, aihc, alice):
    job = submitted(fake, aihc, alice, timeout_minutes=1)
    fake.set_job_status(job.external_id, "Running")
    aihc.sync(job)
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING  # within its limit
    started_minutes_ago(job, 2)

    aihc.sync(job)
    aihc.sync(job)

    job.refresh_from_db()
    assert job.status == JobStatus.TIMED_OUT
    assert len(fake.calls("StopJob")) == 1


@NO_CLEAR_ANSWER
def test_a_timeout_stop_aihc_gives_no_clear_answer_is_sent_again_at_most_once_a_minute(
    fake, aihc, alice, no_clear_answer
):
    job = submitted(fake, aihc, alice, timeout_minutes=1)
    fake.set_job_status(job.external_id, "Running")
    aihc.sync(job)
    started_minutes_ago(job, 2)
    no_clear_answer(fake)

    aihc.sync(job)  # past its limit: the console stops it, and AIHC gives no clear answer
    aihc.sync(job)  # the worker's next sync, within a minute: the stop is not sent again

    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING
    assert len(fake.calls("StopJob")) == 1
    aihc._stops_sent[job.pk] -= timedelta(minutes=2)  # a minute and more has passed
    aihc.sync(job)  # sent again, and this time AIHC takes it
    job.refresh_from_db()
    assert len(fake.calls("StopJob")) == 2
    assert job.status == JobStatus.TIMED_OUT


def test_a_timeout_stop_aihc_does_not_take_is_said_once_on_the_jobs_page(fake, aihc, alice):
    job = submitted(
        fake, aihc, alice, timeout_minutes=1, envs=[S.Env("TOKEN", "tok-secret-1", secret=True)]
    )
    fake.set_job_status(job.external_id, "Running")
    aihc.sync(job)
    started_minutes_ago(job, 2)
    fake.fail_next("StopJob", status=500, code="InternalError", message="no tok-secret-1", times=2)

    aihc.sync(job)
    aihc._stops_sent[job.pk] -= timedelta(minutes=2)
    aihc.sync(job)  # refused again: logged, not said twice

    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING
    assert len(fake.calls("StopJob")) == 2
    [said] = job.events.filter(reason="TimeoutStopFailed")
    assert said.type == "Warning"
    assert "1-minute limit" in said.message or "1 分钟" in said.message
    assert "InternalError" in said.message and "tok-secret-1" not in said.message
    aihc._stops_sent[job.pk] -= timedelta(minutes=2)
    aihc.sync(job)  # AIHC takes it
    job.refresh_from_db()
    assert job.status == JobStatus.TIMED_OUT


def test_a_job_aihc_reports_in_a_status_the_console_cannot_read_still_times_out(fake, aihc, alice):
    job = submitted(fake, aihc, alice, timeout_minutes=1)
    fake.set_job_status(job.external_id, "Running")
    aihc.sync(job)
    assert job.status == JobStatus.RUNNING
    fake.set_job_status(job.external_id, "Hibernating")
    started_minutes_ago(job, 2)  # past its limit

    aihc.sync(job)

    job.refresh_from_db()
    assert job.status == JobStatus.TIMED_OUT
    assert len(fake.calls("StopJob")) == 1


def test_instances_whose_pods_aihc_removed_are_not_left_running_on_a_finished_job(
    fake, aihc, alice
):
    job = submitted(
        fake, aihc, alice, roles=[S.Role("master", 1, A800, 8), S.Role("worker", 1, A800, 8)]
    )
    fake.set_job_status(job.external_id, "Running")
    aihc.sync(job)
    fake.jobs[job.external_id].pods = []  # the operator cleaned the pods up as the job ended
    fake.set_job_status(job.external_id, "Succeeded")

    aihc.sync(job)

    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED
    assert set(job.replicas.values_list("status", flat=True)) == {"stopped"}
    assert job.replicas.filter(finished_at__isnull=True).count() == 0


def pod_fails(fake, job: Job, role: str) -> None:
    """One pod of the AIHC job fails on its own, the others run on."""
    with fake.lock:
        for pod in fake.jobs[job.external_id].pods:
            if pod["replicaType"] == role:
                pod["podStatus"]["podPhase"] = "Failed"


def two_instances_running_one_failed(fake, aihc, alice) -> Job:
    job = submitted(
        fake, aihc, alice, roles=[S.Role("master", 1, A800, 8), S.Role("worker", 1, A800, 8)]
    )
    fake.set_job_status(job.external_id, "Running")
    aihc.sync(job)
    pod_fails(fake, job, "worker")
    aihc.sync(job)
    assert dict(job.replicas.values_list("role", "status")) == {
        "master": "running",
        "worker": "failed",
    }
    return job


def test_instances_aihc_reports_failed_after_the_consoles_stop_show_stopped(fake, aihc, alice):
    job = two_instances_running_one_failed(fake, aihc, alice)

    aihc.stop(job)  # AIHC ends the job and reports every pod Failed
    aihc.sync(job)

    job.refresh_from_db()
    assert job.status == JobStatus.STOPPED
    # The master ran until the stop; the worker had failed before it.
    assert dict(job.replicas.values_list("role", "status")) == {
        "master": "stopped",
        "worker": "failed",
    }


def test_a_stop_that_got_no_clear_answer_first_still_shows_its_instances_stopped(fake, aihc, alice):
    job = two_instances_running_one_failed(fake, aihc, alice)
    fake.fail_next("StopJob", status=500, code="InternalError")
    aihc.stop(job)
    stop_sent_minutes_ago(job, 2)

    aihc.sync(job)  # sent again, and AIHC takes it
    aihc.sync(job)

    job.refresh_from_db()
    assert job.status == JobStatus.STOPPED
    assert dict(job.replicas.values_list("role", "status")) == {
        "master": "stopped",
        "worker": "failed",
    }


def test_an_instance_that_failed_ran_again_and_was_stopped_shows_stopped(fake, aihc, alice):
    job = two_instances_running_one_failed(fake, aihc, alice)
    fake.set_job_status(job.external_id, "Running")  # AIHC ran the failed worker again
    aihc.sync(job)

    aihc.stop(job)
    aihc.sync(job)

    job.refresh_from_db()
    assert job.status == JobStatus.STOPPED
    assert set(job.replicas.values_list("status", flat=True)) == {"stopped"}


def test_instances_of_a_job_stopped_on_aihcs_side_show_what_aihc_reports(fake, aihc, alice):
    job = two_instances_running_one_failed(fake, aihc, alice)
    fake.set_job_status(job.external_id, "ManualTermination")  # stopped in AIHC's console

    aihc.sync(job)

    job.refresh_from_db()
    assert job.status == JobStatus.STOPPED
    assert set(job.replicas.values_list("status", flat=True)) == {"failed"}


def test_a_job_stopped_for_its_timeout_shows_no_instance_still_running(fake, aihc, alice):
    job = submitted(fake, aihc, alice, timeout_minutes=1)
    fake.set_job_status(job.external_id, "Running")
    aihc.sync(job)
    started_minutes_ago(job, 2)

    aihc.sync(job)  # Running, past its limit: stopped, and not followed any more

    job.refresh_from_db()
    assert job.status == JobStatus.TIMED_OUT
    assert list(job.replicas.values_list("status", flat=True)) == ["stopped"]


def test_a_stop_that_failed_after_adopting_an_in_flight_create_is_sent_again(fake, aihc, alice):
    [job] = submit(alice, seed_spec())
    stopped_during_an_unanswered_create(job, minutes_ago=3)
    created = made_late(fake, job)
    fake.set_job_status(created.job_id, "Running")
    fake.fail_next("StopJob", status=500, code="InternalError")

    aihc.sync(job)  # adopted; its stop did not go through
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPING and job.external_id == created.job_id
    aihc.sync(job)  # within a minute of the stop: not sent again yet
    assert len(fake.calls("StopJob")) == 1
    Job.objects.filter(pk=job.pk).update(updated_at=job.updated_at - timedelta(minutes=2))
    job.refresh_from_db()

    aihc.sync(job)
    aihc.sync(job)

    job.refresh_from_db()
    assert len(fake.calls("StopJob")) == 2
    assert fake.jobs[created.job_id].status == "ManualTermination"
    assert job.status == JobStatus.STOPPED


def test_a_pod_printing_a_stamp_and_the_runners_mark_is_not_shown_as_the_console(fake, aihc, alice):
    # AIHC's lines are all the job's: one printed as a local log's console line stays so.
    job = submitted(fake, aihc, alice, roles=[S.Role("master", 1, A800, 8)])
    fake.add_logs(
        job.external_id,
        "test-api-llama2-7b-4-master-0",
        ["2026-11-30T09:00:00.000000Z \x1f[console] exited with code 0"],
    )

    [line] = shown_lines(aihc.logs(job, "master-0", tail=5))

    assert line.console is False
    assert line.text == "[console] exited with code 0"


def test_logs_are_fetched_on_demand_per_replica(fake, aihc, alice):
    job = submitted(
        fake, aihc, alice, roles=[S.Role("master", 1, A800, 8), S.Role("worker", 1, A800, 8)]
    )
    fake.add_logs(job.external_id, "test-api-llama2-7b-4-worker-0", ["a", "b", "c"])

    assert aihc.logs(job, "worker-0", tail=2) == ["b", "c"]
    assert aihc.logs(job, "master-0") == []
    assert aihc.logs(job, "worker-7") == []


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_logs_from_a_time_on_send_aihc_that_time_in_whole_unix_seconds(
    fake, aihc, alice, settings, version
):
    # Review 18b: the API's DescribeJobLogs passes its startTime to the backend (sdk18),
    # and the fake answered every line whatever it was sent.
    settings.AIHC_POOL_API_VERSIONS = {POOL: version}
    job = submitted(fake, aihc, alice, roles=[S.Role("master", 1, A800, 8)])
    pod = "test-api-llama2-7b-4-master-0"
    fake.add_logs(job.external_id, pod, ["early"], at=1_700_000_000)
    fake.add_logs(job.external_id, pod, ["later", "last"], at=1_700_000_100)
    since = timezone.datetime.fromtimestamp(1_700_000_100.75, UTC)

    assert aihc.logs(job, "master-0", tail=5, since=since) == ["later", "last"]
    assert aihc.logs(job, "master-0", tail=1, since=since) == ["last"]
    [sent] = [r for r in fake.requests if r.op == "DescribeJobLogs"][:1]
    start = sent.params["startTime"] if version == "v1" else sent.body["startTime"]
    assert str(start) == "1700000100"


def test_a_job_aihc_deleted_after_its_retention_unseen_says_how_it_probably_went(
    fake, aihc, alice, settings
):
    settings.AIHC_POOL_API_VERSIONS = {POOL: "v2"}
    job = submitted(fake, aihc, alice, retention_period="1h")
    fake.set_job_status(job.external_id, "Running")
    aihc.sync(job)
    del fake.jobs[job.external_id]  # ended and deleted by AIHC while the worker was down

    aihc.sync(job)

    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert job.external_id in job.status_reason
    assert "1h" in job.status_reason and "不知道" in job.status_reason


def test_a_404_that_is_not_aihcs_job_not_found_leaves_the_job_alive(fake, aihc, alice):
    job = submitted(fake, aihc, alice)
    fake.fail_next("DescribeJob", status=404, code="NotFound", times=1)  # e.g. a gateway

    with pytest.raises(BackendError):
        aihc.sync(job)

    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED
    del fake.jobs[job.external_id]  # now AIHC really has no such job
    aihc.sync(job)
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED


def test_a_log_tail_for_a_page_is_one_short_try_and_a_download_keeps_its_retries(
    fake, aihc, alice, settings
):
    settings.AIHC_PAGE_READ_TIMEOUT = 0.3
    settings.AIHC_DOWNLOAD_READ_TIMEOUT = 0.3  # (a download's own wait since the download work)
    settings.AIHC_RETRY_BACKOFF = 0.01
    job = submitted(fake, aihc, alice)
    pod = "test-api-llama2-7b-4-master-0"
    fake.add_logs(job.external_id, pod, ["hello"])
    fake.delay_next("DescribeJobLogs", 1.0, times=20)

    def tries() -> int:
        return sum(1 for r in fake.requests if r.op == "DescribeJobLogs")

    with pytest.raises(BackendError):
        aihc.logs(job, "master-0", tail=200)
    page_tries = tries()
    with pytest.raises(BackendError):
        aihc.logs(job, "master-0")
    assert page_tries == 1
    assert tries() - page_tries == 1 + settings.AIHC_RETRIES


def test_deleting_a_job_the_worker_began_sending_since_the_page_loaded_is_refused(
    fake, aihc, alice
):
    from jobs.actions import ActionError, job_delete

    [job] = submit(alice, seed_spec())
    as_the_page_saw_it = Job.objects.get(pk=job.pk)  # Queued, nothing sent yet
    job_transition(job=job, to=JobStatus.SUBMITTING, reason="Submitting")  # the worker

    with pytest.raises(ActionError):
        job_delete(job=as_the_page_saw_it)

    job.refresh_from_db()  # kept, so the create's answer finds it and stops what it made
    assert job.status == JobStatus.STOPPING


def test_delete_removes_the_job_from_aihc(fake, aihc, alice):
    job = submitted(fake, aihc, alice)
    aihc.delete(job)
    assert fake.jobs == {}
    aihc.delete(job)  # already gone: not an error


# -- secrets --------------------------------------------------------------------------------


def test_a_line_of_a_multi_line_secret_quoted_by_an_aihc_error_is_masked(fake, aihc, alice):
    spec = seed_spec()
    spec.envs = [
        *spec.envs,
        S.Env("SA_KEY", "-----BEGIN-----\nc2VjcmV0LWtleS1ib2R5\n-----END-----", secret=True),
    ]
    fake.fail_next(
        "CreateJob", status=400, code="InvalidEnv", message="cannot parse line c2VjcmV0LWtleS1ib2R5"
    )
    [job] = submit(alice, spec)

    aihc.submit(job)

    job.refresh_from_db()
    assert "cannot parse line ******" in job.status_reason
    assert not JobEvent.objects.filter(job=job, message__contains="c2VjcmV0LWtleS1ib2R5").exists()


def test_secrets_reach_aihc_but_never_logs_events_or_reasons(fake, aihc, alice, caplog):
    spec = seed_spec()
    spec.image_config = S.ImageConfig("robot", "registry-pa55word")
    spec.envs = [*spec.envs, S.Env("HF_TOKEN", "hf_s3cr3t_t0ken", secret=True)]
    fake.fail_next(
        "CreateJob",
        status=400,
        code="InvalidImageConfig",
        message="login to registry failed for robot:registry-pa55word (token hf_s3cr3t_t0ken)",
    )
    [job] = submit(alice, spec)
    caplog.set_level(logging.DEBUG)

    aihc.submit(job)
    job.refresh_from_db()
    job_transition(job=job, to=JobStatus.QUEUED, reason="Resubmitted")
    aihc.submit(job)
    job.refresh_from_db()
    fake.set_job_status(job.external_id, "Running")
    fake.jobs[job.external_id].events.append(
        fake._event("Pulled", "pulled with registry-pa55word", "Warning")
    )
    aihc.sync(job)

    [first, second] = fake.calls("CreateJob")
    assert second.body["jobSpec"]["imageConfig"]["password"] == "registry-pa55word"
    assert {"name": "HF_TOKEN", "value": "hf_s3cr3t_t0ken"} in second.body["jobSpec"]["envs"]
    texts = [job.status_reason, *JobEvent.objects.filter(job=job).values_list("message", flat=True)]
    texts += [r.getMessage() for r in caplog.records]
    assert any("******" in t for t in texts)
    for secret in ("registry-pa55word", "hf_s3cr3t_t0ken", fake.secret_key):
        assert not any(secret in t for t in texts), secret


# -- settings ----------------------------------------------------------------------------


def test_settings_read_credentials_from_files_and_per_pool_versions(tmp_path):
    secret = tmp_path / "aihc_sk"
    secret.write_text("sk-from-a-file\n")
    env = {
        **os.environ,
        "CONSOLE_VAR_DIR": str(tmp_path),
        "AIHC_ACCESS_KEY": "ak-from-env",
        "AIHC_SECRET_KEY_FILE": str(secret),
        "AIHC_POOL_API_VERSIONS": "cce-a=v2, cce-b = V1",
        "AIHC_REGION": "cn-suzhou",
    }
    env.pop("AIHC_SECRET_KEY", None)
    script = (
        "import json; from console import settings as s; print(json.dumps([s.AIHC_ACCESS_KEY, "
        "s.AIHC_SECRET_KEY, s.AIHC_POOL_API_VERSIONS, s.AIHC_REGION, s.AIHC_API_VERSION]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    ).stdout

    assert json.loads(out) == [
        "ak-from-env",
        "sk-from-a-file",
        {"cce-a": "v2", "cce-b": "v1"},
        "cn-suzhou",
        "v1",
    ]


def test_reading_aihcs_pools_keeps_their_names_once_per_change(
    fake, aihc, settings, django_assert_num_queries
):
    from jobs.models import KnownPool

    settings.AIHC_CACHE_SECONDS = 0  # every read asks AIHC again
    aihc.pools()
    kept = dict(KnownPool.objects.values_list("pool_id", "name"))
    # The same names again: nothing written (two reads, to be sure one finished in between).
    with django_assert_num_queries(0):
        aihc.pools()
        aihc.pools()
    with fake.lock:
        fake.pools[POOL]["name"] = "训练池二期"
        del fake.pools["cce-pool2"]
    for _ in range(20):  # a refresh runs in the background: the next read after it keeps
        aihc.pools()
        if KnownPool.objects.get(pool_id=POOL).name != "训练池":
            break
        time.sleep(0.1)

    assert kept == {POOL: "训练池", "cce-pool2": "推理池"}
    # Renamed: the new name; gone from AIHC: its last name stays, for its jobs.
    assert dict(KnownPool.objects.values_list("pool_id", "name")) == {
        POOL: "训练池二期",
        "cce-pool2": "推理池",
    }
    assert set(KnownPool.objects.values_list("backend", flat=True)) == {"aihc"}


# -- a staff member's Stop reason (fix108) ----------------------------------------------

STAFF_REASON = "The A800 pool is drained for maintenance tonight."


def test_a_running_job_staff_stopped_with_a_reason_ends_with_it_once_aihc_reports_it_stopped(
    fake, aihc, alice, reviewer
):
    """qa98 made a staff Stop's reason the reason a local job ends with; an AIHC job's sync
    then replaced it with "AIHC reports ...". It stays, in the reader's language, and AIHC's
    words are its Stopped event's."""
    from jobs.actions import job_stop

    job = submitted(fake, aihc, alice)
    fake.set_job_status(job.external_id, "Running")
    aihc.sync(job)

    assert job_stop(job=job, actor=reviewer, reason=STAFF_REASON)
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPING
    aihc.sync(job)

    job.refresh_from_db()
    assert job.status == JobStatus.STOPPED
    with translation.override("en"):
        assert job.status_reason_shown == f"Stopped by carol: {STAFF_REASON}"
    with translation.override("zh-hans"):
        assert job.status_reason_shown == f"已由 carol 停止：{STAFF_REASON}"
    [stopped] = job.events.filter(reason="Stopped")
    assert stopped.message_shown == "AIHC reports ManualTermination."
    assert len(fake.calls("StopJob")) == 1


def test_a_queued_job_on_aihc_staff_stopped_with_a_reason_ends_with_it_at_once(
    fake, aihc, alice, reviewer
):
    from jobs.actions import job_stop

    job = submitted(fake, aihc, alice)
    assert job.status == JobStatus.QUEUED

    assert job_stop(job=job, actor=reviewer, reason=STAFF_REASON)

    job.refresh_from_db()
    assert job.status == JobStatus.STOPPED
    assert job.status_reason_shown == f"Stopped by carol: {STAFF_REASON}"
    assert [e.message_shown for e in job.events.filter(reason="Stopped")] == [
        job.status_reason_shown
    ]


def test_a_staff_stop_aihc_refused_leaves_no_reason_for_an_end_aihc_reports_later(
    fake, aihc, alice, reviewer
):
    """The job ran on; stopped later on AIHC itself, it ends with AIHC's words, not with the
    reason of a stop that did not happen."""
    from jobs.actions import ActionError, job_stop

    job = submitted(fake, aihc, alice)
    fake.set_job_status(job.external_id, "Running")
    aihc.sync(job)
    fake.fail_next("StopJob", status=400, code="JobStateConflict", message="job is terminating")
    with pytest.raises(ActionError):
        job_stop(job=job, actor=reviewer, reason=STAFF_REASON)
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING

    fake.set_job_status(job.external_id, "ManualTermination")
    aihc.sync(job)

    job.refresh_from_db()
    assert job.status == JobStatus.STOPPED
    assert job.status_reason_shown == "AIHC reports ManualTermination."
    assert job.stop_reason == ""
