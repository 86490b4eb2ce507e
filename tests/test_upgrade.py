"""Upgrading never loses what users submitted: `make run` migrates an older database to the
latest state, and every job, draft, event, queue group, replica and user must come through
with its data unchanged and the fields a migration fills in right.

Each test migrates the real test database to an older state, builds rows there with the
historical models (as that release's code would have left them), migrates to the latest
state and compares. Migrations change the schema, so these tests use a transactional test
database (pytest-django's `transaction=True`, Django's TransactionTestCase), and every test
leaves the database migrated to the latest state for the next.

Migrations and what they do to existing rows:

- 0001-0003, 0005: schema only (0003's new `*_source` columns start empty: the text is shown
  as recorded). Reversible; reversing 0003 drops those columns (the recorded text stays).
- 0004 numbers existing queue tasks (`group_index`) from their submit keys (`<key>:<n>`, n
  from 0), or by their order in the group without one. Reverse: drops the column; migrating
  forward again numbers them the same way.
- 0006 marks jobs stopped while they waited for review (before 0005 their review state
  stayed Pending for good) as Withdrawn. Reverse: Pending again, as older releases show them.
- 0007 adds the review policy's self-approval switch, off for a policy saved before it.
- 0008 adds a replica's reason (a local replica killed for its memory limit), empty for a
  replica recorded before it.
- 0009 adds users' API access keys (a new table; downgrading past it drops the keys).
- 0010 adds whether a local run's jobRunning alert is still due, not for a run started
  before it (the worker of that release queued its alert already, or never will).
- 0011 adds card quotas (a new table), 0012 a draft's New draft key, empty for a draft made
  before it (such a draft is found by no key: a new click makes a new draft).
- 0013 adds the usage records of deleted jobs (a new table, empty after upgrading: jobs
  deleted before it left none; downgrading past it drops the records).
- 0014 adds the worker's heartbeat (one row, written by the next worker that runs;
  downgrading past it drops it).
- 0015 makes that row the worker's lease (its holder and run directory, empty until the
  next worker takes it), adds a row per worker process (a new table) and a local run's
  runner (empty for a run started before it: followed by whichever worker is active, as
  before). Downgrading past it drops them; the heartbeat row stays, as 0014 had it.
- 0016 adds the worker's start-up network problem to the lease and to each worker's row
  (empty for rows written before it). Downgrading past it drops it.
- 0017 adds an index of jobs by owner and pool (the job list's pool filter); no row
  changes, and downgrading past it drops the index.
- 0018 adds pools' last known names (a new table, filled as server processes read AIHC's
  pools; downgrading past it drops the names, which the next reads keep again).
- 0019 adds an API key's expiry (none for a key made before it: it keeps never expiring) and
  why it was revoked. Downgrading past it first revokes each key that has expired, as of its
  expiry (the older release knows no expiry and would take it as working), then drops both.
- 0020 records each alert email sent (the hourly bound per user); downgrading past it drops
  the records, and the older release sends every alert.
- 0021 adds the API key form's one-time key (a reloaded form makes one key); downgrading
  past it drops it.
- 0026 adds why the last worker refused its settings to the lease (empty for a row written
  before it); downgrading past it drops it, and the lease row stays as 0025 reads it.
- 0027 adds an index of jobs by pool and creation (the admin's pool filter) and widens
  0017's by owner and pool to their creation (`job_owner_pool_created`); no row changes, and
  downgrading past it gives back 0017's index.
- 0028 and 0029 add indexes of jobs by owner and status (the pools page, queue counts) and by
  review state (the admin's review-state filter); no row changes, and downgrading past them
  drops them.
- 0030 adds each job's cards per card type (what the usage report sums), worked out from
  its stored spec (jobs.spec.charged_cards, as Job.save() does for new jobs), and the index
  the report reads jobs from (`job_usage`). Reverse: drops both (the older release reads
  the specs); upgrading again works the cards out anew.
- 0031 adds each user's chosen language (a new table, empty after upgrading: it fills as
  users switch language or log in; the worker writes their mails in it). Downgrading past it
  drops the table, and the older release writes every mail in the console's language.
- 0032 adds an index of jobs by name, owner and creation (`job_search`, the admin's search)
  and, on PostgreSQL where pg_trgm can be made, a trigram index of the name
  (`job_name_trgm`); no row changes, and downgrading past it drops both.
- 0033 adds each job's labels as rows of their own (what the job list's `?label=` filter
  reads through an index), read from its stored spec (jobs.spec.stored_labels, as jobs_submit
  does for new jobs). Downgrading past it drops the table (the specs keep the labels);
  upgrading again reads them anew.
- 0034 adds the record of each deleted job (its name, ID, owner, when and why: a new table,
  empty after upgrading: jobs deleted before it leave none), which an old link to the job's
  page reads. Downgrading past it drops the table, and such links get the usual 404.
- 0035 makes the local jobs the API stored as standalone before sched26 (submit key
  `api-…`, no group) that have not started (Queued, Pending review) queue tasks of one, as
  the API stores such a create since. Reverse: standalone again, their groups gone.
- 0041 adds how the worker's remote thread gets on to the lease (none reported in a row
  written before it: `/healthz` has no `remote` part until the next worker beats);
  downgrading past it drops it, and the lease row stays as 0040 reads it.
- No migration: texts recorded with plural forms (jobs.texts.recorded_plural) keep the
  English form their number takes as their message, so a release before them (a downgrade)
  says them with the right form (tests/test_recorded_texts.py).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from jobs import spec as S

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE_0004 = "0003_recorded_text_sources"
BEFORE_0005 = "0004_group_index"
BEFORE_0006 = "0005_review_withdrawn"
BEFORE_0015 = "0014_worker_heartbeat"
SECRET = "hf-very-secret-token"
REGISTRY_PASSWORD = "registry-secret"
# The models whose rows users' work lives in, compared field by field.
MODELS = [
    ("auth", "User"),
    ("jobs", "JobGroup"),
    ("jobs", "Job"),
    ("jobs", "JobEvent"),
    ("jobs", "JobReplica"),
    ("jobs", "LocalRun"),
    ("jobs", "Draft"),
    ("jobs", "ReviewPolicy"),
]


def latest() -> list[tuple[str, str]]:
    return MigrationExecutor(connection).loader.graph.leaf_nodes("jobs")


def migrate(name: str | None) -> Any:
    """Migrates the jobs app to `name` (None: the latest); returns that state's apps."""
    target = latest() if name is None else [("jobs", name)]
    executor = MigrationExecutor(connection)
    executor.migrate(target)
    executor.loader.build_graph()  # the applied migrations changed
    return executor.loader.project_state(target).apps


@pytest.fixture
def at_latest_after() -> Iterator[None]:
    """Whatever a test did, the database ends at the latest state (before it is flushed)."""
    yield
    migrate(None)


def has_field(model: Any, name: str) -> bool:
    return any(f.name == name for f in model._meta.get_fields())


def create(model: Any, **fields: Any) -> Any:
    """A row as the release at this state would store it: fields it does not have yet are
    left out."""
    return model.objects.create(
        **{k: v for k, v in fields.items() if k == "pk" or has_field(model, k)}
    )


