"""What a screen reader is given in the pages' HTML alone: names, roles, states and where focus
starts (qa84, a keyboard and screen-reader pass). What happens in the browser is in
test_keyboard_browser.py; axe's judgement in test_accessibility_browser.py."""

from __future__ import annotations

import re

from django.urls import reverse

from jobs import wizard as W
from jobs.logs import replica_log_path
from jobs.models import JobReplica
from tests.test_job_pages import submit
from tests.test_wizard import (
    _local_pool,  # noqa: F401 (autouse fixture)
    advanced_data,
    complete_steps,
    data_data,
    image_data,
    new_draft,
    post_step,
    step_url,
)


def tag(page: str, pattern: str) -> str:
    """The one start tag matching `pattern` (a regex of something inside it)."""
    [found] = re.findall(rf"<[a-z0-9]+\b[^>]*{pattern}[^>]*>", page)
    return found


def test_a_refused_log_in_is_an_alert_both_fields_point_to_with_focus_on_the_first(client, alice):
    page = client.post(
        reverse("login"), {"username": "alice", "password": "wrong"}
    ).content.decode()

    alert = re.search(r'<div[^>]*id="login-error"[^>]*>(.*?)</div>', page, re.S)
    assert 'role="alert"' in alert.group(0)
    assert "请输入正确的用户名和密码。注意两者可能都区分大小写。" in alert.group(1)
    for name in ("username", "password"):
        field = tag(page, f'name="{name}"')
        assert 'aria-invalid="true"' in field and 'aria-describedby="login-error"' in field
    # Focus comes back to 用户名, which now says the alert with it.
    assert "autofocus" in tag(page, 'name="username"')
    # Said once, not again as crispy's own box.
    assert page.count("请输入正确的用户名和密码") == 1


def test_a_log_in_page_not_yet_sent_marks_no_field_wrong(client, db):
    page = client.get(reverse("login")).content.decode()
    assert "aria-invalid" not in page and "login-error" not in page


def test_the_log_box_and_the_api_request_are_regions_named_for_what_they_hold(alice, alice_client):
    job = submit(alice)
    JobReplica.objects.create(job=job, role="master", index=0)
    log = replica_log_path(job.public_id, "master-0")
    log.parent.mkdir(parents=True)
    log.write_bytes(b"hello\n")

    page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()

    log_box = tag(page, 'id="log-lines"')
    assert 'role="region"' in log_box and 'aria-label="master-0 的日志"' in log_box
    request = tag(page, 'id="api-request"')
    assert 'role="region"' in request and 'aria-label="API 请求 (JSON)"' in request
    english = alice_client.get(
        reverse("job-detail", args=[job.public_id]), headers={"Accept-Language": "en"}
    ).content.decode()
    assert 'aria-label="master-0\'s log"' in tag(english, 'id="log-lines"')


def test_the_reviews_request_is_a_named_region_under_a_heading_without_the_copy_button(
    alice_client,
):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft)

    page = alice_client.get(step_url(draft, W.REVIEW)).content.decode()

    request = tag(page, 'id="request-json"')
    assert 'role="region"' in request and 'aria-label="将发送的请求 (JSON)"' in request
    heading = re.search(r"<h2[^>]*>将发送的请求.*?</h2>", page, re.S).group(0)
    assert "<button" not in heading
    assert 'data-copy-target="#request-json"' in page


def test_the_language_buttons_say_which_is_on_and_the_top_nav_has_a_name(alice_client):
    draft = new_draft(alice_client)
    for address in (reverse("job-list"), step_url(draft, W.BASIC)):
        page = alice_client.get(address).content.decode()
        assert 'aria-pressed="true"' in tag(page, 'data-language="zh-hans"')
        assert 'aria-pressed="false"' in tag(page, 'data-language="en"')
        assert 'aria-label="主导航"' in tag(page, 'class="navbar ')


def test_the_queue_tasks_required_counts_are_required_for_a_screen_reader_too(alice_client):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.SUBMISSION)

    page = alice_client.get(step_url(draft, W.SUBMISSION)).content.decode()

    for name in ("total", "concurrency"):
        assert 'aria-required="true"' in tag(page, f'name="{name}"')


