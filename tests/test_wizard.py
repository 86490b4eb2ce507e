"""The create-training-job wizard: flow, drafts, submit, copy & edit (views, plain and htmx)."""

from __future__ import annotations

import html
import json
import re
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlencode

import pytest
from django.contrib.sessions.models import Session
from django.db import connection
from django.http import QueryDict
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from jobs import spec as S
from jobs import wizard as W
from jobs.models import Draft, Job

A800 = "baidu.com/a800_80g_cgpu"
A800_SHOWN = "A800 80GB (baidu.com/a800_80g_cgpu)"
V100_SHOWN = "V100 32GB (baidu.com/v100_32g_cgpu)"
V100 = "baidu.com/v100_32g_cgpu"
HTMX = {"HX-Request": "true"}


@pytest.fixture(autouse=True)
def _local_pool(settings, tmp_path):
    """The local pool offers 8 A800 and 4 V100 cards and one host volume."""
    settings.LOCAL_ACCELERATORS = f"{A800}=8,{V100}=4"
    settings.LOCAL_VOLUMES = f"scratch={tmp_path}"


def step_url(draft, step):
    return reverse("wizard-step", args=[draft.id, step])


def new_draft(client) -> Draft:
    r = client.post(reverse("wizard-start"))
    assert r.status_code == 302
    return Draft.objects.latest("created_at")


def basic_data(**over):
    data = {
        "name": "llm-train",
        "resource_pool": "local",
        "queue": "default",
        "priority": "normal",
        "framework": S.PYTORCH,
        "creation_mode": S.CREATION_CUSTOM,
    }
    data.update(over)
    return data


def image_data(envs=(), **over):
    data = {
        "image": "registry.example.com/train/pytorch:2.5",
        "entrypoint": "bash",
        "command": "torchrun train.py",
        "env_paste": "",
        "env-TOTAL_FORMS": str(len(envs)),
        "env-INITIAL_FORMS": "0",
    }
    for i, env in enumerate(envs):
        data[f"env-{i}-name"] = env[0]
        data[f"env-{i}-value"] = env[1]
        if len(env) > 2 and env[2]:
            data[f"env-{i}-secret"] = "on"
    data.update(over)
    return data


def role(name, replicas, card=A800, cards=1, **extra):
    row = {"name": name, "replicas": str(replicas)}
    if card:
        row.update(use_accelerator="on", accelerator_type=card, accelerators=str(cards))
    row.update({k: str(v) for k, v in extra.items()})
    return row


def resources_data(roles=None, **over):
    roles = roles if roles is not None else [role("master", 1), role("worker", 2)]
    data = {
        "shared_memory_gi": "10",
        "roles-TOTAL_FORMS": str(len(roles)),
        "roles-INITIAL_FORMS": "0",
    }
    for i, row in enumerate(roles):
        for key, value in row.items():
            data[f"roles-{i}-{key}"] = value
    data.update(over)
    return data


def data_data(mounts=(("hostpath", "scratch", "/workspace"),), storage=True, **over):
    data = {"mounts-TOTAL_FORMS": str(len(mounts)), "mounts-INITIAL_FORMS": "0"}
    if storage:
        data["storage_enabled"] = "on"
    for i, (kind, name, path) in enumerate(mounts):
        data.update(
            {
                f"mounts-{i}-type": kind,
                f"mounts-{i}-name": name,
                f"mounts-{i}-mount_path": path,
                f"mounts-{i}-access": "rw",
            }
        )
    data.update(over)
    return data


def advanced_data(**over):
    data = {"retention_value": "7", "retention_unit": "d", "timeout_minutes": "43200"}
    data.update(over)
    return data


def submission_data(**over):
    data = {"mode": "standalone", "target_queue": "default", "total": "1", "concurrency": "1"}
    data.update(over)
    return data


STEP_DATA = {
    W.BASIC: basic_data,
    W.IMAGE: image_data,
    W.RESOURCES: resources_data,
    W.DATA: data_data,
    W.FAULT: dict,
    W.ADVANCED: advanced_data,
    W.SUBMISSION: submission_data,
}


def post_step(client, draft, step, data, *, action="next", htmx=False):
    payload = dict(data)
    payload["action"] = action
    return client.post(step_url(draft, step), payload, headers=HTMX if htmx else {})


def complete_steps(client, draft, upto=W.REVIEW, **overrides):
    for step in W.FORM_STEPS:
        if step == upto:
            return
        data = overrides.get(step) or STEP_DATA[step]()
        r = post_step(client, draft, step, data)
        assert r.status_code == 302, (step, _errors(r))
        assert r["Location"] == step_url(draft, W.STEPS[W.STEPS.index(step) + 1])


def _errors(response) -> list[str]:
    return re.findall(
        r'class="invalid-feedback[^"]*"[^>]*>(?:<strong>)?([^<]+)', response.content.decode()
    )


def field_errors(response, field_id: str) -> list[str]:
    """Messages rendered for one field: crispy's error_N_<id> spans, or a table cell's."""
    page = response.content.decode()
    found = re.findall(rf'id="error_\d+_{re.escape(field_id)}"[^>]*>(?:<strong>)?([^<]+)', page)
    at = page.find(f'id="{field_id}"')
    if at >= 0:
        cell = page[at : page.find("</td>", at) if "</td>" in page[at:] else at]
        found += re.findall(r'<div class="invalid-feedback d-block">([^<]+)</div>', cell)
    return [html.unescape(m) for m in found]


# -- flow ---------------------------------------------------------------------------------


def test_it_creates_a_draft_and_opens_the_first_step(alice_client, alice):
    r = alice_client.post(reverse("wizard-start"))

    draft = Draft.objects.get(owner=alice)
    assert r.status_code == 302
    assert r["Location"] == step_url(draft, W.BASIC)
    assert re.match(r"^job-\d{8}-\d{6}$", draft.data["basic"]["name"][0])


def create_key_of(page) -> str:
    return re.search(r'name="create_key" value="([0-9a-f]{32})"', page.content.decode()).group(1)


def test_new_draft_clicked_twice_on_one_page_makes_one_draft(alice_client, alice):
    key = create_key_of(alice_client.get(reverse("wizard-start")))

    first = alice_client.post(reverse("wizard-start"), {"create_key": key})
    again = alice_client.post(reverse("wizard-start"), {"create_key": key})  # a double click

    assert first.status_code == again.status_code == 302
    assert again["Location"] == first["Location"]
    assert Draft.objects.filter(owner=alice).count() == 1


def test_new_draft_from_another_page_load_or_an_old_page_makes_another_draft(alice_client, alice):
    first_page, second_page = (alice_client.get(reverse("wizard-start")) for _ in range(2))

    alice_client.post(reverse("wizard-start"), {"create_key": create_key_of(first_page)})
    alice_client.post(reverse("wizard-start"), {"create_key": create_key_of(second_page)})
    alice_client.post(reverse("wizard-start"))  # a page from before the key: no key
    alice_client.post(reverse("wizard-start"), {"create_key": "not-a-key"})

    assert Draft.objects.filter(owner=alice).count() == 4


def test_one_page_key_makes_one_draft_per_pool_and_none_after_its_draft_became_a_job(
    alice_client, alice
):
    key = create_key_of(alice_client.get(reverse("wizard-start")))
    in_local = alice_client.post(f"{reverse('wizard-start')}?pool=local", {"create_key": key})
    elsewhere = alice_client.post(reverse("wizard-start"), {"create_key": key})
    assert in_local["Location"] != elsewhere["Location"]  # another pool's button, one page

    draft = Draft.objects.get(pk=in_local["Location"].split("/")[2])
    complete_steps(alice_client, draft)
    alice_client.post(reverse("wizard-submit", args=[draft.id]))
    later = alice_client.post(f"{reverse('wizard-start')}?pool=local", {"create_key": key})

    assert later.status_code == 302
    assert later["Location"] not in (in_local["Location"], elsewhere["Location"])
    assert Draft.objects.filter(owner=alice).count() == 3


def test_two_users_with_the_same_page_key_get_a_draft_each(alice_client, alice, bob, client):
    key = create_key_of(alice_client.get(reverse("wizard-start")))
    client.force_login(bob)

    alice_client.post(reverse("wizard-start"), {"create_key": key})
    client.post(reverse("wizard-start"), {"create_key": key})

    assert Draft.objects.filter(owner=alice).count() == Draft.objects.filter(owner=bob).count() == 1


def test_the_first_step_shows_the_consoles_fields(alice_client):
    draft = new_draft(alice_client)

    r = alice_client.get(step_url(draft, W.BASIC))

    html = r.content.decode()
    assert r.status_code == 200
    assert draft.data["basic"]["name"][0] in html
    for name in (
        "resource_pool",
        "queue",
        "priority",
        "framework",
        "log_persistence",
        "creation_mode",
    ):
        assert f'name="{name}"' in html
    # Drawn in custom mode too, shown by CSS once AIAK mode is chosen (JavaScript or not, qa82).
    assert 'name="aiak_template"' in html and 'id="aiak-choices"' in html


def test_the_two_creation_modes_are_named_as_the_seed_names_them(alice, client):
    """Seed 000: 选择 自定义创建 或 基于AIAK加速模版创建 (the step's note uses those words)."""
    client.force_login(alice)
    draft = new_draft(client)
    complete_steps(client, draft)

    step = client.get(step_url(draft, W.BASIC), headers={"Accept-Language": "en"})
    review = client.get(step_url(draft, W.REVIEW), headers={"Accept-Language": "en"})

    choices = re.findall(
        r'name="creation_mode" value="(\w+)"[^>]*><label[^>]*>([^<]+)<', step.content.decode()
    )
    assert choices == [
        ("custom", "Custom creation"),
        ("aiak", "From an AIAK acceleration template"),
    ]
    summary = review.content.decode()
    assert re.search(r"Creation mode</dt>\s*<dd[^>]*>Custom creation<", summary)


def test_the_aiak_fields_are_on_step_one_in_either_mode(alice_client):
    """Drawn with the page in either mode and shown by CSS as AIAK mode is chosen (fix82b):
    the mode switch asks for the preview alone, so nothing chosen in them is drawn over."""
    draft = new_draft(alice_client)

    custom = alice_client.get(step_url(draft, W.BASIC)).content.decode()
    plain = post_step(alice_client, draft, W.BASIC, basic_data(creation_mode="aiak"))

    for name in ("training_mode", "training_method", "aiak_template"):
        assert f'name="{name}"' in custom
        assert f'name="{name}"' in plain.content.decode()
    assert "llama2-70b" in custom and "qwen1.5-0.5b" in custom and "mixtral-8x7b" in custom


def test_it_builds_a_pytorch_job_through_every_step_and_submits_it(alice_client, alice):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft)

    review = alice_client.get(step_url(draft, W.REVIEW))
    r = alice_client.post(reverse("wizard-submit", args=[draft.id]))

    job = Job.objects.get(owner=alice)
    assert review.status_code == 200
    assert r.status_code == 302
    assert r["Location"] == reverse("job-detail", args=[job.public_id])
    spec = job.job_spec()
    assert [(ro.name, ro.replicas, ro.accelerators) for ro in spec.roles] == [
        ("master", 1, 1),
        ("worker", 2, 1),
    ]
    assert spec.to_v1_body()["jobSpec"]["replicas"] == 3
    assert spec.datasources[0].mount_path == "/workspace"
    assert job.total_cards == 3
    draft.refresh_from_db()
    assert draft.submitted_at is not None


