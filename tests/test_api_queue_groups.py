"""A sweep script tells a queue group's tasks apart through the API (qa91): the create answers
every task's job ID in the group's order, and each task's row (v1 and v2, listed or read
alone) says its group, its index from 0 (its AIHC_GROUP_TASK_INDEX) and the total. These are
the console's own keys, beside AIHC's, which stay as they were; a job that is not a task of a
group of 2 or more is answered as AIHC answers it."""

from __future__ import annotations

import pytest

from jobs.aihc.endpoints import V2
from jobs.models import Job

from . import test_api as v1
from .runner_helpers import runner_settings  # noqa: F401
from .test_api import body
from .test_api_v2 import action, v2_body

# The v1 tests' fixtures: the console as a WSGI transport, Alice's key and AIHC client.
wsgi, alice_key, api = v1.wsgi, v1.alice_key, v1.api

pytestmark = pytest.mark.usefixtures("runner_settings")

SWEEP = {"submission": {"mode": "queue", "total": 3, "concurrency": 1}}


def create_v1(api, job_body: dict) -> dict:
    return api.request(
        "POST",
        "/api/v1/aijobs",
        params=[("resourcePoolId", "local")],
        body=job_body,
        idempotent=False,
    )["result"]


def v1_rows(api) -> dict[str, dict]:
    answer = api.request(
        "GET", "/api/v1/aijobs", params=[("resourcePoolId", "local")], idempotent=True
    )
    return {row["jobId"]: row for row in answer["result"]["jobs"]}


def test_a_v1_create_of_a_group_answers_every_tasks_job_id_in_order_and_each_row_its_place(
    api,
):
    created = create_v1(api, body(name="sweep-lr", console=SWEEP))
    # AIHC's own body: stored as a queue task of one (the local pool queues it), no group to
    # tell apart, answered as AIHC answers.
    plain = create_v1(api, body(name="plain"))

    tasks = list(Job.objects.filter(name="sweep-lr").order_by("group_index"))
    ids = [task.public_id for task in tasks]
    group = tasks[0].group_id
    # AIHC's keys as they were (jobId is task 1's), and the console's beside them.
    assert created == {"jobId": ids[0], "jobName": "sweep-lr", "jobIds": ids, "groupId": group}
    rows = v1_rows(api)
    # Each task's place from 1, as the list's 2/3 and the alert webhook's groupTaskIndex.
    assert [
        (rows[i]["groupId"], rows[i]["groupTaskIndex"], rows[i]["groupTaskTotal"]) for i in ids
    ] == [(group, 1, 3), (group, 2, 3), (group, 3, 3)]
    assert set(plain) == {"jobId", "jobName"}
    assert not {"groupId", "groupTaskIndex", "groupTaskTotal"} & set(rows[plain["jobId"]])
    alone = api.request(
        "GET", f"/api/v1/aijobs/{ids[2]}", params=[("resourcePoolId", "local")], idempotent=True
    )
    assert alone["result"]["groupTaskIndex"] == 3 and alone["result"]["groupId"] == group


def test_a_v2_create_of_a_group_answers_every_tasks_job_id_and_describe_jobs_each_place(api):
    created = api.request(
        "POST",
        "/",
        params=[("action", "CreateJob"), ("resourcePoolId", "local"), ("queueID", "default")],
        body=v2_body(name="sweep-v2", console=SWEEP),
        version=V2,
        idempotent=False,
    )

    ids = list(
        Job.objects.filter(name="sweep-v2")
        .order_by("group_index")
        .values_list("public_id", flat=True)
    )
    group = Job.objects.get(public_id=ids[0]).group_id
    assert created["jobId"] == ids[0] and created["jobIds"] == ids
    assert created["groupId"] == group
    listed = action(api, "DescribeJobs", resourcePoolId="local")["jobs"]
    places = {
        row["jobId"]: (row["groupId"], row["groupTaskIndex"], row["groupTaskTotal"])
        for row in listed
    }
    assert [places[i] for i in ids] == [(group, 1, 3), (group, 2, 3), (group, 3, 3)]
    one = action(api, "DescribeJob", resourcePoolId="local", jobId=ids[1])["job"]
    assert (one["groupTaskIndex"], one["groupTaskTotal"]) == (2, 3)
