"""What Django's error page (DEBUG on) shows of a request that failed.

Django hides settings named like secrets, but with DEBUG on it shows everything else as it is:
every field of the form that was sent (`sensitive_post_parameters` is ignored under DEBUG), the
local variables of each frame of the traceback, the cookies and the request's environment.
Here those hold what must never be shown again once typed: a wizard step's secret env values
and registry password, a chat bot's `#secret=`, a request pasted for import, the password of a
log-in, a session cookie; a spec, a draft's data or a job in any frame holds them too, and
`manage.py runserver` puts the server's own environment (DATABASE_URL with its password) in
each request's. A 500 under DEBUG (a database that went away, a table not yet migrated) then
put them on a page that is screenshotted into bug reports (QA 53). So the values of the form,
of each frame's variables and of the cookies are always hidden (their names stay: where it
failed is still read from the traceback), and DATABASE_URL is hidden with the settings Django
already hides.
"""

from __future__ import annotations

import re
from typing import Any

from django.http import HttpRequest
from django.utils.datastructures import MultiValueDict
from django.views.debug import SafeExceptionReporterFilter


class ConsoleExceptionReporterFilter(SafeExceptionReporterFilter):
    # Django's own list, and the database's address, which may hold its password.
    hidden_settings = re.compile(
        "API|AUTH|TOKEN|KEY|SECRET|PASS|SIGNATURE|HTTP_COOKIE|DATABASE_URL", flags=re.I
    )

    def is_active(self, request: HttpRequest | None) -> bool:
        # Django's is active only with DEBUG off, the one time its page is never shown.
        return True

    def get_post_parameters(self, request: HttpRequest | None) -> Any:
        if request is None:
            return {}
        return self._cleanse_multivaluedict(request.POST, "__ALL__")

    def get_safe_cookies(self, request: HttpRequest) -> dict[str, Any]:
        return dict.fromkeys(getattr(request, "COOKIES", {}), self.cleansed_substitute)

    def get_traceback_frame_variables(self, request: HttpRequest | None, tb_frame: Any) -> Any:
        return [(name, self.cleansed_substitute) for name in tb_frame.f_locals]

    def cleanse_special_types(self, request: HttpRequest | None, value: Any) -> Any:
        if isinstance(value, MultiValueDict):
            return self._cleanse_multivaluedict(value, "__ALL__")
        return value
