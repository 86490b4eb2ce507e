from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
django_application = get_wsgi_application()


def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    """Django's application, sending no body for a HEAD. Django draws a HEAD as a GET (the
    same status and headers, Content-Length included) and leaves dropping the body to the
    server: runserver and gunicorn before 27 dropped it quietly, gunicorn 27 logs a WARNING
    for each one (every monitor's probe filled the log). Here the body is never iterated, so
    a streamed response (a log download) is not read either; it is closed, which ends the
    request as usual (request_finished, the database connection given back)."""
    response = django_application(environ, start_response)
    if environ.get("REQUEST_METHOD") != "HEAD":
        return response
    close = getattr(response, "close", None)
    if close is not None:
        close()
    return []
