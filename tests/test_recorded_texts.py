"""Recorded texts with a count (jobs.texts.recorded_plural): why a job waits for its quota, its
review or the local pool's cards is stored in the console's language with the form its
number asks for ("1 card", "2 cards"; Chinese has one form), and said again in the reader's
language with that language's form. Texts recorded before they had plural forms are still
said in the reader's language, and texts recorded now read with their number's form in a
release from before plural forms (after a downgrade)."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.utils import translation
from django.utils.translation import gettext

from jobs import spec as S
from jobs.quotas import Excess, waiting_message
from jobs.review import review_reason
from jobs.runner import Capacity, Requirement
from jobs.texts import display_text, source_of

from .test_review import A800, save_policy

NOT_HERE = "example.com/no-such-card"


def job_quota(allowed: int, held: int) -> str:
    return waiting_message(Excess(card_type="", allowed=allowed, held=held, asked=1, jobs=True))


def review_of(cards: int) -> str:
    spec = S.JobSpec(
        name="demo",
        resource_pool_id="local",
        queue="default",
        image="python:3.12",
        command="echo hi",
        roles=[S.Role("master", 1, A800, cards)],
    )
    return review_reason(spec=spec)


def impossible(cards: int) -> str | None:
    capacity = Capacity(free_devices={}, free_cpus=[], shared_cpus=[], running=0)
    return capacity.impossible(Requirement(cards={NOT_HERE: cards}, exclusive_cpus=0))


def in_english(text: str) -> str:
    with translation.override("en"):
        return display_text(text, source_of(text))


@pytest.mark.django_db
def test_a_count_of_one_is_stored_in_the_singular_in_english_and_said_so_to_each_reader(settings):
    settings.LANGUAGE_CODE = "en"
    save_policy("above_cards", above_cards=0)

    assert job_quota(1, 1) == (
        "Waiting for your quota: you may run 1 local job at once (cards of any type), and you "
        "have 1 running. It starts by itself when one of yours ends."
    )
    assert job_quota(2, 3).startswith("Waiting for your quota: you may run 2 local jobs at once")
    assert review_of(1) == "Waiting for review: the job asks for 1 card, more than 0."
    assert review_of(3) == "Waiting for review: the job asks for 3 cards, more than 0."
    assert impossible(1) == f"Needs 1 {NOT_HERE} card; the local pool has 0."
    assert impossible(2) == f"Needs 2 {NOT_HERE} cards; the local pool has 0."
    # Stored in English, read in Chinese: one form whatever the number.
    with translation.override("zh-hans"):
        for text, said in (
            (review_of(1), "等待审核：任务申请 1 卡，超过 0 卡。"),
            (impossible(1), f"需要 1 张 {NOT_HERE} 卡，本机资源池只有 0 张。"),
            (job_quota(1, 1), "等待配额：您最多可同时运行 1 个本机任务（任意类型的卡）"),
        ):
            assert display_text(text, source_of(text)).startswith(said)


@pytest.mark.django_db
def test_a_count_stored_in_chinese_is_said_in_english_with_the_form_its_number_asks_for(settings):
    settings.LANGUAGE_CODE = "zh-hans"
    save_policy("above_cards", above_cards=0)

    one, three = review_of(1), review_of(3)

    assert one == "等待审核：任务申请 1 卡，超过 0 卡。"
    assert in_english(one) == "Waiting for review: the job asks for 1 card, more than 0."
    assert in_english(three) == "Waiting for review: the job asks for 3 cards, more than 0."
    assert in_english(job_quota(1, 2)).startswith(
        "Waiting for your quota: you may run 1 local job at once (cards of any type), and you "
        "have 2 running."
    )
    assert in_english(impossible(1)) == f"Needs 1 {NOT_HERE} card; the local pool has 0."


def test_a_text_recorded_before_its_message_had_plural_forms_is_still_said_in_each_language(
    settings,
):
    # As the console stored them before (jobs.texts.REWORDED): one message, no plural.
    settings.LANGUAGE_CODE = "en"
    key = "Waiting for review: the job asks for %(cards)s cards, more than %(limit)s."
    stored = "Waiting for review: the job asks for 16 cards, more than 8."
    source = {"key": key, "params": {"cards": 16, "limit": 8}}

    with translation.override("zh-hans"):
        assert display_text(stored, source) == "等待审核：任务申请 16 卡，超过 8 卡。"
    with translation.override("en"):
        assert display_text(stored, source) == stored


def said_by_a_release_before_plural_forms(text: str) -> str:
    """How the release before plural forms (a682b48, and so after a downgrade to it) says a
    recorded text in a reader's language: its jobs.texts.display_text knew only "key"."""
    source = source_of(text)
    assert source is not None
    if translation.get_language() == settings.LANGUAGE_CODE:  # as stored
        return text
    return gettext(source["key"]) % source["params"]


@pytest.mark.django_db
def test_a_count_recorded_now_reads_with_its_numbers_form_after_a_downgrade(settings):
    settings.LANGUAGE_CODE = "zh-hans"
    save_policy("above_cards", above_cards=0)

    with translation.override("en"):
        assert said_by_a_release_before_plural_forms(review_of(3)) == (
            "Waiting for review: the job asks for 3 cards, more than 0."
        )
        assert said_by_a_release_before_plural_forms(review_of(1)) == (
            "Waiting for review: the job asks for 1 card, more than 0."
        )
        assert said_by_a_release_before_plural_forms(impossible(2)) == (
            f"Needs 2 {NOT_HERE} cards; the local pool has 0."
        )


def test_a_count_recorded_before_its_source_named_the_singular_is_said_in_each_language(
    settings,
):
    # As this release stored them at first: "key" the singular, whatever the number.
    settings.LANGUAGE_CODE = "en"
    stored = "Waiting for review: the job asks for 3 cards, more than 2."
    source = {
        "key": "Waiting for review: the job asks for %(cards)s card, more than %(limit)s.",
        "plural": "Waiting for review: the job asks for %(cards)s cards, more than %(limit)s.",
        "number": "cards",
        "params": {"cards": 3, "limit": 2},
    }

    with translation.override("zh-hans"):
        assert display_text(stored, source) == "等待审核：任务申请 3 卡，超过 2 卡。"
    settings.LANGUAGE_CODE = "zh-hans"
    with translation.override("en"):
        assert display_text("等待审核：任务申请 3 卡，超过 2 卡。", source) == stored
