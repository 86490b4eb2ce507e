"""Kubernetes (Kubeflow) pools through the console's pages: wizard, review, worker, job page."""

from __future__ import annotations

import html
import json
import re

import pytest
from django.urls import reverse

from jobs import wizard as W
from jobs.models import Job, JobStatus
from tests.fake_kubernetes import FakeKubernetes, configure
from tests.test_wizard import (
    basic_data,
    complete_steps,
    data_data,
    image_data,
    new_draft,
    post_step,
    resources_data,
    role,
    step_url,
)

A800 = "baidu.com/a800_80g_cgpu"
POOL = "k8s-ml"


@pytest.fixture
def fake(settings):
    fake = FakeKubernetes().start()
    fake.add_namespace("ml")
    fake.add_node("gpu-1", {"nvidia.com/gpu": "8"})
    fake.add_node("gpu-2", {"nvidia.com/gpu": "8"})
    fake.add_pod("ml", "other", node="gpu-2", requests={"nvidia.com/gpu": "5"})
    configure(
        settings,
        fake,
        KUBERNETES_NAMESPACES="ml",
        KUBERNETES_QUEUES="gpu-queue,cpu-queue",
        KUBERNETES_ACCELERATORS=f"{A800}=nvidia.com/gpu",
        KUBERNETES_VOLUMES="pfs=datasets",
    )
    yield fake
    fake.stop()


def k8s_steps(**basic) -> dict:
    return {
        W.BASIC: basic_data(resource_pool=POOL, queue="gpu-queue", **basic),
        W.RESOURCES: resources_data(roles=[role("master", 1, A800, 4), role("worker", 1, A800, 4)]),
        W.DATA: data_data(mounts=(("pfs", "datasets", "/mnt/data"),)),
    }


def test_the_wizard_offers_the_namespace_pool_its_kueue_queues_and_idle_cards(fake, alice_client):
    draft = new_draft(alice_client)

    basic = alice_client.get(step_url(draft, W.BASIC))
    queues = alice_client.get(reverse("wizard-queues", args=[draft.id]), {"resource_pool": POOL})
    complete_steps(alice_client, draft, upto=W.RESOURCES, **k8s_steps())
    resources = alice_client.get(step_url(draft, W.RESOURCES))

    assert f'value="{POOL}"' in basic.content.decode()
    assert re.findall(r'<option value="([^"]+)"', queues.content.decode()) == [
        "gpu-queue",
        "cpu-queue",
    ]
    # 16 cards, 5 in use: 11 idle.
    assert re.search(rf"{re.escape(A800)}\D{{0,12}}11\D{{1,8}}16", resources.content.decode())


IDLE_QUERY = {
    "row": "0",
    "roles-0-use_accelerator": "on",
    "roles-0-accelerator_type": A800,
    "roles-0-accelerators": "4",
    "roles-0-replicas": "1",
}


def pool_stock(page: str) -> str:
    stock = page[page.index('id="pool-stock"') :]
    return stock[: stock.index("</p>")]


def test_polling_the_idle_count_reads_the_cluster_once_per_cache_period_bounded_by_the_quota(
    fake, alice_client
):
    fake.add_quota(
        "ml", "gpus", hard={"requests.nvidia.com/gpu": "8"}, used={"requests.nvidia.com/gpu": "5"}
    )
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.RESOURCES, **k8s_steps())
    url = reverse("wizard-idle", args=[draft.id])

    polls = [alice_client.get(url, IDLE_QUERY, headers={"HX-Request": "true"}) for _ in range(10)]

    # Every page of the wizard and every poll within KUBERNETES_CACHE_SECONDS: one read.
    assert len(fake.calls("list nodes")) == len(fake.calls("list pods")) == 1
    assert len(fake.calls("list resourcequotas")) == 1
    for poll in polls:
        text = poll.content.decode()
        assert poll.status_code == 200
        # 11 of the cluster's cards are idle; the namespace's quota leaves room for 3, fewer
        # than the role asks for.
        idle = text.split('id="pool-stock"')[0]
        assert re.search(
            r'^<span class="text-danger">空闲 3 张卡（该角色需要 \d+ 张）</span>', idle
        )
        assert re.search(rf"{re.escape(A800)}\D{{0,12}}3\D{{1,8}}8", pool_stock(text))


def test_a_console_that_may_not_read_the_namespaces_quotas_says_so_beside_the_idle_cards(
    fake, alice_client
):
    fake.forbid("list", "resourcequotas", namespace="ml")
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.RESOURCES, **k8s_steps())

    page = alice_client.get(step_url(draft, W.RESOURCES))
    poll = alice_client.get(
        reverse("wizard-idle", args=[draft.id]), IDLE_QUERY, headers={"HX-Request": "true"}
    )

    assert page.status_code == poll.status_code == 200
    for text in (page.content.decode(), poll.content.decode()):
        stock = pool_stock(text)
        assert re.search(rf"{re.escape(A800)}\D{{0,12}}11\D{{1,8}}16", stock)
        # The note names the quotas it could not read and the namespace (in either language's
        # word order).
        note = re.search(r'class="pool-note">([^<]*)<', stock)
        assert note and "ResourceQuota" in note[1] and re.search(r"\bml\b", note[1])
        assert "pool-freshness" not in stock  # the figures are current, not stale


