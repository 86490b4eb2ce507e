"""A job submitted from the wizard, run by a real worker, watched and stopped in a browser."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from jobs.models import Job, JobStatus
from tests.conftest import log_in

from .runner_helpers import processes_with, runner_settings, worker_in_thread  # noqa: F401

pytestmark = pytest.mark.browser

A800 = "baidu.com/a800_80g_cgpu"


def submitted(owner, name: str, *, command: str = "true", image: str = "registry.example.com/x:1"):
    """A one-replica PyTorch job of `owner` on the local pool, submitted as the wizard would."""
    from jobs import spec as S
    from jobs.services import jobs_submit

    spec = S.parse_document(
        {
            "name": name,
            "queue": "default",
            "jobFramework": "PyTorchJob",
            "jobSpec": {"image": image, "command": command, "replicas": 1},
        },
        resource_pool_id="local",
    )
    [job] = jobs_submit(owner=owner, spec=spec, submit_key=name)
    return job


def with_loss_log(owner, name: str) -> Job:
    """A job of `owner` (submitted) whose master-0 log has 250 lines matching 'loss': a search
    for it shows the newest 200, with 更早的匹配 (Older matches) for the other 50."""
    from jobs.logs import replica_log_path
    from jobs.models import JobReplica

    job = submitted(owner, name)
    JobReplica.objects.create(job=job, role="master", index=0)
    log = replica_log_path(job.public_id, "master-0")
    log.parent.mkdir(parents=True)
    log.write_text(
        "".join(f"2026-11-30T09:00:00.000000Z step {i} loss 0.5\n" for i in range(1, 251))
    )
    return job


@pytest.fixture
def worker_thread(settings, tmp_path):
    settings.LOCAL_ACCELERATORS = f"{A800}=8"
    settings.LOCAL_VOLUMES = f"scratch={tmp_path / 'scratch'}"
    settings.WORKER_POLL_SECONDS = 0.2
    settings.LOCAL_STOP_GRACE_SECONDS = 1
    with worker_in_thread():
        yield


def next_step(page, slug):
    page.click("#wizard-next")
    page.wait_for_url(re.compile(rf"/{slug}/$"))


def submit_from_the_wizard(page, command):
    page.click("#nav-create-job")
    page.click("#new-draft")
    page.wait_for_url(re.compile(r"/create/[0-9a-f-]+/basic/$"))
    page.check("input[name=framework][value=PyTorchJob]")
    next_step(page, "image")
    page.fill("#id_image", "registry.example.com/train/pytorch:2.5")
    page.fill("#id_command", command)
    for slug in ("resources", "data"):
        next_step(page, slug)
    page.fill("#id_mounts-0-mount_path", "/workspace")
    for slug in ("fault", "advanced", "submission", "review"):
        next_step(page, slug)
    page.click("#wizard-submit")
    page.wait_for_url(re.compile(r"/jobs/pytorchjob-"))


def test_the_page_opened_on_submit_follows_the_job_to_its_end_without_a_reload(
    logged_in_page, alice, worker_thread
):
    page = logged_in_page
    csp_violations: list[str] = []
    page.on(
        "console",
        lambda m: csp_violations.append(m.text) if "Content Security Policy" in m.text else None,
    )
    # Coloured output, as loguru or rich write it: the page shows the text, not the codes.
    submit_from_the_wizard(page, r"sleep 1; printf '\033[32mall-done\033[0m-%s\n' $RANK")

    expect(page.locator("#job-status")).to_have_text(re.compile("Succeeded|成功"), timeout=30_000)
    expect(page.locator("#log-lines")).to_contain_text("all-done-0", timeout=10_000)
    expect(page.locator("#log-lines")).not_to_contain_text("[0m")
    expect(page.locator("#job-stop")).to_have_count(0)
    expect(page.locator("#job-rerun")).to_be_visible()
    expect(page.locator("#job-duration")).to_have_text(re.compile(r"^\d+ 秒$"))  # not "–"
    page.set_viewport_size({"width": 1280, "height": 800})
    page.click("[data-language=en]")  # English headers are the longer ones
    expect(page.locator("#replicas")).to_contain_text("Card IDs")
    widths = page.locator("#replicas").evaluate("t => [t.scrollWidth, t.parentElement.clientWidth]")
    assert widths[0] <= widths[1]  # every replica column shows, no sideways scrolling
    assert csp_violations == []  # the live swaps need nothing the policy refuses


def test_a_job_submitted_in_the_wizard_runs_shows_its_logs_and_stops(
    logged_in_page, alice, worker_thread
):
    page = logged_in_page
    page.click("#nav-create-job")
    page.click("#new-draft")
    page.wait_for_url(re.compile(r"/create/[0-9a-f-]+/basic/$"))
    page.fill("#id_name", "browser-run")
    page.check("input[name=framework][value=PyTorchJob]")
    next_step(page, "image")
    page.fill("#id_image", "registry.example.com/train/pytorch:2.5")
    page.fill("#id_command", "for i in $(seq 1 600); do echo tick-$RANK-$i; sleep 0.1; done")
    next_step(page, "resources")
    next_step(page, "data")
    page.fill("#id_mounts-0-mount_path", "/workspace")
    for slug in ("fault", "advanced", "submission", "review"):
        next_step(page, slug)
    page.click("#wizard-submit")
    page.wait_for_url(re.compile(r"/jobs/pytorchjob-"))

    # The page follows the job as the worker starts it, then tails its log.
    expect(page.locator("#job-status")).to_have_text(re.compile("Running|运行中"), timeout=20_000)
    expect(page.locator("#log-lines")).to_contain_text("tick-0-", timeout=20_000)
    page.click('#log-panel a.nav-link:has-text("worker-0")')
    expect(page.locator("#log-lines")).to_contain_text("tick-1-", timeout=20_000)
    # The address follows the tab, so a reload (or a shared link) opens worker-0's log.
    page.wait_for_url(re.compile(r"\?replica=worker-0"))
    page.reload()
    expect(page.locator("#log-panel a.nav-link.active")).to_have_text("worker-0")

    questions = []
    page.once("dialog", lambda dialog: (questions.append(dialog.message), dialog.accept()))
    page.click("#job-stop")
    expect(page.locator("#job-status")).to_have_text(re.compile("Stopped|已停止"), timeout=20_000)
    assert questions and ("cannot be resumed" in questions[0] or "无法恢复" in questions[0])
    job = Job.objects.get(owner=alice)
    assert job.status == JobStatus.STOPPED
    assert processes_with(job.public_id) == []


def test_deleting_a_job_asks_first_and_keeps_it_when_cancelled(logged_in_page, alice):

    job = submitted(alice, "to-delete")
    page = logged_in_page
    page.goto(f"/jobs/{job.public_id}/")
    questions: list[str] = []

    def answer(dialog) -> None:
        questions.append(dialog.message)
        dialog.dismiss() if len(questions) == 1 else dialog.accept()

    page.on("dialog", answer)
    # A danger button, in Bootstrap's red, not a grey outline that looks disabled.
    expect(page.locator("#job-delete")).to_be_enabled()
    expect(page.locator("#job-delete")).to_have_class(re.compile(r"\bbtn-outline-danger\b"))
    expect(page.locator("#job-delete")).to_have_css("color", "rgb(220, 53, 69)")
    page.click("#job-delete")  # cancelled
    expect(page.locator("#job-delete")).to_be_visible()
    assert Job.objects.filter(pk=job.pk).exists()
    page.click("#job-delete")  # confirmed
    page.wait_for_url(re.compile(r"/$"))

    assert len(questions) == 2 and "删除" in questions[0]
    assert not Job.objects.filter(pk=job.pk).exists()


def test_a_queue_task_is_found_by_searching_for_its_name_as_the_list_shows_it(
    logged_in_page, alice
):
    from jobs import spec as S
    from jobs.services import jobs_submit

    spec = S.parse_document(
        {
            "name": "qa-grp2",
            "queue": "default",
            "jobFramework": "PyTorchJob",
            "jobSpec": {"image": "registry.example.com/x:1", "command": "true", "replicas": 1},
        },
        resource_pool_id="local",
    )
    spec.submission = S.Submission(mode=S.SUBMIT_QUEUE, total=3)
    group = jobs_submit(owner=alice, spec=spec, submit_key="the-group")
    submitted(alice, "qa-grp2")
    page = logged_in_page
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto("/")

    # The name as the row shows it, badge and all, copied into the search box.
    row = page.locator(f"tr[data-job='{group[1].public_id}'] td").nth(1)
    shown = " ".join(row.locator("a, .group-task").all_inner_texts())
    assert shown == "qa-grp2 2/3"
    page.fill("#id_q", shown)
    page.press("#id_q", "Enter")

    page.wait_for_url(re.compile(r"\?q=qa-grp2"))
    expect(page.locator("tr[data-job]")).to_have_count(1)
    expect(page.locator(f"tr[data-job='{group[1].public_id}']")).to_be_visible()


def test_a_queue_tasks_copy_opens_a_draft_of_the_group_and_run_again_runs_the_one_task(
    logged_in_page, alice
):
    from jobs import spec as S
    from jobs.services import jobs_submit

    spec = S.parse_document(
        {
            "name": "sweep",
            "queue": "default",
            "jobFramework": "PyTorchJob",
            "jobSpec": {"image": "registry.example.com/x:1", "command": "true", "replicas": 1},
        },
        resource_pool_id="local",
    )
    spec.submission = S.Submission(mode=S.SUBMIT_QUEUE, total=3, concurrency=2)
    group = jobs_submit(owner=alice, spec=spec, submit_key="sweep")
    page = logged_in_page
    page.goto(f"/jobs/{group[1].public_id}/")

    # The buttons say which is which, and the note under them what each does.
    expect(page.locator("#job-copy")).to_have_text("复制整个任务组")
    expect(page.locator("#job-rerun")).to_have_text("再次运行此任务")
    expect(page.locator("#group-actions-help")).to_contain_text("共 3 个任务")
    page.click("#job-copy")
    page.wait_for_url(re.compile(r"/basic/$"))
    expect(page.locator("body")).to_contain_text("草稿是整个队列任务组的：共 3 个任务")
    page.click(".wizard-steps button[value='goto-submission']")
    page.wait_for_url(re.compile(r"/submission/$"))
    expect(page.locator("#id_total")).to_have_value("3")
    expect(page.locator("#id_concurrency")).to_have_value("2")

    page.goto(f"/jobs/{group[1].public_id}/")
    page.click("#job-rerun")
    page.wait_for_url(lambda url: "/jobs/" in url and group[1].public_id not in url)
    new = Job.objects.exclude(pk__in=[j.pk for j in group]).get()
    assert new.public_id in page.url and new.job_spec().submission.total == 1
    # The task run again is a queue task of its own (a group of one): its page's buttons are
    # the plain ones, with no note, and its copy says nothing of a group.
    # It reads as the task it runs again, 2/3 (its envs pin its index), not 1/1 (qa91).
    expect(page.locator("#group-task")).to_have_text("2/3（再次）")
    expect(page.locator("#job-copy")).to_have_text("复制")
    expect(page.locator("#job-rerun")).to_have_text("再次运行")
    expect(page.locator("#group-actions-help")).to_have_count(0)
    page.click("#job-copy")
    page.wait_for_url(re.compile(r"/basic/$"))
    expect(page.locator("body")).not_to_contain_text("队列任务组")


def test_a_reviewers_reason_keeps_its_line_breaks_on_the_owners_page(
    logged_in_page, alice, reviewer
):
    from jobs.models import ReviewMode, ReviewPolicy
    from jobs.review import job_reject

    ReviewPolicy.objects.create(pk=1, mode=ReviewMode.ALL)
    job = submitted(alice, "too-big")
    job_reject(job=job, reviewer=reviewer, reason="Too many cards.\nAsk for 4 and submit again.")
    page = logged_in_page

    page.goto(f"/jobs/{job.public_id}/")

    # As the reviewer wrote it: two lines, in the reason and in the event, not run together.
    assert page.inner_text("#status-reason") == "Too many cards.\nAsk for 4 and submit again."
    assert "Too many cards.\nAsk for 4" in page.inner_text("#events")


def test_an_image_pinned_by_digest_wraps_in_the_overview_instead_of_widening_the_page(
    logged_in_page, alice
):

    # Pinned by digest: 64 hex digits with nowhere to break a line.
    image = "registry.example.com/train/pytorch@sha256:" + "0123456789abcdef" * 4
    job = submitted(alice, "digest-image", image=image)
    page = logged_in_page
    page.set_viewport_size({"width": 1280, "height": 800})

    page.goto(f"/jobs/{job.public_id}/")

    value = page.locator("#summary dd", has_text="sha256:")
    expect(value).to_have_text(image)
    # Inside its own column: it once ran over 后端 beside it (and a longer one out of the page).
    wide, room = value.evaluate("dd => [dd.scrollWidth, dd.clientWidth]")
    assert wide <= room


def test_the_aihc_job_id_is_copied_from_its_labelled_row_on_the_job_page(logged_in_page, alice):
    import uuid

    from jobs.services import job_transition

    job = submitted(alice, "on-aihc")
    job_transition(job=job, to=JobStatus.STOPPED, reason="Stopped")
    # As an AIHC job records it: AIHC's id looks like the console's, pytorchjob-<uuid>.
    aihc_id = f"pytorchjob-{uuid.uuid4()}"
    Job.objects.filter(pk=job.pk).update(backend="aihc", external_id=aihc_id)
    page = logged_in_page
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])

    page.goto(f"/jobs/{job.public_id}/")

    summary = page.locator("#summary")
    expect(summary.locator("dt", has_text="控制台任务 ID")).to_be_visible()
    expect(summary.locator("dt", has_text="百舸 AIHC 任务 ID")).to_be_visible()
    expect(page.locator("#public-id")).to_have_text(job.public_id)
    page.click("#external-id-copy")
    expect(page.locator("#external-id-copy")).to_have_text("✓")
    expect(page.locator("#copy-status")).to_have_text("已复制。")
    assert page.evaluate("navigator.clipboard.readText()") == aihc_id


def test_stopping_a_job_awaiting_review_says_it_will_not_be_sent_or_started(
    browser, live_server, alice
):
    """Its page's question and Stop selected's spoke of instances it never had."""
    from jobs.models import ReviewMode, ReviewPolicy

    ReviewPolicy.objects.update_or_create(pk=1, defaults={"mode": ReviewMode.ALL})
    job = submitted(alice, "awaits-review")
    assert job.status == JobStatus.PENDING_REVIEW
    not_started = re.compile("尚未启动.*不会被提交或启动")

    # With JavaScript the browser asks, and is answered No.
    context = browser.new_context(base_url=live_server.url, locale="zh-CN")
    page = context.new_page()
    try:
        log_in(page, "alice", "alice-password")
        page.goto(f"/jobs/{job.public_id}/")
        questions: list[str] = []
        page.once("dialog", lambda dialog: (questions.append(dialog.message), dialog.dismiss()))
        page.click("#job-stop")
        expect(page.locator("#job-stop")).to_be_visible()
        assert len(questions) == 1 and not_started.search(questions[0]), questions
    finally:
        context.close()

    # Without it the server asks, on the job's page and on Stop selected's.
    context = browser.new_context(
        base_url=live_server.url, java_script_enabled=False, locale="zh-CN"
    )
    page = context.new_page()
    try:
        log_in(page, "alice", "alice-password")
        page.goto(f"/jobs/{job.public_id}/")
        page.click("#job-stop")
        expect(page.locator("#stop-question")).to_have_text(not_started)
        page.get_by_role("link", name="取消").click()
        expect(page.locator("#job-stop")).to_be_visible()

        page.goto("/")
        page.check(f"#select-{job.public_id}")
        page.click("#bulk-stop")
        expect(page.locator("#bulk-question")).to_have_text(not_started)
        expect(page.locator("#bulk-jobs .bulk-plan")).to_have_text(
            ["等待审核中：将撤出审核，不会被提交或启动。"]
        )
        page.click("#confirm-bulk-stop")
        expect(page.locator(".alert-success")).to_contain_text("1")
    finally:
        context.close()
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPED


def test_two_running_jobs_ticked_in_the_list_stay_ticked_through_a_poll_and_stop_together(
    logged_in_page, alice, worker_thread
):

    def running_job(name: str) -> Job:
        return submitted(alice, name, command="sleep 600")

    first, second = running_job("bulk-first"), running_job("bulk-second")
    left_running = running_job("bulk-left")
    page = logged_in_page
    page.goto("/")
    for job in (first, second, left_running):
        row = page.locator(f'tr[data-job="{job.public_id}"]')
        expect(row.locator(".job-status")).to_have_text(
            re.compile("Running|运行中"), timeout=20_000
        )

    page.check(f"#select-{first.public_id}")
    page.check(f"#select-{second.public_id}")
    # The next poll swaps the whole table: mark this one, and see the mark gone with it.
    page.locator("#job-table").evaluate("table => { table.dataset.beforePoll = '1'; }")
    with page.expect_response(lambda r: r.request.headers.get("hx-request") == "true"):
        pass
    expect(page.locator("#job-table[data-before-poll]")).to_have_count(0)
    expect(page.locator(f"#select-{first.public_id}")).to_be_checked()
    expect(page.locator(f"#select-{second.public_id}")).to_be_checked()
    expect(page.locator(f"#select-{left_running.public_id}")).not_to_be_checked()
    expect(page.locator("#select-all")).to_have_js_property("indeterminate", True)

    page.click("#bulk-stop")
    page.wait_for_url(re.compile(r"/jobs/bulk/$"))
    expect(page.locator("#bulk-jobs tbody tr")).to_have_count(2)
    expect(page.locator("#bulk-jobs .bulk-plan")).to_have_text(
        [re.compile("Will be stopped|将被停止")] * 2
    )
    page.click("#confirm-bulk-stop")

    page.wait_for_url(lambda url: url.endswith("/"))
    expect(page.locator(".alert-success")).to_contain_text("2")
    for job in (first, second):
        row = page.locator(f'tr[data-job="{job.public_id}"]')
        expect(row.locator(".job-status")).to_have_text(
            re.compile("Stopped|已停止"), timeout=20_000
        )
    assert [Job.objects.get(pk=j.pk).status for j in (first, second)] == [JobStatus.STOPPED] * 2
    assert processes_with(first.public_id) == [] and processes_with(second.public_id) == []
    assert Job.objects.get(pk=left_running.pk).status == JobStatus.RUNNING


def test_a_search_typed_while_the_log_refreshes_shows_its_highlighted_match_in_place(
    logged_in_page, alice
):
    from jobs.logs import replica_log_path
    from jobs.models import JobReplica
    from jobs.services import job_transition

    job = submitted(alice, "nan-hunt")
    JobReplica.objects.create(job=job, role="master", index=0)
    log = replica_log_path(job.public_id, "master-0")
    log.parent.mkdir(parents=True)
    lines = [f"2026-11-30T09:00:{i:02d}.000000Z step {i} loss 0.5" for i in range(40)]
    lines[30] = "2026-11-30T09:00:30.000000Z step 30 loss NaN <not html>"
    log.write_text("\n".join(lines) + "\n")
    # Running: its tail refreshes every 2 s while the search is typed.
    job_transition(job=job, to=JobStatus.RUNNING, reason="Started")
    page = logged_in_page
    csp_violations: list[str] = []
    page.on(
        "console",
        lambda m: csp_violations.append(m.text) if "Content Security Policy" in m.text else None,
    )
    page.goto(f"/jobs/{job.public_id}/")

    page.click("#log-search-q")
    page.keyboard.type("lo")
    with page.expect_response(lambda r: "/logs/?replica=master-0" in r.url):
        pass  # a refresh of the tail came in meanwhile
    page.keyboard.type("ss nan")
    page.keyboard.press("Enter")

    # Typed through the refresh, not cut off by it; the match is marked, its text escaped.
    expect(page.locator("#log-search-q")).to_have_value("loss nan")
    expect(page.locator("#log-search-results mark")).to_have_text("loss NaN")
    expect(page.locator("#log-search-results")).to_contain_text("31: ")
    expect(page.locator("#log-search-results")).to_contain_text("NaN <not html>")
    expect(page.locator("#log-lines")).to_contain_text("step 39 loss 0.5")
    # The address is the search's page: a reload shows the same results.
    page.wait_for_url(re.compile(r"[?&]q=loss\+nan"))
    page.reload()
    expect(page.locator("#log-search-results mark")).to_have_text("loss NaN")
    assert csp_violations == []


def test_a_regular_expression_the_engine_refuses_is_explained_in_chinese_and_kept_to_fix(
    logged_in_page, alice
):
    """ "unknown extension" showed in English inside the Chinese sentence, and flags that
    exclude each other answered a server error."""
    from jobs.logs import replica_log_path
    from jobs.models import JobReplica

    job = submitted(alice, "regex-mistakes")
    JobReplica.objects.create(job=job, role="master", index=0)
    log = replica_log_path(job.public_id, "master-0")
    log.parent.mkdir(parents=True)
    log.write_text("2026-11-30T09:00:00.000000Z step 1 loss NaN\n")
    page = logged_in_page
    page.goto(f"/jobs/{job.public_id}/")
    error = page.locator("#log-search-q-error")

    page.fill("#log-search-q", "loss (?Qnan)")
    page.check("#log-search-regex")
    page.click("#log-search-submit")
    expect(error).to_have_text(
        "无法使用此正则表达式：在第 8 个字符处，(? 或 (* 后面的写法无法识别；如只需分组，请写 (?:...)。"
    )
    expect(page.locator("#log-search-q")).to_have_value("loss (?Qnan)")

    page.fill("#log-search-q", "loss(?u)(?a) nan")
    page.click("#log-search-submit")
    expect(error).to_contain_text("无法使用此正则表达式：(?...) 中的标志无效")
    expect(page.locator("#log-search-q")).to_have_value("loss(?u)(?a) nan")

    page.fill("#log-search-q", "loss (?i:nan)")
    page.click("#log-search-submit")
    expect(page.locator("#log-search-results mark")).to_have_text("loss NaN")
    expect(error).to_have_count(0)


def test_a_search_refused_as_two_of_ones_own_run_says_so_beside_the_words_typed(
    logged_in_page, alice
):
    """qa90: searches one person runs at once are two; the third's answer (429) is drawn in
    place like any other, where htmx leaves an error answer undrawn."""
    from jobs.logs import search_slot

    job = with_loss_log(alice, "busy-search")
    page = logged_in_page
    page.goto(f"/jobs/{job.public_id}/")
    with search_slot(user_id=alice.pk), search_slot(user_id=alice.pk):
        page.fill("#log-search-q", "step 250 loss")
        page.click("#log-search-submit")
        expect(page.locator("#log-search-error")).to_contain_text("您有 2 个搜索仍在进行")
    expect(page.locator("#log-search-q")).to_have_value("step 250 loss")

    page.click("#log-search-submit")
    expect(page.locator("#log-search-results mark")).to_have_text("step 250 loss")
    expect(page.locator("#log-search-error")).to_have_count(0)


def test_older_matches_of_a_search_open_in_place_and_the_newest_come_back(logged_in_page, alice):
    from jobs.services import job_transition

    job = with_loss_log(alice, "loss-pages")
    job_transition(job=job, to=JobStatus.RUNNING, reason="Started")
    page = logged_in_page
    page.goto(f"/jobs/{job.public_id}/?replica=master-0&q=loss&context=0#log-search")
    results = page.locator("#log-search-results")
    expect(results).to_contain_text("51: 2026-11-30")
    expect(page.locator("#log-search-newest")).to_have_count(0)

    with page.expect_response(lambda r: "/logs/search/" in r.url):
        page.click("#log-search-older")  # 更早的匹配

    # Swapped in place: lines 1-50, numbered as in the download; the tail still beside it.
    expect(results).to_contain_text("1: 2026-11-30")
    expect(results).not_to_contain_text("51: ")
    expect(page.locator("#log-search-results mark")).to_have_count(50)
    expect(page.locator("#log-search-older")).to_have_count(0)
    expect(page.locator("#log-lines")).to_contain_text("step 250 loss 0.5")
    page.wait_for_url(re.compile(r"[?&]before=\d+"))
    page.click("#log-search-newest")  # 最新的匹配
    expect(page.locator("#log-search-results mark")).to_have_count(200)
    expect(results).to_contain_text("250: 2026-11-30")


def test_older_matches_show_the_lines_after_their_newest_match_past_where_the_page_began(
    logged_in_page, alice
):
    job = with_loss_log(alice, "loss-edge")
    page = logged_in_page
    page.goto(f"/jobs/{job.public_id}/")

    page.click("#log-search-q")
    page.keyboard.type("loss")
    page.keyboard.press("Enter")  # 2 lines around each match, the default
    results = page.locator("#log-search-results")
    expect(results).to_contain_text("51: 2026-11-30")
    with page.expect_response(lambda r: "/logs/search/" in r.url):
        page.click("#log-search-older")  # 更早的匹配

    # Lines 1-50 match; lines 51 and 52 follow line 50 in the download, as its context.
    expect(page.locator("#log-search-results mark")).to_have_count(50)
    expect(results).to_contain_text("50: 2026-11-30")
    expect(results).to_contain_text("step 51 loss 0.5")
    expect(results).to_contain_text("step 52 loss 0.5")
    expect(results).not_to_contain_text("step 53 ")
    lines = results.inner_text().splitlines()
    assert [line.split(" ", 1)[0] for line in lines[-3:]] == ["50:", "51-", "52-"]


def test_a_running_job_s_training_curves_appear_and_grow_on_its_page_without_a_reload(
    logged_in_page, alice, worker_thread, tmp_path
):
    # The job's sandbox has the machine's python3 but not the test's venv, where tensorboardX
    # is: the test writes the event file into the job's mounted folder while the job runs, as
    # the job's code would.
    from tensorboardX.event_file_writer import EventsWriter
    from tensorboardX.proto.event_pb2 import Event
    from tensorboardX.summary import scalar

    from jobs import spec as S
    from jobs.services import jobs_submit

    spec = S.JobSpec(
        name="curves",
        resource_pool_id="local",
        image="registry.example.com/x:1",
        command="echo training; until [ -e /workspace/gate-open ]; do sleep 0.1; done",
        roles=[S.Role("master", 1)],
        datasources=[S.Datasource("hostpath", "scratch", mount_path="/workspace")],
        tensorboard=S.TensorboardConfig(enable=True, log_path="/workspace/tb"),
    )
    [job] = jobs_submit(owner=alice, spec=spec, submit_key="curves")
    page = logged_in_page
    csp_violations: list[str] = []
    page.on(
        "console",
        lambda m: csp_violations.append(m.text) if "Content Security Policy" in m.text else None,
    )
    page.goto(f"/jobs/{job.public_id}/")
    expect(page.locator("#metrics-heading")).to_be_visible()
    expect(page.locator("#metrics-empty")).to_be_visible()
    expect(page.locator("#job-status")).to_have_text(re.compile("Running|运行中"), timeout=20_000)

    (tmp_path / "scratch" / "tb").mkdir(parents=True)
    writer = EventsWriter(str(tmp_path / "scratch" / "tb" / "events"))
    writer.write_event(Event(wall_time=1.0, step=0, summary=scalar("loss", 0.9)))
    writer.flush()
    chart = page.locator("#metric-charts figure.metric")
    expect(chart).to_have_count(1, timeout=10_000)
    expect(chart.locator(".metric-latest")).to_have_text("0.9（步数 0）")
    writer.write_event(Event(wall_time=2.0, step=1, summary=scalar("loss", 0.4)))
    writer.flush()
    expect(chart.locator(".metric-latest")).to_have_text("0.4（步数 1）", timeout=10_000)
    expect(chart.locator("svg polyline")).to_have_attribute("points", "0.0,2.0 300.0,98.0")
    assert "最低 0.4，最高 0.9" in chart.locator("svg").get_attribute("aria-label")

    (tmp_path / "scratch" / "gate-open").touch()
    expect(page.locator("#job-status")).to_have_text(re.compile("Succeeded|成功"), timeout=30_000)
    # The folder outlives the job: its curves stay.
    page.reload()
    expect(chart.locator(".metric-latest")).to_have_text("0.4（步数 1）")
    writer.close()
    assert csp_violations == []


def test_a_job_that_ends_without_event_files_under_its_log_path_says_so_once_it_ends(
    logged_in_page, alice, worker_thread, tmp_path
):
    from jobs import spec as S
    from jobs.services import jobs_submit

    (tmp_path / "scratch").mkdir()
    spec = S.JobSpec(
        name="curves-elsewhere",
        resource_pool_id="local",
        image="registry.example.com/x:1",
        # Its code writes its logs to a folder of its own choosing, not the job's log path.
        command="mkdir -p /workspace/runs; until [ -e /workspace/gate-open ]; do sleep 0.1; done",
        roles=[S.Role("master", 1)],
        datasources=[S.Datasource("hostpath", "scratch", mount_path="/workspace")],
        tensorboard=S.TensorboardConfig(enable=True, log_path="/workspace/tb"),
    )
    [job] = jobs_submit(owner=alice, spec=spec, submit_key="curves-elsewhere")
    page = logged_in_page
    page.goto(f"/jobs/{job.public_id}/")
    expect(page.locator("#job-status")).to_have_text(re.compile("Running|运行中"), timeout=20_000)
    expect(page.locator("#metrics-empty")).to_be_visible()  # while it runs, curves may come

    (tmp_path / "scratch" / "gate-open").touch()

    expect(page.locator("#job-status")).to_have_text(re.compile("Succeeded|成功"), timeout=30_000)
    note = page.locator("#metrics-note")
    expect(note).to_contain_text("任务已结束，而 /workspace/tb 下没有事件文件", timeout=10_000)
    expect(note).to_contain_text("AIHC_TENSORBOARD_LOG_PATH")
    expect(page.locator("#metrics-empty")).to_have_count(0)
    # On a phone the note's code example and the summary's mounts wrap instead of widening
    # the page.
    page.set_viewport_size({"width": 390, "height": 844})
    expect(page.locator("#job-mounts")).to_have_text(
        f"scratch → /workspace本机目录：{tmp_path / 'scratch'}"
    )
    wide, screen = page.evaluate("[document.documentElement.scrollWidth, innerWidth]")
    assert wide <= screen


@pytest.mark.usefixtures("runner_settings")
def test_a_long_metric_tag_wraps_on_a_phone_instead_of_widening_the_page(
    logged_in_page, alice, settings
):
    from tensorboardX import SummaryWriter

    from jobs import spec as S

    from .runner_helpers import make_spec, submit, volume

    # A tag path with nowhere to break a line, as long as the console keeps one.
    tag = "train/" + "loss_per_token_" * 12
    writer = SummaryWriter(str(volume(settings) / "tb"))
    writer.add_scalar(tag, 0.5, 0)
    writer.close()
    tensorboard = S.TensorboardConfig(enable=True, log_path="/workspace/tb")
    job = submit(alice, make_spec("true", tensorboard=tensorboard))
    Job.objects.filter(pk=job.pk).update(status=JobStatus.SUCCEEDED)
    page = logged_in_page
    page.set_viewport_size({"width": 375, "height": 800})

    page.goto(f"/jobs/{job.public_id}/")

    expect(page.locator(".metric-tag")).to_have_text(tag)
    wide, screen = page.evaluate("[document.documentElement.scrollWidth, innerWidth]")
    assert wide <= screen


def test_a_replicas_log_tab_opened_from_the_keyboard_keeps_the_focus_on_that_tab(
    logged_in_page, alice
):
    from jobs.logs import replica_log_path
    from jobs.models import JobReplica
    from jobs.services import job_transition

    job = submitted(alice, "two-logs")
    for index, role in enumerate(("master", "worker")):
        JobReplica.objects.create(job=job, role=role, index=0)
        log = replica_log_path(job.public_id, f"{role}-0")
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(f"2026-11-30T09:00:0{index}.000000Z hello from {role}\n")
    job_transition(job=job, to=JobStatus.RUNNING, reason="Started")
    job_transition(job=job, to=JobStatus.SUCCEEDED, reason="Succeeded")
    page = logged_in_page
    page.goto(f"/jobs/{job.public_id}/")

    page.locator('#log-panel a.nav-link:has-text("worker-0")').focus()
    page.keyboard.press("Enter")

    expect(page.locator("#log-lines")).to_contain_text("hello from worker")
    # The panel was swapped with the tab in it: focus is on the tab now shown, not lost to
    # the top of the page, so Tab goes on to its log and search.
    expect(page.locator("#log-panel a.nav-link.active")).to_be_focused()
    expect(page.locator("#log-panel a.nav-link.active")).to_have_text("worker-0")
    expect(page.locator("#log-panel a.nav-link.active")).to_have_attribute("aria-current", "true")


def test_on_a_phone_the_filters_fold_so_the_first_jobs_show_on_the_first_screen(
    logged_in_page, alice
):
    for i in range(3):  # not "job-": the filter matches IDs too, and "pytorchjob-1…" is one
        submitted(alice, f"train-{i}")
    page = logged_in_page
    page.set_viewport_size({"width": 375, "height": 667})
    page.goto("/")

    filters, summary = page.locator("#job-filters"), page.locator("#job-filters-summary")
    expect(filters).to_be_hidden()
    first_job = page.locator("tr[data-job]").first.bounding_box()
    assert first_job["y"] + first_job["height"] <= 667  # no scrolling past the filters
    summary.click()  # 筛选 opens them, as a <details> does with or without JavaScript
    page.fill("#id_q", "train-1")
    page.click("#job-filters button[type=submit]")
    page.wait_for_url("**/?q=train-1**")
    # Folded again, the filter in use named by 筛选 (qa85: open, the box pushed every job
    # below the first screen), the job it found in view.
    expect(filters).to_be_hidden()
    expect(summary).to_have_text("筛选（名称或 ID：train-1）")
    expect(page.locator("tr[data-job]")).to_have_count(1)
    expect(page.locator("tr[data-job]")).to_be_in_viewport()
    summary.click()
    expect(page.locator("#id_q")).to_have_value("train-1")


def test_on_a_wide_screen_the_filters_show_without_their_fold(logged_in_page, alice):
    submitted(alice, "job-0")
    page = logged_in_page
    page.set_viewport_size({"width": 1024, "height": 768})
    page.goto("/")

    expect(page.locator("#job-filters")).to_be_visible()
    expect(page.locator("#job-filters-summary")).to_be_hidden()
    expect(page.locator("#id_status")).to_be_visible()


def test_on_a_tablet_every_job_column_and_filter_shows_whole_without_scrolling_sideways(
    logged_in_page, alice
):
    from .test_wizard_browser import CUT_SHORT

    # The job ID had a column of its own: at 768 pixels the table scrolled sideways and the
    # status and framework filters read "Any statu" and "Any frame" (English is the longer).
    job = submitted(alice, "bert-large-pretrain")
    submitted(alice, "sweep-1")
    page = logged_in_page
    page.set_viewport_size({"width": 768, "height": 1024})
    page.goto("/")
    page.click("[data-language=en]")
    expect(page.locator("#job-table")).to_contain_text("Duration")

    table_box = page.locator("#job-table .table-responsive")
    wide, room = table_box.evaluate("box => [box.scrollWidth, box.clientWidth]")
    assert wide <= room
    assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")
    assert page.locator("#job-filters").evaluate(CUT_SHORT) == []
    # The ID is still on each row, under the job's name.
    row = page.locator(f'tr[data-job="{job.public_id}"]')
    expect(row.get_by_text(job.public_id, exact=True).locator("visible=true")).to_have_count(1)


@pytest.mark.usefixtures("runner_settings")
def test_the_charts_of_a_row_stay_level_when_one_tag_is_long(logged_in_page, alice, settings):
    from tensorboardX import SummaryWriter

    from jobs import spec as S

    from .runner_helpers import make_spec, submit, volume

    # A long tag put its latest value on a second line, and its chart a line lower than the
    # chart beside it; the low end of a curve (0.273973) also ran into the chart's frame.
    writer = SummaryWriter(str(volume(settings) / "tb"))
    for step in range(50):
        writer.add_scalar("loss", 3.0 / (1 + step / 10), step)
        writer.add_scalar("train/learning_rate_per_token_warmup_cosine", 1e-4, step)
    writer.close()
    tensorboard = S.TensorboardConfig(enable=True, log_path="/workspace/tb")
    job = submit(alice, make_spec("true", tensorboard=tensorboard))
    Job.objects.filter(pk=job.pk).update(status=JobStatus.SUCCEEDED)
    page = logged_in_page
    page.set_viewport_size({"width": 1024, "height": 800})
    page.goto(f"/jobs/{job.public_id}/")
    page.click("[data-language=en]")

    charts = page.locator("#metric-charts svg.metric-chart")
    expect(charts).to_have_count(2)
    first, second = (chart.bounding_box() for chart in charts.all())
    assert abs(first["y"] - second["y"]) < 1  # side by side, level
    for figure in page.locator("#metric-charts figure.metric").all():
        axis = figure.locator(".metric-range").bounding_box()
        chart = figure.locator("svg.metric-chart").bounding_box()
        assert axis["x"] + axis["width"] <= chart["x"]  # its figures clear of the chart


WRAP_STATE = """() => {
  const box = (id) => { const e = document.getElementById(id); return e.scrollWidth <= e.clientWidth; };
  const line = document.querySelector('#log-search-results .log-line:has(mark)');
  const number = line.querySelector('.text-muted').getBoundingClientRect();
  const text = line.querySelector('.log-text').getBoundingClientRect();
  const height = parseFloat(getComputedStyle(document.getElementById('log-lines')).lineHeight);
  const tail = [...document.querySelectorAll('#log-lines .log-line')].map((l) => l.getBoundingClientRect().height);
  return {
    tailFits: box('log-lines'), resultsFits: box('log-search-results'),
    textBesideNumber: text.left >= number.right && text.top === number.top,
    matchWraps: text.height > 1.5 * height,
    shortLinesOneEach: tail.slice(0, -1).every((h) => Math.abs(h - height) < 1),
    longTailLineWraps: tail[tail.length - 1] > 1.5 * height,
  };
}"""


def test_log_lines_wrap_in_their_box_at_a_keypress_and_the_browser_remembers_it(
    logged_in_page, alice, browser, live_server
):
    from jobs.logs import replica_log_path
    from jobs.models import JobReplica
    from jobs.services import job_transition

    job = submitted(alice, "wide-lines")
    page = logged_in_page
    page.goto(f"/jobs/{job.public_id}/")  # no log yet: nothing to wrap
    expect(page.locator("#logs")).to_be_visible()
    expect(page.locator("#log-wrap-switch")).to_be_hidden()
    JobReplica.objects.create(job=job, role="master", index=0)
    log = replica_log_path(job.public_id, "master-0")
    log.parent.mkdir(parents=True)
    lines = [f"2026-11-30T09:00:{i:02d}.000000Z step {i} loss 0.5" for i in range(20)]
    lines.append("2026-11-30T09:00:20.000000Z config " + "x" * 300 + " loss NaN " + "y" * 300)
    log.write_text("\n".join(lines) + "\n")
    job_transition(job=job, to=JobStatus.RUNNING, reason="Started")  # the tail refreshes
    page.set_viewport_size({"width": 768, "height": 900})
    page.goto(f"/jobs/{job.public_id}/?replica=master-0&q=nan&context=1#log-search")

    # As served: one line a row, scrolled sideways.
    switch = page.get_by_role("switch", name=re.compile("自动换行|Wrap lines"))
    expect(switch).not_to_be_checked()
    state = page.evaluate(WRAP_STATE)
    assert not state["tailFits"] and not state["resultsFits"]

    switch.focus()
    page.keyboard.press("Space")  # 自动换行

    expect(switch).to_be_checked()
    assert page.evaluate(WRAP_STATE) == {
        "tailFits": True,
        "resultsFits": True,
        "textBesideNumber": True,  # the number keeps its column, the text wraps beside it
        "matchWraps": True,
        "shortLinesOneEach": True,
        "longTailLineWraps": True,
    }
    expect(page.locator("#log-search-results mark")).to_have_text("NaN")
    expect(page.locator("#log-search-results")).to_contain_text("21: 2026-11-30")
    with page.expect_response(lambda r: "/logs/?replica=master-0" in r.url):
        pass  # a refresh of the tail: still wrapped, the switch still focused
    expect(page.locator("#log-lines .log-line")).to_have_count(21)
    assert page.evaluate(WRAP_STATE)["tailFits"]
    expect(switch).to_be_focused()

    page.reload()  # remembered by this browser
    expect(switch).to_be_checked()
    assert page.evaluate(WRAP_STATE)["tailFits"]
    switch.focus()
    page.keyboard.press("Space")
    expect(switch).not_to_be_checked()
    page.reload()
    expect(switch).not_to_be_checked()
    assert not page.evaluate(WRAP_STATE)["tailFits"]

    # Without JavaScript: no switch that would do nothing, and lines scroll as before.
    context = browser.new_context(base_url=live_server.url, java_script_enabled=False)
    context.add_cookies(page.context.cookies())
    plain = context.new_page()
    plain.goto(f"/jobs/{job.public_id}/")
    expect(plain.locator("#log-lines")).to_contain_text("loss NaN")
    expect(plain.locator("#log-wrap-switch")).to_be_hidden()
    context.close()


def test_a_job_with_a_fifty_letter_name_fits_a_phone_on_its_page_and_its_stop_question(
    browser, live_server, alice
):
    # The longest name the rules allow, with no hyphen where a line could break.
    job = submitted(alice, "bertlargepretrainingwholewordmaskingfp16bs128run01")
    assert len(job.name) == 50
    for javascript in (True, False):
        context = browser.new_context(
            base_url=live_server.url,
            java_script_enabled=javascript,
            locale="zh-CN",
            viewport={"width": 390, "height": 800},
        )
        page = context.new_page()
        try:
            page.goto("/login/")
            page.fill("input[name=username]", "alice")
            page.fill("input[name=password]", "alice-password")
            page.click("#login-submit")
            page.wait_for_url(lambda url: "/login/" not in url)

            page.goto(f"/jobs/{job.public_id}/")
            expect(page.locator("h1")).to_contain_text(job.name)
            wide, screen = page.evaluate("[document.documentElement.scrollWidth, innerWidth]")
            assert wide <= screen, f"the job page is {wide} px wide on a {screen} px phone"

            if not javascript:  # the server asks before stopping
                page.click("#job-stop")
                expect(page.locator("h1")).to_contain_text(job.name)
                wide, screen = page.evaluate("[document.documentElement.scrollWidth, innerWidth]")
                assert wide <= screen, f"the question is {wide} px wide on a {screen} px phone"
        finally:
            context.close()


def test_switching_language_on_the_stop_question_without_javascript_opens_the_job_page(
    browser, live_server, alice
):
    # The question is the answer to a POST: the switch goes back to its address with a GET,
    # which was a blank "405" page.
    job = submitted(alice, "asked-to-stop")
    context = browser.new_context(
        base_url=live_server.url, java_script_enabled=False, locale="zh-CN"
    )
    page = context.new_page()
    try:
        log_in(page, "alice", "alice-password")
        page.goto(f"/jobs/{job.public_id}/")
        page.click("#job-stop")
        expect(page.locator("#confirm-stop")).to_be_visible()

        page.click("[data-language=en]")

        expect(page.locator("html")).to_have_attribute("lang", "en")
        expect(page.locator("h1")).to_contain_text("asked-to-stop")
        expect(page.locator("#job-stop")).to_have_text("Stop")
        assert page.url.endswith(f"/jobs/{job.public_id}/")
        job.refresh_from_db()
        assert job.status not in (JobStatus.STOPPING, JobStatus.STOPPED)
    finally:
        context.close()


def test_a_job_run_by_a_standby_worker_in_its_own_run_directory_shows_its_logs_in_the_browser(
    logged_in_page, alice, settings, tmp_path
):
    """Found in QA: a worker standing by on this host with a run directory of its own took
    over and ran the job; its page said "No output yet" on every tab and searched nothing."""
    from jobs.logs import replica_log_path
    from jobs.models import JobReplica, LocalRun
    from jobs.runner import runner_key
    from jobs.services import job_transition

    job = submitted(alice, "ran-by-the-standby")
    settings.LOCAL_RUN_DIR = tmp_path / "runs-of-the-standby"  # as the standby saw it
    LocalRun.objects.create(job=job, runner=runner_key(), devices={})
    for index, role in enumerate(("master", "worker")):
        JobReplica.objects.create(job=job, role=role, index=0)
        log = replica_log_path(job.public_id, f"{role}-0")  # the standby's folder
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(f"2026-11-30T09:00:0{index}.000000Z {role} says loss 0.{index + 1}\n")
    job_transition(job=job, to=JobStatus.RUNNING, reason="Started")
    job_transition(job=job, to=JobStatus.SUCCEEDED, reason="Succeeded")
    settings.LOCAL_RUN_DIR = tmp_path / "runs"  # the web server's own
    page = logged_in_page
    page.goto(f"/jobs/{job.public_id}/")

    expect(page.locator("#log-lines")).to_contain_text("master says loss 0.1")
    page.click('#log-panel a.nav-link:has-text("worker-0")')
    expect(page.locator("#log-lines")).to_contain_text("worker says loss 0.2")
    page.fill("#log-search-q", "loss")
    page.keyboard.press("Enter")
    expect(page.locator("#log-search-results mark")).to_have_text("loss")
    expect(page.locator("#log-search-results")).to_contain_text("worker says")


@pytest.mark.parametrize("width", [390, 1024, 1280])
def test_the_pool_filter_is_chosen_by_the_name_the_pools_page_shows(logged_in_page, alice, width):
    from .test_wizard_browser import CUT_SHORT

    job = submitted(alice, "on-local")
    page = logged_in_page
    page.set_viewport_size({"width": width, "height": 900})
    page.goto("/")
    page.click("[data-language=en]")
    if width < 768:
        page.click("#job-filters-summary")

    page.select_option("#id_pool", label="本机 Local")
    page.click("#job-filters button[type=submit]")

    page.wait_for_url("**/?*pool=local*")  # the id in the address: old links still work
    expect(page.locator("#id_pool")).to_have_value("local")
    expect(page.locator(f'tr[data-job="{job.public_id}"]')).to_be_visible()
    if width < 768:  # folded again, 筛选 naming the pool by the same name
        expect(page.locator("#job-filters-summary")).to_have_text(
            "Filters (Resource pool: 本机 Local)"
        )
        page.click("#job-filters-summary")
    assert page.locator("#job-filters").evaluate(CUT_SHORT) == []
    page.select_option("#id_pool", label="Any pool")
    assert page.locator("#job-filters").evaluate(CUT_SHORT) == []


def test_the_list_names_each_jobs_pool_and_keeps_the_name_when_the_table_refreshes(
    logged_in_page, alice
):
    job = submitted(alice, "named-pool")  # Queued: the table refreshes every 3 seconds
    page = logged_in_page
    page.goto("/")
    page.click("[data-language=en]")
    cell = page.locator(f'tr[data-job="{job.public_id}"] .job-pool')
    expect(cell).to_have_text("本机 Local")
    expect(cell).to_have_attribute("title", "Pool ID: local")

    with page.expect_response(lambda r: r.request.headers.get("hx-request") == "true"):
        pass  # the next refresh of the table
    cell.hover()
    expect(cell).to_have_text("本机 Local")
    expect(cell).to_have_attribute("title", "Pool ID: local")


def test_the_job_pages_pool_name_leads_to_the_pools_page(logged_in_page, alice):
    job = submitted(alice, "pool-link")
    page = logged_in_page
    page.goto(f"/jobs/{job.public_id}/")
    link = page.locator("a.job-pool")
    expect(link).to_have_text("本机 Local")
    expect(link).to_have_attribute("title", "资源池 ID：local")

    link.click()

    page.wait_for_url("**/pools/")
    expect(page.locator('section.pool[data-pool="local"]')).to_be_visible()


def test_jobs_of_a_pool_no_longer_offered_are_found_by_choosing_it_in_the_pool_filter(
    logged_in_page, alice
):
    here = submitted(alice, "on-local")
    gone = submitted(alice, "on-retired")
    Job.objects.filter(pk=gone.pk).update(resource_pool="cce-retired", status=JobStatus.SUCCEEDED)
    page = logged_in_page
    page.goto("/")
    expect(page.locator(f'tr[data-job="{here.public_id}"]')).to_be_visible()

    page.select_option("#id_pool", label="cce-retired（已不再提供）")
    page.click("#job-filters button[type=submit]")

    page.wait_for_url("**/?*pool=cce-retired*")
    expect(page.locator(f'tr[data-job="{gone.public_id}"]')).to_be_visible()
    expect(page.locator(f'tr[data-job="{here.public_id}"]')).to_have_count(0)
    expect(page.locator("#id_pool option:checked")).to_have_text("cce-retired（已不再提供）")
    expect(page.locator(f'tr[data-job="{gone.public_id}"] .job-pool')).to_have_text("cce-retired")


def test_a_pool_no_longer_offered_shows_its_last_name_marked_in_the_list_its_refresh_and_job_page(
    logged_in_page, alice
):
    from jobs.pools import known_pools_keep

    # An AIHC account listed it once; AIHC is not enabled any more. Queued: the list polls.
    known_pools_keep(backend="aihc", names={"cce-retired": "旧训练池"})
    gone = submitted(alice, "on-retired")
    Job.objects.filter(pk=gone.pk).update(resource_pool="cce-retired", status=JobStatus.QUEUED)
    page = logged_in_page
    page.goto("/")
    cell = page.locator(f'tr[data-job="{gone.public_id}"] .job-pool')
    expect(cell).to_have_text("旧训练池（cce-retired，已不再提供）")
    expect(cell).to_have_attribute("title", "资源池 ID：cce-retired")

    page.select_option("#id_pool", label="旧训练池（cce-retired，已不再提供）")
    page.click("#job-filters button[type=submit]")
    page.wait_for_url("**/?*pool=cce-retired*")
    # The table's 3-second refresh names it the same way.
    with page.expect_response(lambda r: r.request.headers.get("hx-request") == "true"):
        pass
    expect(cell).to_have_text("旧训练池（cce-retired，已不再提供）")
    page.click(f'tr[data-job="{gone.public_id}"] a:has-text("on-retired")')

    page.wait_for_url(f"**/jobs/{gone.public_id}/")
    shown = page.locator(".job-pool")
    expect(shown).to_have_text("旧训练池（cce-retired，已不再提供）")
    expect(shown).to_have_attribute("title", "资源池 ID：cce-retired")
    expect(page.locator("a.job-pool")).to_have_count(0)  # the pools page does not list it


@pytest.mark.usefixtures("worker_thread")
def test_a_job_page_left_open_says_when_the_finished_job_will_be_deleted(
    logged_in_page, alice, tmp_path
):
    from jobs import spec as S
    from jobs.services import jobs_submit

    (tmp_path / "scratch").mkdir()
    spec = S.JobSpec(
        name="kept-two-hours",
        resource_pool_id="local",
        image="python:3.12",
        # Until the test has looked at it running (a job of `sleep 1` had ended before a
        # loaded machine showed its page, and the page rightly said when it goes).
        command="until [ -e /workspace/gate-open ]; do sleep 0.1; done",
        roles=[S.Role("master", 1)],
        datasources=[S.Datasource("hostpath", "scratch", mount_path="/workspace")],
        retention_period="2h",
    )
    [job] = jobs_submit(owner=alice, spec=spec, submit_key="kept-two-hours")
    page = logged_in_page
    page.goto(f"/jobs/{job.public_id}/")
    expect(page.locator("#job-status")).to_have_text("运行中", timeout=20_000)
    expect(page.locator("#deletes-at")).to_have_count(0)  # not while it runs

    (tmp_path / "scratch" / "gate-open").touch()
    expect(page.locator("#job-status")).to_have_text("成功", timeout=30_000)

    # The refresh that brought the end brings when it goes too, without a reload.
    expect(page.locator("#deletes-at")).to_contain_text("连同日志自动删除：结束后保留 2 小时")


def test_a_queue_task_held_by_its_groups_cap_says_so_on_its_page_and_then_runs(
    logged_in_page, alice, worker_thread, tmp_path
):
    page = logged_in_page
    page.click("#nav-create-job")
    page.click("#new-draft")
    page.wait_for_url(re.compile(r"/create/[0-9a-f-]+/basic/$"))
    page.fill("#id_name", "sweep")
    next_step(page, "image")
    page.fill("#id_image", "registry.example.com/train/pytorch:2.5")
    page.fill("#id_command", "until [ -e /workspace/go ]; do sleep 0.1; done")
    for slug in ("resources", "data"):
        next_step(page, slug)
    page.fill("#id_mounts-0-mount_path", "/workspace")
    for slug in ("fault", "advanced", "submission"):
        next_step(page, slug)
    page.check("input[name=mode][value=queue]")
    page.fill("#id_total", "2")
    page.fill("#id_concurrency", "1")
    next_step(page, "review")
    page.click("#wizard-submit")
    page.wait_for_url(re.compile(r"/jobs/pytorchjob-"))
    expect(page.locator("#job-status")).to_have_text("运行中", timeout=30_000)  # task 1 of 2
    second = Job.objects.get(name="sweep", group_index=2)

    page.goto(f"/jobs/{second.public_id}/")

    expect(page.locator("#why-waiting")).to_have_text(
        "等待所在的队列任务组：该组最多同时运行 1 个任务（当前运行 1 个）。"
        "其中一个结束后，本任务会自动启动。"
    )
    (tmp_path / "scratch" / "go").touch()  # the scratch volume (worker_thread)
    expect(page.locator("#job-status")).to_have_text("成功", timeout=30_000)
    expect(page.locator("#why-waiting")).to_have_count(0)


def test_a_log_line_with_a_right_to_left_override_reads_in_its_own_order_on_the_page(
    logged_in_page, alice
):
    """A line holding U+202E drew "report.<RLO>txt.exe" as "report.exe.txt" (security round
    16): the tail and a search's result show it in the order it holds."""
    from jobs.logs import replica_log_path
    from jobs.models import JobReplica

    job = submitted(alice, "bidi")
    JobReplica.objects.create(job=job, role="master", index=0)
    log = replica_log_path(job.public_id, "master-0")
    log.parent.mkdir(parents=True)
    log.write_text("2026-11-30T09:00:00.000000Z saved report.\u202etxt.exe\n")
    page = logged_in_page
    page.goto(f"/jobs/{job.public_id}/")

    expect(page.locator("#log-lines")).to_contain_text("saved report.txt.exe")
    assert "\u202e" not in page.locator("#log-lines").inner_text()
    page.fill("#log-search-q", "saved")
    page.keyboard.press("Enter")
    expect(page.locator("#log-search-results mark")).to_have_text("saved")
    expect(page.locator("#log-search-results")).to_contain_text("saved report.txt.exe")
    assert "\u202e" not in page.locator("#log-search-results").inner_text()


