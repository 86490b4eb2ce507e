"""The embedded local runner (pool "local"): runs each replica as a process on this machine."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
from collections.abc import Callable, Iterable
from datetime import datetime
from functools import cache, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from django.conf import settings
from django.utils import timezone
from django.utils.functional import lazy
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, gettext_noop, ngettext

from jobs import logs as job_logs
from jobs import texts
from jobs.runtime_env import (
    HYDRA_HOSTFILE_PATH,
    LOCAL_MPI_RSH_AGENT,
    ReplicaRef,
    replica_environment,
    shown_group_task,
)
from jobs.sandbox import (
    OWN_TOP_LEVEL,
    SandboxError,
    is_within,
    missing_folder_problem,
    outside_volume_problem,
    read_only_missing_message,
    read_only_parent_lacking,
    read_only_parent_message,
    resolve_in_root,
    said_here,
)
from jobs.spec import (
    CORES_PER_CARD,
    MPI,
    PYTORCH,
    TENSORFLOW,
    card_shown,
    normalised_mount_path,
    tensorflow_has_only_ps,
    tensorflow_only_ps_message,
)
from jobs.texts import list_words
from jobs.volume_access import HostVolume, parse_volumes

from .base import AcceleratorStock, Backend, BackendError, Pool, Volume

if TYPE_CHECKING:
    from jobs.models import Job
    from jobs.scheduler import NextPass
    from jobs.spec import JobSpec

POOL_ID = "local"
POOL_NAME = "本机 Local"


def jobs_on_host_network() -> bool:
    """Whether local jobs run on this machine's network (LOCAL_JOB_NETWORK=host, the default):
    every replica then shares the host's network namespace, whatever the spec's hostNetwork
    (an AIHC field the local pool does not read) says. Decided (qa78): the review and the
    API's DescribeJob say what the pool does, the request keeps the field as it was given."""
    return settings.LOCAL_JOB_NETWORK == "host"


def job_on_host_network(job: Job) -> bool:
    """Whether a local job's replicas run (or ran) on this machine's network: as the runner
    recorded when its last attempt started (LocalRun.host_network), whatever the setting says
    since (left55: a job page said today's setting of a job run under another); a job not
    started yet, or started before 0045, as the setting says now."""
    from jobs.models import LocalRun

    try:
        recorded = job.local_run.host_network
    except LocalRun.DoesNotExist:
        recorded = None
    return jobs_on_host_network() if recorded is None else recorded


class _LocalStock(AcceleratorStock):
    """A local card type's stock whose idle count is read on first use (LocalBackend.pools)."""

    def __init__(self, *, type: str, total: int, free: Callable[[], dict[str, list[int]]]):
        self.type = type
        self.total = total
        self._free = free

    @property  # type: ignore[override]
    def idle(self) -> int:
        return len(self._free().get(self.type, []))


# Shown in the environment preview for what the runner decides only when an attempt starts.
PORT_AT_START = gettext_lazy("<free port>")
NVIDIA_RESOURCE = "nvidia.com/gpu"


def parse_pairs(value: str) -> list[tuple[str, str]]:
    pairs = []
    for item in value.split(","):
        if "=" in item:
            key, _, val = item.partition("=")
            pairs.append((key.strip(), val.strip()))
    return pairs


