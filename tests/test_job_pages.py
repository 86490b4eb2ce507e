from __future__ import annotations

import copy
import re
import uuid
from datetime import UTC, datetime, timedelta
from html import unescape
from zoneinfo import ZoneInfo

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone, translation

from jobs import spec as S
from jobs.health import WorkerIdentity, worker_beat
from jobs.logs import replica_log_path
from jobs.models import (
    Draft,
    Job,
    JobEvent,
    JobReplica,
    JobStatus,
    LocalRun,
    ReviewMode,
    ReviewPolicy,
    ReviewState,
)
from jobs.runner import replica_state_dir
from jobs.services import job_transition, jobs_submit
from jobs.shim import UsageLog
from jobs.worker import Worker

from .runner_helpers import (  # noqa: F401
    CARD,
    ended_at,
    make_spec,
    run_until,
    runner_settings,
    status_of,
)
from .test_aihc_backend import fake as fake_aihc  # noqa: F401 (the strict fake AIHC)
from .test_aihc_backend import given_up_and_held_for_review

pytestmark = pytest.mark.usefixtures("runner_settings")


def submit(owner, **changes) -> Job:
    spec = make_spec("echo hello from the job", **changes)
    [job] = jobs_submit(owner=owner, spec=spec, submit_key=str(uuid.uuid4()))
    return job


def finish(job: Job, status: str = JobStatus.FAILED, message: str = "") -> None:
    job_transition(job=job, to=status, reason="Test", message=message)


def test_the_list_shows_only_my_jobs_with_their_columns(alice, bob, alice_client):
    mine = submit(alice, name="mine")
    submit(bob, name="theirs")

    response = alice_client.get(reverse("job-list"))

    assert response.status_code == 200
    html = response.content.decode()
    assert mine.public_id in html and "theirs" not in html
    assert "PyTorchJob" in html and re.search(
        r'class="job-pool"[^>]*>本机 Local</span> / default', html
    )


def test_durations_read_as_people_say_them_with_days_and_at_most_two_units(alice, alice_client):
    from jobs.templatetags.job_tags import duration

    start = datetime(2026, 11, 1, tzinfo=UTC)
    lengths = [6, 61, 60, 2 * 3600 + 5 * 60 + 7, 30 * 86400 + 59, 3 * 86400 + 4 * 3600 + 5]

    def shown(language: str) -> list[str]:
        with translation.override(language):
            return [
                duration(Job(started_at=start, finished_at=start + timedelta(seconds=n)))
                for n in lengths
            ]

    assert shown("en") == ["6s", "1m 1s", "1m", "2h 5m", "30d", "3d 4h"]
    assert shown("zh-hans") == ["6 秒", "1 分 1 秒", "1 分", "2 小时 5 分", "30 天", "3 天 4 小时"]
    # The list's Duration column and the job page's 运行时长 say it so.
    job = submit(alice)
    Job.objects.filter(pk=job.pk).update(
        status=JobStatus.SUCCEEDED, started_at=start, finished_at=start + timedelta(hours=49)
    )
    assert "<td>2 天 1 小时</td>" in alice_client.get(reverse("job-list")).content.decode()
    page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()
    assert '<dd class="col-sm-4" id="job-duration">2 天 1 小时</dd>' in page
    assert '<dt class="col-sm-2">结束时间</dt>' in page
    assert '<dd class="col-sm-4" id="job-ended">2026-11-03 09:00:00</dd>' in page  # Asia/Shanghai


def test_the_list_filters_by_status_framework_pool_queue_and_searches(alice, alice_client):
    failed = submit(alice, name="alpha")
    finish(failed)
    queued = submit(alice, name="beta")
    tf = submit(alice, name="gamma", framework=S.TENSORFLOW, roles=[S.Role("worker", 1)])

    def shown(**params) -> set[str]:
        html = alice_client.get(reverse("job-list"), params).content.decode()
        return {j.name for j in (failed, queued, tf) if j.public_id in html}

    assert shown(status="failed") == {"alpha"}
    assert shown(framework="TFJob") == {"gamma"}
    assert shown(q="bet") == {"beta"}
    assert shown(q=tf.public_id[-12:]) == {"gamma"}
    assert shown(pool="local", queue="default") == {"alpha", "beta", "gamma"}
    assert shown(queue="other") == set()
    assert shown(pool=" LOCAL ", queue="Default") == {"alpha", "beta", "gamma"}


@pytest.mark.parametrize(
    "typed",
    [
        "beta-01\u200b",  # a zero-width space at its end, copied from a chat
        "\ufeffbeta-01",  # a byte order mark
        "ｂｅｔａ－０１",  # a Chinese input method's full-width letters
        "beta-01\u3000",  # and its full-width space
    ],
)
def test_a_name_pasted_from_a_chat_or_typed_full_width_finds_the_job_it_shows(
    alice, alice_client, typed
):
    wanted = submit(alice, name="beta-01")
    submit(alice, name="gamma-01")

    html = alice_client.get(reverse("job-list"), {"q": typed, "queue": "ｄｅｆａｕｌｔ\u200b"})

    # Found, as it reads (before qa65 nothing: the text held what the name does not).
    page = html.content.decode()
    assert wanted.public_id in page
    assert page.count('name="jobs" value=') == 1


def pool_options(html: str) -> list[tuple[str, str, bool]]:
    select = re.search(r'<select[^>]*id="id_pool">(.*?)</select>', html, re.S).group(1)
    return [
        (value, label, bool(selected))
        for value, selected, label in re.findall(
            r'<option value="([^"]*)"( selected)?>([^<]*)</option>', select
        )
    ]


def test_the_pool_filter_offers_the_pools_by_the_names_users_see_and_sends_their_id(
    alice, alice_client
):
    job = submit(alice, name="alpha")

    html = alice_client.get(reverse("job-list")).content.decode()

    # As the pools page names it; the value sent is its id.
    assert pool_options(html) == [("", "全部资源池", True), ("local", "本机 Local", False)]
    chosen = alice_client.get(reverse("job-list"), {"pool": "local"}).content.decode()
    assert ("local", "本机 Local", True) in pool_options(chosen)
    assert job.public_id in chosen


@pytest.mark.parametrize("link", [" LOCAL ", "local"])
def test_an_old_link_with_a_typed_pool_still_filters_and_selects_that_pool(
    alice, alice_client, link
):
    job = submit(alice, name="alpha")

    html = alice_client.get(reverse("job-list"), {"pool": link}).content.decode()

    assert job.public_id in html
    assert [o for o in pool_options(html) if o[2]] == [("local", "本机 Local", True)]


def test_a_link_to_a_pool_no_longer_offered_keeps_it_selected_and_matches_its_jobs_only(
    alice, alice_client
):
    job = submit(alice, name="alpha")

    html = alice_client.get(reverse("job-list"), {"pool": "cce-retired"}).content.decode()

    assert job.public_id not in html and "没有符合筛选条件的任务" in html
    assert pool_options(html)[-1] == ("cce-retired", "cce-retired", True)


def test_the_pool_filter_adds_the_pools_my_jobs_ran_in_that_are_no_longer_offered(
    alice, bob, alice_client
):
    here = submit(alice, name="here")
    old = [submit(alice, name=f"old-{n}") for n in range(2)]
    Job.objects.filter(pk__in=[j.pk for j in old]).update(resource_pool="cce-retired")
    theirs = submit(bob, name="theirs")
    Job.objects.filter(pk=theirs.pk).update(resource_pool="cce-bobs")

    html = alice_client.get(reverse("job-list")).content.decode()

    # Offered pools by name, then hers no longer offered by ID, marked; Bob's pool is not hers.
    assert pool_options(html) == [
        ("", "全部资源池", True),
        ("local", "本机 Local", False),
        ("cce-retired", "cce-retired（已不再提供）", False),
    ]
    chosen = alice_client.get(reverse("job-list"), {"pool": "CCE-Retired"}).content.decode()
    assert [o for o in pool_options(chosen) if o[2]] == [
        ("cce-retired", "cce-retired（已不再提供）", True)
    ]
    assert all(j.public_id in chosen for j in old) and here.public_id not in chosen
    alice_client.cookies["django_language"] = "en"
    english = alice_client.get(reverse("job-list")).content.decode()
    assert ("cce-retired", "cce-retired (no longer offered)", False) in pool_options(english)


def test_a_pool_my_jobs_ran_in_that_is_offered_again_is_listed_once_by_its_name():
    from jobs.backends import Pool
    from jobs.pools import pool_filter_choices

    pools = [Pool("local", "本机 Local", "local")]

    choices, selected = pool_filter_choices(
        pools=pools, chosen="", used=dict.fromkeys(["cce-old", "local"])
    )

    assert choices[1:] == [("local", "本机 Local"), ("cce-old", "cce-old（已不再提供）")]
    assert selected == ""


def pool_cells(html: str) -> dict[str, tuple[str, str]]:
    """The list's rows: job id -> (the pool's title, the pool shown)."""
    rows = re.findall(
        r'<tr data-job="([^"]+)">.*?<span class="job-pool"(?: title="([^"]*)")?>([^<]*)</span>',
        html,
        re.S,
    )
    return {job: (title, shown) for job, title, shown in rows}


def test_each_row_shows_its_pool_by_name_with_its_id_in_the_title_and_the_refresh_too(
    alice, alice_client
):
    local = submit(alice, name="here")
    gone = submit(alice, name="there")
    Job.objects.filter(pk=gone.pk).update(resource_pool="cce-retired")

    page = alice_client.get(reverse("job-list")).content.decode()
    refresh = alice_client.get(reverse("job-list"), headers={"HX-Request": "true"})

    # As the pool filter names it; a pool no longer offered by its id, with no title.
    expected = {
        local.public_id: ("资源池 ID：local", "本机 Local"),
        gone.public_id: ("", "cce-retired"),
    }
    assert pool_cells(page) == expected
    assert pool_cells(refresh.content.decode()) == expected


def test_the_job_page_names_its_pool_and_links_the_pools_page(alice, alice_client):
    here = submit(alice, name="here")
    gone = submit(alice, name="there")
    Job.objects.filter(pk=gone.pk).update(resource_pool="cce-retired")

    def pool_shown(job: Job) -> str:
        page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()
        return re.search(r"<(?:a|span) class=\"job-pool\"[^>]*>[^<]*</(?:a|span)>", page).group(0)

    assert pool_shown(here) == (
        '<a class="job-pool" href="/pools/" title="资源池 ID：local">本机 Local</a>'
    )
    assert pool_shown(gone) == '<span class="job-pool">cce-retired</span>'


def test_the_job_pages_request_says_it_makes_other_roles_when_the_job_has_a_cpu_only_master(
    alice, alice_client
):
    # qa78: "the exact request this job corresponds to", whose flat body makes 3 card
    # instances of a CPU-only master and 2 one-card workers; the review said so, the page not.
    mixed = submit(
        alice,
        name="mixed",
        framework=S.MPI,
        roles=[S.Role("master", 1, cpu=1), S.Role("worker", 2, CARD, 1)],
    )
    uniform = submit(alice, name="uniform")

    def note(job: Job) -> str:
        page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()
        found = re.search(r'id="request-roles-note">([^<]*)<', page)
        return found.group(1) if found else ""

    assert "AIHC 的 v1 请求体没有角色" in note(mixed)
    assert "master × 1" in note(mixed) and "console.roles" in note(mixed)
    assert note(uniform) == ""


def test_the_job_page_says_where_each_mount_comes_from_and_which_are_read_only(
    alice, alice_client, settings
):
    from .runner_helpers import volume

    (volume(settings) / "mnist").mkdir()
    job = submit(
        alice,
        datasources=[
            S.Datasource("hostpath", "work", mount_path="/ckpt"),
            S.Datasource(
                "hostpath", "work", mount_path="/data", source_path="mnist", read_only=True
            ),
        ],
    )

    page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()

    mounts = re.search(r'<dd class="col-sm-4" id="job-mounts">(.*?)</dd>', page).group(1)
    assert re.findall(r'<div class="font-monospace text-break">([^<]*)<', mounts) == [
        "work → /ckpt",
        "work:mnist → /data (只读)",
    ]
    # QA 99: the folder on this machine too, as the wizard's volume list names the volume.
    assert re.findall(r'<div class="small text-muted">([^<]*)</div>', mounts) == [
        f"本机目录：{volume(settings)}",
        f"本机目录：{volume(settings)}/mnist",
    ]
    assert (
        'id="job-mounts"'
        not in alice_client.get(
            reverse("job-detail", args=[submit(alice, name="none", datasources=[]).public_id])
        ).content.decode()
    )


def test_a_mounts_folder_is_not_shown_to_an_owner_no_longer_offered_its_volume(
    alice, alice_client, settings
):
    from .runner_helpers import volume

    root = volume(settings)
    job = submit(alice, datasources=[S.Datasource("hostpath", "work", mount_path="/ckpt")])
    settings.LOCAL_VOLUMES = f"work={root}@team-b"  # kept for a group Alice is not in

    page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()

    assert "work → /ckpt" in page and str(root) not in page


