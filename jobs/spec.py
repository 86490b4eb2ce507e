"""The canonical training-job spec: one definition used by the wizard, the API and every backend.

Shape. The stored document is exactly the AIHC CreateJob v1 request body
(`POST /api/v1/aijobs`), plus `resourcePoolId` (a query parameter in the API) and one
`console` object holding what the two consoles offer beyond that API:

    {
      "name": "...", "queue": "default", "jobFramework": "PyTorchJob", "priority": "normal",
      "jobSpec": {"command", "image", "imageConfig", "replicas", "resources", "envs",
                  "enableRDMA", "hostNetwork", "privileged"},
      "faultTolerance", "faultToleranceConfig", "labels", "datasources", "enableBccl",
      "tensorboardConfig", "alertConfig", "retentionPeriod",
      "resourcePoolId": "local",
      "console": {"entrypoint", "roles", "sharedMemoryGi", "cpuExclusive", "timeoutMinutes",
                  "submission", "logPersistence", "alertChannels", "secretEnvs",
                  "creationMode", "aiak"}
    }

How the superset maps onto the v1 body (decisions, since v1 has one replica group):
- Roles are the truth. v1 `jobSpec.replicas` is the sum of every role's instances (PyTorch
  master + N workers -> N+1), and v1 `jobSpec.resources` is the per-instance resource list
  of the first role that asks for accelerators (else the first role). A v1 body without
  `console.roles` reads back as master 1 + worker replicas-1 (PyTorch, MPI), worker x replicas
  (TensorFlow) or one role "worker" (custom).
- Entrypoint: v1 runs `jobSpec.command` with bash. When the entrypoint is a shell (bash, sh)
  the command is that shell script; any other entrypoint is prefixed to it, shell-quoted.
- Secret env values are sent (the job needs them) but never shown: `to_v1_body(masked=True)`
  replaces them, and `console.secretEnvs` records which names are secret.
- Shared memory: `console.sharedMemoryGi` (default 10, AIHC's own default). A size other
  than 10 is also sent as the `{"name": "sharedMemory", "quantity": N}` resource (GB) of
  `jobSpec.resources`, as AIHC's CLI template does, so it is not lost on the way to AIHC;
  a v1 body with that resource and no `console` reads it back. With RDMA on, AIHC documents
  "10GB shared memory"; whether an explicit resource wins there is not documented
  (uncertain), and we send the size the user asked for.
- CPU exclusivity, timeout, queue groups, log persistence and alert channels have no v1
  field; they live in `console` and are honoured by the backends that can.
- Optional API fields at their default (false, empty, null) are left out of the body, so a
  request read and written back is the same document (seed 001 round-trips exactly).
- Privileged containers: `jobSpec.privileged`, where AIHC's Go SDK puts it (OpenAPIAIJobSpec,
  the Go CLI's `--privileged`) and GetJob answers it (at the top level of the job, as it
  answers hostNetwork). Read at the same place in a v2 body (the console's own v2 API: v2's
  JobSpec is v1's without `command`); a top-level `privileged` of a create body is refused
  as misplaced, saying where it belongs, never taken or dropped. Whether a job may have one
  is each backend's (check_spec): the local runner never, Kubernetes where the operator
  allows it, AIHC on a v1 pool.
"""

from __future__ import annotations

import copy
import difflib
import json
import posixpath
import re
import shlex
import string
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any
from urllib.parse import urlsplit

from django.core.exceptions import ValidationError
from django.core.validators import URLValidator, validate_email
from django.utils import translation
from django.utils.formats import number_format
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, gettext_noop, ngettext

from . import chat_bots
from .texts import Words, list_words, said_here

PYTORCH = "PyTorchJob"
MPI = "MPIJob"
TENSORFLOW = "TFJob"
CUSTOM = "Custom"
FRAMEWORKS = (PYTORCH, MPI, TENSORFLOW, CUSTOM)
# How a framework is spelled elsewhere, any letter case: AIHC's CLI template writes
# `"jobFramework": "pytorch"` and its v1 overview `PytorchJob` (reference: aihc-openapi.md,
# jobFramework). The import reads them as the console's name (jobs.wizard_import.
# framework_read); the API refuses them, saying which name is meant (validate).
FRAMEWORK_SPELLINGS = {
    "pytorch": PYTORCH,
    "pytorchjob": PYTORCH,
    "mpi": MPI,
    "mpijob": MPI,
    "tensorflow": TENSORFLOW,
    "tfjob": TENSORFLOW,
    "custom": CUSTOM,
}
# What people read (the console's 训练框架 choices); the values above are the API's.
FRAMEWORK_LABELS = {
    PYTORCH: "PyTorch",
    MPI: "MPI",
    TENSORFLOW: "TensorFlow",
    CUSTOM: gettext_lazy("Custom"),
}

# The roles each framework offers, in display order.
FRAMEWORK_ROLES: dict[str, tuple[str, ...]] = {
    PYTORCH: ("master", "worker"),
    MPI: ("master", "worker"),
    TENSORFLOW: ("chief", "worker", "ps", "evaluator"),
    CUSTOM: (),
}
# Public job ids follow the API's style: pytorchjob-<uuid4>, tfjob-..., mpijob-...
JOB_ID_PREFIX = {PYTORCH: "pytorchjob", MPI: "mpijob", TENSORFLOW: "tfjob", CUSTOM: "customjob"}

PRIORITIES = ("high", "normal", "low")
DATASOURCE_TYPES = ("hostpath", "pfs", "pfsl1", "pfsl2", "nas", "bos", "cfs", "rapidfs", "dataset")
# Mounted by path alone: a BOS mount names no volume, its source path is the bucket path
# (AIHC's SDKs send `name: ""`, `sourcePath: "bos://my-bucket/datasets"` or "my-bucket/x").
VOLUMELESS_TYPES = ("bos",)
BOS_SCHEME = "bos://"
# BOS bucket names: lowercase letters, digits and hyphens, 4-63, starting and ending with a
# letter or digit (BOS's naming rule).
BOS_BUCKET_RE = re.compile(r"[a-z0-9][a-z0-9-]{2,61}[a-z0-9]")
ALERT_EVENTS = ("jobRunning", "jobFailed", "jobSucceed", "jobHang", "jobFT", "nodeFT")
SUBMIT_STANDALONE = "standalone"
SUBMIT_QUEUE = "queue"
CREATION_CUSTOM = "custom"
CREATION_AIAK = "aiak"
AIAK_TRAINING_MODES = ("Post-Pretrain", "SFT")
AIAK_TRAINING_METHODS = ("full", "lora")
SHELLS = ("bash", "sh", "/bin/bash", "/bin/sh", "/usr/bin/bash", "/usr/bin/env bash")

# Variables the platform sets in every replica; a user env of the same name would be
# silently overwritten (or would break rendezvous), so it is refused instead.
# A volume mounted over one of these hides the image's programs and libraries: the replica
# cannot even start its shell. Below them (/etc/myapp, /usr/local/data) is allowed.
SYSTEM_DIRECTORIES = frozenset(
    {"/bin", "/boot", "/etc", "/lib", "/lib32", "/lib64", "/sbin", "/usr"}
)
RESERVED_ENV_NAMES = frozenset(
    {
        "AIHC_JOB_NAME",
        "AIHC_JOB_ID",
        "AIHC_ROLE",
        "AIHC_ROLE_INDEX",
        "AIHC_TENSORBOARD_LOG_PATH",
        "MASTER_ADDR",
        "MASTER_PORT",
        "RANK",
        "WORLD_SIZE",
        "NPROC_PER_NODE",
        "LOCAL_WORLD_SIZE",
        "TF_CONFIG",
        "CUDA_VISIBLE_DEVICES",
        "OMPI_MCA_orte_default_hostfile",
        "OMPI_MCA_orte_set_default_slots",
        "OMPI_MCA_orte_keep_fqdn_hostnames",
        "K_MPI_JOB_ROLE",
    }
)

# The spellings of the mounts' key real clients send, in the order parse_document takes the
# first one given (not null).
DATASOURCE_KEYS = ("datasources", "dataSources", "datasource")
DEFAULT_SHARED_MEMORY_GI = 10
DEFAULT_TIMEOUT_MINUTES = 30 * 24 * 60
MAX_TIMEOUT_MINUTES = 365 * 24 * 60
MAX_UNCONDITIONAL_RETRIES = 3
# The hang threshold the wizard's field starts with (qa109: empty, with no example): AIHC's
# own example, `--hang-detection-log-timeout-minutes=7`. No default: a request turning hang
# detection on without a threshold is refused, in the API and the wizard alike (a field
# cleared), as AIHC's default is not documented; stored jobs keep theirs.
SUGGESTED_HANG_MINUTES = 7
# How long an attempt may stay silent from its start before its silence counts as a hang, when
# the job asks none (review59: a job loading a checkpoint for 8 minutes without a line was
# restarted at minute 7 of every attempt, then failed): AIHC's own example pairs the 7-minute
# threshold with `--hang-detection-startup-toleration-minutes=15`. A replica's first line of
# its own ends it: the threshold counts from its last line then.
DEFAULT_HANG_STARTUP_TOLERATION_MINUTES = 15
MAX_REPLICAS = 1000
MAX_ACCELERATORS_PER_REPLICA = 64
MAX_CPU = 1024
MAX_MEMORY_GB = 16384
MAX_SHARED_MEMORY_GI = 1024
MAX_GROUP_TASKS = 1000
# Env variables and mounts of one job: as many rows as the wizard's tables hold (forms.MAX_ROWS),
# so a job made through the API is copied or imported whole, never cut to the first 50. With
# no limit a body of 2.5 MB held 40,000 variables, and the admin's page of such a job (the
# environment of each of its first 16 replicas) took 44 s and 35 MB for each reviewer's view.
MAX_ENVS = 50
# Linux executes an argument or a variable of at most MAX_ARG_STRLEN, 32 pages: 131,072 bytes
# with its closing NUL on 4 KiB pages. The command is one argument, `bash -c COMMAND`, on every
# pool (the local sandbox, a pod's container, AIHC's), so a longer one can never start: it is
# refused here, not at start with "Argument list too long" (session 52: 256 KB was allowed).
MAX_ARGUMENT_BYTES = 128 * 1024 - 1
# The variables and the command together: the kernel takes at most a quarter of the stack limit
# (2 MB by default) of them at exec, the platform's own variables among them, and a Kubernetes
# Secret, where the console puts a job's secret variables, holds at most 1 MiB (a Kubernetes
# pool refuses more than that of the plain ones and the command across its roles' pod
# templates: jobs.backends.kubernetes.MAX_POD_TEMPLATES_BYTES).
MAX_ENVIRONMENT_BYTES = 1024 * 1024
MAX_DATASOURCES = MAX_ENVS
# Where one job's alerts go. Each alert is one mail to every address (from the console's own
# sender) and one request per webhook, each waited on for up to ALERT_WEBHOOK_TIMEOUT_SECONDS
# and recorded as an event of its own: with no limit one job listed 3,000 of each, which made
# the console a mail relay and held the alert queue for hours. A team list or a chat gateway
# covers more people than these; AIHC's notify policies are the backend's own.
MAX_ALERT_EMAILS = 20
MAX_ALERT_WEBHOOKS = 10
# Labels (key=value, for AIHC): as many as environment variables.
MAX_LABELS = MAX_ENVS
# A custom job's named roles: as many as the wizard's role table holds. With no limit the API
# took thousands of roles of up to MAX_REPLICAS each, a job of millions of replicas whose pages
# list every replica's name (QA 56).
MAX_ROLES = MAX_ENVS
CPU_RESOURCE = "cpu"
MEMORY_RESOURCE = "memory"
SHARED_MEMORY_RESOURCE = "sharedMemory"  # GB, in jobSpec.resources

# Each rule ends with \Z, not $: $ also matches before a final line break, so a label value
# "v\n" (labels are not stripped as names are) passed its rule and failed at the platform.
NAME_RE = re.compile(r"^[a-z](?:[-a-z0-9]{0,48}[a-z0-9])?\Z")
ROLE_NAME_RE = re.compile(r"^[a-z](?:[-a-z0-9]{0,30}[a-z0-9])?\Z")
QUEUE_RE = re.compile(r"^[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,62}[A-Za-z0-9])?\Z")
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")
RETENTION_RE = re.compile(r"^([1-9][0-9]{0,5})([mhd])\Z")
# A key's prefix is a DNS subdomain of at most 253 characters, as Kubernetes checks it (and AIHC,
# which runs on it): each dot-separated part starts and ends with a letter or digit, so
# "a..b/c" or "a.-b/c", which the API server refuses when the job is created, are refused here.
LABEL_KEY_RE = re.compile(
    r"^(?:(?=[-a-z0-9.]{1,253}/)[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?\Z"
)
LABEL_VALUE_RE = re.compile(r"^(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?\Z")
# Label keys set for every job by the console (CONSOLE_JOB_LABEL, by which a create that got no
# answer is found again on AIHC, and which names a job's objects on Kubernetes) or by AIHC's
# server (aijob.cce.baidubce.com/create-from-aihcp-api, .../ai-user-id...): one typed by hand
# would pass for theirs, so none is taken. A prefix ends in "/"; a whole key does not.
RESERVED_LABEL_KEYS = (
    "aijob.cce.baidubce.com/",
    "ai-job-console/job-id",
    "ai-job-console/restart",
)
# Label prefixes that Kubernetes and the operators a Kubernetes pool runs on read (the domain or
# any subdomain of it): Kubernetes reserves kubernetes.io and k8s.io for its own components;
# Kueue admits a job by kueue.x-k8s.io/queue-name and ranks it by kueue.x-k8s.io/priority-class,
# the training operator and JobSet select their pods by theirs. The spec's labels go on the job
# and its pods, so one typed by hand would pick a queue or priority the console did not.
PLATFORM_LABEL_DOMAINS = ("kubernetes.io", "k8s.io", "x-k8s.io", "kubeflow.org")
LABEL_KEY_RULE = gettext_lazy(
    "A label key uses letters, digits, '-', '_' and '.', starts and ends with a letter or "
    "digit and is at most 63 characters long (it may have a prefix such as example.com/)."
)
LABEL_VALUE_RULE = gettext_lazy(
    "A label value uses letters, digits, '-', '_' and '.', starts and ends with a letter or "
    "digit and is at most 63 characters long; it may be empty."
)
# Docker reference grammar (distribution/reference), with a tag or digest required.
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
IMAGE_RE = re.compile(
    r"^(?:(?P<registry>(?:[A-Za-z0-9](?:[-A-Za-z0-9]*[A-Za-z0-9])?)"
    r"(?:\.[A-Za-z0-9](?:[-A-Za-z0-9]*[A-Za-z0-9])?)*(?::[0-9]+)?)/)?"
    rf"(?P<repository>{_COMPONENT}(?:/{_COMPONENT})*)"
    r"(?::(?P<tag>[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}))?"
    r"(?:@(?P<digest>sha256:[a-f0-9]{64}))?\Z"
)
# What IMAGE_RE can take anywhere in an address; any other character is named on refusal.
IMAGE_CHARACTERS = frozenset(string.ascii_letters + string.digits + "._-/:@")
_MEMORY_RE = re.compile(
    r"^\s*([0-9]+(?:\.[0-9]+)?)\s*(gb|gi|gib|g|mb|mi|mib|m|tb|ti|tib|t)?\s*$", re.I
)
_MEMORY_UNIT_GB = {
    None: Decimal(1),
    "g": Decimal(1),
    "gb": Decimal(1),
    "gi": Decimal(1),
    "gib": Decimal(1),
    "t": Decimal(1024),
    "tb": Decimal(1024),
    "ti": Decimal(1024),
    "tib": Decimal(1024),
    "m": Decimal(1) / 1024,
    "mb": Decimal(1) / 1024,
    "mi": Decimal(1) / 1024,
    "mib": Decimal(1) / 1024,
}


