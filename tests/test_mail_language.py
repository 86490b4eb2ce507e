"""Mail in the reader's language (jobs.languages): each user's chosen language is kept on the
server by every language switch and at log-in, and the worker writes review and alert mails
in their readers' languages."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils.translation import gettext_noop

from jobs import spec as S
from jobs import wizard as W
from jobs.alerts import job_alert
from jobs.models import Job, ReviewMode, UserPreference
from jobs.review import job_approve, job_reject
from jobs.services import jobs_submit
from jobs.tasks import deliver_alert, mail_owner
from jobs.texts import recorded
from tests.conftest import run_queued_tasks

from .test_review import make_spec, save_policy
from .test_wizard import (  # noqa: F401  (_local_pool: the wizard's pool of cards)
    _local_pool,
    basic_data,
    new_draft,
    post_step,
    step_url,
)


def switched(client: Client, language: str) -> None:
    """The top bar's 中文/EN, as the page posts it."""
    r = client.post(reverse("set_language"), {"language": language, "next": "/"})
    assert r.status_code == 302 and r.cookies["django_language"].value == language


def submit(owner, spec=None, key="k") -> Job:
    [job] = jobs_submit(owner=owner, spec=spec or make_spec(), submit_key=key)
    return job


def language_of(user) -> str | None:
    return UserPreference.objects.filter(user=user).values_list("language", flat=True).first()


# -- review mails ----------------------------------------------------------------------


def test_an_owner_who_switched_to_english_gets_the_review_mail_in_english(
    alice, alice_client, reviewer, mailoutbox
):
    switched(alice_client, "en")
    save_policy(ReviewMode.ALL)
    job = submit(alice)

    job_reject(job=job, reviewer=reviewer, reason="Use at most 8 cards.")
    run_queued_tasks()  # what the worker does

    [mail] = mailoutbox
    assert mail.to == ["alice@example.com"]
    assert mail.subject == "Job demo rejected"
    assert mail.body.startswith(
        f"Your job demo ({job.public_id}) was rejected: Use at most 8 cards.\n\n"
    )
    # What the job records stays in the console's language, for every reader.
    job.refresh_from_db()
    assert job.events.last().message == f"已由 {reviewer.username} 驳回：Use at most 8 cards."


def test_an_owner_who_switched_to_chinese_gets_it_in_chinese_in_an_english_console(
    alice, alice_client, reviewer, mailoutbox, settings
):
    settings.LANGUAGE_CODE = "en"
    switched(alice_client, "zh-hans")
    save_policy(ReviewMode.ALL)
    job = submit(alice)

    job_approve(job=job, reviewer=reviewer)
    run_queued_tasks()

    assert [m.subject for m in mailoutbox] == ["任务 demo 已通过审核"]
    assert "您的任务 demo" in mailoutbox[0].body


def test_an_owner_who_chose_no_language_gets_the_consoles(alice, reviewer, mailoutbox):
    save_policy(ReviewMode.ALL)
    job = submit(alice)

    job_reject(job=job, reviewer=reviewer, reason="no")
    run_queued_tasks()

    assert language_of(alice) is None
    assert [m.subject for m in mailoutbox] == ["任务 demo 未通过审核"]


def test_a_review_mail_queued_with_the_old_arguments_still_goes_as_it_was_recorded(
    alice, alice_client, mailoutbox
):
    switched(alice_client, "en")
    job = submit(alice)

    # As a release before the sources queued it: the texts only, in the console's language.
    mail_owner.enqueue(job_id=job.pk, subject="任务 demo 已通过审核", body="已通过。")
    run_queued_tasks()

    [mail] = mailoutbox
    assert mail.subject == "任务 demo 已通过审核"
    assert mail.body.startswith("已通过。\n\n") and job.public_id in mail.body


# -- alert mails -----------------------------------------------------------------------


def alerting(owner, emails: list[str]) -> Job:
    return submit(
        owner,
        make_spec(alert=S.AlertConfig(items=["jobRunning"], emails=emails, webhooks=[])),
    )