def test_a_kubernetes_pool_is_named_in_the_refresh_without_asking_the_api_server(
    alice, alice_client, settings
):
    from .fake_kubernetes import FakeKubernetes, configure

    fake = FakeKubernetes().start()
    try:
        fake.add_namespace("ml")
        configure(settings, fake, KUBERNETES_NAMESPACES="ml", KUBERNETES_QUEUES="q")
        job = submit(alice, name="there")
        Job.objects.filter(pk=job.pk).update(resource_pool="k8s-ml")
        asked = len(fake.requests)

        refresh = alice_client.get(reverse("job-list"), headers={"HX-Request": "true"})

        title, shown = pool_cells(refresh.content.decode())[job.public_id]
        assert title == "资源池 ID：k8s-ml" and shown.endswith(" · ml")
        assert len(fake.requests) == asked
    finally:
        fake.stop()


def test_an_aihc_pool_is_named_in_the_refresh_from_its_last_inventory_read(
    alice, alice_client, settings
):
    from jobs.backends import get_backend

    from .fake_aihc import FakeAihc, configure

    fake = FakeAihc().start()
    try:
        fake.add_pool("cce-pool1", "百舸训练池")
        configure(settings, fake)
        job = submit(alice, name="there")
        Job.objects.filter(pk=job.pk).update(resource_pool="cce-pool1")
        # The refresh before any read of AIHC's pools: its id, and AIHC not asked.
        before = alice_client.get(reverse("job-list"), headers={"HX-Request": "true"})
        assert pool_cells(before.content.decode())[job.public_id] == ("", "cce-pool1")
        assert fake.requests == []

        page = alice_client.get(reverse("job-list")).content.decode()  # reads the pools
        get_backend("aihc")._inventory().join()
        asked = len(fake.requests)
        refresh = alice_client.get(reverse("job-list"), headers={"HX-Request": "true"})

        expected = ("资源池 ID：cce-pool1", "百舸训练池")
        assert pool_cells(page)[job.public_id] == expected
        assert pool_cells(refresh.content.decode())[job.public_id] == expected
        assert len(fake.requests) == asked > 0
    finally:
        fake.stop()


@pytest.mark.parametrize("field", ["q", "pool", "queue"])
def test_a_filter_too_long_to_match_gets_its_message_when_sent_instead_of_a_500(
    alice, alice_client, field
):
    submit(alice, name="alpha")

    r = alice_client.get(reverse("job-list"), {field: "x" * 100_000})

    assert r.status_code == 200
    errors = re.findall(rf'id="id_{field}_error">([^<]+)<', r.content.decode())
    assert errors and "200" in errors[0]


def test_an_unknown_status_filter_is_marked_on_its_field_and_the_others_still_apply(
    alice, alice_client
):
    submit(alice, name="alpha")
    submit(alice, name="beta")

    r = alice_client.get(reverse("job-list"), {"status": "gone-status", "q": "bet"})

    html = r.content.decode()
    assert r.status_code == 200
    assert 'id="id_status_error"' in html and 'aria-invalid="true"' in html
    assert ">beta<" in html and ">alpha<" not in html


@pytest.mark.parametrize(
    ("language", "field", "said"),
    [
        (
            "en",
            "status",
            "No job has the status “bogus”: the statuses are Pending review, Queued, "
            "Submitting, Running, Succeeded, Failed, Stopping, Stopped, Timed out, Submission "
            "failed, Rejected. This filter is left out.",
        ),
        ("zh-hans", "status", "没有状态为“bogus”的任务；状态有：待审核、排队中、"),
        ("en", "framework", "No job has the framework “bogus”: the frameworks are PyTorch"),
    ],
)
def test_a_status_or_framework_no_job_has_says_which_there_are_and_is_left_out(
    alice, alice_client, language, field, said
):
    # qa101: `/?status=bogus` showed Django's "Select a valid choice. bogus is not one of the
    # available choices."
    submit(alice, name="alpha")
    alice_client.cookies["django_language"] = language

    r = alice_client.get(reverse("job-list"), {field: "bogus"})

    assert r.status_code == 200
    page = unescape(r.content.decode())
    [error] = re.findall(rf'id="id_{field}_error">([^<]+)<', page)
    assert error.startswith(said)
    assert "valid choice" not in page and "有效的选项" not in page
    assert ">alpha<" in page  # left out: the list is not filtered by it


def test_the_filters_fold_unless_one_has_a_problem_or_they_match_no_job(alice, alice_client):
    # On a phone a folded box lets the first jobs show on the first screen (console.css shows
    # the filters on a wider screen whatever the box's state). Until qa85 a filter in use kept
    # it open: 1,300 pixels of filters above the jobs, after 停止所选 from a filtered list too.
    submit(alice, name="alpha")

    def box(**params) -> str:
        html = alice_client.get(reverse("job-list"), params).content.decode()
        return re.search(r'<details[^>]*id="job-filters-box"[^>]*>', html).group(0)

    assert " open" not in box()
    assert " open" not in box(page="1")  # a page is not a filter
    assert " open" not in box(status="queued")
    assert " open" not in box(q=" alp ")
    assert " open" in box(status="failed")  # no job to show: the filters to change
    assert " open" in box(status="gone-status")  # its message must show


@pytest.mark.parametrize(
    ("language", "said"),
    [
        ("zh-hans", "筛选（名称或 ID：alp；状态：排队中；资源池：本机 Local；标签：team=a）"),
        (
            "en",
            "Filters (Name or ID: alp; Status: Queued; Resource pool: 本机 Local; Label: team=a)",
        ),
    ],
)
def test_the_folded_filters_summary_names_the_filters_in_use(alice, alice_client, language, said):
    submit(alice, name="alpha", labels=[("team", "a")])
    alice_client.cookies["django_language"] = language
    params = {"q": " alp ", "status": "queued", "pool": "local", "label": "team=a"}

    html = alice_client.get(reverse("job-list"), params).content.decode()
    summary = re.search(r'<summary[^>]*id="job-filters-summary"[^>]*>([^<]*)<', html).group(1)
    assert summary == said
    unfiltered = alice_client.get(reverse("job-list")).content.decode()
    assert re.search(r'id="job-filters-summary"[^>]*>(筛选|Filters)<', unfiltered)


def test_the_list_is_paginated(alice, alice_client):
    for i in range(25):
        submit(alice, name=f"job-{i}")

    first = alice_client.get(reverse("job-list")).content.decode()
    second = alice_client.get(reverse("job-list"), {"page": 2}).content.decode()

    assert first.count("data-job=") == 20 and second.count("data-job=") == 5
    assert "job-24" in first and "job-0<" in second


@pytest.mark.parametrize("number", ["99999999999999999999999", "-5", "x", "0"])
def test_a_page_number_out_of_range_is_an_empty_or_first_page_never_an_error(
    alice, alice_client, number
):
    submit(alice)

    r = alice_client.get(reverse("job-list"), {"page": number}, follow=True)

    assert r.status_code == 200
    # Past the end: the last page there is (qa91), the one job on it.
    assert r.content.decode().count("data-job=") == 1


def test_the_list_costs_the_same_queries_for_few_or_many_jobs(
    alice, alice_client, django_assert_num_queries
):
    submit(alice)
    alice_client.get(reverse("job-list"))  # warm the session
    # Session, user, one page of jobs (counted in the same query: a subquery for the page
    # count, since feat-list), the worker's heartbeat (with whether the user has
    # jobs waiting on it, for its banner) and the pools the user's jobs are in (DISTINCT, for
    # the pool filter to list those no longer offered), and the user's labels grouped (the label
    # filter's suggestions): no query of its own counting every job the user has. The filter's select names the pools and shows no idle cards, so the local pool's
    # running jobs are not read.
    with django_assert_num_queries(6):
        alice_client.get(reverse("job-list"))
    jobs = [submit(alice) for _ in range(30)]
    for n, job in enumerate(jobs[-3:]):  # on page 1: page 2 shows local jobs only
        Job.objects.filter(pk=job.pk).update(resource_pool=f"cce-old{n}")
    with django_assert_num_queries(6) as queries:
        html = alice_client.get(reverse("job-list"), {"page": 2}).content.decode()
    assert [o[0] for o in pool_options(html)] == ["", "local", "cce-old0", "cce-old1", "cce-old2"]
    assert sum("DISTINCT" in q["sql"] for q in queries.captured_queries) == 1
    # A poll swaps only the table: no pools read (their names take no query: pool_names),
    # and no filter drawn.
    with django_assert_num_queries(4):
        poll = alice_client.get(reverse("job-list"), {"page": 2}, headers={"HX-Request": "true"})
    assert set(pool_cells(poll.content.decode()).values()) == {("资源池 ID：local", "本机 Local")}


def test_a_hostile_pool_name_from_aihc_is_kept_without_control_characters_and_shown_escaped(
    alice, alice_client
):
    from jobs.models import KnownPool
    from jobs.pools import known_pools_keep

    # As AIHC might answer: a NUL and other control characters in one pool's name (PostgreSQL
    # refuses a NUL, and refused the whole write: no pool's name was kept), markup in it, and
    # an id no job could hold.
    assert known_pools_keep(
        backend="aihc",
        names={
            "cce-evil": "<b>坏\x00池</b>\x1b[31m\r\n",
            "cce-good": "好池",
            "cce-\x00nul": "无名",
        },
    )
    assert dict(KnownPool.objects.values_list("pool_id", "name")) == {
        "cce-evil": "<b>坏池</b>[31m",
        "cce-good": "好池",
    }
    job = submit(alice)
    Job.objects.filter(pk=job.pk).update(resource_pool="cce-evil")
    html = alice_client.get(reverse("job-list")).content.decode()
    assert pool_cells(html)[job.public_id] == (
        "资源池 ID：cce-evil",
        "&lt;b&gt;坏池&lt;/b&gt;[31m（cce-evil，已不再提供）",
    )
    assert "<b>坏池" not in html


def test_pools_no_longer_offered_are_named_by_their_last_names_at_most_one_query_more(
    alice, alice_client, django_assert_num_queries
):
    from jobs.pools import known_pools_keep

    # Names an AIHC account listed once, since removed (AIHC is not even enabled now).
    known_pools_keep(backend="aihc", names={"cce-old0": "旧池", "cce-old1": "旧池"})
    jobs = [submit(alice) for _ in range(6)]
    for n, job in enumerate(jobs):
        Job.objects.filter(pk=job.pk).update(resource_pool=f"cce-old{n % 3}")
    alice_client.get(reverse("job-list"))  # warm the session

    # The full page reads the last names with the pools the user's jobs are in: still six.
    with django_assert_num_queries(6):
        html = alice_client.get(reverse("job-list")).content.decode()
    # The refresh reads them only for rows whose pool is not offered: one query for them all.
    with django_assert_num_queries(5):
        poll = alice_client.get(reverse("job-list"), headers={"HX-Request": "true"})

    named = {
        jobs[0].public_id: ("资源池 ID：cce-old0", "旧池（cce-old0，已不再提供）"),
        jobs[1].public_id: ("资源池 ID：cce-old1", "旧池（cce-old1，已不再提供）"),
        jobs[2].public_id: ("", "cce-old2"),  # never seen by name: its id, as before
    }
    assert {k: v for k, v in pool_cells(html).items() if k in named} == named
    assert {k: v for k, v in pool_cells(poll.content.decode()).items() if k in named} == named
    # In the filter, two pools of one name are told apart by their ids.
    assert pool_options(html)[2:] == [
        ("cce-old0", "旧池（cce-old0，已不再提供）", False),
        ("cce-old1", "旧池（cce-old1，已不再提供）", False),
        ("cce-old2", "cce-old2（已不再提供）", False),
    ]
    # Session 49: in English, the same one pair of brackets, the reader's (the filter said
    # “旧池 (cce-old0)（已不再提供）”, the rows “旧池（已不再提供）” for both pools).
    alice_client.cookies["django_language"] = "en"
    english = alice_client.get(reverse("job-list")).content.decode()
    assert pool_cells(english)[jobs[0].public_id] == (
        "Pool ID: cce-old0",
        "旧池 (cce-old0, no longer offered)",
    )
    assert pool_options(english)[2:] == [
        ("cce-old0", "旧池 (cce-old0, no longer offered)", False),
        ("cce-old1", "旧池 (cce-old1, no longer offered)", False),
        ("cce-old2", "cce-old2 (no longer offered)", False),
    ]


def test_each_task_of_a_queue_group_says_which_it_is_in_the_list(
    alice, alice_client, django_assert_num_queries
):
    spec = make_spec("echo task")
    spec.submission = S.Submission(mode=S.SUBMIT_QUEUE, total=3)
    jobs_submit(owner=alice, spec=spec, submit_key=str(uuid.uuid4()))
    submit(alice, name="alone")
    alice_client.get(reverse("job-list"))  # warm the session

    with django_assert_num_queries(
        6
    ):  # as test_the_list_costs_the_same_queries_for_few_or_many_jobs
        html = alice_client.get(reverse("job-list")).content.decode()

    assert re.findall(r'class="badge [^"]*group-task"[^>]*>([^<]+)<', html) == ["3/3", "2/3", "1/3"]