class SpecError(Exception):
    """Invalid spec: `errors` maps a field path (e.g. "roles[1].replicas") to messages.
    `partial`: what parse_document read of a body with values of the wrong type (each one
    left at its default), for the rules to be checked beside them (None when the body was no
    object, or the error is validate's own)."""

    def __init__(self, errors: dict[str, list[str]], *, partial: JobSpec | None = None):
        super().__init__("; ".join(f"{k}: {' '.join(v)}" for k, v in errors.items()))
        self.errors = errors
        self.partial = partial

    @property
    def fields(self) -> Words:
        """The fields in error, without their messages: safe to show and record where the
        value may be a secret (a message may quote what was written)."""
        return Words(tuple(self.errors))


# Said after a refusal for lack of cores to pin (the local pool's check, its scheduler) when
# a role without CPU cores is pinned to a core per card (Role.cores_by_cards): cores nobody
# typed, so the bare count left a user whose job ran before (qa60 made it a core per card,
# not 1) with no idea what asked for them or what to change (review 41).
CORES_PER_CARD = gettext_noop(
    "A replica of a role without CPU cores set is pinned to a core per card: set that "
    "role's CPU cores (step Resources) to pin fewer, or turn CPU exclusive off (step Advanced)."
)


@dataclass
class Role:
    name: str
    replicas: int = 1
    accelerator_type: str = ""  # resource name, e.g. baidu.com/a800_80g_cgpu; "" = CPU only
    accelerators: int = 0  # per instance
    cpu: int | None = None  # cores per instance; None = unlimited
    memory_gb: int | None = None  # per instance; None = unlimited

    @property
    def total_accelerators(self) -> int:
        return self.replicas * self.accelerators if self.accelerator_type else 0

    @property
    def exclusive_cpus(self) -> int:
        """Cores each instance is pinned to with CPU 独占: its CPU cores; unlimited, one per
        card (seed 004 binds cores to each GPU, so an 8-card instance given 1 core ran its 8
        training processes on it), and 1 for an instance without cards."""
        if self.cpu:
            return self.cpu
        return max(1, self.accelerators if self.accelerator_type else 0)

    @property
    def cores_by_cards(self) -> bool:
        """Whether CPU 独占 pins its instances to more cores than anyone typed: no CPU cores
        set, a core per card (what a refusal for too few cores then says, CORES_PER_CARD)."""
        return bool(self.replicas) and not self.cpu and self.exclusive_cpus > 1


@dataclass
class Env:
    name: str
    value: str = ""
    secret: bool = False


@dataclass
class Datasource:
    type: str
    name: str = ""
    mount_path: str = ""
    source_path: str | None = None
    read_only: bool = False


@dataclass
class FaultToleranceConfig:
    enabled_hang_detection: bool = False
    hang_detection_timeout_minutes: int | None = None
    fault_tolerance_limit: int | None = None
    custom_fault_tolerance_pattern: list[str] = field(default_factory=list)
    # None: DEFAULT_HANG_STARTUP_TOLERATION_MINUTES. Last: older code builds this positionally.
    hang_detection_startup_toleration_minutes: int | None = None


@dataclass
class TensorboardConfig:
    enable: bool = False
    log_path: str = ""


@dataclass
class AlertConfig:
    items: list[str] = field(default_factory=list)  # ALERT_EVENTS
    emails: list[str] = field(default_factory=list)  # console channels
    # Gateways and chat bots (jobs.chat_bots); a bot's line may end in its #secret=.
    webhooks: list[str] = field(default_factory=list)
    # AIHC-side routing (Prometheus notify policy), passed through untouched.
    instance_id: str = ""
    notify_rule_id: str = ""
    for_: str = ""


@dataclass
class Submission:
    mode: str = SUBMIT_STANDALONE
    total: int = 1  # tasks in the group (queue mode)
    concurrency: int = 1  # at most this many of the group at once


@dataclass
class Aiak:
    training_mode: str = ""
    training_method: str = ""
    template: str = ""


@dataclass
class ImageConfig:
    username: str = ""
    password: str = ""


@dataclass
class JobSpec:
    name: str = ""
    resource_pool_id: str = ""
    queue: str = "default"
    framework: str = PYTORCH
    priority: str = "normal"
    image: str = ""
    image_config: ImageConfig | None = None
    command: str = ""
    entrypoint: str = "bash"
    roles: list[Role] = field(default_factory=list)
    envs: list[Env] = field(default_factory=list)
    enable_rdma: bool = False
    host_network: bool = False
    # A privileged container: every device of the host, every capability (backends decide).
    privileged: bool = False
    fault_tolerance: bool = False
    fault_tolerance_config: FaultToleranceConfig | None = None
    labels: list[tuple[str, str]] = field(default_factory=list)
    datasources: list[Datasource] = field(default_factory=list)
    enable_bccl: bool = False
    tensorboard: TensorboardConfig = field(default_factory=TensorboardConfig)
    alert: AlertConfig = field(default_factory=AlertConfig)
    retention_period: str = ""
    shared_memory_gi: int = DEFAULT_SHARED_MEMORY_GI
    cpu_exclusive: bool = False
    timeout_minutes: int = DEFAULT_TIMEOUT_MINUTES
    submission: Submission = field(default_factory=Submission)
    log_persistence: bool = False
    creation_mode: str = CREATION_CUSTOM
    aiak: Aiak | None = None

    # -- derived values ------------------------------------------------------------

    @property
    def total_replicas(self) -> int:
        return sum(role.replicas for role in self.roles)

    def counts_in_range(self) -> bool:
        """Every role's instances and cards within the limits; totals made of counts out of
        range mean nothing (the counts get their own messages)."""
        return all(
            0 <= r.replicas <= MAX_REPLICAS and 0 <= r.accelerators <= MAX_ACCELERATORS_PER_REPLICA
            for r in self.roles
        )

    def accelerators_by_type(self) -> dict[str, int]:
        """Cards the job holds, per accelerator type: sum of instances x cards."""
        totals: dict[str, int] = {}
        for role in self.roles:
            if role.accelerator_type and role.accelerators and role.replicas:
                totals[role.accelerator_type] = (
                    totals.get(role.accelerator_type, 0) + role.total_accelerators
                )
        return totals

    @property
    def total_accelerators(self) -> int:
        return sum(self.accelerators_by_type().values())

    def primary_role(self) -> Role | None:
        for role in self.roles:
            if role.accelerator_type and role.accelerators:
                return role
        return self.roles[0] if self.roles else None

    def entrypoint_is_shell(self) -> bool:
        return self.entrypoint.strip() in SHELLS

    def v1_command(self) -> str:
        if self.entrypoint_is_shell() or not self.entrypoint.strip():
            return self.command
        prefix = shlex.join(shlex.split(self.entrypoint))
        return f"{prefix} {self.command}".rstrip()

    def secret_values(self) -> list[str]:
        values = [env.value for env in self.envs if env.secret and env.value]
        if self.image_config and self.image_config.password:
            values.append(self.image_config.password)
        return values

    # -- serialisation -------------------------------------------------------------

    def to_v1_body(self, *, masked: bool = False) -> dict[str, Any]:
        """The exact AIHC CreateJob v1 request body (resourcePoolId goes in the query)."""
        primary = self.primary_role()
        job_spec: dict[str, Any] = {"command": self.v1_command(), "image": self.image}
        if self.image_config is not None:
            job_spec["imageConfig"] = {
                "username": self.image_config.username,
                "password": mask(self.image_config.password)
                if masked
                else self.image_config.password,
            }
        job_spec["replicas"] = self.total_replicas
        job_spec["resources"] = (
            _role_resources(primary, shared_memory_gi=self.shared_memory_gi) if primary else []
        )
        if self.envs:
            job_spec["envs"] = [
                {"name": env.name, "value": mask(env.value) if masked and env.secret else env.value}
                for env in self.envs
            ]
        if self.enable_rdma:
            job_spec["enableRDMA"] = True
        if self.host_network:
            job_spec["hostNetwork"] = True
        if self.privileged:
            job_spec["privileged"] = True

        body: dict[str, Any] = {
            "name": self.name,
            "queue": self.queue,
            "jobFramework": self.framework,
            "priority": self.priority,
            "jobSpec": job_spec,
        }
        if self.fault_tolerance:
            body["faultTolerance"] = True
        ftc = self.fault_tolerance_config
        if ftc is not None:
            ftc_body: dict[str, Any] = {"enabledHangDetection": ftc.enabled_hang_detection}
            if ftc.hang_detection_timeout_minutes is not None:
                ftc_body["hangDetectionTimeoutMinutes"] = ftc.hang_detection_timeout_minutes
            if ftc.hang_detection_startup_toleration_minutes is not None:
                ftc_body["hangDetectionStartupTolerationMinutes"] = (
                    ftc.hang_detection_startup_toleration_minutes
                )
            if ftc.fault_tolerance_limit is not None:
                ftc_body["faultToleranceLimit"] = ftc.fault_tolerance_limit
            if ftc.custom_fault_tolerance_pattern:
                ftc_body["customFaultTolerancePattern"] = list(ftc.custom_fault_tolerance_pattern)
            body["faultToleranceConfig"] = ftc_body
        if self.labels:
            body["labels"] = [{"key": k, "value": v} for k, v in self.labels]
        if self.datasources:
            body["datasources"] = [_datasource_body(ds) for ds in self.datasources]
        if self.enable_bccl:
            body["enableBccl"] = True
        if self.tensorboard.enable:
            body["tensorboardConfig"] = {"enable": True, "logPath": self.tensorboard.log_path}
        if self.alert.items:
            alert: dict[str, Any] = {"alertItems": list(self.alert.items)}
            if self.alert.instance_id:
                alert["instanceId"] = self.alert.instance_id
            if self.alert.notify_rule_id:
                alert["notifyRuleId"] = self.alert.notify_rule_id
            if self.alert.for_:
                alert["for"] = self.alert.for_
            body["alertConfig"] = alert
        if self.retention_period:
            body["retentionPeriod"] = self.retention_period
        return body

    def to_document(self, *, masked: bool = False) -> dict[str, Any]:
        """The stored form: the v1 body, the pool, and the console's extensions."""
        doc = self.to_v1_body(masked=masked)
        doc["resourcePoolId"] = self.resource_pool_id
        doc["console"] = {
            "entrypoint": self.entrypoint,
            "command": self.command,
            "roles": [
                {"name": r.name, "replicas": r.replicas, "resources": _role_resources(r)}
                for r in self.roles
            ],
            "sharedMemoryGi": self.shared_memory_gi,
            "cpuExclusive": self.cpu_exclusive,
            "timeoutMinutes": self.timeout_minutes,
            "submission": {
                "mode": self.submission.mode,
                "total": self.submission.total,
                "concurrency": self.submission.concurrency,
            },
            "logPersistence": self.log_persistence,
            "alertChannels": {
                "emails": list(self.alert.emails),
                # A chat bot's signing secret (`#secret=...`) is a secret as an env's value is.
                "webhooks": [
                    chat_bots.secret_masked(url) if masked else url for url in self.alert.webhooks
                ],
            },
            "secretEnvs": [env.name for env in self.envs if env.secret],
            "creationMode": self.creation_mode,
            "aiak": (
                {
                    "trainingMode": self.aiak.training_mode,
                    "trainingMethod": self.aiak.training_method,
                    "template": self.aiak.template,
                }
                if self.aiak
                else None
            ),
        }
        return doc

    def copy(self) -> JobSpec:
        return copy.deepcopy(self)


def roles_lost_by_v1_body(spec: JobSpec) -> list[Role] | None:
    """The roles the job's v1 body reads back as when AIHC's flat jobSpec (one instance count,
    one set of resources) cannot say the job's own (a TensorFlow job's chief, ps and evaluator;
    a master without cards; roles of their own names); None when it says them. Compared with
    what each instance has: a master without cards reads back as the same "master × 1, worker
    × 2" with the workers' cards (review 41)."""

    def shown(roles: list[Role]) -> list[tuple[Any, ...]]:
        return sorted(
            (r.name, r.replicas, r.accelerator_type, r.accelerators, r.cpu, r.memory_gb)
            for r in roles
            if r.replicas
        )

    try:
        read_back = parse_document(spec.to_v1_body(), resource_pool_id=spec.resource_pool_id)
    except SpecError:
        return None
    return None if shown(read_back.roles) == shown(spec.roles) else read_back.roles