def test_the_owner_opens_each_replicas_injected_environment_on_the_job_page_on_a_phone(
    logged_in_page, alice
):
    from jobs import spec as S
    from jobs.services import jobs_submit

    spec = S.parse_document(
        {
            "name": "ddp-env",
            "queue": "default",
            "jobFramework": "PyTorchJob",
            "jobSpec": {
                "image": "python:3.12",
                "command": "torchrun train.py",
                "replicas": 3,
                "envs": [{"name": "HF_TOKEN", "value": "hf-s3cr3t-value"}],
            },
            "console": {"secretEnvs": ["HF_TOKEN"]},
        },
        resource_pool_id="local",
    )
    [job] = jobs_submit(owner=alice, spec=spec, submit_key="ddp-env")
    page = logged_in_page
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"/jobs/{job.public_id}/")

    envs = page.locator("#replica-envs")
    worker = envs.locator("table").nth(2)
    expect(worker).to_be_hidden()
    envs.get_by_text("每个实例注入的环境变量").click()

    expect(envs.locator("h3").nth(2)).to_have_text("worker-1")
    expect(worker.locator("tr", has_text="WORLD_SIZE").locator("td")).to_have_text("3")
    expect(worker.locator("tr", has_text="RANK").first.locator("td")).to_have_text("2")
    expect(worker.locator("tr", has_text="HF_TOKEN").locator("td")).to_have_text("******")
    assert "hf-s3cr3t-value" not in page.content()
    # Long values (the job ID) wrap inside the table: the page does not scroll sideways.
    assert page.evaluate("document.documentElement.scrollWidth") <= 390


