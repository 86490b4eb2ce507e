"""Per-user card quotas on the local pool (models.CardQuota; README "Quotas"), as Slurm's
MaxTRESPerUser or a Kueue ClusterQueue's quota: one person cannot take every card. A group's
row is each member's limit, not the group's total (Slurm's GrpTRES).

Rules (decisions):
- A quota row limits, for one card type (blank: every type, counted together), the cards a
  user's running local jobs hold at once and/or how many of them run at once (those using
  that card type; blank: all). A job asking for none of a row's cards is not limited by its
  card limit (a CPU-only job is never held for cards).
- Which rows apply to a user, per card type: the user's own row; else their groups' rows,
  the most generous one (blank, "no limit", beats any number); else the row for everyone
  (no user, no group). Card types are resolved separately: a user's own A800 row leaves
  their group's H800 row in force.
- Held is what the scheduler counts as held: the cards of the user's Submitting, Running
  and Stopping local jobs (`LocalRun.devices`), until every process of a job is gone.
- Remote pools (AIHC, Kubernetes) have their own quotas on the platform; these are the
  local pool's only.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model
from django.db import connections, router
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop, ngettext, pgettext

from .models import ACTIVE_STATUSES, CardQuota, Job, JobStatus, LocalRun
from .spec import card_shown
from .texts import RecordedText, Term, ngettext_noop, recorded, recorded_plural

ANY_CARD = gettext_noop("cards of any type")
# A card quota as its sentences say it: its number first, the card type after ("2 cards (any
# type)", not "2 × cards of any type", qa92). "your quota is" is part of it: Chinese puts the
# number after 任意类型的卡 but before a named type, and so needs a space after 为 in one case
# and none in the other (您的配额为任意类型的卡共 2 张 / 您的配额为 2 张 A800), which a sentence
# with the phrase as a parameter could not give both.
QUOTA_ANY_CARD = ngettext_noop(
    "your quota is %(allowed)s card (any type)", "your quota is %(allowed)s cards (any type)"
)
QUOTA_OF_TYPE = ngettext_noop(
    "your quota is %(allowed)s %(card)s card", "your quota is %(allowed)s %(card)s cards"
)


@dataclass(frozen=True)
class Limit:
    card_type: str  # "": every card type, counted together
    max_cards: int | None  # None: no limit
    max_running_jobs: int | None


@dataclass
class Usage:
    """What one user's running local jobs hold."""

    cards: Counter[str] = field(default_factory=Counter)
    jobs: int = 0
    jobs_by_card: Counter[str] = field(default_factory=Counter)

    def add(self, cards: dict[str, int]) -> None:
        self.cards.update({card: n for card, n in cards.items() if n})
        self.jobs += 1
        self.jobs_by_card.update(card for card, n in cards.items() if n)


@dataclass(frozen=True)
class Excess:
    """One limit a job's start would go over."""

    card_type: str
    allowed: int
    held: int  # by the user's running local jobs now (and `starting`)
    asked: int  # by this job: cards, or 1 for a running-jobs limit
    jobs: bool  # a running-jobs limit, not a cards one
    # Of `held`, what the user's Queued jobs the scheduler's next pass starts will hold (a
    # standalone job's check counts them): told apart, as "your running jobs hold 4" was
    # untrue when two of the four cards were a queued job's about to start.
    starting: int = 0

    @property
    def never(self) -> bool:
        """The job alone goes over it: it cannot start however many of the user's jobs end."""
        return self.asked > self.allowed

    @property
    def card_label(self) -> str:
        """The card type as people name it (card_shown), or "cards of any type"."""
        return card_shown(self.card_type) if self.card_type else _(ANY_CARD)

    @property
    def quota_words(self) -> str:
        """ "your quota is 2 cards (any type)", in the reader's language."""
        singular, plural = QUOTA_OF_TYPE if self.card_type else QUOTA_ANY_CARD
        words = ngettext(singular, plural, self.allowed)
        return words % {"allowed": self.allowed, "card": card_shown(self.card_type)}

    def recorded_quota_words(self) -> RecordedText:
        """quota_words as a stored text records it (said again in each reader's language)."""
        messages = QUOTA_OF_TYPE if self.card_type else QUOTA_ANY_CARD
        # Recorded as shown, so the stored text and each reader's say the model (fix154).
        return recorded_plural(
            messages, "allowed", allowed=self.allowed, card=card_shown(self.card_type)
        )


