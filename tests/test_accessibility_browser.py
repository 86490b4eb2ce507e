"""The main pages, checked by axe-core in Chromium: none has a serious or critical violation
(a control without a name, text too faint to read, a region the keyboard cannot scroll...).

axe-core comes bundled in axe-playwright-python (a dev extra), so nothing is fetched."""

from __future__ import annotations

import json
import os
import re
import uuid
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from jobs.models import Job, JobStatus, ReviewMode, ReviewPolicy
from jobs.review import job_reject
from jobs.services import jobs_submit
from jobs.usage import Period
from jobs.worker import Worker
from tests.conftest import BROWSER_TIMEOUT_MS, log_in

from .runner_helpers import (  # noqa: F401
    make_spec,
    run_until,
    runner_settings,
    status_of,
    volume,
)
from .test_plain_secrets import HF
from .test_runner_job_users import job_users_on  # noqa: F401
from .test_usage_report import run as run_job
from .test_wizard import A800
from .test_wizard_import import BODY as IMPORTED

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("runner_settings")]

SERIOUS = {"serious", "critical"}
# Minor by axe's measure, but fixed in our pages (the admin's inline tables too) and kept so:
# a column header a screen reader reads as nothing.
ALSO_GATED = {"empty-table-header"}


@pytest.fixture(scope="module")
def axe():
    try:
        from axe_playwright_python.sync_playwright import Axe
    except ImportError:
        if os.getenv("REQUIRE_BROWSER"):
            pytest.fail("axe-playwright-python is missing: pip install -e '.[dev]'")
        pytest.skip("axe-playwright-python not installed (pip install -e '.[dev]')")
    return Axe()


class Audit:
    """Runs axe on each page visited and keeps its serious and critical violations (and the
    few minor ones gated too)."""

    def __init__(self, axe, page) -> None:
        self.axe, self.page, self.found = axe, page, {}

    def use_language(self, code: str) -> None:
        self.page.context.add_cookies(
            [{"name": "django_language", "value": code, "url": self.page.url}]
        )

    def check(self, label: str) -> None:
        # Check the page as a person sees it: no htmx request under way, nothing still settling.
        self.page.wait_for_function(
            "() => !document.querySelector('.htmx-request, .htmx-added, .htmx-settling')"
        )
        results = self.axe.run(self.page).response["violations"]
        serious = [v for v in results if v["impact"] in SERIOUS or v["id"] in ALSO_GATED]
        if serious:
            self.found[f"{label} ({self.page.url})"] = serious

    def assert_clean(self) -> None:
        if self.found:
            pytest.fail(self.report(), pytrace=False)

    def report(self) -> str:
        lines = [f"axe found serious or critical violations on {len(self.found)} page(s):"]
        for where, violations in self.found.items():
            lines.append(f"\n== {where}")
            for v in violations:
                lines.append(f"  [{v['impact']}] {v['id']}: {v['help']}")
                for node in v["nodes"]:
                    lines.append(f"    at {' '.join(map(str, node['target']))}")
                    lines.append(f"       {node['html'][:160]}")
                    for why in (node.get("failureSummary") or "").splitlines()[1:]:
                        lines.append(f"       - {why.strip()}")
        return "\n".join(lines)


@pytest.fixture
def audit(request, axe, browser, live_server, transactional_db):
    """A page in Chinese (the default) or the language parametrized, with motion reduced: a
    check never lands mid-transition (a button still fading into its hover colour)."""
    language = getattr(request, "param", "zh-hans")
    context = browser.new_context(base_url=live_server.url, locale="zh-CN", reduced_motion="reduce")
    context.add_cookies([{"name": "django_language", "value": language, "url": live_server.url}])
    context.set_default_timeout(BROWSER_TIMEOUT_MS)
    yield Audit(axe, context.new_page())
    context.close()


def submit(owner, command: str = "echo hello") -> Job:
    return submit_spec(owner, make_spec(command))


