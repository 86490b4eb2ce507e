"""AIHC pools through the console's pages: wizard, submit failure, fix and resubmit, browser."""

from __future__ import annotations

import html as html_module
import re
import socket

import pytest
from django.urls import reverse
from django.utils import translation

from jobs import wizard as W
from jobs.backends import get_backend
from jobs.models import Draft, EventType, Job, JobStatus
from tests.fake_aihc import FakeAihc, configure
from tests.test_wizard import (
    basic_data,
    complete_steps,
    data_data,
    new_draft,
    post_step,
    resources_data,
    role,
    step_url,
)

A800 = "baidu.com/a800_80g_cgpu"
POOL = "cce-pool1"


@pytest.fixture
def fake(settings):
    fake = FakeAihc().start()
    fake.add_pool(
        POOL, "百舸训练池", queues=("default", "research"), gpus={A800: (32, 6)}, pfs="pfs-7xWeAt"
    )
    configure(settings, fake)
    yield fake
    fake.stop()


def aihc_steps(**basic) -> dict:
    return {
        W.BASIC: basic_data(resource_pool=POOL, **basic),
        W.RESOURCES: resources_data(roles=[role("master", 1, A800, 8), role("worker", 1, A800, 8)]),
        W.DATA: data_data(mounts=(("pfs", "pfs-7xWeAt", "/mnt/cluster"),)),
    }


def submitted_in_the_wizard(client, owner) -> Job:
    """A job built through every wizard step on the AIHC pool and submitted (Queued)."""
    draft = new_draft(client)
    complete_steps(client, draft, **aihc_steps())
    # Followed to the job page, as a browser is: it shows (and so uses up) the "submitted" note.
    client.post(reverse("wizard-submit", args=[draft.id]), follow=True)
    return Job.objects.get(owner=owner)


def test_the_wizard_offers_the_aihc_pool_its_queues_and_idle_cards(fake, alice_client):
    draft = new_draft(alice_client)

    basic = alice_client.get(step_url(draft, W.BASIC))
    queues = alice_client.get(reverse("wizard-queues", args=[draft.id]), {"resource_pool": POOL})
    complete_steps(alice_client, draft, upto=W.RESOURCES, **aihc_steps())
    resources = alice_client.get(step_url(draft, W.RESOURCES))

    assert basic.status_code == queues.status_code == resources.status_code == 200
    assert f'value="{POOL}"' in basic.content.decode()
    assert re.findall(r'<option value="([^"]+)"', queues.content.decode()) == [
        "default",
        "research",
    ]
    # The pool's stock line: 32 A800 cards, 6 in use.
    assert re.search(rf"{re.escape(A800)}\D{{0,12}}26\D{{1,8}}32", resources.content.decode())


def test_a_refused_feature_is_shown_on_its_wizard_step(fake, alice_client):
    from tests.test_wizard import advanced_data, field_errors

    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.ADVANCED, **aihc_steps())

    r = post_step(alice_client, draft, W.ADVANCED, advanced_data(cpu_exclusive="on"))

    assert r.status_code == 200
    with translation.override("zh-hans"):
        expected = translation.gettext("AIHC has no CPU exclusivity setting.")
    assert expected == "百舸 AIHC 不支持 CPU 独占设置。"
    assert field_errors(r, "id_cpu_exclusive") == [expected]
    assert not Job.objects.exists()


