"""A user creates an API access key in a browser, copies its secret, and revokes the key;
makes keys with an expiry and revokes them all; changes the password and so revokes them."""

from __future__ import annotations

import re

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from jobs.api_keys import api_key_create
from jobs.models import ApiKey
from tests.conftest import log_in

pytestmark = pytest.mark.browser


def test_a_user_creates_a_key_copies_its_secret_once_and_revokes_it(logged_in_page, alice):
    page = logged_in_page
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])

    page.click("#nav-api-keys")
    expect(page.locator("h1")).to_have_text("API 访问密钥")
    expect(page.locator("#no-keys")).to_be_visible()
    page.fill("input[name=description]", "nightly script")
    page.click("#api-key-create")

    secret = page.locator("#new-secret-key").inner_text()
    access_key_id = page.locator("#new-access-key").inner_text()
    key = ApiKey.objects.get(owner=alice)
    assert key.access_key_id == access_key_id and len(secret) == 32
    page.click("#new-secret-key-copy")
    expect(page.locator("#new-secret-key-copy")).to_have_text("✓")
    expect(page.locator("#copy-status")).to_have_text("已复制。")
    assert page.evaluate("navigator.clipboard.readText()") == secret

    # Shown once: the next visit lists the key, not its secret.
    page.goto("/account/keys/")
    expect(page.locator(f"#key-{access_key_id}")).to_contain_text("nightly script")
    expect(page.locator("#new-secret-key")).to_have_count(0)
    assert secret not in page.content()

    page.once("dialog", lambda dialog: dialog.accept())
    page.click(f"[data-revoke='{access_key_id}']")

    expect(page.locator(f"#key-{access_key_id}")).to_contain_text("已吊销")
    expect(page.locator(f"[data-revoke='{access_key_id}']")).to_have_count(0)
    key.refresh_from_db()
    assert key.is_revoked


def test_a_key_with_a_long_description_keeps_its_revoke_button_in_view(logged_in_page, alice):
    page = logged_in_page
    page.goto("/account/keys/")
    # What a person pastes: a path or a token-like name with nowhere to break a line.
    page.fill("input[name=description]", "ci-runner-" + "x" * 90)
    page.click("#api-key-create")

    key = ApiKey.objects.get(owner=alice)
    revoke = page.locator(f"[data-revoke='{key.access_key_id}']")
    expect(revoke).to_be_in_viewport()
    table = page.locator("#api-key-table").locator("xpath=..")
    wide, room = table.evaluate("box => [box.scrollWidth, box.clientWidth]")
    assert wide <= room, f"the key table is {wide} px wide in {room} px"


def test_a_user_makes_keys_with_an_expiry_then_revokes_them_all_after_confirming(
    logged_in_page, alice
):
    page = logged_in_page
    page.goto("/account/keys/")
    expect(page.locator("select[name=expires_in]")).to_have_value("90")  # the default
    page.fill("input[name=description]", "monthly report")
    page.select_option("select[name=expires_in]", label="30 天")
    page.click("#api-key-create")

    month = ApiKey.objects.get(owner=alice)
    shown = timezone.localtime(month.expires_at).strftime("%Y-%m-%d %H:%M")
    expect(page.locator("#new-key-expires")).to_have_text(shown)
    page.fill("input[name=description]", "forever")
    page.select_option("select[name=expires_in]", label="永不过期")
    page.click("#api-key-create")
    expect(page.locator("#new-key-expires")).to_have_text("永不过期")
    expect(page.locator(f"#key-{month.access_key_id} [data-expires]")).to_have_text(shown)

    page.click("#api-keys-revoke-all")
    expect(page.locator("#revoke-all-confirm")).to_contain_text("吊销您全部 2 个有效密钥？")
    expect(page.locator("#revoke-all-keys li")).to_have_count(2)
    page.click("#revoke-all-submit")

    expect(page).to_have_url(re.compile(r"/account/keys/$"))
    expect(page.locator("#main")).to_contain_text("已吊销 2 个 API 密钥")
    for key in ApiKey.objects.filter(owner=alice):
        expect(page.locator(f"#key-{key.access_key_id} [data-status]")).to_contain_text("已吊销")
        assert key.is_revoked
    expect(page.locator("#api-keys-revoke-all")).to_have_count(0)


