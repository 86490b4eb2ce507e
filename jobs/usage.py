"""The usage report (用量报表): card-hours per user, per group and per pool × card type over a
period, for chargeback, as team consoles offer it (admin: **Usage report**), deleted jobs
included.

How a job counts (decisions; README "Review, roles and security"):
- Its running time is started → finished, or → now for a job not finished yet. `started_at`
  is stamped when it first runs and `finished_at` when it reaches a final status. A job
  that went back to Queued after its first start (a Kubernetes job restarted as a whole
  whose new pods the cluster has not placed; fix128: that wait was counted) holds no cards
  until it runs again: each such wait is a JobWait of its own (review58: fix128 kept their
  total as one later start, so a wait was taken from the job's earliest part and a closed
  month changed later), and each is left out of the period it fell in.
  The local runner's fault-tolerance restarts keep their cards and the job Running: they
  count.
- Only the part of that time inside the period counts; a job that never started counts 0
  and is not among the jobs counted.
- Card-hours are its cards (`total_cards`, fixed at submit) × those hours. A job with no
  cards counts its hours as CPU-only job-hours instead.
- A deleted job counts as it did before it was deleted. Whatever deletes a job that started
  (its owner, its auto-delete retention, the API, the admin, its owner's deletion), a
  UsageRecord keeps its owner (id, name, groups then), pool, cards per card type and running
  time, its end being its finish or, when it had not finished, the deletion. It is written
  by a pre_delete receiver, in the deletion's transaction: every way of deleting a job,
  querysets and cascades included, sends that signal (only raw SQL would not).
- A user in several groups counts in full for each of them; a user in none, under "no
  group". So the groups' figures can add up to more than the total. Membership is today's,
  not the one when the job ran (decided, qa114: nothing records a job's owner's groups when
  it ran, so a closed month's group figures move when someone changes group; README "Usage
  report" says to keep the CSV of a closed month for chargeback); for a deleted user, the
  groups they were in when each of their jobs was deleted (the records keep them). A deleted user keeps their own row, under
  the name they had, marked deleted (a new account with that name is another row).

Cost: three queries whatever the number of jobs, records and groups (one more per
USERS_AT_ONCE users with usage past the first), every figure summed by the database (the
overlap of each job or record with the period is Greatest/Least over its times; on SQLite
in integer microseconds, see Elapsed): jobs, then records, per user, pool and card layout
(a record with the owner's name and groups then), and the users' names and groups today (by
the ids those found). A job's cards per card type are a column of its own (`Job.cards`,
worked out from the spec's `console.roles` when the spec is stored, as a record's `cards`
when it is kept), so no query reads a spec. Python sums each user's rows, and splits each
row's hours over its card types for the pools. Groups are summed in Python from the
per-user figures, so a job counts once in each of its owner's groups.
"""

from __future__ import annotations

import calendar
import json
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.db import DEFAULT_DB_ALIAS
from django.db.models import (
    CharField,
    Count,
    DateTimeField,
    DurationField,
    F,
    Func,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Sum,
    TextField,
    Value,
)
from django.db.models.expressions import TemporalSubtraction
from django.db.models.functions import Cast, Coalesce, Greatest, Least
from django.db.models.signals import pre_delete
from django.dispatch import receiver
from django.template.defaultfilters import floatformat
from django.utils import timezone
from django.utils.translation import gettext as _

from .models import Job, JobLabel, JobWait, UsageRecord

# Rows of the pool query read at a time: memory stays bounded however many layouts there are.
CHUNK = 2000
# Users whose names and groups one query reads (well under SQLite's 32,766 parameters).
USERS_AT_ONCE = 2000
HOUR = timedelta(hours=1)


