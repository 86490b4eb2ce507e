"""Log-in, log-out and changing one's password, in the console's style, with login
throttling (jobs.throttle)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse
from django.urls import reverse_lazy
from django.utils.translation import gettext as _

from .throttle import ThrottledAuthenticationForm, ThrottledPasswordChangeForm


class ConsoleLoginView(auth_views.LoginView):
    authentication_form = ThrottledAuthenticationForm
    redirect_authenticated_user = True


class ConsoleLogoutView(auth_views.LogoutView):
    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        response = super().post(request, *args, **kwargs)
        messages.success(request, _("You have logged out."))
        return response


class ConsolePasswordChangeView(auth_views.PasswordChangeView):
    """Every user changes their own password here (the admin's page is for staff only).
    Django keeps this session logged in and ends the account's other sessions."""

    form_class = ThrottledPasswordChangeForm
    success_url = reverse_lazy("job-list")

    def get_form_kwargs(self) -> dict[str, Any]:
        return {**super().get_form_kwargs(), "request": self.request}

    def form_valid(self, form: ThrottledPasswordChangeForm) -> HttpResponse:
        response = super().form_valid(form)
        messages.success(self.request, _("Your password was changed."))
        return response


login = ConsoleLoginView.as_view()
logout = ConsoleLogoutView.as_view()
password_change = ConsolePasswordChangeView.as_view()
