"""The CreateJob contract: what the console sends is what AIHC's reference accepts.

The strict fake refuses what AIHC would: wrong types (its server reads typed structs),
unknown fields (which AIHC would silently drop, losing a setting), unknown enumeration
values and missing required fields. Every body the console can build must pass it.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from django.utils import translation

from jobs import spec as S
from jobs.aihc.client import AihcClient, AihcError, Credentials
from jobs.aihc.endpoints import V1, V2
from jobs.backends.aihc import AihcBackend
from tests.fake_aihc import FakeAihc, configure

SEED = json.loads((Path(__file__).parent / "data" / "seed001_create_job_request.json").read_text())
A800 = "baidu.com/a800_80g_cgpu"
POOL = "cce-pool1"


@pytest.fixture
def fake():
    fake = FakeAihc().start()
    fake.add_pool(POOL, "训练池", queues=("default", "research"), gpus={A800: (16, 6)})
    yield fake
    fake.stop()


@pytest.fixture
def client(fake):
    client = AihcClient(
        endpoint=fake.url, credentials=Credentials(fake.access_key, fake.secret_key)
    )
    yield client
    client.close()


def full_spec(**changes) -> S.JobSpec:
    """Every CreateJob field the console can fill for a PyTorch job."""
    spec = S.JobSpec(
        name="full-job",
        resource_pool_id=POOL,
        queue="research",
        framework=S.PYTORCH,
        priority="high",
        image="registry.baidubce.com/team/train:v1",
        image_config=S.ImageConfig("robot", "registry-secret"),
        command="python train.py",
        roles=[
            S.Role("master", 1, A800, 8, cpu=32, memory_gb=256),
            S.Role("worker", 1, A800, 8, cpu=32, memory_gb=256),
        ],
        envs=[S.Env("CUDA_DEVICE_MAX_CONNECTIONS", "1"), S.Env("TOKEN", "s3cret", secret=True)],
        enable_rdma=True,
        host_network=True,
        fault_tolerance=True,
        fault_tolerance_config=S.FaultToleranceConfig(True, 10, 2, ["Loss nan"]),
        labels=[("team", "nlp")],
        datasources=[
            S.Datasource("pfs", "pfs-7xWeAt", "/mnt/cluster"),
            S.Datasource("hostpath", "hostpath-1", "/data", source_path="/ssd1", read_only=True),
        ],
        enable_bccl=True,
        tensorboard=S.TensorboardConfig(True, "/mnt/cluster/tb"),
        alert=S.AlertConfig(
            items=["jobRunning", "jobHang"], instance_id="cprom-1", notify_rule_id="notify-1"
        ),
    )
    for key, value in changes.items():
        setattr(spec, key, value)
    return S.validated(spec)


def test_every_field_the_console_sends_on_v1_is_accepted(fake, client):
    body = AihcBackend.request_body(full_spec(), V1)

    result = client.create_job(pool=POOL, body=body, version=V1)

    assert result["jobId"].startswith("pytorchjob-")
    assert fake.calls("CreateJob")[0].body == body


def test_every_field_the_console_sends_on_v2_is_accepted(fake, client):
    body = AihcBackend.request_body(full_spec(retention_period="7d"), V2)

    result = client.create_job(pool=POOL, body=body, version=V2)

    assert result["jobId"].startswith("pytorchjob-")
    assert fake.calls("CreateJob")[0].params["queueID"] == "research"


def test_a_tensorflow_job_on_v2_is_accepted(fake, client):
    spec = full_spec(
        framework=S.TENSORFLOW,
        roles=[S.Role("chief", 1, A800, 8), S.Role("worker", 2, A800, 8), S.Role("ps", 1)],
        enable_bccl=False,
        alert=S.AlertConfig(items=["jobFailed"], instance_id="cprom-1", notify_rule_id="n-1"),
    )

    result = client.create_job(pool=POOL, body=AihcBackend.request_body(spec, V2), version=V2)

    assert result["jobId"].startswith("tfjob-")


def _refused(client: AihcClient, body: dict, version: str = V1) -> str:
    with pytest.raises(AihcError) as caught:
        client.create_job(pool=POOL, body=body, version=version)
    assert (caught.value.status, caught.value.code) == (400, "InvalidParameter")
    return caught.value.message


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda b: b.update(retentionPeriod="7d"), "body.retentionPeriod is not a field"),
        (lambda b: b.update(datasource=b.pop("datasources")), "body.datasource is not a field"),
        (lambda b: b["jobSpec"].update(replicas="1"), "jobSpec.replicas must be a JSON integer"),
        (lambda b: b["jobSpec"].update(enableRDMA="true"), "jobSpec.enableRDMA must be a JSON"),
        (
            lambda b: b["jobSpec"]["resources"][0].update(quantity="8"),
            "resources[0].quantity must be a JSON number",
        ),
        (lambda b: b["jobSpec"]["envs"][0].update(value=1), "envs[0].value must be a JSON string"),
        (lambda b: b.update(priority="urgent"), "priority 'urgent'"),
        (lambda b: b.update(name="Test_Job"), "name 'Test_Job'"),
        (lambda b: b.update(labels={"team": "nlp"}), "body.labels must be a JSON array"),
        (lambda b: b.update(faultTolerance="yes"), "body.faultTolerance must be a JSON boolean"),
        (
            lambda b: b.update(alertConfig={"alertItems": ["jobRunning"]}),
            "alertConfig.instanceId is required",
        ),
        (
            lambda b: b.update(
                alertConfig={"alertItems": ["jobBoom"], "instanceId": "c", "notifyRuleId": "n"}
            ),
            "alertItems 'jobBoom'",
        ),
        (
            lambda b: b.update(tensorboardConfig={"enable": True}),
            "tensorboardConfig.logPath is required",
        ),
        (
            lambda b: b["datasources"][0].update(options={"readonly": True}),
            "datasources[0].options.readonly is not a field",
        ),
    ],
)
def test_the_fake_refuses_what_aihc_would_not_accept(fake, client, change, message):
    body = copy.deepcopy(SEED)
    change(body)

    assert message in _refused(client, body)
    assert fake.jobs == {}


def test_the_fake_refuses_v1_fields_in_a_v2_body_and_v2_alerts_a_tfjob_cannot_send(fake, client):
    v2 = AihcBackend.request_body(full_spec(), V2)

    assert "jobSpec.privileged is not a field" in _refused(
        client, {**v2, "jobSpec": {**v2["jobSpec"], "privileged": True}}, V2
    )
    tf = AihcBackend.request_body(
        full_spec(
            framework=S.TENSORFLOW,
            roles=[S.Role("worker", 2, A800, 8)],
            enable_bccl=False,
        ),
        V2,
    )
    assert "alertItems 'jobHang' is not supported for TFJob" in _refused(client, tf, V2)


def test_a_tensorflow_job_alerting_on_hangs_is_refused_on_its_field_before_it_is_sent(
    fake, settings, db
):
    configure(settings, fake, AIHC_API_VERSION="v2")
    spec = full_spec(
        framework=S.TENSORFLOW, roles=[S.Role("worker", 2, A800, 8)], enable_bccl=False
    )

    with translation.override("en"):
        errors = AihcBackend().check_spec(spec)

    assert errors == {
        "alertConfig.alertItems": [
            "AIHC alerts on a TensorFlow job only when it runs, fails or succeeds."
        ]
    }
    spec.alert.items = ["jobRunning", "jobFailed", "jobSucceed"]
    assert AihcBackend().check_spec(spec) == {}
