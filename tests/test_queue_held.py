"""A queue held by its first job, which does not fit, said where the idle cards are shown
(qa91): Bob's running job holds 2 of the 4 V100, and his queued 3-card task is the first of
the only queue. The wizard and the pools page showed "2 idle of 4", yet a 1-card queue task
waited, a standalone job, even a CPU-only one, was refused (once its form was filled), and ten
CPU-only tasks waited behind it. Now the pools page's queue table, the wizard's stock line (and
its poll) and its Submission step say which job holds the queue, what it waits for, and that
the jobs of its priority or lower there wait behind it: from the plan the idle figures and
the admission read (jobs.scheduler.queue_held_notes), the job named and linked for its owner
only."""

from __future__ import annotations

import html
import re
import uuid

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from jobs import spec as S
from jobs import wizard as W
from jobs.api_keys import api_key_create
from jobs.models import Job, JobStatus, LocalRun
from jobs.services import jobs_submit
from tests import test_api
from tests.signed_requests import signed_request
from tests.test_wizard import (
    V100,
    _local_pool,  # noqa: F401 (autouse fixture)
    basic_data,
    complete_steps,
    field_errors,
    new_draft,
    post_step,
    resources_data,
    role,
    step_url,
    submission_data,
)

# The console as a WSGI transport, for the API's calls (the v1 tests' fixture).
wsgi = test_api.wsgi
POOLS = reverse("pool-list")
HTMX = {"HX-Request": "true"}
HELD_BY_OTHER = (
    "Queue “default” is held by a job of another user, which waits for 3 "
    f"{S.card_shown(V100)} cards: until it starts, no job of this queue of priority Normal or lower "
    "starts, even one asking for no card, and a standalone job of such a priority is refused "
    "in this queue."
)


@pytest.fixture(autouse=True)
def two_queues(settings):
    settings.LOCAL_QUEUES = ["default", "research"]


def _client(user, language: str = "en") -> Client:
    client = Client(headers={"Accept-Language": language})
    client.force_login(user)
    return client


def _queued(owner, cards: int, *, name: str = "big-run") -> Job:
    spec = S.JobSpec(
        name=name,
        resource_pool_id="local",
        image="a/b:1",
        command="true",
        roles=[S.Role("master", 1, accelerator_type=V100, accelerators=cards, cpu=1)],
        submission=S.Submission(mode=S.SUBMIT_QUEUE, total=1, concurrency=1),
    )
    return jobs_submit(owner=owner, spec=spec, submit_key=uuid.uuid4().hex)[0]


@pytest.fixture
def boss_holds_two(bob) -> Job:
    """Bob's running job on 2 of the 4 V100: 2 idle."""
    spec = S.JobSpec(name="busy", resource_pool_id="local", image="a/b:1", command="x")
    spec.roles = [S.Role(name="master", replicas=1, accelerator_type=V100, accelerators=2)]
    job = Job.objects.create(
        public_id="pytorchjob-busy",
        name="busy",
        owner=bob,
        spec=spec.to_document(),
        status=JobStatus.RUNNING,
        backend="local",
        resource_pool="local",
    )
    LocalRun.objects.create(job=job, devices={V100: [0, 1]})
    return job


def _held_rows(page: str) -> dict[str, str]:
    """The pools page's notes under its queues, by queue, as text."""
    return {
        queue: html.unescape(re.sub(r"<[^>]+>", "", note))
        for queue, note in re.findall(
            r'<tr class="queue-held-row" data-held-queue="([^"]+)">'
            r'<td colspan="4" class="small text-warning-emphasis queue-held">(.*?)</td></tr>',
            page,
            re.S,
        )
    }


def _stock_line(page: str) -> str:
    found = re.search(r'<p class="small text-muted" id="pool-stock"[^>]*>(.*?)</p>', page, re.S)
    assert found, page
    return html.unescape(re.sub(r"<[^>]+>", "", found.group(1)))


def test_the_pools_page_says_a_queue_is_held_by_a_job_waiting_for_3_cards_beside_2_idle(
    alice, bob, boss_holds_two
):
    held = _queued(bob, 3)

    page = _client(alice).get(POOLS).content.decode()
    poll = _client(alice).get(POOLS, headers=HTMX).content.decode()
    own = _client(bob).get(POOLS).content.decode()

    for shown in (page, poll):
        assert "2 idle of 4" in shown
        assert _held_rows(shown) == {"default": HELD_BY_OTHER}  # not `research`
        assert "big-run" not in shown and held.public_id not in shown
    # Its owner reads which of their jobs it is, with a link to its page.
    assert _held_rows(own) == {
        "default": HELD_BY_OTHER.replace("a job of another user", "your job big-run")
    }
    assert (
        f'<a href="/jobs/{held.public_id}/" id="queue-held-by-{held.public_id}">big-run</a>' in own
    )


def test_the_note_is_said_in_chinese_to_a_chinese_reader(alice, bob, boss_holds_two):
    _queued(bob, 3)

    page = _client(alice, "zh-hans").get(POOLS).content.decode()

    assert _held_rows(page) == {
        "default": f"队列“default”被其他用户的一个任务占住，它在等待 3 张 {S.card_shown(V100)}：在它启动前，"
        "此队列中优先级为“中”或更低的任务都不会启动（不需要加速芯片的也一样），此队列中这些"
        "优先级的独立任务也会被拒绝。"
    }


