"""A user's access keys for the AIHC-compatible API: the page under the account area that
creates them (the secret shown once), lists and revokes them, and the admin's view of them."""

from __future__ import annotations

import logging
import re

import pytest
from django.test import Client

from jobs.api_keys import MAX_ACTIVE_KEYS, api_key_create, unseal
from jobs.models import ApiKey

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


def test_the_page_that_shows_a_secret_is_never_cached(alice_client):
    r = alice_client.post("/account/keys/", {"description": ""})

    assert "no-store" in r["Cache-Control"]


def test_the_key_page_says_which_endpoint_to_point_a_client_at(alice_client, settings):
    settings.SITE_URL = "https://console.example.com"

    page = alice_client.get("/account/keys/", HTTP_ACCEPT_LANGUAGE="en").content.decode()

    assert '<code id="api-endpoint">https://console.example.com</code>' in page
    assert 'id="nav-api-keys"' in page


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
