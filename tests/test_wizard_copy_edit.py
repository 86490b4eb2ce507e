"""A bilingual copy-editor's second pass over the wizard's screens (qa92): each text as the
page says it, in both languages where the Chinese was wrong."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from jobs import spec as S
from jobs import wizard as W
from jobs.models import CardQuota
from tests.test_quotas import running_job
from tests.test_wizard import (
    A800,
    HTMX,
    _local_pool,  # noqa: F401 (autouse fixture)
    basic_data,
    complete_steps,
    field_errors,
    new_draft,
    post_step,
    resources_data,
    role,
    step_url,
    submission_data,
)
from tests.test_wizard_copies import copy_of, copy_section, submitted_job

PO = Path(__file__).resolve().parent.parent / "jobs/locale/zh_Hans/LC_MESSAGES/django.po"


def read(page: str) -> str:
    """The text as it reads: tags gone without a space of their own (a space shown between
    two tags is the page's), runs of white space one space."""
    page = re.sub(r"<script.*?</script>", "", page, flags=re.S)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", page)).split())


def get(client: Client, url: str, language: str, **params) -> str:
    client.cookies["django_language"] = language
    return client.get(url, params).content.decode()


def by_id(page: str, element_id: str) -> str:
    found = re.search(rf'<(\w+)[^>]*id="{element_id}"[^>]*>(.*?)</\1>', page, re.S)
    assert found, element_id
    return read(found[2])


# -- W1: TensorBoard ---------------------------------------------------------------------


def test_chinese_spells_tensorboard_as_english_does_in_every_message():
    translations = PO.read_text().split("msgstr", 1)[1]
    assert "Tensorboard" not in translations


def test_the_advanced_steps_tensorboard_switch_and_path_read_tensorboard_in_chinese(
    alice_client,
):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.ADVANCED)

    page = read(get(alice_client, step_url(draft, W.ADVANCED), "zh-hans"))

    assert "TensorBoard 日志路径" in page and "Tensorboard" not in page


# -- W2: no space after a Chinese colon or before a Chinese bracket ----------------------


def test_the_resources_steps_totals_and_stock_have_no_space_after_the_colon_in_chinese(
    alice_client,
):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.RESOURCES)
    cpu_only = resources_data([role("master", 1, card=""), role("worker", 1, card="")])
    assert post_step(alice_client, draft, W.RESOURCES, cpu_only).status_code == 302

    chinese = get(alice_client, step_url(draft, W.RESOURCES), "zh-hans")
    english = get(alice_client, step_url(draft, W.RESOURCES), "en")

    assert (
        by_id(chinese, "card-totals") == "加速芯片总数（实例数 × 每实例加速芯片数）：无（仅 CPU）"
    )
    assert by_id(chinese, "pool-stock").startswith(f"资源池：A800 80GB ({A800}) ")
    assert by_id(english, "card-totals") == (
        "Cards in total (replicas × cards per replica): none (CPU only)"
    )
    assert by_id(english, "pool-stock").startswith(f"Pool: A800 80GB ({A800}) ")


def test_the_quota_line_has_no_space_after_a_chinese_colon_or_comma(alice):
    CardQuota.objects.create(user=alice, card_type=A800, max_cards=4, max_running_jobs=2)
    client = Client()
    client.force_login(alice)
    draft = new_draft(client)
    complete_steps(client, draft, upto=W.RESOURCES)

    chinese = by_id(get(client, step_url(draft, W.RESOURCES), "zh-hans"), "quota-line")
    english = by_id(get(client, step_url(draft, W.RESOURCES), "en"), "quota-line")

    assert (
        chinese
        == f"您在此资源池的配额：{S.card_shown(A800)}：运行中的任务占用 0 / 4 张，运行中任务 0 / 2 个"
    )
    assert english == (
        f"Your quota in this pool: {S.card_shown(A800)}: your running jobs hold 0 of 4 cards, 0 of 2 running jobs"
    )


