"""The usage report (jobs.usage, /admin/jobs/job/usage/): card-hours per user, group and pool
× card type over a period, for staff, as a page and as CSV. Job times are set on the rows
directly: they are the fixture, what the runner and the backends would have stamped."""

from __future__ import annotations

import csv
import io
import re
from datetime import date, datetime, timedelta
from itertools import count

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.test import Client
from django.utils import timezone

from jobs import spec as S
from jobs.models import Job, JobStatus, UsageRecord
from jobs.pools import known_pools_keep
from jobs.usage import Figures, Period, usage_report

URL = "/admin/jobs/job/usage/"
A800 = "baidu.com/a800_80g_cgpu"
H800 = "baidu.com/h800_80g_cgpu"
APRIL = Period(date(2026, 4, 1), date(2026, 4, 30))
APRIL_QUERY = {"date_from": "2026-04-01", "date_to": "2026-04-30"}
_ids = count()


def at(day: int, hour: int = 0, month: int = 4) -> datetime:
    """A time in April 2026 (or `month`), in the console's time zone."""
    return timezone.make_aware(datetime(2026, month, day, hour))


def run(
    owner: User,
    started: datetime | None,
    finished: datetime | None,
    *,
    roles: list[S.Role] | None = None,
    cards: int = 1,
    pool: str = "local",
    backend: str = "local",
    status: str | None = None,
) -> Job:
    """A job of `owner` that ran from `started` to `finished` (None: still running)."""
    spec = S.JobSpec(
        name="train",
        resource_pool_id=pool,
        image="python:3.12",
        command="python train.py",
        roles=roles if roles is not None else [S.Role("master", 1, A800 if cards else "", cards)],
    )
    if status is None:
        status = (
            JobStatus.QUEUED
            if started is None
            else JobStatus.RUNNING
            if finished is None
            else JobStatus.SUCCEEDED
        )
    job = Job.objects.create(
        public_id=f"job-{next(_ids)}",
        name="train",
        owner=owner,
        spec=spec.to_document(),
        backend=backend,
        resource_pool=pool,
        total_cards=spec.total_accelerators,
        status=status,
        started_at=started,
        finished_at=finished,
    )
    created = (started or timezone.now()) - timedelta(minutes=5)
    Job.objects.filter(pk=job.pk).update(created_at=created)
    return job


