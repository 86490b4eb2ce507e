"""Fills a scratch database with a year of a big team's use, for bench/bench_scale.py.

    CONSOLE_VAR_DIR=/tmp/scale DJANGO_SETTINGS_MODULE=bench.settings \\
        .venv/bin/python bench/scale_seed.py          # then: make run PORT=8176 with that var dir

A script under bench/ (not a management command): it is for measuring, and must never run
against a real database (it refuses one that already has jobs). It writes what the console's
own code writes, in bulk (bulk_create with auto_now_add switched off, so a year of creation
times is kept): ~200 users in ~20 groups, 30,000 jobs over 12 months in every status across
several pools (local, two AIHC pools that are no longer offered, with their last known names,
a Kubernetes namespace), three labels each (team, experiment, learning rate, as the job list
filters them), with their events (Created, Queued, Started, a final one...), replicas,
LocalRun rows for local jobs that started, queue groups (a group's tasks numbered 1..total),
stack captures, usage records of deleted jobs, API keys (sealed as api_key_create seals them)
and ~2,000 drafts. Three users are the ones to log in as: `scale-user` (2,000 jobs), `scale-
reviewer` (staff with the review permission) and `scale-admin` (superuser), each with the
password `scale-password`. One of scale-user's jobs, `scale-heavy`, has 10,000 events and a
10,000-line log.
"""

from __future__ import annotations

import os
import random
import secrets
import sys
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")

PASSWORD = "scale-password"
USERS = 200
GROUPS = 20
JOBS = 30_000
HEAVY_USER_JOBS = 2_000
DRAFTS = 2_000
USAGE_RECORDS = 5_000
HEAVY_EVENTS = 10_000
HEAVY_LOG_LINES = 10_000
# Pools: (id, backend). The AIHC ones have a last known name (KnownPool) and no AIHC is
# configured, so they read as no longer offered, as after a year some pools are.
POOLS = [
    ("local", "local"),
    ("cce-a800-train", "aihc"),
    ("cce-h800-infer", "aihc"),
    ("team-vision", "kubernetes"),
]


