"""A local replica sees only the accelerator devices it was given (jobs.sandbox, devices).

This machine has no cards: LOCAL_DEVICE_DIR points the runner at a folder of stand-in
nodes (regular files, which bwrap binds as it binds a device), each holding its own name,
and real jobs report what they find under /dev."""

from __future__ import annotations

import html
import json
import os
import shlex
import shutil
import stat
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest
from django.utils import translation

from jobs import spec as S
from jobs.backends import local
from jobs.checks import card_nodes_missing
from jobs.models import Job, JobStatus
from jobs.worker import Worker

from .runner_helpers import (
    PY,
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

pytestmark = pytest.mark.usefixtures("runner_settings")

GPU = local.NVIDIA_RESOURCE
CONTROL = {"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-caps"}
# Prints every /dev/nvidia* entry the job finds, with what it reads there (a folder: its
# entries), and the CUDA_VISIBLE_DEVICES it was given.
REPORT = (
    f'{PY} -c \'import json, os; d = "/dev"; print("DEVICES", json.dumps({{'
    'n: sorted(os.listdir(f"{d}/{n}")) if os.path.isdir(f"{d}/{n}") '
    'else open(f"{d}/{n}").read() for n in os.listdir(d) if n.startswith("nvidia")}), '
    'repr(os.environ["CUDA_VISIBLE_DEVICES"]))\''
)


@pytest.fixture
def devices(settings, tmp_path):
    """Eight cards' nodes and the control nodes of a machine without nvidia-modeset."""
    folder = tmp_path / "dev"
    folder.mkdir()
    for name in [f"nvidia{i}" for i in range(8)] + ["nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"]:
        (folder / name).write_text(name)
    (folder / "nvidia-caps").mkdir()
    (folder / "nvidia-caps" / "nvidia-cap1").write_text("cap1")
    # Nothing else of the folder is bound: not a node the driver does not make.
    (folder / "nvidia-other").write_text("other")
    settings.LOCAL_DEVICE_DIR = str(folder)
    settings.LOCAL_ACCELERATORS = f"{GPU}=8"
    return folder


def seen(job, label: str) -> tuple[dict, str]:
    return seen_in(next(x for x in log_text(job, label).splitlines() if " DEVICES " in x))


def seen_in(line: str) -> tuple[dict, str]:
    found, _, cuda = line.split(" DEVICES ", 1)[1].rpartition(" ")
    return json.loads(found), cuda.strip("'")


def cards_of(found: dict) -> set[str]:
    return {name for name in found if name not in CONTROL}


def test_each_replica_sees_only_its_own_cards_and_the_control_nodes(alice, devices):
    spec = make_spec(REPORT, roles=[S.Role("master", 1, GPU, 2), S.Role("worker", 2, GPU, 2)])
    job = submit(alice, spec)

    run_until(Worker(), lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED))

    assert job.status == JobStatus.SUCCEEDED, job.status_reason
    given = {r.role + "-" + str(r.index): r.devices for r in job.replicas.all()}
    assert given == {"master-0": "0,1", "worker-0": "2,3", "worker-1": "4,5"}
    master, master_cuda = seen(job, "master-0")
    # The card nodes keep their host names (and minors): what is bound is that very card.
    assert master == {
        "nvidia0": "nvidia0",
        "nvidia1": "nvidia1",
        "nvidiactl": "nvidiactl",
        "nvidia-uvm": "nvidia-uvm",
        "nvidia-uvm-tools": "nvidia-uvm-tools",
        "nvidia-caps": ["nvidia-cap1"],
    }
    # CUDA counts the cards it can open from 0: the job's two cards are its 0 and 1.
    assert master_cuda == "0,1"
    for label, cards in (
        ("worker-0", {"nvidia2", "nvidia3"}),
        ("worker-1", {"nvidia4", "nvidia5"}),
    ):
        found, cuda = seen(job, label)
        assert cards_of(found) == cards and set(found) - cards == CONTROL
        assert cuda == "0,1"


