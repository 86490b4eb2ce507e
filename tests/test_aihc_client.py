"""The AIHC httpx client against the strict fake: signing, shapes, errors and retries."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import pytest
from django.utils import translation

from jobs.aihc import signer
from jobs.aihc.client import (
    AihcClient,
    AihcError,
    AihcTimeout,
    AihcUnavailable,
    Credentials,
)
from jobs.aihc.endpoints import REGION_HOSTS, endpoint_for
from jobs.aihc.mapping import v2_from_v1
from jobs.backends.base import got_no_answer
from tests.fake_aihc import FakeAihc

SEED = json.loads((Path(__file__).parent / "data" / "seed001_create_job_request.json").read_text())
A800 = "baidu.com/a800_80g_cgpu"


@pytest.fixture
def fake():
    fake = FakeAihc().start()
    fake.add_pool(
        "cce-pool1", "训练池", queues=("default", "research"), gpus={A800: (16, 6)}, pfs="pfs-7x"
    )
    yield fake
    fake.stop()


def make_client(fake: FakeAihc, **kwargs) -> tuple[AihcClient, list[float]]:
    sleeps: list[float] = []
    options = {
        "endpoint": fake.url,
        "credentials": Credentials(fake.access_key, fake.secret_key),
        "sleep": sleeps.append,
        "backoff": 0.5,
        **kwargs,
    }
    return AihcClient(**options), sleeps


def test_regions_map_to_the_documented_hosts():
    assert endpoint_for(region="cn-beijing") == "https://aihc.bj.baidubce.com"
    assert endpoint_for(region="cn-wuhan") == "https://aihc.fwh.baidubce.com"
    assert {
        r: endpoint_for(region=r).removeprefix("https://") for r in REGION_HOSTS
    } == REGION_HOSTS
    assert len(REGION_HOSTS) == 6


def test_an_explicit_endpoint_wins_over_the_region():
    assert endpoint_for(region="cn-beijing", endpoint="http://127.0.0.1:8900/") == (
        "http://127.0.0.1:8900"
    )


def test_it_refuses_an_unknown_region_or_a_non_http_endpoint():
    with pytest.raises(ValueError, match="cn-mars"):
        endpoint_for(region="cn-mars")
    with pytest.raises(ValueError):
        endpoint_for(endpoint="ftp://example.com")


def test_it_creates_the_seed_job_with_the_exact_body_and_a_signed_query(fake):
    client, _ = make_client(fake)

    result = client.create_job(pool="cce-pool1", body=SEED)

    assert result["jobName"] == "test-api-llama2-7b-4"
    assert result["jobId"].startswith("pytorchjob-")
    [call] = fake.calls("CreateJob")
    assert call.status == 200
    assert call.body == SEED
    assert call.params == {"resourcePoolId": "cce-pool1"}
    # What was sent is the canonical query that was signed, and the port is in the host.
    assert call.raw_query == signer.canonical_query([("resourcePoolId", "cce-pool1")])
    assert call.headers["host"] == fake.url.removeprefix("http://")
    auth = call.headers["authorization"].split("/")
    assert auth[3] == "1800"
    assert set(auth[4].split(";")) >= {"host", "x-bce-date"}
    assert call.headers["x-bce-date"] == auth[2]
    assert "x-api-version" not in call.headers


def test_it_sends_v2_calls_as_actions_with_the_version_header(fake):
    client, _ = make_client(fake)
    body = v2_from_v1(SEED)

    result = client.create_job(pool="cce-pool1", body=body, version="v2")

    [call] = fake.calls("CreateJob")
    assert call.version == "v2" and call.status == 200
    assert call.params == {
        "action": "CreateJob",
        "resourcePoolId": "cce-pool1",
        "queueID": "default",
    }
    assert call.headers["x-api-version"] == "v2"
    assert call.body == body
    assert fake.jobs[result["jobId"]].body["command"] == SEED["jobSpec"]["command"]


def test_it_reads_pools_queues_and_idle_cards_in_both_versions(fake):
    client, _ = make_client(fake)
    for version in ("v1", "v2"):
        [pool] = client.resource_pools(version=version)
        assert pool["id"] == "cce-pool1"
        assert pool["name"] == "训练池"
        assert pool["accelerators"] == {A800: (16, 10)}
        assert pool["pfs"] == ["pfs-7x"]
        # The root queue AIHC lists in every pool is not offered.
        assert client.queues(pool="cce-pool1", version=version) == ["default", "research"]


def test_it_normalises_jobs_pods_events_and_logs_in_both_versions(fake):
    client, _ = make_client(fake)
    body = {**SEED, "jobSpec": {**SEED["jobSpec"], "replicas": 3}}
    for version in ("v1", "v2"):
        sent = body if version == "v1" else v2_from_v1(body)
        job_id = client.create_job(pool="cce-pool1", body=sent, version=version)["jobId"]
        fake.set_job_status(job_id, "Running", restarts=1)
        fake.add_logs(job_id, "test-api-llama2-7b-4-worker-1", ["step 1", "step 2", "step 3"])

        job = client.get_job(pool="cce-pool1", job_id=job_id, version=version)
        assert job["jobId"] == job_id
        assert job["status"] == "Running"
        assert [(p["replicaType"], p["name"][-8:], p["phase"]) for p in job["pods"]] == [
            ("master", "master-0", "Running"),
            ("worker", "worker-0", "Running"),
            ("worker", "worker-1", "Running"),
        ]
        assert job["pods"][0]["restartCount"] == 1
        listed = client.list_jobs(pool="cce-pool1", name="test-api-llama2-7b-4", version=version)
        assert job_id in [j["jobId"] for j in listed]
        reasons = [
            e["reason"]
            for e in client.job_events(
                pool="cce-pool1", job_id=job_id, framework="PyTorchJob", version=version
            )
        ]
        assert reasons == ["Created", "Running"]
        logs = client.pod_logs(
            pool="cce-pool1",
            job_id=job_id,
            pod="test-api-llama2-7b-4-worker-1",
            max_lines=2,
            version=version,
        )
        assert logs == ["step 2", "step 3"]
        client.stop_job(pool="cce-pool1", job_id=job_id, version=version)
        assert fake.jobs[job_id].status == "ManualTermination"
        client.delete_job(pool="cce-pool1", job_id=job_id, version=version)
        assert job_id not in fake.jobs


def test_a_wrong_secret_key_is_denied_with_the_bce_error(fake):
    client, _ = make_client(fake, credentials=Credentials(fake.access_key, "not-the-key"))

    with pytest.raises(AihcError) as caught:
        client.queues(pool="cce-pool1")

    assert caught.value.status == 403
    assert caught.value.code == "AccessDenied"
    assert caught.value.request_id
    assert "not-the-key" not in repr(caught.value) + str(caught.value)


def test_an_unknown_access_key_is_denied(fake):
    client, _ = make_client(fake, credentials=Credentials("someone-else", fake.secret_key))
    with pytest.raises(AihcError) as caught:
        client.resource_pools()
    assert caught.value.code == "AccessDenied"


def test_an_expired_signature_is_denied(fake):
    client, _ = make_client(fake, clock=lambda: time.time() - 1801)
    with pytest.raises(AihcError) as caught:
        client.resource_pools()
    assert (caught.value.status, caught.value.code) == (403, "AccessDenied")
    # The same request signed now passes.
    assert make_client(fake)[0].resource_pools()


def test_a_request_changed_after_signing_is_denied(fake):
    timestamp = signer.canonical_time(time.time())
    host = fake.url.removeprefix("http://")
    headers = {"Host": host, "x-bce-date": timestamp}
    headers["Authorization"] = signer.authorization(
        access_key=fake.access_key,
        secret_key=fake.secret_key,
        method="GET",
        path="/api/v1/aijobs",
        params=[("resourcePoolId", "cce-pool1")],
        headers=headers,
        timestamp=timestamp,
        signed_header_names=["host", "x-bce-date"],
    )
    signed = httpx.get(f"{fake.url}/api/v1/aijobs?resourcePoolId=cce-pool1", headers=headers)
    tampered = httpx.get(f"{fake.url}/api/v1/aijobs?resourcePoolId=cce-other", headers=headers)

    assert signed.status_code == 200
    assert tampered.status_code == 403
    assert tampered.json()["code"] == "AccessDenied"
    assert tampered.json()["requestId"]


def test_platform_errors_carry_code_message_and_request_id(fake):
    fake.fail_next("CreateJob", status=400, code="QuotaExceeded", message="队列 default 配额不足")
    client, _ = make_client(fake)

    with pytest.raises(AihcError) as caught:
        client.create_job(pool="cce-pool1", body=SEED)

    error = caught.value
    assert (error.status, error.code, error.message) == (
        400,
        "QuotaExceeded",
        "队列 default 配额不足",
    )
    assert error.request_id == fake.calls("CreateJob")[0].request_id
    assert str(error).startswith("队列 default 配额不足 (QuotaExceeded, HTTP 400, requestId ")


def test_the_fake_checks_required_fields_like_aihc(fake):
    client, _ = make_client(fake)
    no_image = {**SEED, "jobSpec": {**SEED["jobSpec"], "image": ""}}
    with pytest.raises(AihcError) as caught:
        client.create_job(pool="cce-pool1", body=no_image)
    assert caught.value.code == "InvalidParameter"
    with pytest.raises(AihcError) as caught:
        client.create_job(pool="cce-missing", body=SEED)
    assert caught.value.code == "ResourcePoolNotFound"
    assert fake.jobs == {}


def test_reads_are_retried_with_backoff_on_500_and_503(fake):
    fake.fail_next("DescribeResourcePools", status=503, code="ServiceUnavailable", times=2)
    fake.fail_next("DescribeResourcePools", status=500)
    client, sleeps = make_client(fake)

    [pool] = client.resource_pools()

    assert pool["id"] == "cce-pool1"
    assert [c.status for c in fake.calls("DescribeResourcePools")] == [503, 503, 500, 200]
    assert sleeps == [0.5, 1.0, 2.0]


def test_reads_are_retried_when_the_connection_drops(fake):
    fake.drop_next("DescribeQueues")
    client, sleeps = make_client(fake)

    assert client.queues(pool="cce-pool1") == ["default", "research"]
    assert len(fake.calls("DescribeQueues")) == 2
    assert sleeps == [0.5]


def test_reads_give_up_after_the_retries_with_the_last_error(fake):
    fake.fail_next("DescribeQueues", status=503, code="ServiceUnavailable", times=5)
    client, sleeps = make_client(fake, retries=2)

    with pytest.raises(AihcError) as caught:
        client.queues(pool="cce-pool1")

    assert caught.value.code == "ServiceUnavailable"
    assert len(fake.calls("DescribeQueues")) == 3
    assert sleeps == [0.5, 1.0]


def test_reads_time_out_and_are_retried(fake):
    # The retry is answered at once, but "at once" on a machine busy with the rest of the
    # suite has taken longer than 0.5 s (a third call): the timeout leaves it room.
    fake.delay_next("DescribeJobs", 4.0)
    client, sleeps = make_client(fake, read_timeout=2.0)

    assert client.list_jobs(pool="cce-pool1") == []
    assert len(fake.calls("DescribeJobs")) == 2
    assert sleeps == [0.5]


def test_create_is_never_retried_on_a_server_error(fake):
    fake.fail_next("CreateJob", status=500)
    client, sleeps = make_client(fake)

    with pytest.raises(AihcError):
        client.create_job(pool="cce-pool1", body=SEED)

    assert len(fake.calls("CreateJob")) == 1
    assert sleeps == []


def test_create_without_an_answer_raises_a_timeout_not_a_retry(fake):
    fake.delay_next("CreateJob", 1.5)
    client, sleeps = make_client(fake, read_timeout=0.5)

    with pytest.raises(AihcTimeout):
        client.create_job(pool="cce-pool1", body=SEED)

    assert len(fake.calls("CreateJob")) == 1
    assert sleeps == []
    assert len(fake.jobs) == 1  # it was created: the caller must reconcile, not resend


def test_a_create_whose_connection_aihc_closed_says_so_and_is_still_a_create_without_answer(fake):
    """qa80: a dropped connection was worded as a timeout ("did not answer in time"). It is
    still no answer (AihcTimeout: the job may have been made, and is looked for)."""
    fake.drop_next("CreateJob")
    client, sleeps = make_client(fake)

    with pytest.raises(AihcTimeout) as caught:
        client.create_job(pool="cce-pool1", body=SEED)

    assert sleeps == []
    assert got_no_answer(caught.value)
    with translation.override("en"):
        assert str(caught.value).startswith("AIHC closed the connection without answering (")
        assert "in time" not in str(caught.value)
    with translation.override("zh-hans"):
        assert str(caught.value.message) == "百舸 AIHC 未响应就关闭了连接"


def test_an_unreachable_endpoint_is_reported_as_unavailable():
    fake = FakeAihc().start()
    url = fake.url
    fake.stop()
    sleeps: list[float] = []
    client = AihcClient(
        endpoint=url, credentials=Credentials("ak", "sk"), retries=2, sleep=sleeps.append
    )
    with pytest.raises(AihcUnavailable) as caught:
        client.resource_pools()
    assert caught.value.code == "Unreachable"
    assert sleeps == [0.5, 1.0]  # connection errors on reads are retried too


def test_credentials_never_show_in_reprs():
    credentials = Credentials("AKIDEXAMPLE123", "super-secret-key")
    client = AihcClient(endpoint="https://aihc.bj.baidubce.com", credentials=credentials)
    assert "super-secret-key" not in repr(credentials) + repr(client) + str(vars(client))
