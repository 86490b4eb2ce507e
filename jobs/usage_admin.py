"""The usage report in the admin (jobs.admin routes /admin/jobs/job/usage/ here): a period
form, the figures of jobs.usage as three tables, and the same figures as CSV (?format=csv).

Staff who may see jobs in the admin (the `jobs | job | view` permission, as reviewers have)
see it; other staff get 403, everyone else the admin's login.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from datetime import date
from typing import Any
from urllib.parse import urlencode

from django import forms
from django.contrib.admin import AdminSite
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils import translation
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from .forms import PLAIN_TYPED
from .models import Job, JobLabel
from .pools import pool_labels
from .spec import UNKNOWN_CARD, card_shown
from .usage import (
    Figures,
    Period,
    PoolUsage,
    UsageByLabel,
    UsageReport,
    month_links,
    usage_by_label,
    usage_report,
)
from .wizard import available_pools

# Far enough either way for any job this console ran or will run, and well inside what
# datetime and the time zone conversion can hold.
FIRST_DAY = date(2000, 1, 1)
LAST_DAY = date(2099, 12, 31)
DATE_INPUT = forms.DateInput(attrs={"type": "date"}, format="%Y-%m-%d")


class UsagePeriodForm(forms.Form):
    """The period, both days included. Blank "from": the first day of the "to" month (this
    month's when both are blank); blank "to": the last day of the "from" month."""

    date_from = forms.DateField(label=gettext_lazy("From"), required=False, widget=DATE_INPUT)
    date_to = forms.DateField(label=gettext_lazy("To"), required=False, widget=DATE_INPUT)

    def _in_range(self, name: str) -> date | None:
        day: date | None = self.cleaned_data[name]
        if day is not None and not FIRST_DAY <= day <= LAST_DAY:
            raise forms.ValidationError(
                _("Choose a day from %(first)s to %(last)s.")
                % {"first": FIRST_DAY.isoformat(), "last": LAST_DAY.isoformat()}
            )
        return day

    def clean_date_from(self) -> date | None:
        return self._in_range("date_from")

    def clean_date_to(self) -> date | None:
        return self._in_range("date_to")

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if self.errors:
            return cleaned
        first, last = cleaned.get("date_from"), cleaned.get("date_to")
        if first is None and last is None:
            period = Period.this_month()
        elif first is None:
            period = Period(Period.this_month(today=last).first, last)
        elif last is None:
            period = Period(first, Period.this_month(today=first).last)
        else:
            period = Period(first, last)
        if period.last < period.first:
            self.add_error("date_to", _("The last day is before the first day."))
            return cleaned
        cleaned["period"] = period
        return cleaned


class UsageLabelForm(forms.Form):
    """A label key (标签) to group a usage page's figures by (`project`: what each project
    used). Longer than any key, or with a NUL: said on the field, and no grouping."""

    by_label = forms.CharField(
        label=gettext_lazy("By label"),
        required=False,
        max_length=JobLabel._meta.get_field("key").max_length,
        # Empty, the field did not say it takes a label's key (a whole label found nothing).
        widget=forms.TextInput(
            attrs={"placeholder": gettext_lazy("A label key, such as project"), **PLAIN_TYPED}
        ),
    )


def label_usage(
    request: HttpRequest, *, report: UsageReport, owner: Any = None
) -> tuple[UsageLabelForm, UsageByLabel | None]:
    """The label form of a usage page, and the report's figures by the key it asks for."""
    form = UsageLabelForm({"by_label": request.GET.get("by_label", "")})
    if not form.is_valid() or not form.cleaned_data["by_label"]:
        return form, None
    key = form.cleaned_data["by_label"]
    return form, usage_by_label(period=report.period, key=key, now=report.now, owner=owner)


def usage_view(request: HttpRequest, *, site: AdminSite, model_admin: Any) -> HttpResponse:
    if not model_admin.has_view_permission(request):
        raise PermissionDenied
    given = {key: request.GET[key] for key in ("date_from", "date_to") if key in request.GET}
    form = UsagePeriodForm(given)
    report = usage_report(period=form.cleaned_data["period"]) if form.is_valid() else None
    names = offered_pool_names() if report is not None else {}
    pool_ids = [row.pool for row in report.pools] if report is not None else []
    label_form, by_label = (
        label_usage(request, report=report)
        # The key typed is kept in its field while the period is put right.
        if report is not None
        else (UsageLabelForm({"by_label": request.GET.get("by_label", "")}), None)
    )
    # A key the page refuses (too long, a NUL) answers with the page and its message: a CSV
    # not grouped by it would pass for the figures asked for (admin30).
    if report is not None and request.GET.get("format") == "csv" and not label_form.errors:
        return _csv(
            report, pool_names=csv_pool_names(names=names, pool_ids=pool_ids), by_label=by_label
        )
    if report is not None and not any(given.values()):
        # Show the default period in the form, so it says which month this is.
        form = UsagePeriodForm(
            initial={"date_from": report.period.first, "date_to": report.period.last}
        )
    context = {
        **site.each_context(request),
        "opts": Job._meta,
        "title": _("Usage report"),
        "form": form,
        "label_form": label_form,
        "by_label": by_label,
        "report": report,
        "pool_rows": pool_rows(
            report.pools, labels=usage_pool_labels(names=names, pool_ids=pool_ids)
        )
        if report
        else [],
        "csv_query": _csv_query(report, by_label) if report else "",
        "as_of": report is not None and report.period.ends_at > report.now,
        # The two periods asked most (qa114: a month's chargeback was typed in by hand),
        # linked as My usage links them.
        **month_links(),
    }
    return TemplateResponse(request, "admin/jobs/job/usage.html", context)


def offered_pool_names() -> dict[str, str]:
    """The name of each pool the console offers now, by id, for the usage pages and their CSV:
    read as the job list's full page and the pools page read them (available_pools: cached
    figures and no query; a remote backend's first read in this process waited for, so a
    pool is named whichever server process answers). A pool no longer offered has none here:
    the pages show its last known name, marked (usage_pool_labels), or its id. The names are
    today's: a pool renamed since its jobs ran shows its new name (its id, which never
    changes, is in the title and the CSV's `pool` column)."""
    return {p.id: p.name for p in available_pools()}


def usage_pool_labels(*, names: dict[str, str], pool_ids: Iterable[str]) -> dict[str, str]:
    """The labels of the pools `pool_ids` (a usage page's), by id, as the job list names them
    (jobs.pools.pool_labels): a pool offered now by its name (with its id when two share a
    name); one no longer offered by its last known name (KnownPool) marked "(no longer
    offered)", in the language active; a pool never seen by name has none (its id is shown).
    Costs one query when some pool is not offered now, none otherwise."""
    return {
        pool_id: label.text
        for pool_id, label in pool_labels(names=names, pool_ids=pool_ids).items()
    }


def pool_rows(rows: list[PoolUsage], *, labels: dict[str, str]) -> list[dict[str, Any]]:
    """The report's pool × card type rows as the pages show them: each pool by its label
    (usage_pool_labels; the id in the title), or by its id alone when it has none."""
    return [
        {
            "pool_id": row.pool,
            "pool_label": labels.get(row.pool, ""),
            "card": _card_label(row.card_type),
            "figures": row.figures,
        }
        for row in rows
    ]


def csv_pool_names(*, names: dict[str, str], pool_ids: Iterable[str]) -> dict[str, str]:
    """`pool_name` of the CSV downloads, by pool id: an offered pool's name today; one no
    longer offered, its last known name with its id, marked, "Old (cce-old, no longer
    offered)" (the table is in English, whatever the page's language), or blank when its
    name was never seen. Decided:
    marked, so a reader does not take a pool gone for one offered; scripts match on `pool`,
    the id. One query when some pool is not offered now, as the pages."""
    with translation.override("en"):
        labels = usage_pool_labels(names=names, pool_ids=pool_ids)
    return {
        pool_id: names.get(pool_id) or labels.get(pool_id, "") for pool_id in {*pool_ids, *names}
    }


def _card_label(card_type: str) -> str:
    if card_type == "":
        return _("CPU only")
    if card_type == UNKNOWN_CARD:
        return _("unknown (the job's spec cannot be read)")
    # As people name it, the resource name in brackets; the CSVs keep the resource name
    # alone in `card_type`, the column scripts match on.
    return card_shown(card_type)


def _csv_query(report: UsageReport, by_label: UsageByLabel | None = None) -> str:
    return urlencode(
        {
            "date_from": report.period.first.isoformat(),
            "date_to": report.period.last.isoformat(),
            **({"by_label": by_label.key} if by_label is not None else {}),
            "format": "csv",
        }
    )


# -- CSV -------------------------------------------------------------------------------

CSV_HEADER = [
    "scope",
    "user",
    "group",
    "backend",
    "pool",
    "pool_name",
    "card_type",
    "card_hours",
    "jobs",
    "cpu_only_job_hours",
    "user_deleted",
    "label_key",
    "label_value",
]
# A spreadsheet takes a cell starting with one of these as a formula (CSV injection).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def period_name(period: Period) -> str:
    return f"{period.first.isoformat()}-to-{period.last.isoformat()}"


def csv_response(filename: str) -> HttpResponse:
    """An attachment to write CSV rows to, UTF-8 with a byte order mark: without it Excel
    reads the file in the system's code page, and Chinese names come out garbled."""
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    response.write("\ufeff")
    return response


class PaddedWriter:
    """A CSV writer whose rows are padded to the header's width with blank cells: a row
    leaves out the columns after its last filled one (the label's, on every row but the
    label rows)."""

    def __init__(self, response: HttpResponse, header: list[str]) -> None:
        self.writer = csv.writer(response)
        self.width = len(header)
        self.writer.writerow(header)

    def writerow(self, row: list[str]) -> None:
        self.writer.writerow([*row, *[""] * (self.width - len(row))])


def label_scopes(by_label: UsageByLabel | None) -> list[tuple[str, str, str, Figures]]:
    """The rows by label of a usage CSV: (scope, label_key, label_value, figures). Scope
    "label" for each value ("" for an empty one), "label_none" for the jobs without the key,
    "label_deleted" for deleted jobs (their labels are not kept): they add up to the total."""
    if by_label is None:
        return []
    rows = [
        ("label", by_label.key, row.value, row.figures)
        if row.value is not None
        else ("label_none", by_label.key, "", row.figures)
        for row in by_label.values
    ]
    if by_label.deleted.jobs:
        rows.append(("label_deleted", by_label.key, "", by_label.deleted))
    return rows


def csv_cell(text: str) -> str:
    return f"'{text}" if text.startswith(FORMULA_STARTS) else text


def _figures(figures: Figures, *, deleted: bool = False) -> list[str]:
    return [
        f"{figures.card_hours:.2f}",
        str(figures.jobs),
        f"{figures.cpu_job_hours:.2f}",
        "yes" if deleted else "",
    ]


def _csv(
    report: UsageReport, *, pool_names: dict[str, str], by_label: UsageByLabel | None = None
) -> HttpResponse:
    """One table in English, whatever the page's language: a row per user (a deleted user's
    with `user_deleted` "yes"), per group (no group: `group` blank), per pool and card type
    (CPU only: `card_type` blank), and the total. A pool row has the pool's id (`pool`) and
    its name (`pool_name`, csv_pool_names: today's, or the last known one of a pool no longer
    offered, marked so). Hours to two decimals. UTF-8 with a byte order mark (csv_response)."""
    response = csv_response(f"usage-{period_name(report.period)}.csv")
    writer = PaddedWriter(response, CSV_HEADER)
    for user in report.users:
        writer.writerow(
            [
                "user",
                csv_cell(user.username),
                "",
                "",
                "",
                "",
                "",
                *_figures(user.figures, deleted=user.deleted),
            ]
        )
    for group in report.groups:
        writer.writerow(
            ["group", "", csv_cell(group.name or ""), "", "", "", "", *_figures(group.figures)]
        )
    for row in report.pools:
        writer.writerow(
            [
                "pool",
                "",
                "",
                row.backend,
                csv_cell(row.pool),
                csv_cell(pool_names.get(row.pool, "")),
                csv_cell(row.card_type),
                *_figures(row.figures),
            ]
        )
    for scope, key, value, figures in label_scopes(by_label):
        writer.writerow(
            [scope, "", "", "", "", "", "", *_figures(figures), csv_cell(key), csv_cell(value)]
        )
    writer.writerow(["total", "", "", "", "", "", "", *_figures(report.total)])
    return response