def test_a_review_shown_before_another_change_submits_nothing_and_shows_the_new_review(
    alice_client, alice
):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft)
    review = alice_client.get(step_url(draft, W.REVIEW)).content.decode()
    revision = re.search(r'name="revision" value="([^"]+)"', review).group(1)
    post_step(alice_client, draft, W.IMAGE, image_data(command="echo changed-in-another-tab"))

    stale = alice_client.post(reverse("wizard-submit", args=[draft.id]), {"revision": revision})
    shown = alice_client.get(step_url(draft, W.REVIEW)).content.decode()
    fresh = re.search(r'name="revision" value="([^"]+)"', shown).group(1)
    submitted = alice_client.post(reverse("wizard-submit", args=[draft.id]), {"revision": fresh})
    resent = alice_client.post(reverse("wizard-submit", args=[draft.id]), {"revision": revision})

    assert stale.status_code == 302 and stale["Location"] == step_url(draft, W.REVIEW)
    assert "changed in another tab" in shown or "其他标签页" in shown
    assert submitted.status_code == 302 and resent.status_code == 302
    assert resent["Location"] == submitted["Location"]  # a resend finds the same job
    assert Job.objects.filter(owner=alice).count() == 1


def test_submitting_twice_creates_one_job(alice_client, alice):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft)

    first = alice_client.post(reverse("wizard-submit", args=[draft.id]))
    second = alice_client.post(reverse("wizard-submit", args=[draft.id]))

    assert first.status_code == second.status_code == 302
    assert first["Location"] == second["Location"]
    assert Job.objects.filter(owner=alice).count() == 1


def test_submitting_from_a_second_tab_opens_the_same_job_saying_it_was_submitted_before(
    alice_client, alice
):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft)
    review = alice_client.get(step_url(draft, W.REVIEW)).content.decode()
    revision = re.search(r'name="revision" value="([^"]+)"', review).group(1)
    first = alice_client.post(reverse("wizard-submit", args=[draft.id]), {"revision": revision})
    alice_client.get(first["Location"])  # the first tab reads its "submitted" message

    second = alice_client.post(reverse("wizard-submit", args=[draft.id]), {"revision": revision})

    assert second.status_code == 302 and second["Location"] == first["Location"]
    page = alice_client.get(second["Location"]).content.decode()
    assert "该草稿此前已提交（再次点击了提交" in page
    assert "已提交。" not in page
    assert Job.objects.filter(owner=alice).count() == 1


def test_a_resend_after_the_job_was_deleted_submits_nothing_again(alice_client, alice):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft)
    alice_client.post(reverse("wizard-submit", args=[draft.id]))
    Job.objects.get(owner=alice).delete()  # deleted by its owner, or by auto-delete

    resent = alice_client.post(reverse("wizard-submit", args=[draft.id]), follow=True)
    step = alice_client.get(step_url(draft, W.REVIEW))

    assert resent.redirect_chain[0] == (reverse("job-list"), 302)
    assert "其任务已被删除" in resent.content.decode()
    assert step.status_code == 302 and step["Location"] == reverse("job-list")
    assert not Job.objects.exists()


def test_a_submitted_draft_sends_its_steps_to_the_job(alice_client, alice):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft)
    alice_client.post(reverse("wizard-submit", args=[draft.id]))

    r = alice_client.get(step_url(draft, W.IMAGE))

    assert r.status_code == 302
    assert r["Location"] == reverse("job-detail", args=[Job.objects.get().public_id])


@pytest.mark.parametrize("htmx", [False, True], ids=["plain", "htmx"])
def test_a_step_sent_from_a_tab_left_open_after_the_submit_opens_the_job_saying_nothing_was_saved(
    alice_client, alice, htmx
):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft)
    alice_client.post(reverse("wizard-submit", args=[draft.id]))
    job_url = reverse("job-detail", args=[Job.objects.get().public_id])

    r = post_step(alice_client, draft, W.IMAGE, image_data(command="echo late"), htmx=htmx)

    if htmx:  # a whole page, not the job page drawn inside the step's region
        assert r.status_code == 200 and r["HX-Redirect"] == job_url
    else:
        assert r.status_code == 302 and r["Location"] == job_url
    page = alice_client.get(job_url).content.decode()
    assert "该草稿已在另一个标签页或窗口中提交" in page
    draft.refresh_from_db()
    assert draft.data[W.IMAGE]["command"] == ["torchrun train.py"]
    assert Job.objects.count() == 1


def test_a_queue_group_creates_one_job_per_task(alice_client, alice):
    draft = new_draft(alice_client)
    complete_steps(
        alice_client,
        draft,
        **{W.SUBMISSION: submission_data(mode="queue", total="3", concurrency="2")},
    )

    r = alice_client.post(reverse("wizard-submit", args=[draft.id]))

    assert r.status_code == 302
    assert Job.objects.filter(owner=alice).count() == 3


def test_the_job_page_opened_on_submit_says_the_job_was_submitted(alice_client, alice):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, **{W.BASIC: basic_data(name="first-run")})

    r = alice_client.post(reverse("wizard-submit", args=[draft.id]), follow=True)

    page = r.content.decode()
    assert r.status_code == 200
    assert re.search(r'class="alert alert-success"[^>]*>任务 first-run 已提交。</div>', page)
    assert "审核通过后才会运行" not in page
    assert Job.objects.get(owner=alice).name == "first-run"


def test_a_submitted_queue_group_or_held_job_says_so_on_the_page_it_opens(
    alice_client, alice, settings
):
    from jobs.models import ReviewMode, ReviewPolicy

    group = new_draft(alice_client)
    complete_steps(
        alice_client,
        group,
        **{
            W.BASIC: basic_data(name="sweep"),
            W.SUBMISSION: submission_data(mode="queue", total="3", concurrency="2"),
        },
    )
    ReviewPolicy.objects.create(pk=1, mode=ReviewMode.ALL)
    held = new_draft(alice_client)
    complete_steps(alice_client, held, **{W.BASIC: basic_data(name="big-one")})

    group_page = alice_client.post(reverse("wizard-submit", args=[group.id]), follow=True)
    alice_client.cookies["django_language"] = "en"
    held_page = alice_client.post(reverse("wizard-submit", args=[held.id]), follow=True)

    assert "队列任务组 sweep 已提交，共 3 个任务。" in group_page.content.decode()
    assert (
        "Job big-one submitted. It waits for a reviewer&#x27;s approval before it runs."
        in held_page.content.decode()
    )
    assert Job.objects.filter(owner=alice, name="sweep").count() == 3
    assert Job.objects.get(owner=alice, name="big-one").status == "pending_review"


def test_jumping_ahead_redirects_to_the_first_incomplete_step(alice_client):
    draft = new_draft(alice_client)
    post_step(alice_client, draft, W.BASIC, basic_data())

    r = alice_client.get(step_url(draft, W.ADVANCED))

    assert r.status_code == 302
    assert r["Location"] == step_url(draft, W.IMAGE)


def test_the_review_says_the_retention_time_in_words_when_auto_delete_is_on(alice_client):
    draft = new_draft(alice_client)
    complete_steps(
        alice_client,
        draft,
        **{W.ADVANCED: advanced_data(auto_delete="on", retention_value="36", retention_unit="h")},
    )

    r = alice_client.get(step_url(draft, W.REVIEW))

    assert r.status_code == 200
    row = re.search(r"<dt[^>]*>任务退出后自动删除</dt><dd[^>]*>([^<]*)</dd>", r.content.decode())
    assert row.group(1) == "36 小时"  # not the API's "36h"


def test_the_auto_delete_help_says_what_is_deleted_and_that_the_mounts_data_is_kept(alice_client):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.ADVANCED)

    page = alice_client.get(step_url(draft, W.ADVANCED)).content.decode()

    assert "删除的是任务及其日志；它写入挂载的内容（检查点、事件文件）会保留。" in page


def test_the_review_says_before_submit_when_the_review_policy_will_hold_the_job(
    alice_client, settings
):
    from jobs.models import ReviewMode, ReviewPolicy

    settings.LOCAL_QUEUES = ["default", "research"]
    ReviewPolicy.objects.create(pk=1, mode=ReviewMode.QUEUES, queues="research")
    held, free = new_draft(alice_client), new_draft(alice_client)
    complete_steps(alice_client, held, **{W.BASIC: basic_data(queue="research")})
    complete_steps(alice_client, free)

    held_review = alice_client.get(step_url(held, W.REVIEW)).content.decode()
    free_review = alice_client.get(step_url(free, W.REVIEW)).content.decode()
    alice_client.cookies["django_language"] = "en"
    english = alice_client.get(step_url(held, W.REVIEW)).content.decode()

    notice = re.search(r'id="review-notice"[^>]*>(.*?)</div>', held_review, re.S)
    assert notice and "队列 research 中的任务运行前需审核" in notice.group(1)
    assert 'id="review-notice"' not in free_review
    assert "jobs in queue research are reviewed before they run" in english


def test_the_review_step_needs_every_step_done(alice_client):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.SUBMISSION)

    r = alice_client.get(step_url(draft, W.REVIEW))

    assert r.status_code == 302
    assert r["Location"] == step_url(draft, W.SUBMISSION)


def test_an_unknown_step_is_not_found(alice_client):
    draft = new_draft(alice_client)

    assert alice_client.get(f"/create/{draft.id}/nonsense/").status_code == 404


def test_next_with_htmx_swaps_in_the_next_step_and_pushes_its_url(alice_client):
    draft = new_draft(alice_client)

    r = post_step(alice_client, draft, W.BASIC, basic_data(), htmx=True)

    html = r.content.decode()
    assert r.status_code == 200
    assert r["HX-Push-Url"] == step_url(draft, W.IMAGE)
    assert 'id="wizard"' in html and "<html" not in html
    assert 'name="image"' in html


def test_errors_with_htmx_come_back_in_the_fragment(alice_client):
    draft = new_draft(alice_client)

    r = post_step(alice_client, draft, W.BASIC, basic_data(name="Bad Name"), htmx=True)

    assert r.status_code == 200
    assert "<html" not in r.content.decode()
    assert field_errors(r, "id_name")
    assert "HX-Push-Url" not in r


def test_a_step_page_and_its_htmx_fragment(alice_client):
    draft = new_draft(alice_client)
    post_step(alice_client, draft, W.BASIC, basic_data())

    page = alice_client.get(step_url(draft, W.IMAGE))
    fragment = alice_client.get(step_url(draft, W.IMAGE), headers=HTMX)

    assert page.status_code == fragment.status_code == 200
    assert b"<html" in page.content and b"<html" not in fragment.content
    assert b'id="wizard-form"' in page.content and b'id="wizard-form"' in fragment.content
    assert "HX-Request" in page["Vary"]


@pytest.mark.parametrize("step", W.FORM_STEPS)
def test_every_step_answers_plain_and_htmx_and_moves_on_with_both(alice_client, step):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=step)
    following = W.STEPS[W.STEPS.index(step) + 1]

    page = alice_client.get(step_url(draft, step))
    fragment = alice_client.get(step_url(draft, step), headers=HTMX)
    moved = post_step(alice_client, draft, step, STEP_DATA[step](), htmx=True)

    assert page.status_code == fragment.status_code == moved.status_code == 200
    assert b"<html" in page.content and b"<html" not in fragment.content
    assert b'id="wizard"' in fragment.content
    assert moved["HX-Push-Url"] == step_url(draft, following)
    draft.refresh_from_db()
    assert step in draft.completed_steps


