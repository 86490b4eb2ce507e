"""The wizard with a remote (AIHC) pool: stale inventory says how old it is, the review
shows exactly the request the pool's backend sends (v1 or v2), secrets masked, and a mount
row's volume follows its storage type."""

from __future__ import annotations

import html
import json
import re
import shlex

import pytest
from django.urls import reverse
from django.utils import translation

from jobs import forms as F
from jobs import wizard as W
from jobs.aihc.mapping import v2_from_v1
from jobs.backends import get_backend
from jobs.backends.base import Pool, Volume
from jobs.models import Job
from tests.fake_aihc import FakeAihc, configure
from tests.test_wizard import (
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

A800 = "baidu.com/a800_80g_cgpu"
POOL = "cce-pool1"
STALE_NOTE = re.compile(r"数据更新于 \d+ 秒前")


@pytest.fixture
def fake(settings):
    fake = FakeAihc().start()
    fake.add_pool(POOL, "百舸训练池", queues=("default",), gpus={A800: (32, 6)}, pfs="pfs-7xWeAt")
    configure(settings, fake)
    yield fake
    fake.stop()


def aihc_steps() -> dict:
    return {
        W.BASIC: basic_data(resource_pool=POOL),
        W.IMAGE: image_data(envs=[("LR", "3e-4"), ("HF_TOKEN", "hf-very-secret", True)]),
        W.RESOURCES: resources_data(roles=[role("master", 1, A800, 8), role("worker", 1, A800, 8)]),
        W.DATA: data_data(mounts=(("pfs", "pfs-7xWeAt", "/mnt/cluster"),)),
    }


def idle_url(draft) -> str:
    return reverse("wizard-idle", args=[draft.id])


IDLE_QUERY = {
    "row": "0",
    "roles-0-use_accelerator": "on",
    "roles-0-accelerator_type": A800,
    "roles-0-accelerators": "8",
    "roles-0-replicas": "1",
}


def make_aihc_fail(fake, settings) -> None:
    """AIHC starts answering 503: the backend keeps serving the last pools, marked stale."""
    aihc = get_backend("aihc")
    settings.AIHC_CACHE_SECONDS = 0
    fake.fail_next("DescribeResourcePools", status=503, code="ServiceUnavailable", times=50)
    aihc.pools()
    aihc._inventory().join()
    settings.AIHC_CACHE_SECONDS = 60


# -- stale inventory ------------------------------------------------------------------------


def test_fresh_aihc_figures_carry_no_age_note(fake, alice_client):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.RESOURCES, **aihc_steps())

    page = alice_client.get(step_url(draft, W.RESOURCES)).content.decode()
    idle = alice_client.get(idle_url(draft), IDLE_QUERY).content.decode()

    assert "26" in idle
    assert not STALE_NOTE.search(page) and not STALE_NOTE.search(idle)


def test_a_failing_aihc_shows_the_age_of_the_last_figures_and_the_error(
    fake, alice_client, settings
):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.RESOURCES, **aihc_steps())
    make_aihc_fail(fake, settings)

    page = alice_client.get(step_url(draft, W.RESOURCES))
    idle = alice_client.get(idle_url(draft), IDLE_QUERY, headers={"HX-Request": "true"})

    assert page.status_code == idle.status_code == 200
    stock = page.content.decode()
    stock = stock[stock.index('id="pool-stock"') :]
    stock = stock[: stock.index("</p>")]
    assert "26" in stock and STALE_NOTE.search(stock) and "ServiceUnavailable" in stock
    idle_html = idle.content.decode()
    assert "26" in idle_html  # the last known value is still shown...
    assert STALE_NOTE.search(idle_html)  # ...with its age beside it
    assert "ServiceUnavailable" in idle_html  # the error, as the note's title


def test_the_submission_and_review_steps_say_the_idle_figures_are_old(fake, alice_client, settings):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, **aihc_steps())
    make_aihc_fail(fake, settings)

    submission = alice_client.get(step_url(draft, W.SUBMISSION)).content.decode()
    review = alice_client.get(step_url(draft, W.REVIEW)).content.decode()

    fit = submission[submission.index('id="fit-now"') :]
    assert STALE_NOTE.search(fit) and "ServiceUnavailable" in fit
    fit = review[review.index('id="review-fit"') :]
    assert STALE_NOTE.search(fit[: fit.index("</section>")])


