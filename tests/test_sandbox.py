"""What a sandboxed job can see of this machine: the host's tools, its own volumes, and
nothing of the console's state (database, secret key, other jobs' logs, the worker's home)."""

from __future__ import annotations

import errno
import os
import re
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from jobs import spec as S
from jobs.logs import replica_log_path
from jobs.models import JobStatus
from jobs.runner import close_mounts, hidden_host_paths, volume_mounts
from jobs.sandbox import bwrap_argv, private_entries
from jobs.worker import Worker

from .runner_helpers import (
    log_text,
    make_spec,
    run_until,
    runner_settings,  # noqa: F401
    status_of,
    submit,
    volume,
)

pytestmark = pytest.mark.usefixtures("runner_settings")


@pytest.fixture
def console_home(runner_settings):  # noqa: F811 (the fixture imported above)
    """The console's state in a folder outside /tmp (which the sandbox replaces anyway), laid
    out as a deployment lays it out: var/ with the database, the secret key, the run folder
    and the default volume; a secret file read through a *_FILE variable; a second volume."""
    home = Path(tempfile.mkdtemp(prefix="console-", dir="/var/tmp"))
    var = home / "var"
    (var / "volumes" / "scratch").mkdir(parents=True)
    (var / "console.sqlite3").write_text("MARKER-database")
    (var / "secret_key").write_text("MARKER-secret-key")
    (var / "volumes" / "scratch" / "data.txt").write_text("volume data\n")
    (home / "aihc_sk").write_text("MARKER-aihc-secret")
    (home / "other-volume").mkdir()
    (home / "other-volume" / "file").write_text("MARKER-other-volume")
    runner_settings.VAR_DIR = var
    runner_settings.LOCAL_RUN_DIR = var / "runs"
    runner_settings.SECRET_FILES = [home / "aihc_sk"]
    runner_settings.LOCAL_VOLUMES = (
        f"work={var / 'volumes' / 'scratch'},other={home / 'other-volume'}"
    )
    yield home
    shutil.rmtree(home, ignore_errors=True)


def test_a_job_sees_nothing_of_the_consoles_state_but_its_tools_and_its_own_volume(
    alice, settings, console_home
):
    first = submit(
        alice,
        make_spec(
            "echo MARKER-other-job-log",
            envs=[S.Env("API_TOKEN", "MARKER-secret-env-value", secret=True)],
        ),
    )
    worker = Worker()
    run_until(worker, lambda: status_of(first) == JobStatus.SUCCEEDED)
    var = settings.VAR_DIR
    files = [
        settings.DATABASES["default"]["NAME"],  # holds the first job's secret env value
        var / "console.sqlite3",
        var / "secret_key",
        console_home / "aihc_sk",
        replica_log_path(first.public_id, "master-0"),
    ]
    folders = [
        Path.home(),
        "/root",
        "/run",
        "/var/run",
        var,
        settings.LOCAL_RUN_DIR,
        settings.BASE_DIR,
        console_home / "other-volume",
    ]
    command = "".join(f"cat {f} 2>/dev/null; " for f in files)
    command += "".join(f'echo "{d}: $(ls -A {d} 2>/dev/null | wc -l) entries"; ' for d in folders)
    command += "/usr/bin/python3 -c 'print(\"python runs\")'; cat /workspace/data.txt; "
    # The volume's descriptor bwrap bound is closed before the job starts: through it the
    # job could reach the host folder past the read-only bind.
    command += "echo open descriptors: $(ls /proc/self/fd)"
    second = submit(alice, make_spec(command))

    run_until(worker, lambda: status_of(second) in (JobStatus.SUCCEEDED, JobStatus.FAILED))

    log = log_text(second, "master-0")
    assert second.status == JobStatus.SUCCEEDED, (second.status_reason, log)
    assert "MARKER" not in log
    for folder in folders:
        assert f"{folder}: 0 entries" in log
    assert "python runs" in log
    assert "volume data" in log
    assert "open descriptors: 0 1 2 3\n" in log  # ls's own 3


