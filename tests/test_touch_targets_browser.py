"""Touch targets on a phone (left31): at 390 pixels every button, link, tick and switch of the
job list and a job's page is at least 24 by 24 CSS pixels (WCAG 2.2, 2.5.8 Target Size
(Minimum)), measured in Chromium. Before, the list's ticks were 16 by 16, its job names' links
19 high, a job page's log ticks and switch 16 high and Download log 21."""

from __future__ import annotations

import pytest

from jobs.models import JobStatus
from jobs.views import PAGE_SIZE
from jobs.worker import Worker
from tests.conftest import BROWSER_TIMEOUT_MS, log_in

from .runner_helpers import (  # noqa: F401
    UNTIL_THE_GATE_OPENS,
    make_spec,
    run_until,
    runner_settings,
    status_of,
    submit,
)

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("runner_settings")]

MINIMUM = 24

# Every control a finger can tap that is on screen, with its size: a tick's or switch's label
# toggles it, so it is one too (a text box's label is not: the box is what is tapped). The
# skip link shows only when focused by a keyboard, as a full button.
TARGETS = """() => [...document.querySelectorAll(
    'a[href], button, input:not([type=hidden]), select, textarea, summary, label.form-check-label')]
  .filter(e => e.offsetParent !== null && !e.matches('.visually-hidden-focusable'))
  .map(e => { const r = e.getBoundingClientRect();
    return {what: e.id || e.getAttribute('name') || (e.innerText || '').trim().slice(0, 40) || e.outerHTML.slice(0, 120),
            width: r.width, height: r.height}; })"""


def too_small(page) -> list[dict]:
    return [t for t in page.evaluate(TARGETS) if t["width"] < MINIMUM or t["height"] < MINIMUM]


@pytest.fixture
def phone(browser, live_server, alice):
    context = browser.new_context(
        base_url=live_server.url,
        viewport={"width": 390, "height": 844},
        has_touch=True,
        is_mobile=True,
    )
    context.set_default_timeout(BROWSER_TIMEOUT_MS)
    page = context.new_page()
    log_in(page, "alice", "alice-password")
    yield page
    context.close()


def test_on_a_phone_every_target_of_the_job_list_and_a_jobs_page_is_at_least_24_pixels(
    phone, alice, settings
):
    from .runner_helpers import open_gate

    worker = Worker()
    ended = submit(alice, make_spec("echo done"))
    run_until(worker, lambda: status_of(ended) == JobStatus.SUCCEEDED, what="ended")
    running = submit(alice, make_spec(UNTIL_THE_GATE_OPENS))
    run_until(worker, lambda: status_of(running) == JobStatus.RUNNING, what="running")
    # Enough for a second page, the two above on it.
    newest = [submit(alice, make_spec("echo waiting")) for _ in range(PAGE_SIZE)][-1]
    try:
        sizes = {}
        for path, named in [
            # The column heads and the last and first pages' links (feat-list) too.
            ("/", ["select-all", f"select-{newest.public_id}", "page-next", "bulk-stop"]),
            (
                "/?sort=status",
                ["sort-name", "sort-status", "sort-cards", "sort-created", "page-last"],
            ),
            ("/?page=2", ["page-previous", "page-first", f"job-link-{ended.public_id}"]),
            (f"/jobs/{running.public_id}/", ["job-stop", "job-copy"]),
            (f"/jobs/{ended.public_id}/", ["job-delete", "job-copy", "job-rerun", "log-download"]),
        ]:
            phone.goto(path)
            measured = {t["what"]: t for t in phone.evaluate(TARGETS)}
            assert set(named) <= set(measured), (path, sorted(measured))  # on screen, measured
            sizes[path] = too_small(phone)
        assert sizes == {path: [] for path in sizes}
    finally:
        open_gate(settings)
        run_until(worker, lambda: status_of(running) == JobStatus.SUCCEEDED, what="done")


# Fields whose text a tablet's Safari would zoom in on, and the forms' buttons (保存, 驳回).
SMALL_TEXT = """() => [...document.querySelectorAll(
    'input:not([type=hidden], [type=checkbox], [type=radio], [type=submit]), select, textarea, .submit-row input')]
  .filter(e => e.offsetParent !== null)
  .map(e => [e.name || e.id || (e.innerText || '').trim().slice(0, 40) || e.outerHTML.slice(0, 120),
             parseFloat(getComputedStyle(e).fontSize)])
  .filter(([, size]) => size < 16)"""