def test_two_jobs_running_at_once_see_disjoint_cards(alice, devices, settings):
    command = f"{REPORT}; {UNTIL_THE_GATE_OPENS}"
    first = submit(alice, make_spec(command, roles=[S.Role("master", 1, GPU, 3)]))
    second = submit(alice, make_spec(command, roles=[S.Role("master", 1, GPU, 2)]))
    worker = Worker()

    run_until(
        worker,
        lambda: all(" DEVICES " in log_text(job, "master-0") for job in (first, second)),
    )
    assert status_of(first) == status_of(second) == JobStatus.RUNNING
    open_gate(settings)
    run_until(worker, lambda: status_of(first) == status_of(second) == JobStatus.SUCCEEDED)

    (one, one_cuda), (two, two_cuda) = seen(first, "master-0"), seen(second, "master-0")
    assert cards_of(one) == {"nvidia0", "nvidia1", "nvidia2"} and one_cuda == "0,1,2"
    assert cards_of(two) == {"nvidia3", "nvidia4"} and two_cuda == "0,1"


def test_a_cpu_only_replica_sees_no_card_nor_control_node(alice, devices):
    # The worker has cards; the MPI launcher (master) has none, in the same job. Only the
    # launcher runs the command: it reports, then has the worker report in its own sandbox
    # (as mpirun starts a rank there), whose output is the launcher's.
    spec = make_spec(
        f"{REPORT}; /etc/mpi/rsh worker-0 {shlex.quote(REPORT)}",
        framework=S.MPI,
        roles=[S.Role("master", 1), S.Role("worker", 1, GPU, 1)],
    )
    job = submit(alice, spec)

    run_until(Worker(), lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED))

    assert job.status == JobStatus.SUCCEEDED, job.status_reason
    launcher, worker = [x for x in log_text(job, "master-0").splitlines() if " DEVICES " in x]
    assert seen_in(launcher) == ({}, "")
    found, cuda = seen_in(worker)
    assert cards_of(found) == {"nvidia0"} and cuda == "0"


def test_cards_of_a_type_without_known_nodes_get_no_device(alice, devices, settings):
    # LOCAL_ACCELERATORS' demo cards: the runner knows no device node for them, and gives
    # none (it used to give every /dev/nvidia* to every replica).
    settings.LOCAL_ACCELERATORS = "baidu.com/a800_80g_cgpu=2"
    job = submit(
        alice, make_spec(REPORT, roles=[S.Role("master", 1, "baidu.com/a800_80g_cgpu", 2)])
    )

    run_until(Worker(), lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED))

    assert job.status == JobStatus.SUCCEEDED, job.status_reason
    assert seen(job, "master-0") == ({}, "0,1")