def quota_limits(user: Any) -> list[Limit]:
    """The limits that apply to `user` (a user or their id), one per card type a quota row
    names (see above)."""
    return _limits_from(_quota_rows(user_id=getattr(user, "pk", user)))


def quota_limits_of(user_ids: Iterable[int]) -> dict[int, list[Limit]]:
    """quota_limits of each of `user_ids`, in at most two queries whatever their number (a
    page naming many owners' jobs): every quota row (a site has a handful), and which of
    the users are in the groups those rows name."""
    ids = set(user_ids)
    rows = list(
        CardQuota.objects.order_by().values_list(
            "card_type", "user_id", "group_id", "max_cards", "max_running_jobs"
        )
    )
    groups = {row[2] for row in rows if row[2] is not None}
    member_of: dict[int, set[int]] = {}
    if ids and groups:
        membership = get_user_model().groups.through.objects.filter(
            user_id__in=ids, group_id__in=groups
        )
        for user_id, group_id in membership.values_list("user_id", "group_id"):
            member_of.setdefault(user_id, set()).add(group_id)
    return {
        user_id: _limits_from(
            row
            for row in rows
            if row[1] == user_id
            or (row[1] is None and (row[2] is None or row[2] in member_of.get(user_id, ())))
        )
        for user_id in ids
    }


def _limits_from(rows: Iterable[tuple[Any, ...]]) -> list[Limit]:
    """The limits one user's quota rows (theirs, their groups', everyone's) make."""
    limits = []
    for card_type, in_force in sorted(_rows_in_force(rows).items()):
        limits.append(
            Limit(
                card_type,
                _most_generous(row[3] for row in in_force),
                _most_generous(row[4] for row in in_force),
            )
        )
    return limits


def _rows_in_force[Row: tuple[Any, ...]](rows: Iterable[Row]) -> dict[str, list[Row]]:
    """Per card type, which of one user's quota rows (card type, user id, group id, ...:
    their own, their groups' and everyone's) apply: their own row; else their groups' rows,
    whose most generous figures count; else the row for everyone."""
    own: dict[str, list[Row]] = {}
    groups: dict[str, list[Row]] = {}
    everyone: dict[str, list[Row]] = {}
    for row in rows:
        card_type, user_id, group_id = row[0], row[1], row[2]
        kind = own if user_id is not None else groups if group_id is not None else everyone
        kind.setdefault(card_type, []).append(row)
    return {
        card: own.get(card) or groups.get(card) or everyone[card]
        for card in {*own, *groups, *everyone}
    }


def _quota_rows(
    *, user_id: Any
) -> list[tuple[str, int | None, int | None, int | None, int | None]]:
    """(card type, user id, group id, max cards, max running jobs) of the quota rows for the
    user, their groups and everyone.

    One plain SELECT: the same rows as CardQuota.objects.filter(Q(user=user) |
    Q(group__user=user) | Q(user__isnull=True, group__isnull=True)), in no order (each card
    type has at most one row per user, group and everyone: quota_limits' result does not
    depend on it). Through the ORM, building and compiling that query (with the joins its
    default ordering by user and group name adds) cost ~0.4 ms of the review step, which asks
    it on every draw, and of every scheduling pass, per owner of a queued job."""
    alias = router.db_for_read(CardQuota)
    connection = connections[alias]
    quote = connection.ops.quote_name
    quota = CardQuota._meta
    membership = get_user_model().groups.through._meta

    def col(meta: Any, name: str) -> str:
        return quote(meta.get_field(name).column)

    user, group = col(quota, "user"), col(quota, "group")
    sql = (
        f"SELECT {col(quota, 'card_type')}, {user}, {group}, {col(quota, 'max_cards')}, "
        f"{col(quota, 'max_running_jobs')} FROM {quote(quota.db_table)} "
        f"WHERE {user} = %s OR ({user} IS NULL AND {group} IS NULL) OR {group} IN ("
        f"SELECT {col(membership, 'group')} FROM {quote(membership.db_table)} "
        f"WHERE {col(membership, 'user')} = %s)"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [user_id, user_id])
        return cursor.fetchall()


def _most_generous(values: Any) -> int | None:
    values = list(values)
    return None if None in values else max(values)


