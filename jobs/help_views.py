"""帮助 (Help): a page of the console's own on the topics a first-time user asks about, each
under an anchor the wizard's "详见帮助" links open (jobs.forms.help_anchored) (qa113: seed 000 sends readers to documents
with "详情请参见…", and the console linked none).

Decided: a hand-written page, translated as every other text is, not the README rendered. The
README is in English, for whoever runs the console, and 8,000 lines long; a Chinese-only
user needs a page in their language that says what each setting does, and a Markdown
library would be one more dependency for a page in the wrong language.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from . import spec as S
from .http import AuthenticatedHttpRequest
from .runner import DEFAULT_RESTART_LIMIT


@require_safe
@login_required
def help_page(request: AuthenticatedHttpRequest) -> HttpResponse:
    context = {
        "hang_minutes": S.SUGGESTED_HANG_MINUTES,
        "startup_minutes": S.DEFAULT_HANG_STARTUP_TOLERATION_MINUTES,
        "retry_limit": DEFAULT_RESTART_LIMIT,
    }
    return render(request, "jobs/help.html", context)
