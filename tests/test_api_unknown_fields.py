"""Keys of a CreateJob body the console does not read (jobs.spec.unread_fields): one it reads
at another place is refused, saying where it belongs (QA: `datasources` inside `jobSpec` ran
without the mount and without a word); one it reads nowhere is accepted, as AIHC accepts it,
and named on the job, in the API's answer and on an imported draft, never with its value."""

from __future__ import annotations

import copy
import json
import logging
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.urls import reverse
from playwright.sync_api import expect

from jobs import spec as S
from jobs.aihc.mapping import v1_from_v2
from jobs.models import Draft, EventType, Job

from . import test_api as v1
from .runner_helpers import runner_settings  # noqa: F401
from .signed_requests import signed_request
from .test_api import body
from .test_api_v2 import action, v2_body
from .test_wizard_import import BODY, CHANNELS, error_texts, import_body

wsgi, alice_key, api, fake = v1.wsgi, v1.alice_key, v1.api, v1.fake

pytestmark = pytest.mark.usefixtures("runner_settings")

SEED = json.loads((Path(__file__).parent / "data" / "seed001_create_job_request.json").read_text())
SECRET = "tok-7f3a9c-never-show-me"


def create_v1(api, job_body: dict, **params: str) -> dict:
    return api.request(
        "POST",
        "/api/v1/aijobs",
        params=[("resourcePoolId", "local"), *params.items()],
        body=job_body,
        idempotent=False,
    )


def signed_create(wsgi, alice_key, job_body: dict, *, language: str = "en") -> httpx.Response:
    """A v1 create as a script sends it, with its own Accept-Language."""
    return signed_request(
        wsgi, alice_key, method="POST", headers={"Accept-Language": language}, json=job_body
    )


# -- the table is the parser's own reads ----------------------------------------------------


class Reads(dict):
    """A JSON object that notes each key read of it (`get`, `[]`), by its path."""

    def __init__(self, data: dict, path: str, log: set[str]):
        super().__init__(data)
        self.path, self.log = path, log

    def _note(self, key: Any) -> None:
        self.log.add(f"{self.path}.{key}" if self.path else str(key))

    def get(self, key: Any, default: Any = None) -> Any:
        self._note(key)
        return super().get(key, default)

    def __getitem__(self, key: Any) -> Any:
        self._note(key)
        return super().__getitem__(key)


def noting(value: Any, path: str, log: set[str]) -> Any:
    if isinstance(value, dict):
        return Reads(
            {k: noting(v, f"{path}.{k}" if path else k, log) for k, v in value.items()}, path, log
        )
    if isinstance(value, list):
        return [noting(item, f"{path}[]", log) for item in value]
    return value


def read_by_the_parser(document: dict) -> set[str]:
    log: set[str] = set()
    S.parse_document(noting(document, "", log))
    return log


def table_paths(fields: S.Fields, place: str = "") -> set[str]:
    paths = set()
    for key, child in fields.keys.items():
        path = f"{place}.{key}" if place else key
        paths.add(path)
        if child is not None:
            paths |= table_paths(child, path)
    if fields.items is not None:
        paths |= table_paths(fields.items, f"{place}[]")
    return paths