def client_for(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def by_user(report) -> dict[str, tuple[float, int, float]]:
    return {
        u.username: (round(u.figures.card_hours, 4), u.figures.jobs, u.figures.cpu_job_hours)
        for u in report.users
    }


# -- access ------------------------------------------------------------------------------


def test_only_staff_who_may_see_jobs_open_the_report(alice, reviewer, superuser):
    staff = User.objects.create_user("dan", password="x", is_staff=True)  # no job permission

    assert client_for(reviewer).get(URL).status_code == 200
    assert client_for(superuser).get(URL).status_code == 200
    assert client_for(staff).get(URL).status_code == 403
    assert client_for(staff).get(URL, {"format": "csv"}).status_code == 403
    for client in (client_for(alice), Client()):
        r = client.get(URL, {"format": "csv"})
        assert r.status_code == 302
        assert r["Location"].startswith("/admin/login/")


def test_the_admin_index_links_the_report_for_those_who_may_open_it(reviewer):
    staff = User.objects.create_user("dan", password="x", is_staff=True)
    staff.user_permissions.add(Permission.objects.get(codename="change_cardquota"))

    shown = client_for(reviewer).get("/admin/").content.decode()
    hidden = client_for(staff).get("/admin/").content.decode()

    assert f'href="{URL}"' in shown
    assert f'href="{URL}"' not in hidden


def test_the_reports_users_column_does_not_rename_the_admins_users_in_chinese(superuser):
    client = client_for(superuser)

    index = client.get("/admin/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    users = client.get("/admin/auth/user/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    report = client.get(URL, HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()

    # Django's auth models are "用户"; the report's column counts a group's users ("用户数").
    # Both were one msgid ("users"), so the admin listed, searched and deleted "用户数".
    assert re.search(r'<a href="/admin/auth/user/"[^>]*>用户</a>', index)
    assert "用户数" not in index and "用户数" not in users
    assert "搜索 用户" in users or "搜索用户" in users
    assert re.search(r'<th scope="col">用户数</th>', report)


def test_a_user_group_is_one_word_across_the_chinese_admin_and_the_reports_by_group(superuser):
    client = client_for(superuser)
    pages = {
        url: client.get(url, HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
        for url in (
            "/admin/",
            "/admin/auth/group/",
            "/admin/auth/group/add/",
            f"/admin/auth/user/{superuser.pk}/change/",
        )
    }
    report = client.get(URL, HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()

    # The console said 用户组 (its catalogue's "group"), Django 组 ("groups", the user page's
    # help): the index listed 组 and a group's own pages said 用户组. A bare 组 is a queue group's.
    assert re.search(r'<a href="/admin/auth/group/"[^>]*>用户组</a>', pages["/admin/"])
    for url, page in pages.items():
        # A queue group (队列任务组) is named whole, as the permission lists name its table.
        assert "组" not in page.replace("用户组", "").replace("队列任务组", ""), url
    assert "该用户所属的用户组" in pages[f"/admin/auth/user/{superuser.pk}/change/"]
    assert "<caption>按用户组</caption>" in report
    assert '<th scope="col">用户组</th>' in report


# -- figures -----------------------------------------------------------------------------


def test_only_the_part_of_each_job_inside_the_period_counts(alice):
    run(alice, at(31, 20, month=3), at(1, 2), cards=2)  # 2 cards × the 2 h inside April
    run(alice, at(30, 22), at(2, 4, month=5), cards=4)  # 4 × 2 h (to May 1st 00:00)
    run(alice, at(10, 8), at(10, 11), cards=1)  # 1 × 3 h
    run(alice, at(1, 0, month=2), at(1, 0, month=6), cards=1)  # 1 × all of April: 720 h
    run(alice, at(1, 0, month=3), at(31, 23, month=3), cards=8)  # before: nothing
    run(alice, at(1, 0, month=5), at(3, 0, month=5), cards=8)  # after: nothing

    report = usage_report(period=APRIL, now=at(1, 0, month=12))

    assert by_user(report) == {"alice": (4 + 8 + 3 + 720, 4, 0)}
    assert report.total.card_hours == pytest.approx(735)


def test_a_users_usage_reads_their_jobs_that_ended_since_the_period_began_not_all_they_had(
    alice, bob
):
    # qa107: "My usage" (its CSV, usage_report with an owner) was bound by creation time
    # alone, so it read every job the user ever had; now their jobs not ended or ended since
    # the period began, found in job_owner_finished.
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    run(alice, at(1, 0, month=1), at(2, 0, month=1), cards=8)  # ended before: nothing
    run(alice, at(31, 22, month=3), at(1, 1), cards=2)  # across the start: 2 × 1 h
    run(alice, at(30, 23), None, cards=1)  # still running across the end: 1 × 1 h
    run(alice, at(1, 0, month=5), at(2, 0, month=5), cards=8)  # after: nothing
    run(bob, at(10, 0), at(10, 5), cards=1)  # another user's

    with CaptureQueriesContext(connection) as queries:
        report = usage_report(period=APRIL, now=at(3, 0, month=5), owner=alice)

    assert by_user(report) == {"alice": (2 + 1, 2, 0)}
    if connection.vendor == "sqlite":  # PostgreSQL's plans depend on its statistics
        [jobs_read] = [q["sql"] for q in queries.captured_queries if 'FROM "jobs_job"' in q["sql"]]
        with connection.cursor() as cursor:
            cursor.execute(f"EXPLAIN QUERY PLAN {jobs_read}")
            plan = "; ".join(row[-1] for row in cursor.fetchall())
        assert "USING INDEX job_owner_finished (owner_id=?" in plan, plan


def test_jobs_that_never_started_count_nothing_and_are_not_counted(alice, bob):
    run(alice, None, None, cards=8)  # queued
    run(alice, None, at(5, 0), cards=8, status=JobStatus.STOPPED)  # stopped while queued
    run(bob, at(5, 0), at(5, 1), cards=1)

    report = usage_report(period=APRIL, now=at(6, 0))

    assert by_user(report) == {"bob": (1, 1, 0)}
    assert report.total.jobs == 1


def test_a_running_job_counts_up_to_now_and_a_restarted_one_from_its_first_start(alice, bob):
    run(alice, at(20, 0), None, cards=2)  # running
    # Restarted by fault tolerance: queued again since the 21st, first started on the 20th.
    run(bob, at(20, 0), None, cards=1, status=JobStatus.QUEUED)

    now = at(22, 12)
    during = usage_report(period=APRIL, now=now)
    later = usage_report(period=APRIL, now=at(3, 0, month=5))  # after the period: its end

    assert by_user(during) == {"alice": (2 * 60, 1, 0), "bob": (60, 1, 0)}
    assert by_user(later) == {"alice": (2 * 264, 1, 0), "bob": (264, 1, 0)}


def test_jobs_without_cards_count_as_cpu_only_job_hours(alice):
    run(alice, at(3, 0), at(3, 6), cards=0)
    run(alice, at(3, 0), at(3, 1), cards=2)

    report = usage_report(period=APRIL, now=at(4, 0))

    assert by_user(report) == {"alice": (2, 2, 6)}
    [pool_a800, pool_cpu] = report.pools
    assert (pool_a800.card_type, pool_a800.figures.card_hours, pool_a800.figures.jobs) == (
        A800,
        2,
        1,
    )
    assert (pool_cpu.card_type, pool_cpu.figures.cpu_job_hours, pool_cpu.figures.jobs) == ("", 6, 1)


def test_a_user_in_two_groups_counts_in_each_and_groups_can_exceed_the_total(alice, bob):
    research, vision = Group.objects.create(name="research"), Group.objects.create(name="vision")
    alice.groups.add(research, vision)
    bob.groups.add(vision)
    loner = User.objects.create_user("erin")
    run(alice, at(2, 0), at(2, 10), cards=2)  # 20 card-hours
    run(bob, at(2, 0), at(2, 5), cards=1)  # 5
    run(loner, at(2, 0), at(2, 1), cards=1)  # 1

    report = usage_report(period=APRIL, now=at(3, 0))

    groups = {g.name: (g.figures.card_hours, g.figures.jobs, g.users) for g in report.groups}
    assert groups == {"vision": (25, 2, 2), "research": (20, 1, 1), None: (1, 1, 1)}
    assert [g.name for g in report.groups] == ["vision", "research", None]  # no group last
    assert report.total.card_hours == 26
    assert sum(g.figures.card_hours for g in report.groups) == 46


def test_pools_are_split_by_card_type_from_the_spec(alice, bob):
    mixed = [S.Role("master", 1, A800, 2), S.Role("worker", 2, H800, 4)]  # 2 A800 + 8 H800
    run(alice, at(7, 0), at(7, 3), roles=mixed)
    run(bob, at(7, 0), at(7, 1), roles=mixed)
    run(bob, at(7, 0), at(7, 2), cards=1, backend="aihc", pool="cce-abc")

    report = usage_report(period=APRIL, now=at(8, 0))

    rows = {
        (p.backend, p.pool, p.card_type): (p.figures.card_hours, p.figures.jobs)
        for p in report.pools
    }
    assert rows == {
        ("aihc", "cce-abc", A800): (2, 1),
        ("local", "local", A800): (2 * 3 + 2 * 1, 2),
        ("local", "local", H800): (8 * 3 + 8 * 1, 2),
    }
    assert report.total.card_hours == 10 * 4 + 2


# -- the page ----------------------------------------------------------------------------


def test_the_page_shows_this_month_by_default(reviewer, alice):
    today = timezone.localdate()
    run(alice, timezone.now() - timedelta(hours=2), None, cards=3)

    r = client_for(reviewer).get(URL, HTTP_ACCEPT_LANGUAGE="en")
    blank = client_for(reviewer).get(URL, {"date_from": "", "date_to": ""})

    assert r.status_code == 200
    assert blank.context["form"].initial == r.context["form"].initial
    form = r.context["form"]
    assert form.initial["date_from"] == today.replace(day=1)
    assert form.initial["date_to"].month == today.month
    assert (form.initial["date_to"] + timedelta(days=1)).day == 1
    [row] = r.context["report"].users
    # Running: up to the moment the page was drawn (at least the 2 h, unless the month
    # began less than 2 h ago).
    started = max(timezone.now() - timedelta(hours=2), Period.this_month().starts_at)
    expected = 3 * (timezone.now() - started) / timedelta(hours=1)
    assert row.figures.card_hours == pytest.approx(expected, abs=0.01)
    assert "Jobs still running count up to now" in r.content.decode()


def test_the_page_lists_users_groups_and_pools_for_the_chosen_period(reviewer, alice):
    alice.groups.add(Group.objects.create(name="research"))
    run(alice, at(2, 0), at(2, 10), cards=2)

    body = client_for(reviewer).get(URL, APRIL_QUERY, HTTP_ACCEPT_LANGUAGE="en").content.decode()

    users = body[body.index('id="usage-users"') :]
    assert '<th scope="row">alice</th><td>20.00</td><td>1</td><td>0.00</td>' in users
    groups = body[body.index('id="usage-groups"') :]
    assert '<th scope="row">research</th><td>1</td><td>20.00</td>' in groups
    pools = body[body.index('id="usage-pools"') :]
    pool = '<span class="usage-pool" title="Pool ID: local">本机 Local</span>'
    assert f'<th scope="row">{pool}</th><td>A800 80GB ({A800})</td><td>20.00</td>' in pools
    assert "?date_from=2026-04-01&amp;date_to=2026-04-30&amp;format=csv" in body


def test_the_csv_has_the_same_figures_and_names_the_period(reviewer, alice, bob):
    alice.groups.add(Group.objects.create(name="研究组"))
    run(alice, at(2, 0), at(2, 10), cards=2)
    run(bob, at(3, 0), at(3, 1, month=4), cards=0)
    User.objects.filter(pk=bob.pk).update(username="=cmd")  # a formula, to a spreadsheet
    User.objects.filter(pk=alice.pk).update(username="张三")

    r = client_for(reviewer).get(URL, {**APRIL_QUERY, "format": "csv"})

    assert r.status_code == 200
    assert r["Content-Type"] == "text/csv; charset=utf-8"
    assert r["Content-Disposition"] == ('attachment; filename="usage-2026-04-01-to-2026-04-30.csv"')
    # UTF-8's byte order mark first: Excel then reads the Chinese names as UTF-8.
    assert r.content.startswith(b"\xef\xbb\xbfscope,user,")
    rows = list(csv.reader(io.StringIO(r.content.decode("utf-8-sig"))))
    # The label columns are blank but on the rows by label (?by_label=, tests/test_job_labels).
    assert all(row[-2:] == ["", ""] for row in rows[1:])
    rows = [rows[0], *(row[:-2] for row in rows[1:])]
    assert rows == [
        [
            "scope",
            "user",
            "group",
            "backend",
            "pool",
            "pool_name",
            "card_type",
            "card_hours",
            "jobs",
            "cpu_only_job_hours",
            "user_deleted",
            "label_key",
            "label_value",
        ],
        ["user", "张三", "", "", "", "", "", "20.00", "1", "0.00", ""],
        ["user", "'=cmd", "", "", "", "", "", "0.00", "1", "1.00", ""],
        ["group", "", "研究组", "", "", "", "", "20.00", "1", "0.00", ""],
        ["group", "", "", "", "", "", "", "0.00", "1", "1.00", ""],
        ["pool", "", "", "local", "local", "本机 Local", A800, "20.00", "1", "0.00", ""],
        ["pool", "", "", "local", "local", "本机 Local", "", "0.00", "1", "1.00", ""],
        ["total", "", "", "", "", "", "", "20.00", "2", "1.00", ""],
    ]


def pool_cells(html: str, table: str) -> list[tuple[str, str]]:
    """The pools a table shows, in order: (the title, the text shown)."""
    body = html[html.index(f'id="{table}"') :]
    body = body[: body.index("</table>")]
    return re.findall(r'<span class="usage-pool"(?: title="([^"]*)")?>([^<]*)</span>', body)


def test_pools_are_shown_by_name_with_their_id_in_the_title_and_the_csv_adds_the_name(
    settings, reviewer, alice
):
    from tests.fake_aihc import FakeAihc, configure

    fake = FakeAihc().start()
    try:
        fake.add_pool("cce-a", "训练池", queues=("default",), gpus={A800: (16, 0)})
        fake.add_pool("cce-b", "训练池", queues=("default",), gpus={A800: (16, 0)})
        configure(settings, fake)
        # A pool AIHC once listed by name, and one the console never saw named.
        known_pools_keep(backend="aihc", names={"cce-gone": "旧训练池"})
        for pool in ("cce-a", "cce-b", "cce-gone", "cce-nameless"):
            run(alice, at(2, 0), at(2, 1), backend="aihc", pool=pool)
        run(alice, at(3, 0), at(3, 1))

        page = client_for(reviewer).get(URL, APRIL_QUERY, HTTP_ACCEPT_LANGUAGE="en")
        mine = client_for(alice).get("/account/usage/", APRIL_QUERY, HTTP_ACCEPT_LANGUAGE="en")
        sheet = client_for(reviewer).get(URL, {**APRIL_QUERY, "format": "csv"})
    finally:
        fake.stop()

    # Named as the job list names them: two pools sharing a name with their ids; a pool the
    # console no longer offers by its last known name, marked so, or by its id alone, with
    # no title, when its name was never seen.
    shown = [
        ("Pool ID: cce-a", "训练池 (cce-a)"),
        ("Pool ID: cce-b", "训练池 (cce-b)"),
        ("Pool ID: cce-gone", "旧训练池 (cce-gone, no longer offered)"),
        ("", "cce-nameless"),
        ("Pool ID: local", "本机 Local"),
    ]
    assert pool_cells(page.content.decode(), "usage-pools") == shown
    assert pool_cells(mine.content.decode(), "usage-pools") == shown
    assert sorted(pool_cells(mine.content.decode(), "usage-jobs-table")) == sorted(shown)
    # The CSV keeps the id and adds the pool's name today, or the last known one marked (in
    # English, as the whole table), or none.
    rows = list(csv.DictReader(io.StringIO(sheet.content.decode("utf-8-sig"))))
    assert [(r["pool"], r["pool_name"]) for r in rows if r["scope"] == "pool"] == [
        ("cce-a", "训练池"),
        ("cce-b", "训练池"),
        ("cce-gone", "旧训练池 (cce-gone, no longer offered)"),
        ("cce-nameless", ""),
        ("local", "本机 Local"),
    ]
    chinese = client_for(reviewer).get(URL, APRIL_QUERY, HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert ("资源池 ID：cce-gone", "旧训练池（cce-gone，已不再提供）") in pool_cells(
        chinese.content.decode(), "usage-pools"
    )


def test_pools_no_longer_offered_cost_the_report_one_query_for_their_names(
    reviewer, alice, django_assert_num_queries
):
    known_pools_keep(backend="aihc", names={"cce-gone": "旧训练池", "cce-old": "更旧的池"})
    for pool in ("cce-gone", "cce-old", "cce-nameless"):
        run(alice, at(2, 0), at(2, 1), backend="aihc", pool=pool)
    client = client_for(reviewer)
    client.get(URL, APRIL_QUERY)  # warm the content-type and permission caches

    # The eight of the page (see below) and one for the last known names of all three.
    with django_assert_num_queries(9) as page:
        client.get(URL, APRIL_QUERY, HTTP_ACCEPT_LANGUAGE="en")
    with django_assert_num_queries(8):
        sheet = client.get(URL, {**APRIL_QUERY, "format": "csv"})

    assert sum("jobs_knownpool" in q["sql"] for q in page.captured_queries) == 1
    assert "更旧的池 (cce-old, no longer offered)" in sheet.content.decode("utf-8-sig")


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
        ({"date_from": "2026-04-01\x00"}, "date_from", "Enter a valid date."),
    ],
)
def test_a_bad_period_gets_a_message_on_its_field_not_a_500(reviewer, query, field, message):
    for extra in ({}, {"format": "csv"}):
        r = client_for(reviewer).get(URL, {**query, **extra}, HTTP_ACCEPT_LANGUAGE="en")

        assert r.status_code == 200
        assert r["Content-Type"].startswith("text/html")
        assert r.context["form"].errors == {field: [message]}
        assert r.context["report"] is None
        assert message in r.content.decode()


def test_the_period_messages_read_in_chinese(reviewer):
    r = client_for(reviewer).get(
        URL, {"date_from": "2026-04-10", "date_to": "2026-04-01"}, HTTP_ACCEPT_LANGUAGE="zh-hans"
    )

    assert r.context["form"].errors == {"date_to": ["结束日期早于开始日期。"]}
    assert "用量报表" in r.content.decode()


def test_a_blank_end_means_the_end_of_the_first_days_month(reviewer):
    r = client_for(reviewer).get(URL, {"date_from": "2026-02-10", "date_to": ""})

    assert r.context["report"].period == Period(date(2026, 2, 10), date(2026, 2, 28))


@pytest.mark.parametrize("jobs", [3, 30])
def test_the_page_makes_the_same_queries_for_3_or_30_jobs_deleted_or_not(
    reviewer, alice, bob, jobs, django_assert_num_queries
):
    Group.objects.create(name="research").user_set.add(alice, bob)
    users = [alice, bob]
    for n in range(jobs):
        users.append(User.objects.create_user(f"user{n}"))
        users[-1].groups.add(Group.objects.create(name=f"team{n}"))
    for n in range(jobs):
        roles = [S.Role("master", 1, A800, 1 + n % 3), S.Role("worker", n % 2, H800, 2)]
        for owner in (alice if n % 2 else bob, users[2 + n]):
            run(owner, at(1 + n % 28, 0), at(1 + n % 28, 5), roles=roles)
    # Alice's jobs deleted, and the other users with theirs; Bob's are left.
    Job.objects.filter(owner=alice).delete()
    User.objects.filter(username__startswith="user").delete()
    client = client_for(reviewer)
    client.get(URL, APRIL_QUERY)  # warm the content-type and permission caches

    # session, user, the user's and groups' permissions, the pending-review count (the
    # header's), and the report's three: jobs and records per user, pool and card layout,
    # the users' names and groups today.
    with django_assert_num_queries(8):
        page = client.get(URL, APRIL_QUERY)
    with django_assert_num_queries(7):  # the CSV has no header to draw
        client.get(URL, {**APRIL_QUERY, "format": "csv"})

    report = page.context["report"]
    assert Job.objects.count() == (jobs + 1) // 2
    assert report.total.jobs == 2 * jobs
    assert len(report.users) == 2 + jobs
    assert len(report.groups) == 1 + jobs


def test_the_chinese_report_sums_its_rows_under_a_total_row(reviewer):
    r = client_for(reviewer).get(
        URL, {"date_from": "2026-04-01", "date_to": "2026-04-30"}, HTTP_ACCEPT_LANGUAGE="zh-hans"
    )

    assert r.status_code == 200
    # 合计 (a sum of the rows), not 总数 (a count), which the shorter "Total" reads elsewhere.
    assert re.search(r'<th scope="row">合计</th>', r.content.decode())


# -- deleted jobs ------------------------------------------------------------------------
# However a job that ran is deleted, its use stays in the report: a UsageRecord keeps it,
# written in the deletion's transaction.


def figures_of(report) -> dict:
    """Everything the report says, to compare a report before a deletion with one after."""
    return {
        "users": [(u.username, u.deleted, u.figures) for u in report.users],
        "groups": [(g.name, g.users, g.figures) for g in report.groups],
        "pools": [(p.backend, p.pool, p.card_type, p.figures) for p in report.pools],
        "total": report.total,
    }


def test_a_finished_job_its_owner_deletes_keeps_its_card_hours_in_that_months_report(
    alice, alice_client, bob
):
    Group.objects.create(name="research").user_set.add(alice)
    mixed = [S.Role("master", 1, A800, 2), S.Role("worker", 2, H800, 4)]  # 2 A800 + 8 H800
    job = run(alice, at(10, 8), at(10, 11), roles=mixed)  # 30 card-hours in April
    run(alice, at(12, 0), at(12, 1), cards=0)  # 1 CPU-only job-hour
    run(bob, at(11, 0), at(11, 2), cards=1)
    before = usage_report(period=APRIL, now=at(1, 0, month=5))

    r = alice_client.post(f"/jobs/{job.public_id}/delete/", {"confirmed": "1"})
    cpu_only = Job.objects.get(owner=alice, total_cards=0)
    alice_client.post(f"/jobs/{cpu_only.public_id}/delete/", {"confirmed": "1"})
    after = usage_report(period=APRIL, now=at(1, 0, month=5))

    assert r.status_code == 302
    assert figures_of(after) == figures_of(before)
    assert by_user(after) == {"alice": (30, 2, 1), "bob": (2, 1, 0)}
    assert not Job.objects.filter(owner=alice).exists()
    record = UsageRecord.objects.get(public_id=job.public_id)
    assert (record.owner_pk, record.username, record.groups) == (alice.pk, "alice", ["research"])
    assert (record.backend, record.resource_pool, record.total_cards) == ("local", "local", 10)
    assert record.cards == {A800: 2, H800: 8}
    assert (record.started_at, record.ended_at) == (at(10, 8), at(10, 11))


def test_a_job_deleted_by_its_auto_delete_retention_still_counts(alice):
    from jobs.worker import Worker

    from .runner_helpers import ended_at

    job = run(alice, at(10, 8), at(10, 11), cards=2)
    job.spec["retentionPeriod"] = "1h"
    job.save(update_fields=["spec"])
    ended_at(job, job.finished_at)  # its deletion time, as stored when it ended

    Worker().delete_expired()

    assert not Job.objects.filter(pk=job.pk).exists()
    report = usage_report(period=APRIL, now=at(1, 0, month=5))
    assert by_user(report) == {"alice": (6, 1, 0)}


def test_a_job_deleted_before_it_started_leaves_no_record(alice, alice_client):
    job = run(alice, None, None, cards=8)

    alice_client.post(f"/jobs/{job.public_id}/delete/", {"confirmed": "1"})

    assert not Job.objects.filter(pk=job.pk).exists()
    assert not UsageRecord.objects.exists()


def test_a_job_two_requests_delete_at_once_is_counted_once(alice):
    from django.db.models.deletion import Collector

    job = run(alice, at(10, 8), at(10, 11), cards=2)  # 6 card-hours
    # The second request has read the job to delete (as QuerySet.delete does, before its
    # transaction) when the first one deletes it.
    second = Collector(using="default")
    second.collect(Job.objects.filter(pk=job.pk))
    Job.objects.filter(pk=job.pk).delete()

    second.delete()

    assert by_user(usage_report(period=APRIL, now=at(1, 0, month=5))) == {"alice": (6, 1, 0)}
    assert UsageRecord.objects.filter(public_id=job.public_id).count() == 1


@pytest.fixture
def fake_aihc(settings):
    from tests.fake_aihc import FakeAihc, configure

    fake = FakeAihc().start()
    fake.add_pool("cce-pool1", "训练池", queues=("default",), gpus={A800: (16, 0)})
    configure(settings, fake)
    yield fake
    fake.stop()


def test_a_running_job_deleted_counts_until_its_deletion(fake_aihc, alice, alice_client):
    from jobs.backends.aihc import AihcBackend

    started = timezone.now() - timedelta(hours=3)
    job = run(alice, started, None, cards=2, backend="aihc", pool="cce-pool1")
    made = fake_aihc.create_external(
        "cce-pool1", AihcBackend.request_body(job.job_spec(), "v1", job_id=job.public_id)
    )
    Job.objects.filter(pk=job.pk).update(external_id=made.job_id)
    period = Period(timezone.localdate() - timedelta(days=1), timezone.localdate() + timedelta(1))

    r = alice_client.post(f"/jobs/{job.public_id}/delete/", {"confirmed": "1"})
    deleted_at = timezone.now()
    # Asked hours later, the report still stops at the deletion: 2 cards × 3 h.
    report = usage_report(period=period, now=deleted_at + timedelta(hours=5))

    assert r.status_code == 302
    assert not Job.objects.filter(pk=job.pk).exists()
    assert fake_aihc.calls("DeleteJob")  # deleted on AIHC too
    [row] = report.users
    assert row.figures.jobs == 1
    assert row.figures.card_hours == pytest.approx(6, abs=0.01)
    record = UsageRecord.objects.get()
    assert started + timedelta(hours=3) <= record.ended_at == record.deleted_at <= deleted_at


def test_users_deleted_in_bulk_in_the_admin_keep_their_usage_under_their_names(
    superuser, reviewer, alice, bob
):
    research = Group.objects.create(name="research")
    research.user_set.add(alice, bob)
    run(alice, at(2, 0), at(2, 10), cards=2)  # 20 card-hours
    run(alice, at(3, 0), at(3, 5), cards=0)  # 5 CPU-only job-hours
    run(bob, at(2, 0), at(2, 4), cards=1, backend="aihc", pool="cce-abc")  # 4, never synced
    before = usage_report(period=APRIL, now=at(1, 0, month=5))
    admin = client_for(superuser)
    selected = {"action": "delete_selected", "_selected_action": [alice.pk, bob.pk]}

    # The admin deletes no job, so no user who still has one ...
    refused = admin.post("/admin/auth/user/", {**selected, "post": "yes"})
    assert refused.status_code == 403 and User.objects.filter(pk=alice.pk).exists()
    # ... but once they have deleted their jobs, its "delete selected" (a queryset delete)
    # removes the users, and their usage stays.
    Job.objects.filter(owner__in=[alice, bob]).delete()
    r = admin.post("/admin/auth/user/", {**selected, "post": "yes"})
    alice_again = User.objects.create_user("alice")  # a new account, with the old name
    run(alice_again, at(5, 0), at(5, 1), cards=1)
    after = usage_report(period=APRIL, now=at(1, 0, month=5))

    assert r.status_code == 302
    assert not User.objects.filter(pk__in=[alice.pk, bob.pk]).exists()
    assert [(u.username, u.deleted, u.figures) for u in after.users] == [
        ("alice", True, before.users[0].figures),
        ("bob", True, before.users[1].figures),
        ("alice", False, Figures(timedelta(hours=1), 1)),
    ]
    # In the groups they were in when their jobs were deleted; the new account is in none.
    groups = {g.name: (g.figures.card_hours, g.figures.jobs, g.users) for g in after.groups}
    assert groups == {"research": (24, 3, 2), None: (1, 1, 1)}
    assert [p for p in figures_of(after)["pools"] if p[1] == "cce-abc"] == [
        ("aihc", "cce-abc", A800, Figures(timedelta(hours=4), 1))
    ]

    page = client_for(reviewer).get(URL, APRIL_QUERY, HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert '<th scope="row">alice <span class="help">(deleted user)</span></th>' in page
    assert '<th scope="row">alice</th><td>1.00</td>' in page
    zh = client_for(reviewer).get(URL, APRIL_QUERY, HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert "（已删除的用户）" in zh.content.decode()
    csv_rows = client_for(reviewer).get(URL, {**APRIL_QUERY, "format": "csv"})
    users = list(csv.reader(io.StringIO(csv_rows.content.decode("utf-8-sig"))))[1:4]
    assert [(row[1], row[10]) for row in users] == [("alice", "yes"), ("bob", "yes"), ("alice", "")]


def test_a_user_deleted_with_their_jobs_keeps_their_usage_and_groups_then(alice):
    alice.groups.add(Group.objects.create(name="vision"))
    run(alice, at(2, 0), at(2, 3), cards=4)
    run(alice, at(20, 0), None, cards=1)  # still running when the account goes

    # As `manage.py shell` would: the jobs go by cascade, in the same transaction.
    alice.delete()
    Group.objects.filter(name="vision").delete()  # the group goes too, later
    report = usage_report(period=APRIL, now=at(1, 0, month=5))

    assert not Job.objects.exists()
    [row] = report.users
    assert (row.username, row.deleted, row.figures.jobs) == ("alice", True, 2)
    # The running one counts from the 20th to the deletion, after April: to April's end.
    assert row.figures.card_hours == 12 + 11 * 24
    assert [(g.name, g.users, g.figures.jobs) for g in report.groups] == [("vision", 1, 2)]