def test_alert_mail_goes_to_each_address_in_its_readers_language(
    alice, alice_client, bob, mailoutbox
):
    switched(alice_client, "en")
    UserPreference.objects.create(user=bob, language="zh-hans")
    job = alerting(alice, ["alice@example.com", "Bob@Example.com", "ops@example.com"])

    job_alert(
        job=job,
        item="jobRunning",
        message=recorded(gettext_noop("%(name)s is running."), name=job.name),
    )
    run_queued_tasks()

    # A user's address in that user's language (case aside); any other in the owner's.
    mails = {tuple(m.to): m for m in mailoutbox}
    assert set(mails) == {("alice@example.com", "ops@example.com"), ("Bob@Example.com",)}
    english = mails["alice@example.com", "ops@example.com"]
    chinese = mails[("Bob@Example.com",)]
    assert english.subject == "[AI Job Console] demo is running"
    assert english.body.startswith("demo is running.\n\n")
    assert chinese.subject == "[AI 训练任务控制台] demo 正在运行"
    assert chinese.body.startswith("demo 正在运行。\n\n")
    # One alert, one event, recorded in the console's language.
    [sent] = job.events.filter(reason="AlertSent")
    assert "alice@example.com、Bob@Example.com、ops@example.com" in sent.message  # 、: Chinese


def test_a_failed_alerts_text_names_the_job_with_each_readers_colon(
    alice, alice_client, bob, mailoutbox
):
    # Copy edit: "alert-job3: worker-0 退出" had an English colon in a Chinese mail.
    from jobs.alerts import named_for_alert

    switched(alice_client, "en")
    UserPreference.objects.create(user=bob, language="zh-hans")
    job = alerting(alice, ["alice@example.com", "Bob@Example.com"])
    exited = recorded(
        gettext_noop("%(replica)s exited with code %(code)s."), replica="worker-0", code=3
    )

    job_alert(job=job, item="jobRunning", message=named_for_alert(job=job, message=exited))
    run_queued_tasks()

    mails = {m.to[0]: m for m in mailoutbox}
    assert mails["alice@example.com"].body.startswith("demo: worker-0 exited with code 3.\n")
    assert mails["Bob@Example.com"].body.startswith("demo：worker-0 退出，退出码 3。\n")


def test_an_alert_mail_names_the_job_the_event_and_when_it_happened_in_each_readers_words(
    alice, alice_client, bob, mailoutbox
):
    # QA 38: the mail held the message and the link only, so a job that ended while no
    # worker ran, mailed when one came back, never said when it ended (README: a mail's 时间).
    from jobs.alerts import deliver

    switched(alice_client, "en")
    UserPreference.objects.create(user=bob, language="zh-hans")
    job = alerting(alice, ["alice@example.com", "bob@example.com"])

    deliver(job=job, item="jobFailed", message="exit code 1", time="2026-12-01T02:03:04+00:00")

    mails = {tuple(m.to): m.body for m in mailoutbox}
    link = f"/jobs/{job.public_id}/"
    english, chinese = mails[("alice@example.com",)], mails[("bob@example.com",)]
    assert english.startswith(
        "exit code 1\n\nJob: demo\nEvent: Job failed\nTime: 2026-12-01 10:03:04 UTC+08:00\n\nhttp"
    )
    assert chinese.startswith(
        "exit code 1\n\n任务：demo\n事件：任务失败退出\n时间：2026-12-01 10:03:04 UTC+08:00\n\nhttp"
    )
    assert english.rstrip().endswith(link) and chinese.rstrip().endswith(link)


def test_an_alert_mails_time_gives_its_zones_utc_offset_so_cst_is_not_read_as_us_central(
    alice, alice_client, mailoutbox, settings
):
    # qa70: "10:03:04 CST" alone is US Central time (UTC-6) to a reader from America.
    from jobs.alerts import deliver

    switched(alice_client, "en")
    job = alerting(alice, ["alice@example.com"])
    said = {}
    for zone in ("Asia/Shanghai", "UTC", "Asia/Dubai"):  # Dubai's %Z is "+04": no name
        settings.TIME_ZONE = zone
        mailoutbox.clear()
        deliver(job=job, item="jobFailed", message="exit code 1", time="2026-12-01T02:03:04+00:00")
        [mail] = mailoutbox
        said[zone] = next(line for line in mail.body.splitlines() if line.startswith("Time: "))

    assert said == {
        "Asia/Shanghai": "Time: 2026-12-01 10:03:04 UTC+08:00",
        "UTC": "Time: 2026-12-01 02:03:04 UTC",
        "Asia/Dubai": "Time: 2026-12-01 06:03:04 UTC+04:00",
    }