def test_a_card_node_is_found_by_the_drivers_device_minor(tmp_path, monkeypatch):
    # nvidia-smi (faked: this machine has none) numbers cards in PCI order; the driver's
    # minors may differ, and the node of nvidia-smi's card 0 is then not /dev/nvidia0.
    smi = tmp_path / "bin" / "nvidia-smi"
    smi.parent.mkdir()
    smi.write_text(
        "#!/bin/sh\n"
        '[ "$*" = "--query-gpu=pci.bus_id --format=csv,noheader" ] || exit 2\n'
        "printf '00000000:3B:00.0\\n00000000:86:00.0\\n00000000:AF:00.0\\n'\n"
    )
    smi.chmod(smi.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{smi.parent}:{os.environ['PATH']}")
    proc = tmp_path / "gpus"
    for folder, minor in (("0000:3b:00.0", 1), ("0000:86:00.0", 0)):
        (proc / folder).mkdir(parents=True)
        (proc / folder / "information").write_text(
            f"Model: \t\t NVIDIA A800\nIRQ:   \t\t 42\nDevice Minor: \t {minor}\n"
        )
    local.nvidia_bus_ids.cache_clear()
    try:
        assert local.nvidia_cards() == {GPU: 3}
        assert [local.nvidia_minor(i, proc_gpus=proc) for i in range(3)] == [1, 0, 2]
    finally:
        local.nvidia_bus_ids.cache_clear()


# -- device nodes themselves (real nodes, made with mknod: the tests run as root) ----------

# The job reports, one line each, what opening each path gave ("ok" or the errno's name),
# tries to make a device node where it can write, and to change what it was given.
PROBE = """
import errno, os, pty, sys

def tried(what, action):
    try:
        action()
        print(what, "ok", flush=True)
    except OSError as exc:
        print(what, errno.errorcode[exc.errno], flush=True)

def opened(path, flags):
    os.close(os.open(path, flags))

tried("own-card", lambda: opened("/dev/nvidia0", os.O_WRONLY))
tried("cap", lambda: opened("/dev/nvidia-caps/nvidia-cap1", os.O_WRONLY))
tried("other-card", lambda: opened("/mnt/other-card", os.O_RDWR))
tried("null", lambda: opened("/dev/null", os.O_RDWR))
tried("pty", lambda: [os.close(fd) for fd in pty.openpty()])
for folder in ("/tmp", "/dev/shm", "/workspace", "/dev", "/dev/nvidia-caps"):
    tried("mknod " + folder, lambda: os.mknod(folder + "/made", 0o20666, os.makedev(1, 3)))
tried("planted", lambda: opened("/workspace/planted", os.O_RDWR))
tried("write caps", lambda: open("/dev/nvidia-caps/written", "w").close())
tried("remove cap", lambda: os.unlink("/dev/nvidia-caps/nvidia-cap1"))
"""


def node_of(host: str, path: Path) -> None:
    """A character device node at `path` with the numbers of the host's `host` node."""
    os.mknod(path, 0o20666, os.stat(host).st_rdev)
    os.chmod(path, 0o666)  # as the driver makes them (the umask took some)


def reported(log: str) -> dict[str, str]:
    """What PROBE said, from the replica's log ("<time> <what> <result>" lines)."""
    found = {}
    for line in log.splitlines():
        what, _, result = line.partition(" ")[2].rpartition(" ")
        found[what] = result
    return found


@pytest.fixture
def real_nodes(settings, tmp_path):
    """Two cards whose nodes are real devices any process may open (the kernel log, opened
    for writing only and closed, and /dev/fuse), so an open that the device cgroup lets
    through succeeds, and one MIG capability node (the kernel log's again)."""
    if os.geteuid() != 0:
        pytest.skip("making device nodes needs root")
    for host, flags in (("/dev/kmsg", os.O_WRONLY), ("/dev/fuse", os.O_RDWR)):
        try:
            os.close(os.open(host, flags))
        except OSError as exc:
            pytest.skip(f"{host} does not open here: {exc}")
    folder = tmp_path / "dev"
    (folder / "nvidia-caps").mkdir(parents=True)
    node_of("/dev/kmsg", folder / "nvidia0")
    node_of("/dev/fuse", folder / "nvidia1")
    node_of("/dev/kmsg", folder / "nvidia-caps" / "nvidia-cap1")
    settings.LOCAL_DEVICE_DIR = str(folder)
    settings.LOCAL_ACCELERATORS = f"{GPU}=2"
    return folder


def sandboxed_pid(marker: str) -> int | None:
    """A process of the job's sandbox (its own mount namespace), found by its command: the
    job's shell, which bwrap starts once the sandbox is made. Not bwrap's own pid 1, which
    has the command on its command line too, and whose mount namespace, while it is still
    making the sandbox, has no sh to enter it with yet."""
    ours = os.readlink("/proc/self/ns/mnt")
    for pid in processes_with(marker):
        try:
            shell = Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"bash\0")
            if shell and os.readlink(f"/proc/{pid}/ns/mnt") != ours:
                return pid
        except OSError:
            continue
    return None


def run_probe(alice, settings, roles: list[S.Role], *, meanwhile=None) -> dict[str, str]:
    """PROBE's findings in a job of `roles`, run once `meanwhile(pid)` (if given, with a
    process of the job's sandbox) is done while the job waits."""
    (volume(settings) / "probe.py").write_text(PROBE)
    marker = f"probe-{uuid.uuid4().hex}"
    job = submit(
        alice,
        make_spec(f"{UNTIL_THE_GATE_OPENS}; {PY} /workspace/probe.py {marker}", roles=roles),
    )
    worker = Worker()
    run_until(worker, lambda: sandboxed_pid(marker) is not None, what="the job's sandbox")
    if meanwhile is not None:
        meanwhile(sandboxed_pid(marker))
    open_gate(settings)
    run_until(worker, lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED))
    log = log_text(job, "master-0")
    assert job.status == JobStatus.SUCCEEDED, (job.status_reason, log)
    return reported(log)


