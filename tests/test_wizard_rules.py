"""Every rule of the wizard's steps: the message lands on the field it concerns."""

from __future__ import annotations

import html
import re

import pytest
from django.test import Client

from jobs import spec as S
from jobs import wizard as W
from jobs.models import Draft
from tests.test_wizard import (
    V100,
    _local_pool,  # noqa: F401 (autouse fixture)
    advanced_data,
    basic_data,
    complete_steps,
    data_data,
    field_errors,
    image_data,
    new_draft,
    post_step,
    resources_data,
    role,
    step_url,
    submission_data,
)


@pytest.fixture
def en_client(alice) -> Client:
    client = Client(headers={"Accept-Language": "en"})
    client.force_login(alice)
    return client


def draft_at(client, step, **overrides) -> Draft:
    draft = new_draft(client)
    complete_steps(client, draft, upto=step, **overrides)
    return draft


RULES = [
    # (step, data, field id, words the message contains)
    (W.BASIC, basic_data(name="Bad_Name"), "id_name", "lowercase letters"),
    (W.BASIC, basic_data(name=""), "id_name", "Enter a job name"),
    (W.BASIC, basic_data(name="a" * 51), "id_name", "1-50 characters"),
    (W.BASIC, basic_data(resource_pool="elsewhere"), "id_resource_pool", "is not offered"),
    (W.BASIC, basic_data(queue="nope"), "id_queue", "valid choice"),
    (
        W.BASIC,
        basic_data(
            creation_mode="aiak",
            framework=S.TENSORFLOW,
            training_mode="SFT",
            training_method="full",
            aiak_template="llama2-7b",
        ),
        "id_framework",
        "AIAK templates run on PyTorch",
    ),
    (
        W.BASIC,
        basic_data(creation_mode="aiak", training_method="full", aiak_template="llama2-7b"),
        "id_training_mode",
        "training mode",
    ),
    (
        W.BASIC,
        basic_data(creation_mode="aiak", training_mode="SFT", aiak_template="llama2-7b"),
        "id_training_method",
        # The options' own words (qa101: "full update" beside the option "Full update").
        "Choose a training method: Full update or LoRA.",
    ),
    (
        W.BASIC,
        basic_data(creation_mode="aiak", training_mode="SFT", training_method="lora"),
        "id_aiak_template",
        "AIAK training template",
    ),
    (W.IMAGE, image_data(image=""), "id_image", "Enter an image address"),
    (W.IMAGE, image_data(image="Not An Image"), "id_image", "registry/repository:tag"),
    (
        W.IMAGE,
        image_data(image="registry.example.com/train/pytorch"),
        "id_image",
        # The one message of the image rule, a tag left out among what it refuses.
        "Image must look like registry/repository:tag or registry/repository@sha256:<digest>.",
    ),
    (W.IMAGE, image_data(registry_password="hunter22"), "id_registry_username", "a username"),
    (W.IMAGE, image_data(registry_username="robot"), "id_registry_password", "a username"),
    (W.IMAGE, image_data(entrypoint=""), "id_entrypoint", "Enter an entrypoint"),
    (W.IMAGE, image_data(entrypoint="python 'x"), "id_entrypoint", "unclosed quote"),
    (W.IMAGE, image_data(command="  "), "id_command", "Enter the command"),
    (
        W.IMAGE,
        image_data(envs=[("RANK", "3")]),
        "id_env-0-name",
        "the platform sets it in PyTorch jobs",
    ),
    (W.IMAGE, image_data(envs=[("A", "1"), ("A", "2")]), "id_env-1-name", "defined twice"),
    (W.IMAGE, image_data(envs=[("1BAD", "x")]), "id_env-0-name", "do not start with a digit"),
    (W.IMAGE, image_data(envs=[("", "orphan")]), "id_env-0-name", "Enter the variable"),
    (W.BASIC, basic_data(name="a" * 300), "id_name", "1-50 characters"),
    (
        W.IMAGE,
        image_data(env_paste="GOOD=1\nthis is not a pair"),
        "id_env_paste",
        "this is not a pair",
    ),
    (
        W.RESOURCES,
        resources_data([role("master", 2), role("worker", 1)]),
        "id_roles-0-replicas",
        "exactly 1 master",
    ),
    (
        W.RESOURCES,
        resources_data([role("master", 1), role("worker", 1, card=V100)]),
        "id_roles-1-accelerator_type",
        "same card type",
    ),
    (
        W.RESOURCES,
        resources_data([role("master", 1), role("worker", 1, cards=2)]),
        "id_roles-1-accelerators",
        "same card type",
    ),
    (
        W.RESOURCES,
        resources_data([role("master", 1, card="", use_accelerator="on"), role("worker", 0)]),
        "id_roles-0-accelerator_type",
        "Choose a card type",
    ),
    (
        W.RESOURCES,
        resources_data([role("master", 1, cards=0), role("worker", 0, cards=0)]),
        "id_roles-0-accelerators",
        "between 1 and 64",
    ),
    (
        W.RESOURCES,
        resources_data([role("master", 1, cpu=0), role("worker", 0)]),
        "id_roles-0-cpu",
        "CPU cores",
    ),
    (
        W.RESOURCES,
        resources_data([role("master", 1, memory_gb=999999), role("worker", 0)]),
        "id_roles-0-memory_gb",
        "Memory must be",
    ),
    (
        W.RESOURCES,
        resources_data([role("master", 1), role("worker", "many")]),
        "id_roles-1-replicas",
        "whole number",
    ),
    (
        W.RESOURCES,
        resources_data([role("master", 1, cards=4), role("worker", 2, cards=4)]),
        "id_roles-0-accelerators",
        "the local pool has 8",
    ),
    (W.RESOURCES, resources_data(shared_memory_gi="0"), "id_shared_memory_gi", "Shared memory"),
    (
        W.DATA,
        data_data([("hostpath", "scratch", "workspace")]),
        "id_mounts-0-mount_path",
        "must start with /",
    ),
    (
        W.DATA,
        data_data([("hostpath", "scratch", "")]),
        "id_mounts-0-mount_path",
        "Enter the mount path",
    ),
    (
        W.DATA,
        data_data([("hostpath", "scratch", "/proc/x")]),
        "id_mounts-0-mount_path",
        "system path",
    ),
    # The kernel reads //etc as /etc; normpath keeps it as it is.
    (W.DATA, data_data([("hostpath", "scratch", "//etc")]), "id_mounts-0-mount_path", "normalised"),
    (W.DATA, data_data([("hostpath", "scratch", "//")]), "id_mounts-0-mount_path", "normalised"),
    (
        W.DATA,
        data_data([("hostpath", "scratch", "/work\u2028space")]),
        "id_mounts-0-mount_path",
        "control characters",
    ),
    (
        W.DATA,
        data_data([("hostpath", "scratch", "/work\x85space")]),
        "id_mounts-0-mount_path",
        "control characters",
    ),
    (
        W.DATA,
        data_data([("hostpath", "scratch", "/a"), ("hostpath", "scratch", "/a")]),
        "id_mounts-1-mount_path",
        "same path",
    ),
    (W.DATA, data_data([("hostpath", "", "/a")]), "id_mounts-0-name", "Choose a file system"),
    (W.DATA, data_data([("pfs", "scratch", "/a")]), "id_mounts-0-type", "cannot mount"),
    (
        W.DATA,
        data_data([("hostpath", "scratch", "/a")], **{"mounts-0-source_path": "../x"}),
        "id_mounts-0-source_path",
        "..",
    ),
    (
        W.DATA,
        # Read-only: a read-write mount's missing folder is made at start (left40).
        data_data(
            [("hostpath", "scratch", "/a")],
            **{"mounts-0-source_path": "missing", "mounts-0-access": "ro"},
        ),
        "id_mounts-0-source_path",
        "does not exist",
    ),
    (
        W.DATA,
        data_data([("hostpath", "scratch", "/a")], **{"mounts-0-source_path": "/" + "a" * 256}),
        "id_mounts-0-source_path",
        "does not exist",  # a name too long for the file system: a message, not a 500
    ),
    (W.DATA, data_data([]), "id_storage_enabled", "Add a mount"),
    (
        W.DATA,
        data_data([("hostpath", "scratch", "/workspace\n/etc")]),
        "id_mounts-0-mount_path",
        "control characters",
    ),
    (
        W.DATA,
        data_data([("hostpath", "scratch", "/a")], **{"mounts-0-source_path": "a\tb"}),
        "id_mounts-0-source_path",
        "control characters",
    ),
    (W.FAULT, {"hang_detection": "on"}, "id_hang_minutes", "hang threshold"),
    (W.FAULT, {"hang_detection": "on", "hang_minutes": "0"}, "id_hang_minutes", "hang threshold"),
    (
        W.FAULT,
        {"hang_detection": "on", "hang_minutes": "999999999999"},
        "id_hang_minutes",
        "between 1 and 525,600 minutes (365 days)",
    ),
    (W.FAULT, {"fault_tolerance": "on", "retry_limit": "5"}, "id_retry_limit", "between 0 and 3"),
    (W.FAULT, {"enable_bccl": "on"}, "id_enable_bccl", "BCCL needs"),
    (W.ADVANCED, advanced_data(tensorboard="on"), "id_tensorboard_path", "TensorBoard log path"),
    (
        W.ADVANCED,
        advanced_data(tensorboard="on", tensorboard_path="logs/tb"),
        "id_tensorboard_path",
        "absolute",
    ),
    (
        W.ADVANCED,
        advanced_data(auto_delete="on", retention_value=""),
        "id_retention_value",
        "how long to keep",
    ),
    (
        W.ADVANCED,
        advanced_data(auto_delete="on", retention_value="0"),
        "id_retention_value",
        "retention time must be between 1 and 999999",
    ),
    (
        W.ADVANCED,
        advanced_data(auto_delete="on", retention_value="99999999999"),
        "id_retention_value",
        "retention time must be between 1 and 999999",
    ),
    (
        W.ADVANCED,
        advanced_data(alert_items=["jobFailed"]),
        "id_alert_emails",
        "would reach nobody",
    ),
    (
        W.ADVANCED,
        advanced_data(alert_emails="ops@example.com"),
        "id_alert_items",
        "Choose the events",
    ),
    (
        W.ADVANCED,
        advanced_data(alert_emails="ops@example.com\nnot-an-email"),
        "id_alert_emails",
        "not-an-email",
    ),
    (
        W.ADVANCED,
        advanced_data(alert_webhooks="ftp://hooks.example.com/x"),
        "id_alert_webhooks",
        "http(s) URL",
    ),
    (
        W.ADVANCED,
        advanced_data(
            alert_items=["jobFailed"],
            alert_emails="\n".join(f"user{i}@example.com" for i in range(21)),
        ),
        "id_alert_emails",
        "at most 20 email addresses; this one lists 21",
    ),
    (
        W.ADVANCED,
        advanced_data(
            alert_items=["jobFailed"],
            alert_webhooks="\n".join(f"https://hook{i}.example.com/x" for i in range(11)),
        ),
        "id_alert_webhooks",
        "at most 10 webhooks; this one lists 11",
    ),
    (
        W.ADVANCED,
        advanced_data(alert_items=["jobRunning", "bogus"]),
        "id_alert_items",
        "valid choice",
    ),
    (
        W.ADVANCED,
        advanced_data(timeout_minutes="0"),
        "id_timeout_minutes",
        "between 1 and 525,600 minutes (365 days)",
    ),
    (W.SUBMISSION, submission_data(mode="queue", total="0"), "id_total", "Tasks in the group"),
    (
        W.SUBMISSION,
        submission_data(mode="queue", total="2", concurrency="3"),
        "id_concurrency",
        "the tasks in the group",
    ),
    (
        W.SUBMISSION,
        submission_data(mode="queue", target_queue="other"),
        "id_target_queue",
        "valid choice",
    ),
]