def local_usage(*, owner: Any = None) -> dict[int, Usage]:
    """Per owner id, what their running local jobs hold (only `owner`'s when given)."""
    runs = LocalRun.objects.filter(job__backend="local", job__status__in=ACTIVE_STATUSES)
    if owner is not None:
        runs = runs.filter(job__owner=owner)
    usage: dict[int, Usage] = {}
    for owner_id, devices in runs.values_list("job__owner_id", "devices"):
        held = {card: len(indices) for card, indices in (devices or {}).items()}
        usage.setdefault(owner_id, Usage()).add(held)
    return usage


def excesses(limits: list[Limit], usage: Usage, need: dict[str, int]) -> list[Excess]:
    """The limits a job needing `need` cards (per type) would go over if it started now."""
    found = []
    for limit in limits:
        card = limit.card_type
        asked = need.get(card, 0) if card else sum(need.values())
        if limit.max_cards is not None and asked:
            held = held_in(usage, card, jobs=False)
            if held + asked > limit.max_cards:
                found.append(Excess(card, limit.max_cards, held, asked, jobs=False))
        if limit.max_running_jobs is not None and (asked or not card):
            held = held_in(usage, card, jobs=True)
            if held + 1 > limit.max_running_jobs:
                found.append(Excess(card, limit.max_running_jobs, held, 1, jobs=True))
    return found


def held_in(usage: Usage, card: str, *, jobs: bool) -> int:
    """What `usage` counts against a limit on card type `card` ("": every type): its cards,
    or its jobs for a running-jobs limit."""
    if jobs:
        return usage.jobs_by_card[card] if card else usage.jobs
    return usage.cards[card] if card else sum(usage.cards.values())


def waiting_message(excess: Excess) -> RecordedText:
    """Why a Queued job is not started for its owner's quota, as its page and events say."""
    card = card_shown(excess.card_type) if excess.card_type else Term(ANY_CARD)
    if excess.jobs:
        return recorded_plural(
            ngettext_noop(
                "Waiting for your quota: you may run %(allowed)s local job at once "
                "(%(card)s), and you have %(held)s running. It starts by itself when one of "
                "yours ends.",
                "Waiting for your quota: you may run %(allowed)s local jobs at once "
                "(%(card)s), and you have %(held)s running. It starts by itself when one of "
                "yours ends.",
            ),
            "allowed",
            allowed=excess.allowed,
            card=card,
            held=excess.held,
        )
    if excess.never:
        return recorded(
            gettext_noop(
                "Waiting for your quota: %(quota)s and this job asks for %(asked)s, so it "
                "starts only if an administrator raises the quota."
            ),
            quota=excess.recorded_quota_words(),
            asked=excess.asked,
        )
    return recorded(
        gettext_noop(
            "Waiting for your quota: %(quota)s; your running jobs hold %(held)s and this job "
            "asks for %(asked)s. It starts by itself when your other jobs end."
        ),
        quota=excess.recorded_quota_words(),
        held=excess.held,
        asked=excess.asked,
    )


def never_allowed(limits: list[Limit], need: dict[str, int]) -> Excess | None:
    """The first limit a job needing `need` cards goes over by itself, whatever its owner's
    other jobs hold (Excess.never): such a job never starts until the quota is raised."""
    return next((e for e in excesses(limits, Usage(), need) if e.never), None)


def never_allowed_note(excess: Excess) -> str:
    """What a reviewer is told of a job its owner's quota never allows (qa98: approved, it
    waited for ever and nobody was warned), in the reader's language, with the figures."""
    if excess.jobs:
        return _(
            "Its owner's quota allows no running local job (%(card)s): approved, it waits "
            "until an administrator raises the quota."
        ) % {"card": excess.card_label}
    figures = {"allowed": excess.allowed, "card": excess.card_label, "asked": excess.asked}
    if excess.card_type:
        # The type after the number, as the quota's own words say it (QUOTA_OF_TYPE): in
        # brackets it read "2 cards (A800 80GB (baidu.com/…))" once named as shown (fix154).
        return (
            ngettext(
                "Its owner's quota allows %(allowed)d %(card)s card and this job asks for "
                "%(asked)d: approved, it waits until an administrator raises the quota.",
                "Its owner's quota allows %(allowed)d %(card)s cards and this job asks for "
                "%(asked)d: approved, it waits until an administrator raises the quota.",
                excess.allowed,
            )
            % figures
        )
    return (
        ngettext(
            "Its owner's quota allows %(allowed)d card (%(card)s) and this job asks for "
            "%(asked)d: approved, it waits until an administrator raises the quota.",
            "Its owner's quota allows %(allowed)d cards (%(card)s) and this job asks for "
            "%(asked)d: approved, it waits until an administrator raises the quota.",
            excess.allowed,
        )
        % figures
    )