def test_stop_selected_on_a_phone_lists_each_job_with_its_id_under_its_name(logged_in_page, alice):
    jobs = [submitted(alice, f"phone-{i}", command="sleep 60") for i in range(2)]
    page = logged_in_page
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto("/")

    for job in jobs:
        page.check(f"#select-{job.public_id}")
    page.click("#bulk-stop")

    page.wait_for_url("**/jobs/bulk/")
    for job in jobs:
        row = page.locator(f"#bulk-jobs tr[data-job='{job.public_id}']")
        expect(row.locator(".bulk-job-id")).to_have_text(job.public_id)
        plan = row.locator(".bulk-plan")
        expect(plan).to_have_text("将被停止。")
        # Beside a column of IDs it was squeezed to two characters a line ("将被/停/止。").
        lines = plan.evaluate(
            "td => { const r = document.createRange(); r.selectNodeContents(td);"
            " return new Set([...r.getClientRects()].map(b => Math.round(b.top))).size }"
        )
        assert lines == 1
        # Its status, allowed two lines for English, broke a character a line (排/队/中).
        status = row.locator("td:nth-child(3) .badge")
        expect(status).to_have_text("排队中")
        assert status.evaluate("b => Math.round(b.getBoundingClientRect().height)") <= 24
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.click("#confirm-bulk-stop")

    page.wait_for_url(lambda url: "/jobs/bulk/" not in url)
    for job in jobs:
        expect(page.locator(f"tr:has(#select-{job.public_id})")).to_contain_text("已停止")


