"""My usage (jobs.usage_views, /account/usage/): a user's own card-hours over a period, as the
admin's usage report counts them (jobs.usage), deleted jobs included, as a page and as CSV.
Job times are set on the rows directly, as in tests/test_usage_report.py."""

from __future__ import annotations

import csv
import io
import re
from datetime import timedelta

import pytest
from django.utils import timezone

from jobs import spec as S
from jobs.models import Job, UsageRecord
from jobs.pools import known_pools_keep
from jobs.usage import Period, usage_report
from tests.test_usage_report import A800, APRIL, APRIL_QUERY, H800, at, client_for, run

URL = "/account/usage/"
MAY = at(1, 0, month=5)


def figures(f) -> tuple[float, int, float]:
    return (round(f.card_hours, 4), f.jobs, round(f.cpu_job_hours, 4))


def test_it_shows_the_users_figures_as_the_usage_report_counts_them(alice, bob, alice_client):
    mixed = [S.Role("master", 1, A800, 2), S.Role("worker", 2, H800, 4)]  # 2 A800 + 8 H800
    run(alice, at(10, 8), at(10, 11), roles=mixed)  # 30 card-hours
    run(alice, at(31, 22, month=3), at(1, 2), cards=2)  # 2 × the 2 h inside April
    run(alice, at(12, 0), at(12, 5), cards=0)  # 5 CPU-only job-hours
    run(alice, at(1, 0, month=5), at(2, 0, month=5), cards=8)  # May: not counted
    run(bob, at(11, 0), at(11, 2), cards=4)
    everyone = usage_report(period=APRIL, now=MAY)
    [alices] = [u for u in everyone.users if u.username == "alice"]

    r = alice_client.get(URL, APRIL_QUERY, HTTP_ACCEPT_LANGUAGE="en")

    assert r.status_code == 200
    report = r.context["report"]
    assert figures(report.total) == figures(alices.figures) == (34, 3, 5)
    pools = {(p.pool, p.card_type): figures(p.figures) for p in report.pools}
    assert pools == {
        ("local", A800): (10, 2, 0),
        ("local", H800): (24, 1, 0),
        ("local", ""): (0, 1, 5),
    }
    body = r.content.decode()
    assert '<dd class="col-sm-8 col-lg-9 col-xxl-10" id="usage-card-hours">34.00</dd>' in body
    assert '<dd class="col-sm-8 col-lg-9 col-xxl-10" id="usage-cpu-hours">5.00</dd>' in body
    assert '<dd class="col-sm-8 col-lg-9 col-xxl-10" id="usage-jobs">3</dd>' in body
    pool = '<span class="usage-pool" title="Pool ID: local">本机 Local</span>'
    # The card as people name it, the resource in brackets (qa113); the CSV keeps the raw name.
    shown = "H800 80GB (baidu.com/h800_80g_cgpu)"
    assert f'<th scope="row">{pool}</th><td>{shown}</td><td>24.00</td>' in body
    assert "a job restarted after a fault counts as running throughout" in body


def test_its_jobs_are_listed_newest_first_with_their_hours_in_the_period(alice, alice_client):
    older = run(alice, at(31, 22, month=3), at(1, 2), cards=2)  # 2 h inside April
    newer = run(alice, at(12, 0), at(12, 5), cards=0)
    Job.objects.filter(pk=newer.pk).update(name="cpu-run")

    r = alice_client.get(URL, APRIL_QUERY, HTTP_ACCEPT_LANGUAGE="en")

    rows = r.context["page"].object_list
    assert [row["public_id"] for row in rows] == [newer.public_id, older.public_id]
    assert [(row["hours"], row["card_hours"], row["deleted"]) for row in rows] == [
        (5, 0, False),
        (2, 4, False),
    ]
    body = r.content.decode()
    assert f'<a href="/jobs/{newer.public_id}/">cpu-run</a>' in body
    assert (
        '<td>2</td>\n      <td class="text-nowrap usage-started">2026-03-31 22:00</td>\n'
        "      <td>2.00</td>\n      <td>4.00</td>" in body
    )


def test_a_deleted_job_still_counts_and_is_listed_without_a_link(alice, alice_client):
    job = run(alice, at(10, 8), at(10, 11), cards=2)  # 6 card-hours
    kept = run(alice, at(11, 0), at(11, 1), cards=1)

    deleted = alice_client.post(f"/jobs/{job.public_id}/delete/", {"confirmed": "1"})
    r = alice_client.get(URL, APRIL_QUERY, HTTP_ACCEPT_LANGUAGE="en")

    assert deleted.status_code == 302
    assert figures(r.context["report"].total) == (7, 2, 0)
    rows = r.context["page"].object_list
    assert [(row["public_id"], row["deleted"]) for row in rows] == [
        (kept.public_id, False),
        (job.public_id, True),
    ]
    body = r.content.decode()
    assert f'href="/jobs/{job.public_id}/"' not in body
    assert f'href="/jobs/{kept.public_id}/"' in body
    assert f'{job.name} <span class="text-muted">(deleted job)</span>' in body
    assert not Job.objects.filter(pk=job.pk).exists()
    assert UsageRecord.objects.get().public_id == job.public_id


