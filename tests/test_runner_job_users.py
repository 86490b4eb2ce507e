"""LOCAL_JOB_UID_BASE and LOCAL_JOB_GID: a root worker runs each console user's local jobs as
a host user of their own (jobs.job_users). Real jobs through the real runner, as root (CI runs
as root); the refusals at the worker's start through the real `manage.py worker`."""

from __future__ import annotations

import contextlib
import grp
import os
import pwd
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.contrib.auth.models import User
from django.utils import translation

from jobs import job_users
from jobs import spec as S
from jobs.actions import job_stop
from jobs.models import JobStatus
from jobs.runner import live_shim, replica_state_dir
from jobs.worker import Worker

from .runner_helpers import (
    UNTIL_THE_GATE_OPENS,
    log_text,
    make_spec,
    network_holders_killed_after,
    open_gate,
    processes_with,
    run_until,
    runner_settings,  # noqa: F401
    status_of,
    submit,
    volume,
)
from .test_runner_races import AfterSpawn, WorkerKilled

ROOT = Path(__file__).resolve().parent.parent
# Far above any id this machine gives its users, and below the highest base allowed.
BASE = 1_500_000_000


def unused_gid() -> int:
    """A gid no group of this machine has (a job's group need not be named)."""
    gid = 1_400_000_000
    while True:
        try:
            grp.getgrgid(gid)
        except KeyError:
            return gid
        gid += 1


GID = unused_gid()


@pytest.fixture
def job_users_on(runner_settings) -> Iterator[object]:  # noqa: F811
    """Jobs run as BASE + user id in group GID. The run folder and the volume live in a folder
    every user may enter (tmp_path's parents are root's alone), the volume a team's: root's,
    in group GID, group-writable with the set-group-id bit (chgrp GID; chmod 2775)."""
    if os.geteuid() != 0:
        pytest.skip("jobs run as other users only for a worker run as root (CI runs as root)")
    top = Path(tempfile.mkdtemp(prefix="console-job-users-"))
    top.chmod(0o755)
    share = top / "volume"
    share.mkdir()
    os.chown(share, 0, GID)
    share.chmod(0o2775)
    settings = runner_settings
    settings.LOCAL_RUN_DIR = top / "runs"
    settings.LOCAL_VOLUMES = f"work={share}"
    settings.LOCAL_JOB_UID_BASE = BASE
    settings.LOCAL_JOB_GID = str(GID)
    assert job_users.problems() == []
    yield settings
    for replica_pid in processes_with(str(top)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(replica_pid, signal.SIGKILL)
    shutil.rmtree(top, ignore_errors=True)


def run_job(owner, command: str, **changes):
    job = submit(owner, make_spec(command, **changes))
    run_until(Worker(), lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED))
    return job


def test_a_job_runs_as_its_owners_uid_in_the_jobs_group_and_two_users_get_two_uids(
    job_users_on, alice, bob
):
    alices = run_job(
        alice,
        "echo ids $(id -u) $(id -g) $(id -G); grep -E '^(Uid|Gid|Groups|CapEff):' /proc/self/status",
    )
    bobs = run_job(bob, "echo ids $(id -u) $(id -g) $(id -G)")

    log = log_text(alices, "master-0")
    assert f"ids {BASE + alice.pk} {GID} {GID}\n" in log
    # Real, effective, saved and file-system ids all the user's (no way back to root), the
    # one group only, no capability.
    uid = BASE + alice.pk
    assert f"Uid:\t{uid}\t{uid}\t{uid}\t{uid}\n" in log
    assert f"Gid:\t{GID}\t{GID}\t{GID}\t{GID}\n" in log
    assert f"Groups:\t{GID} \n" in log or f"Groups:\t{GID}\n" in log
    assert "CapEff:\t0000000000000000\n" in log
    assert f"ids {BASE + bob.pk} {GID} {GID}\n" in log_text(bobs, "master-0")
    assert alices.status == bobs.status == JobStatus.SUCCEEDED


