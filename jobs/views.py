"""Job list and job pages: status, spec, replicas, events, logs, and the owner's actions.

Every job URL answers 404 for anyone but the job's owner. Live parts (list statuses, the
detail's status/replicas/resource usage/events/training metrics, the log tail) refresh by
htmx polling that stops (HTTP 286) once there is nothing left to change.
"""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any
from urllib.parse import urlencode, urlsplit

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count, F, Func, Q, QuerySet, Subquery
from django.db.models.fields.json import KeyTransform
from django.http import (
    FileResponse,
    Http404,
    HttpRequest,
    HttpResponse,
    QueryDict,
    StreamingHttpResponse,
)
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.utils.http import content_disposition_header
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext, pgettext
from django.views.decorators.http import require_safe
from django_htmx.http import HttpResponseClientRedirect, HttpResponseStopPolling, push_url

from . import job_users
from .actions import (
    DELETED_HERE_ONLY,
    GROUP_STOPPABLE,
    MAX_SELECTED,
    ActionError,
    Outcome,
    deleted_here_only,
    deletion_left_secret,
    group_stop,
    group_stoppable,
    job_delete,
    job_delete_looked_for,
    job_delete_only_stops,
    job_delete_refusal,
    job_delete_waits,
    job_rerun,
    job_stop,
    job_stoppable,
    job_submit_again,
    jobs_delete,
    jobs_stop,
    platform_unreachable,
    stop_look_at_ahead,
    stop_look_time,
    stop_look_time_ahead,
    stop_looked_for,
)
from .backends import BackendError, NoLog, aihc, get_backend, kubernetes, no_log_yet
from .backends.remote import console_time
from .compare import (
    MAX_ASKED,
    MAX_COMPARED,
    MIN_COMPARED,
    asked_ids,
    job_comparison,
    jobs_found,
    looked_up,
    own_jobs_oldest_first,
)
from .health import WORKER_STATUSES, worker_state, worker_state_for
from .http import AuthenticatedHttpRequest, post_only
from .job_order import Sort, addressed_job, named_alone, ordered, sort_heads, sort_of
from .labels import (
    MAX_LABEL_FILTERS,
    SAFE_ADDRESS_LENGTH,
    asked_labels,
    every_asked_label,
    label_chips,
    label_query,
    labelled,
)
from .logs import (
    SEARCH_CONTEXT,
    SEARCH_COUNT_SECONDS,
    SEARCH_MAX_CONTEXT,
    SEARCH_MAX_MATCHES,
    SEARCH_MAX_PATTERN,
    SEARCH_SECONDS,
    SEARCHES_PER_USER,
    SearchCursorError,
    SearchesBusy,
    SearchPatternError,
    download_unavailable_reason,
    downloaded_lines,
    job_secrets,
    log_cut,
    search_file,
    search_lines,
    search_pattern,
    search_slot,
    shown_lines,
)
from .models import (
    FINAL_STATUSES,
    DeletedJob,
    Job,
    JobGroup,
    JobLabel,
    JobStatus,
    LocalRun,
    ReplicaStatus,
    UsageRecord,
)
from .monitoring import USAGE_SHOWN, replica_usage, usage_unavailable
from .pools import pool_filter_choices, pool_labels, pool_names, used_pools
from .runner import (
    DELETE_WAITS_MESSAGE,
    NO_WORKER_DELETE_MESSAGE,
    NO_WORKER_STOP_MESSAGE,
    STOP_WAITS_MESSAGE,
    outbound_lost_notice,
)
from .runtime_env import group_task_of, shown_request_spec
from .scheduler import queue_position, why_waiting
from .selection import (
    MAX_CARRIED,
    TYPED_BOXES,
    carried_ids,
    form_carries_selection,
    ids_fitting,
    merged_selection,
    selection_of,
)
from .services import job_events_shown, label_suggestions, labels_in_another_case
from .spec import FRAMEWORK_LABELS, MPI, SpecError, invisible_trimmed, plain_typed, stored_labels
from .stacks import CAPTURES_KEPT, capture_requested, native_note, stack_groups, unread
from .summary import (
    aiak_words,
    environment_job_id,
    replica_environments,
    retention_words,
    sent_request,
)
from .tensorboard import training_metrics
from .texts import list_words
from .volume_access import mount_folders
from .wizard import (
    available_pools,
    console_api_request_note,
    mpi_hostfile_preview,
    roles_request_note,
)
from .worker import deletes_at, deletion_due, kept_for_alerts

logger = logging.getLogger(__name__)

PAGE_SIZE = 20
MAX_PAGE = 100_000  # 2 million jobs; a larger number is a typo, and would overflow SQLite
# Statuses whose reason the list shows under the badge (why it waits or why it ended badly).
EXPLAINED_STATUSES = frozenset(
    {
        JobStatus.PENDING_REVIEW,
        JobStatus.REJECTED,
        JobStatus.FAILED,
        JobStatus.SUBMIT_FAILED,
        JobStatus.TIMED_OUT,
    }
)
# Reasons the list shows whatever the job's status (by their message): a remote job waiting
# on a look for what its create made that the platform refuses, and one ended Stopped after an
# hour of them, whose create's job may run there still, to be looked for and stopped by hand.
LISTED_REASONS = frozenset(
    {
        # Queued until a create AIHC may still be working on has had its time (qa81: the
        # list said a bare Queued while the job page said until when).
        aihc.CREATE_SETTLING,
        aihc.CREATE_SETTLING_LAST,
        aihc.QUEUED_LOOK_REFUSED,
        aihc.SUBMITTING_LOOK_REFUSED,
        aihc.STOP_LOOKS_REFUSED_GIVEN_UP,
        kubernetes.QUEUED_LOOK_REFUSED,
        kubernetes.STOP_LOOKS_REFUSED_GIVEN_UP,
        # Queued while its operator cannot create its pods (fix98): a bare Queued says
        # nothing of a job that will wait for ever.
        kubernetes.PODS_NOT_CREATED,
    }
)


def reason_listed(source: dict[str, Any] | None) -> bool:
    """Whether the list shows the job's reason whatever its status: recorded from one of
    LISTED_REASONS, alone or as a part (a Submit retry's reason is AIHC's answer, then what
    comes next: texts.joined)."""
    if not isinstance(source, dict):
        return False
    if source.get("key") in LISTED_REASONS:
        return True
    parts = source.get("parts")
    return isinstance(parts, list) and any(
        isinstance(part, dict) and reason_listed(part.get("source")) for part in parts
    )


LOG_TAIL_LINES = 200
# A job with more replicas than this picks the log to show from a list, not a tab each: 64
# tabs wrapped into 6 rows on a laptop, more on a phone (left33). The list keeps a real
# address per replica: a plain GET form, with links to the previous and the next one.
LOG_TABS_MAX = 8
# What the job list's address may carry back after acting on selected jobs (its filters, page).
LIST_PARAMETERS = (
    "q",
    "status",
    "framework",
    "pool",
    "queue",
    "label",
    "created_from",
    "created_to",
    "sort",
    "page",
)

# A search of an AIHC or Kubernetes log reads this many of its last lines: the platform sends
# them in one answer, which the page waits for.
REMOTE_SEARCH_LINES = 10_000
# A filter longer than any name, id, pool or queue matches nothing; SQLite also refuses a
# LIKE pattern past 50,000 bytes ("pattern too complex", a 500), which this keeps well away.
MAX_FILTER_LENGTH = 200
# The creation dates the list can be filtered by (the date boxes' min and max): a year past
# them is a typo (20266, 0202), and a date near the ends of Python's would overflow once
# turned into an instant in another time zone.
FIRST_FILTER_DATE = date(1970, 1, 1)
LAST_FILTER_DATE = date(2999, 12, 31)
# What a date box sends (<input type="date">, an ISO date); typed by hand into an address,
# a year of any length is read, so that one out of range is said as such. ASCII digits only.
TYPED_DATE = re.compile(r"([0-9]+)-([0-9]{1,2})-([0-9]{1,2})")


def _filter_date(text: str) -> date:
    """The date a date box sent; a ValidationError saying what is wrong with any other text
    (quoting it, cut short: a date box cannot show text that is not a date, so the message
    keeps what was typed)."""
    shown = text if len(text) <= 32 else text[:31] + "…"
    typed = TYPED_DATE.fullmatch(text)
    # Four digits at most before reading the year: a thousand-digit one is out of range too,
    # and Python refuses to read one past 4,300 digits.
    if typed is not None and not (
        len(typed[1]) <= 4 and FIRST_FILTER_DATE.year <= int(typed[1]) <= LAST_FILTER_DATE.year
    ):
        raise forms.ValidationError(
            _("“%(value)s” is out of range: pick a date in the years %(first)d to %(last)d.")
            % {"value": shown, "first": FIRST_FILTER_DATE.year, "last": LAST_FILTER_DATE.year}
        )
    try:
        if typed is None:
            raise ValueError(text)
        return date(int(typed[1]), int(typed[2]), int(typed[3]))
    except ValueError:
        raise forms.ValidationError(
            _("“%(value)s” is not a date: pick one, or type it as YYYY-MM-DD.")
            % {"value": shown.replace("\x00", "")}
        ) from None


def _created_between(jobs: Any, *, first: date | None, last: date | None) -> Any:
    """`jobs` created from the start of day `first` to the end of day `last` (both included;
    either may be None), days in the user's time zone (jobs.time_zones; the console's
    TIME_ZONE if they chose none), as the list shows times: a range on created_at, which
    the index of jobs by owner and creation serves."""
    if first is not None:
        jobs = jobs.filter(
            created_at__gte=timezone.make_aware(datetime.combine(first, datetime.min.time()))
        )
    if last is not None:
        # Before the next day's start: the end of `last` however precise the stored times.
        after = datetime.combine(last + timedelta(days=1), datetime.min.time())
        jobs = jobs.filter(created_at__lt=timezone.make_aware(after))
    return jobs


GROUP_FILTER_ERROR = gettext_lazy(
    "A queue group is named by its number, as a task's page links it (?group=12): this "
    "filter is left out."
)


NO_SUCH_STATUS = gettext_lazy(
    "No job has the status “%(value)s”: the statuses are %(choices)s. This filter is left out."
)
NO_SUCH_FRAMEWORK = gettext_lazy(
    "No job has the framework “%(value)s”: the frameworks are %(choices)s. This filter is left out."
)


class JobFilterForm(forms.Form):
    q = forms.CharField(
        required=False, label=gettext_lazy("Name or ID"), max_length=MAX_FILTER_LENGTH
    )
    status = forms.ChoiceField(
        required=False, choices=[("", gettext_lazy("Any status")), *JobStatus.choices]
    )
    framework = forms.ChoiceField(
        required=False, choices=[("", gettext_lazy("Any framework")), *FRAMEWORK_LABELS.items()]
    )
    # A pool's id (what the address keeps), chosen by its name (pool_filter_choices); any
    # text is taken, as links from before the select sent it typed.
    pool = forms.CharField(
        required=False, label=gettext_lazy("Resource pool"), max_length=MAX_FILTER_LENGTH
    )
    queue = forms.CharField(
        required=False, label=gettext_lazy("Queue"), max_length=MAX_FILTER_LENGTH
    )
    # `key=value` or `key`, the `label=` a chip's link carries (the address keeps each label
    # asked for, all read by clean(): a Field, not a CharField, which would check the last
    # alone). Those no job can have are said so here and left out, the others applied.
    label = forms.Field(required=False, label=gettext_lazy("Label"))
    # Created on or after this day, and on or before that one (创建时间 from / to), each a day
    # in the user's time zone (_created_between); either may be empty.
    created_from = forms.CharField(required=False, label=gettext_lazy("Created from"))
    created_to = forms.CharField(required=False, label=gettext_lazy("Created to"))
    # A queue group's tasks (its number, the API's groupId): a task's page links them
    # (qa91: only the name search found them, and two groups of one name mixed).
    group = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=2**31 - 1,
        label=gettext_lazy("Queue group"),
        error_messages=dict.fromkeys(("invalid", "min_value", "max_value"), GROUP_FILTER_ERROR),
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # A status or framework the list has no choice for (an old link, `?status=bogus`) is
        # refused as every filter is, on its field and left out, in the console's words with
        # the values there are (qa101: Django's "Select a valid choice. bogus is not one of
        # the available choices.").
        for name, said in (
            ("status", NO_SUCH_STATUS),
            ("framework", NO_SUCH_FRAMEWORK),
        ):
            field = self.fields[name]
            asked = str(self.data.get(name, ""))[:40] if self.is_bound else ""
            offered = list_words(str(label) for value, label in field.choices if value)
            field.error_messages["invalid_choice"] = (
                str(said) % {"value": asked, "choices": offered}
            ).replace("%", "%%")

    # Pasted from a chat with a non-breaking or zero-width space, or typed with a Chinese
    # input method's full-width letters: read as it shows (a typed address; the page's own
    # form is made plain as it is typed, console.js).
    def clean_q(self) -> str:
        return plain_typed(self.cleaned_data["q"])

    def clean_queue(self) -> str:
        return plain_typed(self.cleaned_data["queue"])

    def clean_created_from(self) -> date | None:
        return (
            _filter_date(self.cleaned_data["created_from"])
            if self.cleaned_data["created_from"]
            else None
        )

    def clean_created_to(self) -> date | None:
        return (
            _filter_date(self.cleaned_data["created_to"])
            if self.cleaned_data["created_to"]
            else None
        )

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        first, last = data.get("created_from"), data.get("created_to")
        if first and last and last < first:
            # Said on the end date, which is then left out (the list goes from the start).
            self.add_error(
                "created_to",
                _(
                    "The end date %(last)s is before the start date %(first)s: pick one on or after it."
                )
                % {"first": first.isoformat(), "last": last.isoformat()},
            )
        data["labels"] = []
        # The first label refused, shown again in the field to correct (a NUL taken out).
        self.refused_label = ""
        key_max = JobLabel._meta.get_field("key").max_length or 0
        value_max = JobLabel._meta.get_field("value").max_length or 0
        for key, value in asked_labels(self.data) if isinstance(self.data, QueryDict) else []:
            text = label_query((key, value))
            if "\x00" in text:
                problem = _("A label cannot hold a NUL character.")
            elif len(key) > key_max or len(value or "") > value_max:
                problem = _(
                    "No job has %(label)s: a label's key is at most %(key)d characters and its "
                    "value at most %(value)d."
                ) % {
                    "key": key_max,
                    "value": value_max,
                    "label": text if len(text) <= 64 else text[:63] + "…",
                }
            else:
                data["labels"].append((key, value))
                continue
            self.add_error("label", problem)
            self.refused_label = self.refused_label or text.replace("\x00", "")
        return data


