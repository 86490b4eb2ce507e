"""What a phone's keyboard is told by the pages' HTML (qa85, the console on a phone): fields
typed to the letter (names, images, paths, commands, variables, labels, addresses, filters)
are not capitalised or corrected, and numbers, emails and URLs get their own keyboards."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from django.urls import reverse

from jobs import wizard as W
from jobs.models import JobReplica
from tests.test_admin_owner_filter import CHANGELIST, reviewer_client
from tests.test_job_pages import submit
from tests.test_wizard import (
    _local_pool,  # noqa: F401 (autouse fixture)
    basic_data,
    complete_steps,
    data_data,
    field_errors,
    image_data,
    new_draft,
    post_step,
    step_url,
)

PLAIN_TYPED = {"autocapitalize": "none", "autocorrect": "off", "spellcheck": "false"}
TYPED = {"text", "search", "password", "email", "url"}


class Fields(HTMLParser):
    """The page's inputs (of the types people type into) and textareas, with their attributes."""

    def __init__(self, page: str) -> None:
        super().__init__()
        self.typed: list[dict[str, str]] = []
        self.numbers: list[dict[str, str]] = []
        self.feed(page)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {k: v or "" for k, v in attrs}
        kind = found.get("type", "text")
        if tag == "textarea" or (tag == "input" and kind in TYPED):
            self.typed.append(found)
        elif tag == "input" and kind == "number":
            self.numbers.append(found)


def plain_typed(field: dict[str, str]) -> bool:
    return all(field.get(k) == v for k, v in PLAIN_TYPED.items())


def wizard_pages(client) -> dict[str, str]:
    """Every form step's page, its tables with a row each (a label, a variable, a mount)."""
    draft = new_draft(client)
    complete_steps(
        client,
        draft,
        **{
            W.BASIC: basic_data(
                **{"label-TOTAL_FORMS": "1", "label-INITIAL_FORMS": "0", "label-0-key": "team"}
            ),
            W.IMAGE: image_data(envs=[("NCCL_DEBUG", "INFO")]),
            W.DATA: data_data(),
        },
    )
    return {step: client.get(step_url(draft, step)).content.decode() for step in W.FORM_STEPS}


def test_no_text_field_of_the_wizard_is_capitalised_or_corrected_by_a_phones_keyboard(
    alice_client,
):
    # Until qa85 none said so: a phone typed "Llm-train", "Python:3.12", "/Workspace".
    named = set()
    for step, page in wizard_pages(alice_client).items():
        for field in Fields(page).typed:
            assert plain_typed(field), (step, field)
            named.add(field.get("name", "").split("-")[-1])
    for name in (
        "name",  # the job's, a variable's, a role's
        "key",
        "value",
        "image",
        "entrypoint",
        "command",
        "registry_username",
        "env_paste",
        "source_path",
        "mount_path",
        "tensorboard_path",
        "alert_emails",
        "alert_webhooks",
        "custom_patterns",
    ):
        assert name in named, name


def test_every_number_field_of_the_wizard_opens_a_digits_keyboard(alice_client):
    numbers = {}
    for page in wizard_pages(alice_client).values():
        for field in Fields(page).numbers:
            numbers[field["name"].split("-")[-1]] = field.get("inputmode")
    assert {"replicas", "accelerators", "cpu", "memory_gb", "shared_memory_gi"} <= set(numbers)
    assert {"hang_minutes", "retry_limit", "timeout_minutes", "total", "concurrency"} <= set(
        numbers
    )
    assert set(numbers.values()) == {"numeric"}, numbers


def test_alert_emails_open_an_email_keyboard_and_webhooks_a_url_keyboard(alice_client):
    page = wizard_pages(alice_client)[W.ADVANCED]
    modes = {f["name"]: f.get("inputmode") for f in Fields(page).typed}
    assert modes["alert_emails"] == "email"
    assert modes["alert_webhooks"] == "url"


def test_the_filter_and_search_boxes_are_not_capitalised_or_corrected(
    alice, alice_client, reviewer
):
    job = submit(alice)
    JobReplica.objects.create(job=job, role="master", index=0)
    pages = {
        "list": alice_client.get(reverse("job-list")).content.decode(),
        "job": alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode(),
        "import": alice_client.get(reverse("wizard-start")).content.decode(),
        "usage": alice_client.get(reverse("my-usage")).content.decode(),
        "admin": reviewer_client(reviewer).get(CHANGELIST).content.decode(),
    }
    boxes = {(where, f.get("name")): f for where, page in pages.items() for f in Fields(page).typed}
    for box in (
        ("list", "q"),
        ("list", "queue"),
        ("list", "label"),
        ("job", "q"),
        ("import", "body"),
        ("usage", "by_label"),
        ("admin", "owner_name"),
    ):
        assert plain_typed(boxes[box]), box
    log_context = [f for f in Fields(pages["job"]).numbers if f.get("name") == "context"]
    assert [f.get("inputmode") for f in log_context] == ["numeric"]


@pytest.mark.parametrize(
    ("language", "said"),
    [
        ("zh-hans", "镜像的仓库名（仓库地址之后、标签之前的部分）不能使用大写字母"),
        ("en", "Upper-case letters are not allowed in the repository name"),
    ],
)
def test_an_image_with_a_capital_in_its_repository_says_capitals_are_not_allowed(
    alice_client, language, said
):
    # "Python:3.12" (a phone's keyboard capitalised it) got the general format rule alone.
    alice_client.cookies["django_language"] = language
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.IMAGE)
    r = post_step(alice_client, draft, W.IMAGE, image_data(image="Python:3.12"))

    [message] = field_errors(r, "id_image")
    assert said in message
    assert re.search(r"“p”", message)
    typed = [f for f in Fields(r.content.decode()).typed if f.get("name") == "image"]
    assert typed[0]["value"] == "Python:3.12"  # kept as typed
    # The registry's host and the tag may have capitals.
    fixed = image_data(image="Registry.Example.com/train/pytorch:V2")
    assert post_step(alice_client, draft, W.IMAGE, fixed).status_code == 302
