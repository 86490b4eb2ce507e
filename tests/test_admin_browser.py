"""A reviewer works through the admin in a real browser; no page breaks the CSP."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from jobs import spec as S
from jobs.models import Job, JobStatus, ReviewMode, ReviewPolicy
from jobs.services import jobs_submit
from tests.conftest import log_in

pytestmark = pytest.mark.browser

# How many lines an element's text takes.
LINES = """e => { const r = document.createRange(); r.selectNodeContents(e);
  return new Set([...r.getClientRects()].map(b => Math.round(b.top))).size; }"""


# Labels as an experiment's jobs carry them: a row shows three and counts the fourth.
LABELS = [
    ("project", "llama2-70b-sft"),
    ("team.example.com/owner", "nlp-pretraining-group"),
    ("lr", "3e-4"),
    ("seed", "42"),
]


def submit(owner, name: str, labels: list[tuple[str, str]] | None = None) -> Job:
    spec = S.JobSpec(
        name=name,
        resource_pool_id="local",
        image="python:3.12",
        command="echo hi",
        roles=[S.Role("master", 1), S.Role("worker", 1)],
        labels=labels or [],
    )
    [job] = jobs_submit(owner=owner, spec=spec, submit_key=name)
    return job


def test_a_reviewer_approves_selected_jobs_from_the_list(page, alice, reviewer):
    ReviewPolicy.objects.create(pk=1, mode=ReviewMode.ALL)
    first, second = submit(alice, "first-job"), submit(alice, "second-job")
    log_in(page, "carol", "carol-password")

    page.goto("/admin/jobs/job/")
    page.check(f"input[name=_selected_action][value='{first.pk}']")
    page.check(f"input[name=_selected_action][value='{second.pk}']")
    page.select_option("select[name=action]", "approve_jobs")
    page.click("button[name=index]")
    page.wait_for_selector("#confirm-review")
    assert "first-job" in page.content()
    expect(page.locator("#review-question")).to_have_text(
        re.compile(r"^(Approve these 2 jobs\?|通过以下 2 个任务？)")
    )
    page.click("#confirm-review")
    page.wait_for_selector(".messagelist")

    assert set(Job.objects.values_list("status", flat=True)) == {JobStatus.QUEUED}


def test_a_reviewer_rejects_a_job_from_its_page_with_a_reason(page, alice, reviewer):
    ReviewPolicy.objects.create(pk=1, mode=ReviewMode.ALL)
    job = submit(alice, "too-big")
    log_in(page, "carol", "carol-password")

    page.goto(f"/admin/jobs/job/{job.pk}/change/")
    page.click("a.review-reject")
    # One job: "this job", not "these jobs".
    expect(page.locator("#review-question")).to_have_text(
        re.compile(r"^(Reject this job\?|驳回该任务？)")
    )
    # qa93: focus on the page, a keyboard user Tabbed to the box the page is for.
    expect(page.locator("textarea[name=reason]")).to_be_focused()
    page.fill("textarea[name=reason]", "Ask for 8 cards at most.")
    page.click("#confirm-review")
    page.wait_for_url(f"**/admin/jobs/job/{job.pk}/change/")

    job.refresh_from_db()
    assert job.status == JobStatus.REJECTED
    assert job.status_reason == "Ask for 8 cards at most."
    assert "Ask for 8 cards at most." in page.content()


def test_a_rejected_job_resubmitted_once_review_is_off_names_no_reviewer(page, alice, reviewer):
    ReviewPolicy.objects.create(pk=1, mode=ReviewMode.ALL)
    job = submit(alice, "busy-week")
    log_in(page, "carol", "carol-password")
    page.goto(f"/admin/jobs/job/{job.pk}/change/")
    page.click("a.review-reject")
    page.fill("textarea[name=reason]", "Busy week, try again on Monday.")
    page.click("#confirm-review")
    page.wait_for_url(f"**/admin/jobs/job/{job.pk}/change/")
    ReviewPolicy.objects.filter(pk=1).update(mode=ReviewMode.NONE)

    page.click("a.review-resubmit")
    page.click("#confirm-review")
    page.wait_for_url(f"**/admin/jobs/job/{job.pk}/change/")

    # Not "Review: not required, reviewer: carol", as if carol had passed it.
    expect(page.locator(".field-review_state .readonly")).to_have_text(
        re.compile("^(Not required|无需审核)$")
    )
    expect(page.locator(".field-reviewed_by_shown .readonly")).not_to_contain_text("carol")


def test_no_page_breaks_the_content_security_policy(page, alice, superuser):
    job = submit(superuser, "own-job")
    violations: list[str] = []
    page.on(
        "console",
        lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None,
    )
    log_in(page, "root", "root-password")

    for url in [
        "/",
        f"/jobs/{job.public_id}/",
        "/create/",
        "/admin/",
        "/admin/jobs/job/",
        f"/admin/jobs/job/{job.pk}/change/",
        f"/admin/jobs/job/{job.pk}/logs/",
        f"/admin/jobs/job/{job.pk}/review/stop/",
        "/admin/jobs/reviewpolicy/1/change/",
    ]:
        page.goto(url)
        page.wait_for_load_state("networkidle")

    assert violations == []
    # The listener does hear the browser refuse an inline script (waited for: a loaded
    # machine may take longer than any fixed pause to report it).
    with page.expect_console_message(lambda m: "Content Security Policy" in m.text):
        page.evaluate(
            "() => { const s = document.createElement('script');"
            " s.textContent = 'window.x = 1'; document.body.appendChild(s); }"
        )
    assert len(violations) == 1


def test_a_job_pages_events_read_once_each_in_the_reviewers_language(browser, live_server, alice):
    # Django's tabular inline writes each row's str() as a caption above it: "Normal Created:
    # 任务已创建。", the stored Chinese with the raw codes, over the row that says it already.
    from django.contrib.auth.models import Group, User

    carol = User.objects.create_user("carol", password="carol-password", is_staff=True)
    carol.groups.add(Group.objects.get(name="Reviewers"))
    job = submit(alice, "events-job")
    context = browser.new_context(base_url=live_server.url, locale="en-US")
    page = context.new_page()
    log_in(page, "carol", "carol-password")

    page.goto(f"/admin/jobs/job/{job.pk}/change/")

    events = page.locator("#events-group")
    expect(events.locator("td.field-message_in_language").first).to_have_text("Job created.")
    expect(events.get_by_text("任务已创建")).to_be_hidden()
    # qa93: the first column, headed "Job event" for a screen reader, had only empty cells.
    expect(events.get_by_role("columnheader", name=re.compile("job event", re.I))).to_have_count(0)
    expect(events.get_by_role("columnheader").first).to_have_text(re.compile(r"^\s*Time"))
    context.close()


def test_the_usage_reports_total_reads_as_large_as_the_rows_it_sums(page, alice, reviewer):
    job = submit(alice, "ran-an-hour")
    now = timezone.now()
    Job.objects.filter(pk=job.pk).update(
        status=JobStatus.SUCCEEDED,
        started_at=now - timedelta(hours=1),
        finished_at=now,
        total_cards=2,
    )
    log_in(page, "carol", "carol-password")

    page.goto("/admin/jobs/job/usage/")

    def looks(cell):
        return cell.evaluate("c => [getComputedStyle(c).fontSize, getComputedStyle(c).color]")

    row = page.locator("#usage-users tbody tr").first.locator("td").first
    total = page.locator("#usage-users tfoot td").first
    expect(total).to_have_text(row.inner_text())
    assert looks(total) == looks(row)  # not the small grey print of a list's footer


@pytest.mark.parametrize(
    ("width", "columns"),
    [
        # The status with its reason under it (status_shown, qa114).
        (768, ["status_shown"]),
        (1024, ["status_shown", "review_state", "pool_and_queue"]),
        (1280, ["status_shown", "review_state", "pool_and_queue"]),
    ],
)
def test_on_a_tablet_or_laptop_the_job_list_shows_its_status_and_pool_columns(
    page, alice, reviewer, width, columns
):
    # Beside the app list and the filters the table had 160 to 630 pixels: at 768 the job ID
    # alone showed, at 1280 review and pool were scrolled out of sight.
    submit(alice, "bert-large-pretrain", LABELS)
    log_in(page, "carol", "carol-password")
    page.set_viewport_size({"width": width, "height": 800})
    page.goto("/admin/jobs/job/")

    results = page.locator("#changelist-form .results")
    right = results.evaluate("box => box.getBoundingClientRect().right")
    for column in columns:
        header = page.locator(f"#result_list th.column-{column}").bounding_box()
        assert header["x"] + header["width"] <= right  # in view without scrolling the table
    expect(page.locator("#changelist-filter")).to_be_visible()  # under the list
    expect(page.locator("#result_list .action-select")).to_have_count(1)  # the admin's JS
    assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")


COLUMNS_FIT = """() => {
  const box = document.querySelector('#changelist-form .results').getBoundingClientRect();
  const doc = document.documentElement;
  const hidden = [...document.querySelectorAll('#result_list thead th')]
    .filter((th) => { const r = th.getBoundingClientRect();
                      return r.width === 0 || r.left < box.left - 0.5 || r.right > box.right + 0.5; })
    .map((th) => th.className);
  return {fits: doc.scrollWidth <= doc.clientWidth, hidden};
}"""


@pytest.mark.parametrize("language", ["zh-hans", "en"])
def test_at_768_pixels_every_job_list_column_is_in_view_with_the_side_menu_folded_or_open(
    browser, live_server, alice, reviewer, language
):
    # Eleven columns beside the side menu left 430 pixels for the table: cards, priority and
    # created scrolled out of sight. The menu starts folded below 1280 and opens over the list.
    ReviewPolicy.objects.create(pk=1, mode=ReviewMode.ALL)
    for n in range(3):
        submit(alice, f"llama2-70b-sft-run-{n}-with-a-long-descriptive-name", LABELS)
    context = browser.new_context(base_url=live_server.url, viewport={"width": 768, "height": 900})
    context.add_cookies([{"name": "django_language", "value": language, "url": live_server.url}])
    page = context.new_page()
    log_in(page, "carol", "carol-password")

    page.goto("/admin/jobs/job/")
    expect(page.locator("#nav-sidebar")).to_have_attribute("aria-expanded", "false")
    expect(page.locator("#nav-sidebar")).to_be_hidden()
    assert page.evaluate(COLUMNS_FIT) == {"fits": True, "hidden": []}
    # Sorted by any column, its arrows do not push the last one out either.
    for number in range(1, 12):
        page.goto(f"/admin/jobs/job/?o={number}")
        assert page.evaluate(COLUMNS_FIT) == {"fits": True, "hidden": []}, number

    page.click("#toggle-nav-sidebar")  # the menu opens over the list, which keeps its width
    expect(page.locator("#nav-sidebar")).to_be_visible()
    assert page.evaluate(COLUMNS_FIT) == {"fits": True, "hidden": []}
    page.keyboard.press("Escape")
    expect(page.locator("#nav-sidebar")).to_be_hidden()
    expect(page.locator("#toggle-nav-sidebar")).to_be_focused()
    context.close()


def test_at_768_pixels_every_column_is_in_view_in_english_with_its_longest_words(
    browser, live_server, alice, reviewer
):
    # QA round 25: in English "Succeeded", "Submitting" and "Withdrawn" (one word each) beside
    # the FRAMEWORK and PRIORITY headers pushed the creation time 13 pixels out of the list's box.
    from jobs.models import ReviewState

    ReviewPolicy.objects.create(pk=1, mode=ReviewMode.ALL)
    for n, (status, review) in enumerate(
        [
            (JobStatus.SUCCEEDED, ReviewState.APPROVED),
            (JobStatus.SUBMITTING, ReviewState.NOT_REQUIRED),
            (JobStatus.STOPPED, ReviewState.WITHDRAWN),
        ]
    ):
        job = submit(alice, f"llama2-70b-sft-run-{n}-with-a-long-descriptive-name", LABELS)
        Job.objects.filter(pk=job.pk).update(status=status, review_state=review)
    context = browser.new_context(
        base_url=live_server.url, locale="en-US", viewport={"width": 768, "height": 900}
    )
    page = context.new_page()
    try:
        log_in(page, "carol", "carol-password")
        page.goto("/admin/jobs/job/")

        expect(page.locator("#result_list td.field-review_state").first).to_be_visible()
        assert page.evaluate(COLUMNS_FIT) == {"fits": True, "hidden": []}
    finally:
        context.close()


def test_the_side_menu_folds_for_a_narrow_window_without_forgetting_a_wide_ones_choice(
    page, alice, reviewer
):
    submit(alice, "menu-job")
    log_in(page, "carol", "carol-password")
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto("/admin/jobs/job/")
    expect(page.locator("#nav-sidebar")).to_be_visible()  # Django's default, beside the list

    page.set_viewport_size({"width": 900, "height": 800})
    page.goto("/admin/jobs/job/")
    expect(page.locator("#nav-sidebar")).to_be_hidden()
    assert page.evaluate("localStorage.getItem('django.admin.navSidebarIsOpen')") is None

    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto("/admin/jobs/job/")
    expect(page.locator("#nav-sidebar")).to_be_visible()


def test_on_a_phone_the_job_list_scrolls_inside_its_box_and_the_page_does_not(
    page, alice, reviewer
):
    submit(alice, "phone-job")
    log_in(page, "carol", "carol-password")
    page.set_viewport_size({"width": 390, "height": 800})
    page.goto("/admin/jobs/job/")

    assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")
    expect(page.locator("#result_list th.column-public_id_shown")).to_be_in_viewport()
    expect(page.locator("#result_list th.column-name_shown")).to_be_in_viewport()
    # The created column, reached by scrolling the table, shows the date and time.
    created = page.locator("#result_list td.field-created time").first
    created.scroll_into_view_if_needed()
    expect(created).to_have_text(re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}$"))


def test_on_a_phone_a_job_id_takes_one_line_cut_short_whole_on_hover_and_still_a_link(
    page, alice, reviewer
):
    job = submit(alice, "phone-job")
    log_in(page, "carol", "carol-password")
    page.set_viewport_size({"width": 375, "height": 800})
    page.goto("/admin/jobs/job/")

    link = page.locator("#result_list th.field-public_id_shown a").first
    assert link.evaluate(LINES) == 1
    line = link.evaluate("e => parseFloat(getComputedStyle(e).lineHeight)")
    assert link.evaluate("e => e.getBoundingClientRect().height") < 1.5 * line
    expect(link.locator("span")).to_have_attribute("title", job.public_id)
    expect(page.locator("#result_list th.column-name_shown")).to_be_in_viewport()
    link.click()
    expect(page).to_have_url(re.compile(rf"/admin/jobs/job/{job.pk}/change/$"))


def test_a_long_command_and_env_value_wrap_on_the_reviewers_job_page_instead_of_hiding(
    page, alice, reviewer
):
    ReviewPolicy.objects.create(pk=1, mode=ReviewMode.ALL)
    # A one-line script and a token-like value, with nowhere to break a line.
    command = "python3 -c 'print(" + "1" * 1500 + ")'"
    spec = S.JobSpec(
        name="bertlargepretrainingwholewordmaskingfp16bs128run01",
        resource_pool_id="local",
        image="python:3.12",
        command=command,
        envs=[S.Env("TOKEN_LIKE", "v" * 400)],
        roles=[S.Role("master", 1)],
    )
    [job] = jobs_submit(owner=alice, spec=spec, submit_key="long")
    log_in(page, "carol", "carol-password")

    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 800})
        page.goto(f"/admin/jobs/job/{job.pk}/change/")

        value = page.locator(".spec-value", has_text="1111111111")
        expect(value).to_contain_text(command)
        # Its end is on the page: neither clipped by its row nor out beside the page.
        wide, room = value.evaluate("e => [e.scrollWidth, e.closest('.form-row').clientWidth]")
        assert wide <= room, f"the command is {wide} px wide in a {room} px row at {width}"
        wide, screen = page.evaluate("[document.documentElement.scrollWidth, innerWidth]")
        assert wide <= screen, f"the page is {wide} px wide on a {screen} px screen"


@pytest.mark.parametrize("language", ["zh-CN", "en-US"])
def test_on_a_phone_the_job_pages_events_fit_the_screen(
    browser, live_server, alice, reviewer, language
):
    from jobs.models import EventType, JobEvent

    # At 390 pixels the events table was 10 to 25 pixels wider than its box: the reviewer
    # scrolled it sideways for the end of each row ("caro" of carol).
    job = submit(alice, "phone-events")
    for reason, message in [
        ("ReviewRequired", "需要审核：所有任务都需审核。"),
        ("Approved", "审核通过"),
        ("Submitting", "提交中"),
        ("LimitsNotEnforced", "CPU 和内存限制未生效：本机不支持 cgroup v2 委派。"),
        ("AlertSent", "告警已发送至 ops@example.com"),
    ]:
        JobEvent.objects.create(job=job, reason=reason, message=message, actor=reviewer)
    JobEvent.objects.create(
        job=job,
        type=EventType.WARNING,
        reason="AIHC:ImagePullBackOff",
        message='Back-off pulling image "registry.example.com/team/pytorch-train:2.5.1-cuda12.4"',
    )
    context = browser.new_context(base_url=live_server.url, locale=language)
    page = context.new_page()
    try:
        log_in(page, "carol", "carol-password")
        page.set_viewport_size({"width": 390, "height": 800})
        page.goto(f"/admin/jobs/job/{job.pk}/change/")

        events = page.locator("#events-group")
        expect(events.locator("td.field-actor a").first).to_have_text("carol")
        assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")
        # Nor sideways inside its own box (which Django lets scroll): every column in view.
        wide, room = events.locator(".wrapper").evaluate(
            "box => [box.scrollWidth, box.clientWidth]"
        )
        assert wide <= room, f"the events table is {wide} px wide in a {room} px box"
        actor = events.locator("td.field-actor a").first.bounding_box()
        assert actor["height"] < 30  # "carol" on one line, not "caro" over "l"
    finally:
        context.close()


@pytest.mark.parametrize("width", [1024, 1440])
def test_a_long_reject_reason_wraps_in_the_events_and_each_time_stays_in_two_pieces(
    browser, live_server, alice, reviewer, width
):
    # QA round 25: a reason with a long link made the events table 2,879 pixels wide, its "by"
    # column out of sight; beside it "2026-12-02 18:58:59" took three lines (2026- 12-02 ...).
    from jobs.review import job_reject

    ReviewPolicy.objects.create(pk=1, mode=ReviewMode.ALL)
    job = submit(alice, "long-reason")
    job_reject(job=job, reviewer=reviewer, reason="See https://wiki.example.com/" + "a" * 300)
    context = browser.new_context(
        base_url=live_server.url, locale="en-US", viewport={"width": width, "height": 900}
    )
    page = context.new_page()
    try:
        log_in(page, "carol", "carol-password")
        page.goto(f"/admin/jobs/job/{job.pk}/change/")

        events = page.locator("#events-group")
        expect(events.locator("td.field-actor a").last).to_have_text("carol")
        wide, room = events.locator(".wrapper").evaluate(
            "box => [box.scrollWidth, box.clientWidth]"
        )
        assert wide <= room, f"the events table is {wide} px wide in a {room} px box"
        for time in events.locator("td.field-time_shown time").all():
            assert time.evaluate(LINES) <= 2, time.inner_text()
    finally:
        context.close()


def test_change_password_in_the_admin_is_the_consoles_page_and_counts_wrong_guesses(
    page, reviewer, settings
):
    settings.LOGIN_FAILURES_PER_USERNAME = 2
    # This browser logged in as carol: its own failures count, up to the per-browser limit
    # (fix110: a stranger's guesses no longer lock out the account's own browsers).
    settings.LOGIN_FAILURES_PER_DEVICE = 2
    log_in(page, "carol", "carol-password")
    page.goto("/admin/")

    page.click("#user-tools a[href='/admin/password_change/']")
    page.wait_for_url("**/account/password/")
    for old in ("guess-one", "guess-two", "carol-password"):
        page.fill("input[name=old_password]", old)
        page.fill("input[name=new_password1]", "Another-long-pass-42")
        page.fill("input[name=new_password2]", "Another-long-pass-42")
        page.click("#password-change-submit")
        expect(page.locator("#id_old_password")).to_have_class(re.compile("is-invalid"))

    expect(page.locator("form[action='/account/password/']")).to_contain_text("登录失败次数过多")
    reviewer.refresh_from_db()
    assert reviewer.check_password("carol-password")


def test_a_reviewer_with_an_old_bookmarked_filter_is_told_why_and_gets_back_to_the_list(
    page, alice, reviewer
):
    ReviewPolicy.objects.create(pk=1, mode=ReviewMode.ALL)
    submit(alice, "bookmarked-job")
    log_in(page, "carol", "carol-password")

    # A filter the list no longer offers (saved before lists filtered only on their panel).
    page.goto("/admin/jobs/job/?name__icontains=bookmarked")

    expect(page.locator("h1")).to_have_text(
        "此列表不能这样筛选 · This list cannot be filtered that way"
    )
    expect(page.locator("#refused-en")).to_contain_text(
        "“name__icontains” in the address is no filter this list offers."
    )
    page.click("#whole-list")
    page.wait_for_url("**/admin/jobs/job/")
    expect(page.locator("#result_list")).to_contain_text("bookmarked-job")


def test_a_reviewer_without_a_permission_is_told_why_and_goes_back_to_review(page, alice):
    from django.contrib.auth.models import User

    job = submit(alice, "someone-elses")
    User.objects.create_user("dave", "dave@example.com", "dave-password", is_staff=True)
    log_in(page, "dave", "dave-password")

    page.goto(f"/admin/jobs/job/{job.pk}/change/")

    expect(page.locator("#forbidden")).to_have_text("您的账号不能打开此页面")
    expect(page.locator("main, body").first).to_contain_text("请超级管理员")
    page.click("#forbidden-review")
    page.wait_for_url(lambda url: url.endswith("/admin/"))


def test_a_reviewer_downloads_a_replicas_whole_log_from_the_logs_page(page, alice, reviewer):
    from jobs.logs import replica_log_path
    from jobs.models import JobReplica

    job = submit(alice, "logged-job")
    JobReplica.objects.create(job=job, role="master", index=0)
    log = replica_log_path(job.public_id, "master-0")
    log.parent.mkdir(parents=True)
    log.write_text("".join(f"2026-11-30T09:00:00.000000Z step {n}\n" for n in range(700)))
    log_in(page, "carol", "carol-password")
    page.goto(f"/admin/jobs/job/{job.pk}/change/")
    page.get_by_role("link", name=re.compile("日志")).first.click()
    expect(page.locator("pre.job-log")).to_contain_text("step 699")

    with page.expect_download() as downloading:
        page.get_by_role("link", name="下载日志").click()

    download = downloading.value
    assert download.suggested_filename == "logged-job-master-0.log"
    text = Path(download.path()).read_text(encoding="utf-8")
    # The whole log, not the page's last 500 lines.
    assert text.startswith("2026-11-30T09:00:00.000000Z step 0\n")
    assert text.count("\n") == 700


def test_a_reviewer_reads_every_event_of_a_job_with_more_than_its_page_shows(page, alice, reviewer):
    # Review 18b: the admin's job page shows the newest events only, and its note sent a
    # reviewer to the API, which answers a job's owner only.
    from jobs.models import JobEvent
    from jobs.services import EVENTS_SHOWN

    job = submit(alice, "many-events")
    JobEvent.objects.bulk_create(
        [JobEvent(job=job, reason="Restarted", message=f"step-{i:04d}") for i in range(250)]
    )
    log_in(page, "carol", "carol-password")
    page.goto(f"/admin/jobs/job/{job.pk}/change/")
    expect(page.locator("#events-hidden")).to_contain_text("未显示")
    rows = page.locator("tr", has_text="step-")
    expect(rows).to_have_count(EVENTS_SHOWN)  # the newest: the 250 came after "Created"

    page.click("#events-show-all")

    page.wait_for_url(f"**/admin/jobs/job/{job.pk}/change/?events=all")
    expect(rows).to_have_count(250)
    expect(page.locator("#events-hidden")).to_have_count(0)


def test_a_reviewer_pages_through_every_event_of_a_job_with_more_than_a_page(page, alice, reviewer):
    # Review 18c: "Show every event" drew them all on one page: 100,000 rows for a job
    # restarted for months. Now a page at a time, oldest first, with links to the others.
    from jobs.admin import EVENTS_PAGE
    from jobs.models import JobEvent

    job = submit(alice, "thousands-of-events")
    JobEvent.objects.bulk_create(
        [
            JobEvent(job=job, reason="Restarted", message=f"step-{i:04d}")
            for i in range(EVENTS_PAGE + 50)
        ]
    )
    total = job.events.count()
    log_in(page, "carol", "carol-password")
    page.goto(f"/admin/jobs/job/{job.pk}/change/")
    rows = page.locator("#events-group td.field-message_in_language")

    page.click("#events-show-all")

    expect(rows).to_have_count(EVENTS_PAGE)
    expect(page.locator("#events-pages")).to_contain_text(f"共 {total} 条")
    expect(page.locator("#events-earlier")).to_have_count(0)
    page.click("#events-later")
    page.wait_for_url("**events_page=2")
    expect(rows).to_have_count(total - EVENTS_PAGE)
    expect(rows.last).to_have_text(f"step-{EVENTS_PAGE + 49:04d}")
    expect(page.locator("#events-later")).to_have_count(0)
    page.click("#events-earlier")
    page.wait_for_url("**events_page=1")
    expect(rows.first).to_have_text("任务已创建。")


def test_staff_with_the_quota_permissions_alone_give_a_user_a_quota_by_searching_for_them(
    page, alice, settings
):
    # QA 49: the user box's search answered 403 to staff without `auth | user` permissions,
    # so it offered no one and the quota could not be added.
    from django.contrib.auth.models import Permission, User

    from jobs.models import CardQuota

    settings.LOCAL_ACCELERATORS = "baidu.com/a800_80g_cgpu=8"
    staff = User.objects.create_user("quinn", "quinn@example.com", "quinn-password", is_staff=True)
    staff.user_permissions.add(*Permission.objects.filter(content_type__model="cardquota"))
    log_in(page, "quinn", "quinn-password")
    page.goto("/admin/jobs/cardquota/add/")

    page.click(".field-user .select2-selection")
    page.fill(".select2-search__field", "ali")
    page.click(".select2-results__option >> text=alice")
    page.fill("#id_max_cards", "4")
    page.click("input[name=_save]")

    expect(page.locator(".messagelist")).to_contain_text("alice")
    assert CardQuota.objects.get().user == alice


def test_staff_with_the_quota_permissions_alone_find_no_one_by_email_in_the_user_box(page, alice):
    # admin30: the box found users by e-mail address, which such staff may not read.
    from django.contrib.auth.models import Permission, User

    staff = User.objects.create_user("quinn", "quinn@example.com", "quinn-password", is_staff=True)
    staff.user_permissions.add(*Permission.objects.filter(content_type__model="cardquota"))
    log_in(page, "quinn", "quinn-password")
    page.goto("/admin/jobs/cardquota/add/")

    page.click(".field-user .select2-selection")
    page.fill(".select2-search__field", "alice@example")
    expect(page.locator(".select2-results__message")).to_have_text("未找到结果")
    expect(page.locator(".select2-results__option", has_text="alice")).to_have_count(0)
    page.fill(".select2-search__field", "alic")
    expect(page.locator(".select2-results__option", has_text="alice")).to_have_count(1)


@pytest.mark.parametrize(
    ("language", "user", "group"), [("zh-hans", "用户", "用户组"), ("en", "User", "Group")]
)
def test_a_card_quotas_user_and_group_boxes_and_their_search_boxes_are_named_by_their_labels(
    page, alice, superuser, language, user, group
):
    # qa115: select2's combo boxes were named by what they showed (nothing yet) and the search
    # box it opens by nothing (axe: aria-input-field-name).
    log_in(page, "root", "root-password")
    page.context.add_cookies([{"name": "django_language", "value": language, "url": page.url}])
    page.goto("/admin/jobs/cardquota/add/")
    user_box = page.locator(".field-user .select2-selection")
    group_box = page.locator(".field-group .select2-selection")

    expect(user_box).to_have_accessible_name(f"{user}:")  # the label, as shown
    expect(group_box).to_have_accessible_name(f"{group}:")
    expect(user_box).to_have_accessible_description(re.compile("."))  # the field's help

    user_box.focus()
    page.keyboard.press("Enter")
    search = page.locator(".select2-container--open .select2-search__field")
    expect(search).to_be_focused()
    expect(search).to_have_accessible_name(user)
    page.keyboard.type("ali")
    page.locator(".select2-results__option", has_text="alice").wait_for()
    page.keyboard.press("Enter")
    # Chosen, the box says the label and then who.
    expect(user_box).to_have_accessible_name(f"{user}: alice")


def test_a_superuser_gives_a_group_a_permission_found_by_its_chinese_name(page, superuser):
    # QA 49: the permission boxes said "训练任务 | 卡配额 | Can change card quota" in Chinese.
    from django.contrib.auth.models import Group

    log_in(page, "root", "root-password")
    page.goto("/admin/auth/group/add/")
    page.fill("#id_name", "quota-keepers")

    page.fill("#id_permissions_input", "可修改卡配额")
    page.select_option("#id_permissions_from", label="训练任务 | 卡配额 | 可修改卡配额")
    page.click("#id_permissions_add")
    page.click("input[name=_save]")

    expect(page.locator(".messagelist")).to_contain_text("quota-keepers")
    group = Group.objects.get(name="quota-keepers")
    assert [p.codename for p in group.permissions.all()] == ["change_cardquota"]


def test_a_reviewer_lists_a_queue_groups_tasks_from_one_tasks_page(page, alice, reviewer):
    # QA 49: the list had no way to show one queue group's tasks alone.
    spec = S.JobSpec(
        name="qa-grp",
        resource_pool_id="local",
        image="python:3.12",
        command="echo hi",
        roles=[S.Role("master", 1)],
        submission=S.Submission(mode=S.SUBMIT_QUEUE, total=3, concurrency=1),
    )
    tasks = jobs_submit(owner=alice, spec=spec, submit_key="grp")
    submit(alice, "qa-grp-other")
    log_in(page, "carol", "carol-password")
    page.goto(f"/admin/jobs/job/{tasks[1].pk}/change/")

    page.get_by_text("调度位置", exact=True).click()  # the collapsed Placement section
    page.get_by_role("link", name="该组的全部任务（3）").click()

    rows = page.locator("#result_list tbody tr .field-name_shown a")
    expect(rows).to_have_count(3)
    assert sorted(rows.all_inner_texts()) == ["qa-grp 1/3", "qa-grp 2/3", "qa-grp 3/3"]


def test_a_reviewer_types_a_username_in_the_owner_filter_and_keeps_the_other_filters(
    page, alice, bob, reviewer
):
    # admin30: the panel listed every user of the site; it now has a username box.
    submit(alice, "alice-job")
    submit(bob, "bob-job")
    log_in(page, "carol", "carol-password")
    page.goto("/admin/jobs/job/?status__exact=queued")

    page.get_by_label("用户名").fill("bob")
    page.get_by_label("用户名").press("Enter")

    page.wait_for_url("**owner_name=bob**")
    assert "status__exact=queued" in page.url
    rows = page.locator("#result_list tbody tr .field-name_shown a")
    expect(rows).to_have_count(1)
    expect(rows).to_have_text("bob-job")
    page.locator("details[data-filter-title=创建人]").get_by_role("link", name="全部").click()
    expect(rows).to_have_count(2)
