"""The environment each replica of a job receives, as the platforms inject it.

One implementation for the review step's preview, the local runner and the admin, after
AIHC's 通用环境变量列表 (see ../shared/reference/runtime-env.md):

- every replica: AIHC_JOB_NAME, AIHC_JOB_ID, AIHC_ROLE, AIHC_ROLE_INDEX (the generic
  information custom frameworks get), AIHC_TENSORBOARD_LOG_PATH when TensorBoard is on,
  and in a custom job's, each role's instance count as AIHC_<ROLE>_NUM (role_counts),
  NCCL_DEBUG=INFO and NCCL_IB_DISABLE=0 with RDMA (user envs may override these two),
  PYTHONUNBUFFERED=1 so logs stream;
- PyTorch: MASTER_ADDR, MASTER_PORT, RANK (master 0, workers 1..), WORLD_SIZE = number of
  *nodes* (AIHC and PAI document it so, unlike Kubeflow's processes), NPROC_PER_NODE = cards
  per instance (1 for CPU-only instances);
- TensorFlow: TF_CONFIG in the shape of Kubeflow's operator: cluster keys sorted, no
  spaces, field order cluster/task/environment, set only when the job is distributed (the
  local runner leaves the evaluator out of the training tasks' cluster, see tf_config);
- MPI: OMPI_MCA_orte_default_hostfile pointing at a hostfile with one
  "<host> slots=<cards>" line per worker (and first the master's, when it has cards), and
  K_MPI_JOB_ROLE launcher/worker; on the local runner the launcher's rsh agent too, and
  HYDRA_HOST_FILE / I_MPI_HYDRA_HOST_FILE naming the same hosts as "<host>:<cards>" lines
  (MPICH and Intel MPI) with the launcher's HYDRA_* settings.

Addresses are the platform's by default (`<name>-<role>-<index>`, port 23456 / 2222); the
local runner passes its own (127.0.0.1 with free ports).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from .spec import CUSTOM, MPI, PYTORCH, SUBMIT_QUEUE, TENSORFLOW, Env, JobSpec, mask
from .texts import said_here

if TYPE_CHECKING:
    from .models import Job

DEFAULT_MASTER_PORT = 23456
# Set by the local runner for every replica, but not in AIHC's 通用环境变量列表: a job on AIHC
# does not find them, so an AIHC pool's previews leave them out.
LOCAL_RUNNER_VARIABLES = ("AIHC_JOB_ID", "AIHC_ROLE", "AIHC_ROLE_INDEX", "PYTHONUNBUFFERED")
# A task of a queue group also gets AIHC_GROUP_TASK_INDEX and AIHC_GROUP_TASK_TOTAL: the
# group's tasks share one spec, so without them a sweep's six tasks would all run the same
# thing (QA 42). The local runner sets them in each replica's environment; AIHC and Kubernetes
# get them in the task's envs (with_group_task). The index counts from 0, as AIHC_ROLE_INDEX
# and Kubernetes' JOB_COMPLETION_INDEX do, to index a list of values with it; the job list's
# "3/6" is index 2.
DEFAULT_TF_PORT = 2222
MPI_HOSTFILE_PATH = "/etc/mpi/hostfile"
# The local runner's second hostfile, the same hosts in hydra's form (MPICH, Intel MPI).
HYDRA_HOSTFILE_PATH = "/etc/mpi/hostfile.hydra"
# The local runner's stand-in for SSH (jobs/mpi_agent.py), in every replica of an MPI job.
LOCAL_MPI_RSH_AGENT = "/etc/mpi/rsh"


@dataclass(frozen=True)
class ReplicaRef:
    role: str
    index: int
    rank: int  # position over the whole job: master 0, then workers 1.., in role order

    @property
    def label(self) -> str:
        return f"{self.role}-{self.index}"


def replica_refs(spec: JobSpec) -> list[ReplicaRef]:
    refs: list[ReplicaRef] = []
    for role in spec.roles:
        for index in range(role.replicas):
            refs.append(ReplicaRef(role=role.name, index=index, rank=len(refs)))
    return refs


def platform_address(spec: JobSpec, role: str, index: int, port: int) -> str:
    return f"{spec.name}-{role}-{index}:{port}"


def tf_config(
    spec: JobSpec,
    ref: ReplicaRef,
    address: Callable[[str, int], str],
    *,
    training_sees_evaluator: bool = True,
) -> str:
    """Without `training_sees_evaluator`, only the evaluator's own cluster lists it: the
    evaluator is no part of the training cluster (TensorFlow's RunConfig documents it so), and
    a TF 2 ParameterServerStrategy coordinator whose cluster lists an evaluator waits for ever
    for its server, which a sidecar evaluator never starts (tensorflow/tensorflow#46169). The
    evaluator keeps itself listed: an Estimator's multi-worker evaluator counts its own job in
    the cluster (TonY settled on the same split, tony-framework/TonY#515). Kubeflow's operator
    v1.9 lists it for every task, which its pools' previews must show."""
    cluster = {
        role.name.lower(): [address(role.name, i) for i in range(role.replicas)]
        for role in sorted(spec.roles, key=lambda r: r.name.lower())
        if role.replicas > 0
        and (training_sees_evaluator or role.name != "evaluator" or ref.role == "evaluator")
    }
    value = {
        "cluster": cluster,
        "task": {"type": ref.role.lower(), "index": ref.index},
        "environment": "cloud",
    }
    # Non-ASCII kept as is, as Go's encoding/json (Kubeflow's) writes it: real addresses are
    # ASCII anyway, and the review step's placeholder for a port stays readable in Chinese.
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def mpi_hostfile(spec: JobSpec, host: Callable[[str, int], str], *, hydra: bool = False) -> str:
    """One "<host> slots=<cards>" line per worker; the master (the launcher) comes first
    when it has cards, as training-operator v1's MPIJob writes it (AIHC's MPI is that
    operator's): a launcher given cards is meant to run ranks on them. A CPU-only master
    only launches. With `hydra`, the same hosts as "<host>:<cards>", the form MPICH's and
    Intel MPI's hydra read (it refuses "slots=": "token slots not supported at this time"),
    as the MPI operator v2 writes it for those two."""
    form = "{}:{}" if hydra else "{} slots={}"
    lines = [form.format(host(role, index), slots) for role, index, slots in mpi_hosts(spec)]
    return "\n".join(lines) + ("\n" if lines else "")


def mpi_hosts(spec: JobSpec) -> list[tuple[str, int, int]]:
    """(role, index, slots) of each host of an MPI job's hostfile, in its order: the master
    when it has cards, then each worker, each with its cards' slots (1 without cards)."""
    hosts = []
    for role in spec.roles:
        if role.name == "master" and not (role.accelerator_type and role.accelerators):
            continue
        slots = max(role.accelerators, 1) if role.accelerator_type else 1
        hosts.extend((role.name, i, slots) for i in range(role.replicas))
    return hosts


GROUP_INDEX, GROUP_TOTAL = "AIHC_GROUP_TASK_INDEX", "AIHC_GROUP_TASK_TOTAL"
GROUP_VARIABLES = frozenset({GROUP_INDEX, GROUP_TOTAL})


def group_task_of(job: Job) -> tuple[int, int] | None:
    """A queue task's AIHC_GROUP_TASK_INDEX (from 0) and AIHC_GROUP_TASK_TOTAL, as the local
    runner sets them; None for a standalone job."""
    return (job.group_index - 1, job.group.total) if job.group_id is not None else None


def pinned_task(envs: Any) -> tuple[int, int] | None:
    """The task of a sweep that a queue task of one runs as (index from 0, total): the
    AIHC_GROUP_TASK_INDEX and AIHC_GROUP_TASK_TOTAL of its own envs (`envs` as stored, a list
    of {"name", "value"}), as Run this task again and Copy this task & edit put them there.
    None unless both are there as whole numbers, the index within a total of 2 or more."""
    values = {
        item.get("name"): str(item.get("value", ""))
        for item in (envs if isinstance(envs, list) else [])
        if isinstance(item, dict)
    }
    index, total = values.get(GROUP_INDEX, ""), values.get(GROUP_TOTAL, "")
    if not (re.fullmatch(r"[0-9]{1,9}", index) and re.fullmatch(r"[0-9]{1,9}", total)):
        return None
    if int(total) < 2 or int(index) >= int(total):
        return None
    return (int(index), int(total))


@dataclass(frozen=True)
class TaskPlace:
    """Which task of a queue group a job is, as every page, list, alert and answer names it:
    its place from 1 (its AIHC_GROUP_TASK_INDEX is one less) of the group's total, "2/3". A
    queue task of one whose envs pin a sweep's task (Run this task again, Copy this task &
    edit: pinned_task) is named as that task run again, "6/8 (again)", with `again`: until
    qa93 its page said so and its bulk rows, selection bar and alerts said "1/1"."""

    index: int
    total: int
    again: bool = False

    @property
    def at(self) -> str:
        return f"{self.index}/{self.total}"

    def __str__(self) -> str:
        return (
            said_here(gettext_noop("%(place)s (again)"), place=self.at) if self.again else self.at
        )

    def named(self, name: str) -> str:
        """`name` with this place after it, as a task's name reads ("sweep 6/8 (again)")."""
        if self.again:
            return said_here(gettext_noop("%(name)s %(place)s (again)"), name=name, place=self.at)
        return f"{name} {self.at}"


def task_place(job: Job, envs: Callable[[], Any]) -> TaskPlace | None:
    """The one answer to which task of its group `job` is (None for a job of no group, and
    for a queue task of one that runs no sweep's task again).
    `envs` gives its envs as stored, asked only of a queue task of one (a list of jobs reads
    them in its query, a job page from its spec)."""
    if job.group_id is None or job.group_index is None:
        return None
    if job.group.total == 1:
        # A queue task of one names no place: "1/1" told nothing, and every local job the API
        # makes is one (qa109: each script's job read "name 1/1", a wizard's standalone job
        # nothing), as DescribeJob gives it no group keys (group_fields). But a sweep's task
        # run again, whose envs pin the task it runs as.
        pinned = pinned_task(envs())
        return TaskPlace(pinned[0] + 1, pinned[1], again=True) if pinned else None
    return TaskPlace(job.group_index, job.group.total)


def shown_group_task(
    spec: JobSpec, group_task: tuple[int, int] | None
) -> tuple[object, int] | None:
    """What a preview says a task's AIHC_GROUP_TASK_INDEX is: its own once it is a task,
    and before the group is submitted (the review step) the range, one per task."""
    if group_task is None and spec.submission.mode == SUBMIT_QUEUE:
        total = spec.submission.total
        if total <= 1:
            return (0, 1)  # a group of one: no range to say
        return (_("0 to %(last)d, one per task") % {"last": total - 1}, total)
    return group_task


def with_group_task(spec: JobSpec, job: Job) -> JobSpec:
    """The spec a remote platform (AIHC, Kubernetes) is sent for a task of a queue group: its
    AIHC_GROUP_TASK_INDEX and AIHC_GROUP_TASK_TOTAL added to its envs, as the local runner
    adds them to each replica's environment. The group's tasks share one stored spec, and
    neither platform tells a console's tasks apart, so without them a sweep sent there ran
    one value N times. An env of the job's own of either name wins, as on the local pool."""
    task = group_task_of(job)
    return spec if task is None else with_group_envs(spec, task)


def shown_request_spec(spec: JobSpec, job: Job) -> JobSpec:
    """The spec whose create request a job's page and the admin show: a remote job's as it is
    sent (with_group_task); a local job's, which is sent nowhere (its runner sets the group's
    variables in each replica's environment), with them only for a task of a group of 2 or
    more, so its request imported runs that task again (review29). A local queue task of one,
    which every local job the API makes is, shows the request as its script sent it, as
    DescribeJob answers it (qa109: the page listed AIHC_GROUP_TASK_INDEX=0 and
    AIHC_GROUP_TASK_TOTAL=1, which the script never sent)."""
    task = group_task_of(job)
    if task is None or (job.backend == "local" and task[1] < 2):
        return spec
    return with_group_envs(spec, task)


def with_group_envs(spec: JobSpec, task: tuple[object, int]) -> JobSpec:
    """`spec` with AIHC_GROUP_TASK_INDEX and AIHC_GROUP_TASK_TOTAL of `task` (index from 0, or
    shown_group_task's range; total) added to its envs, but for either the spec's own envs
    set (those win)."""
    own = {e.name for e in spec.envs}
    added = [
        Env(name, str(value))
        for name, value in ((GROUP_INDEX, task[0]), (GROUP_TOTAL, task[1]))
        if name not in own
    ]
    return replace(spec, envs=[*spec.envs, *added]) if added else spec


def role_count_variable(role: str) -> str:
    """The variable that holds a custom job's role's instance count: AIHC_<ROLE>_NUM, the
    role's name in capitals with every character but a letter or digit as "_" (the name rule
    allows only "-" besides, and no "_", so two roles never get one name), after Volcano
    Engine's MLP_${ROLE}_NUM: head -> AIHC_HEAD_NUM, param-server -> AIHC_PARAM_SERVER_NUM."""
    return f"AIHC_{re.sub(r'[^A-Z0-9]', '_', role.upper())}_NUM"


def role_counts(spec: JobSpec) -> dict[str, str]:
    """A custom job's role counts, by variable (role_count_variable), as every one of its
    instances gets them on every platform: the roles are the user's own, so a Ray or
    DeepSpeed command learns from these how many heads and workers there are (before
    left42 it had to hard-code them). The other frameworks have theirs (WORLD_SIZE,
    TF_CONFIG, the MPI hostfile). AIHC takes no custom job (its CreateJob has no such kind),
    so nothing is sent there. A name two roles would share (only roles stored before the
    name rule could) is left out rather than set to one of them."""
    if spec.framework != CUSTOM:
        return {}
    names = [role_count_variable(role.name) for role in spec.roles]
    return {
        name: str(role.replicas)
        for name, role in zip(names, spec.roles, strict=True)
        if names.count(name) == 1
    }


def mpi_launcher_variables(rsh_agent: str) -> dict[str, str]:
    """How a local MPI job's launcher reaches the hosts of its hostfile, through `rsh_agent`,
    as training-operator v1 sets it (Open MPI's and Intel MPI's variables) for its kubexec.sh,
    and MPICH's hydra too. The one source of the wizard's list of them too
    (jobs.wizard.mpi_launcher_rows): it lacked I_MPI_HYDRA_BOOTSTRAP* (qa95)."""
    return {
        "OMPI_MCA_plm_rsh_agent": rsh_agent,
        "I_MPI_HYDRA_BOOTSTRAP": "rsh",
        "I_MPI_HYDRA_BOOTSTRAP_EXEC": rsh_agent,
        "HYDRA_LAUNCHER": "rsh",
        "HYDRA_LAUNCHER_EXEC": rsh_agent,
        # Hydra hands its ranks the launcher's whole environment by default, over the
        # worker's own: each rank then had the launcher's CUDA_VISIBLE_DEVICES (a CPU-only
        # master's empty one) and AIHC_ROLE=master. Without it a rank keeps its replica's
        # environment, as OpenMPI's ranks do; -genvlist/-genv/-genvall still choose.
        "HYDRA_ENV": "none",
    }


def replica_environment(
    spec: JobSpec,
    ref: ReplicaRef,
    *,
    job_id: str,
    master_addr: str | None = None,
    master_port: int | str = DEFAULT_MASTER_PORT,
    tf_address: Callable[[str, int], str] | None = None,
    training_sees_evaluator: bool = True,
    hostfile_path: str = MPI_HOSTFILE_PATH,
    hydra_hostfile_path: str | None = None,
    mpi_rsh_agent: str | None = None,
    mpi_tcp_interface: str | None = None,
    visible_devices: str | None = None,
    group_task: tuple[object, int] | None = None,
    hostname: str | None = None,
    masked: bool = False,
) -> dict[str, str]:
    """The full environment of one replica: platform variables plus the user's envs.
    `hostname`: the replica's own, exported as HOSTNAME where no container runtime does (the
    local runner; Kubernetes sets it in every container)."""
    env: dict[str, str] = {"NCCL_DEBUG": "INFO", "PYTHONUNBUFFERED": "1"}
    if spec.enable_rdma:
        env["NCCL_IB_DISABLE"] = "0"
    for user_env in spec.envs:
        env[user_env.name] = mask(user_env.value) if masked and user_env.secret else user_env.value

    env["AIHC_JOB_NAME"] = spec.name
    env["AIHC_JOB_ID"] = job_id
    env["AIHC_ROLE"] = ref.role
    env["AIHC_ROLE_INDEX"] = str(ref.index)
    for name, count in role_counts(spec).items():
        env.setdefault(name, count)  # the job's own env of the name wins, as on Kubernetes
    if group_task is not None:  # (index from 0, the group's total)
        # The job's own envs win: Run again of task 3/6 pins them in its spec (a group of one
        # would say 0), and a job may set them to repeat one task of a sweep.
        env.setdefault(GROUP_INDEX, str(group_task[0]))
        env.setdefault(GROUP_TOTAL, str(group_task[1]))
    if spec.tensorboard.enable:
        env["AIHC_TENSORBOARD_LOG_PATH"] = spec.tensorboard.log_path
    if hostname is not None:
        # bash sets $HOSTNAME in its own shell only: `env` and Python's os.environ had none,
        # and checkpoints named by it collided across replicas (QA 99). The job's own wins.
        env.setdefault("HOSTNAME", hostname)
    role = next(r for r in spec.roles if r.name == ref.role)

    if spec.framework == PYTORCH:
        env["MASTER_ADDR"] = master_addr or f"{spec.name}-master-0"
        env["MASTER_PORT"] = str(master_port)
        env["RANK"] = str(ref.rank)
        env["WORLD_SIZE"] = str(spec.total_replicas)
        env["NPROC_PER_NODE"] = str(role.accelerators if role.accelerator_type else 1)
    elif spec.framework == TENSORFLOW:
        if spec.total_replicas != 1:
            address = tf_address or (lambda r, i: platform_address(spec, r, i, DEFAULT_TF_PORT))
            env["TF_CONFIG"] = tf_config(
                spec, ref, address, training_sees_evaluator=training_sees_evaluator
            )
    elif spec.framework == MPI:
        env["OMPI_MCA_orte_default_hostfile"] = hostfile_path
        env["K_MPI_JOB_ROLE"] = "launcher" if ref.role == "master" else "worker"
        if mpi_tcp_interface:
            # The interface between the replicas (the local runner's isolated networks have
            # loopback alone). Open MPI's TCP transport leaves loopback out by default, and
            # ranks in two workers found no way to each other ("BTLs attempted: self",
            # MPI_ERR_INTERN, qa86). An --mca on mpirun's command line, or the job's own env,
            # still wins; Open MPI refuses an include beside an exclude, so a job that sets
            # the exclude gets no include.
            for part in ("btl", "oob"):
                if f"OMPI_MCA_{part}_tcp_if_exclude" not in env:
                    env.setdefault(f"OMPI_MCA_{part}_tcp_if_include", mpi_tcp_interface)
        if hydra_hostfile_path:
            # MPICH's and Intel MPI's default hostfile, as the MPI operator v2 sets them for
            # those two (their own envs, already in `env`, win).
            env.setdefault("HYDRA_HOST_FILE", hydra_hostfile_path)
            env.setdefault("I_MPI_HYDRA_HOST_FILE", hydra_hostfile_path)
        if mpi_rsh_agent and ref.role == "master":
            # Unless the user set them (their own envs are already in `env`).
            for name, value in mpi_launcher_variables(mpi_rsh_agent).items():
                env.setdefault(name, value)
    if visible_devices is not None:
        env["CUDA_VISIBLE_DEVICES"] = visible_devices
    return env
