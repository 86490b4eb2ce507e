"""Django's own words the console says otherwise in Chinese (jobs/django_terms.py), as the
pages show them."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.test import Client

from jobs import spec as S
from jobs.models import CardQuota
from jobs.services import jobs_submit


def test_the_admin_index_reads_its_table_headers_in_natural_chinese(superuser):
    """The index's screen-reader-only headers were Django's 型号名称 / 增加连接 / 更改或查看清单连接
    ("Model name", "Add link", "Change or view list link"): a product model's name and a
    network connection, read aloud before every app's table."""
    client = Client()
    client.force_login(superuser)
    client.cookies["django_language"] = "zh-hans"

    page = client.get("/admin/").content.decode()

    headers = re.findall(r'<th scope="col">([^<]*)</th>', page)
    assert headers and headers.count("名称") == headers.count("新增") == len(headers) // 3
    assert headers.count("修改或查看列表") == len(headers) // 3
    for machine_like in ("型号名称", "增加连接", "更改或查看清单连接"):
        assert machine_like not in page


# -- the rest of the admin's words (ADMIN_TERMS, templates/admin/pagination.html; fix90a) --

A800 = "baidu.com/a800_80g_cgpu"


@pytest.fixture(autouse=True)
def _local_cards(settings):
    settings.LOCAL_ACCELERATORS = f"{A800}=64"


def submit(owner: User, key: str) -> None:
    spec = S.JobSpec(
        name="demo",
        resource_pool_id="local",
        image="python:3.12",
        command="python train.py",
        roles=[S.Role("master", 1, A800, 1)],
    )
    jobs_submit(owner=owner, spec=spec, submit_key=key)


def page(user: User, path: str, language: str) -> str:
    client = Client()
    client.force_login(user)
    client.cookies["django_language"] = language
    response = client.get(path)
    assert response.status_code == 200, response.status_code
    return re.sub(r"\s+", " ", response.content.decode())


def test_the_chinese_job_list_filters_by_status_with_按_and_counts_jobs_with_个(alice, superuser):
    for key in ("a", "b", "c"):
        submit(alice, key)

    html = page(superuser, "/admin/jobs/job/", "zh-hans")

    assert "<summary> 按状态 </summary>" in html
    assert "<summary> 按创建人 </summary>" in html
    assert "以 " not in html
    assert "3 个训练任务 </nav>" in html
    assert "<label>批量操作 <select" in html and ">执行</button>" in html


def test_a_chinese_count_sets_a_latin_name_apart_and_says_no_jobs_as_0_个(superuser):
    assert "0 个 API 访问密钥 </nav>" in page(superuser, "/admin/jobs/apikey/", "zh-hans")
    assert "0 个日志记录 </nav>" in page(superuser, "/admin/admin/logentry/", "zh-hans")


def test_the_chinese_admin_index_says_recent_operations_and_none_yet(superuser):
    html = page(superuser, "/admin/", "zh-hans")

    assert "最近操作" in html and "我的操作" in html and "暂无" in html
    assert "动作" not in html and "无可选的" not in html


def test_the_chinese_delete_page_asks_with_您_and_chinese_quotes(alice, superuser):
    quota = CardQuota.objects.create(user=alice, card_type=A800, max_cards=8)

    html = page(superuser, f"/admin/jobs/cardquota/{quota.pk}/delete/", "zh-hans")

    assert f"确定要删除卡配额“alice: {A800}”吗？以下所有相关的项目都将被删除：" in html
    assert "你" not in html


def test_the_english_admin_job_list_is_djangos(alice, superuser):
    for key in ("a", "b", "c"):
        submit(alice, key)

    html = page(superuser, "/admin/jobs/job/", "en")

    assert "<summary> By status </summary>" in html
    assert "3 jobs </nav>" in html
    assert "<label>Action: <select" in html and ">Run</button>" in html
    assert "0 API access keys </nav>" in page(superuser, "/admin/jobs/apikey/", "en")


