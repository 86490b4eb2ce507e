"""A sweep's task run again (Run this task again, Copy this task & edit) is a queue task of
one whose envs pin the task it runs as: every place that names a task's place says "6/8
(again)" of it, as its page and the list's row do (qa93: the bulk rows, the selection bar and
the alerts said 1/1)."""

from __future__ import annotations

import html
import re

import pytest
from django.core import mail
from django.test import Client
from django.urls import reverse

from jobs import spec as S
from jobs.actions import job_rerun
from jobs.alerts import job_alert, named_for_alert
from jobs.models import UserPreference
from jobs.services import jobs_submit

from . import test_api as v1
from .conftest import run_queued_tasks
from .runner_helpers import make_spec, runner_settings  # noqa: F401
from .test_alerts import alerting_spec, hook_server  # noqa: F401

pytestmark = pytest.mark.usefixtures("runner_settings")

# The v1 API tests' fixtures: the console as a WSGI transport, Alice's key and AIHC client.
wsgi, alice_key, api = v1.wsgi, v1.alice_key, v1.api


def sweep_task_run_again(owner, spec=None):
    spec = spec or make_spec("true", name="sweep")
    spec.submission = S.Submission(S.SUBMIT_QUEUE, total=3, concurrency=3)
    tasks = jobs_submit(owner=owner, spec=spec, submit_key="sweep")
    [again] = job_rerun(job=tasks[1], owner=owner)
    return tasks, again


@pytest.mark.parametrize(("language", "place"), [("en", "2/3 (again)"), ("zh-hans", "2/3（再次）")])
def test_a_task_run_again_is_named_as_that_task_in_the_bulk_rows_and_selection_bar(
    alice, alice_client: Client, language, place
):
    tasks, again = sweep_task_run_again(alice)
    alice_client.cookies["django_language"] = language

    confirm = alice_client.post(
        reverse("job-bulk"), {"action": "stop", "jobs": [again.public_id, tasks[0].public_id]}
    ).content.decode()
    listed = alice_client.get(
        reverse("job-list"), {"sel": [again.public_id, tasks[0].public_id]}
    ).content.decode()

    row = confirm[confirm.index(f'<tr data-job="{again.public_id}"') :]
    badge = re.search(r'class="badge text-bg-light border group-task"[^>]*>([^<]*)<', row)[1]
    assert html.unescape(badge) == place
    chips = re.findall(r'selection-job" data-job.*?<span class="text-break">([^<]*)<', listed, re.S)
    assert [html.unescape(c) for c in chips] == [f"sweep {place}", "sweep 1/3"]


def test_a_task_run_agains_alerts_name_that_task_in_each_readers_language_and_json(
    alice,
    bob,
    settings,
    hook_server,  # noqa: F811
):
    settings.ALERT_WEBHOOK_ALLOW_PRIVATE = True
    UserPreference.objects.create(user=bob, language="en")
    spec = alerting_spec("false", hook_server.url, name="sweep")
    spec.alert.emails = ["ops@example.com", "bob@example.com"]
    tasks, again = sweep_task_run_again(alice, spec)

    for job in (again, tasks[2]):
        job_alert(job=job, item="jobFailed", message=named_for_alert(job=job, message="exit 1"))
    run_queued_tasks()

    bodies = {r["body"]["jobId"]: r["body"] for r in hook_server.received}
    # The task it runs as (its pinned AIHC_GROUP_TASK_INDEX 1, from 1: 2), and that it is run
    # again; a first run's body has no groupTaskAgain.
    rerun = bodies[again.public_id]
    assert (rerun["groupTaskIndex"], rerun["groupTaskTotal"], rerun["groupTaskAgain"]) == (
        2,
        3,
        True,
    )
    first = bodies[tasks[2].public_id]
    assert (first["groupTaskIndex"], first["groupTaskTotal"]) == (3, 3)
    assert "groupTaskAgain" not in first
    assert rerun["message"] == "sweep 2/3（再次）：exit 1"
    sent = {tuple(m.to): m for m in mail.outbox if again.public_id in m.body}
    assert {to: m.subject for to, m in sent.items()} == {
        ("ops@example.com",): "[AI 训练任务控制台] sweep 2/3（再次） 运行失败",
        ("bob@example.com",): "[AI Job Console] sweep 2/3 (again) failed",
    }
    assert "sweep 2/3 (again): exit 1" in sent[("bob@example.com",)].body


def test_a_task_run_agains_api_answer_names_that_task_and_that_it_runs_again(alice, api):
    tasks, again = sweep_task_run_again(alice)

    rerun = api.request(
        "GET",
        f"/api/v1/aijobs/{again.public_id}",
        params=[("resourcePoolId", "local")],
        idempotent=True,
    )["result"]
    first = api.request(
        "GET",
        f"/api/v1/aijobs/{tasks[1].public_id}",
        params=[("resourcePoolId", "local")],
        idempotent=True,
    )["result"]

    assert (rerun["groupTaskIndex"], rerun["groupTaskTotal"], rerun["groupTaskAgain"]) == (
        2,
        3,
        True,
    )
    assert rerun["groupId"] == again.group_id != tasks[1].group_id
    assert (first["groupTaskIndex"], first["groupTaskTotal"]) == (2, 3)
    assert "groupTaskAgain" not in first


@pytest.mark.parametrize(("language", "place"), [("en", "2/3 (again)"), ("zh-hans", "2/3（再次）")])
def test_a_task_run_again_is_named_as_that_task_on_the_pools_page_and_in_compare(
    alice, alice_client: Client, language, place
):
    tasks, again = sweep_task_run_again(alice)
    alice_client.cookies["django_language"] = language
    alice_client.get(reverse("pool-list"))  # warm the session

    pools = alice_client.get(reverse("pool-list")).content.decode()
    compared = alice_client.get(
        reverse("job-compare"), {"job": [tasks[1].public_id, again.public_id]}
    ).content.decode()

    own = pools[pools.index(f'id="pool-job-{again.public_id}"') :]
    badge = re.search(r'class="badge text-bg-light border group-task"[^>]*>([^<]*)<', own)[1]
    assert html.unescape(badge) == place
    headers = re.findall(r'<th scope="col" class="compare-job".*?</th>', compared, re.S)
    badges = [re.search(r'group-task">([^<]*)<', h)[1] for h in headers]
    assert [html.unescape(b) for b in badges] == ["2/3", place]


@pytest.mark.parametrize(("language", "again"), [("en", "2/3 (again)"), ("zh-hans", "2/3（再次）")])
def test_the_job_lists_links_to_a_groups_tasks_are_each_named_with_their_place(
    alice, alice_client: Client, language, again
):
    # qa115: a links list read "sweep" four times, the place beside each link, outside it.
    tasks, run_again = sweep_task_run_again(alice)
    alice_client.cookies["django_language"] = language

    listed = alice_client.get(reverse("job-list")).content.decode()

    names = {
        public_id: html.unescape(name)
        for public_id, name in re.findall(
            r'id="job-link-([^"]+)" class="job-name" aria-label="([^"]*)">sweep</a>', listed
        )
    }
    assert names == {
        tasks[0].public_id: "sweep 1/3",
        tasks[1].public_id: "sweep 2/3",
        tasks[2].public_id: "sweep 3/3",
        run_again.public_id: f"sweep {again}",
    }