@pytest.mark.parametrize("name", ["idle", "totals", "aiak", "queues", "example", "mount-row"])
def test_partials_answer_plain_requests_too(alice_client, name):
    draft = new_draft(alice_client)

    r = alice_client.get(
        reverse(f"wizard-{name}", args=[draft.id]),
        {"creation_mode": "aiak", "resource_pool": "local"},
    )

    assert r.status_code == 200
    assert b"<html" not in r.content


def test_back_keeps_what_was_typed_without_validating(alice_client):
    draft = new_draft(alice_client)
    post_step(alice_client, draft, W.BASIC, basic_data())

    r = post_step(alice_client, draft, W.IMAGE, image_data(image="not an image!"), action="back")
    page = alice_client.get(step_url(draft, W.IMAGE))

    assert r.status_code == 302
    assert r["Location"] == step_url(draft, W.BASIC)
    assert "not an image!" in page.content.decode()
    assert not field_errors(page, "id_image")


def test_a_reload_after_a_failed_step_shows_the_input_and_its_errors(alice_client):
    draft = new_draft(alice_client)
    post_step(alice_client, draft, W.BASIC, basic_data(name="Bad Name"))

    r = alice_client.get(step_url(draft, W.BASIC))

    assert 'value="Bad Name"' in r.content.decode()
    assert field_errors(r, "id_name")


def test_the_framework_field_says_before_a_change_that_the_roles_change_and_come_back(
    alice_client,
):
    draft = new_draft(alice_client)

    r = alice_client.get(step_url(draft, W.BASIC))

    assert r.status_code == 200
    assert "改变后，资源配置将使用新框架的角色；您原有的角色表会保留，再次选择该框架时恢复。" in (
        r.content.decode()
    )


def test_changing_the_framework_resets_the_roles(alice_client):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.DATA)

    post_step(alice_client, draft, W.BASIC, basic_data(framework=S.TENSORFLOW))
    draft.refresh_from_db()
    r = alice_client.get(step_url(draft, W.RESOURCES))

    assert W.RESOURCES not in draft.completed_steps
    html = r.content.decode()
    assert "<strong>chief</strong>" in html and "<strong>ps</strong>" in html


def test_the_role_table_of_a_tensorflow_job_says_it_ends_with_its_chief(alice_client):
    # The local runner and Kubeflow's TFJob end it so: its ps never exit on their own (QA 58).
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.DATA)
    post_step(alice_client, draft, W.BASIC, basic_data(framework=S.TENSORFLOW))

    html = alice_client.get(step_url(draft, W.RESOURCES)).content.decode()

    assert "chief（没有 chief 时为 worker 0）以 0 退出，任务即成功" in html


def test_the_role_table_of_a_tensorflow_job_says_any_role_may_be_cpu_only(alice_client):
    # qa78: "ps and evaluator may be CPU-only" read as if chief and workers may not be;
    # CPU-only ones are taken and run.
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.DATA)
    post_step(alice_client, draft, W.BASIC, basic_data(framework=S.TENSORFLOW))

    chinese = html.unescape(alice_client.get(step_url(draft, W.RESOURCES)).content.decode())
    alice_client.cookies["django_language"] = "en"
    english = html.unescape(alice_client.get(step_url(draft, W.RESOURCES)).content.decode())

    assert "Any role may be CPU-only: cards speed up the roles that compute" in english
    assert "ps and evaluator may be CPU-only" not in english
    assert "每个角色都可以只用 CPU" in chinese
    assert "ps、evaluator 可以使用 CPU" not in chinese


@pytest.mark.parametrize("htmx", [False, True])
def test_a_step_sent_from_a_page_shown_before_the_framework_changed_is_not_saved(
    alice_client, htmx
):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.RESOURCES)
    page_a = alice_client.get(step_url(draft, W.RESOURCES)).content.decode()
    basis = re.search(r'name="basis" value="([^"]*)"', page_a).group(1)
    # Another tab switches the framework.
    post_step(alice_client, draft, W.BASIC, basic_data(framework=S.TENSORFLOW))

    # The first tab sends its PyTorch role table.
    stale_table = resources_data([role("master", 1, cards=1), role("worker", 1, cards=1)])
    r = post_step(alice_client, draft, W.RESOURCES, {**stale_table, "basis": basis}, htmx=htmx)

    html = r.content.decode()
    assert r.status_code == 200
    assert 'id="stale-notice"' in html
    assert "<strong>chief</strong>" in html and "<strong>master</strong>" not in html
    draft.refresh_from_db()
    assert W.RESOURCES not in draft.data and W.RESOURCES not in draft.completed_steps


def test_a_basic_step_sent_from_a_page_shown_before_another_change_does_not_undo_it(
    alice_client,
):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.RESOURCES)
    old_page = alice_client.get(step_url(draft, W.BASIC)).content.decode()
    basis = re.search(r'name="basis" value="([^"]*)"', old_page).group(1)
    post_step(alice_client, draft, W.BASIC, basic_data(framework=S.MPI))  # another tab

    r = post_step(alice_client, draft, W.BASIC, {**basic_data(framework=S.PYTORCH), "basis": basis})

    assert r.status_code == 200 and 'id="stale-notice"' in r.content.decode()
    draft.refresh_from_db()
    assert draft.data[W.BASIC]["framework"] == [S.MPI]


@pytest.mark.parametrize("htmx", [False, True])
def test_a_later_step_sent_after_an_earlier_one_was_reopened_is_not_saved_and_says_so(
    alice_client, htmx
):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.FAULT)
    before = dict(Draft.objects.get(pk=draft.pk).data[W.DATA])
    post_step(alice_client, draft, W.BASIC, basic_data(framework=S.TENSORFLOW))  # another tab

    r = post_step(
        alice_client, draft, W.DATA, data_data([("hostpath", "scratch", "/elsewhere")]), htmx=htmx
    )

    if htmx:
        assert r.status_code == 200 and 'id="stale-notice"' in r.content.decode()
        assert r["HX-Push-Url"] == step_url(draft, W.RESOURCES)
    else:
        assert r.status_code == 302 and r["Location"] == step_url(draft, W.RESOURCES)
        page = alice_client.get(r["Location"]).content.decode()
        assert "其他标签页" in page
    draft.refresh_from_db()
    assert draft.data[W.DATA] == before


def _as_posted(data, action="next"):
    """A step's form data as the view hands it to W.step_post."""
    return QueryDict(urlencode({**data, "action": action}, doseq=True))


def test_both_steps_are_kept_when_two_windows_save_different_steps_at_once(alice_client):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft)
    # Window A's request has read the draft; window B's save of another step lands first.
    read_by_a = Draft.objects.get(pk=draft.pk)
    r = post_step(alice_client, draft, W.ADVANCED, advanced_data(timeout_minutes="120"))
    assert r.status_code == 302

    outcome = W.step_post(
        draft=read_by_a, step=W.IMAGE, post=_as_posted(image_data(command="echo from-a"))
    )

    assert outcome.go_to == W.RESOURCES and outcome.forms is None
    draft.refresh_from_db()
    assert draft.data[W.IMAGE]["command"] == ["echo from-a"]
    assert draft.data[W.ADVANCED]["timeout_minutes"] == ["120"]
    assert draft.completed_steps == list(W.FORM_STEPS)


def seen_on(page) -> str:
    """The step version a step's page carries in its form (`seen`)."""
    found = re.search(r'name="seen" value="([0-9a-f]+)"', page.content.decode())
    assert found, "the step's form carries no seen version"
    return found.group(1)


@pytest.mark.parametrize("htmx", [False, True], ids=["plain", "htmx"])
def test_a_step_saved_in_another_tab_is_not_overwritten_unsaid_by_a_page_shown_before(
    alice_client, htmx
):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.RESOURCES)
    seen_by_b = seen_on(alice_client.get(step_url(draft, W.IMAGE)))
    # Tab A changes the command; tab B, opened before, still shows the old one.
    r = post_step(alice_client, draft, W.IMAGE, image_data(command="torchrun from-tab-a.py"))
    assert r.status_code == 302

    sent_by_b = image_data(image="registry.example.com/train/pytorch:from-tab-b", seen=seen_by_b)
    r = post_step(alice_client, draft, W.IMAGE, sent_by_b, htmx=htmx)

    notice = re.search(r'id="stale-notice">([^<]*)<', r.content.decode())
    assert r.status_code == 200 and notice and "本步骤已在另一个标签页" in notice.group(1)
    assert "HX-Push-Url" not in r
    assert 'value="registry.example.com/train/pytorch:from-tab-b"' in r.content.decode()
    draft.refresh_from_db()
    assert draft.data[W.IMAGE]["command"] == ["torchrun from-tab-a.py"]
    assert draft.data[W.IMAGE]["image"] == ["registry.example.com/train/pytorch:2.5"]

    # The same button again, from the page that said so, saves what tab B typed.
    r = post_step(alice_client, draft, W.IMAGE, {**sent_by_b, "seen": seen_on(r)})

    assert r.status_code == 302 and r["Location"] == step_url(draft, W.RESOURCES)
    draft.refresh_from_db()
    assert draft.data[W.IMAGE]["image"] == ["registry.example.com/train/pytorch:from-tab-b"]
    assert draft.data[W.IMAGE]["command"] == ["torchrun train.py"]


def test_a_step_refused_for_another_tabs_save_asks_for_the_secret_values_typed_on_it_again(
    alice_client,
):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.RESOURCES)
    seen_by_b = seen_on(alice_client.get(step_url(draft, W.IMAGE)))
    r = post_step(alice_client, draft, W.IMAGE, image_data(command="torchrun from-tab-a.py"))
    assert r.status_code == 302

    typed = image_data(envs=[("HF_TOKEN", "hf-typed-in-tab-b", True)], seen=seen_by_b)
    r = post_step(alice_client, draft, W.IMAGE, typed)

    notice = re.search(r'id="stale-notice">([^<]*)<', r.content.decode()).group(1)
    assert r.status_code == 200 and "请重新填写" in notice
    assert "hf-typed-in-tab-b" not in r.content.decode()
    plain = image_data(envs=[("MODE", "fast")], seen=seen_by_b)
    notice = re.search(
        r'id="stale-notice">([^<]*)<',
        post_step(alice_client, draft, W.IMAGE, plain).content.decode(),
    )
    assert "请重新填写" not in notice.group(1)
    draft.refresh_from_db()
    assert draft.data[W.IMAGE]["command"] == ["torchrun from-tab-a.py"]


def test_a_page_shown_before_another_steps_save_or_sending_the_same_values_saves_at_once(
    alice_client,
):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.RESOURCES)
    seen_image = seen_on(alice_client.get(step_url(draft, W.IMAGE)))
    seen_basic = seen_on(alice_client.get(step_url(draft, W.BASIC)))
    r = post_step(alice_client, draft, W.IMAGE, image_data(command="torchrun again.py"))
    assert r.status_code == 302

    same = post_step(
        alice_client, draft, W.IMAGE, image_data(command="torchrun again.py", seen=seen_image)
    )
    other = post_step(alice_client, draft, W.BASIC, basic_data(name="renamed", seen=seen_basic))

    assert same.status_code == 302 and same["Location"] == step_url(draft, W.RESOURCES)
    assert other.status_code == 302 and other["Location"] == step_url(draft, W.IMAGE)
    draft.refresh_from_db()
    assert draft.data[W.BASIC]["name"] == ["renamed"]
    assert draft.data[W.IMAGE]["command"] == ["torchrun again.py"]


