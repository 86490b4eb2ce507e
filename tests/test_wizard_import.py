"""从请求导入 (Import from a request): a CreateJob body pasted or uploaded on the drafts page
becomes a new draft with every step filled in (jobs/wizard_import.py)."""

from __future__ import annotations

import copy
import html
import json
import re
import uuid

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from jobs import spec as S
from jobs import wizard as W
from jobs import wizard_import as I
from jobs.aihc.mapping import v2_from_v1
from jobs.models import Draft, Job

from .test_wizard import A800, HTMX, data_data, post_step, step_url

SECRET = "s3cr3t-token-do-not-show"

# What a team holds from a script: a v1 CreateJob body (resourcePoolId goes in the query).
BODY = {
    "name": "llm-pretrain",
    "queue": "default",
    "jobFramework": "PyTorchJob",
    "priority": "high",
    "jobSpec": {
        "command": "torchrun --nnodes=3 train.py",
        "image": "registry.example.com/train/pytorch:2.5",
        "replicas": 3,
        "resources": [
            {"name": A800, "quantity": 2},
            {"name": "cpu", "quantity": 16},
            {"name": "memory", "quantity": 128},
        ],
        "envs": [
            {"name": "NCCL_DEBUG", "value": "INFO"},
            {"name": "HF_HOME", "value": "/workspace/hf"},
        ],
        "enableRDMA": True,
    },
    "faultTolerance": True,
    "faultToleranceConfig": {
        "enabledHangDetection": True,
        "hangDetectionTimeoutMinutes": 30,
        "faultToleranceLimit": 2,
        "customFaultTolerancePattern": ["NCCL timeout"],
    },
    "datasources": [{"type": "hostpath", "name": "scratch", "mountPath": "/workspace"}],
    "tensorboardConfig": {"enable": True, "logPath": "/workspace/tb"},
    "alertConfig": {"alertItems": ["jobFailed", "jobHang"]},
    "retentionPeriod": "7d",
}
# Who gets the alerts is the console's own extension (console.alertChannels): the v1 body
# has no field for an email address, and the local pool sends alerts only by email or webhook.
CHANNELS = {"console": {"alertChannels": {"emails": ["ops@example.com"]}}}


@pytest.fixture(autouse=True)
def _local_pool(settings, tmp_path):
    """The local pool offers 8 A800 cards and one host volume."""
    settings.LOCAL_ACCELERATORS = f"{A800}=8"
    settings.LOCAL_VOLUMES = f"scratch={tmp_path}"


def import_body(client, body, *, pool="local", key=None, headers=None, follow=False):
    text = body if isinstance(body, str) else json.dumps(body, indent=2)
    data = {"body": text, "resource_pool": pool, "create_key": key or uuid.uuid4().hex}
    return client.post(reverse("wizard-import"), data, headers=headers or {}, follow=follow)


def review_body(client, draft) -> dict:
    page = client.get(step_url(draft, W.REVIEW)).content.decode()
    shown = re.search(r'id="request-json"[^>]*>(.*?)</', page, re.S)
    assert shown, "the review shows the request body"
    return json.loads(html.unescape(shown.group(1)))


def error_texts(response) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", response.content.decode()))


# -- a body becomes a draft ---------------------------------------------------------------


def test_a_v1_body_imports_into_a_draft_whose_review_sends_the_same_body(alice_client, alice):
    r = import_body(alice_client, {**BODY, **CHANNELS})

    draft = Draft.objects.get()
    assert r.status_code == 302
    assert r["Location"] == step_url(draft, W.BASIC)
    assert draft.owner == alice
    assert draft.data[I.IMPORTED] is True
    assert draft.completed_steps == W.FORM_STEPS  # every step filled in and passing
    # The round trip: what the review step would send is what was imported (the console's
    # own extensions are read, and never sent).
    assert review_body(alice_client, draft) == BODY
    spec = W.assemble(W.wizard_state(draft)).spec
    assert [(r.name, r.replicas, r.accelerators) for r in spec.roles] == [
        ("master", 1, 2),
        ("worker", 2, 2),
    ]
    assert not Job.objects.exists()  # nothing submitted by importing


def test_the_imported_draft_opens_at_step_one_with_a_notice_and_is_marked_in_the_list(
    alice_client,
):
    r = import_body(alice_client, {**BODY, **CHANNELS}, follow=True)

    page = r.content.decode()
    draft = Draft.objects.get()
    assert r.redirect_chain[-1][0] == step_url(draft, W.BASIC)
    assert "已从请求导入：请逐步检查，然后提交。" in page
    drafts = alice_client.get(reverse("wizard-start")).content.decode()
    row = re.search(r"<tr>\s*<td[^>]*>llm-pretrain(.*?)</td>", drafts, re.S)
    assert row and "导入" in row.group(1)


def test_a_body_normalised_on_import_says_so_in_the_review(alice_client):
    # A body as a script writes it: numbers as text, memory with its unit, the pool inside.
    body = copy.deepcopy({**BODY, **CHANNELS})
    body["resourcePoolId"] = "local"
    body["jobSpec"]["replicas"] = "3"
    body["jobSpec"]["resources"] = [
        {"name": A800, "quantity": "2"},
        {"name": "cpu", "quantity": 16},
        {"name": "memory", "quantity": "128Gi"},
    ]

    import_body(alice_client, body, pool="")

    # Documented normalisation: numbers as numbers, memory in GB, the pool in the query.
    assert review_body(alice_client, Draft.objects.get()) == BODY


def test_a_v2_body_imports_as_its_v1_twin(alice_client):
    v2 = v2_from_v1({**BODY, **CHANNELS})

    r = import_body(alice_client, v2)

    draft = Draft.objects.get()
    assert r.status_code == 302
    assert review_body(alice_client, draft) == BODY


def import_notices_text(client, draft) -> str:
    page = client.get(step_url(draft, W.BASIC)).content.decode()
    found = re.search(r'id="import-notices"[^>]*>(.*?)</div>', page, re.S)
    return html.unescape(re.sub(r"<[^>]+>", " ", found.group(1))) if found else ""


def test_aihc_clis_pytorch_spelling_imports_as_pytorchjob_and_the_draft_says_so(alice_client):
    # AIHC's CLI template writes "jobFramework": "pytorch" (reference: aihc-openapi.md); it
    # was refused as "Framework must be PyTorchJob, MPIJob, TFJob or Custom."
    r = import_body(alice_client, {**BODY, **CHANNELS, "jobFramework": "pytorch"})

    assert r.status_code == 302
    draft = Draft.objects.get()
    assert review_body(alice_client, draft) == BODY  # sent as PyTorchJob
    assert "jobFramework “pytorch” 已按 PyTorchJob 读取" in import_notices_text(alice_client, draft)


def test_a_v2_bodys_other_spelling_is_named_as_its_jobtype_in_english(alice_en):
    v2 = {**v2_from_v1({**BODY, **CHANNELS}), "jobType": "PytorchJob"}

    r = import_body(alice_en, v2)

    assert r.status_code == 302
    notices = import_notices_text(alice_en, Draft.objects.get())
    assert "jobType “PytorchJob” was read as PyTorchJob, the console's name" in notices
    # qa105: "The API takes PyTorchJob only." read as though it took no MPIJob or TFJob.
    assert (
        "The API takes the console's names only (PyTorchJob, MPIJob, TFJob, Custom): send "
        "PyTorchJob there." in notices
    )


def test_a_framework_the_console_has_no_name_for_is_still_refused_on_import(alice_client):
    r = import_body(alice_client, {**BODY, "jobFramework": "horovod"})

    assert r.status_code == 200 and not Draft.objects.exists()
    assert "jobFramework" in error_texts(r)


def test_a_request_pasted_with_its_request_line_and_headers_imports_into_that_pool(alice_client):
    # Found in QA: the job page shows its request as "POST /api/v1/aijobs?resourcePoolId=local"
    # and the body under it; pasted whole, it was refused with "Not valid JSON: line 1,
    # column 1". The request line's pool counts as the body's would.
    v1 = json.dumps({**BODY, **CHANNELS}, indent=2)
    v2 = json.dumps(v2_from_v1({**BODY, **CHANNELS}), indent=2)

    first = import_body(alice_client, f"POST /api/v1/aijobs?resourcePoolId=local\n{v1}", pool="")
    second = import_body(
        alice_client,
        "POST /?action=CreateJob&queueID=default&resourcePoolId=local HTTP/1.1\r\n"
        f"Content-Type: application/json\r\nX-API-Version: v2\r\n\r\n{v2}",
        pool="",
    )

    assert (first.status_code, second.status_code) == (302, 302)
    for draft in Draft.objects.all():
        assert review_body(alice_client, draft) == BODY
        assert W.assemble(W.wizard_state(draft)).spec.resource_pool_id == "local"


def test_a_json_slip_under_a_pasted_request_line_is_placed_by_the_boxs_own_lines(alice_client):
    text = 'POST /api/v1/aijobs?resourcePoolId=local\nContent-Type: application/json\n\n{"name": }'

    r = import_body(alice_client, text, pool="")

    assert "JSON 无效：第 4 行，第 10 列" in error_texts(r)
    assert not Draft.objects.exists()


