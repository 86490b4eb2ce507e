"""Login throttling against password guessing.

Failed log-ins are rows in the database (so every server process counts the same ones),
counted per username and per client address over a sliding window. Once either count
reaches its limit, log-ins for that username or from that address are refused before the
password is even checked, with a message saying when to try again. A browser that has logged
in as that user before (KNOWN_LOGIN_COOKIE) is held back by its own failures alone, so that
neither a guesser's failures for the account nor those from its address lock its owner out.
A successful log-in clears the failures recorded for that username (and that browser).
"""

from __future__ import annotations

import ipaddress
import math
import secrets
from datetime import timedelta
from typing import Any

from django import forms
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.forms import AuthenticationForm, PasswordChangeForm
from django.contrib.auth.signals import user_logged_in, user_login_failed
from django.core import signing
from django.dispatch import receiver
from django.http import HttpRequest
from django.utils import timezone
from django.utils.crypto import constant_time_compare, salted_hmac
from django.utils.translation import gettext as _
from django.utils.translation import pgettext_lazy

from .models import LoginFailure


def client_ip(request: HttpRequest | None) -> str | None:
    """The client's address. Behind the HTTPS proxy (HTTPS=1), from a connection whose peer
    is one of TRUSTED_PROXIES, it is the last X-Forwarded-For hop, the one the proxy itself
    appended (a port after it, as some proxies add, dropped); otherwise, or when that hop is
    no IP address, the socket's peer address. From any other peer the header is whatever the
    client wrote (qa90: anyone reaching gunicorn directly named the office's NAT address and
    locked all its engineers out), as gunicorn trusts X-Forwarded-Proto only from its
    forwarded_allow_ips. A hop that is no address, stored as it was, was refused by
    PostgreSQL's inet column, and the log-in or API request answered 500."""
    if request is None:
        return None
    peer = _address(request.META.get("REMOTE_ADDR") or "")
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    if getattr(settings, "SECURE_PROXY_SSL_HEADER", None) and forwarded and _trusted(peer):
        address = _address(forwarded.split(",")[-1].strip())
        if address:
            return address
    return peer


def _trusted(peer: str | None) -> bool:
    if not peer:
        return False
    address = ipaddress.ip_address(peer)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        # gunicorn listening on "::" takes IPv4 connections too, as ::ffff:127.0.0.1.
        address = address.ipv4_mapped
    return any(
        address in ipaddress.ip_network(proxy, strict=False) for proxy in settings.TRUSTED_PROXIES
    )


def _address(text: str) -> str | None:
    """`text` as an IP address ("1.2.3.4", "1.2.3.4:5678", "[2001:db8::1]:443", "2001:db8::1"),
    or None when it is none."""
    host = text
    if text.startswith("[") and "]" in text:
        host = text[1 : text.index("]")]
    elif text.count(":") == 1:
        host = text.partition(":")[0]
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return None


# The names jobs.api_keys counts an access key's failures under ("api-key:<id>@<address>"):
# no account's (a username holds no ":"), and never counted for a log-in (see below).
API_KEY_PREFIX = "api-key:"


def _window_start() -> Any:
    return timezone.now() - timedelta(minutes=settings.LOGIN_THROTTLE_MINUTES)


def _counted_name(username: str) -> str:
    """The name a failure is counted under: in lower case, then cut to the column's length.
    Lowering first: "İ" lowers to two characters, so a 150-character name of them cut first
    was 300 after, which PostgreSQL refused with a 500 on the login page (QA round 41). NULs
    left out: PostgreSQL refuses one in a query, and the login form, which refuses such a name
    itself, asks the throttle first (no account's name holds one)."""
    name = username.replace("\x00", "").lower()
    return name[: LoginFailure._meta.get_field("username").max_length]


def login_failure_record(*, username: str, request: HttpRequest | None) -> None:
    since = _window_start()
    LoginFailure.objects.filter(created_at__lt=since).delete()
    LoginFailure.objects.create(username=_counted_name(username), ip=client_ip(request))


def login_locked_minutes(
    *, username: str, request: HttpRequest | None, by_address: bool = True, user_limit: int = 0
) -> int:
    """Minutes until a log-in for `username` from this client may be tried again; 0: now.
    `by_address` False: the username's own count alone (the address's count left aside).
    `user_limit`: the username's count's (LOGIN_FAILURES_PER_USERNAME when 0)."""
    since = _window_start()
    ip = client_ip(request) if by_address else None
    recent = LoginFailure.objects.filter(created_at__gte=since)
    by_user = recent.filter(username=_counted_name(username))
    by_ip = recent.filter(ip=ip) if ip else LoginFailure.objects.none()
    unlock_at = None
    for failures, limit in (
        (by_user, user_limit or settings.LOGIN_FAILURES_PER_USERNAME),
        (by_ip, settings.LOGIN_FAILURES_PER_IP),
    ):
        # Locked until enough of the failures in the window have aged out of it.
        times = list(failures.order_by("-created_at").values_list("created_at", flat=True)[:limit])
        if len(times) >= limit:
            until = times[-1] + timedelta(minutes=settings.LOGIN_THROTTLE_MINUTES)
            unlock_at = max(unlock_at, until) if unlock_at else until
    if unlock_at is None:
        return 0
    return max(1, math.ceil((unlock_at - timezone.now()).total_seconds() / 60))