def submit_spec(owner, spec) -> Job:
    [job] = jobs_submit(owner=owner, spec=spec, submit_key=str(uuid.uuid4()))
    return job


def next_step(page, slug: str) -> None:
    page.click("#wizard-next")
    page.wait_for_url(re.compile(rf"/{slug}/$"))
    expect(page.locator("#wizard")).to_be_visible()


def test_the_job_list_sorted_on_a_middle_page_has_no_serious_violations_in_either_language(
    audit, alice
):
    # Its sortable heads (aria-sort, arrows) and its first and last pages' links (feat-list).
    for _ in range(45):
        submit(alice)
    page = audit.page
    log_in(page, "alice", "alice-password")
    for language in ("zh-hans", "en"):
        audit.use_language(language)
        page.goto("/?sort=-cards&page=2")
        expect(page.locator("#page-last")).to_be_visible()
        audit.check(f"job list sorted, page 2 of 3, {language}")
        # Sorted again by a click: the list's region redrawn by htmx.
        page.click("#sort-name")
        page.wait_for_url("**/?sort=name")
        audit.check(f"job list sorted by a click, {language}")
    audit.assert_clean()


def test_the_login_job_list_and_job_pages_have_no_serious_violations_in_either_language(
    audit, alice, reviewer
):
    page = audit.page
    page.goto("/login/")
    page.fill("input[name=username]", "alice")
    page.click("#login-submit")
    audit.check("login with an error")
    log_in(page, "alice", "alice-password")
    audit.check("job list, empty")

    # A finished job whose log is longer than its box, a queued one, a rejected one.
    finished = submit(alice, "for i in $(seq 1 80); do echo line-$i; done")
    run_until(Worker(), lambda: status_of(finished) == JobStatus.SUCCEEDED)
    queued = submit(alice)
    ReviewPolicy.objects.create(pk=1, mode=ReviewMode.ALL)
    rejected = submit(alice)
    job_reject(job=rejected, reviewer=reviewer, reason="Too many cards.")
    for language in ("zh-hans", "en"):
        audit.use_language(language)
        page.goto("/")
        audit.check(f"job list, {language}")
        # Jobs ticked and carried (jobs.selection): the bar naming them, each to untick.
        page.goto(f"/?sel={queued.public_id}&sel={rejected.public_id}")
        audit.check(f"job list with a selection, {language}")
        for job in (finished, queued, rejected) if language == "zh-hans" else (finished,):
            page.goto(f"/jobs/{job.public_id}/")
            audit.check(f"job page, {job.status}, {language}")
    # On a phone the replica table scrolls sideways.
    page.set_viewport_size({"width": 390, "height": 800})
    page.goto(f"/jobs/{finished.public_id}/")
    audit.check("job page on a phone")
    page.set_viewport_size({"width": 1280, "height": 720})
    # The delete confirmation a browser without JavaScript gets.
    page.goto(f"/jobs/{finished.public_id}/")
    page.eval_on_selector("#job-delete", "b => b.form.removeAttribute('data-confirm')")
    page.click("#job-delete")
    page.wait_for_selector("#confirm-delete")
    audit.check("delete confirmation")
    # Delete selected: the list's boxes, then the page that lists what happens to each.
    page.goto("/")
    page.check("#select-all")
    page.click("#bulk-delete")
    page.wait_for_selector("#confirm-bulk-delete")
    audit.check("delete selected confirmation")

    audit.assert_clean()