def test_a_queue_task_is_found_by_searching_for_it_as_the_list_shows_it(
    alice, alice_client, django_assert_num_queries
):
    spec = make_spec("echo task", name="qa-grp2")
    spec.submission = S.Submission(mode=S.SUBMIT_QUEUE, total=3)
    first, second, third = jobs_submit(owner=alice, spec=spec, submit_key=str(uuid.uuid4()))
    other = make_spec("echo task", name="other")
    other.submission = S.Submission(mode=S.SUBMIT_QUEUE, total=3)
    others = jobs_submit(owner=alice, spec=other, submit_key=str(uuid.uuid4()))
    alone = submit(alice, name="qa-grp2")
    alice_client.get(reverse("job-list"))  # warm the session

    def shown(q: str) -> list[str]:
        html = alice_client.get(reverse("job-list"), {"q": q}).content.decode()
        every = [first, second, third, *others, alone]
        return [job.public_id for job in every if job.public_id in html]

    # As the row reads ("qa-grp2 2/3"), copied with its spaces or typed with a full-width slash.
    assert shown("qa-grp2 2/3") == [second.public_id]
    assert shown(" grp2  2 / 3 ") == [second.public_id]
    assert shown("qa-grp2 2／3") == [second.public_id]
    # The number alone: that task of every group of that size.
    assert shown("2/3") == [second.public_id, others[1].public_id]
    # A number no task has, or too long for one, finds nothing (and is no error).
    assert shown("qa-grp2 4/3") == []
    assert shown("qa-grp2 99999999999999999999/3") == []
    # The name alone still finds every task and the lone job.
    assert len(shown("qa-grp2")) == 4
    # Still one query for the page of jobs, as without a search.
    with django_assert_num_queries(6):
        alice_client.get(reverse("job-list"), {"q": "qa-grp2 2/3"})


def test_a_queue_task_keeps_its_number_when_another_task_is_deleted(alice, alice_client):
    spec = make_spec("echo task")
    spec.submission = S.Submission(mode=S.SUBMIT_QUEUE, total=3)
    first, second, third = jobs_submit(owner=alice, spec=spec, submit_key=str(uuid.uuid4()))
    finish(first)
    alice_client.post(reverse("job-delete", args=[first.public_id]), {"confirmed": "1"})

    html = alice_client.get(reverse("job-list")).content.decode()
    page = alice_client.get(reverse("job-detail", args=[second.public_id])).content.decode()

    # Still tasks 2 and 3, as their "Job created (2/3)" events say, not renumbered 1 and 2.
    assert not Job.objects.filter(pk=first.pk).exists()
    assert re.findall(r'class="badge [^"]*group-task"[^>]*>([^<]+)<', html) == ["3/3", "2/3"]
    # The job's own page says which task it is too.
    assert re.search(r'id="group-task"[^>]*>[^<]*2/3', page)


def test_list_polling_continues_while_a_job_is_live_and_stops_when_all_are_final(
    alice, alice_client
):
    job = submit(alice)

    live = alice_client.get(reverse("job-list"), headers={"HX-Request": "true"})
    assert live.status_code == 200 and 'hx-trigger="every 3s"' in live.content.decode()

    finish(job)
    done = alice_client.get(reverse("job-list"), headers={"HX-Request": "true"})
    assert done.status_code == 286
    assert "hx-trigger" not in done.content.decode() and job.public_id in done.content.decode()


def test_every_job_url_is_404_for_another_user(alice, bob):
    job = submit(alice)
    client = Client()
    client.force_login(bob)

    for name in ("job-detail", "job-live", "job-logs"):
        assert client.get(reverse(name, args=[job.public_id])).status_code == 404
    assert (
        client.get(reverse("job-log-download", args=[job.public_id, "master-0"])).status_code == 404
    )
    for name in ("job-stop", "job-delete", "job-rerun", "job-copy"):
        assert client.post(reverse(name, args=[job.public_id])).status_code == 404
    assert status_of(job) == JobStatus.QUEUED


def test_a_job_url_with_a_nul_in_its_id_is_not_found(alice, alice_client):
    # SQLite compares a NUL as any character; PostgreSQL refuses it in a query (make test-postgres).
    job = submit(alice)
    public_id = job.public_id + "\x00"

    for name in ("job-detail", "job-live", "job-logs"):
        assert alice_client.get(reverse(name, args=[public_id])).status_code == 404
    for name in ("job-stop", "job-delete", "job-rerun", "job-copy"):
        assert alice_client.post(reverse(name, args=[public_id])).status_code == 404
    assert status_of(job) == JobStatus.QUEUED


def test_delete_without_the_browsers_question_asks_on_a_page_first(alice, alice_client):
    job = submit(alice)

    asked = alice_client.post(reverse("job-delete", args=[job.public_id]))
    confirmed = alice_client.post(reverse("job-delete", args=[job.public_id]), {"confirmed": "1"})

    assert asked.status_code == 200 and 'id="confirm-delete"' in asked.content.decode()
    assert confirmed.status_code == 302 and not Job.objects.filter(pk=job.pk).exists()


def test_the_delete_question_says_its_logs_go_and_what_it_wrote_to_its_mounts_stays(
    alice, alice_client
):
    # Copy edit: "Its logs and files are deleted too" made people fear for their checkpoints,
    # which the job wrote to its mounts and a delete keeps.
    job = submit(alice)
    delete = reverse("job-delete", args=[job.public_id])

    page = reverse("job-detail", args=[job.public_id])
    chinese = [alice_client.get(page), alice_client.post(delete)]
    alice_client.cookies["django_language"] = "en"
    english = [alice_client.get(page), alice_client.post(delete)]

    for answer in chinese:
        said = answer.content.decode()
        assert (
            "删除此任务？其日志会被删除，它写入挂载的内容会保留。运行中的任务会先被停止。" in said
        )
    for answer in english:
        said = answer.content.decode()
        assert "Its logs are deleted; what it wrote to its mounts is kept." in said
        assert "files" not in said.split('id="confirm-delete"')[-1].split("</form>")[0]


def test_a_stopped_jobs_page_says_stopped_once_without_a_reason_that_repeats_it(
    alice, alice_client
):
    # Copy edit: a running local job stopped read 已停止 in the badge and "已停止。" under it.
    from django.utils.translation import gettext_noop

    from jobs.actions import job_stop
    from jobs.texts import recorded

    bare, by_alice = submit(alice), submit(alice)
    job_transition(
        job=bare, to=JobStatus.STOPPED, reason="Stopped", message=recorded(gettext_noop("Stopped."))
    )
    job_stop(job=by_alice, actor=alice)

    def reason(job: Job) -> list[str]:
        page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()
        return re.findall(r'id="status-reason">(.*?)</div>', page)

    assert reason(bare) == []
    assert reason(by_alice) == ["已由 alice 停止。"]  # a reason that says more stays


def test_a_group_tasks_questions_and_what_its_delete_says_name_its_place_in_the_group(
    alice, alice_en
):
    # Found (qa82): without JavaScript the question read "Delete job qa82-grp?" and then
    # "Job qa82-grp deleted.", of any of the group's three tasks.
    second = jobs_submit(
        owner=alice,
        spec=make_spec(
            "echo hello", name="qa82-grp", submission=S.Submission(S.SUBMIT_QUEUE, total=3)
        ),
        submit_key=str(uuid.uuid4()),
    )[1]
    stop, delete = (reverse(name, args=[second.public_id]) for name in ("job-stop", "job-delete"))

    stop_asked = alice_en.post(stop).content.decode()
    delete_asked = alice_en.post(delete).content.decode()
    deleted = alice_en.post(delete, {"confirmed": "1"}, follow=True)

    assert '<h1 class="h4 text-break">Stop job qa82-grp 2/3?</h1>' in stop_asked
    assert "<title>Stop qa82-grp 2/3 · " in stop_asked
    assert '<h1 class="h4 text-break">Delete job qa82-grp 2/3?</h1>' in delete_asked
    assert "<title>Delete qa82-grp 2/3 · " in delete_asked
    assert [str(m) for m in deleted.context["messages"]] == ["Job qa82-grp 2/3 deleted."]


def test_the_detail_shows_the_masked_api_request_queue_position_and_actions(alice, alice_client):
    submit(alice)
    job = submit(alice, envs=[S.Env("TOKEN", "s3cr3t-value", secret=True)])

    response = alice_client.get(reverse("job-detail", args=[job.public_id]))

    html = response.content.decode()
    assert response.status_code == 200
    assert "POST /api/v1/aijobs?resourcePoolId=local" in html
    assert "s3cr3t-value" not in html and "******" in html
    assert "&quot;sharedMemoryGi&quot;: 10" in html  # the console's own settings
    assert "Position 2 in the queue" in html or "队列中第 2 位" in html
    assert reverse("job-copy", args=[job.public_id]) in html
    assert 'id="job-stop"' in html


def test_the_job_page_lists_the_environment_each_replica_receives_with_secrets_masked(
    alice, alice_client
):
    job = submit(
        alice,
        roles=[S.Role("master", 1), S.Role("worker", 2)],
        envs=[S.Env("MY_FLAG", "hello"), S.Env("HF_TOKEN", "s3cr3t-value", secret=True)],
    )

    response = alice_client.get(
        reverse("job-detail", args=[job.public_id]), HTTP_ACCEPT_LANGUAGE="en"
    )

    html = response.content.decode()
    section = html[html.index('<details class="mb-3" id="replica-envs">') :]
    section = section[: section.index("</details>")]
    assert "Environment injected into each replica" in section

    def env(label: str) -> dict[str, str]:
        table = section[section.index(f'id="replica-env-{label}"') :]
        table = table[: table.index("</table>")]
        return dict(re.findall(r"<th[^>]*>([A-Z_]+)</th><td[^>]*>([^<]*)</td>", table))

    master, worker = env("master-0"), env("worker-1")
    # The platform's variables as the local runner sets them, and the job's own envs.
    assert (master["RANK"], worker["RANK"], worker["WORLD_SIZE"]) == ("0", "2", "3")
    assert worker["MASTER_ADDR"] == "127.0.0.1"
    assert worker["AIHC_JOB_ID"] == job.public_id and worker["AIHC_ROLE"] == "worker"
    assert worker["MY_FLAG"] == "hello"
    # A secret stays masked, here as everywhere else on the page.
    assert worker["HF_TOKEN"] == "******"
    assert "s3cr3t-value" not in html


def test_a_job_whose_stored_spec_cannot_be_read_still_opens_and_says_why(alice, alice_client):
    job = submit(alice)
    Job.objects.filter(pk=job.pk).update(spec={"name": job.name, "jobSpec": "from an old console"})

    response = alice_client.get(reverse("job-detail", args=[job.public_id]))

    html = response.content.decode()
    assert response.status_code == 200
    assert 'id="spec-error"' in html and "jobSpec" in html
    assert 'id="job-status"' in html and 'id="events"' in html


def test_a_job_past_its_retention_kept_for_its_alerts_says_so_not_a_passed_deletion_time(
    alice, alice_client, settings
):
    # qa59: the page said "deleted automatically at" a time already passed.
    from jobs.alerts import job_alert

    alert = S.AlertConfig(items=["jobFailed"], webhooks=["https://hooks.example.com/on-call"])
    job = submit(alice, retention_period="2h", alert=alert)
    job_transition(job=job, to=JobStatus.RUNNING, reason="Started", message="")
    finish(job, JobStatus.FAILED)
    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
    Job.objects.filter(pk=job.pk).update(finished_at=timezone.now() - timedelta(hours=3))
    job.refresh_from_db()
    passed = timezone.localtime(job.finished_at + timedelta(hours=2)).strftime("%Y-%m-%d %H:%M:%S")

    def line(language="zh-hans"):
        alice_client.cookies["django_language"] = language
        page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()
        found = re.search(r'id="deletes-at">(.*?)</p>', page)
        return found and found.group(1)

    # Past its time, no worker has got to it yet: said as passed, not as a time to come.
    assert line("en") == (
        "Its retention (2 hours after it ended, Delete automatically after the job ends) "
        f"passed at {passed}: it is deleted automatically, with its logs, as soon as the "
        "worker gets to it. What it wrote to its mounts (checkpoints, event files) is kept."
    )
    assert line().startswith(f"其保留期（结束后保留 2 小时，任务退出后自动删除）已于 {passed} 到期")
    job_alert(job=job, item="jobFailed", message="demo failed")  # queued, not yet delivered

    assert line("en") == (
        "Kept until its alerts are delivered: its retention (2 hours after it ended, Delete "
        f"automatically after the job ends) passed at {passed}, and it is deleted "
        "automatically, with its logs, once they are."
    )
    assert line().startswith("保留至其告警发送完毕")