OLDER_LINK_ERROR = gettext_lazy(
    "This link to older matches does not point at a line of this log (the log may have "
    "changed since): search again for the newest matches."
)


class LogSearchForm(forms.Form):
    """The search box under a replica's log (which replica: the page's `replica` parameter;
    what a search does: jobs.logs.search_lines)."""

    q = forms.CharField(
        label=gettext_lazy("Search the log"), max_length=SEARCH_MAX_PATTERN, strip=False
    )
    regex = forms.BooleanField(required=False)
    case = forms.BooleanField(required=False)
    context = forms.IntegerField(
        required=False, min_value=0, max_value=SEARCH_MAX_CONTEXT, initial=SEARCH_CONTEXT
    )
    # Older matches: where in the log (a byte offset, a line's start) the search goes back
    # from, as the "Older matches" link gives it (jobs.logs.search_file's `before`).
    before = forms.IntegerField(
        required=False,
        min_value=1,
        error_messages={"invalid": OLDER_LINK_ERROR, "min_value": OLDER_LINK_ERROR},
    )

    def clean_q(self) -> str:
        # Text copied from a chat or a web page may end in a zero-width space, which no log
        # line holds there: nothing was found and the box showed nothing wrong (QA 47).
        q = invisible_trimmed(self.cleaned_data["q"])
        if not q:
            raise forms.ValidationError(self.fields["q"].error_messages["required"])
        return q

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if "q" in data:
            try:
                data["pattern"] = search_pattern(
                    data["q"], is_regex=data.get("regex", False), match_case=data.get("case", False)
                )
            except SearchPatternError as exc:
                self.add_error(
                    "q", _("This regular expression cannot be used: %(error)s.") % {"error": exc}
                )
        return data


# A queue group's task as the list shows it: its name, then which task it is ("qa-grp 2/3");
# a full-width slash (a Chinese input method's) as well.
GROUP_TASK_SEARCH = re.compile(r"^(?:(?P<name>.*?)\s+)?(?P<index>\d+)\s*[/／]\s*(?P<total>\d+)$")


def _search(text: str) -> Q:
    """What the list's search box finds: a job whose name, ID, platform ID or image holds the text,
    and a queue group's task by its text as the list shows it ("qa-grp 2/3", or "2/3" for that
    task of every group): the name before it held as above, the task's number and the group's
    size equal. Still one query over the user's own jobs (the group joined by its key)."""
    # The platform's own id too (AIHC names its jobs like ours): people copy either.
    # The image too, as the admin's search finds it (qa98).
    found = (
        Q(name__icontains=text)
        | Q(public_id__icontains=text)
        | Q(external_id__icontains=text)
        | Q(image__icontains=text)
    )
    task = GROUP_TASK_SEARCH.match(text.strip())
    if task is not None and len(task["index"]) <= 9 and len(task["total"]) <= 9:
        # A number past nine digits is no task's (and would overflow the database's integer).
        shown = Q(group_index=int(task["index"]), group__total=int(task["total"]))
        if task["name"]:
            shown &= Q(name__icontains=task["name"])
        found |= shown
    return found


def _owned_jobs(request: AuthenticatedHttpRequest, form: JobFilterForm, *, sort: Sort) -> Any:
    # A filter the form refused (a status from an old link, a NUL, a label no job can have) is
    # said so on its field; the others still apply (cleaned_data holds just the valid ones).
    form.is_valid()
    jobs = labelled(Job.objects.filter(owner=request.user), form.cleaned_data["labels"])
    data = {"q": "", "status": "", "framework": "", "pool": "", "queue": ""}
    data.update(form.cleaned_data)
    if data["q"]:
        jobs = jobs.filter(_search(data["q"]))
    if data["status"]:
        jobs = jobs.filter(status=data["status"])
    if data["framework"]:
        jobs = jobs.filter(framework=data["framework"])
    # Typed by hand: spaces and letter case do not matter ("Default" finds "default").
    if data["pool"].strip():
        jobs = jobs.filter(resource_pool__iexact=data["pool"].strip())
    if data["queue"].strip():
        jobs = jobs.filter(queue__iexact=data["queue"].strip())
    if data.get("group"):
        jobs = jobs.filter(group_id=data["group"])
    jobs = _created_between(jobs, first=data.get("created_from"), last=data.get("created_to"))
    return ordered(jobs, sort=sort)


def _group_filter(
    request: AuthenticatedHttpRequest, form: JobFilterForm, kept: list[tuple[str, str]]
) -> dict[str, str] | None:
    """The queue group the list is filtered by (`?group=`), shown above the jobs as a filter to
    clear: its name and size (one query, only then), the list's address without it, and why
    a value that names no group is left out. None when the list is not filtered by one."""
    without = urlencode([(name, value) for name, value in kept if name != "group"])
    if "group" in form.errors:
        asked = str(form.data.get("group", ""))[:20]
        return {"text": asked, "without": without, "error": form.errors["group"][0]}
    number = form.cleaned_data.get("group")
    if not number:
        return None
    group = (
        JobGroup.objects.filter(pk=number, owner=request.user)
        .only("name", "total")
        # Its tasks Stop the group would change, in the same query (group_stoppable's).
        .annotate(stoppable=Count("jobs", filter=Q(jobs__status__in=GROUP_STOPPABLE)))
        .first()
    )
    if group is None:  # another user's or gone: the list shows none of its tasks
        text = _("No. %(number)d") % {"number": number}
        return {"text": text, "without": without, "error": ""}
    text = ngettext("%(name)s (%(total)d task)", "%(name)s (%(total)d tasks)", group.total) % {
        "name": group.name,
        "total": group.total,
    }
    # Stop the group, offered while it has a task to stop.
    return {
        "text": text,
        "without": without,
        "error": "",
        "id": group.pk,
        "stoppable": group.stoppable,
        "stop_question": _group_stop_question(group.stoppable),
    }


# A queue group's progress, its tasks counted by status: the ended first, as one reads a
# sweep's ("5 succeeded, 1 failed, 2 running").
PROGRESS_ORDER = [
    JobStatus.SUCCEEDED,
    JobStatus.FAILED,
    JobStatus.TIMED_OUT,
    JobStatus.STOPPED,
    JobStatus.REJECTED,
    JobStatus.SUBMIT_FAILED,
    JobStatus.RUNNING,
    JobStatus.STOPPING,
    JobStatus.SUBMITTING,
    JobStatus.QUEUED,
    JobStatus.PENDING_REVIEW,
]


def group_progress(*, job: Job) -> dict[str, Any] | None:
    """A queue group's task's page: how many of its group's tasks are in each status (one
    aggregate query), the tasks deleted since, and the job list filtered to the group. None
    for a job of no group of 2 or more."""
    if job.group_id is None or job.group.total < 2:
        return None
    counts = dict(
        Job.objects.filter(group_id=job.group_id)
        .order_by()
        .values_list("status")
        .annotate(n=Count("id"))
        .values_list("status", "n")
    )
    shown = [
        _("%(status)s: %(count)d") % {"status": JobStatus(status).label, "count": counts[status]}
        for status in PROGRESS_ORDER
        if counts.get(status)
    ]
    # Stop the group's count, from the same counts: the tasks a Stop would change.
    stoppable = sum(n for status, n in counts.items() if status in GROUP_STOPPABLE)
    return {
        "counts": list_words(shown),
        "deleted": max(job.group.total - sum(counts.values()), 0),
        "total": job.group.total,
        "url": f"{reverse('job-list')}?{urlencode({'group': job.group_id})}",
        "stoppable": stoppable,
        "stop_question": _group_stop_question(stoppable),
    }


def _group_stop_question(count: int) -> str:
    return ngettext(
        "Stop this queue group's %(count)d unfinished task? One not started yet is stopped at "
        "once, a running one is ended; it cannot be resumed.",
        "Stop this queue group's %(count)d unfinished tasks? Those not started yet are stopped "
        "at once, the running ones are ended; they cannot be resumed.",
        count,
    ) % {"count": count}


def _group_task_page(request: HttpRequest) -> str:
    """The task whose page Stop the group was pressed on (its `job` field), "" for the list."""
    job = request.POST.get("job", "")
    return job if re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", job) else ""


def _group_back(request: HttpRequest, group_id: int) -> str:
    """Where Stop the group returns: the task's page it was pressed on, or the job list
    filtered by the group (a local path either way: it may be a log-in's `next`)."""
    if job := _group_task_page(request):
        return reverse("job-detail", args=[job])
    return f"{reverse('job-list')}?{urlencode({'group': group_id})}"


@post_only(
    lambda group_id: f"{reverse('job-list')}?{urlencode({'group': group_id})}",
    form_page=_group_back,
)
@login_required
def group_stop_view(request: AuthenticatedHttpRequest, group_id: int) -> HttpResponse:
    """Stop the group (a task's page, the list filtered by its group): every unfinished task of
    the user's queue group at once (jobs.actions.group_stop); first asked, by the browser, or
    without JavaScript on a page of its own naming how many. Another user's group is one that
    does not exist (404)."""
    group = get_object_or_404(JobGroup, pk=group_id, owner=request.user)
    back = _group_back(request, group_id)
    if request.POST.get("confirmed") != "1":
        count = group_stoppable(group).count()
        context = {
            "group": group,
            "count": count,
            "question": _group_stop_question(count),
            "job": _group_task_page(request),
            "back": back,
        }
        return render(request, "jobs/group_stop_confirm.html", context)
    stopped = group_stop(group=group, actor=request.user)
    if not stopped.stopped and not stopped.outcomes:
        messages.info(
            request, _("Nothing to stop: every task of this group has ended or is stopping.")
        )
        return redirect(back)
    # Said as Stop selected says it; the tasks stopped at once as stopped jobs.
    at_once = [
        Outcome(job=Job(public_id=public_id, status=JobStatus.STOPPED), done=True)
        for public_id in stopped.stopped
    ]
    _say_stopped(request, [*at_once, *stopped.outcomes], 0)
    return redirect(back)


def _filters_said(form: JobFilterForm, *, pool: str, labels: list[str], group: str = "") -> str:
    """筛选's summary while the filters are folded (a phone): "筛选（状态：排队中；名称或 ID：abc）".
    A filtered list folds them as an unfiltered one does, so that the jobs are on the first
    screen (qa85: after 停止所选 from a filtered list the page opened on a 1,300-pixel box of
    filters and no job), and the summary says what filters the list."""
    data = form.cleaned_data
    said: list[tuple[str, str]] = []

    def choice(name: str) -> str:
        return str(dict(form.fields[name].choices).get(data.get(name), data.get(name)))  # type: ignore[attr-defined]

    if str(data.get("q") or "").strip():
        said.append((_("Name or ID"), data["q"].strip()))
    if data.get("status"):
        said.append((_("Status"), choice("status")))
    if data.get("framework"):
        said.append((_("Framework"), choice("framework")))
    if str(data.get("pool") or "").strip():
        said.append((_("Resource pool"), pool or data["pool"].strip()))
    if str(data.get("queue") or "").strip():
        said.append((_("Queue"), data["queue"].strip()))
    for name, label in (("created_from", _("Created from")), ("created_to", _("Created to"))):
        if data.get(name):
            said.append((label, data[name].isoformat()))
    if group:
        said.append((_("Queue group"), group))
    said += [(_("Label"), text) for text in labels]
    if not said:
        return _("Filters")
    each = [_("%(filter)s: %(value)s") % {"filter": f, "value": v} for f, v in said]
    return _("Filters (%(filters)s)") % {
        "filters": pgettext("between the filters in use", "; ").join(each)
    }