def test_a_job_page_with_training_metrics_has_no_serious_violations_in_either_language(
    audit, alice, settings
):
    from tensorboardX import SummaryWriter

    from jobs import spec as S

    # Curves of two runs (their names on each chart) with a NaN among them, and a job whose
    # log path is not on a volume (the note instead of charts).
    logs = volume(settings) / "tb"
    for run, losses in [("train", [2.0, 1.0, float("nan"), 0.5]), ("eval", [1.5, 0.75])]:
        writer = SummaryWriter(str(logs / run))
        for step, loss in enumerate(losses):
            writer.add_scalar("loss", loss, step)
            writer.add_scalar("lr", 0.1 / (step + 1), step)
        writer.close()
    tensorboard = S.TensorboardConfig(enable=True, log_path="/workspace/tb")
    charted = submit_spec(alice, make_spec("true", tensorboard=tensorboard))
    noted = submit_spec(
        alice, make_spec("true", tensorboard=S.TensorboardConfig(enable=True, log_path="/tmp/tb"))
    )
    Job.objects.filter(pk__in=[charted.pk, noted.pk]).update(status=JobStatus.SUCCEEDED)
    page = audit.page
    log_in(page, "alice", "alice-password")
    for language in ("zh-hans", "en"):
        audit.use_language(language)
        page.goto(f"/jobs/{charted.public_id}/")
        expect(page.locator("#metric-charts figure.metric")).to_have_count(4)
        audit.check(f"job page with training metrics, {language}")
        # On a log scale: powers of ten beside each chart.
        page.click("#metrics-scale a")
        expect(page.locator("#metric-charts svg.metric-axis text").first).to_be_visible()
        audit.check(f"job page with training metrics on a log scale, {language}")
    page.goto(f"/jobs/{noted.public_id}/")
    expect(page.locator("#metrics-note")).to_be_visible()
    audit.check("job page with a training metrics note")
    page.set_viewport_size({"width": 390, "height": 800})
    page.goto(f"/jobs/{charted.public_id}/")
    audit.check("job page with training metrics on a phone")

    audit.assert_clean()


def test_every_wizard_step_with_its_errors_has_no_serious_violations(audit, alice):
    page = audit.page
    log_in(page, "alice", "alice-password")
    page.goto("/create/")
    page.click("#new-draft")
    page.wait_for_url(re.compile(r"/create/[0-9a-f-]+/basic/$"))
    page.fill("#id_name", "Not_Valid")
    page.click("#wizard-next")
    page.wait_for_selector("#step-errors")
    audit.check("basic step with errors")
    page.fill("#id_name", "bert-large")
    page.check("input[name=framework][value=PyTorchJob]")
    next_step(page, "image")
    page.fill("#id_image", "no-tag")
    # A token in the command: its warning on the field, and on the review step (left32).
    page.fill("#id_command", f"huggingface-cli login --token {HF} && torchrun train.py")
    page.click("#wizard-next")
    page.wait_for_selector("#step-errors")
    expect(page.locator("#command-secrets")).to_be_visible()
    audit.check("image step with errors and a secret warned of")
    page.fill("#id_image", "registry.example.com/train/pytorch:2.5")
    for slug in ("resources", "data"):
        next_step(page, slug)
        audit.check(f"{slug} step")
    page.fill("#id_mounts-0-mount_path", "/workspace")
    for slug in ("fault", "advanced", "submission", "review"):
        next_step(page, slug)
        audit.check(f"{slug} step")
    expect(page.locator("#plain-secrets-notice")).to_be_visible()

    audit.assert_clean()


def test_the_aiak_template_with_its_warning_and_the_drafts_have_no_serious_violations(
    audit, alice, settings
):
    settings.LOCAL_ACCELERATORS = f"{A800}=8"
    page = audit.page
    log_in(page, "alice", "alice-password")
    # AIAK mode, with a template too big for the pool (its warning shows).
    page.goto("/create/")
    page.click("#new-draft")
    page.wait_for_url(re.compile(r"/create/[0-9a-f-]+/basic/$"))
    page.check("input[name=creation_mode][value=aiak]")
    page.select_option("#id_training_mode", "Post-Pretrain")
    page.select_option("#id_training_method", "full")
    page.select_option("#id_aiak_template", "llama2-70b")
    expect(page.locator("#aiak-misfit")).to_be_visible()
    audit.check("basic step, AIAK template")
    page.goto("/create/")
    audit.check("drafts")

    audit.assert_clean()


