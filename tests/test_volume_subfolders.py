"""A read-write mount's source folder that does not exist yet is made when the local job
starts, as Kubernetes' kubelet makes a missing subPath, walking from the volume's root
without following a link. Real folders under tmp, a real worker and bubblewrap."""

from __future__ import annotations

import html
import os
import re
import stat

import pytest
from django.urls import reverse
from django.utils import translation

from jobs import spec as S
from jobs.backends import get_backend
from jobs.models import Job, JobStatus
from jobs.sandbox import SandboxError, make_in_root
from jobs.worker import Worker

from . import test_api as v1
from .runner_helpers import (
    log_text,
    make_spec,
    run_until,
    runner_settings,  # noqa: F401
    status_of,
    submit,
    volume,
)
from .test_api_v2 import action
from .test_runner_job_users import BASE, GID, job_users_on  # noqa: F401

pytestmark = pytest.mark.usefixtures("runner_settings")
wsgi, alice_key, api = v1.wsgi, v1.alice_key, v1.api


def start_refusal_as_read(job, *, api, client) -> dict[str, str]:
    """Why `job` could not start, as an API script reads it (English: the API's language
    without Accept-Language) through v1's job and events and v2's DescribeJob, and as its
    owner's job page (Chinese, the console's default) shows it."""
    pool = [("resourcePoolId", "local")]
    got = api.request("GET", f"/api/v1/aijobs/{job.public_id}", params=pool, idempotent=True)
    events = api.request(
        "GET", f"/api/v1/aijobs/{job.public_id}/events", params=pool, idempotent=True
    )
    described = action(api, "DescribeJob", resourcePoolId="local", body={"jobId": job.public_id})
    page = client.get(reverse("job-detail", args=[job.public_id])).content.decode()
    return {
        "v1": got["result"]["statusReason"],
        "v1 events": next(
            e["message"] for e in events["result"]["events"] if e["reason"] == "StartFailed"
        ),
        "v2": described["job"]["statusReason"],
        "page": html.unescape(re.sub(r"\s+", " ", page)),
    }


def test_a_mount_that_became_a_file_before_the_start_is_said_in_english_by_the_api_and_in_chinese_on_the_page(
    alice, alice_client, api, settings
):
    """Session 49: the runner's own refusals of a mount were worded as they were raised, in
    the worker's language: an English API reader got them in Chinese."""
    (volume(settings) / "data").mkdir()
    job = submit(alice, make_spec("true", datasources=[mount("data")]))
    (volume(settings) / "data").rmdir()
    (volume(settings) / "data").write_text("not a folder any more")
    run_until(Worker(), lambda: status_of(job) == JobStatus.FAILED)

    read = start_refusal_as_read(job, api=api, client=alice_client)

    english = "Could not start: The mount /out (volume work): data is not a folder in volume work"
    assert read["v1"] == read["v1 events"] == read["v2"] == english
    assert "无法启动：挂载点 /out（存储卷 work）：data 不是存储卷 work 中的目录" in read["page"]


def mount(source: str, *, at: str = "/out", read_only: bool = False) -> S.Datasource:
    return S.Datasource("hostpath", "work", mount_path=at, source_path=source, read_only=read_only)


def test_a_job_writes_into_the_missing_sub_folders_its_mount_names_made_at_start(alice, settings):
    root = volume(settings)
    root.chmod(0o750)
    spec = make_spec("echo hello > /out/result.txt", datasources=[mount("runs/2026/run-7")])

    assert get_backend("local").check_spec(spec) == {}
    job = submit(alice, spec)
    run_until(Worker(), lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED))

    assert job.status == JobStatus.SUCCEEDED, (job.status_reason, log_text(job, "master-0"))
    assert (root / "runs/2026/run-7/result.txt").read_text() == "hello\n"
    # Each folder made takes the permission bits of the volume's root, as the kubelet's do.
    for made in ("runs", "runs/2026", "runs/2026/run-7"):
        info = (root / made).stat()
        assert stat.S_IMODE(info.st_mode) == 0o750
        assert info.st_uid == os.getuid()


