"""Drafts and jobs stored before a wizard rule was added, opened in the wizard today. Session
21 added two (seeds21): a 任务hang (jobHang) alert needs hang detection (jobs.spec), and a
queue task needs its 投递目标队列 (the 投递方式 step), where an empty one used to fall back to
step 1's queue. A draft saved before either is marked done on every step and resumes at its
review: the review lists the problem, and its link opens the step with the message on the
field (a step marked done showed it without any). A copy of such a job opens that step with
its message, which names the step where hang detection is turned on."""

from __future__ import annotations

import copy
import re
import uuid

import pytest
from django.urls import reverse

from jobs import spec as S
from jobs import wizard as W
from jobs.models import Draft, Job, JobStatus
from jobs.services import jobs_submit

from .test_wizard import (
    A800,
    advanced_data,
    basic_data,
    complete_steps,
    field_errors,
    new_draft,
    post_step,
    step_url,
    submission_data,
)
from .test_wizard_import import BODY, CHANNELS, error_texts, import_body
from .test_wizard_seed_parity import HANG_ALERT_REFUSED, HANG_ALERT_REFUSED_IN_A_REQUEST


@pytest.fixture(autouse=True)
def _local_pool(settings, tmp_path):
    settings.LOCAL_ACCELERATORS = f"{A800}=8"
    settings.LOCAL_VOLUMES = f"scratch={tmp_path}"


def saved_before_the_rules(client, *, fault=None, submission=None) -> Draft:
    """A draft passed through every step, then stored as an older console left it: the
    steps given replaced by what it took then, every step still marked done."""
    draft = new_draft(client)
    complete_steps(
        client,
        draft,
        **{
            W.FAULT: {"hang_detection": "on", "hang_minutes": "30"},
            W.ADVANCED: advanced_data(alert_items=["jobHang"], alert_emails="ops@example.com"),
        },
    )
    draft.refresh_from_db()
    data = copy.deepcopy(draft.data)
    if fault is not None:
        data[W.FAULT] = fault
    if submission is not None:
        data[W.SUBMISSION] = submission
    Draft.objects.filter(pk=draft.pk).update(data=data)
    assert draft.completed_steps == W.FORM_STEPS
    return draft


def problem_links(page: str) -> list[tuple[str, str]]:
    box = re.search(r'id="review-problems".*?</ul>', page, re.S)
    assert box, "the review lists problems"
    return re.findall(r'<li><a href="([^"]+)">[^<]+</a>: ([^<]+)</li>', box.group(0))


def resumed(client, draft) -> str:
    """Where My drafts' Resume link for `draft` leads."""
    page = client.get(reverse("wizard-start")).content.decode()
    return re.search(rf'href="(/create/{draft.id}/[a-z]+/)"', page).group(1)


def test_a_draft_saved_with_a_hang_alert_and_no_hang_detection_resumes_at_its_review_whose_link_opens_step_6_with_the_message(
    alice_client,
):
    draft = saved_before_the_rules(alice_client, fault={})

    review_url = resumed(alice_client, draft)
    review = alice_client.get(review_url)
    [(link, message)] = problem_links(review.content.decode())
    opened = alice_client.get(link)

    assert review_url == step_url(draft, W.REVIEW)
    assert 'id="wizard-submit" disabled' in review.content.decode()
    assert link == step_url(draft, W.ADVANCED) + "?check=1"
    assert opened.status_code == 200
    assert field_errors(opened, "id_alert_items") == [HANG_ALERT_REFUSED]
    assert "autofocus" in re.search(
        r'<input[^>]*id="id_alert_items_0"[^>]*>', opened.content.decode()
    ).group(0)
    assert Job.objects.count() == 0


def test_turning_hang_detection_on_in_step_5_lets_such_a_draft_submit(alice_client, alice):
    draft = saved_before_the_rules(alice_client, fault={})

    fixed = post_step(alice_client, draft, W.FAULT, {"hang_detection": "on", "hang_minutes": "30"})
    submitted = alice_client.post(reverse("wizard-submit", args=[draft.id]))

    assert fixed.status_code == 302
    job = Job.objects.get()
    assert submitted.status_code == 302
    assert submitted["Location"] == reverse("job-detail", args=[job.public_id])
    assert job.job_spec().alert.items == ["jobHang"]
    assert job.job_spec().fault_tolerance_config.enabled_hang_detection is True


