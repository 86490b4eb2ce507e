"""The review's note when the command starts with another framework's launcher (qa113: a
copied PyTorch job switched to TensorFlow kept its `torchrun …` with no hint)."""

from __future__ import annotations

import html
import re

from django.urls import reverse

from jobs import spec as S
from jobs import wizard as W
from tests.test_wizard import (
    _local_pool,  # noqa: F401 (autouse fixture)
    basic_data,
    complete_steps,
    image_data,
    new_draft,
    resources_data,
    role,
    step_url,
)

TF_ROLES = [role("chief", 1), role("worker", 1)]


def framework_notice(client, draft) -> str:
    page = client.get(step_url(draft, W.REVIEW)).content.decode()
    found = re.search(r'<div [^>]*id="framework-notice"[^>]*>(.*?)</div>', page, re.S)
    return html.unescape(re.sub(r"<[^>]+>", "", found[1])) if found else ""


def review_of(client, *, framework: str, command: str, roles=None):
    draft = new_draft(client)
    complete_steps(
        client,
        draft,
        **{
            W.BASIC: basic_data(framework=framework),
            W.IMAGE: image_data(command=command),
            W.RESOURCES: resources_data(roles),
        },
    )
    return draft


def test_a_tensorflow_job_running_torchrun_is_noted_on_the_review_with_a_link_to_the_command(
    alice_client,
):
    draft = review_of(
        alice_client, framework=S.TENSORFLOW, command="torchrun train.py", roles=TF_ROLES
    )

    assert framework_notice(alice_client, draft) == (
        "训练框架：运行参数以 torchrun 开头，这是启动 PyTorch 任务的命令，但任务的训练框架是 "
        "TensorFlow。"
        "如果更改过训练框架（例如复制的任务），请同时修改运行参数使之相符。镜像与命令"
    )
    page = alice_client.get(step_url(draft, W.REVIEW)).content.decode()
    assert (
        f'href="{step_url(draft, W.IMAGE)}" class="alert-link" id="framework-notice-step"' in page
    )
    r = alice_client.post(reverse("wizard-submit", args=[draft.id]))
    assert r.status_code == 302  # a note: the job is still sent


def test_the_note_reads_in_english_and_names_the_program_past_its_variables(alice_en):
    draft = review_of(
        alice_en,
        framework=S.PYTORCH,
        command="# start\nexport NCCL_DEBUG=INFO\nOMP_NUM_THREADS=1 mpirun -np 2 python train.py",
    )

    assert framework_notice(alice_en, draft) == (
        "Training framework: The command starts with mpirun, which launches MPI jobs, but the "
        "job's framework is PyTorch. If the framework was changed (on a copied job, for "
        "example), change the command to match it too. Image and command"
    )


def test_a_command_of_the_jobs_own_framework_or_of_a_custom_job_gets_no_note(alice_client):
    for framework, command, roles in (
        (S.PYTORCH, "torchrun train.py", None),
        (S.PYTORCH, 'echo "TF_CONFIG=$TF_CONFIG"\ntorchrun train.py', None),
        (S.TENSORFLOW, "python train.py", TF_ROLES),
        (S.CUSTOM, "torchrun train.py", [role("worker", 1)]),
    ):
        draft = review_of(alice_client, framework=framework, command=command, roles=roles)

        assert framework_notice(alice_client, draft) == "", framework
