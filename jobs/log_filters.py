"""Logging filters the settings' LOGGING names (imported while Django sets up: no models)."""

from __future__ import annotations

import logging

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
