"""Jobs stored before session 21's rules (seeds21), at each door that reads their spec again.
A 任务hang (jobHang) alert now needs hang detection, a rule for new specs: a job stored
before it with such an alert still starts, is still approved, and its Run again is refused
with the message that says what to change (Run again makes a new job). The queue task's
投递目标队列 is the wizard's alone: a script's body that was taken yesterday (a queue task
without a queue, `queue` defaulting to `default` as AIHC's v1 says) still is. DescribeJob
answers AIHC's flags and lists when unset (seeds21): the job lists of both API generations
answer each job as DescribeJob does."""

from __future__ import annotations

import copy
import uuid

import pytest
from django.urls import reverse

from jobs import spec as S
from jobs.models import Job, JobStatus
from jobs.review import job_approve
from jobs.scheduler import dispatch_local
from jobs.services import jobs_submit

from . import test_api as v1
from .runner_helpers import make_spec, runner_settings, status_of  # noqa: F401
from .test_api import body
from .test_api_v2 import action

wsgi, alice_key, api, fake = v1.wsgi, v1.alice_key, v1.api, v1.fake

pytestmark = pytest.mark.usefixtures("runner_settings")


def stored_before_the_hang_rule(owner, status: str) -> Job:
    """A job whose stored spec alerts on 任务hang without hang detection, as one submitted
    before the rule was stored."""
    alert = S.AlertConfig(items=["jobFailed"], emails=["ops@example.com"])
    [job] = jobs_submit(
        owner=owner, spec=make_spec("true", alert=alert), submit_key=str(uuid.uuid4())
    )
    stored = copy.deepcopy(job.spec)
    stored["alertConfig"]["alertItems"] = ["jobFailed", "jobHang"]
    Job.objects.filter(pk=job.pk).update(spec=stored, status=status)
    job.refresh_from_db()
    return job


def test_a_job_queued_before_the_hang_rule_still_starts(alice):
    job = stored_before_the_hang_rule(alice, JobStatus.QUEUED)

    started = dispatch_local()

    assert started == [job]
    assert status_of(job) == JobStatus.RUNNING
    assert not job.events.filter(reason="SpecUnreadable").exists()


def test_a_job_held_for_review_before_the_hang_rule_is_approved_and_queued(alice, reviewer):
    job = stored_before_the_hang_rule(alice, JobStatus.PENDING_REVIEW)

    approved = job_approve(job=job, reviewer=reviewer)

    assert approved is True
    assert status_of(job) == JobStatus.QUEUED


def test_modify_job_changes_the_priority_of_a_job_held_since_before_the_hang_rule(api, alice):
    job = stored_before_the_hang_rule(alice, JobStatus.PENDING_REVIEW)

    answer = action(
        api, "ModifyJob", resourcePoolId="local", body={"jobId": job.public_id, "priority": "high"}
    )

    assert answer["jobId"] == job.public_id
    job.refresh_from_db()
    assert job.priority == "high"
    assert job.spec["alertConfig"]["alertItems"] == ["jobFailed", "jobHang"]  # kept as stored


def test_run_again_of_a_job_stored_before_the_hang_rule_says_where_to_turn_detection_on(
    alice, alice_client
):
    job = stored_before_the_hang_rule(alice, JobStatus.SUCCEEDED)

    response = alice_client.post(reverse("job-rerun", args=[job.public_id]), follow=True)

    assert response.status_code == 200
    assert response.redirect_chain[-1][0] == reverse("job-detail", args=[job.public_id])
    page = response.content.decode()
    assert "请在第 5 步（容错&amp;诊断；请求中为" in page
    assert "或不选此告警事件" in page
    assert "请复制该任务并修改所列内容" in page
    assert Job.objects.count() == 1


def test_submit_again_of_a_job_stored_before_the_hang_rule_is_refused_as_run_again_is(
    alice, alice_client
):
    # Submit again sends the spec as a new submit (AIHC itself refuses 任务hang without hang
    # detection): checked as one, unlike approving a held job, which the rule does not reach.
    job = stored_before_the_hang_rule(alice, JobStatus.SUBMIT_FAILED)

    response = alice_client.post(reverse("job-submit-again", args=[job.public_id]), follow=True)

    assert response.status_code == 200
    assert response.redirect_chain[-1][0] == reverse("job-detail", args=[job.public_id])
    assert "或不选此告警事件" in response.content.decode()
    job.refresh_from_db()
    assert job.status == JobStatus.SUBMIT_FAILED


