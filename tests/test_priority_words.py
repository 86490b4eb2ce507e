"""The normal priority is called Normal in English, as the API's `normal` and AIHC's English
docs call it (qa91: the pages said Medium), and 中 in Chinese, as the seeds do."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils import translation

from jobs.actions import job_priority_change
from jobs.forms import PRIORITY_CHOICES
from jobs.models import JobEvent

from .runner_helpers import make_spec, runner_settings, submit  # noqa: F401

pytestmark = pytest.mark.usefixtures("runner_settings")


def labels() -> list[str]:
    return [str(label) for _value, label in PRIORITY_CHOICES]


def test_the_priorities_are_high_normal_and_low_in_english_and_gao_zhong_di_in_chinese():
    with translation.override("en"):
        assert labels() == ["High", "Normal", "Low"]
    with translation.override("zh-hans"):
        assert labels() == ["高", "中", "低"]


def test_a_jobs_page_in_english_says_its_priority_is_normal(alice, alice_en):
    job = submit(alice, make_spec("true", priority="normal"))

    page = alice_en.get(reverse("job-detail", args=[job.public_id])).content.decode()

    assert ">Normal</dd>" in page and "Medium" not in page


def test_a_priority_change_says_normal_in_english_and_zhong_in_chinese(alice):
    job = submit(alice, make_spec("true"))  # queued: no worker runs it
    job_priority_change(job=job, priority="high", actor=alice)
    job_priority_change(job=job, priority="normal", actor=alice)

    [raised, lowered] = job.events.filter(reason="PriorityChanged").order_by("id")

    with translation.override("en"):
        assert raised.message_shown == "Priority changed from Normal to High by alice."
        assert lowered.message_shown == "Priority changed from High to Normal by alice."
    with translation.override("zh-hans"):
        assert raised.message_shown == "alice 将优先级从 中 改为 高。"


def test_a_priority_change_recorded_as_medium_before_is_read_as_normal(alice):
    job = submit(alice, make_spec("true"))
    # As the console recorded one until qa91, the normal priority kept by its old word.
    event = JobEvent.objects.create(
        job=job,
        reason="PriorityChanged",
        message="alice 将优先级从 中 改为 高。",  # in the console's language, Chinese
        message_source={
            "key": "Priority changed from %(old)s to %(new)s by %(user)s.",
            "params": {"old": {"term": "Medium"}, "new": {"term": "High"}, "user": "alice"},
        },
    )

    with translation.override("en"):
        assert event.message_shown == "Priority changed from Normal to High by alice."
    with translation.override("zh-hans"):
        assert event.message_shown == "alice 将优先级从 中 改为 高。"