@cache
def nvidia_bus_ids() -> list[str]:
    """The PCI address of each card nvidia-smi reports, in its order (asked once per process):
    the local pool's nvidia.com/gpu card N is the N-th."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return []
    try:
        out = subprocess.run(
            [smi, "--query-gpu=pci.bus_id", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.strip() for line in out.splitlines() if line.strip()]


def nvidia_cards() -> dict[str, int]:
    """Cards nvidia-smi reports."""
    ids = nvidia_bus_ids()
    return {NVIDIA_RESOURCE: len(ids)} if ids else {}


def detected_accelerators() -> dict[str, int]:
    """Cards per type: from nvidia-smi when present, otherwise LOCAL_ACCELERATORS."""
    return nvidia_cards() or {
        name: int(count)
        for name, count in parse_pairs(settings.LOCAL_ACCELERATORS)
        if count.isdigit()
    }


# What the NVIDIA driver keeps about each card, in a folder named by its PCI address
# (LOCAL_NVIDIA_GPUS_DIR: this path but in tests).
NVIDIA_PROC_GPUS = Path("/proc/driver/nvidia/gpus")
# The nodes every CUDA program opens besides its cards' (as the NVIDIA container toolkit
# binds them): the driver's control node, unified memory and its tools, the display driver's
# (modeset), and the MIG capability nodes (a folder). Bound where they exist.
NVIDIA_CONTROL_NODES = ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset")
NVIDIA_CAPS_FOLDER = "nvidia-caps"


def nvidia_minor(index: int, *, proc_gpus: Path | None = None) -> int:
    """The device minor of nvidia.com/gpu card `index`: its node is /dev/nvidia<minor>.

    nvidia-smi numbers cards in PCI bus order; the driver gives minors in the order it
    probed them, often the same but not always (the NVIDIA container toolkit asks NVML for
    the minor for this reason). Read here from the driver's own record of the card,
    /proc/driver/nvidia/gpus/<PCI address>/information ("Device Minor: 3"). Where there is
    none (cards from LOCAL_ACCELERATORS, named nvidia.com/gpu on a machine whose nvidia-smi
    is missing or failed) the minor is taken to be the index."""
    if proc_gpus is None:
        proc_gpus = Path(settings.LOCAL_NVIDIA_GPUS_DIR)
    ids = nvidia_bus_ids()
    if index >= len(ids):
        return index
    # nvidia-smi writes "00000000:3B:00.0", the driver's folder is "0000:3b:00.0".
    domain, _, rest = ids[index].partition(":")
    try:
        folder = f"{int(domain, 16):04x}:{rest.lower()}"
        text = (proc_gpus / folder / "information").read_text()
    except (ValueError, OSError):
        return index
    minor = _device_minor(text)
    return index if minor is None else minor


def accelerator_devices(
    card_type: str, cards: list[int], *, device_dir: str | None = None
) -> list[tuple[str, str]]:
    """The device nodes a replica given `cards` of `card_type` is to see, as (host path,
    path in the sandbox): only its own cards' and the control nodes they need, none for a
    CPU-only replica. `device_dir` (LOCAL_DEVICE_DIR, /dev but in tests) is where the host's
    nodes are read from; in the sandbox they are always under /dev, with the host's names.

    Only NVIDIA cards have known nodes: the type nvidia-smi's cards are offered as. Other
    types (LOCAL_ACCELERATORS' demo cards; Kunlun /dev/xpu*, Ascend /dev/davinci* cards are
    not detected by this runner) get no device at all, so a job cannot reach a card nobody
    allocated to it (README, "What a job gets")."""
    if card_type != NVIDIA_RESOURCE or not cards:
        return []
    folder = device_dir if device_dir is not None else settings.LOCAL_DEVICE_DIR
    names = [f"nvidia{nvidia_minor(index)}" for index in cards]
    names += [name for name in NVIDIA_CONTROL_NODES if os.path.exists(os.path.join(folder, name))]
    # The MIG capability nodes one by one, as NVIDIA's container toolkit binds them, not
    # their folder: bound as a folder, the host's /dev/nvidia-caps would be writable to a job
    # of a worker run as root (it owns it; bwrap cannot make a device bind read-only), which
    # could then add files to it or remove the host's nodes. A node made there after the
    # replica started is not in its sandbox (nor allowed by its device cgroup).
    with contextlib.suppress(OSError):
        caps = os.path.join(folder, NVIDIA_CAPS_FOLDER)
        names += [
            os.path.join(NVIDIA_CAPS_FOLDER, entry.name)
            for entry in sorted(os.scandir(caps), key=lambda e: e.name)
            if not entry.is_dir(follow_symlinks=False)
        ]
    return [(os.path.join(folder, name), f"/dev/{name}") for name in names]


def missing_card_nodes(
    card_type: str | None, cards: Iterable[int], *, device_dir: str | None = None
) -> list[str]:
    """The host paths of the card nodes (/dev/nvidia<minor>) of `cards` of `card_type` that
    do not exist: `nvidia.com/gpu` named in LOCAL_ACCELERATORS on a machine without an NVIDIA
    driver (qa95: bwrap then failed each replica, "Can't find source path /dev/nvidia0").
    Other card types are demo cards with no node to find (accelerator_devices): none."""
    if card_type != NVIDIA_RESOURCE:
        return []
    folder = device_dir if device_dir is not None else settings.LOCAL_DEVICE_DIR
    paths = [os.path.join(folder, f"nvidia{nvidia_minor(index)}") for index in cards]
    return [path for path in paths if not os.path.exists(path)]


def cards_without_node(card_type: str, cards: Iterable[int]) -> list[int]:
    """Those of `cards` whose node missing_card_nodes finds missing."""
    return [index for index in cards if missing_card_nodes(card_type, [index])]


def _device_minor(information: str) -> int | None:
    """The "Device Minor" of a card's information file of the driver."""
    for line in information.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "Device Minor" and value.strip().isdigit():
            return int(value.strip())
    return None


