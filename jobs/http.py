from __future__ import annotations

from django.contrib.auth.models import User
from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails


class AuthenticatedHttpRequest(HttpRequest):
    """A request from a logged-in user, as the console's views receive it."""

    user: User
    htmx: HtmxDetails
