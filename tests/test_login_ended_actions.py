"""A button that posts a form (Stop, Submit...) pressed after the log-in ended: nothing is
done, the login page says so, and logging in returns to the page the button was on (qa45)."""

from __future__ import annotations

from urllib.parse import quote

from django.test import Client
from django.urls import reverse

from jobs.models import Draft, JobStatus

from .test_job_pages import submit

NOTHING_DONE = "您的登录已失效，因此刚才的操作未执行"


def test_a_stop_sent_after_the_log_in_ended_is_not_done_and_the_login_page_says_so(alice):
    job = submit(alice)
    client = Client()  # the session is gone

    r = client.post(reverse("job-stop", args=[job.public_id]), {"confirmed": "1"})

    job_page = reverse("job-detail", args=[job.public_id])
    assert r.status_code == 302
    assert r["Location"] == reverse("login") + "?next=" + job_page
    assert NOTHING_DONE in client.get(r["Location"]).content.decode()
    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED
    assert not job.events.filter(reason__in=["Stopped", "StopRequested"]).exists()


def test_a_submit_sent_after_the_log_in_ended_returns_to_the_review_and_submits_nothing(alice):
    draft = Draft.objects.create(owner=alice, data={})
    client = Client()

    r = client.post(reverse("wizard-submit", args=[draft.id]), {"revision": "x"})

    review = reverse("wizard-step", args=[draft.id, "review"])
    assert r.status_code == 302
    assert r["Location"] == reverse("login") + "?next=" + review
    assert NOTHING_DONE in client.get(r["Location"]).content.decode()
    draft.refresh_from_db()
    assert draft.submitted_at is None


def test_an_htmx_post_after_the_log_in_ended_gets_its_401_and_leaves_no_message_behind(alice):
    job = submit(alice)
    client = Client()

    r = client.post(
        reverse("job-hang-capture", args=[job.public_id]), headers={"HX-Request": "true"}
    )

    assert r.status_code == 401  # the page says it in its banner (console.js)
    assert NOTHING_DONE not in client.get(reverse("login")).content.decode()


def test_a_stop_of_selected_jobs_from_a_filtered_list_returns_to_that_list_after_logging_in(
    alice,
):
    # Found (qa45): the log-in came back to the whole list, its filters lost.
    job = submit(alice)
    client = Client()
    shown = "status=Queued&q=llm&page=2"

    r = client.post(
        reverse("job-bulk"),
        {"action": "stop", "confirmed": "1", "jobs": [job.public_id], "back": shown},
    )

    filtered = reverse("job-list") + "?q=llm&status=Queued&page=2"
    assert r.status_code == 302
    assert r["Location"] == reverse("login") + "?next=" + quote(filtered, safe="/")
    assert NOTHING_DONE in client.get(r["Location"]).content.decode()
    logged_in = client.post(
        r["Location"], {"username": "alice", "password": "alice-password", "next": filtered}
    )
    assert logged_in.status_code == 302 and logged_in["Location"] == filtered
    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED
    assert not job.events.filter(reason__in=["Stopped", "StopRequested"]).exists()


def test_a_form_page_in_the_bulk_form_is_read_as_the_lists_filters_only(alice):
    # The form is an anonymous visitor's: what it carries comes back as the list's filters,
    # never as another address to go to after logging in.
    client = Client()

    r = client.post(
        reverse("job-bulk"), {"action": "stop", "back": "next=https://evil.example/&q=a"}
    )

    assert r.status_code == 302
    assert r["Location"] == reverse("login") + "?next=" + quote(
        reverse("job-list") + "?q=a", safe="/"
    )
