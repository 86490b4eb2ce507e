"""A usage CSV asked for with input the page cannot take answers with the page and the
message on its field, the other filters kept, never a CSV of something else (admin30)."""

from __future__ import annotations

import pytest
from django.test import Client

ADMIN_REPORT = "/admin/jobs/job/usage/"
MY_USAGE = "/account/usage/"
APRIL_QUERY = {"date_from": "2026-04-01", "date_to": "2026-04-30"}
URLS = [ADMIN_REPORT, MY_USAGE]


@pytest.fixture
def client(reviewer) -> Client:
    # The reviewer may read the admin's report, and has a "My usage" page of their own.
    client = Client()
    client.force_login(reviewer)
    return client


@pytest.mark.parametrize("url", URLS)
@pytest.mark.parametrize(
    ("by_label", "message", "chinese"),
    [
        (
            "k" * 400,
            "Ensure this value has at most 317 characters (it has 400).",
            "确保该变量包含不超过 317 字符 (目前字符数 400)。",
        ),
        ("project\x00", "Null characters are not allowed.", "不能包含空字符（NUL）。"),
    ],
)
def test_a_csv_asked_by_a_label_key_the_page_refuses_gets_the_page_with_its_message_not_a_csv(
    client, url, by_label, message, chinese
):
    query = {**APRIL_QUERY, "by_label": by_label, "format": "csv"}

    english = client.get(url, query, HTTP_ACCEPT_LANGUAGE="en")
    in_chinese = client.get(url, query, HTTP_ACCEPT_LANGUAGE="zh-hans")

    assert english.status_code == in_chinese.status_code == 200
    assert english["Content-Type"].startswith("text/html")
    assert list(english.context["label_form"].errors) == ["by_label"]
    assert message in english.content.decode()
    assert chinese in in_chinese.content.decode()
    # The period asked for is kept in its fields.
    assert 'value="2026-04-01"' in english.content.decode()


@pytest.mark.parametrize("url", URLS)
def test_a_csv_asked_for_a_reversed_period_keeps_the_label_key_typed(client, url):
    query = {"date_from": "2026-04-10", "date_to": "2026-04-01", "by_label": "project"}

    r = client.get(url, {**query, "format": "csv"}, HTTP_ACCEPT_LANGUAGE="en")

    assert r.status_code == 200
    assert r["Content-Type"].startswith("text/html")
    assert r.context["form"].errors == {"date_to": ["The last day is before the first day."]}
    body = r.content.decode()
    assert 'name="by_label" value="project"' in body
    assert 'value="2026-04-10"' in body and 'value="2026-04-01"' in body


@pytest.mark.parametrize("url", URLS)
def test_a_good_label_key_still_downloads_the_csv_grouped_by_it(client, url):
    r = client.get(url, {**APRIL_QUERY, "by_label": "project", "format": "csv"})

    assert r.status_code == 200
    assert r["Content-Type"] == "text/csv; charset=utf-8"