def test_an_aiak_jobs_refilled_command_and_its_data_step_have_no_serious_violations(
    audit, alice, settings
):
    settings.LOCAL_ACCELERATORS = f"{A800}=8"
    page = audit.page
    log_in(page, "alice", "alice-password")
    page.goto("/create/")
    page.click("#new-draft")
    page.wait_for_url(re.compile(r"/create/[0-9a-f-]+/basic/$"))
    page.check("input[name=creation_mode][value=aiak]")
    page.select_option("#id_training_mode", "SFT")
    page.select_option("#id_training_method", "lora")
    page.select_option("#id_aiak_template", "llama2-7b")
    expect(page.locator("#aiak-fill")).to_contain_text("sft_llama2_7b.sh")
    page.click("#wizard-next")
    page.wait_for_url(re.compile(r"/image/$"))
    command = page.locator("#id_command").input_value()
    for key in ("DATA", "CHECKPOINT_LOAD", "CHECKPOINT_SAVE", "TOKENIZER"):
        command = command.replace(f"{key}_PATH=$USER_{key}_PATH", f"{key}_PATH=/root/pfs/x")
    command = command.replace("TENSORBOARD_PATH=$TENSORBOARD_PATH", "TENSORBOARD_PATH=/root/pfs/tb")
    page.fill("#id_command", command)
    page.click(".wizard-steps button[value='goto-basic']")
    page.wait_for_url(re.compile(r"/basic/$"))
    page.select_option("#id_aiak_template", "qwen1.5-7b")
    expect(page.locator("#aiak-fill")).to_contain_text("sft_qwen1_5_7b.sh")
    page.click("#wizard-next")
    page.wait_for_url(re.compile(r"/image/$"))
    page.locator("#aiak-refill summary").click()
    expect(page.locator("#aiak-refill-command")).to_be_visible()
    audit.check("image step, command refilled from a new AIAK template")
    page.click("#wizard-next")
    page.wait_for_url(re.compile(r"/resources/$"))
    page.click("#wizard-next")
    page.wait_for_url(re.compile(r"/data/$"))
    page.fill("#id_mounts-0-mount_path", "/workspace")
    page.click("#wizard-next")
    expect(page.locator("#aiak-mount-help")).to_be_visible()
    expect(page.locator("tr.mount-row").nth(0)).to_contain_text("/workspace/AIAK-Training-LLM")
    audit.check("data step of an AIAK job, a mount over its code refused")

    audit.assert_clean()


def test_a_draft_imported_from_a_request_with_its_notices_has_no_serious_violations(
    audit, alice, settings
):
    settings.LOCAL_ACCELERATORS = f"{A800}=8"
    # A body whose import says three things: an env made secret for its name, a field the
    # wizard has no place for, and no console part with how its roles were read (qa60; one
    # notice since left50). The notices' 知道了 sits on the warning's
    # yellow (left33: btn-outline-secondary there was 4.23:1, under WCAG AA's 4.5:1).
    body = {
        key: value
        for key, value in IMPORTED.items()
        if key not in ("datasources", "tensorboardConfig")
    }
    body["jobSpec"] = {
        **IMPORTED["jobSpec"],
        "hostNetwork": True,
        "envs": [{"name": "HF_TOKEN", "value": HF}],
    }
    page = audit.page
    log_in(page, "alice", "alice-password")
    for language in ("zh-hans", "en"):
        audit.use_language(language)
        page.goto("/create/")
        page.fill("#import-body", json.dumps(body, indent=2))
        page.select_option("#import-pool", "local")
        page.click("#import-submit")
        page.wait_for_url(re.compile(r"/create/[0-9a-f-]+/basic/$"))
        expect(page.locator("#import-notices p")).to_have_count(3)
        expect(page.locator("#import-notices-dismiss")).to_be_visible()
        audit.check(f"basic step of an imported draft with its notices, {language}")
        next_step(page, "image")
        expect(page.locator("#import-notices")).to_be_visible()
        audit.check(f"image step of an imported draft with its notices, {language}")

    audit.assert_clean()


