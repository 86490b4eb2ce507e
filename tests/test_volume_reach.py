"""With LOCAL_JOB_UID_BASE a job mounts only a folder its own user could reach: enter every
folder on the way, read it, and write it for a read-write mount. The worker (root) opens the
source and bubblewrap binds that descriptor, so until review 48 the folders' modes on the
way kept nobody out. Real folders, a real worker, real jobs run as their owners' uids."""

from __future__ import annotations

import html
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from django.urls import reverse

from jobs import spec as S
from jobs import wizard as W
from jobs.models import Draft, Job, JobStatus
from jobs.sandbox import SandboxError, check_within_reach, open_in_root

from .runner_helpers import log_text, make_spec, runner_settings, submit, volume  # noqa: F401
from .test_api import alice_key, api, body, refused, wsgi  # noqa: F401
from .test_runner_job_users import BASE, GID, job_users_on, run_job  # noqa: F401
from .test_wizard import (
    A800,
    complete_steps,
    data_data,
    field_errors,
    new_draft,
    post_step,
    step_url,
)


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
        check_within_reach(
            fd, source, root=top / "root", volume="v", read_only=True, as_user=(4343, 4343)
        )
        # A folder above the volume's own, closed since the worker's start, is not named.
        top.chmod(0o700)
        with pytest.raises(SandboxError, match="存储卷自身目录之上") as refused:
            check_within_reach(
                fd, source, root=top / "root", volume="v", read_only=True, as_user=(4343, 4343)
            )
        assert str(top) not in str(refused.value)
        top.chmod(0o755)
        # The folder at that path now is not the one opened (and to be bound): refused.
        (top / "root/data").rename(top / "root/moved")
        (top / "root/data").mkdir(mode=0o755)
        with pytest.raises(SandboxError, match="被移动或替换"):
            check_within_reach(
                fd, source, root=top / "root", volume="v", read_only=True, as_user=(4343, 4343)
            )
    finally:
        os.close(fd)
        shutil.rmtree(top)


@pytest.mark.parametrize(
    ("mode", "sub_path", "read_only", "said"),
    [
        (0o711, None, True, "无权读取存储卷“noperm”的根目录"),
        (0o755, None, False, "无权在存储卷“noperm”的根目录中写入"),
        (0o700, "data", True, "无权进入存储卷“noperm”的根目录"),
    ],
    ids=["read", "write", "enter"],
)
def test_a_volume_root_the_jobs_user_may_not_use_is_named_as_the_volumes_root(
    mode, sub_path, read_only, said
):
    """QA 99: a volume's root was named "/" ("无权读取“/”"), which reads as the machine's."""
    top = Path(tempfile.mkdtemp(prefix="console-reach-"))  # tmp_path's parents are closed
    (top / "noperm/data").mkdir(parents=True)
    for folder in (top, top / "noperm/data"):
        folder.chmod(0o755)
    (top / "noperm").chmod(mode)
    fd, source = open_in_root(top / "noperm", sub_path)
    try:
        with pytest.raises(SandboxError) as refused:
            check_within_reach(
                fd,
                source,
                root=top / "noperm",
                volume="noperm",
                read_only=read_only,
                as_user=(4343, 4343),
            )
        assert said in str(refused.value)
        assert "“/”" not in str(refused.value)
    finally:
        os.close(fd)
        (top / "noperm").chmod(0o755)
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


# -- Said at submit (left47) ----------------------------------------------------------------
# With LOCAL_JOB_UID_BASE the job's uid is known before it starts (the base + its owner's id):
# a mount its user could not reach is refused on the data step's row and by the APIs, not
# only when the queued job starts. The check at start stays: permissions change meanwhile.


@pytest.fixture
def wizard_pool(job_users_on):  # noqa: F811
    """The local pool of the wizard's steps (tests/test_wizard.py's cards) on the jobs' users'
    volume."""
    job_users_on.LOCAL_ACCELERATORS = f"{A800}=8"
    return job_users_on


def data_step_mounting(source: str, access: str) -> dict:
    """The data step: the team's volume at /workspace, and `source` in it at /data."""
    return data_data(
        mounts=(("hostpath", "work", "/workspace"), ("hostpath", "work", "/data")),
        **{"mounts-1-source_path": source, "mounts-1-access": access},
    )