def test_a_refused_feature_is_shown_on_its_wizard_step(fake, alice_client):
    from tests.test_wizard import advanced_data, field_errors

    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.ADVANCED, **k8s_steps())

    r = post_step(alice_client, draft, W.ADVANCED, advanced_data(cpu_exclusive="on"))

    assert r.status_code == 200
    assert field_errors(r, "id_cpu_exclusive") == ["CPU 独占暂不支持 Kubernetes 资源池。"]


def help_in_both_languages(client, draft, step: str, field: str) -> tuple[str, str]:
    """A wizard field's help text on its step, in Chinese and then in English."""
    said = []
    for language in ("zh-hans", "en"):
        client.cookies["django_language"] = language
        page = client.get(step_url(draft, step)).content.decode()
        # Up to the help's own end: a 详见帮助 link may follow it, after a space in English.
        found = re.search(rf'id="id_{field}_helptext"[^>]*>([^<]+)<', page)
        said.append(html.unescape(found[1]).rstrip())
    return said[0], said[1]


def test_the_alerts_on_a_kubernetes_pool_say_the_console_sends_them_and_which_never_come(
    fake, alice_client
):
    # left55: it said the console sends them on a pool that refused them; fix115: the console
    # sends them, by email and webhook, from what it reads of the job in the cluster.
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.ADVANCED, **k8s_steps())

    chinese, english = help_in_both_languages(alice_client, draft, W.ADVANCED, "alert_items")
    page = alice_client.get(step_url(draft, W.ADVANCED)).content.decode()

    assert chinese.startswith("控制台根据从集群读到的任务状态，通过邮件和 Webhook 发送告警")
    assert english.startswith(
        "The console sends them by email and webhook (Feishu/Lark, WeCom, DingTalk or Slack "
        "group bots, or a URL of your own), from what it reads of the job in the cluster."
    )
    assert "“Job hangs” and “A node of the job fails” never come from this pool" in english
    assert 'value="nodeFT"' not in page  # never comes here: not offered


def test_the_review_shows_the_secret_then_the_pytorchjob_and_a_bearer_token_curl(
    fake, alice_client
):
    from tests.test_wizard import image_data

    draft = new_draft(alice_client)
    image = image_data(envs=[("HF_TOKEN", "hf_typed_secret", True)])
    complete_steps(alice_client, draft, **k8s_steps(), **{W.IMAGE: image})

    page = alice_client.get(step_url(draft, W.REVIEW)).content.decode()

    line = re.search(r'id="request-line">([^<]*)<', page).group(1)
    body = json.loads(html.unescape(re.search(r'id="request-json">(.*?)</pre>', page, re.S)[1]))
    first = json.loads(
        html.unescape(
            re.search(r'class="spec-json small request-before"[^>]*>(.*?)</pre>', page, re.S)[1]
        )
    )
    curl = html.unescape(re.search(r'id="request-curl">(.*?)</pre>', page, re.S).group(1))
    assert line == "POST /apis/kubeflow.org/v1/namespaces/ml/pytorchjobs?fieldValidation=Strict"
    assert body["kind"] == "PyTorchJob"
    assert body["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "gpu-queue"
    assert (first["kind"], first["stringData"]) == ("Secret", {"HF_TOKEN": "******"})
    assert curl.startswith(
        f"curl -X POST '{fake.url}/api/v1/namespaces/ml/secrets?fieldValidation=Strict'"
    )
    assert (
        f" && \\\ncurl -X POST '{fake.url}/apis/kubeflow.org/v1/namespaces/ml/pytorchjobs" in curl
    )
    assert "Authorization: Bearer <token>" in curl and "bce-auth" not in curl
    assert "hf_typed_secret" not in page
    # The cluster's own requests, to its API server: not said to be for this console's API.
    assert 'id="request-console-api-note"' not in page
    # Each pod's environment, with the operator's addresses and what the manifest sets.
    envs = html.unescape(page[page.index('id="env-preview"') :])
    name = body["metadata"]["name"]
    assert f"MASTER_ADDR={name}-master-0" in envs
    assert "AIHC_ROLE_INDEX=0" in envs and "HF_TOKEN=******" in envs


def env_boxes(page: str) -> dict[str, dict[str, str]]:
    """Each instance's variables as the review lists them, by instance."""
    preview = page[
        page.index('id="env-preview"') : page.index("</section>", page.index('id="env-preview"'))
    ]
    boxes = re.findall(
        r'<p class="fw-semibold mb-1">([^<]+)</p>\s*<pre class="small mb-0">(.*?)</pre>',
        preview,
        re.S,
    )
    return {
        label: dict(line.split("=", 1) for line in html.unescape(text).splitlines())
        for label, text in boxes
    }


def test_an_mpi_jobs_review_lists_what_the_mpi_operator_gives_its_launcher_and_workers(
    fake, alice_client
):
    # qa68: the launcher's list lacked the operator's slots (a DeepSpeed or Horovod start reads
    # its GPUs per node from OMPI_MCA_orte_set_default_slots), FQDN and ssh settings, and a
    # card-less launcher's emptied NVIDIA variables; each worker listed the hostfile variable,
    # which the operator sets in the launcher alone.
    draft = new_draft(alice_client)
    steps = k8s_steps(framework="MPIJob")
    steps[W.RESOURCES] = resources_data(roles=[role("master", 1, None), role("worker", 2, A800, 4)])
    complete_steps(
        alice_client, draft, **steps, **{W.IMAGE: image_data(command="mpirun python3 train.py")}
    )

    page = alice_client.get(step_url(draft, W.REVIEW)).content.decode()

    body = json.loads(html.unescape(re.search(r'id="request-json">(.*?)</pre>', page, re.S)[1]))
    assert body["spec"]["slotsPerWorker"] == 4
    envs = env_boxes(page)
    launcher = envs["master-0"]
    assert launcher["OMPI_MCA_orte_default_hostfile"] == "/etc/mpi/hostfile"
    assert launcher["OMPI_MCA_orte_set_default_slots"] == "4"
    assert launcher["OMPI_MCA_orte_keep_fqdn_hostnames"] == "true"
    assert launcher["OMPI_MCA_plm_rsh_args"] == "-o ConnectionAttempts=10"
    assert launcher["NVIDIA_VISIBLE_DEVICES"] == launcher["NVIDIA_DRIVER_CAPABILITIES"] == ""
    assert launcher["K_MPI_JOB_ROLE"] == "launcher"
    for label in ("worker-0", "worker-1"):
        assert envs[label]["K_MPI_JOB_ROLE"] == "worker"
        assert not any(name.startswith(("OMPI_", "NVIDIA_")) for name in envs[label])


def test_the_image_step_of_an_mpi_job_lists_the_launchers_default_slots(fake, alice_client):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.IMAGE, **k8s_steps(framework="MPIJob"))

    page = alice_client.get(step_url(draft, W.IMAGE)).content.decode()

    listed = re.findall(r'<th scope="row" class="font-monospace fw-normal">([A-Z_a-z]+)</th>', page)
    assert {"OMPI_MCA_orte_default_hostfile", "OMPI_MCA_orte_set_default_slots"} <= set(listed)