def test_job_rows_of_the_same_name_have_checkboxes_told_apart_by_the_job_id(alice, alice_client):
    jobs = [submit(alice, name="same-name") for _ in range(2)]

    page = alice_client.get(reverse("job-list")).content.decode()

    names = [
        re.search(r'aria-label="([^"]+)"', tag(page, f'id="select-{job.public_id}"')).group(1)
        for job in jobs
    ]
    assert names == [f"选择 same-name（{job.public_id}）" for job in jobs]


def test_an_env_rows_remove_button_is_named_after_its_variable_and_the_table_after_its_heading(
    alice_client,
):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.IMAGE)
    data = image_data(envs=[("TENSOR_MODEL_PARALLEL_SIZE", "2"), ("", "")])
    post_step(alice_client, draft, W.IMAGE, data, action="save")

    page = alice_client.get(step_url(draft, W.IMAGE)).content.decode()

    removes = re.findall(r'value="remove-row-\d+"[^>]*aria-label="([^"]+)"', page)
    assert removes == ["删除 TENSOR_MODEL_PARALLEL_SIZE", "删除 2"]  # a row without a name
    assert 'aria-labelledby="env-heading"' in tag(page, 'id="env-table"')
    assert re.search(r'<h2[^>]*id="env-heading"[^>]*>环境变量</h2>', page)


def test_a_row_added_on_a_step_refused_once_is_not_called_wrong_until_the_step_is_sent_again(
    alice_client,
):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.DATA)
    refused = data_data([("hostpath", "scratch", "")])
    assert post_step(alice_client, draft, W.DATA, refused).status_code == 200
    fixed = data_data([("hostpath", "scratch", "/workspace")])
    post_step(alice_client, draft, W.DATA, fixed, action="add-row")

    page = alice_client.get(step_url(draft, W.DATA)).content.decode()

    assert page.count('class="mount-row"') == 2
    assert "aria-invalid" not in page and 'id="step-errors"' not in page
    # The next post of the step judges it: left empty, it is said wrong.
    draft.refresh_from_db()
    sent = data_data([("hostpath", "scratch", "/workspace"), ("hostpath", "scratch", "")])
    post_step(alice_client, draft, W.DATA, sent, action="save")
    page = alice_client.get(step_url(draft, W.DATA)).content.decode()
    assert 'aria-invalid="true"' in tag(page, 'name="mounts-1-mount_path"')


def test_a_refused_fields_error_is_named_before_its_help_text_on_a_wizard_step(alice_client):
    # A screen reader reads aria-describedby's ids in order: Django's (help, then error) had
    # a refused field read its whole help first and why it was refused last (qa84).
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.ADVANCED)
    refused = advanced_data(alert_emails="not an address")

    page = post_step(alice_client, draft, W.ADVANCED, refused).content.decode()

    described = 'aria-describedby="id_alert_emails_error id_alert_emails_helptext"'
    assert described in tag(page, 'name="alert_emails"')
    # A group of ticks (a fieldset) alike: 告警 with an address and no event.
    assert 'aria-describedby="id_alert_items_error id_alert_items_helptext"' in page


def test_a_refused_password_confirmation_names_its_error_before_its_help_text(alice_client):
    answer = alice_client.post(
        reverse("password-change"),
        {"old_password": "wrong", "new_password1": "short", "new_password2": "other"},
    )

    field = tag(answer.content.decode(), 'name="new_password2"')
    assert 'aria-describedby="id_new_password2_error id_new_password2_helptext"' in field


def test_every_id_a_wizard_fields_description_names_is_on_its_step_shown_or_refused(
    alice_client,
):
    # qa93: the local pool's mount rows named node-disk-help, a paragraph drawn only on a pool
    # with a node's local disk: a screen reader read nothing for it, and axe cannot tell.
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft)
    pages = {}
    for step in W.STEPS:
        pages[step] = alice_client.get(step_url(draft, step)).content.decode()
    for step in W.FORM_STEPS:
        # Refused: every field's problem shown, each described by it too.
        refused = data_data(mounts=(("hostpath", "", ""),)) if step == W.DATA else {}
        pages[f"{step} refused"] = post_step(alice_client, draft, step, refused).content.decode()
    for shown, page in pages.items():
        ids = set(re.findall(r'\bid="([^"]+)"', page))
        for described in re.findall(r'aria-describedby="([^"]+)"', page):
            missing = [i for i in described.split() if i not in ids]
            assert not missing, (shown, described)