def test_a_rejection_reason_is_shown_on_the_job(alice, alice_client):
    job = submit(alice)
    Job.objects.filter(pk=job.pk).update(status_reason="Too many cards for a test job.")

    html = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()

    assert "Too many cards for a test job." in html


def test_a_finished_job_with_a_retention_period_says_when_it_will_be_deleted(alice, alice_client):
    kept = submit(alice, retention_period="2h")
    stopped = submit(alice, retention_period="2h")
    running = submit(alice, retention_period="2h")
    job_transition(job=kept, to=JobStatus.RUNNING, reason="Started", message="")
    finish(kept, JobStatus.SUCCEEDED)
    job_transition(job=stopped, to=JobStatus.STOPPED, reason="Stopped", message="")
    kept.refresh_from_db()
    when = timezone.localtime(kept.finished_at + timedelta(hours=2)).strftime("%Y-%m-%d %H:%M:%S")

    def line(job, language="zh-hans"):
        alice_client.cookies["django_language"] = language
        page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()
        found = re.search(r'id="deletes-at">(.*?)</p>', page)
        return found and found.group(1)

    # Its mounts are folders outside the job: a researcher's checkpoints there are not its to
    # delete, and the page says so, lest they copy them away first (QA 37).
    assert line(kept) == (
        f"将于 {when} 连同日志自动删除：结束后保留 2 小时（任务退出后自动删除）。"
        "它写入挂载的内容（检查点、事件文件）会保留。"
    )
    # A time to come, in English too (qa110: it read "Deleted automatically ... at").
    assert line(kept, "en") == (
        f"Will be deleted automatically, with its logs, at {when}: 2 hours after it ended "
        "(Delete automatically after the job ends). What it wrote to its mounts (checkpoints, "
        "event files) is kept."
    )
    assert line(stopped) is None and line(running) is None  # a stopped job is kept
    unmounted = submit(alice, retention_period="2h", datasources=[])
    job_transition(job=unmounted, to=JobStatus.RUNNING, reason="Started", message="")
    finish(unmounted, JobStatus.FAILED)
    assert line(unmounted, "en").endswith("(Delete automatically after the job ends).")


@pytest.mark.parametrize(
    ("period", "english", "chinese"),
    [
        ("1d", "1 day", "1 天"),
        ("3d", "3 days", "3 天"),
        ("1h", "1 hour", "1 小时"),
        ("90m", "90 min", "90 分钟"),
    ],
)
def test_a_retention_period_of_one_day_or_hour_reads_in_the_singular(period, english, chinese):
    from jobs.summary import retention_words

    # "Deleted automatically ... at ...: 1 days after it ended" before left23.
    with translation.override("en"):
        assert retention_words(period) == english
    with translation.override("zh-hans"):
        assert retention_words(period) == chinese


def test_stopping_a_queued_job_from_its_page_stops_it(alice, alice_client):
    job = submit(alice)

    asked = alice_client.post(reverse("job-stop", args=[job.public_id]))
    asked_status = status_of(job)
    response = alice_client.post(reverse("job-stop", args=[job.public_id]), {"confirmed": "1"})

    # Without JavaScript the browser did not ask: the server asks on a page first.
    assert asked.status_code == 200 and 'id="confirm-stop"' in asked.content.decode()
    assert asked_status == JobStatus.QUEUED
    assert response.status_code == 302
    assert status_of(job) == JobStatus.STOPPED
    # Said so that it still reads true once the job has stopped, beside the Stopped badge.
    page = alice_client.get(response["Location"]).content.decode()
    assert "已请求停止任务。" in page


def awaiting_review(owner, name: str = "needs-review") -> Job:
    """A job the review policy holds: never started, no instances."""
    ReviewPolicy.objects.update_or_create(pk=1, defaults={"mode": ReviewMode.ALL})
    job = submit(owner, name=name)
    assert job.status == JobStatus.PENDING_REVIEW
    return job


def test_the_stop_question_of_a_job_awaiting_review_says_it_will_not_be_sent_or_started(
    alice, alice_client
):
    job = awaiting_review(alice)
    stop = reverse("job-stop", args=[job.public_id])

    def question(language: str) -> str:
        alice_client.cookies["django_language"] = language
        asked = alice_client.post(stop)  # no JavaScript: the server asks
        return re.search(r'<p id="stop-question">([^<]*)</p>', asked.content.decode()).group(1)

    # It said "Its instances are ended" of a job that never had any.
    assert question("en") == (
        "Stop this job? It is still waiting for review and has not started: it is withdrawn "
        "from review and will not be sent or started. It cannot be resumed."
    )
    assert question("zh-hans") == (
        "确定停止该任务吗？该任务仍在等待审核、尚未启动：停止后将撤出审核，不会被提交或启动，且无法恢复。"
    )
    # The browser's own question (JavaScript on) says the same.
    page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()
    assert 'data-confirm="确定停止该任务吗？该任务仍在等待审核、尚未启动' in page
    assert status_of(job) == JobStatus.PENDING_REVIEW
    # A job that may have started still hears of its instances.
    alice_client.cookies["django_language"] = "en"
    ReviewPolicy.objects.update_or_create(pk=1, defaults={"mode": ReviewMode.NONE})
    queued = submit(alice, name="queued")
    asked = alice_client.post(reverse("job-stop", args=[queued.public_id])).content.decode()
    assert "Stop this job? Its replicas are ended and it cannot be resumed." in asked

    alice_client.post(stop, {"confirmed": "1"})

    assert status_of(job) == JobStatus.STOPPED
    job.refresh_from_db()
    assert job.review_state == ReviewState.WITHDRAWN


def test_the_stop_question_of_a_job_held_for_review_after_its_looks_were_given_up_says_it_is_looked_for(
    alice,
    alice_client,
    settings,
    fake_aihc,  # noqa: F811 (a fixture)
):
    """left51: its platform may have made it, so it is not "not sent or started": its Stop
    withdraws it and has the worker look for it there (Stopping), and says so."""
    from jobs.backends import get_backend

    job = given_up_and_held_for_review(fake_aihc, get_backend("aihc"), alice, settings, made=True)
    stop = reverse("job-stop", args=[job.public_id])
    alice_client.cookies["django_language"] = "en"

    asked = alice_client.post(stop).content.decode()

    question = (
        "Stop this job? It is waiting for review, but its platform may have made it from its "
        "last submission: it is withdrawn from review, and the worker looks for it there and "
        "stops it. It cannot be resumed."
    )
    assert re.search(r'<p id="stop-question">([^<]*)</p>', asked).group(1) == question
    page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()
    assert f'data-confirm="{question}"' in page
    alice_client.cookies["django_language"] = "zh-hans"
    page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()
    assert (
        'data-confirm="确定停止该任务吗？该任务正在等待审核，但平台可能已按其上次提交创建了它'
        in page
    )

    alice_client.post(stop, {"confirmed": "1"})

    job.refresh_from_db()
    assert (job.status, job.review_state) == (JobStatus.STOPPING, ReviewState.WITHDRAWN)


def test_deleting_a_finished_job_removes_it(alice, alice_client):
    job = submit(alice)
    finish(job)

    response = alice_client.post(reverse("job-delete", args=[job.public_id]), {"confirmed": "1"})

    assert response.status_code == 302 and response.url == reverse("job-list")
    assert not Job.objects.filter(pk=job.pk).exists()


def test_run_again_submits_a_new_job_from_the_same_spec(alice, alice_client):
    job = submit(alice)
    finish(job)

    response = alice_client.post(reverse("job-rerun", args=[job.public_id]))

    new = Job.objects.exclude(pk=job.pk).get()
    assert response.status_code == 302 and response.url == reverse(
        "job-detail", args=[new.public_id]
    )
    assert new.spec == job.spec and new.source_job == job and new.status == JobStatus.QUEUED
    # PostgreSQL refuses a longer key where SQLite stores it (make test-postgres).
    assert len(new.submit_key) <= Job._meta.get_field("submit_key").max_length


def test_a_job_run_again_links_back_to_the_job_it_was_made_from_while_that_exists(
    alice, alice_client
):
    job = submit(alice, name="first-try")
    finish(job)
    alice_client.post(reverse("job-rerun", args=[job.public_id]))
    new = Job.objects.exclude(pk=job.pk).get()
    url = reverse("job-detail", args=[new.public_id])

    html = alice_client.get(url, HTTP_ACCEPT_LANGUAGE="en").content.decode()
    fresh = alice_client.get(
        reverse("job-detail", args=[job.public_id]), HTTP_ACCEPT_LANGUAGE="en"
    ).content.decode()

    assert re.search(
        rf'<dt[^>]*>Copied from</dt><dd[^>]*><a href="/jobs/{job.public_id}/" id="source-job">'
        r"first-try</a>",
        html,
    )
    assert 'id="source-job"' not in fresh  # a job made anew names no source
    alice_client.post(reverse("job-delete", args=[job.public_id]), {"confirmed": "1"})
    assert 'id="source-job"' not in alice_client.get(url).content.decode()


def test_run_again_sent_twice_from_one_page_makes_one_job_even_once_it_holds_the_cards(
    alice, alice_client
):
    from jobs.models import LocalRun

    job = submit(alice, roles=[S.Role("master", 1, CARD, 2)])
    finish(job)
    page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()
    key = re.search(r'name="request_key" value="([0-9a-f]{32})"', page).group(1)
    url = reverse("job-rerun", args=[job.public_id])

    first = alice_client.post(url, {"request_key": key})
    new = Job.objects.exclude(pk=job.pk).get()
    job_transition(job=new, to=JobStatus.RUNNING, reason="Started")
    LocalRun.objects.create(job=new, devices={CARD: [0, 1]})  # both cards busy now
    resent = alice_client.post(url, {"request_key": key})
    other_page = alice_client.post(url, {"request_key": uuid.uuid4().hex}, follow=True)

    assert first.status_code == resent.status_code == 302
    assert resent.url == first.url == reverse("job-detail", args=[new.public_id])
    assert "需要 2" in other_page.content.decode()  # a new click is a new run, checked
    assert Job.objects.count() == 2


def test_run_again_refuses_a_standalone_job_whose_cards_are_busy_and_creates_nothing(
    alice, alice_client
):
    from jobs.models import LocalRun

    cards = [S.Role("master", 1, CARD, 2)]
    job = submit(alice, roles=cards)
    finish(job)
    busy = submit(alice, name="busy", roles=cards)
    job_transition(job=busy, to=JobStatus.RUNNING, reason="Started")
    LocalRun.objects.create(job=busy, devices={CARD: [0, 1]})  # what dispatch records

    response = alice_client.post(reverse("job-rerun", args=[job.public_id]), follow=True)

    assert response.redirect_chain[-1][0] == reverse("job-detail", args=[job.public_id])
    assert "needs 2" in response.content.decode() or "需要 2" in response.content.decode()
    assert Job.objects.count() == 2


def test_run_again_of_a_job_a_rule_now_refuses_says_why_and_creates_nothing(alice, alice_client):
    # Stored before the 50-variable limit (or another rule made stricter since): it still
    # reads, but a new job from it would break today's rules. Run again was a 500 then.
    job = submit(alice)
    finish(job)
    stored = copy.deepcopy(job.spec)
    stored["jobSpec"]["envs"] = [{"name": f"V{i}", "value": "x"} for i in range(51)]
    Job.objects.filter(pk=job.pk).update(spec=stored)

    response = alice_client.post(reverse("job-rerun", args=[job.public_id]), follow=True)

    assert response.redirect_chain[-1][0] == reverse("job-detail", args=[job.public_id])
    page = response.content.decode()
    assert "一个任务最多 50 个环境变量，此任务有 51 个。" in page
    assert "请复制该任务并修改所列内容" in page  # what to do instead
    assert Job.objects.count() == 1


def test_run_again_on_one_task_of_a_queue_group_runs_one_task(alice, alice_client):
    spec = make_spec("echo task")
    spec.submission = S.Submission(mode=S.SUBMIT_QUEUE, total=3)
    group = jobs_submit(owner=alice, spec=spec, submit_key=str(uuid.uuid4()))
    finish(group[1])

    response = alice_client.post(reverse("job-rerun", args=[group[1].public_id]))

    new = Job.objects.exclude(pk__in=[j.pk for j in group])
    assert response.status_code == 302
    assert new.count() == 1
    assert new.get().job_spec().submission.total == 1


