"""Logging filters the settings' LOGGING names (imported while Django sets up: no models)."""

from __future__ import annotations

import logging

from django.core.exceptions import PermissionDenied

# The answers /healthz gives by design (jobs.health_views): its 503 says the worker or the
# database is down, its 400 a wrong `worker` parameter.
HEALTHZ_ANSWERS = (400, 503)


class HealthzAnswers(logging.Filter):
    """Drops django.request's record of a /healthz 503 or 400. A probe asks every few
    seconds, so a stopped worker would otherwise write an ERROR line each time (and wake
    whatever watches the log for errors) for what the probe itself already reports; an
    error of the endpoint itself (a 500) is still logged."""

    def filter(self, record: logging.LogRecord) -> bool:
        request = getattr(record, "request", None)
        return not (
            getattr(request, "path_info", None) == "/healthz"
            and getattr(record, "status_code", None) in HEALTHZ_ANSWERS
        )


# Longest host name kept in the line: a DNS name has at most 253 characters.
HOST_LINE_CHARS = 300


class UnlistedHostOneLine(logging.Filter):
    """Makes Django's record of a request by a host ALLOWED_HOSTS does not list one WARNING
    line, without its traceback, the host cut to HOST_LINE_CHARS. Django logs it as an ERROR
    with a traceback (ten lines), so every scanner or mistyped address on a console reachable
    from a network filled the log with errors that are no fault of the console, each Host
    header written twice at whatever length it was sent. The person gets the 400 page saying
    why (jobs.http.bad_request); the operator still sees which host was refused."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if len(message) > HOST_LINE_CHARS:
            message = message[:HOST_LINE_CHARS] + "…"
        record.msg, record.args = message, ()
        record.exc_info = record.exc_text = None
        record.levelno, record.levelname = logging.WARNING, logging.getLevelName(logging.WARNING)
        return True


class PermissionDeniedOneLine(logging.Filter):
    """Leaves Django's record of a PermissionDenied (a 403: staff opening a review page their
    permissions do not cover) one WARNING line, "Forbidden (Permission denied): <path>",
    without the traceback Django attaches: it is the permission check answering as meant,
    not a fault to debug, and the page (templates/403.html) tells the person why."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], PermissionDenied):
            record.exc_info = record.exc_text = None
        return True


# The refusals of a request Django logs as an ERROR with its traceback under
# django.security.<name> (a SuspiciousOperation) that are someone's request, not a fault:
# a filter an admin list does not offer (jobs.admin_lists), too many fields or files in a form,
# a body over the upload limit. qa90: each wrote some 40 lines, so anyone able to send
# requests could flood the log with ERRORs. One WARNING line each, with the path.
REFUSED_REQUESTS = (
    "DisallowedModelAdminLookup",
    "DisallowedModelAdminToField",
    "TooManyFieldsSent",
    "TooManyFilesSent",
    "RequestDataTooBig",
)


class RefusedRequestOneLine(UnlistedHostOneLine):
    """As UnlistedHostOneLine, for REFUSED_REQUESTS: "<why>: <path>" on one WARNING line."""

    def filter(self, record: logging.LogRecord) -> bool:
        path = getattr(getattr(record, "request", None), "path", "")
        if path:
            record.msg, record.args = f"{record.getMessage()}: {path}", ()
        return super().filter(record)