def test_an_alert_to_an_address_no_user_has_is_in_the_owners_language(
    alice, alice_client, mailoutbox
):
    job = alerting(alice, ["ops@example.com"])
    switched(alice_client, "en")

    job_alert(
        job=job,
        item="jobRunning",
        message=recorded(gettext_noop("%(name)s is running."), name=job.name),
    )
    run_queued_tasks()

    assert [(m.to, m.subject) for m in mailoutbox] == [
        (["ops@example.com"], "[AI Job Console] demo is running")
    ]


def test_the_last_alert_email_an_hour_allows_says_so_in_its_readers_language(
    alice, alice_client, mailoutbox, settings
):
    settings.ALERT_EMAILS_PER_HOUR = 1
    switched(alice_client, "en")
    job = alerting(alice, ["alice@example.com"])

    job_alert(
        job=job,
        item="jobRunning",
        message=recorded(gettext_noop("%(name)s is running."), name=job.name),
    )
    run_queued_tasks()

    [mail] = mailoutbox
    assert "This is the last alert email for your jobs until " in mail.body
    assert "at most 1 is sent an hour (ALERT_EMAILS_PER_HOUR)" in mail.body


def test_an_alert_queued_with_the_old_arguments_still_goes_as_it_was_recorded(
    alice, alice_client, mailoutbox
):
    switched(alice_client, "en")
    job = alerting(alice, ["alice@example.com"])

    deliver_alert.enqueue(
        job_id=job.pk, item="jobRunning", message="demo 正在运行。", time="2026-12-01T10:00:00Z"
    )
    run_queued_tasks()

    # The subject is the console's own words (said in her language); the message as stored.
    [mail] = mailoutbox
    assert mail.subject == "[AI Job Console] demo is running"
    assert mail.body.startswith("demo 正在运行。\n\n")


# -- where the language is set ---------------------------------------------------------


def test_the_top_bars_switch_keeps_a_logged_in_users_choice(alice, alice_client):
    page = alice_client.get(reverse("job-list")).content.decode()
    assert f'action="{reverse("set_language")}"' in page

    switched(alice_client, "en")
    assert language_of(alice) == "en"
    switched(alice_client, "zh-hans")
    assert language_of(alice) == "zh-hans"


def test_a_switch_to_a_language_the_console_does_not_offer_keeps_nothing(alice, alice_client):
    french = alice_client.post(reverse("set_language"), {"language": "fr", "next": "/"})
    unknown = alice_client.post(reverse("set_language"), {"language": "xx", "next": "/"})

    # Django takes any language it has words for (French pages are in English here).
    assert french.status_code == 302 and french.cookies["django_language"].value == "fr"
    assert unknown.status_code == 302 and "django_language" not in unknown.cookies
    assert language_of(alice) is None


def test_switching_while_logged_out_sets_the_cookie_only(db):
    r = Client().post(reverse("set_language"), {"language": "en", "next": "/login/"})

    assert r.status_code == 302 and r.cookies["django_language"].value == "en"
    assert not UserPreference.objects.exists()


def test_the_admins_switch_keeps_a_reviewers_choice(reviewer):
    client = Client()
    client.force_login(reviewer)
    page = client.get(reverse("admin:index")).content.decode()
    assert f'id="language-form" method="post" action="{reverse("set_language")}"' in page

    switched(client, "en")

    assert language_of(reviewer) == "en"


def test_the_wizards_language_buttons_keep_the_choice(alice, alice_client):
    draft = new_draft(alice_client)

    r = post_step(alice_client, draft, W.BASIC, basic_data(), action="language-en")

    assert r.status_code == 302 and r["Location"] == step_url(draft, W.BASIC)
    assert language_of(alice) == "en"


def test_the_drafts_pages_language_buttons_keep_the_choice(alice, alice_client):
    r = alice_client.post(
        reverse("wizard-import"), {"action": "language-en", "body": "", "next": "/wizard/"}
    )

    assert r.status_code == 302 and r.cookies["django_language"].value == "en"
    assert language_of(alice) == "en"


def log_in(client: Client, username: str, password: str):
    r = client.post(reverse("login"), {"username": username, "password": password})
    assert r.status_code == 302
    return r