def nvidia_driver_cards(
    card_type: str | None, cards: list[int], *, proc_gpus: str | None = None
) -> tuple[str, list[str]] | None:
    """What a replica given `cards` of `card_type` sees of the driver's per-card folder
    (/proc/driver/nvidia/gpus; LOCAL_NVIDIA_GPUS_DIR, the same path in the sandbox): None
    where the host has no such folder (no NVIDIA driver), else (the folder, the names of its
    entries whose "Device Minor" is one of the replica's cards' minors, the very nodes its
    /dev holds). A CPU-only replica, or one of another card type, gets none of the entries;
    an entry without a readable minor is not shown (decision: hide what cannot be matched)."""
    folder = proc_gpus if proc_gpus is not None else settings.LOCAL_NVIDIA_GPUS_DIR
    if not os.path.isdir(folder):
        return None
    own: list[str] = []
    if card_type == NVIDIA_RESOURCE and cards:
        minors = {nvidia_minor(index, proc_gpus=Path(folder)) for index in cards}
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            entries = []
        for entry in entries:
            try:
                minor = _device_minor(Path(entry.path, "information").read_text())
            except OSError:
                continue
            if minor in minors:
                own.append(entry.name)
    return folder, own


def visible_devices(cards: list[int]) -> str:
    """CUDA_VISIBLE_DEVICES for a replica given `cards`: 0..n-1, as its CUDA numbers them.

    The sandbox holds only the replica's own card nodes, and CUDA counts only the cards it
    can open, from 0: with host cards 3 and 5 a job sees two cards, 0 and 1, as in a
    container of NVIDIA's toolkit or a Kubernetes pod (where the device plugin sets
    NVIDIA_VISIBLE_DEVICES and CUDA numbers from 0). The host's numbers ("3,5") would name
    cards CUDA does not have, and it would then see none. The host's numbers are the
    replica's cards on the job page (JobReplica.devices)."""
    return ",".join(str(i) for i in range(len(cards)))


def local_queues() -> list[str]:
    return list(settings.LOCAL_QUEUES) or ["default"]


def host_volumes() -> list[HostVolume]:
    """Every volume LOCAL_VOLUMES lists, whoever may mount it (jobs.volume_access says who)."""
    return list(_parsed_volumes(settings.LOCAL_VOLUMES))


@lru_cache(maxsize=4)
def _parsed_volumes(value: str) -> tuple[HostVolume, ...]:
    """LOCAL_VOLUMES read once per value, not at each of the two to four reads a wizard page
    makes (the pool, the volumes offered to the owner, the review's checks): the setting, not
    anyone's data, keyed by its text so a changed setting (tests) is read anew. The volumes are
    frozen dataclasses; each caller gets a list of its own."""
    return tuple(parse_volumes(value))


# Where the runner puts what each replica needs: a volume mounted there would hide it (QA 37).
# /tmp is each replica's own folder (its HOME and working folder, under its /tmp cap); an MPI
# worker's agent listens in its /tmp/.mpi, and /etc/mpi holds the hostfile, rsh and the agents.
REPLICA_TMP = "/tmp"
MPI_RUNNER_PATHS = ("/tmp/.mpi", "/etc/mpi")


def too_many_replicas(spec: JobSpec) -> str:
    """Why this machine will not run so many replicas of one job (LOCAL_MAX_REPLICAS), or "".
    They would all start here, one after another in the worker's loop."""
    if not spec.counts_in_range():
        # Each count out of range has its own message (0 to 1000); a total of them would be
        # a second one on the same field, counting a negative count in (qa78).
        return ""
    count = spec.total_replicas
    if count <= settings.LOCAL_MAX_REPLICAS:
        return ""
    return texts.said_here(
        gettext_noop(
            "The local pool runs at most %(max)d replicas of one job, all roles together, and "
            "this job has %(count)d: lower the replica counts, or choose a cloud resource pool."
        ),
        max=settings.LOCAL_MAX_REPLICAS,
        count=count,
    )