def test_a_queue_task_page_says_copy_makes_a_draft_of_the_group_and_run_again_one_task(
    alice, alice_client
):
    spec = make_spec("echo task")
    spec.submission = S.Submission(mode=S.SUBMIT_QUEUE, total=3, concurrency=2)
    group = jobs_submit(owner=alice, spec=spec, submit_key=str(uuid.uuid4()))
    alone = submit(alice, name="alone")

    page = alice_client.get(reverse("job-detail", args=[group[1].public_id])).content.decode()
    plain = alice_client.get(reverse("job-detail", args=[alone.public_id])).content.decode()
    copied = alice_client.post(reverse("job-copy", args=[group[1].public_id]), follow=True)

    assert re.search(r'id="job-copy"[^>]*>复制整个任务组<', page)
    assert re.search(r'id="job-rerun"[^>]*>再次运行此任务<', page)
    help_text = re.search(r'id="group-actions-help">([^<]*)<', page).group(1)
    assert "3 个任务" in help_text and "最多同时运行 2 个" in help_text
    # A job of its own keeps the plain labels and has no such note.
    assert re.search(r'id="job-copy"[^>]*>复制<', plain)
    assert re.search(r'id="job-rerun"[^>]*>再次运行<', plain)
    assert "group-actions-help" not in plain
    # The copy is a draft of the whole group, and its page says so.
    draft = Draft.objects.get(source_job=group[1])
    row = draft.data["submission"]
    assert (row["mode"], row["total"], row["concurrency"]) == ([S.SUBMIT_QUEUE], ["3"], ["2"])
    assert "草稿是整个队列任务组的：共 3 个任务，最多同时运行 2 个" in copied.content.decode()


def test_a_queue_task_sent_alone_or_run_again_from_a_group_keeps_the_plain_buttons(
    alice, alice_client
):
    # A queue task is a group of one: copying it and running it again are the same one task,
    # so its page says neither "whole group" nor "this task", and has no note.
    spec = make_spec("echo task")
    spec.submission = S.Submission(mode=S.SUBMIT_QUEUE, total=3)
    group = jobs_submit(owner=alice, spec=spec, submit_key=str(uuid.uuid4()))
    finish(group[1])
    alice_client.post(reverse("job-rerun", args=[group[1].public_id]))
    again = Job.objects.exclude(pk__in=[j.pk for j in group]).get()
    assert again.group.total == 1

    page = alice_client.get(reverse("job-detail", args=[again.public_id])).content.decode()
    copied = alice_client.post(reverse("job-copy", args=[again.public_id]), follow=True)

    assert re.search(r'id="job-copy"[^>]*>复制<', page)
    assert re.search(r'id="job-rerun"[^>]*>再次运行<', page)
    assert "group-actions-help" not in page and "复制整个任务组" not in page
    assert '<span class="badge text-bg-light border fs-6 align-middle" id="group-task"' in page
    assert "草稿是整个队列任务组的" not in copied.content.decode()
    row = Draft.objects.get(source_job=again).data["submission"]
    assert (row["mode"], row["total"]) == ([S.SUBMIT_QUEUE], ["1"])


def test_the_logs_of_a_run_are_shown_polled_and_downloadable(alice, alice_client):
    job = submit(alice)
    run_until(Worker(), lambda: status_of(job) == JobStatus.SUCCEEDED)

    page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()
    tail = alice_client.get(
        reverse("job-logs", args=[job.public_id]),
        {"replica": "master-0"},
        headers={"HX-Request": "true"},
    )
    download = alice_client.get(reverse("job-log-download", args=[job.public_id, "master-0"]))

    assert "hello from the job" in page
    assert tail.status_code == 286 and "hello from the job" in tail.content.decode()
    assert download.status_code == 200
    assert download["Content-Disposition"].startswith("attachment")
    raw = b"".join(download.streaming_content).decode()
    # The file keeps UTC; the page says the time in the console's zone, as it does elsewhere.
    utc = re.search(r"(\S+)Z hello from the job", raw).group(1)
    shown = datetime.fromisoformat(utc).replace(tzinfo=UTC).astimezone(ZoneInfo("Asia/Shanghai"))
    assert f"{shown:%Y-%m-%d %H:%M:%S}.{utc[20:23]} hello from the job" in page
    # ... and the download's link says so, beside it and in its title (qa108), with the page's
    # own zone named, and no stray space before a full-width bracket (qa113).
    link = re.search(
        r'<a class="small" [^>]*id="log-download"[^>]*>下载日志</a> · <span[^>]*>([^<]+)', page
    )
    assert link[1] == "页面按北京时间（Asia/Shanghai，UTC+08:00）显示；下载的日志时间为 UTC"
    assert 'title="文件中的时间为 UTC；页面按你的时区显示。"' in link[0]


def test_downloading_the_log_of_a_replica_not_started_yet_is_a_404_page_saying_why_with_a_link_back(
    alice, alice_client
):
    # QA: Download under "No output yet." showed the generic "Page not found".
    job = submit(alice)
    JobReplica.objects.create(job=job, role="master", index=0)
    url = reverse("job-log-download", args=[job.public_id, "master-0"])
    back = f'href="{reverse("job-detail", args=[job.public_id])}#logs"'

    chinese = alice_client.get(url)
    alice_client.cookies["django_language"] = "en"
    english = alice_client.get(url)
    no_such_replica = alice_client.get(reverse("job-log-download", args=[job.public_id, "nope-9"]))

    assert chinese.status_code == english.status_code == no_such_replica.status_code == 404
    page = english.content.decode()
    assert "The log of master-0 cannot be downloaded" in page
    assert "This replica has no log yet: it has not started writing one" in page
    assert back in page and back in chinese.content.decode()
    assert "Page not found" not in page
    assert "该实例还没有日志：" in chinese.content.decode()
    assert "This job has no replica nope-9." in no_such_replica.content.decode()
    assert not replica_log_path(job.public_id, "master-0").exists()


def test_the_runners_own_log_lines_read_in_the_pages_language(alice, alice_client):
    job = submit(alice)
    run_until(Worker(), lambda: status_of(job) == JobStatus.SUCCEEDED)
    url = reverse("job-detail", args=[job.public_id])

    chinese = alice_client.get(url).content.decode()
    alice_client.cookies["django_language"] = "en"
    english = alice_client.get(url).content.decode()
    raw = b"".join(
        alice_client.get(
            reverse("job-log-download", args=[job.public_id, "master-0"])
        ).streaming_content
    ).decode()

    assert "[console] master-0 第 1 次运行开始" in raw  # the file: the console's language
    assert "master-0 第 1 次运行开始" in chinese and "master-0 已退出，退出码 0" in chinese
    assert "master-0 attempt 1 starting" in english
    assert "master-0 exited with code 0" in english
    assert "第 1 次" not in english and "退出码" not in english
    # After the page's Console badge, without the file's "[console]" (copy edit: said twice).
    assert "[console]" not in chinese and "[console]" not in english


def job_with_master_log(owner, raw: bytes) -> Job:
    """A job with a secret env (API_TOKEN=hunter2-token) whose master wrote `raw` to its log."""
    job = submit(owner, envs=[S.Env("API_TOKEN", "hunter2-token", secret=True)])
    JobReplica.objects.create(job=job, role="master", index=0)
    log = replica_log_path(job.public_id, "master-0")
    log.parent.mkdir(parents=True)
    log.write_bytes(raw)
    return job


def log_tail_html(client, job: Job) -> str:
    """The log panel as the job page's 2-second refresh fetches it."""
    return client.get(
        reverse("job-logs", args=[job.public_id]),
        {"replica": "master-0"},
        headers={"HX-Request": "true"},
    ).content.decode()


def test_the_log_view_drops_terminal_escape_codes_but_masks_and_dates_the_lines_still(
    alice, alice_client
):
    raw = (
        # loguru's colours, one of them inside the secret (the runner's mask missed it)
        b"2026-11-30T09:00:00.000000Z \x1b[32mINFO\x1b[0m token=hunter2-\x1b[1mtoken\x1b[0m\n"
        # tqdm's line erase and cursor up, rich's hyperlink (OSC 8), a saved cursor
        b"2026-11-30T09:00:01.000000Z \x1b[2K\x1b[1A\x1b]8;;https://x.example\x1b\\docs"
        b"\x1b]8;;\x1b\\ 100%|##########| 3/3\x1b7\x1b8\x07\n"
    )
    job = job_with_master_log(alice, raw)

    page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()
    tail = log_tail_html(alice_client, job)
    download = alice_client.get(reverse("job-log-download", args=[job.public_id, "master-0"]))

    for html in (page, tail):
        assert "2026-11-30 17:00:00.000 INFO token=******\n" in html
        assert "2026-11-30 17:00:01.000 docs 100%|##########| 3/3\n" in html
        assert "\x1b" not in html and "\x07" not in html and "[0m" not in html
        assert "hunter2" not in html
    # The download is the file, byte for byte.
    assert b"".join(download.streaming_content) == raw


def test_a_very_long_log_line_is_cut_on_the_page_and_whole_in_the_download(alice, alice_client):
    line = "token=hunter2-token " + "x" * 60_000 + " END"
    raw = f"2026-11-30T09:00:00.000000Z {line}\n2026-11-30T09:00:01.000000Z short\n".encode()
    job = job_with_master_log(alice, raw)

    tail = log_tail_html(alice_client, job)
    download = alice_client.get(reverse("job-log-download", args=[job.public_id, "master-0"]))

    assert len(tail) < 10_000  # not the 60 KB line
    shown = "token=****** " + "x" * (2000 - len("token=****** "))
    more = len("token=****** " + "x" * 60_000 + " END") - 2000
    assert f"{shown} [… 此行还有 {more} 个字符：下载日志可查看全部]" in tail
    assert "END" not in tail and "hunter2" not in tail
    assert "2026-11-30 17:00:01.000 short" in tail
    assert b"".join(download.streaming_content) == raw


def test_the_delete_button_is_a_danger_button_not_a_grey_one(alice, alice_client):
    job = submit(alice)

    page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()

    button = re.search(r'<button class="([^"]*)" type="submit" id="job-delete">', page)
    assert button and "btn-outline-danger" in button.group(1).split()
    assert "btn-outline-secondary" not in button.group(1).split()


def test_the_live_part_polls_until_the_job_is_final(alice, alice_client):
    job = submit(alice)
    url = reverse("job-live", args=[job.public_id])

    assert alice_client.get(url, headers={"HX-Request": "true"}).status_code == 200
    finish(job, message="Broke.")
    done = alice_client.get(url, headers={"HX-Request": "true"})
    assert done.status_code == 286 and "Broke." in done.content.decode()


def test_the_status_poll_also_replaces_the_actions_and_duration_once_the_job_ends(
    alice, alice_client
):
    job = submit(alice)
    url = reverse("job-live", args=[job.public_id])

    queued = alice_client.get(url, headers={"HX-Request": "true"}).content.decode()
    job_transition(job=job, to=JobStatus.RUNNING, reason="Started")
    finish(job, status=JobStatus.SUCCEEDED)
    done = alice_client.get(url, headers={"HX-Request": "true"})

    assert 'id="job-actions" hx-swap-oob="true"' in queued and 'id="job-stop"' in queued
    assert done.status_code == 286
    html = done.content.decode()
    assert 'id="job-actions" hx-swap-oob="true"' in html and 'id="job-stop"' not in html
    assert 'id="job-rerun"' in html
    assert re.search(r'id="job-duration" hx-swap-oob="true">\d+ 秒<', html)
    # When it started and ended come with it, to the second (QA 43: only its events said so).
    job.refresh_from_db()
    assert 'id="job-started" hx-swap-oob="true">–<' in queued
    assert 'id="job-ended" hx-swap-oob="true">–<' in queued
    started, ended = (
        timezone.localtime(t).strftime("%Y-%m-%d %H:%M:%S")
        for t in (job.started_at, job.finished_at)
    )
    assert f'id="job-started" hx-swap-oob="true">{started}<' in html
    assert f'id="job-ended" hx-swap-oob="true">{ended}<' in html


def test_the_log_panel_of_a_queued_job_polls_so_its_logs_appear_without_a_reload(
    alice, alice_client
):
    job = submit(alice)

    page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()
    finish(job, status=JobStatus.STOPPED)
    last = alice_client.get(
        reverse("job-logs", args=[job.public_id]), headers={"HX-Request": "true"}
    )

    assert f'hx-get="{reverse("job-logs", args=[job.public_id])}?replica=' in page
    assert last.status_code == 286


def test_a_page_past_the_end_shows_the_last_page_there_is(alice, alice_client):
    submit(alice, name="only")

    r = alice_client.get(reverse("job-list"), {"page": 5}, follow=True)
    garbage = alice_client.get(reverse("job-list"), {"page": "x"})

    # Until qa91 "Page 5 of 1" above no jobs, with a link back (left45).
    assert r.redirect_chain == [(reverse("job-list"), 302)]
    assert r.content.decode().count("data-job=") == 1
    assert garbage.status_code == 200 and garbage.content.decode().count("data-job=") == 1


def test_stopping_a_queued_job_records_who_and_a_finished_one_is_left_alone(alice, alice_client):
    job = submit(alice)
    url = reverse("job-stop", args=[job.public_id])

    first = alice_client.post(url, {"confirmed": "1"}, follow=True)
    events_after_first = job.events.count()
    second = alice_client.post(url, {"confirmed": "1"}, follow=True)

    job.refresh_from_db()
    assert first.status_code == 200 and job.status == JobStatus.STOPPED
    assert job.events.last().actor == alice
    assert "already finished" in second.content.decode() or "已结束" in second.content.decode()
    assert job.events.count() == events_after_first


