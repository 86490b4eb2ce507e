"""A user creates an API access key in a browser, copies its secret, and revokes the key."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from jobs.models import ApiKey

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
