"""A user's access keys for the AIHC-compatible API: the page under the account area that
creates them (the secret shown once), lists and revokes them, and the admin's view of them."""

from __future__ import annotations

import io
import logging
import re
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.admin.models import LogEntry
from django.test import Client, RequestFactory
from django.utils import timezone, translation

from jobs.api_keys import (
    MAX_ACTIVE_KEYS,
    ApiAuthError,
    api_key_create,
    api_key_revoke,
    seal,
    unseal,
    verify_request,
)
from jobs.models import ApiKey, ApiKeyRevokeReason

SECRET_RE = re.compile(r'id="new-secret-key">([0-9a-f]{32})<')


def create_on_the_page(client: Client, description: str = "nightly script") -> tuple[str, str]:
    r = client.post("/account/keys/", {"description": description}, HTTP_ACCEPT_LANGUAGE="en")
    assert r.status_code == 200
    page = r.content.decode()
    secret = SECRET_RE.search(page).group(1)
    access_key_id = re.search(r'id="new-access-key">([0-9a-f]{32})<', page).group(1)
    return access_key_id, secret


def test_a_new_keys_secret_is_shown_once_and_never_again(alice_client, alice, caplog):
    caplog.set_level(logging.DEBUG)

    access_key_id, secret = create_on_the_page(alice_client)

    key = ApiKey.objects.get(access_key_id=access_key_id)
    assert key.owner == alice and key.description == "nightly script"
    assert unseal(key.secret_sealed, access_key_id=access_key_id) == secret
    assert secret not in key.secret_sealed
    again = alice_client.get("/account/keys/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert access_key_id in again  # listed
    assert "nightly script" in again
    assert secret not in again
    assert 'id="new-secret-key"' not in again
    assert secret not in caplog.text


def test_a_new_key_is_a_region_named_by_its_heading_not_an_alert(alice_client):
    # qa84: an alert around the heading, the keys and their buttons was read out whole, and
    # each Copy's "Copied." again inside it; the heading has focus and names the box instead.
    r = alice_client.post("/account/keys/", {"description": "nightly"}, HTTP_ACCEPT_LANGUAGE="en")

    page = r.content.decode()
    box = page[page.index('id="new-key"') : page.index('id="copy-status"')]
    opening = re.search(r'<(\w+)[^>]*id="new-key"[^>]*>', page)
    assert r.status_code == 200
    assert opening[1] == "section" and 'aria-labelledby="new-key-heading"' in opening[0]
    assert 'role="alert"' not in opening[0] and 'role="alert"' not in box
    assert re.search(r'id="new-key-heading"[^>]*>Key created<', page)


def test_the_key_form_sent_twice_makes_one_key_and_says_so(alice_client, alice):
    """A reload of the page showing the secret re-sends its form (the browser asks, people
    say yes), as does a double click: each made another working key, whose secret only the
    answer that replaced the first showed."""
    form = alice_client.get("/account/keys/").content.decode()
    create_key = re.search(r'name="create_key" value="([0-9a-f]{32})"', form).group(1)
    sent = {"description": "nightly script", "expires_in": "90", "create_key": create_key}
    first = alice_client.post("/account/keys/", sent, HTTP_ACCEPT_LANGUAGE="en")
    access_key_id = re.search(r'id="new-access-key">([0-9a-f]{32})<', first.content.decode())[1]

    again = alice_client.post("/account/keys/", sent, HTTP_ACCEPT_LANGUAGE="en").content.decode()

    assert list(ApiKey.objects.filter(owner=alice).values_list("access_key_id", flat=True)) == [
        access_key_id
    ]
    assert 'id="new-secret-key"' not in again
    assert f"This form already created key {access_key_id}, so no other key was made." in again
    # The page it answers with makes a new key with its own form.
    next_key = re.search(r'name="create_key" value="([0-9a-f]{32})"', again).group(1)
    assert next_key != create_key
    alice_client.post("/account/keys/", {**sent, "create_key": next_key})
    assert ApiKey.objects.filter(owner=alice).count() == 2


def test_the_page_that_shows_a_secret_is_never_cached(alice_client):
    r = alice_client.post("/account/keys/", {"description": ""})

    assert "no-store" in r["Cache-Control"]


def test_the_key_page_says_which_endpoint_to_point_a_client_at(alice_client, settings):
    settings.SITE_URL = "https://console.example.com"

    page = alice_client.get("/account/keys/", HTTP_ACCEPT_LANGUAGE="en").content.decode()

    assert '<code id="api-endpoint">https://console.example.com</code>' in page
    assert 'id="nav-api-keys"' in page


def test_the_chinese_key_page_has_no_space_after_a_full_stop_and_full_width_colons(
    alice_client, settings
):
    # Copy edit: two sentences translated apart were joined by a space, "…显示一次。 过期…",
    # and the endpoint's label had a half-width colon.
    settings.SITE_URL = "https://console.example.com"

    page = alice_client.get("/account/keys/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()

    assert "Endpoint（接入地址）：<code" in page
    assert "。 " not in page and "： " not in page
    english = alice_client.get("/account/keys/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "right after it is created. An expired key" in english


def test_the_list_shows_created_last_used_and_only_ones_own_keys(alice_client, alice, bob):
    mine, _ = api_key_create(owner=alice)
    theirs, _ = api_key_create(owner=bob)

    page = alice_client.get("/account/keys/", HTTP_ACCEPT_LANGUAGE="en").content.decode()

    assert mine.access_key_id in page
    assert theirs.access_key_id not in page
    assert "Never" in page  # not used yet


def test_revoking_asks_first_without_javascript_then_revokes(alice_client, alice):
    key, _ = api_key_create(owner=alice)
    url = f"/account/keys/{key.access_key_id}/revoke/"

    asked = alice_client.post(url, HTTP_ACCEPT_LANGUAGE="en")
    key.refresh_from_db()
    assert asked.status_code == 200
    assert 'id="revoke-confirm"' in asked.content.decode()
    assert not key.is_revoked

    done = alice_client.post(url, {"confirmed": "1"}, follow=True, HTTP_ACCEPT_LANGUAGE="en")

    key.refresh_from_db()
    assert key.is_revoked
    assert done.redirect_chain == [("/account/keys/", 302)]
    assert f"Key {key.access_key_id} revoked" in done.content.decode()


def test_another_users_key_cannot_be_revoked(alice, bob):
    key, _ = api_key_create(owner=alice)
    client = Client()
    client.force_login(bob)

    r = client.post(f"/account/keys/{key.access_key_id}/revoke/", {"confirmed": "1"})

    assert r.status_code == 404
    key.refresh_from_db()
    assert not key.is_revoked


def test_a_user_has_at_most_ten_active_keys(alice_client, alice):
    for _ in range(MAX_ACTIVE_KEYS):
        api_key_create(owner=alice)

    r = alice_client.post("/account/keys/", {"description": "one more"}, HTTP_ACCEPT_LANGUAGE="en")

    assert "the most allowed; revoke one first" in r.content.decode()
    assert not SECRET_RE.search(r.content.decode())
    assert ApiKey.objects.filter(owner=alice).count() == MAX_ACTIVE_KEYS


@pytest.fixture
def admin_client(superuser) -> Client:
    client = Client()
    client.force_login(superuser)
    return client


def test_staff_see_and_revoke_keys_in_the_admin_without_their_secret(admin_client, alice):
    key, secret = api_key_create(owner=alice, description="ci runner")

    listing = admin_client.get("/admin/jobs/apikey/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    change = admin_client.get(
        f"/admin/jobs/apikey/{key.pk}/change/", HTTP_ACCEPT_LANGUAGE="en"
    ).content.decode()

    assert key.access_key_id in listing and "alice" in listing
    for page in (listing, change):
        assert secret not in page
        assert key.secret_sealed.split("$")[1][:20] not in page
    assert admin_client.get("/admin/jobs/apikey/add/").status_code == 403
    admin_client.post(
        "/admin/jobs/apikey/",
        {"action": "revoke_keys", "_selected_action": [key.pk]},
    )
    key.refresh_from_db()
    assert key.is_revoked


def test_the_admin_revokes_keys_but_never_deletes_one_so_its_record_stays(admin_client, alice):
    # QA 49: a superuser could delete a key (its page's Delete, or Delete selected on the
    # list): its owner's keys page and the admin then lost when it was last used and why it
    # ended, which revoking keeps. Owners only revoke their keys too.
    key, _secret = api_key_create(owner=alice)

    page = admin_client.get(f"/admin/jobs/apikey/{key.pk}/delete/")
    posted = admin_client.post(f"/admin/jobs/apikey/{key.pk}/delete/", {"post": "yes"})
    bulk = admin_client.post(
        "/admin/jobs/apikey/",
        {"action": "delete_selected", "_selected_action": [key.pk], "post": "yes"},
    )
    listing = admin_client.get("/admin/jobs/apikey/").content.decode()

    change = admin_client.get(f"/admin/jobs/apikey/{key.pk}/change/").content.decode()

    assert (page.status_code, posted.status_code, bulk.status_code) == (403, 403, 302)
    assert ApiKey.objects.filter(pk=key.pk, revoked_at__isnull=True).exists()
    assert 'value="delete_selected"' not in listing and 'value="revoke_keys"' in listing
    assert f"/admin/jobs/apikey/{key.pk}/delete/" not in change


def test_a_user_deleted_in_the_admin_takes_their_keys_with_the_account(admin_client, alice):
    from django.contrib.auth.models import User

    api_key_create(owner=alice)

    r = admin_client.post(f"/admin/auth/user/{alice.pk}/delete/", {"post": "yes"})

    assert r.status_code == 302
    assert not User.objects.filter(pk=alice.pk).exists()
    assert not ApiKey.objects.exists()


def test_revoking_keys_in_the_admin_says_which_were_revoked_already(admin_client, alice):
    # QA round 25: a revoked key selected again read "0 keys revoked." as a success.
    fresh, _ = api_key_create(owner=alice)
    old, _ = api_key_create(owner=alice)
    api_key_revoke(key=old)
    admin_client.cookies["django_language"] = "en"

    r = admin_client.post(
        "/admin/jobs/apikey/",
        {"action": "revoke_keys", "_selected_action": [fresh.pk, old.pk]},
        follow=True,
    )

    said = [(m.level_tag, str(m)) for m in r.context["messages"]]
    assert r.status_code == 200
    assert said == [
        # qa98: named, with its owner.
        ("success", f"1 key revoked: {fresh.access_key_id} (alice)."),
        ("warning", "Skipped 1 key: it was revoked already."),
    ]
    fresh.refresh_from_db()
    old.refresh_from_db()
    assert fresh.revoke_reason == ApiKeyRevokeReason.STAFF
    assert old.revoke_reason == ApiKeyRevokeReason.OWNER


def test_the_admins_key_list_and_page_say_never_for_a_key_without_an_expiry(admin_client, alice):
    # qa98: Django's "-" for an empty value read as unknown.
    never, _ = api_key_create(owner=alice)  # no expiry
    dated, _ = api_key_create(owner=alice, expires_in_days=30)

    listed = admin_client.get("/admin/jobs/apikey/").content.decode()
    page = admin_client.get(f"/admin/jobs/apikey/{never.pk}/change/").content.decode()
    admin_client.cookies["django_language"] = "en"
    english = admin_client.get(f"/admin/jobs/apikey/{never.pk}/change/").content.decode()

    rows = dict(
        re.findall(
            r'>([0-9a-f]{32})</a>.*?<td class="field-expires_shown">(.*?)</td>', listed, re.S
        )
    )
    assert rows[never.access_key_id] == "永不过期"
    assert str(timezone.localtime(dated.expires_at).year) in rows[dated.access_key_id]
    assert '<div class="readonly">永不过期</div>' in page
    assert '<div class="readonly">Never</div>' in english


def test_the_admins_key_list_says_which_keys_owner_is_deactivated(admin_client, alice, bob):
    """qa106: a deactivated account's keys are kept, not revoked, and read as working."""
    kept, _ = api_key_create(owner=alice)
    working, _ = api_key_create(owner=bob)
    alice.is_active = False
    alice.save()
    admin_client.cookies["django_language"] = "en"

    listed = admin_client.get("/admin/jobs/apikey/").content.decode()

    rows = dict(
        re.findall(
            r'>([0-9a-f]{32})</a>.*?<td class="field-owner_account">(.*?)</td>', listed, re.S
        )
    )
    assert rows == {
        kept.access_key_id: "Owner deactivated: refused until the account is active again",
        working.access_key_id: "Active",
    }
    assert ApiKey.objects.get(pk=kept.pk).revoked_at is None


def test_the_admins_key_list_filters_by_a_typed_username_not_a_link_per_owner(
    admin_client, alice, bob
):
    """qa106: its "by owner" filter listed every key owner as a link; the job list's box."""
    alices, _ = api_key_create(owner=alice)
    bobs, _ = api_key_create(owner=bob)
    admin_client.cookies["django_language"] = "en"

    whole = admin_client.get("/admin/jobs/apikey/").content.decode()
    typed = admin_client.get("/admin/jobs/apikey/", {"owner_name": "alice"}).content.decode()
    linked = admin_client.get("/admin/jobs/apikey/", {"owner__id__exact": bob.pk}).content.decode()
    nobody = admin_client.get("/admin/jobs/apikey/", {"owner_name": "carol"}).content.decode()

    panel = whole.split('id="changelist-filter"', 1)[1].split("</nav>", 1)[0]
    assert 'name="owner_name"' in panel and ">bob</a>" not in panel
    assert alices.access_key_id in typed and bobs.access_key_id not in typed
    assert bobs.access_key_id in linked and alices.access_key_id not in linked
    assert "No user “carol”: no API key listed." in nobody
    assert alices.access_key_id not in nobody and bobs.access_key_id not in nobody


# -- expiry ---------------------------------------------------------------------------------


def test_a_key_is_made_with_the_chosen_expiry_and_the_page_says_when(alice_client, alice):
    before = timezone.now()
    for choice in ("30", "365", "never"):
        r = alice_client.post(
            "/account/keys/",
            {"description": choice, "expires_in": choice},
            HTTP_ACCEPT_LANGUAGE="en",
        )
        assert SECRET_RE.search(r.content.decode())

    keys = {k.description: k for k in ApiKey.objects.filter(owner=alice)}
    assert keys["never"].expires_at is None
    for days in (30, 365):
        expires = keys[str(days)].expires_at
        assert before + timedelta(days=days) <= expires <= timezone.now() + timedelta(days=days)
    page = alice_client.get("/account/keys/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    shown = timezone.localtime(keys["30"].expires_at).strftime("%Y-%m-%d %H:%M")
    assert shown in row_of(page, keys["30"])
    assert "Never" in row_of(page, keys["never"])


def test_the_form_offers_ninety_days_first_and_a_post_without_a_choice_gets_it(alice_client, alice):
    form = alice_client.get("/account/keys/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert re.search(r'<option value="90" selected>90 days</option>', form)
    assert re.findall(r'<option value="([^"]+)"', form) == [
        "30",
        "90",
        "365",
        "never",
    ]

    alice_client.post("/account/keys/", {"description": "old page"})

    key = ApiKey.objects.get(owner=alice)
    assert timedelta(days=89) < key.expires_at - timezone.now() <= timedelta(days=90)


@pytest.mark.parametrize(
    ("language", "message"), [("en", "Select a valid choice"), ("zh-hans", "选择一个有效的选项")]
)
def test_an_expiry_not_offered_is_refused_on_its_field_keeping_the_description(
    alice_client, alice, language, message
):
    r = alice_client.post(
        "/account/keys/",
        {"description": "nightly script", "expires_in": "9999"},
        HTTP_ACCEPT_LANGUAGE=language,
    )

    assert r.status_code == 200
    assert list(r.context["form"].errors) == ["expires_in"]
    page = r.content.decode()
    assert message in page
    assert 'value="nightly script"' in page
    assert not ApiKey.objects.filter(owner=alice).exists()


def row_of(page: str, key: ApiKey) -> str:
    return re.search(rf'<tr id="key-{key.access_key_id}">(.*?)</tr>', page, re.S).group(1)


def test_the_list_puts_working_keys_first_soonest_to_expire_then_ended_ones(alice_client, alice):
    # Made in the opposite order to the one listed: the list is not by creation.
    soon, _ = api_key_create(owner=alice, expires_in_days=30)
    late, _ = api_key_create(owner=alice, expires_in_days=365)
    never, _ = api_key_create(owner=alice, description="never")
    expired, _ = api_key_create(owner=alice, expires_in_days=30)
    ApiKey.objects.filter(pk=expired.pk).update(expires_at=timezone.now() - timedelta(days=1))
    revoked, _ = api_key_create(owner=alice)
    api_key_revoke(key=revoked)

    page = alice_client.get("/account/keys/", HTTP_ACCEPT_LANGUAGE="en").content.decode()

    order = re.findall(r'<tr id="key-([0-9a-f]{32})">', page)
    assert order == [k.access_key_id for k in (soon, late, never, revoked, expired)]
    assert "Expired" in row_of(page, expired)
    assert "data-revoke" not in row_of(page, expired)  # it refuses everything already
    assert "Active" in row_of(page, soon)
    assert "by its owner" in row_of(page, revoked)


def test_expired_keys_do_not_count_toward_the_ten(alice_client, alice):
    for _ in range(MAX_ACTIVE_KEYS):
        api_key_create(owner=alice, expires_in_days=30)
    ApiKey.objects.filter(owner=alice).update(expires_at=timezone.now() - timedelta(seconds=1))

    r = alice_client.post("/account/keys/", {"description": "fresh", "expires_in": "90"})

    assert SECRET_RE.search(r.content.decode())


# -- revoke all -----------------------------------------------------------------------------


def test_revoke_all_asks_on_a_page_then_revokes_every_working_key_of_ones_own(
    alice_client, alice, bob
):
    mine = [api_key_create(owner=alice, description=f"key {i}")[0] for i in range(3)]
    expired, _ = api_key_create(owner=alice, expires_in_days=30)
    ApiKey.objects.filter(pk=expired.pk).update(expires_at=timezone.now() - timedelta(days=1))
    theirs, _ = api_key_create(owner=bob)
    keys_page = alice_client.get("/account/keys/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert 'href="/account/keys/revoke-all/"' in keys_page

    asked = alice_client.get("/account/keys/revoke-all/", HTTP_ACCEPT_LANGUAGE="en")

    page = asked.content.decode()
    assert "Revoke all 3 of your active keys?" in page
    for key in mine:
        assert key.access_key_id in page
    assert expired.access_key_id not in page and theirs.access_key_id not in page
    assert ApiKey.objects.filter(revoked_at__isnull=False).count() == 0  # asking revokes nothing

    done = alice_client.post("/account/keys/revoke-all/", follow=True, HTTP_ACCEPT_LANGUAGE="en")

    assert done.redirect_chain == [("/account/keys/", 302)]
    assert "3 API keys revoked" in done.content.decode()
    for key in mine:
        key.refresh_from_db()
        assert key.is_revoked and key.revoke_reason == ApiKeyRevokeReason.OWNER_ALL
    expired.refresh_from_db()
    theirs.refresh_from_db()
    assert not expired.is_revoked and not theirs.is_revoked
    assert 'id="api-keys-revoke-all"' not in done.content.decode()  # nothing left to revoke


def test_revoke_all_with_nothing_to_revoke_says_so(alice_client):
    page = alice_client.get("/account/keys/revoke-all/", HTTP_ACCEPT_LANGUAGE="en")
    done = alice_client.post("/account/keys/revoke-all/", follow=True, HTTP_ACCEPT_LANGUAGE="en")

    assert 'id="no-active-keys"' in page.content.decode()
    assert "You have no active keys to revoke." in done.content.decode()


def test_revoking_logs_the_key_owner_and_reason_never_the_secret(alice_client, alice, caplog):
    caplog.set_level(logging.INFO, logger="jobs.api_keys")
    key, secret = api_key_create(owner=alice)

    alice_client.post("/account/keys/revoke-all/")

    assert f"API key {key.access_key_id} of alice revoked (owner_all)" in caplog.text
    assert secret not in caplog.text


# -- password change ------------------------------------------------------------------------

NEW_PASSWORD = "a-new-long-passphrase-7"


def change_password(client: Client, **extra: str):
    data = {"old_password": "alice-password", "new_password1": NEW_PASSWORD}
    return client.post(
        "/account/password/",
        {**data, "new_password2": NEW_PASSWORD, **extra},
        follow=True,
        HTTP_ACCEPT_LANGUAGE="en",
    )


def test_the_password_page_offers_to_revoke_the_keys_ticked(alice_client, alice):
    api_key_create(owner=alice)

    page = alice_client.get("/account/password/", HTTP_ACCEPT_LANGUAGE="en").content.decode()

    box = re.search(r'<input type="checkbox" name="revoke_api_keys"[^>]*>', page).group(0)
    assert "checked" in box
    assert "Also revoke all my API keys" in page
    assert "You have 1 active API key." in page


def test_changing_the_password_with_the_box_ticked_revokes_every_key(alice_client, alice, bob):
    keys = [api_key_create(owner=alice)[0] for _ in range(2)]
    theirs, _ = api_key_create(owner=bob)

    r = change_password(alice_client, revoke_api_keys="on")

    assert "2 API keys revoked" in r.content.decode()
    alice.refresh_from_db()
    assert alice.check_password(NEW_PASSWORD)
    for key in keys:
        key.refresh_from_db()
        assert key.revoke_reason == ApiKeyRevokeReason.PASSWORD_CHANGE and key.is_revoked
    theirs.refresh_from_db()
    assert not theirs.is_revoked


def test_changing_the_password_with_the_box_unticked_keeps_the_keys(alice_client, alice):
    key, _ = api_key_create(owner=alice)

    r = change_password(alice_client)

    assert "Your password was changed." in r.content.decode()
    key.refresh_from_db()
    assert not key.is_revoked


def test_a_refused_password_change_revokes_nothing(alice_client, alice):
    key, _ = api_key_create(owner=alice)

    r = alice_client.post(
        "/account/password/",
        {
            "old_password": "wrong",
            "new_password1": NEW_PASSWORD,
            "new_password2": NEW_PASSWORD,
            "revoke_api_keys": "on",
        },
    )

    assert list(r.context["form"].errors) == ["old_password"]
    key.refresh_from_db()
    assert not key.is_revoked


# -- a password set by someone else ---------------------------------------------------------


def test_a_superuser_setting_a_users_password_in_the_admin_revokes_their_keys_recording_who(
    admin_client, alice, bob, caplog
):
    """An administrator's reset is what is done when an account may be in the wrong hands:
    every key the old password could make ends, recorded under the administrator."""
    caplog.set_level(logging.INFO, logger="jobs.api_keys")
    made = [api_key_create(owner=alice) for _ in range(2)]
    theirs, _ = api_key_create(owner=bob)

    r = admin_client.post(
        f"/admin/auth/user/{alice.pk}/password/",
        {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD, "usable_password": "true"},
        follow=True,
        HTTP_ACCEPT_LANGUAGE="en",
    )

    assert r.status_code == 200
    assert "2 API keys of alice revoked" in r.content.decode()
    alice.refresh_from_db()
    assert alice.check_password(NEW_PASSWORD)
    for key, secret in made:
        key.refresh_from_db()
        assert key.is_revoked and key.revoke_reason == ApiKeyRevokeReason.PASSWORD_RESET
        entry = LogEntry.objects.get(object_id=str(key.pk), content_type__model="apikey")
        assert entry.user.username == "root" and entry.is_change()
        assert f"API key {key.access_key_id} of alice revoked (password_reset, by root)" in (
            caplog.text
        )
        assert secret not in caplog.text
    assert NEW_PASSWORD not in caplog.text
    theirs.refresh_from_db()
    assert not theirs.is_revoked
    with translation.override("zh-hans"):
        assert made[0][0].get_revoke_reason_display() == "管理员为创建人设置了新密码"


def test_a_superuser_setting_their_own_password_in_the_admin_is_told_of_their_own_keys(
    admin_client, caplog
):
    """Their own password set in the admin (no current one asked) revokes their keys as their
    own change does, and the page says so as the console's password page does, not as a
    password someone else set."""
    from django.contrib.auth.models import User

    caplog.set_level(logging.INFO, logger="jobs.api_keys")
    root = User.objects.get(username="root")
    key, _ = api_key_create(owner=root)

    for language, said, not_said in [
        ("en", "1 API key revoked: requests signed with it", "set by someone else"),
        ("zh-hans", "已吊销 1 个 API 密钥", "由他人设置密码"),
    ]:
        if language == "zh-hans":
            key, _ = api_key_create(owner=root)
        r = admin_client.post(
            f"/admin/auth/user/{root.pk}/password/",
            {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD, "usable_password": "true"},
            follow=True,
            HTTP_ACCEPT_LANGUAGE=language,
        )

        assert r.status_code == 200
        page = r.content.decode()
        assert said in page and not_said not in page
        key.refresh_from_db()
        assert key.is_revoked and key.revoke_reason == ApiKeyRevokeReason.PASSWORD_CHANGE
    assert "by root" not in caplog.text
    assert not LogEntry.objects.filter(content_type__model="apikey")


def test_manage_py_changepassword_revokes_the_users_keys(alice, monkeypatch, caplog):
    from django.core.management import call_command

    caplog.set_level(logging.INFO, logger="jobs.api_keys")
    key, _ = api_key_create(owner=alice)
    monkeypatch.setattr("getpass.getpass", lambda prompt="": NEW_PASSWORD)  # the terminal

    call_command("changepassword", "alice", stdout=io.StringIO())

    key.refresh_from_db()
    assert key.is_revoked and key.revoke_reason == ApiKeyRevokeReason.PASSWORD_RESET
    assert "by a password set outside the console's pages" in caplog.text
    # Nobody in the console did it: nothing in the admin's history names anyone.
    assert not LogEntry.objects.filter(object_id=str(key.pk), content_type__model="apikey")


def test_a_password_set_in_code_revokes_the_keys_and_a_new_account_has_none_to_revoke(alice):
    key, _ = api_key_create(owner=alice)

    alice.set_password(NEW_PASSWORD)
    alice.save()

    key.refresh_from_db()
    assert key.revoke_reason == ApiKeyRevokeReason.PASSWORD_RESET
    # Saving the account again without a new password revokes nothing more.
    again, _ = api_key_create(owner=alice)
    alice.email = "alice@example.org"
    alice.save()
    again.refresh_from_db()
    assert not again.is_revoked


def test_a_password_rehashed_at_log_in_revokes_nothing(alice):
    """Django stores a password again under a stronger hash when its owner logs in: the
    password is the same, the keys stay."""
    from django.contrib.auth.hashers import make_password

    key, _ = api_key_create(owner=alice)
    weak = make_password("alice-password", salt="ab", hasher="md5")  # too little salt: redone
    type(alice).objects.filter(pk=alice.pk).update(password=weak)

    assert Client().login(username="alice", password="alice-password")

    alice.refresh_from_db()
    assert alice.password != weak  # re-hashed
    key.refresh_from_db()
    assert not key.is_revoked


# -- the admin ------------------------------------------------------------------------------


def test_the_admin_shows_expiry_filters_by_it_and_records_a_staff_revocation(admin_client, alice):
    never, _ = api_key_create(owner=alice, description="forever")
    soon, _ = api_key_create(owner=alice, expires_in_days=30)
    expired, _ = api_key_create(owner=alice, expires_in_days=30)
    ApiKey.objects.filter(pk=expired.pk).update(expires_at=timezone.now() - timedelta(days=1))

    def listed(query: str) -> set[str]:
        page = admin_client.get(f"/admin/jobs/apikey/{query}", HTTP_ACCEPT_LANGUAGE="en")
        return {
            k.access_key_id
            for k in (never, soon, expired)
            if k.access_key_id in page.content.decode()
        }

    assert listed("?expiry=expired") == {expired.access_key_id}
    assert listed("?expiry=soon") == {soon.access_key_id}
    assert listed("?expiry=never") == {never.access_key_id}
    listing = admin_client.get("/admin/jobs/apikey/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "Expires" in listing and "column-expires_shown" in listing

    admin_client.post(
        "/admin/jobs/apikey/", {"action": "revoke_keys", "_selected_action": [soon.pk]}
    )

    soon.refresh_from_db()
    assert soon.revoke_reason == ApiKeyRevokeReason.STAFF
    entry = LogEntry.objects.get(object_id=str(soon.pk))
    assert entry.user.username == "root" and entry.is_change()
    with translation.override("zh-hans"):
        assert entry.get_change_message() == "已修改吊销时间 和 吊销方式。"


# The reference's AIHC-shaped vectors (docs: aihc-openapi.md §4.2), computed by Baidu's
# bce-python-sdk, its baiducloud core signer and the aihc CLI: the console's check of a
# request accepts each form those clients sign with (checked in QA round 33).
AIHC_VECTOR_TIME = datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)


@pytest.mark.parametrize(
    ("listed", "signature"),
    [
        ("", "9611fc77ea4ed76803191fe47c0f3b894cb3a40f288468d449786159cab1fbfd"),
        ("host;x-bce-date", "48ccce4d67e8ecd1726790193159460e695dff231ebd4d976d021d3d82c53b1a"),
        (
            "content-type;host;x-bce-date",
            "b962924ad47e49b95eddf424773eef77a3d0c9dfd6f0b377d5019263d49b76d2",
        ),
    ],
)
def test_the_published_aihc_signatures_are_accepted_for_their_key(
    alice, settings, listed, signature
):
    settings.ALLOWED_HOSTS = ["aihc.bj.baidubce.com"]
    key = ApiKey.objects.create(
        owner=alice, access_key_id="test-ak", secret_sealed=seal("test-sk", access_key_id="test-ak")
    )
    wrong = signature[:-1] + ("0" if signature[-1] != "0" else "1")

    assert verify_request(vector_request(listed, signature), now=AIHC_VECTOR_TIME) == key
    with pytest.raises(ApiAuthError) as refused:
        verify_request(vector_request(listed, wrong), now=AIHC_VECTOR_TIME)
    assert refused.value.code == "SignatureDoesNotMatch"


def vector_request(listed: str, signature: str):
    """The reference's request: POST /api/v1/aijobs?resourcePoolId=cce-xxxx, body {}."""
    return RequestFactory().post(
        "/api/v1/aijobs?resourcePoolId=cce-xxxx",
        data=b"{}",
        content_type="application/json",
        HTTP_HOST="aihc.bj.baidubce.com",
        HTTP_X_BCE_DATE="2023-11-14T22:13:20Z",
        HTTP_AUTHORIZATION=f"bce-auth-v1/test-ak/2023-11-14T22:13:20Z/1800/{listed}/{signature}",
    )