def test_a_slow_aihc_is_marked_stale_without_an_error(fake, alice_client, settings):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.RESOURCES, **aihc_steps())
    aihc = get_backend("aihc")
    aihc._inventory().join()
    settings.AIHC_CACHE_SECONDS = 0
    release = fake.block_next("DescribeResourcePools")
    try:
        assert aihc.pools()[0].stale
        idle = alice_client.get(idle_url(draft), IDLE_QUERY).content.decode()
    finally:
        release.set()
        aihc._inventory().join()

    assert "26" in idle and STALE_NOTE.search(idle)
    assert "title=" not in idle  # no error to show, only the age


# -- the request that will be sent ------------------------------------------------------------


def review_request(client, draft) -> tuple[str, str, dict, str]:
    page = client.get(step_url(draft, W.REVIEW)).content.decode()
    line = re.search(r'id="request-line">([^<]*)<', page).group(1)
    body = re.search(r'id="request-json">(.*?)</pre>', page, re.S).group(1)
    curl = re.search(r'id="request-curl">(.*?)</pre>', page, re.S).group(1)
    return page, line, json.loads(html.unescape(body)), curl


# Before the job exists the review shows its id label with a placeholder (see AihcBackend).
PREVIEW_LABEL = {"key": "ai-job-console/job-id", "value": "<job-id>"}


def test_a_v1_aihc_pool_previews_the_v1_create_request_with_secrets_masked(fake, alice_client):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, **aihc_steps())

    page, line, body, curl = review_request(alice_client, draft)

    draft.refresh_from_db()
    spec = W.assemble(W.wizard_state(draft)).spec
    assert line == f"POST /api/v1/aijobs?resourcePoolId={POOL}"
    assert body == {**spec.to_v1_body(masked=True), "labels": [PREVIEW_LABEL]}
    assert {"name": "HF_TOKEN", "value": "******"} in body["jobSpec"]["envs"]
    assert "hf-very-secret" not in page
    assert f"{fake.url}/api/v1/aijobs?resourcePoolId={POOL}" in curl
    assert "X-API-Version" not in page
    # AIHC's request, to AIHC: not said to be for this console's API, as the local pool's is.
    assert 'id="request-console-api-note"' not in page


def test_a_v2_aihc_pool_previews_the_action_style_request_it_really_sends(
    fake, alice_client, settings
):
    settings.AIHC_POOL_API_VERSIONS = {POOL: "v2"}
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, **aihc_steps())

    page, line, body, curl = review_request(alice_client, draft)

    draft.refresh_from_db()
    spec = W.assemble(W.wizard_state(draft)).spec
    assert line == f"POST /?action=CreateJob&amp;queueID=default&amp;resourcePoolId={POOL}"
    v2 = v2_from_v1(spec.to_v1_body(masked=True), roles=spec.roles)
    assert body == {**v2, "labels": [PREVIEW_LABEL]}
    assert body["jobType"] == "PyTorchJob" and "jobFramework" not in body
    assert "X-API-Version: v2" in page[page.index('id="request-headers"') :]
    assert "hf-very-secret" not in page
    assert "-H &#x27;X-API-Version: v2&#x27;" in curl
    assert f"{fake.url}/?action=CreateJob&amp;queueID=default&amp;resourcePoolId={POOL}" in curl