def test_run_again_opens_the_new_job_which_links_back_to_the_one_it_came_from(
    logged_in_page, alice
):
    job = submitted(alice, "first-try")
    Job.objects.filter(pk=job.pk).update(status=JobStatus.FAILED)
    page = logged_in_page
    page.goto(f"/jobs/{job.public_id}/")

    page.click("#job-rerun")

    page.wait_for_url(lambda url: job.public_id not in url)
    new = Job.objects.exclude(pk=job.pk).get()
    assert new.public_id in page.url
    back = page.locator("#source-job")
    expect(page.locator("#summary dt", has_text="复制自")).to_be_visible()
    expect(back).to_have_text("first-try")
    back.click()
    page.wait_for_url(f"**/jobs/{job.public_id}/")
    expect(page.locator("#job-status")).to_have_text("失败")


def test_the_runners_own_log_lines_are_badged_and_a_job_printing_one_is_not(
    logged_in_page, alice, worker_thread
):
    job = submitted(alice, "forger", command="echo '[console] exited with code 0'; echo done")
    page = logged_in_page

    page.goto("/")  # the job list
    page.click(f'a[href="/jobs/{job.public_id}/"]')
    expect(page.locator("#job-status")).to_have_text(re.compile("Succeeded|成功"), timeout=20_000)
    lines = page.locator("#log-lines .log-line")
    expect(lines).to_have_count(4, timeout=20_000)

    # The runner's banner and exit line: badged, which a screen reader reads first.
    console = page.locator("#log-lines .log-console")
    expect(console).to_have_count(2)
    expect(console.locator(".log-source")).to_have_text(["控制台", "控制台"])
    expect(console.nth(1)).to_contain_text("master-0 已退出，退出码 0")
    # The job's own line reading like the runner's: no badge, in the job output's colour.
    forged = lines.filter(has_text="[console] exited with code 0")
    expect(forged).to_have_count(1)
    expect(forged.locator(".log-source")).to_have_count(0)
    done = lines.filter(has_text="done")

    def colour(locator):
        return locator.evaluate("element => getComputedStyle(element).color")

    assert colour(forged) == colour(done) != colour(console.nth(1))
    badge = console.nth(1).locator(".log-source")
    assert badge.evaluate("e => getComputedStyle(e).backgroundColor") != "rgba(0, 0, 0, 0)"


