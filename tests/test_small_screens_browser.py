"""The console on a phone (390 by 844, touch), a phone turned sideways and a tablet, in Chinese:
what qa85's pass found, measured in Chromium. (What the HTML alone tells a phone's keyboard is
in test_phone_keyboards.py.)"""

from __future__ import annotations

import re

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


def test_on_a_phone_the_log_wraps_until_the_user_turns_it_off_and_that_choice_is_kept(phone, alice):
    # qa85: 自动换行 was off, a phone showing a few words of each line, the rest sideways.
    job = job_with_a_log(alice)
    log_in(phone, "alice", "alice-password")
    phone.goto(f"/jobs/{job.public_id}/")
    switch = phone.get_by_role("switch", name="自动换行")
    fits = "e => e.scrollWidth <= e.clientWidth"

    expect(switch).to_be_checked()
    assert phone.locator("#log-lines").evaluate(fits)
    switch.tap()
    expect(switch).not_to_be_checked()
    assert not phone.locator("#log-lines").evaluate(fits)
    phone.reload()  # the user's choice wins over the phone's default
    expect(switch).not_to_be_checked()
    assert not phone.locator("#log-lines").evaluate(fits)


def test_on_a_phone_turned_sideways_the_wizards_steps_are_one_row(browser, live_server, alice):
    # qa85: at 844 by 390 (a tablet's width) the steps were tiles in two rows, half the screen.
    client = Client()
    client.force_login(alice)
    draft = new_draft(client)
    complete_steps(client, draft, upto=W.DATA)
    context = device(browser, live_server, {"width": 844, "height": 390})
    page = context.new_page()
    log_in(page, "alice", "alice-password")
    page.goto(step_url(draft, W.DATA))

    steps = page.locator(".wizard-steps > li")
    expect(steps).to_have_count(len(W.STEPS))
    tops = {round(step.bounding_box()["y"]) for step in steps.all()}
    assert len(tops) == 1, tops
    expect(page.locator(".wizard-steps [aria-current=step]")).to_be_in_viewport()
    assert page.locator(".wizard-steps").bounding_box()["height"] < 390 / 4
    context.close()


def test_on_a_phone_a_jobs_id_under_its_name_takes_one_line_and_stays_whole_in_its_text(
    phone, alice
):
    # qa85: the 24-character ID wrapped over 4-5 lines, three jobs to a screen.
    job = submit(alice, name="bert-large-pretrain")
    log_in(phone, "alice", "alice-password")
    phone.goto("/")
    shown = phone.locator(f'tr[data-job="{job.public_id}"] .job-id-under-name')

    expect(shown).to_have_text(job.public_id)
    expect(shown).to_have_attribute("title", job.public_id)
    line = shown.evaluate("e => parseFloat(getComputedStyle(e).lineHeight)")
    assert shown.bounding_box()["height"] < 1.5 * line
    assert shown.evaluate("e => e.scrollWidth > e.clientWidth")  # cut short, with an ellipsis
    expect(phone.locator(f"#job-link-{job.public_id}")).to_have_attribute(
        "href", f"/jobs/{job.public_id}/"
    )


SMALL_PHONE = {"width": 375, "height": 667}


@pytest.mark.parametrize("step", [W.IMAGE, W.DATA, W.FAULT, W.SUBMISSION, W.REVIEW])
def test_on_a_375_pixel_phone_the_step_bar_starts_with_a_whole_step_and_shows_the_current_whole(
    browser, live_server, alice, step
):
    # qa92: the current step centred, the one before showed as the end of its label
    # ("and ✓", "ced ✓").
    client = Client()
    client.force_login(alice)
    draft = new_draft(client)
    complete_steps(client, draft, upto=step)
    context = device(browser, live_server, SMALL_PHONE)
    page = context.new_page()
    log_in(page, "alice", "alice-password")
    page.goto(step_url(draft, step))

    bar = page.locator(".wizard-steps").bounding_box()
    current = page.locator(".wizard-steps [aria-current=step]")
    expect(current).to_contain_text(str(W.STEP_TITLES[step]))
    steps = [li.bounding_box() for li in page.locator(".wizard-steps > li").all()]
    box = current.bounding_box()

    # The current step's label is whole in view, and no step is cut at the bar's left edge.
    assert bar["x"] - 1 <= box["x"] and box["x"] + box["width"] <= bar["x"] + bar["width"] + 1
    cut = [s for s in steps if s["x"] < bar["x"] - 1 < s["x"] + s["width"] - 2]
    assert not cut, (bar, cut)
    context.close()