def test_a_submit_failure_shows_the_platforms_message_and_the_user_fixes_and_resubmits(
    fake, alice_client, alice
):
    fake.fail_next("CreateJob", status=400, code="QuotaExceeded", message="队列 default 配额不足")
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, **aihc_steps())
    r = alice_client.post(reverse("wizard-submit", args=[draft.id]))
    job = Job.objects.get(owner=alice)
    assert r.status_code == 302
    assert (job.backend, job.status) == ("aihc", JobStatus.QUEUED)

    get_backend(job.backend).submit(job)  # what the worker does with a Queued remote job

    page = alice_client.get(reverse("job-detail", args=[job.public_id]))
    job.refresh_from_db()
    assert page.status_code == 200
    assert job.status == JobStatus.SUBMIT_FAILED
    assert "队列 default 配额不足" in page.content.decode()
    assert "QuotaExceeded" in job.status_reason

    copied = alice_client.post(reverse("job-copy", args=[job.public_id]))
    copy = Draft.objects.get(source_job=job)
    assert copied.status_code == 302
    assert W.assemble(W.wizard_state(copy)).spec.to_document() == job.job_spec().to_document()
    fixed = alice_client.post(
        step_url(copy, W.BASIC),
        {**basic_data(resource_pool=POOL, queue="research"), "action": "next"},
    )
    assert fixed.status_code == 302
    resubmitted = alice_client.post(reverse("wizard-submit", args=[copy.id]))
    new_job = Job.objects.exclude(pk=job.pk).get(owner=alice)
    assert resubmitted.status_code == 302
    assert new_job.source_job == job

    get_backend(new_job.backend).submit(new_job)

    new_job.refresh_from_db()
    assert new_job.status == JobStatus.QUEUED
    [remote] = fake.jobs.values()
    assert (remote.job_id, remote.queue) == (new_job.external_id, "research")
    [first, second] = fake.calls("CreateJob")
    label = {"key": "ai-job-console/job-id", "value": new_job.public_id}
    assert second.body == {**new_job.job_spec().to_v1_body(), "labels": [label]}
    # The copy differs from the first in its queue and its own job id label only.
    assert {k: v for k, v in first.body.items() if k not in ("queue", "labels")} == {
        k: v for k, v in second.body.items() if k not in ("queue", "labels")
    }


def test_a_job_whose_submit_failed_is_submitted_again_as_the_same_job_once_aihc_takes_it(
    fake, alice_client, alice
):
    fake.fail_next("CreateJob", status=400, code="QuotaExceeded", message="队列 default 配额不足")
    job = submitted_in_the_wizard(alice_client, alice)
    get_backend(job.backend).submit(job)
    page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()
    assert 'id="job-submit-again"' in page and 'id="job-stop"' not in page

    r = alice_client.post(reverse("job-submit-again", args=[job.public_id]))

    assert r.status_code == 302 and r.url == reverse("job-detail", args=[job.public_id])
    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED
    assert job.events.filter(reason="Resubmitted", actor=alice).exists()
    get_backend(job.backend).submit(job)
    job.refresh_from_db()
    assert job.external_id in fake.jobs and Job.objects.count() == 1
    again = alice_client.post(reverse("job-submit-again", args=[job.public_id]), follow=True)
    assert "只有提交失败的任务才能再次提交" in again.content.decode()


def test_submitting_again_is_refused_with_the_reason_when_the_pool_is_gone(
    fake, alice_client, alice
):
    fake.fail_next("CreateJob", status=400, code="QuotaExceeded", message="quota")
    job = submitted_in_the_wizard(alice_client, alice)
    get_backend(job.backend).submit(job)
    del fake.pools[POOL]
    get_backend("aihc")._inventory().attempted_at = 0  # the next read asks AIHC again
    get_backend("aihc").pools()
    get_backend("aihc")._inventory().join()

    r = alice_client.post(reverse("job-submit-again", args=[job.public_id]), follow=True)

    job.refresh_from_db()
    assert r.status_code == 200
    assert job.status == JobStatus.SUBMIT_FAILED
    assert "该资源池已不可用" in r.content.decode()


def test_a_job_being_sent_to_aihc_cannot_be_deleted_until_aihc_answers(fake, alice_client, alice):
    from jobs.services import job_transition

    job = submitted_in_the_wizard(alice_client, alice)
    job_transition(job=job, to=JobStatus.SUBMITTING, reason="Submitting")  # the worker's step

    refused = alice_client.post(
        reverse("job-delete", args=[job.public_id]), {"confirmed": "1"}, follow=True
    )

    assert refused.redirect_chain[-1][0] == reverse("job-detail", args=[job.public_id])
    assert "正在提交到其平台" in refused.content.decode()
    assert Job.objects.filter(pk=job.pk).exists()
    job_transition(job=job, to=JobStatus.QUEUED, reason="Submitted", external_id="aihc-job-1")
    deleted = alice_client.post(reverse("job-delete", args=[job.public_id]), {"confirmed": "1"})
    assert deleted.status_code == 302 and not Job.objects.filter(pk=job.pk).exists()


