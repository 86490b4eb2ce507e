"""The job list filtered by when its jobs were created (创建时间 from / to): days in the
console's time zone (TIME_ZONE, Asia/Shanghai in the tests), both included, kept across the
list's pages, refresh, selection and ways back."""

from __future__ import annotations

import html as html_lib
import re
import uuid
from datetime import UTC, datetime
from urllib.parse import urlencode, urlsplit

import pytest
from django.urls import reverse

from jobs.models import Job, JobStatus
from jobs.services import job_transition, jobs_submit

from .runner_helpers import make_spec, runner_settings  # noqa: F401

pytestmark = pytest.mark.usefixtures("runner_settings")


def submit(owner, name: str, created: datetime) -> Job:
    spec = make_spec("echo hi", name=name, labels=[("team", "nlp")])
    [job] = jobs_submit(owner=owner, spec=spec, submit_key=str(uuid.uuid4()))
    Job.objects.filter(pk=job.pk).update(created_at=created)
    return job


@pytest.fixture
def month(alice) -> dict[str, Job]:
    # Shanghai is UTC+8: each job's day there is not its day in UTC.
    return {
        "oct-31-late": submit(alice, "oct-31-late", datetime(2026, 10, 31, 15, 30, tzinfo=UTC)),
        "nov-01-early": submit(alice, "nov-01-early", datetime(2026, 10, 31, 16, 10, tzinfo=UTC)),
        "nov-30-last": submit(
            alice, "nov-30-last", datetime(2026, 11, 30, 15, 59, 59, 999999, tzinfo=UTC)
        ),
        "dec-01-first": submit(alice, "dec-01-first", datetime(2026, 11, 30, 16, 0, tzinfo=UTC)),
    }


def shown(client, jobs: dict[str, Job], **params) -> set[str]:
    r = client.get(reverse("job-list"), params)
    assert r.status_code == 200
    page = r.content.decode()
    return {name for name, job in jobs.items() if f'data-job="{job.public_id}"' in page}


def error(page: str, field: str) -> str:
    found = re.search(rf'id="id_{field}_error">([^<]*)<', page)
    return html_lib.unescape(found.group(1)) if found else ""


def test_the_list_shows_jobs_created_between_two_days_in_the_console_time_zone_both_included(
    alice, alice_client, month
):
    november = {"created_from": "2026-11-01", "created_to": "2026-11-30"}
    assert shown(alice_client, month, **november) == {"nov-01-early", "nov-30-last"}
    assert shown(alice_client, month, created_from="2026-11-01") == {
        "nov-01-early",
        "nov-30-last",
        "dec-01-first",
    }
    assert shown(alice_client, month, created_to="2026-10-31") == {"oct-31-late"}
    assert shown(alice_client, month, created_from="2026-12-01", created_to="2026-12-01") == {
        "dec-01-first"
    }
    # The other filters narrow it further.
    job_transition(job=month["nov-30-last"], to=JobStatus.FAILED, reason="Test")
    assert shown(alice_client, month, status="failed", **november) == {"nov-30-last"}


def test_the_date_filter_shows_only_my_own_jobs(alice, bob, alice_client, month):
    submit(bob, "bobs", datetime(2026, 11, 10, tzinfo=UTC))

    page = alice_client.get(
        reverse("job-list"), {"created_from": "2026-11-01", "created_to": "2026-11-30"}
    ).content.decode()

    assert "bobs" not in page and "nov-01-early" in page and "oct-31-late" not in page


@pytest.mark.parametrize(
    ("typed", "zh"),
    [
        ("last month", "“last month”不是日期：请选择日期，或按 YYYY-MM-DD 格式输入。"),
        ("2026-02-30", "“2026-02-30”不是日期"),
        ("2026-13-01", "“2026-13-01”不是日期"),
        ("11/01/2026", "“11/01/2026”不是日期"),
        ("20266-11-01", "“20266-11-01”超出范围：请选择 1970 年至 2999 年之间的日期。"),
        ("0202-11-01", "“0202-11-01”超出范围"),
        ("9" * 5000 + "-01-01", "超出范围"),
        ('"><script>alert(1)</script>', "不是日期"),
        ("x" * 100_000, "“" + "x" * 31 + "…”不是日期"),
        ("2026-11-01\x00", "Null characters are not allowed"),
    ],
)
@pytest.mark.parametrize("field", ["created_from", "created_to"])
def test_a_bad_date_is_said_on_its_field_keeps_what_was_typed_and_the_other_filters_apply(
    alice, alice_client, month, field, typed, zh
):
    r = alice_client.get(reverse("job-list"), {field: typed, "q": "nov-"})

    assert r.status_code == 200
    page = r.content.decode()
    said = error(page, field)
    assert zh in said or ("Null" in zh and said), said
    assert 'aria-invalid="true"' in page and "<script>alert" not in page
    # The box is given back what was typed (a browser shows a date box nothing that is not a
    # date, so the message quotes it too).
    assert f'name="{field}" id="id_{field}" value="{html_lib.escape(typed)[:200]}' in page
    # The list is what it would be without the bad date: the other filter still applies.
    listed = {name for name, job in month.items() if f'data-job="{job.public_id}"' in page}
    assert listed == {"nov-01-early", "nov-30-last"}


