"""With LOCAL_JOB_UID_BASE a job mounts only a folder its own user could reach: enter every
folder on the way, read it, and write it for a read-write mount. The worker (root) opens the
source and bubblewrap binds that descriptor, so until review 48 the folders' modes on the
way kept nobody out. Real folders, a real worker, real jobs run as their owners' uids."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from jobs import spec as S
from jobs.models import JobStatus
from jobs.sandbox import SandboxError, check_within_reach, open_in_root

from .runner_helpers import log_text, make_spec, runner_settings, submit, volume  # noqa: F401
from .test_runner_job_users import BASE, GID, job_users_on, run_job  # noqa: F401


def with_mount(source: str, *, read_only: bool) -> dict:
    """The spec's changes: the volume's root at /workspace (the team's, which every job's user
    writes) and `source` at /data."""
    return {
        "datasources": [
            S.Datasource("hostpath", "work", mount_path="/workspace"),
            S.Datasource(
                "hostpath", "work", mount_path="/data", source_path=source, read_only=read_only
            ),
        ]
    }


def alices_folder(root, name: str, mode: int, owner) -> None:
    folder = root / name
    folder.mkdir(parents=True)
    os.chown(folder, BASE + owner.pk, GID)
    folder.chmod(mode)


@pytest.mark.parametrize("read_only", [True, False], ids=["read-only", "read-write"])
def test_a_job_cannot_mount_a_folder_inside_one_its_user_may_not_enter(
    job_users_on,  # noqa: F811
    alice,
    bob,
    read_only,
):
    root = volume(job_users_on)
    alices_folder(root, "alice/private", 0o700, alice)  # hers alone: nobody else enters
    alices_folder(root, "alice/private/data", 0o777, alice)
    (root / "alice/private/data/secret.txt").write_text("alice's\n")

    command = "cat /data/secret.txt > /workspace/leak.txt"
    job = run_job(bob, command, **with_mount("alice/private/data", read_only=read_only))

    assert job.status == JobStatus.FAILED, log_text(job, "master-0")
    assert "/data" in job.status_reason and "work" in job.status_reason
    assert f"uid {BASE + bob.pk}" in job.status_reason, job.status_reason
    assert "无权进入“alice/private”" in job.status_reason
    assert not (root / "leak.txt").exists()

    # Alice's own job reaches it.
    alices = run_job(alice, command, **with_mount("alice/private/data", read_only=True))
    assert alices.status == JobStatus.SUCCEEDED, alices.status_reason
    assert (root / "leak.txt").read_text() == "alice's\n"


def test_a_read_write_mount_needs_a_folder_the_jobs_user_may_write_and_read_only_does_not(
    job_users_on,  # noqa: F811
    alice,
    bob,
):
    root = volume(job_users_on)
    alices_folder(root, "alice-ckpt", 0o755, alice)  # the jobs' umask: others read, not write
    (root / "alice-ckpt/step-100.pt").write_text("weights\n")

    command = "cat /data/step-100.pt > /workspace/copy.txt"
    refused = run_job(bob, command, **with_mount("alice-ckpt", read_only=False))
    read = run_job(bob, command, **with_mount("alice-ckpt", read_only=True))

    assert refused.status == JobStatus.FAILED
    assert "无权在“alice-ckpt”中写入" in refused.status_reason, refused.status_reason
    assert "只读" in refused.status_reason  # says what to do instead
    assert read.status == JobStatus.SUCCEEDED, (read.status_reason, log_text(read, "master-0"))
    assert (root / "copy.txt").read_text() == "weights\n"


def test_a_missing_folder_is_not_made_below_one_the_jobs_user_may_not_enter(
    job_users_on,  # noqa: F811
    alice,
    bob,
):
    root = volume(job_users_on)
    alices_folder(root, "alice/private", 0o700, alice)
    alices_folder(root, "alice/private/open", 0o777, alice)

    command = "echo b > /data/b.txt"
    job = run_job(bob, command, **with_mount("alice/private/open/bob", read_only=False))

    assert job.status == JobStatus.FAILED
    assert "无权进入“alice/private”" in job.status_reason, job.status_reason
    assert os.listdir(root / "alice/private/open") == []


def test_the_reach_is_checked_from_the_top_of_the_host_and_on_the_folder_opened():
    if os.geteuid() != 0:
        pytest.skip("a folder of another user's is opened only by root")
    top = Path(tempfile.mkdtemp(prefix="console-reach-"))  # tmp_path's parents are root's alone
    (top / "root/data").mkdir(parents=True)
    for folder in (top, top / "root", top / "root/data"):
        folder.chmod(0o755)
    fd, source = open_in_root(top / "root", "data")
    try:
        check_within_reach(fd, source, root=top / "root", read_only=True, as_user=(4343, 4343))
        # A folder above the volume's own, closed since the worker's start, is not named.
        top.chmod(0o700)
        with pytest.raises(SandboxError, match="存储卷自身目录之上") as refused:
            check_within_reach(fd, source, root=top / "root", read_only=True, as_user=(4343, 4343))
        assert str(top) not in str(refused.value)
        top.chmod(0o755)
        # The folder at that path now is not the one opened (and to be bound): refused.
        (top / "root/data").rename(top / "root/moved")
        (top / "root/data").mkdir(mode=0o755)
        with pytest.raises(SandboxError, match="被移动或替换"):
            check_within_reach(fd, source, root=top / "root", read_only=True, as_user=(4343, 4343))
    finally:
        os.close(fd)
        shutil.rmtree(top)


def test_a_jobs_curves_are_not_read_from_a_folder_its_user_may_not_enter(
    job_users_on,  # noqa: F811
    alice,
    bob,
):
    """The console reads a job's event files as the worker's user: Bob's job page drew the
    curves of Alice's, his Tensorboard log path under a mount of a folder inside her 0700
    one, whether or not his job ever ran (until review 48)."""
    from .test_tensorboard import read, write_scalars

    root = volume(job_users_on)
    alices_folder(root, "alice/private", 0o700, alice)
    alices_folder(root, "alice/private/open", 0o777, alice)
    write_scalars(root / "alice/private/open/tb", "loss", [2.5, 1.25])
    changes = {
        "datasources": [
            S.Datasource("hostpath", "work", mount_path="/data", source_path="alice/private/open")
        ],
        "tensorboard": S.TensorboardConfig(enable=True, log_path="/data/tb"),
    }

    bobs = read(submit(bob, make_spec("true", **changes)))
    alices = read(submit(alice, make_spec("true", **changes)))

    assert bobs.charts == []
    assert f"uid {BASE + bob.pk}" in bobs.note and "alice/private" in bobs.note, bobs.note
    assert [chart.tag for chart in alices.charts] == ["loss"], alices.note


def test_a_jobs_curves_leave_out_the_folders_and_files_inside_its_log_folder_its_user_may_not_read(
    job_users_on,  # noqa: F811
    alice,
    bob,
):
    """The log folder itself Bob's user may read (Alice's 0755), but the console walks it as
    the worker's user: her 0700 run folder and her 0600 event file inside were drawn on
    Bob's job page all the same (until review 50)."""
    from .test_tensorboard import read, write_scalars

    root = volume(job_users_on)
    alices_folder(root, "alice-runs", 0o755, alice)
    alices_folder(root, "alice-runs/private", 0o700, alice)
    write_scalars(root / "alice-runs/private", "loss", [2.5, 1.25])
    write_scalars(root / "alice-runs", "accuracy", [0.5, 0.75])
    for folder, mode in ((root / "alice-runs/private", 0o644), (root / "alice-runs", 0o600)):
        for events in folder.glob("*tfevents*"):
            os.chown(events, BASE + alice.pk, GID)
            events.chmod(mode)
    changes = {
        "datasources": [S.Datasource("hostpath", "work", mount_path="/data")],
        "tensorboard": S.TensorboardConfig(enable=True, log_path="/data/alice-runs"),
    }

    bobs = read(submit(bob, make_spec("true", **changes)))
    alices = read(submit(alice, make_spec("true", **changes)))
    # Named as a queue group task's own sub-folder (the job's AIHC_GROUP_TASK_INDEX, which a
    # job may set itself), her run folder is the folder read: looked at as it is too.
    as_task = read(
        submit(bob, make_spec("true", envs=[S.Env("AIHC_GROUP_TASK_INDEX", "private")], **changes))
    )

    assert bobs.charts == [], [(chart.run, chart.tag) for chart in bobs.charts]
    assert as_task.charts == [], [(chart.run, chart.tag) for chart in as_task.charts]
    assert sorted((chart.run, chart.tag) for chart in alices.charts) == [
        (".", "accuracy"),
        ("private", "loss"),
    ], alices.note
