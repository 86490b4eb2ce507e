"""Job alerts: email through Django's mail backend and webhook POSTs, with an SSRF guard.

The worker decides that an alert is due (`job_alert`) and enqueues one `deliver_alert`
django task, so a decision survives a worker restart and a slow webhook never stalls
supervision. Delivery results become job events ("AlertSent", "AlertFailed", and
"AlertNotSent" for an email or a webhook call past its owner's hourly bound on that
channel: ALERT_EMAILS_PER_HOUR, ALERT_WEBHOOKS_PER_HOUR, of which routine alerts take at most
half, URGENT_ITEMS the rest); delivery never raises.

Webhook body (JSON): {"jobId", "name", "event", "time", "message", "language", "link"}, the
message in the job owner's language ("zh-hans" or "en", said in "language"), and for a queue
group's task "groupTaskIndex" and "groupTaskTotal" (a sweep's task run again: the task's,
and "groupTaskAgain": true); a chat bot's
webhook (Feishu/Lark, WeCom, DingTalk, Slack: jobs.chat_bots) gets a message in its own format
instead, in the job owner's language, and its answer is read.
"""

from __future__ import annotations

import errno
import ipaddress
import logging
import smtplib
import socket
import ssl
from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import certifi
import httpx
from django.conf import settings
from django.core.mail import EmailMessage
from django.db import transaction
from django.urls import get_script_prefix, reverse
from django.utils import timezone, translation
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from . import chat_bots
from .languages import addresses_by_language, reader_language
from .locks import user_row_locked
from .models import AlertChannel, AlertDelivery, Job
from .spec import MAX_ALERT_EMAILS, MAX_ALERT_WEBHOOKS, AlertConfig, SpecError, mask
from .texts import (
    RecordedText,
    Term,
    Words,
    display_text,
    ngettext_noop,
    recorded,
    recorded_plural,
    source_of,
)

logger = logging.getLogger(__name__)

# AIHC alert items (alertConfig.alertItems) and what they mean in an email subject.
# Email subjects, recorded in the console's language (jobs.services.recorded).
ITEM_TITLES = {
    "jobRunning": gettext_noop("%(name)s is running"),
    "jobSucceed": gettext_noop("%(name)s succeeded"),
    "jobFailed": gettext_noop("%(name)s failed"),
    "jobHang": gettext_noop("%(name)s may be hanging"),
    "jobFT": gettext_noop("%(name)s was restarted (fault tolerance)"),
    "nodeFT": gettext_noop("%(name)s: a node failed (fault tolerance)"),
}


# What happened, for each alert type, in the reader's language: the wizard's choices in the
# past tense, as a mail's "Event:" line and the events report what did happen (qa101: "Event:
# Job fails"); the Chinese as the wizard's. Events recorded before keep the wizard's wording.
ITEM_NAMES = {
    "jobRunning": gettext_noop("Job started running"),
    "jobFailed": gettext_noop("Job failed"),
    "jobSucceed": gettext_noop("Job succeeded"),
    "jobHang": gettext_noop("Job hung"),
    "jobFT": gettext_noop("Job restarted by fault tolerance"),
    "nodeFT": gettext_noop("A node of the job failed"),
}


def item_name(item: str) -> Term | str:
    return Term(ITEM_NAMES[item]) if item in ITEM_NAMES else item


class UnsafeDestination(Exception):
    pass