def test_a_jobs_files_on_a_volume_are_its_users_and_only_the_group_bits_let_another_user_in(
    job_users_on, alice, bob
):
    share = volume(job_users_on)
    first = run_job(alice, "echo alice-1 > /workspace/ckpt")
    assert first.status == JobStatus.SUCCEEDED, log_text(first, "master-0")
    info = (share / "ckpt").stat()
    assert (info.st_uid, info.st_gid, info.st_mode & 0o777) == (BASE + alice.pk, GID, 0o644)

    # Another user's job cannot overwrite it (0644)...
    refused = run_job(bob, "echo bob > /workspace/ckpt")
    assert refused.status == JobStatus.FAILED
    assert "Permission denied" in log_text(refused, "master-0")
    assert (share / "ckpt").read_text() == "alice-1\n"

    # ...the same user's next job can...
    again = run_job(alice, "echo alice-2 > /workspace/ckpt && chmod g+w /workspace/ckpt")
    assert again.status == JobStatus.SUCCEEDED, log_text(again, "master-0")
    assert (share / "ckpt").read_text() == "alice-2\n"

    # ...and, the file made group-writable (0664), so can the other user's, in the group.
    allowed = run_job(bob, "echo bob > /workspace/ckpt")
    assert allowed.status == JobStatus.SUCCEEDED, log_text(allowed, "master-0")
    assert (share / "ckpt").read_text() == "bob\n"


def test_a_job_cannot_read_a_root_only_file_in_its_volume(job_users_on, alice):
    secret = volume(job_users_on) / "root-only"
    secret.write_text("root's secret\n")
    secret.chmod(0o600)

    job = run_job(alice, "cat /workspace/root-only")

    assert job.status == JobStatus.FAILED
    assert "Permission denied" in log_text(job, "master-0")
    assert "root's secret" not in log_text(job, "master-0")


def test_tmp_shared_memory_and_the_workspace_work_for_the_jobs_user(job_users_on, alice):
    job = run_job(
        alice,
        "echo t > /tmp/t && echo s > /dev/shm/s && mkdir -p /workspace/out "
        "&& echo w > /workspace/out/w && echo ok $(cat /tmp/t /dev/shm/s /workspace/out/w) "
        "$(stat -c %u /tmp/t)",
    )

    assert job.status == JobStatus.SUCCEEDED, log_text(job, "master-0")
    assert f"ok t s w {BASE + alice.pk}\n" in log_text(job, "master-0")


def test_an_mpi_jobs_hostfile_is_read_by_its_user(job_users_on, alice):
    from jobs import spec as S

    job = run_job(
        alice,
        "echo hosts $(cat /etc/mpi/hostfile) $(id -u); "
        "/etc/mpi/rsh worker-0 'echo worker-0 runs it as $(id -u)'",
        framework=S.MPI,
        roles=[S.Role("master", 1), S.Role("worker", 1)],
    )

    assert job.status == JobStatus.SUCCEEDED, log_text(job, "master-0")
    assert f"hosts worker-0 slots=1 {BASE + alice.pk}\n" in log_text(job, "master-0")
    # The worker's agent (its /tmp/.mpi, the user's) serves the launcher, as the same user.
    assert f"worker-0 runs it as {BASE + alice.pk}\n" in log_text(job, "master-0")


def test_an_isolated_job_runs_as_its_user_in_its_network_namespace(job_users_on, alice):
    job_users_on.LOCAL_JOB_NETWORK = "isolated"
    with network_holders_killed_after():
        job = run_job(
            alice,
            "echo ids $(id -u) netns $(readlink /proc/self/ns/net); "
            "/usr/bin/python3 -c 'import socket; s = socket.socket(); "
            's.bind(("127.0.0.1", 0)); s.listen(); '
            'socket.create_connection(s.getsockname()); print("loopback works")\'',
        )

    log = log_text(job, "master-0")
    assert job.status == JobStatus.SUCCEEDED, log
    assert f"ids {BASE + alice.pk} netns " in log
    assert "loopback works" in log
    assert f"netns {os.readlink('/proc/self/ns/net')}" not in log  # not the host's


def test_a_user_id_past_the_highest_uid_fails_the_job_with_the_reason(job_users_on):
    job_users_on.LOCAL_JOB_UID_BASE = job_users.HIGHEST_UID - 1_000_000
    far = User.objects.create_user(id=1_000_001, username="far", password="x")

    # The reason is recorded in the language active in the worker (the console's, LANGUAGE_CODE).
    with translation.override("en"):
        job = run_job(far, "echo ran as $(id -u)")

    assert job.status == JobStatus.FAILED
    assert "ran as" not in log_text(job, "master-0")
    job.refresh_from_db()
    with translation.override("en"):
        assert (
            f"its owner's uid would be {job_users.HIGHEST_UID + 1} (LOCAL_JOB_UID_BASE="
            f"{job_users.HIGHEST_UID - 1_000_000} + user id 1000001), past the highest a job "
            f"may have, {job_users.HIGHEST_UID}" in str(job.status_reason_shown)
        )
    with translation.override("zh-hans"):
        zh = run_job(far, "echo ran as $(id -u)")
    assert (
        f"其创建人的 uid 将为 {job_users.HIGHEST_UID + 1}（LOCAL_JOB_UID_BASE=" in zh.status_reason
    )


