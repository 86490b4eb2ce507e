"""Every reason the console records an event with is shown by a label in the reader's language,
not by its code (qa115: a job waiting for its cards' device nodes listed "CardNodesMissing"
among 已创建 and 已启动)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import translation

from jobs import scheduler
from jobs.models import EVENT_REASONS
from jobs.services import job_event

from .test_job_pages import submit

JOBS = Path(__file__).resolve().parent.parent / "jobs"
# The calls that record an event with the reason they are given.
RECORDING = {"job_event", "job_transition", "held_for"}


def reasons_recorded() -> set[str]:
    """The reasons written in the code (a string, or a module's constant holding one) at each
    call that records an event."""
    trees = [ast.parse(path.read_text()) for path in JOBS.rglob("*.py")]
    constants = {
        target.id: node.value.value
        for tree in trees
        for node in tree.body
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    found = set()
    for tree in trees:
        for call in ast.walk(tree):
            if not isinstance(call, ast.Call):
                continue
            name = (
                call.func.attr
                if isinstance(call.func, ast.Attribute)
                else getattr(call.func, "id", "")
            )
            if name not in RECORDING:
                continue
            given = [k.value for k in call.keywords if k.arg == "reason"]
            if name == "held_for" and len(call.args) > 1:
                given.append(call.args[1])
            for value in given:
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    found.add(value.value)
                elif isinstance(value, ast.Name) and value.id in constants:
                    found.add(constants[value.id])
    return found


def test_every_reason_recorded_in_the_code_and_every_hold_of_the_scheduler_has_a_label():
    recorded = reasons_recorded() | scheduler.WAITING_REASONS

    assert scheduler.CARD_NODES_MISSING in recorded  # the scan finds what it is for
    assert sorted(recorded - set(EVENT_REASONS)) == []


@pytest.mark.parametrize("reason", sorted(scheduler.WAITING_REASONS))
def test_each_hold_of_the_scheduler_is_labelled_in_chinese_as_well_as_english(reason):
    with translation.override("en"):
        english = str(EVENT_REASONS[reason])
    with translation.override("zh-hans"):
        chinese = str(EVENT_REASONS[reason])

    assert english != reason
    assert chinese != english


def test_a_job_waiting_for_device_nodes_lists_the_event_by_its_label_in_either_language(
    alice, alice_client
):
    job = submit(alice)
    job_event(job=job, reason=scheduler.CARD_NODES_MISSING, message="…", warning=True)

    zh = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()
    alice_client.cookies["django_language"] = "en"
    en = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()

    assert 'class="event-reason" title="CardNodesMissing">等待设备节点<' in zh
    assert 'class="event-reason" title="CardNodesMissing">Waiting for device nodes<' in en