def test_a_step_post_finds_no_draft_when_another_window_discarded_it_meanwhile(alice_client):
    draft = new_draft(alice_client)
    read_by_a = Draft.objects.get(pk=draft.pk)
    r = alice_client.post(reverse("wizard-discard", args=[draft.id]), {"confirmed": "1"})
    assert r.status_code == 302

    with pytest.raises(Draft.DoesNotExist):
        W.step_post(draft=read_by_a, step=W.BASIC, post=_as_posted(basic_data()))

    assert not Draft.objects.filter(pk=draft.pk).exists()


def test_discarding_a_draft_on_the_second_page_of_my_drafts_comes_back_to_that_page(
    alice_client, alice
):
    for _ in range(45):
        W.draft_create(owner=alice)
    page = alice_client.get(reverse("wizard-start") + "?page=2").content.decode()
    on_page_two = re.findall(r'action="/create/([0-9a-f-]+)/discard/"', page)
    assert len(on_page_two) == 20 and 'name="page" value="2"' in page

    r = alice_client.post(
        reverse("wizard-discard", args=[on_page_two[0]]), {"page": "2", "confirmed": "1"}
    )

    assert r.status_code == 302 and r["Location"] == reverse("wizard-start") + "?page=2"
    assert not Draft.objects.filter(pk=on_page_two[0]).exists()


def test_discarding_the_last_draft_of_the_last_page_goes_to_the_page_before(alice_client, alice):
    for _ in range(21):
        W.draft_create(owner=alice)
    last = Draft.objects.order_by("updated_at", "id").first()  # alone on page 2

    r = alice_client.post(
        reverse("wizard-discard", args=[last.id]), {"page": "2", "confirmed": "1"}
    )
    odd = alice_client.post(
        reverse("wizard-discard", args=[Draft.objects.first().id]),
        {"page": "x\x00", "confirmed": "1"},
    )

    assert r["Location"] == reverse("wizard-start")
    assert odd.status_code == 302 and odd["Location"] == reverse("wizard-start")


def discarded_draft(client) -> Draft:
    draft = new_draft(client)
    client.post(reverse("wizard-discard", args=[draft.id]), {"confirmed": "1"})
    return draft


def test_without_javascript_a_step_of_a_draft_discarded_elsewhere_comes_back_as_typed(
    alice_client,
):
    # qa82: the not-found page said Back showed what was typed, but a step is never cached:
    # Back asked again and got the not-found page again.
    draft = discarded_draft(alice_client)

    r = post_step(alice_client, draft, W.BASIC, basic_data(name="typed-here"))

    assert r.status_code == 404
    page = r.content.decode()
    assert 'id="draft-gone"' in page and "这个草稿已被删除（可能是在另一个标签页中）" in page
    assert 'value="typed-here"' in page
    assert f'formaction="{reverse("wizard-recover", args=[W.BASIC])}"' in page
    assert "另存为新草稿" in page and "后退" not in page
    english = post_step(alice_client, draft, W.BASIC, basic_data(), action="language-en")
    assert english.status_code == 404
    assert "This draft has been discarded" in english.content.decode()
    assert 'value="llm-train"' in english.content.decode()


def test_the_language_chosen_on_a_discarded_draft_comes_back_pressed_for_focus_to_return_to_it(
    alice_client,
):
    # review57: the page drew its 中文/EN without aria-pressed, which console.js looks for to
    # put focus back on the language pressed.
    draft = discarded_draft(alice_client)

    english = post_step(alice_client, draft, W.BASIC, basic_data(), action="language-en")

    page = english.content.decode()
    assert re.search(r'<button[^>]*data-language="en"[^>]*aria-pressed="true"', page)
    assert re.search(r'<button[^>]*data-language="zh-hans"[^>]*aria-pressed="false"', page)


@pytest.mark.parametrize("step", W.FORM_STEPS)
def test_every_step_of_a_discarded_draft_comes_back_with_its_fields_as_sent(alice_client, step):
    draft = discarded_draft(alice_client)

    r = post_step(alice_client, draft, step, STEP_DATA[step]())

    assert r.status_code == 404 and 'id="draft-gone"' in r.content.decode()
    assert 'id="save-as-new-draft"' in r.content.decode()


def test_a_secret_typed_on_a_step_of_a_discarded_draft_is_not_sent_back(alice_client):
    draft = discarded_draft(alice_client)
    typed = image_data(envs=[("HF_TOKEN", "hf-very-secret-value", True), ("MODE", "plain")])

    r = post_step(alice_client, draft, W.IMAGE, typed)

    page = r.content.decode()
    assert "hf-very-secret-value" not in page
    assert 'id="draft-gone-secrets"' in page and "torchrun train.py" in page
    assert 'value="MODE"' in page and 'value="plain"' in page


def test_saving_a_discarded_drafts_step_as_a_new_draft_opens_it_with_what_was_typed(
    alice_client, alice
):
    r = alice_client.post(
        reverse("wizard-recover", args=[W.BASIC]), basic_data(name="kept-name"), follow=True
    )

    draft = Draft.objects.get(owner=alice)
    assert r.redirect_chain == [(step_url(draft, W.BASIC), 302)]
    assert draft.data[W.BASIC]["name"] == ["kept-name"]
    assert 'value="kept-name"' in r.content.decode()
    assert "已另存为新草稿" in r.content.decode()


def test_a_later_step_saved_as_a_new_draft_is_kept_for_when_that_step_is_reached(
    alice_client, alice
):
    key = "a" * 32
    sent = {**image_data(command="python keep.py"), "create_key": key}

    r = alice_client.post(reverse("wizard-recover", args=[W.IMAGE]), sent)
    again = alice_client.post(reverse("wizard-recover", args=[W.IMAGE]), sent)

    draft = Draft.objects.get(owner=alice)  # pressed twice: one draft
    assert r["Location"] == again["Location"] == step_url(draft, W.BASIC)
    assert draft.data[W.IMAGE]["command"] == ["python keep.py"]
    post_step(alice_client, draft, W.BASIC, basic_data())
    assert "python keep.py" in alice_client.get(step_url(draft, W.IMAGE)).content.decode()


def test_a_later_step_saved_as_a_new_draft_tells_the_steps_before_it_to_be_filled_again(
    alice_client, alice
):
    # qa82: saved from 数据源, the new draft opened at 基础信息 with no word why, nor that
    # the mounts typed were still there.
    mounts = (("hostpath", "scratch", "/workspace"), ("hostpath", "scratch", "/kept-too"))

    r = alice_client.post(
        reverse("wizard-recover", args=[W.DATA]), data_data(mounts=mounts), follow=True
    )

    draft = Draft.objects.get(owner=alice)
    assert r.redirect_chain == [(step_url(draft, W.BASIC), 302)]
    page = html.unescape(r.content.decode())
    assert 'id="recovered-notice"' in page
    assert "“数据源”之前的步骤" in page and "请重新填写" in page
    assert "您在“数据源”中填写的内容已保留，到达该步骤时即可看到" in page
    alice_client.cookies["django_language"] = "en"
    english = html.unescape(alice_client.get(step_url(draft, W.BASIC)).content.decode())
    assert "The steps before Data sources were in the discarded draft" in english
    assert "What you typed on Data sources is kept, and will be there when you reach it" in english
    for step in (W.BASIC, W.IMAGE, W.RESOURCES):
        shown = alice_client.get(step_url(draft, step), headers=HTMX).content.decode()
        assert 'id="recovered-notice"' in shown, step
        post_step(alice_client, draft, step, STEP_DATA[step]())
    reached = alice_client.get(step_url(draft, W.DATA)).content.decode()
    assert 'value="/workspace"' in reached and 'value="/kept-too"' in reached
    assert 'id="recovered-notice"' not in reached
    post_step(alice_client, draft, W.DATA, data_data(mounts=mounts))
    step_one = alice_client.get(step_url(draft, W.BASIC)).content.decode()
    assert 'id="recovered-notice"' not in step_one


def test_a_step_of_someone_elses_draft_is_answered_as_one_that_does_not_exist(
    alice_client, bob, client
):
    draft = new_draft(alice_client)
    client.force_login(bob)

    r = post_step(client, draft, W.BASIC, basic_data(name="bobs-typing"))

    assert r.status_code == 404
    page = r.content.decode()
    assert 'value="bobs-typing"' in page and draft.data[W.BASIC]["name"][0] not in page
    assert Draft.objects.get(pk=draft.pk).data == draft.data


def test_the_not_found_page_no_longer_says_back_shows_what_was_typed(alice_client):
    draft = discarded_draft(alice_client)

    r = alice_client.get(step_url(draft, W.BASIC))

    assert r.status_code == 404 and 'id="not-found"' in r.content.decode()
    assert "后退" not in r.content.decode() and "Back" not in r.content.decode()


def test_a_step_post_saves_nothing_when_another_window_submitted_the_draft_meanwhile(
    alice_client, alice
):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft)
    read_by_a = Draft.objects.get(pk=draft.pk)
    r = alice_client.post(reverse("wizard-submit", args=[draft.id]))
    assert r.status_code == 302
    draft.refresh_from_db()
    submitted_data = draft.data

    outcome = W.step_post(
        draft=read_by_a, step=W.IMAGE, post=_as_posted(image_data(command="echo too-late"))
    )

    assert outcome.submitted
    draft.refresh_from_db()
    assert draft.data == submitted_data
    assert Job.objects.filter(owner=alice).count() == 1


def test_a_submit_creates_no_job_when_another_window_saved_a_step_while_it_was_assembled(
    alice_client, alice
):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft)
    # The submit's request has read the draft; another window's save lands before it ends.
    read_by_submit = Draft.objects.get(pk=draft.pk)
    post_step(alice_client, draft, W.IMAGE, image_data(command="echo changed"))

    with pytest.raises(W.DraftChangedError):
        W.draft_submit(draft=read_by_submit)

    assert not Job.objects.filter(owner=alice).exists()
    draft.refresh_from_db()
    assert draft.submitted_at is None
    r = alice_client.post(reverse("wizard-submit", args=[draft.id]))
    job = Job.objects.get(owner=alice)
    assert r["Location"] == reverse("job-detail", args=[job.public_id])
    assert "echo changed" in job.spec["jobSpec"]["command"]


def test_step_pages_are_never_cached_so_back_shows_the_draft_as_it_is(alice_client):
    draft = new_draft(alice_client)

    r = alice_client.get(step_url(draft, W.BASIC))

    assert "no-store" in r["Cache-Control"]


def test_every_input_of_the_row_tables_has_an_accessible_name(alice_client):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.DATA)

    pages = [alice_client.get(step_url(draft, s)).content.decode() for s in (W.RESOURCES, W.DATA)]

    for page, table in zip(pages, ("role-table", "mount-table"), strict=True):
        body = page[
            page.index(f'id="{table}"') : page.index("</table>", page.index(f'id="{table}"'))
        ]
        fields = re.findall(r"<(?:input|select)\b[^>]*>", body)
        visible = [f for f in fields if 'type="hidden"' not in f]
        assert visible
        assert all("aria-label=" in f for f in visible), [
            f for f in visible if "aria-label" not in f
        ]
    # Named by its role, not its number (qa64: "实例数 2" said nothing of whose they were).
    assert 'aria-label="worker 实例数"' in pages[0]
    assert 'aria-label="实例数 2"' not in pages[0]


