"""Deleting a job opened from a filtered job list returns to that list as it was left (its filters
and page), not to the unfiltered first page, so a team lead going through a filter's jobs one by
one keeps their place; opened any other way, it returns to the list itself."""

from __future__ import annotations

import re
from html import unescape
from urllib.parse import urlencode

from django.urls import reverse

from jobs.models import Job, JobStatus

from .test_job_pages import finish, submit


def delete_form_back(html: str) -> str | None:
    found = re.search(
        r'<input type="hidden" name="back" value="([^"]*)" form="job-delete-form"', html
    )
    return unescape(found[1]) if found else None


def test_delete_on_a_job_opened_from_a_filtered_list_returns_to_that_list_and_page(
    alice, alice_client
):
    job = submit(alice, name="failed-run")
    finish(job)
    listed = "/?status=failed&label=exp%3Dlr&queue=default&page=3&sel=x"

    page = alice_client.get(
        reverse("job-detail", args=[job.public_id]), HTTP_REFERER=f"http://testserver{listed}"
    )

    assert page.status_code == 200
    # The list's own parameters alone (the selection is not carried back: the job is gone).
    back = delete_form_back(page.content.decode())
    assert back == "status=failed&queue=default&label=exp%3Dlr&page=3"
    response = alice_client.post(
        reverse("job-delete", args=[job.public_id]), {"confirmed": "1", "back": back}
    )
    assert response.status_code == 302
    assert response.url == "/?status=failed&queue=default&label=exp%3Dlr&page=3"
    assert not Job.objects.filter(pk=job.pk).exists()


def test_without_javascript_the_delete_question_page_carries_the_list_back_too(alice, alice_client):
    job = submit(alice, name="failed-run")
    finish(job)

    asked = alice_client.post(
        reverse("job-delete", args=[job.public_id]), {"back": "status=failed"}
    )

    assert asked.status_code == 200
    assert '<input type="hidden" name="back" value="status=failed">' in asked.content.decode()
    response = alice_client.post(
        reverse("job-delete", args=[job.public_id]), {"confirmed": "1", "back": "status=failed"}
    )
    assert response.status_code == 302 and response.url == "/?status=failed"
    assert not Job.objects.filter(pk=job.pk).exists()


def test_a_job_opened_from_elsewhere_returns_to_the_list_itself_and_a_hostile_back_is_dropped(
    alice, alice_client
):
    first, second = submit(alice, name="first"), submit(alice, name="second")
    for job in (first, second):
        finish(job)

    page = alice_client.get(
        reverse("job-detail", args=[first.public_id]),
        HTTP_REFERER="http://testserver/pools/?pool=local",
    )
    assert page.status_code == 200 and delete_form_back(page.content.decode()) is None
    response = alice_client.post(reverse("job-delete", args=[first.public_id]), {"confirmed": "1"})
    assert response.status_code == 302 and response.url == "/"

    # Only the list's own parameters go back, whatever the form was sent with.
    response = alice_client.post(
        reverse("job-delete", args=[second.public_id]),
        {"confirmed": "1", "back": "next=//evil.example&page=%00&status=failed"},
    )
    assert response.status_code == 302
    assert response.url == "/?status=failed&page=%00"
    assert not Job.objects.filter(pk__in=[first.pk, second.pk]).exists()


def form_back(html: str, form: str) -> str | None:
    found = re.search(rf'<input type="hidden" name="back" value="([^"]*)" form="{form}"', html)
    return unescape(found[1]) if found else None


def test_a_job_stopped_first_still_returns_to_the_filtered_list_when_deleted(alice, alice_client):
    # Going through ?status=queued one by one: Stop, then Delete. The page Stop returns to is
    # asked for with the job page as its Referer (the browser keeps the referrer of the post
    # through the redirect), so the list it was opened from must come with it (review28: Delete
    # then went to the unfiltered first page).
    job = submit(alice, name="queued-run")
    page_url = reverse("job-detail", args=[job.public_id])
    opened = alice_client.get(page_url, HTTP_REFERER="http://testserver/?status=queued&page=2")
    stop_back = form_back(opened.content.decode(), "job-stop-form")
    assert stop_back == "status=queued&page=2"

    stopped = alice_client.post(
        reverse("job-stop", args=[job.public_id]), {"confirmed": "1", "back": stop_back}
    )
    assert stopped.status_code == 302
    again = alice_client.get(stopped.url, HTTP_REFERER=f"http://testserver{page_url}")
    assert again.status_code == 200
    assert "Stop requested." in again.content.decode() or "已请求停止" in again.content.decode()
    back = delete_form_back(again.content.decode())
    assert back == "status=queued&page=2"
    response = alice_client.post(
        reverse("job-delete", args=[job.public_id]), {"confirmed": "1", "back": back}
    )
    assert response.status_code == 302 and response.url == "/?status=queued&page=2"


def test_without_javascript_the_stop_question_page_carries_the_list_back(alice, alice_client):
    job = submit(alice, name="queued-run")

    asked = alice_client.post(reverse("job-stop", args=[job.public_id]), {"back": "status=queued"})

    assert asked.status_code == 200
    assert '<input type="hidden" name="back" value="status=queued">' in asked.content.decode()
    stopped = alice_client.post(
        reverse("job-stop", args=[job.public_id]), {"confirmed": "1", "back": "status=queued"}
    )
    assert stopped.status_code == 302
    assert "back=status%3Dqueued" in stopped.url


def test_stop_from_a_list_with_a_long_search_returns_to_an_address_a_server_takes(
    alice, alice_client
):
    # The list's address fit (a search of 300 Chinese characters is 2,700 bytes in it), but
    # carried as ?back= each of its escapes is escaped again: 4,500 bytes, past gunicorn's
    # request line. The job page comes back without the list rather than as a 400.
    from jobs.labels import SAFE_ADDRESS_LENGTH

    job = submit(alice, name="queued-run")
    back = urlencode({"q": "你" * 300})
    assert len(f"/?{back}") <= SAFE_ADDRESS_LENGTH

    stopped = alice_client.post(
        reverse("job-stop", args=[job.public_id]), {"confirmed": "1", "back": back}
    )

    assert stopped.status_code == 302
    assert len(stopped.url) <= SAFE_ADDRESS_LENGTH
    assert stopped.url.startswith(reverse("job-detail", args=[job.public_id]))
    job.refresh_from_db()
    assert job.status in (JobStatus.STOPPING, JobStatus.STOPPED)