def test_our_own_stored_document_imports_with_its_secrets_marked(alice_client):
    spec = S.parse_document({**BODY, **CHANNELS}, resource_pool_id="local")
    spec.envs.append(S.Env("API_TOKEN", SECRET, secret=True))
    document = spec.to_document()

    import_body(alice_client, document, pool="")

    draft = Draft.objects.get()
    imported = W.assemble(W.wizard_state(draft)).spec
    assert imported.to_document() == document
    review = alice_client.get(step_url(draft, W.REVIEW)).content.decode()
    assert 'id="request-json"' in review
    assert SECRET not in review
    assert '"value": "******"' in html.unescape(review)


def test_a_masked_value_copied_from_a_review_is_imported_as_a_secret_to_type_again(
    alice_client,
):
    body = copy.deepcopy(BODY)
    body["jobSpec"]["envs"].append({"name": "API_TOKEN", "value": "******"})

    import_body(alice_client, body)

    draft = Draft.objects.get()
    assert W.IMAGE not in draft.completed_steps
    image = alice_client.get(step_url(draft, W.IMAGE)).content.decode()
    assert "请输入保密变量的值" in image


def test_a_file_imports_as_the_pasted_text_would(alice_client):
    upload = SimpleUploadedFile(
        "job.json", json.dumps({**BODY, **CHANNELS}).encode(), "application/json"
    )

    r = alice_client.post(
        reverse("wizard-import"),
        {"body": "", "file": upload, "resource_pool": "local", "create_key": uuid.uuid4().hex},
    )

    assert r.status_code == 302
    assert review_body(alice_client, Draft.objects.get()) == BODY


def test_the_same_import_sent_twice_makes_one_draft(alice_client):
    key = uuid.uuid4().hex

    first = import_body(alice_client, BODY, key=key)
    second = import_body(alice_client, BODY, key=key)

    assert first["Location"] == second["Location"]
    assert Draft.objects.count() == 1


def test_the_same_import_sent_twice_still_names_what_was_left_out(alice_client):
    # Back to the drafts page after the first, and Import again (or a double click whose
    # first answer's notices were shown nowhere).
    body = {**BODY, **CHANNELS, "jobSpec": {**BODY["jobSpec"], "hostNetwork": True}}
    key = uuid.uuid4().hex
    import_body(alice_client, body, key=key, follow=True)

    second = import_body(alice_client, body, key=key, follow=True)

    assert "向导中没有 jobSpec.hostNetwork 对应的字段" in error_texts(second)
    assert Draft.objects.count() == 1


def test_another_body_imported_from_the_same_page_after_back_makes_its_own_draft(alice_client):
    key = uuid.uuid4().hex
    first = import_body(alice_client, BODY, key=key)

    second = import_body(alice_client, {**BODY, "name": "llm-finetune"}, key=key)

    assert first["Location"] != second["Location"]
    names = sorted(d.data["basic"]["name"][0] for d in Draft.objects.all())
    assert names == ["llm-finetune", "llm-pretrain"]


def test_with_htmx_an_import_opens_the_draft_as_a_whole_page(alice_client):
    r = import_body(alice_client, BODY, headers=HTMX)

    assert r.status_code == 200
    assert r["HX-Redirect"] == step_url(Draft.objects.get(), W.BASIC)


def test_another_user_cannot_see_the_imported_draft(alice_client, bob, client):
    import_body(alice_client, BODY)
    draft = Draft.objects.get()
    client.force_login(bob)

    step = client.get(step_url(draft, W.BASIC))
    drafts = client.get(reverse("wizard-start")).content.decode()

    assert step.status_code == 404
    assert "llm-pretrain" not in drafts


def test_fields_the_wizard_has_no_place_for_are_named_when_left_out(alice_client):
    body = {**BODY, "jobSpec": {**BODY["jobSpec"], "hostNetwork": True}}

    r = import_body(alice_client, {**body, **CHANNELS}, follow=True)

    assert "向导中没有 jobSpec.hostNetwork 对应的字段" in error_texts(r)
    assert Draft.objects.count() == 1


# -- bad input: said where, nothing lost -----------------------------------------------------


def test_invalid_json_keeps_the_text_and_names_the_line_and_column(alice_client):
    text = '{\n  "name": "llm-pretrain"\n  "queue": "default"\n}'

    r = import_body(alice_client, text)

    page = r.content.decode()
    assert r.status_code == 200
    assert "JSON 无效：第 3 行，第 3 列：此处应为逗号（,）。" in error_texts(r)
    assert html.escape(text) in page  # kept in the box, as typed
    assert not Draft.objects.exists()


def test_invalid_json_is_said_in_english_too(alice_client):
    alice_client.cookies["django_language"] = "en"

    r = import_body(alice_client, '{"name": }')

    assert "Not valid JSON: line 1, column 10: a value was expected." in error_texts(r)


def test_a_non_breaking_space_in_a_commands_quoted_text_passes_and_one_outside_is_named(
    alice_client,
):
    # left30: the rule of the wizard's command box (tests/test_pasted_text.py) for a draft
    # made by an import, whose steps are checked as typed ones are.
    quoted, outside = copy.deepcopy(BODY), copy.deepcopy(BODY)
    quoted["jobSpec"]["command"] = 'echo "Loss\u00a0: 0.3" && torchrun train.py'
    outside["jobSpec"]["command"] = "torchrun\u00a0train.py"

    import_body(alice_client, quoted)
    passing = Draft.objects.get()
    import_body(alice_client, outside)
    named = Draft.objects.exclude(pk=passing.pk).get()

    assert W.IMAGE in passing.completed_steps
    assert W.first_incomplete(named) == W.IMAGE
    assert "U+00A0" in alice_client.get(step_url(named, W.IMAGE)).content.decode()


def test_curly_quotes_or_a_fullwidth_colon_are_named_with_what_to_type_instead(alice_client):
    # As a document or chat app (“smart” quotes) or a Chinese input method (：) writes them.
    curly = '{“name”: "llm-pretrain"}'
    colon = '{"name"："llm-pretrain"}'

    r = import_body(alice_client, curly)
    alice_client.cookies["django_language"] = "en"
    english = import_body(alice_client, colon)

    assert r.status_code == 200
    assert (
        "JSON 无效：第 1 行，第 2 列：此处应为双引号括起的字段名。"
        "该处的字符 “（U+201C）看起来像 '\"'，但不是 JSON 的符号：请改为输入 '\"'"
        "（文档、聊天软件或输入法可能替换了它）。"
    ) in error_texts(r)
    assert (
        "Not valid JSON: line 1, column 8: a colon (:) was expected. The character there, ： "
        "(U+FF1A), looks like ':' but is not JSON's: type ':' instead (a document, chat app or "
        "input method may have changed it)."
    ) in error_texts(english)
    assert html.escape(curly) in r.content.decode()  # kept in the box, as typed
    assert not Draft.objects.exists()


def test_a_number_too_long_to_read_is_refused_in_both_languages(alice_client):
    # Python reads no integer of over 4,300 digits (a guard against slow conversions).
    text = json.dumps(BODY).replace('"replicas": 3', '"replicas": 1' + "0" * 5000)

    r = import_body(alice_client, text)
    alice_client.cookies["django_language"] = "en"
    english = import_body(alice_client, text)

    assert r.status_code == 200
    assert "JSON 无效：其中有一个数字太长，无法读取（最多 4300 位）。" in error_texts(r)
    assert "Not valid JSON: a number in it is too long to read (4300 digits at most)." in (
        error_texts(english)
    )
    assert not Draft.objects.exists()


def test_nan_or_infinity_is_refused_as_not_json_in_both_languages(alice_client):
    # Found in QA: Python's reader takes NaN, and `"name": NaN` made a draft named "nan".
    text = json.dumps(BODY).replace(f'"name": "{BODY["name"]}"', '"name": NaN')
    assert "NaN" in text

    r = import_body(alice_client, text)
    alice_client.cookies["django_language"] = "en"
    english = import_body(alice_client, text.replace("NaN", "-Infinity"))

    assert r.status_code == 200
    assert "JSON 无效：NaN 不是 JSON 数字。" in error_texts(r)
    assert "Not valid JSON: -Infinity is not a JSON number." in error_texts(english)
    assert not Draft.objects.exists()


def test_a_number_too_large_for_any_field_is_named_at_each_of_its_fields_and_makes_no_draft(
    alice_client,
):
    # qa79: read as infinity, "name": 1e400 made a draft named "inf" and "replicas": 1e400 was
    # "not a whole number"; the API names them so, and the box says what the API says.
    text = (
        json.dumps(BODY)
        .replace(f'"name": "{BODY["name"]}"', '"name": -1e400')
        .replace('"replicas": 3', '"replicas": 1e400')
    )

    r = import_body(alice_client, text)
    alice_client.cookies["django_language"] = "en"
    english = import_body(alice_client, text)

    assert r.status_code == 200
    assert "name: 数字 -1e400 超出范围：没有字段能接受它。" in error_texts(r)
    assert "jobSpec.replicas: 数字 1e400 超出范围：没有字段能接受它。" in error_texts(r)
    assert "jobSpec.replicas: The number 1e400 is out of range: no field takes it." in (
        error_texts(english)
    )
    assert "1e400" in r.content.decode()  # kept in the box, as typed
    assert not Draft.objects.exists()


def test_with_htmx_a_refusal_swaps_only_the_import_section(alice_client):
    r = import_body(alice_client, "{", headers=HTMX)

    page = r.content.decode()
    assert r.status_code == 200
    assert page.lstrip().startswith('<section id="import-section"')
    assert "<html" not in page
    assert "第 1 行，第 2 列" in error_texts(r)


