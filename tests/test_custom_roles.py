"""The custom framework (自定义) as a Ray user builds it (QA 51): named roles that find each
other by their own command. The wizard offers a Ray example on the local pool and says where
the instances meet; the example itself runs on the local runner, head and workers, with a
stand-in for `ray` (tests/fake_ray.py: Ray is not installed here)."""

from __future__ import annotations

import shutil
import socket
import textwrap
from pathlib import Path

import pytest
from django.utils import translation

from jobs import spec as S
from jobs import wizard as W
from jobs.actions import job_stop
from jobs.aihc.endpoints import V2
from jobs.models import Job
from jobs.worker import Worker
from tests.test_wizard import (
    _local_pool,  # noqa: F401 (autouse fixture)
    basic_data,
    complete_steps,
    field_errors,
    image_data,
    new_draft,
    post_step,
    resources_data,
    role,
    step_url,
)

from . import test_api as v1
from .runner_helpers import (
    UNTIL_THE_GATE_OPENS,
    log_text,
    make_spec,
    open_gate,
    processes_with,
    run_until,
    runner_settings,  # noqa: F401
    status_of,
    submit,
    volume,
)
from .test_api import refused
from .test_api_v2 import v2_body
from .test_runner_network import isolated  # noqa: F401

wsgi, alice_key, api = v1.wsgi, v1.alice_key, v1.api


def custom_draft(client, upto: str = W.IMAGE):
    draft = new_draft(client)
    complete_steps(client, draft, upto=upto, **{W.BASIC: basic_data(framework=S.CUSTOM)})
    return draft


def ray_example() -> str:
    return next(e["command"] for e in W.example_commands() if e["id"] == S.CUSTOM)


# -- the wizard ----------------------------------------------------------------------------


def test_a_custom_job_on_the_local_pool_is_shown_rays_head_and_worker_example_first(
    alice_client,
):
    draft = custom_draft(alice_client)

    page = alice_client.get(step_url(draft, W.IMAGE)).content.decode()

    shown = page[page.index('id="example-command"') :]
    shown = shown[: shown.index("</pre>")]
    assert "ray start --head" in shown and "ray start --address=127.0.0.1:$PORT" in shown
    # Not torchrun's, whose MASTER_ADDR and RANK a custom job does not get.
    assert "MASTER_ADDR" not in shown
    assert 'id="show-example-Custom" aria-pressed="true"' in page


def test_fill_in_this_example_writes_rays_command_into_a_custom_job(alice_client):
    draft = custom_draft(alice_client)

    r = post_step(
        alice_client, draft, W.IMAGE, image_data(command="keep me"), action="fill-example-Custom"
    )

    assert r.status_code == 302
    draft.refresh_from_db()
    # Its comments in the page's language, Chinese here (qa109); the same code as ray_example().
    chinese = next(e["commandZh"] for e in W.example_commands() if e["id"] == S.CUSTOM)
    assert draft.data[W.IMAGE]["command"] == [chinese]


def test_the_injected_variables_list_of_a_local_custom_job_says_where_the_instances_meet(
    alice_client,
):
    draft = custom_draft(alice_client)

    page = alice_client.get(step_url(draft, W.IMAGE)).content.decode()

    start = page.index('id="injected-vars"')
    table = page[start : page.index("</table>", start)]
    assert "127.0.0.1" in table
    assert "每个实例的地址：各实例都在本机运行" in table


def test_the_injected_variables_list_of_a_custom_job_names_each_roles_count(alice_client):
    draft = custom_draft(alice_client)

    page = alice_client.get(step_url(draft, W.IMAGE)).content.decode()

    start = page.index('id="injected-vars"')
    table = page[start : page.index("</table>", start)]
    assert "AIHC_&lt;ROLE&gt;_NUM" in table
    assert "每个角色的实例数" in table


