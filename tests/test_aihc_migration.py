"""Bringing jobs over from Baidu AIHC (README "Moving jobs over from AIHC"): what a team holds
of its AIHC jobs (a CreateJob request, a job as GetJob or DescribeJob answers it) becomes a
draft here, or is refused saying what to paste instead."""

from __future__ import annotations

import copy
import json
import re

import pytest
from django.urls import reverse

from jobs import wizard as W
from jobs.backends import get_backend
from jobs.models import Draft, Job

from .fake_aihc import FakeAihc, configure
from .test_aihc_views import aihc_steps
from .test_api import SEED_001, alice_key, api, wsgi  # noqa: F401
from .test_wizard import complete_steps, new_draft, step_url
from .test_wizard_import import error_texts, import_body, review_body

A800 = "baidu.com/a800_80g_cgpu"
POOL = "cce-pool1"
JOB_LABEL = {"key": "ai-job-console/job-id", "value": "<job-id>"}

# A job made on AIHC's console, as AIHC's v1 GetJob answers it: the JobSpec's fields at the
# top level, the flags answered whether set or not, AIHC's own label, the shared memory it
# mounts with RDMA, the job name it sets among the envs (whether GetJob lists it is not
# documented: it may), and what it says of the job itself (id, state, times, pods).
GET_JOB = {
    "requestId": "31a7a2f7-78c1-4169-b150-c888d9f72be8",
    "result": {
        "jobId": "pytorchjob-265e535d-7bec-4b68-88bb-08faa4247504",
        "name": "llama2-7b-sft",
        "resourcePoolId": POOL,
        "queue": "default",
        "priority": "high",
        "jobFramework": "PyTorchJob",
        "status": "Running",
        "createdAt": "2024-12-27T08:00:00Z",
        "runningAt": "2024-12-27T08:01:00Z",
        "finishedAt": "",
        "command": "bash /mnt/cluster/sft.sh",
        "image": "ccr-4abc1234-vpc.cnc.bj.baidubce.com/llm/megatron:v1.2",
        "replicas": 2,
        "resources": [{"name": A800, "quantity": 8}],
        "envs": [
            {"name": "CUDA_DEVICE_MAX_CONNECTIONS", "value": "1"},
            {"name": "AIHC_JOB_NAME", "value": "llama2-7b-sft"},
        ],
        "enableRDMA": True,
        "hostNetwork": False,
        "privileged": False,
        "enableBccl": False,
        "enableBcclStatus": "unknown",
        "enableFaultTolerance": True,
        "faultToleranceArgs": "--enable-hang-detection=true --hang-detection-log-timeout-minutes=20",
        "customFaultTolerancePattern": [],
        "labels": [
            {"key": "team", "value": "nlp"},
            {"key": "aijob.cce.baidubce.com/create-from-aihcp-api", "value": "true"},
        ],
        "datasources": [
            {"type": "pfs", "name": "pfs-7xWeAt", "mountPath": "/mnt/cluster"},
            {
                "type": "emptydir",
                "name": "devshm",
                "mountPath": "/dev/shm",
                "options": {"medium": "Memory", "sizeLimit": 16, "readOnly": False},
            },
        ],
        "k8sUID": "0b4c7a52-0d1f-4f57-9d0a-3f1b7b2a8c11",
        "k8sNamespace": "default",
        "queueingSequence": 0,
        "podList": {
            "listMeta": {"totalItems": 1},
            "pods": [{"objectMeta": {"name": "llama2-7b-sft-master-0"}, "replicaType": "master"}],
        },
    },
}
# The CreateJob request that makes that job again.
REQUEST = {
    "name": "llama2-7b-sft",
    "queue": "default",
    "jobFramework": "PyTorchJob",
    "priority": "high",
    "jobSpec": {
        "command": "bash /mnt/cluster/sft.sh",
        "image": "ccr-4abc1234-vpc.cnc.bj.baidubce.com/llm/megatron:v1.2",
        "replicas": 2,
        "resources": [{"name": A800, "quantity": 8}, {"name": "sharedMemory", "quantity": 16}],
        "envs": [{"name": "CUDA_DEVICE_MAX_CONNECTIONS", "value": "1"}],
        "enableRDMA": True,
    },
    "faultTolerance": True,
    "faultToleranceConfig": {"enabledHangDetection": True, "hangDetectionTimeoutMinutes": 20},
    "datasources": [{"type": "pfs", "name": "pfs-7xWeAt", "mountPath": "/mnt/cluster"}],
    "labels": [{"key": "team", "value": "nlp"}, JOB_LABEL],
}


@pytest.fixture
def fake(settings):
    fake = FakeAihc().start()
    fake.add_pool(POOL, "百舸训练池", queues=("default",), gpus={A800: (32, 16)}, pfs="pfs-7xWeAt")
    configure(settings, fake)
    yield fake
    fake.stop()


def imported_request(client) -> dict:
    """The request the review of the one draft made would send."""
    return review_body(client, Draft.objects.get())


# -- a job looked up on AIHC ----------------------------------------------------------


