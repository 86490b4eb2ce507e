"""The console with a year of a big team's data: what must not grow with it (scale review,
session 18; bench/bench_scale.py measures the pages against a seeded database)."""

from __future__ import annotations

import re
import time
import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from jobs.models import Job, JobEvent, JobStatus
from jobs.services import EVENTS_SHOWN, job_transition, jobs_submit
from jobs.worker import EXPIRED_PER_PASS, Worker

from .runner_helpers import ended_at, make_spec, runner_settings  # noqa: F401

pytestmark = pytest.mark.usefixtures("runner_settings")


def submit(owner, **changes) -> Job:
    [job] = jobs_submit(
        owner=owner, spec=make_spec("echo hi", **changes), submit_key=str(uuid.uuid4())
    )
    return job


def with_many_events(job: Job, n: int) -> None:
    """`n` more events, a second apart after the job's own, messages step-0000, step-0001..."""
    start = timezone.now() + timedelta(minutes=1)
    made = JobEvent.objects.bulk_create(
        [JobEvent(job=job, reason="Restarted", message=f"step-{i:04d}") for i in range(n)]
    )
    for i, event in enumerate(made):  # created_at is auto_now_add: set after
        event.created_at = start + timedelta(seconds=i)
    JobEvent.objects.bulk_update(made, ["created_at"])


def test_a_job_page_shows_its_newest_events_oldest_first_and_says_how_many_are_not_shown(
    alice, alice_client
):
    job = submit(alice)
    with_many_events(job, EVENTS_SHOWN + 50)
    hidden = job.events.count() - EVENTS_SHOWN

    html = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()

    assert "step-0049" not in html and "<li" in html
    assert (
        html.index("step-0050")
        < html.index("step-0100")
        < html.index(f"step-{EVENTS_SHOWN + 49:04d}")
    )
    assert html.count("event-reason") == EVENTS_SHOWN
    # Where the others are: the API's job events, by time range (not all in one answer).
    assert (
        f"最近 {EVENTS_SHOWN} 条事件；更早的 {hidden} 条未显示（可用 API 的任务事件按时间范围读取）"
        in html
    )


def test_the_job_pages_refresh_sends_the_newest_events_only(alice, alice_client):
    job = submit(alice)
    with_many_events(job, EVENTS_SHOWN + 1)

    live = alice_client.get(
        reverse("job-live", args=[job.public_id]), headers={"HX-Request": "true"}
    ).content.decode()

    assert live.count("event-reason") == EVENTS_SHOWN
    assert f"step-{EVENTS_SHOWN:04d}" in live and "step-0000" not in live


def test_a_job_with_few_events_shows_them_all_without_a_note(alice, alice_client):
    job = submit(alice)
    with_many_events(job, 3)

    html = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()

    assert html.count("event-reason") == job.events.count()
    assert 'id="events-hidden"' not in html


def test_the_admin_job_page_shows_the_newest_events_and_says_how_many_are_not_shown(
    alice, reviewer
):
    job = submit(alice)
    with_many_events(job, EVENTS_SHOWN + 10)
    hidden = job.events.count() - EVENTS_SHOWN
    client = Client()
    client.force_login(reviewer)

    html = client.get(f"/admin/jobs/job/{job.pk}/change/").content.decode()

    assert "step-0009" not in html
    assert "step-0010" in html and f"step-{EVENTS_SHOWN + 9:04d}" in html
    assert f"更早的 {hidden} 条未显示" in html


def test_the_admin_job_page_lists_its_events_in_a_plain_table_not_a_formset_of_hidden_fields(
    alice, reviewer
):
    # qa107: the events were a read-only inline formset, each of its 200 rows with hidden id
    # and job inputs: a job with 2,000 events took 1.4 to 2.6 s (26 times a bare page), 310 KB.
    job = submit(alice)
    with_many_events(job, EVENTS_SHOWN + 10)
    client = Client()
    client.force_login(reviewer)

    html = client.get(f"/admin/jobs/job/{job.pk}/change/").content.decode()

    assert 'name="events-' not in html  # no management form, no hidden input per row
    rows = re.findall(r'<tr class="form-row has_original">(.*?)</tr>', html, re.S)
    assert len(rows) == EVENTS_SHOWN
    # The inline's columns: time to the second, type, reason (its code in the title), message, by.
    cells = re.findall(r'<td class="field-(\w+)"><p>(.*?)</p></td>', rows[-1], re.S)
    assert [name for name, _ in cells] == [
        "time_shown",
        "type",
        "reason_shown",
        "message_in_language",
        "actor",
    ]
    assert cells[1][1] == "正常" and 'title="Restarted"' in cells[2][1]
    assert cells[3][1] == f"step-{EVENTS_SHOWN + 9:04d}" and cells[4][1] == "—"
    assert '<th class="column-actor">操作人</th>' in html


