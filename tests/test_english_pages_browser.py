"""A researcher who reads no Chinese, on a console installed in Chinese (LANGUAGE_CODE
zh-hans, the default), whose browser asks for English (Accept-Language en-US; no language
cookie, no account choice): every page, partial and error message they meet is English.

The walk fails on any CJK character a page shows them (its title, text, and the names,
placeholders, tooltips and values of its elements), except:
- text marked as Chinese (the nearest `lang` says zh): the 中文 switch, which names the other
  language in its own words and is read aloud so; and the Chinese half of the few pages that
  are in both languages by decision (an admin list's refused filter: drawn without the
  request's language), whose English half is checked and must be marked `lang="en"`;
- pools' proper names: the local pool's, jobs.backends.local.POOL_NAME (本机 Local), as the
  seeds name pools, and an AIHC pool's, which is AIHC's (a lab's pools are named in Chinese);
- `pre.spec-json` boxes: the request that will be sent, the spec document and the job's log,
  which are the user's own data and AIHC's request as it is (the console's own lines in a
  log are checked);
- text not drawn (display: none): the admin's inline object caption, hidden by
  admin_jobs.css, is neither shown nor read. Attributes are checked drawn or not: a hidden
  banner's data-* messages are what console.js shows in it later.
Every other page must itself be in English (`<html lang="en">`), so a page that came out in
Chinese cannot pass for being marked so. The data typed here is English; events, status
reasons and review mails are recorded in the console's language (Chinese), so the job pages
and the admin's events check that they are said again in the reader's."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from jobs.backends.local import POOL_NAME
from jobs.models import CardQuota, Job, JobStatus, ReviewMode, ReviewPolicy
from jobs.review import job_reject
from jobs.worker import Worker
from tests.conftest import BROWSER_TIMEOUT_MS, log_in

from .runner_helpers import CARD, run_until, runner_settings, status_of  # noqa: F401
from .test_accessibility_browser import submit, submit_spec
from .test_waiting import cards

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("runner_settings")]

# Han, CJK punctuation and full-width forms, radicals and kana.
CJK = r"[\u2e80-\u9fff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef]"

CHINESE_SHOWN = """
([cjk, names]) => {
  const chinese = new RegExp(cjk);
  const shown = (text) => chinese.test(names.reduce((t, name) => t.split(name).join(''), text));
  const markedChinese = (el) => (el.closest('[lang]')?.lang || '').toLowerCase().startsWith('zh');
  const notDrawn = (el) => {
    for (let e = el; e; e = e.parentElement) {
      if (e.tagName !== 'OPTION' && getComputedStyle(e).display === 'none') return true;
    }
    return false;
  };
  // A log's own lines are the job's; the console's lines in it ([console]) are checked.
  const data = (el) => el.closest('pre.spec-json') && !el.closest('.log-console');
  const allowed = (el) => markedChinese(el) || data(el) || notDrawn(el);
  const where = (el) => {
    const parts = [];
    for (let e = el; e && e !== document.body && parts.length < 4; e = e.parentElement) {
      parts.unshift(e.tagName.toLowerCase() + (e.id ? '#' + e.id : ''));
    }
    return parts.join(' > ');
  };
  const found = [];
  if (shown(document.title) && !markedChinese(document.documentElement)) {
    found.push('title: ' + document.title);
  }
  const texts = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = texts.nextNode(); n; n = texts.nextNode()) {
    if (shown(n.nodeValue) && !allowed(n.parentElement)) {
      found.push(where(n.parentElement) + ': ' + n.nodeValue.trim().slice(0, 160));
    }
  }
  // Every attribute a person may be shown or read (a tooltip, a name, a placeholder, a
  // button's value, the messages console.js shows from data-*, drawn or not: a hidden banner
  // shows them later), not addresses nor a field's pattern (a rule, which accepts a Chinese
  // input method's full-width ／ and ＝).
  const addresses = /^(href|action|src|hx-[a-z-]+|formaction|pattern)$/;
  for (const el of document.body.querySelectorAll('*')) {
    for (const {name, value} of el.attributes) {
      if (!addresses.test(name) && shown(value) && !markedChinese(el) && !data(el)) {
        found.push(where(el) + '@' + name + ': ' + value.slice(0, 160));
      }
    }
  }
  return found;
}
"""

# Pages in both languages by decision (jobs.http.bad_request): their Chinese half is marked so.
BOTH_LANGUAGES = {"admin list, a filter it refuses"}


class Walk:
    """The pages an English reader has seen, and the Chinese each showed them."""

    def __init__(self, page) -> None:
        self.page, self.found, self.seen = page, {}, []
        self.names = [POOL_NAME]  # proper names shown as they are

    def look(self, label: str) -> None:
        page = self.page
        page.wait_for_function(
            "() => !document.querySelector('.htmx-request, .htmx-added, .htmx-settling')"
        )
        self.seen.append(label)
        problems = page.evaluate(CHINESE_SHOWN, [CJK, self.names])
        language = page.evaluate("document.documentElement.lang")
        if label not in BOTH_LANGUAGES and language != "en":
            problems.insert(0, f'the page is in "{language}", not English')
        if problems:
            self.found[f"{label} ({page.url})"] = problems

    def next_step(self, slug: str) -> None:
        from playwright.sync_api import TimeoutError as NotThere

        self.page.click("#wizard-next")
        try:
            self.page.wait_for_url(re.compile(rf"/{slug}/$"))
        except NotThere:
            problems = self.page.locator("#step-errors, .invalid-feedback").all_inner_texts()
            pytest.fail(f"{slug} not reached: {problems}")

    def step_refused(self, label: str) -> None:
        self.page.click("#wizard-next")
        expect(self.page.locator("#step-errors")).to_be_visible()
        self.look(label)

    def assert_english(self) -> None:
        if self.found:
            lines = [f"Chinese shown to an English reader on {len(self.found)} page(s):"]
            for where, problems in self.found.items():
                lines += [f"\n== {where}", *(f"  {p}" for p in problems)]
            pytest.fail("\n".join(lines), pytrace=False)


@pytest.fixture
def walk(browser, live_server, transactional_db, settings):
    settings.LANGUAGE_CODE = "zh-hans"  # the lab's console: Chinese unless asked otherwise
    context = browser.new_context(base_url=live_server.url, locale="en-US")
    context.set_default_timeout(BROWSER_TIMEOUT_MS)
    yield Walk(context.new_page())
    context.close()


def junk_typed(page) -> None:
    """Every box of the step ticked (so what each unfolds shows) and every field filled with
    what it refuses: the step's every message is then on the page."""
    idle = "() => !document.querySelector('.htmx-request, .htmx-settling')"
    # Not a tick that is off yet reachable (aria-disabled: BCCL while its conditions fail).
    unticked = page.locator(
        "#wizard input[type=checkbox]:visible:enabled:not(:checked):not([aria-disabled=true])"
    )
    for _ in range(30):  # a tick may redraw the step (htmx) and unfold more boxes
        if not unticked.count():
            break
        unticked.first.check()
        page.wait_for_function(idle)
    for field in page.locator(
        "#wizard input[type=text]:visible, #wizard textarea:visible, #wizard input:not([type]):visible"
    ).all():
        field.fill("!! bad,value ;")
    for field in page.locator("#wizard input[type=number]:visible").all():
        field.fill("-5")