def test_a_job_queued_on_aihc_shows_no_local_queue_position(fake, alice_client, alice):
    job = submitted_in_the_wizard(alice_client, alice)
    get_backend(job.backend).submit(job)
    job.refresh_from_db()

    page = alice_client.get(reverse("job-detail", args=[job.public_id]))

    assert job.status == JobStatus.QUEUED and job.external_id
    assert page.status_code == 200
    assert 'id="queue-position"' not in page.content.decode()


def test_the_first_rows_idle_poll_also_refreshes_the_pools_stock_line(fake, alice_client):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.RESOURCES, **aihc_steps())
    query = {
        "roles-0-use_accelerator": "on",
        "roles-0-accelerator_type": A800,
        "roles-0-accelerators": "8",
        "roles-0-replicas": "1",
    }
    url = reverse("wizard-idle", args=[draft.id])

    first = alice_client.get(url, {"row": "0", **query}, headers={"HX-Request": "true"})
    second = alice_client.get(url, {"row": "1", **query}, headers={"HX-Request": "true"})

    stock = re.search(r'<p[^>]*id="pool-stock"[^>]*>(.*?)</p>', first.content.decode(), re.S)
    assert first.status_code == second.status_code == 200
    assert stock and 'hx-swap-oob="true"' in stock.group(0)
    assert re.search(rf"{re.escape(A800)}\D{{0,12}}26\D{{1,8}}32", stock.group(1))
    assert 'id="pool-stock"' not in second.content.decode()  # once per poll round, not per row


def test_a_v2_pool_mounts_a_bos_bucket_path_with_no_volume_to_choose(fake, alice_client, settings):
    from tests.test_wizard import field_errors

    settings.AIHC_POOL_API_VERSIONS = {POOL: "v2"}
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.DATA, **aihc_steps())
    page = alice_client.get(step_url(draft, W.DATA)).content.decode()
    types = re.findall(r'<option value="([^"]*)"', page[page.index('name="mounts-0-type"') :])

    empty = post_step(alice_client, draft, W.DATA, data_data(mounts=(("bos", "", "/mnt/bos"),)))
    bucket = data_data(
        mounts=(("bos", "", "/mnt/bos"),), **{"mounts-0-source_path": "bos://team-bucket/datasets"}
    )
    saved = post_step(alice_client, draft, W.DATA, bucket)

    assert types[:3] == ["pfs", "hostpath", "bos"] and "cfs" not in types
    assert empty.status_code == 200
    assert field_errors(empty, "id_mounts-0-source_path") == [
        "请填写要挂载的 BOS 存储桶路径，例如 bos://my-bucket/datasets。"
    ]
    assert saved.status_code == 302
    complete_steps(alice_client, draft, **{**aihc_steps(), W.DATA: bucket})
    review = alice_client.get(step_url(draft, W.REVIEW)).content.decode()
    assert "bos://team-bucket/datasets" in review


