from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from .http import AuthenticatedHttpRequest
from .models import Job


@require_GET
@login_required
def job_list(request: AuthenticatedHttpRequest) -> HttpResponse:
    jobs = Job.objects.filter(owner=request.user).order_by("-created_at")[:50]
    return render(request, "jobs/job_list.html", {"jobs": jobs})