def test_an_english_reader_of_a_chinese_console_is_shown_no_chinese_but_the_pool_name_and_switch(
    walk, alice, reviewer
):
    page = walk.page
    page.goto("/login/")
    walk.look("log-in")
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", "not her password")
    page.click("#login-submit")
    expect(page.locator("main")).to_contain_text("Please enter a correct username")
    walk.look("log-in refused")
    log_in(page, "alice", "alice-password")
    walk.look("job list, no jobs yet")
    page.goto("/create/")
    walk.look("drafts, none")
    page.fill("#import-body", "{not json")
    page.click("#import-submit")
    expect(page.locator("#import-problems")).to_be_visible()
    walk.look("import refused")

    # Every wizard step, its partials (AIAK template, examples) and its review.
    page.goto("/create/")
    page.click("#new-draft")
    page.wait_for_url(re.compile(r"/basic/$"))
    walk.look("basic step")
    page.fill("#id_name", "Bad Name!")
    walk.step_refused("basic step, a bad name")
    page.check("input[name=creation_mode][value=aiak]")
    page.select_option("#id_training_mode", "SFT")
    page.select_option("#id_training_method", "lora")
    page.select_option("#id_aiak_template", "llama2-7b")
    expect(page.locator("#aiak-fill")).to_be_visible()
    walk.look("basic step, an AIAK template filled in")
    page.check("input[name=creation_mode][value=custom]")
    page.fill("#id_name", "bert-large")
    page.check("input[name=framework][value=PyTorchJob]")
    walk.next_step("image")
    walk.look("image step")
    page.locator("#examples summary").click()
    examples = page.locator("#example-panel button[id^=show-example]")
    for n in range(examples.count()):
        examples.nth(n).click()
        expect(examples.nth(n)).to_have_attribute("aria-pressed", "true")
        walk.look(f"image step, example {n + 1}")
    page.click("#fill-example")
    expect(page.locator("#id_command")).not_to_be_empty()
    page.fill("#id_image", "registry.example.com/train/pytorch:2.5")
    page.click("#add-env")
    expect(page.locator("#env-table tbody tr")).not_to_have_count(0)
    walk.look("image step, a variable row added")
    walk.next_step("resources")
    walk.look("resources step, idle counts and card totals")
    page.check("#id_roles-0-use_accelerator")
    page.select_option("select[name=roles-0-accelerator_type]", CARD)
    page.fill("#id_roles-0-accelerators", "1")
    expect(page.locator("#card-totals")).to_contain_text(CARD)
    walk.look("resources step, the card totals redrawn")
    walk.next_step("data")
    walk.look("data step, its mount row")
    page.click("#add-mount")
    expect(page.locator("tr.mount-row")).to_have_count(2)
    walk.look("data step, a mount row added")
    page.locator("tr.mount-row").nth(1).locator("button[value^=remove-row]").click()
    expect(page.locator("tr.mount-row")).to_have_count(1)
    page.fill("#id_mounts-0-mount_path", "/workspace")
    for slug in ("fault", "advanced", "submission", "review"):
        walk.next_step(slug)
        walk.look(f"{slug} step")
    page.click("#wizard-submit")
    page.wait_for_url(re.compile(r"/jobs/pytorchjob-"))
    walk.look("job page, just submitted")
    submitted = Job.objects.get(owner=alice)

    # Each step's every message: a copy of the job, each step filled with what it refuses,
    # last step first (a step refused leaves the ones after it unreachable).
    page.click("#job-copy")
    page.wait_for_url(re.compile(r"/basic/$"))
    draft = page.url.rsplit("/", 2)[0]
    for slug in ("image", "resources", "data", "fault", "advanced"):
        walk.next_step(slug)
    for slug in ("advanced", "fault", "data", "resources", "image", "basic"):
        page.goto(f"{draft}/{slug}/")
        junk_typed(page)
        walk.step_refused(f"{slug} step, every field refused")

    # Job pages: ended (events and reasons recorded in Chinese), waiting for review, rejected,
    # waiting for its quota (why it waits).
    ran = submit(alice, "for i in 1 2 3; do echo line-$i; done; exit 3")
    worker = Worker()
    run_until(worker, lambda: status_of(ran) == JobStatus.FAILED, what="the failed job")
    CardQuota.objects.create(user=alice, card_type=CARD, max_cards=1)
    waiting = submit_spec(alice, cards(2, "echo waited"))
    worker.tick()
    ReviewPolicy.objects.create(pk=1, mode=ReviewMode.ALL)
    queued = submit(alice)
    rejected = submit(alice)
    job_reject(job=rejected, reviewer=reviewer, reason="Too many cards.")
    for job in (submitted, ran, waiting, queued, rejected):
        page.goto(f"/jobs/{job.public_id}/")
        walk.look(f"job page, {status_of(job)}")
    page.goto(f"/jobs/{ran.public_id}/")
    page.fill("#log-search-q", "line-2")
    page.press("#log-search-q", "Enter")
    expect(page.locator("#log-search-results")).to_contain_text("line-2")
    walk.look("job page, a log search")
    page.goto("/")
    walk.look("job list")
    page.goto("/?q=nothing-like-it&status=Failed")
    walk.look("job list, filtered to nothing")
    page.goto("/?date_from=2026-13-45")
    walk.look("job list, a bad date")
    page.goto(f"/compare/?job={ran.public_id}&job={submitted.public_id}")
    walk.look("compare jobs")
    page.goto("/")
    page.check("#select-all")
    page.click("#bulk-delete")
    expect(page.locator("#confirm-bulk-delete")).to_be_visible()
    walk.look("delete selected, asked first")

    for label, address in [
        ("resource pools", "/pools/"),
        ("drafts, one", "/create/"),
        ("API keys", "/account/keys/"),
        ("change password", "/account/password/"),
        ("my usage", "/account/usage/"),
        ("my usage, a bad period", "/account/usage/?date_from=2026-04-10&date_to=2026-04-01"),
        ("page not found", "/nowhere/"),
        ("a job not found", "/jobs/pytorchjob-nowhere/"),
        ("log out, asked first", "/logout/"),
    ]:
        page.goto(address)
        walk.look(label)
    page.goto("/account/keys/")
    page.fill("input[name=description]", "nightly script")
    page.click("#api-key-create")
    expect(page.locator("#new-key")).to_be_visible()
    walk.look("API keys, a new key shown")
    page.click("#api-keys-revoke-all")
    expect(page.locator("#revoke-all-confirm")).to_be_visible()
    walk.look("API keys, revoke all asked first")
    page.goto("/account/password/")
    page.fill("input[name=old_password]", "wrong")
    page.fill("input[name=new_password1]", "abc")
    page.fill("input[name=new_password2]", "abd")
    page.click("#password-change-submit")
    expect(page.locator(".invalid-feedback").first).to_be_visible()
    walk.look("change password refused")

    # A staff reviewer in English: the admin's pages, a page their permissions do not cover.
    page.context.clear_cookies()
    log_in(page, "carol", "carol-password")
    for label, address in [
        ("admin index", "/admin/"),
        ("admin job list", "/admin/jobs/job/"),
        ("admin job page, waiting for review", f"/admin/jobs/job/{queued.pk}/change/"),
        ("admin job page, failed", f"/admin/jobs/job/{ran.pk}/change/"),
        ("admin logs", f"/admin/jobs/job/{ran.pk}/logs/"),
        ("admin approve, asked first", f"/admin/jobs/job/{queued.pk}/review/approve/"),
        ("admin reject, asked first", f"/admin/jobs/job/{queued.pk}/review/reject/"),
        ("admin usage report", "/admin/jobs/job/usage/"),
        ("admin usage report, a bad date", "/admin/jobs/job/usage/?date_from=2026-02-30"),
        ("a page not allowed", "/admin/auth/user/"),
        ("admin list, a filter it refuses", "/admin/jobs/job/?spec__regex=x"),
    ]:
        page.goto(address)
        walk.look(label)

    # The owner stops a job and deletes another, each asked first (the browser's dialog,
    # read here), then opens the deleted job's old link.
    page.context.clear_cookies()
    log_in(page, "alice", "alice-password")
    dialogs: list[str] = []

    def answered(dialog) -> None:
        dialogs.append(dialog.message)
        dialog.accept()

    page.on("dialog", answered)
    page.goto(f"/jobs/{waiting.public_id}/")
    page.click("#job-stop")
    expect(page.locator("#job-status")).not_to_have_text(re.compile("Queued"))
    walk.look("job page, stopped, its message")
    page.goto(f"/jobs/{ran.public_id}/")
    page.click("#job-delete")
    page.wait_for_url(lambda url: ran.public_id not in url)
    walk.look("job list, a job deleted, its message")
    page.goto(f"/jobs/{ran.public_id}/")
    walk.look("a deleted job's old link")
    page.locator('form[action="/logout/"] button').click()
    page.wait_for_url(re.compile(r"/login/"))
    walk.look("logged out")
    log_in(page, "alice", "alice-password")
    assert len(dialogs) == 2
    assert not [m for m in dialogs if re.search(CJK, m)], dialogs
    page.remove_listener("dialog", answered)

    # A form sent with a security token gone (logged out elsewhere): the CSRF failure page.
    page.context.clear_cookies()
    page.goto("/login/")
    page.context.clear_cookies()
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", "alice-password")
    page.click("#login-submit")
    expect(page.locator("#csrf-failure")).to_be_visible()
    walk.look("page expired (CSRF)")

    assert len(walk.seen) > 60
    walk.assert_english()


