"""Labels (标签): set on 基础信息, kept by import and copy, shown as links on the job page and the
job list, which filters by them (`?label=key=value`), and compared."""

from __future__ import annotations

import html
import json
import re
import uuid
from datetime import timedelta
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from jobs import spec as S
from jobs import wizard as W
from jobs.kubernetes.manifests import CONSOLE_JOB_LABEL
from jobs.models import Draft, Job
from jobs.services import jobs_submit
from jobs.summary import spec_changes

from .test_api import alice_key, api, refused, wsgi  # noqa: F401  (fixtures)
from .test_api import body as api_body
from .test_wizard import (  # noqa: F401  (_local_pool: the wizard's pool of cards)
    HTMX,
    _local_pool,
    basic_data,
    complete_steps,
    field_errors,
    new_draft,
    post_step,
    step_url,
)
from .test_wizard_import import BODY, CHANNELS, import_body

LIST = reverse("job-list")


def with_labels(*labels: tuple[str, str], **over) -> dict[str, str]:
    data = basic_data(**over)
    data["label-TOTAL_FORMS"] = str(len(labels))
    data["label-INITIAL_FORMS"] = "0"
    for i, (key, value) in enumerate(labels):
        data[f"label-{i}-key"] = key
        data[f"label-{i}-value"] = value
    return data


def labelled_job(owner, *labels: tuple[str, str], name: str = "run") -> Job:
    spec = S.JobSpec(
        name=name,
        resource_pool_id="local",
        image="python:3.12",
        command="python train.py",
        roles=[S.Role("master", 1)],
        labels=list(labels),
    )
    [job] = jobs_submit(owner=owner, spec=spec, submit_key=str(uuid.uuid4()))
    return job


def chips(page: str) -> list[tuple[str, str, str, str]]:
    """Each label link: (address, title, accessible name, text shown)."""
    return [
        (html.unescape(href), html.unescape(title), html.unescape(name), html.unescape(text))
        for href, title, name, text in re.findall(
            r'<a class="[^"]*job-label" href="([^"]+)" title="([^"]+)" aria-label="([^"]+)"[^>]*>'
            r"([^<]+)</a>",
            page,
        )
    ]


def listed(page: str) -> list[str]:
    return re.findall(r'<tr data-job="([^"]+)">', page)


# -- the wizard: 基础信息's 标签 table --------------------------------------------------------


def test_labels_typed_on_basic_info_reach_the_review_the_request_and_the_job(alice_client):
    draft = new_draft(alice_client)
    labels = (("project", "llm"), ("example.com/exp", "lr-sweep"))

    complete_steps(alice_client, draft, **{W.BASIC: with_labels(*labels)})
    review = alice_client.get(step_url(draft, W.REVIEW)).content.decode()
    r = alice_client.post(reverse("wizard-submit", args=[draft.id]))

    assert "project=llm、example.com/exp=lr-sweep" in review  # 中文 list words (left55)
    body = json.loads(
        html.unescape(re.search(r'id="request-json"[^>]*>(.*?)</', review, re.S).group(1))
    )
    assert body["labels"] == [
        {"key": "project", "value": "llm"},
        {"key": "example.com/exp", "value": "lr-sweep"},
    ]
    assert r.status_code == 302
    job = Job.objects.get()
    assert job.job_spec().labels == list(labels)
    assert list(job.labels.order_by("id").values_list("key", "value")) == list(labels)


@pytest.mark.parametrize(
    ("labels", "field", "message"),
    [
        (
            [("bad key!", "x")],
            "id_label-0-key",
            "标签键支持字母、数字、-、_ 和 .，以字母或数字开头和结尾，最长 63 个字符"
            "（可带 example.com/ 这样的前缀）。",
        ),
        (
            [("team", "nlp team")],
            "id_label-0-value",
            "标签值支持字母、数字、-、_ 和 .，以字母或数字开头和结尾，最长 63 个字符；可以为空。",
        ),
        (
            [("team", "v" * 64)],
            "id_label-0-value",
            "标签值支持字母、数字、-、_ 和 .，以字母或数字开头和结尾，最长 63 个字符；可以为空。",
        ),
        ([("", "nlp")], "id_label-0-key", "请填写标签的键。"),
        (
            [("team", "nlp"), ("team", "cv")],
            "id_label-1-key",
            "标签 team 出现了两次；同一个键只能有一个值。",
        ),
        (
            [("aijob.cce.baidubce.com/ai-user-id", "42")],
            "id_label-0-key",
            "以 aijob.cce.baidubce.com/ 开头的键由控制台或 AIHC 为每个任务设置，不能手动填写；"
            "请换一个键。",
        ),
        (
            [(CONSOLE_JOB_LABEL, "pytorchjob-x")],
            "id_label-0-key",
            "以 ai-job-console/job-id 开头的键由控制台或 AIHC 为每个任务设置，不能手动填写；"
            "请换一个键。",
        ),
        (
            # qa103: which fault-tolerance restart made a Kubernetes object; given by hand, a
            # first create would pass for a restart's.
            [("ai-job-console/restart", "1")],
            "id_label-0-key",
            "以 ai-job-console/restart 开头的键由控制台或 AIHC 为每个任务设置，不能手动填写；"
            "请换一个键。",
        ),
        (
            [("app.kubernetes.io/managed-by", "me")],
            "id_label-0-key",
            "kubernetes.io 下的键由 Kubernetes 及其调度器读取（如任务使用的队列和优先级），"
            "不能手动填写；请换一个键。",
        ),
        (
            [("lr:3e-4", "")],
            "id_label-0-key",
            "标签的键和值分开填写：键为 lr，值为 3e-4。",
        ),
        (
            [("lr = 3e-4", "")],
            "id_label-0-key",
            "标签的键和值分开填写：键为 lr，值为 3e-4。",
        ),
        (
            # Nothing after "=": the rule, not "键为 lr，值为 。" with no value to name.
            [("lr=", "")],
            "id_label-0-key",
            "标签键支持字母、数字、-、_ 和 .，以字母或数字开头和结尾，最长 63 个字符"
            "（可带 example.com/ 这样的前缀）。",
        ),
    ],
    ids=[
        "key syntax",
        "value syntax",
        "value too long",
        "no key",
        "twice",
        "aihc's",
        "console's",
        "console's restart",
        "kubernetes' managed-by",
        "pasted key:value",
        "pasted key=value",
        "key and equals sign",
    ],
)
def test_a_refused_label_says_why_on_its_field_and_keeps_what_was_typed(
    alice_client, labels, field, message
):
    draft = new_draft(alice_client)

    r = post_step(alice_client, draft, W.BASIC, with_labels(*labels))

    assert r.status_code == 200
    assert field_errors(r, field) == [message]
    page = r.content.decode()
    for key, value in labels:
        assert f'value="{html.escape(key)}"' in page or not key
        assert f'value="{value}"' in page or not value
    draft.refresh_from_db()
    assert W.BASIC not in draft.completed_steps
    assert W.rows_of(draft.data[W.BASIC], "label")[-1]["key"] == [labels[-1][0]]


def test_a_refused_label_says_why_in_english_and_with_htmx(alice_en):
    draft = new_draft(alice_en)

    r = post_step(alice_en, draft, W.BASIC, with_labels(("bad key!", "x")), htmx=True)

    assert r.status_code == 200
    assert not r.content.decode().lstrip().startswith("<!doctype")  # the step's region alone
    assert 'id="wizard"' in r.content.decode()
    assert field_errors(r, "id_label-0-key") == [
        "A label key uses letters, digits, '-', '_' and '.', starts and ends with a letter or "
        "digit and is at most 63 characters long (it may have a prefix such as example.com/)."
    ]


def test_more_rows_than_a_job_has_labels_are_refused_on_the_table(alice_client):
    draft = new_draft(alice_client)
    data = with_labels(*[(f"k{i}", "v") for i in range(S.MAX_LABELS + 1)])

    r = post_step(alice_client, draft, W.BASIC, data)

    assert r.status_code == 200
    assert f"一个任务最多 {S.MAX_LABELS} 个标签；请删除一些行。" in html.unescape(
        r.content.decode()
    )
    draft.refresh_from_db()
    assert W.BASIC not in draft.completed_steps


