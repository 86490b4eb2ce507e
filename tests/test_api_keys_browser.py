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