def test_logging_in_keeps_the_language_of_the_login_page_when_none_was_chosen(alice):
    client = Client()
    client.cookies["django_language"] = "en"

    log_in(client, "alice", "alice-password")

    assert language_of(alice) == "en"


def test_logging_in_keeps_the_login_pages_language_for_a_user_who_chose_only_a_time_zone(alice):
    UserPreference.objects.create(user=alice, time_zone="Europe/Berlin")  # jobs.time_zones
    client = Client()
    client.cookies["django_language"] = "en"

    log_in(client, "alice", "alice-password")

    assert language_of(alice) == "en"
    assert UserPreference.objects.get(user=alice).time_zone == "Europe/Berlin"


def test_logging_in_in_another_language_keeps_the_one_chosen_before(alice):
    UserPreference.objects.create(user=alice, language="zh-hans")
    client = Client()
    client.cookies["django_language"] = "en"

    log_in(client, "alice", "alice-password")

    assert language_of(alice) == "zh-hans"


def test_logging_in_without_a_cookie_keeps_the_browsers_language(db):
    User.objects.create_user("dora", "dora@example.com", "dora-password")
    client = Client(headers={"accept-language": "en-US,en;q=0.9"})

    log_in(client, "dora", "dora-password")

    assert UserPreference.objects.get(user__username="dora").language == "en"


# -- the console's Chinese -------------------------------------------------------------


def test_a_new_browser_shows_pages_in_the_language_its_user_chose_from_the_first_after_login(
    alice,
):
    UserPreference.objects.create(user=alice, language="en")
    client = Client(headers={"accept-language": "zh-CN,zh;q=0.9"})  # never chose one

    r = log_in(client, "alice", "alice-password")

    assert r.status_code == 302
    assert client.cookies["django_language"].value == "en"
    page = client.get(r["Location"])
    assert page.status_code == 200 and '<html lang="en"' in page.content.decode()
    assert language_of(alice) == "en"

    # A browser that chose a language keeps it (chosen there), and nothing changes.
    other = Client()
    other.cookies["django_language"] = "zh-hans"
    r = log_in(other, "alice", "alice-password")
    assert r.status_code == 302 and other.cookies["django_language"].value == "zh-hans"
    assert language_of(alice) == "en"


def test_a_new_browser_shows_the_admin_in_the_language_its_reviewer_chose_after_the_admins_login(
    reviewer,
):
    # The admin's log-in kept the browser's language: a reviewer who chose English elsewhere
    # read the admin in Chinese until they switched again on this browser.
    UserPreference.objects.create(user=reviewer, language="en")
    client = Client(headers={"accept-language": "zh-CN,zh;q=0.9"})  # never chose one
    admin_login = reverse("admin:login")

    form = {"username": "carol", "password": "carol-password", "next": reverse("admin:index")}

    refused = client.post(admin_login, {**form, "password": "wrong"})
    r = client.post(admin_login, form)

    assert refused.status_code == 200 and "django_language" not in refused.cookies
    assert r.status_code == 302 and r["Location"] == reverse("admin:index")
    assert client.cookies["django_language"].value == "en"
    page = client.get(r["Location"])
    assert page.status_code == 200 and '<html lang="en"' in page.content.decode()
    assert language_of(reviewer) == "en"

    # A browser that chose a language keeps it (chosen there), and nothing changes.
    other = Client()
    other.cookies["django_language"] = "zh-hans"
    r = other.post(admin_login, form)
    assert r.status_code == 302 and other.cookies["django_language"].value == "zh-hans"
    assert "django_language" not in r.cookies
    assert language_of(reviewer) == "en"


def test_the_login_and_password_pages_say_nin_as_the_console_does(alice, alice_client):
    # Django's own words there: the validators' rules, the old password refused.
    page = alice_client.get(reverse("password-change")).content.decode()
    wrong = alice_client.post(
        reverse("password-change"),
        {"old_password": "wrong", "new_password1": "x9!kq", "new_password2": "x9!kq"},
    ).content.decode()
    login = Client().post(reverse("login"), {"username": "alice", "password": "no"})

    assert "您的密码不能与您的其他个人信息太相似。" in page
    assert "您的密码必须包含至少 8 个字符。" in page
    assert "您的旧密码不正确。请重新输入。" in wrong
    assert login.status_code == 200
    assert "你" not in page + wrong + login.content.decode()
