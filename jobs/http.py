from __future__ import annotations

import logging
from collections.abc import Callable
from functools import wraps
from typing import Any
from urllib.parse import unquote, urlsplit

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.models import User
from django.contrib.auth.views import redirect_to_login
from django.contrib.sessions.middleware import SessionMiddleware as DjangoSessionMiddleware
from django.db import DEFAULT_DB_ALIAS, connections
from django.db import Error as DatabaseLibraryError
from django.http import (
    HttpRequest,
    HttpResponse,
    HttpResponseNotAllowed,
    HttpResponseRedirect,
    QueryDict,
)
from django.middleware.locale import LocaleMiddleware as DjangoLocaleMiddleware
from django.shortcuts import resolve_url
from django.template import loader
from django.urls import get_script_prefix
from django.utils import translation
from django.utils.translation import gettext_lazy
from django.views import csrf as django_csrf_views
from django.views import defaults as django_defaults
from django_htmx.middleware import HtmxDetails

from .health import database_disk_full, database_unreachable_reason, sqlite_busy
from .languages import browser_language

logger = logging.getLogger(__name__)


def is_console_address(url: str) -> bool:
    """Whether `url`, an address Django has found on this site (url_has_allowed_host_and_scheme),
    is the console's: under its sub-path, when it has one (README "Under a sub-path"). Else a
    `?next=` led from the console to another app on the same host (qa50)."""
    prefix = get_script_prefix()
    if prefix == "/":
        return True  # no sub-path: the whole site is the console's
    # As a browser reads it: tabs and newlines dropped, a backslash a slash, %2e a dot; a
    # dot segment is refused, as /ai-console/../other-app/ leaves the prefix (review32).
    path = urlsplit(url.translate(URL_IGNORED).replace("\\", "/")).path
    if {".", ".."} & set(unquote(path).split("/")):
        return False
    return path.startswith(prefix)


# Characters a browser removes from an address before reading it (WHATWG URL).
URL_IGNORED = str.maketrans("", "", "\t\n\r")


class AuthenticatedHttpRequest(HttpRequest):
    """A request from a logged-in user, as the console's views receive it."""

    user: User
    htmx: HtmxDetails