@pytest.fixture
def cluster(settings):
    from tests.fake_kubernetes import FakeKubernetes, configure

    fake = FakeKubernetes().start()
    fake.add_namespace("ml")
    fake.add_node("gpu-1", {"nvidia.com/gpu": "8"})
    configure(
        settings,
        fake,
        KUBERNETES_NAMESPACES="ml",
        KUBERNETES_ACCELERATORS="baidu.com/a800_80g_cgpu=nvidia.com/gpu",
    )
    yield fake
    fake.stop()


def test_an_english_reader_of_a_kubernetes_pool_is_shown_no_chinese_in_its_wizard_and_pages(
    walk, alice, cluster
):
    # A remote pool's own parts: its idle counts, review (manifests and the curl to send
    # them), the job's page once the cluster runs it, and the pools page.
    from jobs.backends import get_backend

    page = walk.page
    log_in(page, "alice", "alice-password")
    page.goto("/create/")
    page.click("#new-draft")
    page.wait_for_url(re.compile(r"/basic/$"))
    page.select_option("select[name=resource_pool]", "k8s-ml")
    walk.look("Kubernetes pool, basic step")
    page.fill("#id_name", "k8s-english")
    page.check("input[name=framework][value=PyTorchJob]")
    walk.next_step("image")
    page.fill("#id_image", "registry.example.com/train/pytorch:2.5")
    page.fill("#id_command", "torchrun train.py")
    walk.next_step("resources")
    page.check("#id_roles-0-use_accelerator")
    page.select_option("select[name=roles-0-accelerator_type]", "baidu.com/a800_80g_cgpu")
    page.fill("#id_roles-0-accelerators", "99")
    walk.step_refused("Kubernetes pool, resources refused")
    page.fill("#id_roles-0-accelerators", "1")
    for slug in ("data", "fault", "advanced", "submission", "review"):
        walk.next_step(slug)
        walk.look(f"Kubernetes pool, {slug} step")
    page.click("#wizard-submit")
    page.wait_for_url(re.compile(r"/jobs/pytorchjob-"))
    walk.look("Kubernetes job page, submitted")
    job = Job.objects.get(owner=alice)
    k8s = get_backend("kubernetes")
    k8s.submit(job)
    job.refresh_from_db()
    for pod in cluster.run_pods(job.external_id, namespace="ml"):
        cluster.add_logs(pod, ["2026-11-30T09:00:00.000000Z step 1"], namespace="ml")
    k8s.sync(job)
    page.reload()
    walk.look("Kubernetes job page, running")
    page.goto("/pools/")
    walk.look("resource pools with a Kubernetes pool")

    walk.assert_english()