def mask(value: str) -> str:
    return "******" if value else ""


def _role_resources(
    role: Role, *, shared_memory_gi: int = DEFAULT_SHARED_MEMORY_GI
) -> list[dict[str, Any]]:
    resources: list[dict[str, Any]] = []
    if role.accelerator_type and role.accelerators:
        resources.append({"name": role.accelerator_type, "quantity": role.accelerators})
    if role.cpu is not None:
        resources.append({"name": CPU_RESOURCE, "quantity": role.cpu})
    if role.memory_gb is not None:
        resources.append({"name": MEMORY_RESOURCE, "quantity": role.memory_gb})
    if shared_memory_gi != DEFAULT_SHARED_MEMORY_GI:
        resources.append({"name": SHARED_MEMORY_RESOURCE, "quantity": shared_memory_gi})
    return resources


def _v1_shared_memory(job_spec: Mapping[str, Any]) -> Any:
    """The quantity of a v1 body's sharedMemory resource, or None."""
    resources = job_spec.get("resources")
    for res in resources if isinstance(resources, list) else []:
        if isinstance(res, Mapping) and res.get("name") == SHARED_MEMORY_RESOURCE:
            return res.get("quantity")
    return None


def _datasource_body(ds: Datasource) -> dict[str, Any]:
    body: dict[str, Any] = {"type": ds.type, "name": ds.name}
    if ds.source_path is not None:
        body["sourcePath"] = ds.source_path
    body["mountPath"] = ds.mount_path
    if ds.read_only:
        body["options"] = {"readOnly": True}
    return body


# -- parsing -------------------------------------------------------------------------


def _example(value: Any) -> str:
    """A value as JSON, for a message's example: cut at 40 characters, as its field may be
    long text."""
    said = json.dumps(value, ensure_ascii=False)
    return said if len(said) <= 40 else said[:39] + "…"


