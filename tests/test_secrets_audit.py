"""QA 53, an audit of secrets (secret env values, registry passwords, a chat bot's signing
secret, log-in passwords, the database's password): never rendered back, logged or put in
events, on the surfaces the earlier rounds had not covered. The others are tested where
their feature is (tests/test_security.py, test_wizard_features.py, test_job_compare.py,
test_api.py, test_wizard_import.py, test_runner_hostile.py...)."""

from __future__ import annotations

import json
import re

import pytest
from django.db import connection
from django.test import Client
from django.urls import reverse

from jobs import wizard as W
from jobs.models import Draft
from tests.test_wizard import (  # noqa: F401  (_local_pool: the wizard's pool of cards)
    _local_pool,
    advanced_data,
    complete_steps,
    image_data,
    new_draft,
    step_url,
)

ENV_SECRET = "hf_audit_env_value_53"
REGISTRY_PASSWORD = "audit-registry-password-53"
BOT_SECRET = "SECaudit0bot0signing053"
LOGIN_PASSWORD = "audit-login-password-53"
DATABASE_PASSWORD = "audit-database-password-53"
BOT_HOOK = (
    "https://oapi.dingtalk.com/robot/send?access_token=0123456789abcdef0123456789abcdef"
    f"#secret={BOT_SECRET}"
)


def table_gone(name: str) -> None:
    """The database losing a table under the console (a restore from before a migration, a
    database reset while it runs): the next request reading it fails with a 500."""
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE {connection.ops.quote_name(name)}")


def error_page(response) -> str:
    assert response.status_code == 500
    page = response.content.decode()
    # Django's own page with the traceback, not the console's plain one.
    assert "Traceback" in page and "OperationalError" in page
    return page


# -- the error page under DEBUG ---------------------------------------------------------------


def test_a_failed_log_in_under_debug_shows_its_error_page_without_the_typed_password(
    alice, settings
):
    settings.DEBUG = True
    table_gone("jobs_loginfailure")
    client = Client(raise_request_exception=False)

    page = error_page(client.post("/login/", {"username": "alice", "password": LOGIN_PASSWORD}))

    assert LOGIN_PASSWORD not in page
    # The field's name is still there, for whoever reads the traceback.
    assert "password" in page


def test_a_failed_import_under_debug_shows_neither_the_pasted_secrets_nor_the_session(
    alice, settings
):
    settings.DEBUG = True
    client = Client(raise_request_exception=False)
    client.force_login(alice)
    body = {
        "name": "pasted",
        "queue": "default",
        "jobFramework": "PyTorchJob",
        "jobSpec": {
            "image": "python:3.12",
            "command": "true",
            "replicas": 1,
            "envs": [{"name": "HF_TOKEN", "value": ENV_SECRET}],
            "imageConfig": {"username": "robot", "password": REGISTRY_PASSWORD},
        },
        "console": {"secretEnvs": ["HF_TOKEN"], "alertChannels": {"webhooks": [BOT_HOOK]}},
    }
    table_gone("jobs_draft")

    page = error_page(
        client.post(reverse("wizard-import"), {"text": json.dumps(body), "resource_pool": "local"})
    )

    for secret in (ENV_SECRET, REGISTRY_PASSWORD, BOT_SECRET):
        assert secret not in page
    # Nor the session cookie that would log its reader in as alice.
    assert client.cookies["sessionid"].value not in page


def test_a_failed_wizard_step_under_debug_shows_no_secret_held_by_the_frames_variables(
    alice_client, alice, settings
):
    """A GET sends nothing: what the page could show is what the step read from the draft,
    in the traceback's variables."""
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.IMAGE)
    typed = image_data(
        envs=[("HF_TOKEN", ENV_SECRET, True)],
        registry_username="robot",
        registry_password=REGISTRY_PASSWORD,
    )
    complete_steps(
        alice_client,
        draft,
        upto=W.REVIEW,
        **{
            W.IMAGE: typed,
            W.ADVANCED: advanced_data(alert_webhooks=BOT_HOOK, alert_items=["jobFailed"]),
        },
    )
    assert BOT_SECRET in json.dumps(Draft.objects.get(pk=draft.pk).data)
    settings.DEBUG = True
    client = Client(raise_request_exception=False)
    client.force_login(alice)
    # The review step renders the whole spec, then reads the jobs' names.
    table_gone("jobs_job")

    page = error_page(client.get(step_url(draft, W.REVIEW)))

    for secret in (ENV_SECRET, REGISTRY_PASSWORD, BOT_SECRET):
        assert secret not in page
    # Each frame's variables are still named.
    assert re.search(r"<td>draft</td>", page)


def test_under_runserver_the_error_page_hides_the_database_address_with_its_password(
    alice, settings
):
    """`manage.py runserver` (wsgiref) copies the server's environment into each request's."""
    settings.DEBUG = True
    client = Client(
        raise_request_exception=False,
        DATABASE_URL=f"postgres://console:{DATABASE_PASSWORD}@db.example.com/console",
    )
    table_gone("jobs_loginfailure")

    page = error_page(client.post("/login/", {"username": "alice", "password": "x"}))

    assert DATABASE_PASSWORD not in page
    assert "DATABASE_URL" in page


@pytest.mark.parametrize("debug", [False, True])
def test_the_server_log_of_a_failed_request_holds_no_typed_secret(alice, settings, caplog, debug):
    settings.DEBUG = debug
    client = Client(raise_request_exception=False)
    table_gone("jobs_loginfailure")

    client.post("/login/", {"username": "alice", "password": LOGIN_PASSWORD})

    assert "Internal Server Error: /login/" in caplog.text
    assert LOGIN_PASSWORD not in caplog.text