def test_the_image_and_mount_path_are_marked_required(alice_client):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.DATA)

    image = alice_client.get(step_url(draft, W.IMAGE)).content.decode()
    data = alice_client.get(step_url(draft, W.DATA)).content.decode()

    label = re.search(r'<label for="id_image"[^>]*>.*?</label>', image, re.S).group(0)
    assert '<span class="asteriskField">*</span>' in label
    assert 'aria-required="true"' in re.search(r'<input[^>]*name="image"[^>]*>', image).group(0)
    assert 'aria-required="true"' in re.search(
        r'<input[^>]*name="mounts-0-mount_path"[^>]*>', data
    ).group(0)


def test_the_command_is_marked_required_when_the_entrypoint_is_a_shell(alice_client):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.IMAGE)

    image = alice_client.get(step_url(draft, W.IMAGE)).content.decode()
    label = re.search(r'<label for="id_command"[^>]*>.*?</label>', image, re.S).group(0)
    assert '<span class="asteriskField">*</span>' in label  # bash, the default
    assert 'aria-required="true"' in re.search(r'<textarea[^>]*name="command"[^>]*>', image).group(
        0
    )

    post_step(alice_client, draft, W.IMAGE, {**STEP_DATA[W.IMAGE](), "entrypoint": "python3"})
    image = alice_client.get(step_url(draft, W.IMAGE)).content.decode()
    label = re.search(r'<label for="id_command"[^>]*>.*?</label>', image, re.S).group(0)
    assert "asteriskField" not in label  # python3 may run with no arguments


@pytest.mark.parametrize(
    ("step", "field"),
    [
        (W.BASIC, "training_mode"),
        (W.BASIC, "training_method"),
        (W.BASIC, "aiak_template"),
        (W.FAULT, "hang_minutes"),
        (W.ADVANCED, "tensorboard_path"),
        (W.ADVANCED, "retention_value"),
    ],
)
def test_a_field_required_whenever_it_is_shown_is_marked_required(alice_client, step, field):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=step)
    if step == W.BASIC:  # the AIAK fields come with AIAK mode
        post_step(alice_client, draft, W.BASIC, basic_data(creation_mode="aiak"), action="save")

    page = alice_client.get(step_url(draft, step)).content.decode()

    label = re.search(rf'<label for="id_{field}"[^>]*>.*?</label>', page, re.S).group(0)
    assert '<span class="asteriskField">*</span>' in label
    tag = re.search(rf'<(?:input|select)[^>]*name="{field}"[^>]*>', page).group(0)
    assert 'aria-required="true"' in tag


def test_a_stepper_link_pressed_on_a_step_keeps_what_was_typed_there(alice_client):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.IMAGE)

    r = post_step(
        alice_client,
        draft,
        W.IMAGE,
        image_data(command="python3 half_typed.py", image=""),
        action="goto-basic",
    )

    draft.refresh_from_db()
    assert r.status_code == 302 and r["Location"] == step_url(draft, W.BASIC)
    assert draft.data["image"]["command"] == ["python3 half_typed.py"]


def test_the_language_switch_on_a_step_saves_what_was_typed_then_shows_the_step_in_english(
    alice_client,
):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.IMAGE)

    r = post_step(
        alice_client, draft, W.IMAGE, image_data(command="python3 typed.py"), action="language-en"
    )
    page = alice_client.get(r["Location"]).content.decode()

    draft.refresh_from_db()
    assert r.status_code == 302 and r["Location"] == step_url(draft, W.IMAGE)
    assert r.cookies["django_language"].value == "en"
    assert draft.data["image"]["command"] == ["python3 typed.py"]
    assert '<html lang="en">' in page and "python3 typed.py" in page


def test_the_language_switch_with_htmx_reloads_the_whole_step_so_the_navigation_changes_too(
    alice_client,
):
    draft = new_draft(alice_client)

    r = post_step(
        alice_client, draft, W.BASIC, basic_data(name="typed-name"), action="language-en", htmx=True
    )

    draft.refresh_from_db()
    assert r.status_code == 200 and r["HX-Redirect"] == step_url(draft, W.BASIC)
    assert r.cookies["django_language"].value == "en"
    assert draft.data["basic"]["name"] == ["typed-name"]


def test_the_language_switch_works_on_the_review_step_and_ignores_unknown_languages(alice_client):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft)

    review = alice_client.post(step_url(draft, W.REVIEW), {"action": "language-en"})
    unknown = post_step(alice_client, draft, W.IMAGE, image_data(), action="language-xx")

    assert review.status_code == 302 and review.cookies["django_language"].value == "en"
    assert unknown.status_code == 302 and unknown["Location"] == step_url(draft, W.IMAGE)
    assert "django_language" not in unknown.cookies


def test_leaving_a_done_step_by_a_stepper_link_with_a_problem_takes_its_mark_away(alice_client):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft)

    onward = post_step(alice_client, draft, W.IMAGE, image_data(image=""), action="goto-review")
    draft.refresh_from_db()
    back = post_step(alice_client, draft, W.IMAGE, image_data(image=""), action="goto-basic")
    draft.refresh_from_db()

    assert onward.status_code == 200  # stays, showing why, as 下一步 would
    assert field_errors(onward, "id_image") == ["请填写镜像地址。"]
    assert back.status_code == 302 and back["Location"] == step_url(draft, W.BASIC)
    assert W.IMAGE not in draft.completed_steps
    assert W.first_incomplete(draft) == W.IMAGE


@pytest.mark.parametrize(
    ("step", "switched_off", "switched_on", "field_id"),
    [
        (W.FAULT, {"hang_minutes": "abc"}, {"hang_detection": "on"}, "id_hang_minutes"),
        (
            W.FAULT,
            {"retry_limit": "9", "custom_patterns": "x" * 20001},
            {"fault_tolerance": "on"},
            "id_retry_limit",
        ),
        (
            W.ADVANCED,
            advanced_data(tensorboard_path="/" + "t" * 1100),
            {"tensorboard": "on"},
            "id_tensorboard_path",
        ),
        (
            W.ADVANCED,
            advanced_data(retention_value="0", retention_unit="x"),
            {"auto_delete": "on"},
            "id_retention_value",
        ),
    ],
)
def test_a_switch_that_is_off_ignores_what_its_hidden_settings_hold(
    alice_client, step, switched_off, switched_on, field_id
):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=step)

    on = post_step(alice_client, draft, step, {**switched_off, **switched_on})
    off = post_step(alice_client, draft, step, switched_off)

    assert on.status_code == 200 and field_errors(on, field_id)  # checked while it is on
    assert off.status_code == 302 and off["Location"] == step_url(
        draft, W.STEPS[W.STEPS.index(step) + 1]
    )
    page = alice_client.get(step_url(draft, step)).content.decode()
    wrapper = {"id_hang_minutes": "hang-fields", "id_retry_limit": "fault-tolerance-fields"}.get(
        field_id, "tensorboard-fields" if "tensorboard" in field_id else "retention-fields"
    )
    assert f'id="{wrapper}"' in page  # what console.css hides while the switch is off


def test_the_review_writes_chinese_lists_and_colons_the_chinese_way(alice_client):
    draft = new_draft(alice_client)
    alerts = advanced_data(alert_items=["jobRunning", "jobFailed"], alert_emails="ops@example.com")
    complete_steps(alice_client, draft, **{W.ADVANCED: alerts})

    review = alice_client.get(step_url(draft, W.REVIEW)).content.decode()

    assert "任务进入运行状态、任务失败退出" in review
    assert f"{A800_SHOWN}：需要 3 张，空闲 8 张" in review


def test_the_review_counts_a_queue_group_of_one_task_in_the_singular(alice_client):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, **{W.SUBMISSION: submission_data(mode="queue", total="1")})
    alice_client.cookies["django_language"] = "en"

    one = alice_client.get(step_url(draft, W.REVIEW)).content.decode()
    complete_steps(alice_client, draft, **{W.SUBMISSION: submission_data(mode="queue", total="3")})
    three = alice_client.get(step_url(draft, W.REVIEW)).content.decode()

    assert "(1 task, at most 1 at once)" in one
    assert "(3 tasks, at most 1 at once)" in three


def test_a_standalone_job_ignores_what_the_queue_task_fields_hold(alice_client, alice):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.SUBMISSION)

    r = post_step(
        alice_client,
        draft,
        W.SUBMISSION,
        submission_data(mode="standalone", total="5", concurrency="9"),
    )
    queue_blank = post_step(
        alice_client, draft, W.SUBMISSION, submission_data(mode="queue", total="", concurrency="")
    )

    assert r.status_code == 302  # not "concurrent tasks must be between 1 and 5"
    leftover = post_step(
        alice_client,
        draft,
        W.SUBMISSION,
        submission_data(mode="standalone", total="2.5", target_queue="no-such-queue"),
    )
    assert leftover.status_code == 302  # hidden, ignored: not a problem nobody can see
    assert queue_blank.status_code == 200
    assert field_errors(queue_blank, "id_total") == ["这个字段是必填项。"]
    post_step(alice_client, draft, W.SUBMISSION, submission_data(mode="standalone", total="5"))
    complete_steps(alice_client, draft)
    alice_client.post(reverse("wizard-submit", args=[draft.id]))
    submission = Job.objects.get(owner=alice).job_spec().submission
    assert (submission.mode, submission.total, submission.concurrency) == ("standalone", 1, 1)


def test_a_step_sent_back_with_problems_focuses_the_first_one_without_javascript(
    alice_client,
):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.DATA)

    r = post_step(alice_client, draft, W.DATA, data_data([("hostpath", "scratch", "relative")]))
    fine = alice_client.get(step_url(draft, W.BASIC)).content.decode()

    focused = re.findall(
        r"<(?:input|select|textarea)\b[^>]*\bautofocus\b[^>]*>", r.content.decode()
    )
    assert len(focused) == 1 and 'name="mounts-0-mount_path"' in focused[0]
    assert "autofocus" not in fine


def test_a_saved_secret_keeps_its_accessible_name(alice_client):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, **{W.IMAGE: image_data(envs=[("TOKEN", "s3cret", True)])})

    page = alice_client.get(step_url(draft, W.IMAGE)).content.decode()

    secret = re.search(r'<input[^>]*name="env-0-value"[^>]*>', page).group(0)
    assert 'type="password"' in secret and 'aria-label="值 1"' in secret


def test_a_row_tables_error_outlines_its_input_and_is_what_the_input_is_described_by(
    alice_client,
):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.DATA)

    r = post_step(alice_client, draft, W.DATA, data_data([("hostpath", "scratch", "relative")]))

    page = r.content.decode()
    field = re.search(r'<input[^>]*name="mounts-0-mount_path"[^>]*>', page).group(0)
    # The error first, then the help under the table (left39: the paths point at it).
    first, *rest = re.search(r'aria-describedby="([^"]+)"', field).group(1).split()
    assert rest == ["mount-help"]
    assert "is-invalid" in field and 'aria-invalid="true"' in field
    error = page[page.index(f'id="{first}"') :]
    assert "须以 / 开头" in error[: error.index("</div></div>")]


# -- ownership --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["step", "idle", "totals", "aiak", "queues", "example", "mount-row"]
)
def test_other_users_get_404_for_a_draft(alice_client, bob, client, name):
    draft = new_draft(alice_client)
    client.force_login(bob)
    url = {
        "step": step_url(draft, W.BASIC),
        "mount-row": reverse("wizard-mount-row", args=[draft.id]),
        "idle": reverse("wizard-idle", args=[draft.id]),
        "totals": reverse("wizard-totals", args=[draft.id]),
        "aiak": reverse("wizard-aiak", args=[draft.id]),
        "queues": reverse("wizard-queues", args=[draft.id]),
        "example": reverse("wizard-example", args=[draft.id]),
    }[name]

    assert client.get(url).status_code == 404


