"""A button that posts a form (Stop, Submit...) pressed after the log-in ended: nothing is
done, the login page says so, and logging in returns to the page the button was on (qa45)."""

from __future__ import annotations

import copy
import html
import json
import uuid
from urllib.parse import parse_qs, quote, urlencode, urlsplit

from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from jobs.http import KEPT_ACROSS_LOGIN_MAX_BYTES
from jobs.models import ApiKey, Draft, Job, JobStatus
from jobs.wizard_import import MAX_IMPORT_BYTES

from .test_job_pages import submit
from .test_wizard import A800
from .test_wizard_import import BODY

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


def _log_in_again(client, login_address, username="alice"):
    next_page = parse_qs(urlsplit(login_address).query)["next"][0]
    r = client.post(
        login_address, {"username": username, "password": f"{username}-password", "next": next_page}
    )
    assert r.status_code == 302 and r["Location"] == next_page
    return r["Location"]


def _paste(secret: str = "") -> str:
    body = copy.deepcopy(BODY)
    body["name"] = "pasted-before-the-log-in-ended"
    if secret:
        body["jobSpec"]["envs"].append({"name": "API_TOKEN", "value": secret})
    return json.dumps(body)


def test_an_import_sent_after_the_log_in_ended_is_in_the_box_again_after_logging_in(
    alice, settings, tmp_path
):
    # Found (left30): without JavaScript the pasted request was gone after logging in.
    settings.LOCAL_ACCELERATORS = f"{A800}=8"
    settings.LOCAL_VOLUMES = f"scratch={tmp_path}"
    client = Client()
    key = uuid.uuid4().hex
    sent = {"body": _paste(), "resource_pool": "local", "create_key": key, "page_user": alice.pk}

    r = client.post(reverse("wizard-import"), sent)

    assert r.status_code == 302
    assert r["Location"] == reverse("login") + "?next=" + reverse("wizard-start")
    assert NOTHING_DONE in client.get(r["Location"]).content.decode()
    page = client.get(_log_in_again(client, r["Location"])).content.decode()
    assert html.escape(_paste()) in page
    assert f'name="create_key" value="{key}"' in page
    assert "您提交此表单时登录已失效" in page
    assert not Draft.objects.filter(owner=alice).exists()
    # Kept once: a reload shows the empty box again.
    assert (
        "pasted-before-the-log-in-ended" not in client.get(reverse("wizard-start")).content.decode()
    )
    # Sent again from the page, it is imported once.
    assert client.post(reverse("wizard-import"), sent).status_code == 302
    assert client.post(reverse("wizard-import"), sent).status_code == 302
    assert Draft.objects.filter(owner=alice).count() == 1


def test_an_import_kept_across_the_log_in_never_shows_its_secret_values_again(alice):
    client = Client()
    sent = {
        "body": _paste("s3cr3t-kept-value"),
        "create_key": uuid.uuid4().hex,
        "page_user": alice.pk,
    }

    r = client.post(reverse("wizard-import"), sent)

    page = client.get(_log_in_again(client, r["Location"])).content.decode()
    assert "API_TOKEN" in page and "******" in page
    assert "s3cr3t-kept-value" not in page


