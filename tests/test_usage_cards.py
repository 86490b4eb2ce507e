"""A job's cards per card type (Job.cards, migration 0030): the usage report and My usage
(jobs.usage) sum this column instead of reading the roles in every job's spec. It must hold
what the report worked out from the spec before it, whichever way the spec was stored; the
report's figures must be the ones the old computation gave (kept here, only to compare)."""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db.models.fields.json import KT
from django.urls import reverse

from jobs import spec as S
from jobs import wizard as W
from jobs.actions import job_delete, job_priority_change, job_rerun
from jobs.aihc.endpoints import V2
from jobs.models import Draft, Job, JobStatus, UsageRecord
from jobs.services import jobs_submit
from jobs.usage import card_types, usage_jobs, usage_report

from . import test_api as v1
from .runner_helpers import make_spec, runner_settings  # noqa: F401
from .test_api_v2 import v2_body
from .test_usage_report import A800, APRIL, H800, at
from .test_wizard import complete_steps, new_draft, resources_data, role
from .test_wizard_import import BODY, CHANNELS, import_body

V100 = "baidu.com/v100_32g_cgpu"
MAY = at(1, 0, month=5)

# The console as a WSGI transport and Alice's AIHC client (tests/test_api.py).
wsgi, alice_key, api = v1.wsgi, v1.alice_key, v1.api


def fresh(job: Job) -> dict[str, int]:
    """What Job.cards must hold: worked out again from the job's stored spec."""
    stored = Job.objects.get(pk=job.pk)
    return S.charged_cards(stored.spec, stored.total_cards)


# -- every way a spec is stored ----------------------------------------------------------


@pytest.fixture
def two_card_types(runner_settings, tmp_path):  # noqa: F811
    """The local pool offers A800 and V100 cards, and the volumes the wizard's and the API's
    test data mount."""
    (tmp_path / "scratch").mkdir()
    runner_settings.LOCAL_ACCELERATORS = f"{A800}=32,{V100}=4"
    runner_settings.LOCAL_VOLUMES = f"{runner_settings.LOCAL_VOLUMES},scratch={tmp_path}/scratch"


def submitted(client, draft: Draft) -> Job:
    r = client.post(reverse("wizard-submit", args=[draft.id]))
    assert r.status_code == 302, r.content.decode()[:3000]
    return Job.objects.get(public_id=r["Location"].rstrip("/").rsplit("/", 1)[1])


@pytest.mark.usefixtures("two_card_types")
def test_a_job_from_the_wizard_a_copy_an_import_or_run_again_has_the_cards_its_spec_says(
    alice, alice_client
):
    # The wizard.
    draft = new_draft(alice_client)
    roles = resources_data(roles=[role("master", 1, A800, 2), role("worker", 2, A800, 2)])
    complete_steps(alice_client, draft, **{W.RESOURCES: roles})
    wizard = submitted(alice_client, draft)
    # A copy of it (a draft from the job, submitted), and it run again.
    assert alice_client.post(reverse("job-copy", args=[wizard.public_id])).status_code == 302
    copy = submitted(alice_client, Draft.objects.filter(submitted_at=None).latest("id"))
    [again] = job_rerun(job=wizard, owner=alice, request_key=uuid.uuid4().hex)
    # An imported request (a draft, submitted).
    assert import_body(alice_client, {**BODY, **CHANNELS}).status_code == 302
    imported = submitted(alice_client, Draft.objects.filter(submitted_at=None).latest("id"))

    made = [wizard, copy, again, imported]
    assert {job.pk: Job.objects.get(pk=job.pk).cards for job in made} == {
        job.pk: fresh(job) for job in made
    }
    assert [Job.objects.get(pk=job.pk).cards for job in made] == [{A800: 6}] * 4