@pytest.mark.parametrize("name", ["totals", "aiak", "queues"])
def test_a_partial_checks_the_drafts_owner_with_one_plain_query_and_reads_nothing_else_of_it(
    alice, alice_client, name
):
    draft = new_draft(alice_client)
    url = reverse(f"wizard-{name}", args=[draft.id])

    with CaptureQueriesContext(connection) as queries:
        assert alice_client.get(url, headers=HTMX).status_code == 200

    (sql,) = [q["sql"] for q in queries.captured_queries if "jobs_draft" in q["sql"]]
    # The id as the database is given it ('<hex>' on SQLite, '<uuid>'::uuid on PostgreSQL).
    assert re.fullmatch(
        rf'SELECT "id" FROM "jobs_draft" WHERE "id" = \S+ AND "owner_id" = {alice.pk}', sql
    )


def test_a_drafts_id_alone_is_read_for_its_owner_only(alice, alice_client, bob):
    draft = new_draft(alice_client)

    found = W.owned_draft_id_only(draft_id=draft.id, owner=alice)

    assert found is not None and found.id == draft.id and found.owner == alice
    assert found.get_deferred_fields() == {
        f.attname for f in Draft._meta.concrete_fields if f.attname not in ("id", "owner_id")
    }
    assert found.data == Draft.objects.get(pk=draft.pk).data  # loads when touched, as .only()
    assert W.owned_draft_id_only(draft_id=draft.id, owner=bob) is None


@pytest.mark.parametrize("name", ["idle", "mount-row", "example"])
def test_a_partial_reads_the_drafts_pool_with_one_plain_query(alice, alice_client, name):
    draft = new_draft(alice_client)
    url = reverse(f"wizard-{name}", args=[draft.id]) + "?row=0"

    with CaptureQueriesContext(connection) as queries:
        assert alice_client.get(url, headers=HTMX).status_code == 200

    (sql,) = [q["sql"] for q in queries.captured_queries if "jobs_draft" in q["sql"]]
    assert re.fullmatch(
        rf'SELECT CASE .+ END FROM "jobs_draft" WHERE "id" = \S+ AND "owner_id" = {alice.pk}', sql
    )


@pytest.mark.parametrize(
    "basic",
    [
        {"resource_pool": ["local"]},
        {"resource_pool": ["first", "last"]},
        {"resource_pool": []},
        {"resource_pool": [3]},
        {"resource_pool": [True]},
        {"resource_pool": [None]},
        {"resource_pool": [{"id": "x"}]},
        {"resource_pool": [["nested"]]},
        {"resource_pool": ["池 'quoted' \"x\""]},
        {"resource_pool": "local"},
        {"resource_pool": 7},
        {"resource_pool": None},
        {"resource_pool": {"id": "local"}},
        {"name": ["job"]},
        ["resource_pool"],
        "text",
        None,
    ],
)
def test_the_drafts_pool_read_plainly_is_what_the_orm_reads(alice, bob, basic):
    draft = Draft.objects.create(owner=alice, data={"basic": basic, "image": {"x": ["y"]}})
    (orm,) = Draft.objects.filter(pk=draft.pk).values_list("data__basic__resource_pool", flat=True)

    found = W.owned_draft_pool_id(draft_id=draft.id, owner=alice)

    assert found == (str(orm[-1]) if isinstance(orm, list) and orm else "")
    assert W.owned_draft_pool_id(draft_id=draft.id, owner=bob) is None


def test_a_draft_with_no_basic_step_has_no_pool(alice):
    draft = Draft.objects.create(owner=alice, data={})

    assert W.owned_draft_pool_id(draft_id=draft.id, owner=alice) == ""


def test_the_cards_and_cores_active_local_jobs_hold_read_plainly_are_what_the_orm_reads(
    alice_client, alice
):
    from jobs.models import ACTIVE_STATUSES, JobStatus, LocalRun
    from jobs.runner import held_by_active_runs
    from jobs.services import jobs_submit

    draft = new_draft(alice_client)
    complete_steps(alice_client, draft)
    draft.refresh_from_db()
    spec = W.assemble(W.wizard_state(draft)).spec
    held = [
        (JobStatus.RUNNING, {A800: [0, 1, 2]}, []),
        (JobStatus.STOPPING, {A800: [5], "other": [0]}, [1, 2]),
        (JobStatus.SUBMITTING, {}, [3]),
        (JobStatus.SUCCEEDED, {A800: [3, 4]}, [4]),
        (JobStatus.QUEUED, {A800: [6]}, []),
    ]
    for i, (status, devices, cpus) in enumerate(held):
        [job] = jobs_submit(owner=alice, spec=spec, submit_key=f"held-{i}")
        Job.objects.filter(pk=job.pk).update(status=status)
        LocalRun.objects.create(job=job, devices=devices, cpus=cpus)
    [elsewhere] = jobs_submit(owner=alice, spec=spec, submit_key="elsewhere")
    Job.objects.filter(pk=elsewhere.pk).update(status=JobStatus.RUNNING, backend="aihc")
    LocalRun.objects.create(job=elsewhere, devices={A800: [7]})
    orm = LocalRun.objects.filter(
        job__backend="local", job__status__in=ACTIVE_STATUSES
    ).values_list("devices", "cpus")

    found = held_by_active_runs()

    def canonical(runs):  # PostgreSQL's jsonb keeps a dict's keys in an order of its own
        return sorted(json.dumps(run, sort_keys=True) for run in runs)

    assert canonical(found) == canonical(orm)
    assert canonical(found) == canonical((d, c) for _, d, c in held[:3])


def test_other_users_cannot_post_submit_or_discard_a_draft(alice_client, bob, client):
    draft = new_draft(alice_client)
    client.force_login(bob)

    assert post_step(client, draft, W.BASIC, basic_data()).status_code == 404
    assert client.post(reverse("wizard-submit", args=[draft.id])).status_code == 404
    assert client.post(reverse("wizard-discard", args=[draft.id])).status_code == 404
    assert Draft.objects.filter(pk=draft.pk).exists()


def test_anonymous_users_are_sent_to_login(client, db):
    r = client.get(reverse("wizard-start"))

    assert r.status_code == 302
    assert r["Location"].startswith("/login/")


def logged_in_again(client, username, next_url):
    """The login form sent as a person sends it after the login page came up for `next_url`."""
    r = client.post(
        reverse("login") + f"?next={next_url}",
        {"username": username, "password": f"{username}-password", "next": next_url},
    )
    assert r.status_code == 302 and r["Location"] == next_url
    return r


def expire_log_in(client) -> None:
    """The session ends as it does once SESSION_COOKIE_AGE is past (or logged out elsewhere)."""
    Session.objects.filter(session_key=client.session.session_key).update(
        expire_date=timezone.now() - timedelta(seconds=1)
    )


@pytest.mark.parametrize("htmx", [False, True], ids=["plain", "htmx"])
def test_a_step_sent_after_the_log_in_expired_is_saved_once_logged_in_again(alice_client, htmx):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.IMAGE)
    expire_log_in(alice_client)

    r = post_step(alice_client, draft, W.IMAGE, image_data(command="torchrun typed.py"), htmx=htmx)

    if htmx:
        assert r.status_code == 401
        r = alice_client.get(step_url(draft, W.IMAGE))  # the reload the banner asks for
    assert r.status_code == 302 and r["Location"].startswith("/login/")
    draft.refresh_from_db()
    assert W.IMAGE not in draft.data
    logged_in_again(alice_client, "alice", step_url(draft, W.IMAGE))
    r = alice_client.get(step_url(draft, W.IMAGE))
    assert r.status_code == 302 and r["Location"] == step_url(draft, W.RESOURCES)
    draft.refresh_from_db()
    assert draft.data[W.IMAGE]["command"] == ["torchrun typed.py"]
    assert W.IMAGE in draft.completed_steps
    page = alice_client.get(r["Location"]).content.decode()
    assert "登录已失效" in page
    # Taken once: the step opened again later shows the draft, nothing is sent a second time.
    assert alice_client.get(step_url(draft, W.IMAGE)).status_code == 200


def test_a_step_sent_logged_out_is_never_saved_into_the_draft_of_whoever_logs_in_next(
    alice_client, alice, bob
):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.IMAGE)
    alice_client.post(reverse("logout"))
    r = post_step(alice_client, draft, W.IMAGE, image_data(command="torchrun typed.py"))
    assert r.status_code == 302 and r["Location"].startswith("/login/")

    logged_in_again(alice_client, "bob", step_url(draft, W.IMAGE))
    r = alice_client.get(step_url(draft, W.IMAGE))

    assert r.status_code == 404
    draft.refresh_from_db()
    assert W.IMAGE not in draft.data
    assert "torchrun typed.py" not in json.dumps(dict(alice_client.session))


def test_a_step_sent_logged_out_is_kept_an_hour_and_a_log_in_lasts_its_usual_age_again(
    alice_client, settings
):
    """A logged-out visitor's session keeping a step lasted SESSION_COOKIE_AGE (14 days), and
    one was made per post by a client without cookies: rows of up to 256 KB piled up (left28)."""
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.IMAGE)
    alice_client.post(reverse("logout"))

    r = post_step(alice_client, draft, W.IMAGE, image_data(command="torchrun typed.py"))

    assert r.status_code == 302 and r["Location"].startswith("/login/")
    kept = Session.objects.get(session_key=alice_client.session.session_key)
    assert timezone.now() < kept.expire_date <= timezone.now() + timedelta(hours=1)
    logged_in_again(alice_client, "alice", step_url(draft, W.IMAGE))
    session = Session.objects.get(session_key=alice_client.session.session_key)
    usual = timedelta(seconds=settings.SESSION_COOKIE_AGE)
    assert session.expire_date > timezone.now() + usual - timedelta(hours=1)
    # The step kept is still saved once the owner opens it again.
    r = alice_client.get(step_url(draft, W.IMAGE))
    assert r.status_code == 302 and r["Location"] == step_url(draft, W.RESOURCES)


def test_a_post_sent_logged_out_keeps_only_the_steps_fields_and_nothing_oversized(
    client, alice_client
):
    draft_url = reverse("wizard-step", args=[new_draft(alice_client).id, W.IMAGE])
    r = client.post(draft_url, {**image_data(), "action": "next", "extra": "x" * 1000})
    assert r.status_code == 302 and r["Location"].startswith("/login/")
    kept = client.session["wizard_step_posted_logged_out"]["post"]
    assert kept["command"] == ["torchrun train.py"] and kept["action"] == ["next"]
    assert "extra" not in kept

    big = image_data(envs=[(f"V{i}", "x" * 40_000) for i in range(10)])
    r = client.post(draft_url.replace(W.IMAGE, W.ADVANCED), {**big, "action": "next"})
    r = client.post(draft_url, {**big, "action": "next"})

    assert r.status_code == 302 and r["Location"].startswith("/login/")
    assert client.session["wizard_step_posted_logged_out"]["step"] == W.ADVANCED


