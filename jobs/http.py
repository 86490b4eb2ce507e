from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse
from django.shortcuts import resolve_url
from django_htmx.middleware import HtmxDetails


class AuthenticatedHttpRequest(HttpRequest):
    """A request from a logged-in user, as the console's views receive it."""

    user: User
    htmx: HtmxDetails


class HtmxLoginEndedMiddleware:
    """An htmx request whose log-in has ended (logged out in another tab, expired, or ended by
    a password change elsewhere) answers 401 instead of login_required's redirect.

    htmx follows a redirect and swaps what it gets, so a page's poll (the pools page, the job
    list, a job page, the wizard's idle count) would put the whole login page inside the part
    it refreshes and move the focus into it. An error answer is not swapped: the page stays as
    it is, with what was typed, and says in its request banner (console.js) that the log-in
    ended. Placed after HtmxMiddleware, which sets `request.htmx`."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (
            getattr(request, "htmx", False)
            and response.status_code == 302
            and not request.user.is_authenticated
            and urlsplit(response["Location"]).path == resolve_url(settings.LOGIN_URL)
        ):
            return HttpResponse(status=401, content_type="text/plain; charset=utf-8")
        return response
