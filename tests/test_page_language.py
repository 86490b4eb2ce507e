"""Which language a page and an API answer are in (jobs.languages): Chinese by default and
whenever the browser asks for it first; English when it asks for English first, or names only
languages the console does not offer (qa101: `Accept-Language: fr` got the Chinese console)."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from .signed_requests import signed_request
from .test_api import alice_key, body, wsgi  # noqa: F401  (fixtures)


def login_page_language(accept_language: str | None, cookie: str | None = None) -> str:
    client = Client(headers={"accept-language": accept_language} if accept_language else {})
    if cookie:
        client.cookies["django_language"] = cookie
    r = client.get(reverse("login"))
    assert r.status_code == 200
    return r.context["LANGUAGE_CODE"]


@pytest.mark.parametrize(
    ("accept_language", "shown"),
    [
        (None, "zh-hans"),
        ("fr", "en"),
        ("de-DE,de;q=0.9,ja;q=0.8", "en"),
        ("fr, zh;q=0.5", "zh-hans"),
        ("zh-TW", "zh-hans"),
        ("en-GB", "en"),
        ("ja, en;q=0.5, zh;q=0.4", "en"),
        ("*", "zh-hans"),
        ("fr, zh;q=0", "en"),  # q=0: not acceptable (review 53)
        ("zh;q=0, en;q=0.5", "en"),
    ],
)
def test_a_page_is_in_english_when_the_browser_names_only_languages_other_than_chinese_and_english(
    db, accept_language, shown
):
    assert login_page_language(accept_language) == shown


def test_the_language_switchs_cookie_still_wins_over_the_browsers_languages(db):
    assert login_page_language("fr", cookie="zh-hans") == "zh-hans"
    assert login_page_language("zh-CN", cookie="en") == "en"


@pytest.mark.parametrize(
    ("accept_language", "answered"),
    [
        (None, "jobSpec.image: Enter an image address."),
        ("fr", "jobSpec.image: Enter an image address."),
        ("fr, zh;q=0.5", "jobSpec.image: 请填写镜像地址。"),
        ("zh-TW", "jobSpec.image: 请填写镜像地址。"),
    ],
)
def test_the_api_answers_by_the_same_rule_in_english_when_no_language_is_named(
    wsgi,  # noqa: F811
    alice_key,  # noqa: F811
    accept_language,
    answered,
):
    bad = body()
    del bad["jobSpec"]["image"]
    headers = {"Content-Type": "application/json"}
    if accept_language:
        headers["Accept-Language"] = accept_language
    r = signed_request(wsgi, alice_key, method="POST", headers=headers, json=bad)

    assert r.status_code == 400
    assert answered in r.json()["message"]