def test_a_queue_task_draft_saved_without_a_target_queue_says_so_on_step_7_and_submits_once_one_is_chosen(
    alice_client,
):
    before = submission_data(mode="queue", target_queue="", total="2", concurrency="1")
    draft = saved_before_the_rules(alice_client, submission={k: [v] for k, v in before.items()})

    [(link, message)] = problem_links(alice_client.get(step_url(draft, W.REVIEW)).content.decode())
    opened = alice_client.get(link)
    chosen = post_step(alice_client, draft, W.SUBMISSION, {**before, "target_queue": "default"})
    submitted = alice_client.post(reverse("wizard-submit", args=[draft.id]))

    assert link == step_url(draft, W.SUBMISSION) + "?check=1"
    assert message == "该步骤有错误，请打开修改。"
    assert field_errors(opened, "id_target_queue") == ["这个字段是必填项。"]
    assert chosen.status_code == 302
    assert submitted.status_code == 302
    assert list(Job.objects.values_list("queue", flat=True)) == ["default", "default"]


def form_hidden_inputs(page: str) -> dict[str, str]:
    """What the step's form sends besides its fields (basis, and check on a checked step)."""
    form = re.search(r'<form id="wizard-form".*?</form>', page, re.S).group(0)
    return dict(re.findall(r'<input type="hidden" name="([a-z]+)" value="([^"]*)">', form))


def test_switching_to_english_on_a_step_opened_from_a_review_problem_says_its_message_in_english(
    alice_client,
):
    draft = saved_before_the_rules(alice_client, fault={})
    [(link, _message)] = problem_links(alice_client.get(step_url(draft, W.REVIEW)).content.decode())
    opened = alice_client.get(link).content.decode()
    typed = advanced_data(alert_items=["jobHang"], alert_emails="ops@example.com")

    switched = alice_client.post(
        link, {**typed, **form_hidden_inputs(opened), "action": "language-en"}
    )
    page = alice_client.get(switched["Location"])

    assert switched.status_code == 302
    assert switched["Location"] == step_url(draft, W.ADVANCED) + "?check=1"
    assert field_errors(page, "id_alert_items") == [
        "Alerting on “Job hangs” needs hang detection: turn on Hang detection in step 5 (Fault "
        "tolerance & diagnostics), or leave this event out. Without it no hang is ever detected."
    ]


def test_with_htmx_the_language_switch_on_a_step_opened_from_a_review_problem_keeps_it_checked(
    alice_client,
):
    draft = saved_before_the_rules(alice_client, fault={})
    [(link, _message)] = problem_links(alice_client.get(step_url(draft, W.REVIEW)).content.decode())
    opened = alice_client.get(link).content.decode()
    typed = advanced_data(alert_items=["jobHang"], alert_emails="ops@example.com")

    switched = alice_client.post(
        link,
        {**typed, **form_hidden_inputs(opened), "action": "language-en"},
        headers={"HX-Request": "true"},
    )

    assert switched.status_code == 200
    assert switched["HX-Redirect"] == step_url(draft, W.ADVANCED) + "?check=1"


def test_a_step_left_and_opened_again_from_the_stepper_shows_no_message_until_it_is_sent(
    alice_client,
):
    draft = saved_before_the_rules(alice_client, fault={})
    [(link, _message)] = problem_links(alice_client.get(step_url(draft, W.REVIEW)).content.decode())
    opened = alice_client.get(link).content.decode()
    typed = advanced_data(alert_items=["jobHang"], alert_emails="ops@example.com")

    left = alice_client.post(link, {**typed, **form_hidden_inputs(opened), "action": "back"})

    assert left.status_code == 302
    assert left["Location"] == step_url(draft, W.FAULT) + "?fixing=1"  # the way back goes along


def test_a_step_opened_from_the_stepper_still_shows_no_message_until_it_is_sent(alice_client):
    draft = saved_before_the_rules(alice_client, fault={})

    page = alice_client.get(step_url(draft, W.ADVANCED))

    assert page.status_code == 200
    assert field_errors(page, "id_alert_items") == []