def test_the_job_page_names_framework_priority_replica_states_and_event_reasons_in_the_users_language(
    alice, alice_client
):
    job = submit(alice, priority="high")
    job_transition(job=job, to=JobStatus.RUNNING, reason="Started")
    JobReplica.objects.update_or_create(
        job=job, role="master", index=0, defaults={"status": "running"}
    )

    zh = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()
    alice_client.cookies["django_language"] = "en"
    en = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()

    assert re.search(r'<dd class="col-sm-4">高</dd>', zh)
    assert '<dd class="col-sm-4">PyTorch</dd>' in zh  # not the API's PyTorchJob
    # The state's code after its name on hover (qa113: a bare "failed" on a Chinese page).
    assert 'class="replica-status" title="运行中（代码 running）">运行中<' in zh
    assert 'class="event-reason" title="Created">已创建<' in zh
    assert 'class="event-reason" title="Started">已启动<' in zh
    assert 'class="replica-status" title="Running (code running)">Running<' in en
    assert 'class="event-reason" title="Started">Started<' in en


def test_a_local_jobs_page_labels_its_console_job_id_and_shows_no_platform_id(alice, alice_client):
    job = submit(alice)
    alice_client.cookies["django_language"] = "en"

    html = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()

    assert re.search(rf"<dt[^>]*>Console job ID</dt>\s*<dd[^>]*>{job.public_id}</dd>", html)
    assert 'id="external-id"' not in html and "data-copy-target" not in html


def test_a_rejected_job_offers_no_stop(alice, alice_client):
    job = submit(alice)
    Job.objects.filter(pk=job.pk).update(status=JobStatus.REJECTED)

    page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()

    assert 'id="job-stop"' not in page


def test_recorded_reasons_and_events_read_in_the_pages_language(alice, alice_client):
    job = jobs_submit(owner=alice, spec=make_spec("exit 3"), submit_key=str(uuid.uuid4()))[0]
    run_until(Worker(), lambda: status_of(job) == JobStatus.FAILED)
    job.refresh_from_db()
    url = reverse("job-detail", args=[job.public_id])

    chinese = alice_client.get(url).content.decode()
    alice_client.cookies["django_language"] = "en"
    english = alice_client.get(url).content.decode()
    listed = alice_client.get(reverse("job-list")).content.decode()

    # Stored once, in the console's language (what alerts and mails carry)...
    assert job.status_reason == "master-0 退出，退出码 3。"
    assert "master-0 退出，退出码 3。" in chinese and "任务已创建。" in chinese
    # ...and said in English on an English page.
    reason = re.search(r'id="status-reason">(.*?)</div>', english).group(1)
    events = english[
        english.index('id="events"') : english.index("</ol>", english.index('id="events"'))
    ]
    assert reason == "master-0 exited with code 3."
    assert "Job created." in events and not re.search(r"[\u4e00-\u9fff]", events)
    assert "master-0 exited with code 3." in listed


def test_a_command_not_found_says_the_local_runner_uses_this_machines_files_not_the_image(
    alice, alice_client
):
    # An AIAK template's start script lives in its image, which the local runner does not
    # pull: the job failed with "master-0 exited with code 127." and nothing more.
    command = "bash /workspace/AIAK-Training-LLM/examples/llama3/pretrain_llama3_8b.sh"
    job = jobs_submit(owner=alice, spec=make_spec(command), submit_key=str(uuid.uuid4()))[0]
    run_until(Worker(), lambda: status_of(job) == JobStatus.FAILED)
    job.refresh_from_db()
    url = reverse("job-detail", args=[job.public_id])

    chinese = alice_client.get(url).content.decode()
    alice_client.cookies["django_language"] = "en"
    english = alice_client.get(url).content.decode()

    assert job.status_reason == (
        "master-0 退出，退出码 127：找不到命令或文件（本机任务运行在本机的文件上，而不是其镜像中）。"
    )
    assert job.status_reason in chinese
    reason = re.search(r'id="status-reason">(.*?)</div>', english).group(1)
    assert reason == (
        "master-0 exited with code 127: a command or file was not found (local jobs run on "
        "this machine&#x27;s files, not on their image&#x27;s)."
    )
    # Any other code reads as before (126 and a signal's 128 + N have words of their own:
    # tests/test_runner_failure_reasons.py).
    other = jobs_submit(owner=alice, spec=make_spec("exit 3"), submit_key=str(uuid.uuid4()))[0]
    run_until(Worker(), lambda: status_of(other) == JobStatus.FAILED)
    other.refresh_from_db()
    assert other.status_reason == "master-0 退出，退出码 3。"


def test_the_navigation_marks_the_section_the_page_belongs_to(alice, alice_client):
    def current(url: str) -> list[str]:
        html = alice_client.get(url).content.decode()
        return re.findall(r'class="nav-link[^"]*active" aria-current="page"[^>]*>([^<]+)<', html)

    job = submit(alice)

    assert current(reverse("job-list")) == ["训练任务"]
    assert current(reverse("job-detail", args=[job.public_id])) == ["训练任务"]
    assert current(reverse("wizard-start")) == ["创建任务"]


def test_each_replica_shows_the_node_it_runs_on_and_its_card_ids(alice, alice_client):
    job = submit(alice)
    job_transition(job=job, to=JobStatus.RUNNING, reason="Started")
    JobReplica.objects.update_or_create(
        job=job,
        role="master",
        index=0,
        defaults={
            "status": "running",
            "node": "gpu-node-7",
            "devices": "2,3",
            "started_at": datetime(2026, 11, 29, 16, 5, 9, tzinfo=UTC),
        },
    )

    page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()

    headers = re.findall(r"<th>([^<]+)</th>", page.split('id="replicas"')[1].split("</thead>")[0])
    assert headers == ["实例", "状态", "重启次数", "退出码", "节点", "卡号", "开始时间"]
    row = page.split('id="replicas"')[1].split("</tr>")[1]
    assert ">gpu-node-7<" in row and "<td>2、3</td>" in row  # a list in Chinese (qa92)
    # The console's time zone (Asia/Shanghai), with its day and, as every date on the page,
    # its year (copy edit: "11-30 00:05:09" beside the events' "2026-11-30 00:05:09").
    assert "<td>2026-11-30 00:05:09</td>" in row


def test_a_fault_tolerance_restart_reads_wholly_in_the_pages_language_cause_included(
    alice, alice_client
):
    spec = make_spec(
        "exit 3",
        fault_tolerance=True,
        fault_tolerance_config=S.FaultToleranceConfig(fault_tolerance_limit=1),
    )
    job = jobs_submit(owner=alice, spec=spec, submit_key=str(uuid.uuid4()))[0]
    run_until(Worker(), lambda: status_of(job) == JobStatus.FAILED)
    restart = job.events.get(reason="Restarted")

    alice_client.cookies["django_language"] = "en"
    english = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()

    # Stored once in the console's language, the cause inside it too...
    assert restart.message == "整体重启任务（第 1 次，共 1 次）：master-0 退出，退出码 3。"
    # ...and on an English page the cause is English as well, not left in Chinese.
    assert "Restarting the whole job (1 of 1): master-0 exited with code 3." in english
    events = english[
        english.index('id="events"') : english.index("</ol>", english.index('id="events"'))
    ]
    assert not re.search(r"[\u4e00-\u9fff]", events)


def test_one_restart_reads_restarted_once_not_1_times(alice, alice_client):
    job = submit(alice)
    Job.objects.filter(pk=job.pk).update(restarts=1)
    url = reverse("job-detail", args=[job.public_id])

    chinese = alice_client.get(url).content.decode()
    alice_client.cookies["django_language"] = "en"
    english = alice_client.get(url).content.decode()

    assert "已重启 1 次" in chinese
    assert "Restarted once" in english and "1 times" not in english


def test_a_user_without_jobs_is_shown_where_to_start_instead_of_empty_filters_and_table(
    alice, alice_client
):
    empty = alice_client.get(reverse("job-list")).content.decode()
    submit(alice, name="alpha")
    with_a_job = alice_client.get(reverse("job-list")).content.decode()

    block = re.search(r'<section[^>]*id="jobs-empty".*?</section>', empty, re.S)
    assert block and "还没有训练任务" in block.group(0)
    assert re.search(
        r'href="/create/"[^>]*id="jobs-empty-create"[^>]*>创建第一个训练任务<', block.group(0)
    )
    assert 'href="/pools/"' in block.group(0)
    # Nothing to filter or tick yet.
    assert 'id="job-filters"' not in empty and 'id="select-all"' not in empty
    assert 'id="jobs-empty"' not in with_a_job
    assert 'id="job-filters"' in with_a_job and "alpha" in with_a_job


def test_a_filter_that_matches_nothing_says_so_rather_than_no_jobs_yet(alice, alice_client):
    submit(alice, name="alpha")

    filtered = alice_client.get(reverse("job-list"), {"status": "timed_out", "q": "alp"})
    searched = alice_client.get(reverse("job-list"), {"q": "nothing-like-it"})
    empty_form = alice_client.get(reverse("job-list"), {"q": "", "status": "", "page": "1"})

    for response in (filtered, searched):
        html = response.content.decode()
        assert "还没有任务" not in html
        assert "没有符合筛选条件的任务" in html
        # One click back to every job.
        assert re.search(r'<a href="/"[^>]*id="clear-filters"', html)
    assert "alpha" in empty_form.content.decode()


def test_a_log_longer_than_the_tail_says_the_page_shows_only_its_last_lines(alice, alice_client):
    long = jobs_submit(owner=alice, spec=make_spec("seq 1 300"), submit_key=str(uuid.uuid4()))[0]
    short = jobs_submit(owner=alice, spec=make_spec("echo hi"), submit_key=str(uuid.uuid4()))[0]
    run_until(
        Worker(),
        lambda: status_of(long) == JobStatus.SUCCEEDED and status_of(short) == JobStatus.SUCCEEDED,
    )

    alice_client.cookies["django_language"] = "en"
    long_page = alice_client.get(reverse("job-detail", args=[long.public_id])).content.decode()
    short_page = alice_client.get(reverse("job-detail", args=[short.public_id])).content.decode()
    polled = alice_client.get(
        reverse("job-logs", args=[long.public_id]), {"replica": "master-0"}, HTTP_HX_REQUEST="true"
    ).content.decode()

    notice = "Only the last 200 lines are shown; download the log for all of it."
    assert notice in long_page and notice in polled
    assert notice not in short_page


def running_with_usage(owner, samples: list[dict], **changes) -> Job:
    """A local job running one replica (master-0) whose shim has written `samples`."""
    job = submit(owner, **changes)
    job_transition(job=job, to=JobStatus.RUNNING, reason="Started")
    LocalRun.objects.create(job=job, attempt=1)
    JobReplica.objects.create(job=job, role="master", index=0, status="running")
    state = replica_state_dir(job.public_id, 1, "master-0")
    state.mkdir(parents=True)
    log = UsageLog(state / "usage")
    for sample in samples:
        log.append(sample)
    return job


def usage_samples(count: int) -> list[dict]:
    """`count` samples 15 s apart, CPU rising to 1.5 cores, memory to 3 GiB."""
    return [
        {
            "t": 1_800_000_000.0 + 15 * n,
            "s": 15.0,
            "cpu": round(1.5 * (n + 1) / count, 3),
            "mem": 3 * 1024**3 * (n + 1) // count,
            "tmp": 512 * 1024**2,
        }
        for n in range(count)
    ]


def test_a_running_replicas_cpu_memory_and_tmp_show_against_its_limits_with_sparklines(
    alice, alice_client, settings
):
    settings.LOCAL_TMP_MAX_GB = 50
    job = running_with_usage(
        alice, usage_samples(80), roles=[S.Role("master", 1, cpu=4, memory_gb=8)]
    )
    alice_client.cookies["django_language"] = "en"

    page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()
    polled = alice_client.get(
        reverse("job-live", args=[job.public_id]), headers={"HX-Request": "true"}
    ).content.decode()

    for html in (page, polled):
        table = html.split('id="usage"')[1].split("</table>")[0]
        headers = re.findall(r"<th>([^<]+)</th>", table)
        assert headers == ["Replica", "CPU", "Memory", "/tmp"]
        row = re.sub(r"\s+", " ", table.split("</tr>")[1])
        assert "master-0" in row
        # Binary units, as the forms ask for memory in GiB (qa113: "512.0 MB of 50.0 GB").
        assert "1.50 of 4 cores" in row and "3.0 GiB of 8.0 GiB" in row
        assert "512.0 MiB of 50.0 GiB" in row
        # Three sparklines of the newest 60 samples (15 minutes), each saying what it draws.
        lines = re.findall(r'<svg class="sparkline[^"]*"[^>]*aria-label="([^"]+)"[^>]*>', row)
        assert lines == [
            "CPU over the last 15m: lowest 0.39 cores, highest 1.50 cores, now 1.50 cores",
            "Memory over the last 15m: lowest 806.4 MiB, highest 3.0 GiB, now 3.0 GiB",
            "/tmp over the last 15m: lowest 512.0 MiB, highest 512.0 MiB, now 512.0 MiB",
        ]
        assert f"<title>{lines[0]}</title>" in row
        points = re.findall(r'<polyline points="([^"]+)"', row)
        assert len(points) == 3 and all(len(p.split()) == 60 for p in points)
        # CPU drawn against its 4-core limit: the last point (1.5 cores) is not at the top.
        assert points[0].split()[-1] == "120.0,14.8"
        assert "style=" not in row  # the Content-Security-Policy allows no inline style


