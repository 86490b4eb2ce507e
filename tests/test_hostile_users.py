"""QA round 41: a logged-in user (and an anonymous one) attacking the web pages and the API.

Each test is one attack; those that held stay as tests so that they keep holding."""

from __future__ import annotations

import json
from urllib.parse import urlencode

import pytest
from django.conf import settings
from django.db import connection
from django.test import Client

from jobs import spec as S
from jobs.models import ApiKey, Draft, LoginFailure
from jobs.services import jobs_submit
from tests.test_security import logged_in, secret_spec
from tests.test_wizard import _local_pool  # noqa: F401  (the wizard's pool of cards)

# "İ" (capital I with a dot above) is the one letter whose lower case is two characters.
DOTTED_CAPITALS = "İ" * 150


def test_a_150_character_name_that_lowercases_longer_is_a_failed_log_in_not_a_500(alice):
    r = Client().post("/login/", {"username": DOTTED_CAPITALS, "password": "guess"})

    assert r.status_code == 200
    [failure] = LoginFailure.objects.all()
    assert len(failure.username) <= 150


def test_the_throttle_counts_such_a_name_and_refuses_it_after_five_failures(alice, settings):
    for _attempt in range(settings.LOGIN_FAILURES_PER_USERNAME):
        Client().post("/login/", {"username": DOTTED_CAPITALS, "password": "guess"})

    r = Client().post("/login/", {"username": DOTTED_CAPITALS, "password": "guess"})

    assert r.status_code == 200
    assert (
        "Too many failed log-ins" in r.content.decode() or "登录失败次数过多" in r.content.decode()
    )


@pytest.mark.parametrize("url", ["/login/", "/admin/login/"])
@pytest.mark.parametrize("username", ["\x00", "alice\x00"])
def test_a_name_with_a_nul_is_refused_on_the_form_not_a_500(alice, url, username):
    """PostgreSQL refuses a NUL in any query (SQLite takes it): the throttle looked the name up
    before the form's own check refused it (CI runs this file on PostgreSQL)."""
    r = Client().post(url, {"username": username, "password": "alice-password"})

    assert r.status_code == 200
    assert "不能包含空字符（NUL）。" in r.content.decode()
    assert not LoginFailure.objects.exists()


# -- open redirects ---------------------------------------------------------------------

OFF_SITE = ["//evil.example/", "https://evil.example/", "/\\evil.example/", "\\\\evil.example"]


@pytest.mark.parametrize("target", OFF_SITE)
def test_logging_in_with_an_off_site_next_lands_on_the_console(alice, target):
    r = Client().post(
        f"/login/?{urlencode({'next': target})}",
        {"username": "alice", "password": "alice-password", "next": target},
    )

    assert r.status_code == 302
    assert r["Location"] == "/"


@pytest.mark.parametrize("target", OFF_SITE)
def test_the_language_switch_and_log_out_never_send_the_browser_off_site(alice_client, target):
    switched = alice_client.post("/i18n/setlang/", {"language": "en", "next": target})
    logged_out = alice_client.post("/logout/", {"next": target})

    assert switched.status_code == 302
    assert not switched["Location"].startswith(("//", "http", "/\\", "\\"))
    assert logged_out.status_code == 302
    assert "evil.example" not in logged_out["Location"]


@pytest.mark.parametrize("target", OFF_SITE)
def test_the_import_forms_language_switch_never_sends_the_browser_off_site(alice_client, target):
    r = alice_client.post("/create/import/", {"action": "language-en", "body": "", "next": target})

    assert r.status_code == 302
    assert r["Location"] == "/create/"


# -- sessions ---------------------------------------------------------------------------


def test_a_session_planted_before_the_log_in_is_not_the_one_logged_in(alice):
    client = Client()
    client.get("/login/")
    client.session.save()
    planted = client.cookies[settings.SESSION_COOKIE_NAME].value

    client.post("/login/", {"username": "alice", "password": "alice-password"})

    assert client.cookies[settings.SESSION_COOKIE_NAME].value != planted
    assert Client(cookies={settings.SESSION_COOKIE_NAME: planted}).get("/").status_code == 302


def test_a_user_who_is_not_staff_gets_the_admins_log_in_and_no_job(alice_client, alice):
    [job] = jobs_submit(owner=alice, spec=secret_spec(name="alices-own"), submit_key="a")

    for url in ("/admin/", "/admin/jobs/job/", f"/admin/jobs/job/{job.pk}/change/"):
        r = alice_client.get(url)
        assert r.status_code == 302, url
        assert r["Location"].startswith("/admin/login/"), url
    assert "alices-own" not in alice_client.get("/admin/login/", follow=True).content.decode()


# -- SSRF through an alert's webhook ----------------------------------------------------

# Loopback and the metadata address written as no form check reads them: a decimal, octal or
# hex number, a short dotted form, "0". Each resolves to a refused address when sending.
SPELLED_OTHERWISE = [
    "http://2130706433/hook",
    "http://017700000001/hook",
    "http://0x7f.1/hook",
    "http://127.1/hook",
    "http://0/hook",
    "http://2852039166/latest/meta-data/",
    "http://[::ffff:a9fe:a9fe]/latest/meta-data/",
    "http://user@127.0.0.1/hook",
]


