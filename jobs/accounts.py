"""Log-in, log-out and changing one's password, in the console's style, with login
throttling (jobs.throttle); and one's access keys for the AIHC-compatible API."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse, reverse_lazy
from django.utils.cache import add_never_cache_headers
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods

from .api_keys import MAX_ACTIVE_KEYS, TooManyKeys, api_key_create
from .api_keys import api_key_revoke as api_key_revoke_service
from .http import AuthenticatedHttpRequest, post_only
from .models import ApiKey
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


# -- API access keys (jobs.api_keys) ----------------------------------------------------


class ApiKeyForm(forms.Form):
    description = forms.CharField(
        label=gettext_lazy("Description (optional)"),
        required=False,
        max_length=100,
        help_text=gettext_lazy("What the key is for, e.g. the script or machine using it."),
    )


def _api_keys_page(
    request: AuthenticatedHttpRequest, *, form: ApiKeyForm | None = None, **extra: Any
) -> HttpResponse:
    context = {
        "form": form or ApiKeyForm(),
        "keys": list(ApiKey.objects.filter(owner=request.user)),
        "endpoint": settings.SITE_URL,
        "max_keys": MAX_ACTIVE_KEYS,
        **extra,
    }
    response = render(request, "registration/api_keys.html", context)
    # A page showing a new secret is never cached: Back or history must not show it again.
    add_never_cache_headers(response)
    response["Cache-Control"] += ", no-store"
    return response


@require_http_methods(["GET", "POST"])
@login_required
def api_keys(request: AuthenticatedHttpRequest) -> HttpResponse:
    """The user's access keys: create one (its secret is shown on this answer only, never
    again), list them, revoke them. The secret is rendered into the answer to the POST, not
    stored in the session for a redirect: it exists in clear only in that one answer."""
    if request.method != "POST":
        return _api_keys_page(request)
    form = ApiKeyForm(request.POST)
    if not form.is_valid():
        return _api_keys_page(request, form=form)
    try:
        key, secret = api_key_create(
            owner=request.user, description=form.cleaned_data["description"]
        )
    except TooManyKeys:
        messages.error(
            request,
            _("You have %(count)d active keys, the most allowed; revoke one first.")
            % {"count": MAX_ACTIVE_KEYS},
        )
        return _api_keys_page(request, form=form)
    return _api_keys_page(request, new_key=key, new_secret=secret)


@post_only(lambda access_key_id: reverse("api-keys"))
@login_required
def api_key_revoke(request: AuthenticatedHttpRequest, access_key_id: str) -> HttpResponse:
    key = get_object_or_404(ApiKey, access_key_id=access_key_id, owner=request.user)
    if request.POST.get("confirmed") != "1":
        # Asked in the browser with JavaScript; without it, on the page first.
        return _api_keys_page(request, confirm_key=key)
    if api_key_revoke_service(key=key):
        messages.success(
            request,
            _("Key %(key)s revoked: requests signed with it are refused from now on.")
            % {"key": key.access_key_id},
        )
    return redirect("api-keys")