def test_an_aihc_pool_mounts_folders_of_the_nodes_local_disk_named_by_the_console(
    fake, alice_client, alice
):
    from tests.test_wizard import field_errors

    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.DATA, **aihc_steps())
    page = alice_client.get(step_url(draft, W.DATA)).content.decode()
    disks = (("hostpath", "", "/mnt/data"), ("hostpath", "", "/mnt/ckpt"))
    no_folder = post_step(alice_client, draft, W.DATA, data_data(mounts=disks))
    folders = data_data(
        mounts=disks, **{"mounts-0-source_path": "/ssd1/data", "mounts-1-source_path": "/ssd2"}
    )
    complete_steps(alice_client, draft, **{**aihc_steps(), W.DATA: folders})
    alice_client.post(reverse("wizard-submit", args=[draft.id]))
    job = Job.objects.get(owner=alice)
    get_backend(job.backend).submit(job)

    assert 'id="node-disk-help"' in page
    assert no_folder.status_code == 200
    assert field_errors(no_folder, "id_mounts-0-source_path") == [
        "请填写要挂载的节点本地盘目录，例如 /ssd1/data。"
    ]
    [call] = fake.calls("CreateJob")
    sent = [
        (d["type"], d["name"], d["sourcePath"], d["mountPath"]) for d in call.body["datasources"]
    ]
    assert sent == [
        ("hostpath", "hostpath-1", "/ssd1/data", "/mnt/data"),
        ("hostpath", "hostpath-2", "/ssd2", "/mnt/ckpt"),
    ]
    # Copy & edit: the names the console made up are not volumes to choose; made up again.
    alice_client.post(reverse("job-copy", args=[job.public_id]))
    copy = Draft.objects.get(source_job=job)
    assert not (copy.data["data"].get("mounts-0-name") or [""])[0]
    assert W.assemble(W.wizard_state(copy)).spec.datasources == job.job_spec().datasources


def test_secrets_typed_in_the_wizard_never_come_back_on_the_job_page(fake, alice_client, alice):
    from tests.test_wizard import image_data

    fake.fail_next(
        "CreateJob", status=400, code="InvalidParameter", message="bad token tok-very-secret-42"
    )
    draft = new_draft(alice_client)
    steps = aihc_steps()
    steps[W.IMAGE] = image_data(envs=[("API_TOKEN", "tok-very-secret-42", True)])
    complete_steps(alice_client, draft, **steps)
    alice_client.post(reverse("wizard-submit", args=[draft.id]))
    job = Job.objects.get(owner=alice)

    get_backend(job.backend).submit(job)

    page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()
    job.refresh_from_db()
    assert job.status == JobStatus.SUBMIT_FAILED
    assert {"name": "API_TOKEN", "value": "tok-very-secret-42"} in fake.calls("CreateJob")[0].body[
        "jobSpec"
    ]["envs"]
    assert "bad token ******" in page
    assert "tok-very-secret-42" not in page
    assert fake.secret_key not in page


def test_the_worker_submits_an_aihc_job_and_its_page_follows_it_there(fake, alice_client, alice):
    from jobs.worker import Worker

    job = submitted_in_the_wizard(alice_client, alice)
    worker = Worker()

    worker.dispatch_remote()
    worker.dispatch_remote()  # a job AIHC has queued is not submitted again

    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED and job.external_id in fake.jobs
    assert len(fake.calls("CreateJob")) == 1
    fake.set_job_status(job.external_id, "Running")
    fake.add_logs(job.external_id, "llm-train-worker-0", ["epoch 1 loss 2.31", "epoch 2 loss 1.97"])
    worker.sync_remote()

    job.refresh_from_db()
    page = alice_client.get(reverse("job-detail", args=[job.public_id]), {"replica": "worker-0"})
    assert page.status_code == 200
    assert job.status == JobStatus.RUNNING
    assert sorted(job.replicas.values_list("role", "index", "status")) == [
        ("master", 0, "running"),
        ("worker", 0, "running"),
    ]
    assert "epoch 2 loss 1.97" in page.content.decode()


@pytest.mark.browser
def test_a_person_picks_the_aihc_pool_and_sees_its_queues_and_idle_cards(fake, logged_in_page):
    page = logged_in_page
    page.goto(reverse("wizard-start"))
    page.click("#new-draft")
    page.wait_for_url(re.compile(r"/create/[0-9a-f-]+/basic/$"))

    page.select_option("select[name=resource_pool]", POOL)
    page.wait_for_function(
        "() => [...document.querySelectorAll('select[name=queue] option')]"
        ".map(o => o.value).join() === 'default,research'"
    )
    page.select_option("select[name=queue]", "research")
    page.fill("input[name=name]", "aihc-browser-job")
    page.click("#wizard-next")
    page.wait_for_url(re.compile(r"/image/$"))
    page.fill("input[name=image]", "registry.baidubce.com/aihc/train:v1")
    page.fill("textarea[name=command]", "torchrun train.py")
    page.click("#wizard-next")
    page.wait_for_url(re.compile(r"/resources/$"))

    stock = page.get_by_text(re.compile(r"baidu\.com/a800_80g_cgpu\D{0,12}26\D{1,8}32"))
    stock.wait_for()
    page.select_option("select[name=roles-0-accelerator_type]", A800)
    idle = page.locator("#idle-0")
    idle.get_by_text(re.compile("26")).wait_for()
    assert "26" in idle.inner_text()
    assert fake.calls("DescribeResourcePools")


