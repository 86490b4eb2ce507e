"""Items of the seeds (000: AIHC's 创建训练任务 page; 004: the second console's page) that the
wizard lacked or worded otherwise, found by the seed audit of session 21: each says in the
wizard what the seed says, in Chinese and in English."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from jobs import spec as S
from jobs import wizard as W
from jobs.models import Draft

from .fake_aihc import FakeAihc, configure
from .test_aihc_views import aihc_steps
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
from .test_wizard_import import import_body, review_body

SEED_001 = json.loads(
    (Path(__file__).parent / "data" / "seed001_create_job_request.json").read_text()
)


@pytest.fixture(autouse=True)
def _local_pool(settings, tmp_path):
    settings.LOCAL_ACCELERATORS = f"{A800}=8"
    settings.LOCAL_VOLUMES = f"scratch={tmp_path}"


def help_text(response, field_id: str) -> str:
    found = re.search(
        rf'id="{field_id}_helptext" class="form-text">([^<]+)<', response.content.decode()
    )
    assert found, f"{field_id} has no help text"
    return html.unescape(found.group(1))


def label_of(response, field_id: str) -> str:
    found = re.search(
        rf'<label for="{field_id}" class="([^"]*)">(.*?)</label>', response.content.decode()
    )
    assert found, f"{field_id} has no label"
    return found.group(0)


@pytest.fixture
def draft_at(alice_client):
    def at(step: str):
        draft = new_draft(alice_client)
        complete_steps(alice_client, draft, upto=step)
        return draft

    return at


# -- 投递方式 (seed 004): 投递目标队列 is 队列任务必填 ----------------------------------------


def test_a_queue_task_without_a_target_queue_is_refused_on_that_field(alice_client, draft_at):
    draft = draft_at(W.SUBMISSION)

    r = post_step(alice_client, draft, W.SUBMISSION, submission_data(mode="queue", target_queue=""))

    assert r.status_code == 200
    assert field_errors(r, "id_target_queue") == ["这个字段是必填项。"]
    draft.refresh_from_db()
    assert W.SUBMISSION not in draft.completed_steps


def test_a_standalone_job_ignores_an_empty_target_queue(alice_client, draft_at):
    draft = draft_at(W.SUBMISSION)

    r = post_step(alice_client, draft, W.SUBMISSION, submission_data(target_queue=""))

    assert r.status_code == 302
    assert r["Location"] == step_url(draft, W.REVIEW)


def test_the_target_queue_is_marked_required_as_the_groups_two_counts_are(alice_client, draft_at):
    page = alice_client.get(step_url(draft_at(W.SUBMISSION), W.SUBMISSION))

    for field_id in ("id_target_queue", "id_total", "id_concurrency"):
        assert '<span class="asteriskField">*</span>' in label_of(page, field_id)
    assert "投递目标队列" in label_of(page, "id_target_queue")


# -- help texts: the seeds' notes -------------------------------------------------------


def test_the_job_name_rule_says_in_english_too_that_a_name_ends_with_a_lowercase_letter(
    alice_client, draft_at
):
    """Seed 000: 结尾必须是小写字母或数字. qa72: the English said "a letter or digit", so
    `job-A` ended as the rule said and was refused all the same, for its capital."""
    draft = draft_at(W.BASIC)
    alice_client.cookies["django_language"] = "zh-hans"
    chinese = help_text(alice_client.get(step_url(draft, W.BASIC)), "id_name")
    refused_in_chinese = field_errors(
        post_step(alice_client, draft, W.BASIC, basic_data(name="job-A")), "id_name"
    )
    alice_client.cookies["django_language"] = "en"
    english = help_text(alice_client.get(step_url(draft, W.BASIC)), "id_name")
    refused_in_english = field_errors(
        post_step(alice_client, draft, W.BASIC, basic_data(name="job-A")), "id_name"
    )

    assert "结尾必须是小写字母或数字" in chinese
    assert "结尾必须是小写字母或数字" in refused_in_chinese[0]
    assert english == (
        "Lowercase letters, digits and '-'; starts with a lowercase letter, ends with a "
        "lowercase letter or digit; 1-50 characters."
    )
    assert refused_in_english == [
        "Job names use lowercase letters, digits and '-', start with a lowercase letter, end "
        "with a lowercase letter or digit, and are 1-50 characters long. Use lowercase "
        "instead: “a”."
    ]
    # Copy edit: no space before a full-width comma ("以及 - ，且"), one between Chinese and
    # digits ("长度1-50字符").
    assert refused_in_chinese == [
        "任务名称支持小写字母、数字以及 -，且开头必须是小写字母，结尾必须是小写字母或数字，"
        "长度 1-50 个字符。请改用小写字母：“a”。"
    ]


def test_hang_detection_says_what_bccl_writes_to_the_log_when_a_job_hangs(
    alice_client, alice_en, draft_at
):
    draft = draft_at(W.FAULT)
    alice_client.cookies["django_language"] = "zh-hans"
    chinese = help_text(alice_client.get(step_url(draft, W.FAULT)), "id_hang_detection")
    alice_client.cookies["django_language"] = "en"
    english = help_text(alice_client.get(step_url(draft, W.FAULT)), "id_hang_detection")

    assert "在任务事件中记录" in chinese
    assert (
        "集成了百度集合通信库 BCCL 时，任务 hang 时还会同步在日志中记录集合通信状态信息" in chinese
    )
    assert "its communication state is also written to the log when the job hangs" in english


def test_the_timeout_says_it_keeps_a_job_from_holding_its_cards_and_its_default(
    alice_client, draft_at
):
    page = alice_client.get(step_url(draft_at(W.ADVANCED), W.ADVANCED))

    assert help_text(page, "id_timeout_minutes") == (
        "从启动算起，超过该时长由平台强制停止，避免任务一直占卡。留空即默认 30 天（43200 分钟）。"
    )


def test_alerts_name_their_channels_and_say_the_console_sends_no_sms(alice_client, draft_at):
    page = alice_client.get(step_url(draft_at(W.ADVANCED), W.ADVANCED))

    text = help_text(page, "id_alert_items")
    assert "邮件和 Webhook" in text
    assert "飞书/Lark、企业微信、钉钉或 Slack 群机器人" in text
    assert "控制台本身不发送短信" in text


def test_the_alerts_say_before_any_refusal_that_hang_and_fault_tolerance_alerts_need_step_5(
    alice_client, alice_en, draft_at
):
    # qa72: the local pool refuses “Job restarted by fault tolerance” without fault tolerance (only a
    # restart sends it), but the help named only the hang alert's switch.
    draft = draft_at(W.ADVANCED)
    alice_client.cookies["django_language"] = "zh-hans"
    chinese = help_text(alice_client.get(step_url(draft, W.ADVANCED)), "id_alert_items")
    alice_client.cookies["django_language"] = "en"
    english = help_text(alice_client.get(step_url(draft, W.ADVANCED)), "id_alert_items")

    assert chinese.endswith(
        "“任务hang”需在第 5 步（容错&诊断）开启任务hang检测。"
        "“任务发生容错”只在容错（同一步，仅支持 PyTorch 任务）重启任务时发出。"
    )
    assert english.endswith(
        "“Job hangs” needs hang detection, on step 5 (Fault tolerance & diagnostics). "
        "“Job restarted by fault tolerance” comes only when fault tolerance (the same step; PyTorch "
        "jobs only) restarts the job."
    )


def test_the_alerts_on_an_aihc_pool_say_aihc_sends_them_by_its_notify_policy_not_the_console(
    alice_client, aihc_pool
):
    # left55: it said the console sends them by email and webhook, which the AIHC pool refuses.
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.ADVANCED, **aihc_steps())
    alice_client.cookies["django_language"] = "zh-hans"
    chinese = help_text(alice_client.get(step_url(draft, W.ADVANCED)), "id_alert_items")
    alice_client.cookies["django_language"] = "en"
    english = help_text(alice_client.get(step_url(draft, W.ADVANCED)), "id_alert_items")

    assert chinese.startswith(
        "告警由百舸 AIHC 按下方的通知策略发送（邮件、短信、电话、钉钉、企业微信或飞书，以通知策略为准）；"
        "控制台不为此资源池上的任务发送告警邮件或 Webhook。"
    )
    assert chinese.endswith("“任务发生容错”只在容错（同一步，仅支持 PyTorch 任务）重启任务时发出。")
    assert english.startswith(
        "AIHC sends them itself, through the notify policy given below (by email, SMS, phone, "
        "DingTalk, WeCom or Feishu, as the policy says); the console sends no email or webhook "
        "for a job on this pool."
    )


@pytest.mark.parametrize("framework", [S.PYTORCH, S.MPI])
def test_the_alerts_help_agrees_with_the_aihc_warning_beside_it_on_every_framework(
    alice_client, aihc_pool, framework
):
    # qa79: it said "“任务发生容错”需在同一步开启容错" right above the AIHC warning that the
    # event is taken without it, and told an MPI job, which cannot have it, to turn it on.
    draft = aihc_draft_alerting(alice_client, ["jobFT"], framework=framework)

    step = alice_client.get(step_url(draft, W.ADVANCED))

    text = html.unescape(
        re.sub(
            r"<[^>]+>",
            "",
            re.search(
                r'id="id_alert_items_helptext" class="form-text">(.*?)</div>',
                step.content.decode(),
                re.S,
            ).group(1),
        )
    )
    assert "开启容错" not in text.removesuffix(alert_warning(step) or "")
    assert "“任务发生容错”只在容错（同一步，仅支持 PyTorch 任务）重启任务时发出。" in text
    assert "此告警会被接受，但永远不会发出" in text


def test_the_image_address_says_the_pools_nodes_must_pull_it(alice_client, alice_en, draft_at):
    page = alice_en.get(step_url(draft_at(W.IMAGE), W.IMAGE))

    assert help_text(page, "id_image").endswith("The pool's nodes must be able to pull it.")


def test_the_review_names_the_fault_and_timeout_rows_as_their_fields_are_named(
    alice_client, draft_at
):
    page = alice_client.get(step_url(draft_at(W.REVIEW), W.REVIEW)).content.decode()

    rows = re.findall(r'<dt class="col-5">([^<]+)</dt>', page)
    assert {"无条件重试次数", "自定义训练异常关键字", "任务超时时间"} <= set(rows)
    assert not {"重试次数上限", "容错日志关键字", "超时时间"} & set(rows)


def test_in_english_the_timeout_field_and_its_review_row_share_a_name(alice_en, draft_at):
    draft = draft_at(W.REVIEW)

    field = label_of(alice_en.get(step_url(draft, W.ADVANCED)), "id_timeout_minutes")
    review = alice_en.get(step_url(draft, W.REVIEW)).content.decode()

    assert ">Job timeout (minutes)<" in field
    assert "Job timeout" in re.findall(r'<dt class="col-5">([^<]+)</dt>', review)


# -- 告警 (AIHC's 配置任务的消息通知): 任务hang needs hang detection ------------------------


# Said on step 6, where the alert is; names step 5's switch, where hang detection is turned on
# (in the wizard's words: the request's field path is the API's).
HANG_ALERT_REFUSED = (
    "“任务hang”告警需要开启任务hang检测：请在第 5 步（容错&诊断）打开“任务hang检测”开关，"
    "或不选此告警事件。未开启时不会检测到 hang。"
)
# A request (the API, 从请求导入) is told the request's field.
HANG_ALERT_REFUSED_IN_A_REQUEST = (
    "“任务hang”告警需要开启任务hang检测：请在第 5 步（容错&诊断；请求中为 "
    "faultToleranceConfig.enabledHangDetection）开启，或不选此告警事件。未开启时不会检测到 hang。"
)


def test_a_hang_alert_without_hang_detection_is_refused_on_the_alert_events(alice_client, draft_at):
    draft = draft_at(W.ADVANCED)  # hang detection left off on 容错&诊断

    r = post_step(
        alice_client,
        draft,
        W.ADVANCED,
        advanced_data(alert_items=["jobFailed", "jobHang"], alert_emails="ops@example.com"),
    )

    assert r.status_code == 200
    assert field_errors(r, "id_alert_items") == [HANG_ALERT_REFUSED]
    draft.refresh_from_db()
    assert W.ADVANCED not in draft.completed_steps


def test_a_hang_alert_with_hang_detection_on_is_taken(alice_client, alice):
    draft = new_draft(alice_client)
    complete_steps(
        alice_client,
        draft,
        upto=W.REVIEW,
        **{
            W.FAULT: {"hang_detection": "on", "hang_minutes": "30"},
            W.ADVANCED: advanced_data(alert_items=["jobHang"], alert_emails="ops@example.com"),
        },
    )

    draft.refresh_from_db()
    assert W.ADVANCED in draft.completed_steps


# -- 告警: 任务所在节点出现故障 (nodeFT) never comes from the local pool ---------------------

# QA 59: offered and taken there, it was never sent; an on-call engineer relying on it
# heard nothing. Said on the alert events, naming what comes instead.
NODE_ALERT_REFUSED = (
    "本机资源池不会发出“任务所在节点出现故障”告警：其任务运行在任务调度进程（worker）所在的这台机器上，该机器故障时 worker "
    "也随之停止。worker 恢复后，被故障中断的任务以“任务失败退出”告警，重启时以“任务发生容错”告警。请不选此告警事件。"
)


def test_the_local_pool_does_not_offer_a_node_failure_alert_it_never_sends(alice_client, draft_at):
    page = alice_client.get(step_url(draft_at(W.ADVANCED), W.ADVANCED)).content.decode()

    assert 'value="jobFT"' in page
    assert 'value="nodeFT"' not in page
    assert "任务所在节点出现故障" not in page


def test_a_node_failure_alert_a_draft_holds_is_refused_on_the_alert_events_and_kept(
    alice_client, draft_at
):
    draft = draft_at(W.ADVANCED)  # as a draft imported from AIHC, or saved before, holds it

    r = post_step(
        alice_client,
        draft,
        W.ADVANCED,
        advanced_data(alert_items=["jobFailed", "nodeFT"], alert_emails="ops@example.com"),
    )

    assert r.status_code == 200
    assert field_errors(r, "id_alert_items") == [NODE_ALERT_REFUSED]
    page = r.content.decode()
    assert re.search(r'<input[^>]*value="nodeFT"[^>]*checked', page)  # shown, to untick
    draft.refresh_from_db()
    assert W.ADVANCED not in draft.completed_steps


def test_the_api_refuses_a_node_failure_alert_on_the_local_pool_in_the_callers_language():
    from django.utils import translation

    from jobs.backends import get_backend

    spec = S.JobSpec(
        name="bert",
        resource_pool_id="local",
        image="python:3.12",
        command="true",
        roles=[S.Role("master", 1)],
        alert=S.AlertConfig(items=["jobFailed", "nodeFT"], emails=["ops@example.com"]),
    )
    backend = get_backend("local")
    with translation.override("en"):
        english = backend.check_spec(spec)
    with translation.override("zh-hans"):
        chinese = backend.check_spec(spec)

    assert english["alertConfig.alertItems"] == [
        "“A node of the job fails” never comes from the local pool: its jobs run on the "
        "worker's own machine, and a failure of that machine stops the worker too. Once the "
        "worker is back, a job the failure ended alerts as “Job fails”, or “Job restarted by "
        "fault tolerance” when it is restarted. Leave this event out."
    ]
    assert chinese["alertConfig.alertItems"] == [NODE_ALERT_REFUSED]
    spec.alert.items = ["jobFailed", "jobFT"]
    spec.fault_tolerance = True
    assert "alertConfig.alertItems" not in backend.check_spec(spec)


# -- 告警: 任务发生容错 (jobFT) comes only from a job with 容错 on ----------------------------

# qa72: the local pool alerts jobFT only when it restarts a job, which it does only with fault
# tolerance on; chosen without it, the alert was taken and never sent, as nodeFT was (QA 59).
FT_ALERT_REFUSED = (
    "本机资源池只在重启任务时发出“任务发生容错”告警，而只有开启了容错的任务才会重启：未开启容错时此告警永远不会发出。"
    "请在第 5 步（容错&诊断）开启容错（仅支持 PyTorch），或不选此告警事件。"
)


def test_a_fault_tolerance_alert_without_fault_tolerance_is_refused_on_the_alert_events(
    alice_client, draft_at
):
    draft = draft_at(W.ADVANCED)
    sent = advanced_data(alert_items=["jobFailed", "jobFT"], alert_emails="ops@example.com")

    alice_client.cookies["django_language"] = "zh-hans"
    chinese = post_step(alice_client, draft, W.ADVANCED, sent)
    alice_client.cookies["django_language"] = "en"
    english = post_step(alice_client, draft, W.ADVANCED, sent)

    assert field_errors(chinese, "id_alert_items") == [FT_ALERT_REFUSED]
    assert field_errors(english, "id_alert_items") == [
        "The local pool alerts “Job restarted by fault tolerance” when it restarts a job, and only a "
        "job with fault tolerance on is restarted: without it this alert never comes. Turn "
        "fault tolerance on in step 5 (Fault tolerance & diagnostics; PyTorch only), or leave "
        "this event out."
    ]
    draft.refresh_from_db()
    assert W.ADVANCED not in draft.completed_steps


def test_an_mpi_jobs_fault_tolerance_alert_is_refused_without_sending_it_to_step_5(alice_client):
    # Step 5's fault tolerance is PyTorch's only: an MPI job turning it on would be refused.
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.ADVANCED, **{W.BASIC: basic_data(framework=S.MPI)})

    r = post_step(
        alice_client,
        draft,
        W.ADVANCED,
        advanced_data(alert_items=["jobFT"], alert_emails="ops@example.com"),
    )

    assert field_errors(r, "id_alert_items") == [
        "本机资源池只在重启任务时发出“任务发生容错”告警，而只有开启了容错的任务才会重启，"
        "容错又仅支持 PyTorch 任务：此任务的此告警永远不会发出。请不选此告警事件。"
    ]


def test_a_fault_tolerance_alert_with_fault_tolerance_on_is_taken(alice_client):
    draft = new_draft(alice_client)
    complete_steps(
        alice_client,
        draft,
        upto=W.REVIEW,
        **{
            W.FAULT: {"fault_tolerance": "on"},
            W.ADVANCED: advanced_data(alert_items=["jobFT"], alert_emails="ops@example.com"),
        },
    )

    draft.refresh_from_db()
    assert W.ADVANCED in draft.completed_steps


# -- 告警: 任务发生容错 on an AIHC pool: taken, and said to never come (left53) ---------------

# AIHC takes jobFT without fault tolerance (its CreateJob does) and is the one to send it: the
# console says the alert never comes there rather than refuse a body AIHC takes.
# The wizard's words send its user to step 5's switch (left54: they named the request's
# faultTolerance, which the API's warning still does).
FT_ALERT_NEVER_COMES = (
    "百舸 AIHC 在容错重启任务时发出“任务发生容错”告警，而此任务未开启容错：此告警会被接受，但永远不会发出。"
    "请打开第 5 步（容错&诊断）的“容错”开关（仅支持 PyTorch），或不选此告警事件。"
)
FT_ALERT_NEVER_COMES_EN = (
    "AIHC sends “Job restarted by fault tolerance” when its fault tolerance restarts the job, and this "
    "job has fault tolerance off: the alert is taken but never comes. Turn on the Fault "
    "tolerance switch of step 5 (Fault tolerance & diagnostics; PyTorch only), or leave this "
    "event out."
)


def aihc_draft_alerting(
    client, items: list[str], *, fault: dict | None = None, framework: str = S.PYTORCH
) -> Draft:
    """A draft on the AIHC pool, every step done, alerting on `items` through a notify policy."""
    draft = new_draft(client)
    steps = {
        **aihc_steps(framework=framework),
        W.ADVANCED: advanced_data(
            alert_items=items, alert_instance_id="prom-1", alert_notify_rule_id="notify-1"
        ),
    }
    if fault is not None:
        steps[W.FAULT] = fault
    complete_steps(client, draft, **steps)
    return draft


def alert_warning(response, *, hidden: bool = False) -> str | None:
    """The warning the alert events' help text ends with, as shown (or as drawn `hidden`, for
    wizard.js to show once the event is ticked), or None."""
    page = response.content.decode()
    helptext = re.search(r'id="id_alert_items_helptext" class="form-text">(.*?)</div>', page, re.S)
    assert helptext, "the alert events have no help text"
    attributes = " hidden" if hidden else ""
    found = re.search(rf'id="alert-items-warning"{attributes}>([^<]+)<', helptext.group(1))
    return html.unescape(found.group(1)) if found else None


def review_notice(response, notice_id: str) -> str | None:
    found = re.search(rf'id="{notice_id}"[^>]*>(.*?)</div>', response.content.decode(), re.S)
    return html.unescape(re.sub(r"<[^>]+>", "", found.group(1))) if found else None


def test_a_fault_tolerance_alert_without_fault_tolerance_on_an_aihc_pool_is_taken_and_warned_of(
    alice_client, aihc_pool
):
    draft = aihc_draft_alerting(alice_client, ["jobFailed", "jobFT"])

    draft.refresh_from_db()
    assert W.ADVANCED in draft.completed_steps  # taken: 下一步 went on
    step = alice_client.get(step_url(draft, W.ADVANCED))
    assert field_errors(step, "id_alert_items") == []
    assert alert_warning(step) == FT_ALERT_NEVER_COMES
    review = alice_client.get(step_url(draft, W.REVIEW))
    assert review_notice(review, "alert-notice") == f"告警：{FT_ALERT_NEVER_COMES}"
    assert 'id="review-problems"' not in review.content.decode()


def test_the_aihc_fault_tolerance_alert_warning_is_said_in_english_too(alice_en, aihc_pool):
    draft = aihc_draft_alerting(alice_en, ["jobFT"])

    assert alert_warning(alice_en.get(step_url(draft, W.ADVANCED))) == FT_ALERT_NEVER_COMES_EN
    review = alice_en.get(step_url(draft, W.REVIEW))
    assert review_notice(review, "alert-notice") == f"Alerts: {FT_ALERT_NEVER_COMES_EN}"


def test_an_aihc_jobs_fault_tolerance_alert_is_not_warned_of_with_fault_tolerance_on_or_unchosen(
    alice_client, aihc_pool
):
    with_fault_tolerance = aihc_draft_alerting(
        alice_client, ["jobFT"], fault={"fault_tolerance": "on"}
    )
    without_the_event = aihc_draft_alerting(alice_client, ["jobFailed"])

    for draft in (with_fault_tolerance, without_the_event):
        assert alert_warning(alice_client.get(step_url(draft, W.ADVANCED))) is None
        assert review_notice(alice_client.get(step_url(draft, W.REVIEW)), "alert-notice") is None
    # Without the event it is drawn hidden, for the box to show once ticked (wizard.js).
    step = alice_client.get(step_url(without_the_event, W.ADVANCED))
    assert alert_warning(step, hidden=True) == FT_ALERT_NEVER_COMES
    step = alice_client.get(step_url(with_fault_tolerance, W.ADVANCED))
    assert alert_warning(step, hidden=True) is None


def test_the_reviews_aihc_alert_warning_links_step_5(alice_client, aihc_pool):
    # Before left54 it named 容错&诊断 without a link, where the review's other notices link theirs.
    draft = aihc_draft_alerting(alice_client, ["jobFT"])

    review = alice_client.get(step_url(draft, W.REVIEW)).content.decode()

    notice = re.search(r'id="alert-notice"[^>]*>(.*?)</div>', review, re.S).group(1)
    # qa79: to the 容错 switch the warning names, not the top of the step (wizard.js then
    # focuses it: test_alerts_browser).
    link = f'<a href="{step_url(draft, W.FAULT)}#id_fault_tolerance" class="alert-link">容错&amp;诊断</a>'
    assert link in notice


def test_an_aihc_mpi_jobs_fault_tolerance_alert_is_warned_of_without_sending_it_to_step_5(
    alice_client, aihc_pool
):
    # Step 5's fault tolerance is PyTorch's only: an MPI job turning it on would be refused.
    draft = aihc_draft_alerting(alice_client, ["jobFT"], framework=S.MPI)

    warning = "百舸 AIHC 在容错重启任务时发出“任务发生容错”告警，而容错仅支持 PyTorch 任务：此任务的此告警会被接受，但永远不会发出。请不选此告警事件。"
    assert alert_warning(alice_client.get(step_url(draft, W.ADVANCED))) == warning
    review = alice_client.get(step_url(draft, W.REVIEW))
    assert review_notice(review, "alert-notice") == f"告警：{warning}"


def test_the_aihc_warning_is_on_the_alert_events_a_refused_next_shows_again(
    alice_client, aihc_pool
):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.ADVANCED, **aihc_steps())

    # Refused for its missing notify policy: the step comes back with the events as sent.
    r = post_step(
        alice_client,
        draft,
        W.ADVANCED,
        advanced_data(alert_items=["jobFT"], alert_instance_id="prom-1"),
    )

    assert r.status_code == 200
    assert field_errors(r, "id_alert_notify_rule_id")
    assert field_errors(r, "id_alert_items") == []
    assert alert_warning(r) == FT_ALERT_NEVER_COMES


def test_a_refused_next_without_the_event_draws_the_aihc_warning_hidden_though_it_was_saved(
    alice_client, aihc_pool
):
    # The step as sent, not as saved: the saved events held 任务发生容错, the refused 下一步
    # did not. Drawn hidden all the same, for the box to show once ticked again (wizard.js).
    draft = aihc_draft_alerting(alice_client, ["jobFT"])

    r = post_step(
        alice_client,
        draft,
        W.ADVANCED,
        advanced_data(alert_items=["jobFailed"], alert_instance_id="prom-1"),
    )

    assert field_errors(r, "id_alert_notify_rule_id")  # refused: the step comes back
    assert alert_warning(r) is None
    assert alert_warning(r, hidden=True) == FT_ALERT_NEVER_COMES


# -- seed 001's example through 从请求导入 -------------------------------------------------


@pytest.fixture
def aihc_pool(settings):
    fake = FakeAihc().start()
    fake.add_pool(
        "cce-pool1", "百舸训练池", queues=("default",), gpus={A800: (32, 16)}, pfs="pfs-7xWeAt"
    )
    configure(settings, fake)
    yield fake
    fake.stop()


def test_seed_001s_example_imports_into_a_draft_whose_review_sends_that_very_body(
    alice_client, aihc_pool
):
    r = import_body(alice_client, SEED_001, pool="cce-pool1")

    draft = Draft.objects.get()
    assert r.status_code == 302
    assert r["Location"] == step_url(draft, W.BASIC)
    assert draft.completed_steps == W.FORM_STEPS  # every step filled in and valid
    sent = review_body(alice_client, draft)
    # The console's own label, which finds the job on AIHC again, is all it adds.
    assert sent.pop("labels") == [{"key": "ai-job-console/job-id", "value": "<job-id>"}]
    assert sent == SEED_001


def test_seed_001s_example_imported_says_in_one_notice_what_its_request_cannot_carry(
    alice_client, aihc_pool
):
    import_body(alice_client, SEED_001, pool="cce-pool1")

    page = alice_client.get(step_url(Draft.objects.get(), W.BASIC)).content.decode()
    box = re.search(r'id="import-notices">(.*?)<button', page, re.S)[1]
    notices = [html.unescape(p) for p in re.findall(r"<p[^>]*>(.*?)</p>", box, re.S)]
    # Before, two: the console settings at their defaults, and the roles read (master × 1,
    # as step Resources shows), each saying where to check again.
    assert len(notices) == 1, notices
    [notice] = notices
    assert "任务超时、告警邮箱与 Webhook、共享内存和独占 CPU 均为默认值" in notice
    assert "角色按 jobSpec.replicas 读作 master × 1" in notice
    assert notice.count("提交前请检查") == 1


def test_the_mpi_roles_note_says_horovod_and_deepspeed_fit_started_through_mpirun(alice_client):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.RESOURCES, **{W.BASIC: basic_data(framework=S.MPI)})

    alice_client.cookies["django_language"] = "zh-hans"
    chinese = alice_client.get(step_url(draft, W.RESOURCES)).content.decode()
    alice_client.cookies["django_language"] = "en"
    english = alice_client.get(step_url(draft, W.RESOURCES)).content.decode()

    assert "也可覆盖 Horovod、DeepSpeed 等基于 MPI 的启动方式（通过 mpirun 启动）。" in chinese
    assert (
        "Horovod, DeepSpeed and other MPI-based launchers fit here too, started through mpirun."
        in english
    )


def test_seed_001s_example_imported_to_the_local_pool_says_on_its_mount_the_pool_has_no_pfs(
    alice_client,
):
    """qa72: the row's 存储类型 said only Django's "选择一个有效的选项。 pfs 不在可用的选项中。"."""
    import_body(alice_client, SEED_001, pool="local")
    draft = Draft.objects.get()
    check = step_url(draft, W.DATA) + "?check=1"

    alice_client.cookies["django_language"] = "zh-hans"
    chinese = field_errors(alice_client.get(check), "id_mounts-0-type")
    alice_client.cookies["django_language"] = "en"
    english = field_errors(alice_client.get(check), "id_mounts-0-type")

    assert W.DATA not in draft.completed_steps
    assert chinese == ["该资源池不能挂载“PFS”存储，可挂载：本地盘。"]
    assert english == ["This pool cannot mount “PFS” storage; it mounts Local disk."]
