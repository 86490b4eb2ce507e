from __future__ import annotations

from functools import cache

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.template import engines
from django.template.backends.django import Template
from django.urls import include, path


def bare(request: HttpRequest) -> HttpResponse:
    """The baseline: a Django view that does nothing but answer."""
    return HttpResponse("ok")


@login_required
def bare_logged_in(request: HttpRequest) -> HttpResponse:
    """What any page of the console pays before its own work: the session and user queries."""
    return HttpResponse(f"ok {request.user.pk}")


@cache
def _frame_template() -> Template:
    # Compiled once, as the cached template loader keeps a page's template with DEBUG off.
    return engines["django"].from_string('{% extends "base.html" %}')


def _frame(request: HttpRequest) -> HttpResponse:
    return HttpResponse(_frame_template().render({}, request))


@login_required
def frame(request: HttpRequest) -> HttpResponse:
    """The page frame alone: base.html (top bar, language switch, messages, scripts and
    styles, context processors) around an empty content block, for a logged-in user."""
    return _frame(request)


def frame_anonymous(request: HttpRequest) -> HttpResponse:
    """The same frame for a visitor who is not logged in (as the log-in page draws it)."""
    return _frame(request)


urlpatterns = [
    path("bench/bare/", bare),
    path("bench/bare-logged-in/", bare_logged_in),
    path("bench/frame/", frame),
    path("bench/frame-anonymous/", frame_anonymous),
    path("", include("console.urls")),
]