@pytest.mark.parametrize(("step", "data", "field_id", "words"), RULES)
def test_each_rule_puts_its_message_on_its_field(en_client, step, data, field_id, words):
    draft = draft_at(en_client, step)

    r = post_step(en_client, draft, step, data)

    assert r.status_code == 200
    messages = field_errors(r, field_id)
    assert any(words in m for m in messages), (field_id, messages)
    draft.refresh_from_db()
    assert step not in draft.completed_steps


def test_a_failed_step_keeps_everything_typed(en_client):
    draft = draft_at(en_client, W.IMAGE)
    typed = image_data(
        image="Not An Image",
        command="python train.py --lr 3e-4",
        envs=[("RANK", "7"), ("KEEP", "me")],
    )

    r = post_step(en_client, draft, W.IMAGE, typed)

    page = r.content.decode()
    assert 'value="Not An Image"' in page
    assert "python train.py --lr 3e-4" in page
    assert 'value="RANK"' in page and 'value="KEEP"' in page and 'value="me"' in page


def test_a_standalone_job_asking_for_more_cards_than_idle_is_refused_with_the_numbers(en_client):
    roles = [role("master", 1, card=V100, cards=2), role("worker", 1, card=V100, cards=2)]
    draft = draft_at(en_client, W.SUBMISSION, **{W.RESOURCES: resources_data(roles)})
    # The pool's V100 cards are busy with another job.
    from jobs.models import Job, JobStatus, LocalRun

    busy = S.JobSpec(name="busy", resource_pool_id="local", image="a/b:1", command="x")
    busy.roles = [
        S.Role(name="master", replicas=1, accelerator_type=V100, accelerators=3),
        S.Role(name="worker", replicas=0),
    ]
    running = Job.objects.create(
        public_id="pytorchjob-busy",
        name="busy",
        owner=draft.owner,
        spec=busy.to_document(),
        status=JobStatus.RUNNING,
        backend="local",
        resource_pool="local",
    )
    # What the local runner records at dispatch: the card indices the job holds.
    LocalRun.objects.create(job=running, devices={V100: [0, 1, 2]})

    refused = post_step(en_client, draft, W.SUBMISSION, submission_data())
    queued = post_step(en_client, draft, W.SUBMISSION, submission_data(mode="queue"))

    messages = field_errors(refused, "id_mode")
    assert any(
        "needs 4 V100 32GB (baidu.com/v100_32g_cgpu) cards but the pool has 1 idle now" in m
        for m in messages
    ), messages
    assert queued.status_code == 302


