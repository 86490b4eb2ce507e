"""Pages read whole at a phone's, a tablet's and a laptop's width: measured in Chromium, never
compared as pictures. (The admin's job list and the log's line wrapping have their own tests in
test_admin_browser.py and test_job_pages_browser.py.)"""

from __future__ import annotations

import re
import uuid
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from jobs.services import jobs_submit
from jobs.usage import Period
from tests.conftest import BROWSER_TIMEOUT_MS, log_in
from tests.test_usage_report import run

from .runner_helpers import make_spec, runner_settings  # noqa: F401

pytestmark = pytest.mark.browser

FITS = "sel => [...document.querySelectorAll(sel)].every(e => e.scrollWidth <= e.clientWidth)"
PAGE_FITS = "() => document.documentElement.scrollWidth <= document.documentElement.clientWidth"
# How many lines an element's text takes, and whether its box is as wide as its text wants (a
# flex item squeezed below that shows an ellipsis instead of the rest): measured by letting it
# take its own width for a moment.
TEXT_LINES = """e => { const range = document.createRange(); range.selectNodeContents(e);
  const lines = range.getClientRects().length, squeezed = e.getBoundingClientRect().width;
  e.style.flexShrink = '0'; const natural = e.getBoundingClientRect().width; e.style.flexShrink = '';
  return {lines, within: natural - squeezed < 0.01}; }"""


# Whether an element is as wide as the widest word of its text: narrower, a word breaks.
WORDS_WHOLE = """e => { const words = e.lastChild.textContent.trim().split(/\\s+/);
  const probe = document.createElement('span'); probe.style.whiteSpace = 'nowrap';
  e.appendChild(probe); let widest = 0;
  for (const word of words) {
    probe.textContent = word; widest = Math.max(widest, probe.getBoundingClientRect().width); }
  probe.remove(); return e.getBoundingClientRect().width + 0.5 >= widest; }"""


@pytest.fixture
def phone(browser, live_server, request):
    """A 390-pixel page in the language parametrized (Chinese unless told)."""
    language = getattr(request, "param", "zh-hans")
    context = browser.new_context(base_url=live_server.url, viewport={"width": 390, "height": 844})
    context.add_cookies([{"name": "django_language", "value": language, "url": live_server.url}])
    context.set_default_timeout(BROWSER_TIMEOUT_MS)
    yield context.new_page()
    context.close()


@pytest.mark.usefixtures("runner_settings")
@pytest.mark.parametrize("phone", ["zh-hans", "en"], indirect=True)
def test_on_a_phone_the_top_bar_shows_the_user_name_and_the_language_buttons_whole(
    phone, transactional_db, alice
):
    # Squeezed into one row, 中文 broke over two lines and "alice" showed as "ali…" (beside the
    # scroll bar of a list longer than the screen).
    for n in range(8):
        jobs_submit(owner=alice, spec=make_spec("true", name=f"job-{n}"), submit_key=f"job-{n}")
    log_in(phone, "alice", "alice-password")
    phone.goto("/")
    assert phone.evaluate("document.documentElement.scrollHeight > innerHeight")

    account = phone.locator("#nav-account")
    expect(account).to_have_text("alice")
    # The text's own extent, one line each, within its element (an ellipsis hides the rest).
    assert account.evaluate(TEXT_LINES) == {"lines": 1, "within": True}, "name"
    for code in ("zh-hans", "en"):
        assert phone.locator(f"nav button[data-language={code}]").evaluate(TEXT_LINES) == {
            "lines": 1,
            "within": True,
        }
    for link in ("#nav-usage", "#nav-api-keys", "#nav-help"):
        expect(phone.locator(link)).to_be_in_viewport()
    assert phone.evaluate(PAGE_FITS)


