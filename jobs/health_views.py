"""`GET /healthz`: for a load balancer, a systemd or Kubernetes probe, a monitoring check.

Answered to anyone, without a log-in or a session, never cached, without writing anything:
200 when the database answers and the worker is alive, 503 otherwise (jobs.health says
what each part is, and nothing of the machines). `?worker=0` leaves the worker out: the web
server and its database only, for a load balancer (a stopped worker is no reason to take the
web server out; its users see the banner instead).
"""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from .health import health


@require_safe
@never_cache
def healthz(request: HttpRequest) -> JsonResponse:
    worker = request.GET.get("worker", "1")
    if worker not in ("0", "1"):
        message = _("worker is 0 (leave the worker out) or 1 (check it too, the default).")
        return JsonResponse({"status": "error", "errors": {"worker": [message]}}, status=400)
    healthy, body = health(check_worker=worker == "1")
    return JsonResponse(body, status=200 if healthy else 503)
