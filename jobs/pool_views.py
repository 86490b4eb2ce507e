"""The resource pools page (资源池). Thin: what it shows comes from jobs.pools.

It works without JavaScript (a reload shows current figures); with htmx the figures refresh
by polling the same URL, which answers with just the `pool-figures` partial.
"""

from __future__ import annotations

import uuid

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe
from django.views.decorators.vary import vary_on_headers

from .http import AuthenticatedHttpRequest
from .pools import OWN_JOBS_SHOWN, pools_overview

TEMPLATE = "jobs/pool_list.html"


@require_safe
@login_required
@vary_on_headers(
    "HX-Request"
)  # the partial and the page share the URL: never cache one as the other
def pool_list(request: AuthenticatedHttpRequest) -> HttpResponse:
    context = {
        "pools": pools_overview(viewer=request.user),
        "own_jobs_shown": OWN_JOBS_SHOWN,
        # Create job in this pool's one-time key: the same click sent twice makes one draft.
        "create_key": uuid.uuid4().hex,
    }
    return render(request, f"{TEMPLATE}#pool-figures" if request.htmx else TEMPLATE, context)
