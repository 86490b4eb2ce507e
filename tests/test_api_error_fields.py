"""What an API refusal tells a script beyond AIHC's `message` (qa97): an InvalidParameter's
`errors`, one item per field as the body names it, and a refused signature's canonical
request and auth string prefix, so that a script author can diff their own signing."""

from __future__ import annotations

import json

import httpx
import pytest

from jobs.aihc import signer
from jobs.models import Job

from . import test_api as v1
from .runner_helpers import runner_settings  # noqa: F401
from .signed_requests import CONSOLE, signed_headers, signed_request
from .test_api import body
from .test_api_v2 import v2_body

# The v1 tests' fixtures: the console as a WSGI transport and Alice's key.
wsgi, alice_key = v1.wsgi, v1.alice_key

pytestmark = pytest.mark.usefixtures("runner_settings")

JSON = {"Content-Type": "application/json"}
IN_CHINESE = {**JSON, "Accept-Language": "zh-CN"}


def v1_create(wsgi, alice_key, document, headers=JSON) -> httpx.Response:
    return signed_request(wsgi, alice_key, method="POST", headers=headers, json=document)


def v2_create(wsgi, alice_key, document, **query) -> httpx.Response:
    params = [("action", "CreateJob"), ("resourcePoolId", "local"), *query.items()]
    return signed_request(
        wsgi, alice_key, method="POST", path="/", query=params,
        headers={**JSON, "X-API-Version": "v2"}, json=document,
    )  # fmt: skip


def nameless_imageless(document: dict) -> dict:
    document["name"] = ""
    document["jobSpec"]["image"] = ""
    return document


def test_a_v1_create_refused_for_two_fields_lists_each_field_with_its_message_beside_message(
    wsgi, alice_key
):
    r = v1_create(wsgi, alice_key, nameless_imageless(body()))

    assert (r.status_code, r.json()["code"]) == (400, "InvalidParameter")
    errors = r.json()["errors"]
    assert [e["field"] for e in errors] == ["name", "jobSpec.image"]
    assert errors[0]["message"] == "Enter a job name."
    assert errors[1]["message"] == "Enter an image address."
    # `message` is as it was: scripts read it.
    assert r.json()["message"].startswith(
        "name: Enter a job name. jobSpec.image: Enter an image address."
    )
    assert Job.objects.count() == 0


def test_a_v2_create_refused_lists_its_fields_as_the_v2_body_names_them(wsgi, alice_key):
    document = v2_body(name="")
    document["command"] = ""

    r = v2_create(wsgi, alice_key, document)

    assert (r.status_code, r.json()["code"]) == (400, "InvalidParameter")
    fields = [e["field"] for e in r.json()["errors"]]
    assert fields[:2] == ["name", "command"]
    for error in r.json()["errors"]:
        assert r.json()["message"].count(f"{error['field']}: {error['message']}") == 1
    assert Job.objects.count() == 0


def test_chinese_field_messages_follow_each_other_without_a_semicolon_after_a_full_stop(
    wsgi, alice_key
):
    r = v1_create(wsgi, alice_key, nameless_imageless(body()), headers=IN_CHINESE)

    message = r.json()["message"]
    assert (r.status_code, r.json()["code"]) == (400, "InvalidParameter")
    assert "。; " not in message
    first, second = r.json()["errors"][:2]
    assert f"name: {first['message']}jobSpec.image: {second['message']}" in message
    assert first["message"].endswith("。")
    assert Job.objects.count() == 0


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_a_body_that_is_no_json_object_is_refused_in_message_alone_without_errors(
    wsgi, alice_key, version
):
    # qa105: README says such a refusal has no `errors`; it answered "errors": [].
    create = v1_create if version == "v1" else v2_create

    r = create(wsgi, alice_key, ["not", "a", "job"])

    assert (r.status_code, r.json()["code"]) == (400, "InvalidParameter")
    assert r.json()["message"]
    assert "errors" not in r.json()
    assert Job.objects.count() == 0


def test_a_v1_body_with_a_number_out_of_range_names_it_in_errors_and_not_the_note_after_it(
    wsgi, alice_key
):
    content = json.dumps(body()).replace('"replicas": 1', '"replicas": 1e400').encode()

    r = signed_request(wsgi, alice_key, method="POST", headers=JSON, content=content)

    assert (r.status_code, r.json()["code"]) == (400, "InvalidParameter")
    assert r.json()["errors"] == [
        {
            "field": "jobSpec.replicas",
            "message": "The number 1e400 is out of range: no field takes it.",
        }
    ]
    assert r.json()["message"].endswith(
        "The body's other fields are checked once these are corrected."
    )
    assert Job.objects.count() == 0