def test_changing_the_password_with_the_box_left_ticked_revokes_the_keys(logged_in_page, alice):
    key, _ = api_key_create(owner=alice)
    page = logged_in_page
    page.goto("/account/password/")
    expect(page.locator("input[name=revoke_api_keys]")).to_be_checked()
    page.fill("input[name=old_password]", "alice-password")
    page.fill("input[name=new_password1]", "a-new-long-passphrase-7")
    page.fill("input[name=new_password2]", "a-new-long-passphrase-7")
    page.click("#password-change-submit")

    expect(page.locator("body")).to_contain_text("已吊销 1 个 API 密钥")
    key.refresh_from_db()
    assert key.is_revoked


def test_reloading_the_page_that_shows_a_new_secret_makes_no_second_key(logged_in_page, alice):
    page = logged_in_page
    page.goto("/account/keys/")
    page.fill("input[name=description]", "nightly script")
    page.click("#api-key-create")
    access_key_id = page.locator("#new-access-key").inner_text()

    page.reload()  # the browser sends the form again

    expect(page.locator("#new-secret-key")).to_have_count(0)
    expect(page.locator(".alert-warning")).to_contain_text(f"此表单已创建过密钥 {access_key_id}")
    assert list(ApiKey.objects.filter(owner=alice).values_list("access_key_id", flat=True)) == [
        access_key_id
    ]


def test_a_superuser_resetting_a_users_password_in_the_admin_is_told_their_keys_ended(
    page, alice, superuser
):
    """An administrator's reset, as a person does it: the user's page, 重置密码, the new
    password twice; the page that follows says the user's keys were revoked."""
    keys = [api_key_create(owner=alice)[0] for _ in range(2)]
    log_in(page, "root", "root-password")

    page.goto(f"/admin/auth/user/{alice.pk}/change/")
    page.get_by_role("button", name="重置密码").click()
    page.fill("#id_password1", "a-new-long-passphrase-7")
    page.fill("#id_password2", "a-new-long-passphrase-7")
    page.click("input.set-password")

    expect(page.locator(".messagelist")).to_contain_text(
        "已吊销 alice 的 2 个 API 密钥：由他人设置密码会终止旧密码期间创建的密钥。"
    )
    for key in keys:
        key.refresh_from_db()
        assert key.revoke_reason == "password_reset"
    # The keys page of the admin says who revoked them, in its history.
    page.goto(f"/admin/jobs/apikey/{keys[0].pk}/history/")
    expect(page.locator("#change-history")).to_contain_text("root")


def test_a_superuser_setting_their_own_password_in_the_admin_is_told_their_own_keys_ended(
    page, superuser
):
    """Their own user page, 重置密码, the new password twice: the page says their keys were
    revoked as their password page says it, not as a password someone else set."""
    key, _ = api_key_create(owner=superuser)
    log_in(page, "root", "root-password")

    page.goto(f"/admin/auth/user/{superuser.pk}/change/")
    page.get_by_role("button", name="重置密码").click()
    page.fill("#id_password1", "a-new-long-passphrase-7")
    page.fill("#id_password2", "a-new-long-passphrase-7")
    page.click("input.set-password")

    messages = page.locator(".messagelist")
    expect(messages).to_contain_text("已吊销 1 个 API 密钥：此后用它们签名的请求都会被拒绝。")
    expect(messages).not_to_contain_text("由他人设置密码")
    key.refresh_from_db()
    assert key.revoke_reason == "password"


def test_on_a_phone_a_keys_description_keeps_a_readable_width(logged_in_page, alice):
    page = logged_in_page
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto("/account/keys/")
    page.fill("input[name=description]", "手机上的训练脚本")
    page.click("#api-key-create")

    key = ApiKey.objects.get(owner=alice)
    cell = page.locator(
        f"#api-key-table tr:has([data-revoke='{key.access_key_id}']) .key-description"
    )
    expect(cell).to_have_text("手机上的训练脚本")
    # Squeezed by the key ID beside it, it read one character a line (eight lines here).
    lines = cell.evaluate(
        "td => { const r = document.createRange(); r.selectNodeContents(td);"
        " return new Set([...r.getClientRects()].map(b => Math.round(b.top))).size }"
    )
    assert lines <= 2
    # The table scrolls sideways in its own box; the page itself does not.
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