def test_the_note_goes_once_the_queues_first_job_fits(alice, bob, boss_holds_two):
    _queued(bob, 3)
    assert _held_rows(_client(alice).get(POOLS).content.decode()) == {"default": HELD_BY_OTHER}

    Job.objects.filter(pk=boss_holds_two.pk).update(status=JobStatus.SUCCEEDED)  # 4 idle
    page = _client(alice).get(POOLS).content.decode()

    assert "1 idle of 4" in page  # the 4 less the 3 the queued job is about to get
    assert _held_rows(page) == {} and "queue-held" not in page


def test_the_wizards_stock_line_and_its_poll_say_it_too_with_no_query_more(
    alice, bob, boss_holds_two
):
    alice_client = _client(alice)
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.RESOURCES)
    poll = reverse("wizard-idle", args=[draft.id])
    query = {
        "row": "0",
        "roles-0-use_accelerator": "on",
        "roles-0-accelerator_type": V100,
        "roles-0-accelerators": "1",
        "roles-0-replicas": "1",
    }
    fits = _queued(bob, 1, name="fits")  # a queued job that is not held: it starts next pass
    with CaptureQueriesContext(connection) as unheld:
        alice_client.get(poll, query, headers=HTMX)
    Job.objects.filter(pk=fits.pk).delete()
    _queued(bob, 3)

    step = alice_client.get(step_url(draft, W.RESOURCES)).content.decode()
    with CaptureQueriesContext(connection) as held:
        answer = alice_client.get(poll, query, headers=HTMX).content.decode()

    count, stock = answer.split('id="pool-stock"')
    assert "2 cards idle" in count
    for line in (
        _stock_line(step),
        _stock_line('<p class="small text-muted" id="pool-stock"' + stock),
    ):
        assert "2 idle of 4" in line and HELD_BY_OTHER in line
    # Read from the plan the idle figures come from: no query more for another user's job.
    assert len(held) == len(unheld)


def test_the_submission_step_says_it_before_a_cpu_only_standalone_job_is_refused(
    alice, bob, boss_holds_two
):
    _queued(bob, 3)
    alice_client = _client(alice)
    cpu_only, high = new_draft(alice_client), new_draft(alice_client)
    no_card = {W.RESOURCES: resources_data([role("master", 1, card="")])}
    complete_steps(alice_client, cpu_only, upto=W.SUBMISSION, **no_card)
    complete_steps(
        alice_client,
        high,
        upto=W.SUBMISSION,
        **no_card,
        **{W.BASIC: basic_data(priority="high")},
    )

    step = alice_client.get(step_url(cpu_only, W.SUBMISSION)).content.decode()
    refused = post_step(alice_client, cpu_only, W.SUBMISSION, submission_data())
    ahead = alice_client.get(step_url(high, W.SUBMISSION)).content.decode()

    note = re.search(r'<p class="alert alert-warning small mb-1 queue-held">(.*?)</p>', step)
    assert note and html.unescape(note.group(1)) == HELD_BY_OTHER
    # ...and the admission, reading the same plan, refuses it as the note says.
    assert any(
        "queue “default” waits for a job before it that needs more cards than are idle" in m
        for m in field_errors(refused, "id_mode")
    ), field_errors(refused, "id_mode")
    assert "queue-held" not in ahead  # a high-priority job goes before Bob's


# -- The API's queue calls (qa93) -----------------------------------------------------------


def _api_queue(wsgi, owner, *, version: str, language: str = "en") -> dict[str, dict]:
    """The local pool's queues as `owner`'s script reads them: v1's list and each queue's
    describe, or v2's DescribeQueues and DescribeQueue, by name (the list's and the describe's
    answers must agree)."""
    key = api_key_create(owner=owner, description="sweep script")
    headers = {"Accept-Language": language}

    def call(path: str, query: list[tuple[str, str]]) -> dict:
        sent = {**headers, **({"X-API-Version": "v2"} if version == "v2" else {})}
        r = signed_request(wsgi, key, method="GET", path=path, query=query, headers=sent)
        assert r.status_code == 200, r.text
        return r.json()

    if version == "v1":
        listed = call("/api/v1/resourcepools/local/queue", [])["result"]["queues"]
        one = [
            call(f"/api/v1/resourcepools/local/queue/{q['name']}", [])["result"]["queue"]
            for q in listed
        ]
        named = "name"
    else:
        listed = call("/", [("action", "DescribeQueues"), ("resourcePoolId", "local")])["queues"]
        one = [call("/", [("action", "DescribeQueue"), ("queueId", q["queueId"])]) for q in listed]
        named = "queueName"
    assert [q["console"] for q in listed] == [q["console"] for q in one]
    return {q[named]: q["console"]["held"] for q in listed}


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_the_api_says_which_queue_is_held_by_whose_job_for_how_many_cards(
    alice, bob, boss_holds_two, wsgi, version
):
    before = _api_queue(wsgi, alice, version=version)
    held = _queued(bob, 3)

    to_alice = _api_queue(wsgi, alice, version=version)
    to_bob = _api_queue(wsgi, bob, version=version)
    in_chinese = _api_queue(wsgi, alice, version=version, language="zh-CN")

    assert before == {"default": None, "research": None}
    # Another user's job is not named; the note is the pools page's, as text.
    assert to_alice == {
        "default": {
            "jobId": None,
            "jobName": None,
            "shortCards": {V100: 3},
            "missingDeviceNodes": [],
            "priority": "normal",
            "note": HELD_BY_OTHER,
        },
        "research": None,
    }
    assert to_bob["default"]["jobId"] == held.public_id
    assert to_bob["default"]["jobName"] == "big-run"
    assert to_bob["default"]["note"].startswith("Queue “default” is held by your job big-run,")
    assert in_chinese["default"]["note"].startswith("队列“default”")