def stored_job(owner) -> Job:
    """A finished job whose stored spec alerts on 任务hang without hang detection, as a job
    submitted before the rule was stored."""
    spec = S.JobSpec(
        name="hang-alerted",
        resource_pool_id="local",
        image="python:3.12",
        command="true",
        roles=[S.Role("master", 1, A800, 1)],
        datasources=[S.Datasource("hostpath", "scratch", "/workspace")],
        alert=S.AlertConfig(items=["jobFailed"], emails=["ops@example.com"]),
    )
    [job] = jobs_submit(owner=owner, spec=spec, submit_key=str(uuid.uuid4()))
    stored = copy.deepcopy(job.spec)
    stored["alertConfig"]["alertItems"] = ["jobFailed", "jobHang"]
    Job.objects.filter(pk=job.pk).update(spec=stored, status=JobStatus.SUCCEEDED)
    job.refresh_from_db()
    return job


def test_a_copy_of_a_job_stored_with_a_hang_alert_and_no_detection_opens_step_6_with_the_message(
    alice_client, alice
):
    job = stored_job(alice)

    copied = alice_client.post(reverse("job-copy", args=[job.public_id]))
    draft = Draft.objects.get(source_job=job)
    review = alice_client.get(step_url(draft, W.REVIEW))
    step_6 = alice_client.get(step_url(draft, W.ADVANCED))
    step_5 = alice_client.get(step_url(draft, W.FAULT))

    assert copied.status_code == 302
    assert review.status_code == 302  # not done: the review sends the user to the step
    assert review["Location"] == step_url(draft, W.ADVANCED)
    assert field_errors(step_6, "id_alert_items") == [HANG_ALERT_REFUSED]
    assert step_5.status_code == 200  # where the message says to go: open to the user
    assert W.ADVANCED not in draft.completed_steps
    assert Job.objects.count() == 1


def test_importing_a_body_stored_with_a_hang_alert_and_no_detection_names_the_field_and_makes_no_draft(
    alice_client,
):
    stored = copy.deepcopy({**BODY, **CHANNELS})
    del stored["faultToleranceConfig"]["enabledHangDetection"]

    r = import_body(alice_client, stored)

    assert r.status_code == 200
    assert f"alertConfig.alertItems: {HANG_ALERT_REFUSED_IN_A_REQUEST}" in error_texts(r)
    assert not Draft.objects.exists()


# -- back to the review once fixed (left22) ----------------------------------------------------


def test_a_hang_alert_fixed_on_step_5_goes_straight_back_to_the_review_without_javascript(
    alice_client,
):
    draft = saved_before_the_rules(alice_client, fault={})
    [(link, _message)] = problem_links(alice_client.get(step_url(draft, W.REVIEW)).content.decode())
    opened = alice_client.get(link).content.decode()
    typed = advanced_data(alert_items=["jobHang"], alert_emails="ops@example.com")

    # Its message says to turn hang detection on in step 5: 上一步 goes there.
    left = alice_client.post(link, {**typed, **form_hidden_inputs(opened), "action": "back"})
    step_5 = alice_client.get(left["Location"])
    fixed = alice_client.post(
        left["Location"],
        {
            "hang_detection": "on",
            "hang_minutes": "30",
            **form_hidden_inputs(step_5.content.decode()),
            "action": "to-review",
        },
    )
    review = alice_client.get(fixed["Location"])

    assert left.status_code == 302 and left["Location"] == step_url(draft, W.FAULT) + "?fixing=1"
    assert 'id="wizard-to-review"' in step_5.content.decode()
    assert field_errors(step_5, "id_hang_detection") == []  # no message of its own
    assert fixed.status_code == 302
    assert fixed["Location"] == step_url(draft, W.REVIEW)
    assert review.status_code == 200
    assert 'id="review-problems"' not in review.content.decode()
    draft.refresh_from_db()
    assert draft.completed_steps == W.FORM_STEPS  # step 6 checked again and marked done
    submitted = alice_client.post(reverse("wizard-submit", args=[draft.id]))
    assert submitted.status_code == 302
    assert Job.objects.get().job_spec().fault_tolerance_config.enabled_hang_detection is True


def test_with_htmx_save_and_back_to_confirm_swaps_in_the_review_and_its_address(alice_client):
    draft = saved_before_the_rules(alice_client, fault={})
    [(link, _message)] = problem_links(alice_client.get(step_url(draft, W.REVIEW)).content.decode())
    opened = alice_client.get(link).content.decode()
    typed = advanced_data()  # fixed here: the alert left out

    r = alice_client.post(
        link,
        {**typed, **form_hidden_inputs(opened), "action": "to-review"},
        headers={"HX-Request": "true"},
    )

    assert r.status_code == 200
    assert r["HX-Push-Url"] == step_url(draft, W.REVIEW)
    page = r.content.decode()
    assert 'id="wizard-submit"' in page and 'id="wizard-submit" disabled' not in page