def test_a_job_opens_its_own_cards_node_but_not_another_cards_made_reachable(
    alice, settings, real_nodes
):
    """Defence in depth behind the bind mounts: the replica's device cgroup allows only its
    own cards' nodes, their control nodes and the standard ones. No job can reach another
    card's node (next test); here the test itself, as root, makes card 1's node inside the
    sandbox of a replica given card 0 (on a tmpfs it mounts there, which allows devices),
    and opening it is refused (EPERM) though the job holds the node."""
    from jobs import cgroups

    enforcement = cgroups.redetect()
    if enforcement.devices_root is None:
        pytest.skip(f"no device cgroup here (the bind mounts alone hold): {enforcement.describe()}")
    if not os.path.isdir("/mnt"):
        pytest.skip("no /mnt to mount the test's tmpfs on")
    own, other = (os.stat(real_nodes / f"nvidia{i}").st_rdev for i in (0, 1))
    allowed = []

    def make_other_card_node(inside: int) -> None:
        [job] = Job.objects.all()
        folder = enforcement.devices_root / job.public_id / "attempt-1" / "master-0"
        allowed.extend((folder / "devices.list").read_text().split("\n"))
        subprocess.run(
            [
                "nsenter",
                f"--target={inside}",
                "--mount",
                "sh",
                "-c",
                "mount -t tmpfs -o size=64k,mode=755 test /mnt && "
                f"umask 0 && mknod /mnt/other-card c {os.major(other)} {os.minor(other)}",
            ],
            check=True,
        )

    found = run_probe(
        alice, settings, [S.Role("master", 1, GPU, 1)], meanwhile=make_other_card_node
    )

    assert found["own-card"] == "ok" and found["cap"] == "ok", found
    assert found["other-card"] == "EPERM", found
    # The cgroup's list: bwrap's standard nodes, then the card's (its MIG node has the same
    # numbers here), nothing else.
    standard = ["c 1:3 rwm", "c 1:5 rwm", "c 1:7 rwm", "c 1:8 rwm", "c 1:9 rwm"]
    ptys = [f"c {major}:* rwm" for major in range(136, 144)]
    card = f"c {os.major(own)}:{os.minor(own)} rwm"
    assert [line for line in allowed if line] == [*standard, "c 5:0 rwm", "c 5:2 rwm", *ptys, card]
    # What bubblewrap's /dev gives every sandbox still works.
    assert found["null"] == "ok" and found["pty"] == "ok", found


def test_a_job_can_make_no_device_node_nor_open_one_left_in_its_volume(alice, settings, real_nodes):
    """Why a job cannot get another card's node by itself (README "A replica sees only its
    own cards"): making a node needs CAP_MKNOD, which every job lacks (EPERM wherever it
    can write; /dev itself is read-only), and every folder it can write or that the host
    shows it is mounted nodev, so a node someone left in a volume does not open (EACCES)."""
    node_of("/dev/fuse", volume(settings) / "planted")

    found = run_probe(alice, settings, [S.Role("master", 1)])

    for folder in ("/tmp", "/dev/shm", "/workspace"):
        assert found[f"mknod {folder}"] == "EPERM", found
    assert found["mknod /dev"] == "EROFS", found
    assert found["planted"] == "EACCES", found
    # A CPU-only replica has no card node at all.
    assert found["own-card"] == "ENOENT", found


def test_a_job_adds_nothing_to_nor_removes_anything_from_the_hosts_nvidia_caps(
    alice, settings, real_nodes
):
    """A job of a worker run as root is uid 0 without capabilities, and owned the host's
    /dev/nvidia-caps when the folder was bound as it is: it could write files into it and
    remove the host's capability nodes. Its nodes are bound one by one into a folder of the
    sandbox's own, read-only; they still open."""
    found = run_probe(alice, settings, [S.Role("master", 1, GPU, 1)])

    assert found["own-card"] == "ok" and found["cap"] == "ok", found
    assert found["write caps"] == "EROFS" and found["remove cap"] == "EROFS", found
    assert found["mknod /dev/nvidia-caps"] == "EROFS", found
    assert [p.name for p in (real_nodes / "nvidia-caps").iterdir()] == ["nvidia-cap1"]