@pytest.mark.usefixtures("two_card_types")
def test_a_job_from_the_api_or_a_queue_group_and_a_priority_change_keep_the_cards_its_spec_says(
    alice, api
):
    by_v1 = Job.objects.get(
        public_id=api.create_job(pool="local", body=v1.card_body("v1", cards=2))["jobId"]
    )
    by_v2 = Job.objects.get(
        public_id=api.create_job(pool="local", body=v2_body(name="v2"), version=V2)["jobId"]
    )
    # A queue group's tasks (one spec stored on each), and a priority change (the spec
    # rewritten with it).
    roles = [S.Role("trainer", 1, A800, 1), S.Role("sampler", 3, V100, 1)]
    queued = make_spec("true", framework=S.CUSTOM, roles=roles)
    queued.submission = S.Submission(mode=S.SUBMIT_QUEUE, total=2, concurrency=1)
    tasks = jobs_submit(owner=alice, spec=queued, submit_key=str(uuid.uuid4()))
    assert job_priority_change(job=tasks[0], priority="high", actor=alice)

    made = [by_v1, by_v2, *tasks]
    assert {job.pk: Job.objects.get(pk=job.pk).cards for job in made} == {
        job.pk: fresh(job) for job in made
    }
    assert Job.objects.get(pk=tasks[0].pk).spec["priority"] == "high"
    assert [Job.objects.get(pk=job.pk).cards for job in made] == [
        {A800: 2},
        {},  # CPU only
        {A800: 1, V100: 3},
        {A800: 1, V100: 3},
    ]


def test_saving_a_jobs_spec_alone_works_its_cards_out_again(alice):
    job = Job.objects.create(
        public_id="job-saved",
        name="saved",
        owner=alice,
        spec=make_spec("true", roles=[S.Role("master", 1, A800, 2)]).to_document(),
        resource_pool="local",
        total_cards=2,
    )
    job.spec = make_spec("true", roles=[S.Role("master", 2, H800, 1)]).to_document()
    job.save(update_fields=["spec"])

    assert Job.objects.get(pk=job.pk).cards == {H800: 2}


def test_saving_with_the_fields_given_as_a_generator_saves_them_and_the_cards(alice):
    # Django's save() takes any iterable of field names; Job.save() read a generator once
    # for its own check, and Django then saved nothing (or the cards without the spec).
    job = Job.objects.create(
        public_id="job-generator",
        name="before",
        owner=alice,
        spec=make_spec("true", roles=[S.Role("master", 1, A800, 2)]).to_document(),
        resource_pool="local",
        total_cards=2,
    )
    job.name = "renamed"
    job.save(update_fields=(name for name in ["name"]))
    job.spec = make_spec("true", roles=[S.Role("master", 2, H800, 1)]).to_document()
    job.save(update_fields=(name for name in ["spec"]))

    stored = Job.objects.get(pk=job.pk)
    assert stored.name == "renamed"
    assert stored.spec["console"]["roles"] == job.spec["console"]["roles"]
    assert stored.cards == {H800: 2}


# -- the figures are the ones the spec gave ------------------------------------------------


def old_layout_cards(roles: Any, total_cards: int) -> dict[str, int]:
    """The report's split before Job.cards (jobs.usage.layout_cards, session 18)."""
    cards = None
    if roles is not None:
        try:
            cards = S.parse_document({"console": {"roles": roles}}).accelerators_by_type()
        except (ValueError, S.SpecError):
            cards = None
    if cards is None or sum(cards.values()) != total_cards:
        cards = {S.UNKNOWN_CARD: total_cards} if total_cards else {}
    return dict(sorted(cards.items()))


def old_roles(text: str | None) -> Any:
    try:
        return None if text is None else json.loads(text)
    except ValueError:
        return None


def inside_april(started: datetime, ended: datetime) -> timedelta:
    return max(min(ended, APRIL.ends_at) - max(started, APRIL.starts_at), timedelta(0))


Totals = tuple[timedelta, int, timedelta]  # card time, jobs, CPU-only time


