"""Changing one's own password in the console (every user; the admin's page is staff only)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from jobs.models import LoginFailure

URL = "/account/password/"
NEW = "a-new-long-passphrase-7"


def change(client: Client, old: str, new1: str = NEW, new2: str = NEW):
    return client.post(URL, {"old_password": old, "new_password1": new1, "new_password2": new2})


def test_a_user_changes_their_password_stays_logged_in_and_logs_in_with_the_new_one(alice):
    client = Client()
    client.force_login(alice)
    elsewhere = Client()
    elsewhere.force_login(alice)

    r = change(client, "alice-password")

    assert r.status_code == 302 and r["Location"] == "/"
    page = client.get("/")
    assert page.status_code == 200  # this browser stays logged in
    assert "您的密码已修改。" in page.content.decode()
    assert elsewhere.get("/").status_code == 302  # another browser's session has ended
    alice.refresh_from_db()
    assert alice.check_password(NEW) and not alice.check_password("alice-password")


def test_a_wrong_current_password_is_said_on_its_field_and_changes_nothing(alice):
    client = Client()
    client.force_login(alice)

    r = change(client, "not-my-password")

    assert r.status_code == 200
    assert list(r.context["form"].errors) == ["old_password"]
    alice.refresh_from_db()
    assert alice.check_password("alice-password")
    assert LoginFailure.objects.filter(username="alice").count() == 1


@pytest.mark.parametrize(
    ("new1", "said"),
    [
        ("short", "此密码太短，至少要包含 8 个字符。"),
        ("90817263544", "密码不能全是数字。"),
        ("password123", "该密码过于常见。"),
        ("alice1234", "新密码与用户名过于相似。"),
    ],
    ids=["too-short", "all-numbers", "common", "like-the-user-name"],
)
def test_a_weak_new_password_is_refused_under_the_new_password_itself_in_plain_chinese(
    alice, new1, said
):
    """Under the box it was typed in, not the confirmation's (Django's place), and in the
    console's Chinese, not Django's 密码跟 用户名 太相似了 (qa113)."""
    client = Client()
    client.force_login(alice)

    r = change(client, "alice-password", new1, new1)

    assert r.status_code == 200
    assert dict(r.context["form"].errors) == {"new_password1": [said]}
    alice.refresh_from_db()
    assert alice.check_password("alice-password")


def test_a_mistyped_confirmation_is_refused_on_the_confirmation_alone(alice):
    client = Client()
    client.force_login(alice)

    r = change(client, "alice-password", "short", "shorter")

    assert r.status_code == 200
    assert list(r.context["form"].errors) == ["new_password2"]  # no rule judged a mistyped one
    alice.refresh_from_db()
    assert alice.check_password("alice-password")


def test_guessing_the_current_password_hits_the_login_throttle(alice, settings):
    settings.LOGIN_FAILURES_PER_USERNAME = 3
    client = Client()
    client.force_login(alice)
    for _ in range(3):
        change(client, "guess")

    r = change(client, "alice-password")  # right, but locked like a log-in would be

    assert r.status_code == 200
    assert "登录失败次数过多" in r.context["form"].errors["old_password"][0]
    alice.refresh_from_db()
    assert alice.check_password("alice-password")


def test_the_page_is_reached_from_the_user_name_in_the_navigation(alice):
    client = Client()
    client.force_login(alice)

    page = client.get("/").content.decode()

    assert f'href="{URL}" id="nav-account"' in page


def test_an_anonymous_visitor_is_sent_to_log_in(db):
    r = Client().get(URL)

    assert r.status_code == 302 and r["Location"].startswith("/login/")
    assert not User.objects.exists()
