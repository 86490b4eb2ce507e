"""A Copy button copies with JavaScript: without it, it is not shown, and the text it would
copy is there to select by hand (qa82: the buttons showed and did nothing)."""

from __future__ import annotations

import pytest
from django.test import Client
from playwright.sync_api import expect

from jobs import wizard as W
from jobs.models import Job
from tests.conftest import log_in
from tests.runner_helpers import make_spec, submit
from tests.test_wizard import _local_pool, complete_steps, new_draft, step_url  # noqa: F401

pytestmark = pytest.mark.browser


@pytest.fixture(params=[True, False], ids=["javascript", "no-javascript"])
def javascript(request) -> bool:
    return request.param


@pytest.fixture
def alices_page(browser, live_server, alice, javascript):
    context = browser.new_context(
        base_url=live_server.url, java_script_enabled=javascript, locale="zh-CN"
    )
    page = context.new_page()
    log_in(page, "alice", "alice-password")
    yield page
    context.close()


def shown_only_with_javascript(button, javascript: bool) -> None:
    if javascript:
        expect(button).to_be_visible()
    else:
        expect(button).to_be_hidden()


def test_a_new_api_keys_copy_buttons_show_only_with_javascript_and_the_secret_is_selectable(
    alices_page, javascript
):
    page = alices_page
    page.goto("/account/keys/")
    page.fill("input[name=description]", "nightly script")
    page.click("#api-key-create")

    expect(page.locator("#new-secret-key")).to_be_visible()
    for button in ("#new-access-key-copy", "#new-secret-key-copy"):
        shown_only_with_javascript(page.locator(button), javascript)
    # A click selects the whole key, to copy by hand.
    for key in ("#new-access-key", "#new-secret-key"):
        expect(page.locator(key)).to_have_css("user-select", "all")


def test_a_platform_job_ids_copy_button_shows_only_with_javascript(alices_page, alice, javascript):
    job = submit(alice, make_spec("echo hi"))
    Job.objects.filter(pk=job.pk).update(external_id="aihc-job-qa82")

    alices_page.goto(f"/jobs/{job.public_id}/")

    expect(alices_page.locator("#external-id")).to_have_text("aihc-job-qa82")
    expect(alices_page.locator("#external-id")).to_have_css("user-select", "all")
    shown_only_with_javascript(alices_page.locator("#external-id-copy"), javascript)


def test_the_reviews_copy_buttons_show_only_with_javascript(alices_page, alice, javascript):
    client = Client()
    client.force_login(alice)
    draft = new_draft(client)
    complete_steps(client, draft, upto=W.REVIEW)

    alices_page.goto(step_url(draft, W.REVIEW))

    expect(alices_page.locator("#request-json")).to_be_visible()
    shown_only_with_javascript(
        alices_page.locator("[data-copy-target='#request-json']"), javascript
    )
    alices_page.locator("#request-curl").locator("xpath=ancestor::details").locator(
        "summary"
    ).click()
    expect(alices_page.locator("#request-curl")).to_be_visible()
    shown_only_with_javascript(
        alices_page.locator("[data-copy-target='#request-curl']"), javascript
    )