def test_the_data_step_says_on_the_mount_row_that_the_jobs_user_may_not_enter_its_folder(
    wizard_pool, alice, bob, client
):
    root = volume(wizard_pool)
    alices_folder(root, "alice/private", 0o700, alice)
    alices_folder(root, "alice/private/data", 0o777, alice)
    client.force_login(bob)
    draft = new_draft(client)
    complete_steps(client, draft, upto=W.DATA)

    refused_step = post_step(client, draft, W.DATA, data_step_mounting("alice/private/data", "ro"))
    client.cookies["django_language"] = "en"
    in_english = post_step(client, draft, W.DATA, data_step_mounting("alice/private/data", "ro"))
    (root / "alice/private").chmod(0o711)  # Alice lets others through her folder
    fixed = post_step(client, draft, W.DATA, data_step_mounting("alice/private/data", "ro"))

    assert refused_step.status_code == 200
    [message] = field_errors(refused_step, "id_mounts-1-source_path")
    assert message.startswith("任务启动时将无权挂载此目录：")
    assert f"uid {BASE + bob.pk}" in message and "无权进入“alice/private”" in message
    assert field_errors(refused_step, "id_mounts-0-source_path") == []
    # What was typed is kept on the row.
    assert 'value="alice/private/data"' in refused_step.content.decode()
    [english] = field_errors(in_english, "id_mounts-1-source_path")
    assert english.startswith(
        f"The job would not be allowed to mount this folder when it starts: the job runs as "
        f"uid {BASE + bob.pk}, gid {GID}, which may not enter “alice/private”"
    )
    assert fixed.status_code == 302
    assert Draft.objects.get(pk=draft.pk).data[W.DATA]["mounts-1-source_path"] == [
        "alice/private/data"
    ]


def test_submit_refuses_a_mount_whose_folder_was_closed_to_the_jobs_user_since_its_step(
    wizard_pool, alice, bob, client
):
    root = volume(wizard_pool)
    alices_folder(root, "alice-ckpt", 0o777, alice)
    client.force_login(bob)
    client.cookies["django_language"] = "en"
    draft = new_draft(client)
    complete_steps(client, draft, **{W.DATA: data_step_mounting("alice-ckpt", "rw")})
    (root / "alice-ckpt").chmod(0o755)  # the jobs' umask: others read it, not write it

    submitted = client.post(reverse("wizard-submit", args=[draft.id]), follow=True)

    assert not Job.objects.exists()
    assert submitted.redirect_chain[-1][0] == step_url(draft, W.REVIEW)
    review = html.unescape(submitted.content.decode())
    assert "Fix these before submitting" in review
    assert f"uid {BASE + bob.pk}, gid {GID}, which may not write in “alice-ckpt”" in review
    # Opened from the review, its Next says it on the row.
    data_step = post_step(client, draft, W.DATA, dict(Draft.objects.get(pk=draft.pk).data[W.DATA]))
    [message] = field_errors(data_step, "id_mounts-1-source_path")
    assert "which may not write in “alice-ckpt”: mount it read-only" in message
    assert Draft.objects.get(pk=draft.pk).submitted_at is None


def test_the_api_refuses_a_mount_the_jobs_user_may_not_write_naming_its_field(
    job_users_on,  # noqa: F811
    api,  # noqa: F811
    alice,
    bob,
):
    root = volume(job_users_on)
    alices_folder(root, "bob-ckpt", 0o755, bob)
    mounting = body()
    mounting["datasources"].append(
        {"type": "hostpath", "name": "work", "mountPath": "/data", "sourcePath": "bob-ckpt"}
    )
    made_below = body()
    made_below["datasources"].append(
        {"type": "hostpath", "name": "work", "mountPath": "/data", "sourcePath": "bob-ckpt/alice"}
    )

    error = refused(lambda: api.create_job(pool="local", body=mounting))
    below = refused(lambda: api.create_job(pool="local", body=made_below))
    mounting["datasources"][1]["options"] = {"readOnly": True}
    read_only = api.create_job(pool="local", body=mounting)

    assert (error.status, error.code) == (400, "InvalidParameter")
    assert error.message.startswith(
        "datasources[1].sourcePath: The job would not be allowed to mount this folder when it "
        f"starts: the job runs as uid {BASE + alice.pk}, gid {GID}, which may not write in "
        "“bob-ckpt”"
    ), error.message
    assert "datasources[1].sourcePath:" in below.message
    assert "“bob-ckpt/alice” does not exist and cannot be made" in below.message
    assert not (root / "bob-ckpt/alice").exists()
    assert Job.objects.get().public_id == read_only["jobId"]
