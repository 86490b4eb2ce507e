from __future__ import annotations

from django.urls import path

from . import api_v2, pool_views, views, wizard_views

urlpatterns = [
    # The job list; an SDK's signed request here is AIHC's v2 action API (jobs.api_v2).
    path("", api_v2.actions_or(views.job_list), name="job-list"),
    # Stop / Delete selected on the list (before jobs/<public_id>/, which would take "bulk").
    path("jobs/bulk/", views.job_bulk_view, name="job-bulk"),
    # Compare jobs (对比任务): 2 to 8 jobs by their ids in the query (?job=a&job=b).
    path("compare/", views.job_compare, name="job-compare"),
    # Stop the group: every unfinished task of a queue group (a task's page, the list by group).
    path("groups/<int:group_id>/stop/", views.group_stop_view, name="group-stop"),
    path("jobs/<str:public_id>/", views.job_detail, name="job-detail"),
    path("jobs/<str:public_id>/live/", views.job_live, name="job-live"),
    path("jobs/<str:public_id>/metrics/", views.job_metrics, name="job-metrics"),
    path("jobs/<str:public_id>/logs/", views.job_logs, name="job-logs"),
    path("jobs/<str:public_id>/logs/search/", views.job_log_search, name="job-log-search"),
    path(
        "jobs/<str:public_id>/logs/<str:replica>/download/",
        views.job_log_download,
        name="job-log-download",
    ),
    # Hang analysis (Hang 解析): the captured call stacks, and Capture stacks.
    path("jobs/<str:public_id>/hang/", views.job_hang, name="job-hang"),
    path(
        "jobs/<str:public_id>/hang/capture/", views.job_hang_capture_view, name="job-hang-capture"
    ),
    path("jobs/<str:public_id>/stop/", views.job_stop_view, name="job-stop"),
    path("jobs/<str:public_id>/delete/", views.job_delete_view, name="job-delete"),
    path("jobs/<str:public_id>/rerun/", views.job_rerun_view, name="job-rerun"),
    path(
        "jobs/<str:public_id>/submit-again/",
        views.job_submit_again_view,
        name="job-submit-again",
    ),
    # The resource pools, their queues and their load (jobs/pool_views.py).
    path("pools/", pool_views.pool_list, name="pool-list"),
    # The create-training-job wizard (jobs/wizard_views.py).
    path("create/", wizard_views.wizard_start, name="wizard-start"),
    path("create/import/", wizard_views.wizard_import, name="wizard-import"),
    path("create/recover/<slug:step>/", wizard_views.wizard_recover, name="wizard-recover"),
    path("create/<uuid:draft_id>/submit/", wizard_views.wizard_submit, name="wizard-submit"),
    path("create/<uuid:draft_id>/discard/", wizard_views.wizard_discard, name="wizard-discard"),
    path("create/<uuid:draft_id>/queues/", wizard_views.wizard_queues, name="wizard-queues"),
    path("create/<uuid:draft_id>/aiak/", wizard_views.wizard_aiak, name="wizard-aiak"),
    path("create/<uuid:draft_id>/idle/", wizard_views.wizard_idle, name="wizard-idle"),
    path("create/<uuid:draft_id>/totals/", wizard_views.wizard_totals, name="wizard-totals"),
    path("create/<uuid:draft_id>/example/", wizard_views.wizard_example, name="wizard-example"),
    path(
        "create/<uuid:draft_id>/mount-row/", wizard_views.wizard_mount_row, name="wizard-mount-row"
    ),
    path("create/<uuid:draft_id>/<slug:step>/", wizard_views.wizard_step, name="wizard-step"),
    path("jobs/<str:public_id>/copy/", wizard_views.job_copy, name="job-copy"),
]
