"""Building a job from an AIAK template as an LLM engineer would (QA 39): what the template
fills stays the engineer's once edited, and the job it makes can find its own code."""

from __future__ import annotations

import pytest

from jobs import wizard as W
from tests.test_wizard import (
    _local_pool,  # noqa: F401 (autouse fixture)
    basic_data,
    data_data,
    field_errors,
    image_data,
    new_draft,
    post_step,
    resources_data,
    role,
    step_url,
)

TEMPLATE = "llama2-7b"
AIAK_BASIC = basic_data(
    creation_mode="aiak", training_mode="SFT", training_method="lora", aiak_template=TEMPLATE
)


def own_paths(command: str, keys=None) -> str:
    """The template's command with its placeholder lines (or only `keys`') replaced."""
    for key, placeholder in W.aiak_catalog()["placeholders"].items():
        if keys is None or key in keys:
            command = command.replace(f"{key}={placeholder}", f"{key}=/root/pfs/{key.lower()}")
    return command


def aiak_image(command: str | None = None, **over):
    template = W.aiak_templates()[TEMPLATE]
    command = command or own_paths(W.template_command(template, "SFT", "lora"))
    envs = [(e["name"], e["value"]) for e in template["envs"]]
    return image_data(envs=envs, image=template["image"], command=command, **over)


def aiak_draft_up_to_data(client):
    draft = new_draft(client)
    post_step(client, draft, W.BASIC, AIAK_BASIC)
    post_step(client, draft, W.IMAGE, aiak_image())
    post_step(client, draft, W.RESOURCES, resources_data([role("master", 1, cards=8)]))
    return draft


# -- a mount over the template's code ------------------------------------------------------


@pytest.mark.parametrize("mount_path", ["/workspace", "/workspace/AIAK-Training-LLM"])
def test_a_mount_over_the_templates_code_is_refused_on_its_row_naming_the_code(
    alice_client, mount_path
):
    draft = aiak_draft_up_to_data(alice_client)

    r = post_step(
        alice_client, draft, W.DATA, data_data(mounts=[("hostpath", "scratch", mount_path)])
    )

    assert r.status_code == 200
    messages = field_errors(r, "id_mounts-0-mount_path")
    assert any("/workspace/AIAK-Training-LLM" in m and "/root/pfs" in m for m in messages), messages
    draft.refresh_from_db()
    assert W.DATA not in draft.completed_steps
    assert draft.data[W.DATA]["mounts-0-mount_path"] in (mount_path, [mount_path])


def test_the_refusal_of_a_mount_over_the_code_reads_in_english(alice_en):
    draft = aiak_draft_up_to_data(alice_en)

    r = post_step(
        alice_en, draft, W.DATA, data_data(mounts=[("hostpath", "scratch", "/workspace")])
    )

    assert r.status_code == 200
    assert any(
        "hides /workspace/AIAK-Training-LLM" in m for m in field_errors(r, "id_mounts-0-mount_path")
    )


@pytest.mark.parametrize("mount_path", ["/root/pfs", "/workspace/data", "/mnt/cluster"])
def test_a_mount_beside_the_templates_code_is_taken(alice_client, mount_path):
    draft = aiak_draft_up_to_data(alice_client)

    r = post_step(
        alice_client, draft, W.DATA, data_data(mounts=[("hostpath", "scratch", mount_path)])
    )

    assert r.status_code == 302 and r["Location"] == step_url(draft, W.FAULT)


def test_a_custom_job_may_mount_at_workspace(alice_client):
    draft = new_draft(alice_client)
    post_step(alice_client, draft, W.BASIC, basic_data())
    post_step(alice_client, draft, W.IMAGE, image_data())
    post_step(alice_client, draft, W.RESOURCES, resources_data())

    r = post_step(
        alice_client, draft, W.DATA, data_data(mounts=[("hostpath", "scratch", "/workspace")])
    )

    assert r.status_code == 302 and r["Location"] == step_url(draft, W.FAULT)