def test_the_review_shows_every_custom_instance_each_roles_count(alice_client):
    draft = custom_draft(alice_client, upto=W.RESOURCES)
    roles = [
        role("head", 1, card=None, cpu=8, memory_gb=32),
        role("worker", 2, card=None, cpu=8, memory_gb=32),
        role("data-loader", 3, card=None, cpu=4, memory_gb=8),
    ]
    complete_steps(
        alice_client,
        draft,
        **{W.BASIC: basic_data(framework=S.CUSTOM), W.RESOURCES: resources_data(roles)},
    )

    page = alice_client.get(step_url(draft, W.REVIEW)).content.decode()

    start = page.index(">data-loader-2</p>")
    last = page[start : page.index("</pre>", start)]  # the last instance's environment
    for told in ("AIHC_HEAD_NUM=1", "AIHC_WORKER_NUM=2", "AIHC_DATA_LOADER_NUM=3"):
        assert told in last


# -- the example on the local runner ---------------------------------------------------------

# The user's driver on the head: joins the cluster and waits for every node, as a Ray driver
# waits for its workers (ray.nodes()) before it spreads work over them.
DRIVER = textwrap.dedent(
    """
    import os, socket, time
    want = int(os.environ["NODES"])
    for _ in range(600):
        conn = socket.create_connection(("127.0.0.1", int(os.environ["HEAD_PORT"])))
        conn.sendall(b"NODES\\n")
        lines = conn.makefile().read().split()
        if int(lines[1]) == want:
            break
        time.sleep(0.05)
    print("driver: nodes", lines[1])
    """
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def install_fake_ray(settings) -> Path:
    """The stand-in for `ray` at /workspace/bin/ray, and the driver at /workspace/driver.py."""
    work = volume(settings)
    (work / "bin").mkdir()
    shutil.copy(Path(__file__).with_name("fake_ray.py"), work / "bin" / "ray")
    (work / "bin" / "ray").chmod(0o755)
    (work / "driver.py").write_text(DRIVER)
    return work


@pytest.mark.usefixtures("runner_settings")
@pytest.mark.parametrize("network", ["host", "isolated"])
def test_the_ray_example_runs_a_head_and_two_workers_to_success(alice, settings, network, request):
    if network == "isolated":
        request.getfixturevalue("isolated")
    install_fake_ray(settings)
    spec = make_spec(
        ray_example(),
        framework=S.CUSTOM,
        # The workers first: they may start before the head listens, and wait for it.
        roles=[S.Role("worker", 2), S.Role("head", 1)],
        envs=[
            S.Env("PATH", "/workspace/bin:/usr/bin:/bin"),
            S.Env("HEAD_PORT", str(free_port())),
            S.Env("NODES", "3"),
            S.Env("FAKE_RAY_HEAD_START_SECONDS", "2"),
        ],
    )

    job = submit(alice, spec)
    run_until(Worker(), lambda: status_of(job) in ("succeeded", "failed"), timeout=60)

    assert job.status == "succeeded", [log_text(job, r) for r in ("head-0", "worker-0")]
    assert "driver: nodes 3" in log_text(job, "head-0")


@pytest.mark.usefixtures("runner_settings")
def test_a_local_custom_job_tells_every_instance_each_roles_count(alice):
    """A head and two workers, each checking what it is told: before left42 a custom job's
    command had to hard-code how many workers there are."""
    spec = make_spec(
        'echo "told $AIHC_ROLE-$AIHC_ROLE_INDEX heads=$AIHC_HEAD_NUM workers=$AIHC_WORKER_NUM"; '
        '[ "$AIHC_HEAD_NUM" = 1 ] && [ "$AIHC_WORKER_NUM" = 2 ]',
        framework=S.CUSTOM,
        roles=[S.Role("head", 1), S.Role("worker", 2)],
    )

    job = submit(alice, spec)
    run_until(Worker(), lambda: status_of(job) in ("succeeded", "failed"))

    assert job.status == "succeeded", [log_text(job, r) for r in ("head-0", "worker-1")]
    for label in ("head-0", "worker-0", "worker-1"):
        assert f"told {label} heads=1 workers=2" in log_text(job, label)


@pytest.mark.usefixtures("runner_settings")
def test_a_custom_worker_that_fails_fails_the_job_naming_it_while_the_head_still_runs(alice):
    spec = make_spec(
        'if [ "$AIHC_ROLE-$AIHC_ROLE_INDEX" = worker-1 ]; then exit 3; fi; t=7654; sleep ${t}32.5',
        framework=S.CUSTOM,
        roles=[S.Role("head", 1), S.Role("worker", 2)],
    )

    job = submit(alice, spec)
    run_until(Worker(), lambda: status_of(job) in ("succeeded", "failed"))

    assert job.status == "failed"
    with translation.override("en"):
        assert job.status_reason_shown == "worker-1 exited with code 3."
    assert processes_with("sleep 765432.5") == []  # the head's and worker-0's, ended


@pytest.mark.usefixtures("runner_settings")
def test_stopping_a_custom_job_ends_every_role(alice):
    # The sleeper's name is assembled by the shell: the command's text must not match it.
    spec = make_spec(
        "t=6543; exec sleep ${t}21.5",
        framework=S.CUSTOM,
        roles=[S.Role("head", 1), S.Role("worker", 2)],
    )
    job = submit(alice, spec)
    worker = Worker()
    run_until(worker, lambda: len(processes_with("sleep 654321.5")) == 3, what="3 sleepers")

    job_stop(job=Job.objects.get(pk=job.pk))

    run_until(worker, lambda: status_of(job) == "stopped")
    assert processes_with("sleep 654321.5") == []


@pytest.mark.usefixtures("runner_settings")
def test_a_script_creates_the_ray_job_with_named_roles_and_reads_back_each_roles_pods(
    api, settings
):
    work = install_fake_ray(settings)
    port = str(free_port())
    cpu = [{"name": "cpu", "quantity": 1}]
    body = {
        "name": "ray-sweep",
        "queue": "default",
        "jobFramework": "Custom",
        "jobSpec": {
            "command": ray_example(),
            "image": "rayproject/ray:2.40.0",
            "replicas": 3,
            "resources": cpu,
            "envs": [
                {"name": "PATH", "value": "/workspace/bin:/usr/bin:/bin"},
                {"name": "HEAD_PORT", "value": port},
                {"name": "NODES", "value": "3"},
                {"name": "FAKE_RAY_HEAD_START_SECONDS", "value": "2"},
            ],
        },
        "datasources": [{"type": "hostpath", "name": "work", "mountPath": "/workspace"}],
        "console": {
            "roles": [
                {"name": "head", "replicas": 1, "resources": cpu},
                {"name": "worker", "replicas": 2, "resources": cpu},
            ]
        },
    }

    created = api.create_job(pool="local", body=body)

    job = Job.objects.get(public_id=created["jobId"])
    assert job.public_id.startswith("customjob-")
    run_until(Worker(), lambda: status_of(job) in ("succeeded", "failed"), timeout=60)
    described = api.get_job(pool="local", job_id=job.public_id)
    assert described["status"] == "Succeeded", (work, log_text(job, "head-0"))
    assert sorted(p["name"] for p in described["pods"]) == [
        "ray-sweep-head-0",
        "ray-sweep-worker-0",
        "ray-sweep-worker-1",
    ]
    assert "driver: nodes 3" in log_text(job, "head-0")


@pytest.mark.usefixtures("runner_settings")
def test_a_custom_job_whose_head_has_exited_0_runs_on_until_its_workers_end_too(alice, settings):
    # Decided (QA 51): every instance decides, as a Kubernetes pool's JobSet (successPolicy
    # All); the console cannot tell a driver from a server among roles the user named.
    spec = make_spec(
        f'[ "$AIHC_ROLE" = head ] && exit 0; {UNTIL_THE_GATE_OPENS}',
        framework=S.CUSTOM,
        roles=[S.Role("head", 1), S.Role("worker", 2)],
    )
    job = submit(alice, spec)
    worker = Worker()
    run_until(
        worker,
        lambda: (
            job.replicas.filter(role="head", exit_code=0).exists()
            and job.replicas.filter(role="worker").exclude(pid=None).count() == 2
        ),
        what="the head to exit 0 beside running workers",
    )
    worker.tick()
    assert status_of(job) == "running"

    open_gate(settings)

    run_until(worker, lambda: status_of(job) == "succeeded")


def test_the_resources_step_of_a_custom_job_says_every_instance_decides_its_success(
    alice_client,
):
    draft = custom_draft(alice_client, upto=W.RESOURCES)

    page = alice_client.get(step_url(draft, W.RESOURCES)).content.decode()

    assert "所有实例都以退出码 0 结束，任务才算成功" in page


def test_a_custom_job_on_an_aihc_pool_is_refused_at_its_framework_before_any_example(
    alice_client, settings
):
    # left31: AIHC runs no custom job (its CreateJob takes PyTorchJob, MPIJob, TFJob), so
    # there is no example for it: the basic step says why, on 训练框架, in both languages.
    from .fake_aihc import FakeAihc, configure

    fake = FakeAihc().start()
    try:
        fake.add_pool("cce-pool1", "百舸训练池", queues=("default",))
        configure(settings, fake)
        draft = new_draft(alice_client)
        data = basic_data(framework=S.CUSTOM, resource_pool="cce-pool1")

        chinese = post_step(alice_client, draft, W.BASIC, data)
        alice_client.cookies["django_language"] = "en"
        english = post_step(alice_client, draft, W.BASIC, data)
    finally:
        fake.stop()

    assert chinese.status_code == english.status_code == 200  # the step again, not the next
    assert field_errors(chinese, "id_framework") == [
        "百舸 AIHC 支持 PyTorch、MPI 和 TensorFlow 任务，无法提交自定义角色。"
    ]
    assert field_errors(english, "id_framework") == [
        "AIHC runs PyTorch, MPI and TensorFlow jobs; custom roles cannot be sent."
    ]


def custom_role_map(*roles: tuple[str, int]) -> dict:
    cpu = [{"name": "cpu", "quantity": 1}]
    body = v2_body(name="ps-train", jobType="Custom", command='echo "$AIHC_ROLE"')
    body["jobSpec"] = {
        name: {"image": "python:3.12", "replicas": n, "resources": cpu} for name, n in roles
    }
    return body


@pytest.mark.usefixtures("runner_settings")
def test_a_v2_custom_role_map_runs_each_role_under_the_name_its_key_gives(api):
    body = custom_role_map(("ps", 1), ("trainer", 2), ("data-loader", 1))

    created = api.create_job(pool="local", body=body, version=V2)

    spec = Job.objects.get(public_id=created["jobId"]).job_spec()
    assert [(r.name, r.replicas) for r in spec.roles] == [
        ("ps", 1),
        ("trainer", 2),
        ("data-loader", 1),
    ]


@pytest.mark.usefixtures("runner_settings")
def test_a_v2_custom_role_map_key_that_is_no_role_name_is_refused_not_lowercased(api):
    # qa67: "Trainer" ran as AIHC_ROLE=trainer, so a command telling its roles apart by the
    # names it gave them ([ "$AIHC_ROLE" = Trainer ]) matched none; the wizard and v1's
    # console.roles refuse such a name.
    body = custom_role_map(("ps", 1), ("Trainer", 2))

    error = refused(lambda: api.create_job(pool="local", body=body, version=V2))

    assert (error.status, error.code) == (400, "InvalidParameter")
    assert error.message.startswith("jobSpec.Trainer.name: Role names use lowercase letters")
    assert "Use lowercase instead: “t”." in error.message
    assert Job.objects.count() == 0
