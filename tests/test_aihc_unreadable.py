"""A broken AIHC backend is said (qa94): staff are told on the pools page, the job list, the
wizard's first step and the admin that AIHC's pools cannot be read, why and since when; the
server log names the endpoint, in English whatever the console's language."""

from __future__ import annotations

import html
import logging
import re

import pytest
from django.test import Client
from django.urls import reverse

from jobs.backends import get_backend
from tests.fake_aihc import FakeAihc, configure

UNREACHABLE = "http://127.0.0.1:9"  # nothing listens on the discard port


@pytest.fixture
def fake(settings, db):
    fake = FakeAihc().start()
    fake.add_pool("cce-pool1", "训练池", gpus={"baidu.com/a800_80g_cgpu": (16, 6)})
    configure(settings, fake)
    # Each test reads AIHC afresh: the unreachable endpoint is the same in each, and so would
    # be its inventory (one per endpoint and key in the process).
    get_backend("aihc")._inventories.clear()
    yield fake
    fake.stop()


@pytest.fixture
def staff(reviewer) -> Client:
    client = Client()
    client.force_login(reviewer)
    return client


def read_once(client: Client, url: str) -> str:
    """The page as it is once AIHC's pools have been asked for (the notice starts a read and
    does not wait for it: the page after shows what it found)."""
    client.get(url)
    get_backend("aihc")._inventory().join()
    return client.get(url).content.decode()


def notice(page: str) -> str:
    found = re.search(r'id="inventory-notice">(.*?)</(?:div|ul)>', page, re.S)
    return html.unescape(re.sub(r"<[^>]+>", " ", found.group(1))).strip() if found else ""


def test_staff_are_told_on_the_pools_page_that_aihc_cannot_be_reached_at_its_endpoint(
    fake, staff, alice_client, settings
):
    settings.AIHC_ENDPOINT = UNREACHABLE

    said = notice(read_once(staff, reverse("pool-list")))
    users_page = alice_client.get(reverse("pool-list")).content.decode()

    assert "http://127.0.0.1:9" in said and "ConnectError" in said
    assert "AIHC_ENDPOINT" in said
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", said)  # since when
    assert said.startswith("无法读取百舸 AIHC 的资源池")  # the console's default language
    assert "inventory-notice" not in users_page  # for staff: users are told by the pool list


def test_staff_are_told_in_english_when_they_read_the_console_in_english(fake, staff, settings):
    settings.AIHC_ENDPOINT = UNREACHABLE
    staff.cookies["django_language"] = "en"

    said = notice(read_once(staff, reverse("job-list")))

    assert said.startswith("AIHC's pools cannot be read since ")
    assert "http://127.0.0.1:9 could not be reached (ConnectError)" in said


def test_a_refused_key_is_said_in_the_admin_with_aihcs_code_and_request_id(fake, staff, settings):
    settings.AIHC_SECRET_KEY = "not-the-secret-key"
    staff.cookies["django_language"] = "en"

    said = notice(read_once(staff, reverse("admin:index")))

    assert f"refused the access key {fake.access_key}" in said
    assert "AccessDenied" in said and "HTTP 403" in said
    assert re.search(r"requestId [0-9a-f-]{8,}", said)
    assert "AIHC_SECRET_KEY" in said
    assert "not-the-secret-key" not in said


def test_the_notice_is_on_the_admins_job_list_and_the_wizards_first_step(fake, staff, settings):
    settings.AIHC_ENDPOINT = UNREACHABLE
    read_once(staff, reverse("pool-list"))

    jobs = staff.get(reverse("admin:jobs_job_changelist")).content.decode()
    start = staff.post(reverse("wizard-start"), {"create_key": "k" * 32})
    wizard = staff.get(start["Location"]).content.decode()

    assert "http://127.0.0.1:9" in notice(jobs)
    assert "http://127.0.0.1:9" in notice(wizard)


def test_a_failing_aihc_is_said_with_its_error_and_the_notice_goes_once_it_answers_again(
    fake, staff
):
    staff.cookies["django_language"] = "en"
    # Each of one read's tries (AIHC_RETRIES more than one) is refused.
    fake.fail_next("DescribeResourcePools", status=503, code="ServiceUnavailable", times=4)
    said = notice(read_once(staff, reverse("pool-list")))
    assert "cannot be read since" in said and f"from {fake.url}" in said
    assert "ServiceUnavailable" in said and "HTTP 503" in said
    get_backend("aihc")._inventory().attempted_at = float("-inf")  # its next read is due

    page = read_once(staff, reverse("pool-list"))

    assert not notice(page)
    assert "训练池" in page


def test_the_log_names_the_endpoint_in_english_under_the_default_chinese(fake, settings, caplog):
    settings.AIHC_ENDPOINT = UNREACHABLE
    aihc = get_backend("aihc")

    with caplog.at_level(logging.WARNING, logger="jobs.aihc"):
        aihc.pools()
        aihc._inventory().join()

    assert (
        "AIHC inventory refresh from http://127.0.0.1:9 failed: AIHC could not be reached "
        "(Unreachable, ConnectError)"
    ) in caplog.messages


def test_aihc_credentials_missing_are_logged_in_english_and_shown_in_the_readers_language(
    settings,
):
    # qa112: the worker logged "syncing … with aihc failed: 未配置百舸 AIHC 访问凭证…".
    from django.utils import translation

    from jobs.backends.base import BackendError
    from jobs.backends.remote import logged_error

    settings.AIHC_ACCESS_KEY = settings.AIHC_SECRET_KEY = ""

    with translation.override("zh-hans"), pytest.raises(BackendError) as caught:
        get_backend("aihc")._setup()

    assert logged_error(caught.value) == (
        "AIHC credentials are not configured (AIHC_ACCESS_KEY, AIHC_SECRET_KEY)."
    )
    assert caught.value.message == "未配置百舸 AIHC 访问凭证（AIHC_ACCESS_KEY、AIHC_SECRET_KEY）。"