@pytest.fixture
def driver_folder(settings):
    """A stand-in for the driver's /proc/driver/nvidia/gpus, three cards with minors 0-2,
    in a host folder jobs see (the host's tree, read-only; /tmp is each job's own)."""
    folder = Path(tempfile.mkdtemp(prefix="gpus-", dir="/var/tmp"))
    for bus, minor in (("0000:3b:00.0", 0), ("0000:86:00.0", 1), ("0000:af:00.0", 2)):
        (folder / bus).mkdir()
        (folder / bus / "information").write_text(
            f"Model: \t\t NVIDIA A800\nBus Location: \t {bus}\nDevice Minor: \t {minor}\n"
        )
    settings.LOCAL_NVIDIA_GPUS_DIR = str(folder)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_the_drivers_card_folder_lists_only_the_replicas_own_cards(alice, devices, driver_folder):
    # /proc/driver/nvidia/gpus listed every card of the machine in every job.
    show = (
        f'{PY} -c \'import json, os; d = "{driver_folder}"; print("GPUS", json.dumps('
        '{n: open(f"{d}/{n}/information").read().split("Bus Location:")[1].split()[0] '
        "for n in os.listdir(d)}))'"
    )
    # The launcher lists, then has the worker list in its own sandbox (its output the
    # launcher's): only the launcher runs an MPI job's command.
    spec = make_spec(
        f"{show}; /etc/mpi/rsh worker-0 {shlex.quote(show)}",
        framework=S.MPI,
        roles=[S.Role("master", 1), S.Role("worker", 1, GPU, 2)],
    )
    job = submit(alice, spec)

    run_until(Worker(), lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED))

    assert job.status == JobStatus.SUCCEEDED, job.status_reason
    launcher, worker = [
        json.loads(x.split(" GPUS ", 1)[1])
        for x in log_text(job, "master-0").splitlines()
        if " GPUS " in x
    ]
    # Cards 0 and 1 (minors 0 and 1), each entry the host's own.
    assert worker == {"0000:3b:00.0": "0000:3b:00.0", "0000:86:00.0": "0000:86:00.0"}
    # The CPU-only launcher sees the folder, empty.
    assert launcher == {}
    assert len(list(driver_folder.iterdir())) == 3


def test_a_job_needing_more_cards_than_have_their_nodes_waits_naming_them_and_starts_once_back(
    alice, settings, tmp_path
):
    # qa95: nvidia.com/gpu in LOCAL_ACCELERATORS on a machine without /dev/nvidia*: each
    # replica failed in bwrap ("Can't find source path /dev/nvidia0"), the job's reason only
    # "worker-0 exited with code 1." fix126 failed it from Queued; review58: nodes go missing
    # for a while (the driver reloaded), so it waits Queued, saying why, and starts once they
    # are back.
    from jobs.scheduler import CARD_NODES_MISSING, why_waiting

    folder = tmp_path / "dev"
    folder.mkdir()
    for name in ("nvidia1", "nvidia3"):  # cards 1's and 3's nodes are there, 0's and 2's not
        (folder / name).write_text(name)
    settings.LOCAL_DEVICE_DIR = str(folder)
    settings.LOCAL_ACCELERATORS = f"{GPU}=4"
    job = submit(alice, make_spec(REPORT, roles=[S.Role("master", 1, GPU, 3)]))
    worker = Worker()
    worker.tick()
    worker.tick()

    assert status_of(job) == JobStatus.QUEUED and job.started_at is None
    reasons = list(job.events.values_list("reason", flat=True))
    assert reasons.count(CARD_NODES_MISSING) == 1  # said once, not once a pass
    assert "Started" not in reasons and "StartFailed" not in reasons
    said = (
        "Waiting for the device nodes of its cards: it needs 3 NVIDIA GPU (nvidia.com/gpu) cards, and only 2 "
        f"of the local pool's have their device node on this machine now (missing: "
        f"{folder}/nvidia0, {folder}/nvidia2; the NVIDIA driver is not loaded, or is making "
        "them again). It starts by itself once they are back. Please contact an administrator."
    )
    with translation.override("en"):
        assert job.events.get(reason=CARD_NODES_MISSING).message_shown == said
        assert why_waiting(job) == said
    with translation.override("zh-hans"):
        assert why_waiting(job).startswith("等待卡的设备节点：")

    for name in ("nvidia0", "nvidia2"):
        (folder / name).write_text(name)
    run_until(worker, lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED))

    assert job.status == JobStatus.SUCCEEDED, job.status_reason
    assert job.local_run.devices == {GPU: [0, 1, 2]}


