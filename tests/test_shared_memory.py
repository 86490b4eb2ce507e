"""共享内存 (seed 004's /dev/shm size) beside a role's memory: what a job writes to /dev/shm is
memory its instance holds, so a /dev/shm larger than that memory cannot be filled."""

from __future__ import annotations

import html
import re

import pytest
from django.urls import reverse

from jobs import spec as S
from jobs import wizard as W
from jobs.models import JobStatus
from jobs.services import jobs_submit
from jobs.worker import Worker

from .runner_helpers import (
    log_text,
    make_spec,
    run_until,
    runner_settings,  # noqa: F401
    status_of,
    submit,
)

pytestmark = pytest.mark.usefixtures("runner_settings")


def review_of(client, owner, spec: S.JobSpec) -> str:
    """The review step of a copy of a job of this spec, as text."""
    [job] = jobs_submit(owner=owner, spec=spec, submit_key=spec.name)
    draft = W.draft_from_job(job=job, owner=owner)
    page = client.get(reverse("wizard-step", args=[draft.id, W.REVIEW])).content.decode()
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))


def test_the_review_warns_when_shared_memory_is_larger_than_a_roles_memory(alice, alice_client):
    spec = make_spec(
        "true",
        roles=[S.Role("master", 1, memory_gb=16), S.Role("worker", 2, memory_gb=4)],
        shared_memory_gi=12,
    )

    shown = review_of(alice_client, alice, spec)

    assert "/dev/shm（12 GiB）不小于 worker（4 GiB）的内存" in shown
    assert "master" not in shown.split("/dev/shm（12 GiB）", 1)[1].split("。", 1)[0]
    assert "OOMKilled" in shown


def test_the_shared_memory_warning_names_shared_memory_once_in_one_unit_in_english(
    alice, alice_client
):
    # qa78: "Shared memory: Shared memory (/dev/shm, 10 Gi) ... worker (4 GB)".
    spec = make_spec("true", roles=[S.Role("master", 1, memory_gb=4)], shared_memory_gi=8)
    alice_client.cookies["django_language"] = "en"

    shown = review_of(alice_client, alice, spec)

    assert "Shared memory: /dev/shm (8 GiB) is not smaller than the memory of master (4 GiB)." in (
        shown
    )
    assert "Shared memory: Shared memory" not in shown
    warning = shown.split("Shared memory: /dev/shm", 1)[1].split("OOMKilled", 1)[0]
    # Both are 1024³-byte units, as the runner applies them: GiB, not "GB" beside "Gi" (fix88a).
    assert set(re.findall(r"\d+ (GiB|GB|Gi)\b", warning)) == {"GiB"}, warning


def test_the_review_warns_of_the_default_shared_memory_beside_a_small_memory(alice, alice_client):
    # The person set 4 GB; /dev/shm keeps its default 10 Gi, and a data loader filling it
    # gets the instance killed just the same.
    spec = make_spec("true", name="small", roles=[S.Role("master", 1, memory_gb=4)])
    alice_client.cookies["django_language"] = "en"

    shown = review_of(alice_client, alice, spec)

    assert spec.shared_memory_gi == S.DEFAULT_SHARED_MEMORY_GI
    assert "/dev/shm (10 GiB) is not smaller than the memory of master (4 GiB)." in shown


@pytest.mark.parametrize(
    "framework,roles",
    [
        (S.PYTORCH, [S.Role("master", 1)]),
        (S.PYTORCH, [S.Role("master", 1, memory_gb=11)]),
        (S.TENSORFLOW, [S.Role("chief", 0, memory_gb=1), S.Role("worker", 1)]),
    ],
    ids=["memory unlimited", "memory larger", "a role without instances"],
)
def test_the_review_says_nothing_of_shared_memory_a_role_can_hold(
    alice, alice_client, framework, roles
):
    spec = make_spec("true", name="fits", framework=framework, roles=roles)

    shown = review_of(alice_client, alice, spec)

    assert "OOMKilled" not in shown  # the warning's own word


def test_the_review_warns_when_shared_memory_is_as_large_as_a_roles_memory(alice, alice_client):
    # Until left35 only a /dev/shm strictly larger was warned of (this case was said to fit):
    # the instance's processes hold memory too, so 10 GB beside 10Gi is OOMKilled before
    # /dev/shm is full as well.
    spec = make_spec(
        "true", name="as-large", roles=[S.Role("master", 1, memory_gb=16)], shared_memory_gi=16
    )

    shown = review_of(alice_client, alice, spec)

    assert "/dev/shm（16 GiB）不小于 master（16 GiB）的内存" in shown
    assert "与其进程自身占用的内存一起计入实例的内存" in shown


def test_the_chinese_shared_memory_warning_lists_its_roles_in_full_width_punctuation(
    alice, alice_client
):
    # qa79: "共享内存: /dev/shm（10 GB）不小于 master (4 GB), worker (4 GB) 的内存", and
    # "除其进程自身占用的内存外", which can read as "excluding" it.
    spec = make_spec(
        "true",
        name="two-roles",
        roles=[S.Role("master", 1, memory_gb=4), S.Role("worker", 2, memory_gb=4)],
    )

    shown = notice_of(alice_client, alice, spec)

    assert shown.startswith(
        "共享内存：/dev/shm（10 GiB）不小于 master（4 GiB）、worker（4 GiB）的内存。"
        "进程写入 /dev/shm 的数据与其进程自身占用的内存一起计入实例的内存，"
    )
    assert "除" not in shown


def test_the_english_shared_memory_warning_lists_its_roles_as_english_does(alice, alice_client):
    spec = make_spec(
        "true",
        name="two-roles",
        roles=[S.Role("master", 1, memory_gb=4), S.Role("worker", 2, memory_gb=4)],
    )
    alice_client.cookies["django_language"] = "en"

    shown = review_of(alice_client, alice, spec)

    assert "memory of master (4 GiB), worker (4 GiB). " in shown
    assert "counts against its replica's memory, together with what its processes use" in shown


def notice_of(client, owner, spec: S.JobSpec) -> str:
    """The review's shared-memory warning as read: its heading and text, tags removed."""
    [job] = jobs_submit(owner=owner, spec=spec, submit_key=spec.name)
    draft = W.draft_from_job(job=job, owner=owner)
    page = client.get(reverse("wizard-step", args=[draft.id, W.REVIEW])).content.decode()
    notice = re.search(r'id="shared-memory-notice"[^>]*>(.*?)</div>', page, re.S).group(1)
    return html.unescape(re.sub(r"<[^>]+>", "", notice))


def test_what_a_job_writes_to_dev_shm_counts_against_its_memory(alice):
    # Why the review warns: with 1 GB of memory, writing 1.5 GB to a 2 Gi /dev/shm is killed.
    from jobs import cgroups

    if not cgroups.current().active:
        pytest.skip("needs a cgroup the worker can write (memory is not enforced without)")
    spec = make_spec(
        "head -c 1500M /dev/zero > /dev/shm/blob && echo wrote-it",
        roles=[S.Role("master", 1, memory_gb=1)],
        shared_memory_gi=2,
    )
    job = submit(alice, spec)

    # 1.5 GB written against a 1 GB limit: the kernel reclaims before it kills, which on a
    # machine busy with the rest of the suite has taken longer than run_until's 30 s.
    run_until(
        Worker(),
        lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED),
        timeout=90,
    )

    assert job.status == JobStatus.FAILED
    assert "OOMKilled" in job.status_reason
    assert "wrote-it" not in log_text(job, "master-0")