def test_an_empty_tmp_reads_in_the_same_binary_units_as_its_limit_in_chinese(
    alice, alice_client, settings
):
    # qa113: "/tmp 0 字节 / 50.0 GB", a translated word beside a decimal unit.
    settings.LOCAL_TMP_MAX_GB = 50
    samples = [{**sample, "tmp": 0} for sample in usage_samples(4)]
    job = running_with_usage(alice, samples, roles=[S.Role("master", 1, cpu=4, memory_gb=8)])

    page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()

    row = re.sub(r"\s+", " ", page.split('id="usage"')[1].split("</table>")[0].split("</tr>")[1])
    tmp = row.split('class="usage-tmp">')[1].split("<svg")[0]
    assert tmp == "0 B / 50.0 GiB"
    assert "字节" not in row


def test_a_running_job_not_sampled_yet_says_so_and_shows_no_limits_it_lacks(alice, alice_client):
    waiting = running_with_usage(alice, [])
    one = running_with_usage(alice, usage_samples(1))
    alice_client.cookies["django_language"] = "en"

    waiting_page = alice_client.get(reverse("job-detail", args=[waiting.public_id]))
    one_page = alice_client.get(reverse("job-detail", args=[one.public_id])).content.decode()

    assert waiting_page.status_code == 200
    row = waiting_page.content.decode().split('id="usage"')[1].split("</tr>")[1]
    assert "master-0" in row and "Not measured yet" in row and "<svg" not in row
    row = re.sub(r"\s+", " ", one_page.split('id="usage"')[1].split("</tr>")[1])
    # No CPU or memory limit: the values alone. One sample: a level line across.
    assert "1.50 cores" in row and " of " not in row.split("usage-tmp")[0]
    assert '<polyline points="0.0,1.0 120,1.0"' in row


@pytest.mark.parametrize("backend", ["aihc", "kubernetes"])
def test_a_remote_backends_job_shows_no_usage_section_where_a_local_one_does(
    alice, alice_client, backend
):
    local = running_with_usage(alice, usage_samples(3))
    remote = running_with_usage(alice, usage_samples(3))
    Job.objects.filter(pk=remote.pk).update(backend=backend)

    local_page = alice_client.get(reverse("job-detail", args=[local.public_id]))
    remote_page = alice_client.get(reverse("job-detail", args=[remote.public_id]))

    assert 'id="usage"' in local_page.content.decode()
    assert remote_page.status_code == 200
    assert 'id="usage"' not in remote_page.content.decode()


def test_two_pools_sharing_a_name_are_told_apart_by_their_id():
    from jobs.backends import Pool
    from jobs.pools import pool_filter_choices

    pools = [
        Pool("cce-a", "训练池", "aihc"),
        Pool("cce-b", "训练池", "aihc"),
        Pool("local", "本机 Local", "local"),
    ]

    choices, selected = pool_filter_choices(pools=pools, chosen="CCE-B")

    assert choices[1:] == [
        ("cce-a", "训练池 (cce-a)"),
        ("cce-b", "训练池 (cce-b)"),
        ("local", "本机 Local"),
    ]
    assert selected == "cce-b"


def test_a_running_job_deleted_elsewhere_says_on_its_page_that_it_goes_once_stopped(
    alice, alice_client, settings
):
    settings.LOCAL_STOP_GRACE_SECONDS = 10
    assert worker_beat(worker=WorkerIdentity.new())  # a worker runs: it ends the replicas
    job = running_with_usage(alice, [])
    other_tab = Client()
    other_tab.force_login(alice)
    other_tab.cookies["django_language"] = "en"

    deleted = alice_client.post(reverse("job-delete", args=[job.public_id]), {"confirmed": "1"})
    page = other_tab.get(reverse("job-detail", args=[job.public_id]))
    refreshed = other_tab.get(
        reverse("job-live", args=[job.public_id]), headers={"HX-Request": "true"}
    )

    assert deleted.status_code == 302 and deleted.url == reverse("job-list")
    said = (
        "Stopping every replica (SIGTERM, SIGKILL after 10 s) to delete the job: it is "
        "deleted, with its logs, once it has stopped."
    )
    assert page.status_code == 200 and said in page.content.decode()
    assert said in refreshed.content.decode()  # a page left open learns it at its refresh
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPING
    assert LocalRun.objects.get(job=job).delete_when_stopped


def test_a_running_job_stopped_says_only_that_it_is_stopping(alice, alice_client, settings):
    settings.LOCAL_STOP_GRACE_SECONDS = 10
    assert worker_beat(worker=WorkerIdentity.new())  # a worker runs: it ends the replicas
    job = running_with_usage(alice, [])
    alice_client.cookies["django_language"] = "en"

    stopped = alice_client.post(reverse("job-stop", args=[job.public_id]), {"confirmed": "1"})
    page = alice_client.get(reverse("job-detail", args=[job.public_id]))

    assert stopped.status_code == 302
    assert "Stopping every replica (SIGTERM, SIGKILL after 10 s).</div>" in page.content.decode()
    assert "to delete the job" not in page.content.decode()


def test_a_local_mpi_workers_log_says_its_ranks_print_to_the_launchers_log_and_links_there(
    alice, alice_client
):
    mpi = submit(alice, framework=S.MPI, roles=[S.Role("master", 1), S.Role("worker", 1)])
    pytorch = submit(alice, roles=[S.Role("master", 1), S.Role("worker", 1)])
    for job in (mpi, pytorch):
        for role in ("master", "worker"):
            JobReplica.objects.create(job=job, role=role, index=0, status="running")

    def logs(job, label):
        url = reverse("job-logs", args=[job.public_id])
        r = alice_client.get(url, {"replica": label}, headers={"HX-Request": "true"})
        assert r.status_code == 200
        return r.content.decode()

    worker = logs(mpi, "worker-0")
    assert 'id="log-mpi-worker"' in worker
    assert "（进程）的输出在 launcher 的日志 master-0 中" in worker
    assert f'href="{reverse("job-detail", args=[mpi.public_id])}?replica=master-0#logs"' in worker
    # The launcher's own log, and any other framework's worker, say nothing of it.
    assert 'id="log-mpi-worker"' not in logs(mpi, "master-0")
    assert 'id="log-mpi-worker"' not in logs(pytorch, "worker-0")


# -- an old link to a deleted job (left23) ---------------------------------------------------


def test_an_old_link_to_a_job_its_retention_deleted_tells_its_owner_so_and_when(
    alice, bob, alice_client, settings
):
    from jobs.models import DeletedJob

    settings.TIME_ZONE = "Asia/Shanghai"
    job = submit(alice, name="nightly", retention_period="2d")
    job_transition(job=job, to=JobStatus.RUNNING, reason="Started")
    finish(job, JobStatus.SUCCEEDED)
    ended_at(job, timezone.now() - timedelta(days=3))
    Worker().delete_expired()  # as the worker does once its retention has passed
    alice_client.cookies["django_language"] = "en"
    link = reverse("job-detail", args=[job.public_id])  # as its alert mail linked it

    page = alice_client.get(link)

    assert page.status_code == 404
    text = page.content.decode()
    assert "Job nightly was deleted" in text and job.public_id in text
    kept = DeletedJob.objects.get(public_id=job.public_id)
    when = timezone.localtime(kept.deleted_at).strftime("%Y-%m-%d %H:%M")
    assert f"It was deleted automatically, with its logs, at {when}: 2 days after it ended" in text
    # A CPU-only job: its hours count as CPU-only job-hours (qa76: "The card-hours it used").
    assert (
        'It used no cards: its CPU-only job-hours still count in <a href="/account/usage/">'
        "My usage</a>" in text
    )
    assert "card-hours" not in text
    assert not Job.objects.filter(pk=job.pk).exists()
    assert (kept.owner, kept.name, kept.reason, kept.retention) == (
        alice,
        "nightly",
        "retention",
        "2d",
    )
    # In Chinese too.
    alice_client.cookies["django_language"] = "zh-hans"
    assert "自动删除" in alice_client.get(link).content.decode()


def test_an_old_link_to_a_deleted_job_that_used_cards_says_its_card_hours_still_count(
    alice, alice_client
):
    job = submit(
        alice, name="on-cards", retention_period="1d", roles=[S.Role("master", 1, CARD, 2)]
    )
    job_transition(job=job, to=JobStatus.RUNNING, reason="Started")
    finish(job, JobStatus.SUCCEEDED)
    ended_at(job, timezone.now() - timedelta(days=2))
    Worker().delete_expired()
    alice_client.cookies["django_language"] = "en"

    text = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()

    assert 'The card-hours it used still count in <a href="/account/usage/">My usage</a>' in text
    assert "CPU-only" not in text


def test_an_old_link_to_another_users_deleted_job_says_nothing_of_it(alice, bob, settings):
    job = submit(alice, name="secret-run", retention_period="1d")
    job_transition(job=job, to=JobStatus.RUNNING, reason="Started")
    finish(job, JobStatus.SUCCEEDED)
    ended_at(job, timezone.now() - timedelta(days=2))
    Worker().delete_expired()
    client = Client()
    client.force_login(bob)
    client.cookies["django_language"] = "en"

    page = client.get(reverse("job-detail", args=[job.public_id]))

    assert page.status_code == 404
    text = page.content.decode()
    assert "There is nothing at this address" in text
    assert "secret-run" not in text and "deleted automatically" not in text


def test_an_old_link_to_a_deleted_queue_task_names_its_place_in_its_group(alice, alice_client):
    # qa76: the group's tasks share a name, and the page said "Job qa-grp was deleted" alone.
    from jobs.models import DeletedJob

    spec = make_spec("echo task")
    spec.name = "qa-grp"
    spec.submission = S.Submission(mode=S.SUBMIT_QUEUE, total=3)
    _first, second, _third = jobs_submit(owner=alice, spec=spec, submit_key=str(uuid.uuid4()))
    finish(second, JobStatus.FAILED)
    alice_client.post(reverse("job-delete", args=[second.public_id]), {"confirmed": "1"})
    alice_client.cookies["django_language"] = "en"

    text = alice_client.get(reverse("job-detail", args=[second.public_id])).content.decode()

    assert "Job qa-grp 2/3 was deleted" in text
    kept = DeletedJob.objects.get(public_id=second.public_id)
    assert (kept.group_index, kept.group_total) == (2, 3)
    # A standalone job's old link names it alone.
    alone = submit(alice, name="alone")
    finish(alone, JobStatus.FAILED)
    alice_client.post(reverse("job-delete", args=[alone.public_id]), {"confirmed": "1"})
    text = alice_client.get(reverse("job-detail", args=[alone.public_id])).content.decode()
    assert "Job alone was deleted" in text


def test_an_old_link_to_a_queue_task_of_one_deleted_before_fix131_names_no_place(
    alice, alice_client
):
    # review62: a task of one deleted before fix131 kept 1/1, which its page said ("Job
    # solo 1/1 was deleted") though Job itself no longer does.
    from jobs.models import DeletedJob

    job = submit(alice, name="solo")
    finish(job, JobStatus.FAILED)
    alice_client.post(reverse("job-delete", args=[job.public_id]), {"confirmed": "1"})
    DeletedJob.objects.filter(public_id=job.public_id).update(group_index=1, group_total=1)
    alice_client.cookies["django_language"] = "en"

    text = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()

    assert "Job solo was deleted" in text
    assert DeletedJob.objects.get(public_id=job.public_id).task_name == "solo"


def test_a_job_deleted_by_its_owner_says_when_at_its_link_and_its_refresh_stays_a_bare_404(
    alice, alice_client
):
    from jobs.models import DeletedJob

    job = submit(alice, name="scratch")
    finish(job, JobStatus.FAILED)
    alice_client.cookies["django_language"] = "en"

    deleted = alice_client.post(reverse("job-delete", args=[job.public_id]), {"confirmed": "1"})
    page = alice_client.get(reverse("job-detail", args=[job.public_id]))
    refresh = alice_client.get(
        reverse("job-detail", args=[job.public_id]), headers={"HX-Request": "true"}
    )

    assert deleted.status_code == 302
    assert page.status_code == 404
    kept = DeletedJob.objects.get(public_id=job.public_id)
    when = timezone.localtime(kept.deleted_at).strftime("%Y-%m-%d %H:%M")
    text = page.content.decode()
    assert "Job scratch was deleted" in text
    [why] = re.findall(r'<p id="job-deleted-why">(.*?)</p>', text)
    assert why.startswith(
        f"It was deleted, with its logs, at {when} (with Delete on its page or on the job list)."
    )
    assert "usage" not in text.split('id="job-deleted"')[1]  # it never ran: no usage kept
    assert kept.reason == "" and kept.retention == ""
    # A page left open learns it as before (console.js: a 404 to a refresh).
    assert refresh.status_code == 404 and "scratch" not in refresh.content.decode()


