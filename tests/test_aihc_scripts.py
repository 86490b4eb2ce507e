"""What a team moving over from AIHC's API met (qa109): seed 001's request and AIHC-style
scripts posted to the console's API, and the review step's request read as AIHC's. Each
refusal names the body's own field and the JSON to write; the local pool's request says it
is for this console's API and its curl goes there; a script's job reads as it was sent."""

from __future__ import annotations

import copy
import html
import json
import re

import pytest
from django.contrib.auth.models import Group
from django.urls import reverse

from jobs import wizard as W
from jobs.models import Job

from . import test_api as v1
from .runner_helpers import runner_settings  # noqa: F401
from .signed_requests import signed_request
from .test_api import SEED_001, body
from .test_wizard import complete_steps, new_draft, step_url

# The v1 tests' fixtures: the console as a WSGI transport, Alice's key and AIHC client.
wsgi, alice_key, api = v1.wsgi, v1.alice_key, v1.api

# The API's tests run on the runner's settings (one volume, "work"); the wizard's on its own.
on_the_runner = pytest.mark.usefixtures("runner_settings")

JSON = {"Content-Type": "application/json"}
IN_CHINESE = {**JSON, "Accept-Language": "zh-CN"}
IN_ENGLISH = {**JSON, "Accept-Language": "en"}


def create(wsgi, alice_key, document, headers=IN_ENGLISH):
    return signed_request(wsgi, alice_key, method="POST", headers=headers, json=document)


def field_messages(response) -> dict[str, str]:
    return {e["field"]: e["message"] for e in response.json()["errors"]}


# -- the review's request on the local pool -----------------------------------------------


def test_the_local_pools_review_curl_goes_to_this_consoles_api_and_says_the_request_is_its(
    alice_client, settings
):
    settings.SITE_URL = "https://console.example.org"
    settings.LOCAL_ACCELERATORS = f"{v1.A800}=8"  # the wizard's example job asks 3 cards
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft)

    page = alice_client.get(step_url(draft, W.REVIEW)).content.decode()

    curl = html.unescape(re.search(r'id="request-curl">(.*?)</pre>', page, re.S)[1])
    assert curl.startswith(
        "curl -X POST 'https://console.example.org/api/v1/aijobs?resourcePoolId=local'"
    )
    assert "aihc.bj.baidubce.com" not in page
    note = html.unescape(re.search(r'id="request-console-api-note">([^<]*)<', page)[1])
    assert "本控制台的 API（https://console.example.org" in note
    assert "alertConfig" in note and "AIHC 资源池上创建其草稿" in note


# -- seed 001 on the local pool -----------------------------------------------------------


@on_the_runner
def test_seed_001s_pfs_row_on_the_local_pool_is_told_the_volumes_and_the_row_to_write(
    wsgi, alice_key, settings
):
    settings.LOCAL_ACCELERATORS = f"{v1.A800}=8"

    r = create(wsgi, alice_key, SEED_001)

    said = field_messages(r)["datasources[0].type"]
    assert (r.status_code, r.json()["code"]) == (400, "InvalidParameter")
    assert said == (
        "The local runner can only mount hostpath volumes; “pfs” storage needs a cloud resource "
        "pool. This pool's volumes you may mount: work. Write the row as "
        '{"type": "hostpath", "name": "work", "mountPath": "/mnt/cluster"} (add sourcePath for '
        "a folder inside the volume)."
    )
    assert not Job.objects.exists()


@on_the_runner
def test_the_volumes_named_for_a_pfs_row_are_only_those_the_owner_may_mount(
    wsgi, alice_key, settings, tmp_path
):
    settings.LOCAL_VOLUMES = f"team-b={tmp_path}@team-b,models={tmp_path}:ro"
    document = body(datasources=[{"type": "pfs", "name": "pfs-1", "mountPath": "/data"}])

    r = create(wsgi, alice_key, document, headers=IN_CHINESE)

    said = field_messages(r)["datasources[0].type"]
    assert "此资源池中您可挂载的存储卷：models（只读）。请将这一行写为 " in said
    assert '"options": {"readOnly": true}' in said and "team-b" not in said
    assert "。 " not in said


@on_the_runner
def test_a_pfs_row_of_a_user_offered_no_volume_is_told_so(wsgi, alice_key, alice, settings):
    settings.LOCAL_VOLUMES = settings.LOCAL_VOLUMES + "@team-b"
    alice.groups.add(Group.objects.create(name="team-a"))
    document = body(datasources=[{"type": "pfs", "name": "pfs-1", "mountPath": "/data"}])

    r = create(wsgi, alice_key, document)

    assert field_messages(r)["datasources[0].type"].endswith(
        "This pool offers you no volume: leave the row out, or ask the administrator for one "
        "(LOCAL_VOLUMES)."
    )
    assert not Job.objects.exists()


# -- alerts without the console's channels -------------------------------------------------


@on_the_runner
def test_aihc_alert_items_without_console_channels_are_refused_on_alert_items_with_the_json(
    wsgi, alice_key
):
    document = body(alertConfig={"alertItems": ["jobFailed"]})

    r = create(wsgi, alice_key, document)

    errors = field_messages(r)
    assert r.status_code == 400
    assert list(errors) == ["alertConfig.alertItems"]
    assert (
        '"console": {"alertChannels": {"emails": ["alice@example.com"]}}'
        in (errors["alertConfig.alertItems"])
    )
    assert r.json()["message"].startswith("alertConfig.alertItems: These alerts would reach nobody")
    assert not Job.objects.exists()