@dataclass(frozen=True)
class Period:
    """Whole days in the current time zone (the reader's on a page: jobs.time_zones; the
    console's TIME_ZONE elsewhere), `first` to `last` included."""

    first: date
    last: date

    @classmethod
    def this_month(cls, *, today: date | None = None) -> Period:
        today = today or timezone.localdate()
        days = calendar.monthrange(today.year, today.month)[1]
        return cls(today.replace(day=1), today.replace(day=days))

    @property
    def starts_at(self) -> datetime:
        return timezone.make_aware(datetime.combine(self.first, time.min))

    @property
    def ends_at(self) -> datetime:
        return timezone.make_aware(datetime.combine(self.last + timedelta(days=1), time.min))


@dataclass
class Figures:
    card_time: timedelta = timedelta(0)  # cards × running time
    jobs: int = 0  # jobs that ran during the period
    cpu_time: timedelta = timedelta(0)  # running time of jobs with no cards

    @property
    def card_hours(self) -> float:
        return self.card_time / HOUR

    @property
    def cpu_job_hours(self) -> float:
        return self.cpu_time / HOUR

    def add(self, other: Figures) -> None:
        self.card_time += other.card_time
        self.jobs += other.jobs
        self.cpu_time += other.cpu_time


@dataclass
class UserUsage:
    username: str
    figures: Figures
    deleted: bool = False  # a deleted user, named as when their jobs' records were kept


@dataclass
class GroupUsage:
    name: str | None  # None: users in no group
    figures: Figures
    users: int  # members who ran jobs in the period


@dataclass
class PoolUsage:
    backend: str
    pool: str
    card_type: str  # "": CPU only (no cards); UNKNOWN_CARD: a layout that cannot be read
    figures: Figures


@dataclass
class UsageReport:
    period: Period
    now: datetime
    total: Figures
    users: list[UserUsage] = field(default_factory=list)
    groups: list[GroupUsage] = field(default_factory=list)
    pools: list[PoolUsage] = field(default_factory=list)


class Elapsed(Func):
    """`end` - `start`, two datetimes, as a duration. On SQLite Django works that out (and a
    duration times a number) by calling a Python function for every row, which parses both
    times: at a year's 30,000 jobs that was most of the usage report's time. Here SQLite's
    own arithmetic gives whole microseconds, the integer Django stores and reads a
    DurationField as there, so the sums are exact as before. Elsewhere (PostgreSQL)
    Django's own subtraction, native already."""

    arity = 2
    output_field = DurationField()

    def as_sql(self, compiler: Any, connection: Any, **extra_context: Any) -> Any:
        end, start = self.get_source_expressions()
        return compiler.compile(TemporalSubtraction(end, start))

    def as_sqlite(self, compiler: Any, connection: Any, **extra_context: Any) -> Any:
        end, end_params = compiler.compile(self.get_source_expressions()[0])
        start, start_params = compiler.compile(self.get_source_expressions()[1])
        sql = f"({_microseconds(end)} - {_microseconds(start)})"
        return sql, (*end_params, *end_params, *start_params, *start_params)


def _microseconds(sql: str) -> str:
    # Django keeps a datetime in SQLite as UTC text, "YYYY-MM-DD HH:MM:SS[.ffffff]": whole
    # seconds since 1970 from its first 19 characters (strftime alone would round the
    # fraction to milliseconds, and .9995 up to the next second), then the six digits after
    # the point ("" when there are none: 0). "%%": the query goes through %-formatting.
    seconds = f"CAST(strftime('%%s', substr({sql}, 1, 19)) AS INTEGER)"
    return f"({seconds} * 1000000 + CAST(substr({sql}, 21, 6) AS INTEGER))"


class Less(Func):
    """A duration less another: on SQLite integer microseconds (see Elapsed) subtracted by its
    own arithmetic, rather than by a Python function Django would call for every row."""

    arg_joiner = " - "
    template = "(%(expressions)s)"
    output_field = DurationField()


