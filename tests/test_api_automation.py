"""The AIHC-compatible API as an MLOps pipeline drives it (QA 57): many jobs made, listed,
followed and cleaned up by scripts. Here: following a pod's log with DescribeJobLogs'
`marker`, so that a script polling a log gets every line once, however much was printed
between two polls and across the cuts that keep a log under LOCAL_LOG_MAX_MB."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from django.core import signals
from django.core.handlers.wsgi import WSGIHandler
from django.db import close_old_connections

from jobs.aihc.client import AihcClient, AihcError, Credentials
from jobs.aihc.endpoints import V2
from jobs.api_keys import api_key_create
from jobs.logs import LogMarker, log_read
from jobs.models import Job, JobStatus
from jobs.shim import ReplicaLog, job_line
from jobs.worker import Worker

from .runner_helpers import (
    UNTIL_THE_GATE_OPENS,
    open_gate,
    run_until,
    runner_settings,  # noqa: F401
    status_of,
)

pytestmark = pytest.mark.usefixtures("runner_settings")


@pytest.fixture
def api(alice) -> Iterator[AihcClient]:
    """The console's own AIHC client on the console's WSGI application, as test_api's."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    key, secret = api_key_create(owner=alice, description="pipeline")
    try:
        yield AihcClient(
            endpoint="http://testserver",
            credentials=Credentials(key.access_key_id, secret),
            transport=httpx.WSGITransport(app=WSGIHandler()),
            retries=0,
        )
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)


def printing(command: str) -> dict:
    return {
        "name": "printer",
        "queue": "default",
        "jobFramework": "PyTorchJob",
        "jobSpec": {
            "command": command,
            "image": "python:3.12",
            "replicas": 1,
            "resources": [{"name": "cpu", "quantity": 1}],
        },
        "datasources": [{"type": "hostpath", "name": "work", "mountPath": "/workspace"}],
    }


def logs_v1(api: AihcClient, job_id: str, **query: str) -> dict:
    return api.request(
        "GET",
        f"/api/v1/aijobs/{job_id}/pods/printer-master-0/logs",
        params=[("resourcePoolId", "local"), *query.items()],
        idempotent=True,
    )["result"]


def logs_v2(api: AihcClient, job_id: str, **body: str) -> dict:
    return api._v2(
        "DescribeJobLogs",
        pool="local",
        body={"jobId": job_id, "podName": "printer-master-0", **body},
        idempotent=True,
    )


def output(lines: list[str]) -> list[str]:
    """The job's own lines of an answer ("line N"), without their stamps."""
    texts = [line.split(" ", 1)[1] for line in lines]
    return [text for text in texts if text.startswith("line ")]


def test_a_script_following_a_log_with_its_marker_gets_every_line_once_however_many_came_between_polls(
    api, settings
):
    """3,000 lines printed at once, in a few milliseconds, then 1,000 more: a script reading
    1,000 lines a poll, in v1 and v2 alike, gets each line once and in order. Before, v2
    refused `marker`, v1 ignored it, and `startTime` could not tell apart the lines of one
    millisecond: polling from the last line's time repeated them, and the last maxLines
    since it dropped the 2,000 before them."""
    command = (
        "for i in $(seq 1 3000); do echo line $i; done; "
        f"{UNTIL_THE_GATE_OPENS}; for i in $(seq 3001 4000); do echo line $i; done"
    )
    created = api.create_job(pool="local", body=printing(command))
    job = Job.objects.get(public_id=created["jobId"])
    worker = Worker()
    run_until(
        worker,
        lambda: "line 3000" in "".join(logs_v1(api, job.public_id, maxLines="1")["logs"]),
        what="the first 3,000 lines",
    )
    got_v1: list[str] = []
    got_v2: list[str] = []
    marker_v1 = marker_v2 = "0.0"  # the log's start

    def poll() -> None:
        nonlocal marker_v1, marker_v2
        while True:
            one = logs_v1(api, job.public_id, maxLines="1000", marker=marker_v1)
            two = logs_v2(api, job.public_id, maxLines="1000", marker=marker_v2)
            got_v1.extend(output(one["logs"]))
            got_v2.extend(output(two["logs"]))
            marker_v1, marker_v2 = one["nextMarker"], two["nextMarker"]
            if not one["logs"] and not two["logs"]:
                return

    poll()
    assert got_v1 == got_v2 == [f"line {n}" for n in range(1, 3001)]
    open_gate(settings)
    run_until(worker, lambda: status_of(job) == JobStatus.SUCCEEDED, what="the job to end")
    poll()
    assert got_v1 == got_v2 == [f"line {n}" for n in range(1, 4001)]
    # Without a marker the answer is the last lines, as before, with the marker after them.
    tail = logs_v1(api, job.public_id, maxLines="2")
    assert tail["logs"][-1].endswith("[console] master-0 exited with code 0")
    assert logs_v1(api, job.public_id, marker=tail["nextMarker"])["logs"] == []