@require_safe
@login_required
def job_list(request: AuthenticatedHttpRequest) -> HttpResponse:
    # A refresh (every 3 s while a job is live) redraws the table alone; a column head's link
    # (htmx's boost) asks for the whole page, of which the list's region is swapped.
    poll = bool(request.htmx) and not request.htmx.boosted
    # A job page's address pasted into the search box opens that job's page when it is one of
    # the user's own; another user's reads as no job: searched for, finding nothing.
    addressed = None if poll else addressed_job(viewer=request.user, text=request.GET.get("q", ""))
    if addressed is not None:
        return _to_job_page(request, addressed)
    form = JobFilterForm(request.GET)
    sort = sort_of(request.GET.get("sort"))
    # A queue group's tasks share a name: each row says which task it is ("2/3").
    jobs = (
        _owned_jobs(request, form, sort=sort)
        .select_related("group")
        # The rows' labels from their specs, in the same query (no more whatever their number),
        # without reading the rest of each spec.
        .annotate(label_items=KeyTransform("labels", "spec"))
        # And their envs, for the task a queue task of one runs as (pinned_task).
        .with_stored_envs()
        .only(
            "public_id",
            "name",
            "status",
            "status_reason",
            "status_reason_source",
            "framework",
            "resource_pool",
            "queue",
            "total_cards",
            "created_at",
            "started_at",
            "finished_at",
            "group_index",
            "group__total",
            "external_id",
        )
    )
    page = ListPage.of(jobs, request.GET.get("page"), counted=True)
    if page.past_end and not poll:
        # A page after the last (its jobs deleted meanwhile, ?page=99 typed, Delete returning
        # to the page it came from) opens the last page there is, as Django's get_page does,
        # at its own address: until qa91 it said "Page 99 of 5" above no jobs. A refresh stays
        # (it says the page has no jobs, linking the last): what is on screen is not swapped
        # for another page's jobs under the reader's eyes.
        return redirect(_list_page_address(request, page.page_count or 1))
    # A job's id alone (the console's or the platform's) that the search finds alone: its page.
    if not poll and page.number == 1 and form.cleaned_data.get("q"):
        found = named_alone(
            jobs=page.object_list, has_more=page.has_next, text=form.cleaned_data["q"]
        )
        if found is not None:
            return _to_job_page(request, found)
    live = any(job.status not in FINAL_STATUSES for job in page.object_list)
    # Each row's pool by its name (the filter's label), its id in the title; any other by
    # its last known name (pool_labels: marked no longer offered), or else its id. The whole
    # page reads the pools once, for the filter's select too, and the last known names with
    # the pools the user's jobs are in (used_pools: the rows' are among them); the table's
    # refresh takes the names alone (pool_names: no query), and reads the last known names
    # (one query) only when a row's pool is not among them: a pool no longer offered, or one
    # of an AIHC this server process has not read yet.
    pools = None if poll else available_pools()
    used = None if poll else used_pools(owner=request.user)
    labels = pool_labels(
        names={p.id: p.name for p in pools} if pools is not None else pool_names(),
        pool_ids={job.resource_pool for job in page.object_list},
        known=used,
    )
    # The jobs ticked on this page and others (jobs.selection): kept on every link and form
    # of the page, so paging and filtering keep them; one query however many, none when none.
    selection = selection_of(owner=request.user, values=request.GET.getlist("sel"))
    query = request.GET.copy()
    query.pop("page", None)
    query.pop("sel", None)
    # The order as it is applied: the default (or a value that is no order) is not written.
    query.pop("sort", None)
    if not sort.is_default:
        query["sort"] = sort.value
    # The labels as they are applied (each once, at most MAX_LABEL_FILTERS, written key=value):
    # each label's "×" then finds its own in the address (" project = llm" was never removed),
    # and an address asking for hundreds is not copied into every link of the page.
    every_label = every_asked_label(request.GET)
    # Applied: the first MAX_LABEL_FILTERS asked, less those no job can have (JobFilterForm
    # says those on its field, where they are shown again to correct).
    asked = form.cleaned_data["labels"]
    query.setlist("label", [label_query(pair) for pair in asked])
    # The refresh leaves the selection out: its boxes keep what the user ticked (hx-preserve).
    poll_query = query.urlencode()
    query.setlist("sel", selection.ids)
    # A label clicked in a row is added to the list's filters (page 1: the matches change),
    # the selection kept with them (console.js brings its links up to date with the boxes).
    kept = [(name, value) for name, values in query.lists() for value in values if value]
    for job in page.object_list:
        label = labels.get(job.resource_pool)
        job.pool_label = label.text if label else ""
        job.reason_listed = reason_listed(job.status_reason_source)
        job.label_chips = label_chips(
            stored_labels({"labels": job.label_items}), kept, path=request.path
        )
    context = {
        "form": form,
        "page": page,
        # An empty page then means no job matches, not that there is none.
        "filtered": bool(asked)
        or "label" in form.errors
        or any(
            str(form.cleaned_data.get(name, "")).strip()
            for name in ("q", "status", "framework", "pool", "queue")
        )
        or any(form.cleaned_data.get(name) for name in ("created_from", "created_to", "group"))
        or "group" in form.errors,
        # The labels filtered by, each with the list's address without it.
        "label_filters": [
            (
                label_query(pair),
                urlencode(
                    [(n, v) for n, v in kept if not (n == "label" and v == label_query(pair))]
                ),
            )
            for pair in asked
        ],
        "max_label_filters": MAX_LABEL_FILTERS,
        "labels_cut": len(every_label) > MAX_LABEL_FILTERS,
        "live": live,
        "query": query.urlencode(),
        "poll_query": poll_query,
        "selection_query": urlencode([("sel", public_id) for public_id in selection.ids]),
        "selection": selection,
        "compare_min": MIN_COMPARED,
        "compare_max": MAX_COMPARED,
        "max_carried": MAX_CARRIED,
        # A label's link too long to carry the selection leaves it out (labels.label_chips):
        # the bar says the ticks are not lost.
        "selection_links_short": any(
            chip.selection_left_out for job in page.object_list for chip in job.label_chips
        ),
        "safe_address_length": SAFE_ADDRESS_LENGTH,
        "explained": EXPLAINED_STATUSES,
        "selected": set(selection.ids),
        # Stop / Delete selected come back to this list as it was (filters and page); the
        # selection goes in the form itself.
        "back": _list_query(request.GET.urlencode()),
    }
    # A label filter that found nothing, where the user's jobs have that label in another case
    # (LR=3e-4 typed, lr=3e-4 held): said with a link to the list asking for theirs instead.
    if asked and page.number == 1 and not page.object_list:
        context["labels_in_another_case"] = [
            (
                label_query(pair),
                label_query(held),
                urlencode(
                    [
                        (n, label_query(held) if n == "label" and v == label_query(pair) else v)
                        for n, v in kept
                    ]
                ),
            )
            for pair, held in labels_in_another_case(owner=request.user, asked=asked).items()
        ]
    # The worker's banner: for a user with jobs waiting on it, and for staff (one query).
    worker, waiting_on_worker = worker_state_for(user=request.user)
    if (not worker.running and (waiting_on_worker or request.user.is_staff)) or (
        request.user.is_staff and (worker.problem or worker.remote_problem)
    ):
        context["worker"] = worker
    # Each sortable column's head links to the list in its order, the filters and the
    # selection kept, from page 1.
    context["sort_value"] = "" if sort.is_default else sort.value
    context["sort_heads"] = sort_heads(
        sort=sort, kept=[(name, value) for name, value in kept if name != "sort"]
    )
    if poll:
        # The table, and the banner's slot swapped out of band with it, so the banner comes
        # and goes as the table refreshes (a reload, without JavaScript, shows it too).
        table = render_to_string("jobs/job_list.html#job-table", context, request=request)
        slot = render_to_string(
            "jobs/job_list.html#worker-slot", {**context, "oob": True}, request=request
        )
        if not live:
            return HttpResponseStopPolling(table + slot)
        return HttpResponse(table + slot)
    # The pool filter's select (the whole page only: a poll swaps just the table): the pools
    # offered now, and those the user's own jobs are in that are not (read above). The list
    # shows only the user's jobs, staff's too, so other users' pools would match nothing.
    # The label field's suggestions: the user's own labels (one query, never another user's).
    context["label_suggestions"] = label_suggestions(owner=request.user)
    context["pool_choices"], context["pool_selected"] = pool_filter_choices(
        pools=pools or [],
        chosen=form.cleaned_data.get("pool", ""),
        used=used,
    )
    context["group_filter"] = _group_filter(request, form, kept)
    context["filters_said"] = _filters_said(
        form,
        pool=str(dict(context["pool_choices"]).get(context["pool_selected"], "")),
        labels=[text for text, _without in context["label_filters"]],
        group=context["group_filter"]["text"] if context["group_filter"] else "",
    )
    # The filter form carries the selection unless something typed in it could then make an
    # address gunicorn refuses (a long label with 50 jobs ticked and long labels applied): it
    # goes without it then, and the bar says so, as a label's link does.
    context["filters_leave_out_selection"] = bool(selection.ids) and not form_carries_selection(
        path=request.path,
        sent=[("label", text) for text, _without in context["label_filters"]]
        + ([("sort", sort.value)] if not sort.is_default else []),
        typed={
            "q": str(form["q"].value() or ""),
            "queue": str(form["queue"].value() or ""),
            "label": form.refused_label,
        },
        chosen={
            "status": ["", *JobStatus.values],
            "framework": ["", *FRAMEWORK_LABELS],
            "pool": [v for v, _label in context["pool_choices"]],
            # A date box sends a date within its min and max or nothing (a browser clears one
            # it was given that is not a date, and will not send one out of range).
            "created_from": [LAST_FILTER_DATE.isoformat()],
            "created_to": [LAST_FILTER_DATE.isoformat()],
        },
        selection=selection.ids,
    )
    context["typed_boxes"] = TYPED_BOXES
    context["filter_dates"] = (FIRST_FILTER_DATE.isoformat(), LAST_FILTER_DATE.isoformat())
    context["time_zone"] = timezone.get_current_timezone_name()
    return render(request, "jobs/job_list.html", context)


def _to_job_page(request: AuthenticatedHttpRequest, job: Job) -> HttpResponse:
    """The job list's answer to a search that names `job`: its page (htmx, from a column
    head's link, is told to open it whole rather than swap it into the list)."""
    page_url = reverse("job-detail", args=[job.public_id])
    return HttpResponseClientRedirect(page_url) if request.htmx else redirect(page_url)


def _list_page_address(request: HttpRequest, number: int) -> str:
    """The list's address as asked, filters, order and selection kept, at page `number`."""
    query = request.GET.copy()
    query.pop("page", None)
    if number > 1:
        query["page"] = str(number)
    return f"{request.path}?{query.urlencode()}" if query else request.path