def test_a_body_the_spec_refuses_lists_each_field_with_its_path(alice_client):
    body = copy.deepcopy(BODY)
    body["jobSpec"]["replicas"] = "three"
    body["priority"] = "urgent"

    r = import_body(alice_client, body)

    said = error_texts(r)
    assert r.status_code == 200
    assert "jobSpec.replicas: 必须是整数。" in said
    assert not Draft.objects.exists()
    body_text = html.unescape(
        re.search(r"<textarea[^>]*>\n(.*?)</textarea>", r.content.decode(), re.S).group(1)
    )
    assert json.loads(body_text) == body  # kept in the box


def test_a_spec_rule_is_said_with_its_path(alice_client):
    r = import_body(alice_client, {**BODY, "priority": "urgent"})

    assert "priority: 优先级只能是高（high）、中（normal）或低（low）。" in error_texts(r)
    assert not Draft.objects.exists()


def test_a_v2_bodys_errors_name_its_own_fields(alice_client):
    v2 = v2_from_v1(BODY)
    v2["jobType"] = "SparkJob"

    r = import_body(alice_client, v2)

    assert "jobType: " in error_texts(r)
    assert not Draft.objects.exists()


def test_more_variables_than_the_wizard_holds_are_refused_not_cut_to_fifty(alice_client):
    body = copy.deepcopy(BODY)
    body["jobSpec"]["envs"] = [{"name": f"V{i}", "value": str(i)} for i in range(51)]

    r = import_body(alice_client, body)

    assert r.status_code == 200
    assert "envs: 一个任务最多 50 个环境变量，此任务有 51 个。" in error_texts(r)
    assert not Draft.objects.exists()


def test_an_unknown_pool_says_which_pools_may_be_used(alice_client):
    r = import_body(alice_client, {**BODY, "resourcePoolId": "cce-gone"}, pool="")

    said = error_texts(r)
    assert "资源池“cce-gone”不可用。可用的资源池：local (" in said
    assert not Draft.objects.exists()


def test_a_body_without_a_pool_asks_for_one(alice_client):
    r = import_body(alice_client, BODY, pool="")

    assert "请求没有指定资源池（resourcePoolId），请选择一个。" in error_texts(r)


def test_a_body_over_the_limit_is_refused_saying_the_limit(alice_client):
    body = {**BODY, "name": "x" * (I.MAX_IMPORT_BYTES + 1)}

    r = import_body(alice_client, body)

    assert r.status_code == 200
    assert "请求大于 256 KB，这是导入的上限。" in error_texts(r)
    assert not Draft.objects.exists()


def test_a_file_over_the_limit_is_refused_before_it_is_read(alice_client):
    upload = SimpleUploadedFile("big.json", b" " * (I.MAX_IMPORT_BYTES + 1))

    r = alice_client.post(
        reverse("wizard-import"),
        {"body": "", "file": upload, "resource_pool": "local", "create_key": uuid.uuid4().hex},
    )

    assert "请求大于 256 KB" in error_texts(r)


def test_a_file_that_is_not_utf8_is_refused_on_the_file_field(alice_client):
    upload = SimpleUploadedFile("job.json", json.dumps(BODY).encode("utf-16"))

    r = alice_client.post(
        reverse("wizard-import"),
        {"body": "", "file": upload, "resource_pool": "local", "create_key": uuid.uuid4().hex},
    )

    assert 'id="import-file-errors"' in r.content.decode()
    assert "文件不是 UTF-8 文本" in error_texts(r)
    assert not Draft.objects.exists()


def test_an_empty_import_asks_for_a_body(alice_client):
    r = import_body(alice_client, "   ")

    assert r.status_code == 200
    assert "请粘贴 CreateJob 请求体，或选择一个 .json 文件。" in error_texts(r)


@pytest.mark.parametrize(
    "text",
    ["[]", '"x"', "1e999999", "[" * 100_000, '{"name": "\\ud800"}', '{"name": "a\\u0000b"}'],
)
def test_strange_json_never_fails_the_page(alice_client, text):
    r = import_body(alice_client, text)

    assert r.status_code in (200, 302)


# -- secrets --------------------------------------------------------------------------------


def secret_body(**over):
    body = copy.deepcopy(BODY)
    body["jobSpec"]["envs"].append({"name": "API_TOKEN", "value": SECRET})
    body["jobSpec"]["imageConfig"] = {"username": "robot", "password": SECRET + "-pw"}
    body["console"] = {"secretEnvs": ["API_TOKEN"]}
    body.update(over)
    return body


@pytest.mark.parametrize(
    "body",
    [
        secret_body(priority="urgent"),  # a rule refused
        secret_body(faultTolerance="maybe"),  # the spec cannot read it
        secret_body(resourcePoolId="cce-gone"),  # an unknown pool
    ],
)
def test_no_error_page_shows_the_bodys_secret_values(alice_client, body):
    r = import_body(alice_client, body, pool="")

    page = r.content.decode()
    assert r.status_code == 200 and 'id="import-problems"' in page
    assert SECRET not in page
    assert not Draft.objects.exists()


def test_a_refusal_by_the_form_itself_never_shows_the_bodys_secret_values(alice_client):
    # Refused before the body is read: a pool the page offered that is gone now (a page left
    # open), and a paste over the import's limit. The box still shows the text, masked.
    gone_pool = import_body(alice_client, secret_body(), pool="cce-gone")
    too_large = import_body(alice_client, secret_body(name="x" * (I.MAX_IMPORT_BYTES + 1)))

    for refused in (gone_pool, too_large):
        page = refused.content.decode()
        assert refused.status_code == 200 and 'id="import-problems"' in page
        assert SECRET not in page
        box = html.unescape(re.search(r"<textarea[^>]*>\n(.*?)</textarea>", page, re.S).group(1))
        assert json.loads(box)["jobSpec"]["imageConfig"]["password"] == W.MASK
    assert "cce-gone" in error_texts(gone_pool)  # the select says it is not a choice
    assert "请求大于 256 KB" in error_texts(too_large)
    assert not Draft.objects.exists()


def test_a_refused_import_is_never_cached_as_it_holds_what_was_pasted(alice_client):
    # Text that is not JSON comes back as typed, secrets and all: Back or a shared browser's
    # history must not show it again from the cache.
    r = import_body(alice_client, '{"envs": [{"name": "API_TOKEN", "value": "' + SECRET)

    assert r.status_code == 200 and SECRET in r.content.decode()
    assert "no-store" in r["Cache-Control"]


@pytest.mark.parametrize("v2", [False, True], ids=["v1", "v2"])
def test_a_body_nested_deeper_than_any_job_is_refused_saying_so(alice_client, v2):
    # Deep enough for Python's own walks of it (a copy, masking) to run out of stack, yet
    # shallow enough for the JSON reader: a server error before.
    body = secret_body()
    body["deep"] = json.loads("[" * 700 + "]" * 700)
    if v2:
        body["jobType"] = body.pop("jobFramework")

    r = import_body(alice_client, json.dumps(body))

    assert r.status_code == 200
    assert "JSON 无效：嵌套太深，无法读取。" in error_texts(r)
    assert SECRET not in r.content.decode()
    assert not Draft.objects.exists()


def test_a_message_that_would_quote_a_secret_names_only_its_field(alice_client):
    # An email address is quoted by its rule; here it is also the secret's value.
    body = secret_body()
    body["console"]["alertChannels"] = {"emails": [SECRET]}

    r = import_body(alice_client, body)

    said = error_texts(r)
    assert "console.alertChannels.emails: 此值无效（可能是保密值，因此不显示）。" in said
    assert SECRET not in r.content.decode()


def test_secrets_masked_in_the_box_come_back_as_secrets_to_type_again(alice_client):
    # Sent from another page (another create_key: a new tab, the text copied over), the
    # secrets kept for the refused page are not put back.
    refused = import_body(alice_client, secret_body(priority="urgent"))
    box = html.unescape(
        re.search(r"<textarea[^>]*>\n(.*?)</textarea>", refused.content.decode(), re.S).group(1)
    )
    fixed = json.loads(box)
    fixed["priority"] = "high"

    import_body(alice_client, fixed)

    draft = Draft.objects.get()
    spec = W.assemble(W.wizard_state(draft)).spec
    token = next(e for e in spec.envs if e.name == "API_TOKEN")
    assert (token.secret, token.value) == (True, "")
    assert W.IMAGE not in draft.completed_steps


def box_of(response) -> str:
    page = response.content.decode()
    return html.unescape(re.search(r"<textarea[^>]*>\n(.*?)</textarea>", page, re.S).group(1))


def imported_secrets(draft) -> tuple[str, str]:
    """The draft's API_TOKEN value and registry password."""
    spec = W.assemble(W.wizard_state(draft)).spec
    token = next(e for e in spec.envs if e.name == "API_TOKEN")
    assert token.secret
    return token.value, spec.image_config.password