def test_a_bad_date_is_said_in_english_to_an_english_reader(alice, alice_client, month):
    r = alice_client.get(
        reverse("job-list"), {"created_to": "2026-02-30"}, HTTP_ACCEPT_LANGUAGE="en"
    )

    assert r.status_code == 200
    assert error(r.content.decode(), "created_to") == (
        "“2026-02-30” is not a date: pick one, or type it as YYYY-MM-DD."
    )


def test_an_end_date_before_the_start_is_said_on_it_and_the_list_keeps_the_start_alone(
    alice, alice_client, month
):
    r = alice_client.get(
        reverse("job-list"), {"created_from": "2026-11-01", "created_to": "2026-10-31"}
    )

    assert r.status_code == 200
    page = r.content.decode()
    assert error(page, "created_to") == (
        "结束日期 2026-10-31 早于开始日期 2026-11-01：请选择当天或之后的日期。"
    )
    assert error(page, "created_from") == ""
    assert 'value="2026-10-31"' in page and 'value="2026-11-01"' in page
    listed = {name for name, job in month.items() if f'data-job="{job.public_id}"' in page}
    assert listed == {"nov-01-early", "nov-30-last", "dec-01-first"}


def test_the_date_boxes_are_date_pickers_within_the_years_taken_saying_the_time_zone(
    alice, alice_client, month
):
    page = alice_client.get(reverse("job-list")).content.decode()

    for field in ("created_from", "created_to"):
        box = re.search(rf'<input[^>]*id="id_{field}"[^>]*>', page).group(0)
        assert 'type="date"' in box and 'value=""' in box
        assert 'min="1970-01-01"' in box and 'max="2999-12-31"' in box
        assert 'title="Asia/Shanghai 时区的日期，含当天"' in box
    assert ">创建时间起</label>" in page and ">创建时间止</label>" in page


def test_the_date_filter_is_kept_on_the_pages_refresh_labels_selection_and_ways_back(
    alice, alice_client
):
    jobs = [
        submit(alice, f"nov-{n:02d}", datetime(2026, 11, 1, 1, n, tzinfo=UTC)) for n in range(25)
    ]
    submit(alice, "october", datetime(2026, 10, 1, tzinfo=UTC))
    dates = urlencode({"created_from": "2026-11-01", "created_to": "2026-11-30"})
    ticked = jobs[0].public_id

    r = alice_client.get(f"{reverse('job-list')}?{dates}&page=2&sel={ticked}")

    page = html_lib.unescape(r.content.decode())
    assert r.status_code == 200 and "october" not in page
    # The previous page's link, the 3-second refresh (jobs queued: the list is live), the bulk
    # actions' way back (Stop / Delete selected), the Clear selection link.
    assert 'id="page-previous"' in page and f'href="?{dates}&sel={ticked}&page=1"' in page
    assert f'hx-get="/?{dates}&page=2"' in page
    assert f'name="back" value="{dates}&page=2"' in page
    assert f'href="/?{dates}&page=2" id="selection-clear"' in page
    # The label chips' links keep it too (each adds its label to the list's filters).
    assert re.search(rf'href="/\?{re.escape(dates)}&sel={ticked}&label=[^"]+"', page)
    # The ticked job is carried on the filter form, the dates in its boxes.
    assert f'<input type="hidden" name="sel" value="{ticked}">' in page
    assert 'id="id_created_from" value="2026-11-01"' in page


def test_deleting_a_job_opened_from_a_date_filter_returns_to_it(alice, alice_client):
    job = submit(alice, "nov", datetime(2026, 11, 2, tzinfo=UTC))
    job_transition(job=job, to=JobStatus.FAILED, reason="Test")
    came_from = "http://testserver/?created_from=2026-11-01&created_to=2026-11-30&page=1&x=1"

    page = alice_client.get(
        reverse("job-detail", args=[job.public_id]), HTTP_REFERER=came_from
    ).content.decode()

    assert (
        'name="back" value="created_from=2026-11-01&amp;created_to=2026-11-30&amp;page=1"' in page
    )