def test_a_v2_pool_jobs_page_shows_the_v2_request_it_was_sent_with(
    fake, alice_client, alice, settings
):
    settings.AIHC_POOL_API_VERSIONS = {POOL: "v2"}
    job = submitted_in_the_wizard(alice_client, alice)

    page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()

    assert f"POST /?action=CreateJob&amp;queueID=default&amp;resourcePoolId={POOL}" in page
    assert "/api/v1/aijobs" not in page and "&quot;jobType&quot;" in page


def test_the_aihc_job_id_is_on_the_job_page_and_finds_the_job_in_the_list(
    fake, alice_client, alice
):
    job = submitted_on_aihc(alice_client, alice)

    page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()
    found = alice_client.get(reverse("job-list"), {"q": job.external_id[-12:]}).content.decode()

    assert job.external_id and job.external_id != job.public_id
    assert f'id="external-id">{job.external_id}<' in page
    assert job.public_id in found


def test_the_job_page_labels_the_consoles_job_id_and_aihcs_and_aihcs_can_be_copied(
    fake, alice_client, alice
):
    job = submitted_on_aihc(alice_client, alice)
    url = reverse("job-detail", args=[job.public_id])

    zh = alice_client.get(url).content.decode()
    alice_client.cookies["django_language"] = "en"
    en = alice_client.get(url).content.decode()

    def row(label: str, dd: str) -> str:
        return rf"<dt[^>]*>{label}</dt>\s*<dd[^>]*>{dd}"

    # Both look like pytorchjob-<uuid>: each says whose it is.
    public, external = re.escape(job.public_id), re.escape(job.external_id)
    assert re.search(row("Console job ID", public), en)
    assert re.search(row("AIHC job ID", f'<span[^>]*id="external-id">{external}<'), en)
    assert re.search(row("控制台任务 ID", public), zh)
    assert re.search(row("百舸 AIHC 任务 ID", f'<span[^>]*id="external-id">{external}<'), zh)
    assert re.search(r'<button[^>]*data-copy-target="#external-id"[^>]*>Copy<', en)
    assert re.search(r'<button[^>]*data-copy-target="#external-id"[^>]*>复制<', zh)


def test_a_log_download_aihc_cannot_answer_says_so_with_a_503(fake, alice_client, alice):
    from jobs.services import job_transition

    job = submitted_on_aihc(alice_client, alice)
    job_transition(job=job, to=JobStatus.RUNNING, reason="Running")
    job.replicas.update_or_create(role="master", index=0, defaults={"status": "running"})
    fake.fail_next("DescribeJob", status=500, code="InternalError", times=20)

    r = alice_client.get(reverse("job-log-download", args=[job.public_id, "master-0"]))

    assert r.status_code == 503
    assert "InternalError" in r.content.decode()