RESOURCES = [{"name": "baidu.com/a800_80g_cgpu", "quantity": 8}, {"name": "cpu", "quantity": 4}]
# Every key of the v1 table, as the stored document writes it (console.command and
# console.roles replace jobSpec.command, replicas and resources: one document without them).
FULL_V1 = {
    "name": "every-field",
    "queue": "default",
    "jobFramework": "PyTorchJob",
    "priority": "high",
    "resourcePoolId": "local",
    "jobSpec": {
        "command": "true",
        "image": "python:3.12",
        "imageConfig": {"username": "u", "password": "p"},
        "replicas": 2,
        "resources": RESOURCES,
        "envs": [{"name": "A", "value": "1"}],
        "enableRDMA": True,
        "hostNetwork": True,
    },
    "faultTolerance": True,
    "faultToleranceConfig": {
        "enabledHangDetection": True,
        "hangDetectionTimeoutMinutes": 10,
        "faultToleranceLimit": 1,
        "customFaultTolerancePattern": ["x"],
    },
    "labels": [{"key": "team", "value": "nlp"}],
    "datasources": [
        {
            "type": "hostpath",
            "name": "scratch",
            "mountPath": "/data",
            "sourcePath": "a",
            "options": {"readOnly": True},
        }
    ],
    "enableBccl": True,
    "tensorboardConfig": {"enable": True, "logPath": "/tb"},
    "alertConfig": {
        "alertItems": ["jobFailed"],
        "instanceId": "i",
        "notifyRuleId": "n",
        "for": "1m",
    },
    "retentionPeriod": "7d",
}
FULL_CONSOLE = {
    "entrypoint": "bash",
    "command": "true",
    "roles": [{"name": "master", "replicas": 1, "resources": RESOURCES}],
    "sharedMemoryGi": 10,
    "cpuExclusive": False,
    "timeoutMinutes": 60,
    "submission": {"mode": "standalone", "total": 1, "concurrency": 1},
    "logPersistence": False,
    "alertChannels": {"emails": ["a@example.com"], "webhooks": []},
    "secretEnvs": [],
    "creationMode": "custom",
    "aiak": {"trainingMode": "SFT", "trainingMethod": "full", "template": "t"},
}


def test_the_v1_table_is_exactly_what_the_parser_reads():
    read = read_by_the_parser(FULL_V1) | read_by_the_parser({**FULL_V1, "console": FULL_CONSOLE})
    for alias in ("dataSources", "datasource"):
        renamed = {k: v for k, v in FULL_V1.items() if k != "datasources"}
        read |= read_by_the_parser({**renamed, alias: FULL_V1["datasources"]})

    # faultToleranceArgs is read before the parser, into faultToleranceConfig
    # (jobs.aihc.mapping.fault_tolerance_config), in v1 (the API) as in v2.
    assert read == table_paths(S.V1_FIELDS) - {"faultToleranceArgs"}


def test_every_key_of_a_full_v2_body_lands_where_the_v1_table_reads_it():
    v2 = {
        **{k: v for k, v in FULL_V1.items() if k not in ("jobFramework", "faultToleranceConfig")},
        "jobType": "TFJob",
        "command": "true",
        "faultToleranceArgs": "--enable-hang-detection=true",
        "console": FULL_CONSOLE,
    }
    role = {k: v for k, v in FULL_V1["jobSpec"].items() if k != "command"}
    role_map = {**v2, "jobSpec": {"Chief": role, "Worker": role}}

    for document in (v2, role_map):
        assert S.unread_fields(document, S.V2_FIELDS) == S.UnreadFields()
        assert S.unread_fields(v1_from_v2(document), S.V1_FIELDS) == S.UnreadFields()
    assert set(S.V2_FIELDS.keys) - set(S.V1_FIELDS.keys) == {"jobType", "command"}


def test_the_seeds_full_example_has_no_key_the_console_does_not_read():
    assert S.unread_fields(SEED, S.V1_FIELDS) == S.UnreadFields()


# Every CreateJob field of the AIHC reference (../shared/reference/aihc-openapi.md §2), v1.
REFERENCE_V1 = {
    **FULL_V1,
    "faultToleranceArgs": "--enable-hang-detection=true",
    "codeSource": {"filePath": "a", "mountPath": "/code"},
    "jobSpec": {**FULL_V1["jobSpec"], "privileged": True},
    "datasources": [
        {
            "type": "pfsl1",
            "sourcePath": "/x",
            "mountPath": "/mnt",
            "name": "pfs-zesqWP",
            "options": {
                "sizeLimit": 1000,
                "medium": "",
                "readOnly": False,
                "pfsL1ClusterIp": "172.16.0.221",
                "pfsL1ClusterPort": "8888",
            },
        }
    ],
    "alertConfig": {
        **FULL_V1["alertConfig"],
        "alertIds": ["a"],
        "alertName": "n",
        "description": "d",
        "severity": "s",
    },
}