def spec_document(name: str, *, queue_total: int = 0) -> dict[str, Any]:
    spec = S.JobSpec(
        name=name,
        resource_pool_id="local",
        image="registry.example.com/team/train:1.4",
        command="torchrun train.py --lr $LR",
        roles=[
            S.Role("master", 1, "baidu.com/a800_80g_cgpu", 2),
            S.Role("worker", 2, "baidu.com/a800_80g_cgpu", 2),
        ],
        envs=[S.Env("LR", "0.1"), S.Env("HF_TOKEN", SECRET, secret=True)],
        image_config=S.ImageConfig(username="robot", password=REGISTRY_PASSWORD),
    )
    if queue_total:
        spec.submission.mode = S.SUBMIT_QUEUE
        spec.submission.total = queue_total
        spec.submission.concurrency = 2
    return spec.to_document()


def build_world(apps: Any) -> dict[str, Any]:
    """What a team's database holds: jobs in every status, queue groups (one with a task
    deleted, one created out of order, one without submit keys), reviews, copies,
    drafts and events, secrets in the specs. Returns the group tasks' expected numbers."""
    User = apps.get_model("auth", "User")
    JobGroup = apps.get_model("jobs", "JobGroup")
    Job = apps.get_model("jobs", "Job")
    JobEvent = apps.get_model("jobs", "JobEvent")
    JobReplica = apps.get_model("jobs", "JobReplica")
    LocalRun = apps.get_model("jobs", "LocalRun")
    Draft = apps.get_model("jobs", "Draft")
    ReviewPolicy = apps.get_model("jobs", "ReviewPolicy")

    alice = User.objects.create(username="alice", email="alice@example.com", password="x$1")
    bob = User.objects.create(username="bob", email="", password="x$2")
    carol = User.objects.create(username="carol", is_staff=True, password="x$3")
    root = User.objects.create(username="root", is_staff=True, is_superuser=True, password="x$4")
    create(ReviewPolicy, pk=1, mode="queues", queues="research\nlocal/big", updated_by=root)
    now = timezone.now()
    numbers: dict[str, int | None] = {}

    def job(name: str, owner: Any, status: str, **fields: Any) -> Any:
        made = create(
            Job,
            public_id=f"pytorchjob-{uuid.uuid4()}",
            name=name,
            owner=owner,
            spec=fields.pop("spec", None) or spec_document(name),
            status=status,
            resource_pool="local",
            queue=fields.pop("queue", "default"),
            total_cards=6,
            **fields,
        )
        numbers[made.public_id] = fields.get("group_index")
        create(
            JobEvent,
            job=made,
            reason="Created",
            message="Job created.",
            message_source={"text": "Job created.", "params": {}},
        )
        return made

    done = job(
        "baseline",
        alice,
        "succeeded",
        submit_key=str(uuid.uuid4()),
        priority="high",
        backend="local",
        restarts=1,
        started_at=now - timedelta(hours=2),
        finished_at=now - timedelta(hours=1),
    )
    for n, role in enumerate(["master", "worker", "worker"]):
        create(
            JobReplica,
            job=done,
            role=role,
            index=n,
            status="succeeded",
            exit_code=0,
            pid=4100 + n,
            node="gpu-01",
            devices=f"{2 * n},{2 * n + 1}",
            cpus="0,1",
            process_start="boot:123",
        )
    create(JobEvent, job=done, reason="Succeeded", message="Every replica exited 0.")
    running = job("running", alice, "running", submit_key=str(uuid.uuid4()))
    create(
        LocalRun,
        job=running,
        devices={"baidu.com/a800_80g_cgpu": [0, 1]},
        cpus=[0, 1, 2],
        runner="gpu-01:/srv/console/var/runs",
    )
    job(
        "failed",
        bob,
        "failed",
        status_reason="worker-1 exited with 137 (out of memory).",
        status_reason_source={
            "text": "%(replica)s exited with %(code)s (out of memory).",
            "params": {"replica": "worker-1", "code": 137},
        },
    )
    job("timed out", bob, "timed_out", submit_key=str(uuid.uuid4()))
    job("submit failed", bob, "submit_failed", backend="aihc", status_reason="Quota exceeded.")
    held = job(
        "held",
        alice,
        "pending_review",
        queue="research",
        review_state="pending",
        status_reason="Waiting for review: jobs in queue research are reviewed before they run.",
    )
    create(JobEvent, job=held, reason="ReviewRequired", message="Waiting for a reviewer.")
    rejected = job(
        "rejected",
        bob,
        "rejected",
        queue="research",
        review_state="rejected",
        reviewed_by=carol,
        reviewed_at=now,
        status_reason="64 cards for a smoke test: use 8.",
    )
    create(
        JobEvent,
        job=rejected,
        type="Warning",
        reason="Rejected",
        actor=carol,
        message="64 cards for a smoke test: use 8.",
    )
    approved = job(
        "approved",
        alice,
        "queued",
        review_state="approved",
        reviewed_by=carol,
        reviewed_at=now,
    )
    create(JobEvent, job=approved, reason="Approved", actor=carol, message="Approved by carol.")
    job("copy", alice, "queued", source_job=done, submit_key=f"rerun-{done.public_id}-a1b2")
    # Stopped while it waited for review: before 0005 its review stayed Pending.
    withdrawn = job("stopped waiting", alice, "stopped", queue="research", review_state="pending")
    create(JobEvent, job=withdrawn, reason="Stopped", actor=alice, message="Stopped by its owner.")
    job("stopped approved", alice, "stopped", review_state="approved", reviewed_by=carol)

    # A queue group of 4; its task 2 (key :1) was deleted, 1, 3, 4 keep their numbers.
    key = str(uuid.uuid4())
    group = JobGroup.objects.create(owner=alice, name="sweep", total=4, concurrency=2)
    for n, status in [(0, "succeeded"), (2, "running"), (3, "queued")]:
        job(
            "sweep",
            alice,
            status,
            group=group,
            group_index=n + 1,
            submit_key=f"{key}:{n}",
            spec=spec_document("sweep", queue_total=4),
        )
    # Tasks whose rows were created out of their key order: the key decides the number.
    key = str(uuid.uuid4())
    shuffled = JobGroup.objects.create(owner=bob, name="shuffled", total=3, concurrency=1)
    for n in (2, 0, 1):
        job(
            "shuffled",
            bob,
            "pending_review",
            group=shuffled,
            group_index=n + 1,
            submit_key=f"{key}:{n}",
            review_state="pending",
        )
    # Tasks without submit keys (not made by the wizard): numbered in the order made.
    legacy = JobGroup.objects.create(owner=bob, name="legacy", total=2, concurrency=2)
    for n in range(2):
        job("legacy", bob, "failed", group=legacy, group_index=n + 1)
    # One task of a group run again: a group of its own, of one task.
    rerun = JobGroup.objects.create(owner=alice, name="sweep", total=1, concurrency=1)
    job(
        "sweep",
        alice,
        "queued",
        group=rerun,
        group_index=1,
        submit_key=f"rerun-{done.public_id}-c3d4:0",
    )

    create(
        Draft,
        owner=alice,
        data={
            "basic": {"name": "half typed", "resource_pool": "local"},
            "image": {
                "image": "python:3.12",
                "env-0-name": "HF_TOKEN",
                "env-0-value": SECRET,
                "env-0-secret": "on",
            },
            "_attempted": ["basic", "image"],
        },
        completed_steps=["basic", "image"],
    )
    create(
        Draft,
        owner=bob,
        data={"basic": {"name": "copy"}},
        source_job=done,
        completed_steps=["basic"],
        submitted_at=now,
    )
    return numbers