def login_failures_clear(*, username: str) -> None:
    LoginFailure.objects.filter(username=_counted_name(username)).delete()


# A browser that logged in as someone carries this cookie (OWASP's "device cookie"): from it,
# that account's log-in is judged by the browser's own failures alone (LOGIN_FAILURES_PER_DEVICE),
# not by the account's count nor its address's. The address's count stops one guesser trying
# many usernames; it also refused everyone behind the same address (an office NAT, every local
# user at 127.0.0.1 without a proxy) once anyone there failed 20 times (qa90). The account's
# count stops guessing one password from anywhere; it also let anyone lock any named account
# out, its owner's own browser too, with five wrong passwords (fix110). A guesser has no such
# cookie for the accounts it tries; a first log-in from a new browser still waits, as before.
#
# The cookie names no one (fix110: it was the username in base64, kept a year after logging
# out, telling who used a shared computer): a random id of the browser and an HMAC, with the
# secret key, of that id and the account. Only the server can tell which account it is for,
# and only by being asked about one (the name typed). Nothing is stored: the id is what the
# browser's own failures are counted under (DEVICE_PREFIX).
KNOWN_LOGIN_COOKIE = "known_login"
KNOWN_LOGIN_SALT = "jobs.throttle.known-login"
KNOWN_LOGIN_AGE = timedelta(days=365)
# The name a known browser's failures are counted under: no account's (a username holds no
# ":"; one typed with it is counted as "login:..." by _count_failed_login).
DEVICE_PREFIX = "device:"


def _device_proof(device: str, user: AbstractBaseUser) -> str:
    """The account itself, not its name lower-cased as failures are counted: log-in tells
    "Émile" from "émile" (two accounts, or a rename), so a browser known to one was let guess
    the other's password unthrottled (review of fix110). And its password (the session auth
    hash): a password changed, say after a leak, forgets every browser known before."""
    said = f"{device}\n{user.pk}\n{user.get_session_auth_hash()}"
    return salted_hmac(KNOWN_LOGIN_SALT, said, algorithm="sha256").hexdigest()[:32]


def known_login_cookie(user: AbstractBaseUser) -> str:
    """A new KNOWN_LOGIN_COOKIE value for a browser that just logged in as `user`."""
    device = secrets.token_hex(16)
    return signing.dumps(f"{device}.{_device_proof(device, user)}", salt=KNOWN_LOGIN_SALT)


def _account(username: str) -> AbstractBaseUser | None:
    """The account a log-in as `username` is for: its name exactly, as log-in reads it."""
    if "\x00" in username:  # (PostgreSQL refuses it in a query; no account's name holds one)
        return None
    model = get_user_model()
    try:
        return model._default_manager.get_by_natural_key(username)
    except model.DoesNotExist:
        return None


def known_device(*, request: HttpRequest | None, username: str) -> str | None:
    """The id of this browser when it has logged in as the account named `username` since
    its password was last set (KNOWN_LOGIN_COOKIE), else None (no cookie, another account's,
    an expired or forged one)."""
    value = request.COOKIES.get(KNOWN_LOGIN_COOKIE) if request is not None else None
    if not value:
        return None
    try:
        said = signing.loads(value, salt=KNOWN_LOGIN_SALT, max_age=KNOWN_LOGIN_AGE)
    except signing.BadSignature:
        return None
    device, _dot, proof = str(said).partition(".")
    if not device or (user := _account(username)) is None:
        return None
    if not constant_time_compare(proof, _device_proof(device, user)):
        return None
    return device


def known_login(*, request: HttpRequest | None, username: str) -> bool:
    """Whether this browser has logged in as `username` (KNOWN_LOGIN_COOKIE)."""
    return known_device(request=request, username=username) is not None


def login_failure_name(*, request: HttpRequest | None, username: str) -> str:
    """What a failed log-in as `username` from this browser counts against: the browser's own
    id when it has logged in as that account before, else the account."""
    device = known_device(request=request, username=username)
    return DEVICE_PREFIX + device if device else username