class _Reader:
    """Reads a loosely typed JSON document, collecting field-addressed errors. `json_types`:
    a whole number sent as text ("2") and text sent as a number (1) are refused, as AIHC's
    server (Go's encoding/json) refuses them (qa97: the API stored "replicas": "2" as 2);
    a resource's quantity is read from text still, which Baidu's SDKs and CLI send."""

    def __init__(self, *, json_types: bool = False) -> None:
        self.errors: dict[str, list[str]] = {}
        self.json_types = json_types

    def error(self, path: str, message: str) -> None:
        self.errors.setdefault(path, []).append(message)

    def obj(self, value: Any, path: str) -> Mapping[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            self.error(path, _("Must be an object."))
            return {}
        return value

    def list(self, value: Any, path: str) -> list[Any]:
        if value is None:
            return []
        if not isinstance(value, list):
            self.error(path, _("Must be a list."))
            return []
        return value

    def str(self, value: Any, path: str, default: str = "", *, secret: bool = False) -> str:
        """Text; with `json_types` a number is refused with its own value as the example
        (qa105: it was always "1"), but for a `secret` one (a secret env's value, a registry
        login, a webhook with its token, a data source's address), not quoted back."""
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            self.error(path, _("Must be text."))
            return default
        if self.json_types and not isinstance(value, str):
            sent = "1" if secret else _example(value)
            self.error(
                path,
                _("Must be text: a JSON string, in quotes (%(quoted)s, not %(sent)s).")
                % {"quoted": json.dumps(sent), "sent": sent},
            )
            return default
        return str(value)

    def bool(self, value: Any, path: str, default: bool = False) -> bool:
        """true or false; "true" and "false" as text are taken (README, "JSON types in the
        API"). Anything else is refused, with the JSON way to write it under `json_types`."""
        if value is None:
            return default
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        if self.json_types:
            # qa105: "yes" and 1 were told "Must be true or false." only, beside a taken
            # "true", which read as a rule about words rather than JSON's type.
            meant = str(value).strip().lower() not in ("0", "no", "off", "n", "")
            self.error(
                path,
                _(
                    "Must be true or false: a JSON boolean, without quotes (%(meant)s, "
                    "not %(sent)s)."
                )
                % {"meant": "true" if meant else "false", "sent": _example(value)},
            )
            return default
        self.error(path, _("Must be true or false."))
        return default

    def int(
        self, value: Any, path: str, default: int | None = None, *, text_taken: bool = False
    ) -> int | None:
        """An integer, also from an integral float (8.0), and from a numeric string ("8")
        unless `json_types` (but for `text_taken`: a quantity, which clients send as text)."""
        if self.json_types and isinstance(value, str) and not text_taken:
            # The example is the number sent (qa105: always 2), when it is one.
            if re.fullmatch(r"\s*-?\d{1,18}\s*", value):
                number, sent = value.strip(), _example(value)
            else:
                number, sent = "2", '"2"'
            self.error(
                path,
                _(
                    "Must be a whole number: a JSON number, without quotes (%(number)s, "
                    "not %(sent)s)."
                )
                % {"number": number, "sent": sent},
            )
            return default
        if value is None or value == "":
            return default
        if isinstance(value, bool):
            self.error(path, _("Must be a whole number."))
            return default
        try:
            number = Decimal(str(value).strip())
        except InvalidOperation:
            self.error(path, _("Must be a whole number."))
            return default
        if not number.is_finite() or number != number.to_integral_value():
            self.error(path, _("Must be a whole number."))
            return default
        return int(number)

    def memory_gb(self, value: Any, path: str) -> int | None:
        """Memory in GB from 64, "64", "64GB", "64Gi", "65536Mi" or "1T"."""
        if value is None or value == "":
            return None
        if isinstance(value, int | float) and not isinstance(value, bool):
            return self.int(value, path)
        match = _MEMORY_RE.match(str(value)) if isinstance(value, str) else None
        if not match:
            self.error(path, _('Memory must be a number of GB, like 64 or "64GB".'))
            return None
        amount = Decimal(match.group(1)) * _MEMORY_UNIT_GB[(match.group(2) or "").lower() or None]
        if amount != amount.to_integral_value():
            self.error(path, _("Memory must be a whole number of GB."))
            return None
        return int(amount)


def _read_resources(
    reader: _Reader, items: list[Any], path: str, role_name: str, replicas: int
) -> Role:
    role = Role(name=role_name, replicas=replicas)
    for i, item in enumerate(items):
        item_path = f"{path}[{i}]"
        res = reader.obj(item, item_path)
        name = reader.str(res.get("name"), f"{item_path}.name").strip()
        if name == CPU_RESOURCE:
            role.cpu = reader.int(res.get("quantity"), f"{item_path}.quantity", text_taken=True)
        elif name == MEMORY_RESOURCE:
            role.memory_gb = reader.memory_gb(res.get("quantity"), f"{item_path}.quantity")
        elif name in (SHARED_MEMORY_RESOURCE, "rdma/hca"):
            continue  # expressed by sharedMemoryGi / enableRDMA
        elif name:
            if role.accelerator_type and role.accelerator_type != name:
                reader.error(item_path, _("Only one card type per role."))
            role.accelerator_type = name
            role.accelerators = (
                reader.int(res.get("quantity"), f"{item_path}.quantity", 0, text_taken=True) or 0
            )
        else:
            reader.error(f"{item_path}.name", _("Resource name is required."))
    return role


def _roles_from_v1(framework: str, replicas: int, template: Role) -> list[Role]:
    def clone(name: str, count: int) -> Role:
        return Role(
            name=name,
            replicas=count,
            accelerator_type=template.accelerator_type,
            accelerators=template.accelerators,
            cpu=template.cpu,
            memory_gb=template.memory_gb,
        )

    if framework in (PYTORCH, MPI):
        return [clone("master", 1), clone("worker", max(replicas - 1, 0))]
    return [clone("worker", replicas)]


# The card type of cards whose type cannot be told (charged_cards).
UNKNOWN_CARD = "?"


def stored_image(doc: Any) -> str:
    """A stored document's image address (`jobSpec.image`), as Job.image keeps it for the
    admin's search; "" where it cannot be read. At most 512 characters, as the rule allows."""
    job_spec = doc.get("jobSpec") if isinstance(doc, Mapping) else None
    image = job_spec.get("image") if isinstance(job_spec, Mapping) else None
    return image.strip()[:512] if isinstance(image, str) else ""


def charged_cards(doc: Any, total_cards: int) -> dict[str, int]:
    """Cards per type of a stored document's `console.roles`, by sorted type: how the usage
    report (jobs.usage) splits a job's card-hours, kept on the job (Job.cards). Roles that
    cannot be read, or whose cards are not what the job was charged for at submit
    (`total_cards`, which the per-user figures use), count `total_cards` under UNKNOWN_CARD;
    {}: CPU only."""
    console = doc.get("console") if isinstance(doc, Mapping) else None
    roles = console.get("roles") if isinstance(console, Mapping) else None
    cards = None
    if roles is not None:
        try:
            cards = parse_document({"console": {"roles": roles}}).accelerators_by_type()
        except (ValueError, SpecError):
            cards = None
    if cards is None or sum(cards.values()) != total_cards:
        cards = {UNKNOWN_CARD: total_cards} if total_cards else {}
    return dict(sorted(cards.items()))


def stored_secret_values(doc: Any) -> list[str]:
    """The secret values of a stored document, also of one that no longer parses (written by
    an older console, or restored from an old backup), so what is shown of its job can still
    be masked. Read loosely, as written: the image password and each env value whose name
    `console.secretEnvs` lists; when that list cannot be read, every env value, since masking
    too much is safe and too little leaks."""
    try:
        return parse_document(doc).secret_values()
    except SpecError:
        pass
    if not isinstance(doc, Mapping):
        return [value for value in _leaves(doc) if value]
    console, job_spec = doc.get("console") or {}, doc.get("jobSpec") or {}
    values: list[str] = []
    if not isinstance(job_spec, Mapping):
        values.extend(_leaves(job_spec))
        job_spec = {}
    names = (console.get("secretEnvs") or []) if isinstance(console, Mapping) else None
    envs = job_spec.get("envs") or []
    if isinstance(names, list) and all(isinstance(n, str) for n in names):
        names = [n.strip() for n in names]  # as parse_document reads them
        named = (
            {
                e["name"].strip()
                for e in envs
                if isinstance(e, Mapping) and isinstance(e.get("name"), str)
            }
            if isinstance(envs, list)
            else set()
        )
        if not set(names) <= named:
            names = None  # a name of no env (a typo): which env it meant cannot be told
    else:
        names = None  # which are secret cannot be told: all are
    for env in envs if isinstance(envs, list) else [envs]:
        if not isinstance(env, Mapping):
            values.extend(_leaves(env))
        elif names is None or not isinstance(env.get("name"), str) or env["name"].strip() in names:
            values.extend(_leaves(env.get("value")))
    image_config = job_spec.get("imageConfig")
    if isinstance(image_config, Mapping):
        image_config = image_config.get("password")
    values.extend(_leaves(image_config))
    return [value for value in values if value]


def _leaves(value: Any) -> list[str]:
    """Every text or number in `value`, as text."""
    if isinstance(value, Mapping):
        return [leaf for item in value.values() for leaf in _leaves(item)]
    if isinstance(value, list):
        return [leaf for item in value for leaf in _leaves(item)]
    if isinstance(value, bool) or value is None:
        return []
    return [str(value)]


def parse_document(
    doc: Any, *, resource_pool_id: str | None = None, json_types: bool = False
) -> JobSpec:
    """Reads a v1 request body or a stored document into a JobSpec.

    Tolerates what real clients send: `quantity` as a number or numeric string, memory as
    "64GB", `datasource`/`dataSources` for `datasources`, nulls for optional objects.
    `json_types` (the API's bodies): a number sent as text, or text as a number, elsewhere
    is of the wrong type, as AIHC's server reads it (_Reader).
    Raises SpecError for values of the wrong type; call `validate()` for the rules.
    """
    if not isinstance(doc, Mapping):
        raise SpecError({"": [_("The request body must be a JSON object.")]})
    r = _Reader(json_types=json_types)
    top = doc
    console = r.obj(top.get("console"), "console")
    job_spec = r.obj(top.get("jobSpec"), "jobSpec")

    spec = JobSpec()
    spec.name = r.str(top.get("name"), "name").strip()
    pool = top.get("resourcePoolId") if resource_pool_id is None else resource_pool_id
    spec.resource_pool_id = r.str(pool, "resourcePoolId").strip()
    spec.queue = r.str(top.get("queue"), "queue").strip() or "default"
    spec.framework = r.str(top.get("jobFramework"), "jobFramework").strip() or PYTORCH
    spec.priority = r.str(top.get("priority"), "priority").strip() or "normal"

    spec.image = r.str(job_spec.get("image"), "jobSpec.image").strip()
    # An imageConfig holding nothing ({"username": "", "password": ""}, which AIHC's Go SDK
    # sends for every job, its struct's zero value) is no private registry: a public image.
    if not holds_nothing(job_spec.get("imageConfig")):
        ic = r.obj(job_spec.get("imageConfig"), "jobSpec.imageConfig")
        spec.image_config = ImageConfig(
            username=r.str(ic.get("username"), "jobSpec.imageConfig.username", secret=True),
            password=r.str(ic.get("password"), "jobSpec.imageConfig.password", secret=True),
        )
    spec.entrypoint = (
        r.str(console.get("entrypoint"), "console.entrypoint", "bash").strip() or "bash"
    )
    if "command" in console:
        spec.command = r.str(console.get("command"), "console.command")
    else:
        spec.command = r.str(job_spec.get("command"), "jobSpec.command")

    if "roles" in console:
        for i, item in enumerate(r.list(console.get("roles"), "console.roles")):
            path = f"roles[{i}]"
            role_doc = r.obj(item, path)
            role = _read_resources(
                r,
                r.list(role_doc.get("resources"), f"{path}.resources"),
                f"{path}.resources",
                r.str(role_doc.get("name"), f"{path}.name").strip(),
                r.int(role_doc.get("replicas"), f"{path}.replicas", 0) or 0,
            )
            spec.roles.append(role)
    else:
        replicas = r.int(job_spec.get("replicas"), "jobSpec.replicas", 1) or 0
        if spec.framework in (PYTORCH, MPI) and not 1 <= replicas <= MAX_REPLICAS + 1:
            # The v1 field counts the master and its workers: 1 to 1 + MAX_REPLICAS. Refused
            # here, as read: the roles made of 0 or -1 were a master alone, a job the body
            # did not ask for, run without a word (qa79).
            r.error(
                "jobSpec.replicas",
                # Said as what it counts: the wizard's 0-1000 is a role's (qa101).
                _(
                    "Replicas count the master and its workers together and must be between "
                    "%(min)d and %(max)d."
                )
                % {"min": 1, "max": MAX_REPLICAS + 1},
            )
        template = _read_resources(
            r, r.list(job_spec.get("resources"), "jobSpec.resources"), "jobSpec.resources", "", 0
        )
        spec.roles = _roles_from_v1(spec.framework, replicas, template)

    # Names are compared as the env rows' own names are read, without spaces around them: a
    # script's " HF_TOKEN" in secretEnvs still marks HF_TOKEN secret (else its value would
    # be shown on the job's pages, the admin's included).
    secret_listed = [
        r.str(n, "console.secretEnvs").strip()
        for n in r.list(console.get("secretEnvs"), "console.secretEnvs")
    ]
    secret_names = set(secret_listed)
    from .wizard_import import looks_secret  # the import's guess, as the API makes them secret

    for i, item in enumerate(r.list(job_spec.get("envs"), "jobSpec.envs")):
        env = r.obj(item, f"envs[{i}]")
        name = r.str(env.get("name"), f"envs[{i}].name").strip()
        secret = name in secret_names
        value = r.str(
            env.get("value"), f"envs[{i}].value", secret=secret or not name or looks_secret(name)
        )
        spec.envs.append(Env(name=name, value=value, secret=secret))
    # A name that is no env's marks nothing: a typo (HF-TOKEN for HF_TOKEN) would leave the
    # value it meant to hide shown in every answer and on every page, without a word.
    env_names = {env.name for env in spec.envs}
    for i, name in enumerate(secret_listed):
        if name not in env_names:
            r.error(
                f"console.secretEnvs[{i}]",
                _(
                    "“%(name)s” is not the name of one of the job's envs, so it marks no value secret."
                )
                % {"name": name if len(name) <= 64 else f"{name[:64]}…"},  # as sent, cut
            )
    spec.enable_rdma = r.bool(job_spec.get("enableRDMA"), "jobSpec.enableRDMA")
    spec.host_network = r.bool(job_spec.get("hostNetwork"), "jobSpec.hostNetwork")
    spec.privileged = r.bool(job_spec.get("privileged"), "jobSpec.privileged")

    spec.fault_tolerance = r.bool(top.get("faultTolerance"), "faultTolerance")
    if top.get("faultToleranceConfig") is not None:
        ftc = r.obj(top.get("faultToleranceConfig"), "faultToleranceConfig")
        p = "faultToleranceConfig"
        spec.fault_tolerance_config = FaultToleranceConfig(
            enabled_hang_detection=r.bool(
                ftc.get("enabledHangDetection"), f"{p}.enabledHangDetection"
            ),
            hang_detection_timeout_minutes=r.int(
                ftc.get("hangDetectionTimeoutMinutes"), f"{p}.hangDetectionTimeoutMinutes"
            ),
            hang_detection_startup_toleration_minutes=r.int(
                ftc.get("hangDetectionStartupTolerationMinutes"),
                f"{p}.hangDetectionStartupTolerationMinutes",
            ),
            fault_tolerance_limit=r.int(ftc.get("faultToleranceLimit"), f"{p}.faultToleranceLimit"),
            custom_fault_tolerance_pattern=[
                r.str(x, f"{p}.customFaultTolerancePattern")
                for x in r.list(
                    ftc.get("customFaultTolerancePattern"), f"{p}.customFaultTolerancePattern"
                )
            ],
        )

    def label_text(value: Any, path: str) -> str:
        # A number written as text would not read back as sent: a script's lr 3e-4 became the
        # label lr=0.0003, which the filter lr=3e-4 (as typed in the wizard) did not find. A
        # key too ({"key": 1e-4} was the key 0.0001).
        if isinstance(value, float):
            r.error(path, _("Must be text: write the number in quotes, as it should read."))
            return ""
        return r.str(value, path)

    labels = top.get("labels")
    if isinstance(labels, Mapping):  # {"key": "value"}, as the console's own API sends
        spec.labels = [(str(k), label_text(v, f"labels.{k}")) for k, v in labels.items()]
    else:
        for i, item in enumerate(r.list(labels, "labels")):
            label = r.obj(item, f"labels[{i}]")
            spec.labels.append(
                (
                    label_text(label.get("key"), f"labels[{i}].key"),
                    label_text(label.get("value"), f"labels[{i}].value"),
                )
            )

    sources = None
    for key in DATASOURCE_KEYS:
        if top.get(key) is not None:
            sources = top.get(key)
            break
    for i, item in enumerate(r.list(sources, "datasources")):
        path = f"datasources[{i}]"
        ds = r.obj(item, path)
        options = r.obj(ds.get("options"), f"{path}.options")
        source_path = ds.get("sourcePath")
        spec.datasources.append(
            Datasource(
                type=r.str(ds.get("type"), f"{path}.type").strip().lower(),
                name=r.str(ds.get("name"), f"{path}.name").strip(),
                mount_path=r.str(ds.get("mountPath"), f"{path}.mountPath").strip(),
                source_path=None
                if source_path is None
                # A source address may carry a credential (user:password@, a signed URL).
                else r.str(source_path, f"{path}.sourcePath", secret=True).strip(),
                read_only=r.bool(options.get("readOnly"), f"{path}.options.readOnly"),
            )
        )
    spec.enable_bccl = r.bool(top.get("enableBccl"), "enableBccl")

    tb = r.obj(top.get("tensorboardConfig"), "tensorboardConfig")
    spec.tensorboard = TensorboardConfig(
        enable=r.bool(tb.get("enable"), "tensorboardConfig.enable"),
        log_path=r.str(tb.get("logPath"), "tensorboardConfig.logPath").strip(),
    )
    alert = r.obj(top.get("alertConfig"), "alertConfig")
    channels = r.obj(console.get("alertChannels"), "console.alertChannels")
    spec.alert = AlertConfig(
        items=[
            r.str(x, "alertConfig.alertItems")
            for x in r.list(alert.get("alertItems"), "alertConfig.alertItems")
        ],
        emails=[
            # An e-mail line may be a chat bot's line pasted there, with its token.
            r.str(x, "alert.emails", secret=True).strip()
            for x in r.list(channels.get("emails"), "alert.emails")
        ],
        webhooks=[
            edge_trimmed(r.str(x, "alert.webhooks", secret=True))  # a URL's access_token
            for x in r.list(channels.get("webhooks"), "alert.webhooks")
        ],
        # The notify policy's keys: Cloud Monitor's identifiers of the owner's account.
        instance_id=r.str(alert.get("instanceId"), "alertConfig.instanceId", secret=True),
        notify_rule_id=r.str(alert.get("notifyRuleId"), "alertConfig.notifyRuleId", secret=True),
        for_=r.str(alert.get("for"), "alertConfig.for"),
    )
    spec.retention_period = r.str(top.get("retentionPeriod"), "retentionPeriod").strip()

    shm = console.get("sharedMemoryGi", _v1_shared_memory(job_spec))
    shm_read = r.int(shm, "sharedMemoryGi", DEFAULT_SHARED_MEMORY_GI, text_taken=True)
    spec.shared_memory_gi = shm_read or 0
    spec.cpu_exclusive = r.bool(console.get("cpuExclusive"), "cpuExclusive")
    spec.timeout_minutes = (
        r.int(console.get("timeoutMinutes"), "timeoutMinutes", DEFAULT_TIMEOUT_MINUTES) or 0
    )
    sub = r.obj(console.get("submission"), "submission")
    spec.submission = Submission(
        mode=r.str(sub.get("mode"), "submission.mode", SUBMIT_STANDALONE) or SUBMIT_STANDALONE,
        total=r.int(sub.get("total"), "submission.total", 1) or 0,
        concurrency=r.int(sub.get("concurrency"), "submission.concurrency", 1) or 0,
    )
    spec.log_persistence = r.bool(console.get("logPersistence"), "logPersistence")
    spec.creation_mode = (
        r.str(console.get("creationMode"), "creationMode", CREATION_CUSTOM) or CREATION_CUSTOM
    )
    if console.get("aiak") is not None:
        aiak = r.obj(console.get("aiak"), "aiak")
        spec.aiak = Aiak(
            training_mode=r.str(aiak.get("trainingMode"), "aiak.trainingMode"),
            training_method=r.str(aiak.get("trainingMethod"), "aiak.trainingMethod"),
            template=r.str(aiak.get("template"), "aiak.template"),
        )
    if r.errors:
        raise SpecError(r.errors, partial=spec)
    return spec


# -- the fields the parser reads ------------------------------------------------------
#
# Operator QA found a body with `datasources` put inside `jobSpec` run without the mount and
# without a word: every key the parser does not read was dropped silently. AIHC's Go server
# ignores unknown keys too, so scripts may send keys of a newer AIHC, or v2 keys in a v1 body,
# and refusing every unknown key would break them. Decision (README "Scripts and SDKs"):
# - a key the console reads at another place of the body (`jobSpec.datasources`, a top-level
#   `image`, a v2 name in a v1 body, a key written in another letter case) is refused, on
#   its path, saying where it belongs;
# - a key the console reads nowhere is accepted, as AIHC accepts it, but named: a warning
#   event on the job, `warnings` in the API's answer, a warning on an imported draft (paths
#   only, never a value: a value may be a secret);
# - a key whose value holds nothing (null, "", 0, false, or a list or object of only such
#   values: Go's zero values, which AIHC's SDK and CLI send for every field left unset) has
#   nothing to lose: neither refused nor named (holds_nothing).
# Keys are matched as the parser reads them: exactly, letter case included. Go's
# encoding/json matches a key to a field in any letter case, so AIHC reads `JobSpec` as
# `jobSpec`; the console does not, and says so (refused) rather than drop it.
#
# The tables below are what parse_document (and, for v2, jobs.aihc.mapping.v1_from_v2 before
# it) reads; tests/test_api_unknown_fields.py checks them against the parser's own reads.


@dataclass(frozen=True, eq=False)
class Fields:
    """What the console reads of a JSON value: of an object, the keys in `keys` (each value
    read as its Fields says; None: a value, not walked); of a list, each item as `items`.
    `free_keys`: an object whose keys are data (labels as {"name": "value"}). `roles`: an
    object that may be a v2 role map (jobs.aihc.mapping.is_role_map), each role read as
    `roles`."""

    keys: Mapping[str, Fields | None] = field(default_factory=dict)
    items: Fields | None = None
    free_keys: bool = False
    roles: Fields | None = None


_RESOURCES = Fields(items=Fields({"name": None, "quantity": None}))
_JOB_SPEC_KEYS: dict[str, Fields | None] = {
    "command": None,
    "image": None,
    "imageConfig": Fields({"username": None, "password": None}),
    "replicas": None,
    "resources": _RESOURCES,
    "envs": Fields(items=Fields({"name": None, "value": None})),
    "enableRDMA": None,
    "hostNetwork": None,
    "privileged": None,
}
_DATASOURCES = Fields(
    items=Fields(
        {
            "type": None,
            "name": None,
            "mountPath": None,
            "sourcePath": None,
            "options": Fields({"readOnly": None}),
        }
    )
)
CONSOLE_FIELDS = Fields(
    {
        "entrypoint": None,
        "command": None,
        "roles": Fields(items=Fields({"name": None, "replicas": None, "resources": _RESOURCES})),
        "sharedMemoryGi": None,
        "cpuExclusive": None,
        "timeoutMinutes": None,
        "submission": Fields({"mode": None, "total": None, "concurrency": None}),
        "logPersistence": None,
        "alertChannels": Fields({"emails": None, "webhooks": None}),
        "secretEnvs": None,
        "creationMode": None,
        "aiak": Fields({"trainingMode": None, "trainingMethod": None, "template": None}),
    }
)
_COMMON_KEYS: dict[str, Fields | None] = {
    "name": None,
    "queue": None,
    "priority": None,
    "resourcePoolId": None,  # the stored document's; the API's query parameter wins
    "faultTolerance": None,
    "faultToleranceConfig": Fields(
        {
            "enabledHangDetection": None,
            "hangDetectionTimeoutMinutes": None,
            "hangDetectionStartupTolerationMinutes": None,
            "faultToleranceLimit": None,
            "customFaultTolerancePattern": None,
        }
    ),
    # v1's alternative to faultToleranceConfig (AIHC's Go SDK), v2's only form: read by
    # jobs.aihc.mapping.fault_tolerance_config
    "faultToleranceArgs": None,
    "labels": Fields(items=Fields({"key": None, "value": None}), free_keys=True),
    "datasources": _DATASOURCES,
    "dataSources": _DATASOURCES,  # spellings real clients send (parse_document)
    "datasource": _DATASOURCES,
    "enableBccl": None,
    "tensorboardConfig": Fields({"enable": None, "logPath": None}),
    "alertConfig": Fields(
        {"alertItems": None, "instanceId": None, "notifyRuleId": None, "for": None}
    ),
    "retentionPeriod": None,
    "console": CONSOLE_FIELDS,
}
# The v1 body (POST /api/v1/aijobs) and the console's stored document.
V1_FIELDS = Fields({**_COMMON_KEYS, "jobFramework": None, "jobSpec": Fields(dict(_JOB_SPEC_KEYS))})
# The v2 CreateJob body: `jobType` and a top-level `command`; `jobSpec` one JobSpec or a role
# map (TFJob) of them. v1_from_v2 passes the rest on to the v1 body (a role's `command` too).
V2_FIELDS = Fields(
    {
        **_COMMON_KEYS,
        "jobType": None,
        "command": None,
        "jobSpec": Fields(dict(_JOB_SPEC_KEYS), roles=Fields(dict(_JOB_SPEC_KEYS))),
    }
)
# The other generation's name of a field, at the same place.
RENAMED = {"jobType": "jobFramework", "jobFramework": "jobType"}
# Other spellings of a key: their contents are named under the usual spelling.
ALIASES = frozenset(DATASOURCE_KEYS[1:])
# Top-level keys a create cannot do without: one missing beside a key read nowhere that looks
# like it (`jobName` for `name`) has that key refused, saying which was meant (qa101: v2 said
# only "name: Enter a job name.", the `jobName` sent dropped without a word, as AIHC drops it).
REQUIRED_TOP_KEYS = ("name",)
# A place named in a message: a key (or a list's items) at most this long, then "…".
MAX_KEY_SHOWN = 64
# At most this many keys in the wrong place are named in a refusal, and at most FIELDS_LISTED
# keys read nowhere in an answer's `warnings`, the rest counted: a 2.5 MB body of 250,000
# `{"key": 1}` envs was otherwise refused with a 12 MB message (found in review).
MISPLACED_NAMED = 20
FIELDS_LISTED = 100


@dataclass
class UnreadFields:
    """A body's keys the console does not read: `misplaced` (path -> message, as SpecError's
    errors) where it reads them elsewhere; `unknown`, the paths of those it reads nowhere."""

    misplaced: dict[str, list[str]] = field(default_factory=dict)
    unknown: list[str] = field(default_factory=list)


def _shown_key(key: str) -> str:
    """A key as a message names it: cut past MAX_KEY_SHOWN characters, and each control or
    format character (a newline, U+202E RIGHT-TO-LEFT OVERRIDE, a zero-width space) written
    as its escape, so that a key cannot turn or hide the text around it on the job's page,
    in the events API or in a log line (the console's own words name it, on anyone's job)."""
    if len(key) > MAX_KEY_SHOWN:
        key = key[: MAX_KEY_SHOWN - 1] + "…"
    return "".join(
        f"\\u{ord(c):04x}" if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") else c
        for c in key
    )


def _places(fields: Fields) -> dict[str, list[str]]:
    """Each key (in lower case) the console reads, with the places it reads it at: "" for the
    top level, else a path with [] for a list's items ("jobSpec.envs[]")."""
    places: dict[str, list[str]] = {}

    def walk(node: Fields, place: str) -> None:
        for key, child in node.keys.items():
            found = places.setdefault(key.lower(), [])
            if place not in found:
                found.append(place)
            if child is not None and key not in ALIASES:
                walk(child, f"{place}.{key}" if place else key)
        if node.items is not None:
            walk(node.items, f"{place}[]")

    walk(fields, "")
    return places


def _misplaced_message(key: str, path: str, places: list[str]) -> str:
    if "" in places:
        return _("'%(key)s' belongs beside %(parent)s, at the top level of the body.") % {
            "key": key,
            "parent": re.split(r"[.\[]", path, maxsplit=1)[0],
        }
    # The console's own extension (console.…) is named only where nothing else reads the key.
    named = [p for p in places if not p.startswith("console")] or places
    return _("'%(key)s' belongs in %(places)s.") % {"key": key, "places": list_words(named[:3])}


def holds_nothing(value: Any) -> bool:
    """Whether a value asks for nothing: null, "", 0, false, or a list or object holding only
    such values. Decided in review: AIHC's Go SDK and CLI send every field of their structs,
    those left unset as Go's zero values (`"codeSource": {"filePath": "", ...}`, each mount's
    `"options": {"sizeLimit": 0, "medium": "", "cfsInstanceId": "", ...}`), which AIHC's Go
    server cannot tell from a field not sent; naming them warned on every such create, about
    nothing the job loses. A key holding nothing is neither refused nor named."""
    if value is None or isinstance(value, bool):
        return not value
    if isinstance(value, int | float | Decimal):
        return value == 0
    if isinstance(value, str):
        return value == ""
    if isinstance(value, list):
        return all(holds_nothing(item) for item in value)
    if isinstance(value, Mapping):
        return all(holds_nothing(item) for item in value.values())
    return False


def misplaced_named(misplaced: dict[str, list[str]]) -> dict[str, list[str]]:
    """The first MISPLACED_NAMED of `misplaced` (UnreadFields.misplaced), and how many more
    there are, said without a path ("")."""
    more = len(misplaced) - MISPLACED_NAMED
    if more <= 0:
        return misplaced
    named = dict(list(misplaced.items())[:MISPLACED_NAMED])
    named[""] = [
        ngettext(
            "%(count)d more key is not read where it is.",
            "%(count)d more keys are not read where they are.",
            more,
        )
        % {"count": more}
    ]
    return named


def _looks_like(key: str, known: str) -> bool:
    """Whether a key read nowhere was likely meant as `known`: it holds it (`jobName`,
    `job_name` for `name`) or is a slip of it (`nmae`)."""
    typed, meant = key.lower(), known.lower()
    return meant in typed or difflib.SequenceMatcher(None, typed, meant).ratio() >= 0.75


def _meant_keys_named(document: Mapping[str, Any], found: UnreadFields) -> None:
    """Moves a top-level key read nowhere that looks like a required key the body lacks from
    `found.unknown` to `found.misplaced`, saying which key was meant."""
    for known in REQUIRED_TOP_KEYS:
        if not holds_nothing(document.get(known)):
            continue
        for path in [p for p in found.unknown if p in document and _looks_like(p, known)]:
            found.unknown.remove(path)
            found.misplaced.setdefault(path, []).append(
                _("'%(key)s' is not read: did you mean '%(known)s'?")
                % {"key": _shown_key(path), "known": known}
            )


def unread_fields(document: Any, fields: Fields = V1_FIELDS) -> UnreadFields:
    """The keys of `document` (a CreateJob body as the client sent it: `fields` is V1_FIELDS
    or V2_FIELDS) that the console does not read where they are (see the decisions above).
    Only the objects the console reads are walked: a key it does not know is named, its
    contents not."""
    from .aihc.mapping import is_role_map  # the mapping reads this module

    found = UnreadFields()
    places = _places(fields)

    def walk(value: Any, node: Fields, path: str) -> None:
        if isinstance(value, list) and node.items is not None:
            for i, item in enumerate(value):
                walk(item, node.items, f"{path}[{i}]")
            return
        if not isinstance(value, Mapping) or node.free_keys:
            return  # not an object (the parser names it), or one whose keys are data
        if node.items is not None and not node.keys:
            # An object where a list is read (`envs` as {"name": ...}): the parser refuses
            # it as such; its keys are not judged as keys of the body (found in review:
            # an env named "name" was said to belong at the top level).
            return
        if node.roles is not None and is_role_map(value):
            for role, spec in value.items():
                walk(spec, node.roles, f"{path}.{_shown_key(str(role))}")
            return
        lower = {known.lower(): known for known in node.keys}
        for key, item in value.items():
            key = str(key)
            here = f"{path}.{_shown_key(key)}" if path else _shown_key(key)
            if key in node.keys:
                child = node.keys[key]
                if child is not None:
                    walk(item, child, here)
                continue
            if holds_nothing(item):
                continue  # nothing in it to lose
            shown = _shown_key(key)
            if key.lower() in lower:
                message = _(
                    "'%(key)s' is not read: the field is '%(known)s' (letter case counts here, "
                    "though AIHC ignores it)."
                ) % {"key": shown, "known": lower[key.lower()]}
            elif RENAMED.get(key) in node.keys:
                message = _("'%(key)s' is not read in this body, which names it '%(known)s'.") % {
                    "key": shown,
                    "known": RENAMED[key],
                }
            elif key.lower() in places:
                message = _misplaced_message(shown, here, places[key.lower()])
            else:
                found.unknown.append(here)
                continue
            found.misplaced.setdefault(here, []).append(message)

    walk(document, fields, "")
    if isinstance(document, Mapping):
        _meant_keys_named(document, found)
        # The mounts are read from the first spelling given; another one would be dropped.
        given = [key for key in DATASOURCE_KEYS if document.get(key) is not None]
        for key in given[1:]:
            if not holds_nothing(document[key]):
                found.misplaced.setdefault(key, []).append(
                    _("'%(key)s' is not read: the body gives the mounts as '%(first)s' already.")
                    % {"key": key, "first": given[0]}
                )
    return found


# -- rules ---------------------------------------------------------------------------


# A Chinese input method types "／" (and "＼") for "/": the path then looks right and is not
# one ("／workspace" is not absolute; a source "data／train" names one folder of that name).
FULL_WIDTH_SLASHES = {"\uff0f", "\uff3c"}


def _full_width_slash_message() -> str:
    return _(
        "The path has a full-width slash (／, as a Chinese input method types it), which is not "
        "a path separator: type '/' instead."
    )


def _not_allowed(chars: list[str]) -> str:
    """ "Not allowed: “Ｎ” “Ｃ”." naming `chars` (the first five), or "" for none."""
    bad = list(dict.fromkeys(chars))
    if not bad:
        return ""
    # A character that shows as nothing (a zero-width space or direction mark pasted with
    # the name from a chat or web page) is named by its code point: “” says nothing.
    shown = [
        _("space") if c.isspace() else f"“{c}”" if c.isprintable() else f"U+{ord(c):04X}"
        for c in bad[:5]
    ]
    # A list as every other list is said (qa101: "“b”, “n”. Not allowed: “_” “!”.").
    return _("Not allowed: %(chars)s.") % {"chars": list_words(shown)}


def sentences(*parts: str) -> str:
    """Sentences of a message, each translated on its own, joined as the language writes them:
    Chinese sentences end in a full-width “。” and follow it without a space (qa78)."""
    language = translation.get_language() or ""
    return ("" if language.startswith("zh") else " ").join(str(p) for p in parts if p)


def with_non_ascii_named(rule: str, text: str) -> str:
    """`rule` followed by the characters of `text` that are not ASCII: a Chinese input
    method's full-width letters and signs (Ｎ, ：, ＝), Chinese, a non-breaking or zero-width
    space pasted with it. They look like (or, for Chinese, read as) what the rule allows."""
    return sentences(rule, _not_allowed([c for c in text if not c.isascii()]))


def with_full_width_named(message: str, text: str) -> str:
    """`message` followed by the first character of `text` that a Chinese input method writes
    in full width for an ASCII one (＠ for @, ： for :), which looks right: an address may
    hold Chinese (张三@例子.中国), so only these are named."""
    for c in text:
        if not c.isascii() and unicodedata.normalize("NFKC", c).isascii() and not c.isspace():
            named = _(
                "It has “%(char)s” (U+%(code)04X), a full-width character of a Chinese input "
                "method: type the ASCII one."
            ) % {"char": c, "code": ord(c)}
            return sentences(message, named)
    return message


def name_problem(name: str, limit: int) -> str:
    """What in this name breaks the name rule (NAME_RE, ROLE_NAME_RE), said after the rule so
    that a person sees what to change without comparing the name with the rule: every part
    it breaks, so that one fix is enough ("Coord-" was told of its upper case only, qa79)."""
    allowed = set("abcdefghijklmnopqrstuvwxyz0123456789-")
    upper = list(dict.fromkeys(c for c in name if "A" <= c <= "Z"))
    # An upper-case letter is said to be one, with the letter to type instead: "Not
    # allowed: “C”" read as if the letter c were not allowed (qa78).
    lower = _("Use lowercase instead: %(chars)s.") % {
        "chars": list_words(f"“{c.lower()}”" for c in upper[:5])
    }
    # A first or last character already named as not allowed is not named again.
    first, last = name[:1], name[-1:]
    return sentences(
        _("This one has %(count)d characters.") % {"count": len(name)} if len(name) > limit else "",
        lower if upper else "",
        _not_allowed([c for c in name if c not in allowed and c not in upper]),
        _("It starts with “%(char)s”.") % {"char": first}
        if first in allowed and not first.isalpha()
        else "",
        _("It ends with “%(char)s”.") % {"char": last} if last == "-" and len(name) > 1 else "",
    )


def stored_labels(document: Any) -> list[tuple[str, str]]:
    """The labels of a stored spec document (Job.spec), one per key, as the job list's filter
    table holds them (models.JobLabel): read without parsing the whole spec, so a job whose
    spec no longer parses keeps its labels. A key given twice (the API took that before keys
    had to be unique) keeps its last value, as Kubernetes' labels map did; an item that is not
    a key and value within the rule's lengths is left out (jobs made before the rule)."""
    items = document.get("labels") if isinstance(document, Mapping) else None
    if isinstance(items, Mapping):
        items = [{"key": k, "value": v} for k, v in items.items()]
    if not isinstance(items, list):
        return []
    labels: dict[str, str] = {}
    for item in items:
        if not isinstance(item, Mapping):
            continue
        key, value = item.get("key"), item.get("value")
        if value is None:
            value = ""
        ok = isinstance(key, str) and isinstance(value, str)
        if ok and 0 < len(key) <= 317 and len(value) <= 63:
            labels.pop(key, None)  # a repeated key goes where its last value was
            labels[key] = value
    return list(labels.items())


def _label_key_problem(key: str) -> str:
    """Why `key` (not a label key) is refused: the rule, or, for a whole label pasted into the
    key (`lr=3e-4`, or `lr:3e-4` as YAML writes it), that its two parts go apart, named."""
    # The full-width "＝" and "：" of a Chinese input method too.
    for separator in ("=", ":", "\uff1d", "\uff1a"):
        before, sep, after = key.partition(separator)
        value = after.strip()
        # "lr=" names no value: the rule says what a key may hold ("值为 。" said nothing).
        if sep and value and LABEL_KEY_RE.match(before.strip()) and LABEL_VALUE_RE.match(value):
            return _(
                "A label's key and value go apart: %(key)s as the key and %(value)s as the value."
            ) % {"key": before.strip(), "value": value}
    return with_non_ascii_named(LABEL_KEY_RULE, key)


def reserved_label_key(key: str) -> str:
    """The reserved prefix (or key) `key` falls under (RESERVED_LABEL_KEYS), or ""."""
    for reserved in RESERVED_LABEL_KEYS:
        if key == reserved or (reserved.endswith("/") and key.startswith(reserved)):
            return reserved
    return ""


def platform_label_domain(key: str) -> str:
    """The domain of PLATFORM_LABEL_DOMAINS whose label `key` is (its prefix that domain or a
    subdomain of it), or ""."""
    prefix, slash, _name = key.rpartition("/")
    if not slash:
        return ""
    for domain in PLATFORM_LABEL_DOMAINS:
        if prefix == domain or prefix.endswith(f".{domain}"):
            return domain
    return ""


def validate(spec: JobSpec, *, in_wizard: bool = False) -> dict[str, list[str]]:
    """Every rule of a job spec; returns field path -> messages (empty when valid).
    `in_wizard`: messages that name a request's field name the wizard's instead."""
    errors: dict[str, list[str]] = {}

    def err(path: str, message: str) -> None:
        errors.setdefault(path, []).append(message)

    if not spec.name:
        err("name", _("Enter a job name."))
    elif not NAME_RE.match(spec.name):
        rule = _(
            "Job names use lowercase letters, digits and '-', start with a lowercase letter, "
            "end with a lowercase letter or digit, and are 1-50 characters long."
        )
        err("name", sentences(rule, name_problem(spec.name, 50)))
    if not spec.resource_pool_id:
        err("resourcePoolId", _("Choose a resource pool."))
    if not QUEUE_RE.match(spec.queue):
        err("queue", _("Queue names use letters, digits, '-', '_' and '.', up to 64 characters."))
    if spec.priority not in PRIORITIES:
        err("priority", _("Priority must be high, normal or low."))
    framework_ok = spec.framework in FRAMEWORKS
    if not framework_ok:
        err("jobFramework", _("Framework must be PyTorchJob, MPIJob, TFJob or Custom."))
        meant = FRAMEWORK_SPELLINGS.get(spec.framework.strip().lower())
        if meant:
            # qa105: a script written from AIHC's CLI template was not told which it meant.
            err(
                "jobFramework",
                _("“%(given)s” (as AIHC's CLI template writes it) is %(framework)s here.")
                % {"given": spec.framework, "framework": meant},
            )

    _validate_image(spec, err)
    _validate_command(spec, err)
    if framework_ok:
        _validate_roles(spec, err)
    _validate_envs(spec, err)
    _validate_datasources(spec, err)
    _validate_fault_tolerance(spec, err)
    _validate_bccl(spec, err)
    _validate_advanced(spec, err, in_wizard=in_wizard)
    return errors


def validated(spec: JobSpec) -> JobSpec:
    errors = validate(spec)
    if errors:
        raise SpecError(errors)
    return spec


# Card types AIHC names whose model cannot be read off the name by card_model's rule.
CARD_MODELS = {
    "baidu.com/p40_8_cgpu": "P40",
    "nvidia.com/gpu": "NVIDIA GPU",
    "huawei.com/Ascend910": "Ascend 910",
    "kunlunxin.com/xpu": "Kunlun XPU",
    "baidu.com/xpu": "Kunlun XPU",
}
_CGPU_RE = re.compile(r"^baidu\.com/((?:[a-z]+_)?[a-z]*\d+)(?:_(\d+)g)?_cgpu$")


def card_model(card_type: str) -> str:
    """The card's model as a person names it ("A800 80GB", "RTX 4090"), read off AIHC's
    resource name (baidu.com/<model>[_<memory>g]_cgpu; CARD_MODELS for the others), or ""."""
    if card_type in CARD_MODELS:
        return CARD_MODELS[card_type]
    match = _CGPU_RE.match(card_type)
    if not match:
        return ""
    model = match[1].replace("_", " ").upper()
    return f"{model} {match[2]}GB" if match[2] else model


def card_shown(card_type: str) -> str:
    """A card type where a person reads it: its model, the resource name in brackets
    ("A800 80GB (baidu.com/a800_80g_cgpu)"); the name alone when it says no model (qa101:
    the AIAK preview and its warning said only "baidu.com/a800_80g_cgpu", beside the BCCL
    rule's "A800 or HPAS cards")."""
    model = card_model(card_type)
    return f"{model} ({card_type})" if model else card_type


def max_minutes_said() -> str:
    """MAX_TIMEOUT_MINUTES with the reader's thousands separator ("525,600"): the timeout and
    the hang threshold are both minutes, and say their limit alike (qa101: one said "1 minute
    and 365 days", the other "1 and 525600 minutes")."""
    return number_format(MAX_TIMEOUT_MINUTES, force_grouping=True)


def hang_threshold_range_said() -> str:
    """The hang threshold's range, said alike for a value below it and above it."""
    return _("The hang threshold must be between 1 and %(max)s minutes (365 days).") % {
        "max": max_minutes_said()
    }


def startup_toleration_range_said() -> str:
    """The start-up toleration's range, said alike for a value below it and above it (the
    wizard's form refuses a negative one itself: qa115, it said Django's "确保该值大于或等于0。"
    there and this above)."""
    return _("The start-up toleration must be between 0 and %(max)s minutes (365 days).") % {
        "max": max_minutes_said()
    }


def _image_upper_case(image: str) -> str:
    """What says that the repository part of an image takes no capitals (Docker's rule;
    the registry's host and the tag may have them), with the letters to type instead: the
    general rule alone left "Python:3.12" (a phone's keyboard capitalised it, qa85) a puzzle.
    Empty when the repository has none."""
    path = image.split("@", 1)[0]
    last_slash = path.rfind("/")
    if ":" in path[last_slash + 1 :]:  # the tag
        path = path[: path.rindex(":")]
    first, _slash, rest = path.partition("/")
    # The first part is a registry when it looks like a host (Docker's own test).
    repository = rest if rest and ("." in first or ":" in first or first == "localhost") else path
    upper = list(dict.fromkeys(c for c in repository if "A" <= c <= "Z"))
    if not upper:
        return ""
    return _(
        "Upper-case letters are not allowed in the repository name (the part before the "
        "tag, after the registry): use %(chars)s."
    ) % {"chars": list_words(f"“{c.lower()}”" for c in upper[:5])}


def image_rule() -> str:
    """The one message for an image address the rule refuses, a tag left out among them:
    two wordings of one rule read as two rules (copy edit)."""
    return _("Image must look like registry/repository:tag or registry/repository@sha256:<digest>.")


def _validate_image(spec: JobSpec, err: Any) -> None:
    if not spec.image:
        err("jobSpec.image", _("Enter an image address."))
        return
    match = IMAGE_RE.match(spec.image)
    if not match or len(spec.image) > 512:
        # Every character no address may hold is named, a space among them, as the job
        # name's message names its own (qa113: "my img" was told the rule alone).
        odd = [c for c in spec.image if c not in IMAGE_CHARACTERS]
        err(
            "jobSpec.image",
            sentences(image_rule(), _not_allowed(odd), _image_upper_case(spec.image)),
        )
    elif not match.group("tag") and not match.group("digest"):
        err("jobSpec.image", image_rule())
    if spec.image_config is not None and (
        not spec.image_config.username or not spec.image_config.password
    ):
        # On the half that is missing (a password typed without its username marks the
        # username, not the password that was typed).
        missing = "username" if not spec.image_config.username else "password"
        err(
            f"jobSpec.imageConfig.{missing}",
            _("A private registry needs both a username and a password."),
        )


def _validate_command(spec: JobSpec, err: Any) -> None:
    try:
        tokens = shlex.split(spec.entrypoint)
    except ValueError:
        tokens = []
        err("console.entrypoint", _("The entrypoint has an unclosed quote."))
    else:
        if not tokens:
            err("console.entrypoint", _("Enter an entrypoint, e.g. bash."))
    if spec.entrypoint_is_shell() and not spec.command.strip():
        err("jobSpec.command", _("Enter the command to run."))
    if (size := _command_bytes(spec)) > MAX_ARGUMENT_BYTES:
        err(
            "jobSpec.command",
            _(
                "The command is %(size)s bytes in UTF-8; at most %(max)s (128 KB) can run: "
                "Linux's limit on one argument."
            )
            % {"size": f"{size:,}", "max": f"{MAX_ARGUMENT_BYTES:,}"},
        )
    if "\x00" in spec.command:
        err("jobSpec.command", _("The command contains a NUL character."))


def _validate_roles(spec: JobSpec, err: Any) -> None:
    allowed = FRAMEWORK_ROLES[spec.framework]
    if not spec.roles:
        err("roles", _("Add at least one role."))
        return
    if len(spec.roles) > MAX_ROLES:
        err(
            "roles",
            _("A job has at most %(max)d roles; this one has %(count)d.")
            % {"max": MAX_ROLES, "count": len(spec.roles)},
        )
        return  # each of thousands checked too would bury that one message
    seen: set[str] = set()
    by_name: dict[str, Role] = {}
    counts_in_range = True
    for i, role in enumerate(spec.roles):
        path = f"roles[{i}]"
        if not role.name:  # (name_problem has nothing to point at in an empty name)
            err(f"{path}.name", _("Enter a role name."))
        elif allowed and role.name not in allowed:
            err(
                f"{path}.name",
                _("%(framework)s has no role named “%(role)s”.")
                % {
                    "framework": FRAMEWORK_LABELS.get(spec.framework, spec.framework),
                    "role": role.name,
                },
            )
        elif not allowed and not ROLE_NAME_RE.match(role.name):
            rule = _(
                "Role names use lowercase letters, digits and '-', start with a letter, end "
                "with a letter or digit, and are 1-32 characters long."
            )
            err(f"{path}.name", sentences(rule, name_problem(role.name, 32)))
        if role.name in seen:
            # With what to do (qa113: it said only what was wrong).
            err(
                f"{path}.name",
                sentences(
                    _("Role “%(role)s” appears twice.") % {"role": role.name},
                    _("Give each role a different name."),
                ),
            )
        seen.add(role.name)
        by_name[role.name] = role
        min_replicas = 0 if allowed else 1
        if role.replicas < min_replicas or role.replicas > MAX_REPLICAS:
            counts_in_range = False
            # PyTorch's and MPI's master row is told its one count: "between 0 and 1000"
            # beside a help that says exactly 1 sent the user to a range that is refused too.
            one_master = spec.framework in (PYTORCH, MPI) and role.name == "master"
            err(
                f"{path}.replicas",
                _("The master has exactly 1 replica.")
                if one_master
                else _("A role's replicas must be between %(min)d and %(max)d.")
                % {"min": min_replicas, "max": MAX_REPLICAS},
            )
        if role.accelerator_type and not 1 <= role.accelerators <= MAX_ACCELERATORS_PER_REPLICA:
            err(
                f"{path}.accelerators",
                _("Cards per replica must be between 1 and %(max)d.")
                % {"max": MAX_ACCELERATORS_PER_REPLICA},
            )
        if role.accelerators and not role.accelerator_type:
            err(f"{path}.acceleratorType", _("Choose a card type."))
        if role.cpu is not None and not 1 <= role.cpu <= MAX_CPU:
            err(f"{path}.cpu", _("CPU cores must be between 1 and %(max)d.") % {"max": MAX_CPU})
        if role.memory_gb is not None and not 1 <= role.memory_gb <= MAX_MEMORY_GB:
            err(
                f"{path}.memory",
                _("Memory must be between 1 and %(max)d GiB.") % {"max": MAX_MEMORY_GB},
            )

    def index(name: str) -> int:
        return next(i for i, r in enumerate(spec.roles) if r.name == name)

    # A count out of range gets its range message alone: the framework's rules on counts
    # would read it as typed ("master -1" also "needs exactly 1 master", "worker -2" also
    # "needs at least one worker"), a second message that sends the user the wrong way (qa79).
    if spec.framework in (PYTORCH, MPI):
        master = by_name.get("master")
        # Held back only by the master's own count out of range: another role's (worker -1)
        # says nothing of the master's, and "master 2" was said only once that was fixed (qa82).
        master_in_range = master is not None and 0 <= master.replicas <= MAX_REPLICAS
        if master is None or (master_in_range and master.replicas != 1):
            path = f"roles[{index('master')}].replicas" if master else "roles"
            err(
                path,
                _("%(framework)s needs exactly 1 master.")
                % {"framework": FRAMEWORK_LABELS.get(spec.framework, spec.framework)},
            )
        worker = by_name.get("worker")
        if (
            spec.framework == MPI
            and counts_in_range
            and master
            and master.replicas == 1
            and not (master.accelerator_type and master.accelerators)
            and not (worker and worker.replicas > 0)
        ):
            # The hostfile lists the master only when it has cards (runtime_env.mpi_hostfile,
            # as training-operator v1 writes it): with no worker either, mpirun has no host
            # to start a rank on (OpenMPI: "No nodes are available"), and the MPI operator
            # refuses an MPIJob without workers.
            err(
                f"roles[{index('worker')}].replicas" if worker else "roles",
                _(
                    "An MPI job needs at least 1 worker, or cards for its master: a master "
                    "without cards starts the ranks and runs none."
                ),
            )
        if (
            master
            and worker
            and worker.replicas > 0
            and _cards_in_range(master)
            and _cards_in_range(worker)
        ):
            # Not while either's cards per instance is refused on its own: that message is the
            # one to fix first, and "must use the same" beside it on the worker sent the user
            # to the wrong row (qa82: master 0 cards, worker 1).
            both_gpu = bool(master.accelerator_type) and bool(worker.accelerator_type)
            must_match = spec.framework == PYTORCH or both_gpu
            same_type = master.accelerator_type == worker.accelerator_type
            if must_match and (not same_type or master.accelerators != worker.accelerators):
                # On the worker's field that differs: its cards per instance when the card
                # types already match (that is what was typed, and what gets the focus).
                attr = "acceleratorType" if not same_type else "accelerators"
                err(
                    f"roles[{index('worker')}].{attr}",
                    _("Master and worker must use the same card type and cards per replica."),
                )
    elif spec.framework == TENSORFLOW and counts_in_range:
        chief = by_name.get("chief")
        if chief and chief.replicas > 1:
            err(f"roles[{index('chief')}].replicas", _("TensorFlow allows at most 1 chief."))
        if tensorflow_has_only_ps(spec):
            err("roles", tensorflow_only_ps_message())
        elif not any(
            by_name.get(n) and by_name[n].replicas > 0 for n in ("worker", "chief", "evaluator")
        ):
            err("roles", _("TensorFlow needs at least one worker, chief or evaluator replica."))
    # A negative count already has its own message; adding it into a total of 0 would
    # only add a second, misleading one.
    if spec.total_replicas < 1 and all(role.replicas >= 0 for role in spec.roles):
        err("roles", _("The job needs at least one replica."))


def _cards_in_range(role: Role) -> bool:
    return not role.accelerator_type or 1 <= role.accelerators <= MAX_ACCELERATORS_PER_REPLICA


def own_role_errors(spec: JobSpec, index: int) -> dict[str, list[str]]:
    """The messages of role `index` that read no other role: its own values, and on a
    master PyTorch's and MPI's one master. The wizard says these while another row of the
    role table has a value its form refused: the spec then misses that value, so the rules
    across roles wait, but these need not (qa82: "master 2" came only after the rest)."""
    errors: dict[str, list[str]] = {}
    alone = copy.copy(spec)
    alone.roles = [spec.roles[index]]
    _validate_roles(alone, lambda path, message: errors.setdefault(path, []).append(message))
    # Alone, a rule across roles finds its other role missing and speaks of the table
    # ("roles"): only the role's own paths are kept.
    return {
        f"roles[{index}]{path.removeprefix('roles[0]')}": messages
        for path, messages in errors.items()
        if path.startswith("roles[0]")
    }


def reserved_env_message(name: str) -> str:
    """Why a job may not set `name`: which jobs the platform sets it in. Decision (qa78): every
    name stays reserved in every framework's jobs, not only in the jobs it is set in, so a
    job's variables keep their meaning when it is copied to another framework, and an AIHC
    answer's platform variables are left out on import whatever its framework
    (wizard_import); the message says where the platform sets it, which is true of any job."""
    if name in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "NPROC_PER_NODE"):
        message = _(
            "%(name)s is reserved: the platform sets it in PyTorch jobs. Choose another name."
        )
    elif name == "LOCAL_WORLD_SIZE":
        message = _("%(name)s is reserved: torchrun sets it in PyTorch jobs. Choose another name.")
    elif name == "TF_CONFIG":
        message = _(
            "%(name)s is reserved: the platform sets it in TensorFlow jobs. Choose another name."
        )
    elif name.startswith("OMPI_MCA_") or name == "K_MPI_JOB_ROLE":
        message = _("%(name)s is reserved: the platform sets it in MPI jobs. Choose another name.")
    elif name == "CUDA_VISIBLE_DEVICES":
        message = _(
            "%(name)s is reserved: the platform sets it to the cards each replica gets. "
            "Choose another name."
        )
    elif name == "AIHC_TENSORBOARD_LOG_PATH":
        message = _(
            "%(name)s is reserved: the platform sets it when TensorBoard is on. Choose "
            "another name."
        )
    else:
        message = _("%(name)s is reserved: the platform sets it in every job. Choose another name.")
    return message % {"name": name}