def snapshot(apps: Any) -> dict[str, dict[Any, dict[str, Any]]]:
    return {
        name: {row["id"]: row for row in apps.get_model(app, name).objects.values()}
        for app, name in MODELS
    }


def assert_kept(before: dict[str, Any], after: dict[str, Any], *, migrated: set[str]) -> None:
    """Every row is still there with every field both states have unchanged, except the
    `migrated` ones."""
    for name, rows in before.items():
        assert set(after[name]) == set(rows), f"{name} rows lost or added"
        for pk, row in rows.items():
            common = (row.keys() & after[name][pk].keys()) - migrated
            assert {k: after[name][pk][k] for k in common} == {k: row[k] for k in common}, (
                name,
                pk,
            )


def job_states(apps: Any) -> dict[str, tuple[str, str]]:
    Job = apps.get_model("jobs", "Job")
    return {j.name: (j.status, j.review_state) for j in Job.objects.filter(group=None)}


@pytest.mark.parametrize(
    "start",
    ["0001_initial", BEFORE_0004, BEFORE_0005, BEFORE_0006],
    ids=["from-0001", "before-0004-group-index", "before-0005-withdrawn", "before-0006"],
)
def test_upgrading_from_an_older_release_keeps_every_row_and_fills_the_new_fields(
    at_latest_after, start
):
    old = migrate(start)
    numbers = build_world(old)
    before = snapshot(old)

    new = migrate(None)
    after = snapshot(new)

    assert_kept(before, after, migrated={"group_index", "review_state"})
    for name, rows in before.items():  # no column was dropped
        assert all(row.keys() <= after[name][pk].keys() for pk, row in rows.items()), name
    Job = new.get_model("jobs", "Job")
    # 0004: every queue task has the number it was submitted as (1..total).
    assert {j.public_id: j.group_index for j in Job.objects.all()} == numbers
    assert sorted(
        j.group_index for j in Job.objects.filter(group__name="sweep", group__total=4)
    ) == [1, 3, 4]
    by_key = {
        j.submit_key.rpartition(":")[2]: j.group_index
        for j in Job.objects.filter(group__name="shuffled")
    }
    assert by_key == {"0": 1, "1": 2, "2": 3}
    assert sorted(
        Job.objects.filter(group__name="legacy").values_list("group_index", flat=True)
    ) == [1, 2]
    assert Job.objects.get(group__total=1).group_index == 1
    assert set(Job.objects.filter(group=None).values_list("group_index", flat=True)) == {None}
    # 0006: a job stopped while it waited for review is Withdrawn; every other review kept.
    states = job_states(new)
    assert states["stopped waiting"] == ("stopped", "withdrawn")
    assert states["stopped approved"] == ("stopped", "approved")
    assert states["held"] == ("pending_review", "pending")
    assert states["rejected"] == ("rejected", "rejected")
    assert states["approved"] == ("queued", "approved")
    assert set(
        Job.objects.filter(group__name="shuffled").values_list("review_state", flat=True)
    ) == {"pending"}
    # 0007: a policy saved before it has reviewers approve only others' jobs (four eyes).
    assert new.get_model("jobs", "ReviewPolicy").objects.get().allow_self_approval is False
    # 0010: a job running before it gets no second jobRunning alert.
    assert list(
        new.get_model("jobs", "LocalRun").objects.values_list("running_alert_due", flat=True)
    ) == [False]
    changed = {
        pk
        for pk, row in after["Job"].items()
        if row["review_state"] != before["Job"][pk]["review_state"]
    }
    assert changed == {Job.objects.get(name="stopped waiting").pk}


def test_secrets_in_specs_and_drafts_come_through_an_upgrade_byte_for_byte(at_latest_after):
    old = migrate("0001_initial")
    build_world(old)
    specs = {j.public_id: j.spec for j in old.get_model("jobs", "Job").objects.all()}
    drafts = {d.id: d.data for d in old.get_model("jobs", "Draft").objects.all()}

    new = migrate(None)

    Job = new.get_model("jobs", "Job")
    assert {j.public_id: j.spec for j in Job.objects.all()} == specs
    assert {d.id: d.data for d in new.get_model("jobs", "Draft").objects.all()} == drafts
    stored = Job.objects.get(name="baseline").spec
    assert {"name": "HF_TOKEN", "value": SECRET} in stored["jobSpec"]["envs"]
    assert stored["jobSpec"]["imageConfig"]["password"] == REGISTRY_PASSWORD
    assert (
        new.get_model("jobs", "Draft")
        .objects.get(owner__username="alice")
        .data["image"]["env-0-value"]
        == SECRET
    )