@pytest.mark.usefixtures("kubernetes_settings")
def test_a_job_delete_only_stops_is_asked_about_as_stopped_and_kept_with_and_without_javascript(
    alice, alice_en
):
    """Until left45 the job page asked "Delete this job?" of a job queued again after a
    create with no clear answer, which Delete stops and keeps (job_delete_only_stops)."""
    from jobs.backends.kubernetes import UNANSWERED_EVENT
    from jobs.services import job_event

    job = submit(alice, name="unsettled")
    other = submit(alice, name="settled")
    Job.objects.filter(pk__in=[job.pk, other.pk]).update(backend="kubernetes", external_id="")
    job_event(job=job, reason=UNANSWERED_EVENT, message="no answer", warning=True)
    asked = "Stop this job and keep it? A create of it got no clear answer"

    page = alice_en.get(reverse("job-detail", args=[job.public_id])).content.decode()
    other_page = alice_en.get(reverse("job-detail", args=[other.public_id])).content.decode()
    no_javascript = alice_en.post(reverse("job-delete", args=[job.public_id])).content.decode()

    assert f'id="job-delete-form" data-confirm="{asked}' in page
    assert asked not in other_page and "Delete this job?" in other_page
    assert f'id="delete-question">{asked}' in no_javascript
    assert status_of(job) == JobStatus.QUEUED  # asked, nothing done


@pytest.mark.usefixtures("kubernetes_settings")
def test_a_second_delete_of_a_job_looked_for_on_its_platform_says_it_is_looked_for(alice, alice_en):
    """The first Delete of a job queued again after a create with no clear answer stops it
    and keeps it (Stopping: the worker looks for what the create made). Pressed again, until
    left47 Delete said the job was "being sent to its platform right now", which it is not."""
    from jobs.backends.kubernetes import UNANSWERED_EVENT
    from jobs.services import job_event

    job = submit(alice, name="unsettled")
    Job.objects.filter(pk=job.pk).update(backend="kubernetes", external_id="")
    job_event(job=job, reason=UNANSWERED_EVENT, message="no answer", warning=True)
    delete = reverse("job-delete", args=[job.public_id])

    first = alice_en.post(delete, {"confirmed": "1"}, follow=True).content.decode()
    assert status_of(job) == JobStatus.STOPPING
    again = alice_en.post(delete, {"confirmed": "1"}, follow=True).content.decode()
    alice_en.cookies["django_language"] = "zh-hans"
    chinese = alice_en.post(delete, {"confirmed": "1"}, follow=True).content.decode()

    assert "The job was stopped, not deleted" in first
    assert (
        "The job is being looked for on its platform: a create of it got no clear answer, so "
        "the platform may have made it. The worker stops it there if it finds it; delete the "
        "job again once it has stopped."
    ) in again
    assert "being sent to its platform" not in again
    assert "正在平台上查找该任务" in chinese
    assert status_of(job) == JobStatus.STOPPING  # kept, until the worker has settled it


@pytest.mark.usefixtures("kubernetes_settings")
def test_a_job_delete_keeps_as_looked_for_says_so_before_it_is_asked_with_and_without_javascript(
    alice, alice_en
):
    """Once the first Delete has stopped and kept a job whose create got no clear answer, a
    Delete again keeps it while the worker looks for what the create made. Until left48 the
    job page asked "Delete this job?" of it, and the refusal came only after the answer."""
    from jobs.backends.kubernetes import UNANSWERED_EVENT
    from jobs.services import job_event

    job = submit(alice, name="unsettled")
    Job.objects.filter(pk=job.pk).update(backend="kubernetes", external_id="")
    job_event(job=job, reason=UNANSWERED_EVENT, message="no answer", warning=True)
    detail = reverse("job-detail", args=[job.public_id])
    delete = reverse("job-delete", args=[job.public_id])
    alice_en.post(delete, {"confirmed": "1"})  # the first Delete: stopped and kept
    assert status_of(job) == JobStatus.STOPPING
    said = (
        "This job cannot be deleted yet: a create of it got no clear answer, so its platform "
        "may have made it, and the worker is looking for it there to stop it. Delete it again "
        "once it has stopped."
    )

    page = alice_en.get(detail).content.decode()
    live = alice_en.get(
        reverse("job-live", args=[job.public_id]), headers={"HX-Request": "true"}
    ).content.decode()
    no_javascript = alice_en.post(delete).content.decode()
    alice_en.cookies["django_language"] = "zh-hans"
    chinese = alice_en.get(detail).content.decode()

    assert f'id="job-delete-form" data-confirm="{said}"' in page
    assert f'id="job-delete-form" data-confirm="{said}"' in live  # the status refresh's too
    assert "Delete this job?" not in page and "Stop this job and keep it?" not in page
    assert f'id="delete-question">{said}' in no_javascript
    assert 'data-confirm="该任务暂不能删除' in chinese
    assert status_of(job) == JobStatus.STOPPING  # asked, nothing done


# -- qa92's copy edit of the job page ---------------------------------------------------------


def events_on_page(client: Client, job: Job, language: str) -> list[str]:
    """The events list's items as read: label, then message."""
    client.cookies["django_language"] = language
    page = client.get(reverse("job-detail", args=[job.public_id])).content.decode()
    items = re.search(r'<ol class="list-unstyled small" id="events">(.*?)</ol>', page, re.S)
    return [
        " ".join(re.sub(r"<[^>]+>", " ", item).split()[2:])  # after its date and time
        for item in re.findall(r"<li[^>]*>(.*?)</li>", items.group(1), re.S)
    ]


def test_a_quota_wait_says_its_number_of_cards_first_and_the_events_list_its_label_once(
    alice, alice_client
):
    # qa92: "Waiting for your quota · Waiting for your quota: your quota is 2 × cards of any
    # type": the label twice, and the number before a "×".
    from jobs.quotas import Excess, waiting_message
    from jobs.services import job_event

    job = submit(alice)
    over = Excess(card_type="", allowed=2, held=0, asked=3, jobs=False)
    one_type = Excess(card_type=CARD, allowed=1, held=1, asked=1, jobs=False)
    job_event(job=job, reason="QuotaExceeded", message=waiting_message(over))
    job_event(job=job, reason="QuotaExceeded", message=waiting_message(one_type))
    # As one was recorded before: its old message, said again in English.
    JobEvent.objects.create(
        job=job,
        reason="QuotaExceeded",
        message="等待配额：您的配额为 2 × 任意类型的卡，本任务申请 3 张，只有管理员提高配额后才会启动。",
        message_source={
            "key": "Waiting for your quota: your quota is %(allowed)s × %(card)s and this job "
            "asks for %(asked)s, so it starts only if an administrator raises the quota.",
            "params": {"allowed": 2, "card": {"term": "cards of any type"}, "asked": 3},
        },
    )

    assert events_on_page(alice_client, job, "zh-hans")[-3:] == [
        "等待配额 您的配额为任意类型的卡共 2 张，本任务申请 3 张，超出配额，只有管理员提高配额后才会"
        "启动。",
        f"等待配额 您的配额为 1 张 {S.card_shown(CARD)}；您运行中的任务已占用 1 张，本任务申请 1 张。您的其他任务"
        "结束后，本任务会自动启动。",
        "等待配额 您的配额为 2 × 任意类型的卡，本任务申请 3 张，只有管理员提高配额后才会启动。",
    ]
    assert events_on_page(alice_client, job, "en")[-3:] == [
        "Waiting for your quota your quota is 2 cards (any type) and this job asks for 3, so it "
        "starts only if an administrator raises the quota.",
        f"Waiting for your quota your quota is 1 {S.card_shown(CARD)} card; your running jobs hold 1 and this "
        "job asks for 1. It starts by itself when your other jobs end.",
        "Waiting for your quota your quota is 2 × cards of any type and this job asks for 3, so "
        "it starts only if an administrator raises the quota.",
    ]


def test_a_local_jobs_cards_read_as_a_list_alike_in_its_started_event_and_its_replicas_table(
    alice, alice_client
):
    # qa92: the event said "baidu.com/… [0, 1]" (a Python list), the table "0,1".
    job = submit(alice, roles=[S.Role("master", 1, accelerator_type=CARD, accelerators=2)])
    run_until(Worker(), lambda: status_of(job) in (JobStatus.RUNNING, JobStatus.SUCCEEDED))
    ids = JobReplica.objects.get(job=job).devices.split(",")
    assert len(ids) == 2
    # An event recorded before, with its cards as a Python list: still said in English.
    JobEvent.objects.create(
        job=job,
        reason="Started",
        message=f"已在本机启动，使用卡 {CARD} [0, 1]。",
        message_source={
            "key": "Started on this machine with cards %(cards)s.",
            "params": {"cards": {"words": [f"{CARD} [0, 1]"]}},
        },
    )

    chinese = events_on_page(alice_client, job, "zh-hans")
    english = events_on_page(alice_client, job, "en")

    # The card as people name it, the resource in brackets (qa113: the resource alone).
    shown = S.card_shown(CARD)
    assert shown == "A800 80GB (baidu.com/a800_80g_cgpu)"
    assert f"已启动 已在本机启动，使用 {shown}（卡 {ids[0]}、{ids[1]}）。" in chinese
    assert f"Started Started on this machine with {shown} (cards {ids[0]}, {ids[1]})." in english
    assert f"Started Started on this machine with cards {CARD} [0, 1]." in english
    alice_client.cookies["django_language"] = "zh-hans"
    zh_page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()
    alice_client.cookies["django_language"] = "en"
    en_page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()
    assert f"<td>{ids[0]}、{ids[1]}</td>" in zh_page
    assert f"<td>{ids[0]}, {ids[1]}</td>" in en_page


def test_the_summary_names_the_pool_kind_as_the_pools_page_does(alice, alice_client):
    # qa92: "后端 local", the backend's code.
    job = submit(alice)
    url = reverse("job-detail", args=[job.public_id])

    chinese = alice_client.get(url).content.decode()
    alice_client.cookies["django_language"] = "en"
    english = alice_client.get(url).content.decode()

    assert 'id="job-backend">本机运行器</dd>' in chinese
    assert 'id="job-backend">Local runner</dd>' in english


def test_a_rejected_job_says_how_to_send_it_again_and_one_pending_review_who_decides(
    alice, alice_client
):
    # qa92: a rejected job's page gave its reason and no next step; one pending review, no
    # word of what it waits for.
    rejected, pending = submit(alice, name="rejected"), submit(alice, name="pending")
    Job.objects.filter(pk=rejected.pk).update(status=JobStatus.REJECTED)
    Job.objects.filter(pk=pending.pk).update(status=JobStatus.PENDING_REVIEW)

    def next_step(job: Job, language: str) -> str:
        alice_client.cookies["django_language"] = language
        page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()
        return re.search(r'id="review-next">([^<]*)<', page).group(1)

    assert next_step(rejected, "en") == "Use Copy & edit to change it and submit again."
    assert next_step(rejected, "zh-hans") == "可用“复制”修改后重新提交。"
    assert next_step(pending, "en") == (
        "A reviewer must approve it before it is queued; the decision shows here."
    )
    assert next_step(pending, "zh-hans") == "须经审核人通过后才会进入排队；审核结果会显示在这里。"


def test_a_queue_tasks_note_says_its_submission_step_as_the_wizard_names_it(alice, alice_client):
    # qa92: "可在其“投递方式”一步修改".
    spec = make_spec("echo task")
    spec.submission = S.Submission(mode=S.SUBMIT_QUEUE, total=3, concurrency=1)
    group = jobs_submit(owner=alice, spec=spec, submit_key=str(uuid.uuid4()))

    page = alice_client.get(reverse("job-detail", args=[group[0].public_id])).content.decode()

    assert "最多同时运行 1 个，可在“投递方式”步骤中修改）" in page


def test_the_page_not_found_says_nothing_of_a_drafts_steps(alice_client):
    # qa92: the 404 of any address told how a discarded draft's step is kept; the page of
    # that step (wizard/gone.html) says so itself.
    page = alice_client.get("/jobs/pytorchjob-none/", headers={"Accept-Language": "en"})

    assert page.status_code == 404
    assert "There is nothing at this address" in page.content.decode()
    assert "draft's step" not in page.content.decode()
    chinese = alice_client.get("/jobs/pytorchjob-none/").content.decode()
    assert "任务和草稿仅其创建人可见" in chinese and "另存为新草稿" not in chinese