def test_the_references_fields_the_console_reads_are_not_named_and_those_it_ignores_are():
    # Decision: the reference's fields that no code of the console reads (the Go CLI's code
    # upload, pfs mount tuning, AIHC's alert policy metadata) are named like any other key it
    # does not read; a job that silently loses them is what QA found. Every other reference
    # field is read (jobSpec.privileged too, since round 19), so it is not named.
    unread = S.unread_fields(REFERENCE_V1, S.V1_FIELDS)

    assert unread.misplaced == {}
    assert unread.unknown == [
        "datasources[0].options.sizeLimit",
        # "medium": "" asks for nothing (Go's zero value): not named
        "datasources[0].options.pfsL1ClusterIp",
        "datasources[0].options.pfsL1ClusterPort",
        "alertConfig.alertIds",
        "alertConfig.alertName",
        "alertConfig.description",
        "alertConfig.severity",
        "codeSource",
    ]
    v2 = {k: v for k, v in REFERENCE_V1.items() if k not in ("jobFramework", "codeSource")}
    v2 = {**v2, "jobType": "PyTorchJob", "command": "true", "advancedSettings": {"runtimeEnv": "x"}}
    assert S.unread_fields(v2, S.V2_FIELDS).unknown[-1] == "advancedSettings"


def test_the_seeds_example_creates_an_aihc_job_with_no_warning(api, fake):
    answer = api.request(
        "POST",
        "/api/v1/aijobs",
        params=[("resourcePoolId", "cce-pool1")],
        body=SEED,
        idempotent=False,
    )

    assert "warnings" not in answer
    job = Job.objects.get(public_id=answer["result"]["jobId"])
    assert not job.events.filter(reason="FieldsNotRead").exists()
    # QA's body: the seed with its mount put inside jobSpec is refused, not run without it.
    misplaced = copy.deepcopy(SEED)
    misplaced["jobSpec"]["datasources"] = misplaced.pop("datasources")
    error = v1.refused(lambda: api.create_job(pool="cce-pool1", body=misplaced))
    assert error.message.startswith("jobSpec.datasources: 'datasources' belongs beside jobSpec")
    assert Job.objects.count() == 1


# -- a key the console reads elsewhere is refused ---------------------------------------------


def test_datasources_inside_job_spec_are_refused_saying_where_they_belong(api):
    job_body = body()
    job_body["jobSpec"]["datasources"] = job_body.pop("datasources")

    error = v1.refused(lambda: api.create_job(pool="local", body=job_body))

    assert error.code == "InvalidParameter"
    assert error.message == (
        "jobSpec.datasources: 'datasources' belongs beside jobSpec, at the top level of the body."
    )
    assert not Job.objects.exists()


def test_a_misplaced_key_is_said_with_the_bodys_other_errors_in_one_answer(api):
    # qa97: a body was answered one stage at a time, the misplaced keys alone first.
    job_body = body(name="")
    job_body["jobSpec"]["datasources"] = job_body.pop("datasources")
    job_body["jobSpec"]["image"] = ""
    job_body["jobSpec"]["replicas"] = 0

    error = v1.refused(lambda: api.create_job(pool="local", body=job_body))

    assert error.code == "InvalidParameter"
    assert error.message.startswith(
        "jobSpec.datasources: 'datasources' belongs beside jobSpec, at the top level of the "
        "body. jobSpec.replicas: Replicas count the master and its workers together and must "
        "be between 1 and "
    )
    assert " name: Enter a job name. jobSpec.image: Enter an image address. " in error.message
    assert not Job.objects.exists()


def test_the_refusal_is_in_chinese_when_the_request_asks_for_it(wsgi, alice_key):
    job_body = body()
    job_body["jobSpec"]["datasources"] = job_body.pop("datasources")

    r = signed_create(wsgi, alice_key, job_body, language="zh-CN")

    assert r.status_code == 400
    assert r.json()["code"] == "InvalidParameter"
    assert (
        r.json()["message"]
        == "jobSpec.datasources: “datasources”应与 jobSpec 并列，放在请求体的最外层。"
    )


def test_job_spec_keys_at_the_top_or_v2_names_or_another_letter_case_are_refused_on_each_path(
    api,
):
    job_body = body(image="python:3.12", replicas=2, jobType="TFJob", priority="high")
    job_body["JobSpec"] = {"image": "python:3.13"}
    job_body["jobSpec"]["labels"] = [{"key": "team", "value": "nlp"}]
    job_body["jobSpec"]["console"] = {"timeoutMinutes": 5}
    job_body["datasources"][0]["readOnly"] = True

    message = v1.refused(lambda: api.create_job(pool="local", body=job_body)).message

    assert "image: 'image' belongs in jobSpec." in message
    assert "replicas: 'replicas' belongs in jobSpec." in message
    assert "jobType: 'jobType' is not read in this body, which names it 'jobFramework'." in message
    assert "JobSpec: 'JobSpec' is not read: the field is 'jobSpec' (letter case" in message
    assert "jobSpec.labels: 'labels' belongs beside jobSpec, at the top level" in message
    assert "jobSpec.console: 'console' belongs beside jobSpec, at the top level" in message
    assert "datasources[0].readOnly: 'readOnly' belongs in datasources[].options." in message
    assert not Job.objects.exists()