def test_setting_someones_password_warns_in_chinese_that_disabling_loses_it(alice, superuser):
    """Django appends this warning unmarked for translation: the Chinese page said it in
    English (ConsolePasswordChangeForm)."""
    chinese = page(superuser, f"/admin/auth/user/{alice.pk}/password/", "zh-hans")
    english = page(superuser, f"/admin/auth/user/{alice.pk}/password/", "en")

    warning = '<ul id="id_unusable_warning" class="messagelist"><li class="warning">{}</li></ul>'
    assert warning.format("禁用后，该用户当前的密码将被清除。") in chinese
    assert "If disabled" not in chinese
    assert (
        warning.format("If disabled, the current password for this user will be lost.") in english
    )


def test_a_quotas_change_in_the_admin_history_reads_its_fields_in_the_readers_language(
    superuser, alice
):
    # qa98: Django stores the changed fields' English labels and looks each up as it shows
    # the history; "At most N cards" had no translation (only "at most N cards").
    quota = CardQuota.objects.create(user=alice, max_cards=2)
    english = Client()
    english.force_login(superuser)
    english.cookies["django_language"] = "en"
    saved = english.post(
        f"/admin/jobs/cardquota/{quota.pk}/change/",
        {"user": alice.pk, "group": "", "card_type": "", "max_cards": 4, "max_running_jobs": 3},
    )
    assert saved.status_code == 302
    chinese = Client()
    chinese.force_login(superuser)
    chinese.cookies["django_language"] = "zh-hans"

    history = chinese.get(f"/admin/jobs/cardquota/{quota.pk}/history/").content.decode()

    assert "最多 N 张卡" in history and "最多 M 个运行中任务" in history
    assert "At most" not in history
    assert CardQuota.objects.get(pk=quota.pk).max_cards == 4


def test_every_field_label_the_admins_forms_change_has_a_chinese_translation():
    from django.contrib import admin
    from django.utils import translation
    from django.utils.text import capfirst
    from django.utils.translation import gettext

    untranslated = []
    for model in admin.site._registry:
        if model._meta.app_label not in ("jobs", "auth"):
            continue
        for field in model._meta.get_fields():
            if field.auto_created or not getattr(field, "editable", False):
                continue
            with translation.override(None):
                label = capfirst(str(field.verbose_name))
            with translation.override("zh-hans"):
                if gettext(label) == label:
                    untranslated.append(f"{model._meta.label}.{field.name}: {label}")
    assert untranslated == []


@pytest.mark.parametrize(
    ("saved_as", "subject"),
    [("alice", "alice"), ("group", "用户组 team"), ("everyone", "所有人")],
)
def test_a_quotas_name_in_the_log_entries_reads_in_the_readers_language_whichever_it_was_saved_in(
    superuser, alice, saved_as, subject
):
    # qa98: "alice: every card type" stayed English on a Chinese page (saved in English).
    from django.contrib.auth.models import Group

    owner = {
        "alice": {"user": alice},
        "group": {"group": Group.objects.create(name="team")},
        "everyone": {},
    }[saved_as]
    english = Client()
    english.force_login(superuser)
    english.cookies["django_language"] = "en"
    fields = {"user": "", "group": "", "card_type": "", "max_cards": 2, "max_running_jobs": ""}
    fields.update({key: value.pk for key, value in owner.items()})
    assert english.post("/admin/jobs/cardquota/add/", fields).status_code == 302
    chinese = Client()
    chinese.force_login(superuser)
    chinese.cookies["django_language"] = "zh-hans"

    page = chinese.get("/admin/admin/logentry/").content.decode()
    shown_en = english.get("/admin/admin/logentry/").content.decode()

    front = chinese.get("/admin/").content.decode()  # its Recent actions

    assert f"{subject}: 所有卡型" in page
    assert "every card type" not in page
    assert ": every card type" in shown_en
    assert f"{subject}: 所有卡型" in front and "every card type" not in front