def test_add_label_adds_a_row_and_remove_takes_that_row_away_keeping_the_others(alice_client):
    draft = new_draft(alice_client)

    r = post_step(alice_client, draft, W.BASIC, with_labels(("project", "llm")), action="add-row")
    assert r.status_code == 302
    page = alice_client.get(step_url(draft, W.BASIC)).content.decode()
    assert len(re.findall(r'<tr class="label-row">', page)) == 2
    assert 'aria-label="键 2"' in page  # each cell named for a screen reader

    data = with_labels(("project", "llm"), ("exp", "lr-sweep"))
    post_step(alice_client, draft, W.BASIC, data, action="remove-row-0")
    draft.refresh_from_db()
    assert [r["key"] for r in W.rows_of(draft.data[W.BASIC], "label")] == [["exp"]]


def test_a_basic_step_saved_without_a_label_table_still_passes(alice_client):
    # A draft saved before the table (or a script's post): no management form, no labels.
    draft = new_draft(alice_client)

    r = post_step(alice_client, draft, W.BASIC, basic_data())

    assert r.status_code == 302
    draft.refresh_from_db()
    assert W.BASIC in draft.completed_steps


# -- import, copy & edit, compare ----------------------------------------------------------


def test_an_import_keeps_the_labels_and_does_not_name_them_as_left_out(alice_client):
    body = {**BODY, **CHANNELS, "labels": [{"key": "team", "value": "nlp"}]}

    r = import_body(alice_client, body, follow=True)

    draft = Draft.objects.get()
    rows = W.rows_of(draft.data[W.BASIC], "label")
    assert rows == [{"key": ["team"], "value": ["nlp"]}]
    assert "labels" not in html.unescape(r.content.decode()).split('id="import-notices"')[-1][:400]
    assert 'value="team"' in r.content.decode()


def test_an_import_leaves_out_the_labels_the_console_or_aihc_sets_and_names_them(alice_client):
    # A review's JSON for an AIHC pool carries the console's id label (<job-id>), a job
    # described by AIHC carries AIHC's own: theirs, not the person's, so not refused either.
    body = {
        **BODY,
        **CHANNELS,
        "labels": [
            {"key": "team", "value": "nlp"},
            {"key": CONSOLE_JOB_LABEL, "value": "<job-id>"},
            {"key": "aijob.cce.baidubce.com/create-from-aihcp-api", "value": "true"},
        ],
    }

    r = import_body(alice_client, body, follow=True)

    assert r.status_code == 200
    draft = Draft.objects.get()
    assert W.rows_of(draft.data[W.BASIC], "label") == [{"key": ["team"], "value": ["nlp"]}]
    notice = (
        f"向导中没有 labels.{CONSOLE_JOB_LABEL}、"
        "labels.aijob.cce.baidubce.com/create-from-aihcp-api 对应的字段，这些内容未导入草稿。"
    )
    assert notice in html.unescape(r.content.decode())


def test_copy_and_edit_fills_in_the_labels(alice, alice_client):
    job = labelled_job(alice, ("project", "llm"), ("exp", "lr-1"))

    r = alice_client.post(reverse("job-copy", args=[job.public_id]))

    assert r.status_code == 302
    draft = Draft.objects.get()
    rows = W.rows_of(draft.data[W.BASIC], "label")
    assert [(r["key"][0], r["value"][0]) for r in rows] == [("project", "llm"), ("exp", "lr-1")]


def test_the_review_diff_and_compare_show_a_row_for_each_label_key_that_differs(
    alice, alice_client
):
    first = labelled_job(alice, ("project", "llm"), ("exp", "lr-sweep"), ("lr", "3e-4"), name="a")
    second = labelled_job(alice, ("project", "llm"), ("exp", "lr-sweep"), ("lr", "1e-4"), name="b")
    same = labelled_job(alice, ("project", "llm"), ("exp", "lr-sweep"), ("lr", "3e-4"), name="c")
    unlabelled = labelled_job(alice, name="d")
    empty = labelled_job(alice, ("exp", ""), name="e")

    changes = spec_changes(first.job_spec(), second.job_spec())
    compared = alice_client.get(
        f"{reverse('job-compare')}?job={first.public_id}&job={second.public_id}"
    ).content.decode()
    unchanged = spec_changes(first.job_spec(), same.job_spec())
    gained = spec_changes(unlabelled.job_spec(), first.job_spec())
    gained_empty = spec_changes(unlabelled.job_spec(), empty.job_spec())

    # Only the key that changed, value against value: the sweep's copy says lr changed.
    assert [c for c in changes if "标签" in c[0]] == [("基础信息 · 标签 lr", "3e-4", "1e-4")]
    assert re.search(r'<th scope="row" class="fw-normal">基础信息 · 标签 lr</th>', compared)
    assert not any("标签" in label for label, _a, _b in unchanged)
    assert ("基础信息 · 标签 project", "—", "llm") in gained
    # A label with an empty value differs from none (it was "—" against "—", not listed).
    assert [c for c in gained_empty if "标签" in c[0]] == [("基础信息 · 标签 exp", "—", "（空值）")]


# -- the job page and the job list --------------------------------------------------------


def test_the_job_page_shows_each_label_as_a_link_to_the_list_filtered_by_it(alice, alice_client):
    long_value = "a" + "b" * 61 + "c"
    job = labelled_job(alice, ("project", "llm"), ("note", long_value))

    page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()

    [project, note] = chips(page)
    assert project == (
        f"{LIST}?label=project%3Dllm",
        "project=llm",
        "带标签 project=llm 的任务",
        "project=llm",
    )
    # A long one is cut on the page; its whole text is in the title and the accessible name.
    assert note[1] == f"note={long_value}" and long_value in note[2]
    assert len(note[3]) == 32 and note[3][:28] == f"note={long_value}"[:28]


def test_the_list_filtered_by_two_labels_shows_the_jobs_having_both(alice, bob, alice_client):
    both = labelled_job(alice, ("project", "llm"), ("exp", "lr-sweep"), name="both")
    labelled_job(alice, ("project", "llm"), ("exp", "other"), name="one")
    labelled_job(alice, ("exp", "lr-sweep"), name="other-one")
    labelled_job(bob, ("project", "llm"), ("exp", "lr-sweep"), name="bobs")

    r = alice_client.get(LIST, {"label": ["project=llm", "exp=lr-sweep"], "status": "queued"})

    assert r.status_code == 200
    page = r.content.decode()
    assert listed(page) == [both.public_id]
    # The filters say so, each with a way to drop it; the filter form keeps them.
    assert re.findall(r'<span class="[^"]*label-filter" title="([^"]+)"', page) == [
        "project=llm",
        "exp=lr-sweep",
    ]
    assert '<input type="hidden" name="label" value="exp=lr-sweep">' in page


def test_a_key_alone_finds_every_value_of_it(alice, alice_client):
    first = labelled_job(alice, ("exp", "lr-1"), name="a")
    second = labelled_job(alice, ("exp", "lr-2"), name="b")
    labelled_job(alice, ("project", "llm"), name="c")

    page = alice_client.get(LIST, {"label": "exp"}).content.decode()

    assert sorted(listed(page)) == sorted([first.public_id, second.public_id])


def test_a_label_pasted_as_key_colon_value_filters_as_key_equals_value(alice, alice_client):
    swept = labelled_job(alice, ("lr", "3e-4"), name="a")
    labelled_job(alice, ("lr", "1e-4"), name="b")
    prefixed = labelled_job(alice, ("example.com/lr", "3e-4"), name="c")

    r = alice_client.get(LIST, {"label": "lr:3e-4"})
    with_prefix = alice_client.get(LIST, {"label": "example.com/lr: 3e-4"}).content.decode()

    assert r.status_code == 200
    page = r.content.decode()
    assert listed(page) == [swept.public_id]
    # The chip says what was applied, written as the console writes labels.
    assert re.findall(r'<span class="[^"]*label-filter" title="([^"]+)"', page) == ["lr=3e-4"]
    assert listed(with_prefix) == [prefixed.public_id]