@pytest.mark.usefixtures("runner_settings")
@pytest.mark.parametrize("phone", ["zh-hans", "en"], indirect=True)
def test_on_a_phone_a_pools_card_figures_and_my_usages_card_hours_show_without_scrolling(
    phone, transactional_db, alice
):
    # The card type (baidu.com/a800_80g_cgpu) took the width: "Total" showed as "Tota", and My
    # usage's card-hours were scrolled out of their box.
    started = max(timezone.now() - timedelta(minutes=30), Period.this_month().starts_at)
    run(alice, started, started + timedelta(minutes=1), cards=2)
    log_in(phone, "alice", "alice-password")

    phone.goto("/pools/")
    cards = phone.locator('section[data-pool="local"] .table-responsive').first
    expect(cards.locator("td.card-total")).to_have_text("2")
    assert cards.evaluate("box => box.scrollWidth <= box.clientWidth")
    expect(cards.locator("th[scope=row]")).to_contain_text("a800_80g_cgpu")

    phone.goto("/account/usage/")
    pools = phone.locator("#usage-pools")
    expect(pools.locator("tbody td").nth(1)).to_have_text("0.03")  # card-hours
    assert pools.evaluate("t => t.parentElement.scrollWidth <= t.parentElement.clientWidth")
    assert phone.evaluate(PAGE_FITS)


@pytest.mark.parametrize("phone", ["zh-hans", "en"], indirect=True)
def test_on_a_phone_a_pools_queue_table_fits_its_box_without_scrolling_sideways(
    phone,
    transactional_db,
    alice,
    runner_settings,  # noqa: F811
):
    # qa34: in English the queue table was 9 pixels wider than its box at 390 pixels. A job's
    # name may have no hyphen to break at (30 letters here), and a queue's an underscore.
    runner_settings.LOCAL_QUEUES = ["default", "team_alpha_pretraining"]
    name = "llamapretrainingrunnumberforty"
    spec = make_spec("sleep 1", name=name, queue="team_alpha_pretraining")
    jobs_submit(owner=alice, spec=spec, submit_key="q")
    log_in(phone, "alice", "alice-password")

    phone.goto("/pools/")
    queues = phone.locator('section[data-pool="local"] [id$="-queues-region"]')
    expect(queues.locator("td.queue-own a")).to_have_text(name)
    wide, room = queues.evaluate("box => [box.scrollWidth, box.clientWidth]")
    assert wide <= room, f"the queue table is {wide} px wide in {room} px"
    assert phone.evaluate(PAGE_FITS)


# Each header of a table's head: its text as shown, the lines it takes and the words it has
# (split at spaces and hyphens, where a line may break): more lines than words, a word was
# broken.
HEADER_LINES = """table => [...table.querySelectorAll('thead th')].map(th => {
  const range = document.createRange(); range.selectNodeContents(th);
  const lines = new Set([...range.getClientRects()].map(b => Math.round(b.top))).size;
  return [th.innerText.trim(), lines, th.innerText.trim().split(/[\\s-]+/).length]; })"""


@pytest.mark.parametrize("phone", ["zh-hans", "en"], indirect=True)
def test_on_a_phone_my_usages_headers_break_between_words_never_inside_one(
    phone, transactional_db, alice
):
    # At 390 pixels 任务数 (jobs run) was drawn one character a line beside the card type.
    from jobs.models import JobLabel

    started = max(timezone.now() - timedelta(minutes=30), Period.this_month().starts_at)
    job = run(alice, started, started + timedelta(minutes=1), cards=2)
    JobLabel.objects.create(job=job, key="project", value="llm")
    log_in(phone, "alice", "alice-password")

    phone.goto("/account/usage/?by_label=project")

    for table in ("#usage-pools", "#usage-labels"):
        headers = phone.locator(table).evaluate(HEADER_LINES)
        assert len(headers) >= 4
        assert [h for h in headers if h[1] > h[2]] == [], table
        assert phone.locator(table).evaluate(
            "t => t.parentElement.scrollWidth <= t.parentElement.clientWidth"
        )
    assert phone.evaluate(PAGE_FITS)


