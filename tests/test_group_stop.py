"""Stop the group (qa93): a sweep user stops every unfinished task of a 1,000-task queue group
with one action, on a task's page or the list filtered by its group, or with BatchStopJobs'
groupId, where Stop selected took ten rounds of 100. Its work does not grow with the group:
the tasks not started are stopped by one UPDATE, the running ones through the runner's stop."""

from __future__ import annotations

import html
import re
import uuid

import pytest
from django.contrib.messages import get_messages
from django.test import Client
from django.urls import reverse

from jobs import spec as S
from jobs.api_keys import api_key_create
from jobs.models import Job, JobEvent, JobStatus
from jobs.services import jobs_submit
from jobs.worker import Worker

from . import test_api as v1
from .runner_helpers import (  # noqa: F401
    UNTIL_THE_GATE_OPENS,
    make_spec,
    open_gate,
    run_until,
    runner_settings,
    status_of,
)
from .test_api import client_for
from .test_api_v2 import action

pytestmark = pytest.mark.usefixtures("runner_settings")

# The console as a WSGI transport, for the API's calls (the v1 tests' fixture).
wsgi = v1.wsgi


def sweep(owner, total: int, *, command: str = "true", concurrency: int = 1) -> list[Job]:
    spec = make_spec(command, name="sweep")
    spec.submission = S.Submission(S.SUBMIT_QUEUE, total=total, concurrency=concurrency)
    return jobs_submit(owner=owner, spec=spec, submit_key=uuid.uuid4().hex)


def statuses(tasks: list[Job]) -> dict[str, int]:
    found: dict[str, int] = {}
    for status in Job.objects.filter(pk__in=[t.pk for t in tasks]).values_list("status", flat=True):
        found[status] = found.get(status, 0) + 1
    return found


def said(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


def stop_group(client, group_id: int, **data):
    return client.post(reverse("group-stop", args=[group_id]), {"confirmed": "1", **data})


def test_a_1000_task_group_is_stopped_in_one_action_with_queries_that_do_not_grow(
    alice, alice_en, django_assert_max_num_queries
):
    tasks = sweep(alice, 1000)
    group = tasks[0].group_id

    with django_assert_max_num_queries(25):
        r = stop_group(alice_en, group, job=tasks[4].public_id)

    assert statuses(tasks) == {JobStatus.STOPPED: 1000}
    assert r.status_code == 302 and r.url == reverse("job-detail", args=[tasks[4].public_id])
    assert said(r) == ["Stop requested for 1000 jobs."]
    # Each task's page says who stopped it, as its own Stop does.
    events = JobEvent.objects.filter(job__group_id=group, reason="Stopped")
    assert events.count() == 1000
    assert {(e.message, e.actor_id) for e in events} == {("已由 alice 停止。", alice.pk)}
    assert Job.objects.get(pk=tasks[999].pk).status_reason == "已由 alice 停止。"


def test_stop_the_group_sent_again_stops_nothing_twice_and_records_no_event_twice(alice, alice_en):
    tasks = sweep(alice, 5)
    group = tasks[0].group_id
    stop_group(alice_en, group)

    again = stop_group(alice_en, group)

    # (The first answer's message is still queued: the test did not follow its redirect.)
    assert said(again)[-1] == (
        "Nothing to stop: every task of this group has ended or is stopping."
    )
    assert JobEvent.objects.filter(job__group_id=group, reason="Stopped").count() == 5
    assert again.url == f"{reverse('job-list')}?group={group}"


def test_a_running_task_is_stopped_through_the_runner_and_the_queued_ones_at_once(
    alice, alice_en, settings
):
    tasks = sweep(alice, 4, command=UNTIL_THE_GATE_OPENS, concurrency=2)
    worker = Worker()
    run_until(worker, lambda: status_of(tasks[1]) == JobStatus.RUNNING, what="two to run")

    r = stop_group(alice_en, tasks[0].group_id)
    # Each running task's runner ends on its own; wait for both, not the first.
    run_until(worker, lambda: statuses(tasks) == {JobStatus.STOPPED: 4}, what="the stops")

    assert said(r) == ["Stop requested for 4 jobs."]
    assert statuses(tasks) == {JobStatus.STOPPED: 4}
    assert all(
        t.status == JobStatus.STOPPED for t in Job.objects.filter(group_id=tasks[0].group_id)
    )
    open_gate(settings)


def test_another_users_group_is_refused_as_one_that_does_not_exist(alice, bob):
    tasks = sweep(alice, 3)
    bob_client = Client()
    bob_client.force_login(bob)

    asked = bob_client.post(reverse("group-stop", args=[tasks[0].group_id]))
    sent = stop_group(bob_client, tasks[0].group_id)

    assert (asked.status_code, sent.status_code) == (404, 404)
    assert statuses(tasks) == {JobStatus.QUEUED: 3}


@pytest.mark.parametrize(
    ("language", "question"),
    [
        (
            "en",
            "Stop this queue group's 3 unfinished tasks? Those not started yet are stopped at "
            "once, the running ones are ended; they cannot be resumed.",
        ),
        ("zh-hans", "停止此队列任务组中 3 个未结束的任务？"),
    ],
)
def test_without_javascript_a_page_asks_first_naming_how_many_and_the_page_and_list_offer_it(
    alice, alice_client, language, question
):
    tasks = sweep(alice, 3)
    group = tasks[0].group_id
    alice_client.cookies["django_language"] = language

    asked = alice_client.post(reverse("group-stop", args=[group]), {"job": tasks[1].public_id})
    page = alice_client.get(reverse("job-detail", args=[tasks[1].public_id])).content.decode()
    listed = alice_client.get(reverse("job-list"), {"group": group}).content.decode()
    unfiltered = alice_client.get(reverse("job-list")).content.decode()

    text = html.unescape(asked.content.decode())
    assert asked.status_code == 200 and question in text
    assert f'name="job" value="{tasks[1].public_id}"' in text and 'name="confirmed"' in text
    assert statuses(tasks) == {JobStatus.QUEUED: 3}
    for shown in (page, listed):
        form = re.search(r'<form[^>]*id="group-stop-form"[^>]*>', shown)[0]
        assert question in html.unescape(form)
        assert f'action="{reverse("group-stop", args=[group])}"' in form
    assert 'id="group-stop-form"' not in unfiltered


def test_batch_stop_jobs_takes_a_group_id_and_stops_every_unfinished_task_once(alice, bob, wsgi):
    tasks = sweep(alice, 150)
    group = tasks[0].group_id
    alice_key, _secret = alice_api = api_key_create(owner=alice, description="sweep")
    api = client_for(wsgi, alice_key.access_key_id, alice_api[1])
    bob_key, bob_secret = api_key_create(owner=bob, description="other")
    bobs = client_for(wsgi, bob_key.access_key_id, bob_secret)

    first = action(api, "BatchStopJobs", resourcePoolId="local", body={"groupId": group})
    again = action(api, "BatchStopJobs", resourcePoolId="local", body={"groupId": group})
    with pytest.raises(Exception) as refused:
        action(bobs, "BatchStopJobs", resourcePoolId="local", body={"groupId": group})

    result = first["result"]
    assert (result["successNum"], result["failedNum"], result["groupId"]) == (150, 0, group)
    assert {item["jobId"] for item in result["successList"]} == {t.public_id for t in tasks}
    assert (again["result"]["successNum"], again["result"]["successList"]) == (0, [])
    assert getattr(refused.value, "code", None) == "QueueGroupNotFound"
    assert statuses(tasks) == {JobStatus.STOPPED: 150}