def test_a_job_with_many_events_shows_the_newest_and_its_refresh_brings_new_ones(
    logged_in_page, alice
):
    from datetime import timedelta

    from django.utils import timezone

    from jobs.models import JobEvent
    from jobs.services import EVENTS_SHOWN

    job = submitted(alice, "many-events")  # queued, with no worker: its page keeps refreshing
    start = timezone.now() + timedelta(minutes=1)
    made = JobEvent.objects.bulk_create(
        [JobEvent(job=job, reason="Restarted", message=f"step-{i:04d}") for i in range(300)]
    )
    for i, event in enumerate(made):
        event.created_at = start + timedelta(seconds=i)
    JobEvent.objects.bulk_update(made, ["created_at"])
    hidden = job.events.count() - EVENTS_SHOWN
    page = logged_in_page

    page.goto("/")  # the list, now with the job
    page.click("text=many-events")
    page.wait_for_url(re.compile(rf"/jobs/{job.public_id}/$"))

    events = page.locator("#events li")
    expect(events).to_have_count(EVENTS_SHOWN)
    expect(events.last).to_contain_text("step-0299")
    expect(page.locator("#events")).not_to_contain_text("step-0099")
    expect(page.locator("#events-hidden")).to_contain_text(f"更早的 {hidden} 条未显示")
    # A new event while the page is open: the refresh shows it, and one more earlier is hidden.
    JobEvent.objects.create(job=job, reason="Restarted", message="step-new")
    JobEvent.objects.filter(message="step-new").update(created_at=start + timedelta(hours=1))
    expect(events.last).to_contain_text("step-new", timeout=10_000)
    expect(events).to_have_count(EVENTS_SHOWN)
    expect(page.locator("#events-hidden")).to_contain_text(f"更早的 {hidden + 1} 条未显示")