# How far a table's box scrolls sideways now, and as it did with its headers as they were
# before left23: each one's long form (the text shown from md up), free to wrap anywhere.
SCROLLED_AS_BEFORE = """table => { const region = table.parentElement, now = region.scrollWidth;
  const saved = [...table.querySelectorAll('thead th')].map(th => [th, th.innerHTML, th.className]);
  for (const [th] of saved) {
    const long = th.querySelector('.d-md-inline'); if (long) th.textContent = long.textContent;
    th.classList.remove('text-nowrap'); }
  const before = region.scrollWidth;
  for (const [th, inner, cls] of saved) { th.innerHTML = inner; th.className = cls; }
  return [now, before]; }"""


@pytest.mark.parametrize("phone", ["zh-hans", "en"], indirect=True)
def test_on_a_phone_my_usages_jobs_table_reads_each_header_whole_scrolling_as_far_as_before(
    phone, transactional_db, alice
):
    # At 390 pixels 加速卡 took three lines a character each, 期间内运行小时数 four.
    started = max(timezone.now() - timedelta(minutes=30), Period.this_month().starts_at)
    run(alice, started, started + timedelta(minutes=1), cards=2)
    log_in(phone, "alice", "alice-password")

    phone.goto("/account/usage/")

    table = phone.locator("#usage-jobs-table")
    headers = table.evaluate(HEADER_LINES)
    assert [h for h in headers if h[1] > h[2]] == []
    assert len([h for h in headers if h[1]]) == 6  # the job ID is under each name
    # Whole by a shorter header (its long form in the abbreviation's title), not a wider table:
    # it scrolls at most a few pixels further than it did with the headers broken.
    now, before = table.evaluate(SCROLLED_AS_BEFORE)
    assert now <= before + 8
    short = table.locator("thead abbr")
    expect(short).to_have_count(2)
    if phone.evaluate("document.documentElement.lang").startswith("zh"):
        expect(short.nth(0)).to_have_attribute("title", "加速芯片数")
        expect(short.nth(1)).to_have_attribute("title", "期间内运行小时数")
        expect(short).to_have_text(["卡", "小时"])
    else:
        expect(short.nth(1)).to_have_attribute("title", "Hours in the period")
    assert phone.evaluate(PAGE_FITS)
    # From a tablet up, the headers in full.
    phone.set_viewport_size({"width": 820, "height": 1180})
    shown = table.locator("thead th").nth(5).evaluate("th => th.innerText.trim()")
    assert shown in ("期间内运行小时数", "Hours in the period")


@pytest.mark.usefixtures("runner_settings")
@pytest.mark.parametrize("phone", ["zh-hans", "en"], indirect=True)
def test_on_a_phone_the_usage_report_fits_and_its_download_is_a_full_button(
    phone, transactional_db, alice, reviewer
):
    started = max(timezone.now() - timedelta(minutes=30), Period.this_month().starts_at)
    run(alice, started, started + timedelta(minutes=1), cards=2)
    log_in(phone, "carol", "carol-password")
    phone.goto("/admin/jobs/job/usage/")

    expect(phone.locator("#usage-pools tbody td").first).to_contain_text("a800_80g_cgpu")
    assert phone.evaluate(PAGE_FITS)  # the pool table was 460 pixels wide
    assert phone.evaluate(FITS, "#content-main .module")
    show = phone.locator(".usage-period .submit-row [type=submit]").bounding_box()
    csv = phone.locator("#usage-csv").bounding_box()
    assert csv["height"] >= show["height"] - 1  # not a strip with its words in a corner