def test_an_mpi_launcher_with_cards_keeps_its_gpus_in_the_review(fake, alice_client):
    draft = new_draft(alice_client)
    steps = k8s_steps(framework="MPIJob")
    complete_steps(
        alice_client, draft, **steps, **{W.IMAGE: image_data(command="mpirun python3 train.py")}
    )

    page = alice_client.get(step_url(draft, W.REVIEW)).content.decode()

    body = json.loads(html.unescape(re.search(r'id="request-json">(.*?)</pre>', page, re.S)[1]))
    assert body["spec"]["runLauncherAsWorker"] is True
    launcher = env_boxes(page)["master-0"]
    assert launcher["OMPI_MCA_orte_set_default_slots"] == "4"
    assert "NVIDIA_VISIBLE_DEVICES" not in launcher  # it runs ranks on its cards


def test_the_image_step_lists_every_variable_the_manifest_sets(fake, alice_client):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.IMAGE, **k8s_steps())

    page = alice_client.get(step_url(draft, W.IMAGE)).content.decode()

    listed = re.findall(r'<th scope="row" class="font-monospace fw-normal">([A-Z_]+)</th>', page)
    assert {"AIHC_JOB_ID", "AIHC_ROLE", "AIHC_ROLE_INDEX", "PYTHONUNBUFFERED", "MASTER_ADDR"} <= (
        set(listed)
    )


def test_a_job_built_in_the_wizard_runs_on_kubernetes_and_its_page_follows_it(
    fake, alice_client, alice
):
    from jobs.worker import Worker

    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, **k8s_steps())
    alice_client.post(reverse("wizard-submit", args=[draft.id]))
    job = Job.objects.get(owner=alice)
    assert (job.backend, job.resource_pool, job.status) == ("kubernetes", POOL, JobStatus.QUEUED)
    worker = Worker()

    worker.dispatch_remote()
    worker.dispatch_remote()  # a job Kubernetes has is not created again

    job.refresh_from_db()
    assert job.external_id == fake.jobs()[0]["metadata"]["name"]
    assert len(fake.calls("create pytorchjobs")) == 1
    fake.set_conditions(job.external_id, ("Running", "PyTorchJob is running."), namespace="ml")
    [_master, worker_pod] = fake.run_pods(job.external_id, namespace="ml")
    fake.add_logs(worker_pod, ["epoch 1 loss 2.31", "epoch 2 loss 1.97"], namespace="ml")
    worker.sync_remote()

    job.refresh_from_db()
    page = alice_client.get(reverse("job-detail", args=[job.public_id]), {"replica": "worker-0"})
    text = page.content.decode()
    assert page.status_code == 200
    assert job.status == JobStatus.RUNNING
    assert sorted(job.replicas.values_list("role", "index", "status")) == [
        ("master", 0, "running"),
        ("worker", 0, "running"),
    ]
    assert "epoch 2 loss 1.97" in text
    assert "/apis/kubeflow.org/v1/namespaces/ml/pytorchjobs" in text

    stopped = alice_client.post(reverse("job-stop", args=[job.public_id]), {"confirmed": "1"})
    worker.sync_remote()
    job.refresh_from_db()
    assert stopped.status_code == 302
    assert job.status == JobStatus.STOPPED
    assert fake.jobs() == []


