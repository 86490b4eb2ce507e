"""A queue group's progress (qa91, a sweep's researcher): a task's page counts its group's tasks
by status and links the job list filtered to the group; the list takes that filter in its
address, shows it as a filter to clear, and says how many jobs the filters match."""

from __future__ import annotations

import re
import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from jobs import spec as S
from jobs.models import Job, JobStatus
from jobs.services import jobs_submit

from .runner_helpers import make_spec, runner_settings  # noqa: F401

pytestmark = pytest.mark.usefixtures("runner_settings")

LIST = reverse("job-list")


def sweep(owner, name: str, total: int) -> list[Job]:
    spec = make_spec("true", name=name, submission=S.Submission(S.SUBMIT_QUEUE, total=total))
    return jobs_submit(owner=owner, spec=spec, submit_key=str(uuid.uuid4()))


def with_statuses(tasks: list[Job], *statuses: str) -> None:
    for task, status in zip(tasks, statuses, strict=False):
        Job.objects.filter(pk=task.pk).update(status=status)


def shown(html: str) -> list[str]:
    return re.findall(r'<tr data-job="([^"]+)"', html)


def test_a_tasks_page_counts_its_groups_tasks_by_status_and_links_the_list_of_them(alice, alice_en):
    tasks = sweep(alice, "sweep-lr", 8)
    S_ = JobStatus
    with_statuses(tasks, *[S_.SUCCEEDED] * 4, S_.FAILED, S_.RUNNING, S_.RUNNING)
    Job.objects.filter(pk=tasks[3].pk).delete()
    url = reverse("job-detail", args=[tasks[5].public_id])

    with CaptureQueriesContext(connection) as queries:
        html = alice_en.get(url).content.decode()

    progress = re.search(r'<p class="small" id="group-progress">(.*?)</p>', html, re.S)[1]
    group = tasks[0].group_id
    assert progress == (
        "Its group of 8 tasks: Succeeded: 3, Failed: 1, Running: 2, Queued: 1. 1 deleted. "
        f'<a href="/?group={group}" id="group-tasks-link">See the group\'s tasks</a>'
    )
    counted = [q["sql"] for q in queries.captured_queries if "COUNT(" in q["sql"]]
    assert len([sql for sql in counted if "group_id" in sql]) == 1  # one aggregate query


def test_a_tasks_page_says_its_groups_progress_in_chinese(alice, alice_client):
    tasks = sweep(alice, "sweep-lr", 3)
    with_statuses(tasks, JobStatus.SUCCEEDED)

    html = alice_client.get(reverse("job-detail", args=[tasks[1].public_id])).content.decode()

    assert "所在任务组共 3 个任务：成功：1、排队中：2。" in html


def test_the_list_filtered_by_group_shows_its_tasks_alone_and_the_filter_to_clear(
    alice, alice_en, bob, django_assert_num_queries
):
    mine = sweep(alice, "sweep-lr", 3)
    same_name = sweep(alice, "sweep-lr", 3)
    others = sweep(bob, "sweep-lr", 2)
    group = mine[0].group_id
    alice_en.get(LIST)  # warm the session

    # The unfiltered page's 6, and the group's name for its filter.
    with django_assert_num_queries(7):
        html = alice_en.get(LIST, {"group": group, "status": "queued"}).content.decode()
    elsewhere = alice_en.get(LIST, {"group": others[0].group_id}).content.decode()

    assert sorted(shown(html)) == sorted(task.public_id for task in mine)
    assert not set(shown(html)) & {task.public_id for task in same_name}
    assert (
        '<span class="badge rounded-pill text-bg-secondary fw-normal me-1" id="group-filter-name">sweep-lr (3 tasks) '
        in html
    )
    assert 'href="/?status=queued" id="group-filter-clear"' in html
    assert f'<input type="hidden" name="group" value="{group}">' in html  # Filter keeps it
    assert '<p class="small text-muted mb-2" id="job-count">3 jobs</p>' in html
    assert "Filters (Status: Queued; Queue group: sweep-lr (3 tasks))" in html
    # Another user's group: none of its tasks, named by its number only.
    assert shown(elsewhere) == [] and f">No. {others[0].group_id} " in elsewhere


@pytest.mark.parametrize("asked", ["abc", "0", "-1", "99999999999999999999", "1\x00"])
def test_a_group_filter_that_names_no_group_is_said_so_and_the_list_shows_every_job(
    alice, alice_client, asked
):
    tasks = sweep(alice, "sweep-lr", 2)

    chinese = alice_client.get(LIST, {"group": asked}).content.decode()
    alice_client.cookies["django_language"] = "en"
    r = alice_client.get(LIST, {"group": asked})

    html = r.content.decode()
    assert r.status_code == 200 and sorted(shown(html)) == sorted(t.public_id for t in tasks)
    assert (
        '<div class="text-danger" id="group-filter-error">A queue group is named by its number, '
        "as a task&#x27;s page links it (?group=12): this filter is left out.</div>"
    ) in html
    assert 'id="group-filter-error">队列任务组以编号指定' in chinese


def test_the_list_says_how_many_jobs_the_filters_match_in_chinese(alice, alice_client):
    sweep(alice, "sweep-lr", 23)

    first = alice_client.get(LIST).content.decode()
    second = alice_client.get(LIST, {"page": 2}).content.decode()

    for html in (first, second):
        assert '<p class="small text-muted mb-2" id="job-count">共 23 个任务</p>' in html


def test_the_status_poll_redraws_the_groups_progress_with_the_status(alice, alice_client):
    # qa109: right after submit the page said "排队中：3" beside "状态已变为：运行中" until a reload.
    tasks = sweep(alice, "sweep-lr", 3)
    alice_client.get(reverse("job-detail", args=[tasks[0].public_id]))
    with_statuses(tasks, JobStatus.SUCCEEDED, JobStatus.RUNNING, JobStatus.RUNNING)

    html = alice_client.get(
        reverse("job-live", args=[tasks[1].public_id]), HTTP_HX_REQUEST="true"
    ).content.decode()

    group = re.search(r'<div id="job-group" hx-swap-oob="true">(.*?)</div>', html, re.S)[1]
    assert "所在任务组共 3 个任务：成功：1、运行中：2。" in group
    assert 'id="group-stop"' in group  # the running tasks still stop with the group
    # review62: its Stop the group form, drawn again, still carries the CSRF token it posts.
    assert 'name="csrfmiddlewaretoken"' in group


@pytest.mark.parametrize("total", [2, 10])
def test_the_status_poll_of_a_group_task_asks_as_many_queries_whatever_the_groups_size(
    alice, alice_client, django_assert_num_queries, total
):
    # review62: the live partial counts the group's tasks in one aggregate; 12 queries in all.
    tasks = sweep(alice, "sweep-lr", total)
    with_statuses(tasks, JobStatus.RUNNING)
    url = reverse("job-live", args=[tasks[0].public_id])
    alice_client.get(url, HTTP_HX_REQUEST="true")  # the session warmed

    with django_assert_num_queries(12):
        r = alice_client.get(url, HTTP_HX_REQUEST="true")

    assert r.status_code == 200 and 'id="group-stop"' in r.content.decode()
