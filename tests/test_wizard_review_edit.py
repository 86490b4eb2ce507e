"""The review's 编辑 links, and a draft whose earlier step was left wrong after its later steps
were done (qa108: a researcher on a phone and a tablet)."""

from __future__ import annotations

import re

import pytest

from jobs import wizard as W
from jobs.models import Draft

from .test_wizard import (
    A800,
    complete_steps,
    data_data,
    field_errors,
    new_draft,
    post_step,
    resources_data,
    step_url,
)


@pytest.fixture(autouse=True)
def _local_pool(settings, tmp_path):
    settings.LOCAL_ACCELERATORS = f"{A800}=8"
    settings.LOCAL_VOLUMES = f"scratch={tmp_path}"


def test_the_reviews_edit_links_open_their_step_with_save_and_back_to_confirm(alice_client):
    """qa108: 编辑 opened its step without 保存并返回确认, which the review's problem links
    offer: a change on step 3 went through every later step to come back."""
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft)
    review = alice_client.get(step_url(draft, W.REVIEW)).content.decode()
    edit_links = re.findall(r'<a class="small review-edit" href="([^"]+)"', review)

    opened = alice_client.get(step_url(draft, W.RESOURCES) + "?fixing=1").content.decode()

    assert step_url(draft, W.RESOURCES) + "?fixing=1" in edit_links
    assert len(edit_links) == len(W.FORM_STEPS)
    assert all(link.endswith("?fixing=1") for link in edit_links)
    assert 'id="wizard-to-review"' in opened


def test_a_refused_save_on_step_3_keeps_the_later_steps_done_and_reachable(alice_client):
    """qa108: 共享内存 0.5 refused on step 3 hid steps 4 to 8 from the stepper, also on a fresh
    load, though each was still done; the review still needs every step done."""
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft)

    refused = post_step(
        alice_client, draft, W.RESOURCES, resources_data(shared_memory_gi="0.5"), action="next"
    )
    later = alice_client.get(step_url(draft, W.DATA))
    review = alice_client.get(step_url(draft, W.REVIEW))
    stepper = alice_client.get(step_url(draft, W.RESOURCES)).content.decode()

    assert refused.status_code == 200
    assert later.status_code == 200
    assert review.status_code == 302 and review["Location"] == step_url(draft, W.RESOURCES)
    for step in (W.DATA, W.FAULT, W.ADVANCED, W.SUBMISSION):
        assert f'name="action" value="goto-{step}"' in stepper
    assert f'href="{step_url(draft, W.REVIEW)}"' not in stepper
    draft = Draft.objects.get(pk=draft.pk)
    assert W.RESOURCES not in draft.completed_steps
    assert {W.DATA, W.FAULT, W.ADVANCED, W.SUBMISSION} <= set(draft.completed_steps)


def test_a_stepper_press_to_a_later_done_step_from_a_refused_step_goes_there_keeping_what_was_typed(
    alice_client,
):
    """review61: pressing step 5 on step 3 left wrong posted step 3 with goto-fault, refused
    going forward: the user stayed on step 3 though its stepper offered step 5."""
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft)
    post_step(alice_client, draft, W.RESOURCES, resources_data(shared_memory_gi="0.5"))

    r = post_step(
        alice_client,
        draft,
        W.RESOURCES,
        resources_data(shared_memory_gi="0.25"),
        action=f"goto-{W.FAULT}",
    )
    review = alice_client.get(step_url(draft, W.REVIEW))
    back = alice_client.get(step_url(draft, W.RESOURCES))

    assert r.status_code == 302 and r["Location"] == step_url(draft, W.FAULT)
    assert review.status_code == 302 and review["Location"] == step_url(draft, W.RESOURCES)
    assert 'value="0.25"' in back.content.decode()
    assert field_errors(back, "id_shared_memory_gi") == ["共享内存须为整数 GiB。"]
    draft = Draft.objects.get(pk=draft.pk)
    assert W.RESOURCES not in draft.completed_steps
    assert draft.data[W.RESOURCES]["shared_memory_gi"] == ["0.25"]


def test_a_stepper_press_to_the_review_from_a_refused_step_stays_on_it_with_its_errors(
    alice_client,
):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft)

    r = post_step(
        alice_client,
        draft,
        W.RESOURCES,
        resources_data(shared_memory_gi="0.5"),
        action=f"goto-{W.REVIEW}",
    )

    assert r.status_code == 200
    assert field_errors(r, "id_shared_memory_gi") == ["共享内存须为整数 GiB。"]
    assert W.RESOURCES not in Draft.objects.get(pk=draft.pk).completed_steps