@pytest.mark.parametrize("target", ["0001_initial", BEFORE_0004, BEFORE_0006, BEFORE_0015])
def test_downgrading_and_upgrading_again_gives_back_every_row(at_latest_after, target):
    new = migrate(None)
    build_world(new)
    # As the latest release leaves a job stopped while it waited for review.
    Job = new.get_model("jobs", "Job")
    Job.objects.filter(name="stopped waiting").update(review_state="withdrawn")
    # As the latest release stores each job's cards per card type (Job.save works them out).
    for pk, spec, total_cards in Job.objects.values_list("pk", "spec", "total_cards"):
        Job.objects.filter(pk=pk).update(cards=S.charged_cards(spec, total_cards))
    before = snapshot(new)

    old = migrate(target)
    at_old = snapshot(old)
    old_states = job_states(old)
    again = migrate(None)
    after = snapshot(again)

    # The older release sees all its data (only the newer columns are gone) ...
    assert_kept(before, at_old, migrated={"review_state"})
    # ... with the jobs withdrawn from review Pending, as releases before 0006 show them.
    withdrawn = "withdrawn" if target == BEFORE_0015 else "pending"
    assert old_states["stopped waiting"] == ("stopped", withdrawn)
    # Upgrading again restores every row; the task numbers, Withdrawn and the jobs' cards per
    # card type (0030) are worked out again. Only columns the downgrade dropped come back at their defaults: the recorded-text
    # sources past 0003 (the pages then show the text as recorded), the policy's
    # self-approval switch past 0007 (off), a replica's reason past 0008 (none), a local
    # run's running alert past 0010 (not due), a draft's New draft key past 0012 (none), a
    # local run's runner past 0015 (none: followed by whichever worker is active) and the API
    # key of its Delete past 0037 (none; a deleted job's key is null: not recorded), and a
    # job's stop sent past 0040 (none: none of these jobs had one out), the Kubernetes
    # training API a job was created under past 0042 (none: read as v1, as before the setting),
    # a user's time zone past 0043 (none: the console's) and an AIHC job's watch for a create
    # landing late past 0045 (none: not watched), a deleted job's past 0047 (the same) and
    # what that watch found past 0048 (none), a job's image past 0053 (filled again from
    # its spec, as `cards`), the reason a stop asked a job to end with past 0054 (none)
    # and a Kubernetes restart under way past 0055 (none: none was), a Kubernetes
    # resource's uid past 0056 and a Kubernetes replica's pod name past 0057 (none: read
    # again by the worker's next sync), and when a job is deleted for its retention past
    # 0060 (filled again from its spec: none of these has one), an AIHC job's BCCL check
    # past 0061 ("": read again at the worker's next poll) and a job's wait to run again past
    # 0062 (none: none of these waited) and its waits as intervals past 0063 (none: the same),
    # an AIHC job's Kubernetes namespace past 0064 ("": read again at the next poll) and a
    # local run's SIGTERM still due past 0065 (not due: none of these was torn down).
    dropped = {
        name: set(next(iter(rows.values()))) - set(next(iter(at_old[name].values())))
        for name, rows in before.items()
    }
    assert dropped["Job"] <= {
        "group_index",
        "status_reason_source",
        "cards",
        "stop_sent_at",
        "training_api",
        "duplicate_watch_until",
        "image",
        "stop_reason",
        "stop_reason_source",
        "restart_begun_at",
        "k8s_uid",
        "k8s_namespace",
        "deletes_at",
        "bccl_status",
        "bccl_error_reason",
        "waiting_since",
        "card_time_from",
    }
    defaults = {
        "allow_self_approval": False,
        "reason": "",
        "running_alert_due": False,
        "create_key": "",
        "runner": "",
        "delete_api_key": "",
        "training_api": "",
        "time_zone": "",
        "stop_reason": "",
        "k8s_uid": "",
        "k8s_namespace": "",
        "pod_name": "",
        "bccl_status": "",
        "bccl_error_reason": "",
        "sigterm_due": False,
    }
    for name, rows in before.items():
        gone = dropped[name] - {"group_index", "cards", "image"}
        for pk, row in rows.items():
            expected = {**row, **{key: defaults.get(key) for key in gone}}
            if "image" in dropped[name]:  # filled from the spec (rows made without save())
                expected["image"] = S.stored_image(row["spec"])
            assert after[name][pk] == expected, (name, pk)


def test_upgrading_numbers_the_tasks_of_a_group_larger_than_one_fetch(at_latest_after):
    """The numbering reads tasks in chunks while it writes them (SQLite fetches 2,000 rows
    at a time): a group of 2,500 tasks is numbered right to the last."""
    old = migrate(BEFORE_0004)
    User = old.get_model("auth", "User")
    JobGroup = old.get_model("jobs", "JobGroup")
    Job = old.get_model("jobs", "Job")
    owner = User.objects.create(username="alice")
    group = JobGroup.objects.create(owner=owner, name="big", total=2500, concurrency=8)
    key = str(uuid.uuid4())
    document = spec_document("big", queue_total=2500)
    Job.objects.bulk_create(
        Job(
            public_id=f"pytorchjob-{n}",
            name="big",
            owner=owner,
            spec=document,
            resource_pool="local",
            group=group,
            submit_key=f"{key}:{n}",
        )
        for n in reversed(range(2500))
    )

    new = migrate(None)

    numbered = new.get_model("jobs", "Job").objects.values_list("public_id", "group_index")
    assert dict(numbered) == {f"pytorchjob-{n}": n + 1 for n in range(2500)}


def old_heartbeat(apps: Any, *, stopped: bool) -> Any:
    """The heartbeat row as the worker of the release before 0015 left it: no holder, no run
    directory (it held no lease), stopped cleanly or killed outright (still fresh)."""
    now = timezone.now()
    return apps.get_model("jobs", "WorkerHeartbeat").objects.create(
        pk=1,
        host="gpu-01",
        pid=4242,
        version="0.1.0",
        started_at=now - timedelta(hours=3),
        seen_at=now - timedelta(seconds=2),
        stopped_at=now - timedelta(seconds=2) if stopped else None,
    )


def test_upgrading_past_0015_makes_the_heartbeat_a_lease_and_old_runs_followed_by_any_worker(
    at_latest_after,
):
    from jobs.health import WorkerIdentity, active_runner, worker_beat
    from jobs.models import Job as LatestJob
    from jobs.runner import followed_here, waits_for_its_worker

    old = migrate(BEFORE_0015)
    build_world(old)
    old_heartbeat(old, stopped=True)
    before = snapshot(old)
    heartbeat = old.get_model("jobs", "WorkerHeartbeat").objects.values().get()

    new = migrate(None)

    assert_kept(before, snapshot(new), migrated=set())
    lease = new.get_model("jobs", "WorkerHeartbeat").objects.values().get()
    assert lease == {
        **heartbeat,
        "holder": "",
        "run_dir": "",
        "network_problem": "",
        "refused": "",
        "refused_source": [],
        "refused_at": None,
        # 0041: no remote thread reported yet (the next worker's first beat writes it).
        "remote_progress_at": None,
        "remote_stuck": False,
        "remote_platform": "",
    }
    assert not new.get_model("jobs", "WorkerProcess").objects.exists()
    run = new.get_model("jobs", "LocalRun").objects.get()
    assert run.runner == ""
    # The first worker of this release takes the lease the old one left on stopping, and
    # follows the job that one started, wherever it runs itself.
    me = WorkerIdentity(
        instance="n" * 32, host="gpu-02", pid=7, run_dir="/srv/runs", version="0.2.0"
    )
    assert worker_beat(worker=me) is True
    assert active_runner() == "gpu-02:/srv/runs"
    running = LatestJob.objects.get(name="running")
    assert LatestJob.objects.filter(followed_here(), pk=running.pk).exists()
    assert waits_for_its_worker(running.local_run) is False


def test_an_old_worker_killed_outright_keeps_the_lease_from_a_new_one_until_it_goes_stale(
    at_latest_after, settings
):
    """Decided: a heartbeat row of the release before 0015 that was not stopped cleanly
    names no run directory, so a new worker cannot tell a dead predecessor (kill -9) from an
    old worker still running somewhere, which knows no lease and would dispatch beside it.
    It stands by until the row is WORKER_STALE_SECONDS old (README: Upgrading)."""
    from jobs.health import WorkerIdentity, worker_beat

    old = migrate(BEFORE_0015)
    old_heartbeat(old, stopped=False)
    new = migrate(None)
    me = WorkerIdentity(
        instance="n" * 32,
        host="gpu-01",
        pid=7,
        run_dir=str(settings.LOCAL_RUN_DIR),
        version="0.2.0",
    )

    assert worker_beat(worker=me, run_dir_locked=True) is False
    stale = timezone.now() - timedelta(seconds=settings.WORKER_STALE_SECONDS + 30)
    new.get_model("jobs", "WorkerHeartbeat").objects.update(seen_at=stale)
    assert worker_beat(worker=me, run_dir_locked=True) is True