def test_a_reviewer_can_ask_the_admin_job_page_for_every_event(alice, reviewer):
    # Review 18b: the note sent staff to the API's job events for the rest, but the API
    # answers a job's owner only: a reviewer had no way to read the earlier events.
    job = submit(alice)
    with_many_events(job, EVENTS_SHOWN + 10)
    client = Client()
    client.force_login(reviewer)
    url = f"/admin/jobs/job/{job.pk}/change/"

    note = client.get(url).content.decode()
    html = client.get(f"{url}?events=all").content.decode()

    assert (
        'href="?events=all" id="events-show-all"' in note
        and "API" not in note.split('id="events-hidden"')[1].split("</p>")[0]
    )
    assert "step-0000" in html and f"step-{EVENTS_SHOWN + 9:04d}" in html
    assert 'id="events-hidden"' not in html


def test_every_event_of_a_job_with_thousands_is_shown_a_bounded_page_at_a_time(alice, reviewer):
    # Review 18c: ?events=all drew every event as a read-only form row, one page however many:
    # a job with 100,000 events was some 100 MB, built in memory on each look.
    from jobs.admin import EVENTS_PAGE

    job = submit(alice)
    own = job.events.count()  # the job's own, before the many
    with_many_events(job, 2 * EVENTS_PAGE + 10)
    total = job.events.count()
    client = Client()
    client.force_login(reviewer)
    url = f"/admin/jobs/job/{job.pk}/change/?events=all"

    first = client.get(url).content.decode()
    last = client.get(f"{url}&events_page=3").content.decode()

    rows = 'class="field-message_in_language"'
    assert first.count(rows) == EVENTS_PAGE
    assert "step-0000" in first and f"step-{EVENTS_PAGE - own - 1:04d}" in first
    assert f"step-{EVENTS_PAGE - own:04d}" not in first
    assert f"第 1 至 {EVENTS_PAGE} 条事件，共 {total} 条，最早的在前（第 1 页，共 3 页）" in first
    assert 'id="events-earlier"' not in first
    assert 'href="?events=all&amp;events_page=2" id="events-later"' in first
    assert last.count(rows) == total - 2 * EVENTS_PAGE
    assert f"step-{2 * EVENTS_PAGE + 9:04d}" in last and "step-0000" not in last
    assert 'href="?events=all&amp;events_page=2" id="events-earlier"' in last
    assert 'id="events-later"' not in last
    # A page number out of range, or none at all, shows the nearest page, never an error.
    for asked, shown in [("0", 1), ("-1", 1), ("abc", 1), ("99999999999999", 3), ("٣", 1)]:
        response = client.get(f"{url}&events_page={asked}")
        assert response.status_code == 200
        assert f"（第 {shown} 页，共 3 页）" in response.content.decode()


def finished_long_ago(owner, n: int, *, days: int) -> list[Job]:
    """`n` local jobs that succeeded `days` days ago (and a minute apart) with a 1-day
    retention, so they are all due."""
    jobs = [submit(owner, retention_period="1d") for _ in range(n)]
    for i, job in enumerate(jobs):
        job_transition(job=job, to=JobStatus.RUNNING, reason="Test")
        job_transition(job=job, to=JobStatus.SUCCEEDED, reason="Test")
        ended_at(job, timezone.now() - timedelta(days=days, minutes=i))
    return jobs


def test_a_local_job_that_ends_stores_when_its_retention_deletes_it_and_the_worker_reads_that(
    alice, sqlite_only
):
    # qa107: the worker's retention pass read every finished local job's spec (its
    # retentionPeriod) once a minute: 213 ms at 19,534 of them.
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from jobs.worker import retention

    due, stopped = (submit(alice, retention_period="1d") for _ in range(2))
    plain = submit(alice)
    for job in (due, stopped, plain):
        job_transition(job=job, to=JobStatus.RUNNING, reason="Test")
    job_transition(job=due, to=JobStatus.SUCCEEDED, reason="Test")
    job_transition(job=stopped, to=JobStatus.STOPPING, reason="Test")
    job_transition(job=stopped, to=JobStatus.STOPPED, reason="Test")
    job_transition(job=plain, to=JobStatus.FAILED, reason="Test")

    with CaptureQueriesContext(connection) as queries:
        Worker().delete_expired()

    stored = dict(Job.objects.values_list("pk", "deletes_at"))
    due.refresh_from_db()
    assert stored == {due.pk: due.finished_at + retention("1d"), stopped.pk: None, plain.pk: None}
    [plan] = plans_touching_jobs(
        [q for q in queries.captured_queries if '"jobs_job"."deletes_at" <=' in q["sql"]]
    )
    assert "(deletes_at<?)" in plan and "SCAN" not in plan, plan


