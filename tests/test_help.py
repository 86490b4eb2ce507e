"""帮助 (jobs.help_views): the top bar's link to the console's help page, and the wizard's
"详见帮助" links to its sections (qa113: no help anywhere, while seed 000 says "详见…")."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from jobs import wizard as W
from tests.test_wizard import (
    _local_pool,  # noqa: F401 (autouse fixture)
    complete_steps,
    new_draft,
    step_url,
)

# The wizard's step and the field whose help links a section of the help page.
LINKED = [
    (W.DATA, "storage_enabled", "storage"),
    (W.FAULT, "hang_detection", "hang-detection"),
    (W.FAULT, "fault_tolerance", "fault-tolerance"),
    (W.ADVANCED, "tensorboard_path", "tensorboard"),
    (W.SUBMISSION, "mode", "queue-tasks"),
]


def section_ids(client: Client) -> set[str]:
    page = client.get(reverse("help")).content.decode()
    return set(re.findall(r'<section id="([^"]+)"', page))


def test_the_top_bar_links_the_help_page_in_both_languages(alice_client):
    for language, name in (("zh-hans", "帮助"), ("en", "Help")):
        alice_client.cookies["django_language"] = language
        page = alice_client.get(reverse("job-list")).content.decode()

        link = re.search(r'<a [^>]*href="/help/" id="nav-help">([^<]*)</a>', page)
        assert link and link[1] == name
        help_page = alice_client.get("/help/").content.decode()
        assert f'<h1 class="h3 my-4">{name}</h1>' in help_page
        assert 'id="nav-help"' in help_page and 'aria-current="page"' in help_page


def test_the_top_bars_help_opens_in_a_new_tab_on_a_wizard_step_saying_so(alice_client):
    """On a step it opened in the same tab, and what was typed since 下一步 was lost (review68:
    the help links beside the fields open in a new tab for that reason)."""
    draft = new_draft(alice_client)
    alice_client.cookies["django_language"] = "en"

    step = alice_client.get(step_url(draft, W.BASIC)).content.decode()

    link = re.search(r'<a [^>]*href="/help/" id="nav-help"([^>]*)>(.*?)</a>', step)
    assert link and link[1] == ' target="_blank" rel="noopener"'
    assert link[2] == 'Help<span class="visually-hidden"> (opens in a new tab)</span>'


@pytest.mark.parametrize(("step", "field", "anchor"), LINKED)
def test_a_complex_fields_help_ends_with_a_link_to_its_section_in_a_new_tab(
    alice_client, step, field, anchor
):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=step)

    page = alice_client.get(step_url(draft, step)).content.decode()

    help_text = re.search(rf'id="id_{field}_helptext" class="form-text">(.*?)</div>', page, re.S)
    assert help_text, f"no help under {field}"
    link = re.search(
        r'<a href="([^"]+)" target="_blank" rel="noopener"[^>]*>(.*?)</a>', help_text[1]
    )
    assert link, help_text[1]
    assert link[1] == f"/help/#{anchor}"
    assert re.sub(r"<[^>]+>", "", link[2]) == "详见帮助（在新标签页中打开）"
    assert anchor in section_ids(alice_client)


def test_the_help_page_says_each_topic_in_chinese_with_the_consoles_numbers(alice_client):
    page = alice_client.get(reverse("help")).content.decode()

    assert section_ids(alice_client) >= {
        "create-job",
        "storage",
        "hang-detection",
        "fault-tolerance",
        "tensorboard",
        "queue-tasks",
        "logs",
        "time-zones",
    }
    assert "向导建议 7 分钟" in page and "未设置时为 15 分钟" in page
    assert "本地和 Kubernetes 资源池为 3 次" in page
    assert "都以 [console] 开头" in page


def test_the_help_page_is_for_users_logged_in():
    r = Client().get(reverse("help"))

    assert r.status_code == 302 and r["Location"].startswith(reverse("login"))