def test_a_roles_idle_count_and_what_it_asks_for_have_no_space_between_in_chinese(alice_client):
    draft = new_draft(alice_client)
    query = {
        "row": "0",
        "roles-0-use_accelerator": "on",
        "roles-0-accelerator_type": A800,
        "roles-0-accelerators": "8",
        "roles-0-replicas": "2",
    }
    url = reverse("wizard-idle", args=[draft.id])

    def count(language: str) -> str:
        alice_client.cookies["django_language"] = language
        answer = alice_client.get(url, query, headers=HTMX).content.decode()
        return read(answer.split('id="pool-stock"')[0].split("<p")[0])

    assert count("zh-hans").startswith("空闲 8 张卡（该角色需要 16 张）")
    assert count("en").startswith("8 cards idle (this role asks for 16)")


# -- W3, W10, W12: the AIAK preview ---------------------------------------------------------


def aiak_preview(client: Client, language: str, template: str = "llama2-7b") -> str:
    draft = new_draft(client)
    return get(
        client,
        reverse("wizard-aiak", args=[draft.id]),
        language,
        creation_mode=S.CREATION_AIAK,
        training_mode="SFT",
        training_method="full",
        aiak_template=template,
        resource_pool="local",
    )


def test_the_aiak_preview_brackets_its_notes_and_lists_the_variables_in_the_readers_language(
    alice_client,
):
    chinese = read(aiak_preview(alice_client, "zh-hans"))
    english = read(aiak_preview(alice_client, "en"))

    assert "（不可修改）" in chinese and "(不可修改)" not in chinese
    assert "CUDA_DEVICE_MAX_CONNECTIONS=1、" in chinese
    assert re.search(r"=\d+（默认值，不建议修改）", chinese), chinese
    assert re.search(r"\S \(fixed\)", english) and "CUDA_DEVICE_MAX_CONNECTIONS=1, " in english
    assert re.search(r"=\d+ \(defaults; changing them is not recommended\)", english), english


def test_the_aiak_preview_counts_one_replica_in_the_singular(alice_client):
    english = read(aiak_preview(alice_client, "en", "llama2-7b"))
    two = read(aiak_preview(alice_client, "en", "llama2-13b"))

    assert f"1 replica × 8 A800 80GB ({A800}), RDMA on" in english
    assert f"2 replicas × 8 A800 80GB ({A800}), RDMA on" in two


def test_the_aiak_preview_asks_in_chinese_for_the_path_lines_by_name(alice_client):
    chinese = read(aiak_preview(alice_client, "zh-hans"))

    assert (
        "请在下一步将 DATA_PATH、CHECKPOINT_LOAD_PATH、CHECKPOINT_SAVE_PATH、TOKENIZER_PATH、"
        "TENSORBOARD_PATH 替换为您自己的路径。"
    ) in chinese


# -- W13: no template fits the pool ---------------------------------------------------------


def test_a_pool_no_template_fits_says_to_choose_another_pool_not_a_smaller_template(
    alice_client, settings
):
    settings.LOCAL_ACCELERATORS = f"{A800}=4"

    english = by_id(aiak_preview(alice_client, "en"), "aiak-misfit")
    chinese = by_id(aiak_preview(alice_client, "zh-hans"), "aiak-misfit")

    assert english == (
        f"This pool has 4 A800 80GB ({A800}) cards in all; the template asks for 8, and no AIAK template "
        "fits in this pool. Choose another pool."
    )
    assert chinese == (
        f"该资源池共有 4 张 A800 80GB ({A800}) 卡，而此模版需要 8 张，且没有任何 AIAK 模版能放进该资源池。"
        "请选择其他资源池。"
    )
    settings.LOCAL_ACCELERATORS = f"{A800}=8"  # llama2-7b fits: a smaller template is the way
    smaller = by_id(aiak_preview(alice_client, "en", "llama2-13b"), "aiak-misfit")
    assert smaller == (
        f"This pool has 8 A800 80GB ({A800}) cards in all; the template asks for 16. Choose a smaller "
        "template or another pool."
    )