def aiak_draft_at_image(client, template: str, method: str) -> Draft:
    basic = basic_data(
        creation_mode="aiak", training_mode="SFT", training_method=method, aiak_template=template
    )
    return draft_at(client, W.IMAGE, **{W.BASIC: basic})


def test_aiak_placeholders_left_in_the_command_block_the_step_by_name(en_client):
    draft = aiak_draft_at_image(en_client, "qwen1.5-7b", "lora")
    command = W.template_command(W.aiak_templates()["qwen1.5-7b"], "SFT", "lora")
    image = W.aiak_templates()["qwen1.5-7b"]["image"]
    half_done = command.replace("$USER_DATA_PATH", "/mnt/data").replace(
        "$USER_TOKENIZER_PATH", "/mnt/tok"
    )

    blocked = post_step(en_client, draft, W.IMAGE, image_data(image=image, command=half_done))

    messages = field_errors(blocked, "id_command")
    named = " ".join(messages)
    assert "CHECKPOINT_LOAD_PATH=$USER_CHECKPOINT_LOAD_PATH" in named
    assert "TENSORBOARD_PATH=$TENSORBOARD_PATH" in named
    assert "DATA_PATH=$USER_DATA_PATH" not in named.replace("LOAD_PATH", "").replace(
        "SAVE_PATH", ""
    )
    done = (
        half_done.replace("$USER_CHECKPOINT_LOAD_PATH", "/mnt/ckpt")
        .replace("$USER_CHECKPOINT_SAVE_PATH", "/mnt/out")
        .replace("TENSORBOARD_PATH=$TENSORBOARD_PATH", "TENSORBOARD_PATH=/mnt/tb")
    )
    assert (
        post_step(en_client, draft, W.IMAGE, image_data(image=image, command=done)).status_code
        == 302
    )