def test_a_misplaced_key_holding_nothing_is_neither_refused_nor_named(api):
    job_body = body(newerAihcField=None, codeSource={"filePath": "a"})
    job_body["jobSpec"].update(datasources=[], labels=None, console={})

    answer = create_v1(api, job_body)

    assert answer["warnings"][0]["fields"] == ["codeSource"]
    assert Job.objects.count() == 1


def test_v2_refuses_a_roles_datasources_and_v1s_name_for_the_job_type(api):
    role = {"image": "python:3.12", "replicas": 1, "resources": [{"name": "cpu", "quantity": 1}]}
    job_body = v2_body(jobType="TFJob", jobFramework="PyTorchJob")
    job_body["jobSpec"] = {
        "Chief": {**role, "datasources": [{"type": "hostpath", "mountPath": "/x"}]},
        "Worker": role,
    }

    error = v1.refused(
        lambda: action(api, "CreateJob", body=job_body, resourcePoolId="local", queueID="default")
    )

    assert error.code == "InvalidParameter"
    assert (
        "jobSpec.Chief.datasources: 'datasources' belongs beside jobSpec, at the top level of "
        "the body." in error.message
    )
    assert "jobFramework: 'jobFramework' is not read in this body, which names it 'jobType'." in (
        error.message
    )
    assert not Job.objects.exists()


# -- a key the console reads nowhere is accepted and named ------------------------------------


def test_an_unknown_key_is_accepted_with_a_warning_event_and_named_in_the_answer(
    api, alice_client, caplog
):
    job_body = body(codeSource={"filePath": "a"}, bosTemporaryToken=SECRET)
    job_body["jobSpec"]["runtimeClassName"] = "kata"
    job_body["jobSpec"]["envs"] = [{"name": "A", "value": "1", "secretValue": SECRET}]

    with caplog.at_level(logging.DEBUG):
        answer = create_v1(api, job_body)

    fields = [
        "jobSpec.runtimeClassName",
        "jobSpec.envs[0].secretValue",
        "codeSource",
        "bosTemporaryToken",
    ]
    assert answer["warnings"] == [
        {
            "code": "FieldsNotRead",
            "message": (
                f"The request's fields {', '.join(fields)} were not read (not known to this "
                "console)."
            ),
            "fields": fields,
        }
    ]
    job = Job.objects.get(public_id=answer["result"]["jobId"])
    warning = job.events.get(reason="FieldsNotRead")
    assert warning.type == EventType.WARNING
    # Stored in the console's language, its list as that language writes one (qa82: ", ").
    assert "jobSpec.runtimeClassName、jobSpec.envs[0].secretValue、codeSource" in warning.message
    events = api.request(
        "GET",
        f"/api/v1/aijobs/{job.public_id}/events",
        params=[("resourcePoolId", "local")],
        idempotent=True,
    )
    assert "bosTemporaryToken" in json.dumps(events)
    # Last: the test client's request reconnects the signal that closes the connection.
    page = alice_client.get(f"/jobs/{job.public_id}/").content.decode()
    assert "codeSource" in page
    for shown in (json.dumps(answer), page, json.dumps(events), caplog.text):
        assert SECRET not in shown
    assert SECRET not in json.dumps(job.spec)


def test_a_retried_create_names_the_keys_again_and_makes_one_job_with_one_warning(api):
    job_body = body(newerAihcField=1)

    first = create_v1(api, job_body, clientToken="t-1")
    again = create_v1(api, job_body, clientToken="t-1")

    assert again == {**first, "requestId": again["requestId"]}
    assert first["warnings"][0]["fields"] == ["newerAihcField"]
    assert Job.objects.get().events.filter(reason="FieldsNotRead").count() == 1


