"""What an English reader of a console installed in Chinese reads outside the browser walk
(tests/test_english_pages_browser.py): the review step's note on roles AIHC's v1 body cannot
carry, a remote job's training metrics note, and the pages drawn in both languages, whose
English half must be marked English so a screen reader reads it in an English voice (they
were wholly `lang="zh-hans"`)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from django.test import Client

from .runner_helpers import runner_settings  # noqa: F401
from .test_wizard import _local_pool  # noqa: F401 (autouse fixture)
from .test_wizard_features import _review_of_a_copy, tensorflow_four_roles

CJK = re.compile(r"[\u2e80-\u9fff\uff00-\uffef]")


def test_the_roles_note_of_the_review_names_the_import_in_english_for_an_english_reader(
    alice_en, alice
):
    # It named the drafts page's button 从请求导入 in the English sentence.
    page = _review_of_a_copy(alice_en, alice, tensorflow_four_roles())

    note = re.search(r'id="request-roles-note">(.*?)</p>', page, re.S)
    assert note and "“Import from a request”" in note[1]
    assert not CJK.search(note[1])


def test_a_remote_jobs_metrics_note_says_in_english_what_aihcs_chinese_page_name_means(
    alice,
    runner_settings,  # noqa: F811
):
    # The English note named AIHC's page 训练效果监控 alone: the name is kept, as AIHC's
    # console (in Chinese) shows it, and said in English beside it.
    from django.utils import translation

    from jobs.models import Job

    from .test_tensorboard import read, tb_job

    job = tb_job(alice)
    Job.objects.filter(pk=job.pk).update(backend="aihc")

    with translation.override("en"):
        note = read(job).note

    assert "训练效果监控, training monitoring, page" in note


class TextLanguages(HTMLParser):
    """Each piece of text of a page with the language its nearest `lang` gives it."""

    VOID = {"meta", "br", "input", "link", "img", "hr"}

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[tuple[str, str]] = []
        self.texts: list[tuple[str, str]] = []

    def handle_starttag(self, tag, attrs):
        if tag in self.VOID:
            return
        language = dict(attrs).get("lang") or (self.stack[-1][1] if self.stack else "")
        self.stack.append((tag, language))

    def handle_endtag(self, tag):
        while self.stack and self.stack.pop()[0] != tag:
            pass

    def handle_data(self, data):
        if data.strip() and self.stack and self.stack[-1][0] not in ("title", "style"):
            self.texts.append((data.strip(), self.stack[-1][1]))


def languages_of(html: str) -> list[tuple[str, str]]:
    parser = TextLanguages()
    parser.feed(html)
    return parser.texts


def english_marked_english(html: str) -> list[str]:
    """The page's pieces of English text (words, no Chinese) not marked `lang="en"`."""
    return [
        text
        for text, language in languages_of(html)
        if re.search(r"[A-Za-z]{3,} [A-Za-z]{3,}", text)
        and not CJK.search(text)
        and language != "en"
    ]


@pytest.mark.parametrize(
    "address, headers",
    [
        ("/", {"HTTP_HOST": "192.0.2.2:8000"}),  # 400_host.html
        ("/admin/jobs/job/?spec__regex=x", {}),  # 400_admin_lookup.html
    ],
)
def test_a_page_in_both_languages_marks_its_english_half_english(address, headers, reviewer):
    client = Client()
    client.force_login(reviewer)

    page = client.get(address, **headers)

    assert page.status_code == 400
    html = page.content.decode()
    assert '<html lang="zh-hans">' in html and CJK.search(html)
    assert english_marked_english(html) == []
    assert any(language == "en" for _text, language in languages_of(html))


def test_the_bad_request_and_server_error_pages_mark_their_english_half_english(rf):
    from django.views.defaults import server_error

    from jobs.http import bad_request

    for page in (bad_request(rf.get("/"), None), server_error(rf.get("/"))):
        html = page.content.decode()
        assert CJK.search(html)
        assert english_marked_english(html) == []
        assert any(language == "en" for _text, language in languages_of(html))