def test_a_getjob_answer_pasted_from_aihc_imports_as_the_request_that_makes_that_job(
    fake, alice_client
):
    r = import_body(alice_client, GET_JOB, pool=POOL, follow=True)

    draft = Draft.objects.get()
    assert r.redirect_chain[-1][0] == step_url(draft, W.BASIC)
    assert imported_request(alice_client) == REQUEST
    page = error_texts(r)
    assert "已按 GetJob 或 DescribeJob 返回的任务读取：其任务 ID、状态、时间和实例（pods）" in page
    # The job's name as AIHC set it in that job: this console sets its own.
    assert "AIHC 在那个任务中设置的平台变量 AIHC_JOB_NAME 未导入" in page
    # What the answer says of the job itself is not the new job's, so it is not named as a
    # field the console does not read either.
    assert "k8sUID" not in page and "podList" not in page


def test_the_job_alone_of_a_getjob_answer_imports_as_the_whole_answer_does(fake, alice_client):
    import_body(alice_client, GET_JOB["result"], pool=POOL)

    assert imported_request(alice_client) == REQUEST


def test_a_v2_describejob_answer_imports_with_its_job_spec_and_top_level_command(
    fake, alice_client
):
    answer = {
        "requestId": "x-1",
        "job": {
            "jobid": "pytorchjob-1f2e",
            "name": "resnet-v2",
            "status": "Succeeded",
            "jobType": "PyTorchJob",
            "resourcePoolId": POOL,
            "queue": "default",
            "priority": "low",
            "command": "python train.py",
            "Job": {"image": "registry.baidubce.com/cv/resnet:1", "replicas": 1},
            "datasources": [],
            "labels": [],
            "enableFaultTolerance": False,
            "pods": [{"name": "resnet-v2-master-0", "status": "Succeeded"}],
            "jobTimeLine": [{"conditionType": "Succeeded", "time": "2025-01-01T00:00:00Z"}],
        },
    }

    import_body(alice_client, answer, pool=POOL)

    assert imported_request(alice_client) == {
        "name": "resnet-v2",
        "queue": "default",
        "jobFramework": "PyTorchJob",
        "priority": "low",
        "jobSpec": {
            "command": "python train.py",
            "image": "registry.baidubce.com/cv/resnet:1",
            "replicas": 1,
            "resources": [],
        },
        "labels": [JOB_LABEL],
    }


def test_the_consoles_own_describejob_answer_of_seed_001s_job_reimports_as_seed_001(
    api,  # noqa: F811
    fake,
    alice_client,
):
    created = api.request(
        "POST",
        "/api/v1/aijobs",
        params=[("resourcePoolId", POOL)],
        body=SEED_001,
        idempotent=False,
    )
    described = api.request(
        "GET",
        f"/api/v1/aijobs/{created['result']['jobId']}",
        params=[("resourcePoolId", POOL)],
        idempotent=True,
    )

    import_body(alice_client, described, pool="")

    sent = imported_request(alice_client)
    assert sent.pop("labels") == [JOB_LABEL]
    assert sent == SEED_001


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (
            {"requestId": "r", "result": {"jobId": "pytorchjob-9", "jobName": "a"}},
            "这是 AIHC CreateJob 的返回结果（只有任务 ID）",
        ),
        (
            {"requestId": "r", "result": {"total": 2, "jobs": [GET_JOB["result"]] * 2}},
            "这是 AIHC DescribeJobs 的返回结果（共 2 个任务的列表）",
        ),
    ],
)
def test_an_answer_that_describes_no_one_job_is_refused_saying_what_to_paste(
    fake, alice_client, answer, said
):
    r = import_body(alice_client, answer, pool=POOL, follow=True)

    page = error_texts(r)
    assert said in page
    assert "GetJob" in page
    assert json.dumps(answer, indent=2) in page  # the text stays in the box
    assert not Draft.objects.exists()


def _answer_with(**fields) -> dict:
    return {"requestId": "r", "result": {**copy.deepcopy(GET_JOB["result"]), **fields}}


SHM = GET_JOB["result"]["datasources"][1]


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        # The shared memory's options not an object (a hand-edited answer): no size is read.
        (_answer_with(datasources=[{**SHM, "options": "16Gi"}]), None),
        (_answer_with(datasources=[{**SHM, "options": [16]}]), None),
        # An env's name that is not text: refused on that env, as in a request.
        (_answer_with(envs=[{"name": ["AIHC_JOB_NAME"], "value": "a"}]), "jobSpec.envs[0].name"),
        (_answer_with(envs=[{"name": {"a": 1}, "value": "a"}]), "jobSpec.envs[0].name"),
    ],
)
def test_an_answer_with_a_value_of_the_wrong_kind_imports_or_is_refused_on_it_never_a_500(
    fake, alice_client, answer, said
):
    # review35: each raised AttributeError or TypeError reading the answer (a 500, the
    # pasted text lost).
    r = import_body(alice_client, answer, pool=POOL, follow=True)

    assert r.status_code == 200
    if said is None:
        sent = imported_request(alice_client)
        # No size read: the shared memory is the console's default, not a guess.
        assert {"name": "sharedMemory", "quantity": 16} not in sent["jobSpec"]["resources"]
    else:
        assert said in error_texts(r)
        assert not Draft.objects.exists()