@on_the_runner
def test_console_alert_channels_sent_empty_are_still_refused_on_their_emails(wsgi, alice_key):
    document = body(
        alertConfig={"alertItems": ["jobFailed"]},
        console={"alertChannels": {"emails": [], "webhooks": []}},
    )

    r = create(wsgi, alice_key, document)

    assert field_messages(r) == {
        "console.alertChannels.emails": (
            "These alerts would reach nobody: add an email address or a webhook."
        )
    }


# -- fault tolerance flags, the framework -----------------------------------------------------


@on_the_runner
def test_every_unsupported_fault_tolerance_flag_is_named_in_one_message_in_chinese_punctuation(
    wsgi, alice_key
):
    document = body(
        faultTolerance=True,
        faultToleranceArgs="--enable-replace=true --enable-hang-detection=true "
        "--hang-detection-stack-timeout-minutes=3 --enable-replace=false",
    )

    chinese = create(wsgi, alice_key, document, headers=IN_CHINESE)
    english = create(wsgi, alice_key, document)

    assert field_messages(chinese) == {
        "faultToleranceArgs": "--enable-replace、--hang-detection-stack-timeout-minutes "
        "不是本控制台执行的选项：请删除（本控制台执行 --enable-hang-detection、"
        "--hang-detection-log-timeout-minutes、--hang-detection-startup-toleration-minutes、"
        "--max-num-of-unconditional-retry、"
        "--custom-log-patterns）。"
    }
    assert field_messages(english) == {
        "faultToleranceArgs": "--enable-replace, --hang-detection-stack-timeout-minutes are "
        "not ones the console runs: remove them (the console runs --enable-hang-detection, "
        "--hang-detection-log-timeout-minutes, --hang-detection-startup-toleration-minutes, "
        "--max-num-of-unconditional-retry, "
        "--custom-log-patterns)."
    }
    assert not Job.objects.exists()


@on_the_runner
def test_a_framework_the_api_does_not_take_is_told_the_values_it_takes_in_chinese(wsgi, alice_key):
    r = create(wsgi, alice_key, body(jobFramework="pytorch"), headers=IN_CHINESE)

    assert field_messages(r)["jobFramework"] == (
        "训练框架只能是 PyTorchJob、MPIJob、TFJob 或 Custom（自定义）。"
        "“pytorch”（AIHC 命令行模板的写法）在此即 PyTorchJob。"
    )
    assert "。 " not in r.json()["message"]


# -- a script's job as it was sent ----------------------------------------------------------


@on_the_runner
def test_a_scripts_job_page_shows_its_request_as_sent_and_no_place_in_a_group(
    wsgi, alice_key, api, alice_client, settings
):
    settings.SITE_URL = "https://console.example.org"
    document = copy.deepcopy(body(name="from-a-script"))
    document["jobSpec"]["envs"] = [{"name": "LR", "value": "0.1"}]
    job_id = api.create_job(pool="local", body=document)["jobId"]
    described = signed_request(
        wsgi, alice_key, method="GET", path=f"/api/v1/aijobs/{job_id}", headers=JSON
    ).json()["result"]

    page = alice_client.get(reverse("job-detail", args=[job_id])).content.decode()
    listed = alice_client.get(reverse("job-list")).content.decode()

    shown = html.unescape(re.search(r'id="api-request"[^>]*>(.*?)</pre>', page, re.S)[1])
    sent = json.loads(shown.split("\n", 1)[1])
    assert sent["jobSpec"]["envs"] == described["envs"] == [{"name": "LR", "value": "0.1"}]
    assert 'id="group-task"' not in page
    row = listed[listed.index(f'<tr data-job="{job_id}"') :]
    assert "group-task" not in row[: row.index("</tr>")]
    assert 'id="request-console-api-note"' in page
    job = Job.objects.get(public_id=job_id)
    assert job.group.total == 1  # still a queue task of one, as the scheduler takes it
    assert job.events.get(reason="Created").message.startswith("任务已创建（API 密钥")


@on_the_runner
def test_a_scripts_job_page_request_imported_and_submitted_runs_as_the_same_queue_task_of_one(
    wsgi, alice_key, api, alice_client, alice
):
    # review62: the page's request (no console.submission, as the script sent it) imported
    # as a standalone job, without the AIHC_GROUP_TASK_INDEX=0/TOTAL=1 the API's job ran with.
    from jobs.models import Draft
    from jobs.runtime_env import group_task_of, replica_environment, replica_refs

    from .test_wizard_import import import_body

    document = copy.deepcopy(body(name="from-a-script"))
    document["jobSpec"]["envs"] = [{"name": "LR", "value": "0.1"}]
    made = Job.objects.get(public_id=api.create_job(pool="local", body=document)["jobId"])
    page = alice_client.get(reverse("job-detail", args=[made.public_id])).content.decode()
    request = html.unescape(re.search(r'id="api-request"[^>]*>(.*?)</pre>', page, re.S)[1])

    assert import_body(alice_client, request).status_code == 302
    draft = Draft.objects.get(owner=alice)
    alice_client.post(reverse("wizard-submit", args=[draft.id]))
    imported = Job.objects.exclude(pk=made.pk).get(owner=alice)

    def environment(job: Job) -> dict[str, str]:
        spec = job.job_spec()
        return replica_environment(
            spec, replica_refs(spec)[0], job_id="job-x", group_task=group_task_of(job)
        )

    assert environment(imported) == environment(made)
    assert environment(imported)["AIHC_GROUP_TASK_TOTAL"] == "1"
    assert imported.group.total == 1