def test_more_than_twenty_unknown_keys_are_counted_past_the_twentieth(api):
    extra = {f"x{n:02}": n + 1 for n in range(23)}

    answer = create_v1(api, body(**extra))

    assert len(answer["warnings"][0]["fields"]) == 23
    assert answer["warnings"][0]["message"].endswith(
        "x19 and 3 more were not read (not known to this console)."
    )
    assert "x20" not in Job.objects.get().events.get(reason="FieldsNotRead").message


def test_v2_names_unknown_keys_beside_the_job_id(api):
    answer = action(
        api,
        "CreateJob",
        body=v2_body(advancedSettings={"runtimeEnv": "x"}),
        resourcePoolId="local",
        queueID="default",
    )

    assert answer["jobId"]
    assert answer["warnings"][0]["fields"] == ["advancedSettings"]


@pytest.mark.parametrize("key", ["jobName", "job_name", "nmae"])
def test_v2_without_a_name_says_which_key_sent_was_meant_for_it(api, key):
    # qa101: v2 CreateJob with `jobName` said only "name: Enter a job name.".
    job_body = v2_body()
    job_body[key] = job_body.pop("name")

    error = v1.refused(
        lambda: action(api, "CreateJob", body=job_body, resourcePoolId="local", queueID="default")
    )

    assert error.code == "InvalidParameter"
    assert f"{key}: '{key}' is not read: did you mean 'name'?" in error.message
    assert "name: Enter a job name." in error.message
    assert not Job.objects.exists()


def test_v1_without_a_name_says_which_key_sent_was_meant_for_it(api):
    job_body = body()
    job_body["jobName"] = job_body.pop("name")

    message = v1.refused(lambda: api.create_job(pool="local", body=job_body)).message

    assert "jobName: 'jobName' is not read: did you mean 'name'?" in message


def test_a_key_like_name_beside_a_name_is_accepted_and_named_as_unknown(api):
    # With the name given, `jobName` is a key read nowhere, as AIHC ignores it.
    answer = action(
        api, "CreateJob", body=v2_body(jobName="x"), resourcePoolId="local", queueID="default"
    )

    assert answer["jobId"]
    assert answer["warnings"][0]["fields"] == ["jobName"]


def test_import_without_a_name_says_which_key_sent_was_meant_for_it(alice_client):
    sent = {**BODY, **CHANNELS}
    sent["jobName"] = sent.pop("name")

    shown = error_texts(import_body(alice_client, sent))

    assert "“jobName”不会被读取：您是不是想填“name”？" in shown
    assert not Draft.objects.exists()


def test_faultToleranceArgs_in_a_v1_body_is_read_as_v2_reads_it(api):
    args = "--enable-hang-detection=true --hang-detection-log-timeout-minutes=30"
    answer = create_v1(api, body(faultToleranceArgs=args))

    assert "warnings" not in answer
    spec = Job.objects.get().job_spec()
    assert spec.fault_tolerance_config == S.FaultToleranceConfig(
        enabled_hang_detection=True, hang_detection_timeout_minutes=30
    )
    # Two forms of different settings (the same settings in both, as GetJob answers them
    # since qa105, are taken: test_api).
    both = body(faultToleranceArgs="--enable-hang-detection=true")
    both["faultToleranceConfig"] = {"enabledHangDetection": False}
    error = v1.refused(lambda: api.create_job(pool="local", body=both))
    assert error.message == (
        "faultToleranceArgs: give faultToleranceConfig or faultToleranceArgs, not both."
    )


def test_v2_refuses_both_forms_of_fault_tolerance_rather_than_drop_one(api):
    job_body = v2_body(
        faultToleranceArgs="--enable-hang-detection=false",
        faultToleranceConfig={"enabledHangDetection": True, "hangDetectionTimeoutMinutes": 30},
    )

    error = v1.refused(
        lambda: action(api, "CreateJob", body=job_body, resourcePoolId="local", queueID="default")
    )

    assert error.message == (
        "faultToleranceArgs: give faultToleranceConfig or faultToleranceArgs, not both."
    )
    assert not Job.objects.exists()