def test_the_preview_matches_what_the_backend_submits(fake, alice_client, settings):
    """What the review shows is what AIHC receives (apart from the masked secret)."""
    settings.AIHC_POOL_API_VERSIONS = {POOL: "v2"}
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, **aihc_steps())
    _page, _line, shown, _curl = review_request(alice_client, draft)

    r = alice_client.post(reverse("wizard-submit", args=[draft.id]))
    assert r.status_code == 302
    from jobs.models import Job

    job = Job.objects.get()
    get_backend("aihc").submit(job)

    [call] = fake.calls("CreateJob")
    assert call.version == "v2"
    assert call.params == {"action": "CreateJob", "resourcePoolId": POOL, "queueID": "default"}
    sent = json.loads(
        json.dumps(call.body).replace("hf-very-secret", "******").replace(job.public_id, "<job-id>")
    )
    assert sent == shown


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_an_aihc_pool_takes_a_shared_memory_other_than_10_gi_and_sends_it(
    fake, alice_client, settings, version
):
    # As the RDMA help says ("a size other than 10Gi above is sent too"), and as AIHC's own
    # console lets it be changed (seed 000: 共享内存 ... 可以按需修改).
    settings.AIHC_POOL_API_VERSIONS = {POOL: version}
    draft = new_draft(alice_client)
    steps = aihc_steps()
    steps[W.RESOURCES] = {**steps[W.RESOURCES], "shared_memory_gi": "64", "enable_rdma": "on"}
    complete_steps(alice_client, draft, **steps)

    r = alice_client.post(reverse("wizard-submit", args=[draft.id]))
    assert r.status_code == 302
    job = Job.objects.get()
    get_backend("aihc").submit(job)

    [call] = fake.calls("CreateJob")
    assert call.status == 200
    assert {"name": "sharedMemory", "quantity": 64} in call.body["jobSpec"]["resources"]


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_the_curl_sends_the_bytes_the_console_sends_to_the_same_url(
    fake, alice_client, settings, version
):
    settings.AIHC_POOL_API_VERSIONS = {POOL: version}
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, **aihc_steps())
    _page, _line, _shown, curl = review_request(alice_client, draft)
    args = shlex.split(html.unescape(curl).replace("\\\n", " "))
    url, headers = args[3], [args[i + 1] for i, a in enumerate(args) if a == "-H"]
    data = args[args.index("--data-raw") + 1]

    assert alice_client.post(reverse("wizard-submit", args=[draft.id])).status_code == 302
    get_backend("aihc").submit(Job.objects.get())

    [call] = fake.calls("CreateJob")
    job_id = Job.objects.get().public_id  # the review's placeholder, filled in on submit
    sent = call.raw_body.decode().replace("hf-very-secret", "******").replace(job_id, "<job-id>")
    assert data == sent
    assert url == f"{fake.url}{call.path}?{call.raw_query}"
    signed = call.headers["authorization"].split("/")[4]
    assert f"Authorization: bce-auth-v1/<access key>/<timestamp>/1800/{signed}/<signature>" in (
        headers
    )
    for header in headers[:-2]:
        name, _, value = header.partition(": ")
        assert call.headers[name.lower()] == value
    assert headers[-2] == "x-bce-date: <timestamp>"


# -- alerts through AIHC's notify policy ---------------------------------------------------


def test_an_aihc_pool_takes_its_alerts_monitoring_instance_and_notify_policy_in_the_wizard(
    fake, alice_client
):
    """AIHC sends alerts only through a notify policy of the pool's monitoring instance: the
    advanced step asks for both IDs, and they reach the create body AIHC receives."""
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.ADVANCED, **aihc_steps())
    page = alice_client.get(step_url(draft, W.ADVANCED)).content.decode()
    assert 'name="alert_instance_id"' in page and 'name="alert_notify_rule_id"' in page

    data = advanced_data(
        alert_items=["jobFailed", "jobSucceed"],
        alert_instance_id="cprom-abc123",
        alert_notify_rule_id="notify-xyz789",
    )
    r = alice_client.post(step_url(draft, W.ADVANCED), data)
    assert r.status_code == 302, re.findall(r"invalid-feedback[^>]*>([^<]+)", r.content.decode())
    complete_steps(
        alice_client, draft, **aihc_steps(), **{W.ADVANCED: data, W.SUBMISSION: submission_data()}
    )
    r = alice_client.post(reverse("wizard-submit", args=[draft.id]))
    assert r.status_code == 302
    get_backend("aihc").submit(Job.objects.get())
    [call] = fake.calls("CreateJob")
    assert call.body["alertConfig"] == {
        "alertItems": ["jobFailed", "jobSucceed"],
        "instanceId": "cprom-abc123",
        "notifyRuleId": "notify-xyz789",
    }


def test_an_aihc_alert_without_its_ids_asks_for_them_and_not_for_an_email(fake, alice_client):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.ADVANCED, **aihc_steps())
    r = alice_client.post(
        step_url(draft, W.ADVANCED),
        advanced_data(alert_items=["jobFailed"], alert_instance_id="cprom-abc123"),
    )
    page = html.unescape(r.content.decode())
    assert r.status_code == 200
    assert "the notify policy that sends them" in page or "发送告警的通知策略" in page
    assert 'id="id_alert_notify_rule_id_error"' in page
    assert "would reach nobody" not in page and "这些告警没有接收方" not in page