def test_downgrading_to_0014_keeps_the_heartbeat_row_as_that_release_reads_it(at_latest_after):
    from jobs.health import WorkerIdentity, worker_beat

    migrate(None)
    me = WorkerIdentity(
        instance="n" * 32, host="gpu-02", pid=7, run_dir="/srv/runs", version="0.2.0"
    )
    assert worker_beat(worker=me) is True

    old = migrate(BEFORE_0015)

    row = old.get_model("jobs", "WorkerHeartbeat").objects.get()
    assert (row.host, row.pid, row.version, row.stopped_at) == ("gpu-02", 7, "0.2.0", None)
    assert row.seen_at is not None and row.started_at is not None
    assert "jobs_workerprocess" not in connection.introspection.table_names()


def test_downgrading_past_0018_drops_the_pools_last_names_and_upgrading_starts_them_again(
    at_latest_after,
):
    from django.utils import timezone

    new = migrate(None)
    new.get_model("jobs", "KnownPool").objects.create(
        pool_id="cce-pool1", backend="aihc", name="百舸训练池", seen_at=timezone.now()
    )

    old = migrate("0017_job_owner_pool")
    again = migrate(None)

    # Only names: the next read of AIHC's pools keeps them again.
    with pytest.raises(LookupError):
        old.get_model("jobs", "KnownPool")
    assert again.get_model("jobs", "KnownPool").objects.count() == 0


def test_downgrading_past_0019_revokes_the_keys_that_expired_and_leaves_the_others_working(
    at_latest_after,
):
    from datetime import timedelta

    from django.utils import timezone

    new = migrate(None)
    User, ApiKey = new.get_model("auth", "User"), new.get_model("jobs", "ApiKey")
    alice = User.objects.create(username="alice")
    now = timezone.now()
    expired_at = now - timedelta(days=3)
    revoked_at = now - timedelta(days=9)

    def key(name: str, **fields: Any) -> None:
        ApiKey.objects.create(
            owner=alice, access_key_id=name, secret_sealed="sealed", description=name, **fields
        )

    key("expired", expires_at=expired_at)
    key("expired-then-revoked", expires_at=expired_at, revoked_at=revoked_at)
    key("expires-later", expires_at=now + timedelta(days=30))
    key("never", expires_at=None)
    key("revoked", revoked_at=revoked_at, revoke_reason="owner")

    old = migrate("0018_known_pool")

    # The release before 0019 knows no expiry: the key that expired would sign requests again
    # there, so it is revoked as of its expiry; the others are as they were (the key that has
    # not expired yet works, and in that release never expires).
    revoked = dict(
        old.get_model("jobs", "ApiKey").objects.values_list("access_key_id", "revoked_at")
    )
    assert revoked == {
        "expired": expired_at,
        "expired-then-revoked": revoked_at,
        "expires-later": None,
        "never": None,
        "revoked": revoked_at,
    }
    again = migrate(None)
    assert (
        dict(again.get_model("jobs", "ApiKey").objects.values_list("access_key_id", "revoked_at"))
        == revoked
    )


def test_upgrading_past_0022_counts_the_alert_emails_sent_and_downgrading_forgets_webhooks(
    at_latest_after,
):
    """0022 renames AlertMail to AlertDelivery with a channel: the emails an hour already
    counted keep counting as emails; reversed, the webhook rows go (the release before counts
    every row as an email) and the emails stay."""
    from datetime import timedelta

    from django.utils import timezone

    old = migrate("0021_api_key_create_key")
    alice = old.get_model("auth", "User").objects.create(username="alice")
    now = timezone.now()
    sent = [now - timedelta(minutes=minutes) for minutes in (50, 20, 1)]
    for moment in sent:
        old.get_model("jobs", "AlertMail").objects.create(owner=alice, sent_at=moment)

    new = migrate(None)
    Delivery = new.get_model("jobs", "AlertDelivery")
    assert sorted(Delivery.objects.values_list("owner_id", "channel", "sent_at")) == [
        (alice.pk, "email", moment) for moment in sorted(sent)
    ]
    Delivery.objects.create(owner_id=alice.pk, channel="webhook", sent_at=now)

    again_old = migrate("0021_api_key_create_key")
    assert sorted(
        again_old.get_model("jobs", "AlertMail").objects.values_list("owner_id", "sent_at")
    ) == [(alice.pk, moment) for moment in sorted(sent)]


def test_upgrading_past_0060_stores_when_each_ended_local_job_is_deleted_for_its_retention(
    at_latest_after,
):
    """0060 stores Job.deletes_at (qa107: the worker read every finished local job's spec a
    minute): filled for local jobs that succeeded, failed or timed out with a retention
    period, their end plus it; none for the others."""
    from datetime import timedelta

    from django.utils import timezone

    old = migrate("0059_job_status_created_index")
    alice = old.get_model("auth", "User").objects.create(username="alice")
    Job = old.get_model("jobs", "Job")
    ended = timezone.now() - timedelta(days=1)
    kept = {**spec_document("kept"), "retentionPeriod": "2h"}
    for n, (status, backend, spec) in enumerate(
        [
            ("succeeded", "local", kept),
            ("failed", "local", {**kept, "retentionPeriod": "3d"}),
            ("stopped", "local", kept),  # stopped by someone: kept
            ("succeeded", "aihc", kept),  # another platform's: its own retention
            ("succeeded", "local", spec_document("plain")),  # no retention
        ]
    ):
        Job.objects.create(
            public_id=f"job-{n}",
            name=f"job-{n}",
            owner=alice,
            spec=spec,
            status=status,
            backend=backend,
            finished_at=ended,
        )

    new = migrate(None)

    stored = dict(new.get_model("jobs", "Job").objects.values_list("public_id", "deletes_at"))
    assert stored == {
        "job-0": ended + timedelta(hours=2),
        "job-1": ended + timedelta(days=3),
        "job-2": None,
        "job-3": None,
        "job-4": None,
    }