def processes_running(argv: list[str]) -> list[int]:
    """Pids of live (non-zombie) processes whose command line is exactly `argv`."""
    wanted = "\0".join(argv).encode() + b"\0"
    found = []
    for pid in processes_with(argv[-1]):
        with contextlib.suppress(OSError):
            if Path(f"/proc/{pid}/cmdline").read_bytes() == wanted:
                found.append(pid)
    return found


def test_stop_still_ends_every_process_of_a_job_run_as_its_user(job_users_on, alice):
    # Digits: `sleep 1000<tag>` must be a number of seconds (a hex tag made sleep exit at once).
    tag = f"{uuid.uuid4().int % 10**8:08d}"
    job = submit(
        alice,
        make_spec(f"setsid sleep 1000{tag} & setsid sleep 1001{tag} & {UNTIL_THE_GATE_OPENS}"),
    )
    worker = Worker()
    sleeps = [["sleep", f"1000{tag}"], ["sleep", f"1001{tag}"]]
    # The sleeps themselves, not any process with the tag: the shim (root) has the command
    # on its command line, and so has its child until it becomes the job's user.
    run_until(
        worker,
        lambda: all(processes_running(argv) for argv in sleeps),
        what="the job's sleeps",
    )
    owners = {
        Path(f"/proc/{pid}").stat().st_uid for argv in sleeps for pid in processes_running(argv)
    }
    assert owners == {BASE + alice.pk}
    # Out of the replica's session and process group: its SIGKILL alone would not reach them.
    [replica] = job.replicas.all()
    assert all(os.getsid(pid) != replica.pid for argv in sleeps for pid in processes_running(argv))

    job_stop(job=job, actor=alice)
    run_until(worker, lambda: status_of(job) == JobStatus.STOPPED, what="the stop")

    assert processes_with(tag) == []
    open_gate(job_users_on)


@pytest.mark.parametrize("base_now", [None, BASE + 1000], ids=["unset", "another-base"])
def test_a_replica_launched_after_a_worker_restart_runs_as_the_uid_its_attempt_started_with(
    job_users_on, alice, base_now
):
    # Chaos round 18: the worker killed between its two replicas' spawns, and started again
    # with the setting unset or changed; the replica it then launches ran as today's setting
    # said (as root, unset) beside its peer of the job's uid.
    job = killed_between_its_replicas_spawns(alice)

    job_users_on.LOCAL_JOB_UID_BASE = base_now
    worker = Worker()
    both = f"uid={BASE + alice.pk} gid={GID}"
    run_until(
        worker,
        lambda: all("uid=" in log_text(job, label) for label in ("master-0", "worker-0")),
        what="both replicas to say who they are",
    )
    assert both in log_text(job, "master-0")
    assert both in log_text(job, "worker-0"), log_text(job, "worker-0")
    open_gate(job_users_on)
    run_until(worker, lambda: status_of(job) == JobStatus.SUCCEEDED, what="success")
    run = job.local_run
    run.refresh_from_db()
    assert (run.run_uid, run.run_gid) == (BASE + alice.pk, GID)


def killed_between_its_replicas_spawns(owner):
    """A job of two replicas whose worker was killed after spawning master-0, not worker-0."""
    job = submit(
        owner,
        make_spec(
            f"echo uid=$(id -u) gid=$(id -g); {UNTIL_THE_GATE_OPENS}",
            roles=[S.Role("master", 1), S.Role("worker", 1)],
        ),
    )
    doomed = Worker()

    def kill_the_worker():
        raise WorkerKilled

    doomed.children = AfterSpawn(1, then=kill_the_worker)
    with pytest.raises(WorkerKilled):
        doomed.tick()
    return job


def test_a_replica_relaunched_with_the_setting_set_since_runs_as_the_workers_user_as_its_peer(
    job_users_on, alice
):
    # Session 19: an attempt started as the worker's own user recorded nothing, so the worker
    # started again with LOCAL_JOB_UID_BASE set launched its remaining replica as the job's
    # uid beside its peer running as root. Now the worker's own user is recorded too.
    job_users_on.LOCAL_JOB_UID_BASE = None
    job = killed_between_its_replicas_spawns(alice)
    run = type(job.local_run).objects.get(job=job)
    assert (run.run_uid, run.run_gid) == (os.geteuid(), os.getegid()) == (0, 0)

    job_users_on.LOCAL_JOB_UID_BASE = BASE
    worker = Worker()
    run_until(
        worker,
        lambda: all("uid=" in log_text(job, label) for label in ("master-0", "worker-0")),
        what="both replicas to say who they are",
    )
    assert "uid=0 gid=0" in log_text(job, "master-0")
    assert "uid=0 gid=0" in log_text(job, "worker-0"), log_text(job, "worker-0")
    open_gate(job_users_on)
    run_until(worker, lambda: status_of(job) == JobStatus.SUCCEEDED, what="success")
    run.refresh_from_db()
    assert (run.run_uid, run.run_gid) == (0, 0)