@pytest.mark.usefixtures("runner_settings")
@pytest.mark.parametrize("width", [768, 1280])
def test_the_admin_log_page_of_wide_lines_scrolls_inside_its_box_not_the_page(
    page, alice, reviewer, width
):
    [job] = jobs_submit(owner=alice, spec=make_spec("true"), submit_key=str(uuid.uuid4()))
    from jobs.logs import replica_log_path
    from jobs.models import JobReplica

    JobReplica.objects.create(job=job, role="master", index=0)
    log = replica_log_path(job.public_id, "master-0")
    log.parent.mkdir(parents=True)
    log.write_text("2026-11-30T09:00:00.000000Z " + "x" * 400 + "\n")
    log_in(page, "carol", "carol-password")
    page.set_viewport_size({"width": width, "height": 800})

    page.goto(f"/admin/jobs/job/{job.pk}/logs/")

    expect(page.locator("pre.job-log")).to_contain_text("x" * 400)
    assert page.evaluate(PAGE_FITS)
    assert not page.evaluate(FITS, "pre.job-log")  # the line scrolls in its box


@pytest.mark.parametrize("phone", ["zh-hans", "en"], indirect=True)
def test_on_a_phone_each_draft_shows_its_name_figures_and_both_buttons_on_screen(
    phone, transactional_db, alice
):
    # Five columns left 恢复 / Resume half off the screen, Discard beyond it, and the name one
    # word a line.
    log_in(phone, "alice", "alice-password")
    phone.goto("/create/")
    phone.click("#new-draft")
    phone.wait_for_url(re.compile(r"/basic/$"))
    phone.fill("#id_name", "bert-large-pretrain-with-a-long-name")
    phone.click("#wizard-next")
    phone.wait_for_url(re.compile(r"/image/$"))

    phone.goto("/create/")
    row = phone.locator("#draft-list tbody tr").first
    expect(row).to_contain_text("bert-large-pretrain-with-a-long-name")
    for button in row.locator(".btn").all():  # within the screen's width, unscrolled
        box = button.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 390
    expect(row.locator(".row-label").first).to_be_visible()  # 已完成步骤 over "1 / 8"
    name = row.locator("td").first
    assert name.evaluate(TEXT_LINES)["lines"] == 1
    assert phone.evaluate(FITS, "#draft-list")
    assert phone.evaluate(PAGE_FITS)


def test_on_a_phone_the_drafts_come_before_the_import_box_on_the_first_screen(
    phone, transactional_db, alice
):
    # qa85: the import box, about a screen tall on a phone, came first, and a returning user
    # scrolled past it to reach the draft she came back for.
    log_in(phone, "alice", "alice-password")
    phone.goto("/create/")
    phone.click("#new-draft")
    phone.wait_for_url(re.compile(r"/basic/$"))

    phone.goto("/create/")
    resume = phone.locator("#draft-list tbody tr .btn").first
    expect(resume).to_be_visible()
    box = resume.bounding_box()
    assert box["y"] + box["height"] <= 844  # in view without scrolling
    expect(phone.locator("#import-section")).to_be_visible()  # still on the page, below


@pytest.mark.usefixtures("runner_settings")
@pytest.mark.parametrize("phone", ["zh-hans", "en"], indirect=True)
def test_on_a_phone_a_failed_jobs_reason_in_the_list_reads_across_not_down(
    phone, transactional_db, alice
):
    # Found in QA: the reason shrank to its status badge's width, a character or two a line
    # ("mast/er-0/退/出，"), and a longer one made its row several screens tall.
    from jobs.models import Job, JobStatus

    short, long = (
        jobs_submit(owner=alice, spec=make_spec("true", name=name), submit_key=name)[0]
        for name in ("short-reason", "long-reason")
    )
    Job.objects.filter(pk=short.pk).update(
        status=JobStatus.FAILED, status_reason="master-0 exited with code 2."
    )
    Job.objects.filter(pk=long.pk).update(
        status=JobStatus.FAILED,
        status_reason="worker-3 logged the fault keyword “CUDA error: an illegal memory access "
        "was encountered”, and the job was restarted 3 times before it failed for good.",
    )
    log_in(phone, "alice", "alice-password")
    phone.goto("/")

    for job in (short, long):
        reason = phone.locator(f"tr[data-job='{job.public_id}'] .job-status-reason")
        expect(reason).to_be_visible()
        box = reason.bounding_box()
        line = phone.evaluate(
            "e => parseFloat(getComputedStyle(e).lineHeight)", reason.element_handle()
        )
        assert box["width"] >= 9 * 16 - 1  # 9rem: a readable width, not the badge's
        assert box["height"] <= 3 * line + 1  # three lines at most; the job page has it whole
    expect(phone.locator(f"tr[data-job='{long.public_id}'] .job-status-reason")).to_have_attribute(
        "title", re.compile("restarted 3 times before it failed for good")
    )
    assert phone.evaluate(PAGE_FITS)  # the table scrolls inside its box, the page does not