def expected_figures(now: datetime) -> tuple[dict[tuple[str, str, str], Totals], Totals]:
    """The report's pools × card types and total, worked out here row by row in Python: each
    job's or record's time inside April, split over its card types as the report split them
    before Job.cards (a job's from its spec's roles, a record's from its kept cards)."""
    pools: dict[tuple[str, str, str], list[Any]] = {}
    total = [timedelta(0), 0, timedelta(0)]
    rows = [
        (
            job.backend,
            job.resource_pool,
            job.total_cards,
            job.started_at,
            job.finished_at or now,
            old_layout_cards(old_roles(roles), job.total_cards),
        )
        for job, roles in (
            (job, Job.objects.values_list(KT("spec__console__roles"), flat=True).get(pk=job.pk))
            for job in Job.objects.exclude(started_at=None)
        )
    ] + [
        (r.backend, r.resource_pool, r.total_cards, r.started_at, r.ended_at, r.cards)
        for r in UsageRecord.objects.all()
    ]
    for backend, pool, total_cards, started, ended, cards in rows:
        run = inside_april(started, ended)
        if not run:
            continue
        total[0] += run * total_cards
        total[1] += 1
        total[2] += run if total_cards == 0 else timedelta(0)
        shares = {card: (run * n, timedelta(0)) for card, n in cards.items()} or {
            "": (timedelta(0), run)
        }
        for card, (card_time, cpu_time) in shares.items():
            figures = pools.setdefault((backend, pool, card), [timedelta(0), 0, timedelta(0)])
            figures[0] += card_time
            figures[1] += 1
            figures[2] += cpu_time
    return {key: tuple(value) for key, value in pools.items()}, tuple(total)


def stored(
    owner: User,
    started: datetime | None,
    finished: datetime | None,
    *,
    roles: Any,
    framework: str = S.PYTORCH,
    total_cards: int | None = None,
    status: str = JobStatus.SUCCEEDED,
    pool: str = "local",
    backend: str = "local",
) -> Job:
    """A job whose spec's roles are `roles` (S.Role objects, or anything, as stored), charged
    for `total_cards` (the roles' cards when None), as jobs_submit stores one."""
    spec = make_spec("python train.py", framework=framework, resource_pool_id=pool)
    document = spec.to_document()
    if roles and all(isinstance(r, S.Role) for r in roles):
        spec.roles = roles
        document = spec.to_document()
        total = spec.total_accelerators
    else:
        document["console"]["roles"] = roles  # a layout this console does not read
        total = 0
    job = Job.objects.create(
        public_id=f"job-{uuid.uuid4()}",
        name="train",
        owner=owner,
        spec=document,
        framework=framework,
        backend=backend,
        resource_pool=pool,
        total_cards=total if total_cards is None else total_cards,
        status=status,
        started_at=started,
        finished_at=finished,
    )
    Job.objects.filter(pk=job.pk).update(created_at=(started or MAY) - timedelta(minutes=5))
    return job


