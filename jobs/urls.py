from __future__ import annotations

from django.urls import path

from . import views

urlpatterns = [
    path("", views.job_list, name="job-list"),
    path("jobs/<str:public_id>/", views.job_detail, name="job-detail"),
]
