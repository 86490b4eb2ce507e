"""Log-in, log-out and changing one's password, in the console's style, with login
throttling (jobs.throttle); and one's access keys for the AIHC-compatible API."""

from __future__ import annotations

import uuid
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse, reverse_lazy
from django.utils import timezone
from django.utils.cache import add_never_cache_headers
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext
from django.views import i18n
from django.views.decorators.http import require_http_methods

from .api_keys import (
    DEFAULT_EXPIRY_DAYS,
    EXPIRY_CHOICES,
    MAX_ACTIVE_KEYS,
    AlreadyCreated,
    TooManyKeys,
    api_key_create,
    password_set_by,
    usable_keys,
)
from .api_keys import api_key_revoke as api_key_revoke_service
from .api_keys import api_keys_revoke_all as api_keys_revoke_all_service
from .http import (
    AuthenticatedHttpRequest,
    is_console_address,
    login_ended_guard,
    post_only,
    typed_before_login,
)
from .languages import language_after_login, language_chosen
from .models import ApiKey, ApiKeyRevokeReason
from .throttle import ThrottledAuthenticationForm, ThrottledPasswordChangeForm
from .time_zones import SESSION_KEY as TIME_ZONE_SESSION_KEY
from .time_zones import (
    common_time_zones,
    known_time_zones,
    time_zone_chosen,
    time_zone_groups,
    zone_label,
)


class ConsoleAddressOnly:
    """`?next=` followed only to an address of the console (jobs.http.is_console_address);
    another is ignored, as Django ignores one of another site."""

    def get_redirect_url(self) -> str:
        url = super().get_redirect_url()  # type: ignore[misc]
        return url if url and is_console_address(url) else ""


class ConsoleLoginView(ConsoleAddressOnly, auth_views.LoginView):
    authentication_form = ThrottledAuthenticationForm
    redirect_authenticated_user = True

    def form_valid(self, form: Any) -> HttpResponse:
        # Logged in (the user_logged_in signal has kept this page's language for a user who
        # chose none): pages follow the language the user chose, on a browser without one.
        response = super().form_valid(form)
        language_after_login(request=self.request, response=response, user=form.get_user())
        return response


class ConsoleLogoutView(ConsoleAddressOnly, auth_views.LogoutView):
    """Logs out on a POST (the top bar's Log out). A GET, someone typing /logout/ or following
    a link to it, asks first (Django logs out on a POST only, so that no link or image on
    another site can): it answered a blank "405" page (QA round 25). Logged out already, it
    goes to the login page."""

    http_method_names = ["get", "head", "post", "options"]

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_authenticated:
            return redirect(settings.LOGIN_URL)
        return render(request, "registration/logout_confirm.html")

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        response = super().post(request, *args, **kwargs)
        messages.success(request, _("You have logged out."))
        return response


class PasswordChangeForm(ThrottledPasswordChangeForm):
    """The password change, and whether it also revokes the user's API keys."""

    # Ticked by default (decision): whoever changes a password after a suspected leak
    # expects every way in that came with the old one to end, an attacker's key included;
    # a routine change can untick it. A form posted without the box (a script, an old
    # page) revokes nothing: only a ticked box does.
    revoke_api_keys = forms.BooleanField(
        label=gettext_lazy("Also revoke all my API keys"),
        required=False,
        initial=True,
        help_text=gettext_lazy(
            "Scripts signing with them are refused from then on; create new keys for the "
            "ones you trust. Leave it ticked if you think the password leaked."
        ),
    )

    def validate_password_for_user(self, user: Any, password_field_name: str = "") -> None:
        # Django puts the validators' refusals (too similar to the user name, too short, too
        # common) under the confirmation box; they are about the new password itself, so they
        # go under it (qa113). Only once both boxes agree, as Django does.
        if "new_password2" in self.cleaned_data:
            super().validate_password_for_user(user, password_field_name="new_password1")