def test_the_date_filter_costs_the_list_no_query_more(
    alice, alice_client, month, django_assert_num_queries
):
    both = {"created_from": "2026-11-01", "created_to": "2026-11-30"}
    alice_client.get(reverse("job-list"))  # warm the session
    # As test_job_pages' count: session, user, the page of jobs, the worker, the pools, labels.
    with django_assert_num_queries(6) as queries:
        alice_client.get(reverse("job-list"), both)
    # One range on created_at in the page's read of jobs (the owner's index serves it).
    ranged = [q["sql"] for q in queries.captured_queries if '"created_at" >=' in q["sql"]]
    assert len(ranged) == 1 and '"created_at" <' in ranged[0]
    with django_assert_num_queries(4):
        alice_client.get(reverse("job-list"), both, headers={"HX-Request": "true"})


def test_the_filter_form_counts_the_two_dates_when_it_decides_whether_it_can_carry_the_ticks(
    alice, alice_client
):
    from jobs.labels import SAFE_ADDRESS_LENGTH
    from jobs.selection import MAX_CARRIED

    from .test_job_labels import filter_form, longest_filter_address

    ticked = [
        submit(alice, f"s{n}", datetime(2026, 11, 2, tzinfo=UTC)).public_id
        for n in range(MAX_CARRIED)
    ]

    def longest(key_length: int) -> tuple[int, bool]:
        # 50 ticks, a long label applied and one as long as asked: the longest address the form
        # can send with the ticks (its boxes at their longest, dates at their max), and whether
        # the form sends the ticks.
        labels = [f"{'a' * 317}={'v' * 63}", f"{'b' * key_length}=v"]
        form = filter_form(
            alice_client.get(reverse("job-list"), {"sel": ticked, "label": labels}).content.decode()
        )
        address = longest_filter_address(form.replace(" disabled>", ">"))
        return len(address), " disabled>" not in form

    # The longest label's key the form still carries the ticks with: the address it can make
    # then is within the bound, dates at their longest included; one character more passes it.
    low, high = 1, 317
    assert longest(low)[1] and not longest(high)[1]
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if longest(middle)[1] else (low, middle)
    assert longest(low)[0] <= SAFE_ADDRESS_LENGTH < longest(high)[0]


def test_stop_selected_and_compare_go_back_to_the_list_with_its_dates(alice, alice_client):
    a, b = (submit(alice, f"nov-{n}", datetime(2026, 11, 2, tzinfo=UTC)) for n in range(2))
    back = "created_from=2026-11-01&created_to=2026-11-30&page=1"

    stopped = alice_client.post(
        reverse("job-bulk"),
        {"action": "stop", "jobs": [a.public_id], "back": back, "confirmed": "1"},
    )
    compared = alice_client.post(
        reverse("job-bulk"),
        {"action": "compare", "jobs": [a.public_id, b.public_id], "back": back},
    )

    assert stopped.status_code == 302 and stopped["Location"] == f"/?{back}"
    assert compared.status_code == 302
    assert (
        urlsplit(compared["Location"])
        .query.split("&back_sel=")[0]
        .endswith("&back_created_from=2026-11-01&back_created_to=2026-11-30&back_page=1")
    )
    a.refresh_from_db()
    assert a.status == JobStatus.STOPPED


def test_days_are_those_of_the_time_zone_the_console_is_set_to(
    alice, alice_client, month, settings
):
    settings.TIME_ZONE = "UTC"

    # In UTC the first two were created on October 31, the last two on November 30.
    november = {"created_from": "2026-11-01", "created_to": "2026-11-30"}
    assert shown(alice_client, month, **november) == {"nov-30-last", "dec-01-first"}
    page = alice_client.get(reverse("job-list")).content.decode()
    assert 'title="UTC 时区的日期，含当天"' in page


def test_dates_that_match_no_job_say_so_with_the_filters_open_not_that_there_are_no_jobs(
    alice, alice_client, month
):
    r = alice_client.get(reverse("job-list"), {"created_from": "2030-01-01"})

    page = r.content.decode()
    assert r.status_code == 200
    assert "没有符合筛选条件的任务" in page and 'id="jobs-empty"' not in page
    assert re.search(r'<details[^>]*id="job-filters-box" open>', page)