@pytest.mark.parametrize("v2", [False, True], ids=["v1", "v2"])
def test_secrets_typed_in_a_refused_body_are_kept_for_its_page_and_never_shown(
    alice_client, caplog, v2
):
    caplog.set_level("DEBUG")
    key = uuid.uuid4().hex
    body = secret_body(priority="urgent")
    if v2:
        body = v2_from_v1(body)
    refused = import_body(alice_client, body, key=key)
    fixed = json.loads(box_of(refused))
    fixed["priority"] = "high"
    again = import_body(alice_client, fixed, key=key, pool="")  # refused once more: no pool
    assert "resourcePoolId" in error_texts(again) and not Draft.objects.exists()

    made = import_body(alice_client, fixed, key=key)

    assert made.status_code == 302
    for response in (refused, again, made):
        assert SECRET not in response.content.decode()
    assert W.MASK in box_of(refused)
    assert imported_secrets(Draft.objects.get()) == (SECRET, SECRET + "-pw")
    assert SECRET not in caplog.text
    # Dropped from the session once the import made its draft.
    assert I.KEPT_SECRETS not in alice_client.session


@pytest.mark.parametrize("sent_by", ["import", "language switch"])
def test_secrets_typed_in_a_paste_the_form_refused_come_back_at_the_next_import_from_its_page(
    alice_client, sent_by
):
    # Refused by the form itself (a pool the page offered that is gone) before the body is
    # read: the box shows ******, and the values typed are kept for the page all the same.
    key = uuid.uuid4().hex
    if sent_by == "import":
        refused = import_body(alice_client, secret_body(), key=key, pool="cce-gone")
    else:
        refused = switch_language(
            alice_client, secret_body(), refused=False, pool="cce-gone", key=key
        )
    assert SECRET not in refused.content.decode() and W.MASK in box_of(refused)

    made = import_body(alice_client, json.loads(box_of(refused)), key=key)

    assert made.status_code == 302
    assert imported_secrets(Draft.objects.get()) == (SECRET, SECRET + "-pw")


def test_a_refused_import_keeps_its_secrets_through_the_language_switch(alice_client):
    key = uuid.uuid4().hex
    refused = import_body(alice_client, secret_body(priority="urgent"), key=key)
    box = box_of(refused)

    switched = switch_language(alice_client, box, key=key)
    back = switch_language(alice_client, box_of(switched), language="zh-hans", key=key)
    fixed = json.loads(box_of(back))
    fixed["priority"] = "high"
    made = import_body(alice_client, fixed, key=key)

    assert "priority" in error_texts(switched) and "The request could not be imported" in (
        switched.content.decode()
    )
    for response in (refused, switched, back, made):
        assert SECRET not in response.content.decode()
    assert box_of(switched) == box_of(back) == box
    assert imported_secrets(Draft.objects.get()) == (SECRET, SECRET + "-pw")


def test_secrets_typed_under_a_pasted_request_line_are_kept_with_its_pool(alice_client):
    # The request line (and its pool) and the kept secrets are both read from the same box:
    # putting the secrets back must not drop the line the pool is read from.
    key = uuid.uuid4().hex
    text = "POST /api/v1/aijobs?resourcePoolId=local\n" + json.dumps(
        secret_body(priority="urgent"), indent=2
    )
    refused = import_body(alice_client, text, key=key, pool="")
    box = box_of(refused)
    assert box.startswith("POST /api/v1/aijobs?resourcePoolId=local\n") and W.MASK in box

    made = import_body(alice_client, box.replace('"urgent"', '"high"'), key=key, pool="")

    assert made.status_code == 302
    assert SECRET not in refused.content.decode()
    draft = Draft.objects.get()
    assert imported_secrets(draft) == (SECRET, SECRET + "-pw")
    assert W.assemble(W.wizard_state(draft)).spec.resource_pool_id == "local"


def test_a_paste_not_yet_imported_keeps_its_secrets_through_the_switch(alice_client):
    key = uuid.uuid4().hex

    switched = switch_language(alice_client, secret_body(), refused=False, pool="local", key=key)
    made = import_body(alice_client, box_of(switched), key=key)

    assert SECRET not in switched.content.decode() and W.MASK in box_of(switched)
    assert made.status_code == 302
    assert imported_secrets(Draft.objects.get()) == (SECRET, SECRET + "-pw")


def test_a_kept_secret_comes_back_only_where_it_was_masked(alice_client):
    key = uuid.uuid4().hex
    refused = import_body(alice_client, secret_body(priority="urgent"), key=key)
    fixed = json.loads(box_of(refused))
    fixed["priority"] = "high"
    fixed["jobSpec"]["imageConfig"]["password"] = "typed-again"  # a new value wins
    fixed["jobSpec"]["envs"].append({"name": "OTHER", "value": W.MASK})  # not a kept one

    import_body(alice_client, fixed, key=key)

    draft = Draft.objects.get()
    assert imported_secrets(draft) == (SECRET, "typed-again")
    spec = W.assemble(W.wizard_state(draft)).spec
    other = next(e for e in spec.envs if e.name == "OTHER")
    assert (other.secret, other.value) == (True, "")


def test_the_same_import_sent_twice_after_its_secrets_came_back_makes_one_draft(alice_client):
    key = uuid.uuid4().hex
    refused = import_body(alice_client, secret_body(priority="urgent"), key=key)
    fixed = json.loads(box_of(refused))
    fixed["priority"] = "high"

    first = import_body(alice_client, fixed, key=key)
    second = import_body(alice_client, fixed, key=key)  # a double click

    assert first.status_code == second.status_code == 302
    assert first["Location"] == second["Location"]
    assert imported_secrets(Draft.objects.get()) == (SECRET, SECRET + "-pw")


def test_secrets_of_a_refused_import_are_kept_for_an_hour(alice_client, monkeypatch):
    import time

    key = uuid.uuid4().hex
    refused = import_body(alice_client, secret_body(priority="urgent"), key=key)
    fixed = json.loads(box_of(refused))
    fixed["priority"] = "high"
    later = time.time() + I.KEPT_SECONDS + 1
    monkeypatch.setattr(time, "time", lambda: later)

    import_body(alice_client, fixed, key=key)

    assert imported_secrets(Draft.objects.get()) == ("", "")  # to type again
    assert I.KEPT_SECRETS not in alice_client.session


# A script's body names no secret envs (console.secretEnvs is the console's own): those
# named like secrets are made secret on import.
PASSWORD = "db-pa55word-do-not-show"
NAMED_LIKE_SECRETS = [
    {"name": "DB_PASSWORD", "value": PASSWORD},
    {"name": "hf_token", "value": SECRET},
    {"name": "WandbApiKey", "value": SECRET + "-wandb"},
    {"name": "TOKENIZER_PATH", "value": "/workspace/tokenizer"},
    {"name": "MAX_TOKENS", "value": "4096"},
    {"name": "BCE_SK", "value": ""},  # nothing to hide: left as it is
]


def named_like_secrets(**over) -> dict:
    body = copy.deepcopy(BODY)
    body["jobSpec"]["envs"] += copy.deepcopy(NAMED_LIKE_SECRETS)
    body.update(over)
    return body


def test_envs_named_like_secrets_import_as_secrets_and_the_notice_names_them(alice_client):
    r = import_body(alice_client, {**named_like_secrets(), **CHANNELS}, follow=True)

    draft = Draft.objects.get()
    spec = W.assemble(W.wizard_state(draft)).spec
    assert {e.name: (e.secret, e.value) for e in spec.envs} == {
        "NCCL_DEBUG": (False, "INFO"),
        "HF_HOME": (False, "/workspace/hf"),
        "DB_PASSWORD": (True, PASSWORD),
        "hf_token": (True, SECRET),
        "WandbApiKey": (True, SECRET + "-wandb"),
        "TOKENIZER_PATH": (False, "/workspace/tokenizer"),
        "MAX_TOKENS": (False, "4096"),
        "BCE_SK": (False, ""),
    }
    assert draft.completed_steps == W.FORM_STEPS  # each has its value: nothing to type
    notice = error_texts(r)
    assert (
        "以下变量的名称看起来是保密信息，已标记为保密：DB_PASSWORD、hf_token、WandbApiKey。"
    ) in notice
    # Never shown after that: not on the step it lands on, the image step, nor the review.
    for page in (
        r.content.decode(),
        alice_client.get(step_url(draft, W.IMAGE)).content.decode(),
        alice_client.get(step_url(draft, W.REVIEW)).content.decode(),
    ):
        assert PASSWORD not in page and SECRET not in page
    assert review_body(alice_client, draft)["jobSpec"]["envs"][2] == {
        "name": "DB_PASSWORD",
        "value": "******",
    }


def test_the_notice_of_envs_marked_secret_is_said_in_english_too(alice_client):
    alice_client.cookies["django_language"] = "en"

    r = import_body(alice_client, {**named_like_secrets(), **CHANNELS}, follow=True)

    assert (
        "Marked as secret because their names look like secrets: DB_PASSWORD, hf_token, "
        "WandbApiKey. Their values are not shown again; on the image step, untick Secret for "
        "any that is not one (its value is kept)."
    ) in error_texts(r)


def test_the_notice_of_envs_marked_secret_points_below_on_the_image_step_itself(alice_client):
    # qa101: on the image step it said "on the image step, untick Secret".
    alice_client.cookies["django_language"] = "en"
    import_body(alice_client, {**named_like_secrets(), **CHANNELS})
    draft = Draft.objects.get()

    on_image = error_texts(alice_client.get(step_url(draft, W.IMAGE)))
    on_basic = error_texts(alice_client.get(step_url(draft, W.BASIC)))

    assert (
        "Their values are not shown again; untick Secret below, in the environment variables, "
        "for any that is not one (its value is kept)."
    ) in on_image
    assert "on the image step" not in on_image
    assert "on the image step, untick Secret" in on_basic
    alice_client.cookies["django_language"] = "zh-hans"
    assert "请在下方环境变量中取消勾选“保密”" in error_texts(
        alice_client.get(step_url(draft, W.IMAGE))
    )


