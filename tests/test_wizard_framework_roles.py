"""A framework changed and changed back on 基础信息 (qa67): the new framework gets its own
roles, and the table each framework last had comes back when it is chosen again, said on the
resources step. A custom job's named roles were gone after a look at PyTorch."""

from __future__ import annotations

import re

import pytest

from jobs import spec as S
from jobs import wizard as W
from jobs.models import Draft
from tests.test_wizard import (
    V100,
    _local_pool,  # noqa: F401 (autouse fixture)
    basic_data,
    complete_steps,
    new_draft,
    post_step,
    resources_data,
    role,
    step_url,
)
from tests.test_wizard_aiak import AIAK_BASIC, TEMPLATE, aiak_draft_up_to_data, aiak_image

RAY_ROLES = [
    role("head", 1, card=None, cpu=8, memory_gb=32),
    role("worker", 2, cards=4, cpu=16, memory_gb=64),
    role("data-loader", 3, card=None, cpu=4, memory_gb=8),
]
RESTORED_ZH = "已恢复您此前为 自定义 设置的角色。"
# 基础信息's AIAK choices, beside the framework switch_framework sets.
AIAK_ONLY = {k: v for k, v in AIAK_BASIC.items() if k != "framework"}


def switch_framework(client, draft, framework: str, *, htmx: bool = False, **over):
    """基础信息 with another framework and 下一步, as the engineer does: the page then shown."""
    r = post_step(client, draft, W.BASIC, basic_data(framework=framework, **over), htmx=htmx)
    if htmx:
        assert r.status_code == 200 and r["HX-Push-Url"] == step_url(draft, W.IMAGE)
    else:
        assert r.status_code == 302 and r["Location"] == step_url(draft, W.IMAGE)
    return client.get(step_url(draft, W.RESOURCES)).content.decode()


def role_names(page: str) -> list[str]:
    """The role names the resources page shows: a custom row's input, a fixed row's text."""
    typed = re.findall(r'name="roles-\d+-name"[^>]*value="([^"]*)"', page)
    return typed or re.findall(r"<strong>([a-z]+)</strong>", page[page.index('id="role-table"') :])


def stored_resources(draft) -> dict:
    return Draft.objects.get(pk=draft.pk).data[W.RESOURCES]


@pytest.mark.parametrize("htmx", [False, True])
def test_going_back_to_custom_after_a_look_at_pytorch_brings_its_named_roles_back_and_says_so(
    alice_client, htmx
):
    draft = new_draft(alice_client)
    complete_steps(
        alice_client, draft, upto=W.RESOURCES, **{W.BASIC: basic_data(framework=S.CUSTOM)}
    )
    r = post_step(alice_client, draft, W.RESOURCES, resources_data(RAY_ROLES), htmx=htmx)
    assert r.status_code == (200 if htmx else 302)
    typed = stored_resources(draft)

    pytorch = switch_framework(alice_client, draft, S.PYTORCH, htmx=htmx)
    assert role_names(pytorch) == ["master", "worker"]  # a PyTorch job gets PyTorch's roles
    assert 'id="roles-restored"' not in pytorch
    back = switch_framework(alice_client, draft, S.CUSTOM, htmx=htmx)

    assert role_names(back) == ["head", "worker", "data-loader"]
    assert stored_resources(draft) == typed  # instances, cards, CPU and memory as typed
    assert RESTORED_ZH in back
    # Put back, not done: the pool may have changed meanwhile, so 下一步 checks it again.
    assert W.RESOURCES not in Draft.objects.get(pk=draft.pk).completed_steps


def test_the_notice_of_roles_brought_back_is_said_in_english_too(alice_client):
    draft = new_draft(alice_client)
    complete_steps(
        alice_client, draft, upto=W.RESOURCES, **{W.BASIC: basic_data(framework=S.CUSTOM)}
    )
    post_step(alice_client, draft, W.RESOURCES, resources_data(RAY_ROLES))
    switch_framework(alice_client, draft, S.PYTORCH)
    switch_framework(alice_client, draft, S.CUSTOM)
    alice_client.cookies["django_language"] = "en"

    page = alice_client.get(step_url(draft, W.RESOURCES)).content.decode()

    assert "Restored the roles you had for Custom." in page


def test_pytorch_mpi_and_tensorflow_each_get_back_the_table_they_last_had(alice_client):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.RESOURCES)
    pytorch_table = [role("master", 1, cards=2, cpu=8), role("worker", 3, cards=2, memory_gb=64)]
    post_step(alice_client, draft, W.RESOURCES, resources_data(pytorch_table))
    pytorch = stored_resources(draft)
    switch_framework(alice_client, draft, S.MPI)
    mpi_table = [role("master", 1, card=None, cpu=2), role("worker", 4, card=V100, cards=1)]
    post_step(alice_client, draft, W.RESOURCES, resources_data(mpi_table))
    mpi = stored_resources(draft)

    tensorflow = switch_framework(alice_client, draft, S.TENSORFLOW)
    assert role_names(tensorflow) == ["chief", "worker", "ps", "evaluator"]
    assert 'id="roles-restored"' not in tensorflow  # nothing of TensorFlow's was kept
    page = switch_framework(alice_client, draft, S.PYTORCH)
    assert stored_resources(draft) == pytorch
    assert "已恢复您此前为 PyTorch 设置的角色。" in page
    page = switch_framework(alice_client, draft, S.MPI)
    assert stored_resources(draft) == mpi
    assert "已恢复您此前为 MPI 设置的角色。" in page