def tensorflow_without_end(spec: JobSpec) -> str:
    """Why a TensorFlow job of ps (and evaluator) alone is not run here, or "". With neither
    chief nor worker the job ends when every replica has exited
    (runner.tensorflow_result_replica), and a parameter server serves until it is stopped:
    such a job ran until its time limit (qa58/qa60), as Kubernetes refuses. Checked at submit
    (check_spec) and when a job queued before the rule starts (runner.launch_attempt)."""
    counts = {role.name: role.replicas for role in spec.roles}
    if (
        spec.framework != TENSORFLOW
        or counts.get("ps", 0) <= 0
        or counts.get("chief", 0) > 0
        or counts.get("worker", 0) > 0
    ):
        return ""
    if tensorflow_has_only_ps(spec):
        # Named as what the job has (no evaluator), in the spec rule's own words (qa78).
        return tensorflow_only_ps_message()
    return texts.said_here(
        gettext_noop(
            "A TensorFlow job of ps and evaluator alone never succeeds here: without a chief or "
            "a worker the job ends when all its replicas have exited, and a parameter server "
            "serves until it is stopped, so it would run until its time limit. Add a chief or a "
            "worker, or leave out the ps."
        )
    )


def runner_path_problem(mount_path: str, *, framework: str) -> str:
    """Why a volume cannot be mounted at `mount_path` on this machine, or "" when it can.

    A volume at /tmp was shared by every replica as its HOME and working folder (their
    caches written at once, out of the /tmp cap's sight), and an MPI job's workers put their
    agents' sockets in the one folder, where the launcher never found them: the job ran on
    for ever. One at /etc/mpi had the runner write its hostfile and agent folders into the
    volume (or, read-only, failed every replica at start, blaming the job's own writes)."""
    path = normalised_mount_path(mount_path)
    if path is None:
        return ""  # the spec's own rules say what is wrong with it
    if path == REPLICA_TMP:
        return texts.said_here(
            gettext_noop(
                "On the local pool /tmp is each replica's own folder (its home and working "
                "folder): mount the volume elsewhere, e.g. /workspace, or below it, e.g. "
                "/tmp/data."
            )
        )
    if framework == MPI:
        for folder in MPI_RUNNER_PATHS:
            if is_within(path, folder):
                return texts.said_here(
                    gettext_noop(
                        "On the local pool %(folder)s holds what MPI needs to start the job's "
                        "ranks (the hostfile and each worker's agent): mount the volume "
                        "elsewhere, e.g. /workspace."
                    ),
                    folder=folder,
                )
    return ""


# Said on the mount row at submit, and by the runner at start for a job queued before that
# check or whose machine changed since (jobs.runner.volume_mounts), instead of bwrap's words.
FILE_IN_THE_WAY = gettext_noop(
    "A local job sees this machine's own files as its root, and there %(path)s is a file, not "
    "a folder: a volume cannot be mounted over it. Mount it at a folder, or at a path not "
    "there yet, e.g. /workspace."
)


def host_file_in_the_way_of(mount_path: str, mount_paths: Iterable[str]) -> str:
    """host_file_in_the_way of one of a job's mount paths (`mount_paths`: all of them), ""
    when it lies below another: what is there is that volume's, not the machine's."""
    if any(other != mount_path and is_within(mount_path, other) for other in mount_paths):
        return ""
    return host_file_in_the_way(mount_path)


def host_file_in_the_way(mount_path: str) -> str:
    """The path of this machine, `mount_path` or a folder above it, that is there and is no
    folder (a file such as /etc/passwd, a device), or "" when there is none. A local job sees
    this machine's own tree as its root (jobs.sandbox), and bwrap makes a mount point as a
    folder: over a file the job failed at start ("bwrap: Can't mkdir /etc/passwd: Not a
    directory", qa100). The sandbox's own top folders (/tmp, /proc, /dev, /sys) are not
    the machine's, nor what is below a folder it hides (_below_hidden_folder)."""
    parts = Path(mount_path).parts
    if len(parts) < 2 or parts[1] in OWN_TOP_LEVEL:
        return ""
    for depth in range(2, len(parts) + 1):
        path = os.path.join(*parts[:depth])
        if not os.path.exists(path):
            return ""  # made as a folder at start, with any below it
        if not os.path.isdir(path):
            return "" if _below_hidden_folder(path) else path
    return ""


def _below_hidden_folder(path: str) -> bool:
    """Whether a folder above `path` is one a job sees empty (jobs.runner.hidden_host_paths:
    the console's state, the worker's home, /root, /run, other volumes): the mount is made in
    that empty folder, and what the machine has below it is no submitter's to learn (fix110
    named /root/.ssh/id_ed25519 for a mount path below it, telling that it was there). Read
    only when a file is in the way: /etc is scanned for its private entries."""
    from jobs.runner import hidden_host_paths

    folders = [
        real
        for hidden in hidden_host_paths()
        if os.path.isdir(real := os.path.realpath(hidden))
        and len(parts := Path(real).parts) >= 2
        and parts[1] not in OWN_TOP_LEVEL  # (as jobs.sandbox covers them: not "/")
    ]
    above = [os.path.realpath(parent) for parent in Path(path).parents]
    return any(is_within(parent, folder) for parent in above for folder in folders)