class TimeZoneForm(forms.Form):
    """The zone one's pages show times in (jobs.time_zones): the console's (empty) or one of
    the IANA zones this machine knows: the one chosen now first, then the common ones by the
    names people say, then the rest grouped by region, each with its offset today (qa113)."""

    time_zone = forms.CharField(
        label=gettext_lazy("Time zone"),
        required=False,
        help_text=gettext_lazy(
            "Times on the console's pages are shown in it, and the job list's dates are days "
            "in it. Alert mails and chat bots keep the console's time zone: they go to many people."
        ),
    )

    def __init__(self, *args: Any, current: str = "", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.initial.setdefault("time_zone", current)
        console = _("The console's: %(zone)s") % {"zone": zone_label(settings.TIME_ZONE)}
        first: list[Any] = [("", console)]
        if current:
            first.append((_("Chosen now"), [(current, zone_label(current))]))
        self.fields["time_zone"].widget = forms.Select(
            choices=[
                *first,
                (_("Common"), [(name, zone_label(name)) for name in common_time_zones()]),
                *(
                    (region, [(name, zone_label(name)) for name in names])
                    for region, names in time_zone_groups()
                ),
            ]
        )

    def clean_time_zone(self) -> str:
        name = self.cleaned_data["time_zone"]
        if name and name not in known_time_zones():
            shown = name if len(name) <= 64 else name[:63] + "…"
            raise forms.ValidationError(
                _(
                    "“%(value)s” is not a time zone this console knows: pick one from the list, "
                    "such as Europe/Berlin or America/Los_Angeles."
                )
                % {"value": shown.replace("\x00", "")}
            )
        return name


# The account page answered for its time zone form (saved: the redirect's query; refused:
# the page drawn again): focus on the time zone, which the message is about, instead of the
# password form's 旧密码 (Django's autofocus), where a keyboard or screen-reader user landed
# far from what they had just done (qa84).
TIME_ZONE_SAVED = "time-zone"


def _time_zone_focused(password_form: forms.Form, time_zone_form: TimeZoneForm) -> None:
    password_form.fields["old_password"].widget.attrs.pop("autofocus", None)
    time_zone_form.fields["time_zone"].widget.attrs["autofocus"] = True


def _current_time_zone(request: HttpRequest) -> str:
    """The zone this session shows times in, "" for the console's (jobs.time_zones)."""
    return str(request.session.get(TIME_ZONE_SESSION_KEY) or "")


class ConsolePasswordChangeView(auth_views.PasswordChangeView):
    """Every user changes their own password here (the admin's page is for staff only).
    Django keeps this session logged in and ends the account's other sessions; with the box
    ticked, the user's API keys are revoked in the same transaction as the new password."""

    form_class = PasswordChangeForm
    success_url = reverse_lazy("job-list")

    def get_form_kwargs(self) -> dict[str, Any]:
        return {**super().get_form_kwargs(), "request": self.request}

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        usable = ApiKey.objects.filter(usable_keys(), owner=self.request.user).count()
        time_zone_form = TimeZoneForm(current=_current_time_zone(self.request))
        context = super().get_context_data(**kwargs)
        if self.request.method == "GET" and self.request.GET.get("saved") == TIME_ZONE_SAVED:
            _time_zone_focused(context["form"], time_zone_form)
        return {
            **context,
            "usable_keys": usable,
            "time_zone_form": time_zone_form,
        }

    def form_valid(self, form: PasswordChangeForm) -> HttpResponse:
        # The keys are revoked where every password set revokes them (jobs.api_keys
        # .password_saved), here only if the box is ticked.
        keep = not form.cleaned_data.get("revoke_api_keys")
        with transaction.atomic(), password_set_by(actor=form.user, revoke=not keep) as setter:
            response = super().form_valid(form)
        messages.success(self.request, _("Your password was changed."))
        if setter.revoked:
            messages.success(self.request, _revoked_message(setter.revoked))
        return response


def set_language(request: HttpRequest) -> HttpResponse:
    """Django's set_language (the top bar's and the admin's 中文/EN), which sets the language
    cookie; a logged-in user's choice is also kept for their mails (jobs.languages)."""
    response = i18n.set_language(request)
    if response.status_code == 302 and not is_console_address(response["Location"]):
        response["Location"] = reverse("job-list")
    if settings.LANGUAGE_COOKIE_NAME in response.cookies:  # a language Django accepted
        language_chosen(user=request.user, language=str(request.POST.get("language", "")))
    return response


@post_only(lambda: reverse("password-change"))
@login_required
def time_zone_set(request: AuthenticatedHttpRequest) -> HttpResponse:
    """The account page's time zone (a plain form: back to the page, the choice said). A zone
    not known is refused on the field, on the page again."""
    form = TimeZoneForm(request.POST, current=_current_time_zone(request))
    if not form.is_valid():
        usable = ApiKey.objects.filter(usable_keys(), owner=request.user).count()
        password_form = PasswordChangeForm(user=request.user, request=request)
        _time_zone_focused(password_form, form)
        context = {"form": password_form, "usable_keys": usable, "time_zone_form": form}
        return render(request, "registration/password_change_form.html", context)
    chosen = form.cleaned_data["time_zone"]
    time_zone_chosen(request=request, user=request.user, time_zone=chosen)
    messages.success(
        request,
        _("Times are now shown in %(zone)s.") % {"zone": zone_label(chosen)}
        if chosen
        else _("Times are now shown in the console's time zone: %(zone)s.")
        % {"zone": zone_label(settings.TIME_ZONE)},
    )
    return redirect(f"{reverse('password-change')}?saved={TIME_ZONE_SAVED}")


login = ConsoleLoginView.as_view()
logout = ConsoleLogoutView.as_view()
password_change = ConsolePasswordChangeView.as_view()


# -- API access keys (jobs.api_keys) ----------------------------------------------------


def _expiry_label(days: int | None) -> str:
    if days is None:
        return _("Never expires")
    if days == 365:
        return _("1 year (365 days)")
    return ngettext("%(days)d day", "%(days)d days", days) % {"days": days}


class ApiKeyForm(forms.Form):
    description = forms.CharField(
        label=gettext_lazy("Description (optional)"),
        required=False,
        max_length=100,
        help_text=gettext_lazy("What the key is for, e.g. the script or machine using it."),
    )
    expires_in = forms.ChoiceField(
        label=gettext_lazy("Expires after"),
        choices=(),
        # Not sent (a page from before expiry existed, a script): the default lifetime,
        # which the answer shows; a value not offered is refused on the field.
        required=False,
        initial=str(DEFAULT_EXPIRY_DAYS),
        help_text=gettext_lazy(
            "From then on the key is refused and a new one must be created. It cannot be extended."
        ),
    )

    # One per drawn form (jobs.api_keys.api_key_create): the form sent twice makes one key.
    create_key = forms.CharField(required=False, max_length=32, widget=forms.HiddenInput)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not self.is_bound and not self.initial.get("create_key"):
            # Given when the form is filled in again after a log-in that ended (api_keys).
            self.initial["create_key"] = uuid.uuid4().hex
        # Built per form: the labels are in the language of the request.
        self.fields["expires_in"].choices = [
            ("never" if days is None else str(days), _expiry_label(days)) for days in EXPIRY_CHOICES
        ]

    def expires_in_days(self) -> int | None:
        value = self.cleaned_data["expires_in"] or str(DEFAULT_EXPIRY_DAYS)
        return None if value == "never" else int(value)


# The create form's fields filled in again after a log-in that had ended (api_keys).
API_KEY_FORM_KEPT = ("description", "expires_in", "create_key")


def _keys_in_order(keys: list[ApiKey]) -> list[ApiKey]:
    """Working keys first, the soonest to expire on top (never-expiring ones last, newest
    first among them); then the ones that ended, most recently ended first."""
    now = timezone.now()
    usable = [k for k in keys if not k.is_revoked and not k.is_expired(now=now)]
    ended = [k for k in keys if k not in usable]
    usable.sort(key=lambda k: -k.created_at.timestamp())
    usable.sort(key=lambda k: (k.expires_at is None, k.expires_at or now))
    ended.sort(key=lambda k: min(t for t in (k.revoked_at, k.expires_at) if t), reverse=True)
    return usable + ended


def _revoked_message(revoked: list[ApiKey]) -> str:
    return ngettext(
        "%(count)d API key revoked: requests signed with it are refused from now on.",
        "%(count)d API keys revoked: requests signed with them are refused from now on.",
        len(revoked),
    ) % {"count": len(revoked)}


def _api_keys_page(
    request: AuthenticatedHttpRequest, *, form: ApiKeyForm | None = None, **extra: Any
) -> HttpResponse:
    keys = _keys_in_order(list(ApiKey.objects.filter(owner=request.user)))
    context = {
        "form": form or ApiKeyForm(),
        "keys": keys,
        "usable_count": sum(1 for k in keys if not k.is_revoked and not k.expired),
        "endpoint": settings.SITE_URL,
        "max_keys": MAX_ACTIVE_KEYS,
        **extra,
    }
    response = render(request, "registration/api_keys.html", context)
    # A page showing a new secret is never cached: Back or history must not show it again.
    add_never_cache_headers(response)
    response["Cache-Control"] += ", no-store"
    return response


@require_http_methods(["GET", "HEAD", "POST"])
# A key asked for after the log-in ended is not made, and the login page says so; its name and
# expiry come back in the form once its user has logged in, with the form's create_key, so
# pressing Create key again makes it once (left30: what was typed was lost).
@login_ended_guard(lambda: reverse("api-keys"), kept=API_KEY_FORM_KEPT)
@login_required
def api_keys(request: AuthenticatedHttpRequest) -> HttpResponse:
    """The user's access keys: create one (its secret is shown on this answer only, never
    again), list them, revoke them. The secret is rendered into the answer to the POST, not
    stored in the session for a redirect: it exists in clear only in that one answer."""
    if request.method != "POST":
        typed = typed_before_login(request, page=reverse("api-keys"))
        if typed is None:
            return _api_keys_page(request)
        return _api_keys_page(request, form=ApiKeyForm(initial=typed.dict()))
    form = ApiKeyForm(request.POST)
    if not form.is_valid():
        return _api_keys_page(request, form=form)
    try:
        key, secret = api_key_create(
            owner=request.user,
            description=form.cleaned_data["description"],
            expires_in_days=form.expires_in_days(),
            create_key=form.cleaned_data["create_key"],
        )
    except AlreadyCreated as made:
        messages.warning(
            request,
            _(
                "This form already created key %(key)s, so no other key was made. Its secret "
                "key was shown only on the page that answered it: if you did not copy it, "
                "revoke that key and create another."
            )
            % {"key": made.key.access_key_id},
        )
        return _api_keys_page(request)
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
    if api_key_revoke_service(key=key, reason=ApiKeyRevokeReason.OWNER):
        messages.success(
            request,
            _("Key %(key)s revoked: requests signed with it are refused from now on.")
            % {"key": key.access_key_id},
        )
    return redirect("api-keys")


@require_http_methods(["GET", "HEAD", "POST"])
@login_required
def api_keys_revoke_all(request: AuthenticatedHttpRequest) -> HttpResponse:
    """Revoke all: the page asks first, listing the keys that still work (no JavaScript
    needed); its form's POST revokes every key of the user that works at that moment."""
    if request.method == "POST":
        revoked = api_keys_revoke_all_service(owner=request.user)
        if revoked:
            messages.success(request, _revoked_message(revoked))
        else:
            messages.info(request, _("You have no active keys to revoke."))
        return redirect("api-keys")
    keys = list(
        ApiKey.objects.filter(usable_keys(), owner=request.user).order_by("-created_at", "-id")
    )
    return render(request, "registration/api_keys_revoke_all.html", {"keys": keys})