def _overlapping(
    rows: QuerySet[Any], period: Period, *, started: Any, ended: Any, waits: str, wait_until: Any
) -> QuerySet[Any]:
    """The rows (jobs or usage records) that held cards during the period, with `run_time`:
    how long, inside it. `started` and `ended` are the expressions of when each began and
    stopped counting; each of its waits to run again (the JobWaits whose `waits` field is
    the row; one still open waits up to `wait_until`, the row's end) is left out for its own part of the period
    (review58), by a subquery: no more queries, however many waits."""
    start = Value(period.starts_at, output_field=DateTimeField())
    end = Value(period.ends_at, output_field=DateTimeField())
    waited = (
        JobWait.objects.filter(**{waits: OuterRef("pk")})
        .alias(
            wait_from=Greatest(F("began_at"), start),
            wait_to=Least(Coalesce(F("ended_at"), wait_until, output_field=DateTimeField()), end),
        )
        .filter(wait_to__gt=F("wait_from"))
        .order_by()
        .values(waits)
        .annotate(total=Sum(Elapsed(F("wait_to"), F("wait_from"))))
        .values("total")
    )
    return (
        rows.alias(run_from=Greatest(started, start), run_to=Least(ended, end))
        .filter(run_to__gt=F("run_from"))
        .alias(
            run_time=Less(
                Elapsed(F("run_to"), F("run_from")),
                Coalesce(Subquery(waited), Value(timedelta(0)), output_field=DurationField()),
            )
        )
        .filter(run_time__gt=timedelta(0))
        .order_by()
    )


def _running(period: Period, now: datetime, *, owner_id: int | None = None) -> QuerySet[Job]:
    """Jobs that ran during the period (with `owner_id`, that user's), with `run_time`: how
    long, inside it."""
    until = Value(now, output_field=DateTimeField())
    if owner_id is None:
        # created_at bounds the scan at the period's end: a job created after it never ran
        # in it; finished_at at its start: one that ended before it did not either.
        jobs = Job.objects.filter(
            Q(finished_at__isnull=True) | Q(finished_at__gt=period.starts_at),
            created_at__lt=period.ends_at,
        )
    else:
        # A user's: those not ended and those that ended since the period began, two look-ups
        # in job_owner_finished (qa107: bound by creation alone, "My usage" read every job
        # they ever had). Without the creation bound: SQLite, which keeps no statistics,
        # would take job_owner_created for it, over all their jobs again; one created after
        # the period is left out by its run time (_overlapping), as before.
        jobs = Job.objects.filter(
            Q(owner_id=owner_id, finished_at__isnull=True)
            | Q(owner_id=owner_id, finished_at__gt=period.starts_at)
        )
    jobs = jobs.filter(started_at__isnull=False)
    return _overlapping(
        jobs,
        period,
        started=F("started_at"),
        ended=Coalesce(F("finished_at"), until),
        waits="job",
        wait_until=Coalesce(OuterRef("finished_at"), until, output_field=DateTimeField()),
    )


def _kept(period: Period) -> QuerySet[UsageRecord]:
    """Usage records of deleted jobs that ran during the period, with `run_time`."""
    # ended_at (indexed) bounds the scan: what ended before the period never ran in it.
    records = UsageRecord.objects.filter(
        ended_at__gt=period.starts_at, started_at__lt=period.ends_at
    )
    return _overlapping(
        records,
        period,
        started=F("started_at"),
        ended=F("ended_at"),
        waits="usage_record",
        wait_until=OuterRef("ended_at"),  # (its waits were closed when it was kept)
    )


# -- keeping deleted jobs' usage -------------------------------------------------------