@pytest.mark.parametrize("phone", ["zh-hans", "en"], indirect=True)
def test_on_a_phone_staffs_list_of_workers_breaks_no_word_and_scrolls_in_its_box(
    phone, transactional_db, reviewer
):
    # Found in QA round 24: with the worker stopped (or refusing its settings) the banner's
    # table squeezed into the phone's width, a few letters a line ("Rol/e", "Sto/ppe/d").
    from jobs.health import worker_beat, worker_refused, worker_stopped
    from jobs.job_users import Problem
    from tests.test_workers import worker_on

    worker = worker_on("gpu-node-a", 4242, run_dir="/srv/console/var/runs")
    worker_beat(worker=worker)
    worker_stopped(worker=worker)
    worker_refused(problems=[Problem("LOCAL_JOB_UID_BASE=%(base)s: refused here", base=200000)])
    log_in(phone, "carol", "carol-password")

    for page in ("/", "/admin/"):  # the admin has its own styles, without Bootstrap
        phone.goto(page)
        table = phone.locator("#known-workers")
        expect(table).to_be_visible()
        for cell in table.locator("th, td").all():
            text = cell.inner_text().strip()
            lines = cell.evaluate(TEXT_LINES)["lines"]
            assert lines == 1, f"{page}: {text!r} takes {lines} lines"
        assert phone.evaluate(PAGE_FITS), page  # the table scrolls in its box, not the page
        # The refusal on a line of its own, not run on from the banner's last word.
        problem = phone.locator("#worker-problem")
        expect(problem).to_contain_text("refused here")
        assert problem.evaluate("e => getComputedStyle(e).display") == "block", page


@pytest.mark.parametrize("phone", ["zh-hans", "en"], indirect=True)
def test_on_a_phone_the_admins_list_of_running_workers_scrolls_in_its_box_not_the_page(
    phone, transactional_db, reviewer
):
    # Found in QA round 25: with the worker running (no banner) the admin's front page was 654
    # pixels wide at 390: only the banner's copy of the table scrolled in its box.
    from jobs.health import worker_beat
    from tests.test_workers import worker_on

    worker_beat(worker=worker_on("gpu-node-a", 4242, run_dir="/srv/console/var/runs"))
    log_in(phone, "carol", "carol-password")

    phone.goto("/admin/")
    expect(phone.locator("#worker-running")).to_be_visible()
    table = phone.locator("#known-workers")
    expect(table).to_be_visible()
    assert table.locator("td").first.evaluate(TEXT_LINES)["lines"] == 1
    assert phone.evaluate(PAGE_FITS)  # the table scrolls in its box, not the page


@pytest.mark.usefixtures("runner_settings")
@pytest.mark.parametrize("phone", ["zh-hans", "en"], indirect=True)
def test_on_a_phone_a_rejects_reason_box_fits_the_screen(phone, transactional_db, alice, reviewer):
    # Found in QA round 25: its 80 columns made the confirmation page 697 pixels wide.
    from jobs.models import ReviewMode, ReviewPolicy

    ReviewPolicy.objects.create(pk=1, mode=ReviewMode.ALL)
    [job] = jobs_submit(owner=alice, spec=make_spec("echo hi"), submit_key="k")
    log_in(phone, "carol", "carol-password")

    phone.goto(f"/admin/jobs/job/{job.pk}/review/reject/")

    reason = phone.locator("#id_reason")
    expect(reason).to_be_visible()
    assert reason.evaluate("e => e.getBoundingClientRect().right") <= 390
    assert phone.evaluate(PAGE_FITS)