def test_upgrading_past_0063_keeps_each_jobs_waits_to_run_again_as_intervals(at_latest_after):
    """0063 keeps each wait as a JobWait (review58): 0062's total of a job's or record's waits
    as one wait from its first start (the figures it gave), an open one from waiting_since,
    and one opened at its last change for a job already back in Queued before 0062 (L3);
    downgrading sums them into 0062's fields again."""
    from datetime import timedelta

    from django.utils import timezone

    old = migrate("0062_card_time_leaves_out_waits_to_run_again")
    alice = old.get_model("auth", "User").objects.create(username="alice")
    Job = old.get_model("jobs", "Job")
    start = timezone.now() - timedelta(days=3)
    common = {"owner": alice, "spec": spec_document("w"), "backend": "kubernetes"}
    Job.objects.create(
        public_id="ran-again",
        name="a",
        status="succeeded",
        started_at=start,
        card_time_from=start + timedelta(hours=2),
        finished_at=start + timedelta(days=1),
        **common,
    )
    Job.objects.create(
        public_id="waiting",
        name="b",
        status="queued",
        started_at=start,
        waiting_since=start + timedelta(hours=5),
        **common,
    )
    Job.objects.create(public_id="back", name="c", status="queued", started_at=start, **common)
    Job.objects.create(public_id="never", name="d", status="queued", **common)
    Job.objects.filter(public_id="back").update(updated_at=start + timedelta(hours=7))
    old.get_model("jobs", "UsageRecord").objects.create(
        public_id="gone",
        name="e",
        owner_pk=alice.pk,
        username="alice",
        backend="kubernetes",
        resource_pool="k8s",
        total_cards=1,
        started_at=start,
        card_time_from=start + timedelta(hours=1),
        ended_at=start + timedelta(days=1),
        deleted_at=start + timedelta(days=1),
    )

    new = migrate(None)

    waits = {
        (w.job.public_id if w.job else w.usage_record.public_id, w.began_at, w.ended_at)
        for w in new.get_model("jobs", "JobWait").objects.all()
    }
    assert waits == {
        ("ran-again", start, start + timedelta(hours=2)),
        ("waiting", start + timedelta(hours=5), None),
        ("back", start + timedelta(hours=7), None),
        ("gone", start, start + timedelta(hours=1)),
    }
    again = migrate("0062_card_time_leaves_out_waits_to_run_again")
    jobs = again.get_model("jobs", "Job").objects
    assert set(jobs.values_list("public_id", "card_time_from", "waiting_since")) == {
        ("ran-again", start + timedelta(hours=2), None),
        ("waiting", None, start + timedelta(hours=5)),
        ("back", None, start + timedelta(hours=7)),
        ("never", None, None),
    }


def test_downgrading_past_0025_forgets_the_uid_a_run_ran_as_and_upgrading_shows_none(
    at_latest_after,
):
    """0025 records the uid and gid a local run's replicas were started as. Reversed, the
    columns go and the run is otherwise kept; upgraded again, the run has no record (the job
    page then says nothing rather than guess from the setting)."""
    new = migrate(None)
    alice = new.get_model("auth", "User").objects.create(username="alice")
    job = new.get_model("jobs", "Job").objects.create(
        owner=alice, name="ran", spec=spec_document("ran"), status="succeeded"
    )
    LocalRun = new.get_model("jobs", "LocalRun")
    LocalRun.objects.create(job=job, attempt=2, run_uid=1_500_000_007, run_gid=1_500_000_007)

    old = migrate("0024_stack_capture")
    row = old.get_model("jobs", "LocalRun").objects.get()
    assert (row.job_id, row.attempt) == (job.pk, 2)
    assert not has_field(old.get_model("jobs", "LocalRun"), "run_uid")

    again = migrate(None)
    row = again.get_model("jobs", "LocalRun").objects.get()
    assert (row.attempt, row.run_uid, row.run_gid) == (2, None, None)


def test_downgrading_past_0026_forgets_a_refusal_and_keeps_the_lease_as_that_release_reads_it(
    at_latest_after,
):
    """0026 records why the last worker refused its settings, in the lease. Reversed, the
    columns go and the lease row is otherwise kept (the older release reads a worker that
    never ran, or the holder it had); upgraded again, no refusal is recorded."""
    from jobs.health import WorkerIdentity, worker_beat

    new = migrate(None)
    me = WorkerIdentity(
        instance="r" * 32, host="gpu-03", pid=9, run_dir="/srv/runs", version="0.3.0"
    )
    assert worker_beat(worker=me) is True
    new.get_model("jobs", "WorkerHeartbeat").objects.update(
        refused="the worker refused to start: x",
        refused_source=[{"key": "x", "params": {}, "public": ""}],
        refused_at=timezone.now(),
    )

    old = migrate("0025_local_run_user")
    row = old.get_model("jobs", "WorkerHeartbeat").objects.get()
    assert (row.holder, row.host, row.pid) == ("r" * 32, "gpu-03", 9)
    assert not has_field(old.get_model("jobs", "WorkerHeartbeat"), "refused")

    again = migrate(None)
    row = again.get_model("jobs", "WorkerHeartbeat").objects.get()
    assert (row.holder, row.refused, row.refused_source, row.refused_at) == (
        "r" * 32,
        "",
        [],
        None,
    )


def job_indexes() -> dict[str, list[str]]:
    with connection.cursor() as cursor:
        found = connection.introspection.get_constraints(cursor, "jobs_job")
    return {name: c["columns"] for name, c in found.items() if c["index"] and not c["unique"]}


def test_downgrading_past_0027_gives_back_the_owner_and_pool_index_and_keeps_every_job(
    at_latest_after,
):
    new = migrate(None)
    alice = new.get_model("auth", "User").objects.create(username="alice")
    job = new.get_model("jobs", "Job").objects.create(
        owner=alice, name="kept", spec=spec_document("kept"), resource_pool="local"
    )
    assert job_indexes()["job_pool_created"] == ["resource_pool", "created_at", "id"]
    assert job_indexes()["job_owner_pool_created"][:2] == ["owner_id", "resource_pool"]
    assert "job_owner_pool" not in job_indexes()

    old = migrate("0026_worker_refused")
    indexes = job_indexes()
    assert indexes["job_owner_pool"] == ["owner_id", "resource_pool"]
    assert "job_pool_created" not in indexes and "job_owner_pool_created" not in indexes
    assert old.get_model("jobs", "Job").objects.get().pk == job.pk

    migrate(None)
    assert {"job_pool_created", "job_owner_pool_created"} <= set(job_indexes())
    assert "job_owner_pool" not in job_indexes()


def test_downgrading_past_0028_drops_the_status_and_review_indexes_and_keeps_every_job(
    at_latest_after,
):
    new = migrate(None)
    alice = new.get_model("auth", "User").objects.create(username="alice")
    job = new.get_model("jobs", "Job").objects.create(
        owner=alice, name="kept", spec=spec_document("kept"), resource_pool="local"
    )
    assert job_indexes()["job_owner_status"][:2] == ["owner_id", "status"]
    assert job_indexes()["job_review_created"][0] == "review_state"

    old = migrate("0027_job_pool_created")
    indexes = job_indexes()
    assert "job_owner_status" not in indexes and "job_review_created" not in indexes
    assert "job_pool_created" in indexes
    assert old.get_model("jobs", "Job").objects.get().pk == job.pk

    migrate(None)
    assert {"job_owner_status", "job_review_created"} <= set(job_indexes())


