"""The usage report (用量报表): card-hours per user, per group and per pool × card type over a
period, for chargeback, as team consoles offer it (admin: **Usage report**).

How a job counts (decisions; README "Review, roles and security"):
- Its running time is started → finished, or → now for a job not finished yet. `started_at`
  is stamped when it first runs and `finished_at` when it reaches a final status, so a job
  restarted by fault tolerance (Running → Queued → Running) counts as running continuously
  from its first start, the time it waited to run again included: its cards were held or
  asked for throughout, and the rows hold no per-attempt times to subtract.
- Only the part of that time inside the period counts; a job that never started counts 0
  and is not among the jobs counted.
- Card-hours are its cards (`total_cards`, fixed at submit) × those hours. A job with no
  cards counts its hours as CPU-only job-hours instead.
- A user in several groups counts in full for each of them; a user in none, under "no
  group". So the groups' figures can add up to more than the total. Membership is today's,
  not the one when the job ran.

Cost: three queries whatever the number of jobs, users and groups, every figure summed by
the database (the overlap of each job with the period is Greatest/Least over its times):
one per user, one per group, and one per pool and role layout. Cards per card type are not
a column: they are in the spec's `console.roles`, so that last query groups by that JSON
text and Python splits each group's hours over its card types. It returns one row per
distinct layout in a pool (jobs copied or resubmitted share one), never the spec itself.
"""

from __future__ import annotations

import calendar
import json
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from typing import Any

from django.db.models import (
    Count,
    DateTimeField,
    DurationField,
    ExpressionWrapper,
    F,
    IntegerField,
    Q,
    QuerySet,
    Sum,
    Value,
)
from django.db.models.fields.json import KT
from django.db.models.functions import Coalesce, Greatest, Least
from django.utils import timezone

from . import spec as spec_module
from .models import Job

# Rows of the pool query read at a time: memory stays bounded however many layouts there are.
CHUNK = 2000
HOUR = timedelta(hours=1)


@dataclass(frozen=True)
class Period:
    """Whole days in the console's time zone, `first` to `last` included."""

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


UNKNOWN_CARD = "?"


@dataclass
class UsageReport:
    period: Period
    now: datetime
    total: Figures
    users: list[UserUsage] = field(default_factory=list)
    groups: list[GroupUsage] = field(default_factory=list)
    pools: list[PoolUsage] = field(default_factory=list)


def _running(period: Period, now: datetime) -> QuerySet[Job]:
    """Jobs that ran during the period, with `run_time`: how long, inside it."""
    start = Value(period.starts_at, output_field=DateTimeField())
    end = Value(period.ends_at, output_field=DateTimeField())
    until = Value(now, output_field=DateTimeField())
    return (
        # created_at (indexed) bounds the scan: a job created after the period never ran in it.
        Job.objects.filter(created_at__lt=period.ends_at, started_at__isnull=False)
        .alias(
            run_from=Greatest(F("started_at"), start),
            run_to=Least(Coalesce(F("finished_at"), until), end),
        )
        .filter(run_to__gt=F("run_from"))
        .alias(
            run_time=ExpressionWrapper(F("run_to") - F("run_from"), output_field=DurationField())
        )
        .order_by()
    )


def _figures(**extra: Any) -> dict[str, Any]:
    no_cards = Q(total_cards=0)
    return {
        "card_time": Sum(
            # A plain IntegerField: SQLite's duration arithmetic refuses a PositiveIntegerField.
            ExpressionWrapper(
                F("run_time") * ExpressionWrapper(F("total_cards"), output_field=IntegerField()),
                output_field=DurationField(),
            ),
            default=timedelta(0),
        ),
        "jobs": Count("id", distinct=True),
        "cpu_time": Sum("run_time", filter=no_cards, default=timedelta(0)),
        **extra,
    }


def _cards_by_type(roles_json: str | None) -> dict[str, int] | None:
    """Cards per type of a stored `console.roles`; None when it cannot be read."""
    if roles_json is None:
        return None
    try:
        return spec_module.parse_document(
            {"console": {"roles": json.loads(roles_json)}}
        ).accelerators_by_type()
    except (ValueError, spec_module.SpecError):
        return None


def usage_report(*, period: Period, now: datetime | None = None) -> UsageReport:
    """Every user's, group's and pool's card-hours over `period` (see the module's rules)."""
    now = now or timezone.now()
    running = _running(period, now)
    report = UsageReport(period=period, now=now, total=Figures())

    per_user = running.values_list("owner__username").annotate(**_figures())
    for username, card_time, jobs, cpu_time in per_user:
        figures = Figures(card_time, jobs, cpu_time)
        report.users.append(UserUsage(username, figures))
        report.total.add(figures)
    report.users.sort(key=lambda u: (-u.figures.card_time, -u.figures.cpu_time, u.username))

    # The join repeats a job once per group of its owner: each group counts it once.
    per_group = running.values_list("owner__groups__name").annotate(
        **_figures(users=Count("owner", distinct=True))
    )
    for name, card_time, jobs, cpu_time, users in per_group:
        report.groups.append(GroupUsage(name, Figures(card_time, jobs, cpu_time), users))
    report.groups.sort(
        key=lambda g: (g.name is None, -g.figures.card_time, -g.figures.cpu_time, g.name or "")
    )

    pools: dict[tuple[str, str, str], Figures] = {}
    per_layout = running.values_list(
        "backend", "resource_pool", "total_cards", KT("spec__console__roles")
    ).annotate(run_time=Sum("run_time"), jobs=Count("id"))
    for backend, pool, total_cards, roles, run_time, jobs in per_layout.iterator(CHUNK):
        cards = _cards_by_type(roles)
        if cards is None or sum(cards.values()) != total_cards:
            # Unreadable, or not what the job was charged for at submit: total_cards stays
            # the truth (the per-user figures use it), under an unknown card type.
            cards = {UNKNOWN_CARD: total_cards} if total_cards else {}
        if not cards:
            shares = {"": Figures(jobs=jobs, cpu_time=run_time)}
        else:
            shares = {card: Figures(card_time=run_time * n, jobs=jobs) for card, n in cards.items()}
        for card, figures in shares.items():
            pools.setdefault((backend, pool, card), Figures()).add(figures)
    report.pools = [
        PoolUsage(backend, pool, card, figures)
        for (backend, pool, card), figures in sorted(pools.items(), key=lambda i: _pool_order(i[0]))
    ]
    return report


def _pool_order(key: tuple[str, str, str]) -> tuple[str, str, bool, str]:
    backend, pool, card = key
    return (backend, pool, card == "", card)  # CPU only after the card types