def usage_record_keep(*, job: Job, using: str = DEFAULT_DB_ALIAS) -> UsageRecord | None:
    """Keeps what the report needs of `job`, which is being deleted (the pre_delete receiver
    below calls it, in the deletion's transaction). Nothing for a job that never started."""
    if job.started_at is None:
        return None
    # Two requests deleting the same job at once each read it before their transaction: the
    # second finds it gone inside its own (the row locked until the first commits, on
    # PostgreSQL; SQLite's IMMEDIATE transactions take turns) and keeps no second record.
    if not Job.objects.using(using).select_for_update().filter(pk=job.pk).exists():
        return None
    now = timezone.now()
    User = get_user_model()
    owner = list(
        User._default_manager.using(using)
        .filter(pk=job.owner_id)
        .values_list(User.USERNAME_FIELD, "groups__name")
    )
    record = UsageRecord.objects.using(using).create(
        public_id=job.public_id,
        name=job.name,
        owner_pk=job.owner_id,
        username=owner[0][0] if owner else "",
        groups=sorted({name for _username, name in owner if name is not None}),
        backend=job.backend,
        resource_pool=job.resource_pool,
        total_cards=job.total_cards,
        cards=job.cards,  # as the report split the job's hours while it was there
        started_at=job.started_at,
        ended_at=job.finished_at or now,
        deleted_at=now,
    )
    # Its waits to run again go with it (the job's deletion only unlinks them), one still
    # open ending with the record.
    ended = Value(record.ended_at, output_field=DateTimeField())
    JobWait.objects.using(using).filter(job_id=job.pk).update(
        usage_record=record, ended_at=Coalesce(F("ended_at"), Greatest(F("began_at"), ended))
    )
    return record


@receiver(pre_delete, sender=Job)
def _keep_usage_of_deleted_job(sender: Any, instance: Job, using: str, **kwargs: Any) -> None:
    # pre_delete is sent for every job a deletion removes, however it was asked for: a job's
    # own delete, a queryset's (jobs.actions.job_delete, which the owner's pages, the API,
    # the retention and the worker all go through), the cascade from its owner's deletion
    # (the admin's "delete selected" of users included), all inside the deletion's atomic
    # block. A receiver makes Django load each job rather than delete them with one bare
    # query; jobs' own cascades (events, replicas, runs) required that already. It costs four
    # queries per job (that it is still there, its owner's name and groups, the insert, its
    # waits moved to the record).
    usage_record_keep(job=instance, using=using)


# -- the report ------------------------------------------------------------------------


def month_links() -> dict[str, Period]:
    """This month and last month in the reader's time zone, which the usage pages link to
    (My usage, the admin's report): `this_month` and `last_month`."""
    this_month = Period.this_month()
    return {
        "this_month": this_month,
        "last_month": Period.this_month(today=this_month.first - timedelta(days=1)),
    }