@pytest.mark.parametrize("url", SPELLED_OTHERWISE)
def test_a_webhook_spelling_loopback_or_metadata_another_way_is_refused_when_sent(url, settings):
    from jobs.alerts import UnsafeDestination, post_webhook

    settings.ALERT_WEBHOOK_ALLOW_PRIVATE = False

    with pytest.raises(UnsafeDestination):
        post_webhook(url, {"text": "hello"})


# -- bad unicode in an import -----------------------------------------------------------


@pytest.mark.parametrize(
    "escaped",
    ["\\ud800", "a\\u0000b", "\\udfff\\ud800"],
    ids=["lone-high-surrogate", "nul", "reversed-pair"],
)
@pytest.mark.parametrize("where", ["name", "command", "env-name", "env-value"])
def test_an_import_with_bad_unicode_escapes_is_refused_or_drafted_never_a_500(
    alice_client, alice, escaped, where
):
    # JSON's own escapes, which json.loads reads into a string no database or page can encode.
    bad = "@bad@"
    spec = {"command": "echo", "image": "python:3.12", "replicas": 1, "envs": []}
    body = {"name": "ok", "queue": "default", "jobFramework": "PyTorchJob", "jobSpec": spec}
    if where == "name":
        body["name"] = bad
    elif where == "command":
        spec["command"] = bad
    else:
        spec["envs"] = [{"name": bad if where == "env-name" else "A", "value": bad}]
    text = json.dumps(body).replace(bad, escaped)

    r = alice_client.post(
        "/create/import/", {"body": text, "resource_pool": "local", "create_key": "k"}
    )

    assert r.status_code in (200, 302)
    for draft in Draft.objects.filter(owner=alice):
        for step in ("basic", "image", "resources", "data", "advanced", "review"):
            assert alice_client.get(f"/create/{draft.id}/{step}/").status_code < 500, step


# -- secrets ----------------------------------------------------------------------------


def test_a_new_access_keys_secret_is_on_one_answer_no_cache_keeps_and_not_on_a_replay(
    alice_client,
):
    page = alice_client.get("/account/keys/")
    create_key = page.context["form"]["create_key"].value()
    sent = {"description": "ci", "expires_in": "30", "create_key": create_key}

    first = alice_client.post("/account/keys/", sent)
    replayed = alice_client.post("/account/keys/", sent)

    secret = first.context["new_secret"]
    assert secret in first.content.decode()
    assert "no-store" in first["Cache-Control"]
    assert replayed.status_code == 200
    assert secret not in replayed.content.decode()
    assert ApiKey.objects.filter(owner__username="alice").count() == 1


# -- mail header injection --------------------------------------------------------------


@pytest.mark.parametrize(
    "address",
    [
        "ops@example.com\r\nBcc: victim@example.com",
        "ops@example.com\nSubject: hi",
        "ops@example.com, victim@example.com",
        '"ops\r\nBcc: victim@example.com" <ops@example.com>',
    ],
)
def test_an_alert_address_carrying_another_header_or_address_is_refused(address):
    spec = secret_spec(alert=S.AlertConfig(items=["jobFailed"], emails=[address]))

    assert "alert.emails" in S.validate(spec)


# -- the admin's list of background tasks (django_tasks_db's) -----------------------------

TASKS = "/admin/django_tasks_database/dbtaskresult/"


def test_the_task_list_asked_with_a_nul_goes_back_to_the_whole_list_not_a_500(superuser):
    """PostgreSQL refuses a NUL in a query (CI runs this file on it), as the console's own
    lists already knew (jobs.admin_lists.NulFreeLookupsMixin)."""
    r = logged_in(superuser).get(f"{TASKS}?status__exact=%00")

    assert r.status_code == 302
    assert r["Location"] == f"{TASKS}?e=1"


@pytest.mark.parametrize("lookup", ["args_kwargs__icontains=hook", "enqueued_at__regex=(.*)*x"])
def test_the_task_list_filters_only_on_what_it_offers(superuser, lookup):
    r = logged_in(superuser).get(f"{TASKS}?{lookup}")

    assert r.status_code == 400
    assert "此列表不能这样筛选" in r.content.decode()


def test_the_task_lists_own_filters_still_answer(superuser):
    assert logged_in(superuser).get(f"{TASKS}?status__exact=FAILED").status_code == 200


# -- numbers past the database's integers in an admin list's address (qa111) ---------------

HUGE = "99999999999999999999999"