def test_a_reviewers_log_download_the_platform_cannot_answer_is_a_503_page_in_the_admins_look(
    fake, alice_client, alice, reviewer, settings
):
    # The admin's Download answered a plain-text 503 where the owner's shows a page: no way
    # back, no header, and Django's words only.
    from django.test import Client

    from jobs.services import job_transition
    from tests.test_wizard import image_data

    draft = new_draft(alice_client)
    steps = {**aihc_steps(), W.IMAGE: image_data(envs=[("HF_TOKEN", "hf-very-secret", True)])}
    complete_steps(alice_client, draft, **steps)
    alice_client.post(reverse("wizard-submit", args=[draft.id]))
    job = Job.objects.get(owner=alice)
    get_backend(job.backend).submit(job)
    job_transition(job=job, to=JobStatus.RUNNING, reason="Running")
    job.replicas.update_or_create(role="master", index=0, defaults={"status": "running"})
    url = reverse("admin:jobs_job_log_download", args=[job.pk, "master-0"])
    back = f'href="{reverse("admin:jobs_job_logs", args=[job.pk])}?replica=master-0"'
    client = Client()
    client.force_login(reviewer)
    client.cookies["django_language"] = "en"

    fake.fail_next("DescribeJob", code="InternalError", message="token hf-very-secret", times=9)
    failing = client.get(url)
    client.cookies["django_language"] = "zh-hans"
    failing_in_chinese = client.get(url)
    with socket.socket() as closed:  # a port nothing listens on: AIHC not reached at all
        closed.bind(("127.0.0.1", 0))
        down = f"http://127.0.0.1:{closed.getsockname()[1]}"
    settings.AIHC_ENDPOINT = down
    client.cookies["django_language"] = "en"
    unreachable = client.get(url)

    assert failing.status_code == failing_in_chinese.status_code == unreachable.status_code == 503
    assert failing["Content-Type"] == "text/html; charset=utf-8"
    page = failing.content.decode().replace("&#x27;", "'")
    assert "The log of master-0 cannot be downloaded" in page
    assert "The logs cannot be read right now: AIHC did not return the logs: " in page
    assert "InternalError" in page and "token ******" in page  # the platform's word, masked
    assert back in page and "AI Job Console · Review" in page  # the admin's header, the way back
    chinese = failing_in_chinese.content.decode()
    assert "无法下载 master-0 的日志" in chinese and "暂时无法读取日志：" in chinese
    assert back in chinese
    unreachable_page = unreachable.content.decode()
    assert "AIHC did not return the logs: AIHC could not be reached" in unreachable_page
    for said in (page, chinese, unreachable_page):
        assert "hf-very-secret" not in said
        assert fake.url not in said and down not in said and "127.0.0.1" not in said
        assert fake.secret_key not in said and fake.access_key not in said


def submitted_on_aihc(client, owner) -> Job:
    """A job built in the wizard on the AIHC pool and submitted to the fake AIHC."""
    draft = new_draft(client)
    complete_steps(client, draft, **aihc_steps())
    # Followed to the job page, as a browser is: it shows (and so uses up) the "submitted" note.
    client.post(reverse("wizard-submit", args=[draft.id]), follow=True)
    job = Job.objects.get(owner=owner)
    get_backend(job.backend).submit(job)
    job.refresh_from_db()
    return job


def test_a_v2_jobs_page_and_admin_show_the_action_style_request_it_was_sent_with(
    fake, alice_client, alice, settings, admin_client
):
    settings.AIHC_POOL_API_VERSIONS = {POOL: "v2"}
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, **aihc_steps())
    alice_client.post(reverse("wizard-submit", args=[draft.id]))
    job = Job.objects.get(owner=alice)
    get_backend("aihc").submit(job)
    [call] = fake.calls("CreateJob")

    page = alice_client.get(reverse("job-detail", args=[job.public_id]))
    admin = admin_client.get(reverse("admin:jobs_job_change", args=[job.pk]))

    assert page.status_code == admin.status_code == 200
    for html in (page.content.decode(), admin.content.decode()):
        shown = re.search(r"<pre[^>]*\bapi-request\b[^>]*>(.*?)</pre>", html, re.S)
        text = html_module.unescape(shown.group(1))
        line, _, body = text.partition("\n")
        assert line == f"POST /?{call.raw_query}"
        assert body.strip() == call.raw_body.decode()