# IPv6 prefixes that carry an IPv4 address, which a router or the host's own stack may
# reach: NAT64 (RFC 6052's well-known prefix, and RFC 8215's local-use one), the address in
# the last 32 bits. ipaddress counts 64:ff9b::/96 as global (qa90: https://[64:ff9b::a9fe:a9fe]/
# is 169.254.169.254, the cloud's metadata service, behind a NAT64 gateway).
# So is SIIT's IPv4-translated prefix (RFC 2765, ::ffff:0:a.b.c.d; qa111: [::ffff:0:7f00:1]
# was let through as global).
NAT64_PREFIXES = (
    ipaddress.IPv6Network("64:ff9b::/96"),
    ipaddress.IPv6Network("64:ff9b:1::/48"),
    ipaddress.IPv6Network("::ffff:0:0:0/96"),
)


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address stands for, where it carries one: IPv4-mapped
    (::ffff:a.b.c.d), IPv4-compatible (::a.b.c.d, deprecated, but Linux still routes
    ::127.0.0.1 to loopback: qa90), NAT64 and IPv4-translated (::ffff:0:a.b.c.d), 6to4
    (2002::/16) and Teredo (2001::/32, its client's address). None for any other."""
    if ip.ipv4_mapped:
        return ip.ipv4_mapped
    if ip.sixtofour:
        return ip.sixtofour
    if ip.teredo:
        return ip.teredo[1]
    number = int(ip)
    if number >> 32 == 0 and number > 1:  # ::a.b.c.d (:: and ::1 are IPv6's own)
        return ipaddress.IPv4Address(number)
    if any(ip in prefix for prefix in NAT64_PREFIXES):
        return ipaddress.IPv4Address(number & 0xFFFFFFFF)
    return None


def _address_allowed(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(ip)
        if embedded is not None and not _address_allowed(str(embedded)):
            return False
    return ip.is_global and not ip.is_multicast


# Why a destination is refused: marked for translation, as they end up in AlertFailed events.
NOT_HTTP_URL = gettext_noop("not an http(s) URL")
LOOPBACK_REFUSED = gettext_noop("loopback destinations are not allowed")
PRIVATE_REFUSED = gettext_noop("private, loopback and link-local destinations are not allowed")
IN_CLEAR_REFUSED = gettext_noop(
    "%(host)s is on the internet and the URL is plain http://: its token would cross the "
    "network unencrypted; use https://"
)


def webhook_url_error(url: str) -> str | None:
    """Why `url` may not receive webhooks (before any DNS lookup), or None.

    Literal loopback, link-local and private addresses are refused unless
    settings.ALERT_WEBHOOK_ALLOW_PRIVATE; host names are checked again at send time, after
    resolution (`resolve_webhook`).
    """
    try:
        parts = urlsplit(url)
        hostname = parts.hostname
    except ValueError:  # "http://[::1/x": no URL (the spec's check says so on its field)
        return NOT_HTTP_URL
    if parts.scheme not in ("http", "https") or not hostname:
        return NOT_HTTP_URL
    if settings.ALERT_WEBHOOK_ALLOW_PRIVATE:
        return None
    host = hostname
    if host == "localhost" or host.endswith(".localhost"):
        return LOOPBACK_REFUSED
    try:
        allowed = _address_allowed(host)
    except ValueError:
        return None  # a name: checked after resolution
    return None if allowed else PRIVATE_REFUSED


def webhook_in_clear(url: str) -> bool:
    """Whether a plain http:// webhook would go to a host on the internet: a chat bot's URL
    (and most gateways') carries its key or token, which would cross the network unencrypted.
    Known before any DNS lookup for a literal public address, and for any host name while
    private destinations are refused (it may then only resolve to a public one); a name that
    may be on the company network (ALERT_WEBHOOK_ALLOW_PRIVATE) is checked after resolution
    (`resolve_webhook`). http:// to a private or loopback receiver stays allowed (left27)."""
    try:
        parts = urlsplit(url)
        hostname = parts.hostname
    except ValueError:
        return False
    if parts.scheme != "http" or not hostname:
        return False
    try:
        return _address_allowed(hostname)
    except ValueError:  # a name
        return not settings.ALERT_WEBHOOK_ALLOW_PRIVATE


def webhook_host_is_name(url: str) -> bool:
    """Whether `url`'s host is a name, not a literal address: what it reaches is known only
    once resolved (`resolve_webhook`)."""
    try:
        hostname = urlsplit(url).hostname
    except ValueError:
        return False
    if not hostname:
        return False
    try:
        ipaddress.ip_address(hostname.split("%", 1)[0])
    except ValueError:
        return True
    return False


def alert_destination_refusals(alert: AlertConfig) -> list[tuple[str, str]]:
    """(field, message) for each alert destination the console's worker would never send to,
    said at submit by every pool whose alerts the console sends itself (local, Kubernetes:
    review55 M1, a Kubernetes pool took them and only an AlertFailed event said so): a plain
    http:// webhook that would carry its token across the internet, a loopback, link-local or
    private address unless ALERT_WEBHOOK_ALLOW_PRIVATE, and events with nowhere to go."""
    refusals: list[tuple[str, str]] = []
    for url in alert.webhooks:
        refused = webhook_url_error(url)
        if refused is None and webhook_in_clear(url) and webhook_host_is_name(url):
            # Private destinations refused, an http:// name is refused wherever it resolves:
            # as private at send when it is on the company network, as plain http:// on the
            # internet otherwise. Which, only DNS knows (left29: it was said to be on the
            # internet).
            refusals.append(
                (
                    "alert.webhooks",
                    _(
                        "“%(url)s”: a plain http:// webhook is refused here wherever its host "
                        "name leads: alerts cannot be sent to loopback, link-local or private "
                        "addresses unless the administrator allows them "
                        "(ALERT_WEBHOOK_ALLOW_PRIVATE=1), and on the internet it would send the "
                        "alert and the key or token in its URL unencrypted. Use https:// (chat "
                        "bots' webhooks all take it)."
                    )
                    % {"url": chat_bots.secret_masked(url)},
                )
            )
        elif refused is None and webhook_in_clear(url):
            refusals.append(
                (
                    "alert.webhooks",
                    _(
                        "“%(url)s”: a plain http:// webhook on the internet would send the "
                        "alert and the key or token in its URL unencrypted. Use https:// (chat "
                        "bots' webhooks all take it); http:// is kept for a receiver on a "
                        "private or loopback address."
                    )
                    % {"url": chat_bots.secret_masked(url)},
                )
            )
        # A URL that is not http(s) already has the spec's message; one is enough.
        if refused not in (None, NOT_HTTP_URL):
            refusals.append(
                (
                    "alert.webhooks",
                    # Who can lift it: users meet this with a chat gateway on their own
                    # network, and the switch is the administrator's (a setting).
                    _(
                        "“%(url)s”: alerts cannot be sent to loopback, link-local or private "
                        "addresses unless the administrator allows them "
                        "(ALERT_WEBHOOK_ALLOW_PRIVATE=1)."
                    )
                    % {"url": chat_bots.secret_masked(url)},
                )
            )
    if alert.items and not (alert.emails or alert.webhooks):
        refusals.append(("alert.emails", _(NO_RECIPIENT)))
    return refusals


# Said on the alert step's emails; the API says it where its body has the alerts (jobs.api_views).
NO_RECIPIENT = gettext_noop("These alerts would reach nobody: add an email address or a webhook.")


def webhook_shown(url: str) -> str:
    """A webhook as shown to others than its job's owner: its scheme, host and port, and
    `/******` for a path or query (where chat gateways put the hook's token); a user and
    password in it are left out."""
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = None
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{port}" if port else host
    hidden = parts.path not in ("", "/") or parts.query or parts.fragment
    return urlunsplit((parts.scheme, netloc, "/" + mask("x") if hidden else parts.path, "", ""))


def resolve_webhook(url: str) -> tuple[str, str]:
    """Resolves the host once and returns (url to connect to, host name).

    The connection goes to the address that was checked, so a DNS answer that changes
    between the check and the request (rebinding) cannot reach a private address.
    """
    error = webhook_url_error(url)
    if error:
        raise UnsafeDestination(recorded(error))
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        # The resolver's own words ("Name or service not known") are English whatever the
        # reader's language (qa113): the event says what it means, the log keeps them.
        logger.warning("alert webhook: cannot resolve %s: %s", host, exc)
        raise UnsafeDestination(recorded(_unresolved_reason(exc), host=host)) from exc
    addresses = [info[4][0] for info in infos]
    if not settings.ALERT_WEBHOOK_ALLOW_PRIVATE:
        bad = [a for a in addresses if not _address_allowed(a)]
        if bad or not addresses:
            raise UnsafeDestination(
                recorded(
                    gettext_noop("%(host)s resolves to a private or loopback address"), host=host
                )
            )
    if parts.scheme == "http" and any(_address_allowed(a) for a in addresses):
        raise UnsafeDestination(recorded(IN_CLEAR_REFUSED, host=host))
    address = addresses[0]
    literal = f"[{address}]" if ":" in address else address
    netloc = f"{literal}:{port}"
    return urlunsplit((parts.scheme, netloc, parts.path or "/", parts.query, "")), host


def post_webhook(
    url: str, payload: dict[str, Any], *, query: dict[str, str] | None = None
) -> httpx.Response:
    """POSTs `payload` as JSON to `url` (with `query` added: a bot's signature) at the
    address checked (`resolve_webhook`); an HTTP error status raises."""
    target, host = resolve_webhook(url)
    target = chat_bots.with_query(target, query or {})
    parts = urlsplit(url)
    host_header = host if parts.port is None else f"{host}:{parts.port}"
    # No proxies from the environment and no redirects: either could lead elsewhere.
    with httpx.Client(
        timeout=settings.ALERT_WEBHOOK_TIMEOUT_SECONDS,
        follow_redirects=False,
        trust_env=False,
        verify=webhook_tls(),
    ) as client:
        request = client.build_request(
            "POST",
            target,
            json=payload,
            headers={"Host": host_header},
            extensions={"sni_hostname": host},
        )
        response = client.send(request)
    if response.status_code >= 400:
        raise httpx.HTTPStatusError(
            f"HTTP {response.status_code}", request=response.request, response=response
        )
    return response


def webhook_tls() -> ssl.SSLContext:
    """The certificates an https webhook's may be signed by: the public CAs (certifi's, as
    httpx trusts by default; trust_env=False leaves out SSL_CERT_FILE) and, if set, those of
    ALERT_WEBHOOK_CA_FILE (a company CA: a gateway or private chat deployment on its network)."""
    context = ssl.create_default_context(cafile=certifi.where())
    if ca_file := settings.ALERT_WEBHOOK_CA_FILE:
        try:
            context.load_verify_locations(cafile=ca_file)
        except (OSError, ssl.SSLError) as exc:
            # Checked at start (jobs.checks); removed or replaced since (a certificate
            # rotation half done), each try failed with a bare FileNotFoundError (review 41).
            said = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise CAFileUnreadable(recorded(CA_FILE_UNREADABLE, path=ca_file, error=said)) from exc
    return context


class CAFileUnreadable(Exception):
    """ALERT_WEBHOOK_CA_FILE could not be read when a webhook was posted: said with the
    setting and the file (its recorded text is the exception's), and tried again as a
    receiver down is: an administrator may put the file back before the last try."""


CA_FILE_UNREADABLE = gettext_noop(
    "ALERT_WEBHOOK_CA_FILE (%(path)s) cannot be read (%(error)s); an administrator puts the "
    "file back or changes the setting"
)


def post_to_bot(*, url: str, bot: str, text: str) -> None:
    """Posts `text` to chat bot `bot` at `url` in its format, signed if the webhook line
    carries a secret; raises BotRefused with the bot's own words when it did not post it."""
    base, secret = chat_bots.split_secret(url)
    request = chat_bots.bot_request(bot=bot, text=text, secret=secret)
    try:
        response = post_webhook(base, request.body, query=request.query)
    except httpx.HTTPStatusError as exc:
        response = exc.response
    error = chat_bots.answer_error(bot=bot, response=response, url=url)
    if error:
        keyword = chat_bots.keyword_refusal(bot=bot, response=response)
        raise chat_bots.BotRefused(
            error,
            keyword=keyword,
            status=response.status_code,
            rate_limited=chat_bots.rate_limited(bot=bot, response=response),
        )


def site_address(path: str) -> str:
    """`path` (from reverse()) at SITE_URL, its sub-path once. reverse() gives the sub-path
    where Django set the script prefix (a request, a command: /ai-console/jobs/..., and SITE_URL
    + path had it twice, qa50) and not in another thread (the worker's task thread delivering
    alerts and mails: it had none, review32), so the prefix it used is SITE_URL's path."""
    prefix = get_script_prefix()
    if path.startswith(prefix):
        path = "/" + path[len(prefix) :]
    return settings.SITE_URL.rstrip("/") + path


def job_link(job: Job) -> str:
    return site_address(reverse("job-detail", args=[job.public_id]))


def alert_payload(job: Job, item: str, message: str, time: str) -> dict[str, Any]:
    # `message` in the job owner's language, as a bot's text and the owner's mail (qa101: an
    # English owner's JSON said "pt-ddp-en 正在运行。"); `language` says which, so a receiver
    # that reads it need not guess.
    language = reader_language(user=job.owner)
    with translation.override(language):
        said = _said(message)
    payload = {
        "jobId": job.public_id,
        "name": job.name,
        "event": item,
        "time": time,
        "message": said,
        "language": language,
        "link": job_link(job),
    }
    if (place := job.task_place) is not None:
        # A queue group's tasks share a name: which task alerts, as the job list's `2/3`
        # (1-based; the task's AIHC_GROUP_TASK_INDEX is this minus 1). Keys added for a
        # group's task only, so a standalone job's body is as it was (qa76). A sweep's task
        # run again says the task it runs as (its pinned index and total, so a receiver maps
        # it to its parameter as it did the first run's) and groupTaskAgain: true, so it is
        # not taken for that run (qa93: it said 1/1).
        payload["groupTaskIndex"] = place.index
        payload["groupTaskTotal"] = place.total
        if place.again:
            payload["groupTaskAgain"] = True
    return payload


def named_for_alert(*, job: Job, message: str) -> RecordedText:
    """`message` after the job's name, as an alert's text opens, with the reader's colon: a
    full-width one in Chinese ("alert-job3: worker-0 退出" had an English one, copy edit)."""
    return recorded(gettext_noop("%(name)s: %(message)s"), name=job.task_name, message=message)


def job_alert(*, job: Job, item: str, message: str) -> None:
    """Enqueues delivery of alert `item` if the job chose it and has somewhere to send it.

    The task is a row in the console's database, written on the caller's connection: called
    inside the caller's transaction, it is queued if and only if what caused it is committed.
    A queue that refuses the row rolls back only that row (a savepoint) and leaves an
    AlertFailed event instead."""

    from .services import job_event
    from .tasks import deliver_alert

    alert = _alert_config(job)
    if alert is None or item not in alert.items or not (alert.emails or alert.webhooks):
        return
    try:
        with transaction.atomic():
            deliver_alert.enqueue(
                job_id=job.pk,
                item=item,
                message=message,
                time=_alert_time(job, item).isoformat(),
                # So that each address's mail is written in its reader's language.
                message_source=source_of(message),
            )
    except Exception as exc:  # the queue's database trouble must not stop supervision
        logger.exception("could not enqueue alert for %s", job.public_id)
        job_event(
            job=job,
            reason="AlertFailed",
            message=recorded(
                gettext_noop("%(item)s: not queued (%(error)s)"), item=item_name(item), error=exc
            ),
            warning=True,
        )


# How long a job past its retention (任务退出后自动删除) is kept for an alert about it still to
# be delivered (jobs_with_alerts_pending): the tries of RETRY_MINUTES span 36 minutes, each
# queued as the one before fails. A delivery queued longer ago than this has no task runner
# taking it (`worker --no-tasks` without a db_worker), and the job is not kept for ever.
ALERT_HOLDS_DELETION_MINUTES = 60


def jobs_with_alerts_pending(job_ids: Collection[int]) -> set[int]:
    """Those of `job_ids` with an alert delivery still queued or running (a first try, or a
    later one of a destination that could not take it): the worker deletes a job for its
    retention only once they are done, since a delivery finds no job to send (QA 59: a job
    that failed while no worker ran for longer than its retention was deleted in the tick
    that recorded its end, and a webhook tried again after the retention was never called;
    either alert was lost without an event)."""
    from django_tasks_db.models import DBTaskResult

    from .runner import minutes
    from .tasks import deliver_alert

    if not job_ids:
        return set()
    wanted = set(job_ids)
    since = timezone.now() - minutes(ALERT_HOLDS_DELETION_MINUTES)
    queued = DBTaskResult.objects.filter(
        task_path=deliver_alert.module_path,
        status__in=["READY", "RUNNING"],
        enqueued_at__gte=since,
    ).values_list("args_kwargs", flat=True)
    return {
        job_id for args in queued if (job_id := (args.get("kwargs") or {}).get("job_id")) in wanted
    }


def _alert_time(job: Job, item: str) -> datetime:
    """When what the alert is about happened: a job's end is when it ended (finished_at), which a
    worker that was not running then records later (QA 31: the alert said when the worker
    came back, the job page when the job ended); anything else, now."""
    if item in ("jobSucceed", "jobFailed") and job.finished_at is not None:
        return job.finished_at
    return timezone.now()


def _alert_config(job: Job) -> AlertConfig | None:
    """The job's alert items and channels; None once its stored spec no longer reads: where
    to send them is not known, so nothing is sent (its page says the spec is unreadable)."""
    try:
        return job.job_spec().alert
    except SpecError:
        return None


def _unresolved_reason(exc: OSError) -> str:
    """Why a webhook's host name did not resolve, as a text to record (its host to fill)."""
    if exc.errno == socket.EAI_AGAIN:
        return gettext_noop("cannot resolve %(host)s: the DNS server did not answer in time")
    if exc.errno in (socket.EAI_NONAME, getattr(socket, "EAI_NODATA", socket.EAI_NONAME)):
        return gettext_noop("cannot resolve %(host)s: no such host name")
    return gettext_noop("cannot resolve %(host)s")


# OpenSSL's verify codes a webhook's certificate is most often refused with, said as what
# they mean (UNTRUSTED_SIGNER_CODES below are the signer's).
CERTIFICATE_FAULTS = {
    2: gettext_noop("its certificate's signer is not trusted"),
    9: gettext_noop("its certificate is not valid yet"),
    10: gettext_noop("its certificate has expired"),
    18: gettext_noop("its certificate's signer is not trusted"),
    19: gettext_noop("its certificate's signer is not trusted"),
    20: gettext_noop("its certificate's signer is not trusted"),
    21: gettext_noop("its certificate's signer is not trusted"),
    62: gettext_noop("its certificate names another host"),
    64: gettext_noop("its certificate names another IP address"),
}


def _network_failure(exc: BaseException) -> str | None:
    """A common network failure of a delivery as a recorded text in the reader's language
    (a port closed, a host unreachable, a timeout, a TLS handshake, an HTTP status), or None:
    the OS's and the libraries' own words ("[Errno 111] Connection refused") are English
    whatever the reader's (qa113). The three connection failures stay told apart: see
    failure_text."""
    if isinstance(exc, httpx.HTTPStatusError):
        return recorded(
            gettext_noop("the server answered HTTP %(status)s"), status=exc.response.status_code
        )
    if refusal := certificate_refusal(exc):
        # What OpenSSL found, which the event's sentence then says how to fix.
        return recorded(
            CERTIFICATE_FAULTS.get(refusal.verify_code, gettext_noop("the TLS handshake failed"))
        )
    if isinstance(exc, httpx.ConnectTimeout):
        return recorded(gettext_noop("connecting timed out"))
    if isinstance(exc, httpx.TimeoutException | TimeoutError | socket.timeout):
        return recorded(gettext_noop("no answer in time"))
    causes: list[BaseException] = []
    cause: BaseException | None = exc
    while cause is not None and len(causes) < 5:
        causes.append(cause)
        cause = cause.__cause__ or cause.__context__
    for cause in causes:
        if isinstance(cause, ConnectionRefusedError) or "Connection refused" in str(cause):
            return recorded(
                gettext_noop("the connection was refused: nothing listens on that port")
            )
        if isinstance(cause, ssl.SSLError):
            return recorded(gettext_noop("the TLS handshake failed"))
        if isinstance(cause, OSError) and cause.errno in (errno.EHOSTUNREACH, errno.ENETUNREACH):
            return recorded(gettext_noop("no route to the host: the network cannot reach it"))
        if "No route to host" in str(cause) or "Network is unreachable" in str(cause):
            return recorded(gettext_noop("no route to the host: the network cannot reach it"))
    return None


def failure_text(exc: Exception) -> str:
    """What went wrong with a delivery, for its AlertFailed event: our own reasons as they
    are (in the console's language), a common network failure in the reader's words
    (_network_failure; the library's in the log), any other library error with its type;
    kept short.

    A connection's failure keeps its kind (ConnectError "Connection refused", "No route to
    host", ConnectTimeout), which tells a port that is closed from one filtered: a probe of
    ports, were the address any. Kept (qa90, decided): only addresses _address_allowed lets
    through are connected to, public ones anyone can probe from anywhere, or the company
    network an administrator opened with ALERT_WEBHOOK_ALLOW_PRIVATE; and the one fixing their
    own webhook needs to know which of the three it was."""
    ours = isinstance(exc, UnsafeDestination | chat_bots.BotRefused | CAFileUnreadable)
    said = exc.args[0] if ours and exc.args else None
    if source_of(said) and len(said) <= 400:
        return said  # recorded with its source: said again in each reader's language
    if not ours and (network := _network_failure(exc)):
        # The library's words to the operator's log only.
        logger.warning("alert delivery failed: %s: %s", type(exc).__name__, exc)
        return network
    text = str(exc) if ours else f"{type(exc).__name__}: {exc}"
    return text[:400]


# The hourly bounds on one user's alerts, one per channel: ALERT_EMAILS_PER_HOUR alert emails
# and ALERT_WEBHOOKS_PER_HOUR alerts posted to webhooks. Decided: an alert past its channel's
# bound is not sent on that channel, and not kept to be summed up later (that would need a
# mail on a timer, and a summary of 1,000 failures says no more than the job list): its job
# gets an AlertNotSent event saying why, and the last email the hour allows says that more
# are not sent until when (a webhook's body stays the documented JSON: programs read it).
# One alert counts once per channel, however many addresses or webhooks it goes to (a job
# has at most 20 and 10): the bound is on how often a user's jobs alert, and an alert reaches
# all of its destinations or, past the bound, none. Webhooks have their own, higher bound
# (default 60): they go to programs (a chat gateway, an incident tool) that take a burst, but
# a 1,000-task queue group failing task after task must not post 1,000 times either.
ALERT_WINDOW = timedelta(hours=1)
LAST_MAIL_NOTE = ngettext_noop(
    "This is the last alert email for your jobs until %(time)s: at most %(limit)d is sent an "
    "hour (ALERT_EMAILS_PER_HOUR). Alerts until then are listed in each job's events.",
    "This is the last alert email for your jobs until %(time)s: at most %(limit)d are sent an "
    "hour (ALERT_EMAILS_PER_HOUR). Alerts until then are listed in each job's events.",
)
NOT_SENT = ngettext_noop(
    "%(item)s: email not sent: %(limit)d alert email went out for your jobs within the last "
    "hour, as many as ALERT_EMAILS_PER_HOUR allows; alert emails go out again from %(time)s.",
    "%(item)s: email not sent: %(limit)d alert emails went out for your jobs within the last "
    "hour, as many as ALERT_EMAILS_PER_HOUR allows; alert emails go out again from %(time)s.",
)
WEBHOOK_NOT_SENT = ngettext_noop(
    "%(item)s: webhooks not called: %(limit)d alert went to your jobs' webhooks within the "
    "last hour, as many as ALERT_WEBHOOKS_PER_HOUR allows; alert webhooks are called again "
    "from %(time)s.",
    "%(item)s: webhooks not called: %(limit)d alerts went to your jobs' webhooks within the "
    "last hour, as many as ALERT_WEBHOOKS_PER_HOUR allows; alert webhooks are called again "
    "from %(time)s.",
)
# Routine alerts (a job running, succeeding, restarted by fault tolerance) may take at most half
# of a channel's hourly bound, the rest kept for those on-call must not miss: a failure, a hang,
# a node fault (URGENT_ITEMS), which may take the whole bound. Decided (qa59: a sweep of 40 jobs
# each alerting jobRunning and jobFT used the hour's 30 emails, and the jobFailed and jobHang
# alerts after them were dropped): a reserve, not no bound for failures, as a 1,000-task queue
# group failing task after task must still not mail 1,000 times; an urgent alert is never
# refused while a routine one could have been sent instead.
URGENT_ITEMS = frozenset({"jobFailed", "jobHang", "nodeFT"})
ROUTINE_LAST_MAIL_NOTE = gettext_noop(
    "This is the last alert email about your jobs running, succeeding or restarting until "
    "%(time)s: those may take half of the %(limit)d alert emails an hour "
    "(ALERT_EMAILS_PER_HOUR), the other half is kept for failures, hangs and node faults, which "
    "are still emailed. Alerts until then are listed in each job's events."
)
ROUTINE_NOT_SENT = gettext_noop(
    "%(item)s: email not sent: within the last hour your jobs' alert emails reached half of "
    "ALERT_EMAILS_PER_HOUR (%(limit)d an hour), as many as alerts of jobs running, succeeding "
    "or restarting may take; the other half is kept for failures, hangs and node faults. Such "
    "alerts are emailed again from %(time)s."
)
ROUTINE_WEBHOOK_NOT_SENT = gettext_noop(
    "%(item)s: webhooks not called: within the last hour your jobs' webhooks took half of "
    "ALERT_WEBHOOKS_PER_HOUR (%(limit)d alerts an hour), as many as alerts of jobs running, "
    "succeeding or restarting may take; the other half is kept for failures, hangs and node "
    "faults. Such alerts are posted again from %(time)s."
)
ROUTINE_NOT_SENT_MESSAGES = {
    AlertChannel.EMAIL: ROUTINE_NOT_SENT,
    AlertChannel.WEBHOOK: ROUTINE_WEBHOOK_NOT_SENT,
}


def routine_bound(limit: int) -> int:
    """How many of a channel's `limit` an hour routine alerts may take: half, at least one."""
    return max(1, limit // 2)


# Each channel's bound: the setting that holds it, and the event past it.
BOUND_SETTINGS = {
    AlertChannel.EMAIL: "ALERT_EMAILS_PER_HOUR",
    AlertChannel.WEBHOOK: "ALERT_WEBHOOKS_PER_HOUR",
}
NOT_SENT_MESSAGES = {AlertChannel.EMAIL: NOT_SENT, AlertChannel.WEBHOOK: WEBHOOK_NOT_SENT}


@dataclass
class Turn:
    """Whether one alert may go out now on a channel for a user's jobs, under its bound."""

    allowed: bool
    # Taken (and to be given back if sending fails); None when refused or unbounded.
    delivery: AlertDelivery | None = None
    # When the next may go out: set when this is the last the hour allows, or refused.
    reopens: datetime | None = None
    # Whether the bound meant is routine alerts' share (routine_bound), not the whole.
    routine_share: bool = False

    def give_back(self) -> None:
        """Not sent after all: it does not count."""
        if self.delivery is not None:
            self.delivery.delete()
            self.delivery = None


def bound(channel: AlertChannel) -> int:
    """The channel's bound per user and hour (0: none)."""
    return int(getattr(settings, BOUND_SETTINGS[channel]))


def take_turn(*, owner_id: int, channel: AlertChannel, routine: bool = False) -> Turn:
    """Takes one of the user's alerts of the last hour on `channel` (its setting,
    BOUND_SETTINGS; 0: no bound), or says none is left; a `routine` alert (not one of
    URGENT_ITEMS) only while fewer than routine_bound have gone. Counted and recorded in one
    transaction holding the user's row (jobs.locks): deliveries at the same instant, from
    any number of task threads or processes, take the hour's turns one after another, so
    none goes past the bound (two could, counting before either had written)."""
    limit = bound(channel)
    if not limit:
        return Turn(allowed=True)
    share = routine_bound(limit) if routine else limit
    routine_share = share < limit
    now = timezone.now()
    since = now - ALERT_WINDOW
    with transaction.atomic():
        user_row_locked(user_id=owner_id)
        mine = AlertDelivery.objects.filter(owner_id=owner_id, channel=channel)
        window = mine.filter(sent_at__gte=since)
        times = list(window.order_by("sent_at", "pk").values_list("sent_at", flat=True))
        taken = len(times)
        if taken >= share:
            # Open again once the hour has let go of enough for one more under `share`.
            reopens = times[taken - share] + ALERT_WINDOW
            return Turn(allowed=False, reopens=reopens, routine_share=routine_share)
        delivery = AlertDelivery.objects.create(owner_id=owner_id, channel=channel, sent_at=now)
        mine.filter(sent_at__lt=since).delete()  # past the hour: counted no more
    last = taken + 1 == share
    reopens = (times[0] if times else now) + ALERT_WINDOW if last else None
    return Turn(allowed=True, delivery=delivery, reopens=reopens, routine_share=routine_share)


def _not_sent(*, job: Job, item: str, channel: AlertChannel, turn: Turn) -> None:
    """The event of an alert past its channel's bound (or routine alerts' share), on its
    job."""
    from .services import job_event

    assert turn.reopens is not None
    if turn.routine_share:
        message = recorded(
            ROUTINE_NOT_SENT_MESSAGES[channel],
            item=item_name(item),
            limit=bound(channel),
            time=_when(turn.reopens),
        )
    else:
        message = recorded_plural(
            NOT_SENT_MESSAGES[channel],
            "limit",
            item=item_name(item),
            limit=bound(channel),
            time=_when(turn.reopens),
        )
    job_event(job=job, reason="AlertNotSent", message=message, warning=True)


def _turn_for_delivery(*, job: Job, item: str, channel: AlertChannel, tries: Tries) -> Turn | None:
    """The turn this delivery of `item` on `channel` goes out in, the same rule for email and
    webhooks: a retry whose earlier try went out somewhere takes none (an alert counts once,
    however often it is tried); None, its refusal recorded (AlertNotSent), when the channel's
    bound allows none now."""
    if tries.counted:
        return Turn(allowed=True)
    turn = take_turn(owner_id=job.owner_id, channel=channel, routine=item not in URGENT_ITEMS)
    if not turn.allowed:
        _not_sent(job=job, item=item, channel=channel, turn=turn)
        return None
    return turn


def _when(moment: datetime) -> str:
    return chat_bots.moment_with_zone(moment, "%Y-%m-%d %H:%M")


def deliver(
    *,
    job: Job,
    item: str,
    message: str,
    time: str,
    webhooks: list[int] | None = None,
    emails: list[int] | None = None,
    attempt: int = 1,
    counted: bool = False,
) -> None:
    """Sends one alert on every channel of the job; records each outcome as an event.

    A later try (`attempt` 2 and on, RETRY_MINUTES) sends it only to the `webhooks` and
    `emails` at these places in the job's lists, which an earlier try could not reach.
    `counted`: that try reached another destination of the channel, so the alert already
    counts toward the channel's hourly bound."""
    alert = _alert_config(job)
    if alert is None:
        return
    payload = alert_payload(job, item, message, time)
    # A job stored before these limits (jobs.spec) may list more: the first ones are served.
    # A line listed twice (a hook pasted twice, an address in two cases) gets the alert once
    # (QA 38: it got it twice); the same on every try, so a later try's places still hold.
    addresses = _once(alert.emails[:MAX_ALERT_EMAILS], key=str.casefold)
    hooks = _once(alert.webhooks[:MAX_ALERT_WEBHOOKS], key=str)
    if attempt == 1:
        emails, webhooks = list(range(len(addresses))), list(range(len(hooks)))
    tries = Tries(job=job, item=item, message=message, time=time, attempt=attempt, counted=counted)
    chosen_emails = [i for i in emails or [] if 0 <= i < len(addresses)]
    if chosen_emails:
        _deliver_email(
            job=job,
            item=item,
            message=message,
            emails=addresses,
            chosen=chosen_emails,
            payload=payload,
            tries=tries,
        )
    chosen = [i for i in webhooks or [] if 0 <= i < len(hooks)]
    if chosen:
        _deliver_webhooks(
            job=job,
            item=item,
            message=message,
            webhooks=hooks,
            chosen=chosen,
            payload=payload,
            tries=tries,
        )


@dataclass
class Tries:
    """Which try of an alert this is, and the next one's time (None: this is the last)."""

    job: Job
    item: str
    message: str
    time: str
    attempt: int
    counted: bool
    next_at: datetime | None = None

    def __post_init__(self) -> None:
        if self.attempt <= len(RETRY_MINUTES) and _can_defer():
            from .runner import minutes

            self.next_at = timezone.now() + minutes(RETRY_MINUTES[self.attempt - 1])

    def failed(self, exc: Exception) -> tuple[str, dict[str, Any]] | None:
        """How a failed try that may pass later is worded (its text, its parameters), or
        None for a refusal that another try would not change."""
        if not _passing(exc):
            return None
        if self.next_at is not None:
            return "retried", {"time": _when(self.next_at)}
        return ("gave_up", {"tries": self.attempt}) if self.attempt > 1 else None

    def again(self, *, emails: list[int], webhooks: list[int], counted: bool) -> None:
        """Queues the next try of these (by their place in the job's lists: the task's row
        holds no address or URL, whose token or signing secret the tasks' admin page would
        show)."""
        from .services import job_event
        from .tasks import deliver_alert

        assert self.next_at is not None
        try:
            with transaction.atomic():
                deliver_alert.using(run_after=self.next_at).enqueue(
                    job_id=self.job.pk,
                    item=self.item,
                    message=self.message,
                    time=self.time,
                    message_source=source_of(self.message),
                    webhooks=webhooks,
                    emails=emails,
                    attempt=self.attempt + 1,
                    counted=self.counted or counted,
                )
        except Exception as exc:
            logger.exception("could not queue the next try of an alert for %s", self.job.public_id)
            job_event(
                job=self.job,
                reason="AlertFailed",
                message=recorded(
                    gettext_noop("%(item)s: not queued (%(error)s)"),
                    item=item_name(self.item),
                    error=exc,
                ),
                warning=True,
            )


def _once(lines: list[str], *, key: Callable[[str], str]) -> list[str]:
    """The lines in their order, each `key` its first time only."""
    seen: set[str] = set()
    kept = []
    for line in lines:
        if key(line) not in seen:
            seen.add(key(line))
            kept.append(line)
    return kept


EMAIL_RETRIED = gettext_noop(
    "%(item)s: email to %(addresses)s failed (%(error)s); it is tried again at %(time)s"
)
EMAIL_GAVE_UP = gettext_noop(
    "%(item)s: email to %(addresses)s failed (%(error)s), at each of its %(tries)d tries; it "
    "is not tried again"
)


MAIL_NOT_SET = gettext_noop(
    "%(item)s: email to %(addresses)s not sent: no mail server is set for this console "
    "(EMAIL_HOST), so it was only written to the worker's log; ask an administrator to set "
    "one."
)
CONSOLE_MAIL_BACKEND = "django.core.mail.backends.console.EmailBackend"


def mail_printed_only() -> bool:
    """Whether mail goes nowhere but the log: no EMAIL_HOST, Django's console backend."""
    mailers = getattr(settings, "MAILERS", None) or {}
    return mailers.get("default", {}).get("BACKEND") == CONSOLE_MAIL_BACKEND


def _deliver_email(
    *,
    job: Job,
    item: str,
    message: str,
    emails: list[str],
    chosen: list[int],
    payload: dict[str, Any],
    tries: Tries,
) -> None:
    from .services import job_event

    turn = _turn_for_delivery(job=job, item=item, channel=AlertChannel.EMAIL, tries=tries)
    if turn is None:
        return
    title = recorded(ITEM_TITLES[item], name=job.task_name) if item in ITEM_TITLES else item
    brand = recorded(gettext_noop("AI Job Console"))
    note = None
    if turn.reopens is not None and turn.routine_share:
        note = recorded(
            ROUTINE_LAST_MAIL_NOTE,
            limit=settings.ALERT_EMAILS_PER_HOUR,
            time=_when(turn.reopens),
        )
    elif turn.reopens is not None:
        note = recorded_plural(
            LAST_MAIL_NOTE,
            "limit",
            limit=settings.ALERT_EMAILS_PER_HOUR,
            time=_when(turn.reopens),
        )
    to = [emails[i] for i in chosen]
    sent: list[str] = []
    failures: list[tuple[Exception, list[str]]] = []
    # One mail per language, each to its readers (jobs.languages: a user's address in that
    # user's language, any other in the owner's); the webhooks' JSON is in the owner's.
    for language, addresses in addresses_by_language(addresses=to, owner=job.owner).items():
        with translation.override(language):
            subject = f"[{_said(brand)}] {_said(title)}"
            # What a bot's message says too (QA 38: the mail had the message and the link
            # only, so a job's end mailed later never said when it ended).
            lines = chat_bots.alert_lines(
                name=job.task_name,
                event=translation.gettext(ITEM_NAMES[item]) if item in ITEM_NAMES else item,
                time_text=chat_bots.time_shown(payload["time"]),
            )
            body = f"{_said(message)}\n\n" + "\n".join(lines) + f"\n\n{payload['link']}\n"
            if note is not None:
                body += f"\n{_said(note)}\n"
        mail = EmailMessage(subject, body, settings.DEFAULT_FROM_EMAIL, addresses)
        try:
            mail.send()
        except smtplib.SMTPRecipientsRefused as exc:
            failures += _refusals(exc.recipients, addresses)
        except Exception as exc:
            failures.append((exc, addresses))
        else:
            # The SMTP backend (jobs.mail) keeps the recipients the server refused as it took
            # the mail for the others: those were not sent it.
            refused = getattr(mail, "refused", {})
            sent += [a for a in addresses if a not in refused]
            failures += _refusals(refused, addresses)
    if sent and mail_printed_only():
        # No mail server: Django's console backend wrote the mail to the worker's log, and the
        # job's page said "email sent" to people who never got it (QA 59).
        turn.give_back()
        job_event(
            job=job,
            reason="AlertNotSent",
            message=recorded(
                MAIL_NOT_SET,
                item=item_name(item),
                addresses=Words(tuple(a for a in to if a in sent)),
            ),
            warning=True,
        )
        return
    if not sent:
        turn.give_back()  # the mail server refused it: it does not count
    again: list[int] = []
    for exc, addresses in failures:
        said = gettext_noop("%(item)s: email failed (%(error)s)")
        params: dict[str, Any] = {}
        wording = tries.failed(exc)
        if wording is not None:
            kind, params = wording
            said = EMAIL_RETRIED if kind == "retried" else EMAIL_GAVE_UP
            params["addresses"] = Words(tuple(addresses))
            if kind == "retried":
                again += [emails.index(a) for a in addresses]
        job_event(
            job=job,
            reason="AlertFailed",
            message=recorded(said, item=item_name(item), error=failure_text(exc), **params),
            warning=True,
        )
    if sent:
        job_event(
            job=job,
            reason="AlertSent",
            message=recorded(
                gettext_noop("%(item)s: email sent to %(addresses)s"),
                item=item_name(item),
                addresses=Words(tuple(a for a in to if a in sent)),  # in the job's order
            ),
        )
    if again:
        tries.again(emails=sorted(again), webhooks=[], counted=bool(sent))


def _refusals(
    refused: dict[str, tuple[int, bytes]], addresses: list[str]
) -> list[tuple[Exception, list[str]]]:
    """The recipients of `addresses` a mail server refused, as failures: those it refused for
    now (4xx) apart from those it refused for good (5xx), so that only the first are tried
    again (left28: a mix of both was final for all, as one refusal)."""
    failures: list[tuple[Exception, list[str]]] = []
    for for_now in (True, False):
        part = {
            a: refused[a]
            for a in addresses
            if a in refused and (400 <= refused[a][0] < 500) == for_now
        }
        if part:
            failures.append((smtplib.SMTPRecipientsRefused(part), list(part)))
    return failures


def _said(text: str) -> str:
    """A recorded text in the language active now (its stored wording if it has no source)."""
    return display_text(text, source_of(text))


def bot_text(*, bot: str, job: Job, item: str, message: str, payload: dict[str, Any]) -> str:
    """What a chat bot posts for this alert, in the job owner's language (as the generic JSON's
    `message`)."""
    gettext = translation.gettext
    with translation.override(reader_language(user=job.owner)):
        name = job.task_name
        title = gettext(ITEM_TITLES[item]) % {"name": name} if item in ITEM_TITLES else item
        return chat_bots.alert_text(
            bot=bot,
            brand=gettext("AI Job Console"),
            title=title,
            name=name,
            event=gettext(ITEM_NAMES[item]) if item in ITEM_NAMES else item,
            time_text=chat_bots.time_shown(payload["time"]),
            message=_said(message),
            link=payload["link"],
        )


WEBHOOK_FAILED = gettext_noop("%(item)s: webhook to %(host)s failed (%(error)s)")
KEYWORD_REFUSED = gettext_noop(
    "%(item)s: webhook to %(host)s failed (%(error)s): the bot posts only messages holding one "
    "of its custom keywords; every alert starts with “%(keyword)s”: add it as one"
)


# A destination that could not be reached, or that answered it cannot take the alert now
# (a webhook's HTTP 5xx or 429, a mail server's 4xx), is tried again this many job minutes
# (JOB_MINUTE_SECONDS) after each failed try: a receiver down for a while (a chat gateway
# restarting, a deploy, a network blip) must not lose the alert (QA 38: one try, then only an
# AlertFailed event). A refusal that another try would not change (4xx, a bot's error code, a
# private address, a mail server's 5xx) is not tried again, and a destination that took the
# alert is never sent it again.
RETRY_MINUTES = (1, 5, 30)
WEBHOOK_RETRIED = gettext_noop(
    "%(item)s: webhook to %(host)s failed (%(error)s); it is tried again at %(time)s"
)
WEBHOOK_GAVE_UP = gettext_noop(
    "%(item)s: webhook to %(host)s failed (%(error)s), at each of its %(tries)d tries; it is "
    "not tried again"
)


WEBHOOK_UNTRUSTED = gettext_noop(
    "%(item)s: webhook to %(host)s failed (%(error)s): its certificate is not trusted; if a "
    "company CA signed it, an administrator sets that CA in ALERT_WEBHOOK_CA_FILE"
)


WEBHOOK_CERTIFICATE_MISFITS = gettext_noop(
    "%(item)s: webhook to %(host)s failed (%(error)s): its certificate does not hold for "
    "this webhook (it names another host or address, or is out of date), which no CA file "
    "changes; write the webhook with a host name its certificate names, or have the "
    "certificate renewed"
)
# OpenSSL's verify codes for a certificate whose signer is not trusted, which a CA set in
# ALERT_WEBHOOK_CA_FILE fixes (X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT, _DEPTH_ZERO_SELF_SIGNED_
# CERT, _SELF_SIGNED_CERT_IN_CHAIN, _UNABLE_TO_GET_ISSUER_CERT_LOCALLY, _UNABLE_TO_VERIFY_LEAF_
# SIGNATURE). Any other (a name or IP address mismatch, an expired certificate) a CA does not
# fix: told to set one, an administrator set it and the webhook failed on as before (review 41:
# a gateway on the company network written by its IP address, its certificate naming its host).
UNTRUSTED_SIGNER_CODES = frozenset({2, 18, 19, 20, 21})


def certificate_refusal(exc: BaseException) -> ssl.SSLCertVerificationError | None:
    """The verification error a webhook's TLS handshake failed on its certificate with
    (httpx's ConnectError raised from ssl's), or None: no later try passes it."""
    seen: BaseException | None = exc
    for _step in range(10):  # the chain of causes, bounded
        if seen is None:
            return None
        if isinstance(seen, ssl.SSLCertVerificationError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def _passing(exc: Exception) -> bool:
    """Whether another try later may get through: the receiver could not be reached, or said
    it cannot take it now."""
    if isinstance(exc, CAFileUnreadable):  # the file may be put back before the next try
        return True
    if isinstance(exc, httpx.TransportError):  # refused, reset, timed out
        return certificate_refusal(exc) is None  # (a certificate refused stays so)
    if isinstance(exc, httpx.HTTPStatusError):
        status = exc.response.status_code
        return status >= 500 or status == 429
    if isinstance(exc, chat_bots.BotRefused):
        return exc.status >= 500 or exc.status == 429 or exc.rate_limited
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        return all(400 <= code < 500 for code, _words in exc.recipients.values())
    if isinstance(exc, smtplib.SMTPResponseException):
        return 400 <= exc.smtp_code < 500  # a mail server's "try again later"
    if isinstance(exc, smtplib.SMTPServerDisconnected):
        return True
    if isinstance(exc, smtplib.SMTPException):
        return False
    return isinstance(exc, OSError)  # the mail server refused the connection, timed out


def _can_defer() -> bool:
    from .tasks import deliver_alert

    # The database queue can; a queue that runs tasks at once (tests') cannot wait.
    return deliver_alert.get_backend().supports_defer


def _deliver_webhooks(
    *,
    job: Job,
    item: str,
    message: str,
    webhooks: list[str],
    chosen: list[int],
    payload: dict[str, Any],
    tries: Tries,
) -> None:
    from .services import job_event

    turn = _turn_for_delivery(job=job, item=item, channel=AlertChannel.WEBHOOK, tries=tries)
    if turn is None:
        return
    delivered = False
    again: list[int] = []
    for index in chosen:
        url = webhooks[index]
        # The URL may carry a token in its path: events name the host only.
        host = urlsplit(url).hostname or "?"
        brand = ""
        said, params = WEBHOOK_FAILED, {}
        try:
            bot = chat_bots.bot_of(url)
            if bot is None:
                post_webhook(url, payload)
            else:
                text = bot_text(bot=bot, job=job, item=item, message=message, payload=payload)
                brand = text.partition("]")[0].removeprefix("[")
                post_to_bot(url=url, bot=bot, text=text)
        except Exception as exc:
            wording = tries.failed(exc)
            if refusal := certificate_refusal(exc):
                # QA 59: said with what fixes it, once (no try would pass it).
                untrusted = refusal.verify_code in UNTRUSTED_SIGNER_CODES
                said = WEBHOOK_UNTRUSTED if untrusted else WEBHOOK_CERTIFICATE_MISFITS
            elif isinstance(exc, chat_bots.BotRefused) and exc.keyword:
                # A bot with 自定义关键词 posts only messages holding one: the team is told the
                # word every alert holds, rather than left to guess from "keywords not in
                # content".
                said, params = KEYWORD_REFUSED, {"keyword": brand}
            elif wording is not None:
                kind, params = wording
                said = WEBHOOK_RETRIED if kind == "retried" else WEBHOOK_GAVE_UP
                if kind == "retried":
                    again.append(index)
            job_event(
                job=job,
                reason="AlertFailed",
                message=recorded(
                    said, item=item_name(item), host=host, error=failure_text(exc), **params
                ),
                warning=True,
            )
        else:
            delivered = True
            job_event(
                job=job,
                reason="AlertSent",
                message=recorded(
                    gettext_noop("%(item)s: webhook sent to %(host)s"),
                    item=item_name(item),
                    host=host,
                ),
            )
    if not delivered:
        turn.give_back()  # no webhook took it: it does not count, as a refused email
    if again:
        tries.again(emails=[], webhooks=again, counted=delivered)