@pytest.mark.parametrize(
    ("target", "said"),
    [("outside", "解析到了存储卷根目录之外"), ("volume/inner", "是符号链接")],
    ids=["to-outside-the-volume", "to-another-folder-of-the-volume"],
)
def test_a_link_swapped_in_on_the_way_after_submit_fails_the_start_naming_the_mount(
    alice, settings, tmp_path, target, said
):
    root = volume(settings)
    (tmp_path / "outside").mkdir()
    (root / "inner").mkdir()
    spec = make_spec("true", datasources=[mount("runs/run-7")])
    job = submit(alice, spec)
    # Another job writing the volume puts a link where the folder to make was.
    (root / "runs").symlink_to(tmp_path / target)

    run_until(Worker(), lambda: status_of(job) == JobStatus.FAILED)

    assert "/out" in job.status_reason and "work" in job.status_reason
    assert said in job.status_reason, job.status_reason
    assert os.listdir(tmp_path / "outside") == []
    assert os.listdir(root / "inner") == []


@pytest.mark.parametrize(
    ("language", "said"),
    [
        (
            "en",
            "Could not start: The mount /out (volume work): runs/run-7 resolves outside the volume root",
        ),
        ("zh-hans", "解析到了存储卷根目录之外"),
    ],
)
def test_why_a_start_refused_a_mount_is_said_whole_in_each_readers_language(
    alice, settings, tmp_path, language, said
):
    """qa90: an English API reply said "Could not start: 挂载点 /data（存储卷 scratch）：swap3
    解析到了存储卷根目录之外": the reason was translated as it was recorded, by the worker."""
    (tmp_path / "outside").mkdir()
    job = submit(alice, make_spec("true", datasources=[mount("runs/run-7")]))
    (volume(settings) / "runs").symlink_to(tmp_path / "outside")
    run_until(Worker(), lambda: status_of(job) == JobStatus.FAILED)
    job.refresh_from_db()
    event = job.events.get(reason="StartFailed")

    with translation.override(language):
        shown = [job.status_reason_shown, event.message_shown]

    for text in shown:
        assert said in text, text
        if language == "en":
            assert not re.search(r"[\u4e00-\u9fff]", text), text


def test_a_link_or_a_file_on_the_way_is_refused_at_submit_on_the_source_path(settings, tmp_path):
    root = volume(settings)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (root / "inner").mkdir()
    # A link that stays inside the volume is refused too: a missing folder is made only
    # through real folders, whatever a link points at.
    (root / "to-inner").symlink_to(root / "inner")
    (root / "to-outside").symlink_to(outside)
    (root / "notes.txt").write_text("x")
    spec = make_spec(
        "true",
        datasources=[
            mount("to-inner/new", at="/a"),
            mount("to-outside/new", at="/b"),
            mount("notes.txt/new", at="/c"),
        ],
    )

    errors = get_backend("local").check_spec(spec)

    assert set(errors) == {f"datasources[{i}].sourcePath" for i in range(3)}
    assert "“to-inner”是符号链接" in str(errors["datasources[0].sourcePath"])
    assert "“to-outside”是指向存储卷“work”之外目录的符号链接" in str(
        errors["datasources[1].sourcePath"]
    )
    assert "“notes.txt”是文件" in str(errors["datasources[2].sourcePath"])
    assert os.listdir(outside) == []


@pytest.mark.parametrize(
    ("language", "said"),
    [
        ("zh-hans", "“ds/link_out”是指向存储卷“work”之外目录的符号链接"),
        ("en", "“ds/link_out” is a symbolic link to a folder outside volume “work”"),
    ],
)
def test_a_link_leading_out_of_the_volume_is_named_at_submit(settings, tmp_path, language, said):
    """QA 99: an existing folder's path through a link out of the volume was refused as
    "The path must stay inside the volume" only, naming neither the link nor the volume."""
    root = volume(settings)
    outside = tmp_path / "elsewhere"
    (outside / "train").mkdir(parents=True)
    (root / "ds").mkdir()
    (root / "ds" / "inner").mkdir()
    (root / "ds" / "to-inner").symlink_to(root / "ds" / "inner")
    (root / "ds" / "inner" / "link_out").symlink_to(outside)
    (root / "ds" / "link_out").symlink_to(outside)
    spec = make_spec(
        "true",
        datasources=[
            mount("ds/link_out/train", at="/a", read_only=True),
            mount("ds/to-inner/link_out", at="/b", read_only=True),
        ],
    )

    with translation.override(language):
        errors = get_backend("local").check_spec(spec)

    assert said in str(errors["datasources[0].sourcePath"])
    assert "ds/to-inner/link_out" in str(errors["datasources[1].sourcePath"])