def test_the_same_import_sent_twice_names_the_envs_it_marked_secret_again(alice_client):
    key = uuid.uuid4().hex
    body = {**named_like_secrets(), **CHANNELS}

    first = import_body(alice_client, body, key=key, follow=True)
    again = import_body(alice_client, body, key=key, follow=True)

    assert Draft.objects.count() == 1
    for r in (first, again):
        assert "已标记为保密：DB_PASSWORD、hf_token、WandbApiKey" in error_texts(r)


def test_a_body_that_names_its_secret_envs_is_taken_as_it_says(alice_client):
    # A review's or a job's JSON says which are secret, even none: nothing is guessed.
    body = named_like_secrets(console={"secretEnvs": ["hf_token"], **CHANNELS["console"]})

    r = import_body(alice_client, body, follow=True)

    spec = W.assemble(W.wizard_state(Draft.objects.get())).spec
    assert [e.name for e in spec.envs if e.secret] == ["hf_token"]
    assert "已标记为保密" not in error_texts(r)


def test_a_secret_env_name_that_names_no_env_is_refused_and_its_value_never_shown(
    alice_client,
):
    # Found in QA (round 33): "api_token" for API_TOKEN marked nothing secret, silently.
    body = secret_body(console={"secretEnvs": ["api_token"], **CHANNELS["console"]})

    r = import_body(alice_client, body)

    assert r.status_code == 200
    assert (
        "console.secretEnvs[0]: “api_token” 不是本任务任何环境变量的名称，不能把任何值标记为保密。"
    ) in error_texts(r)
    assert SECRET not in r.content.decode()  # which env it meant cannot be told: all masked
    assert not Draft.objects.exists()


def test_a_refused_body_shows_envs_named_like_secrets_masked_in_the_box(alice_client):
    refused = import_body(alice_client, named_like_secrets(priority="urgent"))

    page = refused.content.decode()
    assert refused.status_code == 200 and 'id="import-problems"' in page
    assert PASSWORD not in page and SECRET not in page
    box = html.unescape(re.search(r"<textarea[^>]*>\n(.*?)</textarea>", page, re.S).group(1))
    envs = {e["name"]: e["value"] for e in json.loads(box)["jobSpec"]["envs"]}
    assert envs["DB_PASSWORD"] == envs["hf_token"] == "******"
    assert envs["TOKENIZER_PATH"] == "/workspace/tokenizer"
    assert not Draft.objects.exists()


def test_every_refusal_shows_envs_named_like_secrets_masked_in_the_box(alice_client):
    """Found in QA: the form's own refusal (a pool no longer offered) and a faultToleranceArgs
    refusal showed the values of envs named like secrets as typed; so did any refusal for
    those of a TFJob's second role."""
    v2 = {
        "name": "ft-flags",
        "jobType": "PyTorchJob",
        "command": "python train.py",
        "faultToleranceArgs": "--not-a-flag=1",
        "jobSpec": {"image": "python:3.12", "replicas": 1, "envs": NAMED_LIKE_SECRETS},
    }
    tf = {
        "name": "Bad_Name",
        "jobType": "TFJob",
        "command": "python train.py",
        "jobSpec": {
            "Chief": {"image": "python:3.12", "replicas": 1},
            "Worker": {"image": "python:3.12", "replicas": 2, "envs": NAMED_LIKE_SECRETS},
        },
    }
    refusals = [
        import_body(alice_client, named_like_secrets(), pool="a-pool-gone-since"),
        import_body(alice_client, v2),
        import_body(alice_client, tf),
    ]

    for refused in refusals:
        page = refused.content.decode()
        assert refused.status_code == 200 and 'id="import-problems"' in page
        assert PASSWORD not in page and SECRET not in page
    assert "faultToleranceArgs: --not-a-flag" in error_texts(refusals[1])
    assert "jobSpec.Worker.envs" in error_texts(refusals[2])
    assert not Draft.objects.exists()


def test_unticking_secret_on_the_image_step_keeps_the_value_as_a_plain_one(alice_client):
    import_body(alice_client, {**named_like_secrets(), **CHANNELS})
    draft = Draft.objects.get()
    sent = dict(draft.data[W.IMAGE])
    rows = {v[0]: k.split("-")[1] for k, v in sent.items() if re.fullmatch(r"env-\d+-name", k)}
    # As the browser sends the step: the secrets' values empty (never rendered), and Secret
    # unticked on hf_token.
    for name in ("DB_PASSWORD", "hf_token", "WandbApiKey"):
        assert sent[f"env-{rows[name]}-secret"]
        sent[f"env-{rows[name]}-value"] = [""]
    del sent[f"env-{rows['hf_token']}-secret"]

    r = post_step(alice_client, draft, W.IMAGE, sent)

    assert r.status_code == 302
    draft.refresh_from_db()
    spec = W.assemble(W.wizard_state(draft)).spec
    envs = {e.name: (e.secret, e.value) for e in spec.envs}
    assert envs["hf_token"] == (False, SECRET)  # kept, and now shown as any plain value
    assert envs["DB_PASSWORD"] == (True, PASSWORD)  # left empty and ticked: kept, secret
    image = alice_client.get(step_url(draft, W.IMAGE)).content.decode()
    assert SECRET in image and PASSWORD not in image


# -- in a browser ---------------------------------------------------------------------------


@pytest.mark.browser
@pytest.mark.parametrize("javascript", [True, False], ids=["js", "no-js"])
def test_a_paste_imported_after_logging_out_in_another_tab_is_in_the_box_once_logged_in_again(
    browser, live_server, transactional_db, alice, javascript
):
    # left30: the pasted text was gone after logging in again.
    from playwright.sync_api import expect

    from .conftest import BROWSER_TIMEOUT_MS, log_in

    context = browser.new_context(
        base_url=live_server.url, java_script_enabled=javascript, locale="zh-CN"
    )
    context.set_default_timeout(BROWSER_TIMEOUT_MS)
    page = context.new_page()
    text = json.dumps({**BODY, "name": "pasted-while-logged-out"}, indent=2)
    try:
        log_in(page, "alice", "alice-password")
        page.goto("/create/")
        page.fill("#import-body", text)
        page.select_option("#import-pool", "local")
        other = context.new_page()
        other.goto("/")
        other.get_by_role("button", name="退出登录").click()
        other.wait_for_url(re.compile(r"/login/"))

        page.click("#import-submit")
        if javascript:  # the page stays as it is, and says to reload
            expect(page.locator("#request-error")).to_contain_text("请刷新页面重新登录")
            page.reload()
        page.wait_for_url(re.compile(r"/login/"))
        page.fill("input[name=username]", "alice")
        page.fill("input[name=password]", "alice-password")
        page.click("#login-submit")

        page.wait_for_url(re.compile(r"/create/$"))
        expect(page.locator(".alert-info").first).to_contain_text("您填写的内容已保留")
        expect(page.locator("#import-body")).to_have_value(text)
        expect(page.locator("#import-pool")).to_have_value("local")
        assert not Draft.objects.exists()
        page.click("#import-submit")
        page.wait_for_url(re.compile(r"/basic/$"))
        assert Draft.objects.count() == 1
    finally:
        context.close()


@pytest.mark.browser
def test_a_pasted_body_imports_walks_to_a_review_of_the_same_json_and_submits(
    logged_in_page, alice
):
    from playwright.sync_api import expect

    from .test_wizard_browser import next_step

    page = logged_in_page
    text = json.dumps({**BODY, **CHANNELS}, indent=2)
    page.click("#nav-create-job")
    # A slip first: htmx swaps in the import section with the problem, the text kept.
    page.fill("#import-body", text[:-2])
    page.select_option("#import-pool", "local")
    page.click("#import-submit")
    expect(page.locator("#import-body-errors")).to_contain_text("JSON 无效")
    expect(page.locator("#import-body")).to_have_value(text[:-2])
    page.fill("#import-body", text)
    page.select_option("#import-pool", "local")
    page.click("#import-submit")

    page.wait_for_url(re.compile(r"/create/[0-9a-f-]+/basic/$"))
    expect(page.locator(".alert-info")).to_contain_text("已从请求导入")
    expect(page.locator("#id_name")).to_have_value("llm-pretrain")
    for slug in ("image", "resources", "data", "fault", "advanced", "submission", "review"):
        next_step(page, slug)
    assert json.loads(page.locator("#request-json").inner_text()) == BODY
    page.click("#wizard-submit")

    page.wait_for_url(re.compile(r"/jobs/pytorchjob-"))
    job = Job.objects.get(owner=alice)
    assert job.job_spec().to_v1_body() == BODY