def test_a_backlog_of_expired_jobs_is_deleted_a_bounded_number_a_tick_longest_overdue_first(
    alice,
):
    jobs = finished_long_ago(alice, EXPIRED_PER_PASS + 3, days=5)
    worker = Worker()

    worker.delete_expired()

    # The three most recently finished are the least overdue: left for the next tick.
    assert set(Job.objects.values_list("pk", flat=True)) == {job.pk for job in jobs[:3]}
    worker.delete_expired()
    assert not Job.objects.exists()


def test_the_worker_looks_for_expired_jobs_once_a_minute_not_on_every_tick(
    alice, settings, django_assert_num_queries
):
    # A job minute of 1 s, not 0.2: the second look must come within it, after a job is made
    # (which a loaded machine may take a good part of 0.2 s to do).
    settings.JOB_MINUTE_SECONDS = 1
    kept = submit(alice, retention_period="1d")
    worker = Worker()
    worker.delete_expired()
    [due] = finished_long_ago(alice, 1, days=2)

    with django_assert_num_queries(0):
        worker.delete_expired()

    assert Job.objects.filter(pk=due.pk).exists()
    time.sleep(1.05)  # a "minute" later
    worker.delete_expired()
    assert set(Job.objects.values_list("pk", flat=True)) == {kept.pk}


REFUSING_TRIGGER = {
    "sqlite": (
        [
            "CREATE TRIGGER keep_jobs BEFORE DELETE ON jobs_job WHEN OLD.id IN ({ids}) "
            "BEGIN SELECT RAISE(ABORT, 'kept'); END"
        ],
        ["DROP TRIGGER keep_jobs"],
    ),
    "postgresql": (
        [
            "CREATE FUNCTION keep_jobs() RETURNS trigger LANGUAGE plpgsql "
            "AS $$ BEGIN RAISE EXCEPTION 'kept'; END $$",
            "CREATE TRIGGER keep_jobs BEFORE DELETE ON jobs_job FOR EACH ROW "
            "WHEN (OLD.id IN ({ids})) EXECUTE FUNCTION keep_jobs()",
        ],
        ["DROP TRIGGER keep_jobs ON jobs_job", "DROP FUNCTION keep_jobs()"],
    ),
}


def test_jobs_whose_deletion_fails_every_time_do_not_keep_the_other_expired_jobs(
    transactional_db, alice
):
    # Review 18b: the longest overdue first, EXPIRED_PER_PASS jobs the database will not let
    # go took every place of every pass, and the jobs due after them were never deleted.
    stuck = finished_long_ago(alice, EXPIRED_PER_PASS, days=9)
    others = finished_long_ago(alice, 3, days=5)
    ids = ", ".join(str(job.pk) for job in stuck)
    create, drop = REFUSING_TRIGGER[connection.vendor]
    with connection.cursor() as cursor:
        for statement in create:
            cursor.execute(statement.format(ids=ids))
    try:
        worker = Worker()
        worker.delete_expired()  # the stuck ones, the longest overdue, fail
        worker.delete_expired()
        left = set(Job.objects.values_list("pk", flat=True))
    finally:
        with connection.cursor() as cursor:
            for statement in drop:
                cursor.execute(statement)

    assert left == {job.pk for job in stuck}
    assert not any(Job.objects.filter(pk=job.pk).exists() for job in others)


def plan_of(queryset) -> str:
    from django.db import connection

    sql, params = queryset.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN QUERY PLAN {sql}", params)
        return "; ".join(row[-1] for row in cursor.fetchall())


@pytest.fixture
def sqlite_only():
    from django.db import connection

    if connection.vendor != "sqlite":
        pytest.skip("SQLite's query plans (PostgreSQL's depend on its statistics)")


def test_jobs_of_a_pool_newest_first_are_read_in_order_not_sorted(alice, sqlite_only):
    from jobs.api_views import jobs_found

    submit(alice)
    # The admin's job list filtered by pool (its first page, and the date drill-down's ends).
    admin_list = Job.objects.filter(resource_pool="local").order_by("-created_at", "-id")[:51]
    assert "USING INDEX job_pool_created" in plan_of(admin_list)
    assert "TEMP B-TREE" not in plan_of(admin_list)
    first_day = (
        Job.objects.filter(resource_pool="local").order_by("created_at").values("created_at")[:1]
    )
    assert "TEMP B-TREE" not in plan_of(first_day)
    # The API's ListJobs / DescribeJobs: the owner's jobs of the pool, never every user's.
    api_list = jobs_found(owner=alice, pool="local")[:10]
    assert "job_owner_pool_created (owner_id=? AND resource_pool=?)" in plan_of(api_list)
    assert "TEMP B-TREE" not in plan_of(api_list)