def test_a_job_cannot_leave_a_setuid_or_setgid_program_in_a_volume(alice, settings):
    """A volume's files stay on the host, where a setuid bit is honoured: one left there would
    run as the worker's user (or root) for anyone reaching the folder. Plain modes still work."""
    make = (
        "import os\n"
        "for name, mode in (('created-suid', 0o4755), ('created-sgid', 0o2755)):\n"
        "    try:\n"
        "        os.close(os.open('/workspace/' + name, os.O_CREAT | os.O_WRONLY, mode))\n"
        "        print(name, 'made')\n"
        "    except PermissionError:\n"
        "        print(name, 'refused')\n"
    )
    command = (
        "cp /bin/sh /workspace/sh; "
        "chmod u+s /workspace/sh; echo suid=$?; chmod g+s /workspace/sh; echo sgid=$?; "
        "chmod 700 /workspace/sh; echo plain=$?; "
        f'/usr/bin/python3 -c "{make}"; true'
    )
    job = submit(alice, make_spec(command))

    run_until(Worker(), lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED))

    log = log_text(job, "master-0")
    assert job.status == JobStatus.SUCCEEDED, (job.status_reason, log)
    assert "suid=1" in log and "sgid=1" in log and "plain=0" in log
    assert "created-suid refused" in log and "created-sgid refused" in log
    made = {path.name: path.stat().st_mode for path in volume(settings).iterdir()}
    assert made["sh"] & 0o7777 == 0o700
    assert [name for name, mode in made.items() if mode & (stat.S_ISUID | stat.S_ISGID)] == []


def test_a_job_cannot_change_the_hosts_kernel_settings_through_proc(alice, settings):
    """High (security round 13): bwrap left /proc/sys writable, and a sysctl's file is
    writable by uid 0 without any capability: a job of a worker run as root could set
    kernel.core_pattern to `|/workspace/x` and have the kernel run it as root on the host.
    The job writes back the value core_pattern already has, so nothing changes either way."""
    command = (
        "value=$(cat /proc/sys/kernel/core_pattern); "
        'if printf "%s\\n" "$value" > /proc/sys/kernel/core_pattern; then echo sysctl=written; '
        "else echo sysctl=refused; fi; "
        "grep -E ' /proc/(sys|fs) ' /proc/self/mountinfo | cut -d' ' -f5,6"
    )
    job = submit(alice, make_spec(command))

    run_until(Worker(), lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED))

    log = log_text(job, "master-0")
    assert job.status == JobStatus.SUCCEEDED, (job.status_reason, log)
    assert "sysctl=refused" in log
    assert "/proc/sys ro," in log and "/proc/fs ro," in log


def test_the_sandbox_makes_the_kernels_settings_in_proc_read_only():
    # Whoever runs the worker (the test above shows the write only when it runs as root).
    argv = bwrap_argv(
        bwrap="bwrap",
        command=["true"],
        tmp_dir=Path("/var/tmp/x"),
        shm_bytes=1,
        mounts=[],
        files=[],
        hidden=[],
        env={},
    )
    after_proc = argv[argv.index("--proc") :]
    for path in ("/proc/sys", "/proc/sysrq-trigger", "/proc/fs"):
        at = after_proc.index(path)
        assert after_proc[at - 1 : at + 2] == ["--ro-bind-try", path, path]


def test_a_job_can_make_no_user_namespace_nor_use_the_kernels_keyrings(alice, settings):
    """Medium (security round 13): in a user namespace of its own a job held every
    capability again, over network and mount namespaces it could then make, which opens
    the kernel's netfilter and mount code (most recent local root exploits start so). Low:
    the keyrings are not namespaced, so a job read the keys of the worker's user. Threads
    and processes still start (clone3 is refused as absent; glibc falls back to clone)."""
    keyring = (
        "import ctypes, os, platform, threading\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "number = {'x86_64': 250, 'aarch64': 219}[platform.machine()]\n"
        "found = libc.syscall(number, 0, -4, 0)\n"  # KEYCTL_GET_KEYRING_ID, the user's
        "print('keyring', 'refused' if found == -1 else 'read', ctypes.get_errno())\n"
        "threading.Thread(target=print, args=('thread runs',)).start()\n"
        "os.wait() if os.fork() else print('fork runs')\n"
    )
    (volume(settings) / "keyring.py").write_text(keyring)
    command = (
        "if unshare --user true 2>/dev/null; then echo userns=made; else echo userns=refused; fi; "
        "if unshare --user --net true 2>/dev/null; then echo netns=made; "
        "else echo netns=refused; fi; "
        "/usr/bin/python3 /workspace/keyring.py"
    )
    job = submit(alice, make_spec(command))

    run_until(Worker(), lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED))

    log = log_text(job, "master-0")
    assert job.status == JobStatus.SUCCEEDED, (job.status_reason, log)
    assert "userns=refused" in log and "netns=refused" in log
    assert f"keyring refused {errno.EPERM}" in log
    assert "thread runs" in log and "fork runs" in log