def usage_report(
    *, period: Period, now: datetime | None = None, owner: AbstractBaseUser | None = None
) -> UsageReport:
    """Every user's, group's and pool's card-hours over `period` (see the module's rules),
    of jobs and of deleted jobs' usage records alike; with `owner`, that user's alone (their
    "My usage" page): the same figures as their row of the whole report."""
    now = now or timezone.now()
    running = _running(period, now, owner_id=None if owner is None else owner.pk)
    kept = _kept(period)
    if owner is not None:
        kept = kept.filter(owner_pk=owner.pk)
    report = UsageReport(period=period, now=now, total=Figures())

    # Per pool × card type: each row's running time split over its card types. Jobs and
    # records hold their cards per type (Job.cards, UsageRecord.cards), worked out from the
    # spec the same way (spec.charged_cards) when it was stored or the job deleted.
    pools: dict[tuple[str, str, str], Figures] = {}

    def add(backend: str, pool: str, cards: dict[str, int], run_time: timedelta, jobs: int) -> None:
        if not cards:
            shares = {"": Figures(jobs=jobs, cpu_time=run_time)}
        else:
            shares = {card: Figures(card_time=run_time * n, jobs=jobs) for card, n in cards.items()}
        for card, figures in shares.items():
            pools.setdefault((backend, pool, card), Figures()).add(figures)

    # Per user: figures by owner id (a deleted user's records keep theirs), and the parts to
    # count in groups: a live user's under today's groups (None), a deleted one's under the
    # groups they were in when their records were written. One pass over the jobs and one
    # over the records give both: rows per user, pool and card layout (a job is in one row),
    # summed per user here and split per card type by add().
    figures_of: dict[int, Figures] = {}
    kept_names: dict[int, str] = {}
    parts: list[tuple[int, tuple[str, ...] | None, Figures]] = []

    # Grouped by total_cards too (what a layout's cards add up to: no more rows), so a row's
    # card time is its running time × its cards, worked out here in exact integer
    # arithmetic: the database evaluates one expression per job, its running time.
    def figures_for(run_time: timedelta, jobs: int, total_cards: int) -> Figures:
        cpu_time = run_time if total_cards == 0 else timedelta(0)
        return Figures(card_time=run_time * total_cards, jobs=jobs, cpu_time=cpu_time)

    per_user_layout = running.values_list(
        "owner_id", "backend", "resource_pool", "cards", "total_cards"
    ).annotate(run_in_period=Sum("run_time"), jobs=Count("id"))
    for owner_pk, backend, pool, cards, total_cards, run_time, jobs in per_user_layout.iterator(
        CHUNK
    ):
        parts.append((owner_pk, None, figures_for(run_time, jobs, total_cards)))
        add(backend, pool, cards or {}, run_time, jobs)
    per_record_layout = kept.values_list(
        "owner_pk", "username", "groups", "backend", "resource_pool", "cards", "total_cards"
    ).annotate(run_in_period=Sum("run_time"), jobs=Count("id"))
    for row in per_record_layout.iterator(CHUNK):
        owner_pk, username, groups, backend, pool, cards, total_cards, run_time, jobs = row
        kept_names.setdefault(owner_pk, username)
        parts.append((owner_pk, tuple(groups or ()), figures_for(run_time, jobs, total_cards)))
        add(backend, pool, cards or {}, run_time, jobs)
    for owner_pk, _groups, figures in parts:
        figures_of.setdefault(owner_pk, Figures()).add(figures)
        report.total.add(figures)

    # The users who still exist, with their names and groups today: one row per membership.
    User = get_user_model()
    today_names: dict[int, str] = {}
    today_groups: dict[int, list[str]] = {}
    # By the ids the two queries above found, not by those queries again as subqueries: that
    # read every job of the period a second time (scale review, session 19). In batches, for
    # SQLite's bound on a statement's parameters: one query up to USERS_AT_ONCE users.
    owner_pks = sorted(figures_of)
    for first in range(0, len(owner_pks), USERS_AT_ONCE):
        members = User._default_manager.filter(pk__in=owner_pks[first : first + USERS_AT_ONCE])
        for pk, username, group in members.values_list(
            "pk", User.USERNAME_FIELD, "groups__name"
        ).order_by():
            today_names[pk] = username
            groups = today_groups.setdefault(pk, [])
            if group is not None:
                groups.append(group)

    for owner_pk, figures in figures_of.items():
        deleted = owner_pk not in today_names
        # (A user deleted between these queries may have no record yet: named "" then.)
        name = kept_names.get(owner_pk, "") if deleted else today_names[owner_pk]
        report.users.append(UserUsage(name, figures, deleted=deleted))
    report.users.sort(
        key=lambda u: (-u.figures.card_time, -u.figures.cpu_time, u.username, u.deleted)
    )

    # A user in several groups counts in full for each; each of their jobs once per group.
    groups: dict[str | None, tuple[Figures, set[int]]] = {}
    for owner_pk, kept_groups, figures in parts:
        names = today_groups.get(owner_pk) if owner_pk in today_names else kept_groups
        for name in names or [None]:
            total, users = groups.setdefault(name, (Figures(), set()))
            total.add(figures)
            users.add(owner_pk)
    report.groups = [
        GroupUsage(name, figures, len(users)) for name, (figures, users) in groups.items()
    ]
    report.groups.sort(
        key=lambda g: (g.name is None, -g.figures.card_time, -g.figures.cpu_time, g.name or "")
    )

    report.pools = [
        PoolUsage(backend, pool, card, figures)
        for (backend, pool, card), figures in sorted(pools.items(), key=lambda i: _pool_order(i[0]))
    ]
    return report