def test_upgrading_past_0030_works_out_each_jobs_cards_and_downgrading_drops_them_and_the_index(
    at_latest_after,
):
    old = migrate("0029_job_review_created")
    alice = old.get_model("auth", "User").objects.create(username="alice")
    Job = old.get_model("jobs", "Job")
    two_types = S.JobSpec(
        name="mixed",
        resource_pool_id="local",
        framework=S.CUSTOM,
        image="python:3.12",
        command="python train.py",
        roles=[
            S.Role("trainer", 2, "baidu.com/h800_80g_cgpu", 4),
            S.Role("sampler", 1, "baidu.com/a800_80g_cgpu", 1),
            S.Role("launcher", 1),
        ],
    ).to_document()
    cpu_only = S.JobSpec(
        name="cpu", resource_pool_id="local", image="python:3.12", command="true"
    ).to_document()
    unreadable = {**cpu_only, "console": {**cpu_only["console"], "roles": "four cards"}}
    layouts = [
        (spec_document("same"), 6),  # A800s, in more jobs than one batch of the migration reads
        (two_types, 9),
        (cpu_only, 0),
        (unreadable, 4),
        (spec_document("charged apart"), 5),  # not the roles' 6 cards
    ]
    Job.objects.bulk_create(
        Job(
            public_id=f"job-{n}",
            name="j",
            owner=alice,
            spec=spec,
            resource_pool="local",
            total_cards=cards,
        )
        for n, (spec, cards) in enumerate([layouts[0]] * 2100 + layouts[1:])
    )
    before = {j["id"]: j for j in Job.objects.values()}

    new = migrate(None)

    jobs = new.get_model("jobs", "Job").objects
    cards = dict(jobs.values_list("public_id", "cards"))
    assert all(cards[f"job-{n}"] == {"baidu.com/a800_80g_cgpu": 6} for n in range(2100))
    assert [cards[f"job-{n}"] for n in range(2100, 2104)] == [
        {"baidu.com/a800_80g_cgpu": 1, "baidu.com/h800_80g_cgpu": 8},
        {},
        {"?": 4},
        {"?": 5},
    ]
    assert all(
        cards[public_id] == S.charged_cards(spec, total)
        for public_id, spec, total in jobs.values_list("public_id", "spec", "total_cards")
    )
    assert job_indexes()["job_usage"][:5] == [
        "cards",
        "owner_id",
        "backend",
        "resource_pool",
        "total_cards",
    ]

    old = migrate("0029_job_review_created")
    assert not has_field(old.get_model("jobs", "Job"), "cards")
    assert "job_usage" not in job_indexes()
    assert {j["id"]: j for j in old.get_model("jobs", "Job").objects.values()} == before

    again = migrate(None)
    assert dict(again.get_model("jobs", "Job").objects.values_list("public_id", "cards")) == cards


def test_upgrading_past_0031_adds_users_languages_and_downgrading_drops_them(at_latest_after):
    old = migrate("0030_job_cards")
    alice = old.get_model("auth", "User").objects.create(username="alice", email="a@example.com")

    new = migrate(None)
    languages = new.get_model("jobs", "UserPreference").objects
    assert not languages.exists()  # chosen by nobody yet: mails in the console's language
    languages.create(user_id=alice.pk, language="en")

    old = migrate("0030_job_cards")
    assert "jobs_userpreference" not in connection.introspection.table_names()
    assert list(old.get_model("auth", "User").objects.values_list("username", "email")) == [
        ("alice", "a@example.com")
    ]

    again = migrate(None)
    assert not again.get_model("jobs", "UserPreference").objects.exists()


def test_upgrading_past_0032_adds_the_search_index_and_downgrading_drops_it_keeping_every_job(
    at_latest_after,
):
    old = migrate("0031_user_preference")
    alice = old.get_model("auth", "User").objects.create(username="alice")
    job = old.get_model("jobs", "Job").objects.create(
        owner=alice, name="kept", spec=spec_document("kept"), resource_pool="local"
    )
    assert "job_search" not in job_indexes()

    new = migrate("0052_deleted_job_group_again")
    assert job_indexes()["job_search"] == ["name", "owner_id", "created_at"]
    new = migrate(None)  # 0053 adds the image to it (qa98), filled from the spec
    assert job_indexes()["job_search"] == ["name", "owner_id", "created_at", "image"]
    assert (
        new.get_model("jobs", "Job").objects.get().image
        == spec_document("kept")["jobSpec"]["image"]
    )
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT extname FROM pg_extension WHERE extname = 'pg_trgm'")
            made = cursor.fetchone() is not None
        assert ("job_name_trgm" in job_indexes()) == made  # where pg_trgm could be made
    assert new.get_model("jobs", "Job").objects.get().pk == job.pk

    old = migrate("0031_user_preference")
    assert not {"job_search", "job_name_trgm"} & set(job_indexes())
    assert list(old.get_model("jobs", "Job").objects.values_list("pk", "name")) == [
        (job.pk, "kept")
    ]

    migrate(None)
    assert "job_search" in job_indexes()


def test_a_later_migration_that_remakes_the_jobs_table_keeps_the_status_reason_search_index(
    at_latest_after,
):
    """0066 made the index by its own SQL; unless Django knows of it (0068), SQLite's
    AlterField, which copies the table into a new one with the indexes Django knows, drops
    it unsaid (review67)."""
    from django.db import migrations, models

    migrate(None)
    on_sqlite = connection.vendor == "sqlite"
    if on_sqlite:
        assert job_indexes()["job_search_reason"] == [
            "name",
            "owner_id",
            "created_at",
            "image",
            "status_reason",
        ]
    else:  # a B-tree of the reason could refuse a long one there (0066)
        assert "job_search_reason" not in job_indexes()
    executor = MigrationExecutor(connection)
    before = executor.loader.project_state(latest())
    after = before.clone()
    # A later migration's AlterField of the jobs table (a reason's length capped, say).
    alter = migrations.AlterField(
        "job", "status_reason", models.CharField(max_length=4000, blank=True)
    )
    alter.state_forwards("jobs", after)
    try:
        with connection.schema_editor() as editor:
            alter.database_forwards("jobs", editor, before, after)
        if on_sqlite:
            assert "job_search_reason" in job_indexes()
        else:
            assert "job_search_reason" not in job_indexes()
    finally:  # the table as the migrations left it, for the tests after
        with connection.schema_editor() as editor:
            alter.database_backwards("jobs", editor, after, before)
    assert ("job_search_reason" in job_indexes()) == on_sqlite


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's concurrent build")
def test_upgrading_past_0066_builds_the_reason_index_again_where_a_concurrent_build_failed(
    at_latest_after,
):
    """0066 builds its trigram index CONCURRENTLY (fix156); one cut short leaves an invalid
    index of its name, which IF NOT EXISTS alone would take as made."""
    old = migrate("0065_tear_down_sigterm_due")
    alice = old.get_model("auth", "User").objects.create(username="alice")
    for name in ("one", "two"):
        old.get_model("jobs", "Job").objects.create(
            owner=alice,
            public_id=f"pytorchjob-{name}",
            name=name,
            spec=spec_document(name),
            resource_pool="local",
            status_reason="OOMKilled",
        )
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm'")
        if cursor.fetchone() is None:
            pytest.skip("pg_trgm could not be made here (0032): 0066 builds nothing")
        # A concurrent build that fails (here: not unique) leaves its index, invalid.
        with pytest.raises(Exception, match="could not create unique index"):
            cursor.execute(
                "CREATE UNIQUE INDEX CONCURRENTLY job_status_reason_trgm "
                "ON jobs_job (status_reason)"
            )

    migrate(None)

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_index.indisvalid, pg_get_indexdef(pg_index.indexrelid) FROM pg_index "
            "JOIN pg_class ON pg_class.oid = pg_index.indexrelid "
            "WHERE pg_class.relname = 'job_status_reason_trgm'"
        )
        valid, definition = cursor.fetchone()
    assert valid
    assert "USING gin (upper(status_reason) gin_trgm_ops)" in definition