def tensorflow_only_ps_message() -> str:
    # Not "a worker, chief or evaluator": a ps serves until it is stopped, so with an
    # evaluator beside it the job still never ends, and the pools refuse that (qa78). Kept
    # with its message: a job queued before the rule fails at start with it (jobs.runner),
    # said in each reader's language.
    return said_here(
        gettext_noop(
            "A TensorFlow job with a ps needs a chief or a worker: the ps serves until it is "
            "stopped, and the job ends when its chief (without one, worker 0) has exited. Add a "
            "chief or a worker."
        )
    )


def tensorflow_has_only_ps(spec: JobSpec) -> bool:
    """A TensorFlow job whose only instances are parameter servers: the spec's own rule
    refuses it, so the pools' rules on a job without chief or worker leave it to that one."""
    counts = {role.name: role.replicas for role in spec.roles}
    return (
        spec.framework == TENSORFLOW
        and counts.get("ps", 0) > 0
        and all(counts.get(n, 0) <= 0 for n in ("chief", "worker", "evaluator"))
    )


def _validate_envs(spec: JobSpec, err: Any) -> None:
    if len(spec.envs) > MAX_ENVS:
        err(
            "envs",
            _("A job has at most %(max)d environment variables; this one has %(count)d.")
            % {"max": MAX_ENVS, "count": len(spec.envs)},
        )
        return  # each of thousands checked too would bury that one message
    seen: set[str] = set()
    for i, env in enumerate(spec.envs):
        path = f"envs[{i}].name"
        if not ENV_NAME_RE.match(env.name):
            rule = _("Variable names use letters, digits and '_' and do not start with a digit.")
            err(path, with_non_ascii_named(rule, env.name))
        elif env.name in RESERVED_ENV_NAMES:
            err(path, reserved_env_message(env.name))
        elif env.name in seen:
            err(path, _("%(name)s is defined twice.") % {"name": env.name})
        seen.add(env.name)
        if len(env.value) > 32 * 1024:
            err(f"envs[{i}].value", _("Values are at most 32 KB of text."))
        elif "\x00" in env.value:
            err(f"envs[{i}].value", _("The value contains a NUL character."))
        elif (size := _environment_bytes(env.name, env.value)) > MAX_ARGUMENT_BYTES:
            # 32 K characters of Chinese are 96 KB; of emoji, 128 KB and over.
            err(
                f"envs[{i}].value",
                _(
                    "%(name)s=VALUE is %(size)s bytes in UTF-8; Linux takes a variable of at "
                    "most %(max)s (128 KB)."
                )
                % {"name": env.name, "size": f"{size:,}", "max": f"{MAX_ARGUMENT_BYTES:,}"},
            )
    command = _command_bytes(spec)
    total = command + sum(_environment_bytes(env.name, env.value) for env in spec.envs)
    if command <= MAX_ARGUMENT_BYTES and total > MAX_ENVIRONMENT_BYTES:
        err(
            "envs",
            _(
                "The variables and the command together are %(size)s bytes in UTF-8; at most "
                "%(max)s (1 MB) can run: shorten the longest values."
            )
            % {"size": f"{total:,}", "max": f"{MAX_ENVIRONMENT_BYTES:,}"},
        )


