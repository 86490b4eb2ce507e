"""The resource pools page (资源池): pools, cards, queues and their load, live by polling."""

from __future__ import annotations

import re
import uuid
from urllib.parse import urlencode

import pytest
from django.test import Client
from django.urls import reverse

from jobs import spec as S
from jobs import wizard as W
from jobs.backends import get_backend
from jobs.models import Draft, Job, JobStatus
from jobs.pools import OWN_JOBS_SHOWN
from jobs.services import jobs_submit
from tests.fake_aihc import FakeAihc, configure
from tests.fake_kubernetes import FakeKubernetes
from tests.fake_kubernetes import configure as configure_kubernetes

CARD = "baidu.com/a800_80g_cgpu"
AIHC_POOL = "cce-pool1"
POOLS = reverse("pool-list")
HTMX = {"HX-Request": "true"}


@pytest.fixture(autouse=True)
def local_pool(settings):
    settings.LOCAL_ACCELERATORS = f"{CARD}=8"
    settings.LOCAL_QUEUES = ["default", "research"]
    settings.LOCAL_VOLUMES = "scratch=/tmp/scratch"


@pytest.fixture
def fake(settings):
    fake = FakeAihc().start()
    fake.add_pool(
        AIHC_POOL, "百舸训练池", queues=("default", "urgent"), gpus={CARD: (32, 6)}, pfs="pfs-1"
    )
    configure(settings, fake)
    yield fake
    fake.stop()


def job_in(
    owner, *, name: str, queue: str = "default", status: str = JobStatus.QUEUED, cards: int = 1
) -> Job:
    spec = S.JobSpec(
        name=name,
        resource_pool_id="local",
        queue=queue,
        image="python:3.12",
        command="echo hi",
        roles=[S.Role("master", 1, accelerator_type=CARD, accelerators=cards)],
    )
    [job] = jobs_submit(owner=owner, spec=spec, submit_key=str(uuid.uuid4()))
    Job.objects.filter(pk=job.pk).update(status=status)
    job.status = status
    return job


def section(html: str, pool_id: str) -> str:
    """One pool's card on the page."""
    match = re.search(rf'<section[^>]*data-pool="{re.escape(pool_id)}".*?</section>', html, re.S)
    assert match, f"no section for {pool_id}"
    return match.group(0)


def queue_row(html: str, queue: str) -> dict[str, str]:
    row = re.search(rf'<tr data-queue="{re.escape(queue)}">(.*?)</tr>', html, re.S)
    assert row, f"no row for queue {queue}"
    cells = dict(re.findall(r'<td class="queue-(\w+)">(.*?)</td>', row.group(1), re.S))
    return {key: value.strip() for key, value in cells.items()}


def test_the_page_shows_the_local_pool_with_its_cards_queues_and_storage(alice_client):
    r = alice_client.get(POOLS, HTTP_ACCEPT_LANGUAGE="en")

    assert r.status_code == 200
    html = r.content.decode()
    local = section(html, "local")
    assert '<h2 class="h5 mb-1" id="pool-1-name">本机 Local</h2>' in local
    assert "Local runner" in local
    assert re.search(
        rf"A800 80GB \({re.escape(CARD)}\)</th>\s*<td class=\"card-idle\">8</td>", local
    )
    assert '<meter class="pool-meter" min="0" max="8" value="8"' in local
    assert "8 idle of 8" in local
    assert "Local disk" in local and "(hostpath)" not in local
    assert re.findall(r'<tr data-queue="([^"]+)"', local) == ["default", "research"]
    # The nav marks the page; the figures poll.
    assert re.search(
        r'class="nav-link text-nowrap active" aria-current="page"[^>]*id="nav-pools"', html
    )
    assert 'hx-get="/pools/" hx-trigger="every 5s"' in html


def test_the_card_tables_last_column_is_named_for_the_idle_of_total_it_holds(alice_client):
    # qa92: 空闲占比 ("Idle share") over "空闲 8 / 共 8", which is no share.
    chinese = section(alice_client.get(POOLS).content.decode(), "local")
    english = section(alice_client.get(POOLS, HTTP_ACCEPT_LANGUAGE="en").content.decode(), "local")

    assert '<th scope="col">空闲情况</th>' in chinese and "空闲占比" not in chinese
    # English keeps its short header: the meter beside the words is a share, and a phone's
    # width holds no longer one (tests/test_layout_browser.py).
    assert '<th scope="col">Idle share</th>' in english