@dataclass
class LabelUsage:
    value: str | None  # None: jobs without that label key (or, `folded`, the values after)
    figures: Figures
    folded: int = 0  # a page's row for this many values past LABEL_VALUES_SHOWN


# A usage page's table by label shows this many values, the most used first, and the rest as one
# row: a key with a value per job (a run id, a commit) made a row per job, 23,803 rows and 3 MB
# for a year of the report at 30,000 jobs (1.7 s). The CSV has every value.
LABEL_VALUES_SHOWN = 50


@dataclass
class UsageByLabel:
    """A period's figures by the value of one label key (标签), e.g. `project`: one row per
    value, the jobs without that key, and deleted jobs, whose labels are not kept (their
    usage records hold none). The rows add up to the report's total."""

    key: str
    values: list[LabelUsage]
    deleted: Figures

    @property
    def values_shown(self) -> list[LabelUsage]:
        """`values` as a page shows them: the first LABEL_VALUES_SHOWN values, those after
        added up in one row (`folded`), then the jobs without the key; they add up as all."""
        valued = [row for row in self.values if row.value is not None]
        without = [row for row in self.values if row.value is None]
        if len(valued) <= LABEL_VALUES_SHOWN:
            return self.values
        rest = Figures()
        for row in valued[LABEL_VALUES_SHOWN:]:
            rest.add(row.figures)
        folded = LabelUsage(None, rest, folded=len(valued) - LABEL_VALUES_SHOWN)
        return [*valued[:LABEL_VALUES_SHOWN], folded, *without]


def usage_by_label(
    *, period: Period, key: str, now: datetime, owner: AbstractBaseUser | None = None
) -> UsageByLabel:
    """The figures of usage_report (with `owner`, that user's) by the value of label `key`.
    Two queries whatever the number of jobs: the jobs grouped by their value of the key (one
    look-up each in the labels table's unique (job, key) index; a job has at most one value
    of a key) and cards, and the deleted jobs' records grouped by cards."""
    value = JobLabel.objects.filter(job=OuterRef("pk"), key=key).values("value")[:1]
    running = _running(period, now, owner_id=None if owner is None else owner.pk)
    kept = _kept(period)
    if owner is not None:
        kept = kept.filter(owner_pk=owner.pk)

    def figures_for(run_time: timedelta, jobs: int, total_cards: int) -> Figures:
        cpu_time = run_time if total_cards == 0 else timedelta(0)
        return Figures(card_time=run_time * total_cards, jobs=jobs, cpu_time=cpu_time)

    values: dict[str | None, Figures] = {}
    per_value = (
        running.annotate(label_value=Subquery(value))
        .values_list("label_value", "total_cards")
        .annotate(run_in_period=Sum("run_time"), jobs=Count("id"))
    )
    for label_value, total_cards, run_time, jobs in per_value:
        values.setdefault(label_value, Figures()).add(figures_for(run_time, jobs, total_cards))
    deleted = Figures()
    per_cards = kept.values_list("total_cards").annotate(
        run_in_period=Sum("run_time"), jobs=Count("id")
    )
    for total_cards, run_time, jobs in per_cards:
        deleted.add(figures_for(run_time, jobs, total_cards))
    rows = [LabelUsage(v, figures) for v, figures in values.items()]
    # The most used first; the jobs without the key after the values.
    rows.sort(
        key=lambda r: (r.value is None, -r.figures.card_time, -r.figures.cpu_time, r.value or "")
    )
    return UsageByLabel(key=key, values=rows, deleted=deleted)


def _pool_order(key: tuple[str, str, str]) -> tuple[str, str, bool, str]:
    backend, pool, card = key
    return (backend, pool, card == "", card)  # CPU only after the card types