def test_on_a_375_pixel_phone_the_card_switch_has_its_name_beside_it(browser, live_server, alice):
    # qa92: the box stood alone on its line, its name (加速芯片) above it as a column's.
    client = Client()
    client.force_login(alice)
    draft = new_draft(client)
    complete_steps(client, draft, upto=W.RESOURCES)
    context = device(browser, live_server, SMALL_PHONE)
    page = context.new_page()
    log_in(page, "alice", "alice-password")
    page.goto(step_url(draft, W.RESOURCES))

    switch = page.get_by_role("checkbox", name="加速芯片").first
    label = page.locator("label[for='id_roles-0-use_accelerator']")
    expect(switch).to_be_visible()
    expect(label).to_be_visible()
    box, name = switch.bounding_box(), label.bounding_box()

    assert name["x"] >= box["x"] + box["width"]  # beside it, to its right
    assert name["y"] < box["y"] + box["height"] / 2 < name["y"] + name["height"]  # on its line
    assert name["x"] + name["width"] <= 375
    label.tap()  # the name is the switch's
    expect(switch).not_to_be_checked()
    context.close()


def test_on_a_phone_the_replicas_table_shows_a_shadow_at_the_edge_it_scrolls_past(phone, alice):
    # qa92: at 375 pixels the Replicas table hid its columns past the edge, with no sign that
    # it scrolls (a phone shows its scrollbar only while it scrolls).
    job = job_with_a_log(alice)
    log_in(phone, "alice", "alice-password")
    phone.set_viewport_size({"width": 375, "height": 812})
    phone.goto(f"/jobs/{job.public_id}/")
    region = phone.locator("#replicas-region")

    assert region.evaluate("e => e.scrollWidth > e.clientWidth")  # it does scroll
    shading = region.evaluate("e => getComputedStyle(e).backgroundImage")
    assert shading.count("radial-gradient") == 2, shading  # a shadow for each edge
    # The rows let it through: their cells have no background of their own.
    cell = region.locator("td").first
    assert cell.evaluate("e => getComputedStyle(e).backgroundColor") == "rgba(0, 0, 0, 0)"


@pytest.mark.parametrize("language", ["zh-hans", "en"])
def test_on_a_phone_turned_sideways_the_top_bar_is_one_row(
    browser, live_server, alice, reviewer, language
):
    # qa108: at 844 by 390 the top bar took two rows, 168 of the screen's 390 pixels. The
    # longest bar: a reviewer's (its Review link), in English.
    context = device(browser, live_server, {"width": 844, "height": 390})
    page = context.new_page()
    log_in(page, "carol", "carol-password")
    page.context.add_cookies([{"name": "django_language", "value": language, "url": page.url}])
    page.goto("/")

    items = page.locator("nav.navbar :is(.navbar-brand, .nav-link, button)")
    tops = {round(item.bounding_box()["y"]) for item in items.all() if item.is_visible()}
    bar = page.locator("nav.navbar").bounding_box()
    fits = page.evaluate("document.documentElement.scrollWidth <= innerWidth")
    context.close()

    assert bar["height"] < 390 / 5, bar
    assert max(tops) - min(tops) <= 8, tops  # one row (buttons and links differ in height)
    assert fits


def test_on_a_phone_the_job_list_says_each_jobs_running_time_and_creation_under_its_status(
    phone, alice
):
    # qa108: at 412 pixels the list showed name, status and framework; the rest scrolled past
    # the edge cut mid-word ("本机 L", "defau"), with no sign there was more.
    job = submit(alice)
    log_in(phone, "alice", "alice-password")
    phone.set_viewport_size({"width": 412, "height": 915})
    phone.goto("/")
    row = phone.locator(f'tr[data-job="{job.public_id}"]')
    times = row.locator(".job-times")
    region = phone.locator("#job-table-region")

    expect(times).to_be_in_viewport()
    expect(times).to_have_text(re.compile(r"^运行时长 – 创建时间 \d{4}-\d\d-\d\d \d\d:\d\d$"))
    assert region.evaluate("e => e.scrollWidth > e.clientWidth")  # it does scroll
    shading = region.evaluate("e => getComputedStyle(e).backgroundImage")
    assert shading.count("radial-gradient") == 2, shading  # a shadow for each edge
    phone.set_viewport_size({"width": 768, "height": 1024})  # its own columns from sm on
    expect(times).to_be_hidden()
