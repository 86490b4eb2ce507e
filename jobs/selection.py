"""The job list's selection (the jobs ticked for 对比 / Stop selected / Delete selected), carried
across the list's pages and filters in its address: `sel=<job id>`, repeated.

Decisions:
- In the address, not the session: a page of the list is still what its address says (a
  bookmark, a second tab, the back button show what they showed), and it works without
  JavaScript, each page link and the filter form carrying the selection the page was drawn
  with. A box ticked on this page reaches the links through console.js, or without
  JavaScript through 保留勾选 (*Keep ticks*), which posts the page's boxes and comes back.
- At most MAX_CARRIED ids: a job id is 40 to 50 characters, and gunicorn refuses a request
  line past 4,094 bytes, so more would make the next page a 400. Stop and Delete still take
  up to jobs.actions.MAX_SELECTED in one request (ticks on the page added to those carried).
- Only the viewer's own jobs are kept, in one query however many are carried; any other id
  (another user's, deleted, unknown, malformed) is dropped as one that no longer exists, so
  nothing of another user's shows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote_plus, urlencode

from .compare import asked_ids, looked_up
from .labels import SAFE_ADDRESS_LENGTH
from .models import Job

MAX_CARRIED = 50


@dataclass
class Selection:
    jobs: list[Job]  # the viewer's own, in the order carried
    missing: int  # ids carried that are no job of the viewer's (said, never named)
    left_out: int  # ids past MAX_CARRIED, dropped

    @property
    def ids(self) -> list[str]:
        return [job.public_id for job in self.jobs]


def carried_ids(values: list[str]) -> tuple[list[str], int]:
    """The ids a `sel` list may be: each once, in order, none that cannot be a job's, at most
    MAX_CARRIED; and how many were past it."""
    ids = looked_up(asked_ids(values))
    return ids[:MAX_CARRIED], max(len(ids) - MAX_CARRIED, 0)


def ids_fitting(ids: list[str], address: Callable[[list[str]], str]) -> tuple[list[str], int]:
    """The first of `ids` (as carried_ids keeps them) whose `address` stays within
    SAFE_ADDRESS_LENGTH, and how many were left out: a redirect's address is a request line
    too, and past gunicorn's 4,094 bytes the list would be a 400 (left27: 50 ids and a few long
    label filters passed it). Said by the caller, never dropped unsaid."""
    carried, left_out = carried_ids(ids)
    while carried and len(address(carried)) > SAFE_ADDRESS_LENGTH:
        carried.pop()
        left_out += 1
    return carried, left_out


def selection_of(*, owner: Any, values: list[str]) -> Selection:
    """The selection an address carries, as `owner`'s jobs (one query, none when empty)."""
    ids, left_out = carried_ids(values)
    if not ids:
        return Selection(jobs=[], missing=0, left_out=left_out)
    found = {
        job.public_id: job
        for job in Job.objects.filter(owner=owner, public_id__in=ids)
        .select_related("group")
        # Their envs too, for the task a queue task of one runs again (Job.task_place).
        .with_stored_envs()
        .only("public_id", "name", "group_index", "group__total")
    }
    return Selection(
        jobs=[found[i] for i in ids if i in found],
        missing=sum(1 for i in ids if i not in found),
        left_out=left_out,
    )


def merged_selection(*, carried: list[str], ticked: list[str], shown: list[str]) -> list[str]:
    """The selection after the list's form is sent: those carried from other pages, less the
    rows this page showed (their boxes say now), and the boxes ticked here."""
    on_this_page = set(shown)
    return asked_ids([i for i in carried if i not in on_this_page] + ticked)


@dataclass(frozen=True)
class TypedBox:
    """A box of the job list's filter form as the browser lets it be sent, JavaScript or not:
    at most `max_length` characters matching `pattern` (HTML's, checked before the form goes),
    which take at most `most_bytes` in its address."""

    max_length: int
    pattern: str
    most_bytes: int


# The filter form's typed boxes, each as long as the longest thing it can find and holding only
# the characters that can be in one (a name, a job or platform id, a queue, a label: ASCII
# letters, digits, "-", "_", "."; spaces, sent as "+"), each character one byte in the address
# but for one "/" (3 bytes, "%2F"; a search's "/" may be the full-width "／", 9) and a label's
# one "=" or ":" (3; the full-width "＝" or "：" of a Chinese input method, 9). So the longest address the form can send is known before anything is
# typed (form_carries_selection); a Chinese search or label, which nothing can match, would
# have taken 9 bytes a character.
TYPED_BOXES = {
    # A name, an id (the longest platform id, Job.external_id), a group's task as "name 2/3"; or
    # a job page's address pasted (jobs.job_order): any printable ASCII around "/jobs/", each
    # character but the four letters of "jobs" up to 3 bytes ("%3A"). Its host, a sub-path and
    # the id come first (85 characters on a console's own host), so one the box cuts (a long
    # ?back= query) still names its job.
    # Or an image's address or part of it (nvcr.io/nvidia/pytorch:24.01-py3, qa98): its "/",
    # ":" and "@" 3 bytes each, so 128 of them are the box's longest.
    "q": TypedBox(
        max_length=128,
        pattern=(
            r"[\w .\-]*([\/／][\w .\-]*)?|[\w.\-:@]+(\/[\w.\-:@]+)*"
            r"| *[\x21-\x7E]*\/jobs\/[\x21-\x7E]* *"
        ),
        most_bytes=128 * 3,
    ),
    "queue": TypedBox(max_length=64, pattern=r"[\w .\-]*", most_bytes=64),
    # A key of 317 characters (a 253-character prefix, "/", 63), "=", a value of 63.
    "label": TypedBox(
        max_length=317 + 1 + 63,
        pattern=r" *[\w.\-]*(\/[\w.\-]*)? *([=:＝：] *[\w.\-]* *)?",
        most_bytes=317 + 1 + 63 + 2 + 8,
    ),
}


def form_carries_selection(
    *,
    path: str,
    sent: list[tuple[str, str]],
    typed: dict[str, str],
    chosen: dict[str, list[str]],
    selection: list[str],
) -> bool:
    """Whether the job list's filter form (a GET to `path`) can carry `selection` whatever is
    typed or chosen in it, its address within SAFE_ADDRESS_LENGTH: with its hidden fields
    `sent` (the labels applied), each box of `typed` (name: what it is filled with, which the
    browser sends as it is even past the box's bound) at its longest, and each select of
    `chosen` (name: its values) at its longest value. Where it cannot, the form goes without
    the selection (console.js measures what is typed instead and keeps it when it fits)."""
    longest = len(path) + 1 + len(urlencode([*sent, *(("sel", i) for i in selection)]))
    for name, value in typed.items():
        box = TYPED_BOXES[name]
        longest += len(f"&{name}=") + max(box.most_bytes, len(quote_plus(value)))
    for name, values in chosen.items():
        longest += len(f"&{name}=") + max((len(quote_plus(v)) for v in values), default=0)
    return longest <= SAFE_ADDRESS_LENGTH