@pytest.mark.skipif(os.geteuid() != 0, reason="a worker run as root reads root's files")
def test_a_job_of_a_worker_run_as_root_reads_no_file_of_etc_that_others_may_not(alice, settings):
    """High (security round 13): a root worker's job runs as uid 0 and read /etc/shadow and
    whatever else in /etc only root may read (SSH host keys, the console service's own
    environment file with SECRET_KEY and the AIHC keys). World-readable files still read."""
    private = [p for p in ("/etc/shadow", "/etc/gshadow") if os.path.exists(p)]
    assert private, "this machine has neither /etc/shadow nor /etc/gshadow"
    # Lines read (an entry per account, with its password hash); covered, none is.
    command = "".join(f'echo "{p}: $(grep -c : {p} 2>/dev/null) lines"; ' for p in private)
    command += 'echo "passwd: $(grep -c ^root: /etc/passwd)"'
    job = submit(alice, make_spec(command))

    run_until(Worker(), lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED))

    log = log_text(job, "master-0")
    assert job.status == JobStatus.SUCCEEDED, (job.status_reason, log)
    for path in private:
        assert f"{path}:  lines\n" in log or f"{path}: 0 lines\n" in log, log
    assert "passwd: 1\n" in log


def test_the_files_and_folders_of_a_host_folder_others_may_not_read_are_found(tmp_path):
    (tmp_path / "public.conf").write_text("x")
    (tmp_path / "secret.env").write_text("SECRET_KEY=x")
    (tmp_path / "secret.env").chmod(0o640)
    (tmp_path / "private").mkdir(mode=0o750)
    (tmp_path / "private" / "key").write_text("x")
    (tmp_path / "deep" / "er").mkdir(parents=True)
    (tmp_path / "deep" / "er" / "host_key").write_text("x")
    (tmp_path / "deep" / "er" / "host_key").chmod(0o600)
    (tmp_path / "link").symlink_to(tmp_path / "secret.env")

    found = private_entries(str(tmp_path))

    assert found == sorted(
        [
            str(tmp_path / "secret.env"),
            str(tmp_path / "private"),
            str(tmp_path / "deep" / "er" / "host_key"),
        ]
    )


def test_the_out_of_memory_killer_ends_a_jobs_processes_before_the_consoles(alice, settings):
    """Low (security round 13): a job without a memory limit (the default) filling the
    machine's memory over many small processes had the kernel kill the biggest process
    left, the database, the worker or the web server. Its processes are now the OOM
    killer's first choice. (A hostile job can set itself back to 0, never below: the
    console's processes are then no likelier a choice than its own.)"""
    command = (
        'echo "adj $(cat /proc/self/oom_score_adj)"; '
        "if (echo -1 > /proc/self/oom_score_adj) 2>/dev/null; then echo below; "
        "else echo not below; fi"
    )
    job = submit(alice, make_spec(command))

    run_until(Worker(), lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED))

    log = log_text(job, "master-0")
    assert job.status == JobStatus.SUCCEEDED, (job.status_reason, log)
    assert "adj 1000\n" in log
    assert "not below\n" in log
    # The worker itself keeps its own.
    assert Path("/proc/self/oom_score_adj").read_text().strip() != "1000"


def test_a_volume_whose_folder_holds_the_consoles_state_is_not_mounted(
    alice, settings, console_home
):
    settings.LOCAL_VOLUMES += f",wide={console_home}"
    spec = make_spec(
        "ls /everything",
        datasources=[S.Datasource("hostpath", "wide", mount_path="/everything")],
    )
    job = submit(alice, spec)

    run_until(Worker(), lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED))

    assert job.status == JobStatus.FAILED
    assert "保存着控制台自身的文件" in job.status_reason


@pytest.mark.parametrize("inside", ["var/runs", "var"])
def test_a_folder_inside_the_consoles_state_is_not_mounted_through_a_wide_volume(
    alice, settings, console_home, inside
):
    (console_home / "var" / "runs").mkdir(exist_ok=True)
    settings.LOCAL_VOLUMES += f",wide={console_home}"
    spec = make_spec(
        "ls -R /peek",
        datasources=[S.Datasource("hostpath", "wide", "/peek", source_path=inside)],
    )
    job = submit(alice, spec)

    run_until(Worker(), lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED))

    assert job.status == JobStatus.FAILED
    assert "保存着控制台自身的文件" in job.status_reason


def test_the_default_volume_inside_the_var_folder_still_mounts(alice, settings, console_home):
    spec = make_spec(
        "cat /workspace/data.txt",
        datasources=[S.Datasource("hostpath", "work", "/workspace")],
    )
    job = submit(alice, spec)

    run_until(Worker(), lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED))

    assert job.status == JobStatus.SUCCEEDED, job.status_reason
    assert "volume data" in log_text(job, "master-0")