def test_a_label_found_only_in_another_case_is_named_with_a_link_to_the_jobs_having_it(
    alice, bob, alice_client
):
    swept = labelled_job(alice, ("lr", "3e-4"), ("project", "llm"), name="a")
    labelled_job(bob, ("Project", "LLM"), name="bobs")  # another user's: never named

    r = alice_client.get(LIST, {"label": ["LR=3E-4", "PROJECT"], "status": "queued"})
    exact = alice_client.get(LIST, {"label": "nothing=here"}).content.decode()

    assert r.status_code == 200
    page = html.unescape(r.content.decode())
    assert listed(page) == []
    hints = re.findall(r'<div class="label-case-hint[^"]*">(.*?)</div>', page)
    assert [re.sub(r"<[^>]+>", "", hint) for hint in hints] == [
        "标签区分大小写：没有任务带有 LR=3E-4，您的任务带有的是 lr=3e-4。",
        "标签区分大小写：没有任务带有 PROJECT，您的任务带有的是 project。",
    ]
    [href] = re.findall(r'href="\?([^"]+)"[^>]*>lr=3e-4</a>', hints[0])
    # The link asks for the label held instead, the other filters kept.
    assert sorted(parse_qsl(href)) == [
        ("label", "PROJECT"),
        ("label", "lr=3e-4"),
        ("status", "queued"),
    ]
    followed = alice_client.get(f"{LIST}?{href.replace('PROJECT', 'project')}")
    assert listed(followed.content.decode()) == [swept.public_id]
    assert "label-case-hint" not in exact


def test_a_label_the_jobs_hold_as_asked_is_not_said_missing_when_another_filter_empties_the_list(
    alice, alice_client
):
    labelled_job(alice, ("LR", "1"), ("Team", "a"), name="upper")
    labelled_job(alice, ("lr", "1"), ("team", "b"), name="lower")

    # LR=1 and the key Team are held as asked: the list is empty for exp=2 alone.
    r = alice_client.get(LIST, {"label": ["LR=1", "Team", "exp=2"]})

    assert r.status_code == 200
    page = r.content.decode()
    assert listed(page) == []
    assert "label-case-hint" not in page


def test_a_label_in_a_row_links_to_the_list_with_its_filters_and_that_label(alice, alice_client):
    labelled_job(alice, ("project", "llm"), ("exp", "lr-1"))

    page = alice_client.get(LIST, {"q": "run", "label": "project=llm", "page": "1"}).content
    links = chips(page.decode())

    queries = [parse_qsl(urlsplit(href).query) for href, *_rest in links]
    # project=llm is already asked for: its link is the list as it is; exp's adds it.
    assert queries == [
        [("q", "run"), ("label", "project=llm")],
        [("q", "run"), ("label", "project=llm"), ("label", "exp=lr-1")],
    ]


def test_the_list_costs_the_same_queries_whatever_the_number_of_labels(
    alice, alice_client, django_assert_num_queries
):
    labelled_job(alice, name="bare")
    alice_client.get(LIST)  # warm the session
    # As test_the_list_costs_the_same_queries_for_few_or_many_jobs: labels add none.
    with django_assert_num_queries(6):
        alice_client.get(LIST)
    for n in range(20):
        labelled_job(alice, *[(f"k{i}", f"v{n}") for i in range(S.MAX_LABELS)], name=f"r{n}")

    with django_assert_num_queries(6):
        page = alice_client.get(LIST).content.decode()
    with django_assert_num_queries(4):
        alice_client.get(LIST, headers=HTMX)

    assert len(chips(page)) == 20 * S.MAX_LABELS  # a page of 20 rows (the bare one on page 2)
    # Filtering by labels is the same one query for the page, a JOIN per label.
    with django_assert_num_queries(6):
        alice_client.get(LIST, {"label": ["k0=v3", "k1=v3"]})


def test_every_job_a_submit_makes_holds_its_labels_for_the_filter_and_they_go_with_the_job(
    alice, alice_client
):
    from jobs.actions import job_delete, job_rerun
    from jobs.models import JobLabel

    spec = S.JobSpec(
        name="grp",
        resource_pool_id="local",
        image="python:3.12",
        command="python train.py",
        roles=[S.Role("master", 1)],
        labels=[("project", "llm"), ("exp", "")],
        submission=S.Submission(mode=S.SUBMIT_QUEUE, total=3, concurrency=1),
    )
    tasks = jobs_submit(owner=alice, spec=spec, submit_key=str(uuid.uuid4()))
    [again] = job_rerun(job=tasks[0], owner=alice, request_key=uuid.uuid4().hex)
    made = [*tasks, again]

    page = alice_client.get(LIST, {"label": ["project=llm", "exp="]}).content.decode()

    # Each task of the queue group has its own rows, and so has a job run again.
    assert sorted(listed(page)) == sorted(job.public_id for job in made)
    assert sorted(JobLabel.objects.values_list("job_id", "key", "value")) == sorted(
        (job.pk, key, value) for job in made for key, value in [("exp", ""), ("project", "llm")]
    )
    # A deleted job's rows go with it (CASCADE): the filter never finds a job that is gone.
    assert job_delete(job=again)
    assert not JobLabel.objects.filter(job_id=again.pk).exists()
    assert JobLabel.objects.count() == 6


@pytest.mark.parametrize(
    "asked",
    ["=", "k=\x00", "k" * 400 + "=v", "k=" + "v" * 100, "=v", "a=b=c", "ключ=значение"],
)
def test_any_label_filter_answers_a_list_never_an_error(alice, alice_client, asked):
    labelled_job(alice, ("project", "llm"))

    r = alice_client.get(LIST, {"label": asked})

    assert r.status_code == 200


def test_only_the_first_ten_labels_asked_for_are_applied_and_the_list_says_so(alice, alice_client):
    job = labelled_job(alice, *[(f"k{i}", "v") for i in range(10)])

    page = alice_client.get(LIST, {"label": [f"k{i}=v" for i in range(11)]}).content.decode()

    assert listed(page) == [job.public_id]  # k10=v, which it lacks, is not applied
    assert 'id="labels-cut"' in page


def test_a_label_asked_with_spaces_around_its_equals_sign_is_dropped_by_its_cross(
    alice, alice_client
):
    job = labelled_job(alice, ("project", "llm"))
    labelled_job(alice, name="bare")

    page = alice_client.get(LIST, {"label": " project = llm ", "q": "r"}).content.decode()

    assert listed(page) == [job.public_id]
    [cross] = re.findall(r'<a class="link-light ms-1" data-keeps-selection href="([^"]+)"', page)
    # The "×" leads to the list without that label (it kept " project = llm", still filtered).
    assert parse_qsl(urlsplit(html.unescape(cross)).query) == [("q", "r")]
    # The page's links and form write it as it is applied.
    assert '<input type="hidden" name="label" value="project=llm">' in page
    assert ("label", "project=llm") in parse_qsl(urlsplit(chips(page)[0][0]).query)


def test_labels_asked_for_past_the_ten_applied_or_twice_are_not_carried_by_the_pages_links(
    alice, alice_client
):
    job = labelled_job(alice, *[(f"k{i}", "v") for i in range(10)])

    asked = [f"k{i}=v" for i in range(300)] + ["k0=v"] * 300
    page = html.unescape(alice_client.get(LIST, {"label": asked}).content.decode())

    assert listed(page) == [job.public_id]
    # Each link of the page (the row's labels, each label's "×", Stop / Delete's way back)
    # carries the ten labels applied, once each: it was each of the 600 asked for.
    [chip] = {href for href, _title, _name, _text in chips(page)}  # each label is asked for
    assert [v for n, v in parse_qsl(urlsplit(chip).query) if n == "label"] == [
        f"k{i}=v" for i in range(10)
    ]
    [back] = re.findall(r'name="back" value="([^"]*)"', page)
    assert [v for n, v in parse_qsl(back) if n == "label"] == [f"k{i}=v" for i in range(10)]


def test_stop_or_compare_from_a_list_filtered_by_labels_comes_back_to_it(alice, alice_client):
    a = labelled_job(alice, ("exp", "x"), name="a")
    labelled_job(alice, ("exp", "x"), name="b")

    r = alice_client.post(
        reverse("job-bulk"),
        {"action": "compare", "jobs": [a.public_id], "back": "label=exp%3Dx&label=team&page=2"},
    )

    assert r.status_code == 302
    assert parse_qsl(urlsplit(r["Location"]).query)[:3] == [
        ("label", "exp=x"),
        ("label", "team"),
        ("page", "2"),
    ]


# -- the spec, the API and the backends ----------------------------------------------------


def test_an_api_body_with_a_reserved_or_repeated_label_is_refused_on_that_label():
    spec = S.JobSpec(
        name="x",
        resource_pool_id="local",
        image="python:3.12",
        command="true",
        roles=[S.Role("master", 1)],
        labels=[("team", "a"), ("team", "b"), (CONSOLE_JOB_LABEL, "job-1")],
    )

    errors = S.validate(spec)

    assert set(errors) == {"labels[1].key", "labels[2].key"}


