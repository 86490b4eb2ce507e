"""The comments of what the wizard fills into a command are in the page's language (qa109, a
Chinese-speaking AIHC team): an AIAK template's two comment lines and every 查看示例 example's
comments read Chinese on a Chinese page, English on an English one; the code is the same."""

from __future__ import annotations

import re

from django.utils import translation

from jobs import wizard as W
from tests.test_wizard import (
    _local_pool,  # noqa: F401 (autouse fixture)
    basic_data,
    complete_steps,
    image_data,
    new_draft,
    post_step,
    step_url,
)
from tests.test_wizard_aiak import command_field

QWEN_SFT_LORA = basic_data(
    creation_mode="aiak", training_mode="SFT", training_method="lora", aiak_template="qwen1.5-7b"
)
CJK = re.compile(r"[\u4e00-\u9fff]")


def code_of(command: str) -> list[str]:
    """Its lines without comments: comment lines left out, a comment after code cut off."""
    return [
        re.sub(r"\s+#\s.*$", "", line)
        for line in command.splitlines()
        if not line.lstrip().startswith("#")
    ]


def filled_command(client, basic) -> str:
    draft = new_draft(client)
    post_step(client, draft, W.BASIC, basic)
    return command_field(client.get(step_url(draft, W.IMAGE)).content.decode())


def test_an_aiak_template_fills_its_comments_in_chinese_on_a_chinese_page(alice_client):
    command = filled_command(alice_client, QWEN_SFT_LORA)

    assert command.splitlines()[:2] == [
        "# AIAK-Training-LLM qwen1.5-7b SFT（LoRA）",
        "# 请将 $USER_... 路径及 $TENSORBOARD_PATH 替换成您自定义的路径。",
    ]
    english = W.aiak_templates()["qwen1.5-7b"]["commands"]["SFT"]["lora"]
    assert code_of(command) == code_of(english)


def test_an_aiak_template_fills_its_comments_in_english_on_an_english_page(alice_en):
    command = filled_command(alice_en, {**QWEN_SFT_LORA, "training_method": "full"})

    assert command.splitlines()[:2] == [
        "# AIAK-Training-LLM qwen1.5-7b SFT (full)",
        "# Replace the $USER_... paths and $TENSORBOARD_PATH with your own paths.",
    ]


def test_a_template_filled_in_chinese_then_changed_on_an_english_page_is_refilled_unsaid(
    alice_client,
):
    draft = new_draft(alice_client)
    post_step(alice_client, draft, W.BASIC, QWEN_SFT_LORA)
    filled = command_field(alice_client.get(step_url(draft, W.IMAGE)).content.decode())
    template = W.aiak_templates()["qwen1.5-7b"]
    envs = [(e["name"], e["value"]) for e in template["envs"]]
    kept = image_data(envs=envs, image=template["image"], command=filled)
    post_step(alice_client, draft, W.IMAGE, kept, action="back")  # saved as filled, in Chinese
    draft.refresh_from_db()
    assert draft.data[W.IMAGE]["command"][0].startswith("# AIAK-Training-LLM qwen1.5-7b SFT（")
    alice_client.cookies["django_language"] = "en"

    post_step(alice_client, draft, W.BASIC, {**QWEN_SFT_LORA, "aiak_template": "llama2-7b"})
    page = alice_client.get(step_url(draft, W.IMAGE)).content.decode()

    assert 'id="aiak-refill"' not in page  # nothing of the engineer's was replaced
    assert command_field(page).startswith("# AIAK-Training-LLM llama2-7b SFT (LoRA)\n")


def test_every_examples_chinese_command_is_its_command_with_its_comments_in_chinese():
    for example in W.example_commands():
        english = example["command"]
        chinese = example.get("commandZh", english)
        comments = [line for line in chinese.splitlines() if "#" in line]

        assert code_of(chinese) == code_of(english), example["id"]
        assert all(CJK.search(line) for line in comments), example["id"]
        assert ("#" in english) == ("commandZh" in example), example["id"]


def test_the_example_shown_and_filled_in_on_a_chinese_page_is_commented_in_chinese(alice_client):
    tensorflow = next(e for e in W.example_commands() if e["id"] == "TFJob")
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.IMAGE, **{W.BASIC: basic_data(framework="TFJob")})

    shown = alice_client.get(step_url(draft, W.IMAGE) + "?example=TFJob").content.decode()
    post_step(alice_client, draft, W.IMAGE, image_data(), action="fill-example-TFJob")

    assert "# TF_CONFIG 中是集群及本副本的任务" in shown
    assert "# TF_CONFIG holds" not in shown
    draft.refresh_from_db()
    assert draft.data[W.IMAGE]["command"] == [tensorflow["commandZh"]]


def test_the_example_is_commented_in_english_on_an_english_page(alice_en):
    draft = new_draft(alice_en)
    complete_steps(alice_en, draft, upto=W.IMAGE, **{W.BASIC: basic_data(framework="TFJob")})

    shown = alice_en.get(step_url(draft, W.IMAGE) + "?example=TFJob").content.decode()

    assert "# TF_CONFIG holds the cluster" in shown


def test_template_command_follows_the_active_language():
    template = W.aiak_templates()["qwen1.5-7b"]
    with translation.override("en"):
        english = W.template_command(template, "SFT", "full")
    with translation.override("zh-hans"):
        chinese = W.template_command(template, "SFT", "full")

    assert english.startswith("# AIAK-Training-LLM qwen1.5-7b SFT (full)\n# Replace the")
    assert chinese.startswith("# AIAK-Training-LLM qwen1.5-7b SFT（全量更新）\n# 请将")
    assert W.template_commands(template, "SFT", "full") == {english, chinese}