def test_other_users_jobs_are_not_counted_staff_included(alice, bob, reviewer):
    mine = run(alice, at(2, 0), at(2, 10), cards=2)  # 20
    deleted = run(alice, at(3, 0), at(3, 1), cards=1)
    Job.objects.filter(pk=deleted.pk).delete()  # its record keeps Alice as its owner
    bobs = run(bob, at(2, 0), at(2, 4), cards=1)  # 4
    carols = run(reviewer, at(4, 0), at(4, 3), cards=1)  # 3

    pages = {
        user.username: client_for(user).get(URL, APRIL_QUERY) for user in (alice, bob, reviewer)
    }

    totals = {name: figures(r.context["report"].total) for name, r in pages.items()}
    assert totals == {"alice": (21, 2, 0), "bob": (4, 1, 0), "carol": (3, 1, 0)}
    listed = {
        name: {row["public_id"] for row in r.context["page"].object_list}
        for name, r in pages.items()
    }
    assert listed == {
        "alice": {mine.public_id, deleted.public_id},
        "bob": {bobs.public_id},
        "carol": {carols.public_id},
    }
    bob_body = pages["bob"].content.decode()
    assert mine.public_id not in bob_body and deleted.public_id not in bob_body
    bob_csv = client_for(bob).get(URL, {**APRIL_QUERY, "format": "csv"}).content.decode()
    assert mine.public_id not in bob_csv and "21.00" not in bob_csv


def test_it_needs_a_log_in(client):
    r = client.get(URL, {**APRIL_QUERY, "format": "csv"})

    assert r.status_code == 302
    assert r["Location"].startswith("/login/?next=")


def test_it_shows_this_month_by_default_and_links_last_month(alice, alice_client):
    this_month = Period.this_month()
    last_month = Period.this_month(today=this_month.first - timedelta(days=1))
    run(alice, timezone.now() - timedelta(hours=2), None, cards=3)  # running

    r = alice_client.get(URL, HTTP_ACCEPT_LANGUAGE="en")

    assert r.status_code == 200
    assert r.context["report"].period == this_month
    assert r.context["form"].initial == {"date_from": this_month.first, "date_to": this_month.last}
    started = max(timezone.now() - timedelta(hours=2), this_month.starts_at)
    expected = 3 * (timezone.now() - started) / timedelta(hours=1)
    assert r.context["report"].total.card_hours == pytest.approx(expected, abs=0.01)
    body = r.content.decode()
    assert "Jobs still running count up to now" in body
    # Dates as the job page writes them (copy edit: "Dec. 1, 2026" and "4:30 a.m." here).
    first, last = this_month.first.isoformat(), this_month.last.isoformat()
    assert f"From {first} to {last}, both days included." in body
    assert re.search(r"count up to now \(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\)", body)
    assert (
        f'id="usage-last-month" href="?date_from={last_month.first.isoformat()}'
        f'&amp;date_to={last_month.last.isoformat()}"'
    ) in body
    assert 'href="/account/usage/" id="nav-usage">My usage</a>' in body


@pytest.mark.parametrize(
    ("query", "field", "message"),
    [
        ({"date_from": "2026-02-30"}, "date_from", "Enter a valid date."),
        ({"date_to": "yesterday"}, "date_to", "Enter a valid date."),
        (
            {"date_from": "2026-04-10", "date_to": "2026-04-01"},
            "date_to",
            "The last day is before the first day.",
        ),
        ({"date_from": "0001-01-01"}, "date_from", "Choose a day from 2000-01-01 to 2099-12-31."),
        ({"date_to": "9999-12-31"}, "date_to", "Choose a day from 2000-01-01 to 2099-12-31."),
        ({"date_from": "2000-01-01", "date_to": "2099-12-31", "page": "99999999999"}, None, ""),
        ({"date_from": "2026-04-01\x00"}, "date_from", "Enter a valid date."),
    ],
)
def test_a_bad_period_gets_a_message_on_its_field_not_a_500(alice_client, query, field, message):
    for extra in ({}, {"format": "csv"}):
        r = alice_client.get(URL, {**query, **extra}, HTTP_ACCEPT_LANGUAGE="en")

        assert r.status_code == 200
        if field is None:  # the widest period there is, and a page past the end: no error
            continue
        assert r["Content-Type"].startswith("text/html")
        assert r.context["form"].errors == {field: [message]}
        assert r.context["report"] is None
        body = r.content.decode()
        assert f'id="error_1_id_{field}"' in body and message in body