@pytest.mark.parametrize("submitted", [False, True], ids=["no-such-draft", "submitted"])
def test_a_post_sent_logged_out_for_no_open_draft_keeps_nothing(client, alice_client, submitted):
    # Anyone may post to a step's address logged out: a session row is not theirs to fill.
    draft = new_draft(alice_client)
    if submitted:
        Draft.objects.filter(pk=draft.pk).update(submitted_at=timezone.now())
    else:
        Draft.objects.filter(pk=draft.pk).delete()

    r = client.post(step_url(draft, W.IMAGE), {**image_data(), "action": "next"})

    assert r.status_code == 302 and r["Location"].startswith("/login/")
    assert "wizard_step_posted_logged_out" not in client.session


def test_the_drafts_list_shows_only_my_open_drafts(alice_client, bob, client):
    mine = new_draft(alice_client)
    client.force_login(bob)
    new_draft(client)

    r = alice_client.get(reverse("wizard-start"))

    html = r.content.decode()
    assert r.status_code == 200
    assert str(mine.id) in html
    assert html.count("/discard/") == 1


def test_resume_in_the_drafts_list_opens_the_first_step_the_draft_has_not_passed(alice_client):
    fresh = new_draft(alice_client)
    halfway = new_draft(alice_client)
    complete_steps(alice_client, halfway, upto=W.DATA)
    finished = new_draft(alice_client)
    complete_steps(alice_client, finished)

    r = alice_client.get(reverse("wizard-start"))

    html = r.content.decode()
    assert r.status_code == 200
    assert f'href="{step_url(fresh, W.BASIC)}"' in html
    assert f'href="{step_url(halfway, W.DATA)}"' in html
    assert f'href="{step_url(finished, W.REVIEW)}"' in html
    # Counted of the wizard's 8 steps, as its "Step 4 of 8" (qa101: "7 / 7" beside a wizard of
    # 8, the review being a step); a draft can reach 7 of them, the review the job's submit.
    assert "3 / 8" in html and "7 / 8" in html and "/ 7<" not in html
    review = alice_client.get(step_url(finished, W.REVIEW)).content.decode()
    assert "Step 8 of 8" in review or "第 8 步，共 8 步" in review


def test_the_drafts_list_pages_through_every_draft(alice_client, alice):
    drafts = [Draft.objects.create(owner=alice, data={}) for _ in range(25)]

    first = alice_client.get(reverse("wizard-start")).content.decode()
    second = alice_client.get(reverse("wizard-start"), {"page": 2}).content.decode()

    shown = [d for d in drafts if str(d.id) in first] + [d for d in drafts if str(d.id) in second]
    assert len(shown) == 25 and len(set(shown)) == 25
    assert 'href="?page=2"' in first and 'href="?page=1"' in second


def test_a_draft_is_discarded_once_the_question_is_answered(alice_client, alice):
    draft = new_draft(alice_client)

    r = alice_client.post(reverse("wizard-discard", args=[draft.id]), {"confirmed": "1"})

    assert r.status_code == 302
    assert not Draft.objects.filter(owner=alice).exists()


def test_without_javascript_discard_asks_first_on_a_page_of_its_own_and_keeps_the_draft(
    alice_client, alice
):
    draft = new_draft(alice_client)
    post_step(alice_client, draft, W.BASIC, basic_data(name="keep-me"))

    r = alice_client.post(reverse("wizard-discard", args=[draft.id]), {"page": "2"})

    assert r.status_code == 200
    page = r.content.decode()
    assert "删除草稿 keep-me？" in page and "其中的内容无法恢复" in page
    assert 'name="confirmed" value="1"' in page and 'name="page" value="2"' in page
    assert f'href="{reverse("wizard-start")}?page=2"' in page  # 取消, back to that page
    assert Draft.objects.filter(pk=draft.pk).exists()
    english = alice_client.post(
        reverse("wizard-discard", args=[draft.id]), headers={"Accept-Language": "en"}
    )
    assert "Discard draft keep-me?" in english.content.decode()


def test_discard_pressed_again_answers_as_the_first_did_instead_of_not_found(alice_client):
    draft = new_draft(alice_client)
    url = reverse("wizard-discard", args=[draft.id])

    first = alice_client.post(url, {"confirmed": "1"}, follow=True)
    again = alice_client.post(url, {"confirmed": "1"}, follow=True)
    unconfirmed = alice_client.post(url, follow=True)

    for r in (first, again, unconfirmed):
        assert r.status_code == 200 and r.redirect_chain == [(reverse("wizard-start"), 302)]
        assert "草稿已丢弃" in r.content.decode()


def test_a_discard_of_a_draft_someone_else_discarded_is_still_not_found(alice_client, bob, client):
    draft = new_draft(alice_client)
    alice_client.post(reverse("wizard-discard", args=[draft.id]), {"confirmed": "1"})
    client.force_login(bob)

    r = client.post(reverse("wizard-discard", args=[draft.id]), {"confirmed": "1"})

    assert r.status_code == 404


def test_the_drafts_list_uses_a_fixed_number_of_queries(alice_client, django_assert_num_queries):
    for _ in range(5):
        new_draft(alice_client)

    # session, user, drafts (the import's pool select shows no idle counts, so the local
    # pool's busy cards are not read)
    with django_assert_num_queries(3):
        r = alice_client.get(reverse("wizard-start"))

    assert r.status_code == 200


# -- garbage in ---------------------------------------------------------------------------

GARBAGE = [
    {},
    {"action": "remove-row-99999"},
    {"action": "'; DROP TABLE"},
    {"env-TOTAL_FORMS": "abc", "roles-TOTAL_FORMS": "-5", "mounts-TOTAL_FORMS": "100000"},
    # "²": a digit to str.isdigit(), no number to int().
    {"env-TOTAL_FORMS": "²", "env-²-name": "A", "roles-TOTAL_FORMS": "1", "roles-²-replicas": "1"},
    {"env-TOTAL_FORMS": "2", "env-0-name": "\x00", "env-1-value": "x" * 50000},
    {
        "roles-TOTAL_FORMS": "1",
        "roles-0-replicas": "1e9",
        "roles-0-accelerators": "NaN",
        "roles-0-use_accelerator": "on",
    },
    {"name": "x" * 5000, "resource_pool": "nope", "framework": "Keras", "queue": "\u202e"},
    {
        "shared_memory_gi": "-1",
        "timeout_minutes": "99999999999999999999",
        "total": "0",
        "concurrency": "-3",
    },
    {
        "hang_detection": "on",
        "hang_minutes": "abc",
        "retry_limit": "9",
        "alert_items": ["nope"],
        "alert_webhooks": "ftp://x",
    },
    {
        "mounts-TOTAL_FORMS": "1",
        "mounts-0-type": "pfs",
        "mounts-0-mount_path": "../etc",
        "storage_enabled": "on",
    },
]


@pytest.mark.parametrize("step", W.FORM_STEPS)
@pytest.mark.parametrize("payload", GARBAGE)
def test_garbage_posts_never_fail(alice_client, step, payload):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=step)

    plain = alice_client.post(step_url(draft, step), payload)
    htmx = alice_client.post(step_url(draft, step), payload, headers=HTMX)

    assert plain.status_code in (200, 302)
    assert htmx.status_code == 200
    assert alice_client.get(step_url(draft, step)).status_code in (200, 302)


def test_garbage_partial_queries_never_fail(alice_client):
    draft = new_draft(alice_client)
    queries = [
        (reverse("wizard-idle", args=[draft.id]), {"row": "x", "roles-0-accelerators": "-1"}),
        (
            reverse("wizard-idle", args=[draft.id]),
            {
                "row": "0",
                "roles-0-use_accelerator": "on",
                "roles-0-accelerator_type": "<b>",
                "roles-0-replicas": "99999999999",
            },
        ),
        (
            reverse("wizard-aiak", args=[draft.id]),
            {"creation_mode": "aiak", "aiak_template": "../../etc"},
        ),
        (
            reverse("wizard-totals", args=[draft.id]),
            {"roles-TOTAL_FORMS": "9" * 5000, "roles-0-replicas": "9" * 5000},
        ),
        (
            reverse("wizard-totals", args=[draft.id]),
            {"roles-TOTAL_FORMS": "1", "roles-0-use_accelerator": "on", "roles-0-replicas": "x"},
        ),
        (reverse("wizard-queues", args=[draft.id]), {"resource_pool": "\x00"}),
        (reverse("wizard-example", args=[draft.id]), {"example": "<script>"}),
        (reverse("wizard-mount-row", args=[draft.id]), {"row": "x", "mounts-0-type": "<b>"}),
        (
            reverse("wizard-mount-row", args=[draft.id]),
            {"row": "9" * 50, "mounts-49-type": "hostpath", "mounts-49-name": "\x00"},
        ),
    ]
    for url, params in queries:
        assert alice_client.get(url, params).status_code == 200


def test_a_cpu_only_role_ignores_what_its_card_fields_hold(alice_client, alice):
    # An MPI master turned CPU-only hides its card type and count (console.css): what they
    # still hold, even a number that is no number, must not block the step.
    draft = new_draft(alice_client)
    mpi = {W.BASIC: basic_data(framework=S.MPI)}
    complete_steps(alice_client, draft, upto=W.RESOURCES, **mpi)
    cpu_master = {"name": "master", "replicas": "1", "accelerator_type": A800}
    resources = resources_data([{**cpu_master, "accelerators": "1.5"}, role("worker", 1)])

    r = post_step(alice_client, draft, W.RESOURCES, resources)

    assert r.status_code == 302, _errors(r)
    complete_steps(alice_client, draft, **mpi, **{W.RESOURCES: resources})
    alice_client.post(reverse("wizard-submit", args=[draft.id]))
    master = Job.objects.get(owner=alice).job_spec().roles[0]
    assert (master.accelerator_type, master.accelerators) == ("", 0)


def test_a_retention_out_of_range_says_the_range_in_the_words_of_the_other_limits(alice_client):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.ADVANCED)

    r = post_step(
        alice_client, draft, W.ADVANCED, advanced_data(auto_delete="on", retention_value="0")
    )

    # As the hang threshold and the timeout say theirs, not Django's "确保该值大于或等于1。"
    assert field_errors(r, "id_retention_value") == ["保留时长须在 1 到 999999 之间。"]


def test_a_volume_mounted_over_each_instances_own_tmp_is_refused_on_its_row(alice_client):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.DATA)

    r = post_step(
        alice_client,
        draft,
        W.DATA,
        data_data(mounts=[("hostpath", "scratch", "/workspace"), ("hostpath", "scratch", "/tmp")]),
    )

    assert r.status_code == 200
    assert field_errors(r, "id_mounts-1-mount_path") == [
        "在本机资源池上，/tmp 是每个实例自己的目录（其主目录和工作目录）：请把卷挂载到别处，例如 "
        "/workspace，或挂载到其下，例如 /tmp/data。"
    ]
    assert field_errors(r, "id_mounts-0-mount_path") == []
    below = data_data(
        mounts=[("hostpath", "scratch", "/workspace"), ("hostpath", "scratch", "/tmp/data")]
    )
    assert post_step(alice_client, draft, W.DATA, below).status_code == 302