def test_run_again_refused_by_a_volume_row_names_its_mount_and_volume(
    alice, alice_client, settings, tmp_path
):
    """QA 99: a read-only mount's folder became a link out of the volume after the job ran;
    Run again said "It cannot run again now: The path must stay inside the volume." naming
    no mount, where a start failing on it names the mount and the volume."""
    root = volume(settings)
    (root / "ds" / "later").mkdir(parents=True)
    job = submit(alice, make_spec("true", datasources=[mount("ds/later", at="/d", read_only=True)]))
    (root / "ds" / "later").rmdir()
    (tmp_path / "elsewhere").mkdir()
    (root / "ds" / "later").symlink_to(tmp_path / "elsewhere")

    page = alice_client.post(reverse("job-rerun", args=[job.public_id]), follow=True)
    alice_client.cookies["django_language"] = "en"
    english = alice_client.post(reverse("job-rerun", args=[job.public_id]), follow=True)

    said = [str(m) for m in page.context["messages"]][-1]
    assert said.startswith(
        "现在无法再次运行：挂载点 /d（存储卷 work）：“ds/later”是指向存储卷“work”之外目录的符号链接"
    ), said
    said = [str(m) for m in english.context["messages"]][-1]
    assert said.startswith(
        "It cannot run again now: The mount /d (volume work): “ds/later” is a symbolic link"
    ), said
    assert Job.objects.filter(owner=alice).count() == 1


def test_a_name_too_long_for_the_file_system_below_a_missing_folder_is_refused_at_submit(
    settings,
):
    root = volume(settings)
    # "runs" does not exist: the look stopped there, and the start made it, then failed on
    # the next name (256 bytes; a folder's is 255 at most), leaving "runs" in the volume.
    spec = make_spec("true", datasources=[mount("runs/" + "a" * 256)])

    errors = get_backend("local").check_spec(spec)

    assert "文件系统允许的长度" in str(errors["datasources[0].sourcePath"])
    assert not (root / "runs").exists()


def test_a_read_only_mount_of_a_missing_folder_is_refused_as_a_likely_typo(alice, settings):
    root = volume(settings)
    spec = make_spec("true", datasources=[mount("datset", read_only=True)])

    errors = get_backend("local").check_spec(spec)

    assert "很可能输错了" in str(errors["datasources[0].sourcePath"])
    assert not (root / "datset").exists()


def test_a_read_only_mount_whose_folder_went_after_submit_fails_the_start_and_makes_nothing(
    alice, settings
):
    root = volume(settings)
    (root / "dataset").mkdir()
    job = submit(alice, make_spec("true", datasources=[mount("dataset", read_only=True)]))
    (root / "dataset").rmdir()

    run_until(Worker(), lambda: status_of(job) == JobStatus.FAILED)

    assert "只读" in job.status_reason, job.status_reason
    assert not (root / "dataset").exists()


def test_the_walk_stops_at_a_link_swapped_for_a_folder_it_would_have_entered(tmp_path):
    root = tmp_path / "root"
    (root / "a").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "a" / "b").symlink_to(outside)

    with pytest.raises(SandboxError, match="a/b"):
        make_in_root(root, "a/b/c")

    assert os.listdir(outside) == []


def test_a_folder_made_for_a_job_run_as_its_owner_is_theirs_and_the_teams_to_write(
    job_users_on,  # noqa: F811
    alice,
    bob,
):
    # The fixture's volume is a team's: root's, group GID, 2775 (group-writable, set-group-ID).
    root = volume(job_users_on)
    alices = submit(alice, make_spec("echo a > /out/a.txt", datasources=[mount("runs/shared")]))
    run_until(Worker(), lambda: status_of(alices) in (JobStatus.SUCCEEDED, JobStatus.FAILED))
    bobs = submit(bob, make_spec("echo b > /out/b.txt", datasources=[mount("runs/shared")]))
    run_until(Worker(), lambda: status_of(bobs) in (JobStatus.SUCCEEDED, JobStatus.FAILED))

    assert alices.status == JobStatus.SUCCEEDED, alices.status_reason
    assert bobs.status == JobStatus.SUCCEEDED, (bobs.status_reason, log_text(bobs, "master-0"))
    for made in ("runs", "runs/shared"):
        info = (root / made).stat()
        assert (info.st_uid, info.st_gid) == (BASE + alice.pk, GID)
        assert stat.S_IMODE(info.st_mode) == 0o2775
    assert (root / "runs/shared/b.txt").stat().st_uid == BASE + bob.pk