@pytest.mark.parametrize(
    ("url", "lookup", "value"),
    [
        ("/admin/jobs/job/", "owner", HUGE),
        ("/admin/jobs/job/", "owner", "1"),
        ("/admin/jobs/job/", "owner__gt", HUGE),
        ("/admin/jobs/job/", "owner__in", f"1,{HUGE}"),
        ("/admin/jobs/job/", "group__gt", HUGE),
        ("/admin/jobs/apikey/", "owner", HUGE),
        ("/admin/jobs/apikey/", "owner", f"-{HUGE}"),
        ("/admin/jobs/deletedjob/", "owner", HUGE),
    ],
)
def test_a_custom_filters_field_is_filtered_only_by_that_filters_own_parameter(
    superuser, url, lookup, value
):
    """The owner box's parameter is `owner__id__exact`: every other lookup on the owner went
    to the database as it was, and a number past its integers answered 500."""
    r = logged_in(superuser).get(url, {lookup: value})

    body = r.content.decode()
    assert r.status_code == 400
    assert f"地址中的“{lookup}”不是此列表提供的筛选条件" in body
    assert f"“{lookup}” in the address is no filter this list offers." in body


@pytest.mark.parametrize(
    ("url", "lookup", "value"),
    [
        ("/admin/jobs/cardquota/", "user", HUGE),
        ("/admin/jobs/cardquota/", "group", HUGE),
        ("/admin/jobs/cardquota/", "user__in", f"1,{HUGE}"),
        ("/admin/jobs/cardquota/", "user", f"-{HUGE}"),
        ("/admin/auth/user/", "groups", HUGE),
        ("/admin/auth/user/", "groups__in", f"1,{HUGE}"),
        ("/admin/admin/logentry/", "user", HUGE),
        ("/admin/admin/logentry/", "content_type", HUGE),
    ],
)
def test_a_number_past_the_databases_integers_in_a_lists_filter_gets_the_filter_page_not_a_500(
    superuser, url, lookup, value
):
    """SQLite cannot take it when the list counts its rows (OverflowError): the page names
    the parameter, never its value. PostgreSQL (CI runs this file on it) compares it as a
    numeric: no row has it, and the list is empty."""
    # A search for the same number is no filter: the page names the filter.
    r = logged_in(superuser).get(url, {"q": HUGE, "o": "1", lookup: value})

    body = r.content.decode()
    if connection.vendor != "sqlite":
        assert r.status_code == 200
        assert r.context["cl"].result_count == 0
        return
    assert r.status_code == 400
    assert f"地址中“{lookup}”的数字超出了数据库整数的范围" in body
    assert f"The number in “{lookup}” in the address is past the database's integers" in body
    assert f'<a id="whole-list" href="{url}">' in body
    assert HUGE not in body


@pytest.mark.parametrize(
    ("url", "query"),
    [
        ("/admin/jobs/job/", {"owner__id__exact": HUGE}),
        ("/admin/jobs/job/", {"group": HUGE}),
        ("/admin/jobs/apikey/", {"owner__id__exact": HUGE}),
        ("/admin/jobs/deletedjob/", {"owner__id__exact": HUGE}),
        ("/admin/jobs/cardquota/", {"user__id__exact": "1"}),
        ("/admin/admin/logentry/", {"user__id__exact": "1"}),
    ],
)
def test_the_lists_own_filters_still_answer_any_number(superuser, url, query):
    assert logged_in(superuser).get(url, query).status_code == 200


def test_a_page_number_past_the_databases_integers_is_not_named_as_the_filter(superuser):
    """The page (`p`) and the error flag (`e`) are no filter: the page names the filter whose
    number is out of range (review59: it named "p", listed first)."""
    r = logged_in(superuser).get(f"/admin/auth/user/?p={HUGE}&e={HUGE}&groups={HUGE}")

    body = r.content.decode()
    if connection.vendor != "sqlite":
        assert r.status_code in (200, 302)
        return
    assert r.status_code == 400
    assert "The number in “groups” in the address is past the database's integers" in body
    assert "“p”" not in body and "“e”" not in body


@pytest.mark.parametrize(
    ("url", "field"),
    [("/admin/admin/logentry/", "action_time"), ("/admin/jobs/deletedjob/", "deleted_at")],
)
@pytest.mark.parametrize(
    "query",
    [
        {"__year": "9999"},
        {"__year": "3000000000"},
        {"__year": "1"},
        {"__year": "99999999999999999999"},
        {"__month": "5"},
        {"__year": "2026", "__month": "2", "__day": "30"},
    ],
)
def test_an_impossible_date_drill_down_on_the_log_and_deleted_jobs_is_a_bad_lookup_not_a_500(
    superuser, url, field, query
):
    """review59: `?action_time__year=9999` answered 500 ("year 10000 is out of range"), and
    3000000000 or 1 the out-of-range number's page, which is about the database."""
    r = logged_in(superuser).get(url, {f"{field}{part}": value for part, value in query.items()})

    assert r.status_code == 302 and r["Location"] == f"{url}?e=1"


@pytest.mark.parametrize(
    ("url", "field"),
    [("/admin/admin/logentry/", "action_time"), ("/admin/jobs/deletedjob/", "deleted_at")],
)
def test_a_real_date_drill_down_on_the_log_and_deleted_jobs_still_lists(superuser, url, field):
    r = logged_in(superuser).get(url, {f"{field}__year": "2026", f"{field}__month": "2"})

    assert r.status_code == 200