def test_an_aiak_placeholder_line_emptied_instead_of_replaced_blocks_the_step_by_name(en_client):
    draft = aiak_draft_at_image(en_client, "qwen1.5-7b", "lora")
    command = W.template_command(W.aiak_templates()["qwen1.5-7b"], "SFT", "lora")
    image = W.aiak_templates()["qwen1.5-7b"]["image"]
    done = (
        command.replace("$USER_DATA_PATH", "/mnt/data")
        .replace("$USER_TOKENIZER_PATH", "/mnt/tok")
        .replace("$USER_CHECKPOINT_LOAD_PATH", "/mnt/ckpt")
        .replace("$USER_CHECKPOINT_SAVE_PATH", "/mnt/out")
        .replace("TENSORBOARD_PATH=$TENSORBOARD_PATH", "TENSORBOARD_PATH=/mnt/tb")
    )
    emptied = done.replace("DATA_PATH=/mnt/data", "DATA_PATH=").replace(
        "TOKENIZER_PATH=/mnt/tok", 'TOKENIZER_PATH=""'
    )

    blocked = post_step(en_client, draft, W.IMAGE, image_data(image=image, command=emptied))

    assert blocked.status_code == 200
    messages = field_errors(blocked, "id_command")
    assert any(m.startswith("DATA_PATH= in the command is empty") for m in messages), messages
    assert any(m.startswith("TOKENIZER_PATH= in the command is empty") for m in messages)
    assert not any("CHECKPOINT" in m for m in messages), messages
    draft.refresh_from_db()
    assert W.IMAGE not in draft.completed_steps
    assert "DATA_PATH=\n" in draft.data[W.IMAGE]["command"][0].replace("\r\n", "\n")  # kept
    assert (
        post_step(en_client, draft, W.IMAGE, image_data(image=image, command=done)).status_code
        == 302
    )


def test_an_aiak_job_keeps_its_template_image_and_says_so_on_the_image_field(en_client):
    draft = aiak_draft_at_image(en_client, "llama2-7b", "full")
    template = W.aiak_templates()["llama2-7b"]
    command = W.template_command(template, "SFT", "full")

    refused = post_step(en_client, draft, W.IMAGE, image_data(image="python:3.12", command=command))

    messages = field_errors(refused, "id_image")
    assert refused.status_code == 200
    assert any(template["image"] in m and "custom creation" in m for m in messages), messages
    assert 'value="python:3.12"' in refused.content.decode()  # what was typed stays


def test_an_aiak_command_says_under_it_which_paths_to_replace_and_that_it_may_be_edited(
    en_client,
):
    """Seed 000, 基于AIAK加速模版创建 › 执行命令: 需要将数据集、CHECKPOINT、TOKENIZER以及
    Tensorboard的PATH替换成用户自定义路径; 模型参数可以在执行命令中直接修改."""
    aiak = aiak_draft_at_image(en_client, "llama2-7b", "full")
    custom = draft_at(en_client, W.IMAGE)

    page = en_client.get(step_url(aiak, W.IMAGE)).content.decode()
    custom_page = en_client.get(step_url(custom, W.IMAGE)).content.decode()

    help_text = re.search(r'id="id_command_helptext" class="form-text">([^<]+)<', page)
    assert help_text, "the command has no help text"
    assert "replace the PATHs of the data set, CHECKPOINT, TOKENIZER and TensorBoard" in (
        help_text.group(1)
    )
    assert "TENSORBOARD_PATH" in help_text.group(1) and "edit them here" in help_text.group(1)
    assert "replace the PATHs" not in custom_page  # a custom command has nothing to replace


def test_a_renamed_secret_must_be_typed_again_and_keeps_its_new_name(en_client):
    draft = draft_at(en_client, W.IMAGE)
    post_step(en_client, draft, W.IMAGE, image_data(envs=[("HF_TOKEN", "hf_supersecret", True)]))

    # Renamed in the browser; the value field comes back empty (it was rendered masked).
    renamed = post_step(en_client, draft, W.IMAGE, image_data(envs=[("HUB_TOKEN", "", True)]))

    assert renamed.status_code == 200
    assert any("renamed secret" in m for m in field_errors(renamed, "id_env-0-value"))
    assert 'value="HUB_TOKEN"' in renamed.content.decode()
    assert "hf_supersecret" not in renamed.content.decode()


def test_messages_come_in_chinese_by_default(alice_client):
    draft = draft_at(alice_client, W.BASIC)

    r = post_step(alice_client, draft, W.BASIC, basic_data(name=""))

    assert any("任务名称" in m for m in field_errors(r, "id_name")), field_errors(r, "id_name")


def test_a_negative_instance_count_gets_one_message_on_its_cell_and_no_misleading_total(en_client):
    draft = draft_at(en_client, W.RESOURCES)
    roles = [role("master", 1, cards=1), role("worker", -1, cards=1)]

    r = post_step(en_client, draft, W.RESOURCES, resources_data(roles))

    page = r.content.decode()
    assert r.status_code == 200
    assert any("between 0 and 1000" in m for m in field_errors(r, "id_roles-1-replicas"))
    assert "at least one replica" not in page


def test_a_step_level_message_shows_once_above_the_step(en_client):
    draft = draft_at(en_client, W.RESOURCES, **{W.BASIC: basic_data(framework=S.CUSTOM)})
    roles = [role("launcher", 0), role("trainer", 0)]

    r = post_step(en_client, draft, W.RESOURCES, resources_data(roles))

    page = r.content.decode()
    assert r.status_code == 200
    assert page.count("The job needs at least one replica.") == 1
    assert page.index('id="step-errors"') < page.index('id="role-table"')