@pytest.mark.browser
def test_a_jobs_request_copied_from_its_page_imports_as_a_new_draft(logged_in_page, alice):
    from playwright.sync_api import expect

    from jobs.services import jobs_submit

    spec = S.parse_document({**BODY, **CHANNELS}, resource_pool_id="local")
    [job] = jobs_submit(owner=alice, spec=spec, submit_key=str(uuid.uuid4()))
    page = logged_in_page
    page.goto(f"/jobs/{job.public_id}/")
    # What a person selects and copies: the request line, then the body.
    copied = page.locator("#api-request").inner_text()
    assert copied.startswith("POST /api/v1/aijobs?resourcePoolId=local\n{")

    page.click("#nav-create-job")
    page.fill("#import-body", copied)
    expect(page.locator("#import-pool")).to_have_value("")  # as the request says
    page.click("#import-submit")

    page.wait_for_url(re.compile(r"/create/[0-9a-f-]+/basic/$"))
    expect(page.locator(".alert-info")).to_contain_text("已从请求导入")
    expect(page.locator("#id_name")).to_have_value("llm-pretrain")
    expect(page.locator("#id_resource_pool")).to_have_value("local")
    # Its alert emails are on the page apart from the request (QA 43): the draft says so.
    expect(page.locator("#import-notices")).to_contain_text("该请求没有 console 部分")


@pytest.mark.browser
def test_an_env_marked_secret_for_its_name_is_unticked_on_the_image_step_and_keeps_its_value(
    logged_in_page,
):
    from playwright.sync_api import expect

    from .test_wizard_browser import next_step

    page = logged_in_page
    page.click("#nav-create-job")
    page.fill("#import-body", json.dumps({**named_like_secrets(), **CHANNELS}, indent=2))
    page.select_option("#import-pool", "local")
    page.click("#import-submit")

    page.wait_for_url(re.compile(r"/create/[0-9a-f-]+/basic/$"))
    notice = page.locator(".alert-warning")
    expect(notice).to_contain_text("已标记为保密：DB_PASSWORD、hf_token、WandbApiKey")
    expect(notice).to_contain_text("取消勾选“保密”")
    next_step(page, "image")
    row = page.locator(".env-row", has=page.locator("input[value='hf_token']"))
    value = row.locator(".cell-value input")
    # Secret: its value is not in the page, and the field is a password field.
    expect(value).to_have_attribute("type", "password")
    expect(value).to_have_value("")
    assert SECRET not in page.content() and PASSWORD not in page.content()
    row.get_by_role("checkbox").uncheck()  # 保密: it is not one
    next_step(page, "resources")
    page.click("#wizard-back")  # 上一步

    page.wait_for_url(re.compile(r"/image/$"))
    row = page.locator(".env-row", has=page.locator("input[value='hf_token']"))
    expect(row.locator(".cell-value input")).to_have_value(SECRET)
    expect(row.get_by_role("checkbox")).not_to_be_checked()
    assert PASSWORD not in page.content()  # the others stay secret


@pytest.mark.browser
def test_a_paste_over_the_limit_comes_back_with_its_secrets_masked(logged_in_page):
    from playwright.sync_api import expect

    page = logged_in_page
    body = secret_body()
    body["jobSpec"]["command"] = "echo " + "x" * I.MAX_IMPORT_BYTES  # a pasted log, by mistake
    page.click("#nav-create-job")
    page.fill("#import-body", json.dumps(body))
    page.select_option("#import-pool", "local")
    page.click("#import-submit")

    expect(page.locator("#import-body-errors")).to_contain_text("请求大于 256 KB")
    shown = page.locator("#import-body").input_value()
    assert SECRET not in shown
    assert json.loads(shown)["jobSpec"]["envs"][-1] == {"name": "API_TOKEN", "value": W.MASK}
    assert not Draft.objects.exists()


@pytest.mark.browser
def test_a_tensorflow_body_whose_worker_has_its_own_secret_is_refused_with_it_masked(
    logged_in_page,
):
    # Found in QA: the Worker's envs were dropped without a word, and a refusal showed its
    # HF_TOKEN back as typed.
    from playwright.sync_api import expect

    page = logged_in_page
    tf = {
        "name": "tf-train",
        "jobType": "TFJob",
        "command": "python train.py",
        "jobSpec": {
            "Chief": {"image": "python:3.12", "replicas": 1},
            "Worker": {
                "image": "python:3.12",
                "replicas": 2,
                "envs": [{"name": "HF_TOKEN", "value": SECRET}],
            },
        },
    }
    page.click("#nav-create-job")
    page.fill("#import-body", json.dumps(tf, indent=2))
    page.select_option("#import-pool", "local")
    page.click("#import-submit")

    expect(page.locator("#import-body-errors")).to_contain_text("jobSpec.Worker.envs")
    expect(page.locator("#import-body-errors")).to_contain_text("第一个角色（Chief）")
    shown = page.locator("#import-body").input_value()
    assert SECRET not in shown
    assert json.loads(shown)["jobSpec"]["Worker"]["envs"] == [{"name": "HF_TOKEN", "value": W.MASK}]
    assert not Draft.objects.exists()


def test_a_paste_over_what_any_form_takes_gets_the_consoles_page_saying_so(alice_client, settings):
    # Over DATA_UPLOAD_MAX_MEMORY_SIZE Django refuses the form before the view reads it (400).
    body = {**BODY, "name": "x" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1)}

    r = import_body(alice_client, body)

    assert r.status_code == 400
    page = r.content.decode()
    assert "表单内容可能超过了 2.5 MB 的上限" in page and "larger than the 2.5 MB" in page
    assert not Draft.objects.exists()


@pytest.mark.browser
@pytest.mark.parametrize("width", [768, 1024])
def test_the_import_fields_show_whole_and_import_sits_level_with_them(logged_in_page, width):
    from playwright.sync_api import expect

    from .test_wizard_browser import CUT_SHORT

    # At 768 pixels the pool read "As the request says (resourc", and Import sat a line's
    # height above the fields beside it.
    page = logged_in_page
    page.set_viewport_size({"width": width, "height": 800})
    page.goto("/create/")
    page.click("[data-language=en]")
    expect(page.locator("#import-title")).to_have_text("Import from a request")

    section = page.locator("#import-section")
    assert section.evaluate(CUT_SHORT) == []
    assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")
    pool, button = page.locator("#import-pool").bounding_box(), page.locator("#import-submit")
    if width >= 992:  # beside the fields
        assert abs(button.bounding_box()["y"] - pool["y"]) < 1
    else:  # under them
        assert button.bounding_box()["y"] >= pool["y"] + pool["height"]


# -- the language switch on the drafts page --------------------------------------------------


def switch_language(
    client, body, *, language="en", refused=True, pool="", key=None, follow=True, **extra
):
    text = body if isinstance(body, str) else json.dumps(body, indent=2)
    data = {"body": text, "resource_pool": pool, "create_key": key or uuid.uuid4().hex}
    data["action"] = f"language-{language}"
    if refused:
        data["refused"] = "1"
    return client.post(reverse("wizard-import"), {**data, **extra}, follow=follow)


def test_switching_language_on_a_refused_import_keeps_the_text_and_says_it_again_in_english(
    alice_client,
):
    body = secret_body(priority="urgent")

    r = switch_language(alice_client, body)

    assert r.status_code == 200
    assert alice_client.cookies["django_language"].value == "en"
    page = r.content.decode()
    assert '<html lang="en"' in page
    assert "The request could not be imported" in page
    assert "priority" in error_texts(r)
    shown = re.search(r'<textarea name="body"[^>]*>\n(.*?)</textarea>', page, re.S).group(1)
    assert json.loads(html.unescape(shown))["priority"] == "urgent"
    assert SECRET not in page  # the box has the secret values as ******, as the refusal had
    assert not Draft.objects.exists()  # a language switch imports nothing


def test_switching_back_to_chinese_says_the_refusal_in_chinese(alice_client):
    r = switch_language(alice_client, "{oops", language="zh-hans")

    assert alice_client.cookies["django_language"].value == "zh-hans"
    assert "JSON 无效" in error_texts(r)
    assert "{oops" in r.content.decode()


def test_a_body_fixed_before_switching_is_kept_not_imported_and_its_secrets_stay_masked(
    alice_client,
):
    r = switch_language(alice_client, secret_body(), pool="local")

    page = r.content.decode()
    assert 'id="import-problems"' not in page
    assert SECRET not in page and W.MASK in page
    assert 'value="local" selected' in page
    assert not Draft.objects.exists()


def test_a_paste_not_yet_imported_survives_the_switch_without_being_judged(alice_client):
    r = switch_language(alice_client, "{not yet", refused=False, pool="local")

    page = r.content.decode()
    assert "{not yet" in page
    assert 'id="import-problems"' not in page and "is-invalid" not in page
    assert not Draft.objects.exists()


def test_an_empty_import_box_switches_language_back_to_the_drafts_page(alice_client):
    r = switch_language(alice_client, "", refused=False, next="/create/?page=2", follow=False)
    assert r.status_code == 302 and r["Location"] == "/create/?page=2"
    assert r.cookies["django_language"].value == "en"

    r = switch_language(alice_client, "", refused=False, next="https://evil.example/", follow=False)
    assert r["Location"] == reverse("wizard-start")


