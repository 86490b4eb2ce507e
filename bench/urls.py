from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.urls import include, path


def bare(request: HttpRequest) -> HttpResponse:
    """The baseline: a Django view that does nothing but answer."""
    return HttpResponse("ok")


urlpatterns = [
    path("bench/bare/", bare),
    path("", include("console.urls")),
]