def _waiting_note_now(plan: Callable[[], NextPass]) -> str:
    from jobs.scheduler import held_for_waiting_note

    return " ".join(note for note in (card_nodes_note(), held_for_waiting_note(plan())) if note)


def card_nodes_note() -> str:
    """What the local pool says of its `nvidia.com/gpu` cards whose device node is missing
    now (the driver not loaded, or reloading), in the reader's language; "" when none is.
    They are not idle and jobs needing them wait Queued (jobs.scheduler, CARD_NODES_MISSING):
    said on the pool, so that whoever reads its figures, staff first, sees why without opening
    a waiting job (review58)."""
    total = detected_accelerators().get(NVIDIA_RESOURCE, 0)
    missing = missing_card_nodes(NVIDIA_RESOURCE, range(total))
    if not missing:
        return ""
    return ngettext(
        "%(count)d of the pool's %(card)s cards has no device node on this machine now "
        "(missing: %(nodes)s): it is not idle, and a job needing it waits queued until the "
        "node is back (the NVIDIA driver loaded). Please tell an administrator.",
        "%(count)d of the pool's %(card)s cards have no device node on this machine now "
        "(missing: %(nodes)s): they are not idle, and a job needing them waits queued until "
        "the nodes are back (the NVIDIA driver loaded). Please tell an administrator.",
        len(missing),
    ) % {"count": len(missing), "card": card_shown(NVIDIA_RESOURCE), "nodes": list_words(missing)}


# The pool's note, read (the next pass asked for) only when a page shows it. Made once: Django's
# lazy() defines a class each time it is called (~0.1-0.2 ms, on every page looking a pool up).
_waiting_note = lazy(_waiting_note_now, str)