def stored_with_an_alert_never_sent(owner, status: str, item: str) -> Job:
    """A local job whose stored spec alerts on an event the local pool never sends it, as one
    submitted before the rule that refuses it: 任务所在节点出现故障 (nodeFT, QA 59), or
    任务发生容错 (jobFT) without fault tolerance (qa72)."""
    job = stored_before_the_hang_rule(owner, status)
    stored = copy.deepcopy(job.spec)
    stored["alertConfig"]["alertItems"] = ["jobFailed", item]
    Job.objects.filter(pk=job.pk).update(spec=stored)
    job.refresh_from_db()
    return job


@pytest.mark.parametrize(
    ("item", "refusal"),
    [
        ("nodeFT", "本机资源池不会发出“任务所在节点出现故障”告警"),
        ("jobFT", "本机资源池只在重启任务时发出“任务发生容错”告警"),
    ],
)
def test_a_local_job_queued_with_an_alert_never_sent_still_starts_and_run_again_says_why_not(
    alice, alice_client, item, refusal
):
    queued = stored_with_an_alert_never_sent(alice, JobStatus.QUEUED, item)
    ended = stored_with_an_alert_never_sent(alice, JobStatus.FAILED, item)

    started = dispatch_local()
    response = alice_client.post(reverse("job-rerun", args=[ended.public_id]), follow=True)

    assert started == [queued]
    assert status_of(queued) == JobStatus.RUNNING
    assert response.status_code == 200
    assert response.redirect_chain[-1][0] == reverse("job-detail", args=[ended.public_id])
    assert refusal in response.content.decode()
    assert Job.objects.count() == 2


HANG_ALERT = {
    "alertConfig": {"alertItems": ["jobHang"]},
    "console": {"alertChannels": {"emails": ["ops@example.com"]}},
}


@pytest.mark.parametrize("detection", [None, {"enabledHangDetection": False}])
def test_both_apis_refuse_a_new_hang_alert_without_hang_detection_naming_the_field(api, detection):
    from .test_api_v2 import v2_body

    sent = {**HANG_ALERT}
    if detection is not None:
        sent["faultToleranceConfig"] = detection

    refusals = [
        v1.refused(lambda: api.create_job(pool="local", body=body(**sent))),
        v1.refused(lambda: action(api, "CreateJob", resourcePoolId="local", body=v2_body(**sent))),
    ]

    for refusal in refusals:
        assert refusal.status == 400
        assert "alertConfig.alertItems: Alerting on “Job hangs” needs hang detection" in str(
            refusal
        )
    assert not Job.objects.exists()


def test_a_scripts_queue_task_without_a_queue_is_still_created_in_the_default_queue(api):
    queued = body(name="queued-task")
    del queued["queue"]
    queued["console"] = {"submission": {"mode": "queue", "total": 2, "concurrency": 1}}

    created = api.create_job(pool="local", body=queued)

    assert created["jobName"] == "queued-task"
    tasks = Job.objects.order_by("group_index").values_list("queue", "group_index")
    assert list(tasks) == [("default", 1), ("default", 2)]


def test_both_job_lists_answer_each_job_as_describe_job_does(api):
    bare = body(name="bare-job")
    del bare["datasources"]
    job_id = api.create_job(pool="local", body=bare)["jobId"]

    v1_list = api.request(
        "GET", "/api/v1/aijobs", params=[("resourcePoolId", "local")], idempotent=True
    )
    v1_one = api.request(
        "GET", f"/api/v1/aijobs/{job_id}", params=[("resourcePoolId", "local")], idempotent=True
    )
    v2_list = action(api, "DescribeJobs", resourcePoolId="local", body={})
    v2_one = action(api, "DescribeJob", resourcePoolId="local", body={"jobId": job_id})

    [v1_item] = v1_list["result"]["jobs"]
    described = v1_one["result"]
    assert described.pop("podList") == {"listMeta": {"totalItems": 0}, "pods": []}
    assert v1_item == described
    assert (described["enableBccl"], described["labels"], described["datasources"]) == (
        False,
        [],
        [],
    )
    [v2_item] = v2_list["jobs"]
    assert v2_item == v2_one["job"]
    assert (v2_item["enableBccl"], v2_item["labels"], v2_item["datasources"]) == (False, [], [])
