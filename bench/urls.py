from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.urls import include, path


def bare(request: HttpRequest) -> HttpResponse:
    """The baseline: a Django view that does nothing but answer."""
    return HttpResponse("ok")


@login_required
def bare_logged_in(request: HttpRequest) -> HttpResponse:
    """What any page of the console pays before its own work: the session and user queries."""
    return HttpResponse(f"ok {request.user.pk}")


urlpatterns = [
    path("bench/bare/", bare),
    path("bench/bare-logged-in/", bare_logged_in),
    path("", include("console.urls")),
]