def test_a_job_page_left_open_stops_refreshing_and_says_so_once_the_job_is_deleted_elsewhere(
    logged_in_page, alice
):
    from jobs.actions import job_delete

    job = submitted(alice, "deleted-elsewhere")  # queued (no worker here): its page refreshes
    page = logged_in_page
    page.goto(f"/jobs/{job.public_id}/")
    refreshes: list[str] = []
    page.on("request", lambda r: refreshes.append(r.url) if "/live/" in r.url else None)
    # It refreshes every 2 s. Delete just after a refresh has been answered: a refresh that
    # reads the job between job_delete's stop and its delete finds it Stopped, a final status,
    # and rightly refreshes no more (as a finished job's page never does), so it would never
    # meet the 404 this test is about (CI met that race once in ~30 runs).
    page.wait_for_event("requestfinished", lambda r: "/live/" in r.url)

    assert job_delete(job=job)  # Delete in another tab, or a script's DeleteJob

    # The next refresh, 2 s on, is answered 404; bounded at 15 s, not Playwright's 5 s, which
    # a loaded CI machine's refresh and its answer once missed.
    expect(page.locator("#request-error")).to_have_text(
        "此内容已不存在：打开本页后它已被删除（在另一个标签页中或由脚本删除），本页因此已停止更新。"
        "刷新页面可查看当前情况。",
        timeout=15_000,
    )
    seen = len(refreshes)
    page.wait_for_timeout(5_000)  # two refreshes' time and more
    assert len(refreshes) == seen
    assert not Job.objects.filter(pk=job.pk).exists()


