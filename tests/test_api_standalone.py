"""CreateJob of a standalone local job (console.submission.mode "standalone") is admitted as
the wizard admits one: its cards read again under the local pool's cards lock, refused with
409 ResourceInsufficient and the numbers when the next pass does not leave them idle; a body
that does not choose (AIHC's never do) is a queue task, queued as AIHC queues it (sched26)."""

from __future__ import annotations

import pytest
from django.db import connections

from jobs import spec as S
from jobs.aihc.client import AihcError
from jobs.api_keys import api_key_create
from jobs.models import Job, JobStatus

from . import test_api as v1
from .runner_helpers import runner_settings  # noqa: F401
from .test_api import card_body, client_for, refused
from .test_concurrent_limits import at_once

wsgi, alice_key, api = v1.wsgi, v1.alice_key, v1.api

pytestmark = pytest.mark.usefixtures("runner_settings")


def standalone_body(name: str, *, cards: int) -> dict:
    job_body = card_body(name, cards=cards, command="true")
    job_body["console"] = {"submission": {"mode": "standalone", "total": 1, "concurrency": 1}}
    return job_body


def test_a_standalone_create_for_cards_a_queued_job_is_about_to_get_is_refused_409(api, alice):
    queued = api.create_job(pool="local", body=card_body("queued-first", cards=2))["jobId"]

    error = refused(lambda: api.create_job(pool="local", body=standalone_body("now", cards=1)))

    assert (error.status, error.code) == (409, "ResourceInsufficient")
    assert error.message.startswith("console.submission.mode: A standalone job needs 1 ")
    assert "but the pool has 0 idle now" in error.message
    assert 'set its mode to "queue"' in error.message
    assert list(Job.objects.values_list("public_id", flat=True)) == [queued]


def test_a_create_that_does_not_choose_is_stored_as_a_queue_task_and_one_that_does_as_chosen(
    api,
):
    plain = api.create_job(pool="local", body=card_body("plain", cards=1))["jobId"]
    chosen = api.create_job(pool="local", body=standalone_body("chosen", cards=1))["jobId"]

    modes = {
        job.public_id: job.job_spec().submission.mode
        for job in Job.objects.filter(public_id__in=[plain, chosen])
    }
    assert modes == {plain: S.SUBMIT_QUEUE, chosen: S.SUBMIT_STANDALONE}
    assert Job.objects.get(public_id=plain).status == JobStatus.QUEUED


def test_a_create_giving_a_group_size_without_a_mode_makes_that_many_queue_tasks(api):
    # No mode reads as a queue task (AIHC queues every job); the group's size and concurrency
    # the body gives are the body's, not replaced by a group of one.
    job_body = card_body("group", cards=1, command="true")
    job_body["console"] = {"submission": {"total": 3, "concurrency": 2}}

    api.create_job(pool="local", body=job_body)

    jobs = list(Job.objects.filter(name="group"))
    assert len(jobs) == 3
    assert {(j.group.total, j.group.concurrency) for j in jobs} == {(3, 2)}
    assert {j.job_spec().submission.mode for j in jobs} == {S.SUBMIT_QUEUE}


@pytest.mark.django_db(transaction=True)
def test_two_standalone_creates_racing_for_the_last_cards_make_exactly_one_job(
    wsgi,
    alice,
    bob,
):
    keys = [api_key_create(owner=user) for user in (alice, bob)]

    def create():
        key, secret = keys.pop()
        client = client_for(wsgi, key.access_key_id, secret)
        return client.create_job(pool="local", body=standalone_body("race", cards=2))

    results = at_once(create, table="jobs_job", times=2)
    connections.close_all()

    made = [r for r in results if isinstance(r, dict)]
    errors = [r for r in results if isinstance(r, AihcError)]
    assert len(made) == 1 and len(errors) == 1, results
    assert (errors[0].status, errors[0].code) == (409, "ResourceInsufficient")
    assert list(Job.objects.values_list("public_id", flat=True)) == [made[0]["jobId"]]
