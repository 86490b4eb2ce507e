"""Card types named as people name them, the resource name in brackets (jobs.spec.card_shown),
wherever a person reads one (qa113: only the AIAK preview did; everywhere else it was the
resource name alone, "baidu.com/a800_80g_cgpu"). Values a form sends stay the resource name."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse
from django.utils import translation

from jobs import spec as S
from jobs import wizard as W
from jobs.backends.local import LocalBackend
from tests.test_spec import pytorch_spec
from tests.test_wizard import (
    A800,
    A800_SHOWN,
    _local_pool,  # noqa: F401 (autouse fixture)
    complete_steps,
    field_errors,
    new_draft,
    post_step,
    resources_data,
    role,
    step_url,
)


def test_the_review_names_the_cards_of_the_roles_and_their_fit(alice_client):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft)

    review = alice_client.get(step_url(draft, W.REVIEW)).content.decode()

    fit = review.split('id="review-fit"')[1].split("</div>")[0]
    assert f"{A800_SHOWN}：需要 3 张，空闲 8 张" in fit
    assert f"master × 1、1 × {A800_SHOWN}" in review


def test_more_cards_than_the_local_pool_has_are_refused_naming_the_card(alice_client):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.RESOURCES)
    table = resources_data(roles=[role("master", 1, A800, 4), role("worker", 2, A800, 4)])

    r = post_step(alice_client, draft, W.RESOURCES, table)

    assert field_errors(r, "id_roles-0-accelerators") == [
        f"任务需要 12 张 {A800_SHOWN} 加速芯片，本机资源池只有 8 张。"
    ]


@pytest.mark.django_db
def test_the_local_backends_refusal_names_the_card_as_a_run_again_is_refused():
    # 再次运行 checks the spec with the local backend: the same words.
    spec = pytorch_spec(roles=[S.Role("master", 1, A800, 8), S.Role("worker", 1, A800, 4)])

    with translation.override("en"):
        errors = LocalBackend().check_spec(spec)

    assert errors["roles[0].accelerators"] == [
        f"The job needs 12 {A800_SHOWN} cards; the local pool has 8."
    ]


def test_the_pools_page_names_each_card_and_keeps_the_resource_name_for_scripts(alice_client):
    page = alice_client.get(reverse("pool-list")).content.decode()

    assert f'<tr data-card="{A800}">' in page
    assert re.search(rf'<th scope="row" class="fw-normal">{re.escape(A800_SHOWN)}</th>', page)