@pytest.fixture
def aihc(settings):
    from tests.fake_aihc import FakeAihc, configure

    fake = FakeAihc().start()
    fake.add_pool("cce-pool1", "百舸训练池", queues=("default",), gpus={CARD: (16, 4)})
    configure(settings, fake)
    yield fake
    fake.stop()


def test_an_english_reader_of_an_aihc_pool_is_shown_no_chinese_but_the_pools_own_name(
    walk, alice, aihc
):
    page = walk.page
    walk.names.append("百舸训练池")  # AIHC's name for the pool, shown as AIHC gives it
    log_in(page, "alice", "alice-password")
    page.goto("/pools/")
    walk.look("resource pools with an AIHC pool")
    page.locator('section[data-pool="cce-pool1"] .create-in-pool').click()
    page.wait_for_url(re.compile(r"/basic/$"))
    walk.look("AIHC pool, basic step")
    page.fill("#id_name", "aihc-english")
    page.check("input[name=framework][value=PyTorchJob]")
    walk.next_step("image")
    page.fill("#id_image", "registry.example.com/train/pytorch:2.5")
    page.fill("#id_command", "torchrun train.py")
    walk.next_step("resources")
    walk.look("AIHC pool, resources step and its idle counts")
    for slug in ("data", "fault", "advanced", "submission", "review"):
        walk.next_step(slug)
        walk.look(f"AIHC pool, {slug} step")
    page.click("#wizard-submit")
    page.wait_for_url(re.compile(r"/jobs/pytorchjob-"))
    walk.look("AIHC job page, submitted")
    walk.assert_english()