def test_kubernetes_takes_the_consoles_label_rule_and_keeps_its_own_job_id_label():
    # The console's key rule is Kubernetes' (an optional DNS-subdomain prefix of 253, "/", a
    # name of 63 starting and ending alphanumeric) and so is its value rule: what passes here
    # is a valid Kubernetes label. The console's own job-id label is set over the spec's.
    from .test_kubernetes_manifests import JOB_ID, manifest, pytorch_spec

    longest = ("a" * 253 + "/" + "b" * 63, "c" * 63)
    spec = pytorch_spec(labels=[("example.com/exp", "lr-1"), longest])
    assert not S.validate(spec)
    spec.labels.append((CONSOLE_JOB_LABEL, "forged"))  # a stored spec from before the rule

    body = manifest(spec)

    labels = body["metadata"]["labels"]
    pod = body["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["metadata"]["labels"]
    assert labels["example.com/exp"] == pod["example.com/exp"] == "lr-1"
    assert labels[CONSOLE_JOB_LABEL] == pod[CONSOLE_JOB_LABEL] == JOB_ID


@pytest.mark.parametrize("prefix", ["a..b", "a.-b", "a-.b", ".a", "a.", "-a", "A.b", "a_b.c"])
def test_a_key_whose_prefix_is_no_dns_subdomain_is_refused_as_kubernetes_refuses_it(prefix):
    # Kubernetes (and AIHC on it) checks a prefix as a DNS subdomain: dot-separated parts that
    # start and end with a lowercase letter or digit. The rule let "a..b/c" through to a job
    # the API server then refused at its create.
    spec = S.JobSpec(name="run", labels=[(f"{prefix}/exp", "1"), ("a-b.c-9.example.com/exp", "1")])

    errors = S.validate(spec)

    assert errors["labels[0].key"] == [str(S.LABEL_KEY_RULE)]
    assert "labels[1].key" not in errors


def test_a_scripts_label_value_sent_as_a_json_number_is_refused_naming_it(
    api,  # noqa: F811
    alice,
):
    mounts = [{"type": "hostpath", "name": "scratch", "mountPath": "/workspace"}]

    refusal = refused(
        lambda: api.create_job(
            pool="local",
            body=api_body(labels=[{"key": "lr", "value": 3e-4}], datasources=mounts),
        )
    )
    # A key too: {"key": 1e-4} was the key 0.0001.
    key_refusal = refused(
        lambda: api.create_job(
            pool="local",
            body=api_body(labels=[{"key": 1e-4, "value": "x"}], datasources=mounts),
        )
    )
    # A whole number is text of the wrong JSON type too, as AIHC's server reads it (qa97:
    # it was taken as "3").
    whole = refused(
        lambda: api.create_job(
            pool="local",
            body=api_body(labels=[{"key": "epochs", "value": 3}], datasources=mounts),
        )
    )

    # 3e-4 would have become lr=0.0003, which a filter for lr=3e-4 does not find.
    assert refusal.status == 400
    assert "labels[0].value: Must be text: write the number in quotes" in str(refusal)
    assert "labels[0].key: Must be text: write the number in quotes" in str(key_refusal)
    assert 'labels[0].value: Must be text: a JSON string, in quotes ("3", not 3).' in str(whole)
    assert Job.objects.count() == 0  # the refused ones made nothing


@pytest.mark.parametrize(
    "key",
    [
        "kueue.x-k8s.io/queue-name",
        "kueue.x-k8s.io/priority-class",
        "kubernetes.io/arch",
        "node.kubernetes.io/instance-type",
        "k8s.io/x",
        "jobset.sigs.k8s.io/jobset-name",
        "training.kubeflow.org/job-name",
    ],
)
def test_a_key_kubernetes_or_its_schedulers_read_is_refused_on_its_row(key):
    # The labels go on a Kubernetes pool's job and pods: Kueue would take its queue or priority
    # from kueue.x-k8s.io/..., not from the console's.
    from django.utils import translation

    spec = S.JobSpec(name="run", labels=[(key, "high"), ("my-kubernetes.io.example.com/x", "1")])

    with translation.override("en"):
        errors = S.validate(spec)
    with translation.override("zh-hans"):
        chinese = S.validate(spec)["labels[0].key"]

    assert errors["labels[0].key"] == [
        f"Keys under {S.platform_label_domain(key)} are read by Kubernetes and its schedulers "
        "(such as the queue and priority a job runs with), never set by hand; choose another "
        "key."
    ]
    assert chinese[0].startswith(f"{S.platform_label_domain(key)} 下的键由 Kubernetes")
    assert "labels[1].key" not in errors


def test_a_scripts_labels_are_described_back_and_filter_the_list_and_a_reserved_one_is_refused(
    api,  # noqa: F811
    alice_client,
):
    labels = [{"key": "project", "value": "llm"}, {"key": "exp", "value": "lr-1"}]
    mounts = [{"type": "hostpath", "name": "scratch", "mountPath": "/workspace"}]

    created = api.create_job(pool="local", body=api_body(labels=labels, datasources=mounts))
    refusal = refused(
        lambda: api.create_job(
            pool="local",
            body=api_body(labels=[{"key": CONSOLE_JOB_LABEL, "value": "x"}], datasources=mounts),
        )
    )

    described = api.get_job(pool="local", job_id=created["jobId"])
    assert described["labels"] == {"project": "llm", "exp": "lr-1"}
    page = alice_client.get(LIST, {"label": "exp=lr-1"}).content.decode()
    assert listed(page) == [created["jobId"]]
    assert (refusal.status, refusal.code) == (400, "InvalidParameter")
    assert "labels[0].key: " in refusal.message and CONSOLE_JOB_LABEL in refusal.message
    assert Job.objects.count() == 1


def test_a_label_in_a_row_keeps_the_jobs_ticked_on_other_pages(alice, alice_client):
    other = labelled_job(alice, ("exp", "lr-2"), name="other")
    labelled_job(alice, ("project", "llm"))

    page = alice_client.get(LIST, {"label": "project=llm", "sel": other.public_id}).content
    [(href, *_rest)] = chips(page.decode())

    # Filtering by a label is filtering: the selection (left21) goes with it, as with the
    # filter form and page links, and console.js keeps the link up to date with the boxes.
    assert parse_qsl(urlsplit(href).query) == [
        ("label", "project=llm"),
        ("sel", other.public_id),
    ]
    assert "data-keeps-selection>project=llm</a>" in page.decode()


def test_a_labels_link_too_long_with_the_selection_leaves_it_out_and_the_bar_says_so(
    alice, alice_en
):
    from jobs.labels import SAFE_ADDRESS_LENGTH
    from jobs.selection import MAX_CARRIED

    # Keys as long as the rule allows (a 247-character DNS prefix and a 63-character name).
    prefix = ".".join([c * 60 for c in "abcd"]) + ".com"
    long = [(f"{prefix}/{n}" + "n" * 62, "v" * 63) for n in range(4)]
    ticked = [labelled_job(alice, name=f"s{n}").public_id for n in range(MAX_CARRIED)]
    job = labelled_job(alice, *long, ("x", "y"), name="long")
    query = {"label": [f"{k}={v}" for k, v in long[:3]], "sel": ticked}

    r = alice_en.get(LIST, query)

    assert r.status_code == 200
    # The page's own address passes (gunicorn's bound: 4,094 bytes for the request line).
    assert len(f"GET {r.wsgi_request.get_full_path()} HTTP/1.1") <= 4094
    page = r.content.decode()
    links = {title: href for href, title, _name, _text in chips(page)}  # the title: its whole text
    fourth, short = links["=".join(long[3])], links["x=y"]
    # The fourth long label's link would pass it with the 50 ticks (a 400): it goes without them.
    with_ticks = f"{fourth}&{urlencode([('sel', i) for i in ticked])}"
    assert len(f"GET {with_ticks} HTTP/1.1") > 4094
    assert len(fourth) <= SAFE_ADDRESS_LENGTH
    assert "sel" not in dict(parse_qsl(urlsplit(fourth).query))
    assert [v for k, v in parse_qsl(urlsplit(fourth).query) if k == "label"] == [
        f"{k}={v}" for k, v in long
    ]
    assert re.search(r"data-keeps-selection data-selection-left-out>[^<]*</a>", page)
    # A short label's link still carries them.
    assert [v for k, v in parse_qsl(urlsplit(short).query) if k == "sel"] == ticked
    # The bar says nothing is lost, and the link opens.
    assert re.search(r'<p class="[^"]*" id="selection-links-short" data-safe-length="4000">', page)
    assert "Nothing is lost: they stay on this page" in page
    assert alice_en.get(fourth).status_code == 200
    assert [j.public_id for j in alice_en.get(fourth).context["page"].object_list] == [
        job.public_id
    ]


def test_the_selection_bar_says_nothing_of_long_links_when_every_link_carries_the_ticks(
    alice, alice_en
):
    ticked = labelled_job(alice, name="ticked").public_id
    labelled_job(alice, ("project", "llm"))

    page = alice_en.get(LIST, {"sel": ticked}).content.decode()

    assert re.search(r'id="selection-links-short" data-safe-length="4000" hidden>', page)
    assert "data-selection-left-out" not in page


def filter_form(page: str) -> str:
    [form] = re.findall(r'<form method="get"[^>]*id="job-filters".*?</form>', page, re.S)
    return form


def longest_filter_address(form: str) -> str:
    """The longest address the filter form in `form` can send: its hidden fields that are sent
    (a disabled one is not), each select at its longest value, each box filled to its
    maxlength with the longest characters its pattern lets through, each date box at its max
    (as a browser checks it before sending, JavaScript or not)."""
    pairs = [
        (html.unescape(name), html.unescape(value))
        for name, value, disabled in re.findall(
            r'<input type="hidden" name="([^"]+)" value="([^"]*)"( disabled)?>', form
        )
        if not disabled
    ]
    for name, options in re.findall(r'<select[^>]* name="(\w+)"[^>]*>(.*?)</select>', form, re.S):
        values = [html.unescape(v) for v in re.findall(r'<option value="([^"]*)"', options)]
        pairs.append((name, max(values, key=lambda v: len(urlencode({"v": v})))))
    for name, length, pattern in re.findall(
        r'<input [^>]*name="(q|queue|label)" id="id_\w+"[^>]*maxlength="(\d+)" pattern="([^"]+)"',
        form,
    ):
        # The characters that take most room, as many as the pattern lets through: a "/" or
        # "／", a "=" or a Chinese input method's "＝" (3 or 9 bytes each in an address), the
        # rest one byte.
        worst = {
            # An image's address or part of it (qa98): its ":" and "@" 3 bytes each, all of
            # them (a job page's address pasted keeps "jobs" 1 byte each).
            "q": ":" * int(length),
            "queue": "a" * int(length),
            "label": "a/" + "a" * (int(length) - 3) + "＝",
        }[name]
        assert len(worst) == int(length)
        assert re.fullmatch(html.unescape(pattern), worst, re.ASCII)
        assert not re.fullmatch(html.unescape(pattern), "//" + worst[2:], re.ASCII)
        pairs.append((name, worst))
    # A date box sends a date within its min and max, or nothing.
    for name, latest in re.findall(
        r'<input [^>]*type="date" name="(\w+)"[^>]* max="([^"]+)"', form
    ):
        pairs.append((name, latest))
    assert {name for name, _v in pairs} >= {
        *("q", "queue", "label", "status", "framework", "pool"),
        *("created_from", "created_to"),
    }
    return f"{LIST}?{urlencode(pairs)}"


def test_the_filter_form_with_50_ticks_and_long_labels_leaves_the_ticks_out_and_says_so(
    alice, alice_en
):
    from jobs.selection import MAX_CARRIED

    prefix = ".".join([c * 60 for c in "abcd"]) + ".com"
    long = [(f"{prefix}/{n}" + "n" * 62, "v" * 63) for n in range(3)]
    ticked = [labelled_job(alice, name=f"s{n}").public_id for n in range(MAX_CARRIED)]
    labelled_job(alice, *long, name="long")
    query = {"label": [f"{k}={v}" for k, v in long], "sel": ticked}

    r = alice_en.get(LIST, query)

    assert r.status_code == 200
    assert len(f"GET {r.wsgi_request.get_full_path()} HTTP/1.1") <= 4094
    page = r.content.decode()
    form = filter_form(page)
    # With the ticks, a fourth long label typed would have passed gunicorn's bound (a 400).
    longest = longest_filter_address(form)
    with_ticks = f"{longest}&{urlencode([('sel', i) for i in ticked])}"
    assert len(f"GET {with_ticks} HTTP/1.1") > 4094
    # So the form does not send them (disabled), and the bar says the ticks stay here.
    assert len(f"GET {longest} HTTP/1.1") <= 4094
    assert "sel" not in dict(parse_qsl(urlsplit(longest).query))
    assert form.count(" disabled>") == MAX_CARRIED
    assert 'id="job-filters" data-keeps-selection data-selection-left-out>' in form
    assert re.search(r'<p class="[^"]*" id="selection-links-short" data-safe-length="4000">', page)
    assert "A link or the filter form that would make too long an address" in page
    # The ticks are still on the page, for Stop, Delete, Compare and the other links.
    assert len(re.findall(r'<li class="list-inline-item selection-job"', page)) == MAX_CARRIED


def test_the_filter_form_keeps_the_ticks_whatever_is_typed_when_its_address_stays_short(
    alice, alice_en
):
    from jobs.selection import MAX_CARRIED

    ticked = [labelled_job(alice, name=f"s{n}").public_id for n in range(MAX_CARRIED)]

    page = alice_en.get(LIST, {"sel": ticked, "label": "project=llm"}).content.decode()

    form = filter_form(page)
    # 50 ticks and a short label applied: the longest search, queue and label typed still fit.
    longest = longest_filter_address(form)
    assert [v for n, v in parse_qsl(urlsplit(longest).query) if n == "sel"] == ticked
    assert len(f"GET {longest} HTTP/1.1") <= 4094
    assert " disabled" not in form and "data-selection-left-out" not in form
    assert re.search(r'id="selection-links-short" data-safe-length="4000" hidden>', page)


def test_the_filter_forms_boxes_take_no_more_than_a_name_an_id_a_queue_or_a_label_can_be(
    alice, alice_en
):
    form = filter_form(alice_en.get(LIST, {"sel": labelled_job(alice).public_id}).content.decode())

    bounds = dict(re.findall(r'name="(q|queue|label)" id="id_\w+"[^>]*maxlength="(\d+)"', form))
    # The longest platform id (128), queue name (64), label (a 317-character key, "=", 63).
    assert bounds == {"q": "128", "queue": "64", "label": "381"}
    patterns = dict(re.findall(r'name="(q|queue|label)" id="id_\w+"[^>]*pattern="([^"]+)"', form))
    label = html.unescape(patterns["label"])
    for text in ["project=llm", " project = llm ", "lr:3e-4", "example.com/team=a-b_c.d", "exp"]:
        assert re.fullmatch(label, text, re.ASCII), text
    for text in ["项目=llm", "a/b/c=d", "a=b=c", "key=va lue"]:
        assert not re.fullmatch(label, text, re.ASCII), text
    q = html.unescape(patterns["q"])
    assert re.fullmatch(q, "qa-grp2 2/3") and re.fullmatch(q, "qa-grp2 2／3")
    assert not re.fullmatch(q, "训练", re.ASCII)


# -- the filter form's 标签 field (labels22) -----------------------------------------------


def suggestions(page: str) -> list[str]:
    [datalist] = re.findall(r'<datalist id="label-suggestions">(.*?)</datalist>', page, re.S)
    return [html.unescape(text) for text in re.findall(r'<option value="([^"]*)">', datalist)]


def test_a_label_typed_in_the_filter_form_filters_the_list_and_keeps_the_other_filters(
    alice, alice_client
):
    llm = labelled_job(alice, ("project", "llm"), ("exp", "lr-1"), name="run-a")
    labelled_job(alice, ("project", "vision"), name="run-b")
    labelled_job(alice, ("project", "llm"), name="other")
    ticked = labelled_job(alice, name="ticked")

    # The form's field sends the same `label=` a chip's link does.
    r = alice_client.get(LIST, {"q": "run", "label": " project=llm ", "sel": ticked.public_id})

    assert r.status_code == 200
    page = r.content.decode()
    assert listed(page) == [llm.public_id]
    # Asked for now: a chip to drop it, kept by the form (hidden) beside the selection, and the
    # field empty for one more label.
    assert re.findall(r'<span class="[^"]*label-filter" title="([^"]+)"', page) == ["project=llm"]
    [form] = re.findall(r'<form method="get"[^>]*id="job-filters".*?</form>', page, re.S)
    assert '<input type="hidden" name="label" value="project=llm">' in form
    assert f'<input type="hidden" name="sel" value="{ticked.public_id}">' in form
    assert re.search(r'name="label" id="id_label" value=""', form)


def test_the_label_field_suggests_the_users_own_labels_most_used_first_never_anothers(
    alice, bob, alice_client
):
    labelled_job(alice, ("project", "llm"), ("exp", "lr-1"), name="a")
    labelled_job(alice, ("project", "llm"), name="b")
    labelled_job(alice, ("project", "vision"), name="c")
    labelled_job(bob, ("secret-project", "x"), ("project", "bobs"), name="bobs")

    page = alice_client.get(LIST).content.decode()

    # project on 3 jobs, project=llm on 2, then those on 1 in the order of their text.
    assert suggestions(page) == ["project", "project=llm", "exp", "exp=lr-1", "project=vision"]
    assert "bobs" not in page and "secret-project" not in page
    assert 'list="label-suggestions"' in page


def test_the_label_suggestions_stop_at_their_maximum_keys_first(alice, alice_client):
    from jobs.services import MAX_LABEL_SUGGESTIONS

    keys = [f"k{i:02}" for i in range(S.MAX_LABELS)]
    for n in range(MAX_LABEL_SUGGESTIONS // S.MAX_LABELS + 1):  # more pairs than suggested
        labelled_job(alice, *[(key, f"v{n}") for key in keys], name=f"r{n}")

    shown = suggestions(alice_client.get(LIST).content.decode())

    assert len(shown) == MAX_LABEL_SUGGESTIONS
    # Each key is on every job, each pair on one: the keys of the pairs read come first.
    assert "=" not in shown[0] and shown[0] == "k00" and "=" in shown[-1]


def test_the_label_suggestions_read_only_the_users_newest_jobs_and_an_older_label_still_filters(
    alice, alice_client, monkeypatch
):
    from jobs import services

    # LABEL_SUGGESTION_JOBS (1,000) kept the query at 6 ms for a user with 30,000 jobs, where
    # grouping all their labels took 111 ms of every full page: 2 here, to need 3 jobs.
    monkeypatch.setattr(services, "LABEL_SUGGESTION_JOBS", 2)
    old = labelled_job(alice, ("project", "old"), name="old")
    labelled_job(alice, ("project", "llm"), name="a")
    labelled_job(alice, ("project", "llm"), ("exp", "lr-1"), name="b")

    page = alice_client.get(LIST).content.decode()
    typed = alice_client.get(LIST, {"label": "project=old"}).content.decode()

    assert suggestions(page) == ["project", "project=llm", "exp", "exp=lr-1"]
    assert listed(typed) == [old.public_id]


@pytest.mark.parametrize(
    ("typed", "shown_again", "message"),
    [
        ("project=l\x00lm", "project=llm", "不能包含 NUL"),
        ("k" * 400 + "=v", "k" * 400 + "=v", "最多 317 个字符"),
        ("project=" + "v" * 64, "project=" + "v" * 64, "最多 317 个字符"),
    ],
)
def test_a_label_no_job_can_have_is_said_on_the_field_and_the_others_still_apply(
    alice, alice_client, typed, shown_again, message
):
    llm = labelled_job(alice, ("project", "llm"), ("exp", "lr-1"), name="a")
    labelled_job(alice, ("project", "vision"), name="b")

    r = alice_client.get(LIST, {"label": ["exp=lr-1", typed]})

    assert r.status_code == 200
    page = r.content.decode()
    # The label asked for before still applies; the one typed is not, and is shown to correct.
    assert listed(page) == [llm.public_id]
    [error] = re.findall(
        r'<div class="invalid-feedback d-block" id="id_label_error">([^<]*)<', page
    )
    assert message in html.unescape(error)
    assert f'id="id_label" value="{html.escape(shown_again)}"' in page
    assert '<input type="hidden" name="label" value="exp=lr-1">' in page
    assert f'<input type="hidden" name="label" value="{html.escape(typed)}"' not in page


def test_a_refused_label_alone_still_shows_every_job_and_the_form_open(alice, alice_en):
    job = labelled_job(alice, ("project", "llm"))

    page = alice_en.get(LIST, {"label": "x=" + "v" * 64}).content.decode()

    assert listed(page) == [job.public_id]
    assert 'id="job-filters-box" open' in page
    assert "a label&#x27;s key is at most 317 characters and its value at most 63." in page


# -- staff: the admin's job page, list and review (labels22) --------------------------------

ADMIN_JOBS = "/admin/jobs/job/"


def staff_client(user) -> Client:
    client = Client()
    client.force_login(user)
    client.cookies["django_language"] = "en"
    return client


def admin_listed(response) -> list[str]:
    return [job.public_id for job in response.context["cl"].result_list]


def test_the_admin_job_page_shows_the_labels_read_only(alice, reviewer):
    job = labelled_job(alice, ("project", "llm"), ("exp", "lr-1"))

    r = staff_client(reviewer).get(f"{ADMIN_JOBS}{job.pk}/change/")

    assert r.status_code == 200
    page = r.content.decode()
    # At the top, beside the owner (the spec's 基础信息 further down has them too).
    [shown] = re.findall(r'<label>Labels:</label>\s*<div class="readonly">([^<]*)</div>', page)
    assert shown == "project=llm, exp=lr-1"
    assert 'name="labels_shown"' not in page  # read-only: no field to post


def test_the_admin_job_list_filters_by_a_label_offered_or_asked_for_in_the_address(
    alice, bob, reviewer
):
    alices = labelled_job(alice, ("project", "llm"), ("exp", "lr-1"), name="a")
    bobs = labelled_job(bob, ("project", "llm"), name="b")
    labelled_job(bob, ("project", "vision"), name="c")
    client = staff_client(reviewer)

    whole = client.get(ADMIN_JOBS)
    by_pair = client.get(ADMIN_JOBS, {"label": "project=llm"})
    by_key = client.get(ADMIN_JOBS, {"label": "exp"})

    # Every user's jobs (a reviewer's list); the choices are the labels, most used first.
    assert [by_pair.status_code, by_key.status_code] == [200, 200]
    assert sorted(admin_listed(by_pair)) == sorted([alices.public_id, bobs.public_id])
    assert admin_listed(by_key) == [alices.public_id]
    [filters] = re.findall(
        r'<search id="changelist-filter".*?</search>', whole.content.decode(), re.S
    )
    offered = re.findall(r'href="\?label=([^"&]+)"', filters)
    assert [unquote(text) for text in offered] == ["project=llm", "exp=lr-1", "project=vision"]


def test_the_admin_job_list_reads_a_label_pasted_as_key_colon_value_as_the_owners_list_does(
    alice, reviewer
):
    swept = labelled_job(alice, ("lr", "3e-4"), name="a")
    labelled_job(alice, ("lr", "1e-4"), name="b")

    r = staff_client(reviewer).get(ADMIN_JOBS, {"label": " lr : 3e-4 "})

    assert r.status_code == 200
    assert admin_listed(r) == [swept.public_id]


def row_labels(page: str, job: Job) -> tuple[list[tuple[str, str, str]], str]:
    """A job's row in the admin's list: each label link under its name (address, title, text)
    and the "+N"."""
    [row] = re.findall(rf"<tr>(?:(?!</tr>).)*?>{job.public_id}</span></a>.*?</tr>", page, re.S)
    [cell] = re.findall(r'<td class="field-name_shown">(.*?)</td>', row, re.S)
    links = [
        (html.unescape(href), html.unescape(title), html.unescape(text))
        for href, title, text in re.findall(
            r'<a class="job-label" href="([^"]+)" title="([^"]+)">([^<]+)</a>', cell
        )
    ]
    more = re.findall(r'<span class="job-labels-more" title="[^"]*">([^<]+)</span>', cell)
    return links, "".join(more)


def test_the_admin_job_list_shows_a_few_of_each_rows_labels_as_links_and_counts_the_rest(
    alice, reviewer
):
    many = labelled_job(
        alice, *[(f"k{n}", "x" * 40 if n == 0 else f"v{n}") for n in range(5)], name="many"
    )
    one = labelled_job(alice, ("project", "llm"), name="one")
    none = labelled_job(alice, name="none")
    # A label stored before the rule, as a page could be fed one: it is text, never markup.
    Job.objects.filter(pk=one.pk).update(
        spec={**one.spec, "labels": [{"key": "note", "value": "<b>x</b>"}]}
    )

    r = staff_client(reviewer).get(ADMIN_JOBS, {"status__exact": "queued"})

    assert r.status_code == 200
    page = r.content.decode()
    links, more = row_labels(page, many)
    # The first three, each linked to the list filtered by it with the list's filters kept;
    # a long one cut short and whole in its title; the other two counted.
    assert links == [
        (
            f"?label=k0%3D{'x' * 40}&status__exact=queued",
            f"k0={'x' * 40}",
            "k0=xxxxxxxxxxxxxxxxxxxx…",
        ),
        ("?label=k1%3Dv1&status__exact=queued", "k1=v1", "k1=v1"),
        ("?label=k2%3Dv2&status__exact=queued", "k2=v2", "k2=v2"),
    ]
    assert more == "+2"
    assert 'title="k3=v3, k4=v4">+2</span>' in page
    links, more = row_labels(page, one)
    assert [text for _href, _title, text in links] == ["note=<b>x</b>"]
    assert "<b>x</b>" not in page and "note=&lt;b&gt;x&lt;/b&gt;" in page
    assert row_labels(page, none) == ([], "")
    # The name still opens the job's page, the list's filters kept for the way back.
    assert re.search(
        rf'<td class="field-name_shown"><a href="/admin/jobs/job/{many.pk}/change/'
        rf'\?_changelist_filters=status__exact%3Dqueued">many</a><div class="job-row-labels">',
        page,
    )


def test_the_admin_job_lists_queries_are_the_same_for_3_or_30_jobs_and_their_labels(
    alice, reviewer
):
    client = staff_client(reviewer)
    counts, shown = [], 0
    for batch in (3, 27):
        for n in range(batch):
            labelled_job(alice, *[(f"k{i}", f"v{n}") for i in range(1 + n % 6)], name=f"j{n}")
            shown += min(3, 1 + n % 6)  # a row shows three at most
        client.get(ADMIN_JOBS)
        with CaptureQueriesContext(connection) as queries:
            r = client.get(ADMIN_JOBS)
        counts.append(len(queries.captured_queries))
        assert r.status_code == 200
        assert r.content.decode().count('class="job-label"') == shown
    assert counts[0] == counts[1]


@pytest.mark.parametrize("asked", ["project=\x00", "k" * 400, "project=" + "v" * 64, "=", "x=y"])
def test_a_label_no_job_has_lists_nothing_in_the_admin_never_an_error(alice, reviewer, asked):
    labelled_job(alice, ("project", "llm"))

    r = staff_client(reviewer).get(ADMIN_JOBS, {"label": asked})

    if "\x00" in asked:  # as any filter with a NUL (NulFreeLookupsMixin): the whole list
        assert r.status_code == 302 and r.url.endswith("?e=1")
    else:
        assert r.status_code == 200
        assert admin_listed(r) == []


def test_the_review_confirmation_says_each_held_jobs_labels(alice, reviewer, settings):
    settings.REVIEW_POLICY = "all"
    held = labelled_job(alice, ("project", "llm"), ("exp", "lr-1"), name="held")
    plain = labelled_job(alice, name="plain")
    assert held.status == "pending_review"

    r = staff_client(reviewer).post(
        ADMIN_JOBS, {"action": "approve_jobs", "_selected_action": [held.pk, plain.pk]}
    )

    assert r.status_code == 200
    page = r.content.decode()
    assert re.findall(r'<span class="review-labels" title="Labels">([^<]*)</span>', page) == [
        "project=llm, exp=lr-1"
    ]


# -- usage by label (labels22) ---------------------------------------------------------------


def ran(owner, key_values: dict[str, str], hours: int, *, cards: int = 1, day: int = 10) -> Job:
    """A job that ran `hours` in April with these labels (the table submit fills)."""
    from jobs.models import JobLabel
    from tests.test_usage_report import at, run

    job = run(owner, at(day, 0), at(day, hours), cards=cards)
    JobLabel.objects.bulk_create(JobLabel(job=job, key=k, value=v) for k, v in key_values.items())
    return job


def label_rows(body: str) -> list[tuple[str, str, str, str]]:
    [table] = re.findall(r'<table[^>]*id="usage-labels">(.*?)</table>', body, re.S)
    return [
        (re.sub(r"<[^>]+>", "", name), *cells)
        for name, *cells in re.findall(
            r'<tr class="usage-label-row"><th scope="row"[^>]*>(.*?)</th>'
            r"<td>([^<]*)</td><td>([^<]*)</td><td>([^<]*)</td></tr>",
            table,
        )
    ]


def test_my_usage_by_a_label_key_has_a_row_per_value_adding_up_to_the_total(
    alice, bob, alice_en, django_assert_num_queries
):
    from tests.test_usage_report import APRIL_QUERY

    ran(alice, {"project": "llm", "exp": "a"}, 3, cards=2)  # 6 card-hours
    ran(alice, {"project": "llm"}, 2)  # 2
    ran(alice, {"project": "llm"}, 2, cards=0)  # 2 CPU-only job-hours
    ran(alice, {"project": "vision"}, 1, cards=4)  # 4
    ran(alice, {"project": ""}, 1)  # 1, an empty value
    ran(alice, {"exp": "b"}, 5)  # 5, no project
    ran(alice, {"project": "llm"}, 7).delete()  # 7, kept as a record without its labels
    ran(bob, {"project": "llm"}, 9)  # another user's: not counted
    alice_en.get("/account/usage/", APRIL_QUERY)  # warm the session

    # The page's 7 queries, and two more: the jobs by value, the deleted jobs' records.
    with django_assert_num_queries(9):
        r = alice_en.get("/account/usage/", {**APRIL_QUERY, "by_label": "project"})

    assert r.status_code == 200
    body = r.content.decode()
    assert label_rows(body) == [
        ("llm", "8.00", "3", "2.00"),
        ("vision", "4.00", "1", "0.00"),
        ("(empty value)", "1.00", "1", "0.00"),
        ("(jobs without a project label)", "5.00", "1", "0.00"),
        ("(deleted jobs: their labels are not kept)", "7.00", "1", "0.00"),
    ]
    by_label, total = r.context["by_label"], r.context["report"].total
    rows = [row.figures for row in by_label.values] + [by_label.deleted]
    assert sum((f.card_time for f in rows), timedelta(0)) == total.card_time
    assert sum((f.cpu_time for f in rows), timedelta(0)) == total.cpu_time
    assert sum(f.jobs for f in rows) == total.jobs == 7
    assert 'name="by_label" value="project"' in body
    # The field says what it takes before anything is typed: a key, not a whole label, and
    # suggests the user's own keys, the most used first (never another user's).
    assert 'placeholder="A label key, such as project"' in body
    assert 'list="usage-label-keys"' in body
    [keys] = re.findall(r'<datalist id="usage-label-keys">(.*?)</datalist>', body)
    assert re.findall(r'<option value="([^"]*)">', keys) == ["project", "exp"]
    # Each value links to the user's jobs having it (a team lead asks which jobs those were).
    assert re.findall(r'<a class="usage-label-link" href="([^"]+)"', body) == [
        "/?label=project%3Dllm",
        "/?label=project%3Dvision",
    ]
    assert "By label project" in body


def test_a_key_with_many_values_shows_the_most_used_and_one_row_for_the_rest_the_csv_all(
    alice, alice_en, reviewer, monkeypatch
):
    import csv
    import io

    from jobs import usage
    from tests.test_usage_report import APRIL_QUERY

    # LABEL_VALUES_SHOWN (50): a key with a value per job (a run id) made a row per job, 23,803
    # rows and 3 MB for a year of the report at 30,000 jobs. 2 here, to need 4 values.
    monkeypatch.setattr(usage, "LABEL_VALUES_SHOWN", 2)
    for hours, run in ((5, "r1"), (4, "r2"), (3, "r3"), (2, "r4")):
        ran(alice, {"run": run}, hours)
    ran(alice, {"project": "llm"}, 1)
    query = {**APRIL_QUERY, "by_label": "run"}

    mine = alice_en.get("/account/usage/", query)
    report = staff_client(reviewer).get("/admin/jobs/job/usage/", query)
    csv_rows = list(
        csv.DictReader(
            io.StringIO(
                alice_en.get("/account/usage/", {**query, "format": "csv"}).content.decode(
                    "utf-8-sig"
                )
            )
        )
    )

    for r in (mine, report):
        assert r.status_code == 200
        assert label_rows(r.content.decode()) == [
            ("r1", "5.00", "1", "0.00"),
            ("r2", "4.00", "1", "0.00"),
            ("(2 more values: the CSV lists each)", "5.00", "2", "0.00"),
            ("(jobs without a run label)", "1.00", "1", "0.00"),
        ]
        assert r.context["report"].total.card_hours == 15
    assert [row["label_value"] for row in csv_rows if row["scope"] == "label"] == [
        "r1",
        "r2",
        "r3",
        "r4",
    ]


def test_the_rest_row_counts_only_the_periods_part_of_a_job_across_its_start_and_all_add_up(
    alice, bob, reviewer, monkeypatch
):
    # Review 24, the rest row's arithmetic: a job that began before the period counts its
    # hours inside it there too, deleted jobs stay apart, and every row adds up to the total
    # (on SQLite and PostgreSQL: make test-postgres runs this file).
    from jobs import usage
    from jobs.models import JobLabel
    from tests.test_usage_report import APRIL_QUERY, at, run

    monkeypatch.setattr(usage, "LABEL_VALUES_SHOWN", 1)
    ran(alice, {"run": "r1"}, 9)
    across = run(alice, at(31, 20, month=3), at(1, 6), cards=2)  # 6 of its 10 hours in April
    JobLabel.objects.create(job=across, key="run", value="r2")
    ran(bob, {"run": "r3"}, 1, cards=0)  # a CPU-only job-hour
    ran(alice, {"run": "r1"}, 4).delete()  # its labels go: counted as deleted
    ran(alice, {"other": "x"}, 3)

    r = staff_client(reviewer).get("/admin/jobs/job/usage/", {**APRIL_QUERY, "by_label": "run"})

    assert r.status_code == 200
    assert label_rows(r.content.decode()) == [
        ("r2", "12.00", "1", "0.00"),  # 6 hours of 2 cards: April's part only
        ("(2 more values: the CSV lists each)", "9.00", "2", "1.00"),
        ("(jobs without a run label)", "3.00", "1", "0.00"),
        ("(deleted jobs: their labels are not kept)", "4.00", "1", "0.00"),
    ]
    by_label, total = r.context["by_label"], r.context["report"].total
    rows = [row.figures for row in by_label.values_shown] + [by_label.deleted]
    assert sum((f.card_time for f in rows), timedelta(0)) == total.card_time
    assert sum((f.cpu_time for f in rows), timedelta(0)) == total.cpu_time
    assert sum(f.jobs for f in rows) == total.jobs == 5


def test_the_usage_reports_queries_by_label_are_the_same_for_3_or_30_jobs(alice, reviewer):
    from tests.test_usage_report import APRIL_QUERY

    client = staff_client(reviewer)
    counts = []
    for batch in (3, 27):
        for n in range(batch):
            ran(alice, {"project": f"p{n % 4}"}, 1 + n % 3, day=1 + n % 28)
        with CaptureQueriesContext(connection) as queries:
            r = client.get("/admin/jobs/job/usage/", {**APRIL_QUERY, "by_label": "project"})
        counts.append(len(queries.captured_queries))
        assert r.status_code == 200
        values = {row.value for row in r.context["by_label"].values}
        assert values == {f"p{n}" for n in range(min(batch, 4))}
    assert counts[0] == counts[1]


def test_the_admin_usage_report_by_label_counts_every_users_jobs(alice, bob, reviewer):
    from tests.test_usage_report import APRIL_QUERY

    ran(alice, {"project": "llm"}, 2)
    ran(bob, {"project": "llm"}, 3, cards=2)
    ran(bob, {"team": "cv"}, 1)

    r = staff_client(reviewer).get("/admin/jobs/job/usage/", {**APRIL_QUERY, "by_label": "project"})

    assert r.status_code == 200
    assert label_rows(r.content.decode()) == [
        ("llm", "8.00", "2", "0.00"),
        ("(jobs without a project label)", "1.00", "1", "0.00"),
    ]
    rows = [row.figures.card_time for row in r.context["by_label"].values]
    assert sum(rows, timedelta(0)) == r.context["report"].total.card_time


@pytest.mark.parametrize("url", ["/account/usage/", "/admin/jobs/job/usage/"])
@pytest.mark.parametrize("key", ["pro\x00ject", "k" * 318])
def test_a_label_key_no_job_can_have_is_said_on_the_field_not_a_500(alice, reviewer, url, key):
    from tests.test_usage_report import APRIL_QUERY

    ran(alice, {"project": "llm"}, 2)
    client = staff_client(reviewer if url.startswith("/admin/") else alice)

    r = client.get(url, {**APRIL_QUERY, "by_label": key})

    assert r.status_code == 200
    assert r.context["by_label"] is None and r.context["report"] is not None
    assert r.context["label_form"].errors["by_label"]
    assert 'id="usage-labels"' not in r.content.decode()


def test_the_usage_csvs_have_the_rows_by_label_adding_up_to_the_total(alice, reviewer):
    import csv
    import io

    from tests.test_usage_report import APRIL_QUERY

    ran(alice, {"project": "llm"}, 3, cards=2)
    ran(alice, {"exp": "b"}, 1)
    ran(alice, {"project": "=cmd"}, 1)  # a value a spreadsheet would take for a formula
    ran(alice, {"project": "llm"}, 2).delete()
    query = {**APRIL_QUERY, "by_label": "project", "format": "csv"}

    for client, url in (
        (staff_client(alice), "/account/usage/"),
        (staff_client(reviewer), "/admin/jobs/job/usage/"),
    ):
        r = client.get(url, query)

        assert r.status_code == 200
        rows = list(csv.DictReader(io.StringIO(r.content.decode("utf-8-sig"))))
        by_label = [
            (row["scope"], row["label_key"], row["label_value"], row["card_hours"], row["jobs"])
            for row in rows
            if row["scope"].startswith("label")
        ]
        assert by_label == [
            ("label", "project", "llm", "6.00", "1"),
            ("label", "project", "'=cmd", "1.00", "1"),
            ("label_none", "project", "", "1.00", "1"),
            ("label_deleted", "project", "", "2.00", "1"),
        ]
        [total] = [row for row in rows if row["scope"] == "total"]
        assert total["card_hours"] == "10.00"


def test_my_usage_csv_by_a_label_carries_each_job_rows_value_of_it_at_the_end(alice, bob):
    import csv
    import io

    from tests.test_usage_report import APRIL_QUERY

    llm = ran(alice, {"project": "llm", "exp": "a"}, 3, cards=2, day=10)
    formula = ran(alice, {"project": "=cmd"}, 1, day=11)
    empty = ran(alice, {"project": ""}, 1, day=12)
    other = ran(alice, {"exp": "b"}, 1, day=13)
    gone = ran(alice, {"project": "llm"}, 2, day=14)
    gone_id = gone.public_id
    gone.delete()
    ran(bob, {"project": "llm"}, 9)  # another user's: not a row
    client = staff_client(alice)

    grouped = client.get("/account/usage/", {**APRIL_QUERY, "by_label": "project", "format": "csv"})
    plain = client.get("/account/usage/", {**APRIL_QUERY, "format": "csv"})

    assert [grouped.status_code, plain.status_code] == [200, 200]
    rows = list(csv.reader(io.StringIO(grouped.content.decode("utf-8-sig"))))
    header, body = rows[0], rows[1:]
    # The label's columns are the last two; the job rows' columns before them keep their places.
    assert header[-2:] == ["label_key", "label_value"] and header[1] == "job_id"
    jobs = {row[1]: row[-2:] for row in body if row[0] == "job"}
    assert jobs == {
        llm.public_id: ["project", "llm"],
        formula.public_id: ["project", "'=cmd"],  # a spreadsheet's formula start, quoted
        empty.public_id: ["project", ""],  # has the key, with an empty value
        other.public_id: ["", ""],  # has no project label: counted in label_none
        gone_id: ["", ""],  # deleted: its labels are not kept (label_deleted)
    }
    # Not grouped, the job rows are as they were: the label's columns blank.
    plain_rows = list(csv.reader(io.StringIO(plain.content.decode("utf-8-sig"))))
    assert {tuple(row[-2:]) for row in plain_rows[1:] if row[0] == "job"} == {("", "")}
    assert [row[:-2] for row in plain_rows[1:] if row[0] == "job"] == [
        row[:-2] for row in body if row[0] == "job"
    ]