def _command_bytes(spec: JobSpec) -> int:
    """The command as it is run (`bash -c`, or after its entrypoint), in UTF-8 bytes; the command
    alone when the entrypoint cannot be read (said at the entrypoint)."""
    try:
        command = spec.v1_command()
    except ValueError:
        command = spec.command
    return len(command.encode(errors="surrogatepass"))


def _environment_bytes(name: str, value: str) -> int:
    """What one variable takes of the kernel's room at exec: NAME=VALUE in UTF-8 (a lone
    surrogate, refused elsewhere, counted as the bytes it would be)."""
    return len(f"{name}={value}".encode(errors="surrogatepass"))


def normalised_mount_path(path: str) -> str | None:
    """The path if it is absolute, normalised and free of '..'; None otherwise."""
    # POSIX keeps exactly two leading slashes as they are (normpath("//etc") == "//etc"), yet
    # the kernel reads "//etc" as /etc: refuse it, or it slips past the system-path check.
    if not path.startswith("/") or path.startswith("//") or ".." in path.split("/"):
        return None
    if "\x00" in path:
        return None
    return path if posixpath.normpath(path) == path or path == "/" else None


def log_path_problem_said(log_path: str) -> bool:
    """Whether the spec's own rule on a TensorBoard log path refuses this one (a full-width
    slash, a control character, not normalised): the wizard's rules about where it lies
    then say nothing of it, so one message tells what to fix."""
    return (
        bool(FULL_WIDTH_SLASHES & set(log_path))
        or bool(_odd_space_problem(log_path))
        or _has_control_characters(log_path)
        or normalised_mount_path(log_path) is None
    )


