"""A usage CSV asked for with input the page cannot take answers with the page and the
message on its field, the other filters kept, never a CSV of something else (admin30)."""

from __future__ import annotations

import re
import sys
from urllib.parse import urlencode

import pytest
from django.test import Client
from gunicorn.config import LimitRequestLine

from jobs.management.commands.serve import gunicorn_command

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


@pytest.mark.parametrize("url", URLS)
def test_the_longest_key_the_box_takes_keeps_the_address_under_gunicorns_request_line(client, url):
    """A longer address is answered by gunicorn itself, its bare English 414 "URI Too Long",
    before the console sees it (qa111: a hand-made one). What the box sends stays under it:
    a CJK character is one character to maxlength and 9 bytes in the address (%E4%B8%AD),
    the most any character takes (an emoji counts as two)."""
    page = client.get(url, APRIL_QUERY).content.decode()
    box = re.search(r'<input[^>]*name="by_label"[^>]*>', page)[0]
    longest = int(re.search(r'maxlength="(\d+)"', box)[1])
    query = urlencode({**APRIL_QUERY, "by_label": "中" * longest, "format": "csv"})

    request_line = f"GET {url}?{query} HTTP/1.1"

    assert len(request_line.encode()) <= LimitRequestLine.default
    command = gunicorn_command(python=sys.executable, host="127.0.0.1", port="8000")
    assert not any(part.startswith("--limit-request-line") for part in command)


@pytest.mark.parametrize("url", URLS)
def test_a_key_as_long_as_an_address_can_carry_is_said_on_its_field(client, url):
    # The longest a hand-made address brings past gunicorn's request line.
    length = LimitRequestLine.default - len(f"GET {url}?by_label= HTTP/1.1")

    r = client.get(url, {"by_label": "k" * length}, HTTP_ACCEPT_LANGUAGE="en")

    assert r.status_code == 200
    assert r.context["label_form"].errors == {
        "by_label": [f"Ensure this value has at most 317 characters (it has {length})."]
    }