def test_the_job_page_and_admin_show_the_secret_and_the_job_in_the_order_they_were_sent(
    fake, alice_client, alice, admin_client
):
    from jobs.backends import get_backend
    from tests.test_wizard import image_data

    draft = new_draft(alice_client)
    image = image_data(envs=[("HF_TOKEN", "hf_typed_secret", True)])
    complete_steps(alice_client, draft, **k8s_steps(), **{W.IMAGE: image})
    alice_client.post(reverse("wizard-submit", args=[draft.id]))
    job = Job.objects.get(owner=alice)
    get_backend("kubernetes").submit(job)
    [secret_call] = fake.calls("create secrets")
    [job_call] = fake.calls("create pytorchjobs")

    page = alice_client.get(reverse("job-detail", args=[job.public_id]))
    admin = admin_client.get(reverse("admin:jobs_job_change", args=[job.pk]))

    assert page.status_code == admin.status_code == 200
    for text in (page.content.decode(), admin.content.decode()):
        shown = html.unescape(
            re.search(r"<pre[^>]*\bapi-request\b[^>]*>(.*?)</pre>", text, re.S)[1]
        )
        first, second = shown.split("\n\nPOST ")
        line, _, body = first.partition("\n")
        assert line == "POST /api/v1/namespaces/ml/secrets?fieldValidation=Strict"
        assert json.loads(body)["stringData"] == {"HF_TOKEN": "******"}
        line, _, body = second.partition("\n")
        assert f"POST {line}" == f"POST {job_call.path}?fieldValidation=Strict"
        assert json.loads(body) == job_call.body
        assert "hf_typed_secret" not in text
    assert secret_call.body["stringData"] == {"HF_TOKEN": "hf_typed_secret"}


def test_a_custom_job_on_a_kubernetes_pool_is_reviewed_and_sent_as_a_jobset(
    fake, alice_client, alice
):
    from jobs.worker import Worker

    draft = new_draft(alice_client)
    steps = k8s_steps(framework="Custom")
    steps[W.RESOURCES] = resources_data(
        roles=[role("trainer", 2, A800, 4), role("evaluator", 1, A800, 1)]
    )
    complete_steps(alice_client, draft, **steps)

    page = alice_client.get(step_url(draft, W.REVIEW)).content.decode()

    line = re.search(r'id="request-line">([^<]*)<', page).group(1)
    body = json.loads(html.unescape(re.search(r'id="request-json">(.*?)</pre>', page, re.S)[1]))
    curl = html.unescape(re.search(r'id="request-curl">(.*?)</pre>', page, re.S).group(1))
    assert (
        line == "POST /apis/jobset.x-k8s.io/v1alpha2/namespaces/ml/jobsets?fieldValidation=Strict"
    )
    assert body["kind"] == "JobSet"
    assert [r["name"] for r in body["spec"]["replicatedJobs"]] == ["trainer", "evaluator"]
    assert f"curl -X POST '{fake.url}/apis/jobset.x-k8s.io/v1alpha2/namespaces/ml/jobsets" in curl
    envs = html.unescape(page[page.index('id="env-preview"') :])
    assert "AIHC_ROLE=evaluator" in envs and "AIHC_ROLE_INDEX=1" in envs
    alice_client.post(reverse("wizard-submit", args=[draft.id]))
    Worker().dispatch_remote()
    job = Job.objects.get(owner=alice)
    assert (job.status, job.external_id) == (JobStatus.QUEUED, fake.jobs()[0]["metadata"]["name"])
    assert fake.jobs()[0]["kind"] == "JobSet"


def container_envs(body: dict) -> dict[str, str]:
    """The master's container envs of a PyTorchJob body, by name."""
    master = body["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]
    return {e["name"]: e.get("value", "") for e in master["env"]}


def test_a_queue_groups_review_shows_task_1s_request_as_sent_and_says_how_each_tasks_differs(
    fake, alice_client, alice
):
    """Each task is sent with its own AIHC_GROUP_TASK_INDEX (jobs.backends.remote): the review
    showed the group's shared spec, a request no task is sent (left28)."""
    from jobs.backends import get_backend
    from tests.test_wizard import submission_data

    draft = new_draft(alice_client)
    steps = k8s_steps()
    steps[W.SUBMISSION] = submission_data(
        mode="queue", target_queue="gpu-queue", total="3", concurrency="3"
    )
    complete_steps(alice_client, draft, **steps)

    page = alice_client.get(step_url(draft, W.REVIEW)).content.decode()
    alice_client.post(reverse("wizard-submit", args=[draft.id]))
    tasks = list(Job.objects.filter(owner=alice).order_by("group_index"))
    for task in tasks:
        get_backend("kubernetes").submit(task)
    sent = [call.body for call in fake.calls("create pytorchjobs")]

    body = json.loads(html.unescape(re.search(r'id="request-json">(.*?)</pre>', page, re.S)[1]))
    curl = html.unescape(re.search(r'id="request-curl">(.*?)</pre>', page, re.S).group(1))
    reviewed = container_envs(body)
    assert (reviewed["AIHC_GROUP_TASK_INDEX"], reviewed["AIHC_GROUP_TASK_TOTAL"]) == ("0", "3")
    # Task 1's, as it was sent, but for the job ID the console fills in on submit.
    first = container_envs(sent[0])
    assert reviewed == {**first, "AIHC_JOB_ID": "<job-id>"}
    assert "AIHC_GROUP_TASK_INDEX" in curl
    assert [container_envs(b)["AIHC_GROUP_TASK_INDEX"] for b in sent] == ["0", "1", "2"]
    note = html.unescape(re.search(r'id="request-group-note">([^<]*)<', page)[1])
    assert note == (
        "这里显示的是任务 1 的请求。本组 3 个任务各自在开始时发送自己的请求，只有环境变量 "
        "AIHC_GROUP_TASK_INDEX 不同：任务 N 的值为 N-1（0 到 2），所以要手动运行任务 N，请把它设为 N-1。"
    )


def test_a_standalone_jobs_review_on_kubernetes_has_no_group_variables_nor_note(fake, alice_client):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, **k8s_steps())

    page = alice_client.get(step_url(draft, W.REVIEW)).content.decode()

    body = json.loads(html.unescape(re.search(r'id="request-json">(.*?)</pre>', page, re.S)[1]))
    assert "AIHC_GROUP_TASK_INDEX" not in container_envs(body)
    assert 'id="request-group-note"' not in page


# -- the custom framework's example (left31) -----------------------------------------------


def kubernetes_ray_example() -> str:
    return next(e["command"] for e in W.example_commands() if e["id"] == "Custom-kubernetes")


def custom_k8s_draft(client, upto: str = W.IMAGE):
    draft = new_draft(client)
    steps = k8s_steps(framework="Custom")
    steps[W.RESOURCES] = resources_data(
        roles=[role("head", 1, A800, 1), role("worker", 2, A800, 4)]
    )
    complete_steps(client, draft, upto=upto, **steps)
    return draft


def test_a_custom_job_on_a_kubernetes_pool_is_shown_rays_example_for_jobset_pods_first(
    fake, alice_client
):
    # left31: the PyTorch example showed first, whose MASTER_ADDR and RANK a custom job does
    # not get, and the local pool's Ray example (head at 127.0.0.1) was not offered.
    draft = custom_k8s_draft(alice_client)

    page = alice_client.get(step_url(draft, W.IMAGE)).content.decode()

    shown = html.unescape(page[page.index('id="example-command"') :])
    shown = shown[: shown.index("</pre>")]
    assert "ray start --address=$HEAD:$PORT" in shown and "HEAD=$JOBSET-head-0-0.$JOBSET" in shown
    assert "MASTER_ADDR" not in shown and "127.0.0.1" not in shown
    assert 'id="show-example-Custom-kubernetes" aria-pressed="true"' in page
    assert 'id="show-example-Custom"' not in page  # the local pool's
    start = page.index('id="injected-vars"')
    table = html.unescape(page[start : page.index("</table>", start)])
    assert "其他实例通过 <jobset>-<角色>-0-<序号>.<jobset> 访问该实例" in table
    # As the review lists it for each instance (qa67): the pods have it.
    assert "JOB_COMPLETION_INDEX" in table
    assert "本实例在其角色中的序号，同 AIHC_ROLE_INDEX（由 Job 控制器设置）" in table


def test_fill_in_this_example_writes_the_kubernetes_ray_command_into_a_custom_job(
    fake, alice_client
):
    draft = custom_k8s_draft(alice_client)

    r = post_step(
        alice_client,
        draft,
        W.IMAGE,
        image_data(command="keep me"),
        action="fill-example-Custom-kubernetes",
    )

    assert r.status_code == 302
    draft.refresh_from_db()
    # Its comments in the page's language, Chinese here (qa109); the same code as its command.
    example = next(e for e in W.example_commands() if e["id"] == "Custom-kubernetes")
    assert draft.data[W.IMAGE]["command"] == [example["commandZh"]]


RECORDING_RAY = """#!/bin/sh
# A stand-in for `ray` that notes how it was called: health-check answers 0 once (the head
# is up), then 1 (the head has gone), so a worker joins and then ends.
echo "$*" >> "$RAY_CALLS"
case "$1" in
  health-check) [ -e "$RAY_CALLS.up" ] && exit 1; touch "$RAY_CALLS.up"; exit 0 ;;
esac
exit 0
"""


def run_example_as(tmp_path, *, hostname: str, role: str, index: int):
    import os
    import subprocess

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "ray").write_text(RECORDING_RAY)
    (bin_dir / "ray").chmod(0o755)
    calls = tmp_path / "calls"
    env = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "RAY_CALLS": str(calls),
        "HOSTNAME": hostname,
        "AIHC_ROLE": role,
        "AIHC_ROLE_INDEX": str(index),
    }
    done = subprocess.run(
        ["bash", "-c", kubernetes_ray_example()],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done, calls.read_text().splitlines() if calls.exists() else []


def test_the_kubernetes_ray_example_joins_a_worker_to_the_head_pod_the_jobset_names(
    fake, alice_client, tmp_path
):
    draft = custom_k8s_draft(alice_client, upto=W.REVIEW)
    page = alice_client.get(step_url(draft, W.REVIEW)).content.decode()
    body = json.loads(html.unescape(re.search(r'id="request-json">(.*?)</pre>', page, re.S)[1]))
    # A pod's hostname, as the Indexed Job of the JobSet's replicatedJob gives it:
    # <jobset>-<replicatedJob>-<job index>-<completion index>, in the JobSet's subdomain.
    jobset = body["metadata"]["name"]
    assert body["spec"]["network"] == {"enableDNSHostnames": True, "subdomain": jobset}
    assert [r["name"] for r in body["spec"]["replicatedJobs"]] == ["head", "worker"]

    done, calls = run_example_as(tmp_path, hostname=f"{jobset}-worker-0-1", role="worker", index=1)

    head = f"{jobset}-head-0-0.{jobset}:6379"
    assert done.returncode == 0, done.stderr
    assert calls == [
        f"health-check --address={head}",
        f"start --address={head}",
        f"health-check --address={head}",
        "stop",
    ]


def test_the_kubernetes_ray_example_stops_saying_why_when_the_hostname_is_the_nodes(tmp_path):
    # On the host network a pod's hostname is its node's: no head address can be made.
    done, calls = run_example_as(tmp_path, hostname="gpu-1", role="worker", index=1)

    assert done.returncode == 1
    assert "hostname gpu-1 is not a JobSet pod's (host network?)" in done.stderr
    assert calls == []


def test_a_pytorch_job_built_in_the_wizard_runs_as_a_trainjob_and_its_page_follows_it(
    fake, alice_client, alice, settings
):
    from jobs.worker import Worker

    settings.KUBERNETES_TRAINING_API = "trainer"
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, **k8s_steps())
    page = alice_client.get(step_url(draft, W.REVIEW)).content.decode()
    line = re.search(r'id="request-line">([^<]*)<', page).group(1)
    assert line == (
        "POST /apis/trainer.kubeflow.org/v1alpha1/namespaces/ml/trainjobs?fieldValidation=Strict"
    )
    # What the torch runtime gives each node, and AIHC's MASTER_ADDR set from it.
    envs = env_boxes(page)
    assert envs["worker-0"]["PET_NODE_RANK"] == "1"
    assert envs["master-0"]["PET_MASTER_PORT"] == "29500"  # Trainer's ContainerTrainerPort
    assert envs["master-0"]["MASTER_ADDR"] == envs["master-0"]["PET_MASTER_ADDR"]

    alice_client.post(reverse("wizard-submit", args=[draft.id]))
    job = Job.objects.get(owner=alice)
    worker = Worker()
    worker.dispatch_remote()
    job.refresh_from_db()
    assert job.external_id == fake.jobs()[0]["metadata"]["name"]
    assert len(fake.calls("create trainjobs")) == 1
    [_master, worker_pod] = fake.run_pods(job.external_id, namespace="ml")
    fake.add_logs(worker_pod, ["epoch 2 loss 1.97"], namespace="ml")
    worker.sync_remote()

    job.refresh_from_db()
    detail = alice_client.get(reverse("job-detail", args=[job.public_id]), {"replica": "worker-0"})
    assert job.status == JobStatus.RUNNING
    assert "epoch 2 loss 1.97" in detail.content.decode()

    alice_client.post(reverse("job-stop", args=[job.public_id]), {"confirmed": "1"})
    worker.sync_remote()
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPED
    assert fake.jobs() == []


def test_tensorflow_is_refused_at_the_framework_field_on_a_kubeflow_trainer_cluster(
    fake, alice_client, settings
):
    from tests.test_wizard import field_errors

    settings.KUBERNETES_TRAINING_API = "trainer"
    draft = new_draft(alice_client)

    r = post_step(alice_client, draft, W.BASIC, k8s_steps(framework="TFJob")[W.BASIC])

    assert field_errors(r, "id_framework") == [
        "该 Kubernetes 集群以 Kubeflow Trainer v2 运行训练任务，它没有 TensorFlow 运行时：请选择 "
        "PyTorch、MPI 或自定义，或选择其他平台的资源池。"
    ]


def test_the_image_step_of_a_pytorch_job_on_a_trainer_cluster_lists_the_torch_runtimes_variables(
    fake, alice_client, settings
):
    settings.KUBERNETES_TRAINING_API = "trainer"
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.IMAGE, **k8s_steps())

    page = alice_client.get(step_url(draft, W.IMAGE)).content.decode()

    listed = re.findall(r'<th scope="row" class="font-monospace fw-normal">([A-Z_]+)</th>', page)
    assert {"PET_NNODES", "PET_NODE_RANK", "PET_MASTER_ADDR", "AIHC_ROLE"} <= set(listed)
    # AIHC's names, which the console's role line sets from the PET_* ones (qa73).
    assert {"MASTER_ADDR", "RANK", "WORLD_SIZE", "JOB_COMPLETION_INDEX"} <= set(listed)
    assert re.search(r">PET_MASTER_PORT</th>\s*<td[^>]*>\s*29500\s*<", page)


def test_the_pytorch_example_on_a_trainer_cluster_reads_only_variables_its_nodes_are_given(
    fake, alice_client, settings
):
    """qa73, failing: the example shown first (and written in by Fill in this example) for a
    PyTorch job on a Kubeflow Trainer cluster is the training operator's torchrun line, reading
    $WORLD_SIZE, $RANK, $MASTER_ADDR and $MASTER_PORT, which a TrainJob's nodes do not get (the
    same page lists PET_* instead): torchrun is given empty --nnodes/--node_rank/--master_addr
    and every node fails at start. A bare `torchrun` reads the PET_* variables itself."""
    settings.KUBERNETES_TRAINING_API = "trainer"
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.IMAGE, **k8s_steps())

    page = alice_client.get(step_url(draft, W.IMAGE)).content.decode()

    shown = html.unescape(page[page.index('id="example-command"') :])
    shown = shown[: shown.index("</pre>")]
    assert "torchrun" in shown
    read = set(re.findall(r"\$\{?([A-Z_][A-Z0-9_]*)", shown))
    listed = set(
        re.findall(r'<th scope="row" class="font-monospace fw-normal">([A-Z_]+)</th>', page)
    )
    assert read <= listed, f"the example reads {sorted(read - listed)}, which no node is given"


def test_a_command_written_for_aihc_finds_its_master_and_rank_on_a_trainer_clusters_nodes(
    fake, alice_client, settings
):
    """qa73, failing: seed 001's command (AIHC's own example) reads $WORLD_SIZE, $RANK,
    $MASTER_ADDR and $MASTER_PORT, as AIHC and a v1 cluster set them. On a Kubeflow Trainer
    cluster it is taken (wizard, import, API v1/v2), and each node runs `torch.distributed.launch
    --nnodes --node_rank --master_addr --master_port` with nothing after them and fails at start.
    The console's role line (manifests.trainer_command) could set them from the PET_* ones (node
    count, node rank, node 0's address and port: AIHC's meaning), which torchrun ignores and
    overrides in the processes it starts; or the image step could say so on the command."""
    settings.KUBERNETES_TRAINING_API = "trainer"
    command = (
        'DISTRIBUTED_ARGS="--nproc_per_node 8 --nnodes $WORLD_SIZE --node_rank $RANK '
        '--master_addr $MASTER_ADDR --master_port $MASTER_PORT"\n'
        "python -m torch.distributed.launch $DISTRIBUTED_ARGS pretrain_llama.py"
    )
    steps = k8s_steps()
    steps[W.IMAGE] = image_data(command=command)
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, **steps)

    envs = env_boxes(alice_client.get(step_url(draft, W.REVIEW)).content.decode())

    for node in ("master-0", "worker-0"):
        assert {"WORLD_SIZE", "RANK", "MASTER_ADDR", "MASTER_PORT"} <= set(envs[node]), node
    assert (envs["worker-0"]["RANK"], envs["worker-0"]["WORLD_SIZE"]) == ("1", "2")


def test_a_pytorchjobs_page_shows_the_pytorchjob_it_was_sent_after_the_setting_becomes_trainer(
    fake, alice_client, alice, admin_client, settings
):
    from jobs.worker import Worker

    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, **k8s_steps())
    alice_client.post(reverse("wizard-submit", args=[draft.id]))
    job = Job.objects.get(owner=alice)
    Worker().dispatch_remote()
    job.refresh_from_db()
    assert job.training_api == "v1"
    settings.KUBERNETES_TRAINING_API = "trainer"

    page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()
    admin = admin_client.get(reverse("admin:jobs_job_change", args=[job.pk])).content.decode()

    request = html.unescape(re.search(r'id="api-request"[^>]*>(.*?)</pre>', page, re.S).group(1))
    assert "POST /apis/kubeflow.org/v1/namespaces/ml/pytorchjobs?fieldValidation=Strict" in request
    assert '"kind": "PyTorchJob"' in request and "TrainJob" not in request
    assert "/pytorchjobs?" in html.unescape(admin) and "/trainjobs?" not in html.unescape(admin)
    # Its instances are told MASTER_ADDR and RANK, as the PyTorchJob's pods are.
    master = page[page.index('id="replica-env-master-0"') :]
    names = re.findall(r'<th scope="row"[^>]*>([A-Z_]+)</th>', master[: master.index("</table>")])
    assert "MASTER_ADDR" in names and "PET_MASTER_ADDR" not in names