def _odd_space_problem(path: str) -> str:
    """A path's first look-alike space (a non-breaking or full-width space) or invisible
    character (a zero-width space) named with where it is, or "". Copied from a document or
    a chat app, `/mnt/my\u00a0data` looked like a folder with a space in its name and was
    another, and a zero-width space was said to be a "control character" no one could see."""
    for i, c in enumerate(path):
        # A space (Zs) other than " "; line breaks (U+2028, U+0085) are control characters.
        if c in INVISIBLE or (unicodedata.category(c) == "Zs" and c != " "):
            where = _("after “%(before)s”") % {"before": path[:i]} if i else _("at its start")
            return _(
                "The path has a look-alike space or an invisible character (U+%(code)04X) "
                "%(where)s, which would be part of a folder's name: type an ordinary space "
                "there, or delete it (text copied from a document or chat app often brings one "
                "along)."
            ) % {"code": ord(c), "where": where}
    return ""


def _has_control_characters(text: str) -> bool:
    """Control and format characters, and Unicode line/paragraph separators: none belongs in
    a path, and each would make the path shown differ from the path used."""
    return any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in text)


def _validate_datasources(spec: JobSpec, err: Any) -> None:
    if len(spec.datasources) > MAX_DATASOURCES:
        err(
            "datasources",
            _("A job has at most %(max)d mounts; this one has %(count)d.")
            % {"max": MAX_DATASOURCES, "count": len(spec.datasources)},
        )
        return
    seen: set[str] = set()
    for i, ds in enumerate(spec.datasources):
        path = f"datasources[{i}]"
        if ds.type not in DATASOURCE_TYPES:
            err(f"{path}.type", _("Unknown storage type “%(type)s”.") % {"type": ds.type})
        if not ds.name and ds.type not in VOLUMELESS_TYPES:
            err(f"{path}.name", _("Choose a file system or volume."))
        if not ds.mount_path:
            err(f"{path}.mountPath", _("Enter the mount path in the container, e.g. /workspace."))
        elif problem := _odd_space_problem(ds.mount_path):
            err(f"{path}.mountPath", problem)
        elif _has_control_characters(ds.mount_path):
            err(
                f"{path}.mountPath",
                _("A path cannot contain line breaks, tabs or other control characters."),
            )
        elif FULL_WIDTH_SLASHES & set(ds.mount_path):
            err(f"{path}.mountPath", _full_width_slash_message())
        elif not ds.mount_path.startswith("/"):
            # A relative `data` was told of '..' and doubled '/', none of which it has (qa108).
            err(
                f"{path}.mountPath",
                _("The mount path must start with /, e.g. /workspace/data."),
            )
        elif normalised_mount_path(ds.mount_path) is None:
            err(
                f"{path}.mountPath",
                _(
                    "The mount path must be absolute and normalised: no '..', no doubled or "
                    "trailing '/'."
                ),
            )
        elif (
            ds.mount_path == "/"
            or ds.mount_path in SYSTEM_DIRECTORIES
            or ds.mount_path.split("/")[1] in ("proc", "sys", "dev")
        ):
            err(
                f"{path}.mountPath",
                _("%(path)s is a system path and cannot be a mount point.")
                % {"path": ds.mount_path},
            )
        elif ds.mount_path in seen:
            err(
                f"{path}.mountPath",
                _("Two mounts use the same path %(path)s.") % {"path": ds.mount_path},
            )
        seen.add(ds.mount_path)
        source = ds.source_path or ""
        if ds.type == "bos":
            source = source.removeprefix(BOS_SCHEME)
            if not source.strip("/"):
                err(
                    f"{path}.sourcePath",
                    _("Enter the BOS bucket path to mount, e.g. bos://my-bucket/datasets."),
                )
                continue
            if not BOS_BUCKET_RE.fullmatch(source.split("/", 1)[0]):
                err(
                    f"{path}.sourcePath",
                    _(
                        "A BOS path starts with its bucket's name: 4 to 63 lowercase letters, "
                        "digits and hyphens, e.g. bos://my-bucket/datasets."
                    ),
                )
                continue
        if problem := _odd_space_problem(source):
            err(f"{path}.sourcePath", problem)
        elif source and _has_control_characters(source):
            err(
                f"{path}.sourcePath",
                _("A path cannot contain line breaks, tabs or other control characters."),
            )
        elif FULL_WIDTH_SLASHES & set(source):
            err(f"{path}.sourcePath", _full_width_slash_message())
        elif source and (".." in source.split("/") or "\x00" in source):
            err(
                f"{path}.sourcePath",
                _("The source path is relative to the volume and may not contain '..'."),
            )
        elif "//" in source:
            # Refused, as a mount path's doubled '/' is, and said as what it is (QA 99:
            # "ds//train" was told it may not contain '..'). Not made one '/': a BOS key
            # may hold an empty name, and the path mounted is the path written.
            err(
                f"{path}.sourcePath",
                _("The source path may not contain a doubled '/': write “%(path)s”.")
                % {"path": (ds.source_path or "").removesuffix(source) + re.sub("/+", "/", source)},
            )


def _validate_fault_tolerance(spec: JobSpec, err: Any) -> None:
    ftc = spec.fault_tolerance_config
    if ftc is None:
        return
    p = "faultToleranceConfig"
    threshold = ftc.hang_detection_timeout_minutes
    if (ftc.enabled_hang_detection and threshold is None) or (
        threshold is not None and not 0 < threshold <= MAX_TIMEOUT_MINUTES
    ):
        err(f"{p}.hangDetectionTimeoutMinutes", hang_threshold_range_said())
    toleration = ftc.hang_detection_startup_toleration_minutes
    if toleration is not None and not 0 <= toleration <= MAX_TIMEOUT_MINUTES:
        err(f"{p}.hangDetectionStartupTolerationMinutes", startup_toleration_range_said())
    if (
        ftc.fault_tolerance_limit is not None
        and not 0 <= ftc.fault_tolerance_limit <= MAX_UNCONDITIONAL_RETRIES
    ):
        err(
            f"{p}.faultToleranceLimit",
            _("Unconditional retries must be between 0 and %(max)d.")
            % {"max": MAX_UNCONDITIONAL_RETRIES},
        )
    for pattern in ftc.custom_fault_tolerance_pattern:
        if not pattern.strip() or len(pattern) > 256:
            err(f"{p}.customFaultTolerancePattern", _("Log keywords are 1-256 characters each."))
            break