class HtmxLoginEndedMiddleware:
    """An htmx request whose log-in has ended (logged out in another tab, expired, or ended by
    a password change elsewhere) answers 401 instead of login_required's redirect.

    htmx follows a redirect and swaps what it gets, so a page's poll (the pools page, the job
    list, a job page, the wizard's idle count) would put the whole login page inside the part
    it refreshes and move the focus into it. An error answer is not swapped: the page stays as
    it is, with what was typed, and says in its request banner (console.js) that the log-in
    ended. Placed after HtmxMiddleware, which sets `request.htmx`."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        # The page's user (base.html's X-Console-User) is not the one logged in now: another
        # log-in in another tab. The page must neither show that user's data (a job list's
        # refresh drew the other user's jobs under the first one's name) nor act as them.
        page_user = request.headers.get("X-Console-User")
        if getattr(request, "htmx", False) and page_user:
            try:
                other_user = request.user.is_authenticated and page_user != str(request.user.pk)
            except DatabaseLibraryError:
                # The session and user are read here, before the view: the 503 middleware
                # (DatabaseUnreachableMiddleware) sees only what a view raises, and every
                # refresh of an open page was a 500 with a traceback while the database was
                # down.
                unreachable = database_unreachable_response(request)
                if unreachable is None:
                    raise
                return unreachable
        else:
            other_user = False
        if other_user:
            return HttpResponse(
                status=401,
                content_type="text/plain; charset=utf-8",
                headers={"X-Console-Login": "other-user"},
            )
        response = self.get_response(request)
        if (
            getattr(request, "htmx", False)
            and response.status_code == 302
            and not request.user.is_authenticated
            and urlsplit(response["Location"]).path == resolve_url(settings.LOGIN_URL)
        ):
            return HttpResponse(status=401, content_type="text/plain; charset=utf-8")
        return response


LOGIN_ENDED_NOTHING_DONE = gettext_lazy(
    "Your log-in had ended, so what you just asked for was not done: nothing was changed. Log "
    "in, then do it again."
)


# A form posted after its log-in ended (post_only's `kept`), held in the visitor's session
# until its page is opened again by the user whose page it was (typed_before_login).
FORM_POSTED_LOGGED_OUT = "form_posted_logged_out"
# Bounds of what is kept, as for a wizard step (jobs.wizard_views): a pasted request is at
# most 256 KB (wizard_import.MAX_IMPORT_BYTES), the form's other fields a few short ones; an
# hour to log in again, not SESSION_COOKIE_AGE, so what is never claimed does not stay two
# weeks (left28). A log-in gives the session the usual age again.
KEPT_ACROSS_LOGIN_MAX_BYTES = 260 * 1024
KEPT_ACROSS_LOGIN_SECONDS = 3600
# The form's hidden field naming the user whose page it is (the page's user, as base.html's
# X-Console-User): only that user gets back what it sent.
PAGE_USER_FIELD = "page_user"

LOGIN_ENDED_TYPED_KEPT = gettext_lazy(
    "Your log-in had ended when this form was sent, so nothing was done; what you typed in it "
    "was kept and is filled in again below. Check it, then send it again."
)


def _typed_kept(request: HttpRequest, *, page: str, kept: tuple[str, ...]) -> None:
    """Keeps the fields `kept` of a form posted logged out, for `page` (where the log-in
    comes back to). Only a form that names its page's user is kept: a stranger posting
    logged out cannot have the sessions table store what they send for nobody."""
    user = str(request.POST.get(PAGE_USER_FIELD, ""))
    if not user.isdigit():
        return
    posted = {name: request.POST.getlist(name)[:1] for name in kept if name in request.POST}
    # A file chosen in a field `kept` (the import's .json) as its UTF-8 text, read no further
    # than the bound: the browser cannot choose it again, and the page said it was filled in
    # again while its box was empty (review32). One that is no UTF-8 text is not kept.
    for name in kept:
        if (upload := request.FILES.get(name)) is not None:
            try:
                text = upload.read(KEPT_ACROSS_LOGIN_MAX_BYTES + 1).decode("utf-8-sig")
            except UnicodeDecodeError:
                continue
            posted[name] = [text]
    # As typed (UTF-8), not as JSON escapes it: a Chinese character is six bytes there, a
    # quote two, and a paste the import takes was dropped without a word (review32).
    typed = sum(len(v.encode("utf-8", "surrogatepass")) for vs in posted.values() for v in vs)
    if typed > KEPT_ACROSS_LOGIN_MAX_BYTES:
        return
    request.session[FORM_POSTED_LOGGED_OUT] = {
        "page": urlsplit(page).path,
        "user": user,
        "post": posted,
    }
    request.session.set_expiry(KEPT_ACROSS_LOGIN_SECONDS)


def typed_before_login(request: HttpRequest, *, page: str) -> QueryDict | None:
    """What a form on `page` sent once its log-in had ended (post_only's `kept`), taken from
    the session when that page is opened again by the user whose page it was (saying so);
    None otherwise. Nothing is done with it: it is only filled in again, to be sent again."""
    kept = request.session.get(FORM_POSTED_LOGGED_OUT)
    if not isinstance(kept, dict) or kept.get("page") != urlsplit(page).path:
        return None
    del request.session[FORM_POSTED_LOGGED_OUT]
    if kept.get("user") != str(request.user.pk):
        return None
    post = QueryDict(mutable=True)
    for name, values in dict(kept.get("post") or {}).items():
        post.setlist(str(name), [str(v) for v in values][:1])
    messages.info(request, LOGIN_ENDED_TYPED_KEPT)
    return post


def typed_logged_out_dropped(
    sender: Any, request: HttpRequest | None, user: Any, **kwargs: Any
) -> None:
    """On log-in (user_logged_in): a form kept from a page whose log-in ended stays only for
    the user whose page it was; someone else logging in on that browser gets nothing of it."""
    session = getattr(request, "session", None)
    kept = session.get(FORM_POSTED_LOGGED_OUT) if session is not None else None
    if not isinstance(kept, dict):
        return
    # The log-in lasts SESSION_COOKIE_AGE, not the hour the logged-out session was given.
    session.set_expiry(None)
    if kept.get("user") != str(user.pk):
        del session[FORM_POSTED_LOGGED_OUT]


def login_ended_guard(
    go_to: Callable[..., str],
    *,
    form_page: Callable[..., str] | None = None,
    kept: tuple[str, ...] = (),
) -> Callable[[Callable[..., HttpResponse]], Callable[..., HttpResponse]]:
    """A POST whose log-in has ended is not done, and the login page says so (post_only);
    the fields `kept`, when given, are filled in again on the form's page once its user has
    logged in (typed_before_login), so nothing typed is lost (left30). For a view that draws
    its form on a GET of its own address (API keys), which post_only would redirect."""

    def decorator(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if request.method == "POST" and not request.user.is_authenticated:
                page = form_page(request, **kwargs) if form_page is not None else go_to(**kwargs)
                if kept:
                    # With htmx too: its page says to reload it to log in again, and the
                    # reload would lose what the page still shows (as a wizard step's).
                    _typed_kept(request, page=page, kept=kept)
                if not getattr(request, "htmx", False):
                    messages.warning(request, LOGIN_ENDED_NOTHING_DONE)
                    return redirect_to_login(page)
            return view(request, *args, **kwargs)

        return wrapped

    return decorator


def post_only(
    go_to: Callable[..., str],
    *,
    form_page: Callable[..., str] | None = None,
    kept: tuple[str, ...] = (),
) -> Callable[[Callable[..., HttpResponse]], Callable[..., HttpResponse]]:
    """require_POST for a form's target (Stop, Delete, Import...), except that a GET goes to
    the page the form is on (`go_to`, given the view's URL kwargs) instead of a blank 405.

    Browsers GET such an address when nobody meant to use it: the 中文/EN switch on the page a
    POST answered (the no-JavaScript Stop question, a refused import) goes back to that page's
    address, a log-in that had ended comes back to it as `next`, a reload after Back, a copied
    link. Nothing is done on a GET; the redirect names only what the URL already held.

    A POST whose log-in has ended (a phone that slept through it, then Stop tapped) is not
    done, and the login page says so: login_required's bare login form left the person
    believing the job was stopping (qa45). The log-in then comes back to the form's page, not
    to this address, whose GET would only redirect there. htmx requests get their 401 instead
    (HtmxLoginEndedMiddleware), the page saying it in its banner. `form_page`, when given,
    reads that page from the form and the URL's kwargs (the job list's filters, which its
    address held; a job page's `back`): `go_to` knows only the URL's kwargs, and the log-in
    came back to the unfiltered list (left29). It must return a local path: it is the log-in's
    `next`. `kept` names the fields typed in the form that its page fills in again after the
    log-in (login_ended_guard)."""

    def decorator(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        guarded = login_ended_guard(go_to, form_page=form_page, kept=kept)(view)

        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if request.method in ("GET", "HEAD"):
                return HttpResponseRedirect(go_to(**kwargs))
            if request.method != "POST":
                return HttpResponseNotAllowed(["POST"])
            return guarded(request, *args, **kwargs)

        return wrapped

    return decorator


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """Django's 400 page (templates/400.html), except for a request by a host name or address
    ALLOWED_HOSTS does not list: that page spoke of a form over 2.5 MB, which left someone who
    opened the console by its IP address (HOST=0.0.0.0) with nothing to go on; nor for a
    filter an admin list refuses, or a number in one past the database's integers
    (400_admin_lookup.html names it and links to the whole list). All are in both languages,
    as 400.html is: they are drawn without the request's language (nothing of the request
    that Django refused is trusted), and the host is shown as sent, escaped.

    A call of the API (jobs.api_v2.is_api_call) gets neither page but the API's JSON error,
    which a script can read: a page is for a person with a browser."""
    from django.contrib.admin.exceptions import DisallowedModelAdminLookup
    from django.core.exceptions import DisallowedHost
    from django.template import loader

    from .api_v2 import is_api_call

    if is_api_call(request):
        # A script reads JSON: the API's error shape, not a page (jobs.api_views).
        from .api_views import bad_request_answer

        return bad_request_answer(request, exception)
    if isinstance(exception, DisallowedHost):
        host = request.META.get("HTTP_HOST", "")[:255]
        body = loader.render_to_string("400_host.html", {"host": host})
    elif isinstance(exception, DisallowedModelAdminLookup):
        # A filter the admin list refuses (jobs.admin_lists): an old bookmark or a hand-made
        # address of a reviewer, not an oversized form. The page names the parameter and
        # links to the list's own address without its query (request.path, a resolved admin
        # list; the refused value is not shown).
        lookup = getattr(request, "refused_admin_lookup", "")[:200]
        out_of_range = getattr(request, "admin_lookup_out_of_range", False)
        body = loader.render_to_string(
            "400_admin_lookup.html",
            {"lookup": lookup, "out_of_range": out_of_range, "list_url": request.path},
        )
    else:
        body = loader.render_to_string("400.html")
    return HttpResponse(body, status=400)


def server_error(request: HttpRequest) -> HttpResponse:
    """Django's 500 page (templates/500.html), except for a call of the API: found in QA 57,
    a script got that HTML page, which Baidu's SDK could not read (its error parser reads
    JSON, and failed on the page with a JSONDecodeError): no code to branch on, no request
    id. A call of the API (jobs.api_v2.is_api_call) gets BCE's error shape, 500
    `InternalError`, and the request id is logged beside the traceback Django logged."""
    from .api_v2 import is_api_call

    if is_api_call(request):
        from .api_views import server_error_answer

        return server_error_answer(request)
    return django_defaults.server_error(request)


class DatabaseUnreachableMiddleware:
    """A request the database cannot be reached for answers 503 saying so (a page, or the API's
    JSON error), and the log gets one line with the driver's reason, not a 500 page and a
    traceback for each request. Found in QA: with PostgreSQL stopped, a logged-in user's every
    page was "Server error". Any other database error is left to Django's 500 handling.
    Placed last, so its process_exception is asked first."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, DatabaseLibraryError):
            return None
        refused = database_write_refused_response(request, exception)
        return refused if refused is not None else database_unreachable_response(request)


