from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from .http import AuthenticatedHttpRequest
from .models import Job


@require_GET
@login_required
def job_list(request: AuthenticatedHttpRequest) -> HttpResponse:
    jobs = Job.objects.filter(owner=request.user).order_by("-created_at")[:50]
    return render(request, "jobs/job_list.html", {"jobs": jobs})


@require_GET
@login_required
def job_detail(request: AuthenticatedHttpRequest, public_id: str) -> HttpResponse:
    job = get_object_or_404(Job, public_id=public_id, owner=request.user)
    return render(request, "jobs/job_detail.html", {"job": job})
