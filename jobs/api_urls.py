"""The AIHC-compatible API's v1 REST paths (jobs.api_views), mounted at /api/v1/."""

from __future__ import annotations

from django.urls import path, re_path

from . import api_views

urlpatterns = [
    path("aijobs", api_views.jobs, name="api-jobs"),
    path("aijobs/<str:job_id>", api_views.job, name="api-job"),
    path("aijobs/<str:job_id>/stop", api_views.job_stop_api, name="api-job-stop"),
    path("aijobs/<str:job_id>/events", api_views.job_events, name="api-job-events"),
    path("aijobs/<str:job_id>/pods/<str:pod>/logs", api_views.pod_logs, name="api-pod-logs"),
    # Any other AIHC path (pools, queues, metrics...): a signed JSON answer saying so.
    re_path(r"^(?P<rest>.*)$", api_views.not_served, name="api-not-served"),
]