def test_a_job_page_of_64_replicas_with_its_replica_list_has_no_serious_violations(audit, alice):
    from .test_big_jobs import finished

    job = finished(alice, 63)
    page = audit.page
    log_in(page, "alice", "alice-password")
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 800})
        page.goto(f"/jobs/{job.public_id}/?replica=worker-40")
        expect(page.locator("#log-replica-previous")).to_be_visible()
        audit.check(f"job page of 64 replicas, their log list, {width} px")

    audit.assert_clean()


def test_a_reviewers_admin_pages_have_no_serious_violations(audit, alice, reviewer):
    # A job whose log lines are wider than the page, and one waiting for review.
    ran = submit(alice, "for i in $(seq 1 30); do printf 'line-%s-%0300d\\n' $i 0; done")
    run_until(Worker(), lambda: status_of(ran) == JobStatus.SUCCEEDED)
    ReviewPolicy.objects.create(pk=1, mode=ReviewMode.ALL)
    job = submit(alice)
    page = audit.page
    log_in(page, "carol", "carol-password")
    for label, url in [
        ("admin job list", "/admin/jobs/job/"),
        ("admin job page", f"/admin/jobs/job/{job.pk}/change/"),
        ("admin job page of a job that ran", f"/admin/jobs/job/{ran.pk}/change/"),
        ("admin logs", f"/admin/jobs/job/{ran.pk}/logs/"),
        ("admin approve confirmation", f"/admin/jobs/job/{job.pk}/review/approve/"),
        ("admin reject confirmation", f"/admin/jobs/job/{job.pk}/review/reject/"),
        ("admin index, with the reports", "/admin/"),
        ("admin usage report", "/admin/jobs/job/usage/"),
        ("admin usage report with a bad date", "/admin/jobs/job/usage/?date_from=2026-02-30"),
    ]:
        page.goto(url)
        if "/change/" in url:  # the events, in Django's tabular inline
            expect(page.locator("#events-group tbody tr.has_original").first).to_be_visible()
        audit.check(label)

    audit.assert_clean()


def test_the_card_quota_form_with_its_user_search_open_has_no_serious_violations(
    audit, alice, superuser
):
    # qa115: select2's user and group boxes, and the search box it opens, had no name.
    page = audit.page
    log_in(page, "root", "root-password")
    page.goto("/admin/jobs/cardquota/add/")
    audit.check("card quota form")
    page.locator(".field-user .select2-selection").focus()
    page.keyboard.press("Enter")
    expect(page.locator(".select2-search__field")).to_be_focused()
    audit.check("card quota form, its user search open")

    audit.assert_clean()


def test_the_api_key_page_with_a_new_key_shown_has_no_serious_violations(audit, alice):
    page = audit.page
    log_in(page, "alice", "alice-password")
    page.goto("/account/keys/")
    audit.check("API keys, none yet")
    page.fill("input[name=description]", "nightly script")
    page.click("#api-key-create")
    page.wait_for_selector("#new-key")
    audit.check("API keys, a new key with its secret")
    page.click("#api-keys-revoke-all")
    page.wait_for_selector("#revoke-all-confirm")
    audit.check("API keys, revoke all asks first")
    page.goto("/account/password/")
    audit.check("change password, with the box to revoke the keys")

    audit.assert_clean()


def test_the_resource_pools_page_has_no_serious_violations_in_either_language(audit, alice, bob):
    # Waiting jobs of Alice's (listed, linked, more than the few shown) and Bob's (counted).
    for _ in range(7):
        submit(alice)
    submit(bob)
    page = audit.page
    log_in(page, "alice", "alice-password")
    for language in ("zh-hans", "en"):
        audit.use_language(language)
        page.goto("/pools/")
        expect(page.locator('section[data-pool="local"]')).to_be_visible()
        audit.check(f"resource pools, {language}")
    page.set_viewport_size({"width": 390, "height": 800})
    page.goto("/pools/")
    audit.check("resource pools on a phone")

    audit.assert_clean()