def usage_jobs(
    *,
    owner: AbstractBaseUser,
    period: Period,
    now: datetime | None = None,
    label_key: str | None = None,
) -> Any:
    """The jobs of `owner` that ran during the period, as the report counts them (the same
    rows: jobs, and the usage records of the deleted ones), latest start first: one query,
    to slice into pages. Each row is a dict: public_id, backend, resource_pool, total_cards,
    started_at, job_name, run (inside the period), deleted, and layout: the JSON text of its
    cards per type (Job.cards, UsageRecord.cards; `card_types` reads it). With `label_key`,
    also label_value: the job's value of that label, None when it has none or was deleted
    (its record keeps no labels), as usage_by_label groups them: still one query, a look-up
    per job in the labels table's unique (job, key) index."""
    now = now or timezone.now()
    # A union's columns go by position: both sides name the same ones, in the same order.
    columns = ("public_id", "backend", "resource_pool", "total_cards", "started_at")
    labelled: dict[str, Any] = {}
    unlabelled: dict[str, Any] = {}
    if label_key is not None:
        value = JobLabel.objects.filter(job=OuterRef("pk"), key=label_key).values("value")[:1]
        labelled["label_value"] = Subquery(value)
        unlabelled["label_value"] = Value(None, output_field=CharField())
    jobs = _running(period, now, owner_id=owner.pk).values(
        *columns,
        job_name=F("name"),
        run=F("run_time"),
        deleted=Value(False),
        layout=Cast("cards", output_field=TextField()),
        **labelled,
    )
    records = (
        _kept(period)
        .filter(owner_pk=owner.pk)
        .values(
            *columns,
            job_name=F("name"),
            run=F("run_time"),
            deleted=Value(True),
            layout=Cast("cards", output_field=TextField()),
            **unlabelled,
        )
    )
    return jobs.union(records, all=True).order_by("-started_at", "-public_id")


def job_usage(*, job: Job, now: datetime | None = None) -> Figures | None:
    """What the job has used (None: it never started), as the report counts it over a period
    holding its whole run: its cards × first start to finish, or to `now` while it runs,
    less its waits to run again (JobWait); CPU-only job-hours instead when it has no cards.
    One query, for its waits (none when they are prefetched or it never started)."""
    if job.started_at is None:
        return None
    now = now or timezone.now()
    ended = job.finished_at or now
    waited = sum(
        (
            max(min(wait.ended_at or now, ended) - wait.began_at, timedelta(0))
            for wait in job.waits.all()
        ),
        timedelta(0),
    )
    run_time = max(ended - job.started_at - waited, timedelta(0))
    if job.total_cards == 0:
        return Figures(jobs=1, cpu_time=run_time)
    return Figures(card_time=run_time * job.total_cards, jobs=1)


def job_usage_text(*, job: Job, now: datetime | None = None) -> str:
    """A job's card-hours on its page and its admin page (job_usage), to two decimals as the
    usage pages round them (floatformat: the same figure to the digit), "so far" while it
    has not finished; a CPU-only job's is 0, said to be CPU only, with its hours run."""
    figures = job_usage(job=job, now=now)
    if figures is None:
        return "–"  # as its duration says it
    so_far = job.finished_at is None
    if job.total_cards == 0:
        hours = floatformat(figures.cpu_job_hours, 2)
        # Its card-hours first, as a figure like any job's: "None: it uses no cards" read
        # as a sentence in a figure's place (copy edit).
        if so_far:
            return _("0 (CPU only; %(hours)s job-hours so far)") % {"hours": hours}
        return _("0 (CPU only; %(hours)s job-hours)") % {"hours": hours}
    hours = floatformat(figures.card_hours, 2)
    return _("%(hours)s so far") % {"hours": hours} if so_far else hours


def card_types(row: dict[str, Any]) -> list[str]:
    """The card types a `usage_jobs` row's job used, sorted ([]: CPU only), as the report
    splits its hours (Job.cards; a deleted job's as its record kept them)."""
    try:
        cards = json.loads(row["layout"] or "{}")
    except ValueError:
        cards = {}
    return sorted(cards) if isinstance(cards, dict) else []