def test_a_stop_aihc_refuses_is_recorded_on_the_job_page_not_just_flashed(
    fake, alice_client, alice
):
    """The owner presses Stop and AIHC refuses it: the job runs on, and its events say the
    stop failed and why, for whoever opens the page later (the flash message is gone by then);
    "Stop requested" alone read as if the stop were under way."""
    job = submitted_on_aihc(alice_client, alice)
    fake.set_job_status(job.external_id, "Running")
    get_backend("aihc").sync(job)
    fake.fail_next("StopJob", status=400, code="JobStateConflict", message="job is terminating")

    r = alice_client.post(reverse("job-stop", args=[job.public_id]), {"confirmed": "1"})
    assert r.status_code == 302

    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING
    failed = job.events.get(reason="StopFailed")
    assert failed.type == EventType.WARNING
    assert "job is terminating" in failed.message and "JobStateConflict" in failed.message
    page = html_module.unescape(
        alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()
    )
    assert "停止失败" in page and "百舸 AIHC 未能停止该任务：job is terminating" in page


def test_a_stop_aihc_does_not_answer_is_accepted_once_and_the_page_says_it_is_sent_again(
    fake, alice_client, alice
):
    """AIHC fails the owner's Stop with a server error: the console takes the stop (no error
    to press Stop again for), says AIHC answered it with that error (until qa80: that AIHC had
    not answered yet), and sends it again itself."""
    job = submitted_on_aihc(alice_client, alice)
    fake.set_job_status(job.external_id, "Running")
    get_backend("aihc").sync(job)
    fake.fail_next("StopJob", status=500, code="InternalError", message="stop backend down")

    r = alice_client.post(reverse("job-stop", args=[job.public_id]), {"confirmed": "1"})
    again = alice_client.post(reverse("job-stop", args=[job.public_id]), {"confirmed": "1"})

    flashes = [str(m) for m in r.wsgi_request._messages]
    assert flashes == ["已请求停止任务。"]
    assert again.status_code == 302 and len(fake.calls("StopJob")) == 1
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPING
    assert job.events.filter(reason="StopRequested").count() == 1
    assert not job.events.filter(reason="StopFailed").exists()
    page = html_module.unescape(
        alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()
    )
    assert "百舸 AIHC 以错误答复（stop backend down" in page and "尚未答复" not in page


def test_an_aihc_event_shows_at_its_own_time_in_the_consoles_time_zone(
    fake, alice_client, alice, settings
):
    """AIHC writes event times in UTC; the page shows them as every other time on it, in the
    console's time zone, and the message no longer repeats AIHC's UTC stamp."""
    settings.TIME_ZONE = "Asia/Shanghai"
    job = submitted_on_aihc(alice_client, alice)
    fake.jobs[job.external_id].events.append(
        {
            "reason": "FailedScheduling",
            "message": "0/4 nodes are available",
            "firstTimestamp": "2030-01-02T03:04:05Z",
            "lastTimestamp": "2030-01-02T03:04:05Z",
            "count": 1,
            "type": "Warning",
        }
    )
    get_backend("aihc").sync(job)

    page = html_module.unescape(
        alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()
    )

    [shown] = [
        li
        for li in re.findall(r"<li[^>]*>(.*?)</li>", page, re.S)
        if "AIHC:" in li and "Sched" in li
    ]
    assert "2030-01-02 11:04:05" in shown
    assert "0/4 nodes are available" in shown and "03:04:05" not in shown


def test_adding_a_mount_on_a_pool_without_pfs_turns_storage_on_so_the_mount_is_sent(
    fake, alice_client, settings
):
    """A v2 pool with no PFS opens the data step with storage off and no row. Adding a mount
    (a BOS bucket) and filling it in must mount it: before, storage stayed off, the step
    passed, and the bucket silently never reached AIHC."""
    fake.add_pool("cce-nopfs", "no pfs", queues=("default",), gpus={A800: (16, 0)})
    settings.AIHC_POOL_API_VERSIONS = {"cce-nopfs": "v2"}
    draft = new_draft(alice_client)
    steps = {
        W.BASIC: basic_data(resource_pool="cce-nopfs"),
        W.RESOURCES: resources_data(roles=[role("master", 1, A800, 8)]),
    }
    complete_steps(alice_client, draft, upto=W.DATA, **steps)
    opened = alice_client.get(step_url(draft, W.DATA)).content.decode()
    assert re.search(r'<input type="checkbox" name="storage_enabled"(?![^>]*checked)', opened)

    # 新增挂载, as the page sends it: storage unticked, no rows yet.
    r = post_step(
        alice_client, draft, W.DATA, data_data(mounts=(), storage=False), action="add-row"
    )
    assert r.status_code == 302
    page = alice_client.get(step_url(draft, W.DATA)).content.decode()
    assert re.search(r'<input type="checkbox" name="storage_enabled"[^>]*checked', page)
    bucket = data_data(
        mounts=(("bos", "", "/mnt/bos"),), **{"mounts-0-source_path": "bos://team-bucket/data"}
    )
    complete_steps(alice_client, draft, **{**steps, W.DATA: bucket})
    alice_client.post(reverse("wizard-submit", args=[draft.id]))
    job = Job.objects.get()
    get_backend("aihc").submit(job)
    [call] = fake.calls("CreateJob")
    assert call.body["datasources"] == [
        {"type": "bos", "name": "", "sourcePath": "bos://team-bucket/data", "mountPath": "/mnt/bos"}
    ]