def test_an_english_reader_is_shown_training_metrics_and_their_notes_without_chinese(
    walk, alice, settings
):
    from tensorboardX import SummaryWriter

    from jobs import spec as S

    from .runner_helpers import make_spec, volume

    for run, losses in [("train", [2.0, 1.0, float("nan"), 0.5]), ("eval", [1.5, 0.75])]:
        writer = SummaryWriter(str(volume(settings) / "tb" / run))
        for step, loss in enumerate(losses):
            writer.add_scalar("loss", loss, step)
        writer.close()
    charted = submit_spec(
        alice,
        make_spec("true", tensorboard=S.TensorboardConfig(enable=True, log_path="/workspace/tb")),
    )
    noted = submit_spec(
        alice, make_spec("true", tensorboard=S.TensorboardConfig(enable=True, log_path="/tmp/tb"))
    )
    Job.objects.filter(pk__in=[charted.pk, noted.pk]).update(status=JobStatus.SUCCEEDED)
    page = walk.page
    log_in(page, "alice", "alice-password")
    page.goto(f"/jobs/{charted.public_id}/")
    expect(page.locator("#metric-charts figure.metric")).not_to_have_count(0)
    walk.look("job page with training metrics")
    page.click("#metrics-scale a")
    expect(page.locator("#metric-charts svg.metric-axis text").first).to_be_visible()
    walk.look("job page with training metrics on a log scale")
    page.goto(f"/jobs/{noted.public_id}/")
    expect(page.locator("#metrics-note")).to_be_visible()
    walk.look("job page with a training metrics note")
    page.goto(f"/compare/?job={charted.public_id}&job={noted.public_id}")
    walk.look("compare jobs with metrics")

    walk.assert_english()