def test_a_v2_queue_that_differs_from_queue_id_is_said_under_the_queue_field(
    wsgi, alice_key, settings
):
    settings.LOCAL_QUEUES = ["default", "research"]

    r = v2_create(wsgi, alice_key, v2_body(), queueID="research")

    assert (r.status_code, r.json()["code"]) == (400, "InvalidParameter")
    assert r.json()["message"] == "queue: default and queueID research differ."
    assert r.json()["errors"] == [
        {"field": "queue", "message": "default and queueID research differ."}
    ]
    assert Job.objects.count() == 0


def test_v1s_job_list_says_a_queue_that_differs_from_queue_id_under_the_queue_field(
    wsgi, alice_key
):
    query = [("resourcePoolId", "local"), ("queue", "default"), ("queueID", "local:other")]

    r = signed_request(wsgi, alice_key, method="GET", query=query)

    assert (r.status_code, r.json()["code"]) == (400, "InvalidParameter")
    assert r.json()["message"] == "queue: default and queueID local:other differ."
    assert r.json()["errors"] == [
        {"field": "queue", "message": "default and queueID local:other differ."}
    ]


def test_a_refused_signature_answers_the_canonical_request_and_prefix_the_console_signed(
    wsgi, alice_key
):
    key, secret = alice_key
    query = [("resourcePoolId", "local"), ("pageSize", "5")]
    headers = signed_headers((key, "0" * 32), method="GET", path="/api/v1/aijobs", query=query)
    with httpx.Client(transport=wsgi, base_url=CONSOLE) as http:
        r = http.get("/api/v1/aijobs", params=query, headers=headers)

    assert (r.status_code, r.json()["code"]) == (403, "SignatureDoesNotMatch")
    sent = {"host": "testserver", "x-bce-date": headers["x-bce-date"]}
    assert r.json()["canonicalRequest"] == signer.canonical_request(
        "GET", "/api/v1/aijobs", query, sent
    )
    assert r.json()["canonicalRequest"].startswith(
        "GET\n/api/v1/aijobs\npageSize=5&resourcePoolId=local\n"
    )
    expiration = signer.DEFAULT_EXPIRATION_SECONDS
    prefix = f"bce-auth-v1/{key.access_key_id}/{headers['x-bce-date']}/{expiration}"
    assert r.json()["authStringPrefix"] == prefix
    # Neither the key's secret nor the signing key derived from it is answered.
    assert secret not in r.text
    assert signer.signing_key(secret, prefix) not in r.text


def test_a_refused_signature_names_signed_headers_a_proxy_adds_without_their_values(
    wsgi, alice_key
):
    # A client may list headers its reverse proxy adds as signed: their values (its address
    # as the proxy saw it, the user an ingress vouched for) are not answered back to it.
    key, _secret = alice_key
    proxy_added = {
        "X-Forwarded-For": "203.0.113.7, 10.0.0.2",
        "X-Real-IP": "10.0.0.2",
        "X-Auth-Request-Email": "alice@lab.example",
    }
    headers = signed_headers(
        (key, "0" * 32), method="GET", path="/api/v1/aijobs", query=[],
        headers={**JSON, **proxy_added},
        signed=["host", "x-bce-date", "content-type", *(n.lower() for n in proxy_added)],
    )  # fmt: skip
    with httpx.Client(transport=wsgi, base_url=CONSOLE) as http:
        r = http.get("/api/v1/aijobs", headers=headers)

    assert (r.status_code, r.json()["code"]) == (403, "SignatureDoesNotMatch")
    date = signer.uri_encode(headers["x-bce-date"])
    assert r.json()["canonicalRequest"].split("\n") == [
        "GET",
        "/api/v1/aijobs",
        "",
        "content-type:application%2Fjson",
        "host:testserver",
        "x-auth-request-email:<not shown>",
        f"x-bce-date:{date}",
        "x-forwarded-for:<not shown>",
        "x-real-ip:<not shown>",
    ]
    for value in proxy_added.values():
        assert value not in r.text and signer.uri_encode(value) not in r.text


def test_a_refused_parameter_is_listed_in_errors_under_its_name_in_v1_and_v2(wsgi, alice_key):
    query = [("resourcePoolId", "local"), ("pageSize", "0")]

    v1_list = signed_request(wsgi, alice_key, method="GET", query=query)
    v2_list = signed_request(
        wsgi, alice_key, method="POST", path="/", query=[("action", "DescribeJobs")],
        headers={**JSON, "X-API-Version": "v2"},
        json={"resourcePoolId": "local", "status": "Sleeping"},
    )  # fmt: skip

    assert (v1_list.status_code, v1_list.json()["code"]) == (400, "InvalidParameter")
    message = v1_list.json()["message"]
    assert message.startswith("pageSize is a whole number from 1 to ")
    assert v1_list.json()["errors"] == [{"field": "pageSize", "message": message}]
    assert (v2_list.status_code, v2_list.json()["code"]) == (400, "InvalidParameter")
    assert v2_list.json()["errors"] == [{"field": "status", "message": v2_list.json()["message"]}]