def queued_never_allowed(*, quota: CardQuota) -> list[Job]:
    """The Queued local jobs of the users `quota` applies to that their quota, as it stands
    now, never allows (never_allowed), oldest first: a quota lowered under what they ask
    leaves them waiting until it is raised (qa98: its save said nothing of them)."""
    from .runner import requirement
    from .spec import SpecError

    jobs = Job.objects.filter(backend="local", status=JobStatus.QUEUED)
    if quota.user_id is not None:
        jobs = jobs.filter(owner_id=quota.user_id)
    elif quota.group_id is not None:
        jobs = jobs.filter(owner__groups=quota.group_id)
    queued = list(jobs.only("public_id", "name", "owner_id", "spec").order_by("created_at", "id"))
    limits = quota_limits_of(job.owner_id for job in queued)
    found = []
    for job in queued:
        try:
            need = requirement(job.job_spec())
        except SpecError:
            continue  # the scheduler fails it, saying why
        if never_allowed(limits[job.owner_id], need.cards):
            found.append(job)
    return found


def queued_under_quota(*, quota: CardQuota) -> int:
    """How many Queued local jobs of active users `quota` can hold: their owner's limit for
    the row's card type comes from it (as quota_limits decides: their own row, else their
    groups' rows, else the row for everyone) and the job is one a limit of the row applies
    to, as the scheduler judges it (excesses): its cards limit only a job asking for cards
    of its type (any type for a blank one; a CPU-only job is never held for cards), its
    running-jobs limit those too, or every job for a blank card type. What a save of it
    governs from the scheduler's next pass (qa114: a save said nothing of them unless it
    shut some out for good). Jobs awaiting review wait for a reviewer, not for the quota,
    and a deactivated owner's jobs never start: neither is counted (review67). Three
    queries whatever the number of jobs: the waiting jobs' owners and specs, the quota
    rows, and the owners' groups among those the rows name."""
    from .runner import requirement
    from .spec import SpecError

    waiting = Job.objects.filter(backend="local", status=JobStatus.QUEUED, owner__is_active=True)
    if quota.user_id is not None:
        waiting = waiting.filter(owner_id=quota.user_id)
    elif quota.group_id is not None:
        members = get_user_model().groups.through.objects.filter(group_id=quota.group_id)
        waiting = waiting.filter(owner_id__in=members.values("user_id"))
    card = quota.card_type
    held_by_row: Counter[int] = Counter()  # per owner, how many of their jobs the row can hold
    for owner_id, document in waiting.order_by().values_list("owner_id", "spec"):
        try:
            need = requirement(Job(spec=document).job_spec()).cards
        except SpecError:
            continue  # the scheduler fails it, saying why
        asked = need.get(card, 0) if card else sum(need.values())
        by_cards = quota.max_cards is not None and asked > 0
        by_jobs = quota.max_running_jobs is not None and (asked > 0 or not card)
        if by_cards or by_jobs:
            held_by_row[owner_id] += 1
    if not held_by_row:
        return 0
    rows = list(CardQuota.objects.order_by().values_list("card_type", "user_id", "group_id", "id"))
    named_groups = {row[2] for row in rows if row[2] is not None}
    member_of: dict[int, set[int]] = {}
    if named_groups:
        membership = get_user_model().groups.through.objects.filter(
            user_id__in=held_by_row, group_id__in=named_groups
        )
        for user_id, group_id in membership.values_list("user_id", "group_id"):
            member_of.setdefault(user_id, set()).add(group_id)
    under = 0
    for owner_id, jobs in held_by_row.items():
        theirs = [
            row
            for row in rows
            if row[1] == owner_id
            or (row[1] is None and (row[2] is None or row[2] in member_of.get(owner_id, ())))
        ]
        in_force = _rows_in_force(theirs).get(card, [])
        if any(row[3] == quota.pk for row in in_force):
            under += jobs
    return under


