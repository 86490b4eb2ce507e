"""The console on a phone (390 by 844, touch), a phone turned sideways and a tablet, in Chinese:
what qa85's pass found, measured in Chromium. (What the HTML alone tells a phone's keyboard is
in test_phone_keyboards.py.)"""

from __future__ import annotations

import pytest
from django.test import Client
from playwright.sync_api import expect

from jobs import wizard as W
from jobs.logs import replica_log_path
from jobs.models import JobReplica
from tests.conftest import BROWSER_TIMEOUT_MS, log_in
from tests.test_admin_owner_filter import CHANGELIST
from tests.test_job_pages import submit
from tests.test_wizard import _local_pool, complete_steps, new_draft, step_url  # noqa: F401

pytestmark = pytest.mark.browser

PHONE = {"width": 390, "height": 844}
# Every field's text size, but ticks' and switches' (their font sizes the box, not text) and
# buttons' (no keyboard, no zoom).
FIELD_FONT_SIZES = """() => [...document.querySelectorAll(
    'input:not([type=hidden], [type=checkbox], [type=radio], [type=submit]), select, textarea')]
  .map(e => [e.name || e.id || e.outerHTML.slice(0, 120), parseFloat(getComputedStyle(e).fontSize)])"""


def device(browser, live_server, viewport: dict[str, int]):
    context = browser.new_context(
        base_url=live_server.url,
        viewport=viewport,
        is_mobile=True,
        has_touch=True,
        locale="zh-CN",
    )
    context.set_default_timeout(BROWSER_TIMEOUT_MS)
    return context


@pytest.fixture
def phone(browser, live_server, transactional_db):
    context = device(browser, live_server, PHONE)
    yield context.new_page()
    context.close()


def job_with_a_log(owner):
    job = submit(owner)
    JobReplica.objects.create(job=job, role="master", index=0)
    log = replica_log_path(job.public_id, "master-0")
    log.parent.mkdir(parents=True)
    log.write_bytes(
        b"".join(
            b"step %d loss=0.5 a long line of the log, wider than a phone\n" % n for n in range(5)
        )
    )
    return job


def test_on_a_phone_no_field_has_text_under_16_pixels_so_focusing_one_does_not_zoom(
    phone, alice, reviewer
):
    # iOS zooms the page in on focus of a field under 16 pixels: the row tables' and the job
    # list's small fields were 14, the admin's search box 13 (qa85).
    client = Client()
    client.force_login(alice)
    draft = new_draft(client)
    complete_steps(client, draft, upto=W.RESOURCES)
    job = job_with_a_log(alice)
    log_in(phone, "alice", "alice-password")
    pages = [step_url(draft, W.RESOURCES), step_url(draft, W.IMAGE), "/", f"/jobs/{job.public_id}/"]
    for address in pages:
        phone.goto(address)
        sizes = phone.evaluate(FIELD_FONT_SIZES)
        assert sizes, address
        small = [(name, size) for name, size in sizes if size < 16]
        assert not small, (address, small)
    phone.context.clear_cookies()
    log_in(phone, "carol", "carol-password")
    phone.goto(CHANGELIST)
    expect(phone.locator("#searchbar")).to_be_visible()
    small = [(name, size) for name, size in phone.evaluate(FIELD_FONT_SIZES) if size < 16]
    assert not small, small