@dataclass
class ListPage:
    """One page of a list (jobs, drafts), and how many pages there are when it was counted.

    The list reads one row past the page to know whether a next page exists. The job list
    also counts its jobs (for its page count and its last page's link) in the same query, a
    subquery its rows carry: read from an index of the user's jobs, it costs no query more
    (test_job_list_order checks its page is read so at 3,000 jobs of a user).
    """

    number: int
    object_list: list[Any]
    has_next: bool
    total: int | None = None  # every item of the list, when counted

    @staticmethod
    def number_of(number: str | None) -> int:
        """The page a `?page=` value asks for: 1 for anything but a number, within 1..MAX_PAGE."""
        try:
            return min(max(int(number or 1), 1), MAX_PAGE)
        except ValueError:
            return 1

    @classmethod
    def of(cls, items: QuerySet, number: str | None, *, counted: bool = False) -> ListPage:
        page = cls.number_of(number)
        start = (page - 1) * PAGE_SIZE
        plain = items
        if counted:
            every = Subquery(items.order_by().values(n=Func(F("pk"), function="COUNT")))
            items = items.annotate(list_total=every)
        rows = list(items[start : start + PAGE_SIZE + 1])
        total = rows[0].list_total if counted and rows else None
        if counted and not rows and page > 1:
            # Past the end (its jobs deleted meanwhile, or ?page=999 typed): no row carries the
            # count, so it is asked for, on this path only. Until left45 such a page said no
            # page count and linked only the first page.
            total = plain.count()
        return cls(
            number=page,
            object_list=rows[:PAGE_SIZE],
            has_next=len(rows) > PAGE_SIZE,
            total=total,
        )

    @property
    def page_count(self) -> int | None:
        """How many pages the list has (None when not counted); at most MAX_PAGE."""
        if self.total is None:
            return None
        return min(max(-(-self.total // PAGE_SIZE), 1), MAX_PAGE)

    @property
    def has_previous(self) -> bool:
        return self.number > 1

    @property
    def past_end(self) -> bool:
        """A counted page after the list's last (shown as "Page 999 of 150")."""
        return self.page_count is not None and self.number > self.page_count

    @property
    def previous_page_number(self) -> int:
        # Past the end the page before is the last one there is, not an empty one too.
        return self.page_count if self.past_end and self.page_count else self.number - 1

    @property
    def next_page_number(self) -> int:
        return self.number + 1


def _job(request: AuthenticatedHttpRequest, public_id: str) -> Job:
    if "\x00" in public_id:  # never in a job id, and PostgreSQL refuses it in a query
        raise Http404
    return get_object_or_404(Job, public_id=public_id, owner=request.user)


def runs_as(*, job: Job) -> dict[str, int] | None:
    """{"uid", "gid"} the replicas of a local job's current (or last) attempt were started as,
    as the runner recorded it (LocalRun.run_uid, jobs.job_users); None for a job that has not
    run, ran before the record was kept (0025), or ran as root with LOCAL_JOB_UID_BASE unset.
    Decision: the record, not today's LOCAL_JOB_UID_BASE: a job started before the setting was
    set or changed ran as another uid (or the worker's), and nothing is shown rather than a
    guess. Since session 19 an attempt run as the worker's own user records that user too:
    uid 0 under a root worker without the setting (the default set-up) would be said on every
    job, where it tells nothing, so it is not; with the setting on it is (that attempt ran as
    root, not as its owner's uid, and the files it wrote are root's), as is a worker's own
    uid other than root's (whose files its jobs' files on a volume are)."""
    if job.backend != "local":
        return None
    run = LocalRun.objects.filter(job=job).values("run_uid", "run_gid").first()
    if run is None or run["run_uid"] is None or run["run_gid"] is None:
        return None
    if run["run_uid"] == 0 and not job_users.enabled():
        return None
    return {"uid": run["run_uid"], "gid": run["run_gid"]}


LOG_SCALE = "log"  # ?scale=log: the training metrics' charts on a log Y axis


def _log_scale(query: QueryDict) -> bool:
    return query.get("scale") == LOG_SCALE


def _scale_urls(path: str, query: QueryDict, fragment: str) -> dict[str, str]:
    """The page's address with its charts on each Y scale ("linear", "log"), its other
    parameters (a log's replica and search, a comparison's jobs) kept as they are."""
    urls = {}
    for scale in ("linear", LOG_SCALE):
        kept = query.copy()
        kept.pop("scale", None)
        if scale == LOG_SCALE:
            kept["scale"] = LOG_SCALE
        encoded = kept.urlencode()
        urls[scale] = f"{path}?{encoded}{fragment}" if encoded else f"{path}{fragment}"
    return urls


def _metrics_scale(request: AuthenticatedHttpRequest, job: Job) -> dict[str, Any]:
    """The job page's chart scale, asked by the page (`scale`) or by its refresh, which carries
    it; and the switch's links, built from the page's own address: a refresh (htmx) sends it as
    HX-Current-URL, whose query is kept only when it is this job's page."""
    page = reverse("job-detail", args=[job.public_id])
    query = request.GET
    if request.htmx:
        current = urlsplit(request.htmx.current_url_abs_path or "")
        query = QueryDict(current.query) if current.path == page else QueryDict()
    return {
        "log_scale": _log_scale(request.GET),
        "scale_urls": _scale_urls(page, query, "#metrics"),
    }


def _page_query(request: AuthenticatedHttpRequest, job: Job) -> QueryDict:
    """The job page's own query: the request's, or for its refresh (htmx) HX-Current-URL's
    when that is this job's page."""
    if not request.htmx:
        return request.GET
    current = urlsplit(request.htmx.current_url_abs_path or "")
    page = reverse("job-detail", args=[job.public_id])
    return QueryDict(current.query) if current.path == page else QueryDict()


def _usage_every(request: AuthenticatedHttpRequest, job: Job) -> dict[str, Any]:
    """Whether the page shows every running replica's usage (`?usage=all`), which its refresh
    keeps, and the link that asks for it, the page's other parameters kept."""
    query = _page_query(request, job)
    kept = query.copy()
    kept["usage"] = "all"
    page = reverse("job-detail", args=[job.public_id])
    return {
        "usage_every": query.get("usage") == "all",
        "usage_all_url": f"{page}?{kept.urlencode()}#usage-heading",
    }


def _shown_for_usage(replicas: list[Any], *, every: bool) -> tuple[list[Any], int]:
    """The replicas whose usage is read (the first USAGE_SHOWN running ones, unless `every`;
    the others are not running, whose usage is not shown anyway), and how many running ones
    are left out."""
    running = [r.pk for r in replicas if r.status == ReplicaStatus.RUNNING]
    if every or len(running) <= USAGE_SHOWN:
        return replicas, 0
    left_out = set(running[USAGE_SHOWN:])
    return [r for r in replicas if r.pk not in left_out], len(left_out)


def _live_context(job: Job, *, log: bool = False, every_usage: bool = False) -> dict[str, Any]:
    replicas = _in_replica_order(list(job.replicas.all()))
    usage_read, usage_hidden = _shown_for_usage(replicas, every=every_usage)
    events, events_hidden = job_events_shown(job=job)
    # Whether the worker that moves this job on runs: a banner when it does not.
    worker = worker_state() if job.status in WORKER_STATUSES else None
    return {
        "job": job,
        "worker": worker if worker is not None and not worker.running else None,
        "replicas": replicas,
        # CPU 独占 on the local pool: the cores each replica is pinned to get a column of their
        # own (recorded at its start), so the exclusivity asked for is seen, not only inside.
        "cpus_pinned": job.backend == "local"
        and isinstance(job.spec, dict)
        and bool((job.spec.get("console") or {}).get("cpuExclusive")),
        # The host user its replicas run as (LOCAL_JOB_UID_BASE; None: the worker's own).
        "runs_as": runs_as(job=job),
        # What each running replica uses (None: no section).
        "usage": replica_usage(job=job, replicas=usage_read),
        # Running replicas whose usage is left out (USAGE_SHOWN; a link asks for them all).
        "usage_hidden": usage_hidden,
        # Why an AIHC job's usage is missing or not up to date (None: nothing to say).
        "usage_unavailable": usage_unavailable(job),
        # Its training curves (TensorBoard on; None: no section), refreshed with the rest.
        "metrics": training_metrics(job=job, log=log),
        # The newest events (services.EVENTS_SHOWN), and how many earlier ones are not shown.
        "events": events,
        "events_hidden": events_hidden,
        "position": queue_position(job),
        # What a Queued local job waits for now (its quota, disk space, its turn), as the
        # scheduler last said: refreshed with the rest of this block while the page polls.
        "waiting": why_waiting(job, worker=worker),
        # Its outbound network ended this attempt (OutboundLost): said at the top as well while
        # it runs, not only at the end of its events.
        "network_lost": outbound_lost_notice(job=job),
        # Its platform when that is not configured on this console: nothing follows the job,
        # and its card-hours count until staff mark it as lost (qa114). Only while it runs or
        # stops: one not started holds no cards, and its Stop ends it at once (review64).
        "platform_unreachable": platform_unreachable(job)
        if job.status in (JobStatus.RUNNING, JobStatus.STOPPING)
        else "",
        "final": job.is_final,
        # What its Delete asks: stop and keep it, or that it is not deleted yet, for a job
        # whose create got no clear answer (_delete_question).
        "delete_question": _delete_question(job),
        # And its Stop: withdrawn from review unsent, or, held for review after its last
        # submission was given up on refused looks, looked for on its platform (left51).
        "stop_question": _stop_question(job),
        # When the worker deletes it for its retention (任务退出后自动删除): said on the page,
        # so nobody is surprised when its logs are gone.
        "deletes_at": deletes_at(job=job),
        # That time passed, the job not deleted yet (no worker has got to it): said so.
        "deletion_due": deletion_due(job=job),
        # Past that time while an alert about it is still to be delivered, the worker keeps it
        # (jobs_with_alerts_pending): said so, not a deletion time already passed (qa59).
        "kept_for_alerts": kept_for_alerts(job=job),
        "retention": retention_words(str(job.spec.get("retentionPeriod", "")))
        if isinstance(job.spec, dict)
        else "",
        "copy_url": reverse("job-copy", args=[job.public_id]),
        # Capture stacks (Hang analysis): sent with the rest, so it comes and goes with Running.
        "hang_can_capture": _hang_can_capture(job),
        # Run again's one-time key: the same click sent twice makes one job.
        "request_key": uuid.uuid4().hex,
    }


def _log_label(replicas: list[Any], label: str) -> tuple[list[str], str]:
    """The replicas' log labels ("worker-0"), and the one asked for; else the one that failed
    first (as the job's reason names it: jobs.runner), whose log has why (QA 44: a job whose
    worker-1 failed opened on master-0's log, torn down with it), or the first."""
    labels = [f"{r.role}-{r.index}" for r in replicas]
    if label not in labels:
        failed = [r for r in replicas if r.status in ("failed", "lost")]
        # Stable: a failure without an end (a fault keyword seen live) after those with one.
        failed.sort(key=lambda r: r.finished_at or datetime.max.replace(tzinfo=UTC))
        label = f"{failed[0].role}-{failed[0].index}" if failed else (labels or [""])[0]
    return labels, label


def _in_replica_order(replicas: list[Any]) -> list[Any]:
    """The replicas by role, each role's by index: a remote platform's rows are made in the
    order its pods are first listed, by name on Kubernetes (worker-1, worker-10, worker-11,
    worker-2), and the replica table, a big job's log list and its Next went so (review38).
    Roles keep the order they first come in."""
    first: dict[str, int] = {}
    for position, replica in enumerate(replicas):
        first.setdefault(replica.role, position)
    return sorted(replicas, key=lambda replica: (first[replica.role], replica.index))


def _log_context(job: Job, replicas: list[Any], label: str) -> dict[str, Any]:
    replicas = _in_replica_order(replicas)
    labels, label = _log_label(replicas, label)
    lines: list[str] = []
    error = ""
    cut = None
    if label:
        try:
            backend = get_backend(job.backend)
            lines = shown_lines(
                # A pod gone with its log says so, as its download does, not "No output yet."
                backend.logs(job, label, tail=LOG_TAIL_LINES, say_gone=True),
                secrets=job_secrets(job),
            )
            # A local log that went over LOCAL_LOG_MAX_MB lost its middle: the download is
            # not "all of it" then, and the page says what it has instead.
            path = backend.log_file(job, label)
            cut = log_cut(path) if path is not None else None
        except BackendError as exc:
            error = exc.message
        except Exception:  # a backend that is down must not break the job page
            logger.exception("reading logs of %s failed", job.public_id)
            error = _("The logs cannot be read right now.")
    at = labels.index(label) if label in labels else -1
    roles: dict[str, list[str]] = {}
    for replica in replicas:
        roles.setdefault(replica.role, []).append(f"{replica.role}-{replica.index}")
    return {
        "log_labels": labels,
        "log_label": label,
        # Beyond LOG_TABS_MAX replicas: a list grouped by role, and the neighbours' links.
        "log_picker": len(labels) > LOG_TABS_MAX,
        "log_roles": list(roles.items()),
        "log_previous": labels[at - 1] if at > 0 else "",
        "log_next": labels[at + 1] if 0 <= at < len(labels) - 1 else "",
        "log_lines": lines,
        "log_error": error,
        # A full tail has older lines above it: say so, or the log seems to begin there.
        "log_truncated": len(lines) >= LOG_TAIL_LINES,
        "log_cut": cut,
        "log_tail": LOG_TAIL_LINES,
        # Polled from the first view of the page, queued or not, until one last answer
        # after the job ends: the logs appear without a reload.
        "log_live": not job.is_final,
        # A local MPI worker runs the launcher's agent, not the command: the ranks mpirun
        # starts in it print to the launcher's log, which its own, nearly empty, would hide.
        "log_mpi_launcher": (
            "master-0"
            if job.backend == "local" and job.framework == MPI and label.startswith("worker-")
            else ""
        ),
    }


def _log_search(job: Job, label: str, query: QueryDict, *, user_id: int) -> dict[str, Any]:
    """The search box of the shown replica's log and, once a search is asked, what it found;
    with links to its older matches and back to the newest, when they are more to see.
    `search_busy`: refused, as user `user_id` has SEARCHES_PER_USER searches running (the
    page answers 429)."""
    if "q" in query and not query.get("context", "").strip():
        # A link or a box left empty searches with the default lines around each match: the
        # box says so rather than showing nothing.
        query = query.copy()
        query["context"] = str(SEARCH_CONTEXT)
    form = LogSearchForm(query if "q" in query else None)
    context: dict[str, Any] = {
        "search_form": form,
        "search": None,
        "search_error": "",
        "search_window": None,
        "search_limit": SEARCH_MAX_MATCHES,
        "search_seconds": int(SEARCH_SECONDS),
        "search_older": "",
        "search_newest": "",
        "search_busy": False,
    }
    if not label or not form.is_bound or not form.is_valid():
        return context
    data = form.cleaned_data
    path = None
    try:
        backend = get_backend(job.backend)
        path = backend.log_file(job, label)
        with search_slot(user_id=user_id):
            if path is not None:
                # The local log, read as it is on disk: from its last line back, block by block.
                context["search"] = search_file(
                    path,
                    pattern=data["pattern"],
                    deadline=time.monotonic() + SEARCH_SECONDS,
                    context=data["context"],
                    secrets=job_secrets(job),
                    before=data["before"],
                )
            elif data["before"] is not None:
                # A platform's log is searched in the last lines it returns, which move on
                # while the job runs: an offset in them would not find the same line twice.
                form.add_error(
                    "before",
                    _("Older matches are searched only in logs the console keeps itself."),
                )
                return context
            else:
                # The platform's last lines, searched from the last too once they are here.
                fetched = backend.logs(job, label, tail=REMOTE_SEARCH_LINES, say_gone=True)
                context["search_window"] = len(fetched)
                context["search"] = search_lines(
                    fetched,
                    pattern=data["pattern"],
                    deadline=time.monotonic() + SEARCH_SECONDS,
                    context=data["context"],
                    secrets=job_secrets(job),
                )
    except SearchesBusy:
        context["search_busy"] = True
        context["search_error"] = ngettext(
            "A search of yours is still running: search again once it has ended (a search "
            "stops within %(seconds)d seconds).",
            "%(count)d searches of yours are still running: search again once one has ended "
            "(a search stops within %(seconds)d seconds).",
            SEARCHES_PER_USER,
        ) % {"count": SEARCHES_PER_USER, "seconds": SEARCH_SECONDS + SEARCH_COUNT_SECONDS}
        return context
    except SearchCursorError:
        form.add_error("before", OLDER_LINK_ERROR)
        return context
    except BackendError as exc:
        context["search_error"] = exc.message
    except Exception:  # a backend that is down must not break the job page
        logger.exception("searching logs of %s failed", job.public_id)
        context["search_error"] = _("The logs cannot be read right now.")
    search = context["search"]
    # The same search as asked (its text, options and lines around), for the links.
    asked = {"replica": label, "q": data["q"], "context": data["context"]}
    asked.update({name: "on" for name in ("regex", "case") if data[name]})
    if _log_scale(query):  # the charts' scale, kept by the page the links open
        asked["scale"] = LOG_SCALE
    if path is not None and search is not None and search.resume is not None:
        context["search_older"] = urlencode({**asked, "before": search.resume})
    if data["before"] is not None:
        context["search_newest"] = urlencode(asked)
    return context


@require_safe
@login_required
def job_detail(request: AuthenticatedHttpRequest, public_id: str) -> HttpResponse:
    try:
        job = _job(request, public_id)
    except Http404:
        # An old link (an alert mail, a bookmark) to a job since deleted tells its owner what
        # became of it, and when (DeletedJob); anyone else, and a page's refresh, get the
        # usual 404, which says nothing of whose it was.
        kept = (
            None
            if request.htmx or "\x00" in public_id
            else DeletedJob.objects.filter(public_id=public_id, owner=request.user).first()
        )
        if kept is None:
            raise
        context = {
            "deleted": kept,
            "retention": retention_words(kept.retention),
            # A CPU-only job's hours count as CPU-only job-hours, not card-hours (qa76).
            "kept_usage_cards": UsageRecord.objects.filter(
                public_id=public_id, owner_pk=request.user.pk
            )
            .values_list("total_cards", flat=True)
            .first(),
        }
        return render(request, "jobs/job_deleted.html", context, status=404)
    usage_every = _usage_every(request, job)
    context = _live_context(
        job, log=_log_scale(request.GET), every_usage=usage_every["usage_every"]
    )
    context.update(_metrics_scale(request, job), **usage_every)
    # The pool by its name, as the job list shows it (its id in the title; a pool no longer
    # offered by its last known name, marked so and not linked, or else its id alone).
    label = pool_labels(names=pool_names(), pool_ids=[job.resource_pool]).get(job.resource_pool)
    context["pool_label"] = label.text if label else ""
    context["pool_offered"] = bool(label and label.offered)
    # The job this one was made from (Run again, or Copy & edit then submit), linked back: one
    # query, only for such a job. None when it was made anew or its source has been deleted.
    context["source_job"] = (
        Job.objects.filter(pk=job.source_job_id, owner=request.user)
        .only("public_id", "name")
        .first()
        if job.source_job_id
        else None
    )
    # Read from the stored spec (no query), so a spec this console no longer reads shows them.
    context["label_chips"] = label_chips(stored_labels(job.spec), [])
    try:
        spec = job.job_spec()
    except SpecError as exc:
        # A spec stored by an older console that this one no longer reads: the page still
        # shows the job's status, events and logs, and says why the request is missing.
        context["spec_error"] = str(exc)
    else:
        # A queue task's with its own AIHC_GROUP_TASK_* (as AIHC and Kubernetes are sent it):
        # the page's request, imported, runs that task again, not index 0's (review29).
        request_line, request_body = sent_request(
            shown_request_spec(spec, job),
            job.backend,
            job_id=job.public_id,
            training_api=job.training_api,
            owner=job.owner.get_username(),
        )
        context.update(
            {
                "api_request": request_line,
                "api_body": request_body,
                "spec_document": json.dumps(
                    spec.to_document(masked=True)["console"], ensure_ascii=False, indent=2
                ),
                "spec": spec,
                "aiak_words": aiak_words(spec),
                # The request shown cannot make this job's roles: said as the review says it.
                "console_api_note": console_api_request_note(job.backend),
                "roles_request_note": roles_request_note(spec, job.backend),
            }
        )
        # What each replica finds in its environment (RANK, MASTER_ADDR, TF_CONFIG, the job's
        # envs with secrets masked): the review step showed it before submitting, reviewers
        # see it in the admin, and the owner debugging a run looks for it here.
        context["replica_envs"], context["replicas_hidden"] = replica_environments(
            spec,
            backend_name=job.backend,
            job_id=environment_job_id(job),
            group_task=group_task_of(job),
            training_api=job.training_api,
        )
        context["mpi_hostfile"] = mpi_hostfile_preview(spec, job.backend)
        context["mount_rows"] = list(
            zip(
                spec.datasources,
                mount_folders(spec=spec, backend=job.backend, user=request.user),
                strict=True,
            )
        )
    context.update(_log_context(job, context["replicas"], request.GET.get("replica", "")))
    context.update(_log_search(job, context["log_label"], request.GET, user_id=request.user.pk))
    context["hang"] = _hang_context(request, job, request.GET.get("capture", ""))
    context["list_back"] = _list_left(request)
    context["group_progress"] = group_progress(job=job)
    return render(
        request, "jobs/job_detail.html", context, status=429 if context["search_busy"] else 200
    )


def _list_left(request: AuthenticatedHttpRequest) -> str:
    """The job list's filters and page this job page was opened from (the link's Referer), for
    Delete to return to: a team lead going through a filter's jobs one by one kept their place
    only with the browser's Back, which led to the deleted job's page (qa40). Empty when opened
    any other way (a bookmark, a mail, another page): Delete then returns to the list itself."""
    came_from = urlsplit(request.headers.get("Referer", ""))
    if came_from.path != reverse("job-list"):
        # Back from an action of this page (Stop): its Referer is this page, so the list came
        # along in the address (job_stop_view; review28: Delete after Stop lost it).
        return _list_query(request.GET.get("back", ""))
    return _list_query(came_from.query)


def _job_seen_by_staff_too(request: AuthenticatedHttpRequest, public_id: str) -> Job:
    """The job, for its owner and for staff who may view jobs in the admin (`jobs.view_job`,
    as reviewers have); 404 otherwise, as for a job that does not exist. Staff without it
    (given only the users' or card quotas' permissions, say) are refused the job's admin page:
    they read its call stacks here, and took them, until QA round 25."""
    if request.user.is_staff and request.user.has_perm("jobs.view_job"):
        if "\x00" in public_id:
            raise Http404
        return get_object_or_404(Job, public_id=public_id)
    return _job(request, public_id)


def _hang_can_capture(job: Job) -> bool:
    """Whether Capture stacks shows: a local job that runs. Decided: not on a queued job
    (it stood there and a click said the job was not running) nor on one that ended."""
    return job.backend == "local" and job.status == JobStatus.RUNNING


def _hang_context(
    request: AuthenticatedHttpRequest, job: Job, capture: str, refused: str = ""
) -> dict[str, Any]:
    """The Hang analysis section (templates/jobs/_hang.html): the job's captures, newest
    first, the one asked for (`?capture=`, else the newest) grouped by stack."""
    captures = list(job.stack_captures.all()[: CAPTURES_KEPT + 1]) if job.backend == "local" else []
    selected = next(
        (c for c in captures if str(c.pk) == capture), captures[0] if captures else None
    )
    done = selected is not None and selected.finished_at is not None
    owner = job.owner_id == request.user.pk
    return {
        "local": job.backend == "local",
        "kept": CAPTURES_KEPT,
        "captures": captures,
        "selected": selected,
        "groups": stack_groups(selected.replicas) if done else [],
        "unread": unread(selected.replicas) if done else [],
        "native_note": native_note(selected.replicas) if done else "",
        # A native frame's path (its library's, or the source file its debug information
        # names): staff only, who run the host; its owner sees the library's file name.
        "native_paths": request.user.is_staff,
        # Shown while the job runs (the only time a capture is taken): the status poll
        # brings it when the job starts and takes it away when it ends (job_detail.html).
        "can_capture": _hang_can_capture(job),
        "refused": refused,
        # Links that work without JavaScript: the job's page for its owner, else the
        # section's own page (staff do not see another user's job page).
        "page_url": reverse("job-detail" if owner else "job-hang", args=[job.public_id]),
        "partial_url": reverse("job-hang", args=[job.public_id]),
    }


@require_safe
@login_required
def job_hang(request: AuthenticatedHttpRequest, public_id: str) -> HttpResponse:
    """The Hang analysis section (htmx), or a page of its own. Its page's status poll
    (?status, htmx) answers the job's status, and out of band Capture stacks, so the button
    comes and goes with Running as the owner's page's live refresh brings it (job_live)."""
    job = _job_seen_by_staff_too(request, public_id)
    if request.htmx and "status" in request.GET:
        response = render(
            request,
            "jobs/_hang_status.html",
            {"job": job, "oob": True, "hang_can_capture": _hang_can_capture(job)},
        )
        return HttpResponseStopPolling(response.content) if job.is_final else response
    context = {"job": job, "hang": _hang_context(request, job, request.GET.get("capture", ""))}
    if request.htmx:
        return render(request, "jobs/_hang.html", context)
    return render(request, "jobs/job_hang.html", context)


def _to_hang(public_id: str) -> str:
    return reverse("job-detail", args=[public_id]) + "#hang"


@post_only(_to_hang)
@login_required
def job_hang_capture_view(request: AuthenticatedHttpRequest, public_id: str) -> HttpResponse:
    """Capture stacks: asks the worker for every replica's call stacks (jobs.stacks)."""
    job = _job_seen_by_staff_too(request, public_id)
    refused, capture = "", ""
    try:
        capture = str(capture_requested(job=job, actor=request.user).pk)
    except ActionError as exc:
        refused = exc.args[0]
    if request.htmx:
        context = {"job": job, "hang": _hang_context(request, job, capture, refused)}
        return render(request, "jobs/_hang.html", context)
    if refused:
        messages.error(request, refused)
    else:
        messages.success(request, _("Capturing the call stacks…"))
    if job.owner_id != request.user.pk:
        return redirect(reverse("job-hang", args=[job.public_id]) + "#hang")
    return redirect(_to_hang(job.public_id))


@require_safe
@login_required
def job_live(request: AuthenticatedHttpRequest, public_id: str) -> HttpResponse:
    """The detail page's status, replicas, events, queue position and queue group's progress
    (polled)."""
    job = _job(request, public_id)
    if not request.htmx:
        return redirect("job-detail", public_id=public_id)
    usage_every = _usage_every(request, job)
    response = render(
        request,
        "jobs/job_detail.html#live-update",
        {
            **_live_context(
                job, log=_log_scale(request.GET), every_usage=usage_every["usage_every"]
            ),
            **_metrics_scale(request, job),
            **usage_every,
            "group_progress": group_progress(job=job),
            "oob": True,
        },
    )
    return HttpResponseStopPolling(response.content) if job.is_final else response


@require_safe
@login_required
def job_metrics(request: AuthenticatedHttpRequest, public_id: str) -> HttpResponse:
    """The training metrics section alone: polled once the job has ended while its event
    files are still being read (before that, the status poll brings it along)."""
    job = _job(request, public_id)
    if not request.htmx:
        return redirect(f"{reverse('job-detail', args=[public_id])}#metrics")
    metrics = training_metrics(job=job, log=_log_scale(request.GET))
    response = render(
        request,
        "jobs/job_detail.html#metrics",
        {"job": job, "metrics": metrics, "final": job.is_final, **_metrics_scale(request, job)},
    )
    if metrics is None or not metrics.pending:
        return HttpResponseStopPolling(response.content)
    return response


@require_safe
@login_required
def job_logs(request: AuthenticatedHttpRequest, public_id: str) -> HttpResponse:
    """The last lines of one replica's log (polled while the job runs)."""
    job = _job(request, public_id)
    label = request.GET.get("replica", "")
    if not request.htmx:
        query = urlencode(
            {"replica": label, **({"scale": LOG_SCALE} if _log_scale(request.GET) else {})}
        )
        return redirect(f"{reverse('job-detail', args=[public_id])}?{query}#logs")
    context = {
        "job": job,
        **_log_context(job, list(job.replicas.all()), label),
        "log_scale": _log_scale(request.GET),  # kept by its links to the job page
    }
    if request.htmx.target == "log-tail":
        # The tail's own refresh: the tabs and the search box beside it stay as they are.
        response = render(request, "jobs/job_detail.html#log-tail", context)
    else:
        # A tab clicked (or the panel of a job without replicas yet, polling for them).
        context.update(_log_search(job, context["log_label"], QueryDict(), user_id=request.user.pk))
        response = render(request, "jobs/job_detail.html#log-panel", context)
    if not context["log_live"]:
        response = HttpResponseStopPolling(response.content)
    if request.htmx.trigger == "log-replica-picker":
        # The list's Show log: the address becomes the job page's, as a tab's link pushes it.
        query = urlencode(
            {"replica": context["log_label"]}
            | ({"scale": LOG_SCALE} if context["log_scale"] else {})
        )
        response = push_url(response, f"{reverse('job-detail', args=[public_id])}?{query}#logs")
    return response


@require_safe
@login_required
def job_log_search(request: AuthenticatedHttpRequest, public_id: str) -> HttpResponse:
    """What a search of one replica's log found: the search box's answer under htmx; without
    it (or reloaded), the job page showing the same search."""
    job = _job(request, public_id)
    page = f"{reverse('job-detail', args=[public_id])}?{request.GET.urlencode()}#log-search"
    if not request.htmx:
        return redirect(page)
    _labels, label = _log_label(list(job.replicas.all()), request.GET.get("replica", ""))
    context = {
        "job": job,
        "log_label": label,
        **_log_search(job, label, request.GET, user_id=request.user.pk),
        "log_scale": _log_scale(request.GET),
    }
    status = 429 if context["search_busy"] else 200
    response = render(request, "jobs/job_detail.html#log-search", context, status=status)
    return push_url(response, page)


@require_safe
@login_required
def job_log_download(request: AuthenticatedHttpRequest, public_id: str, replica: str) -> Any:
    """The replica's whole log as a file; when there is none to give, a page saying why with a
    link back to the job (the generic "Page not found" said nothing of a log not written yet or
    kept on another machine)."""
    job = _job(request, public_id)

    def unavailable(why: str, *, status: int = 404) -> HttpResponse:
        context = {"job": job, "replica": replica, "why": why}
        return render(request, "jobs/job_log_unavailable.html", context, status=status)

    try:
        backend = get_backend(job.backend)
    except BackendError as exc:
        return unavailable(exc.message)
    filename = f"{job.name}-{replica}.log"
    try:
        path = backend.log_file(job, replica)
    except BackendError as exc:
        # Kept on the machine that ran it: not here, whatever the wait (README, "What a
        # takeover means for local jobs"), so a 404 rather than a 503's "try again later".
        return unavailable(exc.message)
    if path is not None:
        if not path.exists():
            return unavailable(no_log_yet())
        if request.method == "HEAD":
            # A GET's headers, the file not opened: the server would read it all to drop it.
            response = HttpResponse(content_type="text/plain; charset=utf-8")
            response["Content-Length"] = path.stat().st_size
            response["Content-Disposition"] = content_disposition_header(True, filename)
            return response
        return FileResponse(
            open(path, "rb"),  # noqa: SIM115 - FileResponse closes it
            as_attachment=True,
            filename=filename,
            content_type="text/plain; charset=utf-8",
        )
    if replica not in {f"{r.role}-{r.index}" for r in job.replicas.all()}:
        return unavailable(
            _(
                "This job has no replica %(replica)s. A job's replicas are listed on its page "
                "once it starts."
            )
            % {"replica": replica}
        )
    try:
        if request.method == "HEAD":
            # A GET's status and headers, the log not read from the platform (a link checker's
            # HEAD had the whole log read, then dropped).
            backend.check_log(job, replica)
            lines: Iterable[str] = ()
        else:
            lines = backend.download_lines(job, replica)
    except NoLog as exc:
        # Not written yet (or gone with its pod): as a local replica's, not an empty file.
        return unavailable(exc.message)
    except BackendError as exc:
        # The platform could not answer: that is not "no such page" (a 404 would say so).
        return unavailable(download_unavailable_reason(exc), status=503)
    except Exception:  # a backend that is down: say so instead of failing
        logger.exception("downloading logs of %s failed", job.public_id)
        return unavailable(_("The logs cannot be read right now."), status=503)
    # A line at a time, never joined into one text (review 42: a 1 GB log took several GB).
    response = StreamingHttpResponse(
        downloaded_lines(lines), content_type="text/plain; charset=utf-8"
    )
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def _to_job(public_id: str) -> str:
    """Where a GET of a job's form target (Stop, Delete, Run again...) goes: the job's page."""
    return reverse("job-detail", args=[public_id])


def _job_page_back(request: HttpRequest, public_id: str) -> str:
    """The job's page with the list it was opened from (the form's `back`), as its address
    held it: where Stop returns, and a log-in that ended before Stop or Delete (left30: it
    came back to the page without it, and "back to the list" went to the whole list)."""
    back = _list_query(request.POST.get("back", ""))
    page = reverse("job-detail", args=[public_id])
    carried = f"{page}?{urlencode({'back': back})}"
    # Escaped again as a value, a list's address that fit may not (review29): the page then
    # comes back without it, not as the server's 400 for a request line too long.
    return carried if back and len(carried) <= SAFE_ADDRESS_LENGTH else page


@post_only(_to_job, form_page=_job_page_back)
@login_required
def job_stop_view(request: AuthenticatedHttpRequest, public_id: str) -> HttpResponse:
    job = _job(request, public_id)
    if request.POST.get("confirmed") != "1":
        return _confirm(request, job, "stop")
    try:
        stopping = job_stop(job=job, actor=request.user)
    except ActionError as exc:
        messages.error(request, exc.args[0])
    else:
        waits = (job.status_reason_source or {}).get("key")
        looked_for = stopping and stop_looked_for(job)
        if looked_for:
            # Its platform may still make it: when it is looked for (qa83).
            messages.warning(request, looked_for)
        elif stopping and waits in (STOP_WAITS_MESSAGE, NO_WORKER_STOP_MESSAGE):
            # Its processes are where the active worker is not, or no worker runs: the stop
            # waits for one (there).
            messages.warning(request, _(waits))
        elif stopping:
            messages.success(request, _("Stop requested."))
        else:
            messages.info(request, _("The job has already finished or is stopping."))
    # The list the job page was opened from, kept on the page Stop returns to for its Delete.
    return redirect(_job_page_back(request, public_id))


@post_only(_to_job, form_page=_job_page_back)
@login_required
def job_delete_view(request: AuthenticatedHttpRequest, public_id: str) -> HttpResponse:
    job = _job(request, public_id)
    if request.POST.get("confirmed") != "1":
        return _confirm(request, job, "delete")
    # Back to the list as the job page was opened from it (its filters and page), if it was.
    back = _list_query(request.POST.get("back", ""))
    # A queue group's task by its place in the group ("qa-grp 2/3"): its tasks share a name.
    # Read before the deletion, which may take the group with its last task.
    name = job.task_name
    here_only = deleted_here_only(job)  # read while the job is there to read
    try:
        gone = job_delete(job=job, actor=request.user)
    except ActionError as exc:
        messages.error(request, exc.args[0])
        return redirect("job-detail", public_id=public_id)
    if gone and here_only:
        messages.warning(request, DELETED_HERE_ONLY % {"name": name, "platform": here_only})
    elif gone and deletion_left_secret(public_id=job.public_id):
        messages.warning(
            request,
            _(
                "Job %(name)s deleted. Kubernetes did not answer when its Secret (the job's "
                "secret env values) was to be removed: the worker removes it once the cluster "
                "answers."
            )
            % {"name": name},
        )
    elif gone:
        messages.success(request, _("Job %(name)s deleted.") % {"name": name})
    elif (said := (job.status_reason_source or {}).get("key")) in (
        NO_WORKER_DELETE_MESSAGE,
        NO_WORKER_STOP_MESSAGE,
    ):
        # No worker runs: the stop that comes first waits for one (said now, not later). A
        # Stop's words as well as a Delete's: either way the deletion waits for that stop
        # (review63: after a Stop the Delete's check fell through to "will be deleted").
        messages.warning(
            request,
            _(
                "Job %(name)s will be deleted once it has stopped. No worker (job scheduler) "
                "is running now, so nothing can stop it yet: it is stopped and deleted as soon "
                "as a worker runs again."
            )
            % {"name": name},
        )
    elif said in (DELETE_WAITS_MESSAGE, STOP_WAITS_MESSAGE):
        # Its processes are where the active worker is not: the stop, and so the deletion,
        # waits for a worker there (fix144; the message said only that it would go).
        messages.warning(
            request,
            _(
                "Job %(name)s will be deleted once it has stopped. It runs on another machine "
                "or run directory than the worker now active, which cannot reach its "
                "processes: it is stopped and deleted once a worker runs where it started again."
            )
            % {"name": name},
        )
    else:
        messages.info(
            request, _("Job %(name)s will be deleted once it has stopped.") % {"name": name}
        )
    return redirect(f"{reverse('job-list')}?{back}" if back else reverse("job-list"))


STOP_QUESTION = gettext_lazy("Stop this job? Its replicas are ended and it cannot be resumed.")
# A job still waiting for review has never started and has no instances: stopping it takes it
# off the reviewers' list, and it is never sent to its platform nor started (jobs.actions.
# job_stop). Decided: only Pending review is asked so; a queued job may start any moment, so
# "its replicas are ended" stays true of it.
STOP_UNSTARTED_QUESTION = gettext_lazy(
    "Stop this job? It is still waiting for review and has not started: it is withdrawn from "
    "review and will not be sent or started. It cannot be resumed."
)
# A job Submit again held for review after its last submission was given up on refused looks:
# its platform may have made it, so its Stop looks for it there (create_unsettled; left51).
STOP_LOOKED_FOR_REVIEW_QUESTION = gettext_lazy(
    "Stop this job? It is waiting for review, but its platform may have made it from its last "
    "submission: it is withdrawn from review, and the worker looks for it there and stops it. "
    "It cannot be resumed."
)
# What a job wrote to its mounts (checkpoints) is kept, and said: "its files are deleted
# too" made people fear for their checkpoints (copy edit).
DELETE_QUESTION = gettext_lazy(
    "Delete this job? Its logs are deleted; what it wrote to its mounts is kept. A running "
    "job is stopped first."
)
# A job Delete stops and keeps (job_delete_only_stops). Until left45 it was asked as any
# other, "Delete this job?", and the job was not deleted.
DELETE_ONLY_STOPS_QUESTION = gettext_lazy(
    "Stop this job and keep it? A create of it got no clear answer, so its platform may have "
    "made it: Delete stops it there (the worker looks for it) and keeps the job. Delete it "
    "again once it has stopped."
)
# A job Delete keeps as being looked for on its platform (job_delete_looked_for): said before
# anything is sent. Until left48 it was asked "Delete this job?", and told only after the
# answer that it was not deleted.
DELETE_WHILE_LOOKED_FOR_QUESTION = gettext_lazy(
    "This job cannot be deleted yet: a create of it got no clear answer, so its platform may "
    "have made it, and the worker is looking for it there to stop it. Delete it again once it "
    "has stopped."
)
# The same three while the platform may still be working on that create: with when the worker
# looks for the job (stop_look_time_ahead, stop_look_time), as Stop and Delete say it after
# (qa84: asked with the words above, the time said only once the job was stopped).
STOP_LOOKED_FOR_AT_QUESTION = gettext_lazy(
    "Stop this job? A create of it got no clear answer, and its platform may still make it: "
    "the worker looks for it there at %(time)s and stops it if found, or ends the job Stopped "
    "if there is none. It cannot be resumed."
)
DELETE_ONLY_STOPS_AT_QUESTION = gettext_lazy(
    "Stop this job and keep it? A create of it got no clear answer, and its platform may "
    "still make it: Delete stops the job first (the worker looks for it there at %(time)s and "
    "stops it if found) and keeps it, not deleted. Delete it again once it has stopped."
)
DELETE_WHILE_LOOKED_FOR_AT_QUESTION = gettext_lazy(
    "This job cannot be deleted yet: a create of it got no clear answer, and its platform may "
    "still make it. The worker looks for it there at %(time)s and stops it if found. Delete it "
    "again once it has stopped."
)

# A job of a platform not configured here (jobs.actions.platform_unreachable) that may be
# there: its Delete removes it from this console only (deleted_here_only).
DELETE_HERE_ONLY_QUESTION = gettext_lazy(
    "Delete this job here only? Its platform (%(platform)s) is not configured on this console, "
    "so nothing is removed there: if the job is there, delete it there. Its logs here are "
    "deleted."
)
# One whose Delete is refused for that reason (jobs.actions.job_delete_refusal).
DELETE_REFUSED_QUESTION = gettext_lazy("This job cannot be deleted now: %(why)s")


def _confirm(request: AuthenticatedHttpRequest, job: Job, action: str) -> HttpResponse:
    """Not asked in the browser (JavaScript off): ask on a page of its own first, as neither
    a stop nor a delete can be undone."""
    stop = action == "stop"
    context = {
        "job": job,
        "action": action,
        "url_name": f"job-{action}",
        "verb": _("Stop") if stop else _("Delete"),
        "heading": (_("Stop job %(name)s?") if stop else _("Delete job %(name)s?"))
        % {"name": job.task_name},
        "question": _stop_question(job) if stop else _delete_question(job),
        # The way back to the list as it was left (job_delete_view, job_stop_view), kept
        # through the question.
        "back": _list_query(request.POST.get("back", "")),
    }
    return render(request, "jobs/job_confirm.html", context)


def _delete_question(job: Job) -> str:
    if platform_unreachable(job) and (refusal := job_delete_refusal(job)):
        # Kept, nothing can reach its platform: said before, not after (review68: "A running
        # job is stopped first", then the refusal).
        return DELETE_REFUSED_QUESTION % {"why": refusal}
    if platform := deleted_here_only(job):
        return DELETE_HERE_ONLY_QUESTION % {"platform": platform}
    if job_delete_only_stops(job):
        at = job.status != JobStatus.PENDING_REVIEW and stop_look_time_ahead(job)
        return DELETE_ONLY_STOPS_AT_QUESTION % {"time": at} if at else DELETE_ONLY_STOPS_QUESTION
    if job_delete_looked_for(job):
        at = stop_look_time(job)
        return (
            DELETE_WHILE_LOOKED_FOR_AT_QUESTION % {"time": at}
            if at
            else DELETE_WHILE_LOOKED_FOR_QUESTION
        )
    return DELETE_QUESTION


def _stop_question(job: Job) -> str:
    if job.status != JobStatus.PENDING_REVIEW:
        at = stop_look_time_ahead(job)
        return STOP_LOOKED_FOR_AT_QUESTION % {"time": at} if at else STOP_QUESTION
    return STOP_UNSTARTED_QUESTION if _never_sent(job) else STOP_LOOKED_FOR_REVIEW_QUESTION


def _never_sent(job: Job) -> bool:
    """Whether Stop withdraws the job from review and Stops it at once: waiting for review,
    and not Submit again's of a submission given up on refused looks, whose platform may have
    made it (create_unsettled: withdrawn, and looked for there). Asked only of Pending review
    jobs, so a list of others runs no query for it."""
    if job.status != JobStatus.PENDING_REVIEW:
        return False
    return not get_backend(job.backend).create_unsettled(job)


def _bulk_back(request: HttpRequest, **_url_kwargs: Any) -> str:
    """The job list as the bulk form's page showed it: its filters and page (`back`)."""
    back_query = _list_query(request.POST.get("back", ""))
    return f"{reverse('job-list')}?{back_query}" if back_query else reverse("job-list")


@post_only(lambda: reverse("job-list"), form_page=_bulk_back)
@login_required
def job_bulk_view(request: AuthenticatedHttpRequest) -> HttpResponse:
    """Stop selected / Delete selected on the job list: first a page that lists the chosen jobs
    and what happens to each, then (confirmed) each goes through its own page's action, and
    the list says what came of them. Only the user's own jobs are chosen; any other id in the
    form is ignored as one that does not exist."""
    back_query = _list_query(request.POST.get("back", ""))
    back = _bulk_back(request)
    action = request.POST.get("action", "")
    # The selection: the jobs carried from the list's other pages and filters (`sel`), less
    # this page's rows, and the boxes ticked on it ("all on this page": every row it showed).
    ticked = request.POST.getlist("jobs")
    if request.POST.get("all") == "1":
        ticked += request.POST.getlist("shown")
    chosen = looked_up(
        merged_selection(
            carried=request.POST.getlist("sel"),
            ticked=ticked,
            shown=request.POST.getlist("shown"),
        )
    )
    if "untick" in request.POST or action == "keep":
        # Without JavaScript: a job unticked in the selection's bar, or the page's ticks kept
        # (保留勾选) before going to another page or filter.
        untick = request.POST.get("untick")
        return redirect(_with_selection(back, [i for i in chosen if i != untick], request))
    if action == "compare":
        return _compare_selected(request, back, back_query, chosen)
    if action not in ("stop", "delete"):
        messages.error(request, _("Choose Stop selected or Delete selected."))
        return redirect(back)
    if len(chosen) > MAX_SELECTED:
        messages.error(
            request,
            _("Select at most %(max)d jobs at a time; nothing was done.") % {"max": MAX_SELECTED},
        )
        return redirect(_with_selection(back, chosen, request))
    jobs = list(
        Job.objects.filter(owner=request.user, public_id__in=chosen)
        # A queue group's tasks share a name: the question says which task each is ("2/3").
        .select_related("group")
        .order_by("-created_at", "-id")
    )
    missing = len(chosen) - len(jobs)
    if not jobs:
        if chosen:
            messages.info(request, _("The selected jobs no longer exist; nothing was done."))
        else:
            messages.info(request, _("Select the jobs first, with the boxes in the list."))
        return redirect(back)
    stop = action == "stop"
    if request.POST.get("confirmed") != "1":
        # Jobs Delete stops and keeps: listed apart from those it deletes.
        only_stopped = set() if stop else {job.pk for job in jobs if job_delete_only_stops(job)}
        rows = [
            (job, *(_stop_plan(job) if stop else _delete_plan(job, job.pk in only_stopped)))
            for job in jobs
        ]
        # The heading counts the jobs the action applies to (a finished job is not stopped, a
        # job Delete only stops is kept): until qa91 it said "Stop 8 jobs?" of 7 to stop.
        acted = sum(1 for job, _plan, changes in rows if changes and job.pk not in only_stopped)
        # Nothing would change (every job ended, say): no question and no button, as a Stop
        # button under "Stop 0 of the 6 selected jobs?" only asks to do nothing (qa113).
        nothing = not any(changes for _job, _plan, changes in rows)
        context = {
            "action": action,
            "rows": rows,
            "only_stopped": len(only_stopped),
            "only_stopped_looked_for": _looked_for_at(
                [job for job in jobs if job.pk in only_stopped]
            ),
            "missing": missing,
            "back": back_query,
            # Cancel keeps the jobs ticked, on whichever page of the list they are.
            "back_url": _with_selection(back, [job.public_id for job in jobs]),
            "heading": _bulk_heading(stop=stop, acted=acted, selected=len(jobs), nothing=nothing),
            "nothing": nothing,
            "question": _bulk_stop_question(jobs) if stop else BULK_DELETE_QUESTION,
            "verb": _("Stop") if stop else _("Delete"),
        }
        return render(request, "jobs/job_bulk_confirm.html", context)
    if stop:
        _say_stopped(request, jobs_stop(jobs=jobs, actor=request.user), missing)
    else:
        _say_deleted(request, jobs_delete(jobs=jobs, actor=request.user), missing)
    return redirect(back)


def _compare_selected(
    request: AuthenticatedHttpRequest, back: str, back_query: str, chosen: list[str]
) -> HttpResponse:
    """Compare on the job list: the comparison's own address (a GET, to bookmark) for 2 to 8 of
    the user's jobs, oldest first (the one the others are read against), carrying the list's
    filters and page for its way back; any other number goes back to the list, saying so,
    with the same boxes ticked."""

    def back_ticked(ticked: list[str]) -> HttpResponse:
        return redirect(_with_selection(back, ticked, request))

    if not chosen:
        messages.info(request, _("Select the jobs first, with the boxes in the list."))
        return redirect(back)
    if not MIN_COMPARED <= len(chosen) <= MAX_COMPARED:
        messages.error(
            request,
            ngettext(
                "Compare takes %(min)d to %(max)d jobs; %(count)d is selected. Tick %(min)d to "
                "%(max)d and press Compare again.",
                "Compare takes %(min)d to %(max)d jobs; %(count)d are selected. Tick %(min)d "
                "to %(max)d and press Compare again.",
                len(chosen),
            )
            % {"count": len(chosen), "min": MIN_COMPARED, "max": MAX_COMPARED},
        )
        return back_ticked(chosen)
    found = own_jobs_oldest_first(owner=request.user, ids=chosen)
    if len(found) < MIN_COMPARED:
        messages.error(
            request,
            _(
                "Of the selected jobs only %(count)d still exists: compare takes %(min)d to "
                "%(max)d. Tick another one and press Compare again."
            )
            % {"count": len(found), "min": MIN_COMPARED, "max": MAX_COMPARED},
        )
        return back_ticked(found)
    if len(found) < len(chosen):
        _say(request, [], len(chosen) - len(found), done=False)
    pairs = [("job", public_id) for public_id in found]
    # Its way back carries the selection too (Compare took all of it: these jobs, in the order
    # they were ticked), so the list comes back with them ticked, as the browser's Back does.
    kept = set(found)

    def address(query: str, carried: list[str]) -> str:
        back = _selection_query(query, carried)
        return f"{reverse('job-compare')}?{urlencode([*pairs, *_back_pairs(back)])}"

    # The filters before the ticks: the list they show is the way back's point. Only labels can
    # be long enough to need dropping (the other boxes are bounded, jobs.selection.TYPED_BOXES).
    back_query, dropped = _labels_fitting(back_query, lambda query: address(query, []))
    if dropped:
        messages.warning(
            request,
            ngettext(
                "The way back to the job list leaves out the last %(count)d label filter: "
                "with it the address would be too long.",
                "The way back to the job list leaves out the last %(count)d label filters: "
                "with them the address would be too long.",
                dropped,
            )
            % {"count": dropped},
        )
    carried, left_out = ids_fitting(
        [i for i in chosen if i in kept], lambda ids: address(back_query, ids)
    )
    if left_out:
        _say_not_carried(request, left_out)
    return redirect(address(back_query, carried))


def _labels_fitting(query: str, address: Callable[[str], str]) -> tuple[str, int]:
    """The job list's query `query` less its last label filters, as few as make `address` of it
    fit within SAFE_ADDRESS_LENGTH; and how many were dropped (said by the caller)."""
    given = QueryDict(query, mutable=True)
    labels = given.getlist("label")
    dropped = 0
    while labels and len(address(query)) > SAFE_ADDRESS_LENGTH:
        labels.pop()
        dropped += 1
        given.setlist("label", labels)
        query = _list_query(given.urlencode())
    return query, dropped


# The job list's parameters in a comparison's address, for its way back, each its own parameter
# under this prefix (`back_q=lr&back_sel=<id>`): encoded once. They were one `back` parameter,
# the list's query encoded a second time, each "%" of it three characters more (left28); a
# `back` of an older link is still read.
BACK_PREFIX = "back_"


def _back_pairs(query: str) -> list[tuple[str, str]]:
    """The job list's query `query` as a comparison's address carries it."""
    return [
        (f"{BACK_PREFIX}{name}", value)
        for name, values in QueryDict(query).lists()
        for value in values
    ]


def _back_given(query: QueryDict) -> str:
    """The job list's query a comparison's address carries (`_back_pairs`, or an older link's
    `back`), as it was: to be read by _list_query."""
    pairs = [
        (name.removeprefix(BACK_PREFIX), value)
        for name, values in query.lists()
        if name.startswith(BACK_PREFIX)
        for value in values
    ]
    return urlencode(pairs) if pairs else query.get("back", "")


BULK_STOP_QUESTION = gettext_lazy(
    "Stopped jobs cannot be resumed: their replicas are ended. Jobs that have already "
    "finished are left as they are."
)
# When some or all of the jobs to stop are still waiting for review (STOP_UNSTARTED_QUESTION).
BULK_STOP_UNSTARTED_QUESTION = gettext_lazy(
    "Stopped jobs cannot be resumed. Jobs still waiting for review have not started: they are "
    "withdrawn from review and will not be sent or started. Jobs that have already finished "
    "are left as they are."
)
BULK_STOP_MIXED_QUESTION = gettext_lazy(
    "Stopped jobs cannot be resumed: the replicas of those that started are ended, and those "
    "still waiting for review are withdrawn from it and will not be sent or started. Jobs "
    "that have already finished are left as they are."
)
BULK_DELETE_QUESTION = gettext_lazy(
    "Deleted jobs are gone with their logs; what they wrote to their mounts is kept. A "
    "running job is stopped first."
)


def _with_selection(
    url: str, ids: list[str], request: AuthenticatedHttpRequest | None = None
) -> str:
    """The job list's address `url` with these jobs ticked (jobs.selection), as many as an
    address carries; those left out are said to `request`'s next page (a redirect's)."""

    def address(carried: list[str]) -> str:
        if not carried:
            return url
        return f"{url}{'&' if '?' in url else '?'}{urlencode([('sel', i) for i in carried])}"

    carried, left_out = ids_fitting(ids, address)
    if left_out and request is not None:
        _say_not_carried(request, left_out)
    return address(carried)


def _say_not_carried(request: AuthenticatedHttpRequest, count: int) -> None:
    messages.warning(
        request,
        ngettext(
            "%(count)d ticked job was not kept ticked: the list's address carries at most "
            "%(max)d jobs (fewer with long filters). Act on those still ticked first, then "
            "tick the others again.",
            "%(count)d ticked jobs were not kept ticked: the list's address carries at most "
            "%(max)d jobs (fewer with long filters). Act on those still ticked first, then "
            "tick the others again.",
            count,
        )
        % {"count": count, "max": MAX_CARRIED},
    )


def _selection_query(query: str, ids: list[str]) -> str:
    """The job list's query `query` with these jobs ticked (jobs.selection), at most as many as
    an address carries."""
    carried, _left_out = carried_ids(ids)
    return "&".join(part for part in (query, urlencode([("sel", i) for i in carried])) if part)


def _list_query(query: str) -> str:
    """The job list's query as it was (its filters and page), from the one the form carried;
    anything else in it is dropped."""
    given = QueryDict(query)
    # Every label applied (they AND together), as the list writes them; one value of any other
    # parameter, the last.
    labels = [label_query(pair) for pair in asked_labels(given)]
    return urlencode(
        [
            (name, value)
            for name in LIST_PARAMETERS
            for value in (labels if name == "label" else [given.get(name)])
            if value
        ]
    )


def _bulk_heading(*, stop: bool, acted: int, selected: int, nothing: bool) -> str:
    """Stop/Delete selected's question: "Stop 3 jobs?", or "Stop 2 of the 3 selected jobs?"
    when some of them are left as they are (each row says why); that there is nothing to do
    when none of them would change."""
    if nothing:
        if stop:
            return ngettext(
                "Nothing to stop: the selected job cannot be stopped (see why below).",
                "Nothing to stop among the %(selected)d selected jobs (see why below).",
                selected,
            ) % {"selected": selected}
        return ngettext(
            "Nothing to delete: the selected job cannot be deleted (see why below).",
            "Nothing to delete among the %(selected)d selected jobs (see why below).",
            selected,
        ) % {"selected": selected}
    if acted == selected:
        if stop:
            return ngettext("Stop %(count)d job?", "Stop %(count)d jobs?", acted) % {"count": acted}
        return ngettext("Delete %(count)d job?", "Delete %(count)d jobs?", acted) % {"count": acted}
    counts = {"count": acted, "selected": selected}
    if stop:
        return (
            ngettext(
                "Stop %(count)d of the %(selected)d selected job?",
                "Stop %(count)d of the %(selected)d selected jobs?",
                selected,
            )
            % counts
        )
    return (
        ngettext(
            "Delete %(count)d of the %(selected)d selected job?",
            "Delete %(count)d of the %(selected)d selected jobs?",
            selected,
        )
        % counts
    )


def _bulk_stop_question(jobs: list[Job]) -> str:
    stopped = [job for job in jobs if job_stoppable(job)]
    unstarted = sum(1 for job in stopped if _never_sent(job))
    if not unstarted:
        return BULK_STOP_QUESTION
    return BULK_STOP_UNSTARTED_QUESTION if unstarted == len(stopped) else BULK_STOP_MIXED_QUESTION


def _stop_plan(job: Job) -> tuple[str, bool]:
    """What Stop does to the job, as its confirmation page says it; True: it changes."""
    if job.status == JobStatus.PENDING_REVIEW:
        if _never_sent(job):
            return _("Waiting for review: will be withdrawn, and not sent or started."), True
        return _(
            "Waiting for review: will be withdrawn. Its last submission may have been made on "
            "its platform: the worker looks for it there and stops it."
        ), True
    if at := stop_look_time_ahead(job):
        return _(
            "Will be stopped. A create of it got no clear answer, and its platform may still "
            "make it: the worker looks for it there at %(time)s and stops it if found."
        ) % {"time": at}, True
    if job_stoppable(job):
        return _("Will be stopped."), True
    if job.status == JobStatus.STOPPING:
        return _("Already stopping: left as it is."), False
    return _("Already finished: will not be stopped."), False


def _looked_for_at(jobs: list[Job]) -> str:
    """What Delete selected's notice of the jobs it stops and keeps adds of those whose create
    the platform may still carry out: when the worker looks for them (the earliest time when
    several), as each row says it (qa84: the notice said it of none); "" when none is."""
    looked_for = [
        (at, job)
        for job in jobs
        # Awaiting review: its row says why, without a time (_delete_plan).
        if job.status != JobStatus.PENDING_REVIEW and (at := stop_look_at_ahead(job))
    ]
    if not looked_for:
        return ""
    at, job = min(looked_for, key=lambda pair: pair[0])
    if len(looked_for) == 1:
        return _(
            "Its platform may still make %(name)s: the worker looks for it there at %(time)s."
        ) % {"name": job.task_name, "time": console_time(at)}
    return _(
        "Their platform may still make %(count)d of them: the worker looks for them there, "
        "the earliest at %(time)s."
    ) % {"count": len(looked_for), "time": console_time(at)}


def _delete_plan(job: Job, only_stopped: bool) -> tuple[str, bool]:
    """What Delete does to the job, as its confirmation page says it; True: it changes.
    `only_stopped`: job_delete_only_stops(job)."""
    refusal = job_delete_refusal(job)
    if refusal:
        return _("Will not be deleted: %(why)s") % {"why": refusal}, False
    if platform := deleted_here_only(job):
        return _(
            "Will be deleted here only: its platform (%(platform)s) is not configured on this "
            "console, so nothing is removed there."
        ) % {"platform": platform}, True
    if only_stopped and job.status == JobStatus.PENDING_REVIEW:
        return _(
            "Waiting for review: will be withdrawn, stopped and kept, not deleted: its last "
            "submission may have been made on its platform. The worker looks for it there and "
            "stops it; delete the job again once it has stopped."
        ), True
    if only_stopped and (at := stop_look_time_ahead(job)):
        return _(
            "Will be stopped and kept, not deleted: a create of it got no clear answer, and its "
            "platform may still make it. The worker looks for it there at %(time)s and stops it "
            "if found; delete the job again once it has stopped."
        ) % {"time": at}, True
    if only_stopped:
        return _(
            "Will be stopped and kept, not deleted: a create of it got no clear answer, so its "
            "platform may have made it. The worker looks for it there and stops it; delete the "
            "job again once it has stopped."
        ), True
    if job_delete_waits(job):
        return _("Will be stopped first, then deleted."), True
    if not job.is_final:
        return _("Will be stopped and deleted."), True
    return _("Will be deleted."), True


def _say_stopped(request: AuthenticatedHttpRequest, outcomes: list[Outcome], missing: int) -> None:
    done = sum(1 for o in outcomes if o.done)
    left = sum(1 for o in outcomes if not o.done and not o.error)
    parts = []
    if done:
        parts.append(
            ngettext(
                "Stop requested for %(count)d job.", "Stop requested for %(count)d jobs.", done
            )
            % {"count": done}
        )
    if left:
        parts.append(
            ngettext(
                "%(count)d had already finished or was stopping and was left as it is.",
                "%(count)d had already finished or were stopping and were left as they are.",
                left,
            )
            % {"count": left}
        )
    if unsent := sum(1 for o in outcomes if o.not_reached):
        parts.append(
            ngettext(
                "Time ran out (%(seconds)g s) before %(count)d job's platform was asked: it "
                "shows Stopping, and the worker sends its stop.",
                "Time ran out (%(seconds)g s) before %(count)d jobs' platforms were asked: they "
                "show Stopping, and the worker sends their stops.",
                unsent,
            )
            % {"count": unsent, "seconds": settings.BULK_ACTION_SECONDS}
        )
    waiting = sum(
        1
        for o in outcomes
        if o.done and (o.job.status_reason_source or {}).get("key") == NO_WORKER_STOP_MESSAGE
    )
    if waiting:
        # No worker runs (as each of their pages says): their replicas are not ended yet.
        parts.append(
            ngettext(
                "No worker (job scheduler) is running now: %(count)d running job is stopped as "
                "soon as one runs again.",
                "No worker (job scheduler) is running now: %(count)d running jobs are stopped "
                "as soon as one runs again.",
                waiting,
            )
            % {"count": waiting}
        )
    _say(request, parts, missing, done=bool(done))
    for outcome in outcomes:
        if outcome.done and (looked_for := stop_looked_for(outcome.job)):
            # As its own page's Stop says it (qa83).
            messages.warning(
                request,
                _("Job %(name)s: %(said)s") % {"name": outcome.job.task_name, "said": looked_for},
            )
    for outcome in outcomes:
        if outcome.error:
            messages.error(
                request,
                _("Job %(name)s was not stopped: %(why)s")
                % {"name": outcome.job.task_name, "why": outcome.error},
            )


def _say_deleted(request: AuthenticatedHttpRequest, outcomes: list[Outcome], missing: int) -> None:
    done = sum(1 for o in outcomes if o.done)
    later = sum(1 for o in outcomes if not o.done and not o.error and not o.not_reached)
    parts = []
    if done:
        parts.append(
            ngettext("Deleted %(count)d job.", "Deleted %(count)d jobs.", done) % {"count": done}
        )
    if later:
        parts.append(
            ngettext(
                "%(count)d job will be deleted once it has stopped.",
                "%(count)d jobs will be deleted once they have stopped.",
                later,
            )
            % {"count": later}
        )
    _say(request, parts, missing, done=bool(done or later))
    if left := [o.job.task_name for o in outcomes if o.secret_left]:
        # As the job page's Delete says it: the jobs are gone, but not all they held yet.
        messages.warning(
            request,
            ngettext(
                "Kubernetes did not answer when the Secret (the job's secret env values) of "
                "%(names)s was to be removed: the worker removes it once the cluster answers.",
                "Kubernetes did not answer when the Secrets (the jobs' secret env values) of "
                "%(names)s were to be removed: the worker removes them once the cluster "
                "answers.",
                len(left),
            )
            % {"names": list_words(left)},
        )
    if here := [o for o in outcomes if o.here_only]:
        messages.warning(
            request,
            ngettext(
                "%(names)s was deleted here only: nothing was removed on %(platforms)s, not "
                "configured on this console. If the job is still there, delete it there.",
                "%(names)s were deleted here only: nothing was removed on %(platforms)s, not "
                "configured on this console. If the jobs are still there, delete them there.",
                len(here),
            )
            % {
                "names": list_words(o.job.task_name for o in here),
                "platforms": list_words(sorted({o.here_only for o in here})),
            },
        )
    if kept := sum(1 for o in outcomes if o.not_reached):
        # Untouched, not half-deleted: the time for the whole (BULK_ACTION_SECONDS) was up.
        messages.warning(
            request,
            ngettext(
                "%(count)d job was not deleted: time ran out (%(seconds)g s) before its "
                "platform was asked. It is kept as it was; select it and delete it again.",
                "%(count)d jobs were not deleted: time ran out (%(seconds)g s) before their "
                "platforms were asked. They are kept as they were; select them and delete them "
                "again.",
                kept,
            )
            % {"count": kept, "seconds": settings.BULK_ACTION_SECONDS},
        )
    for outcome in outcomes:
        if outcome.error:
            messages.error(
                request,
                _("Job %(name)s was not deleted: %(why)s")
                % {"name": outcome.job.task_name, "why": outcome.error},
            )


def _say(request: AuthenticatedHttpRequest, parts: list[str], missing: int, *, done: bool) -> None:
    if missing:
        # Said the same for an id that never was the user's: nothing of anyone else's shows.
        parts.append(
            ngettext(
                "%(count)d selected job no longer exists.",
                "%(count)d selected jobs no longer exist.",
                missing,
            )
            % {"count": missing}
        )
    if parts:
        (messages.success if done else messages.info)(request, " ".join(parts))


@post_only(_to_job)
@login_required
def job_rerun_view(request: AuthenticatedHttpRequest, public_id: str) -> HttpResponse:
    job = _job(request, public_id)
    try:
        new_jobs = job_rerun(
            job=job, owner=request.user, request_key=request.POST.get("request_key", "")
        )
    except ActionError as exc:
        messages.error(request, _("It cannot run again now: %(why)s") % {"why": exc})
        return redirect("job-detail", public_id=job.public_id)
    messages.success(request, _("Submitted again as a new job."))
    return redirect("job-detail", public_id=new_jobs[0].public_id)


@post_only(_to_job)
@login_required
def job_submit_again_view(request: AuthenticatedHttpRequest, public_id: str) -> HttpResponse:
    job = _job(request, public_id)
    try:
        job_submit_again(job=job, actor=request.user)
    except ActionError as exc:
        messages.error(request, _("It cannot be submitted again now: %(why)s") % {"why": exc})
    else:
        messages.success(request, _("Submitted again."))
    return redirect("job-detail", public_id=public_id)


@require_safe
@login_required
def job_compare(request: AuthenticatedHttpRequest) -> HttpResponse:
    """Compare jobs (对比任务): 2 to 8 jobs side by side, by their ids in the address (`job`,
    repeated; `all=1`: every field, not only those that differ). Only jobs the viewer may see
    (jobs.compare): any other id answers 404, as its job page does."""
    ids = asked_ids(request.GET.getlist("job"))
    every = request.GET.get("all") == "1"
    log = _log_scale(request.GET)
    # The job list's filters and page as Compare left them (`back`): its way back keeps them,
    # and the selection Compare was made from (below: only the viewer's own compared jobs).
    given_back = _back_given(request.GET)
    back = _list_query(given_back)
    context: dict[str, Any] = {
        "asked": len(ids),
        "min": MIN_COMPARED,
        "max": MAX_COMPARED,
        "back": back,
        "back_url": f"{reverse('job-list')}?{back}" if back else reverse("job-list"),
        "log_scale": log,
    }
    if len(ids) > MAX_ASKED:
        return render(request, "jobs/job_compare.html", context, status=400)
    jobs, missing = jobs_found(viewer=request.user, ids=ids)
    # The job page Compare was opened from (a copy's, `from`): its way back leads there. Only
    # the page of one of the jobs compared that is the viewer's own (a job page is its owner's),
    # built here from its id: never an address the link carried.
    origin = next(
        (
            job.public_id
            for job in jobs
            if job.public_id == request.GET.get("from") and job.owner_id == request.user.pk
        ),
        "",
    )
    # The list's selection as `back` carried it (`sel`): those of the jobs compared that are the
    # viewer's own, so no link here names another user's job (staff compare anyone's) nor one
    # not compared (an edited address); the list drops any other as it reads `sel`.
    own = {job.public_id for job in jobs if job.owner_id == request.user.pk}
    carried, _left_out = carried_ids(QueryDict(given_back).getlist("sel"))
    back = _selection_query(back, [i for i in carried if i in own])
    context["back"] = back
    context["back_pairs"] = _back_pairs(back)
    context["back_url"] = f"{reverse('job-list')}?{back}" if back else reverse("job-list")
    if origin:
        context["origin"] = origin
        context["origin_name"] = next(job.task_name for job in jobs if job.public_id == origin)
        context["back_url"] = reverse("job-detail", args=[origin])
    if missing:
        context["missing"] = missing[:10]
        context["missing_more"] = len(missing) - len(context["missing"])
        if MIN_COMPARED <= len(jobs) <= MAX_COMPARED:
            context["found_query"] = _compare_query(
                jobs, every=every, back=back, log=log, origin=origin
            )
        return render(request, "jobs/job_compare.html", context, status=404)
    context["jobs"] = jobs
    if not MIN_COMPARED <= len(jobs) <= MAX_COMPARED:
        # A link with too few or too many: those named stay ticked, to untick or go back.
        return render(request, "jobs/job_compare.html", context)
    comparison = job_comparison(jobs=jobs, log=log)
    for job in jobs:
        # Another user's job (staff comparing): its admin page, as its job page is its owner's.
        job.compare_url = (
            reverse("job-detail", args=[job.public_id])
            if job.owner_id == request.user.pk
            else reverse("admin:jobs_job_change", args=[job.pk])
        )
    context.update(
        {
            "comparison": comparison,
            "fields": comparison.fields if every else comparison.differing,
            "every": every,
            "differing": len(comparison.differing),
            "every_query": _compare_query(jobs, every=True, back=back, log=log, origin=origin),
            "differing_query": _compare_query(jobs, every=False, back=back, log=log, origin=origin),
            "scale_urls": _scale_urls(
                reverse("job-compare"),
                QueryDict(_compare_query(jobs, every=every, back=back, origin=origin)),
                "#compare-metrics",
            ),
            "metrics": comparison.metrics,
            "columns": list(zip(comparison.names, comparison.metrics.metrics, strict=True)),
            "latest_rows": list(
                zip(jobs, comparison.names, comparison.metrics.latest, strict=True)
            ),
        }
    )
    return render(request, "jobs/job_compare.html", context)


def _compare_query(
    jobs: list[Job], *, every: bool, back: str = "", log: bool = False, origin: str = ""
) -> str:
    pairs = [("job", job.public_id) for job in jobs]
    if every:
        pairs.append(("all", "1"))
    pairs.extend(_back_pairs(back))
    if origin:
        pairs.append(("from", origin))
    if log:
        pairs.append(("scale", LOG_SCALE))
    return urlencode(pairs)
