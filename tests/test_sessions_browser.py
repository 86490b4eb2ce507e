"""A log-in from before the console read sessions and users with plain queries (jobs.sessions,
jobs.auth_backends), in a real browser, as a person would find it after the upgrade."""

from __future__ import annotations

import re
from urllib.parse import urlparse

import pytest
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.sessions.backends.db import SessionStore as DjangoSessionStore
from playwright.sync_api import expect

from tests.test_wizard import A800
from tests.test_wizard_browser import fill_basic, fill_image, start

pytestmark = pytest.mark.browser


@pytest.fixture(autouse=True)
def _local_pool(settings):
    settings.LOCAL_ACCELERATORS = f"{A800}=8"


def test_a_person_logged_in_before_the_upgrade_carries_on_in_the_wizard_and_logs_out(
    page, live_server, alice
):
    # The session Django's own engine and ModelBackend stored at that person's log-in.
    store = DjangoSessionStore()
    store[SESSION_KEY] = str(alice.pk)
    store[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    store[HASH_SESSION_KEY] = alice.get_session_auth_hash()
    store.create()
    page.context.add_cookies(
        [
            {
                "name": settings.SESSION_COOKIE_NAME,
                "value": store.session_key,
                "url": live_server.url,
                "httpOnly": True,
            }
        ]
    )

    page.goto("/")
    assert urlparse(page.url).path == "/"  # not sent to the log-in page
    start(page)
    fill_basic(page)
    fill_image(page)
    page.fill("#id_roles-1-replicas", "3")  # the role totals partial, redrawn by htmx
    expect(page.locator("#card-totals")).to_contain_text(f"4 × A800 80GB ({A800})")

    page.locator("form[action='/logout/'] button").click()
    page.wait_for_url(re.compile(r"/login/"))
    page.goto("/")
    page.wait_for_url(re.compile(r"/login/"))  # logging out ended that session