def test_the_help_page_has_no_serious_violations_in_either_language(audit, alice):
    page = audit.page
    log_in(page, "alice", "alice-password")
    for language in ("zh-hans", "en"):
        audit.use_language(language)
        page.goto("/help/")
        expect(page.locator("#hang-detection")).to_be_visible()
        audit.check(f"help, {language}")

    audit.assert_clean()


def test_my_usage_has_no_serious_violations_in_either_language(audit, alice):
    started = max(timezone.now() - timedelta(minutes=30), Period.this_month().starts_at)
    run_job(alice, started, started + timedelta(minutes=1), cards=2)
    Job.objects.filter(pk=run_job(alice, started, None, cards=0).pk).delete()  # a deleted job's row
    page = audit.page
    log_in(page, "alice", "alice-password")
    for language in ("zh-hans", "en"):
        audit.use_language(language)
        page.goto("/account/usage/")
        expect(page.locator("#usage-jobs-table tbody tr")).to_have_count(2)
        audit.check(f"my usage, {language}")
    page.goto("/account/usage/?date_from=2026-04-10&date_to=2026-04-01")
    audit.check("my usage with a bad period")
    page.set_viewport_size({"width": 390, "height": 800})
    page.goto("/account/usage/")
    audit.check("my usage on a phone")

    audit.assert_clean()


@pytest.mark.parametrize("language", ["zh-CN", "en-US"])
def test_at_400_percent_zoom_no_page_scrolls_sideways(browser, live_server, reviewer, language):
    # WCAG's reflow: 1280 pixels at 400% are 320 CSS pixels. The top bar's right half (language,
    # user name, My usage, API keys, Log out) did not wrap and widened every page.
    context = browser.new_context(
        base_url=live_server.url, locale=language, viewport={"width": 320, "height": 640}
    )
    page = context.new_page()
    try:
        log_in(page, "carol", "carol-password")
        for url in ["/", "/pools/", "/create/", "/account/usage/", "/account/keys/", "/help/"]:
            page.goto(url)
            expect(page.locator("#nav-api-keys")).to_be_visible()
            wide, screen = page.evaluate("[document.documentElement.scrollWidth, innerWidth]")
            assert wide <= screen, f"{url} is {wide} px wide on a {screen} px screen"
    finally:
        context.close()


def test_a_job_page_with_captured_call_stacks_has_no_serious_violations_in_either_language(
    audit, alice, reviewer, settings
):
    from jobs import spec as S
    from jobs.stacks import capture_requested

    from .test_hang_analysis import TRAIN, capture_taken, started

    (volume(settings) / "train.py").write_text(TRAIN)
    job = submit_spec(
        alice,
        make_spec(
            "/usr/bin/python3 /workspace/train.py",
            roles=[S.Role("master", 1), S.Role("worker", 2)],
        ),
    )
    worker = Worker()
    run_until(worker, lambda: started(job), what="every replica")
    capture_requested(job=job, actor=alice)
    capture_taken(worker, job)
    page = audit.page
    log_in(page, "alice", "alice-password")
    for language in ("zh-hans", "en"):
        audit.use_language(language)
        page.goto(f"/jobs/{job.public_id}/#hang")
        expect(page.locator("#hang .hang-group")).to_have_count(2)
        page.locator("#hang .hang-group details").first.click()  # which threads, unfolded
        audit.check(f"job page with call stacks, {language}")
    # Staff's page of its own.
    page.context.clear_cookies()
    log_in(page, "carol", "carol-password")
    page.goto(f"/jobs/{job.public_id}/hang/")
    expect(page.locator("#hang .hang-group")).to_have_count(2)
    audit.check("hang analysis page of staff")

    audit.assert_clean()