def bccl_conditions(spec: JobSpec) -> dict[str, bool]:
    """The four preconditions of BCCL auto-injection, each met or not."""
    gpu_roles = [r for r in spec.roles if r.accelerator_type and r.replicas]
    card = (gpu_roles[0].accelerator_type if gpu_roles else "").lower()
    return {
        "instances": spec.total_replicas >= 2,
        "whole_node": bool(gpu_roles) and all(r.accelerators == 8 for r in gpu_roles),
        "rdma": spec.enable_rdma,
        "card_type": "a800" in card or "hpas" in card,
    }


def _validate_bccl(spec: JobSpec, err: Any) -> None:
    if not spec.enable_bccl:
        return
    unmet = [name for name, ok in bccl_conditions(spec).items() if not ok]
    if unmet:
        err(
            "enableBccl",
            _(
                "BCCL needs at least 2 replicas, 8 cards per replica, RDMA on and A800 or HPAS cards."
            ),
        )


# Whitespace and the invisible characters a copy from a chat or a document page brings along
# (zero-width spaces and joiners, a byte order mark), at either end of a typed line.
# Characters that show as nothing: zero-width spaces and joiners, the word joiner, and the
# byte order mark (U+FEFF) a file saved by Windows' Notepad starts with.
INVISIBLE = "\u200b\u200c\u200d\u2060\ufeff"
_EDGES = re.compile(rf"^[\s{INVISIBLE}]+|[\s{INVISIBLE}]+$")
_INVISIBLE_EDGES = re.compile(rf"^[{INVISIBLE}]+|[{INVISIBLE}]+$")


def edge_trimmed(text: str) -> str:
    """`text` without whitespace or invisible characters at its ends: a webhook copied from
    a bot's page with a zero-width space after it was taken, and failed at its first alert as
    an unknown token, though the URL as shown was right."""
    return _EDGES.sub("", text)


def plain_typed(text: str) -> str:
    """A search box's text as it was meant: what a copy from a chat or a web page, or a
    Chinese input method, puts in it that shows like a space or a letter read as one, so the
    job list's boxes find what they show (qa65). Full-width letters, digits and signs
    (ｅｘｐ－０１, the ideographic space) as their ASCII (NFKC), every kind of space (a
    non-breaking one, a tab) as a space, the invisible characters dropped, and the ends
    trimmed. static/console.js does the same in the page (but the trimming, while typing)."""
    plain = unicodedata.normalize("NFKC", text)
    plain = re.sub(rf"[{INVISIBLE}]", "", plain)
    return re.sub(r"\s", " ", plain).strip()


def invisible_trimmed(text: str) -> str:
    """`text` without invisible characters at its ends, its spaces kept (where a space can be
    meant: a log search for " loss")."""
    return _INVISIBLE_EDGES.sub("", text)


def _url_readable(url: str) -> bool:
    """What URLValidator lets through but no URL is: a NUL or another control character (in
    a path, a #secret=), which PostgreSQL also refuses to store, or a port past 65535, which
    the worker could not connect to."""
    if any(ord(c) < 32 or ord(c) == 127 for c in url):
        return False
    try:
        urlsplit(url).port  # noqa: B018  (reading it raises for a port past 65535)
    except ValueError:
        return False
    return True


def _validate_advanced(spec: JobSpec, err: Any, *, in_wizard: bool) -> None:
    log_path = spec.tensorboard.log_path
    if not spec.tensorboard.enable:
        pass
    elif not log_path:
        err(
            "tensorboardConfig.logPath",
            _("Enter the absolute TensorBoard log path your code writes to."),
        )
    elif not log_path.startswith("/"):
        # qa113: "logs/tb" was asked for as if the field were empty.
        err(
            "tensorboardConfig.logPath",
            _("The TensorBoard log path must be absolute (start with /), e.g. /workspace/tb."),
        )
    # Said as a mount path's are (QA 37): "/workspace/tb/" read "enter the absolute path",
    # which it is, and a full-width slash made a path on no mount, its curves never read.
    elif problem := _odd_space_problem(log_path):
        err("tensorboardConfig.logPath", problem)
    elif _has_control_characters(log_path):
        err(
            "tensorboardConfig.logPath",
            _("A path cannot contain line breaks, tabs or other control characters."),
        )
    elif FULL_WIDTH_SLASHES & set(log_path):
        err("tensorboardConfig.logPath", _full_width_slash_message())
    elif normalised_mount_path(log_path) is None:
        err(
            "tensorboardConfig.logPath",
            _(
                "The TensorBoard log path must be absolute and normalised: no '..', no "
                "doubled or trailing '/'."
            ),
        )
    if spec.retention_period and not RETENTION_RE.match(spec.retention_period):
        err("retentionPeriod", _("Retention looks like 30m, 12h or 7d."))
    for item in spec.alert.items:
        if item not in ALERT_EVENTS:
            err("alertConfig.alertItems", _("Unknown alert event “%(event)s”.") % {"event": item})
    ftc = spec.fault_tolerance_config
    if "jobHang" in spec.alert.items and not (ftc and ftc.enabled_hang_detection):
        # AIHC's 配置任务的消息通知: 任务hang needs hang detection. Without it no hang is
        # ever detected, so the alert could never arrive (as one without a channel). The
        # message is said on step 6 (the alert) and names both ways out, as the switch is on
        # step 5 (a copy of a job stored before this rule opens on step 6), and its field for
        # a request (the API and 从请求导入 show it too).
        # The wizard's user sees the switch, not the request's field path (copy edit).
        err(
            "alertConfig.alertItems",
            _(
                "Alerting on “Job hangs” needs hang detection: turn on Hang detection in "
                "step 5 (Fault tolerance & diagnostics), or leave this event out. Without it "
                "no hang is ever detected."
            )
            if in_wizard
            else _(
                "Alerting on “Job hangs” needs hang detection: turn it on in step 5 (Fault "
                "tolerance & diagnostics; faultToleranceConfig.enabledHangDetection in a "
                "request), or leave this event out. Without it no hang is ever detected."
            ),
        )
    # An alert needs both an event and somewhere to go. Where it can go is the backend's to
    # say (the local pool: emails and webhooks; AIHC: its notify policy), in check_spec.
    channels = spec.alert.emails or spec.alert.webhooks or spec.alert.notify_rule_id
    if channels and not spec.alert.items:
        err(
            "alertConfig.alertItems",
            _("Choose the events to alert on, or clear the email addresses and webhooks."),
        )
    if len(spec.alert.emails) > MAX_ALERT_EMAILS:
        err(
            "alert.emails",
            _("A job alerts at most %(max)d email addresses; this one lists %(count)d.")
            % {"max": MAX_ALERT_EMAILS, "count": len(spec.alert.emails)},
        )
    if len(spec.alert.webhooks) > MAX_ALERT_WEBHOOKS:
        err(
            "alert.webhooks",
            _("A job alerts at most %(max)d webhooks; this one lists %(count)d.")
            % {"max": MAX_ALERT_WEBHOOKS, "count": len(spec.alert.webhooks)},
        )
    for email in spec.alert.emails[:MAX_ALERT_EMAILS]:
        try:
            validate_email(email)
        except ValidationError:
            # Quoted with any chat bot's signing secret masked (a bot's line put here).
            shown = chat_bots.secrets_in_text_masked(email)
            message = _("“%(value)s” is not an email address.") % {"value": shown}
            err("alert.emails", with_full_width_named(message, shown))
    url_validator = URLValidator(schemes=["http", "https"])
    for url in spec.alert.webhooks[:MAX_ALERT_WEBHOOKS]:
        # Messages quote a line with its signing secret masked: they are shown back.
        shown = chat_bots.secret_masked(url)
        if (pasted := chat_bots.pasted_secret(url)) is not None:
            err(
                "alert.webhooks",
                _(
                    "“%(value)s”: is this a signing secret? A DingTalk or Feishu/Lark bot's "
                    "secret goes on its URL's line, right after the URL, as #secret= and the "
                    "secret with no space, e.g. https://oapi.dingtalk.com/robot/send?"
                    "access_token=…#secret=SEC…"
                )
                % {"value": pasted},
            )
            continue
        try:
            url_validator(url)
            if not _url_readable(url):
                raise ValidationError("not a URL")
        except ValidationError:
            message = _("“%(value)s” is not an http(s) URL.") % {"value": shown}
            err("alert.webhooks", with_full_width_named(message, shown))
            continue
        base, _hash, fragment = url.partition("#")
        if not fragment:
            continue
        bot = chat_bots.bot_of(base)
        if not fragment.startswith(chat_bots.SECRET_MARK):
            if fragment == chat_bots.MASK:
                err(
                    "alert.webhooks",
                    _(
                        "“%(value)s”: what followed # is shown as ****** and is not known "
                        "here; type it again, or remove it."
                    )
                    % {"value": shown},
                )
            elif bot is not None:
                # Only `#secret=` is read: another fragment on a bot's line is a secret
                # mistyped (`#Secret=`, `#sign=`) that would be dropped without a word.
                err(
                    "alert.webhooks",
                    _(
                        "“%(value)s”: after a chat bot's URL only #secret= followed by its "
                        "signing secret is read; write it so, or remove what follows #."
                    )
                    % {"value": shown},
                )
            continue
        secret = fragment.removeprefix(chat_bots.SECRET_MARK)
        if bot not in chat_bots.SIGNING_BOTS:
            err(
                "alert.webhooks",
                _(
                    "“%(value)s”: only DingTalk and Feishu/Lark bot webhooks take a signing "
                    "secret (#secret=...); remove it from this one."
                )
                % {"value": shown},
            )
        elif secret == chat_bots.MASK:
            err(
                "alert.webhooks",
                _(
                    "“%(value)s”: the signing secret is shown as ****** and is not known "
                    "here; type it again after #secret=."
                )
                % {"value": shown},
            )
        elif not secret:
            err(
                "alert.webhooks",
                _(
                    "“%(value)s”: no signing secret follows #secret=; type the bot's secret "
                    "after it, or remove #secret= if the bot does not sign."
                )
                % {"value": shown},
            )
        elif "#" in secret:
            err(
                "alert.webhooks",
                _(
                    "“%(value)s”: a webhook line takes one #secret=, and a signing secret has "
                    "no #; keep the one secret the bot shows."
                )
                % {"value": shown},
            )
    if not 1 <= spec.timeout_minutes <= MAX_TIMEOUT_MINUTES:
        err(
            "timeoutMinutes",
            _("The timeout must be between 1 and %(max)s minutes (365 days).")
            % {"max": max_minutes_said()},
        )
    if not 1 <= spec.shared_memory_gi <= MAX_SHARED_MEMORY_GI:
        err(
            "sharedMemoryGi",
            _("Shared memory must be between 1 and %(max)d GiB.") % {"max": MAX_SHARED_MEMORY_GI},
        )
    if len(spec.labels) > MAX_LABELS:
        err(
            "labels",
            _("A job has at most %(max)d labels; this one has %(count)d.")
            % {"max": MAX_LABELS, "count": len(spec.labels)},
        )
    seen_keys: set[str] = set()
    for i, (key, value) in enumerate(spec.labels[:MAX_LABELS]):
        reserved = reserved_label_key(key)
        if not key:
            err(f"labels[{i}].key", _("Enter the label's key."))
        elif not LABEL_KEY_RE.match(key):
            err(f"labels[{i}].key", _label_key_problem(key))
        elif reserved:
            err(
                f"labels[{i}].key",
                _(
                    "Keys starting with %(prefix)s are set by the console or by AIHC for every "
                    "job, never by hand; choose another key."
                )
                % {"prefix": reserved},
            )
        elif domain := platform_label_domain(key):
            err(
                f"labels[{i}].key",
                _(
                    "Keys under %(domain)s are read by Kubernetes and its schedulers (such as "
                    "the queue and priority a job runs with), never set by hand; choose another "
                    "key."
                )
                % {"domain": domain},
            )
        elif key in seen_keys:
            err(
                f"labels[{i}].key",
                _("The label %(key)s is given twice; a job has one value per key.") % {"key": key},
            )
        seen_keys.add(key)
        if not LABEL_VALUE_RE.match(value):
            err(f"labels[{i}].value", with_non_ascii_named(LABEL_VALUE_RULE, value))
    sub = spec.submission
    if sub.mode not in (SUBMIT_STANDALONE, SUBMIT_QUEUE):
        err("submission.mode", _("Submission is standalone or queue."))
    total_valid = 1 <= sub.total <= MAX_GROUP_TASKS
    if not total_valid:
        err(
            "submission.total",
            _("Tasks in the group must be between 1 and %(max)d.") % {"max": MAX_GROUP_TASKS},
        )
    # Named as its field is labelled, and held to the group's tasks only once they are a valid
    # count (qa101: total 0 gave "must be between 1 and 1, the tasks in the group").
    if sub.concurrency < 1:
        err("submission.concurrency", _("Max concurrent tasks must be at least 1."))
    elif total_valid and sub.concurrency > sub.total:
        err(
            "submission.concurrency",
            _("Max concurrent tasks can't be more than the tasks in the group (%(total)d).")
            % {"total": sub.total},
        )
    if spec.creation_mode not in (CREATION_CUSTOM, CREATION_AIAK):
        err("creationMode", _("Creation mode is custom or AIAK template."))
    elif spec.creation_mode == CREATION_AIAK:
        aiak = spec.aiak or Aiak()
        if aiak.training_mode not in AIAK_TRAINING_MODES:
            err("aiak.trainingMode", _("Choose a training mode: Post-Pretrain or SFT."))
        if aiak.training_method not in AIAK_TRAINING_METHODS:
            # Named as the options are labelled (forms.TRAINING_METHOD_CHOICES).
            err("aiak.trainingMethod", _("Choose a training method: Full update or LoRA."))
        if not aiak.template:
            err("aiak.template", _("Choose an AIAK training template."))