def test_an_import_as_large_as_the_box_takes_in_chinese_is_kept_across_the_log_in(alice):
    # review32: the bound was the paste's size as JSON escapes it (a Chinese character six
    # bytes, a quote two), so a paste the import takes was dropped without a word.
    body = copy.deepcopy(BODY)
    body["description"] = ""
    fixed = len(json.dumps(body, ensure_ascii=False).encode())
    body["description"] = "训练" * ((MAX_IMPORT_BYTES - fixed) // 6)
    text = json.dumps(body, ensure_ascii=False)
    assert len(text.encode()) <= MAX_IMPORT_BYTES
    client = Client()
    sent = {"body": text, "create_key": uuid.uuid4().hex, "page_user": alice.pk}

    r = client.post(reverse("wizard-import"), sent)

    page = client.get(_log_in_again(client, r["Location"])).content.decode()
    assert html.escape(text) in page
    assert "您提交此表单时登录已失效" in page


def test_a_json_file_imported_after_the_log_in_ended_is_in_the_box_after_logging_in(alice):
    # review32: the page said what was sent was filled in again, and the box was empty.
    client = Client()
    upload = SimpleUploadedFile("job.json", ("\ufeff" + _paste()).encode(), "application/json")
    sent = {"body": "", "file": upload, "create_key": uuid.uuid4().hex, "page_user": alice.pk}

    r = client.post(reverse("wizard-import"), sent)

    assert r.status_code == 302
    page = client.get(_log_in_again(client, r["Location"])).content.decode()
    assert html.escape(_paste()) in page
    assert "您提交此表单时登录已失效" in page
    assert not Draft.objects.filter(owner=alice).exists()


def test_a_paste_larger_than_any_import_sent_logged_out_is_not_stored_in_the_session(alice):
    client = Client()
    sent = {"body": "x" * (KEPT_ACROSS_LOGIN_MAX_BYTES + 1), "page_user": alice.pk}

    r = client.post(reverse("wizard-import"), sent)

    assert r.status_code == 302
    assert "form_posted_logged_out" not in client.session


def test_an_import_kept_across_the_log_in_is_not_given_to_someone_else_logging_in(alice, bob):
    client = Client()
    sent = {"body": _paste(), "create_key": uuid.uuid4().hex, "page_user": alice.pk}

    r = client.post(reverse("wizard-import"), sent)

    page = client.get(_log_in_again(client, r["Location"], "bob")).content.decode()
    assert "pasted-before-the-log-in-ended" not in page
    assert "form_posted_logged_out" not in client.session


def test_a_stop_from_a_job_page_opened_from_a_filtered_list_returns_to_that_page_with_its_list(
    alice,
):
    # Found (left30): the log-in came back to the job page without `?back=`, so its "back to
    # the list" went to the whole list.
    job = submit(alice)
    client = Client()

    r = client.post(
        reverse("job-stop", args=[job.public_id]),
        {"confirmed": "1", "back": "status=Queued&q=llm&page=2"},
    )

    job_page = (
        reverse("job-detail", args=[job.public_id])
        + "?"
        + urlencode({"back": "q=llm&status=Queued&page=2"})
    )
    assert r.status_code == 302
    assert r["Location"] == reverse("login") + "?next=" + quote(job_page, safe="/")
    assert _log_in_again(client, r["Location"]) == job_page
    page = client.get(job_page).content.decode()
    assert 'name="back" value="q=llm&amp;status=Queued&amp;page=2" form="job-stop-form"' in page
    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED


def test_a_delete_from_a_job_page_after_the_log_in_ended_returns_to_it_with_its_list(alice):
    job = submit(alice)
    client = Client()

    r = client.post(
        reverse("job-delete", args=[job.public_id]), {"confirmed": "1", "back": "q=llm"}
    )

    job_page = reverse("job-detail", args=[job.public_id]) + "?back=q%3Dllm"
    assert r.status_code == 302
    assert r["Location"] == reverse("login") + "?next=" + quote(job_page, safe="/")
    assert Job.objects.filter(pk=job.pk).exists()


def test_a_key_asked_for_after_the_log_in_ended_is_not_made_and_its_form_comes_back_filled_in(
    alice,
):
    # Found (left30): the API keys page bypassed post_only: the bare login form, then an empty
    # form, the key's name and expiry lost.
    client = Client()
    key = uuid.uuid4().hex
    sent = {
        "description": "nightly <script>",
        "expires_in": "30",
        "create_key": key,
        "page_user": alice.pk,
    }

    r = client.post(reverse("api-keys"), sent)

    assert r.status_code == 302
    assert r["Location"] == reverse("login") + "?next=" + reverse("api-keys")
    assert NOTHING_DONE in client.get(r["Location"]).content.decode()
    assert not ApiKey.objects.exists()
    r = client.get(_log_in_again(client, r["Location"]))
    form = r.context["form"]
    assert not form.is_bound
    assert form.initial == {
        "description": "nightly <script>",
        "expires_in": "30",
        "create_key": key,
    }
    assert 'value="nightly &lt;script&gt;"' in r.content.decode()
    # Create key pressed again, twice (a resend): one key.
    assert client.post(reverse("api-keys"), sent).status_code == 200
    assert client.post(reverse("api-keys"), sent).status_code == 200
    made = ApiKey.objects.get()
    assert (made.owner, made.description) == (alice, "nightly <script>")
