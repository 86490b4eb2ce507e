"""Why a queued local job could not start, said in each reader's language: the runner's start
refusals (too many replicas, a TensorFlow job that never ends, a mount path the runner needs,
a volume its owner may no longer mount, its owner's uid) are recorded with their message, so
its page in Chinese and in English and the API in either language each read them in their own,
not in the worker's language (session 50 did so for the network's and the mounts' own)."""

from __future__ import annotations

import html
import re
from collections.abc import Callable

import pytest
from django.contrib.auth.models import Group
from django.urls import reverse
from django.utils import translation

from jobs import cgroups, job_users
from jobs import spec as S
from jobs.models import Job, JobStatus
from jobs.worker import Worker

from . import test_api as v1
from .runner_helpers import (  # noqa: F401  (runner_settings: a fixture)
    make_spec,
    run_until,
    runner_settings,
    status_of,
    submit,
    volume,
)
from .signed_requests import signed_request

pytestmark = pytest.mark.usefixtures("runner_settings")
wsgi, alice_key = v1.wsgi, v1.alice_key


def over_the_replica_limit(alice, settings) -> Job:
    job = submit(alice, make_spec("true", roles=[S.Role("master", 1), S.Role("worker", 2)]))
    settings.LOCAL_MAX_REPLICAS = 2  # lowered after the job was queued
    return job


def tensorflow(*roles: S.Role) -> Callable[..., Job]:
    """A TensorFlow job of `roles`, queued before the rule that refuses it at submit."""

    def queued(alice, settings) -> Job:
        return submit(alice, make_spec("true", framework=S.TENSORFLOW, roles=list(roles)))

    return queued


def tensorflow_of_ps_alone(alice, settings) -> Job:
    """Stored before the spec's own rule refused a TensorFlow job of ps alone at submit."""
    job = submit(
        alice,
        make_spec("true", framework=S.TENSORFLOW, roles=[S.Role("ps", 1), S.Role("worker", 1)]),
    )
    roles = job.spec["console"]["roles"]
    job.spec["console"]["roles"] = [role for role in roles if role["name"] == "ps"]
    job.save(update_fields=["spec"])
    return job


def mounted_at(path: str, *, framework: str = S.PYTORCH) -> Callable[..., Job]:
    """A job mounting the volume at `path`, queued before the rule that refuses it there."""

    def queued(alice, settings) -> Job:
        mount = S.Datasource("hostpath", "work", mount_path=path)
        roles = [S.Role("master", 1), S.Role("worker", 1)]
        return submit(
            alice, make_spec("true", framework=framework, roles=roles, datasources=[mount])
        )

    return queued


def volume_kept_for_a_team_since(alice, settings) -> Job:
    job = submit(alice, make_spec("true"))
    Group.objects.create(name="team-a")
    settings.LOCAL_VOLUMES = f"work={volume(settings)}@team-a"  # kept for a team alice is not in
    return job


def volume_made_read_only_since(alice, settings) -> Job:
    job = submit(alice, make_spec("true"))
    settings.LOCAL_VOLUMES = f"work={volume(settings)}:ro"
    return job


def two_volumes_refused(alice, settings) -> Job:
    """Two refusals joined into one reason, each said in the reader's language."""
    models = volume(settings).parent / "models"
    models.mkdir()
    mounts = [
        S.Datasource("hostpath", "work", mount_path="/workspace"),
        S.Datasource("hostpath", "models", mount_path="/models"),
    ]
    job = submit(alice, make_spec("true", datasources=mounts))
    Group.objects.create(name="team-a")
    settings.LOCAL_VOLUMES = f"work={volume(settings)}@team-a,models={models}:ro"
    return job


def owner_uid_past_the_highest(alice, settings) -> Job:
    settings.LOCAL_JOB_UID_BASE = job_users.HIGHEST_UID  # any owner's uid is past it
    return submit(alice, make_spec("true"))


def cgroup_refusing_its_limit(alice, settings) -> Job:
    """A replica's cgroup the kernel refuses to set up: pids.max takes no negative number,
    standing for any write the kernel refuses (jobs.cgroups recorded its reasons already)."""
    enforcement = cgroups.current()
    if enforcement.pids_root is None:
        pytest.skip(f"no pids controller the worker can write here: {enforcement.describe()}")
    settings.LOCAL_MAX_PROCESSES = -1
    return submit(alice, make_spec("true"))