def every_kind_of_job(alice: User, bob: User) -> None:
    two_types = [S.Role("master", 1, A800, 2), S.Role("worker", 2, H800, 4)]
    # Two card types, one started in March (only its April part counts), one in April.
    stored(alice, at(31, 20, month=3), at(1, 4), roles=two_types)
    stored(bob, at(3, 0), at(3, 7), roles=two_types)
    # A CPU-only role beside a card role, and a job with CPU-only roles alone.
    stored(alice, at(4, 0), at(4, 3), roles=[S.Role("launcher", 1), S.Role("worker", 4, A800, 1)])
    stored(bob, at(5, 0), at(5, 9), roles=[S.Role("master", 2), S.Role("worker", 3)])
    # TensorFlow roles (a CPU-only ps), custom roles, an MPI launcher.
    tf = [S.Role("chief", 1, A800, 1), S.Role("worker", 2, A800, 2), S.Role("ps", 2)]
    stored(alice, at(6, 0), at(6, 5), roles=tf, framework=S.TENSORFLOW)
    custom = [S.Role("trainer", 2, H800, 8), S.Role("sampler", 1, V100, 1)]
    stored(bob, at(7, 0), at(7, 2), roles=custom, framework=S.CUSTOM)
    mpi = [S.Role("launcher", 1), S.Role("worker", 2, H800, 2)]
    stored(alice, at(8, 0), at(8, 1), roles=mpi, framework=S.MPI)
    # Past the period's end (only April counts) and still running at `now` (May).
    stored(bob, at(30, 20), at(2, 0, month=5), roles=two_types)
    stored(alice, at(29, 0), None, roles=custom, status=JobStatus.RUNNING)
    # Stopped, timed out and failed jobs count as they ran; one that never started does not,
    # nor one that ended before April or started after it.
    stored(bob, at(9, 0), at(9, 2), roles=tf, status=JobStatus.STOPPED)
    stored(alice, at(9, 0), at(9, 6), roles=custom, status=JobStatus.TIMED_OUT)
    stored(alice, at(10, 0), at(10, 1), roles=two_types, status=JobStatus.FAILED)
    stored(alice, None, None, roles=two_types, status=JobStatus.QUEUED)
    stored(bob, at(1, 0, month=3), at(2, 0, month=3), roles=two_types)
    stored(bob, at(2, 0, month=5), at(3, 0, month=5), roles=two_types)
    # Charged for other cards than the roles say, and roles this console cannot read: their
    # cards under "unknown".
    stored(alice, at(11, 0), at(11, 2), roles=two_types, total_cards=3)
    stored(bob, at(12, 0), at(12, 4), roles="four A800s", total_cards=4)
    stored(bob, at(12, 0), at(12, 4), roles=[{"name": "master", "replicas": "many"}], total_cards=2)
    # Times with microseconds, and one without (SQLite stores those without a fraction).
    odd = at(18, 0) + timedelta(microseconds=123457)
    stored(alice, odd, odd + timedelta(hours=1, microseconds=999999), roles=two_types)
    stored(bob, at(18, 1) - timedelta(microseconds=1), at(18, 3), roles=tf)
    # Another pool and backend, copies sharing a layout.
    for day in (13, 14, 15):
        stored(bob, at(day, 0), at(day, 8), roles=two_types, pool="cce-a800", backend="aihc")
    # Deleted jobs: finished, and still running when deleted (as its owner's deletion
    # removes it: counted until the deletion, which is after April here).
    job_delete(job=stored(alice, at(16, 0), at(16, 6), roles=custom))
    running = stored(bob, at(17, 0), None, roles=tf, status=JobStatus.RUNNING)
    Job.objects.filter(pk=running.pk).delete()


def test_the_reports_pools_and_card_types_are_the_figures_the_specs_roles_gave(alice, bob):
    every_kind_of_job(alice, bob)
    assert UsageRecord.objects.count() == 2

    report = usage_report(period=APRIL, now=MAY)

    shown = {
        (p.backend, p.pool, p.card_type): (p.figures.card_time, p.figures.jobs, p.figures.cpu_time)
        for p in report.pools
    }
    pools, total = expected_figures(MAY)
    assert shown == pools  # to the microsecond
    assert {card for _backend, _pool, card in shown} == {A800, H800, V100, "", S.UNKNOWN_CARD}
    t = report.total
    assert (t.card_time, t.jobs, t.cpu_time) == total
    assert sum((u.figures.card_time for u in report.users), timedelta(0)) == total[0]


def test_my_usage_lists_each_jobs_card_types_as_the_specs_roles_gave(alice, bob):
    every_kind_of_job(alice, bob)
    specs = dict(Job.objects.values_list("public_id", KT("spec__console__roles")))
    cards = dict(Job.objects.values_list("public_id", "total_cards"))

    for owner in (alice, bob):
        rows = list(usage_jobs(owner=owner, period=APRIL, now=MAY))
        assert rows
        for row in rows:
            if row["deleted"]:
                kept = UsageRecord.objects.get(public_id=row["public_id"]).cards
                assert card_types(row) == sorted(kept)
            else:
                roles = old_roles(specs[row["public_id"]])
                expected = old_layout_cards(roles, cards[row["public_id"]])
                assert card_types(row) == sorted(expected), row["public_id"]