def test_mounts_given_under_two_spellings_are_refused_on_the_one_not_read(api):
    job_body = body(datasource=[{"type": "hostpath", "name": "work", "mountPath": "/data"}])

    error = v1.refused(lambda: api.create_job(pool="local", body=job_body))

    assert error.message == (
        "datasource: 'datasource' is not read: the body gives the mounts as 'datasources' already."
    )
    assert not Job.objects.exists()


# -- import --------------------------------------------------------------------------------


@pytest.fixture
def _local_pool(settings, tmp_path):
    settings.LOCAL_ACCELERATORS = f"{v1.A800}=8"
    settings.LOCAL_VOLUMES = f"scratch={tmp_path}"


@pytest.mark.usefixtures("_local_pool")
def test_import_refuses_a_misplaced_key_on_its_form_and_keeps_the_text(alice_client):
    pasted = copy.deepcopy({**BODY, **CHANNELS})
    pasted["jobSpec"]["datasources"] = pasted.pop("datasources")
    text = json.dumps(pasted, indent=2)

    r = import_body(alice_client, text)

    shown = error_texts(r)
    assert "jobSpec.datasources: “datasources”应与 jobSpec 并列，放在请求体的最外层。" in shown
    assert '"datasources": [\n      {\n        "type": "hostpath"' in shown  # as typed
    assert not Draft.objects.exists()


@pytest.mark.usefixtures("_local_pool")
def test_import_says_a_roles_mounts_are_misplaced_not_that_the_roles_differ(alice_client):
    role = {"image": "python:3.12", "replicas": 1, "resources": [{"name": "cpu", "quantity": 1}]}
    pasted = v2_body(jobType="TFJob")
    pasted["jobSpec"] = {
        "Chief": role,
        "Worker": {**role, "datasources": [{"type": "hostpath", "mountPath": "/x"}]},
    }

    shown = error_texts(import_body(alice_client, pasted))

    assert (
        "jobSpec.Worker.datasources: “datasources”应与 jobSpec 并列，放在请求体的最外层。" in shown
    )
    assert "第一个角色" not in shown
    assert not Draft.objects.exists()


@pytest.mark.usefixtures("_local_pool")
def test_import_names_keys_it_does_not_read_on_the_draft(alice_client):
    r = import_body(
        alice_client, {**BODY, **CHANNELS, "codeSource": {"bosTemporaryToken": SECRET}}, follow=True
    )

    shown = error_texts(r)
    assert "请求中的字段 codeSource 未被读取（本控制台不认识这些字段）。" in shown
    assert SECRET not in shown
    assert Draft.objects.count() == 1


@pytest.mark.browser
@pytest.mark.usefixtures("_local_pool")
def test_a_pasted_body_with_a_key_the_console_does_not_know_opens_its_draft_with_a_warning(
    logged_in_page,
):
    page = logged_in_page
    pasted = {**BODY, **CHANNELS, "newerAihcField": {"enabled": True}}
    page.click("#nav-create-job")
    page.fill("#import-body", json.dumps(pasted, indent=2))
    page.select_option("#import-pool", "local")
    page.click("#import-submit")

    page.wait_for_url(lambda url: url.endswith("/basic/"))
    expect(page.locator(".alert-warning")).to_contain_text(
        "请求中的字段 newerAihcField 未被读取（本控制台不认识这些字段）。它们没有导入草稿。"
    )
    expect(page.locator("#id_name")).to_have_value("llm-pretrain")
    assert reverse("wizard-start") != page.url


# -- review 18 ---------------------------------------------------------------------------


def test_a_key_with_control_or_direction_characters_is_named_with_them_escaped(api, alice_client):
    """Found in review: a key holding U+202E RIGHT-TO-LEFT OVERRIDE or a newline was named as
    it was, so it could turn the event's text around it on the page staff read, or break a
    log line; it is named with such characters escaped (HTML in it is escaped by the page)."""
    key = "x\u202ecod<b>e\nSource"

    answer = create_v1(api, body(**{key: 1}))

    escaped = "x\\u202ecod<b>e\\u000aSource"
    assert answer["warnings"][0]["fields"] == [escaped]
    job = Job.objects.get(public_id=answer["result"]["jobId"])
    message = job.events.get(reason="FieldsNotRead").message
    assert escaped in message and "\u202e" not in message and "\n" not in message
    page = alice_client.get(f"/jobs/{job.public_id}/").content.decode()
    assert "x\\u202ecod&lt;b&gt;e\\u000aSource" in page
    assert "\u202e" not in page and "<b>e" not in page