def test_a_folder_is_not_made_for_a_job_in_a_folder_its_user_may_not_write(
    job_users_on,  # noqa: F811
    alice,
    bob,
):
    """The worker (root) made the folder wherever the path named, and gave it to the job's
    user: Bob's job got a folder of his inside Alice's, which his own permissions do not let
    him write, so he could fill it with files she cannot delete (until review 48). A folder
    is made only where the job's user could make it itself."""
    root = volume(job_users_on)
    alices_folder = root / "alice-ckpt"
    alices_folder.mkdir()
    os.chown(alices_folder, BASE + alice.pk, GID)
    alices_folder.chmod(0o755)  # the jobs' umask: her team reads it, nobody else writes

    job = submit(bob, make_spec("echo b > /out/b.txt", datasources=[mount("alice-ckpt/bob")]))
    run_until(Worker(), lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED))

    assert job.status == JobStatus.FAILED
    assert "/out" in job.status_reason and "alice-ckpt" in job.status_reason
    assert f"uid {BASE + bob.pk}" in job.status_reason, job.status_reason
    assert "无权在“alice-ckpt”中写入" in job.status_reason
    assert os.listdir(alices_folder) == []


def test_the_walk_makes_nothing_where_the_jobs_user_may_not_write(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("a folder of another user is made only by root")
    root = tmp_path / "root"
    (root / "theirs").mkdir(parents=True)
    os.chown(root / "theirs", 4242, 4242)
    (root / "theirs").chmod(0o755)

    with pytest.raises(SandboxError, match="theirs"):
        make_in_root(root, "theirs/new", as_user=(4343, 4343))

    assert os.listdir(root / "theirs") == []
    # The owner may; and so may a user of the folder's group when its group may write.
    fd, _made = make_in_root(root, "theirs/new", as_user=(4242, 4242))
    os.close(fd)
    (root / "theirs").chmod(0o775)
    fd, _made = make_in_root(root, "theirs/team", as_user=(4343, 4242))
    os.close(fd)
    assert sorted(os.listdir(root / "theirs")) == ["new", "team"]


def test_a_job_queued_with_a_mount_over_a_file_of_this_machine_fails_at_start_in_the_consoles_words(
    alice, alice_client, settings
):
    """fix116: the mount row refuses /etc/passwd since fix110; a job queued before (or whose
    machine changed since) failed with bubblewrap's "Can't mkdir /etc/passwd: Not a
    directory". The runner checks again before it makes or mounts anything; since fix126
    before the job is marked Running: no start time, and My usage counts no job."""
    job = submit(alice, make_spec("true", datasources=[mount("runs/run-7", at="/etc/passwd")]))

    run_until(Worker(), lambda: status_of(job) == JobStatus.FAILED)
    page = alice_client.get("/account/usage/", HTTP_ACCEPT_LANGUAGE="en")

    assert page.context["report"].total.jobs == 0
    assert job.started_at is None
    assert not job.events.filter(reason="Started").exists()
    event = job.events.get(reason="StartFailed")
    assert (
        job.status_reason
        == event.message
        == (
            "无法启动：挂载点 /etc/passwd（存储卷 work）：本机任务以本机自己的文件为根目录，而那里的 "
            "/etc/passwd 是文件而非目录：卷无法挂载到它上面。请挂载到一个目录，或挂载到尚不存在的路径，"
            "例如 /workspace。"
        )
    )
    with translation.override("en"):
        assert job.status_reason_shown == (
            "Could not start: The mount /etc/passwd (volume work): A local job sees this "
            "machine's own files as its root, and there /etc/passwd is a file, not a folder: a "
            "volume cannot be mounted over it. Mount it at a folder, or at a path not there "
            "yet, e.g. /workspace."
        )
    assert os.listdir(volume(settings)) == []  # its missing folder was not made


def test_a_mount_below_another_mount_path_is_not_refused_at_start_for_the_machines_file(
    alice, settings
):
    """What is below the outer mount is that volume's, not the machine's file (Debian's
    licence texts, a folder no job needs)."""
    licences = "/usr/share/common-licenses"
    assert os.path.isfile(f"{licences}/Apache-2.0")
    (volume(settings) / "licences" / "Apache-2.0").mkdir(parents=True)
    spec = make_spec(
        f"test -d {licences}/Apache-2.0/below",
        datasources=[
            mount("licences", at=licences),
            mount("runs", at=f"{licences}/Apache-2.0/below"),
        ],
    )
    job = submit(alice, spec)

    run_until(Worker(), lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED))

    assert job.status == JobStatus.SUCCEEDED, job.status_reason
