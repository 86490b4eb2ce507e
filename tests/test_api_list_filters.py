"""The job lists of the AIHC-compatible API (v1 GET /api/v1/aijobs, v2 DescribeJobs): a
filter is applied or refused, never ignored, and a queue the pool does not have is not found
(qa97: a script's `status=Running` and `queue=nope` were answered as if they had matched)."""

from __future__ import annotations

import pytest

from jobs.models import Job, JobStatus

from . import test_api as v1
from .runner_helpers import runner_settings  # noqa: F401
from .signed_requests import signed_request
from .test_api import body, refused
from .test_api_v2 import action

# The v1 tests' fixtures: the console as a WSGI transport, Alice's key and AIHC client.
wsgi, alice_key, api = v1.wsgi, v1.alice_key, v1.api

pytestmark = pytest.mark.usefixtures("runner_settings")


def v1_list(api, **query) -> dict:
    params = [("resourcePoolId", "local"), *query.items()]
    return api.request("GET", "/api/v1/aijobs", params=params, idempotent=True)["result"]


def test_v1s_job_list_refuses_a_status_or_keyword_filter_it_does_not_take_instead_of_listing_all(
    api,
):
    job_id = api.create_job(pool="local", body=body(name="probe"))["jobId"]

    for name, value in (("status", "Running"), ("keyword", "probe"), ("keywordType", "name")):
        error = refused(lambda n=name, v=value: v1_list(api, **{n: v}))
        assert (error.status, error.code) == (400, "InvalidParameter"), name
        assert error.message.startswith(
            f"{name}: AIHC's v1 job list (GET /api/v1/aijobs) has no {name} filter"
        ), name
        assert "/?action=DescribeJobs" in error.message
    # Empty is no filter; what v1 takes still lists.
    assert [j["jobId"] for j in v1_list(api, status="", keyword="")["jobs"]] == [job_id]
    assert [j["jobId"] for j in v1_list(api, queue="default")["jobs"]] == [job_id]
    assert Job.objects.count() == 1


def test_v1s_job_list_says_which_filter_it_refused_in_chinese_when_asked(wsgi, alice_key):
    response = signed_request(
        wsgi,
        alice_key,
        method="GET",
        query=[("resourcePoolId", "local"), ("status", "Running")],
        headers={"Accept-Language": "zh-CN"},
    )

    assert (response.status_code, response.json()["code"]) == (400, "InvalidParameter")
    assert response.json()["message"].startswith("status：AIHC 的 v1 任务列表")


def test_queue_id_filters_v1s_job_list_as_queue_does(api):
    job_id = api.create_job(pool="local", body=body())["jobId"]

    assert [j["jobId"] for j in v1_list(api, queueID="default")["jobs"]] == [job_id]
    assert [j["jobId"] for j in v1_list(api, queueID="local:default")["jobs"]] == [job_id]
    differ = refused(lambda: v1_list(api, queue="default", queueID="local:other"))
    assert (differ.status, differ.code) == (400, "InvalidParameter")


def test_a_job_list_of_a_queue_the_pool_lacks_is_not_found_in_v1_and_v2_not_an_empty_list(api):
    job_id = api.create_job(pool="local", body=body())["jobId"]

    for queue in ("nope", "Default"):
        v1_error = refused(lambda q=queue: v1_list(api, queue=q))
        v1_by_id = refused(lambda q=queue: v1_list(api, queueID=q))
        v2_error = refused(
            lambda q=queue: action(
                api, "DescribeJobs", body={"resourcePoolId": "local", "queue": q}
            )
        )
        for error in (v1_error, v1_by_id, v2_error):
            assert (error.status, error.code) == (404, "QueueNotFound"), queue
            assert error.message.startswith(f"Queue {queue} not found in local: the pool has no")
    # all, or no queue: every queue's jobs.
    assert [j["jobId"] for j in v1_list(api, queue="all")["jobs"]] == [job_id]
    assert [j["jobId"] for j in v1_list(api)["jobs"]] == [job_id]
    v2_all = action(api, "DescribeJobs", body={"resourcePoolId": "local", "queue": "all"})
    assert [j["jobId"] for j in v2_all["jobs"]] == [job_id]


def test_a_queue_no_longer_in_the_pool_still_lists_the_owners_jobs_in_it(api, alice):
    job_id = api.create_job(pool="local", body=body())["jobId"]
    Job.objects.filter(public_id=job_id).update(queue="retired", status=JobStatus.SUCCEEDED)

    assert [j["jobId"] for j in v1_list(api, queue="retired")["jobs"]] == [job_id]