@pytest.mark.usefixtures("runner_settings")
@pytest.mark.parametrize("phone", ["zh-hans", "en"], indirect=True)
def test_on_a_phone_stop_selected_shows_what_happens_to_jobs_held_for_review_whole(
    phone, transactional_db, alice
):
    # Found in QA round 25: in English the "Pending review" badge on one line pushed "What
    # happens" past the screen's edge, cut at "will b", to be scrolled to sideways.
    from jobs.models import ReviewMode, ReviewPolicy

    ReviewPolicy.objects.create(pk=1, mode=ReviewMode.ALL)
    jobs = [
        jobs_submit(owner=alice, spec=make_spec("echo hi"), submit_key=f"k{i}")[0] for i in range(2)
    ]
    log_in(phone, "alice", "alice-password")
    phone.goto("/")
    for job in jobs:
        phone.check(f"#select-{job.public_id}")

    phone.click("#bulk-stop")

    phone.wait_for_url("**/jobs/bulk/")
    for plan in phone.locator("#bulk-jobs .bulk-plan").all():
        expect(plan).to_contain_text(re.compile("withdrawn|撤出"))
        assert plan.evaluate("e => e.getBoundingClientRect().right") <= 390, plan.inner_text()
    box = phone.locator("#bulk-jobs").evaluate(
        "t => [t.parentElement.scrollWidth, t.parentElement.clientWidth]"
    )
    assert box[0] <= box[1]  # nothing to scroll to in the table's box


@pytest.mark.parametrize("phone", ["zh-hans", "en"], indirect=True)
def test_on_a_phone_a_drafts_updated_label_and_time_break_no_word(phone, transactional_db, alice):
    # Found in QA round 24: in English, beside a long next step ("Image and command"), the
    # label broke as "Update/d" and the time took three lines.
    from jobs import wizard as W

    draft = W.draft_create(owner=alice)
    Draft = type(draft)
    Draft.objects.filter(pk=draft.pk).update(completed_steps=[W.BASIC])
    log_in(phone, "alice", "alice-password")
    phone.goto("/create/")

    row = phone.locator("#draft-list tbody tr").first
    expect(row.locator("td").nth(2)).to_contain_text(re.compile("Image and command|镜像与命令"))
    updated = row.locator("td").nth(3)
    assert updated.locator(".row-label").evaluate(TEXT_LINES)["lines"] == 1
    time_lines = updated.evaluate(
        "e => { const r = document.createRange(); r.selectNodeContents(e.lastChild);"
        " return r.getClientRects().length; }"
    )
    assert time_lines == 1  # under its label, whole
    # The next step wraps between its words, never inside one ("comman/d").
    next_step = row.locator("td").nth(2)
    assert next_step.evaluate(WORDS_WHOLE), next_step.inner_text()
    assert phone.evaluate(PAGE_FITS)


@pytest.mark.parametrize("phone", ["zh-hans", "en"], indirect=True)
def test_on_a_phone_a_refused_webhook_lines_message_wraps_within_the_screen(
    phone, transactional_db, alice, settings, tmp_path
):
    # Found in QA round 28: the message quoting a refused DingTalk line (a URL of 100
    # characters without a space) ran off the screen's edge, the page scrolling sideways.
    from django.test import Client

    from jobs import wizard as W
    from tests.test_wizard import A800, complete_steps, new_draft, step_url

    settings.LOCAL_ACCELERATORS = f"{A800}=8"
    settings.LOCAL_VOLUMES = f"scratch={tmp_path}"
    client = Client()
    client.force_login(alice)
    draft = new_draft(client)
    complete_steps(client, draft, upto=W.ADVANCED)
    log_in(phone, "alice", "alice-password")
    phone.goto(step_url(draft, W.ADVANCED))

    phone.check("input[name=alert_items][value=jobFailed]")
    phone.fill(
        "#id_alert_webhooks",
        f"https://oapi.dingtalk.com/robot/send?access_token={'8d1f' * 16} SEC{'a1b2' * 16}",
    )
    phone.click("#wizard-next")

    error = phone.locator("#id_alert_webhooks_error")
    expect(error).to_contain_text("access_token=")
    assert phone.evaluate(FITS, "#id_alert_webhooks_error")
    assert phone.evaluate(PAGE_FITS)


