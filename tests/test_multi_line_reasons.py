"""A status reason of several lines (a platform's message, one Job's error a line; a
reviewer's reason written in two lines) keeps its lines where there is room for them, the
job page and the API, and is one line in the job list, its lines joined by " / " (fix108:
HTML ran them together with a space, one run-on sentence)."""

from __future__ import annotations

import html

import pytest
from django.urls import reverse

from jobs.models import ReviewMode, ReviewPolicy
from jobs.review import job_reject

from .runner_helpers import make_spec, runner_settings, submit  # noqa: F401

pytestmark = pytest.mark.usefixtures("runner_settings")

REASON = "Too many cards.\r\n  Ask for 8 at most.\n\nThen submit again."


def rejected_in_two_lines(alice, reviewer):
    ReviewPolicy.objects.create(pk=1, mode=ReviewMode.ALL)
    job = submit(alice, make_spec("true"))
    assert job_reject(job=job, reviewer=reviewer, reason=REASON)
    job.refresh_from_db()
    return job


def test_the_job_list_shows_a_reason_of_several_lines_on_one_its_lines_joined(
    alice, alice_en, reviewer
):
    job = rejected_in_two_lines(alice, reviewer)

    listed = alice_en.get(reverse("job-list")).content.decode()

    row = listed[listed.index(f'data-job="{job.public_id}"') :]
    reason = html.unescape(row[: row.index("</tr>")].split("job-status-reason")[1])
    title, text = reason.split('title="')[1].split('">', 1)
    assert text.split("</div>")[0] == ("Too many cards. / Ask for 8 at most. / Then submit again.")
    # Its tooltip has room for the lines.
    assert title == job.status_reason_shown
    assert "\n" in title


def test_the_job_page_keeps_a_reasons_lines(alice, alice_en, reviewer):
    job = rejected_in_two_lines(alice, reviewer)

    page = alice_en.get(reverse("job-detail", args=[job.public_id])).content.decode()

    shown = html.unescape(page.split('id="status-reason">')[1].split("</div>")[0])
    assert shown == job.status_reason_shown
    assert shown.splitlines() == [
        "Too many cards.",
        "  Ask for 8 at most.",
        "",
        "Then submit again.",
    ]