def test_the_language_switch_answers_with_a_redirect_to_a_page_that_shows_the_text_again(
    alice_client,
):
    # qa82: the switch's POST answered with the page itself, and a reload sent it again.
    key = uuid.uuid4().hex
    r = switch_language(
        alice_client, secret_body(priority="urgent"), key=key, next="/create/?page=2", follow=False
    )

    assert r.status_code == 302
    assert r["Location"] == f"/create/?page=2&import={key}"
    first = alice_client.get(r["Location"])
    reloaded = alice_client.get(r["Location"])
    for page in (first, reloaded):
        assert '<html lang="en"' in page.content.decode()
        assert 'id="import-problems"' in page.content.decode()
        assert "The request could not be imported" in error_texts(page)
        assert json.loads(box_of(page))["priority"] == "urgent"
        assert SECRET not in page.content.decode() and W.MASK in box_of(page)
        # Its own switch, with the box emptied, goes to the drafts page, not back to this text.
        assert 'name="next" value="/create/?page=2"' in page.content.decode()
    plain = alice_client.get("/create/?page=2")
    assert box_of(plain).strip() == "" and "import-problems" not in plain.content.decode()


def test_a_switched_import_once_imported_is_not_shown_again(alice_client):
    key = uuid.uuid4().hex
    r = switch_language(alice_client, secret_body(), key=key, pool="local", follow=False)

    made = import_body(alice_client, json.loads(box_of(alice_client.get(r["Location"]))), key=key)

    assert made.status_code == 302
    assert imported_secrets(Draft.objects.get()) == (SECRET, SECRET + "-pw")
    assert box_of(alice_client.get(r["Location"])).strip() == ""


def test_another_users_import_is_not_shown_by_its_address(alice_client, bob, client):
    key = uuid.uuid4().hex
    r = switch_language(alice_client, secret_body(priority="urgent"), key=key, follow=False)
    client.force_login(bob)

    page = client.get(r["Location"])

    assert box_of(page).strip() == "" and "urgent" not in page.content.decode()


@pytest.mark.browser
@pytest.mark.parametrize("javascript", [True, False], ids=["js", "no-js"])
def test_a_refused_import_survives_the_language_switch(browser, live_server, alice, javascript):
    from playwright.sync_api import expect

    context = browser.new_context(
        base_url=live_server.url, java_script_enabled=javascript, locale="zh-CN"
    )
    page = context.new_page()
    try:
        page.goto("/login/")
        page.fill("input[name=username]", "alice")
        page.fill("input[name=password]", "alice-password")
        page.click("#login-submit")
        page.goto("/create/")
        page.fill("#import-body", json.dumps(secret_body(priority="urgent"), indent=2))
        page.click("#import-submit")
        expect(page.locator("#import-problems")).to_be_visible()
        refused = page.locator("#import-body").input_value()
        assert SECRET not in refused

        page.click("[data-language=en]")

        expect(page.locator("html")).to_have_attribute("lang", "en")
        expect(page.locator("#import-problems")).to_contain_text("could not be imported")
        expect(page.locator("#import-body-errors")).to_contain_text("priority")
        expect(page.locator("#nav-create-job")).to_have_text("Create job")
        assert page.locator("#import-body").input_value().strip() == refused.strip()

        # A reload asks the page again, not to send the switch's form again (qa82: the page
        # was that POST's answer), and it still has the text and its refusal.
        sent: list[str] = []
        page.on("request", lambda request: sent.append(request.method))
        page.reload()
        expect(page.locator("#import-body-errors")).to_contain_text("priority")
        assert sent[0] == "GET"
        assert page.locator("#import-body").input_value().strip() == refused.strip()

        page.click("[data-language=zh-hans]")
        expect(page.locator("html")).to_have_attribute("lang", "zh-hans")
        expect(page.locator("#import-problems")).to_contain_text("请求未能导入")
        assert page.locator("#import-body").input_value().strip() == refused.strip()
        assert not Draft.objects.exists()
    finally:
        context.close()


@pytest.mark.browser
@pytest.mark.parametrize("javascript", [True, False], ids=["js", "no-js"])
def test_a_secret_typed_in_a_refused_import_reaches_the_draft_after_a_language_switch(
    browser, live_server, alice, javascript
):
    from playwright.sync_api import expect

    context = browser.new_context(
        base_url=live_server.url, java_script_enabled=javascript, locale="zh-CN"
    )
    page = context.new_page()
    seen: list[str] = []  # each page as the browser has it
    try:
        page.goto("/login/")
        page.fill("input[name=username]", "alice")
        page.fill("input[name=password]", "alice-password")
        page.click("#login-submit")
        page.goto("/create/")
        page.fill("#import-body", json.dumps(secret_body(priority="urgent"), indent=2))
        page.select_option("#import-pool", "local")
        page.click("#import-submit")
        expect(page.locator("#import-problems")).to_be_visible()
        seen.append(page.content())
        page.click("[data-language=en]")
        expect(page.locator("html")).to_have_attribute("lang", "en")
        expect(page.locator("#import-body-errors")).to_contain_text("priority")
        seen.append(page.content())

        # Fixed in the box, where the secrets read ******: imported with them.
        box = page.locator("#import-body").input_value()
        assert W.MASK in box
        page.fill("#import-body", box.replace('"urgent"', '"high"'))
        page.click("#import-submit")

        page.wait_for_url(re.compile(r"/create/[0-9a-f-]+/basic/$"))
        expect(page.locator("main")).to_contain_text("Imported from a request")
        assert imported_secrets(Draft.objects.get()) == (SECRET, SECRET + "-pw")
        seen.append(page.content())
        page.goto(step_url(Draft.objects.get(), W.IMAGE))
        seen.append(page.content())
        assert len(seen) == 4 and not any(SECRET in text for text in seen)
    finally:
        context.close()


def test_a_v1_bodys_cpu_refusal_names_its_own_path_once_not_the_roles_inside(alice_client):
    # Found in QA: the import said "roles[0].cpu: …" and "roles[1].cpu: …", places a v1 body
    # does not have, for the one value it gave in jobSpec.resources.
    body = copy.deepcopy(BODY)
    body["jobSpec"]["resources"] = [{"name": "cpu", "quantity": -3}]

    r = import_body(alice_client, body)

    said = error_texts(r)
    assert r.status_code == 200
    assert said.count("CPU 核数须在 1 到 1024 之间。") == 1
    assert "jobSpec.resources: CPU 核数须在 1 到 1024 之间。" in said
    assert "roles[" not in said
    assert not Draft.objects.exists()


def test_an_imports_warnings_stay_on_every_step_until_dismissed_on_the_review(alice_client):
    # QA round 24: they were one-time messages, gone at the first reload or step.
    body = {**BODY, **CHANNELS, "codeSource": {"filePath": "bos://b/x.tar.gz"}}
    body["jobSpec"] = {**BODY["jobSpec"], "runtimeClassName": "kata", "hostNetwork": True}
    import_body(alice_client, body)
    draft = Draft.objects.get()
    unread = (
        "请求中的字段 jobSpec.runtimeClassName、codeSource 未被读取（本控制台不认识这些字段）。"
    )
    left_out = "向导中没有 jobSpec.hostNetwork 对应的字段，这些内容未导入草稿。"

    for step in W.STEPS:
        page = alice_client.get(step_url(draft, step)).content.decode()
        assert unread in page and left_out in page, step

    # Another import says nothing of them: they are this draft's.
    import_body(alice_client, {**BODY, **CHANNELS, "name": "another"})
    other = Draft.objects.exclude(pk=draft.pk).get()
    assert 'id="import-notices"' not in alice_client.get(step_url(other, W.BASIC)).content.decode()

    alice_client.post(step_url(draft, W.REVIEW), {"action": "dismiss-notices"})
    for step in W.STEPS:
        page = alice_client.get(step_url(draft, step)).content.decode()
        assert unread not in page and left_out not in page, step
    draft.refresh_from_db()
    assert W.IMPORT_NOTICES not in draft.data
    assert draft.data[I.IMPORTED] is True  # still marked 导入 on my drafts


def test_a_mount_the_pool_cannot_make_says_why_on_its_row_not_add_a_mount(alice_client):
    # QA round 24: the reference's example (a PFS mount) imported onto the local pool said
    # "请添加挂载，或关闭存储。" beside the mount it shows, as if it were not there.
    body = {**BODY, **CHANNELS}
    body["datasources"] = [{"type": "pfs", "name": "pfs-7xWeAt", "mountPath": "/mnt/cluster"}]
    import_body(alice_client, body)
    draft = Draft.objects.get()
    add_a_mount = "请添加挂载，或关闭存储。"

    page = alice_client.get(step_url(draft, W.DATA)).content.decode()
    assert "本机资源池未向您提供卷“pfs-7xWeAt”" in page
    assert add_a_mount not in page

    # With no mount typed at all, it is what to do.
    r = post_step(alice_client, draft, W.DATA, data_data([]))
    assert add_a_mount in r.content.decode()