def test_a_later_step_not_yet_done_stays_out_of_reach_past_a_step_left_wrong(alice_client):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.DATA)
    post_step(alice_client, draft, W.RESOURCES, resources_data(shared_memory_gi="0.5"))

    r = alice_client.get(step_url(draft, W.DATA))

    assert r.status_code == 302 and r["Location"] == step_url(draft, W.RESOURCES)


@pytest.mark.parametrize(
    ("language", "message"),
    [("zh-hans", "共享内存须为整数 GiB。"), ("en", "Shared memory must be a whole number of GiB.")],
)
def test_a_shared_memory_that_is_not_whole_says_it_must_be_whole_gib_and_keeps_it(
    alice_client, language, message
):
    alice_client.cookies["django_language"] = language
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.RESOURCES)

    r = post_step(alice_client, draft, W.RESOURCES, resources_data(shared_memory_gi="0.5"))

    assert r.status_code == 200
    assert field_errors(r, "id_shared_memory_gi") == [message]
    assert 'value="0.5"' in r.content.decode()


@pytest.mark.parametrize(
    ("language", "message"),
    [
        ("zh-hans", "挂载路径须以 / 开头，例如 /workspace/data。"),
        ("en", "The mount path must start with /, e.g. /workspace/data."),
    ],
)
def test_a_relative_mount_path_is_told_to_start_with_a_slash_and_kept(
    alice_client, language, message
):
    """qa108: `data` was told it had '..' or a doubled or trailing '/', none of which it has."""
    alice_client.cookies["django_language"] = language
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.DATA)

    r = post_step(alice_client, draft, W.DATA, data_data(mounts=(("hostpath", "scratch", "data"),)))

    assert r.status_code == 200
    assert message in field_errors(r, "id_mounts-0-mount_path")
    assert 'value="data"' in r.content.decode()
    assert W.DATA not in Draft.objects.get(pk=draft.pk).completed_steps


def stepper_item(page: str, title: str) -> str:
    """The stepper's item of the step titled `title`, as drawn."""
    items = re.findall(r'<li class="list-group-item.*?</li>', page, re.S)
    [item] = [i for i in items if title in i]
    return item


@pytest.mark.parametrize(
    ("language", "title", "words"),
    [("zh-hans", "资源配置", "需修改"), ("en", "Resources", "needs changes")],
)
def test_a_step_left_with_a_problem_is_marked_needs_changes_in_the_stepper_until_it_passes(
    alice_client, language, title, words
):
    # qa115: a step left wrong (a stepper press forward) showed no sign of it, done or not.
    alice_client.cookies["django_language"] = language
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft)
    post_step(
        alice_client,
        draft,
        W.RESOURCES,
        resources_data(shared_memory_gi="0.5"),
        action=f"goto-{W.FAULT}",
    )

    left = alice_client.get(step_url(draft, W.FAULT)).content.decode()
    post_step(alice_client, draft, W.RESOURCES, resources_data())
    fixed = alice_client.get(step_url(draft, W.FAULT)).content.decode()

    marked = stepper_item(left, title)
    assert 'class="badge text-bg-warning ms-1 step-needs-changes"' in marked
    assert f'<span class="visually-hidden">{words}</span>' in marked
    assert "step-needs-changes" not in stepper_item(left, "Data" if language == "en" else "数据源")
    assert "step-needs-changes" not in stepper_item(fixed, title)


@pytest.mark.parametrize(
    ("language", "note"),
    [
        (
            "zh-hans",
            "此步骤由确认页打开：修改完成后可直接返回确认；若还有步骤需要修改，将打开该步骤并显示其提示。",
        ),
        (
            "en",
            "Opened from Confirm: once your changes are made, go straight back to it. A step "
            "still to fix opens with its message instead.",
        ),
    ],
)
def test_a_step_opened_from_the_reviews_edit_link_says_so_not_that_a_problem_opened_it(
    alice_client, language, note
):
    # qa115: it said "此步骤由确认页列出的问题打开…" with no problem listed.
    alice_client.cookies["django_language"] = language
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft)

    edited = alice_client.get(step_url(draft, W.FAULT) + "?fixing=1").content.decode()
    checked = alice_client.get(step_url(draft, W.FAULT) + "?check=1").content.decode()

    said = re.search(r'id="wizard-to-review-help">([^<]*)<', edited)[1]
    assert said == note
    assert re.search(r'id="wizard-to-review-help">([^<]*)<', checked)[1] != note