def test_upgrading_past_0033_reads_each_jobs_labels_and_downgrading_drops_them(at_latest_after):
    old = migrate("0032_job_search")
    alice = old.get_model("auth", "User").objects.create(username="alice")
    Job = old.get_model("jobs", "Job")
    labelled = {**spec_document("sweep"), "labels": [{"key": "project", "value": "llm"}]}
    # The API took a key twice before keys had to be unique: its last value is kept.
    twice = {
        **spec_document("twice"),
        "labels": [
            {"key": "exp", "value": "lr-1"},
            {"key": "team", "value": "nlp"},
            {"key": "exp", "value": "lr-2"},
        ],
    }
    specs = [labelled] * 2100 + [twice, spec_document("none")]  # more than one read of jobs
    Job.objects.bulk_create(
        Job(public_id=f"job-{n}", name="j", owner=alice, spec=spec, resource_pool="local")
        for n, spec in enumerate(specs)
    )
    before = {j["id"]: j for j in Job.objects.values()}

    new = migrate(None)

    rows = new.get_model("jobs", "JobLabel").objects
    by_job: dict[str, list[tuple[str, str]]] = {}
    for public_id, key, value in rows.order_by("id").values_list("job__public_id", "key", "value"):
        by_job.setdefault(public_id, []).append((key, value))
    assert all(by_job[f"job-{n}"] == [("project", "llm")] for n in range(2100))
    assert by_job["job-2100"] == [("team", "nlp"), ("exp", "lr-2")]
    assert "job-2101" not in by_job
    assert rows.filter(key="project", value="llm").count() == 2100

    old = migrate("0032_job_search")
    assert "jobs_joblabel" not in connection.introspection.table_names()
    assert {j["id"]: j for j in old.get_model("jobs", "Job").objects.values()} == before

    again = migrate(None)
    assert again.get_model("jobs", "JobLabel").objects.count() == 2102


def test_upgrading_past_0034_keeps_deleted_jobs_records_and_downgrading_drops_them(
    at_latest_after,
):
    old = migrate("0033_job_labels")
    alice = old.get_model("auth", "User").objects.create(username="alice")
    job = old.get_model("jobs", "Job").objects.create(
        owner=alice, name="kept", spec=spec_document("kept"), resource_pool="local"
    )

    new = migrate(None)
    records = new.get_model("jobs", "DeletedJob").objects
    assert not records.exists()  # jobs deleted before it left none
    records.create(public_id="job-gone", owner_id=alice.pk, name="gone", deleted_at=timezone.now())

    old = migrate("0033_job_labels")
    assert "jobs_deletedjob" not in connection.introspection.table_names()
    assert list(old.get_model("jobs", "Job").objects.values_list("pk", "name")) == [
        (job.pk, "kept")
    ]

    again = migrate(None)
    assert not again.get_model("jobs", "DeletedJob").objects.exists()


def test_downgrading_past_0048_keeps_deleted_jobs_records_without_what_their_watch_found(
    at_latest_after,
):
    new = migrate(None)
    alice = new.get_model("auth", "User").objects.create(username="alice")
    until = timezone.now() + timedelta(hours=1)
    new.get_model("jobs", "DeletedJob").objects.create(
        public_id="job-gone",
        owner_id=alice.pk,
        name="gone",
        deleted_at=timezone.now(),
        duplicate_watch_until=until,
        duplicate_watch={"pool": "p", "queue": "default"},
        duplicates_found=[{"id": "pytorchjob-x", "at": "2026-12-06T13:00:00+00:00", "error": ""}],
    )

    old = migrate("0047_deleted_job_duplicate_watch")
    kept = old.get_model("jobs", "DeletedJob").objects.values_list(
        "public_id", "duplicate_watch_until"
    )
    assert list(kept) == [("job-gone", until)]

    again = migrate(None)
    [row] = again.get_model("jobs", "DeletedJob").objects.all()
    assert row.duplicates_found is None and row.duplicate_watch_until == until


def test_upgrading_past_0035_makes_the_apis_not_started_standalone_jobs_queue_tasks_of_one(
    at_latest_after,
):
    # Left26: before sched26 the API stored a local job without a submission mode as a
    # standalone job; since, it is a queue task of one. Only the API's (its "api-" submit
    # keys), only those not started, and not one it made a queue task already.
    old = migrate("0034_deleted_job")
    User = old.get_model("auth", "User")
    Job = old.get_model("jobs", "Job")
    Group = old.get_model("jobs", "JobGroup")
    alice = User.objects.create(username="alice")

    def job(name: str, key: str, status: str = "queued", **fields: Any) -> Any:
        return Job.objects.create(
            public_id=f"job-{name}",
            owner=alice,
            name=name,
            spec=fields.pop("spec", spec_document(name)),
            resource_pool="local",
            status=status,
            submit_key=key,
            **fields,
        )

    queued = job("api-queued", "api-" + "a" * 64)
    held = job("api-held", f"api-{uuid.uuid4().hex}", status="pending_review")
    running = job("api-running", f"api-{uuid.uuid4().hex}", status="running")
    wizard = job("wizard", str(uuid.uuid4()))
    group = Group.objects.create(owner=alice, name="api-task", total=1, concurrency=1)
    task = job(
        "api-task",
        f"api-{uuid.uuid4().hex}:0",
        spec=spec_document("api-task", queue_total=1),
        group=group,
        group_index=1,
    )
    unchanged = {j.pk: (j.spec, j.group_id) for j in (running, wizard, task)}

    new = migrate(None)
    jobs = new.get_model("jobs", "Job").objects
    for converted in (queued, held):
        row = jobs.get(pk=converted.pk)
        assert row.spec["console"]["submission"] == {"mode": "queue", "total": 1, "concurrency": 1}
        assert (row.group.total, row.group.concurrency, row.group_index) == (1, 1, 1)
        assert row.group.name == converted.name and row.group.owner_id == alice.pk
        assert row.status == converted.status and row.submit_key == converted.submit_key
        # The rest of the spec as it was.
        before = dict(converted.spec, console=dict(converted.spec["console"], submission=None))
        after = dict(row.spec, console=dict(row.spec["console"], submission=None))
        assert after == before
    assert {j.pk: (j.spec, j.group_id) for j in jobs.filter(pk__in=unchanged)} == unchanged
    # The scheduler's line reads it as a queue task now.
    from jobs.models import Job as LatestJob
    from jobs.scheduler import LINE, QUEUE_LINE, STANDALONE_LINE

    lines = dict(LatestJob.objects.annotate(line=LINE).values_list("name", "line"))
    assert lines["api-queued"] == QUEUE_LINE and lines["wizard"] == STANDALONE_LINE

    old = migrate("0034_deleted_job")
    jobs = old.get_model("jobs", "Job").objects
    for converted in (queued, held):
        row = jobs.get(pk=converted.pk)
        assert row.spec == converted.spec and row.group_id is None and row.group_index is None
    assert old.get_model("jobs", "JobGroup").objects.count() == 1  # the API's own task's
    assert {j.pk: (j.spec, j.group_id) for j in jobs.filter(pk__in=unchanged)} == unchanged