def test_the_notice_goes_once_the_restored_table_is_done_and_the_table_stays(alice_client):
    draft = new_draft(alice_client)
    complete_steps(
        alice_client, draft, upto=W.RESOURCES, **{W.BASIC: basic_data(framework=S.CUSTOM)}
    )
    post_step(alice_client, draft, W.RESOURCES, resources_data(RAY_ROLES))
    switch_framework(alice_client, draft, S.PYTORCH)
    assert RESTORED_ZH in switch_framework(alice_client, draft, S.CUSTOM)

    r = post_step(alice_client, draft, W.RESOURCES, resources_data(RAY_ROLES))

    assert r.status_code == 302 and r["Location"] == step_url(draft, W.DATA)
    page = alice_client.get(step_url(draft, W.RESOURCES)).content.decode()
    assert 'id="roles-restored"' not in page
    assert role_names(page) == ["head", "worker", "data-loader"]


def test_roles_added_with_a_row_button_before_leaving_are_the_ones_brought_back(alice_client):
    # 添加角色 saves the table as it stands (no 下一步): that is the table the framework had.
    draft = new_draft(alice_client)
    complete_steps(
        alice_client, draft, upto=W.RESOURCES, **{W.BASIC: basic_data(framework=S.CUSTOM)}
    )
    post_step(alice_client, draft, W.RESOURCES, resources_data(RAY_ROLES[:2]), action="add-row")

    switch_framework(alice_client, draft, S.PYTORCH)
    page = switch_framework(alice_client, draft, S.CUSTOM)

    assert len(role_names(page)) == 3 and role_names(page)[:2] == ["head", "worker"]


def test_an_aiak_templates_suggested_resources_win_over_the_table_pytorch_had(alice_client):
    draft = new_draft(alice_client)
    complete_steps(
        alice_client, draft, upto=W.RESOURCES, **{W.BASIC: basic_data(framework=S.CUSTOM)}
    )
    post_step(alice_client, draft, W.RESOURCES, resources_data(RAY_ROLES))
    switch_framework(alice_client, draft, S.PYTORCH)
    post_step(
        alice_client, draft, W.RESOURCES, resources_data([role("master", 1), role("worker", 7)])
    )
    switch_framework(alice_client, draft, S.MPI)

    # The template runs on PyTorch: its workers, not the 7 PyTorch's table had.
    post_step(alice_client, draft, W.BASIC, AIAK_BASIC)
    assert post_step(alice_client, draft, W.IMAGE, aiak_image()).status_code == 302
    page = alice_client.get(step_url(draft, W.RESOURCES)).content.decode()

    suggested = W.aiak_templates()[TEMPLATE]["resources"]
    assert (suggested["workers"], suggested["acceleratorsPerInstance"]) != (7, 1)
    assert re.search(rf'name="roles-1-replicas"[^>]*value="{suggested["workers"]}"', page)
    cards = suggested["acceleratorsPerInstance"]
    assert re.search(rf'name="roles-1-accelerators"[^>]*value="{cards}"', page)
    assert 'id="roles-restored"' not in page
    # Back to custom creation and 自定义: the named roles wait there still.
    page = switch_framework(alice_client, draft, S.CUSTOM)
    assert role_names(page) == ["head", "worker", "data-loader"]
    assert RESTORED_ZH in page


def test_a_framework_clicked_by_mistake_on_an_aiak_draft_loses_no_resources_edited(alice_client):
    # MPI is refused for a template ("AIAK templates run on PyTorch"), yet the table was
    # given up with it: PyTorch chosen again brings back what the engineer made of it.
    draft = aiak_draft_up_to_data(alice_client)
    edited = stored_resources(draft)

    r = post_step(alice_client, draft, W.BASIC, {**AIAK_BASIC, "framework": S.MPI})
    assert (
        r.status_code == 200
        and "AIAK训练模版基于 PyTorch 运行，请选择 PyTorch。" in r.content.decode()
    )
    page = switch_framework(alice_client, draft, S.PYTORCH, **AIAK_ONLY)

    assert stored_resources(draft) == edited
    assert "已恢复您此前为 PyTorch 设置的角色。" in page


def test_a_table_pytorch_had_before_a_template_was_chosen_does_not_come_back_over_it(
    alice_client,
):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.RESOURCES)
    post_step(
        alice_client, draft, W.RESOURCES, resources_data([role("master", 1), role("worker", 7)])
    )
    switch_framework(alice_client, draft, S.MPI)
    post_step(alice_client, draft, W.BASIC, AIAK_BASIC)  # the template's resources
    assert post_step(alice_client, draft, W.IMAGE, aiak_image()).status_code == 302

    # MPI clicked by mistake (refused for a template), then PyTorch again.
    post_step(alice_client, draft, W.BASIC, {**AIAK_BASIC, "framework": S.MPI})
    page = switch_framework(alice_client, draft, S.PYTORCH, **AIAK_ONLY)

    suggested = W.aiak_templates()[TEMPLATE]["resources"]
    assert re.search(rf'name="roles-1-replicas"[^>]*value="{suggested["workers"]}"', page)
    assert 'id="roles-restored"' not in page