def test_the_local_pool_asks_for_no_aihc_alert_ids(alice_client, settings, tmp_path):
    settings.LOCAL_ACCELERATORS = f"{A800}=8"
    settings.LOCAL_VOLUMES = f"scratch={tmp_path}"
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.ADVANCED)
    page = alice_client.get(step_url(draft, W.ADVANCED)).content.decode()
    assert 'name="alert_instance_id"' not in page
    assert 'name="alert_notify_rule_id"' not in page


# -- what AIHC injects ----------------------------------------------------------------------

# The local runner sets these too; AIHC's 通用环境变量列表 does not list them.
LOCAL_RUNNER_ONLY = ("AIHC_JOB_ID", "AIHC_ROLE", "AIHC_ROLE_INDEX", "PYTHONUNBUFFERED")


def test_an_aihc_pool_lists_only_the_variables_aihc_injects(fake, alice_client):
    """A script that read AIHC_ROLE because the wizard promised it would find it unset on
    AIHC: the image step and the review list what AIHC documents injecting, no more."""
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.IMAGE, **aihc_steps())
    image_page = alice_client.get(step_url(draft, W.IMAGE)).content.decode()
    injected = re.search(r'id="injected-vars">(.*?)</table>', image_page, re.S).group(1)
    assert "AIHC_JOB_NAME" in injected and "MASTER_ADDR" in injected
    complete_steps(alice_client, draft, **aihc_steps())
    review = alice_client.get(step_url(draft, W.REVIEW)).content.decode()
    envs = re.search(r'id="env-preview">(.*?)</section>', review, re.S).group(1)
    assert "AIHC_JOB_NAME=llm-train" in envs and "MASTER_ADDR=llm-train-master-0" in envs
    for name in LOCAL_RUNNER_ONLY:
        assert name not in injected, name
        assert f"{name}=" not in envs, name


def test_an_aihc_pools_image_step_lists_the_queue_tasks_variables_the_console_sends(
    fake, alice_client
):
    # A queue task sent to AIHC gets AIHC_GROUP_TASK_INDEX/TOTAL in its envs (as the review's
    # preview says): the image step's list names them there too, not on the local pool only.
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.IMAGE, **aihc_steps())
    image_page = alice_client.get(step_url(draft, W.IMAGE)).content.decode()
    injected = re.search(r'id="injected-vars">(.*?)</table>', image_page, re.S).group(1)
    assert "AIHC_GROUP_TASK_INDEX" in injected and "AIHC_GROUP_TASK_TOTAL" in injected


def test_an_aihc_pool_offers_no_mpich_example_whose_hostfile_only_the_local_runner_sets(
    fake, alice_client
):
    # $HYDRA_HOST_FILE is the local runner's (its hostfile.hydra): on AIHC, as on the MPI
    # operator's OpenMPI hostfile, `mpiexec.hydra -f $HYDRA_HOST_FILE` took -genvlist for the
    # hostfile. The image step's list of variables does not name it there either.
    steps = {**aihc_steps(), W.BASIC: basic_data(resource_pool=POOL, framework="MPIJob")}
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.IMAGE, **steps)

    page = alice_client.get(step_url(draft, W.IMAGE)).content.decode()
    panel = alice_client.get(
        reverse("wizard-example", args=[draft.id]), {"example": "MPIJob-hydra"}
    ).content.decode()
    r = post_step(
        alice_client,
        draft,
        W.IMAGE,
        image_data(command="keep me"),
        action="fill-example-MPIJob-hydra",
    )

    assert r.status_code == 302
    assert "show-example-MPIJob-hydra" not in page
    assert 'value="show-example-MPIJob"' in page  # OpenMPI's, which AIHC's hostfile is for
    assert "HYDRA_HOST_FILE" not in page and "HYDRA_HOST_FILE" not in panel
    draft.refresh_from_db()
    assert draft.data[W.IMAGE]["command"] == ["keep me"]


# -- a mount row's volume follows its storage type -------------------------------------------

PFS = "pfs-7xWeAt"


def options(page: str, name: str) -> list[str]:
    """The values a select offers, and the selected one last (None when none is)."""
    select = re.search(rf'<select name="{name}".*?</select>', page, re.S).group(0)
    chosen = re.findall(r'<option value="([^"]*)"[^>]*selected', select)
    return re.findall(r'<option value="([^"]*)"', select) + [chosen[0] if chosen else None]