def test_a_webhook_that_is_not_http_gets_that_message_only(en_client):
    draft = draft_at(en_client, W.ADVANCED)

    bad_scheme = post_step(en_client, draft, W.ADVANCED, advanced_data(alert_webhooks="ftp://x/y"))
    private = post_step(
        en_client, draft, W.ADVANCED, advanced_data(alert_webhooks="http://10.0.0.1/hook")
    )

    assert field_errors(bad_scheme, "id_alert_webhooks") == ["“ftp://x/y” is not an http(s) URL."]
    assert any("private" in m for m in field_errors(private, "id_alert_webhooks"))


def test_a_private_webhook_is_refused_naming_the_setting_an_administrator_allows_it_with(
    en_client,
):
    draft = draft_at(en_client, W.ADVANCED)

    english = post_step(
        en_client, draft, W.ADVANCED, advanced_data(alert_webhooks="http://127.0.0.1:8819/hook")
    )
    en_client.cookies["django_language"] = "zh-hans"
    chinese = post_step(
        en_client, draft, W.ADVANCED, advanced_data(alert_webhooks="http://127.0.0.1:8819/hook")
    )

    assert field_errors(english, "id_alert_webhooks") == [
        "“http://127.0.0.1:8819/hook”: alerts cannot be sent to loopback, link-local or "
        "private addresses unless the administrator allows them (ALERT_WEBHOOK_ALLOW_PRIVATE=1)."
    ]
    assert field_errors(chinese, "id_alert_webhooks") == [
        "“http://127.0.0.1:8819/hook”：告警不能发送到回环、链路本地或内网地址，除非管理员允许"
        "（ALERT_WEBHOOK_ALLOW_PRIVATE=1）。"
    ]


def test_a_name_pasted_twice_with_different_values_is_left_in_the_box_with_a_message(en_client):
    draft = draft_at(en_client, W.IMAGE)

    r = post_step(en_client, draft, W.IMAGE, image_data(env_paste="LR=1\nLR=2\nLR=1\nBS=8"))

    page = r.content.decode()
    assert r.status_code == 200
    assert any(
        "Pasted twice with different values: LR" in m for m in field_errors(r, "id_env_paste")
    )
    assert re.search(r'<textarea[^>]*name="env_paste"[^>]*>\s*LR=2</textarea>', page)
    assert 'value="LR"' in page and 'value="1"' in page and 'value="BS"' in page

    again = post_step(
        en_client, draft, W.IMAGE, image_data(envs=[("LR", "1"), ("BS", "8")], env_paste="LR=2")
    )

    assert again.status_code == 302
    draft.refresh_from_db()
    envs = [(e.name, e.value) for e in W.assemble(W.wizard_state(draft)).spec.envs]
    assert envs == [("LR", "2"), ("BS", "8")]


def test_pasted_lines_beyond_the_tables_fifty_rows_stay_in_the_box_with_a_message(en_client):
    draft = draft_at(en_client, W.IMAGE)
    paste = "\n".join(f"VAR_{i}={i}" for i in range(53))

    r = post_step(en_client, draft, W.IMAGE, image_data(envs=[("KEPT", "1")], env_paste=paste))

    page = r.content.decode()
    assert r.status_code == 200
    assert field_errors(r, "id_env_paste") == [
        "The table holds at most 50 variables, so these lines were not added: "
        "VAR_49, VAR_50, VAR_51, VAR_52. Delete rows you do not need, then go on again."
    ]
    assert re.search(
        r'<textarea[^>]*name="env_paste"[^>]*>\s*VAR_49=49\nVAR_50=50\nVAR_51=51\nVAR_52=52</textarea>',
        page,
    )
    assert 'value="KEPT"' in page and 'value="VAR_48"' in page and 'value="VAR_49"' not in page


def test_an_export_line_with_a_tab_after_export_becomes_a_row(en_client):
    draft = draft_at(en_client, W.IMAGE)

    r = post_step(en_client, draft, W.IMAGE, image_data(env_paste="export\tNCCL_DEBUG=INFO"))

    assert r.status_code == 302
    draft.refresh_from_db()
    envs = [(e.name, e.value) for e in W.assemble(W.wizard_state(draft)).spec.envs]
    assert envs == [("NCCL_DEBUG", "INFO")]


def test_a_non_breaking_space_copied_into_the_command_is_named_on_its_line(en_client):
    draft = draft_at(en_client, W.IMAGE)
    # As copied from a web page: it looks like "python3 -c ...", the shell reads "python3 -c".
    command = "cd /workspace\npython3\u00a0train.py --epochs 3"

    r = post_step(en_client, draft, W.IMAGE, image_data(command=command))

    assert r.status_code == 200
    assert field_errors(r, "id_command") == [
        "Line 2 has a non-breaking space (U+00A0), which the shell reads as part of a word, "
        "not as a space: type an ordinary space there, or delete it (text copied from a web "
        "page or document often brings one along)."
    ]
    assert "python3\u00a0train.py" in r.content.decode()  # kept as typed, to be fixed

    fixed = post_step(en_client, draft, W.IMAGE, image_data(command=command.replace("\u00a0", " ")))

    assert fixed.status_code == 302


def test_a_full_width_space_inside_chinese_text_of_the_command_is_left_alone(en_client):
    draft = draft_at(en_client, W.IMAGE)

    r = post_step(
        en_client, draft, W.IMAGE, image_data(command="python3 -c \"print('你好\u3000世界')\"")
    )

    assert r.status_code == 302