@pytest.mark.skipif(os.geteuid() != 0, reason="native frames are read by a worker run as root")
def test_a_job_page_with_native_frames_folded_and_unfolded_has_no_serious_violations(
    audit,
    alice,
    job_users_on,  # noqa: F811
):
    from jobs import spec as S
    from jobs.stacks import capture_requested

    from .test_hang_analysis import capture_taken, started
    from .test_hang_analysis_native import NATIVE_TRAIN

    (volume(job_users_on) / "train.py").write_text(NATIVE_TRAIN)
    job = submit_spec(
        alice,
        make_spec(
            "/usr/bin/python3 /workspace/train.py",
            roles=[S.Role("master", 1), S.Role("worker", 2)],
        ),
    )
    worker = Worker()
    run_until(worker, lambda: started(job), what="every replica")
    capture_requested(job=job, actor=alice)
    capture_taken(worker, job)
    page = audit.page
    log_in(page, "alice", "alice-password")
    for language in ("zh-hans", "en"):
        audit.use_language(language)
        page.goto(f"/jobs/{job.public_id}/#hang")
        page.reload()  # the same address again: only its #hang, without a reload, and folded anew
        native = page.locator("#hang details.hang-native").first
        expect(native).to_be_visible()
        audit.check(f"job page with native frames folded, {language}")
        native.locator("summary").click()
        expect(native.locator(".hang-native-frame").first).to_be_visible()
        audit.check(f"job page with native frames unfolded, {language}")

    audit.assert_clean()


def test_the_comparison_of_jobs_has_no_serious_violations_in_either_language_or_on_a_phone(
    audit, alice, settings
):
    from tensorboardX import SummaryWriter

    from jobs import spec as S

    jobs = []
    # 8, the most compared (jobs.compare.MAX_COMPARED): 7 with metrics, each its own line.
    sweep = [
        [2.0, 1.0, 0.0],
        [2.0, 1.5],
        [3.0],
        [2.5, 1.2],
        [1.8, 0.9],
        [2.2, 1.1, 0.7],
        [2.9, 2.0],
    ]
    for n, losses in enumerate(sweep):
        writer = SummaryWriter(str(volume(settings) / f"run-{n}"))
        for step, loss in enumerate(losses):
            writer.add_scalar("loss", loss, step)
        writer.close()
        tensorboard = S.TensorboardConfig(enable=True, log_path=f"/workspace/run-{n}")
        jobs.append(
            submit_spec(alice, make_spec(f"python train.py --run {n}", tensorboard=tensorboard))
        )
    jobs.append(submit(alice, "python train.py --no-metrics"))
    address = "/compare/?" + "&".join(f"job={job.public_id}" for job in jobs)
    page = audit.page
    log_in(page, "alice", "alice-password")
    for language in ("zh-hans", "en"):
        audit.use_language(language)
        page.goto(address)
        expect(page.locator("#compare-charts figure polyline")).to_have_count(7)
        audit.check(f"comparison of 8 jobs, {language}")
    # The changed word of each command marked, said to a screen reader, and copied without.
    changed = page.locator("#compare-table ins.diff-word").first
    expect(changed).to_have_text("1")
    mark = changed.get_attribute("data-mark")
    assert mark in ("added:", "新增：")
    assert changed.evaluate("e => getComputedStyle(e, '::before').content") == f'" [{mark} "'
    copied = changed.locator("xpath=ancestor::pre").inner_text()
    assert "+python train.py --run 1" in copied and mark not in copied
    page.click("#compare-scale a")
    expect(page.locator("#compare-charts .metric-left-out")).to_have_count(1)
    expect(page.locator("#compare-charts svg.metric-axis text").first).to_be_visible()
    audit.check("comparison on a log scale")
    page.click("#compare-switch")
    audit.check("comparison, every field")
    page.goto(f"/compare/?job={jobs[0].public_id}")
    audit.check("comparison of one job (the count said)")
    page.set_viewport_size({"width": 390, "height": 800})
    page.goto(address)
    audit.check("comparison on a phone")

    audit.assert_clean()