def typed_row(kind: str, volume: str) -> dict:
    return {
        "row": "1",
        "mounts-1-type": kind,
        "mounts-1-name": volume,
        "mounts-1-source_path": "/ssd1/data",
        "mounts-1-mount_path": "/mnt/data",
        "mounts-1-access": "ro",
    }


@pytest.mark.parametrize("htmx", [True, False])
def test_switching_a_mount_rows_type_offers_that_types_volumes_and_keeps_what_was_typed(
    fake, alice_client, htmx
):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.DATA, **aihc_steps())
    url = reverse("wizard-mount-row", args=[draft.id])
    headers = {"HX-Request": "true"} if htmx else {}

    to_disk = alice_client.get(url, typed_row("hostpath", PFS), headers=headers)
    back_to_pfs = alice_client.get(url, typed_row("pfs", ""), headers=headers)

    assert to_disk.status_code == back_to_pfs.status_code == 200
    disk = to_disk.content.decode()
    assert "<html" not in disk and disk.lstrip().startswith("<tr")
    assert options(disk, "mounts-1-name") == ["", ""]  # 本地盘 has no volume to choose
    assert options(disk, "mounts-1-type")[-1] == "hostpath"
    assert 'value="/ssd1/data"' in disk and 'value="/mnt/data"' in disk
    assert options(disk, "mounts-1-access")[-1] == "ro"
    assert 'value="remove-row-1"' in disk  # still the second row, removable
    # PFS has one volume: it is picked.
    assert options(back_to_pfs.content.decode(), "mounts-1-name") == ["", PFS, PFS]


def test_the_data_step_page_wires_each_rows_type_to_the_row_partial(fake, alice_client):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.DATA, **aihc_steps())

    page = alice_client.get(step_url(draft, W.DATA)).content.decode()

    select = re.search(r'<select name="mounts-0-type"[^>]*>', page).group(0)
    assert f'hx-get="{reverse("wizard-mount-row", args=[draft.id])}?row=0"' in select
    assert 'hx-target="closest tr"' in select and 'hx-include="closest tr"' in select


def test_the_data_step_says_why_pfs_is_missing_on_a_pool_without_it_and_only_there(
    fake, alice, client, settings, tmp_path
):
    # Seed 000: 存储类型 可选择“本地盘”或“PFS”. A pool that offers no PFS says so, the local
    # pool with what it mounts instead.
    settings.LOCAL_ACCELERATORS = f"{A800}=8"
    settings.LOCAL_VOLUMES = f"scratch={tmp_path}"
    fake.add_pool("cce-nopfs", "无 PFS 的池", gpus={A800: (8, 0)})
    client.force_login(alice)
    english = {"Accept-Language": "en"}
    pages = {}
    for pool in (POOL, "cce-nopfs", "local"):
        draft = new_draft(client)
        steps = {W.BASIC: basic_data(resource_pool=pool)}
        if pool == POOL:
            steps = aihc_steps()
        complete_steps(client, draft, upto=W.DATA, **steps)
        pages[pool] = client.get(step_url(draft, W.DATA), headers=english).content.decode()

    assert 'id="no-pfs-help"' not in pages[POOL]
    assert "No PFS here: this resource pool has no PFS file system to mount." in pages["cce-nopfs"]
    assert (
        "No PFS here: the local pool mounts folders of this machine (local disk) that its "
        "administrator offers." in pages["local"]
    )


def test_a_storage_type_the_pool_cannot_mount_lists_those_it_can_in_the_readers_words(
    fake, alice_client
):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.DATA, **aihc_steps())

    r = post_step(alice_client, draft, W.DATA, data_data(mounts=(("nfs", "", "/mnt/x"),)))

    # qa82: the types were joined with an ASCII ", " in Chinese too.
    assert field_errors(r, "id_mounts-0-type") == [
        "该资源池不能挂载“nfs”存储，可挂载：PFS、本地盘。"
    ]


def test_an_import_to_a_pool_not_offered_lists_the_pools_offered_in_the_readers_words(
    fake, alice_client
):
    from tests.test_wizard_import import BODY, error_texts, import_body

    body = {**BODY, "resourcePoolId": "no-such-pool"}

    chinese = error_texts(import_body(alice_client, body, pool=""))

    offered = "、".join(f"{p.id} ({p.name})" for p in W.available_pools())
    assert len(W.available_pools()) > 1
    assert f"资源池“no-such-pool”不可用。可用的资源池：{offered}。" in chinese