def test_alert_emails_typed_as_a_list_with_chinese_commas_become_one_address_each(en_client):
    draft = draft_at(en_client, W.ADVANCED)
    emails = "ops@example.com，ml@example.com；oncall@example.com、lead@example.com"

    r = post_step(
        en_client,
        draft,
        W.ADVANCED,
        advanced_data(alert_items=["jobFailed"], alert_emails=emails),
    )

    assert r.status_code == 302, field_errors(r, "id_alert_emails")
    draft.refresh_from_db()
    assert W.assemble(W.wizard_state(draft)).spec.alert.emails == [
        "ops@example.com",
        "ml@example.com",
        "oncall@example.com",
        "lead@example.com",
    ]


def test_a_too_long_env_name_gets_one_message_about_its_length(en_client):
    draft = draft_at(en_client, W.IMAGE)

    r = post_step(en_client, draft, W.IMAGE, image_data(envs=[("A" * 300, "x")]))

    messages = field_errors(r, "id_env-0-name")
    assert len(messages) == 1 and "at most 256 characters" in messages[0], messages


def test_a_huge_instance_count_gets_its_range_message_and_no_card_shortfall(en_client):
    draft = draft_at(en_client, W.SUBMISSION)
    huge = resources_data([role("master", 1), role("worker", "99999999999999999999", cards=1)])

    r = post_step(en_client, draft, W.RESOURCES, huge)

    page = r.content.decode()
    assert any("between 0 and 1000" in m for m in field_errors(r, "id_roles-1-replicas"))
    assert "99999999999999999999" not in page.replace('value="99999999999999999999"', "")
    assert "the local pool has" not in page  # no capacity figure made of the bad count


def test_an_unknown_pool_gets_one_message_on_the_pool_and_none_on_its_queue(en_client):
    draft = draft_at(en_client, W.BASIC)

    r = post_step(en_client, draft, W.BASIC, basic_data(resource_pool="elsewhere"))

    assert field_errors(r, "id_resource_pool")
    assert field_errors(r, "id_queue") == []


def test_an_empty_shared_memory_means_the_default_10gi(en_client):
    draft = draft_at(en_client, W.RESOURCES)

    r = post_step(en_client, draft, W.RESOURCES, resources_data(shared_memory_gi=""))

    assert r.status_code == 302
    draft.refresh_from_db()
    assert W.assemble(W.wizard_state(draft)).spec.shared_memory_gi == 10


def test_an_empty_job_timeout_means_the_default_30_days_as_shared_memory_does(en_client):
    # qa60: cleared, it said "This field is required." where shared memory took its default.
    draft = draft_at(en_client, W.ADVANCED)

    page = en_client.get(step_url(draft, W.ADVANCED)).content.decode()
    r = post_step(en_client, draft, W.ADVANCED, advanced_data(timeout_minutes=""))

    assert 'placeholder="43200"' in page
    assert r.status_code == 302, field_errors(r, "id_timeout_minutes")
    draft.refresh_from_db()
    spec = W.assemble(W.wizard_state(draft)).spec
    assert spec.timeout_minutes == S.DEFAULT_TIMEOUT_MINUTES == 30 * 24 * 60


def test_the_job_name_is_marked_required_and_an_empty_one_gets_one_message(en_client):
    draft = draft_at(en_client, W.BASIC)

    page = en_client.get(step_url(draft, W.BASIC)).content.decode()
    r = post_step(en_client, draft, W.BASIC, basic_data(name=""))

    assert re.search(
        r'for="id_name" class="form-label requiredField">[^<]*<span class="asteriskField">', page
    )
    assert field_errors(r, "id_name") == ["Enter a job name."]


def test_a_value_the_form_refuses_gets_the_forms_message_only(en_client):
    draft = draft_at(en_client, W.DATA)

    r = post_step(en_client, draft, W.DATA, data_data([("hostpath", "scratch", "/a\x00b")]))

    assert field_errors(r, "id_mounts-0-mount_path") == ["Null characters are not allowed."]
    # Saved without the NUL, which PostgreSQL's JSON cannot hold (make test-postgres).
    draft.refresh_from_db()
    assert draft.data[W.DATA]["mounts-0-mount_path"] == ["/ab"]


def test_a_registry_password_sent_without_a_username_can_be_cleared(en_client):
    draft = draft_at(en_client, W.IMAGE)

    refused = post_step(en_client, draft, W.IMAGE, image_data(registry_password="hunter22"))
    cleared = post_step(en_client, draft, W.IMAGE, image_data(registry_password=""))

    assert refused.status_code == 200
    assert cleared.status_code == 302
    draft.refresh_from_db()
    assert W.assemble(W.wizard_state(draft)).spec.image_config is None


def test_a_refused_role_cell_gets_its_message_and_no_judgement_of_the_table_without_it(en_client):
    draft = draft_at(en_client, W.RESOURCES)
    roles = [role("master", "", cards=1), role("worker", 2, cards="1.5")]

    r = post_step(en_client, draft, W.RESOURCES, resources_data(roles))

    page = r.content.decode()
    assert r.status_code == 200
    assert field_errors(r, "id_roles-0-replicas") == ["This field is required."]
    assert field_errors(r, "id_roles-1-accelerators") == ["Enter a whole number."]
    # Two problems, both the cells': no table-wide one built on the refused cells.
    assert "This step has 2 problems" in page and "must match" not in page


def test_a_masters_refused_card_count_gets_no_second_message_on_the_worker(en_client):
    # Found (qa82): the worker also read "Master and worker must use the same card type and
    # cards per instance.", sending the user to the row that was right.
    draft = draft_at(en_client, W.RESOURCES)
    roles = [role("master", 1, cards=0), role("worker", 1, cards=1)]

    r = post_step(en_client, draft, W.RESOURCES, resources_data(roles))

    assert field_errors(r, "id_roles-0-accelerators") == [
        "Cards per replica must be between 1 and 64."
    ]
    assert field_errors(r, "id_roles-1-accelerators") == []
    assert "This step has 1 problem" in r.content.decode()


