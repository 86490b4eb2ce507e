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

from dataclasses import dataclass
from typing import Any

from .compare import asked_ids, looked_up
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


def selection_of(*, owner: Any, values: list[str]) -> Selection:
    """The selection an address carries, as `owner`'s jobs (one query, none when empty)."""
    ids, left_out = carried_ids(values)
    if not ids:
        return Selection(jobs=[], missing=0, left_out=left_out)
    found = {
        job.public_id: job
        for job in Job.objects.filter(owner=owner, public_id__in=ids)
        .select_related("group")
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