@dataclass(frozen=True)
class QuotaLine:
    """One line of the viewer's quota on the Resource pools page."""

    card_label: str
    max_cards: int | None
    cards_held: int
    max_running_jobs: int | None
    jobs_running: int

    @property
    def over(self) -> bool:
        """Whether the running jobs hold more than the limit: it was lowered (or the user
        moved to a group with a smaller one) after they started."""
        cards = self.max_cards is not None and self.cards_held > self.max_cards
        jobs = self.max_running_jobs is not None and self.jobs_running > self.max_running_jobs
        return cards or jobs


def over_quota_note(lines: list[QuotaLine]) -> str:
    """What "2 / 1" means beside a quota, in the reader's language; "" when no line is over.
    QA 63: a lead lowered a quota below what ran, and the pools page showed "2 / 1" with no
    word of what happens: nothing is stopped, and no new job of the user starts meanwhile."""
    if not any(line.over for line in lines):
        return ""
    return _(
        "Your running jobs hold more than your quota allows: it was changed after they "
        "started. They are left to run to the end, and no new job of yours under this quota "
        "starts until your use drops under the limit by enough for it to fit: a queue task "
        "waits, a standalone job is refused."
    )


def quota_lines(user: Any) -> list[QuotaLine]:
    """The user's quota on the local pool and what their running jobs hold of it."""
    limits = quota_limits(user)
    if not limits:
        return []
    usage = local_usage(owner=user).get(user.pk, Usage())
    return [
        QuotaLine(
            card_label=limit.card_type or _(ANY_CARD),
            max_cards=limit.max_cards,
            cards_held=(
                usage.cards[limit.card_type] if limit.card_type else sum(usage.cards.values())
            ),
            max_running_jobs=limit.max_running_jobs,
            jobs_running=(usage.jobs_by_card[limit.card_type] if limit.card_type else usage.jobs),
        )
        for limit in limits
    ]


@dataclass(frozen=True)
class HeldNow:
    """What one user's running local jobs hold against one quota row, now."""

    username: str
    cards: int
    jobs: int


def held_now_by_row() -> dict[int, list[HeldNow]]:
    """Per quota row id, the users whose limit for its card type comes from it (as
    quota_limits decides: their own row, else their groups' rows, else the row for everyone)
    and whose running local jobs hold something against it now, with what they hold: the
    admin's list of quotas shows a lead who uses what, as the scheduler counts it. Four
    queries however many rows and users: the running jobs are few (LOCAL_MAX_RUNNING_JOBS)."""
    usage = local_usage()
    if not usage:
        return {}
    user_model = get_user_model()
    names = dict(user_model.objects.filter(pk__in=usage).values_list("pk", "username"))
    groups_of: dict[int, set[int]] = {}
    memberships = user_model.groups.through.objects.filter(user_id__in=usage)
    for user_id, group_id in memberships.values_list("user_id", "group_id"):
        groups_of.setdefault(user_id, set()).add(group_id)
    rows = list(CardQuota.objects.values_list("card_type", "user_id", "group_id", "id"))
    found: dict[int, list[HeldNow]] = {}
    for user_id in sorted(usage, key=lambda pk: names.get(pk, "")):
        groups = groups_of.get(user_id, set())
        theirs = [
            row
            for row in rows
            if row[1] == user_id or row[2] in groups or (row[1] is None and row[2] is None)
        ]
        for card, in_force in _rows_in_force(theirs).items():
            held = HeldNow(
                names.get(user_id, ""),
                held_in(usage[user_id], card, jobs=False),
                held_in(usage[user_id], card, jobs=True),
            )
            if held.cards or held.jobs:
                for row in in_force:
                    found.setdefault(row[3], []).append(held)
    return found


def held_now_text(held: list[HeldNow]) -> str:
    """A quota row's users and what they hold now, as the admin's list of quotas says it."""
    if not held:
        return _("nothing running")
    return pgettext("between list items", "; ").join(
        _("%(user)s: %(cards)s, %(jobs)s")
        % {
            "user": h.username,
            "cards": ngettext("%(n)d card", "%(n)d cards", h.cards) % {"n": h.cards},
            "jobs": ngettext("%(n)d running job", "%(n)d running jobs", h.jobs) % {"n": h.jobs},
        }
        for h in held
    )
