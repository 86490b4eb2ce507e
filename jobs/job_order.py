"""The job list's order (`?sort=`), its column heads' links, and a job address pasted into its
search box.

Decisions:
- Four columns sort: 创建时间 (Created, newest first: the default, which the address leaves
  out), 名称 (Name), 状态 (Status) and 卡数 (Cards); `?sort=name` ascending, `?sort=-name`
  descending. A first click sorts a name or a status in ascending order and a date or a card
  count largest first (what people look for there), a second click on the same head reverses.
- A status sorts in the order of a job's life (待审核, 排队中, 提交中, 运行中, 停止中, then how it
  ended: 成功 first, 已驳回 last: STATUS_ORDER), not
  by its code or its translated name, which would put 已停止 before 运行中 in one language and
  not the other. A name holds lower-case letters, digits and "-" only (jobs.spec), so it sorts
  the same on SQLite and PostgreSQL.
- Every order ends on the job's id in the same direction: jobs of one name, status, card count
  or instant keep one order between two pages, so paging never shows a job twice or skips one.
- A value that is none of these (a typo, an old link, a hostile address) is the default
  order, said nowhere: the list is there as the address otherwise asks.
- Indexes: none added. At 3,000 jobs of one user among 6,000 each order's page took 25 to 32
  ms in the test client, the default's 25 (tests/test_job_list_order.py); at 15,000 jobs of one
  user the page's query sorted by name, status or cards takes 10 to 16 ms on SQLite, the
  default's 1 (read in order from the index by owner and creation). A card count or a status
  is not worth an index each, kept up on every write.
- A job page's address pasted into the search box opens that job's page, and so does a job's
  id alone that the search finds alone; another user's job reads as one that does not exist.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlencode, urlsplit

from django.db.models import Case, F, IntegerField, QuerySet, Value, When
from django.utils.translation import gettext_lazy

from .models import Job, JobStatus
from .spec import plain_typed

SORT_COLUMNS = ("created", "name", "status", "cards")
DEFAULT_SORT = "-created"
FIRST_DESCENDING = frozenset({"created", "cards"})
HEAD_NAMES = {
    "name": gettext_lazy("Name"),
    "status": gettext_lazy("Status"),
    "cards": gettext_lazy("Cards"),
    "created": gettext_lazy("Created"),
}
SORT_TITLES = {
    ("name", False): gettext_lazy("Sort by name, A to Z"),
    ("name", True): gettext_lazy("Sort by name, Z to A"),
    ("status", False): gettext_lazy("Sort by status, in the order of a job's life"),
    ("status", True): gettext_lazy("Sort by status, ended jobs first"),
    ("cards", False): gettext_lazy("Sort by cards, fewest first"),
    ("cards", True): gettext_lazy("Sort by cards, most first"),
    ("created", False): gettext_lazy("Sort by creation, oldest first"),
    ("created", True): gettext_lazy("Sort by creation, newest first"),
}
# A job's life: waiting, sent, running, stopping, then how it ended (well first).
STATUS_ORDER = (
    JobStatus.PENDING_REVIEW,
    JobStatus.QUEUED,
    JobStatus.SUBMITTING,
    JobStatus.RUNNING,
    JobStatus.STOPPING,
    JobStatus.SUCCEEDED,
    JobStatus.FAILED,
    JobStatus.TIMED_OUT,
    JobStatus.STOPPED,
    JobStatus.SUBMIT_FAILED,
    JobStatus.REJECTED,
)
STATUS_RANKS = {str(status): rank for rank, status in enumerate(STATUS_ORDER)}


@dataclass(frozen=True)
class Sort:
    column: str
    descending: bool

    @property
    def value(self) -> str:
        """As the address writes it (`-name`)."""
        return f"-{self.column}" if self.descending else self.column

    @property
    def is_default(self) -> bool:
        return self.value == DEFAULT_SORT


def sort_of(text: str | None) -> Sort:
    """The order a `?sort=` value asks for; the default for anything else."""
    text = (text or "").strip()
    column = text.removeprefix("-")
    if column not in SORT_COLUMNS:
        column, text = DEFAULT_SORT.removeprefix("-"), DEFAULT_SORT
    return Sort(column=column, descending=text.startswith("-"))


def _sorted_on(column: str) -> Any:
    if column == "status":
        return Case(
            *(When(status=status, then=Value(rank)) for status, rank in STATUS_RANKS.items()),
            default=Value(len(STATUS_RANKS)),
            output_field=IntegerField(),
        )
    return F({"created": "created_at", "name": "name", "cards": "total_cards"}[column])


def ordered(jobs: QuerySet[Job], *, sort: Sort) -> QuerySet[Job]:
    """`jobs` in `sort`'s order, ties broken on the id in the same direction (the default's,
    newest first, is the order the indexes by owner and creation hold them in)."""
    key = _sorted_on(sort.column)
    if sort.descending:
        return jobs.order_by(key.desc(), "-id")
    return jobs.order_by(key.asc(), "id")


@dataclass(frozen=True)
class SortHead:
    """A sortable column's head: its link (`href`, a query), its aria-sort, arrow and title."""

    column: str
    name: str
    href: str
    aria_sort: str  # "ascending", "descending" or "none"
    arrow: str  # "▲", "▼" or ""
    title: str