def test_a_job_page_left_open_stops_refreshing_and_says_so_once_logged_out_in_another_tab(
    logged_in_page, alice
):
    job = submitted(alice, "left-open")  # queued (no worker here): its page refreshes
    page = logged_in_page
    page.goto(f"/jobs/{job.public_id}/")
    refreshes: list[str] = []
    page.on("request", lambda r: refreshes.append(r.url) if "/jobs/" in r.url else None)
    page.wait_for_event("requestfinished", lambda r: "/live/" in r.url)
    other = page.context.new_page()
    other.goto("/")
    other.get_by_role("button", name="退出登录").click()
    other.wait_for_url(re.compile(r"/login/"))

    expect(page.locator("#request-error")).to_have_text(
        "您已不再处于登录状态（已在其他标签页退出登录，或登录已过期），因此本页已停止更新。"
        "请刷新页面重新登录，或在其他标签页登录后回到本页；已保存的内容不会丢失。",
        timeout=15_000,
    )
    page.wait_for_timeout(1_000)  # a refresh of the log tail sent beside the first 401
    seen = len(refreshes)
    page.wait_for_timeout(6_000)  # three refreshes' time
    assert len(refreshes) == seen
    expect(page.locator("#job-status, h1").first).to_be_visible()  # what it showed stays


def test_a_job_list_left_open_never_shows_the_jobs_of_someone_who_logs_in_in_another_tab(
    logged_in_page, alice, bob
):
    submitted(alice, "alices-job")  # queued (no worker here): the list refreshes
    submitted(bob, "bobs-job")
    page = logged_in_page
    page.goto("/")
    other = page.context.new_page()
    other.goto("/")
    # This tab's refreshes fail while the other tab logs out and in: one that came in between
    # (a busy machine: CI, session 40) found no one logged in and rightly stopped the page
    # saying so (the test before), before anyone else had logged in.
    page.route("**/*", lambda route: route.abort("internetdisconnected"))
    other.get_by_role("button", name="退出登录").click()
    log_in(other, "bob", "bob-password")
    page.unroute("**/*")

    expect(page.locator("#request-error")).to_contain_text(
        "已有其他用户在此浏览器（另一个标签页）中登录"
    )
    page.wait_for_timeout(4_000)  # a refresh's time and more
    expect(page.locator("#job-table")).to_contain_text("alices-job")
    expect(page.locator("#job-table")).not_to_contain_text("bobs-job")
    expect(other.locator("#job-table")).to_contain_text("bobs-job")


