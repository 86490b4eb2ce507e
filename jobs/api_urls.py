"""The AIHC-compatible API's v1 REST paths (jobs.api_views), mounted at /api/v1/."""

from __future__ import annotations

from django.urls import path, re_path

from . import api_views

urlpatterns = [
    path("aijobs", api_views.jobs, name="api-jobs"),
    path("aijobs/<str:job_id>", api_views.job, name="api-job"),
    path("aijobs/<str:job_id>/stop", api_views.job_stop_api, name="api-job-stop"),
    path("aijobs/<str:job_id>/events", api_views.job_events, name="api-job-events"),
    path("aijobs/<str:job_id>/nodes", api_views.job_nodes, name="api-job-nodes"),
    path("aijobs/<str:job_id>/metrics", api_views.job_metrics, name="api-job-metrics"),
    path("aijobs/<str:job_id>/pods/<str:pod>/events", api_views.pod_events, name="api-pod-events"),
    path("aijobs/<str:job_id>/pods/<str:pod>/logs", api_views.pod_logs, name="api-pod-logs"),
    path(
        "aijobs/<str:job_id>/pods/<str:pod>/webterminal",
        api_views.pod_web_terminal,
        name="api-pod-web-terminal",
    ),
    path("resourcepools", api_views.resource_pools, name="api-resource-pools"),
    path("resourcepools/<str:pool_id>", api_views.resource_pool, name="api-resource-pool"),
    path("resourcepools/<str:pool_id>/queue", api_views.queues, name="api-queues"),
    path(
        "resourcepools/<str:pool_id>/queue/<str:queue_name>",
        api_views.queue,
        name="api-queue",
    ),
    # Any other AIHC path (pool nodes, web terminal, queue changes...): a signed JSON answer saying so.
    re_path(r"^(?P<rest>.*)$", api_views.not_served, name="api-not-served"),
]