def plans_touching_jobs(queries) -> list[str]:
    """The plan of each query that reads jobs_job, as `plan_of` gives it."""
    from django.db import connection

    plans = []
    for query in queries:
        if "jobs_job" not in query["sql"]:
            continue
        with connection.cursor() as cursor:
            cursor.execute(f"EXPLAIN QUERY PLAN {query['sql']}")
            plans.append("; ".join(row[-1] for row in cursor.fetchall()))
    return plans


def test_the_pools_page_reads_only_running_and_waiting_jobs_not_every_job_of_a_pool(
    alice, bob, alice_client, sqlite_only
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from jobs.models import CardQuota

    CardQuota.objects.create(user=alice, max_cards=8)  # its use is read too
    for owner in (alice, bob):
        for status in (JobStatus.QUEUED, JobStatus.RUNNING, JobStatus.SUCCEEDED):
            Job.objects.filter(pk=submit(owner).pk).update(status=status)

    with CaptureQueriesContext(connection) as queries:
        page = alice_client.get(reverse("pool-list"))

    assert page.status_code == 200
    plans = plans_touching_jobs(queries.captured_queries)
    # The local pool's cards in use, the jobs queued for them and what their owners hold
    # (the idle cards are what the queued jobs whose turn it is leave), the queues' totals,
    # the viewer's own jobs, what their running jobs hold of the quota.
    assert len(plans) == 6
    for plan in plans:
        jobs_read = [s for s in plan.split("; ") if re.match(r"(SEARCH|SCAN) (jobs_job|j) ", s)]
        assert jobs_read, plan
        # Found by status (job_status_sched, job_owner_status): never the pool's every job
        # (job_pool_queue: resource_pool=?), nor every job of the viewer (owner_id=? alone).
        assert all("status=?" in step for step in jobs_read), plan


def test_the_apis_queues_count_only_running_and_waiting_jobs_not_every_job_of_a_pool(
    alice, sqlite_only
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from jobs.pools import queue_counts
    from jobs.wizard import available_pools

    submit(alice)
    [pool] = [p for p in available_pools() if p.id == "local"]

    with CaptureQueriesContext(connection) as queries:
        counts = queue_counts(pool=pool)

    assert counts["default"].waiting == 1
    [plan] = plans_touching_jobs(queries.captured_queries)
    # By status (job_status_sched or job_status_created, status first in both).
    assert re.search(r"job_status_(sched|created) \(status=\?\)", plan), plan
    assert "resource_pool=?" not in plan


def test_the_admins_status_filter_reads_its_jobs_newest_first_from_an_index_not_sorted(
    alice, reviewer, sqlite_only
):
    # qa107: ?status__exact=failed sorted each of the 3,400 failed jobs' rows (USE TEMP
    # B-TREE FOR ORDER BY), 8 to 17 times a bare page at 20,000 jobs.
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    submit(alice)
    client = Client()
    client.force_login(reviewer)

    with CaptureQueriesContext(connection) as queries:
        page = client.get("/admin/jobs/job/?status__exact=failed")

    assert page.status_code == 200
    filtered = [q for q in queries.captured_queries if '"jobs_job"."status" = ' in q["sql"]]
    plans = plans_touching_jobs(filtered)
    # Its count, its page (newest first) and the date drill-down's first and last day.
    assert len(plans) >= 3
    for plan in plans:
        assert "job_status_created (status=?" in plan, plan
        assert "TEMP B-TREE" not in plan, plan


def test_the_admins_review_state_filter_reads_its_jobs_from_an_index_not_every_job(
    alice, reviewer, sqlite_only
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    submit(alice)
    client = Client()
    client.force_login(reviewer)

    with CaptureQueriesContext(connection) as queries:
        page = client.get("/admin/jobs/job/?review_state__exact=pending")

    assert page.status_code == 200
    filtered = [q for q in queries.captured_queries if '"review_state" = ' in q["sql"]]
    plans = plans_touching_jobs(filtered)
    # Its count, its page (newest first) and the date drill-down's first and last day.
    assert len(plans) >= 3
    for plan in plans:
        assert "job_review_created (review_state=?" in plan, plan
        assert "SCAN jobs_job" not in plan and "TEMP B-TREE" not in plan, plan