def test_a_job_waits_for_cards_whose_nodes_are_there_rather_than_take_one_whose_node_is_missing(
    alice, settings, tmp_path
):
    """fix126: card 0's node is missing, card 1's there but busy: the job waits for card 1
    (card 0 is not offered), and starts on it once it is idle; it is not failed for card 0."""
    folder = tmp_path / "dev"
    folder.mkdir()
    (folder / "nvidia1").write_text("nvidia1")
    settings.LOCAL_DEVICE_DIR = str(folder)
    settings.LOCAL_ACCELERATORS = f"{GPU}=2"
    holder = submit(alice, make_spec(UNTIL_THE_GATE_OPENS, roles=[S.Role("master", 1, GPU, 1)]))
    worker = Worker()
    run_until(worker, lambda: status_of(holder) == JobStatus.RUNNING)
    job = submit(alice, make_spec(REPORT, roles=[S.Role("master", 1, GPU, 1)]))
    worker.tick()

    assert status_of(job) == JobStatus.QUEUED
    assert not job.events.filter(reason="StartFailed").exists()

    open_gate(settings)
    run_until(worker, lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED))

    assert job.status == JobStatus.SUCCEEDED, job.status_reason
    assert job.local_run.devices == {GPU: [1]}


def test_the_start_checks_warn_of_offered_cards_whose_nodes_are_missing(settings, tmp_path):
    folder = tmp_path / "dev"
    folder.mkdir()
    settings.LOCAL_DEVICE_DIR = str(folder)
    settings.LOCAL_ACCELERATORS = f"{GPU}=2"

    (warning,) = card_nodes_missing()

    assert warning.id == "jobs.W004"
    assert f"({folder}/nvidia0, {folder}/nvidia1)" in warning.msg
    # Once the nodes are there, or for demo cards of another type, nothing is said.
    for name in ("nvidia0", "nvidia1"):
        (folder / name).write_text(name)
    assert card_nodes_missing() == []
    settings.LOCAL_ACCELERATORS = "baidu.com/a800_80g_cgpu=2"
    (folder / "nvidia0").unlink()
    assert card_nodes_missing() == []


def test_the_pools_page_says_which_cards_have_no_device_node_now_and_nothing_once_they_are_back(
    alice_client, settings, tmp_path
):
    # review58: the cards are simply not idle; the pool says why, for whoever reads its figures.
    folder = tmp_path / "dev"
    folder.mkdir()
    (folder / "nvidia0").write_text("nvidia0")
    settings.LOCAL_DEVICE_DIR = str(folder)
    settings.LOCAL_ACCELERATORS = f"{GPU}=3"

    page = html.unescape(alice_client.get("/pools/", HTTP_ACCEPT_LANGUAGE="en").content.decode())

    assert (
        f"2 of the pool's NVIDIA GPU (nvidia.com/gpu) cards have no device node on this machine now (missing: "
        f"{folder}/nvidia1, {folder}/nvidia2): they are not idle, and a job needing them waits "
        "queued until the nodes are back (the NVIDIA driver loaded). Please tell an "
        "administrator."
    ) in page
    for name in ("nvidia1", "nvidia2"):
        (folder / name).write_text(name)
    assert (
        "device node" not in alice_client.get("/pools/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    )
