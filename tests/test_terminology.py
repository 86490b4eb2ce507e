"""One name for each thing, on every screen, in both languages (a copy-editor's findings, fix88a):
a role's running copy is a replica in English (实例 in Chinese) from the resources step to the
job page, and a card is 加速芯片 where a field or a column names it."""

from __future__ import annotations

import re
from html import unescape

from django.urls import reverse

from jobs import wizard as W
from jobs.models import Job
from tests.test_wizard import (
    _local_pool,  # noqa: F401 (autouse fixture)
    complete_steps,
    new_draft,
    post_step,
    resources_data,
    role,
    step_url,
)


def words(response) -> str:
    """The page's text as a person reads it: no scripts, no tags, entities read."""
    page = re.sub(r"<script.*?</script>", " ", response.content.decode(), flags=re.S)
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", page)).split())


def test_english_calls_a_roles_copies_replicas_on_the_resources_step_the_review_and_the_job_page(
    alice_en, alice
):
    draft = new_draft(alice_en)
    complete_steps(alice_en, draft, upto=W.RESOURCES)

    resources = words(alice_en.get(step_url(draft, W.RESOURCES)))
    complete_steps(alice_en, draft)
    review = words(alice_en.get(step_url(draft, W.REVIEW)))
    alice_en.post(reverse("wizard-submit", args=[draft.id]))
    job = Job.objects.get(owner=alice)
    job_page = words(alice_en.get(reverse("job-detail", args=[job.public_id])))

    assert "Replicas" in resources and "Cards per replica" in resources
    assert "Cards in total (replicas × cards per replica):" in resources
    assert "Environment injected into each replica" in review
    assert "Environment injected into each replica" in job_page
    for page in (resources, review, job_page):
        assert not re.search(r"\binstances?\b", page, re.I), re.findall(r".{60}instance.{60}", page)


def test_chinese_names_cards_加速芯片_in_the_wizards_columns_and_the_job_lists(alice_client, alice):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft)
    resources = alice_client.get(step_url(draft, W.RESOURCES)).content.decode()
    alice_client.post(reverse("wizard-submit", args=[draft.id]))

    job_list = alice_client.get(reverse("job-list")).content.decode()

    heads = re.findall(r"<th[^>]*>(.*?)</th>", resources, re.S)
    assert "加速芯片" in heads and "每实例加速芯片数" in heads, heads
    assert "加速芯片总数（实例数 × 每实例加速芯片数）：" in resources
    assert re.search(r"<th[^>]*>\s*(<[^>]+>\s*)*加速芯片\s*<", job_list), re.findall(
        r"<th[^>]*>.*?</th>", job_list, re.S
    )
    assert "加速卡" not in resources and "加速卡" not in job_list
    assert "每实例卡数" not in resources


def test_the_card_total_of_a_cpu_only_job_has_one_parenthesis(alice_client):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.RESOURCES)
    cpu_only = resources_data([role("master", 1, card=""), role("worker", 1, card="")])

    assert post_step(alice_client, draft, W.RESOURCES, cpu_only).status_code == 302
    chinese = words(alice_client.get(step_url(draft, W.RESOURCES)))
    alice_client.cookies["django_language"] = "en"
    english = words(alice_client.get(step_url(draft, W.RESOURCES)))

    assert "加速芯片总数（实例数 × 每实例加速芯片数）： 无（仅 CPU）" in chinese
    assert "Cards in total (replicas × cards per replica): none (CPU only)" in english
    assert "（仅 CPU） （" not in chinese and "(CPU only) (" not in english