def test_pytorchs_one_master_is_said_beside_another_rows_count_out_of_range(en_client):
    draft = draft_at(en_client, W.RESOURCES)
    roles = [role("master", 2), role("worker", -1)]

    r = post_step(en_client, draft, W.RESOURCES, resources_data(roles))

    assert field_errors(r, "id_roles-0-replicas") == ["PyTorch needs exactly 1 master."]
    assert field_errors(r, "id_roles-1-replicas") == [
        "A role's replicas must be between 0 and 1000."
    ]


def test_pytorchs_one_master_is_said_in_the_same_round_as_a_refused_cell(en_client):
    # Found (qa82): with master 2 and cells the form refused, the first 下一步 listed the
    # others, and "needs exactly 1 master" came only once they were fixed.
    draft = draft_at(en_client, W.RESOURCES)
    roles = [role("master", 2, cpu="2.5"), role("worker", -1, memory_gb="lots", cards=2)]

    r = post_step(en_client, draft, W.RESOURCES, resources_data(roles))

    assert field_errors(r, "id_roles-0-replicas") == ["PyTorch needs exactly 1 master."]
    assert field_errors(r, "id_roles-0-cpu") == ["Enter a whole number."]
    assert field_errors(r, "id_roles-1-replicas") == [
        "A role's replicas must be between 0 and 1000."
    ]
    assert field_errors(r, "id_roles-1-memory_gb") == ["Enter a whole number."]
    # Still nothing judged across the rows (the worker's 2 cards against the master's 1).
    assert field_errors(r, "id_roles-1-accelerators") == []
    assert "This step has 4 problems" in r.content.decode()


def test_djangos_null_character_message_reads_right_in_chinese(alice_client):
    draft = draft_at(alice_client, W.DATA)

    r = post_step(alice_client, draft, W.DATA, data_data([("hostpath", "scratch", "/a\x00b")]))

    assert field_errors(r, "id_mounts-0-mount_path") == ["不能包含空字符（NUL）。"]


def retry_help(client) -> str:
    draft = draft_at(client, W.FAULT)
    r = client.get(step_url(draft, W.FAULT))
    assert r.status_code == 200
    found = re.search(r'id="id_retry_limit_helptext"[^>]*>([^<]*)<', r.content.decode())
    assert found, "no help under 无条件重试"
    return found.group(1)


def test_the_unconditional_retries_help_says_what_an_empty_value_means(en_client):
    # Found (QA 44): it said "at most 3", not that empty is 3 where the console decides.
    assert retry_help(en_client) == (
        "Restarts after a failure of any cause, a detected hang included (unconditional: no "
        "node fault need be detected); at most 3. Left empty: 3 on the local and Kubernetes "
        "pools; an AIHC pool is sent no value and uses its own default."
    )


def test_the_unconditional_retries_help_says_so_in_chinese_too(alice_client):
    assert "留空" in retry_help(alice_client) and "3 次" in retry_help(alice_client)


def fault_step_page(client) -> str:
    draft = draft_at(client, W.FAULT)
    r = client.get(step_url(draft, W.FAULT))
    assert r.status_code == 200
    return r.content.decode()


def help_of(page: str, field: str) -> str:
    found = re.search(rf'id="id_{field}_helptext"[^>]*>([^<]*)<', page)
    assert found, f"no help under {field}"
    # Up to the help's own end: a 详见帮助 link may follow it, after a space in English.
    return html.unescape(found.group(1)).rstrip()


def test_the_hang_threshold_starts_at_aihcs_example_of_7_minutes(alice_client):
    # qa109: turned on, hang detection's threshold was empty, with no default or example.
    page = fault_step_page(alice_client)

    [field] = re.findall(r'<input[^>]*name="hang_minutes"[^>]*>', page)
    assert 'value="7"' in field


def test_a_cleared_hang_threshold_is_refused_as_the_api_refuses_none(alice_client):
    draft = draft_at(alice_client, W.FAULT)

    r = post_step(alice_client, draft, W.FAULT, {"hang_detection": "on", "hang_minutes": ""})

    assert field_errors(r, "id_hang_minutes") == [
        "hang 检测阈值须在 1 到 525600 分钟（365 天）之间。"
    ]


def test_hang_detection_and_fault_tolerance_say_what_a_hang_does_with_and_without_it(
    alice_client, en_client
):
    # qa109: a hung job with fault tolerance on was only warned about; now it is restarted.
    chinese, english = fault_step_page(alice_client), fault_step_page(en_client)

    assert help_of(english, "hang_detection").startswith(
        "When the logs of all replicas stay silent for the threshold, the job is judged hung "
        "and a hang event is recorded. With fault tolerance on (below), a hung job is then "
        "restarted as a failed one is, each restart one of its unconditional retries, and "
        "fails once they are used up, freeing its cards; without it, the job keeps running, "
        "holding its cards, until it writes again, ends or reaches its time limit."
    )
    assert help_of(chinese, "hang_detection").startswith(
        "所有实例的日志在设定时间内都没有更新，则判定任务处于 hang 状态，并在任务事件中记录。"
        "开启下方的容错时，hang 的任务随后会像失败的任务一样被重启，每次重启计入无条件重试次数，"
        "次数用完后任务失败并释放其占用的卡；未开启容错时，任务继续运行并占用其卡，直到日志恢复"
        "输出、任务结束或达到任务超时时间。"
    )
    assert help_of(english, "fault_tolerance") == (
        "Restarts the job on detected faults, a hang found by hang detection (above) among "
        "them (PyTorch only)."
    )
    assert help_of(chinese, "fault_tolerance") == (
        "检测到故障时自动重启任务，包括任务hang检测（上方）判定的 hang（仅支持 PyTorch）。"
    )