# (how the job comes to be refused, its reason in English, in Chinese; {id}, {uid} and {base}:
# its owner's id, the uid it would have, LOCAL_JOB_UID_BASE)
REFUSALS = {
    "too many replicas": (
        over_the_replica_limit,
        "Could not start: The local pool runs at most 2 replicas of one job, all roles together, "
        "and this job has 3: lower the replica counts, or choose a cloud resource pool.",
        "无法启动：本机资源池每个任务最多运行 2 个实例（所有角色合计），该任务有 3 个：请减少实例数，"
        "或选择云上资源池。",
    ),
    "tensorflow ps and evaluator alone": (
        tensorflow(S.Role("ps", 1), S.Role("evaluator", 1)),
        "Could not start: A TensorFlow job of ps and evaluator alone never succeeds here: without "
        "a chief or a worker the job ends when all its replicas have exited, and a parameter "
        "server serves until it is stopped, so it would run until its time limit. Add a chief or "
        "a worker, or leave out the ps.",
        "无法启动：由 ps 和 evaluator 组成的 TensorFlow 任务在本机资源池永远不会成功：没有 chief 或 "
        "worker 时，任务在所有实例都退出后才结束，而参数服务器（ps）会一直运行直到被停止，因此任务会"
        "一直运行到超时。请添加 chief 或 worker，或去掉 ps。",
    ),
    "tensorflow ps alone": (
        tensorflow_of_ps_alone,
        "Could not start: A TensorFlow job with a ps needs a chief or a worker: the ps serves "
        "until it is stopped, and the job ends when its chief (without one, worker 0) has exited. "
        "Add a chief or a worker.",
        "无法启动：带 ps 的 TensorFlow 任务需要 chief 或 worker：ps 会一直运行到被停止，而任务在其 "
        "chief（没有 chief 时为 worker 0）退出时才结束。请添加一个 chief 或 worker。",
    ),
    "a volume at /tmp": (
        mounted_at("/tmp"),
        "Could not start: On the local pool /tmp is each replica's own folder (its home and "
        "working folder): mount the volume elsewhere, e.g. /workspace, or below it, e.g. "
        "/tmp/data.",
        "无法启动：在本机资源池上，/tmp 是每个实例自己的目录（其主目录和工作目录）：请把卷挂载到别处，"
        "例如 /workspace，或挂载到其下，例如 /tmp/data。",
    ),
    "an mpi job's volume at /etc/mpi": (
        mounted_at("/etc/mpi", framework=S.MPI),
        "Could not start: On the local pool /etc/mpi holds what MPI needs to start the job's "
        "ranks (the hostfile and each worker's agent): mount the volume elsewhere, e.g. "
        "/workspace.",
        "无法启动：在本机资源池上，/etc/mpi 存放着 MPI 启动任务各进程所需的内容（hostfile 和每个 "
        "worker 的代理）：请把卷挂载到别处，例如 /workspace。",
    ),
    "a volume no longer offered to its owner": (
        volume_kept_for_a_team_since,
        "Could not start: Your account is no longer in a group that may mount volume “work”: "
        "copy the job (Copy & edit) and choose another volume in the copy, or ask staff to add "
        "you to one of the volume's groups.",
        "无法启动：您的账号已不在可挂载卷“work”的用户组中：请复制该任务（复制）并在副本中选择其他卷，"
        "或请管理员将您加入该卷的某个用户组。",
    ),
    "a volume made read-only": (
        volume_made_read_only_since,
        "Could not start: Volume “work” is read-only for everyone (set by the administrator): "
        "mount it read-only.",
        "无法启动：卷“work”对所有人只读（由管理员设定）：请以只读方式挂载。",
    ),
    "two volumes refused": (
        two_volumes_refused,
        "Could not start: Your account is no longer in a group that may mount volume “work”: "
        "copy the job (Copy & edit) and choose another volume in the copy, or ask staff to add "
        "you to one of the volume's groups. Volume “models” is read-only for everyone (set by "
        "the administrator): mount it read-only.",
        "无法启动：您的账号已不在可挂载卷“work”的用户组中：请复制该任务（复制）并在副本中选择其他卷，"
        "或请管理员将您加入该卷的某个用户组。 卷“models”对所有人只读（由管理员设定）：请以只读方式挂载。",
    ),
    "its owner's uid past the highest": (
        owner_uid_past_the_highest,
        "Could not start: its owner's uid would be {uid} (LOCAL_JOB_UID_BASE={base} + user id "
        "{id}), past the highest a job may have, {base}",
        "无法启动：其创建人的 uid 将为 {uid}（LOCAL_JOB_UID_BASE={base} + 用户 ID {id}），"
        "超过任务可用的最大 uid {base}",
    ),
    "a replica's cgroup not set up": (
        cgroup_refusing_its_limit,
        "Could not start: could not set up the CPU and memory limits of master-0: [Errno 22] "
        "Invalid argument",
        "无法启动：无法为 master-0 设置 CPU 和内存上限：[Errno 22] Invalid argument",
    ),
}


def reason_as_read(job: Job, *, wsgi, api_key, client) -> dict[str, str]:
    """The job's status reason as v1's GetJob answers it without Accept-Language (English) and
    with zh-CN, and as its owner's job page shows it in Chinese (the default) and in English."""
    path = f"/api/v1/aijobs/{job.public_id}"
    read = {
        "api": signed_request(wsgi, api_key, method="GET", path=path),
        "api zh": signed_request(
            wsgi, api_key, method="GET", path=path, headers={"Accept-Language": "zh-CN"}
        ),
    }
    said = {name: r.json()["result"]["statusReason"] for name, r in read.items()}
    for name, language in (("page", "zh-hans"), ("page en", "en")):
        client.cookies["django_language"] = language
        page = client.get(reverse("job-detail", args=[job.public_id])).content.decode()
        said[name] = html.unescape(re.sub(r"\s+", " ", page))
    return said


@pytest.mark.parametrize("refusal", REFUSALS.values(), ids=REFUSALS.keys())
def test_a_job_refused_at_start_is_said_in_each_readers_language_by_its_page_and_the_api(
    refusal, alice, alice_client, alice_key, wsgi, settings
):
    queued, english, chinese = refusal
    names = {"id": alice.pk, "uid": job_users.HIGHEST_UID + alice.pk, "base": job_users.HIGHEST_UID}
    english, chinese = english.format(**names), chinese.format(**names)
    job = queued(alice, settings)

    with translation.override("en"):  # recorded in the console's language, whatever is active
        run_until(Worker(), lambda: status_of(job) == JobStatus.FAILED, what="the job to fail")

    said = reason_as_read(job, wsgi=wsgi, api_key=alice_key, client=alice_client)
    assert said["api"] == english
    assert said["api zh"] == chinese
    assert chinese in said["page"]
    assert english in said["page en"]
    assert job.status_reason == chinese  # stored in the console's language, LANGUAGE_CODE
