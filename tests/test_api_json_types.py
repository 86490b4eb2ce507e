"""A CreateJob body's values are of the JSON type AIHC's server declares (qa97): a whole
number sent as text and text sent as a number are refused on their field, as AIHC's Go
server refuses them; a resource's quantity as text is taken, as Baidu's SDKs and CLI send it."""

from __future__ import annotations

import pytest

from jobs.models import Job

from . import test_api as v1
from .runner_helpers import runner_settings  # noqa: F401
from .signed_requests import signed_request
from .test_api import body
from .test_api_v2 import v2_body

# The v1 tests' fixtures: the console as a WSGI transport and Alice's key.
wsgi, alice_key = v1.wsgi, v1.alice_key

pytestmark = pytest.mark.usefixtures("runner_settings")

JSON = {"Content-Type": "application/json"}
WHOLE_NUMBER = 'Must be a whole number: a JSON number, without quotes (2, not "2").'
TEXT = 'Must be text: a JSON string, in quotes ("1", not 1).'


def v1_create(wsgi, alice_key, document):
    return signed_request(wsgi, alice_key, method="POST", headers=JSON, json=document)


def test_replicas_sent_as_text_are_refused_on_their_field_and_create_nothing(wsgi, alice_key):
    document = body()
    document["jobSpec"]["replicas"] = "2"

    r = v1_create(wsgi, alice_key, document)

    assert (r.status_code, r.json()["code"]) == (400, "InvalidParameter")
    assert {"field": "jobSpec.replicas", "message": WHOLE_NUMBER} in r.json()["errors"]
    assert r.json()["message"].startswith(f"jobSpec.replicas: {WHOLE_NUMBER}")
    assert Job.objects.count() == 0


def test_a_number_sent_as_text_is_refused_with_its_own_value_as_the_example(wsgi, alice_key):
    # qa105: the example was always ("1", not 1) and (2, not "2"), whatever was sent.
    document = body()
    document["jobSpec"]["replicas"] = "3"
    document["jobSpec"]["envs"] = [{"name": "EPOCHS", "value": 5}, {"name": "LR", "value": 3e-4}]

    r = v1_create(wsgi, alice_key, document)

    assert (r.status_code, r.json()["code"]) == (400, "InvalidParameter")
    assert r.json()["errors"] == [
        {
            "field": "jobSpec.replicas",
            "message": 'Must be a whole number: a JSON number, without quotes (3, not "3").',
        },
        {
            "field": "jobSpec.envs[0].value",
            "message": 'Must be text: a JSON string, in quotes ("5", not 5).',
        },
        {
            "field": "jobSpec.envs[1].value",
            "message": 'Must be text: a JSON string, in quotes ("0.0003", not 0.0003).',
        },
    ]
    assert Job.objects.count() == 0


@pytest.mark.parametrize(
    ("sent", "said"),
    [("yes", '(true, not "yes")'), (1, "(true, not 1)"), ("no", '(false, not "no")')],
)
def test_a_yes_or_no_that_is_no_json_boolean_is_refused_saying_how_to_write_it(
    wsgi, alice_key, sent, said
):
    # qa105: "true" as text is taken (README's decision), "yes" and 1 were told only "Must be
    # true or false.", which read as a rule about words.
    r = v1_create(wsgi, alice_key, body(faultTolerance=sent))

    assert (r.status_code, r.json()["code"]) == (400, "InvalidParameter")
    assert r.json()["errors"] == [
        {
            "field": "faultTolerance",
            "message": f"Must be true or false: a JSON boolean, without quotes {said}.",
        }
    ]
    assert Job.objects.count() == 0


def test_true_as_text_is_taken_as_readme_decides(wsgi, alice_key):
    r = v1_create(wsgi, alice_key, body(faultTolerance="true"))

    assert r.status_code == 200, r.json()
    assert Job.objects.get().job_spec().fault_tolerance is True


def test_a_secret_envs_value_sent_as_a_number_is_refused_without_quoting_it_back(wsgi, alice_key):
    document = body()
    document["jobSpec"]["envs"] = [{"name": "DB_PASSWORD", "value": 987654}]

    r = v1_create(wsgi, alice_key, document)

    assert (r.status_code, r.json()["code"]) == (400, "InvalidParameter")
    assert {"field": "jobSpec.envs[0].value", "message": TEXT} in r.json()["errors"]
    assert "987654" not in r.text
    assert Job.objects.count() == 0


def test_a_registry_password_sent_as_a_number_is_refused_without_quoting_it_back(wsgi, alice_key):
    document = body()
    document["jobSpec"]["imageConfig"] = {"username": "u", "password": 98765432}

    r = v1_create(wsgi, alice_key, document)

    assert (r.status_code, r.json()["code"]) == (400, "InvalidParameter")
    assert {"field": "jobSpec.imageConfig.password", "message": TEXT} in r.json()["errors"]
    assert "98765432" not in r.text
    assert Job.objects.count() == 0


def _with_alert_channel(document, key, value):
    document.setdefault("console", {})["alertChannels"] = {key: [value]}


def _with_alert_config(document, key, value):
    document["alertConfig"] = {"alertItems": ["failed"], key: value}


def _with_source_path(document, value):
    document["datasources"][0]["sourcePath"] = value


@pytest.mark.parametrize(
    ("field", "put"),
    [
        ("jobSpec.imageConfig.username", lambda d, v: d["jobSpec"].update(imageConfig={"username": v, "password": "p"})),
        ("console.alertChannels.webhooks", lambda d, v: _with_alert_channel(d, "webhooks", v)),
        ("console.alertChannels.emails", lambda d, v: _with_alert_channel(d, "emails", v)),
        ("alertConfig.instanceId", lambda d, v: _with_alert_config(d, "instanceId", v)),
        ("alertConfig.notifyRuleId", lambda d, v: _with_alert_config(d, "notifyRuleId", v)),
        ("datasources[0].sourcePath", _with_source_path),
    ],
)  # fmt: skip
def test_a_credential_bearing_field_sent_as_a_number_is_refused_without_quoting_it_back(
    wsgi, alice_key, field, put
):
    document = body()
    put(document, 31415926535)

    r = v1_create(wsgi, alice_key, document)

    assert (r.status_code, r.json()["code"]) == (400, "InvalidParameter")
    assert {"field": field, "message": TEXT} in r.json()["errors"]
    assert "31415926535" not in r.text
    assert Job.objects.count() == 0


def test_a_v2_bodys_replicas_as_text_are_refused_on_the_v2_path(wsgi, alice_key):
    document = v2_body()
    document["jobSpec"]["replicas"] = "2"
    query = [("action", "CreateJob"), ("resourcePoolId", "local")]

    r = signed_request(
        wsgi, alice_key, method="POST", path="/", query=query,
        headers={**JSON, "X-API-Version": "v2"}, json=document,
    )  # fmt: skip

    assert (r.status_code, r.json()["code"]) == (400, "InvalidParameter")
    assert {"field": "jobSpec.replicas", "message": WHOLE_NUMBER} in r.json()["errors"]
    assert Job.objects.count() == 0


def test_a_quantity_sent_as_text_is_taken_as_baidus_sdks_send_it(wsgi, alice_key):
    document = body()
    document["jobSpec"]["resources"] = [{"name": "cpu", "quantity": "2"}]

    r = v1_create(wsgi, alice_key, document)

    assert r.status_code == 200, r.json()
    job = Job.objects.get(public_id=r.json()["result"]["jobId"])
    assert {role.cpu for role in job.job_spec().roles} == {2}