def test_a_mount_swapped_for_a_symlink_after_its_check_still_binds_the_checked_folder(
    settings, tmp_path
):
    root = volume(settings)
    (root / "data").mkdir()
    (root / "data" / "inside.txt").write_text("the checked folder")
    outside = tmp_path / "console-var"
    outside.mkdir()
    (outside / "secret_key").write_text("MARKER-outside")
    spec = make_spec(
        "", datasources=[S.Datasource("hostpath", "work", mount_path="/data", source_path="data")]
    )
    mounts = volume_mounts(spec)
    # What another job writing the same volume can do between the check and bwrap's bind.
    (root / "data").rename(root / "data-checked")
    (root / "data").symlink_to(outside)
    (tmp_path / "tmp").mkdir()
    argv = bwrap_argv(
        bwrap=settings.LOCAL_BWRAP,
        command=["sh", "-c", "cat /data/*; echo written > /data/new.txt"],
        tmp_dir=tmp_path / "tmp",
        shm_bytes=1024**2,
        mounts=mounts,
        files=[],
        hidden=hidden_host_paths(),
        env={"PATH": "/usr/bin:/bin"},
    )
    try:
        result = subprocess.run(
            argv, pass_fds=[m.fd for m in mounts], capture_output=True, text=True, timeout=30
        )
    finally:
        close_mounts(mounts)

    assert result.returncode == 0, result.stderr
    assert result.stdout == "the checked folder"
    assert os.listdir(outside) == ["secret_key"]
    assert (root / "data-checked" / "new.txt").read_text() == "written\n"


def test_no_process_a_job_sees_names_a_host_path_of_its_sandbox(alice, settings):
    """The first process of a job's pid namespace is a copy of bwrap, and its command line
    (/proc/1/cmdline) named the host paths of the sandbox: the run folder holding the
    replica's /tmp, the volume's folder, the paths hidden from the job. bwrap reads them
    from a descriptor now."""
    show = (
        "import os\n"
        "for pid in sorted(p for p in os.listdir('/proc') if p.isdigit()):\n"
        "    try:\n"
        "        args = open(f'/proc/{pid}/cmdline', 'rb').read().split(b'\\0')\n"
        "    except OSError:\n"
        "        continue\n"
        "    print('CMDLINE', pid, b' '.join(args).decode(errors='replace'))\n"
    )
    (volume(settings) / "show.py").write_text(show)
    job = submit(alice, make_spec("/usr/bin/python3 /workspace/show.py"))

    run_until(Worker(), lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED))

    log = log_text(job, "master-0")
    assert job.status == JobStatus.SUCCEEDED, (job.status_reason, log)
    lines = [line.split(" CMDLINE ", 1)[1] for line in log.splitlines() if " CMDLINE " in line]
    assert lines[0].startswith("1 ") and "--args" in lines[0], lines
    for host_path in (str(settings.LOCAL_RUN_DIR), str(volume(settings)), "--bind"):
        assert not any(host_path in line for line in lines), (host_path, lines)


def test_no_descriptor_of_the_sandboxs_first_process_names_a_host_path(alice, settings):
    """pid 1 of a job's pid namespace is bwrap's copy, running as the job's user: the job can
    list /proc/1/fd. Each link there names what it points at, so an inherited descriptor
    (the volumes' folders bwrap binds, the file of its options, the log) would name a host
    path or hand over its contents. bwrap closes all but the output pipe, /dev/null and its
    own eventfd before the command starts (jobs.sandbox: pid 1)."""
    show = (
        "import os\n"
        "for pid in sorted(p for p in os.listdir('/proc') if p.isdigit()):\n"
        "    for fd in os.listdir(f'/proc/{pid}/fd'):\n"
        "        try:\n"
        "            print('FD', pid, fd, os.readlink(f'/proc/{pid}/fd/{fd}'))\n"
        "        except OSError:\n"
        "            pass  # this listing's own descriptor, closed meanwhile\n"
    )
    (volume(settings) / "show.py").write_text(show)
    job = submit(alice, make_spec("/usr/bin/python3 /workspace/show.py"))

    run_until(Worker(), lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED))

    log = log_text(job, "master-0")
    assert job.status == JobStatus.SUCCEEDED, (job.status_reason, log)
    links = [line.split(" FD ", 1)[1].split(" ", 2) for line in log.splitlines() if " FD " in line]
    first = {target for pid, _fd, target in links if pid == "1"}
    assert first, links  # pid 1's descriptors are listed: this is what the job sees
    # Its input, its output (the pipe the shim reads, as the job's own) and bwrap's eventfd.
    assert {re.sub(r"\[\d+\]", "[]", t) for t in first} <= {
        "/dev/null",
        "pipe:[]",
        "anon_inode:[eventfd]",
    }, first
    hosts = (
        str(settings.LOCAL_RUN_DIR),
        str(volume(settings)),
        str(replica_log_path(job.public_id, "master-0").parent),
    )
    for _pid, _fd, target in links:
        assert not any(host in target for host in hosts), links
        assert "memfd:" not in target, links  # bwrap's options, the seccomp program
