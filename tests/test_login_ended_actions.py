"""A button that posts a form (Stop, Submit...) pressed after the log-in ended: nothing is
done, the login page says so, and logging in returns to the page the button was on (qa45)."""

from __future__ import annotations

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