def test_a_marker_that_is_not_one_is_refused_naming_what_to_give(api):
    created = api.create_job(pool="local", body=printing("echo hi"))
    for given in ("yesterday", "1.2.3", "-1.0"):
        with pytest.raises(AihcError) as refused:
            api._v2(
                "DescribeJobLogs",
                pool="local",
                body={"jobId": created["jobId"], "podName": "printer-master-0", "marker": given},
                idempotent=True,
            )
        assert (refused.value.status, refused.value.code) == (400, "InvalidParameter")
        assert "nextMarker of an earlier answer, or 0.0" in refused.value.message
    with pytest.raises(AihcError) as both:
        logs_v1(api, created["jobId"], marker="0.0", startTime="1")
    assert (both.value.status, both.value.code) == (400, "InvalidParameter")


STARTED = datetime(2026, 12, 4, 8, 0, tzinfo=UTC)


def stamped(n: int) -> bytes:
    """The stamp of line n: ten lines in each millisecond, as a loop prints them."""
    moment = STARTED + timedelta(microseconds=(n // 10) * 1000)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ ").encode()


def test_a_log_read_on_with_its_marker_across_its_cuts_repeats_no_line_and_says_what_was_dropped(
    tmp_path,
):
    """The shim cuts a log's middle when it passes LOCAL_LOG_MAX_MB, rewriting the file: a
    byte offset would point elsewhere after it. A marker is a stamp and a count, found again
    in the file as it is now: a reader keeping up loses nothing, and one that fell behind
    the cut gets the cut's own line, then the lines kept after it, none twice."""
    path = tmp_path / "master-0.log"
    log = ReplicaLog(
        str(path),
        limit_mb=1,
        cut_line="[console] log over {limit} MB: {dropped} bytes dropped here",
        cut_record=str(tmp_path / "master-0.log.cut.json"),
    )
    keeping_up: list[str] = []
    behind: list[str] = []
    marker = LogMarker(0, 0)
    written = 0
    payload = "x" * 180
    try:
        for burst in range(40):  # 40 × 500 lines of ~220 bytes: 4.4 MB, several cuts
            for n in range(written, written + 500):
                log.write(job_line(stamped(n), f"line {n} {payload}".encode()))
            written += 500
            lines, marker = log_read(path, count=10_000, marker=marker)
            keeping_up.extend(lines)
            if burst == 1:
                behind_marker = marker  # this reader stops reading here, for a while
    finally:
        log.close()
    assert (tmp_path / "master-0.log.cut.json").exists()  # it was cut
    assert [line.split(" ")[2] for line in keeping_up] == [str(n) for n in range(written)]

    while True:
        lines, behind_marker = log_read(path, count=1_000, marker=behind_marker)
        if not lines:
            break
        behind.extend(lines)
    cuts = [i for i, line in enumerate(behind) if "bytes dropped here" in line]
    assert len(cuts) == 1  # the file holds one: the latest cut's, counting them all
    number = [int(line.split(" ")[2]) for line in behind if "bytes dropped here" not in line]
    before, after = number[: cuts[0]], number[cuts[0] :]
    # The log's first quarter, which every cut keeps, from where the reader stopped...
    assert before == list(range(1000, before[-1] + 1))
    # ...then the lines kept after the cut to the end; those between were dropped.
    assert after == list(range(after[0], written))
    assert after[0] > before[-1] + 1000


def v2_body(name: str = "retried") -> dict:
    return {
        "name": name,
        "queue": "default",
        "jobType": "PyTorchJob",
        "command": "echo hi",
        "jobSpec": {
            "image": "python:3.12",
            "replicas": 1,
            "resources": [{"name": "cpu", "quantity": 1}],
        },
    }


def test_a_create_retried_with_its_client_token_in_the_body_makes_one_job_v1_and_v2(api, alice):
    """v2 takes an action's parameters from the query or the body, so a script may well put
    clientToken in CreateJob's body. Before, it was named in `warnings` as a field "not known
    to this console" and not used: each retry made one more job."""
    v2 = [api.create_job(pool="local", body={**v2_body(), "clientToken": "t-1"}, version=V2)]
    v2.append(api.create_job(pool="local", body={**v2_body(), "clientToken": "t-1"}, version=V2))
    v1 = [api.create_job(pool="local", body={**printing("echo hi"), "clientToken": "t-2"})]
    v1.append(api.create_job(pool="local", body={**printing("echo hi"), "clientToken": "t-2"}))

    assert v2[0] == v2[1] and v1[0] == v1[1]
    assert Job.objects.filter(owner=alice).count() == 2
    job = Job.objects.get(public_id=v2[0]["jobId"])
    assert not job.events.filter(reason="FieldsNotRead").exists()  # read, not named
    assert "clientToken" not in job.spec  # a parameter of the request, not of the job


def test_a_client_token_in_the_body_is_read_not_named_and_one_not_text_is_refused(api):
    answer = api._v2(
        "CreateJob",
        pool="local",
        queue="default",
        body={**v2_body(), "clientToken": "t-3"},
        idempotent=False,
    )
    assert "warnings" not in answer
    with pytest.raises(AihcError) as refused:
        api._v2(
            "CreateJob",
            pool="local",
            queue="default",
            body={**v2_body(), "clientToken": {"id": 1}},
            idempotent=False,
        )
    assert (refused.value.status, refused.value.code) == (400, "InvalidParameter")
    assert refused.value.message == "clientToken must be a string or a number."


@pytest.mark.parametrize("token", [True, False])
def test_a_client_token_that_is_a_boolean_is_refused_in_v1_and_v2_and_makes_no_job(
    api, alice, token
):
    """Read as "true" it was taken, and a later create with the string "true" was its retry
    (qa111)."""
    with pytest.raises(AihcError) as v2:
        api._v2(
            "CreateJob",
            pool="local",
            queue="default",
            body={**v2_body(), "clientToken": token},
            idempotent=False,
        )
    with pytest.raises(AihcError) as v1:
        api.create_job(pool="local", body={**printing("echo hi"), "clientToken": token})

    for refused in (v2, v1):
        assert (refused.value.status, refused.value.code) == (400, "InvalidParameter")
        assert refused.value.message == "clientToken must be a string or a number."
    assert not Job.objects.filter(owner=alice).exists()


def test_paging_in_creation_order_lists_each_job_once_while_new_jobs_arrive(api, alice):
    """README "Paging while jobs come and go": with order=asc a job made between two pages
    lands on a later page, so a script walking pageNo sees every job once (with the default,
    newest first, it pushes the older ones down and the next page repeats one)."""
    made = [api.create_job(pool="local", body=printing(f"echo {n}"))["jobId"] for n in range(25)]
    seen: list[str] = []
    page = 1
    while True:
        answer = api.request(
            "GET",
            "/api/v1/aijobs",
            params=[
                ("resourcePoolId", "local"),
                ("order", "asc"),
                ("pageNo", str(page)),
                ("pageSize", "10"),
            ],
            idempotent=True,
        )["result"]
        if not answer["jobs"]:
            break
        seen.extend(job["jobId"] for job in answer["jobs"])
        if page <= 2:  # more arrive while the script pages
            made.append(api.create_job(pool="local", body=printing("echo new"))["jobId"])
        page += 1
    assert seen == made


@pytest.fixture
def jobs_table_gone(transactional_db) -> Iterator[None]:
    """The jobs table renamed away behind Django's back: 'no such table', an error no view
    expects. (A database held by another writer was the error here until QA 69, which made it
    a 503 'database is busy': tests/test_database_busy.py.)"""
    from django.db import connection

    if connection.vendor != "sqlite":
        pytest.skip("renames a table the SQLite way, behind Django's back")
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE jobs_job RENAME TO jobs_job_away")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("ALTER TABLE jobs_job_away RENAME TO jobs_job")


def test_a_server_error_answers_a_script_bces_json_error_not_the_html_page(api, jobs_table_gone):
    """Before, a script got Django's HTML 500 page, which Baidu's SDK failed to parse
    (JSONDecodeError): no code, no request id. Now 500 InternalError in BCE's shape, in
    both API versions."""
    for call in (
        lambda: api.create_job(pool="local", body=printing("echo hi")),
        lambda: api._v2(
            "CreateJob", pool="local", queue="default", body=v2_body(), idempotent=False
        ),
    ):
        with pytest.raises(AihcError) as failed:
            call()
        assert (failed.value.status, failed.value.code) == (500, "InternalError")
        assert failed.value.message.startswith("The console met an error it did not expect")
        assert failed.value.request_id


def test_a_browser_still_gets_the_server_error_page_and_a_script_the_json(rf):
    from jobs.http import server_error

    page = server_error(rf.get("/jobs/"))
    signed = server_error(
        rf.get("/", HTTP_AUTHORIZATION="bce-auth-v1/AK/2026-12-04T08:00:00Z/1800//x")
    )
    assert page.status_code == signed.status_code == 500
    assert '服务器错误 · <span lang="en">Server error</span>' in page.content.decode()
    assert signed["Content-Type"] == "application/json"
    assert json.loads(signed.content)["code"] == "InternalError"
    assert json.loads(signed.content)["requestId"] == signed["x-bce-request-id"]


def test_a_delete_sent_again_is_told_the_job_was_deleted_when_and_with_which_key(api, alice):
    """A DeleteJob whose answer was lost, sent again, gets JobNotFound (the code a script
    treats as gone), and the message now says the job was deleted, when and with which key,
    rather than read as an id the script got wrong."""
    created = api.create_job(pool="local", body=printing("echo hi"))
    api.delete_job(pool="local", job_id=created["jobId"])
    key_id = api.credentials.access_key

    for again in (
        lambda: api.delete_job(pool="local", job_id=created["jobId"]),
        lambda: api._v2(
            "DescribeJob", pool="local", body={"jobId": created["jobId"]}, idempotent=True
        ),
    ):
        with pytest.raises(AihcError) as gone:
            again()
        assert (gone.value.status, gone.value.code) == (404, "JobNotFound")
        assert gone.value.message.startswith(
            f"Job {created['jobId']} not found: it was deleted at "
        )
        assert gone.value.message.endswith(f" with API key {key_id}.")
    with pytest.raises(AihcError) as never:
        api.delete_job(pool="local", job_id="pytorchjob-never-made")
    assert never.value.message == "Job pytorchjob-never-made not found."


def events_v1(api: AihcClient, job_id: str, **query: str) -> dict:
    return api.request(
        "GET",
        f"/api/v1/aijobs/{job_id}/events",
        params=[("resourcePoolId", "local"), *query.items()],
        idempotent=True,
    )["result"]


def test_a_script_polling_events_with_their_marker_gets_each_new_event_once(api):
    """Events hold whole seconds, and several happen in one (a create, a stop): polling from
    the last event's time answered them again, and from the next second could lose one
    recorded later in that second. A marker names the last event answered."""
    created = api.create_job(pool="local", body=printing(UNTIL_THE_GATE_OPENS))
    first = events_v1(api, created["jobId"])
    assert [e["reason"] for e in first["events"]] == ["Created"]

    api.stop_job(pool="local", job_id=created["jobId"])
    new = events_v1(api, created["jobId"], marker=first["nextMarker"])
    new_v2 = api._v2(
        "DescribeJobEvents",
        pool="local",
        body={"jobId": created["jobId"], "marker": first["nextMarker"]},
        idempotent=True,
    )
    assert [e["reason"] for e in new["events"]] == ["Stopped"]
    assert new_v2["events"] == new["events"] and new_v2["nextMarker"] == new["nextMarker"]
    assert new["total"] == 1
    nothing = events_v1(api, created["jobId"], marker=new["nextMarker"])
    assert (nothing["events"], nothing["nextMarker"]) == ([], new["nextMarker"])

    with pytest.raises(AihcError) as refused:
        events_v1(api, created["jobId"], marker="yesterday")
    assert (refused.value.status, refused.value.code) == (400, "InvalidParameter")
    assert refused.value.message == "marker is the nextMarker of an earlier answer."


def test_a_method_refused_names_those_served_and_a_trailing_slash_is_said_to_be_one(api):
    """A 405 had no Allow header (RFC 9110 asks for one), and /api/v1/aijobs/ was "not served"
    as if the console had no job list, though only the slash was wrong."""
    wsgi = httpx.WSGITransport(app=WSGIHandler())
    with httpx.Client(transport=wsgi, base_url="http://testserver") as http:
        options = http.options("/api/v1/aijobs?resourcePoolId=local")
    assert (options.status_code, options.json()["code"]) == (405, "MethodNotAllowed")
    assert options.headers["Allow"] == "GET, POST, HEAD"
    assert options.json()["message"] == "OPTIONS is not served here: GET, POST, HEAD."
    with pytest.raises(AihcError) as by_get:
        api._v2("CreateJob", pool="local", body=v2_body(), method="GET", idempotent=False)
    assert (by_get.value.status, by_get.value.message) == (405, "CreateJob takes POST.")

    with pytest.raises(AihcError) as slashed:
        api.request("GET", "/api/v1/aijobs/", params=[("resourcePoolId", "local")], idempotent=True)
    assert (slashed.value.status, slashed.value.code) == (404, "NotFound")
    assert slashed.value.message == (
        "/api/v1/aijobs/ is not served: AIHC's paths end without a slash, /api/v1/aijobs."
    )
    with pytest.raises(AihcError) as unknown:
        api.request("GET", "/api/v1/nodes/", idempotent=True)
    assert unknown.value.message.startswith("/api/v1/nodes/ is not served: this console serves")


def test_a_create_sent_again_answers_its_job_even_when_the_console_would_now_refuse_it(
    api, alice, settings
):
    """Between a create whose answer was lost and its retry, the local runner was turned off
    (CONSOLE_BACKENDS): the retry was refused, 404 ResourcePoolNotFound, though its job had
    been made, and the script reported a failed create for a job that runs. The token finds
    the job before anything is checked again."""
    sent = {**printing("echo hi"), "clientToken": "nightly-42"}
    first = api.create_job(pool="local", body=sent)
    settings.CONSOLE_BACKENDS = ["kubernetes"]

    again = api.create_job(pool="local", body=sent)

    assert again == first
    assert Job.objects.filter(owner=alice).count() == 1
    with pytest.raises(AihcError) as refused:  # a new create is refused, as before
        api.create_job(pool="local", body={**sent, "clientToken": "nightly-43"})
    assert refused.value.code == "ResourcePoolNotFound"