def test_without_javascript_a_volume_of_another_type_is_dropped_and_the_row_shown_again(
    fake, alice_client
):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.DATA, **aihc_steps())
    mounts = (("pfs", PFS, "/mnt/cluster"), ("hostpath", PFS, "/mnt/data"))
    typed = data_data(mounts=mounts, **{"mounts-1-source_path": "/ssd1/data"})
    typed["mounts-1-access"] = "ro"

    shown = post_step(alice_client, draft, W.DATA, typed)
    page = shown.content.decode()
    again = post_step(
        alice_client,
        draft,
        W.DATA,
        {**typed, "mounts-1-name": options(page, "mounts-1-name")[-1] or ""},
    )

    assert shown.status_code == 200
    [message] = field_errors(shown, "id_mounts-1-name")
    assert PFS in message and "本地盘" in message
    assert options(page, "mounts-1-name") == ["", ""]
    assert options(page, "mounts-1-type")[-1] == "hostpath"
    assert 'value="/ssd1/data"' in page and 'value="/mnt/data"' in page
    assert options(page, "mounts-1-access")[-1] == "ro"
    assert options(page, "mounts-0-name")[-1] == PFS  # the other row is untouched
    assert again.status_code == 302 and again["Location"] == step_url(draft, W.FAULT)


def test_a_mount_form_offers_only_its_types_volumes_and_refits_a_volume_of_another_type():
    pool = Pool(
        id="p",
        name="p",
        backend="aihc",
        volumes=[Volume("pfs", "pfs-a"), Volume("pfs", "pfs-b"), Volume("hostpath", "disk")],
        storage_types=["pfs", "hostpath"],
    )

    def row(kind: str, volume: str) -> F.MountForm:
        data = {"m-type": kind, "m-name": volume, "m-mount_path": "/mnt", "m-access": "rw"}
        return F.MountForm(data, prefix="m", pool=pool)

    with translation.override("en"):
        to_disk, to_pfs, kept = row("hostpath", "pfs-a"), row("pfs", "disk"), row("pfs", "pfs-b")
        assert not to_disk.is_valid() and not to_pfs.is_valid() and kept.is_valid()
        # The only local-disk volume is picked; of two PFS volumes neither is guessed.
        assert to_disk["name"].value() == "disk"
        assert "disk" in to_disk.errors["name"][0] and "pfs-a" in to_disk.errors["name"][0]
        assert to_pfs["name"].value() == ""
        assert "disk" in to_pfs.errors["name"][0]
    assert [v for v, _label in to_pfs.fields["name"].choices] == ["", "pfs-a", "pfs-b"]
    assert [v for v, _label in to_disk.fields["name"].choices] == ["", "disk"]
    assert kept.cleaned_data["name"] == "pfs-b"
    assert to_disk["mount_path"].value() == "/mnt"


def test_a_mount_rows_volumes_are_named_without_the_type_already_chosen_beside_them():
    pool = Pool(
        id="p",
        name="p",
        backend="aihc",
        volumes=[Volume("pfs", "pfs-a", "cn-bj"), Volume("hostpath", "disk")],
        storage_types=["pfs", "hostpath"],
    )
    data = {"m-type": "pfs", "m-name": "pfs-a", "m-mount_path": "/mnt", "m-access": "rw"}

    with translation.override("zh-hans"):
        pfs_row = F.MountForm(data, prefix="m", pool=pool)
        disk_row = F.MountForm(
            {**data, "m-type": "hostpath", "m-name": "disk"}, prefix="m", pool=pool
        )
        untyped = F.MountForm({**data, "m-type": "nas"}, prefix="m", pool=pool)
        pfs_labels = [str(label) for _value, label in pfs_row.fields["name"].choices]
        disk_labels = [str(label) for _value, label in disk_row.fields["name"].choices]
        untyped_labels = [str(label) for _value, label in untyped.fields["name"].choices]

    # Short enough for the row's select: the name and the volume's own label, no type twice.
    assert pfs_labels == ["—", "pfs-a (cn-bj)"]
    assert disk_labels == ["—", "disk"]
    # A type the pool does not offer lists every volume, and there each says its type.
    assert untyped_labels == ["—", "pfs-a (PFS, cn-bj)", "disk (本地盘)"]