@pytest.mark.browser
def test_the_owner_reads_a_key_with_a_direction_override_escaped_in_the_jobs_events(
    api, logged_in_page
):
    answer = create_v1(api, body(**{"x\u202ecodeSource": 1}))
    page = logged_in_page

    page.reload()  # the job list, where the job made meanwhile now shows
    page.click(f"a[href='/jobs/{answer['result']['jobId']}/']")

    event = page.locator("#events li", has_text="x\\u202ecodeSource")
    expect(event).to_contain_text("请求字段未读取")
    assert "\u202e" not in event.inner_text()


def test_envs_given_as_an_object_are_refused_as_not_a_list_not_as_misplaced_keys(api):
    """Found in review: `envs` as {"name": ..., "value": ...} was refused as if `name` were
    the job's name put in the wrong place; the parser's own refusal (a list is needed) is
    what the client reads."""
    job_body = body()
    job_body["jobSpec"]["envs"] = {"name": "HF_HOME", "value": "/cache"}

    error = v1.refused(lambda: api.create_job(pool="local", body=job_body))

    assert error.message.startswith("jobSpec.envs: ")
    assert "belongs" not in error.message and "name" not in error.message
    assert not Job.objects.exists()


def test_thousands_of_keys_not_read_are_answered_in_words_of_bounded_size(api):
    """Found in review: a body of 250,000 misplaced keys (2.5 MB) was refused with a 12 MB
    message, and one of as many unknown keys answered with every path. At most 20 misplaced
    keys are named (the rest counted), and the warning lists 100 paths and counts the rest."""
    misplaced = body()
    misplaced["jobSpec"]["envs"] = [
        {"name": f"E{n}", "value": "1", "key": n + 1} for n in range(30)
    ]

    error = v1.refused(lambda: api.create_job(pool="local", body=misplaced))

    assert error.message.count("'key' belongs in labels[].") == 20
    assert "jobSpec.envs[19].key" in error.message and "envs[20]" not in error.message
    assert error.message.endswith("10 more keys are not read where they are.")

    answer = create_v1(api, body(**{f"x{n:03}": n + 1 for n in range(130)}))

    warning = answer["warnings"][0]
    assert warning["fields"] == [f"x{n:03}" for n in range(100)]
    assert warning["moreFields"] == 30
    assert warning["message"].endswith(
        "x019 and 110 more were not read (not known to this console)."
    )


@pytest.mark.usefixtures("_local_pool")
def test_a_v1_body_with_faultToleranceArgs_imports_as_the_api_reads_it(alice_client):
    """Found in review: AIHC's Go SDK sends `faultToleranceArgs` in v1 bodies (beside
    `jobFramework`), which the API now reads; the import took such a body for a v2 one and
    refused its `jobFramework` as v1's name of `jobType`."""
    pasted = {
        **{k: v for k, v in BODY.items() if k != "faultToleranceConfig"},
        **CHANNELS,
        "faultToleranceArgs": "--enable-hang-detection=true --hang-detection-log-timeout-minutes=30",
    }

    r = import_body(alice_client, pasted)

    assert r.status_code == 302, error_texts(r)
    # The wizard's fault tolerance step holds the flags as the API reads them.
    assert Draft.objects.get().data["fault"] == {
        "fault_tolerance": ["on"],
        "hang_detection": ["on"],
        "hang_minutes": ["30"],
    }


@pytest.mark.usefixtures("_local_pool")
def test_an_imported_start_up_toleration_opens_in_the_wizards_fault_step(alice_client):
    pasted = {
        **{k: v for k, v in BODY.items() if k != "faultToleranceConfig"},
        **CHANNELS,
        "faultToleranceArgs": "--enable-hang-detection=true --hang-detection-log-timeout-minutes=7 "
        "--hang-detection-startup-toleration-minutes=20",
    }

    r = import_body(alice_client, pasted)

    assert r.status_code == 302, error_texts(r)
    assert Draft.objects.get().data["fault"] == {
        "fault_tolerance": ["on"],
        "hang_detection": ["on"],
        "hang_minutes": ["7"],
        "hang_startup_minutes": ["20"],
    }