@pytest.mark.parametrize("viewport", [(820, 1180), (1180, 820)], ids=["portrait", "landscape"])
def test_on_a_tablet_the_admins_targets_are_24_pixels_and_its_fields_text_16(
    browser, live_server, reviewer, superuser, alice, viewport
):
    """qa108, at 820 and 1180 pixels (a touch screen, wider than the phone's 768 that had the
    rules): the header's links were 14 to 17 high and EN 16 by 14, the filters' 按状态 20 high,
    the search box 13-pixel text, the review policy's tick 13 by 13 and its 保存 13-pixel
    text, the reject page's 驳回 too, and its "不，返回" a small link."""
    from jobs.models import ReviewMode, ReviewPolicy

    from .test_admin_browser import submit as submit_for_review

    ReviewPolicy.objects.create(pk=1, mode=ReviewMode.ALL)
    job = submit_for_review(alice, "too-big")
    width, height = viewport
    context = browser.new_context(
        base_url=live_server.url,
        viewport={"width": width, "height": height},
        has_touch=True,
        is_mobile=True,
        locale="zh-CN",
    )
    context.set_default_timeout(BROWSER_TIMEOUT_MS)
    tablet = context.new_page()
    small, small_text = {}, {}
    try:
        log_in(tablet, "carol", "carol-password")
        for path in ["/admin/jobs/job/", f"/admin/jobs/job/{job.pk}/change/"]:
            tablet.goto(path)
            small[path], small_text[path] = too_small(tablet), tablet.evaluate(SMALL_TEXT)
        tablet.click("a.review-reject")
        tablet.wait_for_selector("#confirm-review")
        small["reject"], small_text["reject"] = too_small(tablet), tablet.evaluate(SMALL_TEXT)
        tablet.context.clear_cookies()
        log_in(tablet, "root", "root-password")
        tablet.goto("/admin/jobs/reviewpolicy/1/change/")
        small["policy"], small_text["policy"] = too_small(tablet), tablet.evaluate(SMALL_TEXT)
    finally:
        context.close()

    # Django's own: the menu's fold, a full-height strip 23 wide with nothing beside it (the
    # spacing exception), and a sorted column's icons (a sprite drawn at 14 pixels).
    small = {
        path: [
            t
            for t in found
            if t["what"] != "toggle-nav-sidebar"
            and "sortoptions" not in t["what"]
            and 'class="toggle' not in t["what"]
            and 'class="sortremove' not in t["what"]
        ]
        for path, found in small.items()
    }
    assert small == {path: [] for path in small}
    assert small_text == {path: [] for path in small_text}


def test_on_a_phone_every_target_of_the_wizard_its_review_and_the_keys_page_is_24_pixels(
    phone, alice, settings, tmp_path
):
    """qa108: the review's 编辑 links were 28 by 21, 查看示例, 私有镜像仓库, 平台自动注入的环境变量
    and curl's toggles 21 high, and a new key's Copy buttons 30 by 23."""
    from django.test import Client

    from jobs import wizard as W

    from .test_wizard import A800, V100, complete_steps, new_draft, step_url

    settings.LOCAL_ACCELERATORS = f"{A800}=8,{V100}=4"
    settings.LOCAL_VOLUMES = f"scratch={tmp_path}"
    client = Client()
    client.force_login(alice)
    draft = new_draft(client)
    complete_steps(client, draft)
    sizes = {}
    for path, named in [
        (
            step_url(draft, W.IMAGE),
            ["View examples", "Private registry", "Variables the platform injects"],
        ),
        (step_url(draft, W.REVIEW), ["Edit"]),
    ]:
        phone.goto(path)
        measured = {t["what"] for t in phone.evaluate(TARGETS)}
        assert set(named) <= measured, (path, sorted(measured))
        sizes[path] = [t for t in too_small(phone) if t["what"] != "action"]
    phone.goto("/account/keys/")
    phone.fill("input[name=description]", "nightly script")
    phone.click("#api-key-create")
    phone.wait_for_selector("#new-secret-key-copy")
    sizes["keys"] = too_small(phone)

    # The wizard's default button (Enter sends 下一步) is hidden from sight and from touch.
    assert sizes == {path: [] for path in sizes}