class SessionMiddleware(DjangoSessionMiddleware):
    """Django's, except that a session its answer could not save because SQLite was held by
    another process past the wait, or the database's disk was full, answers the same 503 as a
    view meeting it (DatabaseUnreachableMiddleware). The session is saved on the way out, after
    the view returned, where no process_exception sees it: a step sent once the log-in had
    ended (kept in a new session) was a 500 "Server error", and one kept in an existing
    session a 400 "Bad request" (Django read the refused write as the session deleted
    meanwhile; jobs.sessions raises it as itself). Found in left47. Any other error stays
    Django's 500 (or its 400 for a session deleted meanwhile)."""

    def process_response(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        try:
            return super().process_response(request, response)
        except DatabaseLibraryError as exc:
            refused = database_write_refused_response(request, exc)
            if refused is None:
                raise
            return refused


class LocaleMiddleware(DjangoLocaleMiddleware):
    """Django's, except for a browser whose Accept-Language names only languages the console
    does not offer: English, not LANGUAGE_CODE (jobs.languages.browser_language; qa101)."""

    def process_request(self, request: HttpRequest) -> None:
        translation.activate(browser_language(request))
        request.LANGUAGE_CODE = translation.get_language()


def database_write_refused_response(
    request: HttpRequest, exception: BaseException
) -> HttpResponse | None:
    """The 503 answer when `exception` is a write the database refused for now (SQLite held
    by another process, its disk full); None for any other error."""
    if sqlite_busy(exception):
        return database_busy_response(request, exception)
    if database_disk_full(exception):
        return database_disk_full_response(request, exception)
    return None


def database_busy_response(request: HttpRequest, exception: BaseException) -> HttpResponse:
    """The 503 answer (logged on one line) when SQLite stayed locked by another process for
    longer than the request waits for it. Found in QA 69: a `BEGIN IMMEDIATE` held 25 s in a
    `sqlite3` shell made a log-in, a wizard's 提交 and an API create "Server error" (500) with
    a traceback each. Sent again once the lock is gone, the request goes through (a submit
    sent twice is one job)."""
    seconds = round(connections[DEFAULT_DB_ALIAS].settings_dict["OPTIONS"].get("timeout", 5))
    logger.error(
        "the database is busy (%s %s): %s, held by another connection for over %d s",
        request.method,
        request.path,
        exception,
        seconds,
    )
    return _database_write_refused(
        request, page="503_database_busy.html", api_reason="busy", seconds=seconds
    )


def database_disk_full_response(request: HttpRequest, exception: BaseException) -> HttpResponse:
    """The 503 answer (logged on one line) when the database's disk is full. Found in QA 69:
    with CONSOLE_VAR_DIR's disk full, a log-in, a wizard's 提交 and an API create were each
    "Server error" (500) with a traceback; nothing was written, and sent again once space is
    freed, the request goes through."""
    logger.error(
        "the database's disk is full (%s %s): %s; free space on it",
        request.method,
        request.path,
        " ".join(str(exception).split()),
    )
    return _database_write_refused(request, page="503_disk_full.html", api_reason="full")


def _database_write_refused(
    request: HttpRequest, *, page: str, api_reason: str, seconds: int = 0
) -> HttpResponse:
    from .api_v2 import is_api_call

    if is_api_call(request):
        from .api_views import database_write_refused_answer

        response: HttpResponse = database_write_refused_answer(
            request, reason=api_reason, seconds=seconds
        )
    else:
        # As the unreachable page: rendered without the request (its session and user may be
        # what could not be written), in the language of its cookie or Accept-Language.
        with translation.override(browser_language(request)):
            body = loader.render_to_string(page, {"seconds": seconds})
        response = HttpResponse(body, status=503)
    response["Retry-After"] = "30"
    return response


def database_unreachable_response(request: HttpRequest) -> HttpResponse | None:
    """The 503 answer (logged) when the database cannot be reached now; None when it can, and
    a database error was then one of a query, left to Django's 500 handling."""
    reason = database_unreachable_reason()
    if reason is None:
        return None
    logger.error("the database cannot be reached (%s %s): %s", request.method, request.path, reason)
    from .api_v2 import is_api_call

    if is_api_call(request):
        # v1's paths and a v2 call at the console's root (until lang24 a v2 call got the
        # page): the API's JSON error, in the API's language.
        from .api_views import database_unreachable_answer

        response: HttpResponse = database_unreachable_answer(request)
    else:
        # Rendered without the request: its user and session are read from the database,
        # and so is the language a logged-in user chose. The language cookie (the 中文/EN
        # switch sets it), else the browser's Accept-Language, else LANGUAGE_CODE, as
        # LocaleMiddleware picks a page's language without reading the database.
        with translation.override(browser_language(request)):
            body = loader.render_to_string("503_database.html")
        response = HttpResponse(body, status=503)
    response["Retry-After"] = "30"
    return response


def unless_database_unreachable(
    handler: Callable[..., HttpResponse],
) -> Callable[..., HttpResponse]:
    """An error page's view answering the 503 page when the database cannot be reached. The
    pages not found (404), forbidden (403) and expired (CSRF's 403) show the user in their
    header, read from the database, and a failure there is no view's for the middleware's
    process_exception to see. Found in review 25: with the database down, every address not
    found (a browser's /favicon.ico too) was a 500 and a traceback for a logged-in user."""

    @wraps(handler)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            return handler(request, *args, **kwargs)
        except DatabaseLibraryError:
            response = database_unreachable_response(request)
            if response is None:
                raise
            return response

    return wrapped


page_not_found = unless_database_unreachable(django_defaults.page_not_found)
permission_denied = unless_database_unreachable(django_defaults.permission_denied)
csrf_failure = unless_database_unreachable(django_csrf_views.csrf_failure)