def seed(*, jobs: int = JOBS, seed_value: int = 18) -> dict[str, int]:
    import django

    django.setup()
    from django.contrib.auth.hashers import make_password
    from django.contrib.auth.models import Group, User
    from django.db import transaction
    from django.utils import timezone

    from jobs import spec as S
    from jobs.api_keys import seal
    from jobs.logs import replica_log_path
    from jobs.models import (
        ApiKey,
        Draft,
        Job,
        JobEvent,
        JobGroup,
        JobLabel,
        JobReplica,
        JobStatus,
        KnownPool,
        LocalRun,
        ReviewState,
        StackCapture,
        UsageRecord,
    )

    if Job.objects.exists():
        raise SystemExit(
            "scale_seed: this database already has jobs; use a scratch CONSOLE_VAR_DIR"
        )
    rng = random.Random(seed_value)
    now = timezone.now()
    year_ago = now - timedelta(days=365)
    # One hash for everyone: hashing 200 passwords with Argon2 would take a minute.
    password = make_password(PASSWORD)

    with transaction.atomic():
        groups = Group.objects.bulk_create([Group(name=f"team-{g:02d}") for g in range(GROUPS)])
        users = User.objects.bulk_create(
            [
                User(
                    username=f"user{u:03d}",
                    email=f"user{u:03d}@example.com",
                    password=password,
                    date_joined=year_ago,
                )
                for u in range(USERS - 3)
            ]
            + [
                User(username="scale-user", password=password, email="u@example.com"),
                User(username="scale-reviewer", password=password, is_staff=True, email="r@x.com"),
                User(
                    username="scale-admin",
                    password=password,
                    is_staff=True,
                    is_superuser=True,
                    email="a@example.com",
                ),
            ]
        )
        heavy_user, reviewer = users[-3], users[-2]
        reviewer.groups.add(Group.objects.get(name="Reviewers"))  # made by migrate
        Membership = User.groups.through
        Membership.objects.bulk_create(
            [Membership(user_id=u.pk, group_id=groups[i % GROUPS].pk) for i, u in enumerate(users)]
        )
        KnownPool.objects.bulk_create(
            [
                KnownPool(pool_id=p, backend=b, name=f"{p} (A800)", seen_at=year_ago)
                for p, b in POOLS
                if b == "aihc"
            ]
        )

    spec = S.JobSpec(
        name="scale-job",
        resource_pool_id="local",
        image="python:3.12",
        command="python train.py",
        roles=[
            S.Role("master", 1, "baidu.com/a800_80g_cgpu", 8),
            S.Role("worker", 1, "baidu.com/a800_80g_cgpu", 8),
        ],
        envs=[S.Env("LR", "0.001"), S.Env("TOKEN", "secret-token", secret=True)],
    )
    document = spec.to_document()
    # A third of the jobs keep their retention (任务退出后自动删除) for 400 days: none is due
    # yet, but the worker's retention pass reads them all.
    kept_document = {**document, "retentionPeriod": "400d"}

    def labelled(base: dict[str, Any], i: int) -> dict[str, Any]:
        """Three labels on every job, as a team tags its runs: one its whole team shares, one
        per experiment (40 of them), one per learning rate (5)."""
        labels = [("team", f"t{i % 20}"), ("exp", f"e{i % 40}"), ("lr", f"{i % 5}e-4")]
        return {**base, "labels": [{"key": k, "value": v} for k, v in labels]}

    for model in (Job, JobEvent, JobGroup, StackCapture, Draft, ApiKey):
        for field in model._meta.fields:
            if getattr(field, "auto_now_add", False) or getattr(field, "auto_now", False):
                field.auto_now_add = field.auto_now = False

    statuses = list(JobStatus.values)
    finals = {"succeeded", "failed", "stopped", "timed_out", "rejected"}
    ordinary = users[: USERS - 3]
    owners = [heavy_user] * HEAVY_USER_JOBS + [
        ordinary[i % len(ordinary)] for i in range(jobs - HEAVY_USER_JOBS)
    ]
    rng.shuffle(owners)
    counts = {"jobs": 0, "events": 0, "labels": 0, "replicas": 0, "local_runs": 0, "groups": 0}
    batch: list[Job] = []

    def flush() -> None:
        made = Job.objects.bulk_create(batch)
        events, replicas, runs, captures = [], [], [], []
        for job in made:
            t = job.created_at
            events.append(JobEvent(job=job, created_at=t, reason="Created", message="Created"))
            if job.review_state != ReviewState.NOT_REQUIRED:
                events.append(
                    JobEvent(job=job, created_at=t, reason="ReviewRequired", message="Review")
                )
            events.append(JobEvent(job=job, created_at=t, reason="Queued", message="Queued"))
            if job.started_at:
                events.append(
                    JobEvent(job=job, created_at=job.started_at, reason="Started", message="ok")
                )
                for role in ("master", "worker"):
                    replicas.append(
                        JobReplica(
                            job=job,
                            role=role,
                            index=0,
                            status="running" if job.status == "running" else "succeeded",
                            started_at=job.started_at,
                            finished_at=job.finished_at,
                        )
                    )
                if job.backend == "local":
                    runs.append(LocalRun(job=job, attempt=1 + job.restarts, runner="", devices={}))
            if job.finished_at:
                events.append(
                    JobEvent(
                        job=job,
                        created_at=job.finished_at,
                        type="Warning" if job.status != "succeeded" else "Normal",
                        reason=job.status.title().replace("_", ""),
                        message=job.status,
                    )
                )
            if job.status == "failed" and job.pk % 7 == 0:
                captures.append(
                    StackCapture(
                        job=job,
                        created_at=job.finished_at,
                        finished_at=job.finished_at,
                        trigger="hang",
                        replicas=[{"label": "master-0", "error": "", "processes": []}],
                    )
                )
        JobEvent.objects.bulk_create(events, batch_size=2000)
        # As jobs.services.jobs_submit writes them: the list's label filter reads this table.
        labels = JobLabel.objects.bulk_create(
            [
                JobLabel(job=job, key=label["key"], value=label["value"])
                for job in made
                for label in job.spec["labels"]
            ],
            batch_size=2000,
        )
        JobReplica.objects.bulk_create(replicas, batch_size=2000)
        LocalRun.objects.bulk_create(runs, batch_size=2000)
        StackCapture.objects.bulk_create(captures, batch_size=2000)
        counts["jobs"] += len(made)
        counts["events"] += len(events)
        counts["labels"] += len(labels)
        counts["replicas"] += len(replicas)
        counts["local_runs"] += len(runs)
        batch.clear()

    i = 0
    with transaction.atomic():
        while i < jobs:
            owner = owners[i]
            created = year_ago + timedelta(seconds=365 * 86400 * i / jobs)
            # Mostly finished long ago; the last weeks hold the live ones.
            recent = i > jobs * 0.97
            status = rng.choice(statuses) if recent else rng.choice(sorted(finals))
            pool, backend = POOLS[i % len(POOLS)]
            group = None
            size = 1
            if i % 50 == 0:  # a queue group of 3 to 8 tasks, one name
                size = min(rng.randint(3, 8), jobs - i)
                group = JobGroup.objects.create(
                    owner=owner, name=f"grp-{i}", total=size, concurrency=2, created_at=created
                )
                counts["groups"] += 1
            for task in range(size):
                started = (
                    created + timedelta(minutes=5)
                    if status
                    not in (
                        "queued",
                        "pending_review",
                        "rejected",
                        "submitting",
                        "submit_failed",
                    )
                    else None
                )
                finished = (
                    started + timedelta(hours=rng.randint(1, 48))
                    if started and status in finals
                    else None
                )
                batch.append(
                    Job(
                        public_id=f"{S.JOB_ID_PREFIX[S.PYTORCH]}-{uuid.uuid4()}",
                        name=group.name if group else f"train-{i}",
                        owner=owners[i],
                        spec=labelled(kept_document if i % 3 == 0 else document, i),
                        framework=S.FRAMEWORKS[i % 3],
                        status=status,
                        backend=backend,
                        resource_pool=pool,
                        queue=f"q{i % 4}",
                        priority=S.PRIORITIES[i % 3],
                        total_cards=8 * (1 + i % 4),
                        # As Job.save() works it out (bulk_create does not call save()).
                        cards=S.charged_cards(
                            kept_document if i % 3 == 0 else document, 8 * (1 + i % 4)
                        ),
                        image=S.stored_image(kept_document if i % 3 == 0 else document),
                        group=group,
                        group_index=task + 1 if group else None,
                        review_state=ReviewState.PENDING
                        if status == "pending_review"
                        else (
                            ReviewState.REJECTED
                            if status == "rejected"
                            else ReviewState.NOT_REQUIRED
                        ),
                        created_at=created,
                        updated_at=finished or started or created,
                        started_at=started,
                        finished_at=finished,
                        status_reason="Exit code 1" if status == "failed" else "",
                    )
                )
                i += 1
                if i >= jobs:
                    break
            if len(batch) >= 2000:
                flush()
        flush()
    counts["statuses"] = len(statuses)

    # The heavy job: scale-user's, with 10,000 events and a 10,000-line log.
    heavy = Job.objects.filter(owner=heavy_user, status="succeeded", backend="local").first()
    assert heavy is not None
    Job.objects.filter(pk=heavy.pk).update(name="scale-heavy")
    JobEvent.objects.bulk_create(
        [
            JobEvent(
                job=heavy,
                created_at=heavy.created_at + timedelta(seconds=e),
                reason="Restarted" if e % 2 else "Started",
                message=f"attempt {e}",
            )
            for e in range(HEAVY_EVENTS)
        ],
        batch_size=2000,
    )
    log = replica_log_path(heavy.public_id, "master-0")
    log.parent.mkdir(parents=True, exist_ok=True)
    base = datetime.now(UTC) - timedelta(days=1)
    with log.open("w") as f:
        for n in range(HEAVY_LOG_LINES):
            when = base + timedelta(seconds=n)
            f.write(f"{when:%Y-%m-%dT%H:%M:%S}.000000Z step {n} loss {1 / (n + 1):.5f}\n")

    drafts = [
        Draft(
            owner=heavy_user if d % 20 == 0 else ordinary[d % len(ordinary)],
            data={"basic": {"name": f"draft-{d}"}},
            completed_steps=["basic"],
            created_at=year_ago + timedelta(hours=d * 4),
            updated_at=year_ago + timedelta(hours=d * 4),
        )
        for d in range(DRAFTS)
    ]
    Draft.objects.bulk_create(drafts, batch_size=1000)

    UsageRecord.objects.bulk_create(
        [
            UsageRecord(
                public_id=f"pytorchjob-{uuid.uuid4()}",
                name=f"gone-{r}",
                owner_pk=(heavy_user if r % 10 == 0 else ordinary[r % len(ordinary)]).pk,
                username=(heavy_user if r % 10 == 0 else ordinary[r % len(ordinary)]).username,
                groups=[f"team-{r % GROUPS:02d}"],
                backend=POOLS[r % len(POOLS)][1],
                resource_pool=POOLS[r % len(POOLS)][0],
                total_cards=16,
                cards={"baidu.com/a800_80g_cgpu": 16},
                started_at=year_ago + timedelta(hours=r),
                ended_at=year_ago + timedelta(hours=r + 6),
                deleted_at=year_ago + timedelta(hours=r + 7),
            )
            for r in range(USAGE_RECORDS)
        ],
        batch_size=2000,
    )

    keys = []
    for k, user in enumerate(users):
        for n in range(2 if k % 3 == 0 else 1):
            access = secrets.token_hex(16)
            keys.append(
                ApiKey(
                    access_key_id=access,
                    secret_sealed=seal(secrets.token_hex(16), access_key_id=access),
                    owner=user,
                    description=f"key {n}",
                    created_at=year_ago + timedelta(days=k),
                    revoked_at=now if (k + n) % 4 == 0 else None,
                )
            )
    ApiKey.objects.bulk_create(keys)
    counts.update(
        drafts=DRAFTS,
        usage_records=USAGE_RECORDS,
        api_keys=len(keys),
        heavy_events=HEAVY_EVENTS,
        users=len(users),
        stack_captures=StackCapture.objects.count(),
    )
    return counts


if __name__ == "__main__":
    print(seed(jobs=int(sys.argv[1]) if len(sys.argv) > 1 else JOBS))
