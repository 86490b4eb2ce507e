"""Access keys for the AIHC-compatible API, and the strict bce-auth-v1 check of each request.

Decisions (README "Scripts and SDKs"):

- A key is an AIHC-style pair: a 32-hex access key ID and a 32-hex secret key, so tools
  that expect Baidu's format take it. Each user has at most MAX_ACTIVE_KEYS usable keys, also
  when keys are made at the same instant (counted and made under the owner's row lock,
  jobs.locks).
- Storage. bce-auth-v1 is an HMAC: checking a request needs the secret itself, so it cannot
  be a one-way hash like a password. It is stored encrypted (`seal`) with AES-256-GCM from the
  `cryptography` package (a random nonce each time, the access key ID as associated data), under
  a key derived from SECRET_KEY with HKDF-SHA256, so a database dump alone gives no usable
  secret; the console keeps no cipher of its own making. SECRET_KEY_FALLBACKS are
  tried when opening, so rotating SECRET_KEY keeps keys working while the old one is listed.
  A secret is shown once, on the page that created it, and never logged.
- Verification (`verify_request`) rebuilds the canonical request from what arrived (method,
  path, query, the signed headers' values) and computes the expected signature with the
  console's own signer (jobs.aihc.signer, checked against Baidu's published vectors). The
  signed headers must include host; an empty list means bce-auth-v1's default set. The
  timestamp in the Authorization header must be at most `min(expiration, MAX_EXPIRATION_SECONDS)`
  old and at most CLOCK_SKEW_SECONDS in the future.
- bce-auth-v1 does not sign the body itself, only the headers named. A signed Content-MD5 or
  x-bce-content-sha256 is checked against the body; a signed Content-Length is enforced by
  the web server. Clients that sign neither (the [aihc] CLI, the console's own client) get
  no body integrity from the signature: use HTTPS.
- Unknown or revoked key IDs and wrong signatures count as failed log-ins (jobs.throttle),
  per key ID from each address (as the username "api-key:<id>@<address>", which no real
  username can be) and per client address: guessing a secret is throttled like guessing a
  password. Not per key ID alone: the ID travels in clear in every request, and a count
  anyone could fill would let whoever saw it keep the owner's scripts refused, while a
  128-bit secret cannot be guessed however many tries get through. Expired or malformed
  requests are mistakes, not guesses, and do not count.
- Expiry. A key is made with a lifetime (EXPIRY_CHOICES: 30, 90 or 365 days, or never;
  the key page offers DEFAULT_EXPIRY_DAYS first) and its end is stored as `expires_at`,
  never changed after. It is judged on the web server's clock (timezone.now(), the clock
  that already judges a request's signing time), not the database's: one clock for both
  checks. From that moment the key is refused before its signature is computed, with its
  own code, AccessKeyExpired (403), telling the script where to make a new key: a script
  that ran for months must learn why it stopped, not see a wrong-secret error. It is no
  guess and is never counted toward the lock-out. An expired key does not count toward
  MAX_ACTIVE_KEYS and cannot be renewed; a new key is made instead.
- Revoking takes effect at once (the next request's look-up sees revoked_at) and records
  who or what revoked it (ApiKey.revoke_reason) beside when, the console's trace of it,
  with one INFO line on the "jobs.api_keys" logger (key ID, owner, reason; never a secret).
  `api_keys_revoke_all` ends every key of a user that still works (the keys page's Revoke
  all, and a password set: see below); expired keys are left as they are: they already
  refuse every request, and their trace stays "expired".
- A password set revokes the owner's keys, whatever sets it (`password_saved`, one
  receiver of every save of a user whose password was set: the console's password page, the
  admin's user password form, `manage.py changepassword`, a shell). Decided: a password set
  by someone else (an administrator's reset) is what is done when an account may be in the
  wrong hands, or its owner locked out; either way every way in that the old password could
  make must end, an API key an intruder made included: the keys are revoked (reason
  PASSWORD_RESET), in the admin's history under the administrator who did it (when known)
  and on the log. Only the owner's own change on the console's page may keep them (its box,
  ticked by default; reason PASSWORD_CHANGE). Whoever sets it is told by `password_set_by`
  around the save; a save outside one (manage.py changepassword, code) is someone else's.
  Django's re-hashing of a password at log-in (a new hasher) sets no new password and
  revokes nothing; a new account has no keys.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import os
import re
import secrets
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qsl

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _

from .aihc import signer
from .alerts import site_address
from .locks import user_row_locked
from .models import ApiKey, ApiKeyRevokeReason
from .throttle import (
    API_KEY_PREFIX,
    client_ip,
    login_failure_record,
    login_failures_clear,
    login_locked_minutes,
)

logger = logging.getLogger(__name__)

MAX_ACTIVE_KEYS = 10
# What a revocation changes on a key (its admin history names them).
REVOKE_FIELDS = ("revoked_at", "revoke_reason")
# Lifetimes offered when a key is made, in days (None: never expires). The default is 90
# days (decision): a key forgotten in a script or leaked from a laptop stops by itself
# within a quarter, AWS's advice for rotating access keys, while a nightly pipeline does
# not need a new key every month; "never" stays available for whoever chooses it knowingly.
EXPIRY_CHOICES: tuple[int | None, ...] = (30, 90, 365, None)
DEFAULT_EXPIRY_DAYS = 90
# Every SDK signs with 1800 s; a longer period asked for is cut to this, so a captured
# request cannot be replayed for days.
MAX_EXPIRATION_SECONDS = 1800
# How far in the future a client's clock may put the signing time.
CLOCK_SKEW_SECONDS = 300
THROTTLE_PREFIX = API_KEY_PREFIX
SIGNATURE_RE = re.compile(r"[0-9a-fA-F]{64}")
# An access key ID as any issuer writes one (the console's and AIHC's are hex): printable
# ASCII without "/" (the header's separator). A NUL or a Latin-1 character would otherwise
# reach the throttle's and the key's look-ups, which PostgreSQL refuses (a 500).
ACCESS_KEY_ID_RE = re.compile(r"[\x21-\x2e\x30-\x7e]{1,128}")
_SEAL_VERSION = "aesgcm"
_SEAL_INFO = b"ai-job-console jobs.api_keys secret"
_NONCE_BYTES = 12  # GCM's standard nonce; random, one per sealing


class ApiAuthError(Exception):
    """A refused request, with BCE's error code and HTTP status (§2.4 of the reference).
    `extensions`: the console's own keys answered beside code and message (`errors`, a
    refused signature's canonical request), which BCE's SDKs ignore as keys they do not know."""

    def __init__(
        self, status: int, code: str, message: str, *, extensions: dict[str, Any] | None = None
    ):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.extensions = extensions or {}


# -- sealing the secret ---------------------------------------------------------------


def _cipher(secret_key: str) -> AESGCM:
    """AES-256-GCM under a key derived from `secret_key` for this purpose only."""
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_SEAL_INFO).derive(
        secret_key.encode()
    )
    return AESGCM(key)


def seal(secret: str, *, access_key_id: str) -> str:
    """The secret encrypted and authenticated under SECRET_KEY, bound to its key ID (the
    ID is GCM's associated data: a sealed secret copied onto another key does not open)."""
    nonce = os.urandom(_NONCE_BYTES)
    sealed = _cipher(settings.SECRET_KEY).encrypt(nonce, secret.encode(), access_key_id.encode())
    return f"{_SEAL_VERSION}$" + base64.b64encode(nonce + sealed).decode()


def unseal(sealed: str, *, access_key_id: str) -> str | None:
    """The secret, or None when no current or fallback SECRET_KEY opens it."""
    version, _, payload = sealed.partition("$")
    if version != _SEAL_VERSION:
        return None
    try:
        raw = base64.b64decode(payload, validate=True)
    except ValueError:
        return None
    nonce, ciphertext = raw[:_NONCE_BYTES], raw[_NONCE_BYTES:]
    keys = [settings.SECRET_KEY, *getattr(settings, "SECRET_KEY_FALLBACKS", [])]
    for secret_key in keys:
        try:
            plain = _cipher(secret_key).decrypt(nonce, ciphertext, access_key_id.encode())
        except (InvalidTag, ValueError):
            continue
        return plain.decode()
    return None


# -- keys -----------------------------------------------------------------------------


class TooManyKeys(Exception):
    pass


class AlreadyCreated(Exception):
    """The keys page's form was sent again (a reload of the answer showing the secret, a
    double click): its key exists, and its secret was on the answer to the first send."""

    def __init__(self, key: ApiKey):
        super().__init__(key.access_key_id)
        self.key = key


# The keys page's one-time form key: 32 hex digits (uuid4().hex).
CREATE_KEY_RE = re.compile(r"[0-9a-f]{32}")


def usable_keys(*, now: datetime | None = None) -> Q:
    """Keys that still sign requests: not revoked, not expired."""
    return Q(revoked_at__isnull=True) & (
        Q(expires_at__isnull=True) | Q(expires_at__gt=now or timezone.now())
    )


def api_key_create(
    *,
    owner: Any,
    description: str = "",
    expires_in_days: int | None = None,
    create_key: str = "",
) -> tuple[ApiKey, str]:
    """A new key for `owner`, expiring `expires_in_days` days from now (None: never);
    returns it with its secret, which is not kept in clear.

    `create_key` is the keys page's one-time form key: a form sent again with it (the
    browser's reload of the answer that showed the secret, a double click) raises
    AlreadyCreated with the key it made instead of making another working key, whose secret
    would be shown only on the answer that replaced the first. Without one (a form of an
    older page), every send makes a key, as before."""
    if not CREATE_KEY_RE.fullmatch(create_key):
        create_key = ""
    if create_key:
        made = ApiKey.objects.filter(owner=owner, create_key=create_key).first()
        if made is not None:
            raise AlreadyCreated(made)
    now = timezone.now()
    try:
        with transaction.atomic():
            # Counted and inserted while holding the owner's row (jobs.locks): two keys made
            # at the same instant would otherwise both count 9 and both be made.
            user_row_locked(user_id=owner.pk)
            active = ApiKey.objects.filter(usable_keys(now=now), owner=owner).count()
            if active >= MAX_ACTIVE_KEYS:
                raise TooManyKeys(MAX_ACTIVE_KEYS)
            access_key_id = secrets.token_hex(16)
            secret = secrets.token_hex(16)
            key = ApiKey.objects.create(
                access_key_id=access_key_id,
                secret_sealed=seal(secret, access_key_id=access_key_id),
                owner=owner,
                description=description.strip()[:100],
                expires_at=None
                if expires_in_days is None
                else now + timedelta(days=expires_in_days),
                create_key=create_key,
            )
    except IntegrityError:
        # The same form's other send made it a moment before (two requests at once).
        made = (
            ApiKey.objects.filter(owner=owner, create_key=create_key).first()
            if create_key
            else None
        )
        if made is None:
            raise
        raise AlreadyCreated(made) from None
    return key, secret


def _log_revoked(keys: Iterable[ApiKey], reason: str, by: str = "") -> None:
    for key in keys:
        logger.info(
            "API key %s of %s revoked (%s%s)",
            key.access_key_id,
            key.owner.get_username(),
            reason,
            f", by {by}" if by else "",
        )


def admin_history_revoked(*, keys: Iterable[ApiKey], actor_id: int, reason: str) -> None:
    """Each key's revocation in the admin's history (LogEntry) under `actor_id`, as Django's
    own change messages record a change: the fields by their English verbose names, which the
    history page translates when it shows them, after the action and who or what revoked it
    (`reason`, an ApiKeyRevokeReason; jobs.admin_history)."""
    from django.contrib.admin.models import CHANGE, LogEntry
    from django.utils import translation

    from .admin_history import action_part

    with translation.override(None):
        changed = [str(ApiKey._meta.get_field(f).verbose_name) for f in REVOKE_FIELDS]
    for key in keys:
        LogEntry.objects.log_actions(
            user_id=actor_id,
            queryset=[key],
            action_flag=CHANGE,
            change_message=[action_part("revoked", by=reason), {"changed": {"fields": changed}}],
            single_object=True,
        )


def api_key_revoke(*, key: ApiKey, reason: str = ApiKeyRevokeReason.OWNER) -> bool:
    """Revokes the key at once; False when it was revoked already."""
    now = timezone.now()
    done = ApiKey.objects.filter(pk=key.pk, revoked_at__isnull=True).update(
        revoked_at=now, revoke_reason=reason
    )
    if done:
        key.revoked_at, key.revoke_reason = now, reason
        _log_revoked([key], reason)
    return bool(done)


def api_keys_revoke_all(
    *, owner: Any, reason: str = ApiKeyRevokeReason.OWNER_ALL, by: str = ""
) -> list[ApiKey]:
    """Revokes every key of `owner` that still works, at once; returns them (oldest first).
    Expired and already revoked keys are left as they are. `by`: who did it, for the log
    line, when it is not the owner."""
    now = timezone.now()
    with transaction.atomic():
        keys = list(
            ApiKey.objects.select_for_update()
            .select_related("owner")
            .filter(usable_keys(now=now), owner=owner)
            .order_by("created_at", "id")
        )
        ApiKey.objects.filter(pk__in=[k.pk for k in keys]).update(
            revoked_at=now, revoke_reason=reason
        )
    for key in keys:
        key.revoked_at, key.revoke_reason = now, reason
    _log_revoked(keys, reason, by)
    return keys


# -- a password set revokes the keys -------------------------------------------------------


@dataclass
class PasswordSetter:
    """Who is setting a password in this thread (password_set_by), and what it revoked."""

    actor: Any | None  # the logged-in user setting it; None: unknown (manage.py, code)
    # False: keep the keys (the owner's own change with its box unticked).
    revoke: bool = True
    revoked: list[ApiKey] = field(default_factory=list)


_password_setter: ContextVar[PasswordSetter | None] = ContextVar("password_setter", default=None)


@contextmanager
def password_set_by(*, actor: Any, revoke: bool = True) -> Iterator[PasswordSetter]:
    """Passwords saved inside this block are set by `actor` (a user); the keys revoked are
    in the setter's `revoked` afterwards. Wrap it and the save in one transaction, so the
    new password and the revocation are committed together."""
    setter = PasswordSetter(actor=actor, revoke=revoke)
    token = _password_setter.set(setter)
    try:
        yield setter
    finally:
        _password_setter.reset(token)


def password_saved(sender: Any, instance: Any, created: bool, **kwargs: Any) -> None:
    """post_save of the user model: the one place a password set revokes its owner's keys.
    Django marks a password set by `set_password` until the save that stores it (the mark
    `password_changed` validators also go by); re-hashing at log-in clears it first."""
    if created or getattr(instance, "_password", None) is None:
        return
    setter = _password_setter.get() or PasswordSetter(actor=None)
    if not setter.revoke:
        return
    actor = setter.actor
    if actor is not None and actor.pk == instance.pk:
        reason, by = ApiKeyRevokeReason.PASSWORD_CHANGE, ""
    else:
        reason = ApiKeyRevokeReason.PASSWORD_RESET
        by = (
            actor.get_username()
            if actor is not None
            else "a password set outside the console's pages (manage.py changepassword, code)"
        )
    with transaction.atomic():
        revoked = api_keys_revoke_all(owner=instance, reason=reason, by=by)
        if revoked and actor is not None and actor.pk != instance.pk:
            admin_history_revoked(keys=revoked, actor_id=actor.pk, reason=reason)
    setter.revoked.extend(revoked)


# -- verifying a request --------------------------------------------------------------


@dataclass(frozen=True)
class AuthString:
    access_key_id: str
    timestamp: str
    signed_at: datetime
    expiration: int
    signed_headers: list[str] | None  # None: the default set
    signature: str


def parse_authorization(value: str) -> AuthString:
    bad = ApiAuthError(
        400,
        "InvalidHTTPAuthHeader",
        "The Authorization header must be bce-auth-v1/{accessKeyId}/{timestamp}/"
        "{expirationPeriodInSeconds}/{signedHeaders}/{signature}.",
    )
    parts = value.strip().split("/")
    if len(parts) != 6 or parts[0] != signer.AUTH_VERSION:
        raise bad
    _, access_key_id, timestamp, expiration, names, signature = parts
    try:
        signed_at = datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        seconds = int(expiration)
    except ValueError:
        raise bad from None
    # 64 hex digits: header bytes past ASCII arrive as Latin-1 characters, which
    # hmac.compare_digest refuses with a TypeError (a server error, not a refusal).
    if (
        not ACCESS_KEY_ID_RE.fullmatch(access_key_id)
        or seconds <= 0
        or not SIGNATURE_RE.fullmatch(signature)
    ):
        raise bad
    headers = [n.strip().lower() for n in names.split(";")] if names else None
    if headers is not None and not all(headers):
        raise bad
    return AuthString(access_key_id, timestamp, signed_at, seconds, headers, signature.lower())


def request_headers(request: HttpRequest) -> dict[str, str]:
    """The request's headers by lower-case name, as the client sent them."""
    headers = {k.lower(): v for k, v in request.headers.items()}
    # WSGI servers may fill CONTENT_TYPE/CONTENT_LENGTH in with "" for a request without them.
    return {k: v for k, v in headers.items() if v or k not in ("content-type", "content-length")}


def _check_body_digests(request: HttpRequest, signed: Iterable[str]) -> None:
    body = request.body
    names = set(signed)
    if "content-md5" in names:
        expected = base64.b64encode(hashlib.md5(body).digest()).decode()  # noqa: S324
        if request.headers.get("Content-MD5", "").strip() != expected:
            raise ApiAuthError(400, "BadDigest", "The Content-MD5 does not match the body.")
    if "x-bce-content-sha256" in names:
        expected = hashlib.sha256(body).hexdigest()
        if request.headers.get("x-bce-content-sha256", "").strip().lower() != expected:
            raise ApiAuthError(
                400, "BadDigest", "The x-bce-content-sha256 does not match the body."
            )


def _too_many(minutes: int) -> ApiAuthError:
    return ApiAuthError(
        429,
        "TooManyRequests",
        f"Too many failed requests for this key or from this address; try again in {minutes} min.",
    )


def _guess_refused(*, throttle_name: str, request: HttpRequest) -> None:
    """Counts a failed guess; 429 instead of the failure's own answer while the address is
    locked out (a guesser trying many key IDs from one address)."""
    minutes = login_locked_minutes(username=throttle_name, request=request)
    login_failure_record(username=throttle_name, request=request)
    if minutes:
        raise _too_many(minutes)


def revoked_key_message(key: ApiKey, *, signed_by_key: bool) -> str:
    """InvalidAccessKeyId's message for a key the console issued and revoked (qa97: it read
    as a key "not in our records", while an expired key is told when it ended): when, by
    what when recorded (a password change, the owner, staff) and where to make a new key, as
    AccessKeyExpired says it, in the API's language. The key ID only, which the request
    named: nothing secret, and nothing about the owner. The code stays AIHC's, the one a
    script tests. A revoked key of a deactivated owner keeps the general message (not said
    why); a key not revoked whose owner is deactivated is said so to its holder alone
    (verify_request).

    By what only to a request `signed_by_key` (its signature verifies with the revoked key's
    secret: the key's holder, fix108): the key ID alone is no proof of holding the key (it is
    in logs, scripts, a colleague's shell history), and who revoked it (its owner, staff, a
    password reset) is the holder's to know. Any other request is told when only."""
    values = {
        "key": key.access_key_id,
        "when": key.revoked_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "page": site_address(reverse("api-keys")),
    }
    if signed_by_key and key.revoke_reason in ApiKeyRevokeReason.values:
        values["reason"] = ApiKeyRevokeReason(key.revoke_reason).label
        message = _(
            "The access key %(key)s was revoked at %(when)s, by %(reason)s. Create a new key "
            "on the console's API keys page, %(page)s, and sign with it."
        )
    else:  # not signed with it, or revoked before the reason was kept
        message = _(
            "The access key %(key)s was revoked at %(when)s. Create a new key on the "
            "console's API keys page, %(page)s, and sign with it."
        )
    return message % values


# What a SignatureDoesNotMatch's canonicalRequest answers for a signed header that only the
# client sends no value of: a header a reverse proxy adds on the way (X-Forwarded-For,
# X-Real-IP, an ingress's identity header) may be signed if the client lists it, and its value
# is the proxy's, not for the client to read back. Never a value: the canonical form
# percent-encodes "<", ">" and the space.
VALUE_NOT_SHOWN = "<not shown>"


def _sent_by_the_client(name: str) -> bool:
    """Whether a signed header (its canonical, lower-case name) is one the client itself must
    send, whose value it already has: host, content-*, x-bce-* (bce-auth-v1's default set)."""
    return name == "host" or name.startswith(("content-", "x-bce-"))


def canonical_request_shown(canonical: str) -> str:
    """`canonical` as a SignatureDoesNotMatch answers it: each signed header not sent by the
    client by its name only, VALUE_NOT_SHOWN for its value. Its line keeps its place (the
    lines sort by name: a name holds no ":")."""
    method, path, query, *headers = canonical.split("\n")
    shown = []
    for line in headers:
        name = line.split(":", 1)[0]
        shown.append(line if _sent_by_the_client(name) else f"{name}:{VALUE_NOT_SHOWN}")
    return "\n".join([method, path, query, *shown])


def _signature_matches(
    request: HttpRequest, auth: AuthString, signed: dict[str, str], secret: str
) -> tuple[bool, str, str]:
    """Whether the request's signature is the one `secret` makes of it, with the canonical
    request and the auth string's prefix it was worked out from."""
    params = parse_qsl(request.META.get("QUERY_STRING", ""), keep_blank_values=True)
    prefix = f"{signer.AUTH_VERSION}/{auth.access_key_id}/{auth.timestamp}/{auth.expiration}"
    canonical = signer.canonical_request(request.method or "GET", request.path, params, signed)
    expected = signer._hmac_hex(signer.signing_key(secret, prefix), canonical)
    return hmac.compare_digest(expected, auth.signature), canonical, prefix


def verify_request(request: HttpRequest, *, now: datetime | None = None) -> ApiKey:
    """The key that signed this request, or ApiAuthError saying why it is refused."""
    value = request.headers.get("Authorization", "")
    if not value:
        raise ApiAuthError(403, "AccessDenied", "Access denied: the request is not signed.")
    auth = parse_authorization(value)
    throttle_name = f"{THROTTLE_PREFIX}{auth.access_key_id[:64]}@{client_ip(request) or ''}"
    # The key's own count from this address refuses before the signature is checked; the
    # address's count only a request that fails it (_guess_refused). A key's 128-bit secret
    # cannot be guessed, so the right one is served whatever others at its address did: 20
    # failures from a shared address (an office NAT, or one forged in X-Forwarded-For before
    # qa90) answered 429 to every valid key there.
    minutes = login_locked_minutes(username=throttle_name, request=request, by_address=False)
    if minutes:
        raise _too_many(minutes)
    now = now or timezone.now()
    age = (now - auth.signed_at).total_seconds()
    if age < -CLOCK_SKEW_SECONDS:
        # BCE's code, which Baidu's SDK retries, but not its "has expired": a request signed
        # in the future has not expired, its client's clock is ahead (qa105).
        raise ApiAuthError(
            400,
            "RequestExpired",
            _(
                "The signing time %(timestamp)s is more than %(seconds)d s ahead of the "
                "server's clock (%(now)s): set the client's clock right and sign again."
            )
            % {
                "timestamp": auth.timestamp,
                "seconds": CLOCK_SKEW_SECONDS,
                "now": now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            },
        )
    if age > min(auth.expiration, MAX_EXPIRATION_SECONDS):
        raise ApiAuthError(
            400, "RequestExpired", f"Request has expired. Timestamp date is {auth.timestamp}."
        )
    headers = request_headers(request)
    if auth.signed_headers is None:
        signed = signer.headers_to_sign(headers, None)
    else:
        missing = [n for n in auth.signed_headers if n not in headers]
        if missing:
            raise ApiAuthError(
                400,
                "InvalidHTTPAuthHeader",
                f"Signed headers are missing from the request: {', '.join(missing)}.",
            )
        signed = signer.headers_to_sign(headers, auth.signed_headers)
    if "host" not in signed:
        raise ApiAuthError(400, "InvalidHTTPAuthHeader", "The signed headers must include host.")

    key = ApiKey.objects.select_related("owner").filter(access_key_id=auth.access_key_id).first()
    ended = key is None or key.revoked_at is not None or not key.owner.is_active
    secret = None if ended else unseal(key.secret_sealed, access_key_id=key.access_key_id)
    if key is None or secret is None:
        if key is None:
            # Only a key ID never issued is a guess. A key the console issued and has since
            # ended (revoked: by default at every password change; its owner deactivated) or
            # cannot open (SECRET_KEY changed) is a script nobody updated, which goes on
            # sending it: counted, it locked its whole address out after 20 requests, every
            # log-in and every other key from the lab's shared machine or NAT (qa66), as an
            # expired key, below, is not counted either.
            _guess_refused(throttle_name=throttle_name, request=request)
        if key is not None and key.revoked_at is None and not key.owner.is_active:
            # Said only to the key's holder, as a revocation's "by what" is (fix108): whose
            # account is deactivated is not for someone who only read the key ID somewhere
            # (qa106: "does not exist in our records" misled its owner's script's maintainer).
            kept_secret = unseal(key.secret_sealed, access_key_id=key.access_key_id)
            if (
                kept_secret is not None
                and _signature_matches(request, auth, signed, kept_secret)[0]
            ):
                raise ApiAuthError(
                    403,
                    "InvalidAccessKeyId",
                    _(
                        "The access key %(key)s belongs to an account that is deactivated: "
                        "requests signed with it are refused until an administrator activates "
                        "the account again."
                    )
                    % {"key": key.access_key_id},
                )
        if key is not None and key.revoked_at is not None and key.owner.is_active:
            revoked_secret = unseal(key.secret_sealed, access_key_id=key.access_key_id)
            signed_by_key = (
                revoked_secret is not None
                and _signature_matches(request, auth, signed, revoked_secret)[0]
            )
            raise ApiAuthError(
                403, "InvalidAccessKeyId", revoked_key_message(key, signed_by_key=signed_by_key)
            )
        raise ApiAuthError(
            403,
            "InvalidAccessKeyId",
            "The Access Key ID you provided does not exist in our records (or was revoked).",
        )
    if key.is_expired(now=now):
        # Not a guess (the key once was good): refused as it is, before the signature, and
        # not counted toward the lock-out. In the API's language (its view set it).
        raise ApiAuthError(
            403,
            "AccessKeyExpired",
            _(
                "The access key %(key)s expired at %(expired)s. Create a new key on the "
                "console's API keys page, %(page)s, and sign with it."
            )
            % {
                "key": key.access_key_id,
                "expired": key.expires_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "page": site_address(reverse("api-keys")),  # as alerts link a job
            },
        )
    matches, canonical, prefix = _signature_matches(request, auth, signed, secret)
    if not matches:
        _guess_refused(throttle_name=throttle_name, request=request)
        # What the console signed, as AWS answers its StringToSign and CanonicalRequest (qa97):
        # a script's author diffs them with their own signing's to find the part that differs
        # (the path's encoding, a header's case, the query's order). Neither holds the secret:
        # the signing key is derived from it and the prefix, and the canonical request is the
        # sender's own request, but for the values of headers a proxy may have added.
        raise ApiAuthError(
            403,
            "SignatureDoesNotMatch",
            "The request signature we calculated does not match the signature you provided. "
            "Check your secret key and signing method.",
            extensions={
                "canonicalRequest": canonical_request_shown(canonical),
                "authStringPrefix": prefix,
            },
        )
    _check_body_digests(request, signed)
    login_failures_clear(username=throttle_name)
    # Last used: at most one write a minute per key, not one per request.
    stale = now - timedelta(minutes=1)
    ApiKey.objects.filter(pk=key.pk).filter(
        Q(last_used_at__isnull=True) | Q(last_used_at__lt=stale)
    ).update(last_used_at=now)
    return key


# -- a secret key that does not match the database ------------------------------------

# How many of the newest unexpired sessions, and of the newest usable API keys, the start-up
# check tries to open. Decided: a sample, not all, so its cost at every start (migrate) stays
# the same on a database with a hundred thousand keys; a key that does not open one opens none.
SESSIONS_SAMPLED = 20
KEYS_SAMPLED = 200


def sealed_with_another_key() -> tuple[int, int, int, int]:
    """(API keys SECRET_KEY and its fallbacks cannot open, the newest API keys in use tried
    (KEYS_SAMPLED at most), sessions they cannot read, sessions tried): what a backup restored without its secret key, or a key
    changed without SECRET_KEY_FALLBACKS, leaves unusable. Nothing is changed."""
    from django.contrib.sessions.models import Session
    from django.core import signing

    from .sessions import SessionStore

    now = timezone.now()
    keys = ApiKey.objects.filter(usable_keys(now=now)).order_by("-pk")
    pairs = list(keys.values_list("access_key_id", "secret_sealed")[:KEYS_SAMPLED])
    bad_keys = sum(unseal(sealed, access_key_id=ak) is None for ak, sealed in pairs)
    store = SessionStore()
    rows = list(
        Session.objects.filter(expire_date__gt=now)
        .order_by("-expire_date")
        .values_list("session_data", flat=True)[:SESSIONS_SAMPLED]
    )
    bad_sessions = 0
    for data in rows:
        try:
            signing.loads(data, salt=store.key_salt, serializer=store.serializer)
        except signing.BadSignature:
            bad_sessions += 1
    return bad_keys, len(pairs), bad_sessions, len(rows)