def test_the_period_messages_read_in_chinese(alice_client):
    r = alice_client.get(
        URL, {"date_from": "2026-04-10", "date_to": "2026-04-01"}, HTTP_ACCEPT_LANGUAGE="zh-hans"
    )

    assert r.context["form"].errors == {"date_to": ["结束日期早于开始日期。"]}
    body = r.content.decode()
    assert "我的用量" in body and "上月" in body


def test_its_headings_are_capitalised_as_the_consoles_other_tables_are(alice, alice_client):
    # Found in QA: "Name, Job ID, pool, Cards, Started, hours in the period, card-hours" in one
    # header row (the lower-case ones were the admin report's, which its style upper-cases).
    import re

    run(alice, at(10, 0), at(12, 0), cards=2)

    english = alice_client.get(URL, APRIL_QUERY, HTTP_ACCEPT_LANGUAGE="en").content.decode()
    chinese = alice_client.get(URL, APRIL_QUERY, HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()

    def headings(body: str) -> list[str]:
        # A header shortened on a phone: its full form, shown from a tablet up.
        return re.findall(
            r'<(?:th scope="col"[^>]*|dt class="[^"]*")>(?:<span class="d-none d-md-inline">)?'
            r"([^<]+)</",
            body,
        )

    assert headings(english) == [
        *["Card-hours", "CPU-only job-hours", "Jobs run"],
        *["Pool", "Card type", "Card-hours", "Jobs run", "CPU-only job-hours"],
        *["Name", "Job ID", "Pool", "Cards", "Started", "Hours in the period", "Card-hours"],
    ]
    assert headings(chinese)[:5] == ["卡时", "纯 CPU 任务时", "任务数", "资源池", "卡型"]


def test_the_csv_has_the_same_figures_with_a_byte_order_mark(alice, alice_client):
    job = run(alice, at(2, 0), at(2, 10), cards=2)
    Job.objects.filter(pk=job.pk).update(name="=训练")  # a formula, to a spreadsheet
    gone = run(alice, at(3, 0), at(3, 1), cards=0)
    Job.objects.filter(pk=gone.pk).delete()

    r = alice_client.get(URL, {**APRIL_QUERY, "format": "csv"})

    assert r.status_code == 200
    assert r["Content-Type"] == "text/csv; charset=utf-8"
    assert r["Content-Disposition"] == (
        'attachment; filename="my-usage-2026-04-01-to-2026-04-30.csv"'
    )
    assert r.content.startswith(b"\xef\xbb\xbfscope,job_id,")
    rows = list(csv.reader(io.StringIO(r.content.decode("utf-8-sig"))))
    # The label columns are blank but on the rows by label (?by_label=, tests/test_job_labels).
    assert all(row[-2:] == ["", ""] for row in rows[1:])
    rows = [rows[0], *(row[:-2] for row in rows[1:])]
    assert rows == [
        [
            "scope",
            "job_id",
            "job_name",
            "job_deleted",
            "backend",
            "pool",
            "pool_name",
            "card_type",
            "cards",
            "started_at",
            "hours_in_period",
            "card_hours",
            "jobs",
            "cpu_only_job_hours",
            "label_key",
            "label_value",
        ],
        [
            "job",
            gone.public_id,
            gone.name,
            "yes",
            "local",
            "local",
            "本机 Local",
            "",
            "0",
            "2026-04-03T00:00:00+08:00",
            "1.00",
            "0.00",
            "1",
            "1.00",
        ],
        [
            "job",
            job.public_id,
            "'=训练",
            "",
            "local",
            "local",
            "本机 Local",
            A800,
            "2",
            "2026-04-02T00:00:00+08:00",
            "10.00",
            "20.00",
            "1",
            "0.00",
        ],
        [
            "pool",
            "",
            "",
            "",
            "local",
            "local",
            "本机 Local",
            A800,
            "",
            "",
            "",
            "20.00",
            "1",
            "0.00",
        ],
        ["pool", "", "", "", "local", "local", "本机 Local", "", "", "", "", "0.00", "1", "1.00"],
        ["total", "", "", "", "", "", "", "", "", "", "", "20.00", "2", "1.00"],
    ]


def test_a_csv_job_row_names_every_card_type_the_job_used_sorted(alice, alice_client):
    # Found in QA: a job row's card_type was blank, so a job of two card types could not be
    # told from a CPU-only one without summing the pool rows.
    mixed = [S.Role("master", 1, H800, 2), S.Role("worker", 2, A800, 4)]
    live = run(alice, at(10, 8), at(10, 11), roles=mixed)
    gone = run(alice, at(9, 8), at(9, 9), roles=mixed)
    cpu = run(alice, at(8, 0), at(8, 1), cards=0)
    alice_client.post(f"/jobs/{gone.public_id}/delete/", {"confirmed": "1"})
    # A card type that would start a spreadsheet formula, as a record could hold it.
    odd = run(alice, at(7, 0), at(7, 1), cards=1)
    alice_client.post(f"/jobs/{odd.public_id}/delete/", {"confirmed": "1"})
    UsageRecord.objects.filter(public_id=odd.public_id).update(cards={"=HYPERLINK(1)": 1})

    r = alice_client.get(URL, {**APRIL_QUERY, "format": "csv"})

    rows = list(csv.DictReader(io.StringIO(r.content.decode("utf-8-sig"))))
    types = {row["job_id"]: row["card_type"] for row in rows if row["scope"] == "job"}
    assert types == {
        live.public_id: f"{A800};{H800}",
        gone.public_id: f"{A800};{H800}",  # deleted: as its record kept them
        cpu.public_id: "",
        odd.public_id: "'=HYPERLINK(1)",
    }


@pytest.mark.parametrize("jobs", [3, 30])
def test_the_page_makes_the_same_queries_for_3_or_30_jobs_deleted_or_not(
    alice, bob, jobs, django_assert_num_queries
):
    for n in range(jobs):
        roles = [S.Role("master", 1, A800, 1 + n % 3), S.Role("worker", n % 2, H800, 2)]
        run(alice, at(1 + n % 28, n % 23), at(1 + n % 28, n % 23 + 1), roles=roles)
        run(bob, at(1 + n % 28, 0), at(1 + n % 28, 5), roles=roles)
    every_other = list(Job.objects.filter(owner=alice).values_list("pk", flat=True))[::2]
    Job.objects.filter(pk__in=every_other).delete()  # half of Alice's jobs, kept as records
    client = client_for(alice)

    # session, user, the report's three (jobs and records per user, pool and card layout;
    # the user's name and groups), one page of jobs and the label keys the field suggests.
    with django_assert_num_queries(7):
        page = client.get(URL, APRIL_QUERY)
    with django_assert_num_queries(6):  # the CSV: every job, in one query
        csv_response = client.get(URL, {**APRIL_QUERY, "format": "csv"})

    assert page.context["report"].total.jobs == jobs
    assert len(page.context["page"].object_list) == min(jobs, 20)
    assert page.context["page"].has_next == (jobs > 20)
    assert len(csv_response.content.decode("utf-8-sig").splitlines()) == 1 + jobs + 3
    if jobs > 20:
        second = client.get(URL, {**APRIL_QUERY, "page": "2"})
        assert len(second.context["page"].object_list) == jobs - 20
        assert (
            'href="?date_from=2026-04-01&amp;date_to=2026-04-30&amp;page=1"'
            in second.content.decode()
        )


def test_pools_no_longer_offered_show_their_last_known_name_for_one_query(
    alice, django_assert_num_queries
):
    known_pools_keep(backend="aihc", names={"cce-gone": "旧训练池"})
    run(alice, at(2, 0), at(2, 1), backend="aihc", pool="cce-gone")
    run(alice, at(3, 0), at(3, 1), backend="aihc", pool="cce-nameless")
    run(alice, at(4, 0), at(4, 1))
    client = client_for(alice)

    # The page's seven and one for the last known names, of the figures' pools and the jobs'.
    with django_assert_num_queries(8) as counted:
        page = client.get(URL, APRIL_QUERY, HTTP_ACCEPT_LANGUAGE="zh-hans")
    with django_assert_num_queries(7):
        sheet = client.get(URL, {**APRIL_QUERY, "format": "csv"})

    assert sum("jobs_knownpool" in q["sql"] for q in counted.captured_queries) == 1
    html = page.content.decode()
    assert (
        '<span class="usage-pool" title="资源池 ID：cce-gone">旧训练池（cce-gone，已不再提供）</span>'
        in html
    )
    assert '<span class="usage-pool">cce-nameless</span>' in html
    rows = list(csv.DictReader(io.StringIO(sheet.content.decode("utf-8-sig"))))
    named = {(r["scope"], r["pool"], r["pool_name"]) for r in rows if r["scope"] != "total"}
    assert named == {
        ("job", "cce-gone", "旧训练池 (cce-gone, no longer offered)"),
        ("job", "cce-nameless", ""),
        ("job", "local", "本机 Local"),
        ("pool", "cce-gone", "旧训练池 (cce-gone, no longer offered)"),
        ("pool", "cce-nameless", ""),
        ("pool", "local", "本机 Local"),
    }