class LocalBackend(Backend):
    name = "local"

    def pool_names(self) -> dict[str, str]:
        # Without its idle cards (a query) or nvidia-smi.
        return {POOL_ID: POOL_NAME}

    def pools(self) -> list[Pool]:
        from jobs.scheduler import idle_for_new_jobs, next_pass

        # Idle is what the scheduler could hand a new job now: the cards no dispatched local
        # job holds (LocalRun.devices), less those its next pass hands the Queued jobs whose
        # turn it is (a standalone job must not be told it fits cards a job queued before it
        # is about to get), and none while a standalone job waits first in line (the note
        # says for what). Read when a figure or the note is first asked for, once for all of
        # the pool's cards: most wizard steps and partials look the pool up for its queues,
        # volumes or totals and show no idle count, and need not query the jobs.
        plan = cache(next_pass)
        stock: list[AcceleratorStock] = [
            _LocalStock(type=name, total=total, free=lambda: idle_for_new_jobs(plan()))
            for name, total in sorted(detected_accelerators().items())
        ]
        return [
            Pool(
                id=POOL_ID,
                name=POOL_NAME,
                backend=self.name,
                queues=local_queues(),
                accelerators=stock,
                volumes=[
                    # Every volume: the wizard offers a user those they may mount
                    # (jobs.volume_access.pool_for_user); staff pages show them all.
                    Volume(type="hostpath", name=v.name, label=str(v.root), read_only=v.read_only)
                    for v in host_volumes()
                ],
                storage_types=["hostpath"],
                as_of=timezone.now(),
                note=_waiting_note(plan),
                next_pass=plan,
            )
        ]

    def check_spec(self, spec: JobSpec) -> dict[str, list[str]]:
        """Refuses what this machine cannot serve: other storage types, unknown volumes,
        sub-paths outside a volume's root, unknown queues, more cards or cores than exist."""
        errors: dict[str, list[str]] = {}

        def err(path: str, message: str) -> None:
            errors.setdefault(path, []).append(message)

        if spec.queue not in local_queues():
            err(
                "queue",
                _("The local pool has no queue “%(queue)s”; choose one of: %(queues)s.")
                % {"queue": spec.queue, "queues": list_words(local_queues())},
            )
        if spec.privileged:
            # Each replica runs in a bubblewrap sandbox as an unprivileged user, with only its
            # own cards' device nodes (README "What a job gets"): there is no privileged
            # container to give, and running it otherwise than asked is what this refuses.
            err(
                "jobSpec.privileged",
                _(
                    "The local runner cannot run privileged containers: each replica runs "
                    "sandboxed, without the host's devices. Turn privileged mode off, or choose "
                    "a pool that allows it."
                ),
            )
        if "nodeFT" in spec.alert.items:
            # QA 59: taken, it was never sent (an alert that can never arrive is refused, as
            # one without a channel): a job here has one node, this machine, and its failure
            # stops the worker with it; what it did is alerted once the worker is back.
            err(
                "alertConfig.alertItems",
                _(
                    "“A node of the job fails” never comes from the local pool: its jobs run "
                    "on the worker's own machine, and a failure of that machine stops the "
                    "worker too. Once the worker is back, a job the failure ended alerts as "
                    "“Job fails”, or “Job restarted by fault tolerance” when it is restarted. Leave "
                    "this event out."
                ),
            )
        if "jobFT" in spec.alert.items and not spec.fault_tolerance and spec.framework != PYTORCH:
            # Not sent to step 5: fault tolerance turned on there is refused (console_rules).
            err(
                "alertConfig.alertItems",
                _(
                    "The local pool alerts “Job restarted by fault tolerance” when it restarts a job, "
                    "and only a job with fault tolerance on is restarted, which is for PyTorch "
                    "jobs only: on this job this alert never comes. Leave this event out."
                ),
            )
        elif "jobFT" in spec.alert.items and not spec.fault_tolerance:
            # qa72: jobFT is sent when the runner restarts a job (runner._restarted), which
            # only fault tolerance does (restart_limit is 0 without it): taken, it never came.
            err(
                "alertConfig.alertItems",
                _(
                    "The local pool alerts “Job restarted by fault tolerance” when it restarts a job, "
                    "and only a job with fault tolerance on is restarted: without it this "
                    "alert never comes. Turn fault tolerance on in step 5 (Fault tolerance & "
                    "diagnostics; PyTorch only), or leave this event out."
                ),
            )
        if problem := too_many_replicas(spec):
            # On the role with the most instances, where lowering them does the most.
            most = max(range(len(spec.roles)), key=lambda i: spec.roles[i].replicas)
            err(f"roles[{most}].replicas", problem)
        for i, role in enumerate(spec.roles):
            # TensorFlow's own rule (multi_worker_util: "There must be at most one 'evaluator'
            # job"): the evaluator's TF_CONFIG lists its role, which TF refuses with two.
            if spec.framework == TENSORFLOW and role.name == "evaluator" and role.replicas > 1:
                err(f"roles[{i}].replicas", _("TensorFlow allows at most 1 evaluator."))
        if (problem := tensorflow_without_end(spec)) and not tensorflow_has_only_ps(spec):
            # A job of ps alone has the spec's message already, saying the same (qa78).
            err("roles", problem)
        volumes = {v.name: v for v in host_volumes()}
        mounted: list[tuple[int, str, str, bool]] = []  # (row, mount path, folder, read-only)
        for i, ds in enumerate(spec.datasources):
            path = f"datasources[{i}]"
            if ds.type != "hostpath":
                err(
                    f"{path}.type",
                    _(
                        "The local runner can only mount hostpath volumes; “%(type)s” storage "
                        "needs a cloud resource pool."
                    )
                    % {"type": ds.type},
                )
                continue
            if problem := runner_path_problem(ds.mount_path, framework=spec.framework):
                err(f"{path}.mountPath", problem)
            volume = volumes.get(ds.name)
            if volume is None:
                err(
                    f"{path}.name",
                    _("There is no local volume “%(name)s”.") % {"name": ds.name},
                )
                continue
            try:
                volume.root.mkdir(parents=True, exist_ok=True)
            except OSError:
                err(f"{path}.name", _("The volume's folder cannot be created on this machine."))
                continue
            try:
                source = resolve_in_root(volume.root, ds.source_path)
                found = source.is_dir()
                a_file = not found and source.exists()
            except SandboxError:
                # A '..' is refused by the spec's own rule on this field: said once, not
                # also as leaving the volume (qa101: `../../etc` was two of "3 problems").
                if ".." not in (ds.source_path or "").split("/"):
                    err(
                        f"{path}.sourcePath",
                        outside_volume_problem(volume.root, ds.source_path, ds.name),
                    )
                continue
            except ValueError:
                # A NUL, which no path can hold: the spec's own rules refuse it on this field.
                continue
            except OSError:
                # A name too long for the file system, a folder this machine may not read:
                # as far as the job could tell, the path does not exist.
                found = a_file = False
            if a_file:
                # A single file (a tokenizer, a dataset archive) is there, but bwrap binds the
                # folder descriptor it is given: "does not exist" sent people looking for a
                # typo in a path they could see (QA 37).
                err(
                    f"{path}.sourcePath",
                    _(
                        "“%(path)s” in volume “%(name)s” is a file, and the local pool mounts "
                        "folders only: give the folder that holds it, and the job reads the "
                        "file below the mount path."
                    )
                    % {"path": ds.source_path, "name": ds.name},
                )
                continue
            if not found and ds.read_only:
                err(
                    f"{path}.sourcePath",
                    said_here(read_only_missing_message(ds.source_path, ds.name)),
                )
                continue
            # A read-write mount's missing folder is made at start, as the kubelet makes a
            # missing subPath (a team from seed 004, whose NAS 路径 names a new run's folder,
            # was told to make it first from another job, qa60). Said now what would stop it.
            if not found and (problem := missing_folder_problem(volume.root, ds.source_path)):
                err(f"{path}.sourcePath", problem)
                continue
            # A mount path the spec's own rules refuse (empty, relative) is said on its field;
            # compared with the others it failed the whole step (qa74: a row just added).
            if normalised_mount_path(ds.mount_path) is not None:
                mounted.append((i, ds.mount_path, str(source), ds.read_only))
        for i, dest, _folder, _read_only in mounted:
            parent = read_only_parent_lacking(dest, [m[1:] for m in mounted])
            if parent:
                err(
                    f"datasources[{i}].mountPath", said_here(read_only_parent_message(dest, parent))
                )
            if in_the_way := host_file_in_the_way_of(dest, [d for _i, d, _f, _r in mounted]):
                err(f"datasources[{i}].mountPath", _(FILE_IN_THE_WAY) % {"path": in_the_way})
        # The worker delivers this pool's webhooks itself: the destinations it would refuse at
        # send time (SSRF guard) are refused now, as on a Kubernetes pool (shared helper).
        from jobs.alerts import alert_destination_refusals

        for path, problem in alert_destination_refusals(spec.alert):
            err(path, problem)
        totals = detected_accelerators()
        for i, role in enumerate(spec.roles):
            # A role of no instances takes no cards: a v1 body of one replica reads back as a
            # master and a worker of 0, with the same card type, which a script never wrote.
            if role.replicas and role.accelerator_type and role.accelerator_type not in totals:
                err(
                    f"roles[{i}].acceleratorType",
                    _("The local pool has no “%(type)s” cards.") % {"type": role.accelerator_type},
                )
        # Totals are only meaningful when every count is in range (else those have messages).
        for card, count in (spec.accelerators_by_type() if spec.counts_in_range() else {}).items():
            if card in totals and count > totals[card]:
                index = next(i for i, r in enumerate(spec.roles) if r.accelerator_type == card)
                err(
                    f"roles[{index}].accelerators",
                    _("The job needs %(count)d %(type)s cards; the local pool has %(total)d.")
                    % {"count": count, "type": card_shown(card), "total": totals[card]},
                )
        if spec.cpu_exclusive and spec.counts_in_range():
            needed = sum(r.exclusive_cpus * r.replicas for r in spec.roles)
            cores = len(os.sched_getaffinity(0))
            if needed > cores:
                short = _("Exclusive CPUs need %(needed)d cores; this machine has %(cores)d.") % {
                    "needed": needed,
                    "cores": cores,
                }
                if any(r.cores_by_cards for r in spec.roles):
                    # Two sentences: a space between them in English, none in Chinese.
                    short = _("%(message)s %(hint)s") % {
                        "message": short,
                        "hint": _(CORES_PER_CARD),
                    }
                err("cpuExclusive", short)
        return errors

    def environment_preview(
        self,
        spec: JobSpec,
        ref: ReplicaRef,
        *,
        job_id: str,
        group_task: tuple[int, int] | None = None,
        training_api: str = "",
    ) -> dict[str, str]:
        # As jobs.runner launches replicas: all on this machine, every port picked free when the
        # attempt starts, cards handed out by the scheduler (none for a CPU-only role).
        from jobs.runner import replica_hostname

        role = next(r for r in spec.roles if r.name == ref.role)
        has_cards = bool(role.accelerator_type and role.accelerators)
        return replica_environment(
            spec,
            ref,
            job_id=job_id,
            master_addr="127.0.0.1",
            master_port=str(PORT_AT_START),
            tf_address=lambda r, i: f"127.0.0.1:{PORT_AT_START}",
            training_sees_evaluator=False,
            hydra_hostfile_path=HYDRA_HOSTFILE_PATH,
            mpi_rsh_agent=LOCAL_MPI_RSH_AGENT,
            mpi_tcp_interface=None if jobs_on_host_network() else "lo",  # as jobs.runner sets it
            # Known before start: numbered from 0 in each replica (visible_devices).
            visible_devices=visible_devices(list(range(role.accelerators))) if has_cards else "",
            group_task=shown_group_task(spec, group_task),
            hostname=replica_hostname(spec, ref),
            masked=True,
        )

    def submit(self, job: Job) -> None:
        """Nothing to do: queued local jobs are started by the worker's scheduler."""

    def stop(self, job: Job, *, message: str = "") -> None:
        """A job that has not started stops at once; a running one is stopped by the worker
        (SIGTERM, then SIGKILL after the grace period) and goes Stopping -> Stopped, with
        `message` as its reason ("Stopped." without one)."""
        from jobs.models import JobStatus
        from jobs.runner import TARGET_STOPPED, request_stop
        from jobs.services import job_transition, recorded

        not_started = (JobStatus.QUEUED, JobStatus.PENDING_REVIEW, JobStatus.SUBMIT_FAILED)
        if job.status in not_started and job_transition(
            job=job,
            to=JobStatus.STOPPED,
            reason="Stopped",
            message=message or recorded(gettext_noop("Stopped.")),
        ):
            return
        request_stop(
            job, target=TARGET_STOPPED, message=message or recorded(gettext_noop("Stopped."))
        )

    def delete(self, job: Job) -> None:
        """Removes the job's logs and scratch files (its processes are gone by now)."""
        from jobs.network import end_networks
        from jobs.runner import signal_group
        from jobs.shim import remove_tree

        for replica in job.replicas.all():
            signal_group(replica, signal.SIGKILL)
        # Ended with the job already; one a worker killed at that moment left is ended here.
        runner = job_logs.runner_of(job)
        end_networks(public_id=job.public_id, run_by=runner)
        # Folders a job left read-only or unreadable (Go's module cache) go too: where the
        # worker that started it keeps them (job_logs.job_dir).
        left = remove_tree(job_logs.job_dir(job.public_id, runner))
        if left:
            # The job stays, so what is left of its files (its logs...) is not forgotten on
            # the disk: a worker's retention pass tries again, a person's Delete says why.
            # A file's name is the job's to choose (its secret's value, say): masked, as its
            # logs are, for staff and the worker's log read it too (review 19).
            raise FilesLeft(job_logs.masked(left, job.secret_values()))

    def sync(self, job: Job) -> None:
        from jobs.models import ACTIVE_STATUSES
        from jobs.runner import supervise

        if job.status in ACTIVE_STATUSES:
            supervise(job)

    def logs(
        self,
        job: Job,
        replica: str,
        *,
        tail: int | None = None,
        since: datetime | None = None,
        say_gone: bool = False,
    ) -> list[str]:
        # A local log is not kept by a pod (say_gone: nothing to say).
        path = self.log_file(job, replica)
        if path is None:
            return []
        if since is not None:
            lines = job_logs.lines_since(path, since)
            return lines[-tail:] if tail else lines
        return job_logs.tail_lines(path, tail or job_logs.DEFAULT_TAIL)

    def log_file(self, job: Job, replica: str) -> Path | None:
        if replica not in {f"{r.role}-{r.index}" for r in job.replicas.all()}:
            return None
        runner = job_logs.runner_of(job)
        if job_logs.ran_elsewhere(job.public_id, runner):
            # Not "No output yet": the log is there, on the machine of the worker that
            # started the job (machines are named in the worker's log only).
            raise BackendError(
                _(
                    "This job runs on another machine than this web server, and its log is "
                    "kept there: it cannot be read from here."
                )
            )
        return job_logs.replica_log_path(job.public_id, replica, runner)


class FilesLeft(BackendError):
    """A local job's folder could not be removed whole (`left`: why, as jobs.shim.remove_tree
    says it, the folder named from the job's own id down): the job is kept."""

    def __init__(self, left: str) -> None:
        super().__init__(
            _(
                "Its files on this machine could not all be removed (%(reason)s), so the job "
                "is kept. Try again later, or ask an administrator."
            )
            % {"reason": left}
        )
        self.left = left


def backend() -> LocalBackend:
    return LocalBackend()