def test_a_volume_mounted_over_a_file_of_this_machine_is_refused_on_its_row(alice_client):
    """qa100: /etc/passwd was taken, and the job failed at start with "bwrap: Can't mkdir
    /etc/passwd: Not a directory": a local job sees the machine's own tree as its root."""
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.DATA)
    mounts = [
        ("hostpath", "scratch", "/etc/passwd"),
        ("hostpath", "scratch", "/etc/a-folder-not-there-yet"),
        ("hostpath", "scratch", "/workspace"),
        ("hostpath", "scratch", "/workspace/passwd"),  # the volume's, not the machine's
    ]

    r = post_step(alice_client, draft, W.DATA, data_data(mounts=mounts))
    alice_client.cookies["django_language"] = "en"
    below = [("hostpath", "scratch", "/etc/passwd/below")]  # a file above it
    english = post_step(alice_client, draft, W.DATA, data_data(mounts=below))

    assert r.status_code == 200
    assert field_errors(r, "id_mounts-0-mount_path") == [
        "本机任务以本机自己的文件为根目录，而那里的 /etc/passwd 是文件而非目录：卷无法挂载到它"
        "上面。请挂载到一个目录，或挂载到尚不存在的路径，例如 /workspace。"
    ]
    assert [field_errors(r, f"id_mounts-{i}-mount_path") for i in (1, 2, 3)] == [[], [], []]
    assert field_errors(english, "id_mounts-0-mount_path") == [
        "A local job sees this machine's own files as its root, and there /etc/passwd is a "
        "file, not a folder: a volume cannot be mounted over it. Mount it at a folder, or at "
        "a path not there yet, e.g. /workspace."
    ]
    draft.refresh_from_db()
    assert W.DATA not in draft.completed_steps


def test_a_mount_path_below_a_file_in_a_folder_jobs_see_empty_is_taken_without_naming_it(
    alice_client, settings
):
    """Review of fix110: below /root/.ssh/id_ed25519 the refusal told the submitter the key
    was there; the sandbox shows that folder empty (the console's checkout here), and the
    volume is mounted in it."""
    hidden_file = Path(settings.BASE_DIR) / "manage.py"
    assert hidden_file.is_file()
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.DATA)

    mounts = [("hostpath", "scratch", f"{hidden_file}/below")]
    r = post_step(alice_client, draft, W.DATA, data_data(mounts=mounts))

    assert r.status_code == 302
    draft.refresh_from_db()
    assert W.DATA in draft.completed_steps


def test_an_mpi_job_may_not_mount_a_volume_where_the_runner_puts_what_mpirun_needs(alice_client):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.DATA, **{W.BASIC: basic_data(framework=S.MPI)})
    mounts = [("hostpath", "scratch", "/etc/mpi"), ("hostpath", "scratch", "/tmp/.mpi/x")]

    r = post_step(alice_client, draft, W.DATA, data_data(mounts=mounts))

    assert r.status_code == 200
    for i, folder in enumerate(["/etc/mpi", "/tmp/.mpi"]):
        assert field_errors(r, f"id_mounts-{i}-mount_path") == [
            f"在本机资源池上，{folder} 存放着 MPI 启动任务各进程所需的内容（hostfile 和每个 worker "
            "的代理）：请把卷挂载到别处，例如 /workspace。"
        ]
    # A PyTorch job has no such folders: /etc/mpi is a path like any other there.
    pytorch = new_draft(alice_client)
    complete_steps(alice_client, pytorch, upto=W.DATA)
    ok = data_data(mounts=[("hostpath", "scratch", "/etc/mpi")])
    assert post_step(alice_client, pytorch, W.DATA, ok).status_code == 302


def test_a_tensorboard_log_path_in_a_read_only_mount_is_refused_on_the_path_naming_the_mount(
    alice_client, tmp_path
):
    (tmp_path / "out").mkdir()
    draft = new_draft(alice_client)
    data = data_data(
        mounts=[("hostpath", "scratch", "/data"), ("hostpath", "scratch", "/data/out")]
    )
    data.update({"mounts-0-access": "ro", "mounts-1-source_path": "out"})
    complete_steps(alice_client, draft, upto=W.ADVANCED, **{W.DATA: data})

    r = post_step(
        alice_client,
        draft,
        W.ADVANCED,
        advanced_data(tensorboard="on", tensorboard_path="/data/tb"),
    )

    assert r.status_code == 200
    assert field_errors(r, "id_tensorboard_path") == [
        "TensorBoard 日志路径 /data/tb 位于本任务以只读方式挂载的 /data 中（数据源步骤）：任务代码无法"
        "在那里写入事件文件。请选择读写挂载上的路径，或以读写方式挂载 /data。"
    ]
    # In the read-write mount inside it, the code can write: the deepest mount decides.
    inside = advanced_data(tensorboard="on", tensorboard_path="/data/out/tb")
    assert post_step(alice_client, draft, W.ADVANCED, inside).status_code == 302


def test_a_source_path_naming_a_file_says_the_local_pool_mounts_folders_not_that_it_is_missing(
    alice_client, tmp_path
):
    (tmp_path / "llama").mkdir()
    (tmp_path / "llama" / "tokenizer.json").write_text("{}")
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.DATA)
    data = data_data(mounts=[("hostpath", "scratch", "/tokenizer")])
    data["mounts-0-source_path"] = "llama/tokenizer.json"

    r = post_step(alice_client, draft, W.DATA, data)

    assert r.status_code == 200
    assert field_errors(r, "id_mounts-0-source_path") == [
        "存储卷“scratch”中的“llama/tokenizer.json”是一个文件，而本机资源池只挂载目录：请填写包含它的目录，"
        "任务在挂载路径下读取该文件。"
    ]
    # A missing folder mounted read-only is not made (left40: a read-write one is, at start).
    data["mounts-0-source_path"] = "llama/missing.json"
    data["mounts-0-access"] = "ro"
    missing = post_step(alice_client, draft, W.DATA, data)
    assert field_errors(missing, "id_mounts-0-source_path") == [
        "存储卷“scratch”中不存在“llama/missing.json”，而该挂载为只读：为它创建的目录是空的且不能写入，"
        "因此路径很可能输错了。请选择已存在的目录（留空或填 / 为整卷），或改为读写挂载，任务启动时会创建该目录。"
    ]


def test_a_source_path_with_a_doubled_slash_is_told_so_not_that_it_has_dot_dot(alice_client):
    """QA 99: "ds//train" was refused as "may not contain '..'", which it does not."""
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.DATA)
    data = data_data(mounts=[("hostpath", "scratch", "/train")])
    data["mounts-0-source_path"] = "ds//train"

    r = post_step(alice_client, draft, W.DATA, data)

    assert r.status_code == 200
    assert field_errors(r, "id_mounts-0-source_path") == [
        "源路径不能有连续的 “/”：请填写“ds/train”。"
    ]
    assert 'value="ds//train"' in r.content.decode()  # what was typed, kept


def test_a_source_path_climbing_out_with_dot_dot_is_told_so_once(alice_client):
    """qa101: `../../etc` was told it may not contain '..' and that it must stay inside the
    volume, two of the step's "3 problems"."""
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.DATA)
    data = data_data(mounts=[("hostpath", "scratch", "/train")])
    data["mounts-0-source_path"] = "../../etc"

    r = post_step(alice_client, draft, W.DATA, data)

    assert r.status_code == 200
    assert field_errors(r, "id_mounts-0-source_path") == ["源路径相对于存储卷，不能包含 “..”。"]
    assert 'value="../../etc"' in r.content.decode()  # what was typed, kept


@pytest.mark.parametrize(
    "typed, message",
    [
        ("", "请填写容器挂载路径，例如 /workspace。"),
        ("data", "挂载路径须以 / 开头，例如 /workspace/data。"),
    ],
    ids=["empty", "relative"],
)
def test_a_second_mount_row_without_an_absolute_path_is_refused_on_its_field_not_a_server_error(
    alice_client, typed, message
):
    # qa74: the local pool compared /workspace with the row just added (commonpath raised on
    # an absolute path beside an empty or relative one): 下一步 answered 500.
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.DATA)
    data = data_data(mounts=[("hostpath", "scratch", "/workspace"), ("hostpath", "scratch", typed)])

    r = post_step(alice_client, draft, W.DATA, data)

    assert r.status_code == 200
    assert message in " ".join(field_errors(r, "id_mounts-1-mount_path"))
    assert field_errors(r, "id_mounts-0-mount_path") == []


@pytest.mark.parametrize(
    "typed, message",
    [
        # qa113: a relative path was asked for as if the field were empty.
        ("logs/tb", "TensorBoard 日志路径须为绝对路径（以 / 开头），例如 /workspace/tb。"),
        (
            "/workspace/tb/",
            "TensorBoard 日志路径须为规范的绝对路径：不能包含 “..”，不能有连续的 “/”，也不能以 “/” 结尾。",
        ),
        (
            "/workspace/../tb",
            "TensorBoard 日志路径须为规范的绝对路径：不能包含 “..”，不能有连续的 “/”，也不能以 “/” 结尾。",
        ),
        ("/workspace／tb", "路径中有全角斜杠"),
    ],
)
def test_a_tensorboard_log_path_that_is_not_a_plain_absolute_path_says_what_is_wrong_with_it(
    alice_client, typed, message
):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.ADVANCED)

    r = post_step(
        alice_client, draft, W.ADVANCED, advanced_data(tensorboard="on", tensorboard_path=typed)
    )

    assert r.status_code == 200
    [shown] = field_errors(r, "id_tensorboard_path")
    assert shown.startswith(message)


def test_a_mount_rows_path_with_a_problem_is_described_by_the_problem_then_the_help(alice_client):
    # The paths point at the help under the table (qa64); a widget naming its own
    # description took Django's pointer at the problem away, so the problem is put first.
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.DATA)

    page = post_step(
        alice_client, draft, W.DATA, data_data(mounts=[("hostpath", "", "")])
    ).content.decode()

    field = re.search(r'<input[^>]*name="mounts-0-mount_path"[^>]*>', page).group(0)
    assert 'aria-invalid="true"' in field
    assert 'aria-describedby="id_mounts-0-mount_path_error mount-help"' in field
    assert 'id="id_mounts-0-mount_path_error"' in page
    source = re.search(r'<input[^>]*name="mounts-0-source_path"[^>]*>', page).group(0)
    # The local pool draws no node's-disk help (qa93: its rows named it all the same).
    assert 'aria-describedby="mount-help"' in source


@pytest.mark.parametrize(
    ("network", "said"),
    [
        ("host", "是（本机资源池的每个任务都使用本机的网络）"),
        ("isolated", "否（本机资源池的每个任务都在自己的网络命名空间中运行）"),
    ],
    ids=["host", "isolated"],
)
def test_the_review_says_the_local_pools_host_network_as_it_runs_the_job(
    alice_client, settings, network, said
):
    # qa78: "主机网络：否" for a local job whose replicas share this machine's network.
    settings.LOCAL_JOB_NETWORK = network
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft)

    page = html.unescape(alice_client.get(step_url(draft, W.REVIEW)).content.decode())

    assert re.search(r"<dt[^>]*>主机网络</dt><dd[^>]*>([^<]*)</dd>", page).group(1) == said


@pytest.mark.parametrize(
    ("language", "said"),
    [
        ("zh-hans", "该资源池不提供加速芯片：其任务在 CPU 上运行。"),
        ("en", "This pool offers no cards: its jobs run on CPUs."),
    ],
)
def test_cards_asked_of_a_pool_without_any_are_refused_saying_the_pool_has_none(
    alice_client, settings, language, said
):
    # qa93: 卡型 offered only "—", and "请选择卡型。" did not say there was nothing to choose.
    settings.LOCAL_ACCELERATORS = ""
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.RESOURCES)
    alice_client.cookies["django_language"] = language
    r = post_step(
        alice_client,
        draft,
        W.RESOURCES,
        resources_data(roles=[role("master", 1, card=""), role("worker", 1, card="")])
        | {"roles-0-use_accelerator": "on"},
    )
    assert field_errors(r, "id_roles-0-accelerator_type") == [said]