def a_job_in_the_aihc_pool(owner) -> Job:
    """A job of `owner`'s whose pool is the fake's (its rows need nothing AIHC holds)."""
    from tests.test_job_pages import submit

    job = submit(owner, name="on-aihc")
    Job.objects.filter(pk=job.pk).update(resource_pool=POOL)
    return job


def shown_pool(client, job: Job) -> tuple[str, str]:
    """(the list refresh's pool cell, the job page's pool element) of `job`."""
    from tests.test_job_pages import pool_cells

    refresh = client.get(reverse("job-list"), headers={"HX-Request": "true"}).content.decode()
    title, text = pool_cells(refresh)[job.public_id]
    page = client.get(reverse("job-detail", args=[job.public_id])).content.decode()
    element = re.search(r'<(a|span) class="job-pool"[^>]*>[^<]*</\1>', page).group(0)
    return f"{text} [{title}]", element


def test_an_aihc_pool_is_named_by_a_server_process_that_has_not_read_aihc_yet(
    fake, alice, alice_client
):
    # Found in QA: with two web workers, the one that had not served a page reading AIHC's
    # pools showed a job's pool by its id on the list's refresh and on the job page.
    job = a_job_in_the_aihc_pool(alice)
    alice_client.get(reverse("job-list"))  # the full page reads AIHC's pools, and keeps names
    get_backend("aihc")._inventories.clear()  # another server process: nothing read yet
    asked = len(fake.requests)

    row, element = shown_pool(alice_client, job)

    assert row == "百舸训练池 [资源池 ID：cce-pool1]"
    assert element == (
        '<a class="job-pool" href="/pools/" title="资源池 ID：cce-pool1">百舸训练池</a>'
    )
    assert len(fake.requests) == asked  # neither page asked AIHC


def test_a_pool_aihc_no_longer_offers_keeps_its_last_name_marked_so(
    fake, alice, alice_client, settings
):
    job = a_job_in_the_aihc_pool(alice)
    alice_client.get(reverse("job-list"))  # read while AIHC offered it
    with fake.lock:
        del fake.pools[POOL]
    settings.AIHC_CACHE_SECONDS = 0  # the next page reads AIHC again

    full = alice_client.get(reverse("job-list")).content.decode()
    row, element = shown_pool(alice_client, job)

    from tests.test_job_pages import pool_cells, pool_options

    assert pool_cells(full)[job.public_id] == (
        "资源池 ID：cce-pool1",
        "百舸训练池（cce-pool1，已不再提供）",
    )
    assert ("cce-pool1", "百舸训练池（cce-pool1，已不再提供）", False) in pool_options(full)
    assert row == "百舸训练池（cce-pool1，已不再提供） [资源池 ID：cce-pool1]"
    # Named, not linked: the pools page does not list it.
    assert element == (
        '<span class="job-pool" title="资源池 ID：cce-pool1">百舸训练池（cce-pool1，已不再提供）</span>'
    )
    alice_client.cookies["django_language"] = "en"
    english = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()
    assert "百舸训练池 (cce-pool1, no longer offered)</span>" in english
