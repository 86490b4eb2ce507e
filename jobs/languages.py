"""Each user's language, kept on the server (UserPreference) for what is written to them
without a browser to ask: the review and alert mails the worker sends (jobs.review,
jobs.alerts), and the API's answers to a script that sends no Accept-Language (qa109).

It is set whenever a logged-in user switches language (the top bar's 中文/EN, the wizard's
buttons, the admin's switch: each also sets Django's language cookie, as before), and at
log-in from the language the log-in page was in, if none was chosen yet. Logged out, a switch
sets the cookie only. A user with none chosen is written to in the console's language
(LANGUAGE_CODE).

Alert mails go to the addresses in the job's alertConfig, which need not be users'. Decided:
an address that is a console user's email (case aside) gets that user's language; any other
address, or one several users share, gets the job owner's. One mail goes out per language,
each to its addresses.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.signals import user_logged_in
from django.db.models import Q
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse
from django.utils import translation
from django.utils.translation.trans_real import parse_accept_lang_header

from .models import UserPreference


def _known(language: str) -> str | None:
    """The code of LANGUAGES that `language` names (Django's forms too: zh-Hans, zh_hans,
    en-us), or None."""
    try:
        code = translation.get_supported_language_variant(str(language).replace("_", "-").lower())
    except LookupError:
        return None
    return code if code in dict(settings.LANGUAGES) else None


def accepted_language(header: str) -> str | None:
    """The language an Accept-Language header asks for, in its order of preference: the first
    it names that the console offers (any Chinese variant, zh-CN, zh-TW, zh, reads Chinese;
    en-GB English); English when it names languages and none is offered, as a French, German
    or Japanese speaker more likely reads English than Chinese (qa101: `Accept-Language: fr`
    got the Chinese console); None when it names none, or reaches `*` (any will do) first. A
    language of q=0 is one the reader refuses: skipped."""
    named = False
    for code, quality in parse_accept_lang_header(header):
        if quality == 0:
            named = True
            continue  # "not acceptable" (RFC 9110), not a wish (review 53: `fr, zh;q=0` read Chinese)
        if code == "*":
            return None
        named = True
        if (offered := _known(code)) is not None:
            return offered
    return "en" if named else None


def browser_language(request: HttpRequest) -> str:
    """The language a page is shown in: the language cookie (the 中文/EN switch sets it), else
    the one the browser's Accept-Language asks for, else the console's (LANGUAGE_CODE, Chinese
    by default). The API reads Accept-Language alike; when it asks for none, the key owner's
    saved language, else English (jobs.api_views.api_language)."""
    cookie = _known(request.COOKIES.get(settings.LANGUAGE_COOKIE_NAME) or "")
    if cookie is not None:
        return cookie
    return accepted_language(request.headers.get("Accept-Language", "")) or settings.LANGUAGE_CODE


def language_chosen(*, user: Any, language: str) -> None:
    """A logged-in user switched to `language`: their mails are written in it from now on.
    A code the console does not offer changes nothing (Django's set_language ignores it too)."""
    code = _known(language)
    if code is None or not getattr(user, "is_authenticated", False):
        return
    UserPreference.objects.update_or_create(user_id=user.pk, defaults={"language": code})


def language_at_login(*, user: Any, language: str) -> None:
    """At log-in, the language the page was in becomes the user's if they chose none yet (a
    user who chose one keeps it: the browser they log in from may just not know it)."""
    code = _known(language)
    if code is not None:
        preference, _made = UserPreference.objects.get_or_create(
            user_id=user.pk, defaults={"language": code}
        )
        if not preference.language:  # a row made when a time zone was chosen (jobs.time_zones)
            preference.language = code
            preference.save(update_fields=["language"])


@receiver(user_logged_in, dispatch_uid="jobs.languages.logged_in")
def _logged_in(sender: Any, request: HttpRequest | None, user: Any, **kwargs: Any) -> None:
    # Every log-in (the console's page, the admin's): the request's language is the one its
    # page was shown in (LocaleMiddleware: the cookie, else the browser's, else LANGUAGE_CODE).
    # A log-in without one (a test client's force_login) chose nothing.
    language = getattr(request, "LANGUAGE_CODE", None)
    if language:
        language_at_login(user=user, language=language)


def language_cookie_set(*, response: HttpResponse, language: str) -> None:
    """Django's language cookie, as its set_language writes it."""
    response.set_cookie(
        settings.LANGUAGE_COOKIE_NAME,
        language,
        max_age=settings.LANGUAGE_COOKIE_AGE,
        path=settings.LANGUAGE_COOKIE_PATH,
        domain=settings.LANGUAGE_COOKIE_DOMAIN,
        secure=settings.LANGUAGE_COOKIE_SECURE,
        httponly=settings.LANGUAGE_COOKIE_HTTPONLY,
        samesite=settings.LANGUAGE_COOKIE_SAMESITE,
    )


def language_after_login(*, request: HttpRequest, response: HttpResponse, user: Any) -> None:
    """A browser that never chose a language (no language cookie: its pages followed its
    Accept-Language) gets the one its user chose, on another browser or before, from the
    first page after log-in. A browser that chose one keeps it: that choice was made there."""
    if settings.LANGUAGE_COOKIE_NAME in request.COOKIES:
        return
    chosen = UserPreference.objects.filter(user_id=user.pk).values_list("language", flat=True)
    code = _known(chosen.first() or "")
    if code is not None and code != getattr(request, "LANGUAGE_CODE", None):
        language_cookie_set(response=response, language=code)


def reader_language(*, user: Any) -> str:
    """The language to write to `user` in: theirs, or the console's if they chose none."""
    chosen = UserPreference.objects.filter(user_id=user.pk).values_list("language", flat=True)
    return _known(chosen.first() or "") or settings.LANGUAGE_CODE


def saved_language(*, user: Any) -> str | None:
    """The language `user` chose (the 中文/EN switch, or the log-in page's), None if none."""
    chosen = UserPreference.objects.filter(user_id=user.pk).values_list("language", flat=True)
    return _known(chosen.first() or "")


def addresses_by_language(*, addresses: list[str], owner: Any) -> dict[str, list[str]]:
    """The alert addresses grouped by the language each is written to in (see above), in
    their order; the owner's language first."""
    owner_language = reader_language(user=owner)
    users: dict[str, list[Any]] = defaultdict(list)
    # At most MAX_ALERT_EMAILS addresses (jobs.spec): one query for their users.
    same_address = Q()
    for address in addresses:
        same_address |= Q(email__iexact=address)
    if addresses:
        for user in get_user_model().objects.filter(same_address, is_active=True):
            users[str(user.email).lower()].append(user)
    grouped: dict[str, list[str]] = {owner_language: []}
    for address in addresses:
        found = users.get(address.lower(), [])
        language = reader_language(user=found[0]) if len(found) == 1 else owner_language
        grouped.setdefault(language, []).append(address)
    return {language: group for language, group in grouped.items() if group}