def test_an_answers_job_id_that_is_not_text_is_not_quoted_as_python_writes_it(fake, alice_client):
    answer = {"requestId": "r", "result": {"jobId": ["pytorchjob-9"], "jobName": "a"}}

    page = error_texts(import_body(alice_client, answer, pool=POOL, follow=True))

    assert "['pytorchjob-9']" not in page
    assert not Draft.objects.exists()


# -- AIHC's own values ----------------------------------------------------------------


def test_aihcs_documented_fault_tolerance_flags_the_console_does_not_run_are_named_in_chinese(
    fake, alice_client
):
    # The flag string of AIHC's v2 CreateJob page, as a team's script sends it.
    body = copy.deepcopy(SEED_001)
    body["faultToleranceArgs"] = (
        "--enable-replace=true --enable-hang-detection=true "
        "--hang-detection-log-timeout-minutes=7 --max-num-of-unconditional-retry=2"
    )

    page = error_texts(import_body(alice_client, body, pool=POOL, follow=True))

    assert "faultToleranceArgs: --enable-replace 不是本控制台执行的选项：请删除（" in page
    assert "is not one the console runs" not in page
    assert not Draft.objects.exists()


def test_a_fault_tolerance_flag_string_with_an_open_quote_is_refused_in_chinese(fake, alice_client):
    body = copy.deepcopy(SEED_001)
    body["faultToleranceArgs"] = "--custom-log-patterns='NCCL timeout"

    page = error_texts(import_body(alice_client, body, pool=POOL, follow=True))

    assert "faultToleranceArgs: 无法拆分为选项" in page
    assert "No closing quotation" not in page


# -- the round trip -------------------------------------------------------------------


def test_a_job_made_here_sent_to_aihc_and_its_request_reimported_is_the_same_job(
    fake, alice_client, alice
):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, **aihc_steps(priority="high"))
    shown = review_body(alice_client, draft)
    alice_client.post(reverse("wizard-submit", args=[draft.id]))
    job = Job.objects.get(owner=alice)
    get_backend(job.backend).submit(job)
    [call] = fake.calls("CreateJob")  # the strict fake took it as AIHC does

    # AIHC got what the review showed, the console's label filled in.
    label = {"key": "ai-job-console/job-id", "value": job.public_id}
    assert call.body == {**shown, "labels": [label]}
    # That body, pasted back (as a team would from its own logs), is the same job again.
    import_body(alice_client, call.body, pool=POOL)
    again = Draft.objects.exclude(pk=draft.pk).get()
    assert review_body(alice_client, again) == shown


# -- in the browser -------------------------------------------------------------------


@pytest.mark.browser
def test_a_getjob_answer_pasted_in_the_browser_opens_a_draft_that_reviews_as_its_request(
    logged_in_page, settings, tmp_path
):
    from playwright.sync_api import expect

    from .test_wizard_browser import next_step

    settings.LOCAL_VOLUMES = f"scratch={tmp_path}"
    answer = {
        "requestId": "r-1",
        "result": {
            "jobId": "pytorchjob-5c0e",
            "name": "eval-run",
            "resourcePoolId": "local",
            "queue": "default",
            "priority": "normal",
            "jobFramework": "PyTorchJob",
            "status": "Succeeded",
            "createdAt": "2025-03-01T08:00:00Z",
            "command": "python eval.py",
            "image": "python:3.12",
            "replicas": 1,
            "resources": [{"name": "cpu", "quantity": 1}],
            "envs": [{"name": "AIHC_JOB_NAME", "value": "eval-run"}],
            "enableRDMA": False,
            "hostNetwork": False,
            "privileged": False,
            "enableFaultTolerance": False,
            "labels": [],
            "datasources": [{"type": "hostpath", "name": "scratch", "mountPath": "/workspace"}],
            "podList": {"listMeta": {"totalItems": 0}, "pods": []},
        },
    }
    page = logged_in_page
    page.click("#nav-create-job")
    page.fill("#import-body", json.dumps(answer, indent=2))
    page.click("#import-submit")

    page.wait_for_url(re.compile(r"/create/[0-9a-f-]+/basic/$"))
    notices = page.locator("#import-notices")
    expect(notices).to_contain_text("已按 GetJob 或 DescribeJob 返回的任务读取")
    expect(notices).to_contain_text("AIHC_JOB_NAME")
    expect(page.locator("#id_name")).to_have_value("eval-run")
    for slug in ("image", "resources", "data", "fault", "advanced", "submission", "review"):
        next_step(page, slug)
    assert json.loads(page.locator("#request-json").inner_text()) == {
        "name": "eval-run",
        "queue": "default",
        "jobFramework": "PyTorchJob",
        "priority": "normal",
        "jobSpec": {
            "command": "python eval.py",
            "image": "python:3.12",
            "replicas": 1,
            "resources": [{"name": "cpu", "quantity": 1}],
        },
        "datasources": [{"type": "hostpath", "name": "scratch", "mountPath": "/workspace"}],
    }
