"""My usage (我的用量, /account/usage/): the logged-in user's own card-hours over a period, as
the admin's usage report counts them (jobs.usage, with `owner`), deleted jobs included: their
total, per pool × card type, and their jobs that ran in it; also as CSV (?format=csv).

Everyone sees only their own figures here, staff included (everyone's are in the admin's
report, jobs.usage_admin, whose period form this page shares)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_safe

from .http import AuthenticatedHttpRequest
from .services import label_suggestions
from .usage import (
    HOUR,
    UsageByLabel,
    UsageReport,
    card_types,
    month_links,
    usage_jobs,
    usage_report,
)
from .usage_admin import (
    PaddedWriter,
    UsageLabelForm,
    UsagePeriodForm,
    csv_cell,
    csv_pool_names,
    csv_response,
    label_scopes,
    label_usage,
    offered_pool_names,
    period_name,
    pool_rows,
    usage_pool_labels,
)
from .views import ListPage


@require_safe
@login_required
def my_usage(request: AuthenticatedHttpRequest) -> HttpResponse:
    given = {key: request.GET[key] for key in ("date_from", "date_to") if key in request.GET}
    form = UsagePeriodForm(given)
    context: dict[str, Any] = {
        "form": form,
        "report": None,
        "label_form": UsageLabelForm({"by_label": request.GET.get("by_label", "")}),
        **month_links(),
    }
    if not form.is_valid():
        return render(request, "jobs/my_usage.html", context)
    period = form.cleaned_data["period"]
    # One moment for the figures and the rows, so a running job's hours agree in both.
    now = timezone.now()
    report = usage_report(period=period, now=now, owner=request.user)
    jobs = usage_jobs(owner=request.user, period=period, now=now)
    # Pools by name, as the job list names them (usage_admin.offered_pool_names); those no
    # longer offered by their last known name: one query for the page, when there are any.
    names = offered_pool_names()
    pool_ids = [row.pool for row in report.pools]
    label_form, by_label = label_usage(request, report=report, owner=request.user)
    # A key the page refuses (too long, a NUL) answers with the page and its message, as a
    # bad period does: a CSV not grouped by it would pass for the figures asked for (admin30).
    if request.GET.get("format") == "csv" and not label_form.errors:
        # The report's pools are those of the jobs it counts: every job row's pool is one.
        # Grouped by a label, each job row says its value of it (the rows by label sum them).
        return _csv(
            report,
            usage_jobs(
                owner=request.user,
                period=period,
                now=now,
                label_key=by_label.key if by_label is not None else None,
            ),
            pool_names=csv_pool_names(names=names, pool_ids=pool_ids),
            by_label=by_label,
        )
    if not any(given.values()):
        # Show the default period in the form, so it says which month this is.
        form = UsagePeriodForm(initial={"date_from": period.first, "date_to": period.last})
    query = f"date_from={period.first.isoformat()}&date_to={period.last.isoformat()}"
    if by_label is not None:
        query += f"&{urlencode({'by_label': by_label.key})}"
    page = ListPage.of(jobs, request.GET.get("page"))
    rows = list(page.object_list)
    labels = usage_pool_labels(
        names=names, pool_ids={*pool_ids, *(row["resource_pool"] for row in rows)}
    )
    page.object_list = [_job_row(row, labels=labels) for row in rows]
    # The label field suggests the user's own keys (their <datalist>), the most used first.
    label_form.fields["by_label"].widget.attrs["list"] = "usage-label-keys"
    context.update(
        label_keys=[text for text in label_suggestions(owner=request.user) if "=" not in text],
        form=form,
        report=report,
        label_form=label_form,
        by_label=by_label,
        pool_rows=pool_rows(report.pools, labels=labels),
        page=page,
        query=query,
        as_of=period.ends_at > now,
    )
    return render(request, "jobs/my_usage.html", context)


def _job_row(row: dict[str, Any], *, labels: dict[str, str]) -> dict[str, Any]:
    hours = row["run"] / HOUR
    return {
        **row,
        # Its label (its id in the title): a pool no longer offered by its last known name,
        # marked so, or by its id alone.
        "pool_label": labels.get(row["resource_pool"], ""),
        "hours": hours,
        "card_hours": hours * row["total_cards"],
    }


# A job row's card types, sorted, in one cell ("baidu.com/a800_80g_cgpu;baidu.com/h800_80g_cgpu"):
# a card type is a Kubernetes-style resource name, which never holds ";" (decision).
CARD_TYPES_SEPARATOR = ";"
CSV_HEADER = [
    "scope",
    "job_id",
    "job_name",
    "job_deleted",
    "backend",
    "pool",
    "pool_name",
    "card_type",
    "cards",
    "started_at",
    "hours_in_period",
    "card_hours",
    "jobs",
    "cpu_only_job_hours",
    "label_key",
    "label_value",
]


def _csv(
    report: UsageReport,
    jobs: Any,
    *,
    pool_names: dict[str, str],
    by_label: UsageByLabel | None = None,
) -> HttpResponse:
    """One table in English, as the admin's CSV: a row per job that ran (newest start first;
    a deleted one's `job_deleted` "yes"; `card_type` its card types, sorted, joined by
    CARD_TYPES_SEPARATOR), per pool and card type (CPU only: `card_type` blank), and the
    total. Pools by id (`pool`) and by name (`pool_name`, usage_admin.csv_pool_names: today's,
    or a pool no longer offered's last known one, marked). Hours to two decimals; times in the
    console's zone. Grouped by a label key (`by_label`), a job row that has the label carries
    its key and value in `label_key` and `label_value` (usage_jobs' label_value); one without
    it, or deleted (its labels are not kept), leaves both blank, as the rows by label count
    it in `label_none` or `label_deleted`."""
    response = csv_response(f"my-usage-{period_name(report.period)}.csv")
    writer = PaddedWriter(response, CSV_HEADER)
    for row in jobs.iterator(2000):
        hours = row["run"] / HOUR
        cards = row["total_cards"]
        label = (
            [csv_cell(by_label.key), csv_cell(row["label_value"])]
            if by_label is not None and row.get("label_value") is not None
            else []
        )
        writer.writerow(
            [
                "job",
                row["public_id"],
                csv_cell(row["job_name"]),
                "yes" if row["deleted"] else "",
                row["backend"],
                csv_cell(row["resource_pool"]),
                csv_cell(pool_names.get(row["resource_pool"], "")),
                csv_cell(CARD_TYPES_SEPARATOR.join(card_types(row))),
                str(cards),
                timezone.localtime(row["started_at"]).isoformat(timespec="seconds"),
                f"{hours:.2f}",
                f"{hours * cards:.2f}",
                "1",
                f"{hours:.2f}" if cards == 0 else "0.00",
                *label,
            ]
        )
    for pool in report.pools:
        figures = pool.figures
        writer.writerow(
            [
                "pool",
                "",
                "",
                "",
                pool.backend,
                csv_cell(pool.pool),
                csv_cell(pool_names.get(pool.pool, "")),
                csv_cell(pool.card_type),
                "",
                "",
                "",
                f"{figures.card_hours:.2f}",
                str(figures.jobs),
                f"{figures.cpu_job_hours:.2f}",
            ]
        )
    for scope, key, value, figures in label_scopes(by_label):
        writer.writerow(
            [
                scope,
                *[""] * 10,
                f"{figures.card_hours:.2f}",
                str(figures.jobs),
                f"{figures.cpu_job_hours:.2f}",
                csv_cell(key),
                csv_cell(value),
            ]
        )
    total = report.total
    writer.writerow(
        [
            "total",
            *[""] * 10,
            f"{total.card_hours:.2f}",
            str(total.jobs),
            f"{total.cpu_job_hours:.2f}",
        ]
    )
    return response
