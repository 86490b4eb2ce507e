"""Log-in and log-out, in the console's style, with login throttling (jobs.throttle)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse
from django.utils.translation import gettext as _

from .throttle import ThrottledAuthenticationForm


class ConsoleLoginView(auth_views.LoginView):
    authentication_form = ThrottledAuthenticationForm
    redirect_authenticated_user = True


class ConsoleLogoutView(auth_views.LogoutView):
    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        response = super().post(request, *args, **kwargs)
        messages.success(request, _("You have logged out."))
        return response


login = ConsoleLoginView.as_view()
logout = ConsoleLogoutView.as_view()