def test_staff_are_told_of_local_accelerators_when_no_template_fits_the_local_pool(db, settings):
    settings.LOCAL_ACCELERATORS = f"{A800}=4"
    staff = User.objects.create_user("sam", "sam@example.com", "sam-password", is_staff=True)
    client = Client()
    client.force_login(staff)

    misfit = by_id(aiak_preview(client, "en"), "aiak-misfit")

    assert misfit.endswith(
        "Choose another pool. As staff, you can give the local pool more cards with the "
        "LOCAL_ACCELERATORS setting (README, “Running jobs on this machine”)."
    )


# -- W4, W5, W8: the submission step --------------------------------------------------------


def test_the_submission_step_says_a_shortfall_once_with_the_right_plural(alice, alice_en, settings):
    settings.LOCAL_ACCELERATORS = f"{A800}=1"
    running_job(alice, {A800: [0]})  # the pool's one card is taken
    draft = new_draft(alice_en)
    complete_steps(alice_en, draft, upto=W.SUBMISSION, **{W.RESOURCES: one_card_role()})

    shown = read(alice_en.get(step_url(draft, W.SUBMISSION)).content.decode())
    sent = post_step(alice_en, draft, W.SUBMISSION, submission_data())
    refused = read(sent.content.decode())

    assert (
        f"The job asks for 1 A800 80GB ({A800}) card; 0 idle now. A standalone job cannot be submitted; "
        "a queue task waits until it is free."
    ) in shown
    # Sent as a standalone job, the mode's own error says it: the note would say it twice.
    assert field_errors(sent, "id_mode"), refused
    assert "The job asks for" not in refused


def one_card_role():
    return resources_data([role("master", 1, cards=1)])


def test_the_submission_help_says_what_a_standalone_job_is_first(alice_client):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.SUBMISSION)

    english = read(get(alice_client, step_url(draft, W.SUBMISSION), "en"))
    chinese = read(get(alice_client, step_url(draft, W.SUBMISSION), "zh-hans"))

    assert "Standalone job: one job, started as soon as resources are free." in english
    assert "独立任务：创建 1 个任务，不进入队列，有资源即开始运行；" in chinese


@pytest.mark.parametrize(
    "language, message",
    [
        ("en", "Max concurrent tasks can't be more than the tasks in the group (2)."),
        ("zh-hans", "组内并发任务上限不能超过组内任务总数（2）。"),
    ],
)
def test_too_many_concurrent_tasks_names_the_tasks_in_the_group_on_its_field(
    alice_client, language, message
):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.SUBMISSION)
    alice_client.cookies["django_language"] = language

    sent = post_step(
        alice_client, draft, W.SUBMISSION, submission_data(mode="queue", total="2", concurrency="3")
    )

    assert field_errors(sent, "id_concurrency") == [message]


def test_concurrent_tasks_are_held_to_the_group_only_once_its_tasks_are_a_valid_count(
    alice_client,
):
    # qa101: total 0, concurrency 9 said "Concurrent tasks must be between 1 and 1, the tasks
    # in the group." on a field labelled "Max concurrent tasks".
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.SUBMISSION)
    alice_client.cookies["django_language"] = "en"

    sent = post_step(
        alice_client, draft, W.SUBMISSION, submission_data(mode="queue", total="0", concurrency="9")
    )
    none = post_step(
        alice_client, draft, W.SUBMISSION, submission_data(mode="queue", total="2", concurrency="0")
    )

    assert field_errors(sent, "id_total")
    assert field_errors(sent, "id_concurrency") == []
    assert field_errors(none, "id_concurrency") == ["Max concurrent tasks must be at least 1."]


# -- W6, W7: the resources step -------------------------------------------------------------