def test_a_reader_scrolled_up_and_sideways_in_a_running_log_keeps_their_place_as_it_refreshes(
    logged_in_page, alice
):
    from jobs.logs import replica_log_path
    from jobs.models import JobReplica
    from jobs.services import job_transition

    job = submitted(alice, "read-back")
    JobReplica.objects.create(job=job, role="master", index=0)
    log = replica_log_path(job.public_id, "master-0")
    log.parent.mkdir(parents=True)
    lines = [f"2026-11-30T09:00:{i:02d}.000000Z step {i} loss 0.5" for i in range(60)]
    lines.append("2026-11-30T09:01:00.000000Z config " + "x" * 1500)
    log.write_text("\n".join(lines) + "\n")
    job_transition(job=job, to=JobStatus.RUNNING, reason="Started")  # the tail refreshes
    page = logged_in_page
    page.goto(f"/jobs/{job.public_id}/")
    tail = page.locator("#log-lines")
    expect(tail).to_contain_text("config xxx")
    top_line = """pre => { const top = pre.getBoundingClientRect().top;
        return Array.from(pre.children).find((l) => l.getBoundingClientRect().bottom > top + 1)
            .textContent.trim(); }"""

    # The reader scrolls up to step 20 and sideways, then the job prints on.
    tail.evaluate("""pre => { const line = Array.from(pre.children)[20];
        pre.scrollTop = line.offsetTop - pre.offsetTop; pre.scrollLeft = 300; }""")
    assert tail.evaluate(top_line).endswith("step 20 loss 0.5")
    with log.open("a") as output:
        output.write("2026-11-30T09:02:00.000000Z step 61 loss 0.4\n")
    expect(tail).to_contain_text("step 61 loss 0.4")  # refreshed
    page.wait_for_timeout(2_500)  # and the status beside it once more

    assert tail.evaluate(top_line).endswith("step 20 loss 0.5")
    assert tail.evaluate("pre => pre.scrollLeft") == 300


@pytest.mark.parametrize("width", [1280, 390])
def test_a_replicas_failure_reason_wraps_in_its_cell_so_its_start_time_shows(
    logged_in_page, alice, width
):
    from django.utils import timezone

    from jobs.models import JobReplica
    from jobs.texts import recorded, source_of

    job = submitted(alice, "killed-for-memory")
    # The longest reason the runner records (jobs.cgroups.shared_memory_oom_reason).
    reason = recorded(
        "OOMKilled: the memory all local jobs share, %(limit)s (the memory limit of the "
        "worker's cgroup %(cgroup)s, %(available)s, less LOCAL_RESERVED_MEMORY_GB), ran out",
        limit="21.1Gi",
        cgroup="/sys/fs/cgroup/memory/process_api/27dbaabc7382fddc413790a16255c87c",
        available="23.1Gi",
    )
    JobReplica.objects.create(
        job=job,
        role="master",
        index=0,
        status="failed",
        exit_code=137,
        started_at=timezone.now(),
        reason=reason,
        reason_source=source_of(reason),
    )
    page = logged_in_page
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(f"/jobs/{job.public_id}/")
    page.click("[data-language=en]")  # English headers are the longer ones
    expect(page.locator("#replicas")).to_contain_text("Card IDs")
    expect(page.locator("#replicas .replica-reason")).to_contain_text("OOMKilled")

    table, box = page.locator("#replicas").evaluate(
        "t => [t.scrollWidth, t.parentElement.clientWidth]"
    )
    if width == 1280:
        assert table <= box  # every column shows, the start time too, without scrolling sideways
    else:
        assert table <= 2 * box  # on a phone the table scrolls, but by its columns, not a line
    assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")


def test_an_on_call_owner_sets_up_hang_alerts_in_the_wizard_and_sees_the_hang_come_and_clear(
    logged_in_page, alice, settings, tmp_path, worker_thread
):
    # QA 38: a hang's warning stayed the page's last word once the logs came back.
    settings.JOB_MINUTE_SECONDS = 1  # the 1-minute threshold passes in a second
    settings.ALERT_WEBHOOK_ALLOW_PRIVATE = False
    gate = tmp_path / "scratch" / "gate-open"
    page = logged_in_page
    page.click("#nav-create-job")
    page.click("#new-draft")
    page.wait_for_url(re.compile(r"/create/[0-9a-f-]+/basic/$"))
    page.check("input[name=framework][value=PyTorchJob]")
    next_step(page, "image")
    page.fill("#id_image", "registry.example.com/train/pytorch:2.5")
    # Silent from the start until the gate opens: a first line written by a replica started
    # late on a loaded machine would clear the 1-second hang before the test opens the gate.
    page.fill(
        "#id_command",
        "until [ -e /workspace/gate-open ]; do sleep 0.05; done; echo resumed; sleep 300",
    )
    for slug in ("resources", "data"):
        next_step(page, slug)
    page.fill("#id_mounts-0-mount_path", "/workspace")
    next_step(page, "fault")
    page.check("#id_hang_detection")
    page.fill("#id_hang_minutes", "1")
    # Silent from its start: judged at once, not after the default 15 (review59).
    page.fill("#id_hang_startup_minutes", "0")
    next_step(page, "advanced")
    page.check("input[name=alert_items][value=jobHang]")
    # A webhook to this machine is refused on its field, with what was typed kept.
    page.fill("#id_alert_webhooks", "http://127.0.0.1:9/hook/on-call-token")
    page.fill("#id_alert_emails", "oncall@example.com")
    page.click("#wizard-next")
    expect(page.locator("#id_alert_webhooks")).to_have_value(
        "http://127.0.0.1:9/hook/on-call-token"
    )
    expect(page.locator("#error_1_id_alert_webhooks")).to_contain_text(
        "ALERT_WEBHOOK_ALLOW_PRIVATE"
    )
    page.fill("#id_alert_webhooks", "")
    for slug in ("submission", "review"):
        next_step(page, slug)
    page.click("#wizard-submit")
    page.wait_for_url(re.compile(r"/jobs/pytorchjob-"))

    events = page.locator("#events")
    expect(events).to_contain_text("疑似任务hang", timeout=20_000)
    expect(events).not_to_contain_text("hang 已解除")
    gate.touch()  # the job writes again
    expect(events).to_contain_text("hang 已解除", timeout=20_000)
    expect(events).to_contain_text("日志恢复输出")
    job = Job.objects.get(owner=alice)
    assert job.status == JobStatus.RUNNING
    assert job.events.filter(reason="HangCleared").count() == 1


def test_a_failed_jobs_page_opens_on_the_log_of_the_replica_that_failed(
    logged_in_page, alice, worker_thread, tmp_path
):
    # QA 44: worker-1 of three failed, and the page opened on master-0's log (torn down
    # with it, its last line a step like any other): the traceback was a click away, on a tab
    # the page did not point to.
    from jobs import spec as S
    from jobs.services import jobs_submit

    # worker-1 fails once master-0 has written its line (it says so in the scratch volume), so
    # the failure does not tear master-0 down before its shell echoed: at once, it could be
    # (stop 34's CI), and after a fixed 3 s a loaded machine may not have started it yet.
    command = (
        'echo "rank $RANK step 1"; touch "/workspace/rank-$RANK-wrote"; '
        'if [ "$RANK" = 2 ]; then until [ -e /workspace/rank-0-wrote ]; do sleep 0.05; done; '
        'echo "RuntimeError: loss exploded" >&2; exit 1; fi; '
        "sleep 300"
    )
    (tmp_path / "scratch").mkdir(exist_ok=True)  # the scratch volume (worker_thread)
    spec = S.parse_document(
        {
            "name": "three-ranks",
            "queue": "default",
            "jobFramework": "PyTorchJob",
            "jobSpec": {"image": "registry.example.com/x:1", "command": command, "replicas": 3},
            "datasources": [{"type": "hostpath", "name": "scratch", "mountPath": "/workspace"}],
        },
        resource_pool_id="local",
    )
    [job] = jobs_submit(owner=alice, spec=spec, submit_key="three-ranks")
    page = logged_in_page
    page.goto(f"/jobs/{job.public_id}/")
    expect(page.locator("#job-status")).to_have_text(re.compile("Failed|失败"), timeout=30_000)

    page.goto("/")  # later, from the job list, as the engineer comes back to it
    page.click(f'a[href="/jobs/{job.public_id}/"]')

    expect(page.locator("#log-panel .nav-link.active")).to_have_text("worker-1")
    expect(page.locator("#log-lines")).to_contain_text("RuntimeError: loss exploded")
    expect(page.locator("#log-search-q")).to_have_attribute("placeholder", re.compile("NaN"))
    expect(
        page.get_by_text(re.compile("Search the log of worker-1|搜索 worker-1 的日志"))
    ).to_be_visible()
    # The others' logs are a click away, kept as they were.
    page.click("#log-panel .nav-link >> text=master-0")
    expect(page.locator("#log-lines")).to_contain_text("rank 0 step 1")
    expect(page).to_have_url(re.compile(r"\?replica=master-0"))


def test_deleting_a_job_whose_create_got_no_clear_answer_asks_to_stop_and_keep_it_then_says_why_not(
    logged_in_page, alice, kubernetes_settings
):
    """Until left45 the browser asked "Delete this job?" of it, and the page then said it
    was being sent right now: Delete stops such a job and keeps it (job_delete_only_stops).
    Pressed again while the worker looks for what its create made, until left48 Delete asked
    "Delete this job?" once more, and said only after the answer that it was not deleted."""
    from jobs.backends.kubernetes import UNANSWERED_EVENT
    from jobs.services import job_event

    job = submitted(alice, "unsettled")
    Job.objects.filter(pk=job.pk).update(backend="kubernetes", external_id="")
    job_event(job=job, reason=UNANSWERED_EVENT, message="no answer", warning=True)
    page = logged_in_page
    page.goto(f"/jobs/{job.public_id}/")
    questions: list[str] = []
    page.once("dialog", lambda dialog: (questions.append(dialog.message), dialog.accept()))

    page.click("#job-delete")

    expect(page.get_by_role("alert").filter(has_text="已停止但未删除")).to_be_visible()
    assert questions and questions[0].startswith("停止并保留此任务？")
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPING

    page.goto(f"/jobs/{job.public_id}/")
    page.once("dialog", lambda dialog: (questions.append(dialog.message), dialog.accept()))
    page.click("#job-delete")

    expect(page.get_by_role("alert").filter(has_text="正在平台上查找该任务")).to_be_visible()
    assert len(questions) == 2 and questions[1].startswith("该任务暂不能删除：")
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPING
