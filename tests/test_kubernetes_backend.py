"""The Kubernetes (Kubeflow) backend against the strict fake API server: inventory, refusals,
submission (idempotent), sync, stop (also racing the worker's sync), delete, logs."""

from __future__ import annotations

import dataclasses
import html
import json
import logging
import threading
import time
import uuid
from datetime import UTC, timedelta

import pytest
from django.db import connection
from django.urls import reverse
from django.utils import timezone, translation

from jobs import spec as S
from jobs.backends import BackendError, all_pools, get_backend
from jobs.backends.kubernetes import KubernetesBackend
from jobs.kubernetes import manifests as M
from jobs.logs import shown_lines
from jobs.models import EventType, Job, JobStatus
from jobs.services import jobs_submit
from tests.fake_kubernetes import FakeKubernetes, configure
from tests.test_aihc_backend import refused_looks_earlier, submit_pause_over, times_said

from . import test_api as v1

# The v1 API's fixtures: the console as a WSGI transport, Alice's key and AIHC client.
wsgi, alice_key, api = v1.wsgi, v1.alice_key, v1.api

A800 = "baidu.com/a800_80g_cgpu"
POOL = "k8s-default"


@pytest.fixture
def fake(settings):
    fake = FakeKubernetes().start()
    fake.add_namespace("team-a")
    fake.add_node("gpu-1", {"nvidia.com/gpu": "8"}, labels={"gpu": "a800"})
    fake.add_node("gpu-2", {"nvidia.com/gpu": "8"}, labels={"gpu": "a800"})
    fake.add_node("gpu-3", {"nvidia.com/gpu": "8"}, labels={"gpu": "a800"}, unschedulable=True)
    fake.add_node("cpu-1", {})
    fake.add_pod("other", "busy", node="gpu-1", requests={"nvidia.com/gpu": "6"})
    fake.add_pod("other", "done", node="gpu-2", requests={"nvidia.com/gpu": "8"}, phase="Succeeded")
    configure(
        settings,
        fake,
        KUBERNETES_NAMESPACES="default,team-a",
        KUBERNETES_ACCELERATORS=f"{A800}=nvidia.com/gpu;gpu=a800",
        KUBERNETES_VOLUMES="pfs=datasets",
        KUBERNETES_HOST_PATHS="scratch=/data/scratch",
    )
    yield fake
    fake.stop()


@pytest.fixture(autouse=True)
def english(settings):
    """Messages are read and recorded in English (the console defaults to Chinese)."""
    settings.LANGUAGE_CODE = "en"
    with translation.override("en"):
        yield


@pytest.fixture
def k8s():
    return get_backend("kubernetes")


def spec(**changes) -> S.JobSpec:
    spec = S.JobSpec(
        name="llm-train",
        resource_pool_id=POOL,
        framework=S.PYTORCH,
        image="registry.example.com/train:1.0",
        command="python train.py",
        roles=[S.Role("master", 1, A800, 8), S.Role("worker", 1, A800, 8)],
        envs=[S.Env("HF_TOKEN", "hf_secret_value", secret=True)],
        datasources=[S.Datasource("pfs", "datasets", "/mnt/data", "/llama")],
    )
    for key, value in changes.items():
        setattr(spec, key, value)
    return spec


def submitted(owner, k8s, **changes) -> Job:
    [job] = jobs_submit(
        owner=owner, spec=spec(**changes), submit_key=str(uuid.uuid4()), backend="kubernetes"
    )
    k8s.submit(job)
    job.refresh_from_db()
    return job


def reasons(job: Job) -> list[str]:
    return list(job.events.order_by("created_at", "id").values_list("reason", flat=True))


# -- inventory -------------------------------------------------------------------------


def test_each_namespace_is_a_pool_with_the_idle_cards_of_schedulable_matching_nodes(fake, k8s):
    pools = k8s.pools()

    assert [(p.id, p.name, p.backend) for p in pools] == [
        ("k8s-default", "Kubernetes · default", "kubernetes"),
        ("k8s-team-a", "Kubernetes · team-a", "kubernetes"),
    ]
    # gpu-3 is cordoned; gpu-1 has 6 cards taken; the finished pod holds none.
    assert [(a.type, a.total, a.idle) for a in pools[0].accelerators] == [(A800, 16, 10)]
    assert [(v.type, v.name) for v in pools[0].volumes] == [
        ("pfs", "datasets"),
        ("hostpath", "scratch"),
    ]
    assert pools[0].storage_types == ["pfs", "hostpath"]
    assert pools[0].queues == ["default"]
    assert not pools[0].stale and not pools[0].error


def test_the_api_counts_a_kubernetes_pools_card_nodes_and_those_in_use(fake, k8s, wsgi, api):
    """qa103: nodeCount was {"total": 0, "used": 0} with 2 card nodes."""
    k8s.pools()
    wait_for_inventory(k8s)

    got = api.request("GET", "/api/v1/resourcepools", idempotent=True)

    [pool] = [p for p in got["result"]["resourcePools"] if p["metadata"]["id"] == POOL]
    # gpu-1 (6 of its cards taken) and gpu-2 (none); gpu-3 is cordoned.
    assert pool["status"]["nodeCount"] == {"total": 2, "used": 1}


@pytest.mark.parametrize(
    ("tolerations", "figures"),
    [("", (A800, 24, 10)), ("dedicated=inference:NoSchedule", (A800, 32, 18))],
)
def test_cards_on_nodes_a_job_cannot_be_scheduled_on_are_not_counted_idle(
    fake, k8s, settings, tolerations, figures
):
    """A node not Ready (its GPU driver or kubelet down) and one with a NoSchedule or
    NoExecute taint the jobs do not tolerate (KUBERNETES_TOLERATIONS) take no job's pods:
    until qa55 their cards were counted idle, and a job asking for them waited Pending for
    good. A PreferNoSchedule taint only steers pods away, and a tolerated taint admits them."""
    settings.KUBERNETES_TOLERATIONS = tolerations
    gpus = {"nvidia.com/gpu": "8"}
    a800 = {"gpu": "a800"}
    fake.add_node("gpu-4", gpus, labels=a800, ready=False)
    taint = {"key": "dedicated", "value": "inference", "effect": "NoSchedule"}
    fake.add_node("gpu-5", gpus, labels=a800, taints=[taint])
    fake.add_node(
        "gpu-6", gpus, labels=a800, taints=[{"key": "spot", "effect": "PreferNoSchedule"}]
    )
    fake.add_pod("other", "on-spot", node="gpu-6", requests={"nvidia.com/gpu": "8"})

    [pool, _team] = k8s.pools()

    # gpu-1 and gpu-2 as before; gpu-6 counts, all its cards taken; gpu-5 when tolerated.
    assert stock(pool) == [figures]


def test_cards_on_nodes_tainted_with_their_own_resource_name_count_as_gke_admits_the_jobs(
    fake, k8s
):
    """GKE taints each GPU node `nvidia.com/gpu=present:NoSchedule`, and its
    ExtendedResourceToleration admission makes every pod asking for `nvidia.com/gpu` tolerate
    it: the jobs run there. review35: those cards counted neither idle nor in the total, so
    every standalone job was refused for want of idle cards. A NoExecute taint of that name,
    which the admission does not tolerate, still keeps a node out."""
    gpus = {"nvidia.com/gpu": "8"}
    a800 = {"gpu": "a800"}
    own = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    fake.add_node("gpu-4", gpus, labels=a800, taints=[own])
    fake.add_node("gpu-5", gpus, labels=a800, taints=[{**own, "effect": "NoExecute"}])

    [pool, _team] = k8s.pools()

    # gpu-1 and gpu-2 as before (16 cards, 10 idle), and gpu-4's 8.
    assert stock(pool) == [(A800, 24, 18)]


def test_kubernetes_pools_are_listed_beside_the_local_pool(fake, db):
    assert [p.id for p in all_pools()] == ["local", "k8s-default", "k8s-team-a"]


def test_polling_the_pools_reads_nodes_and_pods_at_most_once_per_cache_period(fake, k8s):
    for _ in range(5):
        k8s.pools()

    assert len(fake.calls("list nodes")) == len(fake.calls("list pods")) == 1


def test_a_failing_api_server_keeps_the_last_figures_marked_stale_with_the_error(
    fake, k8s, settings
):
    k8s.pools()
    settings.KUBERNETES_CACHE_SECONDS = 0
    fake.fail_next("list nodes", status=403, reason="Forbidden", message="nodes is forbidden")

    [pool, _team] = k8s.pools()

    assert pool.stale
    assert "nodes is forbidden" in pool.error
    assert [(a.type, a.idle) for a in pool.accelerators] == [(A800, 10)]


def wait_for_inventory(k8s) -> None:
    """Waits for the background refresh in flight, if any."""
    for inventory in list(k8s._inventories.values()):
        inventory.join()


def stock(pool) -> list[tuple[str, int, int]]:
    return [(a.type, a.total, a.idle) for a in pool.accelerators]


GPU_QUOTA = "requests.nvidia.com/gpu"


def test_a_namespace_quota_below_the_clusters_idle_cards_bounds_that_namespaces_pool(fake, k8s):
    fake.add_quota(
        "team-a", "gpus", hard={GPU_QUOTA: "8", "requests.cpu": "64"}, used={GPU_QUOTA: "5"}
    )
    fake.add_quota("team-a", "gpus-small", hard={GPU_QUOTA: "6"})

    default, team = k8s.pools()

    # The cluster has 10 of 16 idle; team-a may hold 6 at most (the least of its quotas) and
    # has room for 3 more (8 - 5).
    assert stock(team) == [(A800, 6, 3)]
    assert stock(default) == [(A800, 16, 10)]
    assert not team.stale and not team.error and not team.note
    assert [c.path for c in fake.calls("list resourcequotas")] == [
        "/api/v1/namespaces/default/resourcequotas",
        "/api/v1/namespaces/team-a/resourcequotas",
    ]


def test_a_namespace_quota_above_the_clusters_idle_cards_leaves_the_clusters_figures(fake, k8s):
    # A quota of 1000 cards, as the API server writes it in the quota's status.
    fake.add_quota("team-a", "gpus", hard={GPU_QUOTA: "1k"}, used={GPU_QUOTA: "2"})

    _default, team = k8s.pools()

    assert stock(team) == [(A800, 16, 10)]


def test_without_a_quota_on_its_cards_a_namespace_shows_the_clusters_idle_cards(fake, k8s):
    fake.add_quota("team-a", "compute", hard={"requests.cpu": "8", "requests.memory": "64Gi"})
    # A scoped quota applies to some pods only (here: one priority class): not counted.
    fake.add_quota("team-a", "low-gpus", hard={GPU_QUOTA: "0"}, scopes=("PriorityClass",))

    _default, team = k8s.pools()

    assert stock(team) == [(A800, 16, 10)]
    assert not team.stale and not team.note


def test_a_console_that_may_not_list_quotas_shows_the_clusters_figures_and_says_so_once(
    fake, k8s, settings, caplog
):
    fake.add_quota("team-a", "gpus", hard={GPU_QUOTA: "4"})
    fake.forbid("list", "resourcequotas", namespace="team-a")
    settings.KUBERNETES_CACHE_SECONDS = 0

    for _ in range(3):
        default, team = k8s.pools()
        wait_for_inventory(k8s)

    assert len(fake.calls("list resourcequotas")) == 6  # both namespaces, at each refresh
    assert stock(team) == [(A800, 16, 10)]
    assert "may not list the ResourceQuotas of team-a" in team.note
    assert team.error == "" and default.note == ""
    said = [r for r in caplog.records if "may not list resourcequotas in team-a" in r.getMessage()]
    assert len(said) == 1


def test_a_failed_quota_read_keeps_the_namespaces_last_figures_marked_stale(fake, k8s, settings):
    fake.add_quota("default", "gpus", hard={GPU_QUOTA: "4"}, used={GPU_QUOTA: "1"})
    k8s.pools()
    settings.KUBERNETES_CACHE_SECONDS = 0
    # The default namespace's list comes first; 3 failures outlast the client's 2 retries.
    fake.fail_next("list resourcequotas", status=500, reason="InternalError", times=3)

    k8s.pools()
    wait_for_inventory(k8s)
    settings.KUBERNETES_CACHE_SECONDS = 60

    default, team = k8s.pools()

    assert stock(default) == [(A800, 4, 3)]
    assert default.stale and "ResourceQuotas of default could not be read" in default.error
    assert not team.error


def test_a_slow_api_server_gets_the_last_figures_at_once_while_one_refresh_runs(
    fake, k8s, settings
):
    assert stock(k8s.pools()[0]) == [(A800, 16, 10)]
    settings.KUBERNETES_CACHE_SECONDS = 0
    settings.KUBERNETES_REFRESH_WAIT_SECONDS = 0.1
    fake.add_pod("other", "new", node="gpu-2", requests={"nvidia.com/gpu": "4"})
    release = fake.block_next("list nodes")
    try:
        during = [k8s.pools()[0] for _ in range(3)]  # would hang here if it waited for it
    finally:
        release.set()
        wait_for_inventory(k8s)
    settings.KUBERNETES_CACHE_SECONDS = 60

    assert all(stock(pool) == [(A800, 16, 10)] and pool.stale for pool in during)
    assert not any(pool.error for pool in during)
    assert len(fake.calls("list nodes")) == 2  # one refresh, not three
    assert stock(k8s.pools()[0]) == [(A800, 16, 6)]


def test_a_read_answered_503_then_500_is_tried_again_after_a_growing_pause_and_a_create_is_not(
    fake,
):
    from jobs.kubernetes.client import KubeClient, KubeError

    slept: list[float] = []
    client = KubeClient(
        server=fake.url, token=fake.token, retries=2, backoff=0.01, sleep=slept.append
    )
    fake.fail_next("list nodes", status=503, reason="ServiceUnavailable")
    fake.fail_next("list nodes", status=500)
    fake.fail_next("create pytorchjobs", status=503, reason="ServiceUnavailable")

    nodes = client.list("/api/v1/nodes")
    with pytest.raises(KubeError) as refused:
        client.create("/apis/kubeflow.org/v1/namespaces/default/pytorchjobs", {"kind": "x"})

    assert nodes and len(fake.calls("list nodes")) == 3
    assert slept == [0.01, 0.02]  # before the second and the third try; none for the create
    assert refused.value.status == 503 and len(fake.calls("create pytorchjobs")) == 1


def test_a_call_whose_connection_the_api_server_closed_says_so_not_that_it_timed_out(fake):
    """qa80: a dropped connection was worded "did not answer in time". Still no answer."""
    from jobs.backends.base import got_no_answer
    from jobs.kubernetes.client import KubeClient, KubeTimeout

    client = KubeClient(server=fake.url, token=fake.token, retries=0)
    fake.drop_next("list nodes")

    with pytest.raises(KubeTimeout) as caught:
        client.list("/api/v1/nodes")

    assert got_no_answer(caught.value)
    assert str(caught.value.message) == (
        "The Kubernetes API server closed the connection without answering"
    )
    with translation.override("zh-hans"):
        assert str(caught.value.message) == "Kubernetes API server 未响应就关闭了连接"


def test_the_fake_api_server_serves_resourcequotas_as_a_real_one_does(fake):
    from jobs.kubernetes.client import KubeClient, KubeError

    client = KubeClient(server=fake.url, token=fake.token, retries=0)
    fake.add_quota("team-a", "gpus", hard={GPU_QUOTA: "8"}, used={GPU_QUOTA: "5"})
    fake.forbid("list", "resourcequotas", namespace="default")

    def answer(method, path):
        try:
            return client.request(method, path, idempotent=False)
        except KubeError as exc:
            return exc.status, exc.reason, exc.message

    listed = answer("GET", "/api/v1/namespaces/team-a/resourcequotas")
    assert listed["kind"] == "ResourceQuotaList"
    assert listed["items"][0]["status"] == {"hard": {GPU_QUOTA: "8"}, "used": {GPU_QUOTA: "5"}}
    assert len(answer("GET", "/api/v1/resourcequotas")["items"]) == 1  # cluster-wide
    assert answer("GET", "/api/v1/namespaces/team-a/resourcequotas/gpus")["kind"] == "ResourceQuota"
    assert answer("GET", "/api/v1/namespaces/team-a/resourcequota")[:2] == (404, "NotFound")
    assert answer("GET", "/apis/v1/namespaces/team-a/resourcequotas")[:2] == (404, "NotFound")
    assert answer("GET", "/api/v1/namespaces/nowhere/resourcequotas")[:2] == (404, "NotFound")
    assert answer("DELETE", "/api/v1/namespaces/team-a/resourcequotas/gpus")[0] == 405
    status, reason, message = answer("GET", "/api/v1/namespaces/default/resourcequotas")
    assert (status, reason) == (403, "Forbidden")
    assert 'cannot list resource "resourcequotas" in API group "" in the namespace "default"' in (
        message
    )
    # As the API server's validation: an extended resource is limited only as requests.<name>.
    for key in ("nvidia.com/gpu", "limits.nvidia.com/gpu"):
        with pytest.raises(ValueError, match="requests"):
            fake.add_quota("team-a", "bad", hard={key: "1"})


def test_a_misconfigured_backend_offers_no_pools_and_fails_submits_with_the_reason(
    fake, k8s, settings, alice
):
    settings.KUBERNETES_TOKEN = ""

    assert k8s.pools() == []
    job = submitted(alice, k8s)
    assert job.status == JobStatus.SUBMIT_FAILED
    assert job.status_reason.startswith("KUBERNETES_TOKEN")


def test_the_token_is_sent_as_a_bearer_token_and_a_wrong_one_is_refused(fake, k8s, settings):
    settings.KUBERNETES_TOKEN = "wrong"
    settings.KUBERNETES_CACHE_SECONDS = 0

    [pool, _team] = k8s.pools()

    assert "Unauthorized" in pool.error
    assert fake.token not in pool.error


def test_a_token_file_is_read_again_when_it_changes(fake, k8s, settings, tmp_path):
    token = tmp_path / "token"
    token.write_text("old-token\n")
    settings.KUBERNETES_TOKEN = ""
    settings.KUBERNETES_TOKEN_FILE = str(token)
    settings.KUBERNETES_CACHE_SECONDS = 0

    refused = k8s.pools()[0].error
    token.write_text(fake.token)
    accepted = k8s.pools()[0].error

    assert "Unauthorized" in refused
    assert accepted == ""


def test_a_call_in_flight_when_the_token_file_rotates_is_answered_and_later_calls_send_the_new(
    fake, k8s, alice, settings, tmp_path, transactional_db
):
    """The worker's sync of one job waits on the API server while another call reads the
    rotated token file: `_setup` closed the client under the sync, whose answer was then lost
    and the rest of the sync refused ("Cannot send a request, as the client has been
    closed"), though the server answered it (until review 48)."""
    token = tmp_path / "token"
    token.write_text(fake.token)
    settings.KUBERNETES_TOKEN = ""
    settings.KUBERNETES_TOKEN_FILE = str(token)
    first, second = submitted(alice, k8s), submitted(alice, k8s)
    fake.set_conditions(first.external_id, ("Running", "running"))
    fake.run_pods(first.external_id)
    answer = fake.block_next("get pytorchjobs")  # the old token accepted, its answer held
    before = len(fake.calls("get pytorchjobs"))
    raised: list[BaseException] = []

    def worker_syncs() -> None:
        try:
            k8s.sync(Job.objects.get(pk=first.pk))
        except BaseException as exc:
            raised.append(exc)
        finally:
            connection.close()

    worker = threading.Thread(target=worker_syncs)
    worker.start()
    try:
        deadline = time.monotonic() + 10
        while len(fake.calls("get pytorchjobs")) == before and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(fake.calls("get pytorchjobs")) == before + 1
        fake.rotate_token("rotated-token")  # the kubelet writes the new one
        token.write_text(fake.token)
        k8s.sync(second)  # sets up the new client while the first sync waits on the old
    finally:
        answer.set()
        worker.join(30)

    assert not worker.is_alive()
    assert raised == []
    first.refresh_from_db()
    assert first.status == JobStatus.RUNNING, first.status_reason
    # The worker's later calls send the new token; the call in flight had the old one.
    sent = [c.headers["authorization"] for c in fake.calls("list pods")[-2:]]
    assert sent == ["Bearer rotated-token"] * 2


def test_an_https_api_server_is_trusted_through_the_configured_ca_file(
    fake, k8s, settings, tmp_path
):
    import subprocess

    cert, key = tmp_path / "apiserver.crt", tmp_path / "apiserver.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"]
        + ["-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1"]
        + ["-addext", "subjectAltName=IP:127.0.0.1", "-addext", "basicConstraints=critical,CA:TRUE"]
        + ["-addext", "keyUsage=critical,keyCertSign,digitalSignature,keyEncipherment"],
        check=True,
        capture_output=True,
    )
    secure = FakeKubernetes(tls=(str(cert), str(key))).start()
    secure.add_node("gpu-1", {"nvidia.com/gpu": "8"}, labels={"gpu": "a800"})
    settings.KUBERNETES_API_URL = secure.url
    settings.KUBERNETES_CACHE_SECONDS = 0
    try:
        untrusted = k8s.pools()[0]
        settings.KUBERNETES_CA_FILE = str(cert)
        trusted = k8s.pools()[0]
    finally:
        secure.stop()

    assert secure.url.startswith("https://")
    # Its certificate is no system CA's: said so, with the setting that fixes it.
    assert "certificate is not trusted (KUBERNETES_CA_FILE)" in untrusted.error
    assert trusted.error == ""
    assert [(a.total, a.idle) for a in trusted.accelerators] == [(8, 8)]


def test_a_token_the_api_server_refuses_keeps_jobs_queued_and_the_pool_stale_saying_renew_it(
    fake, k8s, alice, settings
):
    """qa103: a 401 (the token expired, or rotated without KUBERNETES_TOKEN_FILE) was taken
    as the job's refusal: every job submitted meanwhile was Submission failed. It is the
    cluster unavailable to the console, as a CA not trusted is."""
    settings.KUBERNETES_CACHE_SECONDS = 0
    good = fake.token
    fake.token = "the-new-one"  # the console's token is refused from now on: 401

    job = submitted(alice, k8s)
    pool = k8s.pools()[0]
    with translation.override("zh-hans"):
        pool_in_chinese = k8s.pools()[0]

    assert (job.status, job.external_id) == (JobStatus.QUEUED, "")
    deferred = job.events.get(reason="SubmitDeferred")
    assert "The console's Kubernetes token was refused: renew KUBERNETES_TOKEN_FILE" in (
        deferred.message
    )
    assert "the-new-one" not in deferred.message and good not in deferred.message
    assert not fake.calls("create pytorchjobs")[1:]  # refused, and not sent again at once
    assert pool.stale
    assert "token was refused: renew KUBERNETES_TOKEN_FILE (Unauthorized, HTTP 401)" in pool.error
    assert "控制台的 Kubernetes 令牌被拒绝" in pool_in_chinese.error

    fake.token = good  # renewed
    submit_pause_over(k8s)
    k8s.submit(job)
    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED and job.external_id != ""
    assert k8s.pools()[0].error == ""


def test_a_token_refused_while_a_job_runs_leaves_it_running_and_its_stop_pending(fake, k8s, alice):
    job = running(fake, k8s, submitted(alice, k8s))
    fake.token = "the-new-one"

    with pytest.raises(BackendError, match="renew KUBERNETES_TOKEN_FILE"):
        k8s.sync(job)
    k8s.stop(job)  # sent again until the token is renewed, not "Kubernetes did not stop"

    job.refresh_from_db()
    assert job.status == JobStatus.STOPPING
    assert job.stop_sent_at is not None


# -- refusals ----------------------------------------------------------------------------


def test_it_refuses_what_the_cluster_cannot_run_on_the_right_fields(fake, k8s):
    errors = k8s.check_spec(
        spec(
            framework=S.CUSTOM,
            queue="research",
            roles=[S.Role("trainer", 1, "nvidia.com/h100", 8)],
            datasources=[
                S.Datasource("pfs", "other-claim", "/mnt/a"),
                S.Datasource("bos", "", "/mnt/b", "bos://bucket/x"),
                S.Datasource("hostpath", "scratch", "/mnt/c", "/../etc"),
            ],
            image_config=S.ImageConfig("me", "pw"),
            enable_rdma=True,
            log_persistence=True,
        )
    )

    assert set(errors) == {
        "queue",
        "roles[0].acceleratorType",
        "datasources[0].name",
        "datasources[1].type",
        "datasources[2].sourcePath",
        "jobSpec.imageConfig",
        "jobSpec.enableRDMA",
        "logPersistence",
    }
    assert errors["datasources[0].name"] == [
        "The cluster has no pfs volume “other-claim”; it has datasets."
    ]


def test_it_refuses_more_than_one_tensorflow_evaluator_as_tensorflow_does(fake, k8s):
    roles = [S.Role("chief", 1, A800, 1), S.Role("evaluator", 2, A800, 1)]

    errors = k8s.check_spec(spec(framework=S.TENSORFLOW, roles=roles))

    assert errors == {"roles[1].replicas": ["TensorFlow allows at most 1 evaluator."]}


def test_it_refuses_a_tensorflow_job_with_neither_chief_nor_worker_which_never_succeeds(fake, k8s):
    # The training operator's TFJob succeeds on its chief's (or worker 0's) exit 0 alone.
    alone = [S.Role("chief", 0, A800, 1), S.Role("worker", 0), S.Role("evaluator", 1)]

    with translation.override("en"):
        errors = k8s.check_spec(spec(framework=S.TENSORFLOW, roles=[*alone, S.Role("ps", 1)]))

    assert errors == {
        "roles": [
            "On Kubernetes a TensorFlow job needs a chief or a worker: the training operator "
            "ends a job when its chief (or worker 0) exits 0, so a job of an evaluator and ps "
            "alone would run until its time limit."
        ]
    }
    alone[1].replicas = 1
    assert k8s.check_spec(spec(framework=S.TENSORFLOW, roles=alone)) == {}


def test_a_tensorflow_job_of_ps_alone_gets_the_specs_one_message_not_a_second_from_kubernetes(
    fake, k8s
):
    # qa78: two messages, the first's advice (add an evaluator) refused by the second.
    ps_alone = spec(framework=S.TENSORFLOW, roles=[S.Role("worker", 0), S.Role("ps", 1)])

    with translation.override("en"):
        pool_errors = k8s.check_spec(ps_alone)
        [spec_error] = S.validate(ps_alone)["roles"]

    assert "roles" not in pool_errors
    assert spec_error.endswith("Add a chief or a worker.")


def test_an_mpi_master_with_cards_needs_workers_with_cards_as_the_operator_gives_equal_slots(
    fake, k8s
):
    cpu_workers = [S.Role("master", 1, A800, 8), S.Role("worker", 2, "", 0, cpu=8)]
    gpu_workers = [S.Role("master", 1, A800, 8), S.Role("worker", 2, A800, 8)]
    cpu_master = [S.Role("master", 1, "", 0, cpu=4), S.Role("worker", 2, "", 0, cpu=8)]
    alone = [S.Role("master", 1, A800, 8), S.Role("worker", 0, "", 0)]

    errors = k8s.check_spec(spec(framework=S.MPI, roles=cpu_workers))

    assert errors == {
        "roles[0].accelerators": [
            "On Kubernetes the MPI operator gives the master as many slots as each worker "
            "(slotsPerWorker): give the workers the master's cards, or the master none."
        ]
    }
    for fine in (gpu_workers, cpu_master, alone):
        assert k8s.check_spec(spec(framework=S.MPI, roles=fine)) == {}


def test_plain_variables_every_role_carries_past_1_mib_are_refused_and_taken_as_secrets(fake, k8s):
    """Review of session 52: the spec's 1 MiB of command and variables is one pod's; each
    role's pod template carries the plain ones, and etcd keeps an object of at most 1.5 MiB.
    600 KB of values in a job of two roles made a PyTorchJob of 1.2 MB and more."""
    from jobs.backends.kubernetes import MAX_POD_TEMPLATES_BYTES

    big = [S.Env(f"DATA_{i}", "😀" * 30_000) for i in range(5)]  # 120,000 bytes each
    plain = spec(envs=big)
    secret = spec(envs=[dataclasses.replace(env, secret=True) for env in big])
    assert S.validate(plain) == {} and S.validate(secret) == {}

    with translation.override("en"):
        [refusal] = k8s.check_spec(plain)["envs"]
    assert refusal.startswith(
        "On Kubernetes each of the job's 2 roles carries the command and the variables not "
        "marked secret in its pod template: 1,200,"
    )
    assert "at most 1,048,576 (1 MiB here)" in refusal
    _, resource = k8s.manifests(plain, job_id="x", cluster=M.Cluster())
    assert len(json.dumps(resource, ensure_ascii=False).encode()) > MAX_POD_TEMPLATES_BYTES
    # Marked secret, they are in the Secret once, and each template names them only.
    assert k8s.check_spec(secret) == {}
    _, resource = k8s.manifests(secret, job_id="x", cluster=M.Cluster())
    assert len(json.dumps(resource).encode()) < 64 * 1024


def test_a_refused_spec_fails_without_calling_the_api_server(fake, k8s, alice):
    job = submitted(alice, k8s, enable_rdma=True)

    assert job.status == JobStatus.SUBMIT_FAILED
    assert "jobSpec.enableRDMA" in job.status_reason
    assert not fake.calls("create secrets") and not fake.jobs()


def test_the_preview_of_a_custom_job_is_its_jobset_and_a_broken_setup_still_shows(
    fake, k8s, settings
):
    custom = k8s.request_preview(spec(framework=S.CUSTOM, roles=[S.Role("trainer", 1)]))
    settings.KUBERNETES_TOKEN = ""
    broken = k8s.request_preview(spec())

    assert custom.body["kind"] == "JobSet"
    assert (
        custom.path
        == "/apis/jobset.x-k8s.io/v1alpha2/namespaces/default/jobsets?fieldValidation=Strict"
    )
    assert broken.body["kind"] == "PyTorchJob"
    assert broken.endpoint == ""


# -- submission --------------------------------------------------------------------------


def test_submitting_creates_the_secret_then_the_pytorchjob_exactly_as_previewed(fake, k8s, alice):
    job = submitted(alice, k8s)

    name = M.object_name(job.job_spec(), job.public_id)
    assert job.status == JobStatus.QUEUED
    assert job.external_id == name
    [secret_call] = fake.calls("create secrets")
    [job_call] = fake.calls("create pytorchjobs")
    assert fake.requests.index(secret_call) < fake.requests.index(job_call)
    assert secret_call.body["stringData"] == {"HF_TOKEN": "hf_secret_value"}
    assert job_call.param("fieldValidation") == "Strict"
    preview = k8s.request_preview(job.job_spec(), job_id=job.public_id, owner="alice")
    assert job_call.body == preview.body
    assert f"{preview.path}" == f"{job_call.path}?fieldValidation=Strict"
    assert preview.before[0].body["stringData"] == {"HF_TOKEN": "******"}
    # The Secret belongs to the job's resource: deleting one deletes the other.
    [owner] = fake.secret(f"{name}-env")["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["uid"]) == ("PyTorchJob", fake.job(name)["metadata"]["uid"])
    assert reasons(job) == ["Created", "Submitting", "Submitted"]
    # Kept for AIHC's GetJob's k8sUID (qa105).
    assert job.k8s_uid == fake.job(name)["metadata"]["uid"]


def test_every_object_and_pod_template_says_the_console_made_it_for_whom_and_its_page(
    fake, k8s, alice, alice_client, settings
):
    """qa103: a cluster admin saw only ai-job-console/job-id on the console's objects."""
    settings.SITE_URL = "https://console.example.com/ai"
    job = submitted(alice, k8s)
    custom = submitted(
        alice,
        k8s,
        framework=S.CUSTOM,
        roles=[S.Role("trainer", 2, A800, 8)],
    )
    name = job.external_id
    annotations = {
        "ai-job-console/user": "alice",
        "ai-job-console/url": f"https://console.example.com/ai/jobs/{job.public_id}/",
    }

    sent = fake.job(name)
    metadata = [
        sent["metadata"],
        fake.secret(f"{name}-env")["metadata"],
        *(r["template"]["metadata"] for r in sent["spec"]["pytorchReplicaSpecs"].values()),
    ]
    jobset = fake.objects[("jobsets", "default", custom.external_id)]
    for replicated in jobset["spec"]["replicatedJobs"]:
        metadata += [replicated["template"]["metadata"]]
        metadata += [replicated["template"]["spec"]["template"]["metadata"]]
    assert len(metadata) == 6
    for meta in metadata:
        assert meta["labels"]["app.kubernetes.io/managed-by"] == "ai-job-console"
        assert meta["labels"]["ai-job-console/job-id"] in (job.public_id, custom.public_id)
        assert meta["annotations"]["ai-job-console/user"] == "alice"
    assert {k: sent["metadata"]["annotations"][k] for k in annotations} == annotations
    # The job page's request is the one sent, annotations and all.
    page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()
    assert '"ai-job-console/user": "alice"' in html.unescape(page)
    fake.run_pods(name)
    pod = fake.pods[("default", f"{name}-master-0")]
    assert pod["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "ai-job-console"

    # The default SITE_URL, this machine's loopback address: no one at the cluster opens it.
    settings.SITE_URL = "http://127.0.0.1:8000"
    local = submitted(alice, k8s)
    assert fake.job(local.external_id)["metadata"]["annotations"] == {
        "ai-job-console/user": "alice"
    }


@pytest.mark.parametrize(
    "site_url",
    [
        "http://0.0.0.0:8000",
        "http://[::]:8000",
        "http://[::ffff:127.0.0.1]:8000",
        "http://127.1.2.3",
    ],
)
def test_a_site_url_only_this_machine_opens_puts_no_job_page_on_the_objects(
    fake, k8s, alice, settings, site_url
):
    """review56: only a host starting "127." (and ::1, localhost) was taken as this machine,
    so the unspecified 0.0.0.0 and :: and an IPv4-mapped loopback were put on every object as
    the job's page, which no one at the cluster can open."""
    settings.SITE_URL = site_url

    job = submitted(alice, k8s)

    assert fake.job(job.external_id)["metadata"]["annotations"] == {"ai-job-console/user": "alice"}


def test_a_site_url_at_an_address_the_cluster_reaches_is_put_on_the_objects(
    fake, k8s, alice, settings
):
    settings.SITE_URL = "http://10.0.0.5:8000"

    job = submitted(alice, k8s)

    annotations = fake.job(job.external_id)["metadata"]["annotations"]
    assert annotations["ai-job-console/url"] == f"http://10.0.0.5:8000/jobs/{job.public_id}/"


def test_a_create_that_got_no_answer_is_sent_again_and_what_it_made_is_adopted(fake, k8s, alice):
    fake.drop_next("create pytorchjobs", after=True)  # created, but the answer was lost

    job = submitted(alice, k8s)
    assert job.status == JobStatus.QUEUED and job.external_id == ""
    k8s.submit(job)
    job.refresh_from_db()

    assert len(fake.jobs()) == 1
    assert job.external_id == fake.jobs()[0]["metadata"]["name"]
    assert job.k8s_uid == fake.jobs()[0]["metadata"]["uid"]  # the adopted resource's
    assert len(fake.calls("create pytorchjobs")) == 2
    assert reasons(job)[-3:] == ["SubmitRetry", "Submitting", "Submitted"]
    assert "adopted" in job.events.get(reason="Submitted").message


def test_a_worker_that_died_mid_create_leaves_a_job_that_is_adopted_not_duplicated(
    fake, k8s, alice
):
    job = submitted(alice, k8s)
    name = job.external_id
    # As if the worker died after the create reached the API server.
    Job.objects.filter(pk=job.pk).update(
        status=JobStatus.SUBMITTING,
        external_id="",
        updated_at=timezone.now() - timedelta(minutes=5),
    )
    job.refresh_from_db()

    k8s.sync(job)  # the worker's sync finds it stuck
    job.refresh_from_db()
    k8s.submit(job)  # and the next dispatch sends it again
    job.refresh_from_db()

    assert (job.status, job.external_id) == (JobStatus.QUEUED, name)
    assert len(fake.jobs()) == 1


def test_an_object_of_that_name_that_is_not_this_jobs_is_left_alone(fake, k8s, alice):
    [job] = jobs_submit(
        owner=alice, spec=spec(), submit_key=str(uuid.uuid4()), backend="kubernetes"
    )
    name = M.object_name(job.job_spec(), job.public_id)
    fake.objects[("pytorchjobs", "default", name)] = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name, "namespace": "default", "labels": {"owner": "someone"}},
        "spec": {},
    }

    k8s.submit(job)
    job.refresh_from_db()

    assert job.status == JobStatus.SUBMIT_FAILED
    assert f"A PyTorchJob named {name} already exists" in job.status_reason
    assert fake.job(name)["metadata"]["labels"] == {"owner": "someone"}


def test_a_refusal_by_the_api_server_fails_the_submit_with_its_message_and_removes_the_secret(
    fake, k8s, alice
):
    fake.fail_next(
        "create pytorchjobs",
        status=403,
        reason="Forbidden",
        message="exceeded quota: gpu-quota, requested: requests.nvidia.com/gpu=16, hf_secret_value",
    )

    job = submitted(alice, k8s)

    assert job.status == JobStatus.SUBMIT_FAILED
    assert "exceeded quota: gpu-quota" in job.status_reason
    assert "Forbidden" in job.status_reason
    assert "hf_secret_value" not in job.status_reason
    assert fake.secret(f"{M.object_name(job.job_spec(), job.public_id)}-env") is None


def test_an_unreachable_api_server_keeps_the_job_queued_and_pauses_submits(
    fake, k8s, alice, settings
):
    settings.KUBERNETES_API_URL = "http://127.0.0.1:9"  # nothing listens there

    job = submitted(alice, k8s)
    k8s.submit(job)  # within the pause: not even tried

    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED
    assert reasons(job) == ["Created", "Submitting", "SubmitDeferred"]
    assert "could not be reached" in job.events.get(reason="SubmitDeferred").message


def test_the_log_says_an_unreachable_api_server_in_english_under_the_default_chinese(
    fake, k8s, settings, caplog
):
    """What is written for the operator is English in either language (README, "First
    log-in"): the client's words for a transport failure are translated (qa94)."""
    settings.KUBERNETES_API_URL = "http://127.0.0.1:9"  # nothing listens there
    settings.LANGUAGE_CODE = "zh-hans"
    k8s._inventories.clear()  # read afresh: another test may have read this address

    with translation.override("zh-hans"), caplog.at_level(logging.WARNING, "jobs.kubernetes"):
        k8s.pools()
        wait_for_inventory(k8s)

    [said] = [m for m in caplog.messages if m.startswith("Kubernetes inventory read failed")]
    assert said.startswith(
        "Kubernetes inventory read failed: The Kubernetes API server could not be reached"
    )


def test_an_api_server_that_does_not_answer_holds_up_the_workers_round_for_one_job_only(
    fake, alice, settings, caplog
):
    """The worker syncs remote jobs in the loop that also supervises local ones (their stops,
    timeouts, starts). An API server that takes connections and never answers costs each
    job its read timeout, three times: with 40 running jobs and the default 30 s, an hour
    in which no local job was stopped or started (until qa55). Once one job's sync got no
    answer, the cluster's other jobs wait for the next round, with one line saying so."""
    from jobs.worker import Worker

    settings.WORKER_REMOTE_SYNC_SECONDS = 0
    settings.KUBERNETES_READ_TIMEOUT = 0.3
    k8s = get_backend("kubernetes")
    jobs = [submitted(alice, k8s, name=f"train-{i}") for i in range(3)]
    fake.requests.clear()
    for _ in range(9):  # every try of every job's read
        fake.delay_next("get pytorchjobs", 1.0)

    Worker().sync_remote()

    assert len(fake.calls("get pytorchjobs")) == 3  # one job's tries, not nine
    skipped = [r.getMessage() for r in caplog.records if "not synced this round" in r.getMessage()]
    assert skipped == ["kubernetes did not answer: 2 more of its jobs not synced this round"]

    fake.faults.clear()
    for job in jobs:
        fake.set_conditions(job.external_id, ("Created", "created"), ("Running", "running"))
    Worker().sync_remote()
    assert {Job.objects.get(pk=job.pk).status for job in jobs} == {JobStatus.RUNNING}


def test_jobs_after_one_the_api_server_never_answers_are_synced_in_the_next_round(
    fake, alice, settings
):
    """The hold-up above leaves a cluster's other jobs for the next round once one job got
    no answer. When the server answers the others and only that one job's reads hang, the
    jobs after it in the round's order were left every round and never synced again (seen
    in session 31's last read). A job that got no answer is now synced after the others."""
    from jobs.worker import Worker

    settings.WORKER_REMOTE_SYNC_SECONDS = 0
    settings.KUBERNETES_READ_TIMEOUT = 0.3
    k8s = get_backend("kubernetes")
    jobs = [submitted(alice, k8s, name=f"train-{i}") for i in range(3)]
    newest = jobs[-1]  # the first the round syncs
    fake.stall(newest.external_id, 1.0)
    worker = Worker()
    worker.sync_remote()  # the newest gets no answer; the two others wait
    for job in jobs:
        fake.set_conditions(job.external_id, ("Created", "created"), ("Running", "running"))

    worker.sync_remote()

    statuses = {job.name: Job.objects.get(pk=job.pk).status for job in jobs}
    assert statuses == {
        "train-0": JobStatus.RUNNING,
        "train-1": JobStatus.RUNNING,
        "train-2": newest.status,  # still no answer
    }


def test_an_api_server_that_answers_nothing_is_asked_about_a_different_job_each_round(
    fake, alice, settings
):
    """With every read unanswered, each round tries one job: a different one each round,
    the one that has waited longest, so a server that comes back is asked about each."""
    from jobs.worker import Worker

    settings.WORKER_REMOTE_SYNC_SECONDS = 0
    settings.KUBERNETES_READ_TIMEOUT = 0.2
    k8s = get_backend("kubernetes")
    jobs = [submitted(alice, k8s, name=f"train-{i}") for i in range(3)]
    for job in jobs:
        fake.stall(job.external_id, 0.6)
    worker = Worker()
    asked = []
    for _ in range(4):
        fake.requests.clear()
        worker.sync_remote()
        [name] = {c.path.rsplit("/", 1)[1] for c in fake.calls("get pytorchjobs")}
        asked.append(name)

    names = [job.external_id for job in reversed(jobs)]  # newest first
    assert asked == [*names, names[0]]


def test_a_slow_api_server_is_synced_over_several_passes_not_in_one_long_one(fake, alice, settings):
    """Each pass of the remote thread (Worker.remote_pass) asks the lease before it goes on,
    and until the remote thread the tick that synced remote jobs also stopped, started and
    timed out local ones. An API server answering each read in its own time (slow, not
    silent) cost one pass every job's reads in turn (until session 32, 40 jobs at 5 s a read:
    minutes without a local job stopped). A pass now syncs for about REMOTE_TICK_SECONDS; the
    round goes on at the next."""
    from jobs.worker import REMOTE_TICK_SECONDS, Worker

    settings.WORKER_REMOTE_SYNC_SECONDS = 600  # one round here; the passes after go on with it
    settings.KUBERNETES_READ_TIMEOUT = 5
    k8s = get_backend("kubernetes")
    jobs = [submitted(alice, k8s, name=f"train-{i}") for i in range(8)]
    read_seconds = REMOTE_TICK_SECONDS / 5
    for job in jobs:
        fake.stall(job.external_id, read_seconds)
        fake.set_conditions(job.external_id, ("Created", "created"), ("Running", "running"))
    worker = Worker()

    def running() -> int:
        return Job.objects.filter(pk__in=[j.pk for j in jobs], status=JobStatus.RUNNING).count()

    worker.remote_pass()
    after_one_pass = running()
    passes = 1
    while running() < len(jobs) and passes < 5:
        worker.remote_pass()
        passes += 1

    assert 1 <= after_one_pass <= 5  # five reads fill the budget
    assert running() == len(jobs) and passes >= 2
    fake.requests.clear()
    worker.remote_pass()  # the round is over, and the next is 600 s away
    assert fake.calls("get pytorchjobs") == []


def test_with_no_time_left_each_call_syncs_the_rounds_next_job_and_submits_the_next_job(
    fake, alice, settings
):
    from jobs.worker import Worker

    k8s = get_backend("kubernetes")
    jobs = [submitted(alice, k8s, name=f"train-{i}") for i in range(3)]
    queued = [
        jobs_submit(
            owner=alice,
            spec=spec(name=f"later-{i}"),
            submit_key=str(uuid.uuid4()),
            backend="kubernetes",
        )[0]
        for i in range(2)
    ]
    fake.requests.clear()
    worker = Worker()

    synced = []
    for _ in range(3):
        worker.sync_remote(budget=0)
        synced.append([c.path.rsplit("/", 1)[1] for c in fake.calls("get pytorchjobs")])
        fake.requests.clear()
    worker.dispatch_remote(budget=0)
    sent_first = Job.objects.filter(pk__in=[j.pk for j in queued]).exclude(external_id="")

    assert synced == [[job.external_id] for job in reversed(jobs)]  # newest first, one a call
    assert [job.name for job in sent_first] == ["later-0"]  # oldest first, one a call


def test_a_create_that_gets_no_answer_pauses_the_other_submits_instead_of_each_waiting(
    fake, alice, settings
):
    """A create the API server never answers may have landed, so it is sent again (and
    adopted if it did), but the other queued jobs are not sent into the same silence one
    after another, each costing the worker's loop its read timeout (until qa55: 20 queued
    jobs and the default 30 s, ten minutes a round, four rounds, and every job Submit failed
    with no local job started meanwhile). Submits pause as after an unreachable server."""
    from jobs.worker import Worker

    settings.KUBERNETES_READ_TIMEOUT = 0.3
    jobs = [
        jobs_submit(
            owner=alice,
            spec=spec(name=f"train-{i}"),
            submit_key=str(uuid.uuid4()),
            backend="kubernetes",
        )[0]
        for i in range(3)
    ]
    for _ in range(3):
        fake.delay_next("create secrets", 1.0)

    Worker().dispatch_remote()

    assert len(fake.calls("create secrets")) == 1
    first, *others = (Job.objects.get(pk=job.pk) for job in jobs)
    assert first.status == JobStatus.QUEUED
    assert first.events.filter(reason="SubmitTimedOut").count() == 1
    assert [(job.status, reasons(job)) for job in others] == [(JobStatus.QUEUED, ["Created"])] * 2


def test_after_four_creates_without_an_answer_the_job_is_submit_failed(fake, k8s, alice):
    fake.fail_next("create secrets", status=503, reason="ServiceUnavailable", times=4)

    job = submitted(alice, k8s)
    for _ in range(3):
        k8s.submit(job)
        job.refresh_from_db()

    assert job.status == JobStatus.SUBMIT_FAILED
    assert job.events.filter(reason="SubmitTimedOut").count() == 4


def test_a_fourth_unanswered_create_that_the_server_carried_out_is_adopted_by_its_name(
    fake, k8s, alice
):
    """Until left42 the fourth create with no clear answer failed the job (Submit failed)
    while the API server had made its PyTorchJob, which then ran unwatched. It is looked for
    by name first, and adopted, Secret and all: one of each, no fifth create."""
    fake.fail_next("create secrets", status=503, reason="ServiceUnavailable", times=3)
    fake.fail_next("create pytorchjobs", status=504, reason="Timeout", after=True)  # made

    job = submitted(alice, k8s)
    for _ in range(3):
        k8s.submit(job)
        job.refresh_from_db()

    assert job.events.filter(reason="SubmitTimedOut").count() == 4
    assert job.status == JobStatus.QUEUED
    [made] = fake.jobs()
    assert job.external_id == made["metadata"]["name"]
    assert len(fake.calls("create pytorchjobs")) == 1
    assert "adopted" in job.events.get(reason="Submitted").message
    [owner] = fake.secret(f"{job.external_id}-env")["metadata"]["ownerReferences"]
    assert owner["uid"] == made["metadata"]["uid"]


def test_a_last_create_whose_look_goes_unanswered_keeps_the_job_queued_then_adopts_it(
    fake, k8s, alice
):
    fake.fail_next("create secrets", status=503, reason="ServiceUnavailable", times=3)
    fake.fail_next("create pytorchjobs", status=504, reason="Timeout", after=True)  # made
    fake.drop_next("get pytorchjobs", times=3)  # the look and its two retries: no answer
    job = submitted(alice, k8s)
    for _ in range(3):
        k8s.submit(job)
        job.refresh_from_db()

    assert job.status == JobStatus.QUEUED and job.external_id == ""
    retry = job.events.filter(reason="SubmitRetry").last()
    assert retry.type == "Warning"
    shown = job.status_reason_shown
    assert shown.startswith(
        "Kubernetes gave no clear answer to the job's create requests (4 so far) and did not "
        "answer the look for it: "
    )
    assert shown.endswith("The job stays queued and is looked for again; it is not created again.")
    assert "hf_secret_value" not in shown

    submit_pause_over(k8s)  # the look that got no answer paused submits
    k8s.submit(job)  # the API server answers the look

    job.refresh_from_db()
    [made] = fake.jobs()
    assert job.external_id == made["metadata"]["name"]
    assert len(fake.calls("create pytorchjobs")) == 1 and len(fake.calls("create secrets")) == 4


def test_a_look_answered_after_the_last_create_fails_the_job_only_when_nothing_was_made(
    fake, k8s, alice
):
    fake.fail_next("create secrets", status=503, reason="ServiceUnavailable", times=4)
    fake.drop_next("get pytorchjobs", times=3)
    job = submitted(alice, k8s)
    for _ in range(3):
        k8s.submit(job)
        job.refresh_from_db()
    assert job.status == JobStatus.QUEUED

    submit_pause_over(k8s)  # the look that got no answer paused submits
    k8s.submit(job)  # the look answered: 404

    job.refresh_from_db()
    assert job.status == JobStatus.SUBMIT_FAILED
    name = M.object_name(job.job_spec(), job.public_id)
    assert job.status_reason_shown == (
        "Kubernetes gave no clear answer to the job's create requests (4 so far) and has no "
        f"PyTorchJob named {name}."
    )
    assert len(fake.calls("create secrets")) == 4 and fake.jobs() == []
    assert fake.calls("create pytorchjobs") == []


def test_a_look_after_the_last_create_that_gets_no_answer_pauses_submits_not_every_pass(
    fake, k8s, alice
):
    """The worker passes over its queued remote jobs a second apart. After the last create
    with no clear answer the job is only looked for; with the API server not answering, each
    pass looked again (its tries held up the pass) and wrote two events, Submitting and
    SubmitRetry, about 7,000 an hour (until review 49). The look pauses submits as a create
    that did not reach the API server does: one look per pause."""
    fake.fail_next("create secrets", status=503, reason="ServiceUnavailable", times=4)
    fake.drop_next("get pytorchjobs", times=30)  # the API server stops answering the looks
    job = submitted(alice, k8s)
    for _ in range(3):
        k8s.submit(job)
        job.refresh_from_db()
    assert job.status == JobStatus.QUEUED  # the fourth create's look went unanswered
    looks, events = len(fake.calls("get pytorchjobs")), job.events.count()

    for _ in range(5):  # the worker's next passes, within the pause
        k8s.submit(job)
        job.refresh_from_db()

    assert job.status == JobStatus.QUEUED
    assert len(fake.calls("get pytorchjobs")) == looks
    assert job.events.count() == events
    fake.faults.clear()  # the API server answers again
    submit_pause_over(k8s)

    k8s.submit(job)

    job.refresh_from_db()
    assert job.status == JobStatus.SUBMIT_FAILED  # the look answered: nothing was made
    assert len(fake.calls("get pytorchjobs")) == looks + 1
    assert fake.calls("create pytorchjobs") == []


def look_refused_after_four_creates(fake, k8s, alice, *, refusals: int, **changes) -> Job:
    """A job whose fourth create got no clear answer (the API server made it all the same)
    and whose look for it the API server refused (403), `refusals` times in all. `changes`:
    to its spec."""
    fake.fail_next("create secrets", status=503, reason="ServiceUnavailable", times=3)
    fake.fail_next("create pytorchjobs", status=504, reason="Timeout", after=True)  # made
    fake.fail_next(
        "get pytorchjobs", status=403, reason="Forbidden", message="cannot get", times=refusals
    )
    job = submitted(alice, k8s, **changes)
    for _ in range(3):
        k8s.submit(job)
        job.refresh_from_db()
    return job


def test_a_look_the_api_server_refuses_is_made_again_only_at_its_time_one_event_each(
    fake, k8s, alice
):
    """Until left46 a look after the last create that the API server refused (403, a 5xx)
    was made again at every pass of the worker, a second apart, two events each. The job
    now waits for its own next look (30 s, then 60 s, doubling to 10 minutes), and the
    cluster's other jobs are created meanwhile (no pause of its submits)."""
    start = timezone.now()
    # One refusal answers the other job's first read (made in between), not a look.
    job = look_refused_after_four_creates(fake, k8s, alice, refusals=3)
    name = M.object_name(job.job_spec(), job.public_id)

    def looks() -> int:
        return sum(call.path.endswith(f"/{name}") for call in fake.calls("get pytorchjobs"))

    assert (job.status, job.external_id) == (JobStatus.QUEUED, "")
    assert job.events.get(reason="LookRefused").type == EventType.WARNING
    shown = job.status_reason_shown
    assert shown.startswith("Kubernetes refused the look for the job its creates may have made: ")
    assert "cannot get" in shown and "hf_secret_value" not in shown
    at = shown.removesuffix(".").rsplit(" at ", 1)[1]
    assert at in times_said(start, timezone.now(), seconds=30)
    assert shown.endswith(f"The job stays queued and is looked for again at {at}.")
    looked, events = looks(), job.events.count()

    for _ in range(5):  # the worker's next passes, before the job's time
        k8s.submit(job)
        job.refresh_from_db()
    other = submitted(alice, k8s, name="other-job")  # created meanwhile

    assert looks() == looked and job.events.count() == events
    assert other.external_id and len(fake.jobs()) == 2
    refused_looks_earlier(job, seconds=31)

    k8s.submit(job)  # its time: looked for again, refused again

    job.refresh_from_db()
    assert looks() == looked + 1
    assert reasons(job)[events:] == ["LookRefused"]
    refused_looks_earlier(job, seconds=31)
    k8s.submit(job)  # 31 s is not its time any more: the wait doubled
    assert looks() == looked + 1
    refused_looks_earlier(job, seconds=30)

    k8s.submit(job)  # the API server answers the look: what the last create made is adopted

    job.refresh_from_db()
    assert job.external_id in {made["metadata"]["name"] for made in fake.jobs()}
    assert job.external_id != other.external_id
    assert len(fake.calls("create pytorchjobs")) == 2


def test_a_job_waiting_for_a_look_the_api_server_refused_is_stopped_where_it_was_made(
    fake, k8s, alice
):
    from jobs.actions import job_stop

    job = look_refused_after_four_creates(fake, k8s, alice, refusals=1)
    assert job.status == JobStatus.QUEUED

    job_stop(job=job, actor=alice)

    job.refresh_from_db()
    assert job.status == JobStatus.STOPPING
    # 5 minutes on: past the refused look's wait too, which the stop's look keeps (left48).
    Job.objects.filter(pk=job.pk).update(updated_at=timezone.now() - timedelta(minutes=5))
    refused_looks_earlier(job, seconds=300)
    job.refresh_from_db()
    k8s.sync(job)  # found by its label, adopted and deleted
    job.refresh_from_db()
    k8s.sync(job)  # gone
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPED
    assert fake.jobs() == []


def stopped_after_a_refused_look(fake, k8s, alice) -> Job:
    """A job looked for after its fourth unclear create, the look refused, then stopped (the
    worker looks for it by its label to delete it), its stop 5 minutes ago and its refused
    look 31 s ago (its next look is due)."""
    from jobs.actions import job_stop

    job = look_refused_after_four_creates(fake, k8s, alice, refusals=1)
    job_stop(job=job, actor=alice)
    Job.objects.filter(pk=job.pk).update(updated_at=timezone.now() - timedelta(minutes=5))
    refused_looks_earlier(job, seconds=31)
    job.refresh_from_db()
    return job


def test_a_stopped_jobs_look_the_api_server_refuses_is_made_again_only_at_its_time_one_event_each(
    fake, k8s, alice
):
    """Until left48 the look by label for what an unclear create made, for a job stopped
    meanwhile, that the API server refused (403, a 5xx) was made again at every sync, for
    ever, saying nothing. It now goes on at the job's own pace, one event a look."""
    job = stopped_after_a_refused_look(fake, k8s, alice)
    assert job.status == JobStatus.STOPPING
    fake.fail_next("list pytorchjobs", status=403, reason="Forbidden", message="no list", times=2)
    events = job.events.count()

    k8s.sync(job)  # its second look, refused: the wait is now 60 s

    job.refresh_from_db()
    assert (job.status, job.external_id) == (JobStatus.STOPPING, "")
    assert reasons(job)[events:] == ["LookRefused"]
    refused = job.events.filter(reason="LookRefused").latest("pk")
    assert refused.type == EventType.WARNING
    assert refused.message_shown.startswith(
        "Kubernetes refused the look for the job its creates may have made, to delete it: "
    )
    assert "no list" in refused.message_shown and "hf_secret_value" not in refused.message_shown
    for _ in range(3):  # the worker's next syncs, before the job's time
        k8s.sync(job)
        job.refresh_from_db()
    assert len(fake.calls("list pytorchjobs")) == 1 and len(reasons(job)) == events + 1
    refused_looks_earlier(job, seconds=61)
    k8s.sync(job)  # its time: refused again
    refused_looks_earlier(job, seconds=61)
    k8s.sync(job)  # not its time: the wait doubled
    assert len(fake.calls("list pytorchjobs")) == 2
    refused_looks_earlier(job, seconds=60)

    k8s.sync(job)  # found by its label, adopted and deleted
    job.refresh_from_db()
    k8s.sync(job)  # gone

    job.refresh_from_db()
    assert job.status == JobStatus.STOPPED and fake.jobs() == []


def test_a_stopped_jobs_look_the_api_server_has_refused_for_an_hour_ends_it_stopped_saying_where(
    fake, k8s, alice
):
    job = stopped_after_a_refused_look(fake, k8s, alice)
    fake.fail_next("list pytorchjobs", status=403, reason="Forbidden", message="no list")
    refused_looks_earlier(job, seconds=3600)  # the first refusal, at the submit, an hour ago

    k8s.sync(job)

    job.refresh_from_db()
    assert job.status == JobStatus.STOPPED
    assert job.events.filter(reason="Stopped").get().type == EventType.WARNING
    shown = job.status_reason_shown
    assert shown.startswith(
        "Kubernetes refused the looks for the job its creates may have made for an hour (the last: "
    )
    assert shown.endswith(
        "so the console stopped looking and ended the job Stopped. The API server may have made "
        "it: look in namespace default for a resource of kind PyTorchJob labelled "
        f"ai-job-console/job-id={job.public_id}, and delete it there if it runs."
    )
    assert len(fake.jobs()) == 1  # what the last create made, left for the person to delete


def test_a_job_ended_stopped_after_an_hour_of_refused_looks_says_where_to_look_in_the_job_list(
    fake, k8s, alice, alice_en
):
    """qa73: after an hour of refused looks a stopped job ends Stopped with a warning that
    what its unclear create made may run on the cluster ("look in namespace ... and delete it
    there"); until lookfix the job list showed a bare Stopped, as for any job its owner
    stopped (views.LISTED_REASONS)."""
    from django.urls import reverse

    job = stopped_after_a_refused_look(fake, k8s, alice)
    fake.fail_next("list pytorchjobs", status=403, reason="Forbidden", message="no list")
    refused_looks_earlier(job, seconds=3600)
    k8s.sync(job)
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPED and len(fake.jobs()) == 1

    listed = alice_en.get(reverse("job-list")).content.decode()

    row = listed[listed.index(f'data-job="{job.public_id}"') :]
    row = row[: row.index("</tr>")]
    assert "job-status-reason" in row
    assert f"ai-job-console/job-id={job.public_id}" in row


def test_a_look_the_api_server_has_refused_for_an_hour_fails_the_job_saying_where_to_look(
    fake, k8s, alice
):
    job = look_refused_after_four_creates(fake, k8s, alice, refusals=2)
    refused_looks_earlier(job, seconds=3600)

    k8s.submit(job)  # refused again, an hour after the first

    job.refresh_from_db()
    assert job.status == JobStatus.SUBMIT_FAILED
    name = M.object_name(job.job_spec(), job.public_id)
    shown = job.status_reason_shown
    assert shown.startswith(
        "Kubernetes refused the looks for the job its creates may have made for an hour (the last: "
    )
    assert shown.endswith(
        f"look in namespace default for the PyTorchJob named {name}. Submit again takes it as "
        "this job if it is there; to drop it instead, delete it there."
    )


def test_a_token_refused_at_the_look_after_the_last_create_keeps_the_job_queued_past_the_hour(
    fake, k8s, alice
):
    """review56: a 401 at the look after the fourth unclear create (the token expired) was
    taken as the API server refusing the look, and an hour of them gave the job up, Submission
    failed, though no call at all could be made. It is the cluster unavailable: the job stays
    queued, submits pause, and once the token is renewed what the last create made is adopted."""
    fake.fail_next("create secrets", status=503, reason="ServiceUnavailable", times=3)
    fake.fail_next("create pytorchjobs", status=504, reason="Timeout", after=True)  # made
    fake.fail_next("get pytorchjobs", status=401, reason="Unauthorized", times=2)
    job = submitted(alice, k8s)
    for _ in range(3):
        k8s.submit(job)
        job.refresh_from_db()

    assert (job.status, job.external_id) == (JobStatus.QUEUED, "")
    assert "renew KUBERNETES_TOKEN_FILE" in job.status_reason_shown
    assert not job.events.filter(reason="LookRefused").exists()
    refused_looks_earlier(job, seconds=3600)  # as if the token had been refused an hour
    submit_pause_over(k8s)
    k8s.submit(job)  # the token refused again

    job.refresh_from_db()
    assert (job.status, job.external_id) == (JobStatus.QUEUED, "")
    submit_pause_over(k8s)
    k8s.submit(job)  # the token renewed: what the last create made is adopted

    job.refresh_from_db()
    assert job.external_id == fake.jobs()[0]["metadata"]["name"]
    assert len(fake.calls("create pytorchjobs")) == 1


def test_a_stopped_jobs_look_by_label_with_its_token_refused_leaves_it_stopping(fake, k8s, alice):
    """review56: a 401 at the look by label for what a stopped job's unclear create made was
    taken as a refusal; after an hour of refused looks the job ended Stopped, what the create
    made left running. The token refused is no answer: the job stays Stopping."""
    job = stopped_after_a_refused_look(fake, k8s, alice)
    fake.fail_next("list pytorchjobs", status=401, reason="Unauthorized")
    refused_looks_earlier(job, seconds=3600)  # the first refusal, at the submit, an hour ago
    events = job.events.count()

    with pytest.raises(BackendError) as unavailable:
        k8s.sync(job)

    assert "renew KUBERNETES_TOKEN_FILE" in unavailable.value.message
    job.refresh_from_db()
    assert (job.status, job.events.count()) == (JobStatus.STOPPING, events)
    k8s.sync(job)  # the token renewed: found by its label, adopted and deleted
    job.refresh_from_db()
    k8s.sync(job)  # gone
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPED and fake.jobs() == []


def looked_for_deleted_and_stopped(fake, k8s, job) -> None:
    """A stopped job with no name on the cluster, 5 minutes on (past the wait for a job left
    Stopping): the worker finds what its create made by its label and deletes it, then sees it
    gone and ends the job Stopped, nothing of it left on the cluster."""
    Job.objects.filter(pk=job.pk).update(updated_at=timezone.now() - timedelta(minutes=5))
    job.refresh_from_db()
    k8s.sync(job)  # found by its label, adopted and deleted
    job.refresh_from_db()
    k8s.sync(job)  # gone
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPED
    assert fake.jobs() == []


def test_a_job_given_up_on_refused_looks_submitted_again_and_stopped_queued_is_deleted_there(
    fake, k8s, alice
):
    """left49: stopped while Queued after Submit again, before its create (whose 409 adopts
    what the given-up submission made), the job had no unanswered create in its submission:
    Stopped at once, and the PyTorchJob the last create made ran on, unwatched. It is
    Stopping now; the worker looks for it by its label and deletes it."""
    from jobs.actions import job_stop, job_submit_again

    # Cards the pool has idle beside what the last create made (a standalone job submitted
    # again must find its cards).
    roles = [S.Role("master", 1, A800, 4), S.Role("worker", 1, A800, 4)]
    job = look_refused_after_four_creates(fake, k8s, alice, refusals=2, roles=roles)
    refused_looks_earlier(job, seconds=3600)
    k8s.submit(job)  # refused again, an hour after the first: given up
    job.refresh_from_db()
    assert job.status == JobStatus.SUBMIT_FAILED and len(fake.jobs()) == 1
    job_submit_again(job=job, actor=alice)
    job.refresh_from_db()
    assert (job.status, job.external_id) == (JobStatus.QUEUED, "")

    job_stop(job=job, actor=alice)

    job.refresh_from_db()
    assert job.status == JobStatus.STOPPING
    assert "the worker looks for it and stops it" in job.status_reason_shown
    looked_for_deleted_and_stopped(fake, k8s, job)


def test_a_job_given_up_on_refused_looks_held_for_review_and_stopped_is_deleted_there(
    fake, k8s, alice
):
    """left51: Submit again held the job for review, and Pending review went only to Stopped:
    its Stop withdrew it and Stopped it at once, and the PyTorchJob the last create made ran
    on, unwatched. It is withdrawn and Stopping now; the worker looks for it by its label and
    deletes it."""
    from jobs.actions import job_stop, job_submit_again
    from jobs.models import ReviewMode, ReviewPolicy, ReviewState

    roles = [S.Role("master", 1, A800, 4), S.Role("worker", 1, A800, 4)]
    job = look_refused_after_four_creates(fake, k8s, alice, refusals=2, roles=roles)
    refused_looks_earlier(job, seconds=3600)
    k8s.submit(job)  # refused again, an hour after the first: given up
    job.refresh_from_db()
    assert job.status == JobStatus.SUBMIT_FAILED and len(fake.jobs()) == 1
    ReviewPolicy.objects.create(pk=1, mode=ReviewMode.ALL)
    job_submit_again(job=job, actor=alice)
    job.refresh_from_db()
    assert (job.status, job.external_id) == (JobStatus.PENDING_REVIEW, "")

    job_stop(job=job, actor=alice)

    job.refresh_from_db()
    assert (job.status, job.review_state) == (JobStatus.STOPPING, ReviewState.WITHDRAWN)
    assert "the worker looks for it and stops it" in job.status_reason_shown
    looked_for_deleted_and_stopped(fake, k8s, job)


def test_submit_again_after_the_creates_were_given_up_sends_a_create_again(fake, k8s, alice):
    """The unanswered creates are counted in one submission: until left42 they were counted
    over the job's life, so Submit again on a job given up after its fourth was failed
    again at once (with the look, without a create: the button did nothing)."""
    from jobs.actions import job_submit_again

    fake.fail_next("create secrets", status=503, reason="ServiceUnavailable", times=4)
    # Cards the pool has idle (a standalone job submitted again must find its cards).
    job = submitted(alice, k8s, roles=[S.Role("master", 1, A800, 4), S.Role("worker", 1, A800, 4)])
    for _ in range(3):
        k8s.submit(job)
        job.refresh_from_db()
    assert job.status == JobStatus.SUBMIT_FAILED

    job_submit_again(job=job, actor=alice)
    job.refresh_from_db()
    k8s.submit(job)

    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED
    [made] = fake.jobs()
    assert job.external_id == made["metadata"]["name"]
    assert len(fake.calls("create secrets")) == 5


def test_the_manifest_passes_the_fakes_strict_checks_for_every_framework(
    fake, k8s, alice, settings
):
    settings.KUBERNETES_TOLERATIONS = "dedicated=training:NoSchedule,nvidia.com/gpu"
    settings.KUBERNETES_IMAGE_PULL_SECRETS = "regcred"
    settings.KUBERNETES_PRIORITY_CLASSES = "normal=training-normal"
    mpi = submitted(
        alice,
        k8s,
        framework=S.MPI,
        roles=[S.Role("master", 1, "", 0, cpu=2), S.Role("worker", 2, A800, 8)],
    )
    tf = submitted(
        alice,
        k8s,
        framework=S.TENSORFLOW,
        roles=[S.Role("chief", 1, A800, 1), S.Role("ps", 1, "", 0, cpu=4)],
        datasources=[S.Datasource("hostpath", "scratch", "/mnt/scratch", "/tf")],
    )

    assert (mpi.status, tf.status) == (JobStatus.QUEUED, JobStatus.QUEUED)
    assert [c.path for c in fake.calls("create mpijobs")] == [
        "/apis/kubeflow.org/v2beta1/namespaces/default/mpijobs"
    ]
    assert len(fake.calls("create tfjobs")) == 1
    pod = fake.calls("create tfjobs")[0].body["spec"]["tfReplicaSpecs"]["PS"]["template"]["spec"]
    assert pod["imagePullSecrets"] == [{"name": "regcred"}]
    assert pod["priorityClassName"] == "training-normal"


def test_the_fake_refuses_a_mount_without_its_volume_and_an_unknown_field(fake, k8s):
    from jobs.kubernetes.client import KubeClient, KubeError

    client = KubeClient(server=fake.url, token=fake.token)
    body = M.job_manifest(spec(envs=[]), M.Cluster(), name="x-1", namespace="default", job_id="j")
    pod = body["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]
    pod["volumes"] = pod["volumes"][:1]
    with pytest.raises(KubeError) as invalid:
        client.create(M.resource_path(S.PYTORCH, "default"), body)
    pod["volumes"].append({"name": "data-0", "emptyDir": {}})
    pod["containers"][0]["gpus"] = 8
    with pytest.raises(KubeError) as unknown:
        client.create(M.resource_path(S.PYTORCH, "default"), body)

    assert (invalid.value.status, invalid.value.reason) == (422, "Invalid")
    assert "volumeMounts[1].name: Not found: 'data-0'" in invalid.value.message
    assert (unknown.value.status, unknown.value.reason) == (400, "BadRequest")
    assert 'unknown field "spec.pytorchReplicaSpecs.Master.template.spec.containers[0].gpus"' in (
        unknown.value.message
    )


def test_a_queue_group_creates_each_task_under_its_own_name_within_its_concurrency(
    fake, k8s, alice
):
    jobs = jobs_submit(
        owner=alice,
        spec=spec(submission=S.Submission(mode=S.SUBMIT_QUEUE, total=3, concurrency=2)),
        submit_key=str(uuid.uuid4()),
        backend="kubernetes",
    )

    for job in jobs:
        k8s.submit(job)
        job.refresh_from_db()
    assert [bool(j.external_id) for j in jobs] == [True, True, False]
    fake.set_conditions(jobs[0].external_id, ("Succeeded", "done"))
    k8s.sync(jobs[0])
    k8s.submit(jobs[2])
    jobs[2].refresh_from_db()

    names = {j["metadata"]["name"] for j in fake.jobs()}
    assert len(names) == 3 and jobs[2].external_id in names


def test_each_task_of_a_queue_group_is_created_with_its_own_index_and_the_groups_size(
    fake, k8s, alice
):
    jobs = jobs_submit(
        owner=alice,
        spec=spec(submission=S.Submission(mode=S.SUBMIT_QUEUE, total=2, concurrency=2)),
        submit_key=str(uuid.uuid4()),
        backend="kubernetes",
    )

    for job in jobs:
        k8s.submit(job)
        job.refresh_from_db()

    created = {j["metadata"]["name"]: j for j in fake.jobs()}
    for job, index in zip(jobs, ["0", "1"], strict=True):
        for role in ("Master", "Worker"):
            container = created[job.external_id]["spec"]["pytorchReplicaSpecs"][role]["template"][
                "spec"
            ]["containers"][0]
            env = {e["name"]: e.get("value") for e in container["env"]}
            assert (env["AIHC_GROUP_TASK_INDEX"], env["AIHC_GROUP_TASK_TOTAL"]) == (index, "2")


# -- following a job ---------------------------------------------------------------------


def test_sync_follows_conditions_pods_and_events_without_duplicates(fake, k8s, alice):
    job = submitted(alice, k8s)
    name = job.external_id
    fake.set_conditions(name, ("Created", "created"), ("Running", "PyTorchJob is running."))
    pods = fake.run_pods(name)
    fake.add_event("PyTorchJob", name, "SuccessfulCreatePod", f"Created pod: {pods[0]}")
    fake.add_event("Pod", pods[1], "FailedScheduling", "0/4 nodes are available", type="Warning")

    k8s.sync(job)
    k8s.sync(job)
    job.refresh_from_db()

    assert job.status == JobStatus.RUNNING
    assert sorted(job.replicas.values_list("role", "index", "status", "node")) == [
        ("master", 0, "running", "node-1"),
        ("worker", 0, "running", "node-1"),
    ]
    copied = job.events.filter(reason__startswith="K8s:").order_by("id")
    assert [(e.reason, e.message, e.type) for e in copied] == [
        ("K8s:SuccessfulCreatePod", f"Created pod: {pods[0]}", EventType.NORMAL),
        ("K8s:FailedScheduling", f"{pods[1]}: 0/4 nodes are available", EventType.WARNING),
    ]
    assert job.events.get(reason="Running").message == (
        "Kubernetes reports Running: PyTorchJob is running."
    )

    fake.set_conditions(name, ("Succeeded", "PyTorchJob succeeded."))
    fake.set_pod_phase(pods[0], "Succeeded")
    k8s.sync(job)
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED
    assert sorted(job.replicas.values_list("role", "status")) == [
        ("master", "succeeded"),
        ("worker", "stopped"),
    ]


def test_an_event_kubernetes_counts_again_is_copied_once_at_its_first_time(fake, k8s, alice):
    job = submitted(alice, k8s)
    [pod, _worker] = fake.run_pods(job.external_id)
    fake.add_event("Pod", pod, "BackOff", "Back-off restarting failed container", type="Warning")
    event = fake.events[-1]
    # A day ago, after the job was sent 30 days ago: a fixed date (it was 2026-12-01 08:00)
    # fell before the sending once the tests ran 30 days after it, and the copy, never dated
    # before the job was sent, then took the sending's time instead.
    first = (timezone.now() - timedelta(days=1)).replace(microsecond=0)
    event.update(firstTimestamp=kube_stamp(first), lastTimestamp=kube_stamp(first))
    Job.objects.filter(pk=job.pk).update(created_at=timezone.now() - timedelta(days=30))
    job.events.update(created_at=timezone.now() - timedelta(days=30))

    k8s.sync(job)
    event.update(count=7, lastTimestamp=kube_stamp(first + timedelta(minutes=5)))
    k8s.sync(job)

    [copied] = job.events.filter(reason="K8s:BackOff")
    assert copied.created_at == first


def kube_stamp(moment) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize("framework", [S.PYTORCH, S.TENSORFLOW, S.MPI])
def test_a_job_past_its_deadline_is_timed_out_and_a_failed_one_failed(fake, k8s, alice, framework):
    """qa96: training-operator fails a PyTorchJob/TFJob past its deadline with reason
    PyTorchJobFailed/TFJobFailed, as any failure, saying so only in its message; the console
    looked for DeadlineExceeded (mpi-operator's, from its launcher Job) and showed Failed."""
    roles = {
        S.TENSORFLOW: [S.Role("chief", 1, A800, 8), S.Role("worker", 1, A800, 8)],
    }.get(framework, spec().roles)
    late = submitted(alice, k8s, framework=framework, roles=roles)
    broken = submitted(alice, k8s, framework=framework, roles=roles)
    limit = submitted(alice, k8s, framework=framework, roles=roles)
    fake.fail_past_deadline(late.external_id)
    fake.set_conditions(broken.external_id, ("Failed", "worker-0 exited with 1 hf_secret_value"))
    backoff = (
        f"Job {limit.external_id} has failed because it has reached the specified backoff limit"
    )
    fake.set_conditions(limit.external_id, ("Failed", backoff))

    for job in (late, broken, limit):
        k8s.sync(job)
        job.refresh_from_db()

    assert late.status == JobStatus.TIMED_OUT
    assert "active longer than specified deadline" in late.status_reason
    assert broken.status == limit.status == JobStatus.FAILED
    assert "worker-0 exited with 1 ******" in broken.status_reason


def test_a_job_kubernetes_no_longer_has_is_marked_failed(fake, k8s, alice, settings):
    job = submitted(alice, k8s)
    del fake.objects[("pytorchjobs", "default", job.external_id)]  # kubectl delete

    k8s.sync(job)
    job.refresh_from_db()

    assert job.status == JobStatus.FAILED
    # qa103: it said only "Kubernetes no longer has …", as if the console knew no more.
    lost = job.events.get(reason="Lost")
    assert lost.message == (
        f"Kubernetes no longer has {job.external_id}: it may have been deleted outside the "
        "console (with kubectl, by a TTL, or with its namespace), so how it ended is unknown."
    )
    with translation.override("zh-hans"):
        assert "可能已在控制台之外被删除" in lost.message_shown

    # Recorded before it was reworded: still said in the reader's language.
    settings.LANGUAGE_CODE = "en"
    Job.objects.filter(pk=job.pk).update(
        status_reason=f"Kubernetes no longer has {job.external_id}.",
        status_reason_source={
            "key": "Kubernetes no longer has %(name)s.",
            "params": {"name": job.external_id},
        },
    )
    job.refresh_from_db()
    with translation.override("zh-hans"):
        assert job.status_reason_shown == f"Kubernetes 中已不存在 {job.external_id}。"


def test_stopping_deletes_the_job_and_it_is_stopped_once_gone_never_failed(fake, k8s, alice):
    fake.hold_deletions = True
    job = submitted(alice, k8s)
    name = job.external_id
    fake.set_conditions(name, ("Running", "running"))
    fake.run_pods(name)
    k8s.sync(job)

    # The operator marks the job failed as its pods are killed (before the delete lands):
    # the console stays Stopping.
    fake.set_conditions(name, ("Failed", "master-0 killed"))
    k8s.stop(job)
    job.refresh_from_db()
    k8s.sync(job)
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPING
    [delete] = fake.calls("delete pytorchjobs")
    assert delete.param("propagationPolicy") == "Background"
    assert fake.secret(f"{name}-env") is None

    fake.finish_deletions()
    k8s.sync(job)
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPED
    assert set(job.replicas.values_list("status", flat=True)) == {"stopped"}
    assert len(fake.calls("delete pytorchjobs")) == 1


def test_a_stopped_job_whose_pod_is_stuck_terminating_is_stopped_after_a_while_naming_it(
    fake, k8s, alice
):
    """qa96: Stop deleted the job with propagationPolicy=Foreground, which the API server
    holds until every pod made with blockOwnerDeletion is gone: a pod stuck Terminating on a
    node that is not ready held the job Stopping for good."""
    fake.hold_deletions = True  # the pods' kubelet never confirms them gone
    job = submitted(alice, k8s)
    name = job.external_id
    fake.set_conditions(name, ("Running", "running"))
    master, worker = fake.run_pods(name)
    k8s.sync(job)

    k8s.stop(job)
    k8s.sync(job)
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPING  # its pods are still going

    Job.objects.filter(pk=job.pk).update(stop_sent_at=timezone.now() - timedelta(minutes=5))
    k8s.sync(job)
    job.refresh_from_db()

    assert job.status == JobStatus.STOPPED
    assert job.status_reason == (
        f"Kubernetes deleted {name}; after 5 minutes these of its pods are still terminating: "
        f"{master}, {worker}. Their node may not be ready: what they hold there is not free "
        "until they are gone."
    )
    with translation.override("zh-hans"):
        assert "仍在终止" in job.events.get(reason="Stopped").message_shown


def test_a_job_stopped_while_its_create_was_in_flight_is_found_and_deleted(fake, k8s, alice):
    job = submitted(alice, k8s)
    name = job.external_id
    # Stopped while the create was on its way, and the worker died before it landed.
    Job.objects.filter(pk=job.pk).update(
        status=JobStatus.STOPPING,
        external_id="",
        updated_at=timezone.now() - timedelta(minutes=5),
    )
    job.refresh_from_db()

    k8s.sync(job)  # finds the job by its name and label, deletes it
    job.refresh_from_db()
    assert (job.status, job.external_id) == (JobStatus.STOPPING, name)
    k8s.sync(job)  # gone
    job.refresh_from_db()

    assert job.status == JobStatus.STOPPED
    assert fake.jobs() == [] and fake.secret(f"{name}-env") is None


def test_a_job_queued_again_after_a_create_with_no_clear_answer_is_stopped_where_it_was_made(
    fake, k8s, alice
):
    """Until left42 Stop took such a job (Queued, no name of its own yet) for one nothing
    ran for: Stopped at once, while the PyTorchJob its create made ran on, unwatched. It is
    Stopping now, and the worker looks for it by its label and deletes it."""
    from jobs.actions import job_stop

    fake.fail_next("create pytorchjobs", status=504, reason="Timeout", after=True)  # made
    job = submitted(alice, k8s)
    assert (job.status, job.external_id, len(fake.jobs())) == (JobStatus.QUEUED, "", 1)

    job_stop(job=job, actor=alice)

    job.refresh_from_db()
    assert job.status == JobStatus.STOPPING
    assert "the worker looks for it and stops it" in job.status_reason_shown
    looked_for_deleted_and_stopped(fake, k8s, job)


def test_deleting_a_job_queued_again_after_an_unsettled_create_stops_it_and_keeps_it(
    fake, k8s, alice
):
    from jobs.actions import ActionError, job_delete

    fake.fail_next("create pytorchjobs", status=504, reason="Timeout", after=True)  # made
    job = submitted(alice, k8s)

    with pytest.raises(ActionError, match="The job was stopped, not deleted: a create of it"):
        job_delete(job=job)

    job.refresh_from_db()  # kept, until the worker has found what was made
    assert job.status == JobStatus.STOPPING and len(fake.jobs()) == 1


def test_stopping_such_a_job_the_worker_is_sending_again_stops_it_all_the_same(fake, k8s, alice):
    """The Stop's page read the job Queued; the worker has since taken it to send its next
    create (Submitting). Kubernetes' stop tried Queued -> Stopping once, lost, and until
    review 50 said nothing: Stop requested, while the job went on to run."""
    from jobs.actions import job_stop

    fake.fail_next("create pytorchjobs", status=504, reason="Timeout", after=True)  # made
    job = submitted(alice, k8s)
    Job.objects.filter(pk=job.pk).update(status=JobStatus.SUBMITTING)  # the worker's send

    assert job_stop(job=job, actor=alice)  # as the page read it: Queued

    job.refresh_from_db()
    assert job.status == JobStatus.STOPPING, job.status


def test_deleting_such_a_job_the_worker_is_sending_again_stops_it_and_keeps_it(fake, k8s, alice):
    """The Delete's page read the job Queued; the worker has since taken it to send its next
    create (Submitting). Its stop found it so and did nothing, and until review 50 the Delete
    went on and deleted the job while the create was on its way: what it made ran on with
    nothing watching it. It is stopped and kept, as when the worker had not taken it."""
    from jobs.actions import ActionError, job_delete

    fake.fail_next("create pytorchjobs", status=504, reason="Timeout", after=True)  # made
    job = submitted(alice, k8s)
    assert (job.status, job.external_id) == (JobStatus.QUEUED, "")
    Job.objects.filter(pk=job.pk).update(status=JobStatus.SUBMITTING)  # the worker's send

    with pytest.raises(ActionError, match="The job was stopped, not deleted"):
        job_delete(job=job)  # as the page read it: Queued

    assert Job.objects.filter(pk=job.pk, status=JobStatus.STOPPING).exists()
    assert len(fake.jobs()) == 1


def test_a_job_stopped_while_a_create_that_made_nothing_was_in_flight_ends_stopped(
    fake, k8s, alice
):
    [job] = jobs_submit(
        owner=alice, spec=spec(), submit_key=str(uuid.uuid4()), backend="kubernetes"
    )
    Job.objects.filter(pk=job.pk).update(
        status=JobStatus.STOPPING, updated_at=timezone.now() - timedelta(minutes=5)
    )
    job.refresh_from_db()

    k8s.sync(job)

    job.refresh_from_db()
    assert job.status == JobStatus.STOPPED
    assert not fake.calls("delete pytorchjobs")


def test_a_job_stopped_in_flight_whose_spec_no_longer_reads_is_found_by_its_label(fake, k8s, alice):
    """Its name came from its spec: looked for by that, such a job stayed Stopping forever.
    The resource carries the job's id label, which the fake matches as a real server does."""
    job = submitted(alice, k8s)
    name = job.external_id
    Job.objects.filter(pk=job.pk).update(
        status=JobStatus.STOPPING,
        external_id="",
        spec={"name": job.name, "jobSpec": "from an old console"},
        updated_at=timezone.now() - timedelta(minutes=5),
    )
    job.refresh_from_db()

    k8s.sync(job)
    job.refresh_from_db()
    assert (job.status, job.external_id) == (JobStatus.STOPPING, name)
    [listed] = fake.calls("list pytorchjobs")
    assert listed.param("labelSelector") == f"ai-job-console/job-id={job.public_id}"
    k8s.sync(job)
    job.refresh_from_db()

    assert job.status == JobStatus.STOPPED
    assert fake.jobs() == []
    assert job.events.filter(reason="Submitted", message__contains=name).exists()


def test_a_stop_the_api_server_refuses_raises_and_is_recorded(fake, k8s, alice):
    job = submitted(alice, k8s)
    fake.fail_next(
        "delete pytorchjobs",
        status=403,
        reason="Forbidden",
        message='pytorchjobs.kubeflow.org "x" is forbidden: User cannot delete',
    )

    with pytest.raises(BackendError) as refused:
        k8s.stop(job)

    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED
    assert "Kubernetes did not stop the job" in refused.value.message
    assert "User cannot delete" in job.events.get(reason="StopFailed").message


def test_a_stop_without_an_answer_is_taken_and_sent_again_while_the_job_is_there(fake, k8s, alice):
    job = submitted(alice, k8s)
    fake.fail_next("delete pytorchjobs", status=503, reason="ServiceUnavailable")

    k8s.stop(job)
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPING
    Job.objects.filter(pk=job.pk).update(updated_at=timezone.now() - timedelta(minutes=2))
    k8s._stops_sent.clear()
    job.refresh_from_db()
    k8s.sync(job)  # still there, not being deleted: the delete goes again
    k8s.sync(job)  # gone
    job.refresh_from_db()

    assert len(fake.calls("delete pytorchjobs")) == 2
    assert job.status == JobStatus.STOPPED


@pytest.mark.parametrize(
    ("no_clear_answer", "said"),
    [
        (
            lambda fake: fake.fail_next(
                "delete pytorchjobs", status=503, reason="ServiceUnavailable", message="etcd down"
            ),
            "Stop requested; Kubernetes answered it with an error (etcd down (ServiceUnavailable",
        ),
        (
            lambda fake: fake.drop_next("delete pytorchjobs"),
            "Stop requested; Kubernetes did not answer it yet (The Kubernetes API server closed "
            "the connection without answering (ConnectionClosed",
        ),
    ],
    ids=["server-error", "no-answer"],
)
def test_a_stop_the_api_server_answered_with_an_error_quotes_it_and_one_unanswered_says_so(
    fake, k8s, alice, no_clear_answer, said
):
    """qa80: a delete answered 5xx was worded "Kubernetes did not answer it yet"."""
    job = submitted(alice, k8s)
    no_clear_answer(fake)

    k8s.stop(job)

    stopping = Job.objects.get(pk=job.pk).events.get(reason="Stopping")
    assert stopping.message_shown.startswith(said)
    assert stopping.message_shown.endswith("The console sends it again until the job is deleted.")
    with translation.override("zh-hans"):
        assert ("Kubernetes 以错误答复" in stopping.message_shown) == ("answered" in said)


# A job its owner stops while the worker syncs it ends Stopped, never Failed as lost: the
# web's stop and the worker's sync are two processes racing on one job's row.
def running(fake, k8s, job: Job) -> Job:
    """The job as the worker reads it once Kubernetes runs it."""
    fake.set_conditions(job.external_id, ("Running", "running"))
    fake.run_pods(job.external_id)
    k8s.sync(job)
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING
    return job


def test_a_replica_names_its_pod_as_kubernetes_does_on_the_job_page_and_in_the_api(
    fake, k8s, alice, alice_client, wsgi, api
):
    """qa103: the API's podList names pods as AIHC would (`<job name>-master-0`); the pod's
    real name, which the cluster's admin asks for, was nowhere."""
    job = running(fake, k8s, submitted(alice, k8s))
    real = f"{job.external_id}-master-0"

    got = api.request(
        "GET", f"/api/v1/aijobs/{job.public_id}", params=[("resourcePoolId", POOL)], idempotent=True
    )
    page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()

    row = page[page.index('<td class="font-monospace">master-0') :]
    assert 'class="small text-body-secondary replica-pod"' in row[: row.index("</td>")]
    assert real in row[: row.index("</td>")]
    [master] = [p for p in got["result"]["podList"]["pods"] if p["replicaType"] == "master"]
    assert master["objectMeta"]["name"] == f"{job.name}-master-0"  # AIHC's, as before
    assert master["console"] == {"podName": real}
    assert job.replicas.get(role="master").pod_name == real


def ended_as_stopped(job: Job) -> None:
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPED
    assert job.status_reason == f"Kubernetes deleted {job.external_id}."
    assert not job.events.filter(reason__in=["Lost", "Failed"]).exists()


def test_a_job_stopped_from_a_page_that_loaded_it_queued_is_stopping_though_it_runs_now(
    fake, k8s, alice
):
    job = submitted(alice, k8s)
    as_the_page_loaded_it = Job.objects.get(pk=job.pk)
    assert as_the_page_loaded_it.status == JobStatus.QUEUED
    running(fake, k8s, job)  # the worker's sync, before the owner presses Stop

    k8s.stop(as_the_page_loaded_it)

    job.refresh_from_db()
    assert job.status == JobStatus.STOPPING
    k8s.sync(job)  # the resource is gone
    ended_as_stopped(job)


def test_a_job_whose_resource_the_worker_finds_gone_before_the_web_saves_stopping_is_stopped(
    fake, k8s, alice, transactional_db
):
    job = running(fake, k8s, submitted(alice, k8s))
    as_the_worker_read_it = Job.objects.get(pk=job.pk)
    as_the_page_loaded_it = Job.objects.get(pk=job.pk)
    answer = fake.block_next("delete pytorchjobs", after=True)

    def web_stops() -> None:
        try:
            k8s.stop(as_the_page_loaded_it)
        finally:
            connection.close()

    web = threading.Thread(target=web_stops)
    web.start()
    try:
        deadline = time.monotonic() + 10
        while fake.jobs() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert fake.jobs() == []  # deleted; the web waits for the answer
        k8s.sync(as_the_worker_read_it)  # 404 before Stopping is saved
    finally:
        answer.set()
        web.join(30)

    ended_as_stopped(job)


def test_a_job_whose_stop_was_refused_and_that_kubernetes_loses_later_is_failed_as_lost(
    fake, k8s, alice
):
    job = running(fake, k8s, submitted(alice, k8s))
    fake.fail_next("delete pytorchjobs", status=403, reason="Forbidden", message="no")
    with pytest.raises(BackendError, match="Kubernetes did not stop the job"):
        k8s.stop(job)
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING
    del fake.objects[("pytorchjobs", "default", job.external_id)]

    k8s.sync(job)

    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert job.events.filter(reason="Lost").exists()


def test_deleting_removes_the_job_and_its_secret_from_the_cluster(fake, k8s, alice):
    job = submitted(alice, k8s)
    name = job.external_id

    k8s.delete(job)

    assert fake.jobs() == []
    assert fake.secret(f"{name}-env") is None


def test_logs_are_read_from_the_replicas_pod_with_tail_and_since(fake, k8s, alice):
    job = submitted(alice, k8s)
    [master, worker] = fake.run_pods(job.external_id)
    fake.add_logs(worker, ["old line"], stamp="2026-01-01T00:00:00Z")
    fake.add_logs(worker, ["epoch 1", "epoch 2 token hf_secret_value"])

    tail = k8s.logs(job, "worker-0", tail=1)
    since = k8s.logs(job, "worker-0", since=timezone.now() - timedelta(hours=1))

    assert tail == ["epoch 2 token ******"]
    assert since == ["epoch 1", "epoch 2 token ******"]
    [call, _] = fake.calls("log pods")
    assert (call.param("container"), call.param("tailLines")) == ("pytorch", "1")
    assert k8s.logs(job, "worker-5", tail=10) == []


def test_a_replica_whose_pod_has_not_started_has_no_log_lines_yet_not_an_error(fake, k8s, alice):
    """The API server refuses the log of a container that has not run yet (400 "is waiting
    to start: ContainerCreating", or an image still being pulled). That is a replica waiting
    to start, as a local one is, with no lines yet: until qa55 its tail showed "Kubernetes
    did not return the logs" on the job page, and the API answered 503, as for an outage."""
    job = submitted(alice, k8s)
    [_master, worker] = fake.run_pods(job.external_id, phase="Pending")

    assert k8s.logs(job, "worker-0", tail=200) == []
    assert k8s.logs(job, "master-0", since=timezone.now() - timedelta(hours=1)) == []

    fake.set_pod_phase(worker, "Running")
    fake.add_logs(worker, ["epoch 1"])
    assert k8s.logs(job, "worker-0", tail=200) == ["epoch 1"]


def test_a_failed_log_read_says_the_logs_were_not_returned(fake, k8s, alice):
    job = submitted(alice, k8s)
    fake.run_pods(job.external_id)
    fake.fail_next("log pods", status=500, reason="InternalError", message="kubelet unreachable")

    with pytest.raises(BackendError) as failed:
        k8s.logs(job, "master-0", tail=10)

    assert failed.value.message == (
        "Kubernetes did not return the logs: kubelet unreachable (InternalError, HTTP 500)"
    )


def _refusal(fake, change, path=None, content_type="application/json", validation="Strict"):
    """What the fake answers to the seed PyTorchJob changed by `change`, sent as the console
    sends it (fieldValidation=Strict)."""
    from jobs.kubernetes.client import KubeClient, KubeError

    client = KubeClient(server=fake.url, token=fake.token)
    body = M.job_manifest(
        spec(envs=[S.Env("HF_TOKEN", "x", secret=True)], datasources=[]),
        M.Cluster(),
        name="llm-train-1",
        namespace="default",
        job_id="pytorchjob-1",
    )
    change(body)
    try:
        client.request(
            "POST",
            path or M.resource_path(S.PYTORCH, "default"),
            params=[("fieldValidation", validation)],
            body=body,
            content_type=content_type,
            idempotent=False,
        )
    except KubeError as exc:
        return exc.status, exc.reason, exc.message
    return 201, "", ""


def _container(body):
    return body["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]


@pytest.mark.parametrize(
    ("change", "status", "reason", "words"),
    [
        (lambda b: b.update(apiVersion="kubeflow.org/v2beta1"), 400, "BadRequest", "API version"),
        (lambda b: b["metadata"].update(name="LLM_train"), 422, "Invalid", "DNS-1035"),
        (lambda b: b["metadata"].update(name="a" * 64), 422, "Invalid", "at most 63"),
        (lambda b: b["metadata"].update(namespace="team-b"), 400, "BadRequest", "namespace"),
        (
            lambda b: b["metadata"]["labels"].update(team="x" * 64),
            422,
            "Invalid",
            "63 characters or less",
        ),
        (
            lambda b: b["spec"].update(replicas=2),
            400,
            "BadRequest",
            'unknown field "spec.replicas"',
        ),
        (
            lambda b: b["spec"]["pytorchReplicaSpecs"]["Master"].update(replicas=2),
            422,
            "Invalid",
            "Master.replicas: must be 1",
        ),
        (
            lambda b: _container(b).update(name="trainer"),
            422,
            "Invalid",
            "no container named pytorch",
        ),
        (
            lambda b: _container(b)["env"].append({"name": "1BAD", "value": "x"}),
            422,
            "Invalid",
            "environment variable name",
        ),
        (
            lambda b: _container(b).update(resources={"limits": {"memory": "8 GB"}}),
            422,
            "Invalid",
            "quantities must match",
        ),
        (
            lambda b: _container(b).update(
                resources={"limits": {"nvidia.com/gpu": "2"}, "requests": {"nvidia.com/gpu": "1"}}
            ),
            422,
            "Invalid",
            "equal to limits",
        ),
        (
            lambda b: None,  # the Secret its secretKeyRef names was never created
            422,
            "Invalid",
            'secret "llm-train-1-env" not found',
        ),
    ],
)
def test_the_fake_api_server_refuses_what_a_real_one_refuses(fake, change, status, reason, words):
    assert _refusal(fake, change)[:2] == (status, reason)
    assert words in _refusal(fake, change)[2]


def test_the_fake_api_server_refuses_a_patch_made_from_an_older_read_as_a_conflict(fake):
    """Optimistic concurrency, as the API server has it: a write gives the object a new
    resourceVersion, and a patch carrying the one read before it is 409 Conflict (the
    console's owner-reference patch carries none, so it always applies)."""
    from jobs.kubernetes.client import KubeClient, KubeError

    client = KubeClient(server=fake.url, token=fake.token)
    made = client.create(
        M.secret_path("default"),
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "s-env", "namespace": "default"},
            "stringData": {"A": "1"},
        },
    )
    read = made["metadata"]["resourceVersion"]
    path = M.secret_path("default", "s-env")
    patched = client.merge_patch(
        path, {"metadata": {"labels": {"a": "1"}, "resourceVersion": read}}
    )
    assert patched["metadata"]["resourceVersion"] != read

    with pytest.raises(KubeError) as refused:
        client.merge_patch(path, {"metadata": {"labels": {"a": "2"}, "resourceVersion": read}})
    assert (refused.value.status, refused.value.reason) == (409, "Conflict")
    assert "the object has been modified" in refused.value.message
    assert fake.secret("s-env")["metadata"]["labels"] == {"a": "1"}


def test_the_fake_api_server_checks_paths_and_content_types(fake):
    assert _refusal(fake, lambda b: None, path="/apis/kubeflow.org/v1/namespaces/default/mpijobs")[
        :2
    ] == (404, "NotFound")
    assert _refusal(fake, lambda b: None, path=M.resource_path(S.PYTORCH, "nowhere"))[:2] == (
        404,
        "NotFound",
    )
    assert _refusal(fake, lambda b: None, content_type="application/yaml")[:2] == (
        415,
        "UnsupportedMediaType",
    )


# -- custom jobs: a JobSet ---------------------------------------------------------------


def custom(**changes) -> dict:
    return {
        "framework": S.CUSTOM,
        "roles": [S.Role("trainer", 2, A800, 8), S.Role("param-server", 1, "", 0, cpu=4)],
        **changes,
    }


def test_a_custom_job_is_created_as_a_jobset_exactly_as_previewed(fake, k8s, alice):
    job = submitted(alice, k8s, **custom())

    name = M.object_name(job.job_spec(), job.public_id)
    assert (job.status, job.external_id) == (JobStatus.QUEUED, name)
    [secret_call] = fake.calls("create secrets")
    [job_call] = fake.calls("create jobsets")
    assert fake.requests.index(secret_call) < fake.requests.index(job_call)
    assert job_call.path == "/apis/jobset.x-k8s.io/v1alpha2/namespaces/default/jobsets"
    assert job_call.param("fieldValidation") == "Strict"
    preview = k8s.request_preview(job.job_spec(), job_id=job.public_id, owner="alice")
    assert job_call.body == preview.body
    assert [r["name"] for r in job_call.body["spec"]["replicatedJobs"]] == [
        "trainer",
        "param-server",
    ]
    [owner] = fake.secret(f"{name}-env")["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["uid"]) == ("JobSet", fake.job(name)["metadata"]["uid"])


def _resolved(pod: dict) -> dict[str, str]:
    """A pod's environment as the kubelet resolves it (values, field refs, secret refs)."""
    meta = pod["metadata"]
    out = {}
    for env in pod["spec"]["containers"][0]["env"]:
        if "value" in env:
            out[env["name"]] = env["value"]
        elif "fieldRef" in env["valueFrom"]:
            path = env["valueFrom"]["fieldRef"]["fieldPath"]
            where, key = path.split("[", 1)
            out[env["name"]] = meta[where.split(".")[1]][key.strip("[]'")]
        else:
            out[env["name"]] = "******"  # the Secret's value; the preview masks it
    return out


def test_each_custom_instance_sees_what_the_local_runner_gives_it_on_a_stable_hostname(
    fake, k8s, alice
):
    from jobs.runtime_env import replica_refs

    job = submitted(alice, k8s, **custom())
    spec_ = job.job_spec()
    name = job.external_id
    pods = [fake.pods[("default", p)] for p in fake.run_pods(name)]

    found = {}
    for pod in pods:
        env = _resolved(pod)
        found[(env["AIHC_ROLE"], env["AIHC_ROLE_INDEX"])] = (env, pod["spec"])
    assert sorted(found) == [("param-server", "0"), ("trainer", "0"), ("trainer", "1")]
    for ref in replica_refs(spec_):
        env, pod_spec = found[(ref.role, str(ref.index))]
        expected = k8s.environment_preview(spec_, ref, job_id=job.public_id)
        # JOB_COMPLETION_INDEX too, which the Job controller sets (qa67: the review lacked it).
        assert env == expected
        assert env["JOB_COMPLETION_INDEX"] == str(ref.index)
        # Reachable by its peers as <hostname>.<subdomain> in the namespace.
        assert (pod_spec["hostname"], pod_spec["subdomain"]) == (
            f"{name}-{ref.role}-0-{ref.index}",
            name,
        )


def test_a_custom_job_is_followed_through_running_to_succeeded(fake, k8s, alice):
    job = submitted(alice, k8s, **custom())
    name = job.external_id
    k8s.sync(job)
    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED  # no Job has pods running yet

    pods = fake.run_pods(name)
    fake.set_jobset_status(
        name, {"trainer": {"active": 1, "ready": 1}, "param-server": {"active": 1}}
    )
    k8s.sync(job)
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING
    assert sorted(job.replicas.values_list("role", "index", "status")) == [
        ("param-server", 0, "running"),
        ("trainer", 0, "running"),
        ("trainer", 1, "running"),
    ]

    for pod in pods:
        fake.set_pod_phase(pod, "Succeeded")
    fake.set_jobset_status(name, {"trainer": {"succeeded": 1}, "param-server": {"succeeded": 1}})
    fake.set_conditions(name, ("Completed", "jobset completed successfully", "AllJobsCompleted"))
    k8s.sync(job)
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED
    assert set(job.replicas.values_list("status", flat=True)) == {"succeeded"}
    assert job.events.get(reason="Succeeded").message == (
        "Kubernetes reports Completed: jobset completed successfully"
    )


def test_a_custom_job_whose_pods_cannot_start_stays_queued_with_the_schedulers_reason(
    fake, k8s, alice
):
    """A JobSet's Jobs count Pending pods as active (a Job's status.active is "pending and
    running pods"), so replicatedJobsStatus says active for pods that can never be scheduled
    or whose image cannot be pulled. Until qa55 such a job read Running, its run time counting,
    while nothing ran; now it is Queued, as a PyTorchJob is until a pod runs, with the
    scheduler's events, and Running once an instance has started."""
    job = submitted(alice, k8s, **custom())
    name = job.external_id
    pods = fake.run_pods(name, phase="Pending")
    assert fake.job(name)["status"]["replicatedJobsStatus"][0]["active"] == 1
    fake.add_event(
        "Pod",
        pods[0],
        "FailedScheduling",
        "0/4 nodes are available: 4 Insufficient nvidia.com/gpu.",
        type="Warning",
    )

    k8s.sync(job)
    job.refresh_from_db()

    assert job.status == JobStatus.QUEUED
    assert set(job.replicas.values_list("status", flat=True)) == {"pending"}
    event = job.events.get(reason="K8s:FailedScheduling")
    assert event.message == f"{pods[0]}: 0/4 nodes are available: 4 Insufficient nvidia.com/gpu."
    assert event.type == EventType.WARNING

    fake.set_pod_phase(pods[0], "Running")
    k8s.sync(job)
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING


SCRATCH = S.Datasource("hostpath", "scratch", "/scratch", "/run-1")


def test_a_pool_whose_namespace_pod_security_refuses_the_jobs_pods_says_so_on_the_field(fake, k8s):
    """qa96: a namespace labelled pod-security.kubernetes.io/enforce=baseline refuses
    hostPath volumes, the host network and privileged containers at the pods' admission,
    and restricted every pod the console makes; the job was taken and sat Queued."""
    fake.add_namespace("team-a", pod_security="baseline")
    k8s.pools()  # the inventory reads each namespace's level
    baseline = spec(resource_pool_id="k8s-team-a", datasources=[SCRATCH], host_network=True)

    errors = k8s.check_spec(baseline)

    refuses = (
        "The namespace team-a of this pool enforces the Pod Security level “baseline”, which "
        "refuses {}: the job's pods would never start. Choose a pool whose namespace allows "
        "it, or ask the operator to label the namespace "
        "pod-security.kubernetes.io/enforce=privileged."
    )
    assert errors["datasources[0].name"] == [refuses.format("hostPath volumes")]
    assert errors["jobSpec.hostNetwork"][-1] == refuses.format("the host network")
    with translation.override("zh-hans"):
        [said] = k8s.check_spec(baseline)["datasources[0].name"]
    assert "“baseline”" in said and "hostPath 卷" in said
    # The same job on an unlabelled (privileged) namespace: nothing of the kind.
    assert "datasources[0].name" not in k8s.check_spec(spec(datasources=[SCRATCH]))

    fake.add_namespace("team-a", pod_security="restricted")
    k8s._inventories.clear()
    k8s.pools()
    [restricted] = k8s.check_spec(spec(resource_pool_id="k8s-team-a"))["resourcePoolId"]
    assert restricted.startswith(
        "The namespace team-a of this pool enforces the Pod Security level “restricted”, "
        "which refuses every pod the console makes"
    )


def test_a_job_its_namespaces_pod_security_now_refuses_fails_at_submit_creating_nothing(
    fake, k8s, alice
):
    """Checked again as the worker sends the job: the label may have changed since it was
    taken (held for review, waiting in its queue), and the inventory read is a cached one."""
    job = submitted(alice, k8s, datasources=[SCRATCH])  # no level read yet: taken
    assert job.status == JobStatus.QUEUED
    fake.add_namespace("default", pod_security="baseline")
    later = submitted(alice, k8s, datasources=[SCRATCH])

    assert later.status == JobStatus.SUBMIT_FAILED
    assert "enforces the Pod Security level “baseline”, which refuses hostPath volumes" in (
        later.status_reason
    )
    assert [j["metadata"]["labels"][M.CONSOLE_JOB_LABEL] for j in fake.jobs()] == [job.public_id]


def refused_after_it_was_sent(fake, k8s, owner, level: str, **changes) -> Job:
    """A job the console sent while its namespace admitted its pods, whose namespace's
    Pod Security level then became `level`, and whose operator then tried to make its pods:
    the job object stays, the pods are refused (as on a real cluster: PSA admits or refuses
    pods, never the job that makes them)."""
    job = submitted(owner, k8s, **changes)
    assert job.status == JobStatus.QUEUED
    fake.add_namespace("default", pod_security=level)
    assert fake.run_pods(job.external_id) == []
    return job


def test_a_queued_job_whose_pods_pod_security_refuses_says_why_until_they_are_made(
    fake, k8s, alice, alice_client, wsgi, alice_key, api
):
    """fix98: training-operator says a pod it could not create only in a FailedCreatePod
    event on the PyTorchJob (pkg/controller.v1/control/pod_control.go), never in a
    condition, and tries again for ever: the job sat Queued with no reason shown. Its page
    and the API now say why, the operator's words quoted as they are."""
    job = refused_after_it_was_sent(fake, k8s, alice, "baseline", datasources=[SCRATCH])
    name = job.external_id
    refusals = [
        f'Error creating: pods "{name}-{role}-0" is forbidden: violates PodSecurity '
        '"baseline:latest": hostPath volumes (volume "data-0")'
        for role in ("master", "worker")
    ]

    k8s.sync(job)

    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED
    # The newest refusal: the operator tries its replica types in Go's map order, and both
    # were refused within a second here.
    [said] = [
        f"Kubernetes cannot create the job's pods (PyTorchJob {name}, FailedCreatePod): "
        f"“{refusal}”. The job stays queued while Kubernetes tries again; stop it if the "
        "cause will not go away."
        for refusal in refusals
        if refusal in job.status_reason
    ]
    assert job.status_reason_shown == said
    got = api.request(
        "GET", f"/api/v1/aijobs/{job.public_id}", params=[("resourcePoolId", POOL)], idempotent=True
    )
    assert got["result"]["statusReason"] == said
    alice_client.cookies["django_language"] = "zh-hans"
    page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()
    shown = html.unescape(page.split('id="status-reason">')[1].split("</div>")[0])
    assert shown.startswith(
        f"Kubernetes 无法创建该任务的 Pod（PyTorchJob {name}，FailedCreatePod）："
    )
    assert said[said.index("“") : said.index("”") + 1] in shown
    listed = alice_client.get(reverse("job-list")).content.decode()
    row = listed[listed.index(f'data-job="{job.public_id}"') :]
    assert "job-status-reason" in row[: row.index("</tr>")]
    assert {e.message for e in job.events.filter(reason="K8s:FailedCreatePod")} == set(refusals)

    # The cluster's operator labels the namespace privileged: the operator's next try makes
    # the pods, and the reason goes, the job still Queued (its pods not running yet).
    fake.add_namespace("default", pod_security="privileged")
    fake.run_pods(name, phase="Pending")
    k8s.sync(job)

    job.refresh_from_db()
    assert (job.status, job.status_reason) == (JobStatus.QUEUED, "")


def test_an_mpi_job_whose_worker_pods_pod_security_refuses_says_the_mpi_operators_words(
    fake, k8s, alice
):
    """mpi-operator v2 creates the workers first and says a refused one in an MPIJobFailed
    event ("worker pod created failed: ..."; getOrCreateWorker), making no launcher Job: the
    job is not failed (no condition says so), and waits Queued, saying why."""
    job = refused_after_it_was_sent(
        fake, k8s, alice, "baseline", framework=S.MPI, datasources=[SCRATCH]
    )
    name = job.external_id

    k8s.sync(job)

    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED
    assert job.status_reason.startswith(
        f"Kubernetes cannot create the job's pods (MPIJob {name}, MPIJobFailed): “worker pod "
        f'created failed: pods "{name}-worker-0" is forbidden: violates PodSecurity '
        '"baseline:latest": hostPath volumes (volume "data-0")”.'
    )
    assert not [e for e in fake.events if e["involvedObject"]["kind"] == "Job"]


def test_a_custom_job_in_a_namespace_now_restricted_says_every_check_its_pods_fail(
    fake, k8s, alice
):
    """The restricted level refuses every pod the console makes; the Job controller says so
    on each of the JobSet's Jobs (FailedCreate, its Indexed pods' generateName), as Pod
    Security Admission words it. Read in Chinese, the console's sentence is Chinese and
    the API server's words are as it wrote them."""
    job = refused_after_it_was_sent(fake, k8s, alice, "restricted", **custom())
    name = job.external_id

    k8s.sync(job)

    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED
    container = fake.job(name)["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"][
        "containers"
    ][0]["name"]
    violations = (
        f'allowPrivilegeEscalation != false (container "{container}" must set '
        "securityContext.allowPrivilegeEscalation=false), unrestricted capabilities "
        f'(container "{container}" must set securityContext.capabilities.drop=["ALL"]), '
        f'runAsNonRoot != true (pod or container "{container}" must set '
        "securityContext.runAsNonRoot=true), seccompProfile (pod or container "
        f'"{container}" must set securityContext.seccompProfile.type to "RuntimeDefault" or '
        '"Localhost")'
    )
    with translation.override("zh-hans"):
        shown = job.status_reason_shown
    assert shown.startswith(f"Kubernetes 无法创建该任务的 Pod（Job {name}-")
    assert f'is forbidden: violates PodSecurity "restricted:latest": {violations}”' in shown


def test_an_mpi_job_whose_launcher_pod_is_refused_says_why_from_the_launchers_job(fake, k8s, alice):
    """The MPI operator v2 runs the launcher as a batch Job (<mpijob>-launcher): a launcher
    pod refused at admission is said only in that Job's FailedCreate event (qa55)."""
    job = submitted(alice, k8s, framework=S.MPI)
    refusal = "Error creating: pods is forbidden: exceeded quota: cpu"
    fake.add_event("Job", f"{job.external_id}-launcher", "FailedCreate", refusal, type="Warning")

    k8s.sync(job)

    [event] = job.events.filter(reason="K8s:FailedCreate")
    assert event.message == f"{job.external_id}-launcher: {refusal}"


def test_an_mpi_jobs_launcher_pod_is_its_master_0_for_logs_exit_code_and_usage(
    fake, k8s, alice, settings, tmp_path
):
    """qa96: mpi-operator v2 runs the launcher as the batch Job <mpijob>-launcher, its pod
    <mpijob>-launcher-<random> labelled job-role=launcher and no replica index: master-0
    (all of mpirun's output, the job's exit code) was never found."""
    from jobs.backends.kubernetes import usage_file
    from jobs.shim import read_usage

    settings.VAR_DIR = tmp_path
    job = submitted(alice, k8s, framework=S.MPI)
    name = job.external_id
    fake.set_conditions(name, ("Running", "MPIJob is running."))
    launcher, worker = fake.run_pods(name)
    assert launcher.startswith(f"{name}-launcher-") and worker == f"{name}-worker-0"
    fake.add_logs(launcher, ["rank 0: loss 1.5", "token hf_secret_value"])
    fake.set_usage(launcher, cpu="1500m", memory="2Gi")

    k8s.sync(job)

    assert k8s.logs(job, "master-0", tail=10) == ["rank 0: loss 1.5", "token ******"]
    assert "".join(k8s.download_lines(job, "master-0")) == "rank 0: loss 1.5\ntoken ******\n"
    assert [s["cpu"] for s in read_usage(usage_file(job.public_id, "master-0"))] == [1.5]
    # Its own environment says it is the master's instance 0 (a field reference to the
    # replica-index label it does not have resolved empty).
    env = _resolved(fake.pods[("default", launcher)])
    assert (env["AIHC_ROLE"], env["AIHC_ROLE_INDEX"]) == ("master", "0")
    assert _resolved(fake.pods[("default", worker)])["AIHC_ROLE_INDEX"] == "0"

    fake.set_pod_phase(launcher, "Failed")
    fake.pods[("default", launcher)]["status"]["containerStatuses"][0]["state"] = {
        "terminated": {"exitCode": 3, "reason": "Error"}
    }
    k8s.sync(job)

    master = job.replicas.get(role="master", index=0)
    assert (master.status, master.exit_code) == ("failed", 3)


def test_a_custom_job_whose_pods_are_refused_says_why_from_its_jobs_events(fake, k8s, alice):
    """A pod refused at admission (over the namespace's ResourceQuota, PodSecurity) is never
    made: the only word of it is the Job controller's FailedCreate event on the JobSet's Job,
    as the training operator's is on a PyTorchJob. Until qa55 a custom job then sat Queued
    with no event saying why; the Jobs' events are copied too, each with its Job's name."""
    job = submitted(alice, k8s, **custom())
    name = job.external_id
    refusal = (
        f'Error creating: pods "{name}-trainer-0-0-x7k2p" is forbidden: exceeded quota: gpus, '
        "requested: requests.nvidia.com/gpu=8, used: requests.nvidia.com/gpu=8, "
        "limited: requests.nvidia.com/gpu=8"
    )
    fake.add_event("Job", f"{name}-trainer-0", "FailedCreate", refusal, type="Warning")
    fake.add_event("Job", "someone-elses-trainer-0", "FailedCreate", "not this job's")

    k8s.sync(job)
    k8s.sync(job)

    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED
    [event] = job.events.filter(reason="K8s:FailedCreate")
    assert event.message == f"{name}-trainer-0: {refusal}"
    assert event.type == EventType.WARNING
    # And the Queued job says it (fix98), the quota's words as the Job controller wrote them.
    assert job.status_reason.startswith(
        f"Kubernetes cannot create the job's pods (Job {name}-trainer-0, FailedCreate): "
        f"“{refusal}”."
    )


def test_a_custom_job_whose_jobs_a_quota_refuses_says_the_jobset_controllers_words(
    fake, k8s, alice
):
    """One step before its pods: the JobSet controller cannot create the JobSet's Jobs (a
    `count/jobs.batch` quota used up), and says so only in a Warning JobCreationFailed event
    on the JobSet, each Job's error a line (kubernetes-sigs/jobset createJobs). The job
    stays Queued saying why, the controller's words quoted."""
    job = submitted(alice, k8s, **custom())
    name = job.external_id
    fake.add_quota("default", "jobs", hard={"count/jobs.batch": "0"})

    assert fake.run_pods(name) == []
    k8s.sync(job)

    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED
    refused = [
        f'job "{name}-{role}-0" creation failed with error: jobs.batch "{name}-{role}-0" is '
        "forbidden: exceeded quota: jobs, requested: count/jobs.batch=1, used: "
        "count/jobs.batch=0, limited: count/jobs.batch=0"
        for role in ("trainer", "param-server")
    ]
    assert job.status_reason == (
        f"Kubernetes cannot create the job's pods (JobSet {name}, JobCreationFailed): "
        f"“{chr(10).join(refused)}”. The job stays queued while Kubernetes tries again; stop "
        "it if the cause will not go away."
    )
    [event] = job.events.filter(reason="K8s:JobCreationFailed")
    assert event.type == EventType.WARNING


def test_a_multi_line_refusal_keeps_its_lines_on_the_job_page_and_api_and_joins_them_in_the_list(
    fake, k8s, alice, alice_client, wsgi, alice_key, api
):
    """fix108: the JobSet controller's JobCreationFailed is one line per Job it could not
    create. The job page (pre-line) and the API keep the lines; the job list, one line a
    job, joins them with " / " where HTML ran them together with a space."""
    job = submitted(alice, k8s, **custom())
    name = job.external_id
    fake.add_quota("default", "jobs", hard={"count/jobs.batch": "0"})
    fake.run_pods(name)
    k8s.sync(job)
    job.refresh_from_db()
    first, second = job.status_reason.split("\n")
    alice_client.cookies["django_language"] = "en"

    got = api.request(
        "GET", f"/api/v1/aijobs/{job.public_id}", params=[("resourcePoolId", POOL)], idempotent=True
    )
    page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()
    listed = alice_client.get(reverse("job-list")).content.decode()

    shown = html.unescape(page.split('id="status-reason">')[1].split("</div>")[0])
    assert shown == f"{first}\n{second}"
    row = listed[listed.index(f'data-job="{job.public_id}"') :]
    row = html.unescape(row[: row.index("</tr>")])
    reason = row.split('class="small text-muted job-status-reason"')[1]
    title, text = reason.split('title="')[1].split('">', 1)
    assert title == f"{first}\n{second}"  # the tooltip has room for its lines
    assert text.split("</div>")[0] == f"{first.strip()} / {second.strip()}"[:119] + "…"
    assert got["result"]["statusReason"] == f"{first}\n{second}"


def test_a_custom_job_one_of_whose_jobs_is_refused_says_why_until_every_pod_is_made(
    fake, k8s, alice
):
    """A partial refusal: the quota admits the trainers' Job (its two pods made and
    running) and not the parameter server's. The job says why while that pod is missing,
    and says it no more once the quota lets the JobSet controller make its Job."""
    job = submitted(alice, k8s, **custom())
    name = job.external_id
    fake.add_quota("default", "jobs", hard={"count/jobs.batch": "1"})

    made = fake.run_pods(name, phase="Pending")
    k8s.sync(job)

    job.refresh_from_db()
    assert [p.rsplit("-", 2)[0] for p in made] == [f"{name}-trainer-0"] * 2
    assert job.status == JobStatus.QUEUED
    assert job.status_reason.startswith(
        f"Kubernetes cannot create the job's pods (JobSet {name}, JobCreationFailed): "
        f'“job "{name}-param-server-0" creation failed with error: jobs.batch '
        f'"{name}-param-server-0" is forbidden: exceeded quota: jobs, requested: '
        "count/jobs.batch=1, used: count/jobs.batch=1, limited: count/jobs.batch=1”."
    )

    # The cluster's operator raises the quota: the controller's next try makes the Job, its
    # pod is made, and the reason goes (the trainers' pods are not made again).
    fake.add_quota(
        "default", "jobs", hard={"count/jobs.batch": "2"}, used={"count/jobs.batch": "1"}
    )
    [param_server] = fake.run_pods(name, phase="Pending")
    k8s.sync(job)

    job.refresh_from_db()
    assert param_server.startswith(f"{name}-param-server-0-0-")
    assert (job.status, job.status_reason) == (JobStatus.QUEUED, "")
    assert len(fake.pods) == 2 + 3  # the fixture's two, and the job's three


def test_a_pytorch_job_whose_pods_are_refused_stays_queued_past_its_timeout_saying_why(
    fake, k8s, alice
):
    """A Kubernetes job's timeout is the activeDeadlineSeconds it was sent; the console
    times out only the local pool's jobs itself. training-operator starts that clock
    (status.startTime) only once every replica type's pods were created (common/job.go
    ReconcileJobs), so a job whose pods are refused writes no Failed condition, and the
    console leaves it Queued, saying why, however long past its timeout, and sends no
    delete."""
    job = refused_after_it_was_sent(
        fake, k8s, alice, "baseline", datasources=[SCRATCH], timeout_minutes=1
    )
    # Sent two hours ago, its one-minute timeout long past.
    Job.objects.filter(pk=job.pk).update(created_at=timezone.now() - timedelta(hours=2))

    k8s.sync(job)

    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED
    assert job.status_reason.startswith("Kubernetes cannot create the job's pods (PyTorchJob ")
    assert fake.job(job.external_id)
    assert not fake.calls("delete pytorchjobs")


def test_a_custom_job_one_of_whose_jobs_was_made_is_timed_out_by_that_jobs_deadline(
    fake, k8s, alice
):
    """A batch Job that exists starts its deadline at its first sync, pods or not
    (kubernetes job_controller.go): the trainers' Job, made while the parameter server's is
    refused, fails past its activeDeadlineSeconds, the console's FailJobSet rule fails the
    JobSet, and the job is Timed out, the refusal no longer its reason."""
    job = submitted(alice, k8s, **custom())
    name = job.external_id
    fake.add_quota("default", "jobs", hard={"count/jobs.batch": "1"})
    fake.run_pods(name, phase="Pending")
    k8s.sync(job)
    job.refresh_from_db()
    assert "JobCreationFailed" in job.status_reason

    fake.set_conditions(
        name,
        (
            "Failed",
            f"applying FailJobSet failure policy action (first failed job: {name}-trainer-0)",
            "FailJobSetFailurePolicyAction",
        ),
    )
    k8s.sync(job)

    job.refresh_from_db()
    assert job.status == JobStatus.TIMED_OUT
    assert "JobCreationFailed" not in job.status_reason


def test_a_failed_custom_job_is_failed_and_one_past_its_deadline_timed_out(fake, k8s, alice):
    broken = submitted(alice, k8s, **custom())
    late = submitted(alice, k8s, **custom())
    fake.set_conditions(
        broken.external_id,
        (
            "Failed",
            "jobset failed due to reaching max number of restarts (first failed job: x)",
            "ReachedMaxRestarts",
        ),
    )
    fake.set_conditions(
        late.external_id,
        (
            "Failed",
            "applying FailJobSet failure policy action (first failed job: y)",
            "FailJobSetFailurePolicyAction",
        ),
    )

    k8s.sync(broken)
    k8s.sync(late)

    broken.refresh_from_db()
    late.refresh_from_db()
    assert broken.status == JobStatus.FAILED
    assert "reaching max number of restarts" in broken.status_reason
    assert late.status == JobStatus.TIMED_OUT


def test_a_restarted_custom_job_follows_its_current_attempts_pods_only(fake, k8s, alice):
    job = submitted(alice, k8s, **custom())
    name = job.external_id
    fake.set_jobset_status(name, {"trainer": {"active": 1}}, restarts=1)
    fake.run_pods(name)
    # The first attempt's pods, failed, still going away (listed after the new ones).
    fake.set_jobset_status(name, {}, restarts=0)
    for pod in fake.run_pods(name, phase="Failed", exit_code=1):
        assert fake.pods[("default", pod)]["metadata"]["labels"][M.RESTART_ATTEMPT_LABEL] == "0"
    fake.set_jobset_status(name, {"trainer": {"active": 1}}, restarts=1)

    k8s.sync(job)
    job.refresh_from_db()

    assert job.status == JobStatus.RUNNING
    assert set(job.replicas.values_list("status", flat=True)) == {"running"}


def test_stopping_a_custom_job_deletes_its_jobset_and_it_is_stopped_once_gone(fake, k8s, alice):
    fake.hold_deletions = True
    job = submitted(alice, k8s, **custom())
    name = job.external_id
    fake.run_pods(name)
    fake.set_jobset_status(name, {"trainer": {"active": 1}})
    k8s.sync(job)

    fake.set_conditions(name, ("Failed", "jobset failed", "FailedJobs"))
    k8s.stop(job)
    k8s.sync(job)
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPING
    [delete] = fake.calls("delete jobsets")
    assert delete.param("propagationPolicy") == "Background"
    assert fake.secret(f"{name}-env") is None

    fake.finish_deletions()
    k8s.sync(job)
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPED
    assert fake.jobs() == [] and not fake.pods.get(("default", "x"))
    assert not [p for p in fake.pods if p[1].startswith(name)]


def test_a_custom_jobs_create_without_an_answer_is_adopted_by_its_label(fake, k8s, alice):
    fake.drop_next("create jobsets", after=True)

    job = submitted(alice, k8s, **custom())
    k8s.submit(job)
    job.refresh_from_db()

    assert len(fake.jobs()) == 1 and len(fake.calls("create jobsets")) == 2
    assert job.external_id == fake.jobs()[0]["metadata"]["name"]
    assert "adopted" in job.events.get(reason="Submitted").message


def test_a_custom_instances_logs_are_read_from_its_pod(fake, k8s, alice):
    job = submitted(alice, k8s, **custom())
    pods = fake.run_pods(job.external_id)
    second = next(p for p in pods if p.startswith(f"{job.external_id}-trainer-0-1-"))
    fake.add_logs(second, ["step 1 hf_secret_value"])

    assert k8s.logs(job, "trainer-1", tail=5) == ["step 1 ******"]
    [call] = fake.calls("log pods")
    assert call.param("container") == "main"
    assert call.path.endswith(f"/pods/{second}/log")


def test_a_pod_printing_a_stamp_and_the_runners_mark_is_not_shown_as_the_console(fake, k8s, alice):
    # No shim stamps a pod's lines: one printed as a local log's console line is the job's.
    job = submitted(alice, k8s, **custom())
    pods = fake.run_pods(job.external_id)
    first = next(p for p in pods if p.startswith(f"{job.external_id}-trainer-0-0-"))
    fake.add_logs(first, ["2026-11-30T09:00:00.000000Z \x1f[console] exited with code 0"])

    [line] = shown_lines(k8s.logs(job, "trainer-0", tail=5))

    assert line.console is False
    assert line.text == "[console] exited with code 0"


def test_a_cluster_without_jobset_fails_a_custom_submit_saying_what_to_install(
    settings, k8s, alice, caplog
):
    settings.LANGUAGE_CODE = "zh-hans"  # the console records in Chinese; its log is English
    fake = FakeKubernetes(jobset=False).start()
    try:
        configure(
            settings,
            fake,
            KUBERNETES_ACCELERATORS=f"{A800}=nvidia.com/gpu",
            KUBERNETES_VOLUMES="pfs=datasets",
        )
        with caplog.at_level(logging.WARNING, "jobs.kubernetes"):
            job = submitted(alice, k8s, **custom())
        pytorch = submitted(alice, k8s)
    finally:
        fake.stop()

    assert job.status == JobStatus.SUBMIT_FAILED
    assert job.status_reason.startswith("集群未提供 JobSet")
    with translation.override("en"):
        assert job.status_reason_shown.startswith(
            "The cluster does not serve JobSet (jobset.x-k8s.io/v1alpha2): install it there first"
        )
    # qa103: the log line quoted it in Chinese, inside an English line.
    [logged] = [m for m in caplog.messages if m.startswith("Kubernetes submit of ")]
    assert "The cluster does not serve JobSet (jobset.x-k8s.io/v1alpha2)" in logged
    assert fake.secret(f"{M.object_name(job.job_spec(), job.public_id)}-env") is None
    assert pytorch.status == JobStatus.QUEUED


def _jobset_refusal(fake, change):
    from jobs.kubernetes.client import KubeClient, KubeError

    client = KubeClient(server=fake.url, token=fake.token)
    body = M.job_manifest(
        spec(**custom(envs=[], datasources=[])),
        M.Cluster(),
        name="llm-train-1",
        namespace="default",
        job_id="customjob-1",
    )
    change(body)
    try:
        client.create(M.resource_path(S.CUSTOM, "default"), body)
    except KubeError as exc:
        return exc.status, exc.reason, exc.message
    return 201, "", ""


def _trainer(body):
    return body["spec"]["replicatedJobs"][0]["template"]["spec"]


@pytest.mark.parametrize(
    ("change", "status", "reason", "words"),
    [
        (lambda b: None, 201, "", ""),
        (
            lambda b: b["spec"].update(replicas=2),
            400,
            "BadRequest",
            'unknown field "spec.replicas"',
        ),
        (
            lambda b: _trainer(b).update(restarts=1),
            400,
            "BadRequest",
            'unknown field "spec.replicatedJobs[0].template.spec.restarts"',
        ),
        (lambda b: b["spec"].update(replicatedJobs=[]), 422, "Invalid", "spec.replicatedJobs"),
        (
            lambda b: b["spec"]["replicatedJobs"][1].update(name="trainer"),
            422,
            "Invalid",
            "Duplicate value",
        ),
        (
            lambda b: _trainer(b)["template"]["spec"].update(restartPolicy="Always"),
            422,
            "Invalid",
            "restartPolicy",
        ),
        (lambda b: _trainer(b).pop("completions"), 422, "Invalid", "completion mode is Indexed"),
        (
            lambda b: b["spec"]["replicatedJobs"][0].update(name="a" + "b" * 44),
            422,
            "Invalid",
            "JobSet name must be shorter",
        ),
        (lambda b: b["spec"]["successPolicy"].update(operator="Most"), 422, "Invalid", "operator"),
        (
            lambda b: b["spec"]["failurePolicy"]["rules"][0].update(name="deadline exceeded"),
            422,
            "Invalid",
            "rules[0].name",
        ),
        (
            lambda b: b["spec"]["network"].update(subdomain="Sub_domain"),
            422,
            "Invalid",
            "subdomain",
        ),
    ],
)
def test_the_fake_api_server_refuses_a_jobset_a_real_one_refuses(
    fake, change, status, reason, words
):
    assert _jobset_refusal(fake, change)[:2] == (status, reason)
    assert words in _jobset_refusal(fake, change)[2]


# -- README's RBAC -----------------------------------------------------------------------------


def readme_rbac_objects() -> list[dict]:
    """The objects of README's RBAC block (the yaml block giving the console's roles)."""
    import re
    from pathlib import Path

    import yaml

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(.*?)```", readme, re.S)
    [block] = [b for b in blocks if "name: ai-job-console-inventory" in b]
    return [o for o in yaml.safe_load_all(block) if o]


def readme_rbac(scope: str) -> set[tuple[str, str, str]]:
    """(verb, API group, resource) that README's RBAC gives the console's ServiceAccount in a
    namespace (scope "" : at the cluster scope), as the API server's authorizer reads it: a
    Role only through a RoleBinding in its namespace; a ClusterRole through a
    ClusterRoleBinding everywhere, through a RoleBinding in that binding's namespace only."""
    objects = readme_rbac_objects()
    [account] = [o for o in objects if o["kind"] == "ServiceAccount"]
    who = {
        "kind": "ServiceAccount",
        "name": account["metadata"]["name"],
        "namespace": account["metadata"]["namespace"],
    }
    held: set[tuple[str, str]] = set()  # (kind, namespace or "") of the roles held there
    for binding in objects:
        if binding["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        ref = binding["roleRef"]
        if who not in binding["subjects"] or ref["apiGroup"] != "rbac.authorization.k8s.io":
            continue
        where = binding["metadata"].get("namespace", "")
        if binding["kind"] == "ClusterRoleBinding" and ref["kind"] == "ClusterRole":
            held.add((ref["name"], ""))
        elif binding["kind"] == "RoleBinding" and scope and where == scope:
            held.add((ref["name"], ref["kind"]))
    grants = set()
    for role in objects:
        name = role["metadata"]["name"]
        if role["kind"] == "ClusterRole":
            if (name, "") not in held and (name, "ClusterRole") not in held:
                continue
        elif role["kind"] == "Role":
            if role["metadata"].get("namespace") != scope or (name, "Role") not in held:
                continue
        else:
            continue
        for rule in role["rules"]:
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    grants |= {(verb, group, resource) for verb in rule["verbs"]}
    return grants


def test_the_rbac_readme_gives_is_bound_to_the_consoles_service_account_in_each_namespace():
    """A Role or ClusterRole grants nothing until a binding names who holds it: README's
    set-up, followed as written, gives its ServiceAccount the same rights in each namespace
    of the example's KUBERNETES_NAMESPACES, and the inventory's at the cluster scope (until
    qa55 it gave no ServiceAccount and no binding: every request was 403 Forbidden)."""
    in_a, in_b, cluster = readme_rbac("ml-team-a"), readme_rbac("ml-team-b"), readme_rbac("")
    assert ("create", "kubeflow.org", "pytorchjobs") in in_a
    assert in_a == in_b
    assert {("list", "", "nodes"), ("list", "", "pods")} <= cluster
    # Jobs are made only in the configured namespaces, not anywhere in the cluster.
    assert ("create", "kubeflow.org", "pytorchjobs") not in cluster
    assert ("create", "kubeflow.org", "pytorchjobs") not in readme_rbac("kube-system")


def test_the_rbac_readme_gives_grants_every_request_of_a_jobs_life(fake, k8s, alice):
    """Pools, submit, follow (pods, events, usage), logs, a stop, a delete, and a stop made while
    a create got no clear answer (which lists the job's kind by its label): an identity with
    only README's Roles would get a 403 for any request they do not grant."""
    k8s.pools()
    wait_for_inventory(k8s)
    job = submitted(alice, k8s)
    fake.run_pods(job.external_id)
    fake.set_conditions(job.external_id, ("Created", "created"), ("Running", "running"))
    k8s.sync(job)
    k8s.logs(job, "worker-0", tail=1)
    k8s.stop(job)
    k8s.sync(job)
    k8s.delete(job)
    [in_flight] = jobs_submit(
        owner=alice, spec=spec(name="in-flight"), submit_key=str(uuid.uuid4()), backend="kubernetes"
    )
    Job.objects.filter(pk=in_flight.pk).update(
        status=JobStatus.STOPPING, updated_at=timezone.now() - timedelta(minutes=5)
    )
    in_flight.refresh_from_db()
    k8s.sync(in_flight)

    groups = {"pytorchjobs": "kubeflow.org", "tfjobs": "kubeflow.org", "mpijobs": "kubeflow.org"}
    groups |= {"jobsets": "jobset.x-k8s.io"}
    made = set()  # (scope, verb, group, resource); scope "": the cluster's
    for request in fake.requests:
        verb, plural, namespace, _name, sub = fake._route(request)
        # The fake's namespace stands for the example's first (README: ml-team-a).
        scope = "ml-team-a" if namespace else ""
        if plural == "pods.metrics.k8s.io":
            made.add((scope, verb, "metrics.k8s.io", "pods"))
        elif verb == "log":
            made.add((scope, "get", "", "pods/log"))
        else:
            resource = f"{plural}/{sub}" if sub else plural
            made.add((scope, verb, groups.get(plural, ""), resource))
    in_namespace = {m[1:] for m in made if m[0]}
    at_cluster = {m[1:] for m in made if not m[0]}
    assert {("list", "kubeflow.org", "pytorchjobs"), ("get", "", "pods/log")} <= in_namespace
    assert {("list", "metrics.k8s.io", "pods"), ("patch", "", "secrets")} <= in_namespace
    assert {("list", "", "nodes")} <= at_cluster
    assert sorted(in_namespace - readme_rbac("ml-team-a")) == []
    assert sorted(at_cluster - readme_rbac("")) == []
    # No more than is used either (qa103: get on pods, events and pod metrics, never made).
    read_only = {("", "pods"), ("", "pods/log"), ("", "events"), ("metrics.k8s.io", "pods")}
    assert {g for g in readme_rbac("ml-team-a") if g[1:] in read_only} == {
        m for m in in_namespace if m[1:] in read_only
    }


# -- a staff member's Stop reason (fix108) ----------------------------------------------

STAFF_REASON = "The A800 pool is drained for maintenance tonight."


def test_a_running_job_staff_stopped_with_a_reason_ends_with_it_once_kubernetes_deleted_it(
    fake, k8s, alice, reviewer
):
    """qa98 made a staff Stop's reason the reason a local job ends with; a Kubernetes job's
    sync then replaced it with "Kubernetes deleted ...". It stays, in the reader's language,
    and Kubernetes' words are its Stopped event's."""
    from jobs.actions import job_stop

    job = running(fake, k8s, submitted(alice, k8s))

    assert job_stop(job=job, actor=reviewer, reason=STAFF_REASON)
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPING
    k8s.sync(job)

    job.refresh_from_db()
    assert job.status == JobStatus.STOPPED
    with translation.override("en"):
        assert job.status_reason_shown == f"Stopped by carol: {STAFF_REASON}"
    with translation.override("zh-hans"):
        assert job.status_reason_shown == f"已由 carol 停止：{STAFF_REASON}"
    [stopped] = job.events.filter(reason="Stopped")
    assert stopped.message == f"Kubernetes deleted {job.external_id}."


def test_a_job_staff_stopped_whose_resource_the_worker_finds_gone_first_ends_with_the_reason(
    fake, k8s, alice, reviewer, transactional_db
):
    """The worker's sync finds the resource gone before the web saves Stopping (stop_sent_at):
    the reason was kept before the delete left, so that Stopped ends with it too."""
    from jobs.actions import job_stop

    job = running(fake, k8s, submitted(alice, k8s))
    as_the_worker_read_it = Job.objects.get(pk=job.pk)
    answer = fake.block_next("delete pytorchjobs", after=True)

    def web_stops() -> None:
        try:
            job_stop(job=Job.objects.get(pk=job.pk), actor=reviewer, reason=STAFF_REASON)
        finally:
            connection.close()

    web = threading.Thread(target=web_stops)
    web.start()
    try:
        deadline = time.monotonic() + 10
        while fake.jobs() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert fake.jobs() == []  # deleted; the web waits for the answer
        k8s.sync(as_the_worker_read_it)  # 404 before Stopping is saved
    finally:
        answer.set()
        web.join(30)

    job.refresh_from_db()
    assert job.status == JobStatus.STOPPED
    assert job.status_reason == f"Stopped by carol: {STAFF_REASON}"


def test_a_staff_stop_kubernetes_refused_leaves_no_reason_for_a_loss_found_later(
    fake, k8s, alice, reviewer
):
    from jobs.actions import ActionError, job_stop

    job = running(fake, k8s, submitted(alice, k8s))
    fake.fail_next("delete pytorchjobs", status=403, reason="Forbidden", message="no")
    with pytest.raises(ActionError):
        job_stop(job=job, actor=reviewer, reason=STAFF_REASON)
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING

    assert job.stop_reason == ""
    assert STAFF_REASON not in job.status_reason


# -- fault tolerance: the console restarts the whole job (fix107) -------------------------


def tolerant(owner, k8s, limit: int, **changes) -> Job:
    return submitted(
        owner,
        k8s,
        fault_tolerance=True,
        fault_tolerance_config=S.FaultToleranceConfig(fault_tolerance_limit=limit),
        **changes,
    )


def failed_on_kubernetes(fake, job: Job) -> str:
    """The operator's Failed condition once a replica of the job failed; its message."""
    message = f"PyTorchJob {job.external_id} is failed because 1 Master replica(s) failed."
    fake.set_pod_phase(f"{job.external_id}-master-0", "Failed")
    fake.set_conditions(job.external_id, ("Failed", message))
    return message


def restart_events(job: Job) -> list[str]:
    return list(
        job.events.filter(reason="Restarted").order_by("id").values_list("message", flat=True)
    )


@pytest.mark.parametrize("third_run", ["Succeeded", "Failed"])
def test_a_fault_tolerant_job_failing_twice_with_limit_2_is_created_again_twice_then_ends(
    fake, k8s, alice, third_run
):
    """AIHC and the local pool restart the whole job up to N times; the operator's
    backoffLimit counted its pods' in-place restarts (fix107)."""
    job = running(fake, k8s, tolerant(alice, k8s, 2))
    name = job.external_id
    sent = fake.job(name)
    assert sent["spec"]["runPolicy"]["backoffLimit"] == 0
    assert {r["restartPolicy"] for r in sent["spec"]["pytorchReplicaSpecs"].values()} == {"Never"}

    messages = []
    for restart in (1, 2):
        messages.append(failed_on_kubernetes(fake, job))
        k8s.sync(job)  # the restart counted, said, and the failed resource deleted
        job.refresh_from_db()
        assert (job.status, job.restarts) == (JobStatus.RUNNING, restart)
        assert ("pytorchjobs", "default", name) not in fake.objects
        k8s.sync(job)  # gone: created again, with its Secret
        again = fake.job(name)
        assert again["metadata"]["labels"][M.RESTART_LABEL] == str(restart)
        assert 0 < again["spec"]["runPolicy"]["activeDeadlineSeconds"] <= 60 * 60 * 24 * 30
        assert fake.secret(f"{name}-env") is not None
        job = running(fake, k8s, job)
        assert set(job.replicas.values_list("restarts", flat=True)) == {restart}
        assert job.k8s_uid == again["metadata"]["uid"]  # the new resource's (qa105)

    if third_run == "Succeeded":
        fake.set_conditions(name, ("Succeeded", "PyTorchJob succeeded."))
    else:
        last = failed_on_kubernetes(fake, job)
    k8s.sync(job)
    job.refresh_from_db()

    assert len(fake.calls("create pytorchjobs")) == 3
    assert restart_events(job) == [
        f"Restarting the whole job (1 of 2): Kubernetes reports Failed: {messages[0]}",
        f"Restarting the whole job (2 of 2): Kubernetes reports Failed: {messages[1]}",
    ]
    if third_run == "Succeeded":
        assert job.status == JobStatus.SUCCEEDED
    else:
        assert job.status == JobStatus.FAILED
        assert job.status_reason == (
            f"Kubernetes reports Failed: {last} (fault-tolerance restarts used up: 2 of 2)"
        )
        assert ("pytorchjobs", "default", name) in fake.objects  # ended: kept, as any
    with translation.override("zh-hans"):
        assert "重启" in job.events.filter(reason="Restarted").first().message_shown


def test_a_job_without_fault_tolerance_or_sent_with_the_operators_backoff_limit_just_fails(
    fake, k8s, alice
):
    plain = running(fake, k8s, submitted(alice, k8s))
    older = running(fake, k8s, tolerant(alice, k8s, 2))
    # Sent before fix107: the operator restarted it in place up to backoffLimit already.
    fake.job(older.external_id)["spec"]["runPolicy"]["backoffLimit"] = 2

    for job in (plain, older):
        failed_on_kubernetes(fake, job)
        k8s.sync(job)
        job.refresh_from_db()

        assert (job.status, job.restarts) == (JobStatus.FAILED, 0)
        assert not job.events.filter(reason="Restarted").exists()
    assert not fake.calls("delete pytorchjobs")


def test_a_job_stopped_during_its_restart_ends_stopped_and_is_never_created_again(fake, k8s, alice):
    fake.hold_deletions = True  # the failed run's pods terminate until finish_deletions
    job = running(fake, k8s, tolerant(alice, k8s, 3))
    failed_on_kubernetes(fake, job)
    k8s.sync(job)
    k8s.sync(job)  # deleted, its pods still going: not created again yet
    job.refresh_from_db()
    assert (job.status, job.restarts) == (JobStatus.RUNNING, 1)

    k8s.stop(job)
    fake.finish_deletions()
    k8s.sync(job)
    k8s.sync(job)

    ended_as_stopped(job)
    assert len(fake.calls("create pytorchjobs")) == 1
    assert not fake.jobs()


def test_a_restart_whose_old_pods_stay_terminating_fails_the_job_after_a_while_naming_them(
    fake, k8s, alice
):
    fake.hold_deletions = True  # their kubelet never confirms them gone
    job = running(fake, k8s, tolerant(alice, k8s, 3))
    failed_on_kubernetes(fake, job)
    k8s.sync(job)
    Job.objects.filter(pk=job.pk).update(restart_begun_at=timezone.now() - timedelta(minutes=5))
    job.refresh_from_db()

    k8s.sync(job)

    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert f"{job.external_id}-master-0, {job.external_id}-worker-0" in job.status_reason
    assert job.restart_begun_at is None
    assert len(fake.calls("create pytorchjobs")) == 1


@pytest.mark.parametrize("held_by", ["a refused delete", "a finalizer"])
def test_a_restart_whose_failed_resource_stays_fails_the_job_after_a_while_naming_it(
    fake, k8s, alice, held_by
):
    job = running(fake, k8s, tolerant(alice, k8s, 3))
    if held_by == "a refused delete":
        fake.forbid("delete", "pytorchjobs")
    else:  # deleted, and kept by a finalizer whose controller is gone
        fake.job(job.external_id)["metadata"]["finalizers"] = ["example.com/gone-controller"]
    failed_on_kubernetes(fake, job)
    k8s.sync(job)
    k8s.sync(job)
    job.refresh_from_db()
    assert (job.status, job.restarts) == (JobStatus.RUNNING, 1)  # waited for a while

    # Five minutes on: the restart began then, the cluster took the delete then (a finalizer
    # holding it) or refused it again now; a worker of then has no delete of its own to wait on.
    five_minutes_ago = timezone.now() - timedelta(minutes=5)
    Job.objects.filter(pk=job.pk).update(restart_begun_at=five_minutes_ago)
    if held_by == "a finalizer":
        fake.job(job.external_id)["metadata"]["deletionTimestamp"] = five_minutes_ago.strftime(
            "%Y-%m-%dT%H:%M:%SZ"
        )
    job.refresh_from_db()
    KubernetesBackend().sync(job)

    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert job.status_reason == (
        "The job failed and was to be restarted, but after 5 minutes the PyTorchJob "
        f"{job.external_id} of its last run is still there (its delete refused, or held by a "
        "finalizer), so the job was not created again."
    )
    with translation.override("zh-hans"):
        assert "仍然存在" in job.events.get(reason="Failed").message_shown
    assert job.restart_begun_at is None
    assert len(fake.calls("create pytorchjobs")) == 1


def test_a_restart_whose_delete_never_left_before_a_long_outage_is_sent_then_not_failed(
    fake, k8s, alice
):
    """Review 53: the five minutes counted from when the restart began, so a worker (or API
    server) down that long after its delete got no answer failed a job fault tolerance was to
    restart, with no delete ever sent and the failed resource left in the cluster."""
    job = running(fake, k8s, tolerant(alice, k8s, 3))
    fake.drop_next("delete pytorchjobs")  # no answer, and not carried out
    failed_on_kubernetes(fake, job)
    k8s.sync(job)  # the restart begun, its delete taken as sent (no clear answer)
    job.refresh_from_db()
    assert job.restart_begun_at is not None and fake.job(job.external_id) is not None

    Job.objects.filter(pk=job.pk).update(restart_begun_at=timezone.now() - timedelta(minutes=9))
    job.refresh_from_db()
    KubernetesBackend().sync(job)  # the worker back after nine minutes

    job.refresh_from_db()
    assert (job.status, job.restarts) == (JobStatus.RUNNING, 1)
    assert not fake.jobs()  # its delete sent, and taken
    KubernetesBackend().sync(job)
    job.refresh_from_db()
    assert job.restart_begun_at is None
    assert len(fake.calls("create pytorchjobs")) == 2


def test_a_worker_killed_between_the_delete_and_the_create_leaves_the_next_to_create_it_once(
    fake, k8s, alice
):
    from jobs.backends.kubernetes import KubernetesBackend

    job = running(fake, k8s, tolerant(alice, k8s, 3))
    failed_on_kubernetes(fake, job)
    k8s.sync(job)  # the restart begun and the delete sent; then this worker is gone
    assert not fake.jobs()

    # The next worker's create is carried out but its answer lost (killed as it came).
    next_worker = KubernetesBackend()
    fake.drop_next("create pytorchjobs", after=True)
    job.refresh_from_db()
    with pytest.raises(BackendError):
        next_worker.sync(job)
    job.refresh_from_db()
    assert job.restart_begun_at is not None
    KubernetesBackend().sync(job)
    job.refresh_from_db()

    assert job.restart_begun_at is None
    assert (job.status, job.restarts) == (JobStatus.RUNNING, 1)
    assert len(fake.calls("create pytorchjobs")) == 2  # the first, and the restart's once
    assert len(restart_events(job)) == 1
    restarted = fake.job(job.external_id)
    assert restarted["metadata"]["labels"][M.RESTART_LABEL] == "1"
    # Its Secret goes with it (ttlSecondsAfterFinished), though its maker died before saying so.
    [owner] = fake.secret(f"{job.external_id}-env")["metadata"]["ownerReferences"]
    assert owner["uid"] == restarted["metadata"]["uid"]


def test_a_job_stopped_while_its_restarts_create_is_on_its_way_has_what_it_made_deleted(
    fake, k8s, alice, transactional_db
):
    # No secret env: the Stop deletes the Secret too, and the fake refuses a job naming one
    # that is not there (a real API server takes it, and its pods never start).
    job = running(fake, k8s, tolerant(alice, k8s, 3, envs=[]))
    failed_on_kubernetes(fake, job)
    k8s.sync(job)  # the failed resource deleted
    job.refresh_from_db()
    answer = fake.block_next("create pytorchjobs")  # held before it is carried out
    before = len(fake.calls("create pytorchjobs"))
    raised: list[BaseException] = []

    def worker_creates_again() -> None:
        try:
            k8s.sync(Job.objects.get(pk=job.pk))
        except BaseException as exc:
            raised.append(exc)
        finally:
            connection.close()

    worker = threading.Thread(target=worker_creates_again)
    worker.start()
    try:
        deadline = time.monotonic() + 10
        while len(fake.calls("create pytorchjobs")) == before and time.monotonic() < deadline:
            time.sleep(0.01)
        k8s.stop(job)  # the page's Stop, while the create is out
    finally:
        answer.set()
        worker.join(30)
    assert not raised
    assert not fake.jobs()  # deleted by that worker at once, not at a stop sent again later
    k8s.sync(job)

    ended_as_stopped(job)
    assert len(fake.calls("create pytorchjobs")) == 2
    assert not fake.jobs()


def test_a_restart_kubernetes_refuses_to_create_fails_the_job_with_its_message(fake, k8s, alice):
    job = running(fake, k8s, tolerant(alice, k8s, 3))
    failed_on_kubernetes(fake, job)
    k8s.sync(job)
    fake.fail_next(
        "create pytorchjobs",
        status=403,
        reason="Forbidden",
        message='pytorchjobs.kubeflow.org is forbidden: exceeded quota: "gpu"',
    )
    job.refresh_from_db()

    k8s.sync(job)

    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert job.status_reason.startswith(
        "The job failed and was to be restarted, but Kubernetes refused to create it again: "
    )
    assert "exceeded quota" in job.status_reason
    assert fake.secret(f"{job.external_id}-env") is None  # no job will use it
    with translation.override("zh-hans"):
        assert "拒绝重新创建" in job.events.get(reason="Failed").message_shown


def test_a_restart_whose_pods_the_cluster_refuses_is_queued_saying_why_until_they_are_made(
    fake, k8s, alice
):
    """qa103: training-operator says refused pods only in a FailedCreatePod event and starts
    no deadline without them; the restarted job stayed Running, "No replicas yet", no reason,
    for ever. It goes back to Queued saying why, as a new job does; the failed run's own
    refusal (same resource name, before the restart's create) is not taken for the restart's."""
    job = running(fake, k8s, tolerant(alice, k8s, 2))
    name = job.external_id
    earlier = (timezone.now() - timedelta(minutes=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    fake.add_event(
        "PyTorchJob", name, "FailedCreatePod", "Error creating: old", type="Warning", stamp=earlier
    )
    failed_on_kubernetes(fake, job)
    k8s.sync(job)  # the restart begun
    k8s.sync(job)  # created again
    k8s.sync(job)  # its pods being made: Running through the restart
    job.refresh_from_db()
    assert (job.status, job.restarts) == (JobStatus.RUNNING, 1)
    assert "cannot create" not in job.status_reason

    refusal = (
        f'Error creating: pods "{name}-master-0" is forbidden: exceeded quota: gpu, '
        "requested: requests.nvidia.com/gpu=8, used: requests.nvidia.com/gpu=16, "
        "limited: requests.nvidia.com/gpu=16"
    )
    fake.add_event("PyTorchJob", name, "FailedCreatePod", refusal, type="Warning")
    k8s.sync(job)

    job.refresh_from_db()
    assert (job.status, job.restarts) == (JobStatus.QUEUED, 1)
    assert job.status_reason_shown == (
        f"Kubernetes cannot create the job's pods (PyTorchJob {name}, FailedCreatePod): "
        f"“{refusal}”. The job stays queued while Kubernetes tries again; stop it if the "
        "cause will not go away."
    )
    assert job.started_at is not None  # its first start: still its start

    # The quota is raised: the operator makes the pods and runs them.
    job = running(fake, k8s, job)
    assert job.restarts == 1
    assert "cannot create" not in job.status_reason


def queued_by_refused_pods(fake, k8s, job: Job) -> Job:
    """The job failed, restarted as a whole, and back in Queued: its new pods refused."""
    failed_on_kubernetes(fake, job)
    for _ in range(3):  # the restart begun, created again, its pods being made
        k8s.sync(job)
    refusal = f'Error creating: pods "{job.external_id}-master-0" is forbidden: exceeded quota'
    fake.add_event("PyTorchJob", job.external_id, "FailedCreatePod", refusal, type="Warning")
    k8s.sync(job)
    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED
    return job


def test_a_restarted_job_waiting_again_for_its_pods_counts_no_card_time_until_they_run(
    fake, k8s, alice
):
    """fix128: My usage and the job's 卡时 counted cards × first start to finish, the time
    spent back in Queued (holding no cards) included."""
    from jobs.usage import Period, job_usage, usage_report

    job = running(fake, k8s, tolerant(alice, k8s, 2))
    cards = job.total_cards
    # It first ran an hour before it went back to Queued, where it then waited two hours.
    job = queued_by_refused_pods(fake, k8s, job)
    wait = job.waits.get()
    Job.objects.filter(pk=job.pk).update(started_at=wait.began_at - timedelta(hours=3))
    job.waits.update(began_at=wait.began_at - timedelta(hours=2))
    job.refresh_from_db()
    later = timezone.now() + timedelta(hours=5)

    while_waiting = job_usage(job=job, now=later)

    assert cards > 0
    assert while_waiting.card_time == timedelta(hours=1) * cards  # no more while it waits

    resumed_from = timezone.now()
    job = running(fake, k8s, job)
    resumed_to = timezone.now()
    now = timezone.now()
    # (review58: this month's failed in its first hours, the job's start in the last one)
    period = Period(timezone.localdate(job.started_at), timezone.localdate(now))
    shown = job_usage(job=job, now=now).card_time
    reported = usage_report(period=period, now=now, owner=alice).total.card_time

    # An hour, and what it has run since its pods ran: the two hours' wait left out.
    assert timedelta(hours=1) * cards + (now - resumed_to) * cards <= shown
    assert shown <= timedelta(hours=1) * cards + (now - resumed_from) * cards
    assert reported == shown
    wait = job.waits.get()
    assert wait.ended_at - wait.began_at >= timedelta(hours=2)


def test_a_restarted_job_deleted_while_waiting_for_its_pods_keeps_usage_up_to_its_wait(
    fake, k8s, alice
):
    from jobs.models import UsageRecord

    job = running(fake, k8s, tolerant(alice, k8s, 2))
    job = queued_by_refused_pods(fake, k8s, job)
    waited_from = job.waits.get().began_at

    Job.objects.filter(pk=job.pk).delete()

    record = UsageRecord.objects.get(public_id=job.public_id)
    wait = record.waits.get()
    assert record.started_at == job.started_at
    assert (wait.began_at, wait.ended_at) == (waited_from, record.ended_at)


def test_a_job_that_ran_and_failed_between_two_syncs_is_restarted_and_one_past_its_limit_not(
    fake, k8s, alice
):
    unseen = tolerant(alice, k8s, 1)  # Queued when the operator failed it
    late = running(fake, k8s, tolerant(alice, k8s, 1))
    fake.run_pods(unseen.external_id)
    failed_on_kubernetes(fake, unseen)
    fake.fail_past_deadline(late.external_id)

    for job in (unseen, late):
        k8s.sync(job)
        job.refresh_from_db()

    assert (unseen.status, unseen.restarts) == (JobStatus.RUNNING, 1)
    assert unseen.started_at is not None
    assert reasons(unseen)[-2:] == ["Running", "Restarted"]
    assert (late.status, late.restarts) == (JobStatus.TIMED_OUT, 0)
