"""A team's admin in a real browser (qa114): the job list's status reasons fit a tablet's
width, and several accounts are deactivated from the user list after the page saying what
each keeps."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import expect

from jobs.models import Job, JobStatus
from tests.conftest import log_in

from .test_admin_browser import COLUMNS_FIT, submit

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("language", ["zh-hans", "en"])
def test_at_768_pixels_status_reasons_under_the_status_keep_every_column_in_view(
    browser, live_server, alice, reviewer, language
):
    reasons = [
        "master-0 OOMKilled (exit code 137): the container used more memory than its limit",
        "worker-3 failed: " + "x" * 120,  # no space to break at
    ]
    for n, reason in enumerate(reasons):
        job = submit(alice, f"llama2-70b-sft-run-{n}")
        Job.objects.filter(pk=job.pk).update(status=JobStatus.FAILED, status_reason=reason)
    context = browser.new_context(base_url=live_server.url, viewport={"width": 768, "height": 900})
    context.add_cookies([{"name": "django_language", "value": language, "url": live_server.url}])
    page = context.new_page()
    log_in(page, "carol", "carol-password")

    page.goto("/admin/jobs/job/")

    expect(page.locator("#result_list .job-status-reason")).to_have_count(2)
    assert page.evaluate(COLUMNS_FIT) == {"fits": True, "hidden": []}
    context.close()


def test_a_superuser_deactivates_two_accounts_from_the_user_list(page, superuser, alice, bob):
    submit(alice, "alices-queued-job")
    log_in(page, "root", "root-password")

    page.goto("/admin/auth/user/")
    page.check(f"input[name=_selected_action][value='{alice.pk}']")
    page.check(f"input[name=_selected_action][value='{bob.pk}']")
    page.select_option("select[name=action]", "deactivate_users")
    page.click("button[name=index]")

    expect(page.locator("#deactivate-users tbody tr")).to_have_count(2)
    expect(page.locator("#deactivate-users tbody tr").first).to_contain_text("alice")
    assert User.objects.filter(is_active=True).count() == 3  # asked, nothing done
    page.click("#confirm-deactivate")
    expect(page.locator(".messagelist .success")).to_be_visible()
    assert not User.objects.get(pk=alice.pk).is_active
    assert not User.objects.get(pk=bob.pk).is_active
