"""Each user's time zone: the IANA zone their pages show times in, and read days in (the job
list's date filters, usage periods), chosen on the account page (jobs.accounts.time_zone_set).

Kept on the server (UserPreference.time_zone) so that it follows the user to any browser, and
in the session (SESSION_KEY) when chosen and at log-in, so that a page does not read it with a
query of its own: UserTimeZoneMiddleware activates it from there for the request. A visitor,
a user who chose none, an API call signed with a key (no session) and the worker get the
console's TIME_ZONE. Chosen on one browser, it applies on the others from their next log-in.

What goes to many readers stays in the console's zone and says which: alert mails and chat
bots (jobs.chat_bots.moment_with_zone), the server's log. The API writes UTC.
"""

from __future__ import annotations

import functools
import zoneinfo
from collections import defaultdict
from collections.abc import Callable
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.signals import user_logged_in
from django.db import Error as DatabaseLibraryError
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from .models import UserPreference

# The zone chosen, "" for the console's; absent in a session from before this was kept.
SESSION_KEY = "jobs_time_zone"


@functools.cache
def known_time_zones() -> frozenset[str]:
    """The IANA zones this machine knows (the system's tz database, or the tzdata package)."""
    return frozenset(zoneinfo.available_timezones())


def _zone_table_text() -> str:
    """zone.tab of the tz database zoneinfo reads (the system's first, as zoneinfo.TZPATH
    orders it, else the tzdata package's), "" when neither has one."""
    for folder in zoneinfo.TZPATH:
        try:
            return (Path(folder) / "zone.tab").read_text(encoding="utf-8")
        except OSError:
            continue
    try:
        return (resources.files("tzdata.zoneinfo") / "zone.tab").read_text(encoding="utf-8")
    except (ModuleNotFoundError, OSError):
        return ""


@functools.cache
def listed_time_zones() -> frozenset[str]:
    """The zones the account page offers: one name per place, as the tz database's zone.tab
    lists them (each country's zones, Europe/Amsterdam and Asia/Kolkata among them), and UTC.
    Not the backward names that are links to them (Africa/Asmera, America/Buenos_Aires,
    Asia/Calcutta, US/Pacific; qa101: listed beside the names they stand for). A name not
    listed still works once saved (known_time_zones): the page shows it as chosen now. Every
    known zone is offered when no zone.tab is found."""
    listed = {
        line.split("\t")[2]
        for line in _zone_table_text().splitlines()
        if line and not line.startswith("#") and line.count("\t") >= 2
    }
    known = known_time_zones()
    return frozenset((listed | {"UTC", settings.TIME_ZONE}) & known) if listed else known


# The zones most of the console's readers live or work in, by a name people say, offered first
# (qa113: 400+ IANA names, Asia/Shanghai read as a code). A small table, not Babel's CLDR names:
# these few names, translated as every text is, are all the pages need (no new dependency).
COMMON_TIME_ZONES: dict[str, Any] = {
    "Asia/Shanghai": gettext_lazy("China Standard Time"),
    "Asia/Hong_Kong": gettext_lazy("Hong Kong"),
    "Asia/Taipei": gettext_lazy("Taipei"),
    "Asia/Tokyo": gettext_lazy("Tokyo"),
    "Asia/Seoul": gettext_lazy("Seoul"),
    "Asia/Singapore": gettext_lazy("Singapore"),
    "UTC": gettext_lazy("Coordinated Universal Time"),
    "Europe/London": gettext_lazy("London"),
    "Europe/Berlin": gettext_lazy("Berlin"),
    "Europe/Paris": gettext_lazy("Paris"),
    "America/New_York": gettext_lazy("US Eastern time"),
    "America/Chicago": gettext_lazy("US Central time"),
    "America/Denver": gettext_lazy("US Mountain time"),
    "America/Los_Angeles": gettext_lazy("US Pacific time"),
}


def utc_offset(name: str, *, at: datetime | None = None) -> str:
    """`name`'s offset from UTC at `at` (now by default), "UTC+08:00"; UTC itself as "UTC"."""
    moment = (at or timezone.now()).astimezone(zoneinfo.ZoneInfo(name))
    offset = moment.strftime("%:z")
    return "UTC" if offset == "+00:00" else "UTC" + offset