def sort_heads(*, sort: Sort, kept: list[tuple[str, str]]) -> dict[str, SortHead]:
    """Each sortable column's head, its link the list's address (`kept`: its filters and
    selection, without `page` or `sort`) in the order a click asks for, from page 1."""
    heads = {}
    for column in SORT_COLUMNS:
        if column == sort.column:
            wanted = Sort(column=column, descending=not sort.descending)
            aria_sort = "descending" if sort.descending else "ascending"
            arrow = "▼" if sort.descending else "▲"
        else:
            wanted = Sort(column=column, descending=column in FIRST_DESCENDING)
            aria_sort, arrow = "none", ""
        pairs = kept if wanted.is_default else [*kept, ("sort", wanted.value)]
        heads[column] = SortHead(
            column=column,
            name=str(HEAD_NAMES[column]),
            href=urlencode(pairs),
            aria_sort=aria_sort,
            arrow=arrow,
            title=str(SORT_TITLES[(column, wanted.descending)]),
        )
    return heads


# What a job's page address holds: `/jobs/<its id>/`, after the console's own path when it runs
# under a sub-path (`/console/jobs/<id>/logs/`), any host, query or fragment after.
JOB_ADDRESS = re.compile(r"(?:^|/)jobs/(?P<id>[^/?#\s]+)(?:[/?#]|$)")
JOB_ID = re.compile(r"[\w.\-]+", re.ASCII)


def job_address_id(text: str) -> str | None:
    """The job id in a search box's text when it is a job page's address (with or without its
    scheme and host, a trailing slash, a query or a fragment; pasted from a chat, so read as
    it shows: spec.plain_typed); None for any other text, searched for as it is."""
    plain = plain_typed(text)
    if "jobs/" not in plain or len(plain) > 4000:
        return None
    try:
        path = urlsplit(plain if "://" in plain or plain.startswith("/") else f"//{plain}").path
    except ValueError:  # no address after all: "http://[/jobs/x" (an IPv6 host unclosed)
        return None
    found = JOB_ADDRESS.search(path)
    if found is None:
        return None
    job_id = unquote(found["id"])
    return job_id if JOB_ID.fullmatch(job_id) else None


def addressed_job(*, viewer: Any, text: str) -> Job | None:
    """The viewer's own job whose page's address the search box's `text` is; None for any
    other text, and for another user's job, which reads as one that does not exist (the text
    is then searched for, finding nothing). One query, only for an address."""
    job_id = job_address_id(text)
    if job_id is None:
        return None
    return Job.objects.filter(owner=viewer, public_id=job_id).only("public_id").first()


def named_alone(*, jobs: list[Job], has_more: bool, text: str) -> Job | None:
    """The job a search found alone when its text is that job's id, the console's or its
    platform's (AIHC's, the Kubernetes object's), whole: that job's page is what was asked
    for. Read from the search's own page of rows (no query)."""
    plain = plain_typed(text)
    if has_more or len(jobs) != 1 or not plain:
        return None
    [job] = jobs
    return job if plain in (job.public_id, job.external_id) else None