def test_save_and_back_to_confirm_with_the_problem_not_fixed_opens_the_step_still_wrong(
    alice_client,
):
    draft = saved_before_the_rules(alice_client, fault={})
    [(link, _message)] = problem_links(alice_client.get(step_url(draft, W.REVIEW)).content.decode())
    opened = alice_client.get(link).content.decode()
    typed = advanced_data(alert_items=["jobHang"], alert_emails="ops@example.com")
    left = alice_client.post(link, {**typed, **form_hidden_inputs(opened), "action": "back"})
    step_5 = alice_client.get(left["Location"]).content.decode()

    # Step 5 sent as it was, hang detection still off.
    r = alice_client.post(left["Location"], {**form_hidden_inputs(step_5), "action": "to-review"})
    again = alice_client.get(r["Location"])

    assert r.status_code == 302
    assert r["Location"] == step_url(draft, W.ADVANCED) + "?check=1"
    assert field_errors(again, "id_alert_items") == [HANG_ALERT_REFUSED]
    assert 'id="wizard-to-review"' in again.content.decode()
    assert Job.objects.count() == 0


@pytest.mark.parametrize("htmx", [False, True], ids=["plain", "htmx"])
def test_save_and_back_to_confirm_refused_on_its_own_step_keeps_the_way_back(alice_client, htmx):
    draft = saved_before_the_rules(alice_client, fault={})
    [(link, _message)] = problem_links(alice_client.get(step_url(draft, W.REVIEW)).content.decode())
    opened = alice_client.get(link).content.decode()
    typed = advanced_data(alert_items=["jobHang"], alert_emails="ops@example.com")

    # Sent with the hang alert still on and hang detection off: refused here.
    r = alice_client.post(
        link,
        {**typed, **form_hidden_inputs(opened), "action": "to-review"},
        headers={"HX-Request": "true"} if htmx else {},
    )

    assert r.status_code == 200
    assert field_errors(r, "id_alert_items") == [HANG_ALERT_REFUSED]
    page = r.content.decode()
    assert 'id="wizard-to-review"' in page
    assert form_hidden_inputs(page)["fixing"] == "1"
    assert Job.objects.count() == 0


@pytest.mark.parametrize("htmx", [False, True], ids=["plain", "htmx"])
def test_fixing_typed_by_hand_on_a_fresh_draft_leaves_a_plain_step_and_the_next_without_errors(
    alice_client, htmx
):
    # Review 24: ?fixing=1 typed on a fresh draft offered 保存并返回确认, which opened the next
    # step, never reached, with every one of its messages.
    draft = new_draft(alice_client)
    hx = {"HX-Request": "true"} if htmx else {}

    opened = alice_client.get(step_url(draft, W.BASIC) + "?fixing=1", headers=hx)
    sent = alice_client.post(
        step_url(draft, W.BASIC) + "?fixing=1",
        {**basic_data(), "fixing": "1", "action": "to-review"},  # a form made by hand
        headers=hx,
    )

    assert opened.status_code == 200
    assert 'id="wizard-to-review"' not in opened.content.decode()
    if htmx:
        assert sent.status_code == 200
        assert sent["HX-Push-Url"] == step_url(draft, W.IMAGE)
        shown = sent
    else:
        assert sent.status_code == 302 and sent["Location"] == step_url(draft, W.IMAGE)
        shown = alice_client.get(sent["Location"])
    page = shown.content.decode()
    assert 'name="command"' in page
    assert re.findall(r'class="invalid-feedback[^"]*"[^>]*>\s*\S', page) == []
    assert 'id="wizard-to-review"' not in page and 'name="fixing"' not in page
    draft.refresh_from_db()
    assert draft.completed_steps == [W.BASIC]


def test_fixing_on_a_draft_that_reached_its_review_still_offers_the_way_back(alice_client):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft)

    page = alice_client.get(step_url(draft, W.DATA) + "?fixing=1").content.decode()

    assert 'id="wizard-to-review"' in page


def test_a_step_not_reached_from_a_review_problem_offers_no_way_straight_back(alice_client):
    draft = saved_before_the_rules(alice_client, fault={})

    page = alice_client.get(step_url(draft, W.FAULT)).content.decode()

    assert 'id="wizard-to-review"' not in page
    assert "fixing" not in form_hidden_inputs(page)