def zone_label(name: str, *, at: datetime | None = None) -> str:
    """`name` for people: a common zone by the name people say, with its IANA name and offset,
    "北京时间（Asia/Shanghai，UTC+08:00）"; any other by its IANA name and offset,
    "Europe/Amsterdam（UTC+01:00）". The offset is today's (summer time changes it)."""
    offset = utc_offset(name, at=at)
    people_name = COMMON_TIME_ZONES.get(name)
    if people_name is None:
        return _("%(zone)s (%(offset)s)") % {"zone": name, "offset": offset}
    if name == offset:  # UTC: said once
        return _("%(name)s (%(zone)s)") % {"name": people_name, "zone": name}
    return _("%(name)s (%(zone)s, %(offset)s)") % {
        "name": people_name,
        "zone": name,
        "offset": offset,
    }


def common_time_zones() -> list[str]:
    """The common zones this machine knows, in the table's order (east to west)."""
    known = known_time_zones()
    return [name for name in COMMON_TIME_ZONES if name in known]


def time_zone_groups() -> list[tuple[str, list[str]]]:
    """The listed zones grouped by region (the part before the first "/"), regions and zones in
    alphabetical order, for a select's optgroups; last, "Other", those without (UTC). The
    common zones are not among them: the account page offers them first, in a group of their
    own."""
    groups: dict[str, list[str]] = defaultdict(list)
    others = []
    for name in sorted(listed_time_zones() - set(COMMON_TIME_ZONES)):
        region, slash, _place = name.partition("/")
        if slash:
            groups[region].append(name)
        else:
            others.append(name)
    return [*sorted(groups.items()), *([(_("Other"), others)] if others else [])]


def user_time_zone(*, user: Any) -> str:
    """The zone `user` chose, "" for none (the console's)."""
    chosen = UserPreference.objects.filter(user_id=user.pk).values_list("time_zone", flat=True)
    name = chosen.first() or ""
    return name if name in known_time_zones() else ""


def zone_shown() -> tuple[str, str]:
    """The zone the request's times are shown in (activated by UserTimeZoneMiddleware) and its
    label for people now, ("Asia/Shanghai", "北京时间（Asia/Shanghai，UTC+08:00）"), said once on
    pages that list times (qa101: "2026-12-07 17:45:12" gave no hint which clock; qa113: nor
    did "Asia/Shanghai" to a reader who says 北京时间). No query: the zone is the session's."""
    name = timezone.get_current_timezone_name()
    return name, zone_label(name)


def time_zone_chosen(*, request: HttpRequest, user: Any, time_zone: str) -> None:
    """`user` chose `time_zone` ("" for the console's, else a known zone: the form checks):
    kept for them, and for this session."""
    UserPreference.objects.update_or_create(user_id=user.pk, defaults={"time_zone": time_zone})
    request.session[SESSION_KEY] = time_zone


@receiver(user_logged_in, dispatch_uid="jobs.time_zones.logged_in")
def _logged_in(sender: Any, request: HttpRequest | None, user: Any, **kwargs: Any) -> None:
    # Every log-in (the console's page, the admin's, a test client's): the session starts in
    # the user's zone, chosen on this browser or another.
    if request is not None and hasattr(request, "session"):
        request.session[SESSION_KEY] = user_time_zone(user=user)


def _session_time_zone(request: HttpRequest) -> str:
    """The zone the request's session was given; "" for the console's."""
    session = getattr(request, "session", None)
    if session is None or settings.SESSION_COOKIE_NAME not in request.COOKIES:
        return ""  # no session to read: a visitor's first page, an API call, a probe
    name = session.get(SESSION_KEY)
    if name is None:
        # A session from before zones were kept: read once, kept for its next pages.
        if not request.user.is_authenticated:
            return ""
        name = session[SESSION_KEY] = user_time_zone(user=request.user)
    return name if name in known_time_zones() else ""


class UserTimeZoneMiddleware:
    """Shows and reads times in the request's user's zone (django.utils.timezone.activate),
    the console's for anyone else. After AuthenticationMiddleware."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            name = _session_time_zone(request)
        except DatabaseLibraryError:
            # The view meets the database's trouble too and answers its 503
            # (jobs.http.DatabaseUnreachableMiddleware); this one sees only what a view raises.
            name = ""
        if name:
            timezone.activate(zoneinfo.ZoneInfo(name))
        else:
            timezone.deactivate()
        try:
            return self.get_response(request)
        finally:
            timezone.deactivate()