@pytest.mark.parametrize("phone", ["zh-hans", "en"], indirect=True)
def test_on_a_phone_the_example_buttons_wrap_and_the_image_step_never_scrolls_sideways(
    phone, transactional_db, alice
):
    # QA 64: the five example buttons (查看示例) were one joined row 514 pixels wide: once the
    # examples were opened on a 375-pixel phone the whole step scrolled sideways, TensorFlow's
    # and Ray's buttons and half the page off the screen.
    phone.set_viewport_size({"width": 375, "height": 667})
    log_in(phone, "alice", "alice-password")
    phone.goto("/create/")
    phone.click("#new-draft")
    phone.wait_for_url(re.compile(r"/basic/$"))
    phone.click("#wizard-next")
    phone.wait_for_url(re.compile(r"/image/$"))
    phone.click("#examples summary")
    buttons = phone.locator("#example-panel [role=group] button")
    expect(buttons).to_have_count(5)
    for n in range(5):
        assert buttons.nth(n).evaluate("b => b.getBoundingClientRect().right") <= 375
    assert phone.evaluate(PAGE_FITS)
    # Still one group of buttons, one of them pressed, and each does what it did.
    phone.click("#show-example-TFJob")
    expect(phone.locator("#example-command")).to_contain_text("TF_CONFIG")
    expect(phone.locator("#show-example-TFJob")).to_have_attribute("aria-pressed", "true")
    assert phone.evaluate(PAGE_FITS)


@pytest.mark.usefixtures("runner_settings")
def test_at_320_pixels_the_example_command_the_aiak_command_and_the_injected_variables_wrap(
    phone, transactional_db, alice
):
    # qa93: at 320 pixels (400% zoom) the example's command and the AIAK template's scrolled
    # sideways in boxes Tab never reached, and the table of injected variables made the whole
    # image step 539 pixels wide.
    phone.set_viewport_size({"width": 320, "height": 640})
    log_in(phone, "alice", "alice-password")
    phone.goto("/create/")
    phone.click("#new-draft")
    phone.wait_for_url(re.compile(r"/basic/$"))
    phone.check("input[name=creation_mode][value=aiak]")
    phone.select_option("#id_training_mode", "SFT")
    phone.select_option("#id_training_method", "lora")
    phone.select_option("#id_aiak_template", "llama2-7b")
    expect(phone.locator("#aiak-fill pre")).to_contain_text("sft_llama2_7b.sh")
    assert phone.evaluate(FITS, "#aiak-fill pre")
    assert phone.evaluate(PAGE_FITS)

    phone.check("input[name=creation_mode][value=custom]")
    phone.fill("#id_name", "wrapped")
    phone.check("input[name=framework][value=MPIJob]")
    phone.click("#wizard-next")
    phone.wait_for_url(re.compile(r"/image/$"))
    phone.click("#examples summary")
    expect(phone.locator("#example-command")).to_contain_text("mpirun")
    assert phone.evaluate(FITS, "#example-command")
    phone.click("summary:has-text('平台自动注入的环境变量')")
    expect(phone.locator("#injected-vars")).to_be_visible()
    assert phone.evaluate(FITS, "#injected-vars")
    assert phone.evaluate(PAGE_FITS)