def relaunch_user_as_nobody(*, uid: int, gid: int) -> str:
    """What job_users.relaunch_user answers in a process that has become NOBODY for good (a
    worker no longer run as root): "None", "as UID:GID" or "refused: <reason>" (English)."""
    from .runner_helpers import NOBODY

    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never back into pytest
        code = 1
        try:
            os.close(read)
            os.setgroups([])
            os.setresgid(NOBODY, NOBODY, NOBODY)
            os.setresuid(NOBODY, NOBODY, NOBODY)
            with translation.override("en"):
                try:
                    found = job_users.relaunch_user(owner_id=1, uid=uid, gid=gid)
                    answer = "None" if found is None else f"as {found[0]}:{found[1]}"
                except job_users.JobUserError as exc:
                    answer = f"refused: {exc}"
            os.write(write, answer.encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    # A child forked from this multi-threaded process could block on a lock another thread
    # held at the fork: bounded, so such a hang fails this test instead of the whole run.
    ready, _, _ = select.select([read], [], [], 60)
    if not ready:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(read)
        pytest.fail("the forked child did not answer within 60 s")
    with os.fdopen(read) as answer_file:
        answer = answer_file.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    return answer


def test_a_worker_no_longer_root_refuses_to_relaunch_a_replica_as_the_uid_its_attempt_recorded(
    job_users_on,
):
    from .runner_helpers import NOBODY

    refused = relaunch_user_as_nobody(uid=0, gid=0)
    as_itself = relaunch_user_as_nobody(uid=NOBODY, gid=NOBODY)

    assert refused == (
        f"refused: its attempt started as uid 0 and gid 0, which this worker (uid {NOBODY}, gid "
        f"{NOBODY}) cannot become: only a worker run as root can run a job as another user"
    )
    assert as_itself == "None"  # its own user: as itself, with no change of user


def test_a_replica_relaunched_for_an_attempt_started_before_its_uid_was_recorded_runs_as_the_jobs_user(
    job_users_on, alice
):
    # Review 18b: an attempt started before migration 0025 has no recorded uid, and its
    # remaining replica, launched by the upgraded worker, was read as "the worker's user" and
    # ran as root beside its peer of the job's uid.
    job = killed_between_its_replicas_spawns(alice)
    type(job.local_run).objects.filter(job=job).update(run_uid=None, run_gid=None)

    worker = Worker()
    run_until(
        worker,
        lambda: all("uid=" in log_text(job, label) for label in ("master-0", "worker-0")),
        what="both replicas to say who they are",
    )
    both = f"uid={BASE + alice.pk} gid={GID}"
    assert both in log_text(job, "master-0")
    assert both in log_text(job, "worker-0"), log_text(job, "worker-0")
    open_gate(job_users_on)
    run_until(worker, lambda: status_of(job) == JobStatus.SUCCEEDED, what="success")


def test_a_replica_is_not_relaunched_as_a_recorded_uid_that_is_now_a_user_of_this_machine(
    job_users_on, alice
):
    # Review 18b: the recorded uid was used as it was, where a new attempt refuses a uid a
    # user of this machine was given since (nobody's, 65534, stands in for one).
    nobody = pwd.getpwuid(65534).pw_name
    job = killed_between_its_replicas_spawns(alice)
    type(job.local_run).objects.filter(job=job).update(run_uid=65534)

    run_until(Worker(), lambda: status_of(job) == JobStatus.FAILED, what="the job to fail")

    assert "uid=" not in log_text(job, "worker-0")
    [failed] = job.events.filter(reason="StartFailed")
    assert "65534" in failed.message and nobody in failed.message  # (in either language)
    assert live_shim(replica_state_dir(job.public_id, 1, "master-0")) is None  # ended too


def worker_command(env: dict[str, str], prefix: list[str] | None = None):
    return subprocess.run(
        [*(prefix or []), sys.executable, "manage.py", "worker", "--no-tasks"],
        cwd=ROOT,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_worker_not_run_as_root_refuses_the_setting_at_its_start(nobody_folder):
    from .test_unprivileged_worker import as_nobody_prefix

    stash = Path(tempfile.mkdtemp(prefix="console-stash-"))
    try:
        prefix = as_nobody_prefix(stash)
        done = worker_command(
            {
                "CONSOLE_VAR_DIR": str(nobody_folder / "var"),
                "HOME": str(nobody_folder),
                "LOCAL_JOB_UID_BASE": "200000",
            },
            prefix,
        )
    finally:
        shutil.rmtree(stash, ignore_errors=True)

    assert done.returncode == 78  # EX_CONFIG: refused, not crashed
    assert (
        "LOCAL_JOB_UID_BASE=200000 needs a worker run as root, which this one (uid 65534) is "
        "not" in done.stderr
    )


def test_a_base_among_the_systems_ids_is_refused_at_the_start(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("the worker's start with the setting is tried as root")
    done = worker_command({"CONSOLE_VAR_DIR": str(tmp_path / "var"), "LOCAL_JOB_UID_BASE": "1000"})

    assert done.returncode != 0
    assert "LOCAL_JOB_UID_BASE is a whole number from 100000 to 2146483646, not '1000'" in (
        done.stderr
    )


def test_a_run_folder_the_jobs_users_cannot_enter_and_a_system_group_are_refused(settings):
    if os.geteuid() != 0:
        pytest.skip("the checks past the first are made for a worker run as root")
    settings.LOCAL_JOB_UID_BASE = BASE
    settings.LOCAL_JOB_GID = "0"
    blocked = next(
        folder
        for folder in reversed(Path(settings.LOCAL_RUN_DIR).parents)
        if not folder.stat().st_mode & 0o001
    )  # tmp_path's: root's alone

    found = job_users.problems()

    assert any("LOCAL_JOB_GID=0 is a system group's (gid 0, below 1000)" in p for p in found)
    assert any(f"the jobs' users cannot enter {blocked}, above " in p for p in found)


def test_a_jobs_user_opens_the_card_node_it_is_given(job_users_on, alice):
    """A card's node as NVIDIA's driver makes it (0666, root's), here with /dev/fuse's numbers
    (any process may open it): the job's user opens it read-write. One made 0660 for root's
    group alone would not open: README says so."""
    from jobs.backends import local

    try:
        os.close(os.open("/dev/fuse", os.O_RDWR))
    except OSError as exc:
        pytest.skip(f"/dev/fuse does not open here: {exc}")
    folder = Path(job_users_on.LOCAL_RUN_DIR).parent / "dev"
    (folder / "nvidia-caps").mkdir(parents=True)
    for name in ("nvidia0", "nvidia-caps/nvidia-cap1"):
        os.mknod(folder / name, 0o20666, os.stat("/dev/fuse").st_rdev)
        os.chmod(folder / name, 0o666)
    job_users_on.LOCAL_DEVICE_DIR = str(folder)
    job_users_on.LOCAL_ACCELERATORS = f"{local.NVIDIA_RESOURCE}=1"
    from jobs import spec as S

    job = run_job(
        alice,
        '/usr/bin/python3 -c \'import os; os.close(os.open("/dev/nvidia0", os.O_RDWR)); '
        'print("opened as", os.getuid())\'',
        roles=[S.Role("master", 1, local.NVIDIA_RESOURCE, 1)],
    )

    assert job.status == JobStatus.SUCCEEDED, (job.status_reason, log_text(job, "master-0"))
    assert f"opened as {BASE + alice.pk}\n" in log_text(job, "master-0")


def test_an_outbound_job_runs_as_its_user_and_reads_its_resolv_conf(job_users_on, alice):
    if shutil.which("slirp4netns") is None:
        pytest.skip("slirp4netns is not installed here")
    job_users_on.LOCAL_JOB_NETWORK = "isolated-outbound"
    with network_holders_killed_after():
        job = run_job(alice, "echo ids $(id -u) $(cat /etc/resolv.conf)")

    log = log_text(job, "master-0")
    assert job.status == JobStatus.SUCCEEDED, (job.status_reason, log)
    assert f"ids {BASE + alice.pk} nameserver 10.0.2.3\n" in log


def test_the_job_page_says_the_uid_and_gid_the_job_ran_as_not_todays_setting(
    job_users_on, alice, alice_client
):
    from django.urls import reverse

    from jobs.models import LocalRun

    never_run = submit(alice, make_spec("true"))
    url = reverse("job-detail", args=[never_run.public_id])
    # Not run yet: nothing, whatever the setting.
    assert 'id="runs-as"' not in alice_client.get(url).content.decode()

    job = run_job(alice, "id -u")
    assert job.status == JobStatus.SUCCEEDED, log_text(job, "master-0")
    url = reverse("job-detail", args=[job.public_id])
    uid = BASE + alice.pk
    # The setting changed (or unset) since: the page still says what the job ran as.
    job_users_on.LOCAL_JOB_UID_BASE = BASE + 1000
    job_users_on.LOCAL_JOB_GID = ""
    page = alice_client.get(url).content.decode()
    assert f"以 uid {uid}、gid {GID} 运行：它写入存储卷的文件归该用户所有。" in page
    job_users_on.LOCAL_JOB_UID_BASE = None
    alice_client.cookies["django_language"] = "en"
    page = alice_client.get(url, HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert f"Runs as uid {uid}, gid {GID}: files it writes to a volume are that user's." in page

    # A run from before the record was kept (0025): nothing rather than a guess.
    LocalRun.objects.filter(job=job).update(run_uid=None, run_gid=None)
    job_users_on.LOCAL_JOB_UID_BASE = BASE
    assert 'id="runs-as"' not in alice_client.get(url).content.decode()


def test_a_job_run_as_a_root_workers_user_shows_no_uid_until_jobs_run_as_users_of_their_own(
    runner_settings,  # noqa: F811
    alice,
    alice_client,
):
    # Decision (session 19): every attempt records the user it ran as, the worker's own too;
    # uid 0 of a root worker without LOCAL_JOB_UID_BASE, the default set-up, is said on no
    # job (it would be on every one); with the setting on, that attempt ran as root, not as
    # its owner's uid, which its page then says. A worker's own user other than root's is.
    from django.urls import reverse

    from jobs.models import LocalRun

    if os.geteuid() != 0:
        pytest.skip("a job run as root needs a worker run as root (CI runs as root)")
    job = run_job(alice, "true")
    assert job.status == JobStatus.SUCCEEDED, log_text(job, "master-0")
    url = reverse("job-detail", args=[job.public_id])
    assert LocalRun.objects.filter(job=job, run_uid=0, run_gid=0).exists()

    unset = alice_client.get(url).content.decode()
    runner_settings.LOCAL_JOB_UID_BASE = BASE
    runner_settings.LOCAL_JOB_GID = str(GID)
    page = alice_client.get(url).content.decode()
    runner_settings.LOCAL_JOB_UID_BASE = None
    LocalRun.objects.filter(job=job).update(run_uid=999, run_gid=998)
    unprivileged = alice_client.get(url).content.decode()

    assert 'id="runs-as"' not in unset
    assert "以 uid 0、gid 0 运行：它写入存储卷的文件归该用户所有。" in page
    assert "以 uid 999、gid 998 运行：它写入存储卷的文件归该用户所有。" in unprivileged


def test_hang_analysis_reads_the_stacks_of_a_job_run_as_its_user(job_users_on, alice, alice_client):
    """py-spy, run by the worker as root, reads the Python processes of another uid's job."""
    from django.urls import reverse

    from jobs import spec as S

    from .test_hang_analysis import TRAIN, capture_taken, frames_of, started

    (volume(job_users_on) / "train.py").write_text(TRAIN)
    job = submit(
        alice,
        make_spec("/usr/bin/python3 /workspace/train.py", roles=[S.Role("master", 1)]),
    )
    worker = Worker()
    run_until(worker, lambda: started(job), what="the replica")
    assert alice_client.post(reverse("job-hang-capture", args=[job.public_id])).status_code == 302

    capture = capture_taken(worker, job)

    assert "stuck_in_allreduce" in frames_of(capture, "master-0")
    job_stop(job=job, actor=alice)
    run_until(worker, lambda: status_of(job) == JobStatus.STOPPED, what="the stop")


def test_the_tmp_cap_holds_and_a_finished_jobs_locked_tmp_is_removed(job_users_on, alice):
    """The shim (root) measures the /tmp of a job run as its user, and the worker (root)
    removes what it left, folders it locked (chmod 000) included."""
    from jobs.runner import attempt_dir

    job_users_on.LOCAL_TMP_MAX_GB = 0.001  # ~1 MB
    job_users_on.LOCAL_TMP_CHECK_SECONDS = 0.1
    capped = run_job(alice, "head -c 5000000 /dev/urandom > /tmp/big; sleep 60")
    assert capped.status == JobStatus.FAILED
    assert "/tmp" in capped.status_reason and "LOCAL_TMP_MAX_GB" in capped.status_reason

    job_users_on.LOCAL_TMP_MAX_GB = 1
    locked = run_job(alice, "mkdir -p /tmp/a/b && echo x > /tmp/a/b/c && chmod 000 /tmp/a")
    assert locked.status == JobStatus.SUCCEEDED, log_text(locked, "master-0")
    worker = Worker()
    tmp = attempt_dir(locked.public_id, 1) / "master-0" / "tmp"
    run_until(worker, lambda: not tmp.exists(), what="the /tmp's removal")


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the script injects x86_64 code")
def test_a_job_run_as_its_user_that_leaves_its_group_and_goes_quiet_still_dies_on_stop(
    job_users_on, alice
):
    from .test_runner_hostile import LEAVE_AND_GO_QUIET, assert_stopped_without_a_trace

    assert_stopped_without_a_trace(
        alice,
        job_users_on,
        source=LEAVE_AND_GO_QUIET,
        name="leave-and-go-quiet",
        command="/usr/bin/python3",
    )


def test_a_job_run_as_its_user_that_leaves_its_group_with_400_processes_is_stopped_only_once_all_are_gone(
    job_users_on, alice
):
    """Session 49's CI run: the test above once found a process of the job after it read
    Stopped. Pid 1 of the sandbox, moved out of the replica's group, dies only once it has
    killed every other process of its pid namespace; the stop killed the group (the shim)
    meanwhile, pid 1 went to init, out of the worker's sight, and the job read Stopped while
    its processes still ran. With 400 of them that took long enough every time."""
    from .test_runner_hostile import LEAVE_AND_GO_QUIET, assert_stopped_without_a_trace

    many = LEAVE_AND_GO_QUIET.replace(
        "while True:\n    time.sleep(0.1)",
        "for _ in range(400):\n    if os.fork() == 0:\n        break\n"
        "while True:\n    time.sleep(0.1)",
    )
    assert many != LEAVE_AND_GO_QUIET
    assert_stopped_without_a_trace(
        alice, job_users_on, source=many, name="leave-with-400", command="/usr/bin/python3"
    )


def test_an_mpi_jobs_hostfile_is_read_by_its_user_under_a_worker_with_umask_077(
    job_users_on, alice
):
    """Review 17b: the runner gave the folders down to the hostfile the others' x bit for a
    worker with a umask of 077, but the hostfile itself was written 0600, root's: the job's
    user could not read it."""
    from jobs import spec as S

    before = os.umask(0o077)
    try:
        job = run_job(
            alice,
            "echo hosts $(cat /etc/mpi/hostfile) $(id -u); "
            "echo hydra hosts $(cat $HYDRA_HOST_FILE); "
            "/etc/mpi/rsh worker-0 'echo worker-0 runs it as $(id -u)'",
            framework=S.MPI,
            roles=[S.Role("master", 1), S.Role("worker", 1)],
        )
    finally:
        os.umask(before)

    assert job.status == JobStatus.SUCCEEDED, log_text(job, "master-0")
    assert f"hosts worker-0 slots=1 {BASE + alice.pk}\n" in log_text(job, "master-0")
    assert " hydra hosts worker-0:1\n" in log_text(job, "master-0")  # MPICH's, QA 48
    assert f"worker-0 runs it as {BASE + alice.pk}\n" in log_text(job, "master-0")


def test_a_secret_file_in_a_folder_the_jobs_user_cannot_enter_stays_out_of_reach_and_jobs_still_start(
    job_users_on, alice
):
    """Review 17b: the sandbox covers each of the console's secret files (NAME_FILE) with an
    empty one, which bubblewrap, run as the job's user, must reach by its path: one in a folder
    only root may enter (a 0700 secrets folder) made every job fail to start ("Can't mkdir
    parents ... Permission denied"). What the job's user cannot reach is out of its sight
    already, and is no longer covered."""
    folder = Path(tempfile.mkdtemp(prefix="console-secrets-", dir="/var/tmp"))  # 0700, root's
    secret = folder / "secret_key"
    secret.write_text("THE-CONSOLES-SECRET\n")
    job_users_on.SECRET_FILES = [*django_settings.SECRET_FILES, secret]
    try:
        job = run_job(alice, f"cat {secret}; echo ids $(id -u)")
    finally:
        shutil.rmtree(folder)

    log = log_text(job, "master-0")
    assert f"ids {BASE + alice.pk}\n" in log
    assert "Permission denied" in log
    assert "THE-CONSOLES-SECRET" not in log


def test_without_the_jobs_group_a_uid_whose_gid_a_group_of_this_machine_has_fails_the_job(
    job_users_on, alice
):
    """Review 17b: without LOCAL_JOB_GID a job's gid is its uid. A user of this machine given
    a job's uid since the worker started fails the job, but a group given that id ran the job
    in it, with its rights. A group of this machine that no user's id matches stands in for
    one added in the jobs' range (the start check refuses those present at the start)."""
    import pwd

    uids = {u.pw_uid for u in pwd.getpwall()}
    group = next(g for g in grp.getgrall() if g.gr_gid > alice.pk and g.gr_gid not in uids)
    job_users_on.LOCAL_JOB_UID_BASE = group.gr_gid - alice.pk
    job_users_on.LOCAL_JOB_GID = ""

    with translation.override("en"):
        job = run_job(alice, "echo ran as $(id -u) $(id -g)")

    assert job.status == JobStatus.FAILED
    assert "ran as" not in log_text(job, "master-0")
    job.refresh_from_db()
    with translation.override("en"):
        assert (
            f"its owner's gid {group.gr_gid} (its uid: LOCAL_JOB_GID is unset) belongs to the "
            f"group {group.gr_name} of this machine" in str(job.status_reason_shown)
        )
    with translation.override("zh-hans"):
        zh = run_job(alice, "echo ran as $(id -u) $(id -g)")
    assert f"其创建人的 gid {group.gr_gid}（即其 uid：未设置 LOCAL_JOB_GID）已属于本机组" in (
        zh.status_reason
    )


def start_line_and_warnings(caplog) -> list[str]:
    """The worker's messages from its start up to its first tick (run in a thread, stopped)."""
    import threading
    import time

    from jobs.worker import run_forever

    stop = threading.Event()
    thread = threading.Thread(target=run_forever, args=(stop,), kwargs={"tasks": False})
    with caplog.at_level("INFO", logger="jobs.worker"):
        thread.start()
        try:
            while not any("worker started" in r.getMessage() for r in caplog.records):
                assert thread.is_alive(), "the worker ended before it started"
                time.sleep(0.05)
        finally:
            stop.set()
            thread.join(timeout=20)
    return [r.getMessage() for r in caplog.records]


def test_the_workers_start_line_says_who_jobs_run_as_and_warns_of_a_shared_volume_without_the_sticky_bit(
    job_users_on, caplog, transactional_db
):
    """QA 23: README's team volume (chgrp; chmod 2775) let one user's job delete another
    user's checkpoint (the folder is the group's to write, whatever the file's modes), and
    nothing in the worker's log said the setting had taken or whom jobs ran as."""
    share = volume(job_users_on)
    messages = start_line_and_warnings(caplog)
    start = next(m for m in messages if "worker started" in m)
    assert (
        f"local jobs run as: each owner's, uid {BASE} + the console user's id, gid {GID} "
        f"(LOCAL_JOB_GID={GID})"
    ) in start
    assert (
        f"LOCAL_JOB_UID_BASE: the volume work ({share}, mode 2775) is writable by every job's "
        "user without the sticky bit: one user's jobs can delete, or rename a file over, files "
        f"another user's jobs wrote there; chmod +t {share}"
    ) in "\n".join(messages)

    caplog.clear()
    share.chmod(0o3775)  # README's advice now: the sticky bit too
    messages = start_line_and_warnings(caplog)
    assert not [m for m in messages if "sticky bit" in m]


def test_on_a_team_volume_with_the_sticky_bit_another_users_job_cannot_delete_or_replace_a_file(
    job_users_on, alice, bob
):
    """README's team volume (chmod 3775): bob's job, in the jobs' group, may still write alice's
    group-writable file in place, but not delete it or rename another over it."""
    share = volume(job_users_on)
    share.chmod(0o3775)
    first = run_job(alice, "umask 002 && echo alice > /workspace/ckpt")
    assert first.status == JobStatus.SUCCEEDED, log_text(first, "master-0")

    refused = run_job(
        bob,
        "rm -f /workspace/ckpt; echo t > /workspace/t && mv -f /workspace/t /workspace/ckpt",
    )
    assert refused.status == JobStatus.FAILED
    assert "Operation not permitted" in log_text(refused, "master-0")
    assert (share / "ckpt").read_text() == "alice\n"
    assert (share / "ckpt").stat().st_uid == BASE + alice.pk

    allowed = run_job(bob, "echo bob > /workspace/ckpt")
    assert allowed.status == JobStatus.SUCCEEDED, log_text(allowed, "master-0")
    assert (share / "ckpt").read_text() == "bob\n"
