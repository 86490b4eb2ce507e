"""An auditor (a superuser) reads the admin's history in a real browser after an incident."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from playwright.sync_api import expect

from jobs.models import CardQuota
from tests.conftest import log_in

pytestmark = pytest.mark.browser


def test_an_auditor_finds_who_raised_the_teams_card_quota_by_clicking_through_the_history(
    page, superuser
):
    team = Group.objects.create(name="vision")
    quota = CardQuota.objects.create(group=team, max_cards=8)
    dave = User.objects.create_superuser("dave", "dave@example.com", "dave-password")
    erin = User.objects.create_superuser("erin", "erin@example.com", "erin-password")
    for who, cards in ((dave, 64), (erin, 16)):
        client = Client()
        client.force_login(who)
        changed = client.post(
            f"/admin/jobs/cardquota/{quota.pk}/change/",
            {"group": team.pk, "card_type": "", "max_cards": cards, "max_running_jobs": ""},
        )
        assert changed.status_code == 302
    log_in(page, "root", "root-password")

    page.goto("/admin/")
    page.click("a[href='/admin/admin/logentry/']")
    page.fill("#searchbar", "vision")
    page.press("#searchbar", "Enter")
    expect(page.locator("#result_list tbody tr")).to_have_count(2)
    page.locator("#changelist-filter a", has_text="dave").click()

    rows = page.locator("#result_list tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("dave")
    expect(rows.first).to_contain_text("vision")
    rows.first.locator("th a").click()
    expect(page.locator("#content")).to_contain_text("dave")
    # Read-only: nothing to save or delete.
    expect(page.locator("input[type=submit]")).to_have_count(0)
    expect(page.locator("a.deletelink")).to_have_count(0)