def test_a_tensorflow_queue_tasks_request_imported_says_how_its_roles_and_group_were_read(
    alice, alice_client
):
    # qa60: a team from seed 004 pasted a local TensorFlow job's request (ps, chief, worker,
    # evaluator; a task of a queue group of 3) into 从请求导入. AIHC's v1 body has no roles,
    # so the draft had 4 workers of 1 card each and one job, not a group; the notice named the
    # timeout, alerts, shared memory and exclusive CPU only.
    from jobs.services import jobs_submit

    spec = S.JobSpec(
        name="tf-sweep",
        resource_pool_id="local",
        image="python:3.12",
        command="python3 t.py",
        framework=S.TENSORFLOW,
        roles=[
            S.Role("chief", 1, A800, 1),
            S.Role("worker", 1, A800, 1),
            S.Role("ps", 1),
            S.Role("evaluator", 1),
        ],
        submission=S.Submission(S.SUBMIT_QUEUE, total=3, concurrency=1),
    )
    job = jobs_submit(owner=alice, spec=spec, submit_key=str(uuid.uuid4()))[0]
    page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()
    copied = html.unescape(re.search(r'<pre[^>]* id="api-request"[^>]*>(.*?)</pre>', page, re.S)[1])

    shown = error_texts(import_body(alice_client, copied, pool="", follow=True))

    assert "该请求没有 console 部分" in shown
    assert "角色按 jobSpec.replicas 读作 worker × 4" in shown
    assert "是一个任务，而非队列任务组" in shown
    draft = Draft.objects.get(owner=alice)
    # One job: a queue task of one, as the API stores a local body with no mode (review62).
    assert draft.data[W.SUBMISSION]["mode"] == [S.SUBMIT_QUEUE]
    assert W.assemble(W.wizard_state(draft)).spec.submission.total == 1


def test_a_jobs_request_imported_says_its_console_only_settings_are_the_defaults(
    alice, alice_client
):
    # QA 43: a researcher recreating a run from its page's request got a draft whose timeout
    # was 30 days again, not the run's 45 minutes, and nothing said so: the request (AIHC's
    # body) has no place for what only the console keeps; the page shows those apart.
    from jobs.services import jobs_submit

    spec = S.parse_document({**BODY, **CHANNELS}, resource_pool_id="local")
    spec.timeout_minutes = 45
    [job] = jobs_submit(owner=alice, spec=spec, submit_key=str(uuid.uuid4()))
    page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()
    copied = html.unescape(re.search(r'<pre[^>]* id="api-request"[^>]*>(.*?)</pre>', page, re.S)[1])

    response = import_body(alice_client, copied, pool="", follow=True)

    assert response.status_code == 200
    shown = response.content.decode()
    assert "该请求没有 console 部分" in shown and "任务超时、告警邮箱与 Webhook" in shown
    draft = Draft.objects.get(owner=alice)
    assert draft.data[W.ADVANCED]["timeout_minutes"] == [str(S.DEFAULT_TIMEOUT_MINUTES)]
    # The console's own document (with its console part) is taken whole and says nothing.
    import_body(alice_client, {**BODY, **CHANNELS, "name": "with-console"})
    other = Draft.objects.exclude(pk=draft.pk).get()
    assert (
        "该请求没有 console 部分" not in alice_client.get(step_url(other, W.BASIC)).content.decode()
    )


def test_a_v2_tensorflow_request_of_a_role_map_says_its_console_only_settings_are_the_defaults(
    alice, alice_client
):
    """Review 44: AIHC's v2 TFJob request gives each role its own part (a role map), which
    the mapping to v1 carries as console.roles: the import took that for the body's console
    part and said nothing of its timeout, alert channels, shared memory and exclusive CPU
    being the defaults (QA 43's notice). Its roles were read from the map, each its own, so
    the notice on roles read from jobSpec.replicas is not said."""
    tf = {
        "name": "tf-v2",
        "jobType": "TFJob",
        "command": "python train.py",
        "jobSpec": {
            "Chief": {"image": "python:3.12", "replicas": 1},
            "Worker": {"image": "python:3.12", "replicas": 2},
            "PS": {"image": "python:3.12", "replicas": 1},
        },
    }

    shown = error_texts(import_body(alice_client, tf, follow=True))

    assert Draft.objects.filter(owner=alice).count() == 1
    assert "该请求没有 console 部分" in shown and "任务超时、告警邮箱与 Webhook" in shown
    assert "角色按 jobSpec.replicas 读作" not in shown


def test_a_v2_request_is_not_told_its_roles_were_read_because_a_v1_body_has_none(alice_client):
    """Review 44: a v2 CreateJob request's import said "AIHC's v1 body has neither" (roles,
    queue group) to a user who pasted no v1 body; both versions have neither."""
    alice_client.cookies["django_language"] = "en"
    body = {k: v for k, v in BODY.items() if k not in ("datasources", "tensorboardConfig")}

    shown = " ".join(error_texts(import_body(alice_client, v2_from_v1(body), follow=True)).split())

    assert "its roles were read from jobSpec.replicas as master × 1, worker × 2" in shown
    assert "AIHC's request body has no place for it" in shown
    assert "v1 body" not in shown
    alice_client.cookies["django_language"] = "zh-hans"
    draft = Draft.objects.get()
    assert "AIHC 的请求体没有它的位置" in error_texts(alice_client.get(step_url(draft, W.BASIC)))


def test_an_imports_notices_list_their_items_with_each_readers_separator(alice_client):
    # qa82: joined once, with an ASCII ", ", whatever the language the notice was read in.
    body = {k: v for k, v in BODY.items() if k not in ("datasources", "tensorboardConfig")}
    body["jobSpec"] = {**body["jobSpec"], "hostNetwork": True}
    body["labels"] = [{"key": "ai-job-console/job-id", "value": "j-1"}]

    chinese = " ".join(
        error_texts(import_body(alice_client, v2_from_v1(body), follow=True)).split()
    )

    assert "角色按 jobSpec.replicas 读作 master × 1、worker × 2" in chinese
    assert "向导中没有 labels.ai-job-console/job-id、jobSpec.hostNetwork 对应的字段" in chinese
    alice_client.cookies["django_language"] = "en"
    draft = Draft.objects.get()
    english = " ".join(error_texts(alice_client.get(step_url(draft, W.BASIC))).split())
    assert "its roles were read from jobSpec.replicas as master × 1, worker × 2" in english
    assert (
        "The wizard has no field for labels.ai-job-console/job-id, jobSpec.hostNetwork" in english
    )


def test_a_key_in_the_wrong_place_names_the_places_it_belongs_with_the_readers_separator(
    alice_client,
):
    body = {**BODY, "jobSpec": {**BODY["jobSpec"], "value": "x"}}

    chinese = error_texts(import_body(alice_client, body))
    alice_client.cookies["django_language"] = "en"
    english = error_texts(import_body(alice_client, body))

    assert "“value”应放在 labels[]、jobSpec.envs[] 中。" in chinese
    assert "'value' belongs in labels[], jobSpec.envs[]." in english


def test_the_no_console_part_notice_sends_shared_memory_to_the_step_that_has_it(
    alice, alice_client
):
    """Review 44: the notice said to check the timeout, alert channels, shared memory and
    exclusive CPU "on step Advanced", which has no shared memory field (step Resources has):
    a user looked for it there and did not find it."""
    response = import_body(alice_client, BODY, follow=True)
    draft = Draft.objects.get(owner=alice)
    notices = error_texts(response)

    assert (
        "提交前请检查：角色和共享内存在“资源配置”步骤，队列任务组在“投递方式”步骤，其余在“高级配置”步骤。"
        in notices
    )
    assert (
        'name="shared_memory_gi"' in alice_client.get(step_url(draft, W.RESOURCES)).content.decode()
    )
    assert (
        'name="shared_memory_gi"'
        not in alice_client.get(step_url(draft, W.ADVANCED)).content.decode()
    )
    for name in ("timeout_minutes", "cpu_exclusive", "alert_emails", "alert_webhooks"):
        assert f'name="{name}"' in alice_client.get(step_url(draft, W.ADVANCED)).content.decode()
    alice_client.cookies["django_language"] = "en"
    english = error_texts(alice_client.get(step_url(draft, W.BASIC)))
    assert (
        "check them before you submit: roles and shared memory on step Resources, a queue "
        "group on step Submission, the others on step Advanced."
    ) in " ".join(english.split())


@pytest.mark.parametrize(
    ("cards", "language", "said"),
    [
        ("", "en", "This pool offers no cards: its jobs run on CPUs."),
        ("", "zh-hans", "该资源池不提供加速芯片：其任务在 CPU 上运行。"),
        (
            f"{A800}=8",
            "en",
            f"This pool does not offer “nvidia.com/gpu” cards; it offers A800 80GB ({A800}).",
        ),
        (
            f"{A800}=8",
            "zh-hans",
            f"该资源池不提供“nvidia.com/gpu”卡型；它提供 A800 80GB ({A800})。",
        ),
    ],
)
def test_a_card_type_the_pool_lacks_is_refused_in_the_consoles_words_and_kept_in_its_box(
    alice_client, settings, cards, language, said
):
    # qa101: nvidia.com/gpu imported into the local pool showed Django's "Select a valid
    # choice. nvidia.com/gpu is not one of the available choices." and "—" in the box.
    settings.LOCAL_ACCELERATORS = cards
    body = copy.deepcopy({**BODY, **CHANNELS})
    body["jobSpec"]["resources"][0]["name"] = "nvidia.com/gpu"
    import_body(alice_client, body)
    draft = Draft.objects.get()
    alice_client.cookies["django_language"] = language

    r = alice_client.get(step_url(draft, W.RESOURCES))

    from .test_wizard import field_errors

    assert field_errors(r, "id_roles-0-accelerator_type") == [said]
    assert "valid choice" not in r.content.decode()
    assert "有效的选项" not in r.content.decode()
    assert re.search(r'<option value="nvidia.com/gpu" selected>', r.content.decode()), (
        "the imported card type stays in its box"
    )