def test_hang_detection_off_stores_no_threshold_nor_start_up_toleration(alice_client):
    draft = draft_at(alice_client, W.FAULT)

    r = post_step(
        alice_client,
        draft,
        W.FAULT,
        {"hang_minutes": "30", "hang_startup_minutes": "20", "fault_tolerance": "on"},
    )

    assert r.status_code == 302
    draft.refresh_from_db()
    ftc = W.assemble(W.wizard_state(draft)).spec.fault_tolerance_config
    assert ftc.enabled_hang_detection is False
    assert ftc.hang_detection_timeout_minutes is None
    assert ftc.hang_detection_startup_toleration_minutes is None


def test_the_start_up_toleration_typed_is_stored_and_sent_as_aihcs_field(alice_client):
    draft = draft_at(alice_client, W.FAULT)

    r = post_step(
        alice_client,
        draft,
        W.FAULT,
        {"hang_detection": "on", "hang_minutes": "7", "hang_startup_minutes": "20"},
    )

    assert r.status_code == 302
    draft.refresh_from_db()
    spec = W.assemble(W.wizard_state(draft)).spec
    assert spec.fault_tolerance_config.hang_detection_startup_toleration_minutes == 20
    assert spec.to_v1_body()["faultToleranceConfig"] == {
        "enabledHangDetection": True,
        "hangDetectionTimeoutMinutes": 7,
        "hangDetectionStartupTolerationMinutes": 20,
    }


@pytest.mark.parametrize("typed", ["-1", "525601"])
def test_the_start_up_toleration_left_empty_says_15_and_one_out_of_range_either_way_says_the_range(
    alice_client, en_client, typed
):
    # qa115: a negative one said Django's "确保该值大于或等于0。", a too large one the range.
    chinese, english = fault_step_page(alice_client), fault_step_page(en_client)
    data = {"hang_detection": "on", "hang_minutes": "7", "hang_startup_minutes": typed}

    refused_en = post_step(en_client, draft_at(en_client, W.FAULT), W.FAULT, data)
    refused_zh = post_step(alice_client, draft_at(alice_client, W.FAULT), W.FAULT, data)

    # With its unit (qa113: "留空时：15。").
    assert help_of(english, "hang_startup_minutes").endswith("Left empty: 15 minutes.")
    assert help_of(chinese, "hang_startup_minutes").endswith("留空时为 15 分钟。")
    assert field_errors(refused_en, "id_hang_startup_minutes") == [
        "The start-up toleration must be between 0 and 525,600 minutes (365 days)."
    ]
    assert field_errors(refused_zh, "id_hang_startup_minutes") == [
        "启动容忍时间须在 0 到 525600 分钟（365 天）之间。"
    ]


def test_the_hang_threshold_says_what_it_counts_and_its_range_in_help_tied_to_its_field(
    alice_client, en_client
):
    # qa115: it had no help.
    chinese, english = fault_step_page(alice_client), fault_step_page(en_client)

    assert help_of(english, "hang_minutes") == (
        "How long the logs of all replicas must stay silent for the job to count as hung: "
        "from 1 to 525,600 minutes (365 days)."
    )
    assert help_of(chinese, "hang_minutes") == (
        "所有实例的日志持续无输出达到该时长，任务即判定为 hang：1 到 525600 分钟（365 天）。"
    )
    [field] = re.findall(r'<input[^>]*name="hang_minutes"[^>]*>', chinese)
    assert 'aria-describedby="id_hang_minutes_helptext"' in field


def plain_spec(**changes) -> S.JobSpec:
    spec = S.JobSpec(
        name="plain",
        resource_pool_id="local",
        image="python:3.12",
        command="python train.py",
        roles=[S.Role("master", 1)],
    )
    for key, value in changes.items():
        setattr(spec, key, value)
    return spec


@pytest.mark.django_db
def test_a_threshold_stored_with_hang_detection_off_opens_as_stored_not_as_7():
    # review59: a job made through the API with hang detection off but a threshold of 15
    # opened (copied or imported) with 7 in the hidden threshold field.
    stored = plain_spec(fault_tolerance=True)
    stored.fault_tolerance_config = S.FaultToleranceConfig(False, 15)
    new = plain_spec(fault_tolerance=True)
    new.fault_tolerance_config = S.FaultToleranceConfig(False, None)

    assert W.raw_from_spec(stored)[W.FAULT]["hang_minutes"] == ["15"]
    assert W.raw_from_spec(new)[W.FAULT]["hang_minutes"] == ["7"]


def test_the_review_says_the_hang_threshold_with_its_start_up_toleration_asked_or_given():
    from django.utils import translation

    from jobs.summary import spec_sections

    given = plain_spec()
    given.fault_tolerance_config = S.FaultToleranceConfig(True, 7)
    asked = plain_spec()
    asked.fault_tolerance_config = S.FaultToleranceConfig(
        True, 7, hang_detection_startup_toleration_minutes=20
    )

    def hang_row(spec) -> str:
        rows = [row for _, section in spec_sections(spec) for row in section]
        return dict(rows)[translation.gettext("Hang detection")]

    assert hang_row(given) == "7 分钟，启动容忍时间 15 分钟"
    with translation.override("en"):
        assert hang_row(asked) == "7 min, start-up toleration 20 min"