@pytest.mark.browser
@pytest.mark.usefixtures("_local_pool")
def test_a_pasted_v1_body_with_faultToleranceArgs_opens_a_draft_with_hang_detection_on(
    logged_in_page, settings, tmp_path
):
    # The body's cards and volume, over runner_settings' pool (applied after _local_pool).
    settings.LOCAL_ACCELERATORS = f"{v1.A800}=8"
    settings.LOCAL_VOLUMES = f"scratch={tmp_path}"
    page = logged_in_page
    pasted = {
        **{k: v for k, v in BODY.items() if k != "faultToleranceConfig"},
        **CHANNELS,
        "faultToleranceArgs": "--enable-hang-detection=true --hang-detection-log-timeout-minutes=30",
    }
    page.click("#nav-create-job")
    page.fill("#import-body", json.dumps(pasted, indent=2))
    page.select_option("#import-pool", "local")
    page.click("#import-submit")

    page.wait_for_url(lambda url: url.endswith("/basic/"))
    expect(page.locator("#id_name")).to_have_value("llm-pretrain")
    page.goto(page.url.replace("/basic/", "/fault/"))
    assert page.url.endswith("/fault/")
    expect(page.locator("#id_hang_detection")).to_be_checked()
    expect(page.locator("#id_hang_minutes")).to_have_value("30")


def test_the_go_sdks_unset_fields_sent_as_zero_values_are_not_named(api):
    """Found in review: AIHC's Go SDK (OpenAPIJobCreateRequest) sends every field of its
    structs, unset ones as Go's zero values: every create from it was warned about
    `codeSource` and each mount's `options`, which ask for nothing."""
    job_body = body(
        codeSource={
            "filePath": "",
            "mountPath": "",
            "id": "",
            "bosObjectName": "",
            "bosTemporaryToken": "",
            "bosEndpoint": "",
            "bosBucket": "",
        },
        alertConfig=None,
        enableBccl=False,
        logCollectionFilePatterns=None,
    )
    options = {"sizeLimit": 0, "medium": "", "readOnly": False, "cfsInstanceId": ""}
    job_body["datasources"][0]["options"] = {**options, "cfsMountPoint": ""}

    answer = create_v1(api, job_body)

    assert "warnings" not in answer
    assert not Job.objects.get().events.filter(reason="FieldsNotRead").exists()

    # A value that asks for something is named still.
    job_body["datasources"][0]["options"]["sizeLimit"] = 1000
    job_body["codeSource"]["filePath"] = "./src"
    again = create_v1(api, {**job_body, "name": "with-values"})
    assert again["warnings"][0]["fields"] == ["datasources[0].options.sizeLimit", "codeSource"]


def test_a_v1_body_as_aihcs_go_sdk_writes_it_creates_a_job_with_no_warning(api):
    """Found in review: AIHC's Go SDK (services/aihc/api/v1 OpenAPIJobCreateRequest) writes
    every field of its structs, the unset ones as Go's zero values; its body was refused
    (`imageConfig` {"username": "", "password": ""} read as a private registry missing both)
    or, that fixed, warned about `codeSource`. It creates the job it asks for."""
    go_body = {
        "name": "from-the-go-sdk",
        "queue": "",
        "jobFramework": "",
        "jobSpec": {
            "command": "echo hello",
            "image": "python:3.12",
            "imageConfig": {"username": "", "password": ""},
            "replicas": 1,
            "resources": [{"name": "cpu", "quantity": 1}],
            "envs": None,
            "enableRDMA": False,
        },
        "faultTolerance": False,
        "labels": None,
        "priority": "",
        "datasources": None,
        "codeSource": {
            "filePath": "",
            "mountPath": "",
            "id": "",
            "bosObjectName": "",
            "bosTemporaryToken": "",
            "bosEndpoint": "",
            "bosBucket": "",
        },
        "alertConfig": None,
        "enableBccl": False,
        "logCollectionFilePatterns": None,
    }

    answer = create_v1(api, go_body)

    assert "warnings" not in answer
    spec = Job.objects.get(public_id=answer["result"]["jobId"]).job_spec()
    assert spec.image_config is None
    assert (spec.queue, spec.priority, spec.framework) == ("default", "normal", "PyTorchJob")