@pytest.mark.parametrize("framework", [S.PYTORCH, S.MPI])
def test_the_resources_hint_counts_the_chinese_master_in_replicas(alice_client, framework):
    draft = new_draft(alice_client)
    complete_steps(
        alice_client, draft, upto=W.RESOURCES, **{W.BASIC: basic_data(framework=framework)}
    )

    chinese = read(get(alice_client, step_url(draft, W.RESOURCES), "zh-hans"))

    assert "master 固定 1 个实例" in chinese and "固定 1 台" not in chinese


def test_the_roles_card_switch_is_named_use_cards_in_english_and_加速芯片_in_chinese(
    alice_client,
):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.RESOURCES)

    english = get(alice_client, step_url(draft, W.RESOURCES), "en")
    chinese = get(alice_client, step_url(draft, W.RESOURCES), "zh-hans")

    english_heads = [read(h) for h in re.findall(r"<th[^>]*>(.*?)</th>", english, re.S)]
    assert "Use cards" in english_heads and "Accelerators" not in english_heads
    assert re.search(
        r'<label class="row-label" for="id_roles-0-use_accelerator"[^>]*>Use cards<', english
    )
    assert re.search(
        r'<label class="row-label" for="id_roles-0-use_accelerator"[^>]*>加速芯片<', chinese
    )


# -- W9: the copy's diff ----------------------------------------------------------------------


def test_a_copys_diff_names_a_field_named_as_its_step_once(alice_client):
    job = submitted_job(alice_client)
    draft = copy_of(alice_client, job)
    post_step(
        alice_client, draft, W.SUBMISSION, submission_data(mode="queue", total="2", concurrency="1")
    )

    chinese = copy_section(get(alice_client, step_url(draft, W.REVIEW), "zh-hans"))
    english = copy_section(get(alice_client, step_url(draft, W.REVIEW), "en"))

    chinese_fields = [read(f) for f in re.findall(r'class="diff-field">(.*?)</td>', chinese)]
    english_fields = [read(f) for f in re.findall(r'class="diff-field">(.*?)</td>', english)]
    assert "投递方式" in chinese_fields and "投递方式 · 投递方式" not in chinese_fields
    assert "Submission" in english_fields, english_fields
    assert "Submission · Submission" not in english_fields


# -- W11: the examples ------------------------------------------------------------------------


def test_the_examples_comments_say_replica_not_instance():
    for example in W.example_commands():
        comments = [line for line in example["command"].splitlines() if "#" in line]
        assert not [c for c in comments if re.search(r"\binstances?\b", c)], example["id"]


# -- W14: the injected variables ----------------------------------------------------------


def test_the_injected_variables_meanings_are_whole_sentences(alice_client):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.IMAGE)

    english = by_id(get(alice_client, step_url(draft, W.IMAGE), "en"), "injected-vars")
    chinese = by_id(get(alice_client, step_url(draft, W.IMAGE), "zh-hans"), "injected-vars")

    assert "which sets each process's own RANK and WORLD_SIZE" in english
    assert "AIHC_TENSORBOARD_LOG_PATHthe TensorBoard log path (when TensorBoard is on)" in english
    assert "它为每个进程设置各自的 RANK 和 WORLD_SIZE" in chinese
    assert "AIHC_TENSORBOARD_LOG_PATHTensorBoard 日志路径（开启 TensorBoard 时）" in chinese


# -- W15: the drafts import -----------------------------------------------------------------


def test_the_import_help_names_the_confirm_step(alice_client):
    english = read(get(alice_client, reverse("wizard-start"), "en"))

    assert "such as the one the Confirm step shows" in english
    assert "a review step" not in english


# -- W3: the local pool named once ------------------------------------------------------------


def test_the_confirm_step_and_the_import_name_the_local_pool_once(alice_client):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft)

    review = read(get(alice_client, step_url(draft, W.REVIEW), "zh-hans"))
    start = get(alice_client, reverse("wizard-start"), "en")

    assert "资源池本机 Local队列" in review and "(local)" not in review
    assert '<option value="local">本机 Local</option>' in start