def test_a_long_volume_name_or_path_is_shortened_in_the_middle_and_kept_whole_in_its_title():
    pool = Pool(
        id="local",
        name="本机 Local",
        backend="local",
        volumes=[
            Volume("hostpath", "scratch", "/mnt/team-a/projects/llm/datasets/imagenet-train"),
            Volume("hostpath", "ckpt", "/mnt/team-a/projects/llm/checkpoints/run-42"),
            Volume("hostpath", "训练数据集的一个很长很长的名字", "/d"),
            Volume("hostpath", "home", "/home"),
        ],
        storage_types=["hostpath"],
    )
    data = {"m-type": "hostpath", "m-name": "scratch", "m-mount_path": "/mnt", "m-access": "rw"}

    row = F.MountForm(data, prefix="m", pool=pool)

    # Each fits 24 columns (a Chinese character is two): both ends of a path stay, the name whole.
    assert dict(row.fields["name"].choices) == {
        "": "—",
        "scratch": "scratch (/mnt/…et-train)",
        "ckpt": "ckpt (/mnt/t…nts/run-42)",
        "训练数据集的一个很长很长的名字": "训练数据…很长的名字 (/d)",
        "home": "home (/home)",
    }
    select = str(row["name"])
    assert 'title="scratch (/mnt/team-a/projects/llm/datasets/imagenet-train)" selected' in select
    assert '<option value="home">' in select  # shown whole: no title
    # The chosen one is written out under the select; the value is still the volume's name.
    assert row.volume_full == "scratch (/mnt/team-a/projects/llm/datasets/imagenet-train)"
    assert row.is_valid() and row.cleaned_data["name"] == "scratch"
    assert F.MountForm({**data, "m-name": "home"}, prefix="m", pool=pool).volume_full == ""


def test_two_pools_sharing_a_name_are_told_apart_by_their_id_on_the_first_step(fake, alice_client):
    fake.add_pool("cce-pool2", "百舸训练池", queues=("default",), gpus={A800: (8, 0)})
    draft = new_draft(alice_client)

    page = alice_client.get(step_url(draft, W.BASIC)).content.decode()

    select = re.search(r'<select name="resource_pool".*?</select>', page, re.S).group(0)
    assert re.findall(r'<option value="([^"]*)"[^>]*>([^<]*)</option>', select) == [
        ("local", "本机 Local"),
        (POOL, f"百舸训练池 ({POOL})"),
        ("cce-pool2", "百舸训练池 (cce-pool2)"),
    ]


def help_under(page: str, field: str) -> str:
    found = re.search(rf'id="id_{field}_helptext"[^>]*>([^<]*)<', page)
    assert found, f"no help under {field}"
    # Up to the help's own end: a 详见帮助 link may follow it, after a space in English.
    return html.unescape(found.group(1)).rstrip()


def test_an_aihc_pools_hang_and_retry_help_says_aihcs_fault_tolerance_decides(fake, alice_client):
    # review59: the help told of the local pool's restarts ("fails once they are used up") on
    # an AIHC pool, where AIHC's fault tolerance decides what a hang does.
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.FAULT, **aihc_steps())

    chinese = alice_client.get(step_url(draft, W.FAULT)).content.decode()
    alice_client.cookies["django_language"] = "en"
    english = alice_client.get(step_url(draft, W.FAULT)).content.decode()

    assert help_under(english, "hang_detection").startswith(
        "When the logs of all replicas stay silent for the threshold, AIHC judges the job hung "
        "and records a hang event. What a hung job then does, restarted or left running, is "
        "decided by AIHC's fault tolerance (below)."
    )
    assert help_under(chinese, "hang_detection").startswith(
        "所有实例的日志在设定时间内都没有更新，则 AIHC 判定任务处于 hang 状态，并在任务事件中记录。"
        "hang 的任务随后是被重启还是继续运行，由 AIHC 的容错（下方）决定。"
    )
    assert "Whether a hang counts among them is AIHC's fault tolerance's decision." in help_under(
        english, "retry_limit"
    )
    assert "hang 是否计入其中由 AIHC 的容错决定。" in help_under(chinese, "retry_limit")
    assert help_under(english, "hang_startup_minutes").endswith(
        "Left empty: AIHC is sent no value and uses its own default."
    )
    assert help_under(chinese, "hang_startup_minutes").endswith(
        "留空时：不向 AIHC 发送该值，按平台自身的默认值。"
    )
    for page in (english, chinese):
        assert "used up" not in page and "次数用完后任务失败" not in page
