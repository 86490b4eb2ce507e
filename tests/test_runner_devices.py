"""A local replica sees only the accelerator devices it was given (jobs.sandbox, devices).

This machine has no cards: LOCAL_DEVICE_DIR points the runner at a folder of stand-in
nodes (regular files, which bwrap binds as it binds a device), each holding its own name,
and real jobs report what they find under /dev."""

from __future__ import annotations

import json
import os
import stat

import pytest

from jobs import spec as S
from jobs.backends import local
from jobs.models import JobStatus
from jobs.worker import Worker

from .runner_helpers import (
    PY,
    UNTIL_THE_GATE_OPENS,
    log_text,
    make_spec,
    open_gate,
    run_until,
    runner_settings,  # noqa: F401
    status_of,
    submit,
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
    line = next(x for x in log_text(job, label).splitlines() if " DEVICES " in x)
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
    # The worker has cards; the MPI launcher (master) has none, in the same job.
    spec = make_spec(
        REPORT,
        framework=S.MPI,
        roles=[S.Role("master", 1), S.Role("worker", 1, GPU, 1)],
    )
    job = submit(alice, spec)

    run_until(Worker(), lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED))

    assert job.status == JobStatus.SUCCEEDED, job.status_reason
    assert seen(job, "master-0") == ({}, "")
    found, cuda = seen(job, "worker-0")
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
