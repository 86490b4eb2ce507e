"""The job list in a browser, as a team lead on a busy list meets it: rows come and go under a
filter while jobs are ticked for a bulk action, a job opened from it and deleted returns to it,
and last month's jobs are picked by date and paged through."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from jobs.models import Job, JobStatus
from jobs.services import job_transition

from .test_job_pages_browser import submitted

pytestmark = pytest.mark.browser


def test_a_job_ticked_on_page_2_that_the_refresh_brings_onto_page_1_stays_ticked_and_selected(
    logged_in_page, alice
):
    # Queued with no worker: the list refreshes every 3 s. queued-00 alone is on page 2.
    jobs = [submitted(alice, f"queued-{n:02d}") for n in range(21)]
    oldest, newest = jobs[0], jobs[-1]
    page = logged_in_page
    page.goto("/?status=queued&page=2")
    page.check(f"#select-{oldest.public_id}")
    page.get_by_role("link", name="上一页").click()
    page.wait_for_url(f"**/?status=queued&page=1&sel={oldest.public_id}")
    expect(page.locator("#selection-count")).to_have_text("已选 1 个任务")

    # The newest job ends (another tab, the worker): it leaves the filter, and the next refresh
    # moves queued-00 up from page 2 into this page.
    job_transition(job=newest, to=JobStatus.FAILED, reason="Test")
    expect(page.locator(f'tr[data-job="{oldest.public_id}"]')).to_be_visible()

    # Still ticked and still selected, as it was on page 2 (its box came unticked from the
    # refresh, which does not carry the selection, and the page dropped it without a word).
    expect(page.locator(f"#select-{oldest.public_id}")).to_be_checked()
    expect(page.locator("#selection-count")).to_have_text("已选 1 个任务")
    expect(page.locator("#selection-jobs .selection-job")).to_have_text(["queued-00 ×"])
    page.click("#bulk-stop")
    expect(page.locator("#bulk-jobs tbody tr")).to_have_count(1)
    expect(page.locator(f'#bulk-jobs tr[data-job="{oldest.public_id}"]')).to_be_visible()


def test_a_job_opened_from_page_2_of_a_filter_and_deleted_returns_to_that_page_of_that_filter(
    logged_in_page, alice
):
    jobs = [submitted(alice, f"queued-{n:02d}") for n in range(22)]
    oldest = jobs[0]
    page = logged_in_page
    page.goto("/?status=queued")
    page.get_by_role("link", name="下一页").click()
    page.wait_for_url("**/?status=queued&page=2")
    page.click(f"#job-link-{oldest.public_id}")
    page.wait_for_url(f"**/jobs/{oldest.public_id}/")
    # Queued: its page refreshes, redrawing its buttons; the way back outlives that.
    with page.expect_response(lambda r: r.request.headers.get("hx-request") == "true"):
        pass

    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#job-delete")

    page.wait_for_url("**/?status=queued&page=2")
    expect(page.locator(".alert-success")).to_contain_text("queued-00")
    expect(page.locator("#id_status")).to_have_value("queued")
    expect(page.locator("tbody tr[data-job]")).to_have_count(1)  # queued-01, page 2's last
    assert not Job.objects.filter(pk=oldest.pk).exists()


def test_a_job_opened_from_page_2_of_a_filter_stopped_then_deleted_returns_to_that_page(
    logged_in_page, alice
):
    # review28: the page Stop returns to was asked for with the job page as its Referer, and
    # Delete from there went to the unfiltered first page.
    jobs = [submitted(alice, f"queued-{n:02d}") for n in range(22)]
    oldest = jobs[0]
    page = logged_in_page
    page.goto("/?status=queued&page=2")
    page.click(f"#job-link-{oldest.public_id}")
    page.wait_for_url(f"**/jobs/{oldest.public_id}/")

    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#job-stop")
    page.wait_for_url(f"**/jobs/{oldest.public_id}/?back=status%3Dqueued%26page%3D2")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#job-delete")

    page.wait_for_url("**/?status=queued&page=2")
    expect(page.locator(".alert-success")).to_contain_text("queued-00")
    expect(page.locator("#id_status")).to_have_value("queued")
    expect(page.locator("tbody tr[data-job]")).to_have_count(1)  # queued-01, page 2's last
    assert not Job.objects.filter(pk=oldest.pk).exists()


POLLS_DONE = """() => {
  window.pollsDone = 0;
  document.addEventListener("htmx:afterRequest", () => { window.pollsDone += 1; });
}"""


def test_the_refresh_does_not_move_rows_under_the_mouse_and_brings_them_once_it_has_left(
    logged_in_page, alice
):
    jobs = [submitted(alice, f"queued-{n}") for n in range(5)]
    newest, aimed_at = jobs[-1], jobs[2]
    page = logged_in_page
    page.goto("/?status=queued")
    page.evaluate(POLLS_DONE)
    page.hover(f"#select-{aimed_at.public_id}")
    rows = page.locator("tbody tr[data-job]")
    before = rows.evaluate_all("rows => rows.map(row => row.dataset.job)")

    # The top job ends: it leaves the filter, and the rows below it would move up one, the next
    # job's box where the mouse is. Two refreshes done: one asked for after it ended.
    job_transition(job=newest, to=JobStatus.FAILED, reason="Test")
    done = page.evaluate("window.pollsDone")
    for _ in range(300):  # a refresh is asked for every 3 s: at most 30 s
        if page.evaluate("window.pollsDone") >= done + 2:
            break
        page.wait_for_timeout(100)
    else:
        pytest.fail("The list did not refresh.")

    assert rows.evaluate_all("rows => rows.map(row => row.dataset.job)") == before
    page.hover(f"#select-{aimed_at.public_id}")
    page.mouse.down()
    page.mouse.up()
    expect(page.locator(f"#select-{aimed_at.public_id}")).to_be_checked()

    # The mouse leaves the table: the next refresh takes the ended job away, the tick kept.
    page.hover("h1")
    expect(page.locator(f'tr[data-job="{newest.public_id}"]')).to_have_count(0)
    expect(rows).to_have_count(4)
    expect(page.locator(f"#select-{aimed_at.public_id}")).to_be_checked()
    expect(page.locator("#selection-count")).to_have_text("已选 1 个任务")


def test_a_team_lead_picks_last_months_dates_and_pages_through_its_jobs_alone(
    logged_in_page, alice
):
    from datetime import UTC, datetime

    # 22 jobs created in November (Shanghai days; the first at 00:30 on the 1st, which is still
    # October 31 in UTC), one the day before and one the day after.
    november = [submitted(alice, f"nov-{n:02d}") for n in range(22)]
    for n, job in enumerate(november):
        Job.objects.filter(pk=job.pk).update(
            created_at=datetime(2026, 10, 31, 16, 30 + n, tzinfo=UTC)
        )
    for name, created in [
        ("oct-31", datetime(2026, 10, 31, 15, 59, tzinfo=UTC)),
        ("dec-01", datetime(2026, 11, 30, 16, 0, tzinfo=UTC)),
    ]:
        Job.objects.filter(pk=submitted(alice, name).pk).update(created_at=created)
    page = logged_in_page
    page.goto("/")
    expect(page.locator("#job-table tbody tr")).to_have_count(20)

    page.get_by_label("创建时间起").fill("2026-11-01")
    page.get_by_label("创建时间止").fill("2026-11-30")
    page.get_by_role("button", name="筛选").click()
    page.wait_for_url("**/?*created_from=2026-11-01&created_to=2026-11-30*")
    expect(page.locator("#job-table tbody tr").first).to_contain_text("nov-21")

    page.get_by_role("link", name="下一页").click()
    page.wait_for_url("**/?*created_from=2026-11-01&created_to=2026-11-30*page=2")
    # Page 2 holds the two oldest of November, not the day before (nor the day after).
    expect(page.locator("#job-table tbody tr")).to_have_count(2)
    expect(page.locator("#job-table tbody tr")).to_contain_text(["nov-01", "nov-00"])
    expect(page.get_by_label("创建时间起")).to_have_value("2026-11-01")
    expect(page.get_by_label("创建时间止")).to_have_value("2026-11-30")
    # The jobs are queued (no worker): the 3-second refresh keeps the filter too.
    with page.expect_response(lambda r: r.request.headers.get("hx-request") == "true") as poll:
        pass
    assert "created_to=2026-11-30" in poll.value.url
    expect(page.locator("#job-table tbody tr")).to_have_count(2)

    # Back to page 1: still November's jobs alone.
    page.go_back()
    page.wait_for_url("**/?*created_from=2026-11-01&created_to=2026-11-30&label=")
    expect(page.locator("#job-table tbody tr")).to_have_count(20)
    expect(page.locator("#job-table")).not_to_contain_text("dec-01")
    expect(page.get_by_label("创建时间止")).to_have_value("2026-11-30")


def test_back_after_delete_selected_shows_its_question_as_out_of_date_with_its_button_off(
    logged_in_page, alice
):
    jobs = [submitted(alice, f"failed-{n:02d}") for n in range(4)]
    for job in jobs:
        job_transition(job=job, to=JobStatus.FAILED, reason="Test")
    gone = jobs[:2]
    page = logged_in_page
    page.goto("/?status=failed")
    for job in gone:
        page.check(f"#select-{job.public_id}")
    page.click("#bulk-delete")
    # Drawn by the server: the question as it is, nothing said of history.
    expect(page.locator("#bulk-jobs tbody tr")).to_have_count(2)
    expect(page.locator("#bulk-stale")).to_be_hidden()
    expect(page.locator("#confirm-bulk-delete")).to_be_enabled()
    page.click("#confirm-bulk-delete")
    page.wait_for_url("**/?status=failed")
    expect(page.locator(".alert-success")).to_contain_text("已删除 2 个任务")

    # Back: the browser shows the question again from its history, listing the two jobs as
    # still there and asking to delete them (qa65: nothing said it was out of date).
    page.go_back()
    expect(page.locator("#bulk-jobs tbody tr")).to_have_count(2)
    expect(page.locator("#bulk-stale")).to_be_visible()
    expect(page.locator("#bulk-stale")).to_contain_text("此页是浏览器从历史记录中重新显示的")
    expect(page.locator("#confirm-bulk-delete")).to_be_disabled()

    # Its link: the list as it was, the two jobs counted as gone, the others still there.
    page.click("#bulk-stale-back")
    page.wait_for_url("**/?status=failed*")
    expect(page.locator("body")).to_contain_text("2 个所选任务已不存在")
    expect(page.locator("#job-table tbody tr[data-job]")).to_have_count(2)
    assert Job.objects.filter(owner=alice).count() == 2


@pytest.mark.parametrize(
    "typed",
    [
        "failed-01\u00a0",  # pasted from a web page: a non-breaking space at its end
        "\u200bfailed-01\u200b",  # pasted from a chat: zero-width spaces
        "ｆａｉｌｅｄ－０１\u3000",  # a Chinese input method's full-width letters and space
    ],
)
def test_a_job_name_pasted_from_a_chat_or_typed_full_width_is_searched_and_found(
    logged_in_page, alice, typed
):
    jobs = [submitted(alice, f"failed-{n:02d}") for n in range(3)]
    page = logged_in_page
    page.goto("/")

    page.fill("#id_q", typed)
    page.press("#id_q", "Enter")

    # The browser's check of the box refused it ("Please match the requested format") though
    # it showed the name, and nothing was searched (qa65).
    page.wait_for_url("**/?q=failed-01*")
    expect(page.locator("#id_q")).to_have_value(
        "failed-01 " if typed.endswith(("\u00a0", "\u3000")) else "failed-01"
    )
    expect(page.locator("#job-table tbody tr[data-job]")).to_have_count(1)
    expect(page.locator(f'tr[data-job="{jobs[1].public_id}"]')).to_be_visible()


def test_a_name_composed_full_width_with_an_input_method_is_made_plain_once_it_is_committed(
    logged_in_page, alice
):
    """A Chinese input method's composition: what it shows while composing is its own, and
    rewriting the box then would break it; once the text is committed it is made plain, so the
    search finds the name (qa65's console.js, checked by review 47 with the browser's own
    composition events)."""
    jobs = [submitted(alice, f"failed-{n:02d}") for n in range(3)]
    page = logged_in_page
    page.goto("/")
    page.focus("#id_q")
    session = page.context.new_cdp_session(page)

    session.send(
        "Input.imeSetComposition",
        {"text": "ｆａｉｌｅｄ－０１", "selectionStart": 9, "selectionEnd": 9},
    )
    expect(page.locator("#id_q")).to_have_value("ｆａｉｌｅｄ－０１")  # left alone while composed
    session.send("Input.insertText", {"text": "ｆａｉｌｅｄ－０１"})
    expect(page.locator("#id_q")).to_have_value("failed-01")
    page.press("#id_q", "Enter")

    page.wait_for_url("**/?q=failed-01*")
    expect(page.locator("#job-table tbody tr[data-job]")).to_have_count(1)
    expect(page.locator(f'tr[data-job="{jobs[1].public_id}"]')).to_be_visible()


def test_a_tasks_page_links_its_groups_tasks_and_the_list_filtered_so_clears_back_to_all(
    logged_in_page, alice
):
    from dataclasses import replace

    from jobs import spec as S
    from jobs.services import jobs_submit

    def sweep(key: str) -> list[Job]:
        spec = S.parse_document(
            {
                "name": "sweep-lr",
                "queue": "default",
                "jobFramework": "PyTorchJob",
                "jobSpec": {"image": "registry.example.com/x:1", "command": "true", "replicas": 1},
            },
            resource_pool_id="local",
        )
        spec.submission = replace(spec.submission, mode=S.SUBMIT_QUEUE, total=3)
        return jobs_submit(owner=alice, spec=spec, submit_key=key)

    mine, same_name = sweep("first"), sweep("second")
    Job.objects.filter(pk=mine[0].pk).update(status=JobStatus.SUCCEEDED)
    page = logged_in_page
    page.goto(f"/jobs/{mine[1].public_id}/")
    expect(page.locator("#group-progress")).to_contain_text(
        "所在任务组共 3 个任务：成功：1、排队中：2。"
    )

    page.get_by_role("link", name="查看该组的任务").click()

    page.wait_for_url(f"**/?group={mine[0].group_id}")
    expect(page.locator("#job-table tbody tr")).to_have_count(3)
    for task in same_name:
        expect(page.locator(f'tr[data-job="{task.public_id}"]')).to_have_count(0)
    expect(page.locator("#group-filter-name")).to_contain_text("sweep-lr（3 个任务）")
    expect(page.locator("#job-count")).to_have_text("共 3 个任务")
    # Another filter keeps the group's (the form carries it).
    page.select_option("#id_status", "queued")
    page.get_by_role("button", name="筛选", exact=True).click()
    page.wait_for_url("**/?*status=queued*")
    assert f"group={mine[0].group_id}" in page.url
    expect(page.locator("#job-table tbody tr")).to_have_count(2)

    page.get_by_role("link", name="不再按队列任务组 sweep-lr（3 个任务） 筛选").click()

    page.wait_for_url("**/?status=queued")
    expect(page.locator("#group-filter")).to_have_count(0)
    expect(page.locator("#job-table tbody tr")).to_have_count(5)
    expect(page.locator("#job-count")).to_have_text("共 5 个任务")


def test_an_image_address_typed_in_the_search_box_is_sent_and_finds_who_runs_it(
    logged_in_page, alice
):
    # qa98: the box's pattern took one "/" and no ":", so the browser refused an image's
    # address ("Please match the requested format") and nothing was searched.
    ngc = submitted(alice, "ngc", image="nvcr.io/nvidia/pytorch:24.01-py3")
    submitted(alice, "plain")  # registry.example.com/x:1
    page = logged_in_page
    page.goto("/")

    page.fill("#id_q", "nvcr.io/nvidia/pytorch:24.01")
    page.press("#id_q", "Enter")

    page.wait_for_url("**/?q=nvcr.io*")
    expect(page.locator("#job-table tbody tr[data-job]")).to_have_count(1)
    expect(page.locator(f'tr[data-job="{ngc.public_id}"]')).to_be_visible()