def test_the_image_step_on_a_trainer_cluster_offers_no_tensorflow_example(
    fake, alice_client, settings
):
    """qa73: a Kubeflow Trainer cluster refuses TensorFlow, so its example is not offered."""
    settings.KUBERNETES_TRAINING_API = "trainer"
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.IMAGE, **k8s_steps())

    page = alice_client.get(step_url(draft, W.IMAGE)).content.decode()

    assert "show-example-PyTorchJob" in page
    assert "show-example-TFJob" not in page


def test_fault_tolerance_on_a_trainer_cluster_says_beside_its_switch_that_the_pool_has_none(
    fake, alice_client, settings
):
    settings.KUBERNETES_TRAINING_API = "trainer"
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.FAULT, **k8s_steps())

    page = alice_client.get(step_url(draft, W.FAULT)).content.decode()

    assert "此资源池不支持：这里的 PyTorch 任务是 Kubeflow Trainer 的 TrainJob" in page
    assert "检测到故障时自动重启任务" not in page


def test_automatic_deletion_on_a_trainer_cluster_is_refused_at_its_checkbox(
    fake, alice_client, settings
):
    from tests.test_wizard import advanced_data, field_errors

    settings.KUBERNETES_TRAINING_API = "trainer"
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.ADVANCED, **k8s_steps())

    r = post_step(alice_client, draft, W.ADVANCED, advanced_data(auto_delete="on"))

    assert field_errors(r, "id_auto_delete") == [
        "在此资源池中，PyTorch 任务是 Kubeflow Trainer 的 TrainJob，它没有此设置：请关闭自动删除。"
    ]
    assert field_errors(r, "id_retention_value") == []


def test_run_again_of_a_job_a_trainer_cluster_now_refuses_says_to_change_it_in_a_copy(
    fake, alice_client, alice, settings
):
    """qa73: Run again cannot turn fault tolerance off, as the refusal asked."""
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, **k8s_steps())
    alice_client.post(reverse("wizard-submit", args=[draft.id]))
    job = Job.objects.get(owner=alice)
    Job.objects.filter(pk=job.pk).update(
        spec={**job.spec, "faultTolerance": True}, status=JobStatus.SUCCEEDED
    )
    settings.KUBERNETES_TRAINING_API = "trainer"

    page = alice_client.post(reverse("job-rerun", args=[job.public_id]), follow=True)

    said = [str(m) for m in page.context["messages"]][-1]  # after the first submit's
    assert said.startswith("现在无法再次运行：在此资源池中，PyTorch 任务是 Kubeflow Trainer")
    assert said.endswith("任务会按原样发送：请复制该任务（复制）并在副本中修改所列内容。")
    assert Job.objects.count() == 1


def test_hang_detection_and_fault_tolerance_on_a_kubernetes_pool_say_no_hang_is_detected_there(
    fake, alice_client
):
    # qa109: their help says a hang restarts a job with fault tolerance on, which holds on
    # the local pool (and AIHC); a Kubernetes pool detects no hang and refuses the switch.
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.FAULT, **k8s_steps())

    hang = help_in_both_languages(alice_client, draft, W.FAULT, "hang_detection")
    fault_tolerance = help_in_both_languages(alice_client, draft, W.FAULT, "fault_tolerance")

    assert hang == (
        "此资源池不支持：控制台暂不检测 Kubernetes 资源池上的任务是否 hang。请保持关闭。",
        "Not on this pool: the console detects no hang of a job on a Kubernetes pool yet. "
        "Leave it off.",
    )
    assert fault_tolerance == (
        "任务失败时自动重启任务（仅支持 PyTorch）。此资源池不检测任务 hang，hang 不会触发重启。",
        "Restarts the job when it fails (PyTorch only). This pool detects no hang, so a hang "
        "restarts nothing.",
    )


def test_the_retry_limit_on_a_kubernetes_pool_says_the_job_is_restarted_whole_and_its_logs_go(
    fake, alice_client
):
    # qa96 said training-operator's in-place restarts, each replica's counted; since fix107
    # the console deletes the failed job and creates it again, as the local pool restarts it.
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.FAULT, **k8s_steps())

    chinese, english = help_in_both_languages(alice_client, draft, W.FAULT, "retry_limit")

    assert english == (
        "On this pool a failed job is restarted whole: deleted from the cluster and created "
        "again, every replica, up to this many times; at most 3, left empty 3. The console "
        "keeps the failed run's events and logs (the last 8 MB of each replica's); of a custom "
        "job, which its JobSet restarts, the events only."
    )
    assert chinese == (
        "此资源池上失败的任务整体重启：从集群中删除后重新创建，所有实例一起，最多重启所填次数；"
        "最多 3 次，留空为 3 次。控制台保留失败那次运行的事件和日志（每个实例最后 8 MB）；"
        "自定义任务由其 JobSet 重启，只保留事件。"
    )