@pytest.mark.usefixtures("runner_settings")
@pytest.mark.parametrize(
    ("phone", "said"), [("zh-hans", "第 3 步，共 8 步"), ("en", "Step 3 of 8")], indirect=["phone"]
)
def test_at_200_percent_zoom_the_steps_row_shows_the_current_step_and_how_many_there_are(
    phone, transactional_db, alice, said
):
    # qa93: at 640 pixels (1280 by 900 at 200%) the steps are one row that scrolls sideways;
    # steps 5 to 8 were out of sight, and nothing said how many were left.
    phone.set_viewport_size({"width": 640, "height": 450})
    log_in(phone, "alice", "alice-password")
    phone.goto("/create/")
    phone.click("#new-draft")
    phone.wait_for_url(re.compile(r"/basic/$"))
    phone.fill("#id_name", "zoomed")
    phone.click("#wizard-next")
    phone.wait_for_url(re.compile(r"/image/$"))
    phone.fill("#id_image", "python:3.12")
    phone.fill("#id_command", "python train.py")
    phone.click("#wizard-next")
    phone.wait_for_url(re.compile(r"/resources/$"))
    count = phone.locator(".wizard-step-count")
    expect(count).to_be_visible()
    expect(count).to_have_text(f"{said} ·")
    current = phone.locator(".wizard-steps [aria-current=step]")
    row = phone.locator(".wizard-steps").bounding_box()
    box = current.bounding_box()
    assert row["x"] <= box["x"] and box["x"] + box["width"] <= row["x"] + row["width"]
    # Beside the steps in a column, each is in view: no count.
    phone.set_viewport_size({"width": 1280, "height": 900})
    expect(count).to_be_hidden()


@pytest.mark.usefixtures("runner_settings")
def test_at_a_laptops_width_a_job_name_takes_one_line_beside_a_long_status(
    browser, live_server, transactional_db, alice
):
    # qa101: "pt-ddp-en" broke at its hyphens in the job list at 1280 pixels, the status
    # column beside it wide with its reason.
    from jobs.models import Job, JobStatus

    job = jobs_submit(owner=alice, spec=make_spec("true", name="pt-ddp-en"), submit_key="n")[0]
    reason = "The reviewer asked for a smaller learning rate and fewer cards " * 4
    Job.objects.filter(pk=job.pk).update(status=JobStatus.REJECTED, status_reason=reason)
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 800})
    context.add_cookies([{"name": "django_language", "value": "en", "url": live_server.url}])
    context.set_default_timeout(BROWSER_TIMEOUT_MS)
    page = context.new_page()
    log_in(page, "alice", "alice-password")

    page.goto("/")
    name = page.locator(f"#job-link-{job.public_id}")
    expect(name).to_have_text("pt-ddp-en")
    assert name.evaluate(TEXT_LINES)["lines"] == 1
    assert page.evaluate(PAGE_FITS)
    context.close()


@pytest.mark.parametrize("phone", ["en", "zh-hans"], indirect=True)
def test_on_a_phone_the_pools_column_of_your_jobs_has_a_short_header_naming_it_whole(
    phone,
    transactional_db,
    alice,
    runner_settings,  # noqa: F811
):
    # qa101: "Your running and waiting jobs" wrapped to five lines at 390 pixels.
    log_in(phone, "alice", "alice-password")

    phone.goto("/pools/")
    table = phone.locator('section[data-pool="local"] table.pool-queues')
    header = table.locator("th.queue-own-head")
    whole = header.get_attribute("title")
    assert whole in ("Your running and waiting jobs", "您运行中和排队中的任务")
    assert header.locator(".visually-hidden").inner_text() == whole
    # What is shown takes one line, as the header beside it does at most two.
    assert header.locator("[aria-hidden=true]").evaluate(TEXT_LINES)["lines"] == 1
    queued = table.locator("thead th").nth(2)
    assert header.bounding_box()["height"] <= queued.bounding_box()["height"]
    assert phone.evaluate(PAGE_FITS)