def login_locked_minutes_for(*, username: str, request: HttpRequest | None) -> int:
    """login_locked_minutes for a log-in (or a password check) as `username` from this
    browser: a known one by its own failures alone, any other by the account's and the
    address's."""
    device = known_device(request=request, username=username)
    if device is None:
        return login_locked_minutes(username=username, request=request)
    return login_locked_minutes(
        username=DEVICE_PREFIX + device,
        request=request,
        by_address=False,
        user_limit=settings.LOGIN_FAILURES_PER_DEVICE,
    )


class KnownLoginMiddleware:
    """Gives a browser that has just logged in (the console's login or the admin's) its
    KNOWN_LOGIN_COOKIE."""

    def __init__(self, get_response: Any) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> Any:
        response = self.get_response(request)
        user = getattr(request, "logged_in_as", None)
        if user is not None:
            response.set_cookie(
                KNOWN_LOGIN_COOKIE,
                known_login_cookie(user),
                max_age=int(KNOWN_LOGIN_AGE.total_seconds()),
                path=settings.SESSION_COOKIE_PATH,
                secure=settings.SESSION_COOKIE_SECURE,
                httponly=True,
                samesite="Lax",
            )
        return response


@receiver(user_login_failed)
def _count_failed_login(sender: Any, credentials: dict[str, Any], request: Any = None, **kw: Any):
    username = str(credentials.get("username") or "")
    if username.lower().startswith((API_KEY_PREFIX, DEVICE_PREFIX)):
        # Typed into a log-in form, an access key's name would count towards locking that
        # key out (a browser id's, that browser); it still counts for the address, under a
        # name no one logs in with.
        username = "login:" + username
    login_failure_record(
        username=login_failure_name(request=request, username=username), request=request
    )


@receiver(user_logged_in)
def _forget_failed_logins(sender: Any, request: Any, user: Any, **kw: Any) -> None:
    login_failures_clear(username=user.get_username())
    if request is not None:
        device = known_device(request=request, username=user.get_username())
        if device is not None:
            login_failures_clear(username=DEVICE_PREFIX + device)
        request.logged_in_as = user  # KnownLoginMiddleware


def _throttled(minutes: int) -> forms.ValidationError:
    return forms.ValidationError(
        _(
            "Too many failed log-ins for this account or from this address. "
            "Try again in %(minutes)d min."
        )
        % {"minutes": minutes},
        code="throttled",
    )


class ThrottledAuthenticationMixin:
    """Refuses the log-in before checking the password while the throttle is on."""

    request: HttpRequest | None
    data: Any

    def clean(self) -> dict[str, Any]:
        # The username as the form cleaned it (spaces stripped, NFKC-normalised), which is the
        # one authenticated and counted on failure: the raw text would let " alice" or
        # "ａｌｉｃｅ" (fullwidth) log in as alice past her count.
        username = str(self.cleaned_data.get("username") or self.data.get("username") or "")
        minutes = login_locked_minutes_for(username=username, request=self.request)
        if minutes:
            raise _throttled(minutes)
        return super().clean()  # type: ignore[misc,no-any-return]


class ThrottledAuthenticationForm(ThrottledAuthenticationMixin, AuthenticationForm):
    # Django's English, with the console's own Chinese (qa92: Django's read
    # "请输入一个正确的用户名和密码。注意，两者都区分大小写。", which also said both are).
    error_messages = {
        **AuthenticationForm.error_messages,
        "invalid_login": pgettext_lazy(
            "log-in form",
            "Please enter a correct %(username)s and password. Note that both fields may be "
            "case-sensitive.",
        ),
    }

    def full_clean(self) -> None:
        super().full_clean()
        # A refused log-in is one error for the pair (which of the two was wrong is not
        # said): both fields are marked, and a screen reader says the alert above them
        # (#login-error, login.html) when focus comes back to 用户名 (qa84: nothing was said).
        if self.is_bound and self.non_field_errors():
            for name in ("username", "password"):
                self.fields[name].widget.attrs.update(
                    {"aria-invalid": "true", "aria-describedby": "login-error"}
                )


class ThrottledAdminAuthenticationForm(ThrottledAuthenticationMixin, AdminAuthenticationForm):
    pass


class ThrottledPasswordChangeForm(PasswordChangeForm):
    """Changing one's password asks for the current one. A wrong one counts as a failed
    log-in of that account, and the throttle holds here too: a session left open on someone
    else's screen cannot be used to guess the password."""

    def __init__(self, *args: Any, request: HttpRequest | None = None, **kwargs: Any) -> None:
        self.request = request
        super().__init__(*args, **kwargs)

    def clean_old_password(self) -> str:
        username = self.user.get_username()
        minutes = login_locked_minutes_for(username=username, request=self.request)
        if minutes:
            raise _throttled(minutes)
        try:
            return super().clean_old_password()
        except forms.ValidationError:
            name = login_failure_name(request=self.request, username=username)
            login_failure_record(username=name, request=self.request)
            raise