def test_a_pool_without_cards_says_nothing_of_the_cards_your_jobs_hold_there(
    alice_client, settings
):
    settings.LOCAL_ACCELERATORS = ""

    local = section(alice_client.get(POOLS, HTTP_ACCEPT_LANGUAGE="en").content.decode(), "local")

    assert "This pool offers no cards" in local
    assert "hold 0 cards" not in local  # copy edit: it said so on a pool of no cards


def test_the_chinese_page_lists_storage_right_after_its_full_width_colon(alice_client):
    local = section(
        alice_client.get(POOLS, HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode(), "local"
    )

    assert "存储：本地盘" in local  # copy edit: "存储： 本地盘"
    assert "排队中（所有用户）" in local


def test_queues_count_every_users_jobs_but_name_only_the_viewers_own(alice, bob, alice_client):
    mine_running = job_in(alice, name="alice-running", status=JobStatus.RUNNING, cards=2)
    mine_waiting = job_in(alice, name="alice-waiting", queue="research")
    job_in(alice, name="alice-done", status=JobStatus.SUCCEEDED, cards=4)
    job_in(bob, name="bob-secret-running", status=JobStatus.RUNNING, cards=3)
    job_in(bob, name="bob-secret-stopping", status=JobStatus.STOPPING)
    job_in(bob, name="bob-secret-waiting-1", queue="research")
    job_in(bob, name="bob-secret-waiting-2", queue="research")
    job_in(bob, name="bob-secret-in-review", status=JobStatus.PENDING_REVIEW)

    html = alice_client.get(POOLS, HTTP_ACCEPT_LANGUAGE="en").content.decode()

    local = section(html, "local")
    default, research = queue_row(local, "default"), queue_row(local, "research")
    assert (default["running"], default["waiting"]) == ("3", "0")
    assert (research["running"], research["waiting"]) == ("0", "3")
    assert f'href="/jobs/{mine_running.public_id}/"' in default["own"]
    assert f'href="/jobs/{mine_waiting.public_id}/"' in research["own"]
    assert "alice-done" not in html
    # Cards held by Alice's running jobs: her 2, not Bob's 3 nor her finished job's 4.
    assert "Your running jobs here hold 2 cards." in local
    assert "bob-secret" not in html
    linked = set(re.findall(r'href="/jobs/([^/"]+)/"', html))
    assert linked == {mine_running.public_id, mine_waiting.public_id}


def test_bob_sees_alices_jobs_only_as_numbers(alice, bob):
    job_in(alice, name="alice-private", status=JobStatus.RUNNING)
    client = Client()
    client.force_login(bob)
    html = client.get(POOLS, HTTP_ACCEPT_LANGUAGE="en").content.decode()

    assert queue_row(section(html, "local"), "default")["running"] == "1"
    assert "alice-private" not in html
    assert Job.objects.get().public_id not in html
    assert "Your running jobs here hold 0 cards." in html


def test_the_htmx_poll_answers_with_the_figures_alone(alice, alice_client):
    job_in(alice, name="alice-waiting")

    r = alice_client.get(POOLS, headers=HTMX, HTTP_ACCEPT_LANGUAGE="en")

    html = r.content.decode()
    assert r.status_code == 200
    assert html.lstrip().startswith('<div id="pool-figures"')
    assert "<html" not in html and "navbar" not in html
    assert queue_row(html, "default")["waiting"] == "1"
    assert "HX-Request" in r["Vary"]


def test_the_page_and_its_poll_use_a_fixed_number_of_queries_however_many_jobs(
    alice, bob, alice_client, django_assert_num_queries
):
    # session, user, the local pool's cards in use, the jobs queued for them, the queues'
    # totals, the viewer's jobs, the viewer's quota (none: nothing held to read)
    with django_assert_num_queries(7):
        alice_client.get(POOLS)
    for i in range(12):
        job_in(alice, name=f"alice-{i}", queue=["default", "research"][i % 2])
        job_in(bob, name=f"bob-{i}", status=JobStatus.RUNNING, queue=["default", "research"][i % 2])
    job_in(alice, name="alice-gone-queue", queue="retired")

    # ...and, with jobs queued, whether any card quota exists (the idle cards are what the
    # queued jobs whose turn it is leave: jobs.scheduler.idle_for_new_jobs)
    with django_assert_num_queries(8):
        page = alice_client.get(POOLS)
    with django_assert_num_queries(8):
        alice_client.get(POOLS, headers=HTMX)

    assert queue_row(page.content.decode(), "research")["running"] == "6"


def test_the_viewer_sees_a_few_of_their_jobs_per_queue_and_a_link_to_the_rest(alice, alice_client):
    running = job_in(alice, name="alice-running", status=JobStatus.RUNNING)
    waiting = [job_in(alice, name=f"alice-waiting-{i}") for i in range(OWN_JOBS_SHOWN + 2)]

    html = alice_client.get(POOLS, HTTP_ACCEPT_LANGUAGE="en").content.decode()

    own = queue_row(section(html, "local"), "default")["own"]
    listed = re.findall(r'href="/jobs/([^/]+)/"', own)
    # Running first, then the oldest waiting ones; the rest are counted and linked.
    assert listed == [running.public_id, *(j.public_id for j in waiting[: OWN_JOBS_SHOWN - 1])]
    assert "and 3 more of yours" in own
    assert 'href="/?pool=local&amp;queue=default"' in own


def test_jobs_of_a_queue_the_pool_no_longer_offers_are_still_counted(alice, alice_client):
    job_in(alice, name="alice-retired", queue="retired", status=JobStatus.RUNNING)

    html = alice_client.get(POOLS, HTTP_ACCEPT_LANGUAGE="en").content.decode()

    local = section(html, "local")
    assert re.findall(r'<tr data-queue="([^"]+)"', local) == ["default", "research", "retired"]
    assert queue_row(local, "retired")["running"] == "1"
    assert "(no longer offered)" in local


def test_running_jobs_of_a_pool_the_console_no_longer_offers_are_counted_in_no_pool(
    alice, alice_client
):
    # Every pool's running and waiting jobs are read by status, and those of a pool not
    # offered are left out (jobs.pools): an AIHC pool, and a pool named as the local one
    # but of another backend.
    gone = job_in(alice, name="alice-gone", status=JobStatus.RUNNING)
    Job.objects.filter(pk=gone.pk).update(backend="aihc", resource_pool="cce-gone")
    other = job_in(alice, name="alice-other", status=JobStatus.RUNNING)
    Job.objects.filter(pk=other.pk).update(backend="kubernetes")

    html = alice_client.get(POOLS, HTTP_ACCEPT_LANGUAGE="en").content.decode()

    local = section(html, "local")
    assert 'data-pool="cce-gone"' not in html
    assert queue_row(local, "default")["running"] == "0"
    assert "alice-gone" not in html and "alice-other" not in html


# -- "Create job in this pool": ?pool= on the wizard's start ---------------------------


def test_creating_a_job_in_a_pool_starts_a_draft_on_step_one_with_that_pool(
    fake, alice, alice_client
):
    html = alice_client.get(POOLS).content.decode()
    assert f'action="/create/?pool={AIHC_POOL}"' in section(html, AIHC_POOL)

    r = alice_client.post(f"/create/?pool={AIHC_POOL}")

    draft = Draft.objects.get(owner=alice)
    assert r.status_code == 302 and r["Location"] == f"/create/{draft.id}/basic/"
    assert draft.data[W.BASIC]["resource_pool"] == [AIHC_POOL]
    assert draft.data[W.BASIC]["queue"] == ["default"]
    step = alice_client.get(r["Location"]).content.decode()
    assert re.search(rf'<option value="{AIHC_POOL}"[^>]*selected', step)


@pytest.mark.parametrize("pool", ["no-such-pool", "", "local\x00x", "x" * 5000])
def test_an_unknown_pool_is_ignored_and_the_draft_starts_in_the_first_pool(
    alice, alice_client, pool
):
    r = alice_client.post(f"{reverse('wizard-start')}?{urlencode({'pool': pool})}")
    page = alice_client.get(reverse("wizard-start"), {"pool": pool})

    assert r.status_code == 302
    assert Draft.objects.get(owner=alice).data[W.BASIC]["resource_pool"] == ["local"]
    assert page.status_code == 200
    assert 'action="/create/" class="mb-4"' in page.content.decode()
    assert "new-draft-pool" not in page.content.decode()


def test_the_start_page_keeps_the_pool_of_its_link_for_the_new_draft(fake, alice_client):
    html = alice_client.get(reverse("wizard-start"), {"pool": AIHC_POOL}).content.decode()

    assert f'action="/create/?pool={AIHC_POOL}"' in html
    assert "百舸训练池" in html


# -- remote pools --------------------------------------------------------------------------


def test_polling_reads_the_aihc_inventory_no_more_often_than_its_cache_allows(
    fake, alice, alice_client
):
    job_in(alice, name="alice-local")
    first = alice_client.get(POOLS, HTTP_ACCEPT_LANGUAGE="en").content.decode()
    for _ in range(10):
        alice_client.get(POOLS, headers=HTMX)

    aihc = section(first, AIHC_POOL)
    assert "AIHC" in aihc and "26 idle of 32" in aihc and "PFS" in aihc
    assert re.findall(r'<tr data-queue="([^"]+)"', aihc) == ["default", "urgent"]
    assert len(fake.calls("DescribeResourcePools")) == 1


def test_an_aihc_pool_that_cannot_be_read_shows_its_last_figures_their_age_and_why(
    fake, alice_client, settings
):
    alice_client.get(POOLS)
    settings.AIHC_CACHE_SECONDS = 0
    fake.fail_next("DescribeResourcePools", status=503, code="ServiceUnavailable", times=10)
    backend = get_backend("aihc")
    backend.pools()
    backend._inventory().join()
    settings.AIHC_CACHE_SECONDS = 60

    html = alice_client.get(POOLS, HTTP_ACCEPT_LANGUAGE="en").content.decode()

    aihc = section(html, AIHC_POOL)
    assert "26 idle of 32" in aihc
    assert re.search(r"Updated \d+ s ago", aihc)
    assert "ServiceUnavailable" in aihc and "pool-error" in aihc


def test_an_aihc_pools_error_read_by_the_background_refresh_is_said_in_each_readers_language(
    fake, alice_client, settings
):
    # qa112: the refresh thread worded the error in the console's language (Chinese by
    # default), and the pool page in English showed "无法读取百舸 AIHC 资源信息：…".
    alice_client.get(POOLS)
    settings.AIHC_CACHE_SECONDS = 0
    fake.fail_next("DescribeResourcePools", status=503, code="ServiceUnavailable", times=10)
    backend = get_backend("aihc")
    backend.pools()
    backend._inventory().join()  # the read failed in its own thread, under zh-hans
    settings.AIHC_CACHE_SECONDS = 60

    english = section(
        alice_client.get(POOLS, HTTP_ACCEPT_LANGUAGE="en").content.decode(), AIHC_POOL
    )
    chinese = section(
        alice_client.get(POOLS, HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode(), AIHC_POOL
    )

    assert "AIHC inventory could not be read: " in english and "无法读取" not in english
    assert "无法读取百舸 AIHC 资源信息：" in chinese


@pytest.fixture
def kubernetes(settings):
    fake = FakeKubernetes().start()
    fake.add_namespace("ml")
    fake.add_node("gpu-1", {"nvidia.com/gpu": "8"})
    fake.add_pod("ml", "other", node="gpu-1", requests={"nvidia.com/gpu": "5"})
    configure_kubernetes(
        settings,
        fake,
        KUBERNETES_NAMESPACES="ml",
        KUBERNETES_QUEUES="gpu-queue",
        KUBERNETES_ACCELERATORS=f"{CARD}=nvidia.com/gpu",
    )
    yield fake
    fake.stop()


def test_polling_reads_the_kubernetes_inventory_no_more_often_than_its_cache_allows(
    kubernetes, alice_client
):
    first = alice_client.get(POOLS, HTTP_ACCEPT_LANGUAGE="en").content.decode()
    for _ in range(10):
        alice_client.get(POOLS, headers=HTMX)

    pool = section(first, "k8s-ml")
    assert "Kubernetes" in pool and "3 idle of 8" in pool
    assert re.findall(r'<tr data-queue="([^"]+)"', pool) == ["gpu-queue"]
    assert len(kubernetes.calls("list nodes")) == len(kubernetes.calls("list pods")) == 1


def test_each_task_of_a_queue_group_says_which_task_it_is(alice, alice_client):
    spec = S.JobSpec(
        name="qa-grp",
        resource_pool_id="local",
        image="python:3.12",
        command="echo hi",
        roles=[S.Role("master", 1, accelerator_type=CARD, accelerators=1)],
        submission=S.Submission(mode=S.SUBMIT_QUEUE, total=3, concurrency=1),
    )
    tasks = jobs_submit(owner=alice, spec=spec, submit_key="grp")

    html = alice_client.get(POOLS, HTTP_ACCEPT_LANGUAGE="en").content.decode()

    # The three share a name; as on the job list, each link is followed by its task's number.
    own = queue_row(section(html, "local"), "default")["own"]
    shown = re.findall(
        r'href="/jobs/([^/]+)/"[^>]*>qa-grp</a> <span[^>]*group-task[^>]*>(\d+/\d+)<', own
    )
    assert shown == [(task.public_id, f"{task.group_index}/3") for task in tasks]
    assert [index for _, index in shown] == ["1/3", "2/3", "3/3"]
